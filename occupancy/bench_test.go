package occupancy

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// benchCycle is one step of a steady workload of one process: two
// streams, s2 waiting for an event of s1, events synchronised, a stream
// and a device sync. Times are offsets in µs within a 32 µs cycle.
var benchCycle = []op{
	{kind: opLaunch, t: 0, stream: s1, grid: [3]uint32{264, 1, 1}, block: [3]uint32{256, 1, 1}, id: 1},
	{kind: opLaunch, t: 1, stream: s1, grid: [3]uint32{132, 1, 1}, block: [3]uint32{512, 1, 1}, id: 2},
	{kind: opLaunch, t: 2, stream: s1, grid: [3]uint32{1024, 1, 1}, block: [3]uint32{128, 1, 1}, id: 3},
	{kind: opRecord, t: 3, stream: s1, event: e1},
	{kind: opWait, t: 4, stream: s2, event: e1},
	{kind: opLaunch, t: 5, stream: s2, grid: [3]uint32{64, 1, 1}, block: [3]uint32{256, 1, 1}, id: 4},
	{kind: opLaunch, t: 6, stream: s2, grid: [3]uint32{64, 1, 1}, block: [3]uint32{256, 1, 1}, id: 5},
	{kind: opLaunch, t: 7, stream: s1, grid: [3]uint32{264, 1, 1}, block: [3]uint32{256, 1, 1}, id: 6},
	{kind: opRecord, t: 8, stream: s2, event: e1 + 1},
	{kind: opComplete, t: 12, event: e1},
	{kind: opLaunch, t: 13, stream: s1, grid: [3]uint32{264, 1, 1}, block: [3]uint32{256, 1, 1}, id: 7},
	{kind: opComplete, t: 16, event: e1 + 1},
	{kind: opLaunch, t: 17, stream: s2, grid: [3]uint32{8, 1, 1}, block: [3]uint32{1024, 1, 1}, id: 8},
	{kind: opStreamSync, t: 18, end: 22, stream: s1},
	{kind: opLaunch, t: 23, stream: s1, grid: [3]uint32{264, 1, 1}, block: [3]uint32{256, 1, 1}, id: 9},
	{kind: opDeviceSync, t: 24, end: 31},
}

// BenchmarkModel feeds the cycle for 8 processes, interleaved, reporting
// every 65536 events into a reused slice: one op is one event. Target:
// ≥ 5 million events/s on one core, 0 allocs/op. fresh-events gives each
// cycle new event handles, as a workload that creates events does.
func BenchmarkModel(b *testing.B) {
	b.Run("reused-events", func(b *testing.B) { benchModel(b, false) })
	b.Run("fresh-events", func(b *testing.B) { benchModel(b, true) })
}

func benchModel(b *testing.B, fresh bool) {
	const procs = 8
	var kernels int
	m := New(WithKernelHandler(func(k *Kernel) { kernels++ }))
	usage := make([]Usage, 0, 64)
	feed := func(i int) {
		cycle, step := i/(len(benchCycle)*procs), i%(len(benchCycle)*procs)
		o := benchCycle[step/procs]
		o.pid = uint32(100 + step%procs)
		if fresh && o.event != 0 {
			o.event += uint64(cycle) << 8
		}
		base := int64(cycle) * 32_000
		o.t = base + o.t*1000
		if o.end != 0 {
			o.end = base + o.end*1000
		}
		if i%65536 == 0 {
			usage = m.Report(o.t, usage[:0])
		}
		m.apply(o, nil)
	}
	// Warm up: processes, streams and queues exist.
	for i := range 1 << 16 {
		feed(i)
	}
	kernels = 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		feed(1<<16 + i)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.StopTimer()
	// Every kernel of the cycle ends, and nothing is dropped.
	want := b.N / (len(benchCycle) * procs) * 9 * procs
	require.GreaterOrEqual(b, kernels, want-9*procs, "%d kernels completed in %d events, want about %d", kernels, b.N, want)
	for r := range NumDropReasons {
		require.Zero(b, m.Dropped(r), "dropped (%v)", r)
	}
	s := m.Size()
	require.LessOrEqual(b, s.Pending, 9*procs, "state grows: %+v", s)
}
