package gputrace

// Bounded under churn, on synthetic events: the process cap and its fold,
// the retirement of exited processes' series, the histograms shared by
// the processes of one executable, and the Producer's histograms against
// the SDK's.

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/xpuscope/xpuscope/internal/gputracebpf"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

var (
	one   = [3]uint32{1, 1, 1}
	block = [3]uint32{128, 1, 1}
)

func malloc(pid uint32, ptr, size, ts uint64) gputracebpf.Event {
	return gputracebpf.Event{TS: ts, PID: pid, TID: pid, Kind: gputracebpf.KindMalloc, API: apiOf("cudaMalloc"), A: [6]uint64{ptr, size}}
}

func free(pid uint32, ptr, ts uint64) gputracebpf.Event {
	return gputracebpf.Event{TS: ts, PID: pid, TID: pid, Kind: gputracebpf.KindFree, API: apiOf("cudaFree"), A: [6]uint64{ptr}}
}

// housekeep runs the aggregator's exit handling at the harness's clock, a
// second later each time, with alive saying which processes run.
func (h *harness) housekeep(alive func(uint32) bool) {
	h.now += uint64(time.Second)
	h.s.mu.Lock()
	h.s.agg.forget(alive, h.now, h.s.collected.Load())
	h.s.mu.Unlock()
}

func dead(uint32) bool { return false }

// tracked reports whether pid has series of its own.
func (h *harness) tracked(pid uint32) bool {
	_, ok := h.s.agg.procs[pid]
	return ok
}

// TestProcessCapFolds: past WithMaxProcesses, processes fold into one set
// of series, with process.executable.name=_OTHER and no pid: their
// launches count under cuda.kernel.name=_OTHER (not as kernel-name
// overflow), each process counts once in xpuscope.cuda.process.overflow,
// their histograms are the fold's, and their spans name their own pids.
func TestProcessCapFolds(t *testing.T) {
	h := newHarness(t, WithMaxProcesses(1))
	h.names.symbols[0x1000] = "k()"
	h.feed(
		launch(100, 0x1000, one, block, 0, 1),
		launch(200, 0x1000, one, block, 0, 2),
		launch(200, 0x1000, one, block, 0, 3),
		launch(300, 0x1000, one, block, 0, 4),
	)
	pts := h.collect(t)
	require.Len(t, pts.Find(semconv.CUDAKernelLaunches.Name), 2)
	own := pts.One(t, semconv.CUDAKernelLaunches.Name, semconv.ProcessPID.Int(100))
	assert.Equal(t, 1.0, own.Value)
	assert.Equal(t, "k()", own.Get(semconv.CUDAKernelName))
	fold := pts.One(t, semconv.CUDAKernelLaunches.Name, semconv.ProcessExecutableName.String(semconv.Other))
	assert.Equal(t, 3.0, fold.Value)
	assert.False(t, fold.Has(semconv.ProcessPID))
	assert.Equal(t, semconv.Other, fold.Get(semconv.CUDAKernelName))
	assert.Equal(t, 3.0, pts.One(t, semconv.CUDAAPICalls.Name, semconv.ProcessExecutableName.String(semconv.Other)).Value)
	assert.Equal(t, 2.0, pts.One(t, semconv.XpuscopeCUDAProcessOverflow.Name).Value, "each folded process once")
	assert.Equal(t, 0.0, pts.One(t, semconv.XpuscopeCUDAKernelNamesOverflow.Name).Value)
	assert.Equal(t, uint64(3), pts.One(t, semconv.CUDAKernelGridSize.Name, semconv.ProcessExecutableName.String(semconv.Other)).Count)
	assert.Equal(t, uint64(1), pts.One(t, semconv.CUDAKernelGridSize.Name, semconv.ProcessExecutableName.String("train")).Count)

	spans := map[int64]int{}
	for _, sp := range h.spans.GetSpans() {
		for _, kv := range sp.Attributes {
			if kv.Key == semconv.ProcessPID {
				spans[kv.Value.AsInt64()]++
			}
		}
	}
	assert.Equal(t, map[int64]int{100: 1, 200: 2, 300: 1}, spans)

	// A folded process stays folded; the slot of the one that exits is
	// free for the next process once its series go.
	h.housekeep(func(pid uint32) bool { return pid != 100 })
	h.now += uint64(maxExitKeep)
	h.housekeep(func(pid uint32) bool { return pid != 100 })
	h.feed(launch(200, 0x1000, one, block, 0, h.now), launch(400, 0x1000, one, block, 0, h.now))
	pts = h.collect(t)
	assert.Equal(t, 4.0, pts.One(t, semconv.CUDAKernelLaunches.Name, semconv.ProcessExecutableName.String(semconv.Other)).Value)
	assert.Equal(t, 1.0, pts.One(t, semconv.CUDAKernelLaunches.Name, semconv.ProcessPID.Int(400)).Value)
	assert.Empty(t, pts.Find(semconv.CUDAKernelLaunches.Name, semconv.ProcessPID.Int(100)))
}

// TestExitedSeriesRetire: an exited process's series stay until the
// reader has had time to read its last records and a collection reported
// them; then they go, with nothing moved elsewhere. A record of it read
// later counts in the fold; a new process with its pid starts afresh.
func TestExitedSeriesRetire(t *testing.T) {
	h := newHarness(t)
	h.feed(launch(100, 1, one, block, 0, 1))
	series := func() testutil.Points {
		return h.collect(t).Find(semconv.CUDAKernelLaunches.Name, semconv.ProcessPID.Int(100))
	}
	require.Len(t, series(), 1)

	h.housekeep(dead) // the exit is noticed
	exited := h.now
	require.Len(t, series(), 1, "the reader may not have read its last records yet")
	h.now += uint64(drainTime)
	h.s.publish() // its last records are in, not yet collected
	h.housekeep(dead)
	require.True(t, h.tracked(100), "no collection has reported its last values")
	require.Len(t, series(), 1)
	h.housekeep(dead)
	require.False(t, h.tracked(100), "retired after a collection")
	require.Empty(t, series())
	require.Empty(t, h.collect(t).Find(semconv.CUDAAPICalls.Name, semconv.ProcessPID.Int(100)))

	h.feed(launch(100, 1, one, block, 0, exited-1))
	pts := h.collect(t)
	assert.Equal(t, 1.0, pts.One(t, semconv.CUDAKernelLaunches.Name, semconv.ProcessExecutableName.String(semconv.Other)).Value,
		"a record read after the retirement counts in the fold")
	assert.Equal(t, 0.0, pts.One(t, semconv.XpuscopeCUDAProcessOverflow.Name).Value, "a late record folds no process")
	h.feed(launch(100, 1, one, block, 0, h.now))
	assert.Equal(t, 1.0, h.collect(t).One(t, semconv.CUDAKernelLaunches.Name, semconv.ProcessPID.Int(100)).Value,
		"a new process with the pid")
}

// TestExitedSeriesWithoutCollection: with no collection at all, an exited
// process's series go after maxExitKeep; a grace keeps them at least that
// long after the exit, collected or not.
func TestExitedSeriesWithoutCollection(t *testing.T) {
	h := newHarness(t)
	h.feed(launch(100, 1, one, block, 0, 1))
	h.housekeep(dead)
	h.now += uint64(maxExitKeep) - uint64(2*time.Second)
	h.housekeep(dead)
	require.True(t, h.tracked(100))
	h.housekeep(dead)
	require.False(t, h.tracked(100))

	// The grace runs from when its last records are in: drainTime after
	// the exit is seen.
	h = newHarness(t, WithExitGrace(10*time.Second))
	h.feed(launch(100, 1, one, block, 0, 1))
	h.housekeep(dead)
	exited := h.now
	for range 11 {
		h.collect(t)
		h.housekeep(dead)
		require.True(t, h.tracked(100), "%v after the exit", time.Duration(h.now-exited))
	}
	h.collect(t)
	h.housekeep(dead)
	require.False(t, h.tracked(100))
}

// TestHistogramsByExecutable: the processes of one executable share its
// histograms, which go with the last of them; with a Producer they come
// back from zero, with a new start time.
func TestHistogramsByExecutable(t *testing.T) {
	p := NewProducer()
	h := newHarness(t, WithProducer(p))
	h.names.exe[101] = "train"
	h.feed(launch(100, 1, one, block, 0, 10), launch(101, 1, one, block, 0, 20))
	pts := h.collect(t)
	require.Len(t, pts.Find(semconv.CUDAKernelLaunches.Name), 2, "one counter per process")
	grid := pts.One(t, semconv.CUDAKernelGridSize.Name)
	assert.Equal(t, uint64(2), grid.Count)
	assert.False(t, grid.Has(semconv.ProcessPID))

	retire := func(pid uint32) {
		h.housekeep(func(p uint32) bool { return p != pid })
		h.now += uint64(drainTime)
		h.collect(t)
		h.housekeep(func(p uint32) bool { return p != pid })
		require.False(t, h.tracked(pid))
	}
	retire(100)
	assert.Equal(t, uint64(2), h.collect(t).One(t, semconv.CUDAKernelGridSize.Name).Count, "101 still runs")
	retire(101)
	assert.Empty(t, h.collect(t).Find(semconv.CUDAKernelGridSize.Name))
	assert.Len(t, h.s.agg.groups, 1, "the group went with its last process: the fold's is left")

	h.names.exe[102] = "train"
	h.feed(launch(102, 1, one, block, 0, h.now))
	h.s.publish()
	sm, err := p.Produce(context.Background())
	require.NoError(t, err)
	require.Len(t, sm, 1)
	var grids []metricdata.HistogramDataPoint[int64]
	for _, m := range sm[0].Metrics {
		if m.Name == semconv.CUDAKernelGridSize.Name {
			grids = m.Data.(metricdata.Histogram[int64]).DataPoints
		}
	}
	require.Len(t, grids, 1)
	assert.Equal(t, uint64(1), grids[0].Count)
	assert.Equal(t, time.Unix(0, int64(h.now)), grids[0].StartTime, "a new cumulative series")
}

// TestFoldedCallsAndMemory: the fold's unrecorded calls add up its
// processes' and stay when one exits (a counter never goes back); its
// outstanding memory is its processes' allocations, each freed by its own
// process, and an exited one's go with it.
func TestFoldedCallsAndMemory(t *testing.T) {
	h := newHarness(t, WithMaxProcesses(1))
	launchAPI := uint32(apiOf("cudaLaunchKernel"))
	h.feed(launch(100, 1, one, block, 0, 1),
		malloc(200, 0xd000, 1000, 2), malloc(300, 0xd000, 50, 3), malloc(300, 0xe000, 7, 4),
		free(200, 0xe000, 5), // not 200's: nothing freed
		free(300, 0xe000, 6))
	h.s.agg.unrecorded(gputracebpf.CallKey{Pid: 200, Api: launchAPI}, 3, h.now)
	h.s.agg.unrecorded(gputracebpf.CallKey{Pid: 300, Api: launchAPI}, 4, h.now)
	h.s.agg.unrecorded(gputracebpf.CallKey{Pid: 300, Api: launchAPI}, 5, h.now)
	fold := semconv.ProcessExecutableName.String(semconv.Other)
	pts := h.collect(t)
	assert.Equal(t, 3.0+5, pts.One(t, semconv.CUDAAPICalls.Name, fold, semconv.CUDAAPIName.String("cudaLaunchKernel")).Value)
	assert.Equal(t, 1050.0, pts.One(t, semconv.CUDAMemoryOutstanding.Name, fold).Value)
	assert.Equal(t, 7.0, pts.One(t, semconv.CUDAMemoryFreed.Name, fold).Value)

	h.housekeep(func(pid uint32) bool { return pid != 300 })
	h.s.agg.unrecorded(gputracebpf.CallKey{Pid: 200, Api: launchAPI}, 4, h.now)
	pts = h.collect(t)
	assert.Equal(t, 4.0+5, pts.One(t, semconv.CUDAAPICalls.Name, fold, semconv.CUDAAPIName.String("cudaLaunchKernel")).Value)
	assert.Equal(t, 1000.0, pts.One(t, semconv.CUDAMemoryOutstanding.Name, fold).Value, "300's allocations went with it")
	assert.Equal(t, 1050.0+7, pts.One(t, semconv.CUDAMemoryAllocated.Name, fold).Value)
}

// TestProducerMatchesSDK: the same events through the MeterProvider's
// histograms and through a Producer give the same data, bucket bounds
// included, and values on a bound fall in the bucket it closes.
func TestProducerMatchesSDK(t *testing.T) {
	plain, own := newHarness(t), newHarness(t, WithProducer(NewProducer()))
	var evs []gputracebpf.Event
	ts := uint64(1)
	for _, g := range []uint32{1, 2, 3, 1024, 1025, 1 << 20, 1<<20 + 1, 0x7fffffff} {
		for _, smem := range []uint64{0, 1024, 49152, 232448, 232449} {
			for _, pid := range []uint32{100, 200} {
				ts++
				evs = append(evs, launch(pid, 0x1000, [3]uint32{g, 1, 1}, [3]uint32{g % 1025, 1, 1}, smem, ts))
			}
		}
	}
	for i, d := range []uint64{0, 1000, 1001, 5e9, 2e10} {
		ts += d
		evs = append(evs, gputracebpf.Event{TS: ts, PID: 100 + uint32(i%2)*100, TID: 100, Kind: gputracebpf.KindSync,
			API: apiOf("cudaDeviceSynchronize"), A: [6]uint64{0, d}})
	}
	plain.feed(evs...)
	own.feed(evs...)
	plain.s.publish()
	own.s.publish()
	want := histograms(t, plain)
	got := histograms(t, own)
	require.Len(t, want, 5, "grid, block, shared memory, sync and kernel duration")
	require.Len(t, got, len(want))
	for name, w := range want {
		// The SDK's start time is its meter's; the Producer's the series'.
		metricdatatest.AssertEqual(t, w, got[name], metricdatatest.IgnoreTimestamp())
	}
	names := testutil.CheckScope(t, own.reader, CUDA.ScopeName())
	assert.Subset(t, names, []string{semconv.CUDAKernelGridSize.Name, semconv.CUDASyncDuration.Name, semconv.GPUKernelDuration.Name})
}

// histograms collects h's histograms, by name.
func histograms(t *testing.T, h *harness) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, h.reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch m.Data.(type) {
			case metricdata.Histogram[int64], metricdata.Histogram[float64]:
				require.NotContains(t, out, m.Name, "reported twice")
				out[m.Name] = m
			}
		}
	}
	return out
}

// TestHistogramsNoPID: no histogram carries process.pid, whichever path
// records it; every registered attribute of each is one the registry
// lists.
func TestHistogramsNoPID(t *testing.T) {
	for _, reg := range []semconv.Metric{semconv.CUDAKernelGridSize, semconv.CUDAKernelBlockSize,
		semconv.CUDAKernelSharedMemory, semconv.CUDASyncDuration, semconv.GPUKernelDuration} {
		assert.NotContains(t, reg.Attributes, semconv.ProcessPID, reg.Name)
		assert.Contains(t, reg.Attributes, semconv.ProcessExecutableName, reg.Name)
	}
	h := newHarness(t, WithProducer(NewProducer()))
	h.feed(launch(100, 1, one, block, 0, 1))
	h.s.publish()
	for _, m := range histograms(t, h) {
		for _, dp := range m.Data.(metricdata.Histogram[int64]).DataPoints {
			_, ok := dp.Attributes.Value(semconv.ProcessPID)
			assert.False(t, ok, m.Name)
		}
	}
}

// TestHistBucket: a value goes in the first bucket whose bound is not
// below it (the SDK's rule), for every registered histogram's bounds and
// values on, between and beyond them.
func TestHistBucket(t *testing.T) {
	for _, d := range []semconv.Metric{semconv.CUDAKernelGridSize, semconv.CUDAKernelSharedMemory,
		semconv.CUDASyncDuration, semconv.GPUKernelDuration} {
		var values []float64
		for _, b := range d.Buckets {
			values = append(values, b, b*0.999, b*1.001, -b, b+1)
		}
		values = append(values, 0, 1e300)
		for _, v := range values {
			b := newBuckets(d.Buckets)
			h := newHist[float64](b, time.Time{})
			h.record(v, b)
			want := sort.SearchFloat64s(d.Buckets, v)
			assert.Equal(t, uint64(1), h.counts[want], "%s: %v in bucket %d: %v", d.Name, v, want, h.counts)
		}
	}
}
