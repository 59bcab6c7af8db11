package gputrace

// NCCL aggregation on synthetic events (what gputracebpf.Decode makes of
// the probes' records); nccl_kernel_test.go runs the real probes.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/gputracebpf"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

const ncclNone = ^uint64(0)

// ncclEvents builds the records of one process's NCCL calls.
type ncclEvents struct {
	ts  uint64
	evs []gputracebpf.Event
}

func (b *ncclEvents) add(tid uint32, kind gputracebpf.Kind, api string, a ...uint64) *ncclEvents {
	b.ts += 1000
	e := gputracebpf.Event{TS: b.ts, PID: 100, TID: tid, Kind: kind, API: apiOf(api)}
	copy(e.A[:], a)
	b.evs = append(b.evs, e)
	return b
}

func (b *ncclEvents) init(tid uint32, id [48]byte, rank, nranks uint64, comm uint64) *ncclEvents {
	var a [6]uint64
	for i := range a {
		for j := range 8 {
			a[i] |= uint64(id[8*i+j]) << (8 * j)
		}
	}
	b.add(tid, gputracebpf.KindNCCLCommID, "ncclCommInitRank", a[:]...)
	return b.add(tid, gputracebpf.KindNCCLComm, "ncclCommInitRank", nranks|rank<<32, comm)
}

// coll adds a collective: count, data type, op, root or peer, comm.
func (b *ncclEvents) coll(tid uint32, api string, count, dataType, op, root, comm uint64) *ncclEvents {
	return b.add(tid, gputracebpf.KindNCCLColl, api, count, dataType, op, root, comm, 0x5000)
}

func TestNCCLAggregate(t *testing.T) {
	h := newHarness(t)
	id := [48]byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 2, 0, 0x1f, 0x90, 10, 0, 0, 1}
	commA := fmt.Sprintf("%#x", NCCLCommHash(id))
	const f32, i32 = 7, 2
	var b ncclEvents
	b.init(1, id, 1, 4, 0xc1).init(2, id, 3, 4, 0xc3)
	for range 3 {
		b.coll(1, "ncclAllReduce", 100, f32, 0, ncclNone, 0xc1)
	}
	b.coll(1, "ncclAllGather", 10, f32, ncclNone, ncclNone, 0xc1)
	b.coll(2, "ncclAllReduceConfig", 100, f32, 0, ncclNone, 0xc3)
	b.add(1, gputracebpf.KindNCCLGroup, "ncclGroupStart").
		coll(1, "ncclSend", 10, i32, ncclNone, 2, 0xc1).
		coll(1, "ncclRecv", 10, i32, ncclNone, 0, 0xc1).
		add(1, gputracebpf.KindNCCLGroup, "ncclGroupEnd")
	// A split of A, rank and size learned from the queries, and a
	// communicator made before the Source started.
	b.add(1, gputracebpf.KindNCCLCommID, "ncclCommSplit", 0xc1, 1, 5).
		add(1, gputracebpf.KindNCCLComm, "ncclCommSplit", ncclNone, 0xd1).
		add(1, gputracebpf.KindNCCLCommQuery, "ncclCommCount", 0xd1, 2).
		add(1, gputracebpf.KindNCCLCommQuery, "ncclCommUserRank", 0xd1, 0).
		coll(1, "ncclBroadcast", 8, 8, ncclNone, 0, 0xd1).
		coll(3, "ncclAllReduce", 4, f32, 0, ncclNone, 0xee)
	// The same split in rank 3, then a second split of A of the same
	// color, alive with the first: another communicator.
	b.add(2, gputracebpf.KindNCCLCommID, "ncclCommSplit", 0xc3, 1, 7).
		add(2, gputracebpf.KindNCCLComm, "ncclCommSplit", ncclNone, 0xd3).
		add(2, gputracebpf.KindNCCLCommQuery, "ncclCommCount", 0xd3, 2).
		add(2, gputracebpf.KindNCCLCommQuery, "ncclCommUserRank", 0xd3, 1).
		coll(2, "ncclBroadcast", 8, 8, ncclNone, 0, 0xd3).
		add(1, gputracebpf.KindNCCLCommID, "ncclCommSplit", 0xc1, 1, 0).
		add(1, gputracebpf.KindNCCLComm, "ncclCommSplit", ncclNone, 0xd2).
		add(1, gputracebpf.KindNCCLCommQuery, "ncclCommCount", 0xd2, 2).
		add(1, gputracebpf.KindNCCLCommQuery, "ncclCommUserRank", 0xd2, 1).
		coll(1, "ncclAllGather", 3, i32, ncclNone, ncclNone, 0xd2)
	h.feed(b.evs...)
	last := b.ts
	h.now = last + 5e9
	pts := h.collect(t)

	a1 := pts.Find(semconv.GPUNCCLCalls.Name, semconv.GPUNCCLCommID.String(commA), semconv.GPUNCCLRank.Int(1),
		semconv.GPUNCCLCommSize.Int(4), semconv.GPUNCCLCollective.String("AllReduce"), semconv.GPUNCCLDataType.String("float32"))
	require.Len(t, a1, 1)
	assert.Equal(t, 3.0, a1[0].Value)
	assert.Equal(t, "100", a1[0].Get(semconv.ProcessPID))
	sent := pts.One(t, semconv.GPUNCCLBytes.Name, semconv.GPUNCCLRank.Int(1), semconv.GPUNCCLCollective.String("AllReduce"),
		semconv.NetworkIODir.String(semconv.DirectionTransmit))
	assert.Equal(t, 1200.0, sent.Value)
	gathered := pts.One(t, semconv.GPUNCCLBytes.Name, semconv.GPUNCCLCollective.String("AllGather"),
		semconv.GPUNCCLCommID.String(commA), semconv.NetworkIODir.String(semconv.DirectionReceive))
	assert.Equal(t, 4*10*4.0, gathered.Value, "AllGather receives nranks × sendcount")
	assert.Equal(t, 1.0, pts.One(t, semconv.GPUNCCLCalls.Name, semconv.GPUNCCLRank.Int(3),
		semconv.GPUNCCLCollective.String("AllReduce")).Value, "the Config form counts as its collective")
	assert.Equal(t, 40.0, pts.One(t, semconv.GPUNCCLBytes.Name, semconv.GPUNCCLCollective.String("Send"),
		semconv.NetworkIODir.String(semconv.DirectionTransmit)).Value)
	assert.Equal(t, 0.0, pts.One(t, semconv.GPUNCCLBytes.Name, semconv.GPUNCCLCollective.String("Send"),
		semconv.NetworkIODir.String(semconv.DirectionReceive)).Value)

	// The lagging rank: 3 issued one collective where 1 issued four
	// (sends and receives are not collectives).
	seq := func(r int) float64 {
		return pts.One(t, semconv.GPUNCCLSequence.Name, semconv.GPUNCCLCommID.String(commA), semconv.GPUNCCLRank.Int(r)).Value
	}
	assert.Equal(t, 4.0, seq(1))
	assert.Equal(t, 1.0, seq(3))
	age := pts.One(t, semconv.GPUNCCLLastCollectiveAge.Name, semconv.GPUNCCLCommID.String(commA), semconv.GPUNCCLRank.Int(3))
	assert.InDelta(t, float64(h.now-b.evs[8].TS)/1e9, age.Value, 1e-9, "since rank 3's AllReduce")

	// The split: one id in every rank of it, its own, whatever the
	// color; rank and size from the queries.
	split := pts.One(t, semconv.GPUNCCLCalls.Name, semconv.GPUNCCLCollective.String("Broadcast"), semconv.GPUNCCLRank.Int(0))
	splitID := split.Get(semconv.GPUNCCLCommID)
	assert.NotEqual(t, commA, splitID)
	assert.True(t, strings.HasPrefix(splitID, "0x"), "a split of a communicator NCCL named is named as NCCL names it: %s", splitID)
	assert.Equal(t, "2", split.Get(semconv.GPUNCCLCommSize))
	assert.Equal(t, 8*8.0, pts.One(t, semconv.GPUNCCLBytes.Name, semconv.GPUNCCLCollective.String("Broadcast"),
		semconv.GPUNCCLRank.Int(0), semconv.NetworkIODir.String(semconv.DirectionTransmit)).Value, "rank 0 is the root")
	other := pts.One(t, semconv.GPUNCCLCalls.Name, semconv.GPUNCCLCollective.String("Broadcast"), semconv.GPUNCCLRank.Int(1))
	assert.Equal(t, splitID, other.Get(semconv.GPUNCCLCommID), "the split's id in its other rank")
	second := pts.One(t, semconv.GPUNCCLCalls.Name, semconv.GPUNCCLCollective.String("AllGather"), semconv.GPUNCCLDataType.String("int32"))
	assert.NotEqual(t, splitID, second.Get(semconv.GPUNCCLCommID), "a second split of the same color is another communicator")
	assert.NotEqual(t, commA, second.Get(semconv.GPUNCCLCommID))
	assert.Equal(t, "1", second.Get(semconv.GPUNCCLRank))

	// Made before the Source started: a local id, no rank or size, and
	// only the bytes that need neither.
	var local testutil.Point
	for _, pt := range pts.Find(semconv.GPUNCCLCalls.Name, semconv.GPUNCCLDataType.String("float32"),
		semconv.GPUNCCLCollective.String("AllReduce")) {
		if strings.HasPrefix(pt.Get(semconv.GPUNCCLCommID), "local-") {
			local = pt
		}
	}
	assert.Equal(t, 1.0, local.Value, "the call on a communicator made before the Source started, under a local id")
	assert.False(t, local.Has(semconv.GPUNCCLRank))
	assert.False(t, local.Has(semconv.GPUNCCLCommSize))

	// The calls count in cuda.api.calls too, once each: a making's return
	// is not a call.
	assert.Equal(t, 2.0, pts.One(t, semconv.CUDAAPICalls.Name, semconv.CUDAAPIName.String("ncclCommInitRank")).Value)
	assert.Equal(t, 3.0, pts.One(t, semconv.CUDAAPICalls.Name, semconv.CUDAAPIName.String("ncclCommSplit")).Value)

	// Spans: one per group; a call outside a group is a group of its own.
	var groups []map[string]string
	for _, s := range h.spans.GetSpans() {
		if s.Name != semconv.SpanNCCLGroup {
			continue
		}
		m := map[string]string{}
		for _, kv := range s.Attributes {
			m[string(kv.Key)] = kv.Value.Emit()
		}
		groups = append(groups, m)
	}
	require.Len(t, groups, 10, "five calls alone on A, its group of two, the local AllReduce and a call on each split's handle")
	var mixed int
	for _, g := range groups {
		if g[string(semconv.GPUNCCLCollective)] == semconv.NCCLCollectiveMixed {
			mixed++
			assert.Equal(t, "2", g[string(semconv.GPUNCCLGroupCalls)])
			assert.Equal(t, "ncclGroupEnd", g[string(semconv.CUDAAPIName)])
		}
	}
	assert.Equal(t, 1, mixed)

	// Rank 3's communicator ends: its series go once a collection has
	// reported their last values.
	var end ncclEvents
	end.ts = last
	end.add(2, gputracebpf.KindNCCLCommEnd, "ncclCommDestroy", 0xc3)
	h.feed(end.evs...)
	h.collect(t)
	h.s.agg.forget(func(uint32) bool { return true }, h.now, h.s.collected.Load())
	pts = h.collect(t)
	assert.Empty(t, pts.Find(semconv.GPUNCCLSequence.Name, semconv.GPUNCCLRank.Int(3)))
	assert.Empty(t, pts.Find(semconv.GPUNCCLCalls.Name, semconv.GPUNCCLRank.Int(3)))
	assert.Len(t, pts.Find(semconv.GPUNCCLSequence.Name, semconv.GPUNCCLCommID.String(commA), semconv.GPUNCCLRank.Int(1)), 1,
		"rank 1's lives on")
	assert.Len(t, pts.Find(semconv.GPUNCCLSequence.Name, semconv.GPUNCCLCommID.String(splitID)), 2, "the split's, alive, live on")
}

// The communicators of a process that makes more than the bound share one
// identity, _OTHER; the series stay bounded.
func TestNCCLBounded(t *testing.T) {
	h := newHarness(t)
	var b ncclEvents
	for i := range maxComms + 10 {
		var id [48]byte
		id[0], id[1] = byte(i), byte(i>>8)
		b.init(1, id, 0, 2, 0x10000+uint64(i))
		b.coll(1, "ncclAllReduce", 1, 7, 0, ncclNone, 0x10000+uint64(i))
	}
	h.feed(b.evs...)
	n := h.s.agg.procs[100].nccl
	assert.Len(t, n.comms, maxComms)
	pts := h.collect(t)
	other := pts.One(t, semconv.GPUNCCLCalls.Name, semconv.GPUNCCLCommID.String(semconv.Other))
	assert.Equal(t, 10.0, other.Value)
	assert.Len(t, pts.Find(semconv.GPUNCCLCalls.Name), maxComms+1)
}

func FuzzNCCL(f *testing.F) {
	f.Add([]byte{0, 1, 1, 1, 2, 0, 3, 0, 4, 0, 5, 1})
	f.Add([]byte{6, 0, 2, 0, 7, 1, 8, 2, 9, 3, 3, 4, 10, 1})
	kinds := []struct {
		kind gputracebpf.Kind
		api  string
	}{
		{gputracebpf.KindNCCLCommID, "ncclCommInitRank"},
		{gputracebpf.KindNCCLComm, "ncclCommInitRank"},
		{gputracebpf.KindNCCLColl, "ncclAllReduce"},
		{gputracebpf.KindNCCLColl, "ncclBroadcast"},
		{gputracebpf.KindNCCLColl, "ncclSend"},
		{gputracebpf.KindNCCLGroup, "ncclGroupStart"},
		{gputracebpf.KindNCCLGroup, "ncclGroupEnd"},
		{gputracebpf.KindNCCLCommID, "ncclCommSplit"},
		{gputracebpf.KindNCCLComm, "ncclCommSplit"},
		{gputracebpf.KindNCCLCommQuery, "ncclCommUserRank"},
		{gputracebpf.KindNCCLCommEnd, "ncclCommDestroy"},
		{gputracebpf.KindNCCLComm, "ncclCommInitAll"},
	}
	f.Fuzz(func(t *testing.T, ops []byte) {
		h := newHarness(t)
		for i := 0; i+1 < len(ops); i += 2 {
			k := kinds[int(ops[i])%len(kinds)]
			x := uint64(ops[i+1])
			e := gputracebpf.Event{TS: uint64(i), PID: 100, TID: uint32(x & 3), Kind: k.kind, API: apiOf(k.api),
				A: [6]uint64{x * 0x9e3779b97f4a7c15, x >> 2 & 15, x >> 4, x & 7, 0xc0 + x>>2&3, 0x50}}
			if x&0x80 != 0 {
				e.A = [6]uint64{ncclNone, ncclNone, ncclNone, ncclNone, ncclNone, ncclNone}
			}
			h.feed(e)
		}
		h.collect(t)
		h.s.agg.forget(func(uint32) bool { return len(ops)%4 != 0 }, uint64(len(ops)), h.s.collected.Load())
		if p := h.s.agg.procs[100]; p != nil && p.nccl != nil {
			n := p.nccl
			require.LessOrEqual(t, len(n.comms), maxComms)
			require.LessOrEqual(t, len(n.series), maxNCCLSeries+1)
			require.LessOrEqual(t, len(n.groups), maxNCCLThread)
			for _, st := range n.ranks {
				require.GreaterOrEqual(t, st.comms, 0)
			}
		}
	})
}
