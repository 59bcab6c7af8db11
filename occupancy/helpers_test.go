package occupancy

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// op is one API event, for tables, random sequences and the fuzzer.
type op struct {
	kind   opKind
	t      int64 // the call (a sync's begin)
	end    int64 // a sync's return
	pid    uint32
	dev    int32
	stream uint64
	event  uint64
	grid   [3]uint32
	block  [3]uint32
	id     uint64
}

type opKind uint8

const (
	opLaunch opKind = iota
	opStreamSync
	opMemcpySync
	opDeviceSync
	opRecord
	opComplete
	opWait
	opExit
	opReport
	numOps
)

func (k opKind) String() string {
	return [...]string{"launch", "stream_sync", "memcpy_sync", "device_sync", "record", "complete", "wait", "exit", "report"}[k]
}

func (o op) String() string {
	return fmt.Sprintf("%v t=%d end=%d pid=%d dev=%d stream=%#x event=%#x grid=%v block=%v id=%d",
		o.kind, o.t, o.end, o.pid, o.dev, o.stream, o.event, o.grid, o.block, o.id)
}

// at is the time the call reaches the model: a sync's return.
func (o op) at() int64 {
	switch o.kind {
	case opStreamSync, opMemcpySync, opDeviceSync:
		return o.end
	}
	return o.t
}

func (m *Model) apply(o op, dst []Usage) []Usage {
	switch o.kind {
	case opLaunch:
		m.Launch(o.t, o.pid, o.dev, o.stream, o.grid, o.block, o.id)
	case opStreamSync:
		m.StreamSync(o.t, o.end, o.pid, o.dev, o.stream)
	case opMemcpySync:
		m.MemcpySync(o.t, o.end, o.pid, o.dev, o.stream)
	case opDeviceSync:
		m.DeviceSync(o.t, o.end, o.pid, o.dev)
	case opRecord:
		m.EventRecord(o.t, o.pid, o.dev, o.stream, o.event)
	case opComplete:
		m.EventComplete(o.t, o.pid, o.event)
	case opWait:
		m.StreamWaitEvent(o.t, o.pid, o.dev, o.stream, o.event)
	case opExit:
		m.ProcessExit(o.t, o.pid)
	case opReport:
		dst = m.Report(o.t, dst)
	}
	return dst
}

// checker verifies the invariants every output must keep, whatever the
// input.
type checker struct {
	t       testing.TB
	lim     Limits
	kernels []Kernel
	// streamEnd is the last end seen per stream, keyed by pid and handle.
	streamEnd map[[2]uint64]int64
	// series accumulates per (pid, device) what the reports credited.
	series map[[2]int64]*series
	first  int64 // earliest event time
	now    int64 // latest report
	seen   bool
}

type series struct {
	t0, credited float64 // first report start (ns), thread-ns credited
}

func newChecker(t testing.TB, lim Limits) *checker {
	return &checker{t: t, lim: lim.withDefaults(), streamEnd: map[[2]uint64]int64{}, series: map[[2]int64]*series{}}
}

// The checks below run for every kernel and report of the property tests
// and the fuzzer: each is guarded by its condition, so that a check that
// passes costs no call into testify (whose t.Helper is not free).

func (c *checker) kernel(k *Kernel) {
	c.t.Helper()
	if !(k.Launch <= k.Start && k.Start <= k.End && k.End <= k.Bound) {
		require.LessOrEqual(c.t, k.Launch, k.Start, "kernel %+v: want Launch ≤ Start ≤ End ≤ Bound", *k)
		require.LessOrEqual(c.t, k.Start, k.End, "kernel %+v: want Launch ≤ Start ≤ End ≤ Bound", *k)
		require.LessOrEqual(c.t, k.End, k.Bound, "kernel %+v: want Launch ≤ Start ≤ End ≤ Bound", *k)
	}
	if k.Completion >= NumCompletions || k.Threads <= 0 || k.Blocks <= 0 {
		require.Less(c.t, k.Completion, NumCompletions, "kernel %+v: bad completion", *k)
		require.Positive(c.t, k.Threads, "kernel %+v: bad size", *k)
		require.Positive(c.t, k.Blocks, "kernel %+v: bad size", *k)
	}
	kd, kh := streamKey(k.Device, k.Stream)
	key := [2]uint64{uint64(k.PID), kh ^ uint64(uint32(kd))<<32}
	if prev, ok := c.streamEnd[key]; ok && k.Start < prev {
		require.GreaterOrEqual(c.t, k.Start, prev, "kernel %+v starts before the previous kernel of its stream ended", *k)
	}
	c.streamEnd[key] = k.End
	c.kernels = append(c.kernels, *k)
}

func (c *checker) event(o op) {
	if !c.seen {
		c.seen, c.first = true, o.t
	}
	c.first = min(c.first, o.t) // a sync's begin is its earliest time
	if o.kind == opExit {
		for k := range c.streamEnd {
			if k[0] == uint64(o.pid) {
				delete(c.streamEnd, k)
			}
		}
	}
}

func (c *checker) usage(now int64, us []Usage) {
	c.t.Helper()
	const eps = 1e-6
	c.now = max(c.now, now) // a report earlier than the last one closes nothing
	for _, u := range us {
		capT := float64(u.Capacity.Threads())
		if u.ThreadRatio < 0 || u.ThreadRatio > 1 || u.SMActiveRatio < 0 || u.SMActiveRatio > 1 {
			require.GreaterOrEqual(c.t, u.ThreadRatio, 0.0, "usage %+v: ratio out of 0..1", u)
			require.LessOrEqual(c.t, u.ThreadRatio, 1.0, "usage %+v: ratio out of 0..1", u)
			require.GreaterOrEqual(c.t, u.SMActiveRatio, 0.0, "usage %+v: ratio out of 0..1", u)
			require.LessOrEqual(c.t, u.SMActiveRatio, 1.0, "usage %+v: ratio out of 0..1", u)
		}
		if u.ThreadSeconds < 0 || u.LateThreadSeconds < 0 || u.LateThreadSeconds > u.ThreadSeconds*(1+eps) {
			require.GreaterOrEqual(c.t, u.ThreadSeconds, 0.0, "usage %+v: negative thread-seconds", u)
			require.GreaterOrEqual(c.t, u.LateThreadSeconds, 0.0, "usage %+v: negative late thread-seconds", u)
			require.LessOrEqual(c.t, u.LateThreadSeconds, u.ThreadSeconds*(1+eps), "usage %+v: more late thread-seconds than thread-seconds", u)
		}
		// The interval's part never exceeds capacity × interval.
		if cur, most := (u.ThreadSeconds-u.LateThreadSeconds)*1e9, capT*float64(u.Interval)*(1+eps)+1; cur > most {
			require.LessOrEqual(c.t, cur, most, "usage %+v: %.0f thread-ns in an interval of %d ns, capacity %v", u, cur, u.Interval, capT)
		}
		// The series' total never exceeds capacity × the wall time since
		// the first event.
		key := [2]int64{int64(u.PID), int64(u.Device)}
		s := c.series[key]
		if s == nil {
			s = &series{}
			c.series[key] = s
		}
		s.credited += u.ThreadSeconds * 1e9
		if wall := float64(c.now - c.first); s.credited > capT*wall*(1+eps)+1 {
			require.LessOrEqual(c.t, s.credited, capT*wall*(1+eps)+1, "usage %+v: %.0f thread-ns credited in %v ns of wall time, capacity %v", u, s.credited, wall, capT)
		}
		if u.Exited {
			delete(c.series, key)
		}
	}
}

func (c *checker) size(m *Model) {
	c.t.Helper()
	s := m.Size()
	l := c.lim
	if s.Processes > l.Processes || s.MaxStreams > l.StreamsPerProcess || s.MaxPending > l.PendingPerStream ||
		s.PendingSlots > l.PendingTotal || s.Events > l.Events || s.Pending > s.PendingSlots {
		require.LessOrEqual(c.t, s.Processes, l.Processes, "size %+v exceeds limits %+v", s, l)
		require.LessOrEqual(c.t, s.MaxStreams, l.StreamsPerProcess, "size %+v exceeds limits %+v", s, l)
		require.LessOrEqual(c.t, s.MaxPending, l.PendingPerStream, "size %+v exceeds limits %+v", s, l)
		require.LessOrEqual(c.t, s.PendingSlots, l.PendingTotal, "size %+v exceeds limits %+v", s, l)
		require.LessOrEqual(c.t, s.Events, l.Events, "size %+v exceeds limits %+v", s, l)
		require.LessOrEqual(c.t, s.Pending, s.PendingSlots, "size %+v exceeds limits %+v", s, l)
	}
}

// run feeds ops to a fresh model and checks every invariant along the way.
func run(t testing.TB, lim Limits, capacity Capacity, ops []op) (*Model, *checker) {
	t.Helper()
	c := newChecker(t, lim)
	m := New(WithLimits(lim), WithKernelHandler(c.kernel), WithCapacity(func(uint32, int32) (Capacity, CapacitySource) {
		return capacity, CapacityConfigured
	}))
	var us []Usage
	for _, o := range ops {
		c.event(o)
		resets := m.resets
		us = m.apply(o, us[:0])
		if m.resets != resets {
			// A stream or process was dropped: its successor starts afresh.
			clear(c.streamEnd)
			clear(c.series)
		}
		if o.kind == opReport {
			c.usage(o.t, us)
		}
		c.size(m)
	}
	return m, c
}
