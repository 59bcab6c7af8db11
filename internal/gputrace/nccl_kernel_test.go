package gputrace

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/xpuscope/xpuscope/internal/gputracebpf"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/testutil/cudaprog"
	"github.com/xpuscope/xpuscope/semconv"
)

// TestTraceNCCL traces NCCL through a stand-in libnccl.so.2 built from C
// with nccl.h's signatures (Debian has no NCCL; cudaprog's nccl_stub.c),
// driven by the cudaprog "nccl" program: threads that are the 4 ranks of
// communicator A (one of which stops early) and the 2 of B; A's ranks
// then split it twice. Every record's arguments, the bytes per
// collective and data type, the communicators' ids, the calls counted
// and the spans, and the lagging rank's sequence are checked against
// cudaprog's tables.
func TestTraceNCCL(t *testing.T) {
	requireRoot(t)
	testTraceNCCL(t)
}

// ncclRank is a rank of the nccl program: its communicator and COMM line.
type ncclRank struct {
	comm *cudaprog.NCCLComm
	line cudaprog.NCCLCommLine
}

// ncclSub is what a split gave a rank: its communicator (0 for
// NCCL_SPLIT_NOCOLOR), rank and size.
type ncclSub struct {
	split, color int
	line         cudaprog.NCCLSplitLine
}

func testTraceNCCL(t *testing.T) {
	lib := cudaprog.Build(t, "libnccl")
	exe := cudaprog.Build(t, "nccl")
	// Spans well under the cap: one per group, exactly.
	tr := startTracing(t, WithRescanInterval(time.Hour), WithSpanRate(1e6))
	p := startLingering(t, exe)
	tr.waitAttached(t, TargetNCCL, lib)
	tr.rec.Watch(p.Pid)
	p.Go()
	p.WaitLine("ISSUED")
	got, err := cudaprog.ReadNCCLLines(p.Lines())
	require.NoError(t, err)

	// The records each rank's thread makes: its communicator's making
	// (the id at entry, the handle on return), its calls (the group calls
	// included), and for a rank of A the splits: each one's making, the
	// two queries where it got a communicator; then a call on each new
	// communicator, then their ends.
	var ranks []ncclRank
	subs := map[int][]ncclSub{} // by tid
	want := 0
	for _, c := range cudaprog.NCCLComms {
		for r := range c.NRanks {
			line, ok := got.Comm(c.Name, r)
			require.True(t, ok, "no COMM line of %s rank %d", c.Name, r)
			ranks = append(ranks, ncclRank{c, line})
			want += 2 + len(c.Calls(r))
			for i := range c.Splits {
				color, _, _ := c.Split(i, r)
				sl, ok := got.Split(c.Name, i, r)
				require.True(t, ok, "no SPLIT line of %s split %d rank %d", c.Name, i, r)
				subs[line.Tid] = append(subs[line.Tid], ncclSub{i, color, sl})
				want += 2
				if color != cudaprog.NCCLNone {
					want += 4
				}
			}
		}
	}
	evs := tr.waitEvents(t, p.Pid, want)
	byTid := map[int][]gputracebpf.Event{}
	for _, e := range evs {
		byTid[int(e.TID)] = append(byTid[int(e.TID)], e)
	}

	// Each communicator's id is NCCL's commHash of it, which the stub
	// computes as NCCL does and the program prints.
	idOf := func(name string) string {
		line, ok := got.Comm(name, 0)
		require.True(t, ok)
		return fmt.Sprintf("%#x", line.Hash)
	}
	require.NotEqual(t, idOf("A"), idOf("B"))

	for _, rk := range ranks {
		c, r, tid := rk.comm, rk.line.Rank, rk.line.Tid
		evs := byTid[tid]
		require.GreaterOrEqual(t, len(evs), 2, "%s rank %d", c.Name, r)
		assert.Equal(t, gputracebpf.KindNCCLCommID, evs[0].Kind)
		assert.Equal(t, c.Init, evs[0].API.String())
		uid := got.UIDs[c.Name]
		assert.Equal(t, [48]byte(uid[:48]), evs[0].NCCLUniqueID(), "%s rank %d: the id, read from the stack", c.Name, r)
		require.Equal(t, gputracebpf.KindNCCLComm, evs[1].Kind)
		h, gotRank, gotSize := evs[1].NCCLCommMade()
		assert.Equal(t, []any{rk.line.Comm, int32(r), int32(c.NRanks)}, []any{h, gotRank, gotSize}, "%s rank %d: made", c.Name, r)
		calls := c.Calls(r)
		require.GreaterOrEqual(t, len(evs), 2+len(calls), "%s rank %d", c.Name, r)
		for i, call := range calls {
			checkNCCLCall(t, evs[2+i], call, rk.line.Comm, c.Stream(r), r, c.NRanks,
				fmt.Sprintf("%s rank %d call %d (%s)", c.Name, r, i, call.API))
		}
		checkNCCLSplits(t, evs[2+len(calls):], rk, subs[tid])
	}

	// The series: calls and bytes per collective and data type, as
	// nccl.h defines each call's buffers, and the sequence per rank.
	type key struct {
		id, coll, dt string
		rank         int
	}
	calls, sent, recv := map[key]float64{}, map[key]float64{}, map[key]float64{}
	seq := map[key]float64{}
	for _, rk := range ranks {
		c, r := rk.comm, rk.line.Rank
		for _, call := range c.Calls(r) {
			if call.Group() {
				continue
			}
			k := key{idOf(c.Name), ncclCollectiveName(call.API), ncclDataTypeName(call.DataType), r}
			calls[k]++
			s, rv := ncclBytesOf(call, r, c.NRanks)
			sent[k] += float64(s)
			recv[k] += float64(rv)
			if !call.PointToPoint() {
				seq[key{id: k.id, rank: r}]++
			}
		}
	}
	// Wait for the counts, not only the series: under load the series
	// appear with a rank's first calls, before the reader has counted
	// the rest.
	pts := tr.waitPoints(t, func(pts testutil.Points) bool {
		pts = ofPid(pts, p.Pid)
		for k, n := range calls {
			f := pts.Find(semconv.GPUNCCLCalls.Name, semconv.GPUNCCLCommID.String(k.id), semconv.GPUNCCLRank.Int(k.rank),
				semconv.GPUNCCLCollective.String(k.coll), semconv.GPUNCCLDataType.String(k.dt))
			if len(f) != 1 || f[0].Value < n {
				return false
			}
		}
		splits := 0 // and the split communicators' calls, made last
		for _, sl := range got.Splits {
			if sl.Comm != 0 {
				splits++
			}
		}
		for _, pt := range pts.Find(semconv.GPUNCCLCalls.Name, semconv.GPUNCCLCollective.String("AllReduce"),
			semconv.GPUNCCLDataType.String("float32")) {
			if id := pt.Get(semconv.GPUNCCLCommID); id != idOf("A") && id != idOf("B") {
				splits--
			}
		}
		return splits <= 0
	})
	pts = ofPid(pts, p.Pid)
	for k, n := range calls {
		where := fmt.Sprintf("%+v", k)
		one := func(name string, dir ...string) float64 {
			f := pts.Find(name, semconv.GPUNCCLCommID.String(k.id), semconv.GPUNCCLRank.Int(k.rank),
				semconv.GPUNCCLCollective.String(k.coll), semconv.GPUNCCLDataType.String(k.dt))
			if len(dir) > 0 {
				f = f.Find(name, semconv.NetworkIODir.String(dir[0]))
			}
			require.Len(t, f, 1, "%s %v %s", name, dir, where)
			return f[0].Value
		}
		assert.Equal(t, n, one(semconv.GPUNCCLCalls.Name), where)
		assert.Equal(t, sent[k], one(semconv.GPUNCCLBytes.Name, semconv.DirectionTransmit), where)
		assert.Equal(t, recv[k], one(semconv.GPUNCCLBytes.Name, semconv.DirectionReceive), where)
	}
	for k, n := range seq {
		sq := pts.One(t, semconv.GPUNCCLSequence.Name, semconv.GPUNCCLCommID.String(k.id), semconv.GPUNCCLRank.Int(k.rank))
		assert.Equal(t, n, sq.Value, "sequence of %+v", k)
	}
	lag := func(r int) float64 {
		return pts.One(t, semconv.GPUNCCLSequence.Name, semconv.GPUNCCLCommID.String(idOf("A")), semconv.GPUNCCLRank.Int(r)).Value
	}
	assert.Less(t, lag(cudaprog.NCCLLaggingRank), lag(0), "the lagging rank is behind")

	// The split communicators: NCCL's commHash of each (one per split and
	// color, the same in the ranks of one), each rank with the rank and
	// size it asked for.
	wantSplits := map[string][]string{}
	for _, sl := range got.Splits {
		if sl.Comm != 0 {
			id := fmt.Sprintf("%#x", sl.Hash)
			wantSplits[id] = append(wantSplits[id], fmt.Sprintf("%d/%d", sl.Rank, sl.NRanks))
		}
	}
	splitRanks := map[string][]string{}
	for _, pt := range pts.Find(semconv.GPUNCCLCalls.Name, semconv.GPUNCCLCollective.String("AllReduce"),
		semconv.GPUNCCLDataType.String("float32")) {
		id := pt.Get(semconv.GPUNCCLCommID)
		if id == idOf("A") || id == idOf("B") {
			continue
		}
		assert.Equal(t, 1.0, pt.Value, "%v", pt.Attrs)
		rk, err := strconv.Atoi(pt.Get(semconv.GPUNCCLRank))
		require.NoError(t, err, "%v", pt.Attrs)
		size := pt.Get(semconv.GPUNCCLCommSize)
		splitRanks[id] = append(splitRanks[id], fmt.Sprintf("%d/%s", rk, size))
		b := float64(cudaprog.NCCLSplitCall.Count) * 4
		for _, dir := range []string{semconv.DirectionTransmit, semconv.DirectionReceive} {
			assert.Equal(t, b, pts.One(t, semconv.GPUNCCLBytes.Name, semconv.GPUNCCLCommID.String(id), semconv.GPUNCCLRank.Int(rk),
				semconv.NetworkIODir.String(dir)).Value, "%s of the split %s rank %d", dir, id, rk)
		}
		assert.Equal(t, 1.0, pts.One(t, semconv.GPUNCCLSequence.Name, semconv.GPUNCCLCommID.String(id), semconv.GPUNCCLRank.Int(rk)).Value)
	}
	for _, m := range wantSplits {
		slices.Sort(m)
	}
	for _, m := range splitRanks {
		slices.Sort(m)
	}
	assert.Equal(t, wantSplits, splitRanks, "the ranks (rank/size) of each split communicator, by NCCL's commHash")

	// cuda.api.calls: each call once (ncclBcast's inner ncclBroadcast is
	// not a call of its own), the splits and their queries included.
	apiCalls := map[string]float64{}
	for _, rk := range ranks {
		c, r := rk.comm, rk.line.Rank
		apiCalls[c.Init]++
		for _, call := range c.Calls(r) {
			apiCalls[call.API]++
		}
		for i := range c.Splits {
			apiCalls["ncclCommSplit"]++
			if color, _, _ := c.Split(i, r); color != cudaprog.NCCLNone {
				for _, api := range []string{"ncclCommCount", "ncclCommUserRank", cudaprog.NCCLSplitCall.API, "ncclCommDestroy"} {
					apiCalls[api]++
				}
			}
		}
	}
	apiPts := ofPid(tr.waitPoints(t, func(pts testutil.Points) bool {
		return maps.Equal(apiCalls, gather(ofPid(pts, p.Pid), semconv.CUDAAPICalls.Name, sum, string(semconv.CUDAAPIName)))
	}), p.Pid)
	assert.Equal(t, series(apiCalls), gather(apiPts, semconv.CUDAAPICalls.Name, sum, string(semconv.CUDAAPIName)))

	// One span per group, a call outside a group a group of its own, with
	// its first call's communicator.
	type spanKey struct {
		id, coll   string
		rank, size int
		calls      int64
	}
	wantSpans := map[spanKey]int{}
	for _, rk := range ranks {
		c, r := rk.comm, rk.line.Rank
		var group []cudaprog.NCCLCall
		for _, call := range c.Calls(r) {
			switch {
			case call.API == "ncclGroupStart":
				group = []cudaprog.NCCLCall{}
			case call.API == "ncclGroupEnd":
				coll := ncclCollectiveName(group[0].API)
				for _, g := range group[1:] {
					if ncclCollectiveName(g.API) != coll {
						coll = semconv.NCCLCollectiveMixed
					}
				}
				wantSpans[spanKey{idOf(c.Name), coll, r, c.NRanks, int64(len(group))}]++
				group = nil
			case group != nil:
				group = append(group, call)
			default:
				wantSpans[spanKey{idOf(c.Name), ncclCollectiveName(call.API), r, c.NRanks, 1}]++
			}
		}
	}
	for id, members := range splitRanks {
		for _, m := range members {
			var r, size int
			_, err := fmt.Sscanf(m, "%d/%d", &r, &size)
			require.NoError(t, err)
			wantSpans[spanKey{id, "AllReduce", r, size, 1}]++
		}
	}
	gotSpans := map[spanKey]int{}
	for _, sp := range tr.spans.GetSpans() {
		attrs := map[attribute.Key]attribute.Value{}
		for _, kv := range sp.Attributes {
			attrs[kv.Key] = kv.Value
		}
		if sp.Name != semconv.SpanNCCLGroup || attrs[semconv.ProcessPID].AsInt64() != int64(p.Pid) {
			continue
		}
		gotSpans[spanKey{attrs[semconv.GPUNCCLCommID].AsString(), attrs[semconv.GPUNCCLCollective].AsString(),
			int(attrs[semconv.GPUNCCLRank].AsInt64()), int(attrs[semconv.GPUNCCLCommSize].AsInt64()),
			attrs[semconv.GPUNCCLGroupCalls].AsInt64()}]++
	}
	assert.Equal(t, wantSpans, gotSpans, "nccl.group spans")

	// The communicators end once the program goes on.
	before := len(evs)
	p.Go()
	p.Wait()
	ends := map[uint64]int{}
	for _, rk := range ranks {
		ends[rk.line.Comm]++
		if rk.line.Rank == rk.comm.FinalizeRank {
			ends[rk.line.Comm]++
		}
	}
	nends := 0
	for _, n := range ends {
		nends += n
	}
	evs = tr.waitEvents(t, p.Pid, before+nends)
	gotEnds := map[uint64]int{}
	for _, e := range evs[before:] {
		assert.Equal(t, gputracebpf.KindNCCLCommEnd, e.Kind)
		gotEnds[e.NCCLComm()]++
	}
	assert.Equal(t, ends, gotEnds, "the communicators ended")
}

// checkNCCLCall checks e, the record of call by rank of nranks on comm
// and stream.
func checkNCCLCall(t *testing.T, e gputracebpf.Event, call cudaprog.NCCLCall, comm, stream uint64, rank, nranks int, where string) {
	t.Helper()
	require.Equal(t, call.API, e.API.String(), where)
	if call.Group() {
		assert.Equal(t, gputracebpf.KindNCCLGroup, e.Kind, where)
		return
	}
	require.Equal(t, gputracebpf.KindNCCLColl, e.Kind, where)
	nc := e.NCCLCall()
	assert.Equal(t, call.Count, nc.Count, where)
	assert.Equal(t, uint32(call.DataType), uint32(nc.Type), where)
	assert.Equal(t, int32(call.Op), nc.Op, where)
	assert.Equal(t, int32(call.Root), nc.Root, where)
	assert.Equal(t, int32(call.Peer(rank, nranks)), nc.Peer, where)
	assert.Equal(t, comm, nc.Comm, where)
	assert.Equal(t, stream, nc.Stream, where)
}

// checkNCCLSplits checks the records of rk's splits, evs: each split's
// making and queries, then a call on each new communicator, then their
// ends.
func checkNCCLSplits(t *testing.T, evs []gputracebpf.Event, rk ncclRank, subs []ncclSub) {
	t.Helper()
	c, r := rk.comm, rk.line.Rank
	i := 0
	next := func(kind gputracebpf.Kind, what string) gputracebpf.Event {
		t.Helper()
		require.Greater(t, len(evs), i, "%s rank %d: no record of %s", c.Name, r, what)
		e := evs[i]
		i++
		require.Equal(t, kind, e.Kind, "%s rank %d: %s: %s", c.Name, r, what, fmtEvent(e))
		return e
	}
	for _, s := range subs {
		what := fmt.Sprintf("split %d", s.split)
		e := next(gputracebpf.KindNCCLCommID, what)
		parent, color, key := e.NCCLSplit()
		assert.Equal(t, []any{rk.line.Comm, int32(s.color), int32(c.Splits[s.split].Key(r))}, []any{parent, color, key}, what)
		made := next(gputracebpf.KindNCCLComm, what)
		sub, subRank, subSize := made.NCCLCommMade()
		assert.Equal(t, []any{s.line.Comm, int32(-1), int32(-1)}, []any{sub, subRank, subSize}, "%s: made, rank and size not known", what)
		if s.color == cudaprog.NCCLNone {
			continue
		}
		for _, api := range []gputracebpf.API{gputracebpf.APINCCLCommCount, gputracebpf.APINCCLCommUserRank} {
			q := next(gputracebpf.KindNCCLCommQuery, what)
			require.Equal(t, api, q.API, what)
			qc, v := q.NCCLCommQuery()
			assert.Equal(t, s.line.Comm, qc, what)
			if api == gputracebpf.APINCCLCommCount {
				assert.Equal(t, int32(s.line.NRanks), v, what)
			} else {
				assert.Equal(t, int32(s.line.Rank), v, what)
			}
		}
	}
	for _, s := range subs {
		if s.color != cudaprog.NCCLNone {
			checkNCCLCall(t, next(gputracebpf.KindNCCLColl, "a split's call"), cudaprog.NCCLSplitCall, s.line.Comm,
				c.SplitStream(s.split, r), s.line.Rank, s.line.NRanks, fmt.Sprintf("%s rank %d split %d's call", c.Name, r, s.split))
		}
	}
	for _, s := range subs {
		if s.color != cudaprog.NCCLNone {
			end := next(gputracebpf.KindNCCLCommEnd, "a split's end")
			assert.Equal(t, s.line.Comm, end.NCCLComm())
		}
	}
	assert.Len(t, evs, i, "%s rank %d: records past its splits' ends", c.Name, r)
}

// ncclCollectiveName is gpu.nccl.collective for api, as nccl.h names it.
func ncclCollectiveName(api string) string {
	n := strings.TrimSuffix(strings.TrimPrefix(api, "nccl"), "Config")
	if n == "Bcast" {
		return "Broadcast"
	}
	return n
}

// ncclDataTypeName is gpu.nccl.data_type for t: nccl.h's name without
// "nccl", in lower case.
func ncclDataTypeName(t cudaprog.NCCLDataType) string {
	return strings.ToLower(strings.TrimPrefix(t.String(), "nccl"))
}

// ncclBytesOf is what rank of nranks sends and receives in call, from
// nccl.h's description of each call's buffers.
func ncclBytesOf(call cudaprog.NCCLCall, rank, nranks int) (send, recv uint64) {
	b := call.Count * uint64(call.DataType.Size())
	n := uint64(nranks)
	root := rank == call.Root
	switch ncclCollectiveName(call.API) {
	case "AllReduce":
		return b, b
	case "AllGather":
		return b, n * b
	case "ReduceScatter":
		return n * b, b
	case "AlltoAll":
		return n * b, n * b
	case "Broadcast":
		if root {
			return b, b
		}
		return 0, b
	case "Reduce":
		if root {
			return b, b
		}
		return b, 0
	case "Gather":
		if root {
			return b, n * b
		}
		return b, 0
	case "Scatter":
		if root {
			return n * b, b
		}
		return 0, b
	case "Send":
		return b, 0
	case "Recv":
		return 0, b
	}
	panic(call.API)
}

// TestTraceNCCLSingleThread traces the cudaprog "nccl single" program:
// one thread's communicators (the two of ncclCommInitAll, whose return
// probe reads the array it filled, and one of ncclCommInitRankScalable,
// whose id is read through its pointer), a group across the first two,
// then calls the stub refuses: each is a call made, counted as made
// (data types outside nccl.h's under _OTHER, without bytes), and the
// failed makings count in cuda.api.errors with their ncclResult_t.
func TestTraceNCCLSingleThread(t *testing.T) {
	requireRoot(t)
	lib := cudaprog.Build(t, "libnccl")
	exe := cudaprog.Build(t, "nccl")
	tr := startTracing(t, WithRescanInterval(time.Hour), WithSpanRate(1e6))
	p := startLingering(t, exe, "single")
	tr.waitAttached(t, TargetNCCL, lib)
	tr.rec.Watch(p.Pid)
	p.Go()
	waitPrinted(t, p, "DONE")
	got, err := cudaprog.ReadNCCLLines(p.Lines())
	require.NoError(t, err)
	a0, ok0 := got.Comm("all", 0)
	a1, ok1 := got.Comm("all", 1)
	sc, ok2 := got.Comm("scalable", 0)
	require.True(t, ok0 && ok1 && ok2, "COMM lines: %+v", got.Comms)

	type rec struct {
		kind gputracebpf.Kind
		api  string
	}
	coll := func(api string) rec { return rec{gputracebpf.KindNCCLColl, api} }
	want := []rec{
		{gputracebpf.KindNCCLCommID, "ncclCommInitAll"}, {gputracebpf.KindNCCLComm, "ncclCommInitAll"},
		{gputracebpf.KindNCCLComm, "ncclCommInitAll"},
		{gputracebpf.KindNCCLCommID, "ncclCommInitRankScalable"}, {gputracebpf.KindNCCLComm, "ncclCommInitRankScalable"},
		{gputracebpf.KindNCCLGroup, "ncclGroupStart"}, coll("ncclAllReduce"), coll("ncclAllReduce"),
		{gputracebpf.KindNCCLGroup, "ncclGroupEnd"}, coll("ncclAllGather"),
		// valid, datatype, negative_datatype, op, root, peer, collconfig, group_end
		coll("ncclAllReduce"), coll("ncclAllReduce"), coll("ncclAllReduce"), coll("ncclAllReduce"),
		coll("ncclBroadcast"), coll("ncclSend"), coll("ncclAllReduceConfig"), {gputracebpf.KindNCCLGroup, "ncclGroupEnd"},
		// rank, config
		{gputracebpf.KindNCCLCommID, "ncclCommInitRank"}, {gputracebpf.KindNCCLComm, "ncclCommInitRank"},
		{gputracebpf.KindNCCLCommID, "ncclCommInitRankConfig"}, {gputracebpf.KindNCCLComm, "ncclCommInitRankConfig"},
		// finalized, destroyed, the ends
		{gputracebpf.KindNCCLCommEnd, "ncclCommFinalize"}, coll("ncclAllReduce"), {gputracebpf.KindNCCLCommEnd, "ncclCommDestroy"},
		coll("ncclAllReduce"), {gputracebpf.KindNCCLCommEnd, "ncclCommDestroy"}, {gputracebpf.KindNCCLCommEnd, "ncclCommDestroy"},
	}
	evs := tr.waitEvents(t, p.Pid, len(want))
	for i, e := range evs {
		require.Equal(t, want[i], rec{e.Kind, e.API.String()}, "record %d: %s", i, fmtEvent(e))
		require.Equal(t, uint32(p.Pid), e.TID, "record %d: the main thread's", i)
	}
	assert.Equal(t, [6]uint64{2}, evs[0].A, "ncclCommInitAll's ndev")
	for i, line := range []cudaprog.NCCLCommLine{a0, a1} {
		h, rank, size := evs[1+i].NCCLCommMade()
		assert.Equal(t, []any{line.Comm, int32(i), int32(2)}, []any{h, rank, size}, "ncclCommInitAll's comms[%d]", i)
	}
	uid := got.UIDs["scalable"]
	assert.Equal(t, [48]byte(uid[:48]), evs[3].NCCLUniqueID(), "ncclCommInitRankScalable's first id, read through its pointer")
	h, rank, size := evs[4].NCCLCommMade()
	assert.Equal(t, []any{sc.Comm, int32(0), int32(1)}, []any{h, rank, size})
	for i, line := range []cudaprog.NCCLCommLine{a0, a1} {
		checkNCCLCall(t, evs[6+i], cudaprog.NCCLCall{API: "ncclAllReduce", Count: cudaprog.NCCLSingleCount,
			DataType: cudaprog.NCCLFloat32, Op: cudaprog.NCCLSum, Root: cudaprog.NCCLNone}, line.Comm,
			cudaprog.NCCLLoopStream+uint64(i)*0x100, i, 2, fmt.Sprintf("the group's call on comms[%d]", i))
	}
	for i, code := range map[int]int32{19: cudaprog.NCCLInvalidArgument, 21: cudaprog.NCCLInvalidArgument} {
		assert.Equal(t, code, evs[i].Ret, "a failed making's result: %s", fmtEvent(evs[i]))
	}

	all := func() string {
		pts := ofPid(tr.collect(t), p.Pid)
		return pts.One(t, semconv.GPUNCCLCalls.Name, semconv.GPUNCCLRank.Int(1), semconv.GPUNCCLCollective.String("AllReduce")).
			Get(semconv.GPUNCCLCommID)
	}
	pts := ofPid(tr.waitPoints(t, func(pts testutil.Points) bool {
		return len(ofPid(pts, p.Pid).Find(semconv.CUDAAPIErrors.Name)) == 2
	}), p.Pid)
	allID := all()
	assert.True(t, strings.HasPrefix(allID, "local-"), "ncclCommInitAll makes its ncclUniqueId inside: %s", allID)
	scID := fmt.Sprintf("%#x", sc.Hash)
	calls := func(id string, rank int, coll, dt string) float64 {
		t.Helper()
		return pts.One(t, semconv.GPUNCCLCalls.Name, semconv.GPUNCCLCommID.String(id), semconv.GPUNCCLRank.Int(rank),
			semconv.GPUNCCLCollective.String(coll), semconv.GPUNCCLDataType.String(dt)).Value
	}
	// comms[0]: the group's, valid, op and collconfig; comms[1]: the
	// group's. ncclCommFinalize ended comms[1] (NCCL refuses calls on it
	// from there): the two calls on its handle after it count under an
	// id of the process's own, without rank or size.
	assert.Equal(t, 4.0, calls(allID, 0, "AllReduce", "float32"))
	assert.Equal(t, 1.0, calls(allID, 1, "AllReduce", "float32"))
	var local testutil.Points
	for _, pt := range pts.Find(semconv.GPUNCCLCalls.Name, semconv.GPUNCCLCollective.String("AllReduce"),
		semconv.GPUNCCLDataType.String("float32")) {
		if !pt.Has(semconv.GPUNCCLRank) {
			local = append(local, pt)
		}
	}
	require.Len(t, local, 1, "the calls on comms[1]'s handle after its end")
	assert.Equal(t, 2.0, local[0].Value)
	assert.NotContains(t, []string{allID, scID}, local[0].Get(semconv.GPUNCCLCommID))
	assert.False(t, local[0].Has(semconv.GPUNCCLCommSize))
	assert.Equal(t, 2.0, calls(allID, 0, "AllReduce", semconv.Other), "data types outside nccl.h's")
	assert.Empty(t, pts.Find(semconv.GPUNCCLBytes.Name, semconv.GPUNCCLDataType.String(semconv.Other)), "no bytes without a size")
	assert.Equal(t, 1.0, calls(scID, 0, "AllGather", "int8"))
	for _, dir := range []string{semconv.DirectionTransmit, semconv.DirectionReceive} {
		assert.Equal(t, float64(cudaprog.NCCLSingleCount), pts.One(t, semconv.GPUNCCLBytes.Name, semconv.GPUNCCLCommID.String(scID),
			semconv.NetworkIODir.String(dir)).Value, "AllGather of a rank of one: %s", dir)
	}
	assert.Equal(t, series{
		key("ncclCommInitRank", strconv.Itoa(cudaprog.NCCLInvalidArgument)):       1,
		key("ncclCommInitRankConfig", strconv.Itoa(cudaprog.NCCLInvalidArgument)): 1,
	}, gather(pts, semconv.CUDAAPIErrors.Name, sum, string(semconv.CUDAAPIName), string(semconv.CUDAErrorCode)))

	// The group across the two devices: one span of two calls.
	var groups []map[attribute.Key]attribute.Value
	for _, sp := range tr.spans.GetSpans() {
		attrs := map[attribute.Key]attribute.Value{}
		for _, kv := range sp.Attributes {
			attrs[kv.Key] = kv.Value
		}
		if sp.Name == semconv.SpanNCCLGroup && attrs[semconv.ProcessPID].AsInt64() == int64(p.Pid) &&
			attrs[semconv.GPUNCCLGroupCalls].AsInt64() == 2 {
			groups = append(groups, attrs)
		}
	}
	require.Len(t, groups, 1)
	assert.Equal(t, "AllReduce", groups[0][semconv.GPUNCCLCollective].AsString())
	assert.Equal(t, allID, groups[0][semconv.GPUNCCLCommID].AsString())
	assert.Equal(t, int64(0), groups[0][semconv.GPUNCCLRank].AsInt64())
	p.Wait()
}
