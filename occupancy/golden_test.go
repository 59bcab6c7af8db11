package occupancy

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Golden sequences, computed by hand. Times are in milliseconds; the
// device holds 4 SMs × 1024 threads = 4096 threads, so that the numbers
// stay small. Every sequence belongs to pid 1 on device 0 unless an op
// says otherwise.

const ms = int64(1e6)

var goldenCap = Capacity{SMs: 4, ThreadsPerSM: 1024}

const (
	s1 = 0x1000 // created streams
	s2 = 0x2000
	s3 = 0x3000
	e1 = 0xe1 // events
)

// launch of blocks × threads (one-dimensional).
func launch(t int64, stream, id uint64, blocks, threads uint32) op {
	return op{kind: opLaunch, t: t * ms, pid: 1, stream: stream, id: id, grid: [3]uint32{blocks, 1, 1}, block: [3]uint32{threads, 1, 1}}
}
func ssync(begin, end int64, stream uint64) op {
	return op{kind: opStreamSync, t: begin * ms, end: end * ms, pid: 1, stream: stream}
}
func msync(begin, end int64, stream uint64) op {
	return op{kind: opMemcpySync, t: begin * ms, end: end * ms, pid: 1, stream: stream}
}
func dsync(begin, end int64) op {
	return op{kind: opDeviceSync, t: begin * ms, end: end * ms, pid: 1}
}
func record(t int64, stream, event uint64) op {
	return op{kind: opRecord, t: t * ms, pid: 1, stream: stream, event: event}
}
func done(t int64, event uint64) op { return op{kind: opComplete, t: t * ms, pid: 1, event: event} }
func wait(t int64, stream, event uint64) op {
	return op{kind: opWait, t: t * ms, pid: 1, stream: stream, event: event}
}
func exit(t int64) op   { return op{kind: opExit, t: t * ms, pid: 1} }
func report(t int64) op { return op{kind: opReport, t: t * ms} }
func (o op) on(d int32) op {
	o.dev = d
	return o
}

// wantKernel is a kernel estimate, in ms.
type wantKernel struct {
	id                uint64
	start, end, bound float64
	completion        Completion
}

// wantUsage is one Usage; reports is the index of the Report op among the
// sequence's reports.
type wantUsage struct {
	report        int
	dev           int32
	threadSeconds float64
	late          float64
	threadRatio   float64
	smRatio       float64
	kernels       [NumCompletions]uint64
	pending       int
	clamped       bool
	exited        bool
}

var golden = []struct {
	name    string
	ops     []op
	kernels []wantKernel
	usage   []wantUsage
}{
	{
		// One stream, one sync covering two kernels. The sync returns at
		// 10; nothing tells the kernels apart, so they share 0..10 evenly:
		// k1 0..5, k2 5..10. k2 asks 8×1024 threads, more than the device
		// holds: it counts 4096 threads and 4 SMs.
		// threads: 1024×5 + 4096×5 = 25600 thread-ms = 25.6 thread-s,
		// over 4096 × 20 ms = 81920: 0.3125.
		// SMs: 4×5 + 4×5 = 40 SM-ms over 4 × 20: 0.5.
		name: "single stream",
		ops: []op{
			launch(0, s1, 1, 4, 256),
			launch(1, s1, 2, 8, 1024),
			ssync(2, 10, s1),
			report(20),
		},
		kernels: []wantKernel{
			{1, 0, 5, 10, CompletionSync},
			{2, 5, 10, 10, CompletionSync},
		},
		usage: []wantUsage{{threadSeconds: 25.6, threadRatio: 0.3125, smRatio: 0.5, kernels: [3]uint64{0, 2, 0}}},
	},
	{
		// The host launches k2 only at 8: the even share would end k1 at
		// 5, but the model keeps a stream busy until its next launch, so
		// k1 runs 0..8 and k2 8..10: the stream is busy 0..10, an upper
		// bound (k1 may have ended at 0.1).
		// threads: 1024 × 10 = 10.24 thread-s, 0.25; SMs 4 × 10 / 40 = 1.
		name: "launch gap",
		ops: []op{
			launch(0, s1, 1, 4, 256),
			launch(8, s1, 2, 4, 256),
			ssync(9, 10, s1),
			report(10),
		},
		kernels: []wantKernel{
			{1, 0, 8, 10, CompletionSync},
			{2, 8, 10, 10, CompletionSync},
		},
		usage: []wantUsage{{threadSeconds: 10.24, threadRatio: 0.25, smRatio: 1, kernels: [3]uint64{0, 2, 0}}},
	},
	{
		// Two streams used one after the other, each with its own sync.
		// k1 (1024 threads, 4 blocks) 0..4, k2 (2 × 512 threads) 5..8.
		// threads: 1024×4 + 1024×3 = 7168 thread-ms = 7.168, / 40960: 0.175.
		// SMs: 4×4 + 2×3 = 22 SM-ms / 40: 0.55.
		name: "several streams",
		ops: []op{
			launch(0, s1, 1, 4, 256),
			ssync(1, 4, s1),
			launch(5, s2, 2, 2, 512),
			ssync(6, 8, s2),
			report(10),
		},
		kernels: []wantKernel{
			{1, 0, 4, 4, CompletionSync},
			{2, 5, 8, 8, CompletionSync},
		},
		usage: []wantUsage{{threadSeconds: 7.168, threadRatio: 0.175, smRatio: 0.55, kernels: [3]uint64{0, 2, 0}}},
	},
	{
		// Overlapping kernels on two streams add up: k1 (2 × 1024
		// threads) 0..8 on s1 and k2 (1 × 1024) 2..6 on s2.
		// threads: 2048×8 + 1024×4 = 20480 thread-ms = 20.48, / 40960: 0.5.
		// SMs: 2×8 + 1×4 = 20 / 40: 0.5.
		name: "overlapping streams",
		ops: []op{
			launch(0, s1, 1, 2, 1024),
			launch(2, s2, 2, 1, 1024),
			ssync(3, 6, s2),
			ssync(7, 8, s1),
			report(10),
		},
		kernels: []wantKernel{
			{2, 2, 6, 6, CompletionSync},
			{1, 0, 8, 8, CompletionSync},
		},
		usage: []wantUsage{{threadSeconds: 20.48, threadRatio: 0.5, smRatio: 0.5, kernels: [3]uint64{0, 2, 0}}},
	},
	{
		// Two full-device kernels overlap for 10 ms: 2 × 4096 × 10 =
		// 81920 thread-ms, but the device holds 4096 × 10 = 40960: the
		// interval is clamped to 40.96 thread-s, ratio 1, and so are the
		// SMs (2 × 4 × 10 = 80 > 40).
		name: "overlap clamped",
		ops: []op{
			launch(0, s1, 1, 8, 1024),
			launch(0, s2, 2, 8, 1024),
			dsync(1, 10),
			report(10),
		},
		kernels: []wantKernel{
			{1, 0, 10, 10, CompletionSync},
			{2, 0, 10, 10, CompletionSync},
		},
		usage: []wantUsage{{threadSeconds: 40.96, threadRatio: 1, smRatio: 1, kernels: [3]uint64{0, 2, 0}, clamped: true}},
	},
	{
		// An event recorded after k1 is seen complete at 3 (its
		// cudaEventSynchronize returned): k1 0..3, completion=event. k2,
		// launched at 2, starts only when k1 ends, 3, and ends at the
		// stream sync, 10.
		// threads: 1024 × 10 = 10.24, 0.25; SMs: 4 × 10 / 40 = 1.
		name: "event completion",
		ops: []op{
			launch(0, s1, 1, 4, 256),
			record(1, s1, e1),
			launch(2, s1, 2, 4, 256),
			done(3, e1),
			ssync(4, 10, s1),
			report(10),
		},
		kernels: []wantKernel{
			{1, 0, 3, 3, CompletionEvent},
			{2, 3, 10, 10, CompletionSync},
		},
		usage: []wantUsage{{threadSeconds: 10.24, threadRatio: 0.25, smRatio: 1, kernels: [3]uint64{1, 1, 0}}},
	},
	{
		// cudaEventRecord of the same event again moves it: the event
		// seen complete at 5 covers k1 and k2, which share 0..5.
		name: "event re-recorded",
		ops: []op{
			launch(0, s1, 1, 4, 256),
			record(1, s1, e1),
			launch(2, s1, 2, 4, 256),
			record(3, s1, e1),
			done(5, e1),
			report(10),
		},
		kernels: []wantKernel{
			{1, 0, 2.5, 5, CompletionEvent},
			{2, 2.5, 5, 5, CompletionEvent},
		},
		usage: []wantUsage{{threadSeconds: 5.12, threadRatio: 0.125, smRatio: 0.5, kernels: [3]uint64{2, 0, 0}}},
	},
	{
		// s1 waits for event e1, recorded on s2 after X. B is launched on
		// s1 at 12 but cannot start before e1 completes, seen at 60: its
		// time blocked, 12..60, is not busy. Without the wait the model
		// would run B 12..100.
		// X (1 × 1024 threads) 0..60, A 2..10, B 60..100: 108 ms × 1024
		// threads = 110.592 thread-s, / (4096 × 100 ms): 0.27; SMs 108 /
		// 400: 0.27.
		name: "wait edge",
		ops: []op{
			launch(0, s2, 1, 1, 1024), // X
			record(1, s2, e1),
			launch(2, s1, 2, 1, 1024), // A
			ssync(3, 10, s1),
			wait(11, s1, e1),
			launch(12, s1, 3, 1, 1024), // B
			done(60, e1),
			ssync(61, 100, s1),
			report(100),
		},
		kernels: []wantKernel{
			{2, 2, 10, 10, CompletionSync},
			{1, 0, 60, 60, CompletionEvent},
			{3, 60, 100, 100, CompletionSync},
		},
		usage: []wantUsage{{threadSeconds: 110.592, threadRatio: 0.27, smRatio: 0.27, kernels: [3]uint64{1, 2, 0}}},
	},
	{
		// The same wait, but e1 is never seen complete: s1's sync at 100
		// proves it was (s1 could not pass the wait otherwise), so it
		// ends X too, with the sync as bound. X and B ran one after the
		// other in 0..100: they share it, X 0..50, B 50..100.
		// threads: 1024 × 100 = 102.4, 0.25.
		name: "wait edge implied by a sync",
		ops: []op{
			launch(0, s2, 1, 1, 1024), // X
			record(1, s2, e1),
			wait(2, s1, e1),
			launch(3, s1, 2, 1, 1024), // B
			ssync(4, 100, s1),
			ssync(101, 102, s2), // nothing left
			report(110),
		},
		kernels: []wantKernel{
			{1, 0, 50, 100, CompletionSync},
			{2, 50, 100, 100, CompletionSync},
		},
		usage: []wantUsage{{threadSeconds: 102.4, threadRatio: 102.4 / (4096 * 0.110), smRatio: 100.0 / (4 * 110), kernels: [3]uint64{0, 2, 0}}},
	},
	{
		// cudaDeviceSynchronize on device 0 ends s1 and s2 there, not s3
		// on device 1, which its own sync ends at 12, after the first
		// report: 10 of its 12 ms ran before that report and are
		// credited late.
		// Report 10, device 0: k1 (2 × 512) 0..6, k2 (2 × 512) 1..6:
		// 1024 × 11 = 11.264 thread-s, / 40960: 0.275; SMs 2 × 11 / 40 =
		// 0.55. Device 1: k3 pending.
		// Report 20, device 1: k3 (4 × 256) 0..12: 12.288 thread-s, of
		// which 10.24 late; the interval's 2 ms: 2048 / 40960 = 0.05;
		// SMs 4 × 2 / 40 = 0.2.
		name: "device sync",
		ops: []op{
			launch(0, s1, 1, 2, 512),
			launch(0, s3, 3, 4, 256).on(1),
			launch(1, s2, 2, 2, 512),
			dsync(2, 6),
			report(10),
			msync(11, 12, s3).on(1),
			report(20),
		},
		kernels: []wantKernel{
			{1, 0, 6, 6, CompletionSync},
			{2, 1, 6, 6, CompletionSync},
			{3, 0, 12, 12, CompletionSync},
		},
		usage: []wantUsage{
			{report: 0, threadSeconds: 11.264, threadRatio: 0.275, smRatio: 0.55, kernels: [3]uint64{0, 2, 0}},
			{report: 0, dev: 1, pending: 1},
			{report: 1},
			{report: 1, dev: 1, threadSeconds: 12.288, late: 10.24, threadRatio: 0.05, smRatio: 0.2, kernels: [3]uint64{0, 1, 0}},
		},
	},
	{
		// k2 is launched by another thread while a sync of s1 is under
		// way (begun at 1): the sync covers k1 only. k2 waits for the
		// next sync and starts when k1 ended, 5.
		name: "launch during a sync",
		ops: []op{
			launch(0, s1, 1, 4, 256),
			launch(2, s1, 2, 4, 256),
			ssync(1, 5, s1),
			ssync(6, 9, s1),
			report(10),
		},
		kernels: []wantKernel{
			{1, 0, 5, 5, CompletionSync},
			{2, 5, 9, 9, CompletionSync},
		},
		usage: []wantUsage{{threadSeconds: 9.216, threadRatio: 0.225, smRatio: 0.9, kernels: [3]uint64{0, 2, 0}}},
	},
	{
		// The process exits at 7 with k1 and k2 pending: the driver tears
		// its context down, so they end by 7 (completion=exit) and share
		// 0..7. The next report is its last; the one after has nothing.
		// threads: 1024 × 7 = 7.168, 0.175; SMs 4 × 7 / 40 = 0.7.
		name: "exit mid-kernel",
		ops: []op{
			launch(0, s1, 1, 4, 256),
			launch(1, s1, 2, 4, 256),
			exit(7),
			report(10),
			report(20),
		},
		kernels: []wantKernel{
			{1, 0, 3.5, 7, CompletionExit},
			{2, 3.5, 7, 7, CompletionExit},
		},
		usage: []wantUsage{{threadSeconds: 7.168, threadRatio: 0.175, smRatio: 0.7, kernels: [3]uint64{0, 0, 2}, exited: true}},
	},
}

func TestGolden(t *testing.T) {
	for _, tc := range golden {
		t.Run(tc.name, func(t *testing.T) {
			c := newChecker(t, Limits{})
			m := New(WithKernelHandler(c.kernel), WithCapacity(func(uint32, int32) (Capacity, CapacitySource) {
				return goldenCap, CapacityConfigured
			}))
			var got []wantUsage
			reports := 0
			for _, o := range tc.ops {
				c.event(o)
				us := m.apply(o, nil)
				if o.kind != opReport {
					continue
				}
				c.usage(o.t, us)
				for _, u := range us {
					assert.Equal(t, goldenCap, u.Capacity, "usage %+v: wrong capacity", u)
					assert.Equal(t, CapacityConfigured, u.CapacitySource, "usage %+v: wrong capacity source", u)
					assert.Equal(t, uint32(1), u.PID, "usage %+v: wrong pid", u)
					got = append(got, wantUsage{
						report: reports, dev: u.Device, threadSeconds: u.ThreadSeconds, late: u.LateThreadSeconds,
						threadRatio: u.ThreadRatio, smRatio: u.SMActiveRatio, kernels: u.Kernels,
						pending: u.Pending, clamped: u.Clamped, exited: u.Exited,
					})
				}
				reports++
			}
			require.Len(t, c.kernels, len(tc.kernels), "kernels")
			for i, k := range c.kernels {
				w := tc.kernels[i]
				g := wantKernel{k.ID, float64(k.Start) / 1e6, float64(k.End) / 1e6, float64(k.Bound) / 1e6, k.Completion}
				where := fmt.Sprintf("kernel %d: got %+v, want %+v", i, g, w)
				assertNear(t, w.start, g.start, where)
				assertNear(t, w.end, g.end, where)
				assertNear(t, w.bound, g.bound, where)
				assert.Equal(t, w.id, g.id, where)
				assert.Equal(t, w.completion, g.completion, where)
			}
			require.Len(t, got, len(tc.usage), "got usage %+v, want %+v", got, tc.usage)
			for i, g := range got {
				w := tc.usage[i]
				where := fmt.Sprintf("usage %d:\n got %+v\nwant %+v", i, g, w)
				assert.Equal(t, w.report, g.report, where)
				assert.Equal(t, w.dev, g.dev, where)
				assertNear(t, w.threadSeconds, g.threadSeconds, where)
				assertNear(t, w.late, g.late, where)
				assertNear(t, w.threadRatio, g.threadRatio, where)
				assertNear(t, w.smRatio, g.smRatio, where)
				assert.Equal(t, w.kernels, g.kernels, where)
				assert.Equal(t, w.pending, g.pending, where)
				assert.Equal(t, w.clamped, g.clamped, where)
				assert.Equal(t, w.exited, g.exited, where)
			}
		})
	}
}

// assertNear asserts that got is want within 1e-9 × max(1, |want|).
func assertNear(t *testing.T, want, got float64, msgAndArgs ...any) bool {
	t.Helper()
	return assert.InDelta(t, want, got, 1e-9*max(1, math.Abs(want)), msgAndArgs...)
}
