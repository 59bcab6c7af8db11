package occupancy

import (
	"math"
	"sort"
)

// item is one pending entry of a stream: a kernel launch, or a wait for
// an event recorded on another stream.
type item struct {
	t int64 // launch or enqueue time
	// seq: a kernel's sequence number on its stream; for a wait, the
	// sequence number on dep of the kernel the awaited event follows.
	seq     uint64
	id      uint64
	threads int64
	blocks  int64
	dep     *stream // wait only
	wait    bool
	fence   bool // an event was recorded right after this kernel
}

// fence is the estimated end of a kernel an event was recorded after.
type fence struct {
	seq uint64
	end int64
}

const histLen = 8

// stream is one CUDA stream of a process: its pending queue and where its
// estimated timeline stands.
type stream struct {
	handle uint64
	keyDev int32 // -1 for created streams, the device for default ones
	device int32 // the device its kernels run on
	acc    *acc
	used   uint64

	ring    []item // a power-of-two ring
	head, n int
	kernels int // kernels among the n pending items

	seq          uint64 // last launch's sequence number
	completedSeq uint64 // last kernel completed (or dropped)
	clock        int64  // end of the last completed kernel or wait
	lastT        int64  // last enqueue time: keeps the queue in time order

	hist  [histLen]fence // ends of the last fenced kernels, newest at histN-1
	histN int

	inPass bool
	dead   bool
}

func (st *stream) at(i int) *item { return &st.ring[(st.head+i)&(len(st.ring)-1)] }

// push enqueues it, growing the ring within the bounds or dropping the
// oldest pending item.
func (m *Model) push(st *stream, it item) {
	if st.n >= m.lim.PendingPerStream {
		m.dropHead(st)
	} else if st.n == len(st.ring) {
		if grow := len(st.ring); len(st.ring)*2 <= ceilPow2(m.lim.PendingPerStream) && m.slots+grow <= m.lim.PendingTotal {
			ring := make([]item, 2*len(st.ring))
			for i := range st.n {
				ring[i] = *st.at(i)
			}
			st.ring, st.head = ring, 0
			m.slots += grow
		} else {
			m.dropHead(st)
		}
	}
	*st.at(st.n) = it
	st.n++
	if !it.wait {
		st.kernels++
	}
}

// dropHead drops the oldest pending item; a kernel is never estimated.
func (m *Model) dropHead(st *stream) {
	h := st.at(0)
	if !h.wait {
		m.dropped[DropPendingCap]++
		st.kernels--
		st.completedSeq = h.seq
	}
	*h = item{}
	st.head = (st.head + 1) & (len(st.ring) - 1)
	st.n--
}

func (st *stream) pop(k int) {
	for i := range k {
		*st.at(i) = item{}
	}
	st.head = (st.head + k) & (len(st.ring) - 1)
	st.n -= k
}

// firstKernel is the oldest pending kernel, or nil.
func (st *stream) firstKernel() *item {
	for i := range st.n {
		if it := st.at(i); !it.wait {
			return it
		}
	}
	return nil
}

// lastKernel is the newest pending kernel, or nil.
func (st *stream) lastKernel() *item {
	for i := st.n - 1; i >= 0; i-- {
		if it := st.at(i); !it.wait {
			return it
		}
	}
	return nil
}

func (st *stream) pushFence(seq uint64, end int64) {
	if st.histN == histLen {
		copy(st.hist[:], st.hist[1:])
		st.histN--
	}
	st.hist[st.histN] = fence{seq, end}
	st.histN++
}

// fenceEnd is the estimated end of completed kernel seq, if remembered.
func (st *stream) fenceEnd(seq uint64) (int64, bool) {
	for i := st.histN - 1; i >= 0; i-- {
		if st.hist[i].seq == seq {
			return st.hist[i].end, true
		}
	}
	return 0, false
}

// lastCovered is the position of the newest pending kernel with seq ≤
// cutSeq launched at or before cutTime, or -1. The queue is in time order
// (push keeps it so) and its kernels' seqs are contiguous from
// completedSeq+1, so with no wait pending the kernel at position i has
// seq completedSeq+1+i and the covered kernels are a prefix found by a
// binary search: a sync's edge may leave a thousand launches made while
// it waited pending, and a scan from the newest walks them all.
func (st *stream) lastCovered(cutSeq uint64, cutTime int64) int {
	if st.kernels < st.n {
		for i := st.n - 1; i >= 0; i-- {
			if it := st.at(i); !it.wait && it.seq <= cutSeq && it.t <= cutTime {
				return i
			}
		}
		return -1
	}
	if cutSeq <= st.completedSeq {
		return -1
	}
	n := st.n
	if d := cutSeq - st.completedSeq; d < uint64(n) {
		n = int(d)
	}
	return sort.Search(n, func(i int) bool { return st.at(i).t > cutTime }) - 1
}

// maxDepth bounds how far a wait pulls other streams' completions along.
const maxDepth = 16

// complete ends the pending kernels of st that an edge covers: those with
// seq ≤ cutSeq launched at or before cutTime, with the waits between
// them. The covered kernels share the time up to edge evenly, each
// starting no earlier than its launch, the previous kernel's end and the
// completion of the events it waits for, and running at least until the
// next item of the stream was enqueued. bound is the observed edge
// (edge itself, or later when edge is a share of it).
func (m *Model) complete(p *proc, st *stream, cutSeq uint64, cutTime, edge, bound int64, kind Completion, depth int) {
	if st.inPass || st.kernels == 0 {
		return
	}
	last := st.lastCovered(cutSeq, cutTime)
	if last < 0 {
		return
	}
	st.inPass = true
	covered := int(st.at(last).seq - st.completedSeq) // kernel seqs are contiguous
	left := int64(covered)                            // covered kernels still to place
	clock := st.clock
	for i := 0; i <= last; i++ {
		it := st.at(i)
		if it.wait {
			if end, ok := m.resolve(p, it, edge, bound, left, kind, depth); ok {
				clock = max(clock, end)
			}
			continue
		}
		start := max(it.t, clock)
		end := start
		if edge > start {
			end = start + (edge-start)/left
		}
		if i < last {
			end = max(end, st.at(i+1).t)
		}
		end = max(min(end, edge), start)
		left--
		m.emit(p, st, it, start, end, max(bound, end), kind)
		clock = end
		st.completedSeq = it.seq
		if it.fence {
			st.pushFence(it.seq, end)
		}
	}
	st.clock = clock
	st.kernels -= covered
	st.pop(last + 1)
	st.inPass = false
}

// resolve is when the event a wait item waits for completed: already
// known, or completed now by the edge, which the waiting stream could not
// have passed otherwise. Then the awaited kernels and the waiting
// stream's left kernels after the wait ran one after the other before
// edge, and share that time evenly. false when it cannot be known (the
// stream was dropped, the fence forgotten, or a cycle).
func (m *Model) resolve(p *proc, it *item, edge, bound, left int64, kind Completion, depth int) (int64, bool) {
	dep := it.dep
	if dep == nil || dep.dead {
		return 0, false
	}
	if dep.completedSeq < it.seq {
		if depth >= maxDepth || dep.inPass {
			return 0, false
		}
		base := dep.clock
		if first := dep.firstKernel(); first != nil {
			base = max(base, first.t)
		}
		base = min(base, edge)
		n := int64(it.seq - dep.completedSeq)
		share := edge - (edge-base)/(n+left)*left
		m.complete(p, dep, it.seq, math.MaxInt64, share, bound, kind, depth+1)
		if dep.completedSeq == it.seq {
			return dep.clock, true
		}
	}
	return dep.fenceEnd(it.seq)
}

// emit credits a completed kernel to its device's accumulator and hands
// it to the kernel handler.
func (m *Model) emit(p *proc, st *stream, it *item, start, end, bound int64, kind Completion) {
	a := st.acc
	if d := float64(end - start); d > 0 {
		wT, wS := float64(min(it.threads, a.capT)), float64(min(it.blocks, a.capS))
		cur := d
		if start < m.lastReport {
			cur = float64(max(end-m.lastReport, 0))
		}
		late := d - cur
		a.curT += wT * cur
		a.curS += wS * cur
		a.lateT += wT * late
		a.lateS += wS * late
	}
	a.kernels[kind]++
	if m.onKernel == nil {
		return
	}
	m.k = Kernel{
		PID: p.pid, Device: st.device, Stream: st.handle, ID: it.id,
		Threads: it.threads, Blocks: it.blocks,
		Launch: it.t, Start: start, End: end, Bound: bound, Completion: kind,
	}
	m.onKernel(&m.k)
}
