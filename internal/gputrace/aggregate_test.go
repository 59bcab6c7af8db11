package gputrace

// Aggregation tests on synthetic events: no kernel, no BPF. The events are
// what gputracebpf.Decode produces from the probes' records.

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/gputracebpf"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

// fakeNames stands in for /proc and the ELF files of the processes.
type fakeNames struct {
	exe     map[uint32]string
	symbols map[uint64]string // address → demangled name, any process
	lookups int
}

func (f *fakeNames) Symbolize(_ uint32, addr uint64) (string, bool) {
	f.lookups++
	n, ok := f.symbols[addr]
	return n, ok
}

func (f *fakeNames) ExecutableName(pid uint32) string { return f.exe[pid] }

// harness is an aggregator wired to an SDK reader and an in-memory span
// exporter, fed through the Source's observe callback (and its Producer,
// when the options give one, registered on the reader).
type harness struct {
	s      *Source
	reader *sdkmetric.ManualReader
	spans  *tracetest.InMemoryExporter
	names  *fakeNames
	now    uint64
}

func newHarness(t *testing.T, opts ...Option) *harness {
	t.Helper()
	cfg, err := newConfig(opts)
	require.NoError(t, err)
	var readerOpts []sdkmetric.ManualReaderOption
	if cfg.producer != nil {
		readerOpts = append(readerOpts, sdkmetric.WithProducer(cfg.producer))
	}
	h := &harness{
		reader: sdkmetric.NewManualReader(readerOpts...),
		spans:  tracetest.NewInMemoryExporter(),
		names:  &fakeNames{exe: map[uint32]string{100: "train", 200: "serve"}, symbols: map[uint64]string{}},
		now:    uint64(time.Hour),
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(h.spans))
	meter := mp.Meter(CUDA.ScopeName(), metric.WithInstrumentationVersion(xpuscope.Version))
	h.s = &Source{rt: CUDA, cfg: cfg, mono: func() uint64 { return h.now },
		attachedByTarget: map[string]int64{}}
	require.NoError(t, h.s.inst.create(meter))
	_, err = meter.RegisterCallback(h.s.observe, h.s.inst.observables()...)
	require.NoError(t, err)
	h.s.agg = newAggregator(&h.s.cfg, h.names, &h.s.inst, &spanner{tracer: tp.Tracer(CUDA.ScopeName()),
		wall: func(k uint64) time.Time { return time.Unix(0, int64(k)) }})
	if cfg.producer != nil {
		cfg.producer.sources.Add(h.s)
	}
	return h
}

func (h *harness) feed(evs ...gputracebpf.Event) {
	for i := range evs {
		h.s.agg.handle(context.Background(), &evs[i])
	}
}

// collect publishes what the aggregator holds, as the Source's reader
// does after each batch, and collects it.
func (h *harness) collect(t *testing.T) testutil.Points {
	h.s.publish()
	return testutil.Collect(t, h.reader)
}

func launch(pid uint32, fn uint64, grid, block [3]uint32, smem uint64, ts uint64) gputracebpf.Event {
	return gputracebpf.Event{TS: ts, PID: pid, TID: pid, Kind: gputracebpf.KindLaunch, API: apiOf("cudaLaunchKernel"),
		A: [6]uint64{fn, uint64(grid[0]) | uint64(grid[1])<<32, uint64(grid[2]) | uint64(block[2])<<32,
			uint64(block[0]) | uint64(block[1])<<32, smem, 0x1111}}
}

func apiOf(symbol string) gputracebpf.API {
	for _, p := range gputracebpf.Probes {
		if p.Symbol == symbol {
			return p.API
		}
	}
	panic(symbol)
}

func TestLaunchesByKernel(t *testing.T) {
	h := newHarness(t)
	h.names.symbols[0x1000] = "vectorAdd(float*, float*, float*, int)"
	h.names.symbols[0x2000] = "gemm(float const*, float*)"
	h.feed(
		launch(100, 0x1000, [3]uint32{4, 2, 1}, [3]uint32{128, 1, 1}, 1024, 1),
		launch(100, 0x1000, [3]uint32{4, 2, 1}, [3]uint32{128, 1, 1}, 1024, 2),
		launch(100, 0x2000, [3]uint32{1, 1, 1}, [3]uint32{32, 8, 1}, 0, 3),
		launch(100, 0x3000, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, 4), // no symbol
	)
	pts := h.collect(t)
	name := semconv.CUDAKernelName
	assert.Equal(t, 2.0, pts.One(t, semconv.CUDAKernelLaunches.Name, name.String("vectorAdd(float*, float*, float*, int)")).Value)
	assert.Equal(t, 1.0, pts.One(t, semconv.CUDAKernelLaunches.Name, name.String("gemm(float const*, float*)")).Value)
	p := pts.One(t, semconv.CUDAKernelLaunches.Name, name.String(semconv.Unknown))
	assert.Equal(t, 1.0, p.Value)
	assert.Equal(t, "train", p.Get(semconv.ProcessExecutableName))
	assert.Equal(t, "100", p.Get(semconv.ProcessPID))
	assert.Equal(t, "cudaLaunchKernel", p.Get(semconv.CUDAAPIName))
	assert.Equal(t, 1.0, pts.One(t, semconv.XpuscopeCUDAKernelNamesUnresolved.Name).Value)

	g := pts.One(t, semconv.CUDAKernelGridSize.Name)
	assert.Equal(t, uint64(4), g.Count)
	assert.Equal(t, float64(8+8+1+1), g.Value)
	b := pts.One(t, semconv.CUDAKernelBlockSize.Name)
	assert.Equal(t, float64(128+128+256+1), b.Value)
	assert.Equal(t, float64(2048), pts.One(t, semconv.CUDAKernelSharedMemory.Name).Value)

	// A function is looked up once, resolved or not.
	before := h.names.lookups
	h.feed(launch(100, 0x1000, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, 5),
		launch(100, 0x3000, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, 6))
	assert.Equal(t, before, h.names.lookups)
}

func TestRegisteredNameWinsAndResolvesUnknown(t *testing.T) {
	h := newHarness(t)
	h.feed(launch(100, 0x5000, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, 1))
	name := gputracebpf.Event{PID: 100, Kind: gputracebpf.KindFuncName, API: apiOf("__cudaRegisterFunction"),
		A: [6]uint64{0x5000, 0}, Name: []byte("_Z9vectorAddPfS_S_i")}
	h.feed(name, launch(100, 0x5000, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, 2))
	pts := h.collect(t)
	assert.Equal(t, 1.0, pts.One(t, semconv.CUDAKernelLaunches.Name, semconv.CUDAKernelName.String("vectorAdd(float*, float*, float*, int)")).Value)
	assert.Equal(t, 1.0, pts.One(t, semconv.CUDAKernelLaunches.Name, semconv.CUDAKernelName.String(semconv.Unknown)).Value)
}

func TestDriverLaunchNames(t *testing.T) {
	h := newHarness(t)
	drv := apiOf("cuLaunchKernel")
	h.names.symbols[0x7000] = "stub()"
	h.feed(
		// cuModuleGetFunction named handle 0xa.
		gputracebpf.Event{PID: 100, Kind: gputracebpf.KindFuncName, API: apiOf("cuModuleGetFunction"), A: [6]uint64{0xa, 1}, Name: []byte("_Z4gemmv")},
		// cudaGetKernel mapped handle 0xb to host stub 0x7000.
		gputracebpf.Event{PID: 100, Kind: gputracebpf.KindKernelHandle, API: apiOf("cudaGetKernel"), A: [6]uint64{0xb, 0x7000}},
		gputracebpf.Event{PID: 100, Kind: gputracebpf.KindLaunch, API: drv, A: [6]uint64{0xa, 1 | 1<<32, 1 | 1<<32, 1 | 1<<32}},
		gputracebpf.Event{PID: 100, Kind: gputracebpf.KindLaunch, API: drv, A: [6]uint64{0xb, 1 | 1<<32, 1 | 1<<32, 1 | 1<<32}},
		gputracebpf.Event{PID: 100, Kind: gputracebpf.KindLaunch, API: drv, A: [6]uint64{0x7000, 1 | 1<<32, 1 | 1<<32, 1 | 1<<32}},
	)
	pts := h.collect(t)
	launches := semconv.CUDAKernelLaunches.Name
	assert.Equal(t, 1.0, pts.One(t, launches, semconv.CUDAKernelName.String("gemm()")).Value)
	assert.Equal(t, 1.0, pts.One(t, launches, semconv.CUDAKernelName.String("stub()")).Value)
	// A driver handle is not a code address: it is never symbolized.
	assert.Equal(t, 1.0, pts.One(t, launches, semconv.CUDAKernelName.String(semconv.Unknown)).Value)
}

func TestKernelNameCap(t *testing.T) {
	h := newHarness(t, WithMaxKernelNames(2))
	for i := range uint64(5) {
		h.names.symbols[0x1000*(i+1)] = string(rune('a' + i))
		h.feed(launch(100, 0x1000*(i+1), [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, i+1))
	}
	pts := h.collect(t)
	assert.Len(t, pts.Find(semconv.CUDAKernelLaunches.Name), 3)
	assert.Equal(t, 3.0, pts.One(t, semconv.CUDAKernelLaunches.Name, semconv.CUDAKernelName.String(semconv.Other)).Value)
	assert.Equal(t, 3.0, pts.One(t, semconv.XpuscopeCUDAKernelNamesOverflow.Name).Value)
}

func TestMemoryAccounting(t *testing.T) {
	h := newHarness(t)
	malloc := func(ptr, size uint64, ret int32, ts uint64) gputracebpf.Event {
		return gputracebpf.Event{TS: ts, PID: 100, Kind: gputracebpf.KindMalloc, API: apiOf("cudaMalloc"), Ret: ret, A: [6]uint64{ptr, size}}
	}
	free := func(ptr uint64) gputracebpf.Event {
		return gputracebpf.Event{TS: 10, PID: 100, Kind: gputracebpf.KindFree, API: apiOf("cudaFree"), A: [6]uint64{ptr}}
	}
	h.now = 10e9
	h.feed(
		malloc(0xa000, 1<<20, 0, 1e9),
		malloc(0xb000, 2<<20, 0, 4e9),
		malloc(0, 4<<20, 2, 5e9), // cudaErrorMemoryAllocation
		free(0xb000),
		free(0xdead), // allocated before tracing: ignored
	)
	pts := h.collect(t)
	assert.Equal(t, float64(3<<20), pts.One(t, semconv.CUDAMemoryAllocated.Name).Value)
	assert.Equal(t, float64(2<<20), pts.One(t, semconv.CUDAMemoryFreed.Name).Value)
	assert.Equal(t, float64(1<<20), pts.One(t, semconv.CUDAMemoryOutstanding.Name).Value)
	assert.Equal(t, 9.0, pts.One(t, semconv.CUDAMemoryOldestAge.Name).Value)
	e := pts.One(t, semconv.CUDAAPIErrors.Name)
	assert.Equal(t, 1.0, e.Value)
	assert.Equal(t, "2", e.Get(semconv.CUDAErrorCode))
	assert.Equal(t, "cudaMalloc", e.Get(semconv.CUDAAPIName))

	sus := h.s.LeakSuspects(100, 5)
	require.Len(t, sus, 1)
	assert.Equal(t, Allocation{Address: 0xa000, Size: 1 << 20, Age: 9 * time.Second, Function: "cudaMalloc"}, sus[0])
}

func TestMemcpyBytesByDirection(t *testing.T) {
	h := newHarness(t)
	cp := func(kind, n uint64, api string) gputracebpf.Event {
		return gputracebpf.Event{PID: 100, Kind: gputracebpf.KindMemcpy, API: apiOf(api), A: [6]uint64{1, 2, n, kind}}
	}
	h.feed(cp(1, 100, "cudaMemcpy"), cp(1, 50, "cudaMemcpy"), cp(2, 7, "cudaMemcpyAsync"), cp(99, 3, "cudaMemcpy"),
		cp(gputracebpf.MemcpyHostToDevice, 11, "cuMemcpyHtoD_v2"))
	pts := h.collect(t)
	b := semconv.CUDAMemcpyTransferred.Name
	kind := semconv.CUDAMemcpyKind
	assert.Equal(t, 150.0, pts.One(t, b, kind.String("host_to_device"), semconv.CUDAAPIName.String("cudaMemcpy")).Value)
	assert.Equal(t, 11.0, pts.One(t, b, kind.String("host_to_device"), semconv.CUDAAPIName.String("cuMemcpyHtoD_v2")).Value)
	assert.Equal(t, 7.0, pts.One(t, b, kind.String("device_to_host")).Value)
	assert.Equal(t, 3.0, pts.One(t, b, kind.String("default")).Value, "an out-of-range kind counts as default")
}

func TestSyncAndErrors(t *testing.T) {
	h := newHarness(t)
	h.feed(gputracebpf.Event{TS: 5e9, PID: 200, Device: 3, Kind: gputracebpf.KindSync, API: apiOf("cudaStreamSynchronize"), Ret: 100, A: [6]uint64{0x1111, 2e6}})
	pts := h.collect(t)
	d := pts.One(t, semconv.CUDASyncDuration.Name)
	assert.Equal(t, uint64(1), d.Count)
	assert.InDelta(t, 0.002, d.Value, 1e-12)
	assert.Equal(t, "3", d.Get(semconv.CUDADevice))
	assert.Equal(t, 1.0, pts.One(t, semconv.CUDAAPIErrors.Name, semconv.CUDAErrorCode.Int(100)).Value)

	spans := h.spans.GetSpans()
	require.Len(t, spans, 1)
	assert.Equal(t, semconv.SpanCUDASync, spans[0].Name)
	assert.Equal(t, 2*time.Millisecond, spans[0].EndTime.Sub(spans[0].StartTime))
}

func TestSpanRateCap(t *testing.T) {
	h := newHarness(t, WithSpanRate(10))
	// 100 launches within one second: the burst (10) passes, the rest is
	// suppressed; a second later, 10 more tokens.
	for i := range uint64(100) {
		h.feed(launch(100, 1, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, 1e9+i*1e6))
	}
	assert.Len(t, h.spans.GetSpans(), 10)
	h.feed(launch(100, 1, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, 3e9))
	assert.Len(t, h.spans.GetSpans(), 11)
	pts := h.collect(t)
	assert.Equal(t, 90.0, pts.One(t, semconv.XpuscopeCUDASpansSuppressed.Name).Value)
	assert.Equal(t, 101.0, pts.One(t, semconv.CUDAKernelLaunches.Name).Value, "metrics see every launch")

	sp := h.spans.GetSpans()[0]
	assert.Equal(t, semconv.SpanCUDAKernelLaunch, sp.Name)
	attrs := map[string]string{}
	for _, kv := range sp.Attributes {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	assert.Equal(t, "1", attrs[string(semconv.CUDAGridX)])
	assert.Equal(t, "0x1111", attrs[string(semconv.CUDAStream)])

	off := newHarness(t, WithSpanRate(0))
	off.feed(launch(100, 1, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, 1))
	assert.Empty(t, off.spans.GetSpans())
}

func TestTokenBucket(t *testing.T) {
	b := newTokenBucket(2, 2)
	assert.True(t, b.take(1e9))
	assert.True(t, b.take(1e9))
	assert.False(t, b.take(1e9))
	assert.True(t, b.take(1.5e9), "half a second at 2/s refills one")
	assert.False(t, b.take(1.5e9))
	assert.False(t, b.take(1e9), "time going backwards refills nothing")
}

// TestAPICallCounts: a call counts once per record, but for the return of
// a synchronous copy (the copy's entry record counted it), plus what the
// BPF side counted as unrecorded; each process and API is its own series.
func TestAPICallCounts(t *testing.T) {
	h := newHarness(t)
	copyAPI := apiOf("cudaMemcpy")
	h.feed(
		launch(100, 0x1000, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, 1),
		launch(100, 0x1000, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, 2),
		launch(200, 0x1000, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, 3),
		gputracebpf.Event{TS: 4, PID: 100, TID: 100, Kind: gputracebpf.KindMemcpy, API: copyAPI, A: [6]uint64{1, 2, 64, 1}},
		gputracebpf.Event{TS: 5, PID: 100, TID: 100, Kind: gputracebpf.KindCopyDone, API: copyAPI, A: [6]uint64{0, 10, 0, 1}},
		launch(100, 0x1000, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, 6),
	)
	// As housekeep sets it from the unrecorded_calls map: 5 launches of
	// pid 100 were dropped.
	h.s.agg.unrecorded(gputracebpf.CallKey{Pid: 100, Api: uint32(apiOf("cudaLaunchKernel"))}, 5, 7)
	pts := h.collect(t)
	calls := func(pid int, api string) float64 {
		return pts.One(t, semconv.CUDAAPICalls.Name, semconv.ProcessPID.Int(pid), semconv.CUDAAPIName.String(api)).Value
	}
	assert.Equal(t, 3.0+5, calls(100, "cudaLaunchKernel"))
	assert.Equal(t, 1.0, calls(200, "cudaLaunchKernel"))
	assert.Equal(t, 1.0, calls(100, "cudaMemcpy"), "the copy's return is not a second call")
}
