package gputrace

import (
	"context"
	"encoding/binary"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"

	"go.opentelemetry.io/otel/attribute"

	"github.com/xpuscope/xpuscope/internal/gputracebpf"
	"github.com/xpuscope/xpuscope/internal/meterx"
	"github.com/xpuscope/xpuscope/semconv"
)

// NCCL. A process's communicators are learnt as it makes them: the entry
// of ncclCommInitRank (and its Config and Scalable forms) records the
// first bytes of the ncclUniqueId, the same in every rank, from which the
// communicator is named as NCCL names it, by its commHash
// (gpu.nccl.comm.id: the same on every node, in NCCL's logs and in the
// NCCL Inspector's records); its return gives the handle, with the rank
// and size the call was given. A split is named as NCCL names it, from
// its parent, its place among the parent's splits and its color, and
// learns its rank and size from ncclCommUserRank and ncclCommCount if the
// process asks. Each collective and point-to-point call then counts, with
// its bytes, under its communicator's identity (id, rank, size), and each
// collective moves the identity's sequence (gpu.nccl.collective.sequence)
// and the time of its last one. A call on a communicator made before the
// Source started counts under an id local to its process. The fold of
// processes past the cap keeps no NCCL state: its calls count in
// cuda.api.calls only.

// Bounds of a process's NCCL state.
const (
	maxComms      = 256  // communicators with identities of their own
	maxNCCLSeries = 4096 // (identity, collective, data type) series
	maxNCCLThread = 1024 // threads with a communicator being made or a group open
)

// commIdentity is what a communicator's series carry: its id and the
// process's rank and its size in it (-1: not known).
type commIdentity struct {
	id         string
	rank, size int32
}

func (c commIdentity) attrs() []attribute.KeyValue {
	kvs := []attribute.KeyValue{semconv.GPUNCCLCommID.String(c.id)}
	if c.rank >= 0 {
		kvs = append(kvs, semconv.GPUNCCLRank.Int(int(c.rank)))
	}
	if c.size >= 0 {
		kvs = append(kvs, semconv.GPUNCCLCommSize.Int(int(c.size)))
	}
	return kvs
}

// rankState is the hang-finding state of one identity: the collectives
// issued under it and when the last was.
type rankState struct {
	seq   int64
	last  uint64 // ktime of the last collective, or of the making before it
	attrs meterx.Attrs
	comms int    // live handles with this identity
	ended uint64 // ktime at which the last of them ended; 0 while one lives
}

type comm struct {
	identity commIdentity
	state    *rankState
	name     commName
	splits   int32 // the ncclCommSplit calls made of it so far
}

// commName is what names a communicator: NCCL's commHash of it, and
// whether the hash is the process's own (a communicator whose making was
// not seen), not NCCL's.
type commName struct {
	hash  uint64
	local bool
}

// id is the gpu.nccl.comm.id of n: its hash as NCCL's logs and the
// Inspector print it (0x%lx), a local one with a "local-" prefix.
func (n commName) id() string {
	id := "0x" + strconv.FormatUint(n.hash, 16)
	if n.local {
		return "local-" + id
	}
	return id
}

type ncclSeriesKey struct {
	identity commIdentity
	coll     gputracebpf.Collective
	dataType string
}

type ncclSeries struct {
	calls, sent, received      int64
	bytes                      bool // some call had byte figures
	callAttrs, sentAttrs, recv meterx.Attrs
}

// ncclGroup is a group open on a thread.
type ncclGroup struct {
	start uint64
	depth int
	calls int
	first commIdentity
	coll  gputracebpf.Collective
	mixed bool
}

// making is a communicator being made on a thread: its name, known at
// the call's entry, waits for the handle its return gives.
type making struct {
	api   gputracebpf.API
	name  commName
	known bool
}

// procNCCL is what a process's NCCL calls have told.
type procNCCL struct {
	comms    map[uint64]*comm
	ranks    map[commIdentity]*rankState
	series   map[ncclSeriesKey]*ncclSeries
	making   map[uint32]making
	groups   map[uint32]*ncclGroup
	overflow *comm // the communicators past maxComms
	// named are the communicators the process made, by NCCL's name
	// (commHash), with its ranks in each (-1: one not known; a process
	// can hold several ranks of one communicator, a thread or a device
	// each): what the NCCL Inspector's records are joined to. insp are
	// their series.
	named map[uint64][]int32
	insp  map[inspKey]*inspSeries
	// prom are the samples of the Inspector's textfiles the process
	// holds, by file, joined to its ranks' series.
	prom map[fileID][]promPoint
}

func (a *aggregator) procNCCL(p *proc) *procNCCL {
	if p.nccl == nil {
		p.nccl = &procNCCL{comms: map[uint64]*comm{}, ranks: map[commIdentity]*rankState{},
			series: map[ncclSeriesKey]*ncclSeries{}, making: map[uint32]making{}, groups: map[uint32]*ncclGroup{}}
	}
	return p.nccl
}

// ncclHash is NCCL's hash (src/include/bitops.h: eatHash, digestHash),
// with which NCCL names each communicator (commHash): of the 128 bytes of
// the ncclUniqueId it is made from, of a split its parent's commHash, its
// place among the parent's children (1 for the first) and its color.
type ncclHash [2]uint64

func newNCCLHash() ncclHash { return ncclHash{1, 1} }

// eat takes b into h, as one call of NCCL's eatHash.
func (h *ncclHash) eat(b []byte) {
	h[0] ^= uint64(len(b))
	for len(b) > 0 {
		h[0] += h[1]
		h[1] ^= h[0]
		h[0] ^= h[0] >> 31
		h[0] *= 0x9de62bbc8cef3ce3
		h[1] ^= h[1] >> 32
		h[1] *= 0x485cd6311b599e79
		var x [8]byte
		b = b[copy(x[:], b):]
		h[0] += binary.LittleEndian.Uint64(x[:])
	}
}

func (h ncclHash) digest() uint64 {
	v := h[0]
	v ^= v >> 31
	v *= 0xbac3bd562846de6b
	v += h[1]
	v ^= v >> 32
	v *= 0x995a187a14e7b445
	return v
}

// NCCLCommHash is NCCL's commHash of a communicator made from an
// ncclUniqueId whose first 48 bytes are id and whose other 80 are zero, as
// ncclGetUniqueId makes them (a 40-byte bootstrap handle, the rest
// zeroed): the same on every rank and node, and the "commId" of NCCL's
// logs and the "id" of the NCCL Inspector's records.
func NCCLCommHash(id [48]byte) uint64 {
	var all [128]byte
	copy(all[:], id[:])
	h := newNCCLHash()
	h.eat(all[:])
	return h.digest()
}

// ncclChildHash is NCCL's commHash of the child'th communicator made of
// the one of hash parent (ncclCommSplit: child counts from 1), of color.
func ncclChildHash(parent uint64, child, color int32) uint64 {
	h := newNCCLHash()
	h.eat(binary.LittleEndian.AppendUint64(nil, parent))
	h.eat(binary.LittleEndian.AppendUint32(nil, uint32(child)))
	h.eat(binary.LittleEndian.AppendUint32(nil, uint32(color)))
	return h.digest()
}

// localHash names a communicator of process pid by parts: one whose
// making the Source did not see (its handle), or of ncclCommInitAll,
// which makes its ncclUniqueId inside.
func localHash(pid uint32, parts ...uint64) uint64 {
	h := fnv.New64a()
	h.Write(binary.LittleEndian.AppendUint32(nil, pid))
	for _, v := range parts {
		h.Write(binary.LittleEndian.AppendUint64(nil, v))
	}
	return h.Sum64()
}

// identity returns the state of identity id in n, creating it at ktime ts.
func (a *aggregator) rank(p *proc, n *procNCCL, id commIdentity, ts uint64) *rankState {
	if st := n.ranks[id]; st != nil {
		return st
	}
	st := &rankState{last: ts, attrs: p.with(id.attrs()...)}
	n.ranks[id] = st
	return st
}

// bind gives c the identity id.
func (a *aggregator) bind(p *proc, n *procNCCL, c *comm, id commIdentity, ts uint64) {
	if c.state != nil {
		if c.state.comms--; c.state.comms == 0 {
			c.state.ended = ts
		}
	}
	c.identity = id
	c.state = a.rank(p, n, id, ts)
	c.state.comms++
	c.state.ended = 0
}

// comm returns the communicator of handle h, one made before the Source
// started (or whose making was not seen) taking an id local to p.
func (a *aggregator) comm(p *proc, n *procNCCL, h uint64, ts uint64) *comm {
	if c := n.comms[h]; c != nil {
		return c
	}
	name := commName{hash: localHash(p.pid, h), local: true}
	return a.newComm(p, n, h, name, commIdentity{id: name.id(), rank: -1, size: -1}, ts)
}

func (a *aggregator) newComm(p *proc, n *procNCCL, h uint64, name commName, id commIdentity, ts uint64) *comm {
	if old := n.comms[h]; old != nil { // its end was not seen
		a.endComm(n, h, ts)
	}
	if len(n.comms) >= maxComms {
		if n.overflow == nil {
			n.overflow = &comm{name: commName{local: true}}
			a.bind(p, n, n.overflow, commIdentity{id: semconv.Other, rank: -1, size: -1}, ts)
		}
		return n.overflow
	}
	c := &comm{name: name}
	a.bind(p, n, c, id, ts)
	n.comms[h] = c
	return c
}

func (a *aggregator) endComm(n *procNCCL, h uint64, ts uint64) {
	c := n.comms[h]
	if c == nil {
		return
	}
	delete(n.comms, h)
	if c.state.comms--; c.state.comms == 0 {
		c.state.ended = ts
	}
}

// nccl aggregates an NCCL record.
func (a *aggregator) nccl(ctx context.Context, p *proc, e *gputracebpf.Event) {
	if p == a.other {
		return // handles are a process's own
	}
	n := a.procNCCL(p)
	switch e.Kind {
	case gputracebpf.KindNCCLCommID:
		var name commName
		switch e.API {
		case gputracebpf.APINCCLCommSplit:
			// As NCCL names a split: every rank of the parent makes its
			// splits in the same order (the call is collective), so the
			// parent's hash, the split's place among them and the color
			// name the new communicator alike in each of its ranks, and
			// apart from another split's of the same color (a job's
			// tensor- and data-parallel groups, both of color 0 in rank
			// 0).
			parent, color, _ := e.NCCLSplit()
			pc := a.comm(p, n, parent, e.TS)
			pc.splits++
			name = commName{hash: ncclChildHash(pc.name.hash, pc.splits, color), local: pc.name.local}
		case gputracebpf.APINCCLCommInitAll:
			name = commName{hash: localHash(p.pid, e.TS), local: true}
		default:
			name = commName{hash: NCCLCommHash(e.NCCLUniqueID())}
		}
		if len(n.making) >= maxNCCLThread {
			clear(n.making)
		}
		n.making[e.TID] = making{e.API, name, true}
	case gputracebpf.KindNCCLComm:
		m, ok := n.making[e.TID]
		if !ok || m.api != e.API {
			m = making{api: e.API}
		}
		if e.API != gputracebpf.APINCCLCommInitAll {
			delete(n.making, e.TID)
		}
		const ncclInProgress = 7 // a non-blocking communicator, being made
		if e.Ret != 0 && e.Ret != ncclInProgress {
			a.apiError(p, e)
			return
		}
		h, rank, size := e.NCCLCommMade()
		if h == 0 {
			return // NCCL_SPLIT_NOCOLOR: no communicator
		}
		if !m.known {
			a.comm(p, n, h, e.TS)
			return
		}
		a.newComm(p, n, h, m.name, commIdentity{id: m.name.id(), rank: rank, size: size}, e.TS)
		if !m.name.local {
			n.name(m.name.hash, rank)
		}
	case gputracebpf.KindNCCLCommQuery:
		if e.Ret != 0 {
			a.apiError(p, e)
			return
		}
		h, v := e.NCCLCommQuery()
		c := a.comm(p, n, h, e.TS)
		if c == n.overflow {
			return
		}
		id := c.identity
		if e.API == gputracebpf.APINCCLCommCount {
			id.size = v
		} else {
			id.rank = v
		}
		if id != c.identity {
			a.bind(p, n, c, id, e.TS)
		}
		if !c.name.local {
			n.name(c.name.hash, id.rank)
		}
	case gputracebpf.KindNCCLCommEnd:
		a.endComm(n, e.NCCLComm(), e.TS)
	case gputracebpf.KindNCCLGroup:
		g := n.groups[e.TID]
		if e.API == gputracebpf.APINCCLGroupStart {
			if g == nil {
				if len(n.groups) >= maxNCCLThread {
					clear(n.groups)
				}
				g = &ncclGroup{start: e.TS}
				n.groups[e.TID] = g
			}
			g.depth++
			return
		}
		if g == nil {
			return // its start was not seen
		}
		if g.depth--; g.depth <= 0 {
			delete(n.groups, e.TID)
			a.spans.ncclGroup(ctx, p, e, g)
		}
	case gputracebpf.KindNCCLColl:
		a.ncclCall(ctx, p, n, e)
	}
}

func (a *aggregator) ncclCall(ctx context.Context, p *proc, n *procNCCL, e *gputracebpf.Event) {
	call := e.NCCLCall()
	c := a.comm(p, n, call.Comm, e.TS)
	dt := call.Type.String()
	if dt == "" {
		dt = semconv.Other
	}
	k := ncclSeriesKey{c.identity, call.Collective, dt}
	s := n.series[k]
	if s == nil {
		if len(n.series) >= maxNCCLSeries {
			k.identity = commIdentity{id: semconv.Other, rank: -1, size: -1}
			k.dataType = semconv.Other
		}
		if s = n.series[k]; s == nil {
			kvs := append(k.identity.attrs(), semconv.GPUNCCLCollective.String(call.Collective.String()),
				semconv.GPUNCCLDataType.String(k.dataType))
			s = &ncclSeries{callAttrs: p.with(kvs...),
				sentAttrs: p.with(append(kvs, semconv.NetworkIODir.String(semconv.DirectionTransmit))...),
				recv:      p.with(append(kvs, semconv.NetworkIODir.String(semconv.DirectionReceive))...)}
			n.series[k] = s
		}
	}
	s.calls++
	if sent, recv, ok := call.Bytes(c.identity.rank, c.identity.size); ok {
		s.bytes = true
		s.sent += int64(sent)
		s.received += int64(recv)
	}
	if !call.Collective.PointToPoint() {
		c.state.seq++
		c.state.last = e.TS
	}
	g := n.groups[e.TID]
	if g == nil {
		a.spans.ncclGroup(ctx, p, e, &ncclGroup{start: e.TS, calls: 1, first: c.identity, coll: call.Collective})
		return
	}
	if g.calls == 0 {
		g.first, g.coll = c.identity, call.Collective
	} else if g.coll != call.Collective {
		g.mixed = true
	}
	g.calls++
}

// forgetComms drops the identities of p whose communicators all ended
// before the last collection, which reported their final values, with
// their series, the NCCL Inspector's among them.
func (n *procNCCL) forgetComms(collected uint64) {
	gone := map[commIdentity]bool{}
	for id, st := range n.ranks {
		if st.comms == 0 && st.ended != 0 && st.ended < collected {
			gone[id] = true
			delete(n.ranks, id)
		}
	}
	if len(gone) > 0 {
		maps.DeleteFunc(n.series, func(k ncclSeriesKey, _ *ncclSeries) bool { return gone[k.identity] })
		maps.DeleteFunc(n.insp, func(k inspKey, _ *inspSeries) bool { return gone[k.identity] })
		for f, pts := range n.prom {
			n.prom[f] = slices.DeleteFunc(pts, func(pt promPoint) bool { return gone[pt.identity] })
		}
	}
}

// fillNCCL copies p's NCCL values into sn.
func (sn *snapshot) fillNCCL(in *instruments, n *procNCCL) {
	for _, s := range n.series {
		sn.int(in.ncclCalls, s.calls, s.callAttrs.Observe...)
		if s.bytes {
			sn.int(in.ncclBytes, s.sent, s.sentAttrs.Observe...)
			sn.int(in.ncclBytes, s.received, s.recv.Observe...)
		}
	}
	for _, st := range n.ranks {
		sn.float(in.ncclSequence, float64(st.seq), st.attrs.Observe...)
		sn.ncclLast = append(sn.ncclLast, allocPoint{st.last, st.attrs.Observe})
	}
}

// ncclGroup emits a group's span, ended by e.
func (s *spanner) ncclGroup(ctx context.Context, p *proc, e *gputracebpf.Event, g *ncclGroup) {
	if g.calls == 0 || !s.allow(p, e) {
		return
	}
	coll := g.coll.String()
	if g.mixed {
		coll = semconv.NCCLCollectiveMixed
	}
	kvs := append(g.first.attrs(), semconv.GPUNCCLCollective.String(coll), semconv.GPUNCCLGroupCalls.Int(g.calls))
	s.emit(ctx, p, e, semconv.SpanNCCLGroup, g.start, kvs...)
}
