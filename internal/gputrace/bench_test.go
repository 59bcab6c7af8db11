package gputrace

// Benchmarks of the Source's costs, in one run each (DESIGN.md,
// "Performance principles"): the user-space pipeline per event
// (BenchmarkDecodeAggregate), the cost a traced cudaLaunchKernel pays
// against the floor (an empty uprobe) and the naive design
// (BenchmarkLaunchOverhead, kernel tier), and a warm kernel-name lookup
// (BenchmarkSymbolizeCached). They report numbers; nothing here asserts a
// wall-clock value.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf/ringbuf"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/gputracebpf"
	"github.com/xpuscope/xpuscope/internal/procfs"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/testutil/cudaprog"
	"github.com/xpuscope/xpuscope/internal/uprobe"
	"github.com/xpuscope/xpuscope/semconv"
)

// benchEncode appends e to buf as the BPF programs write it: struct event
// (80 bytes, little-endian), followed for a KindFuncName record by the
// name NUL-padded to 240 bytes (struct name_event).
func benchEncode(buf []byte, e *gputracebpf.Event, name string) []byte {
	size := gputracebpf.EventSize
	if e.Kind == gputracebpf.KindFuncName {
		size = gputracebpf.NameEventSize
	}
	off := len(buf)
	buf = append(buf, make([]byte, size)...)
	b := buf[off:]
	le := binary.LittleEndian
	le.PutUint64(b[0:], e.TS)
	le.PutUint32(b[8:], e.PID)
	le.PutUint32(b[12:], e.TID)
	le.PutUint16(b[16:], uint16(e.Kind))
	le.PutUint16(b[18:], uint16(e.API))
	le.PutUint32(b[20:], uint32(e.Device))
	le.PutUint32(b[24:], uint32(e.Ret))
	for i, a := range e.A {
		le.PutUint64(b[32+8*i:], a)
	}
	if e.Kind == gputracebpf.KindFuncName {
		copy(b[gputracebpf.EventSize:size-1], name)
	}
	return buf
}

// benchStream is a synthetic ring-buffer content: the name records a
// process submits at start, then a cycle of steady-state records.
type benchStream struct {
	names  [][]byte // KindFuncName records
	cycle  [][]byte // each an 80-byte record, slices of one buffer
	counts map[gputracebpf.Kind]int
}

const (
	benchKernels = 50
	benchCycle   = 4096
)

// newBenchStream builds a realistic mix for two processes (pids 100 and
// 200, which fakeNames knows), each with benchKernels registered kernels
// on two devices: mostly launches (skewed towards a few hot kernels),
// some copies, allocations paired with frees, syncs, memsets, event
// records and graph launches.
func newBenchStream() *benchStream {
	r := rand.New(rand.NewPCG(1, 2))
	s := &benchStream{counts: map[gputracebpf.Kind]int{}}
	pids := []uint32{100, 200}
	fn := func(pid uint32, k int) uint64 { return 0x400000 + uint64(pid)<<20 + uint64(k)*0x140 }
	var buf []byte
	for _, pid := range pids {
		for k := range benchKernels {
			e := gputracebpf.Event{PID: pid, TID: pid, Kind: gputracebpf.KindFuncName, API: apiOf("__cudaRegisterFunction"),
				A: [6]uint64{fn(pid, k), 0}}
			// Template-heavy mangled names, as nvcc emits.
			name := fmt.Sprintf("_ZN5torch4cuda6kernel%dILi%dEEEvPKfPfi", k, 32<<(k%4))
			buf = benchEncode(buf, &e, name)
			s.names = append(s.names, buf[len(buf)-gputracebpf.NameEventSize:])
		}
	}
	buf = nil // the names keep their own backing array
	var recs []gputracebpf.Event
	var live [][2]uint64 // pid, pointer
	nextPtr := uint64(0xd00000000)
	shapes := [][2][3]uint32{
		{{1024, 1, 1}, {256, 1, 1}}, {{64, 64, 1}, {16, 16, 1}}, {{108, 1, 1}, {1024, 1, 1}}, {{8, 4, 2}, {32, 8, 1}},
	}
	streams := []uint64{0, cudaprog.StreamA, cudaprog.StreamB, cudaprog.StreamC}
	for len(recs) < benchCycle {
		pid := pids[r.IntN(len(pids))]
		dev := int32(r.IntN(2))
		e := gputracebpf.Event{PID: pid, TID: pid + uint32(r.IntN(4)), Device: dev}
		stream := streams[r.IntN(len(streams))]
		switch x := r.IntN(1000); {
		case x < 850: // launch: a few hot kernels, a long tail
			k := min(int(r.ExpFloat64()*8), benchKernels-1)
			sh := shapes[r.IntN(len(shapes))]
			g, bl := sh[0], sh[1]
			e.Kind, e.API = gputracebpf.KindLaunch, apiOf("cudaLaunchKernel")
			e.A = [6]uint64{fn(pid, k), uint64(g[0]) | uint64(g[1])<<32, uint64(g[2]) | uint64(bl[2])<<32,
				uint64(bl[0]) | uint64(bl[1])<<32, uint64(r.IntN(3)) * 4096, stream}
		case x < 900: // copies
			e.Kind, e.API = gputracebpf.KindMemcpy, apiOf("cudaMemcpyAsync")
			e.A = [6]uint64{nextPtr, 0x7f0000000000, uint64(1+r.IntN(64)) << 16, uint64(1 + r.IntN(2)), stream}
		case x < 920:
			e.Kind, e.API = gputracebpf.KindMalloc, apiOf("cudaMalloc")
			nextPtr += 1 << 20
			e.A = [6]uint64{nextPtr, uint64(1+r.IntN(256)) << 20, 20000}
			live = append(live, [2]uint64{uint64(pid), nextPtr})
		case x < 940:
			if len(live) == 0 {
				continue
			}
			i := r.IntN(len(live))
			e.PID, e.Kind, e.API = uint32(live[i][0]), gputracebpf.KindFree, apiOf("cudaFree")
			e.A[0] = live[i][1]
			live = slices.Delete(live, i, i+1)
		case x < 970:
			e.Kind, e.API = gputracebpf.KindSync, apiOf("cudaStreamSynchronize")
			e.A = [6]uint64{stream, uint64(r.IntN(5_000_000))}
		case x < 980:
			e.Kind, e.API = gputracebpf.KindMemset, apiOf("cudaMemsetAsync")
			e.A = [6]uint64{nextPtr, 0, 1 << 20, 0, stream}
		case x < 990:
			e.Kind, e.API = gputracebpf.KindEventRecord, apiOf("cudaEventRecord")
			e.A = [6]uint64{cudaprog.EventA, stream}
		default:
			e.Kind, e.API = gputracebpf.KindGraphLaunch, apiOf("cudaGraphLaunch")
			e.A = [6]uint64{cudaprog.GraphExec, stream}
		}
		recs = append(recs, e)
	}
	// Free what is left, so that a cycle leaves the allocation maps as
	// it found them.
	for _, l := range live {
		recs = append(recs, gputracebpf.Event{PID: uint32(l[0]), TID: uint32(l[0]), Kind: gputracebpf.KindFree,
			API: apiOf("cudaFree"), A: [6]uint64{l[1]}})
	}
	for i := range recs {
		buf = benchEncode(buf, &recs[i], "")
		s.counts[recs[i].Kind]++
	}
	for off := 0; off < len(buf); off += gputracebpf.EventSize {
		s.cycle = append(s.cycle, buf[off:off+gputracebpf.EventSize:off+gputracebpf.EventSize])
	}
	return s
}

// newBenchSource is the aggregate_test.go harness for benchmarks: a
// Source with the given MeterProvider (and options), a no-op
// TracerProvider, and fakeNames; no kernel objects.
func newBenchSource(tb testing.TB, mp metric.MeterProvider, opts ...Option) *Source {
	tb.Helper()
	cfg, err := newConfig(append([]Option{WithMeterProvider(mp), WithTracerProvider(tracenoop.NewTracerProvider())}, opts...))
	require.NoError(tb, err)
	now := uint64(time.Hour)
	s := &Source{rt: CUDA, cfg: cfg, mono: func() uint64 { return now }, attachedByTarget: map[string]int64{}}
	meter := mp.Meter(CUDA.ScopeName())
	require.NoError(tb, s.inst.create(meter))
	_, err = meter.RegisterCallback(s.observe, s.inst.observables()...)
	require.NoError(tb, err)
	names := &fakeNames{exe: map[uint32]string{100: "train", 200: "serve"}, symbols: map[uint64]string{}}
	s.agg = newAggregator(&s.cfg, names, &s.inst, &spanner{tracer: cfg.tracerProvider.Tracer(CUDA.ScopeName()),
		wall: func(k uint64) time.Time { return time.Unix(0, int64(k)) }})
	if cfg.producer != nil {
		cfg.producer.sources.Add(s)
	}
	return s
}

// benchTurn is how many records one Source of the "sdk" benchmark takes
// before the other takes as many: enough for each to warm its caches
// again.
const benchTurn = 16 * benchCycle

// benchTick is the simulated time between two records: 5M events/s.
const benchTick = 200

// benchHandle is what the Source's ring reader does with one record,
// counting the records that do not decode in errs.
func benchHandle(s *Source, raw []byte, errs *int) {
	if s.decode(raw) != nil {
		*errs++
	}
}

// BenchmarkDecodeAggregate: synthetic records through gputracebpf.Decode and
// the aggregator, as the Source's reader loop runs them (lock, decode,
// handle, unlock), one record per op, in steady state (kernel names
// learned, every series created). Sub-benchmarks split the cost:
//
//   - "sdk": what the agent runs: the OpenTelemetry SDK's MeterProvider
//     on a ManualReader with a Producer, the Source keeping its
//     histograms itself (WithProducer). The same records go through a second Source without a Producer, whose four
//     histogram records per launch (grid, block, shared memory, modelled
//     kernel duration) and sync-duration records go through the SDK's
//     synchronous aggregation: its events/s is plain-events/s, and the
//     ratio of the two, taken in the same run, producer/plain. The two
//     take turns of benchTurn records;
//   - "ours": everything the Source does per record (decode, series,
//     occupancy model, span sampling) with the OpenTelemetry API's no-op
//     MeterProvider and no Producer, so that the instruments' calls cost
//     what the API costs and nothing of an SDK;
//   - "decode": gputracebpf.Decode alone.
func BenchmarkDecodeAggregate(b *testing.B) {
	stream := newBenchStream()
	b.Logf("cycle of %d records: %v", len(stream.cycle), stream.counts)
	// ts is the simulated clock, shared by the Sources of a run: each
	// sees it go forward.
	ts := uint64(time.Hour)
	warm := func(b *testing.B, s *Source) {
		var decodeErrors int
		for _, rec := range stream.names {
			benchHandle(s, rec, &decodeErrors)
		}
		// Two warm cycles: every series exists, every map has grown.
		for range 2 {
			for _, rec := range stream.cycle {
				ts += benchTick
				binary.LittleEndian.PutUint64(rec, ts)
				benchHandle(s, rec, &decodeErrors)
			}
		}
		require.Zero(b, decodeErrors, "decode errors")
	}
	// feed hands s the records [from, from+n) of the endless cycle.
	feed := func(s *Source, from, n int, errs *int) {
		for i := from; i < from+n; i++ {
			rec := stream.cycle[i%len(stream.cycle)]
			ts += benchTick
			binary.LittleEndian.PutUint64(rec, ts)
			benchHandle(s, rec, errs)
		}
	}
	check := func(b *testing.B, s *Source, decodeErrors int) {
		b.Helper()
		require.Zero(b, decodeErrors, "decode errors")
		require.Zero(b, s.agg.unresolved, "launches of unresolved kernels: the names did not take")
	}
	b.Run("sdk", func(b *testing.B) {
		producer := NewProducer()
		reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(producer))
		own := newBenchSource(b, sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), WithProducer(producer))
		plainReader := sdkmetric.NewManualReader()
		plain := newBenchSource(b, sdkmetric.NewMeterProvider(sdkmetric.WithReader(plainReader)))
		warm(b, own)
		warm(b, plain)
		var (
			ownTime, plainTime time.Duration
			ownErrs, plainErrs int
		)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i += benchTurn {
			n := min(benchTurn, b.N-i)
			t0 := time.Now()
			feed(own, i, n, &ownErrs)
			t1 := time.Now()
			feed(plain, i, n, &plainErrs)
			ownTime, plainTime = ownTime+t1.Sub(t0), plainTime+time.Since(t1)
		}
		b.StopTimer()
		b.ReportMetric(float64(ownTime.Nanoseconds())/float64(b.N), "ns/op")
		b.ReportMetric(float64(b.N)/ownTime.Seconds(), "events/s")
		b.ReportMetric(float64(b.N)/plainTime.Seconds(), "plain-events/s")
		b.ReportMetric(plainTime.Seconds()/ownTime.Seconds(), "producer/plain")
		check(b, own, ownErrs)
		check(b, plain, plainErrs)
		benchCheckCollect(b, own, reader)
		benchCheckCollect(b, plain, plainReader)
	})
	b.Run("ours", func(b *testing.B) {
		s := newBenchSource(b, metricnoop.NewMeterProvider())
		warm(b, s)
		var decodeErrors int
		b.ReportAllocs()
		b.ResetTimer()
		feed(s, 0, b.N, &decodeErrors)
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		check(b, s, decodeErrors)
	})
	b.Run("decode", func(b *testing.B) {
		var ev gputracebpf.Event
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			rec := stream.cycle[i%len(stream.cycle)]
			ts += benchTick
			binary.LittleEndian.PutUint64(rec, ts)
			if err := gputracebpf.Decode(rec, &ev); err != nil {
				require.NoError(b, err)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
}

// benchGraphKernels is the size of BenchmarkGraphReplay's graph.
const benchGraphKernels = 100

// BenchmarkGraphReplay: the reader's work for one cudaGraphLaunch of a
// captured graph of benchGraphKernels kernels (one probe, one record, in
// the workload), against the same kernels launched one by one (as many
// records), in turns in one run, through the Source as the agent runs it
// (the SDK and the Producer). replay/direct is the ratio of the two: what
// expanding a replay saves the reader, or costs it, beside decoding and
// aggregating the launches themselves.
func BenchmarkGraphReplay(b *testing.B) {
	producer := NewProducer()
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(producer))
	s := newBenchSource(b, sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), WithProducer(producer))
	names := s.agg.names.(*fakeNames)
	const stream, graph, exec = 0x5100, 0x6100, 0x7100
	ts := uint64(time.Hour)
	rec := func(e gputracebpf.Event) []byte {
		ts++
		e.TS, e.PID, e.TID = ts, 100, 100
		return benchEncode(nil, &e, "")
	}
	var direct [][]byte
	launch := func(k int) gputracebpf.Event {
		e := gputracebpf.Event{API: apiOf("cudaLaunchKernel")}
		e.SetLaunch(0x400000+uint64(k)*0x140, [3]uint32{uint32(64 + k), 1, 1}, [3]uint32{256, 1, 1}, 0, stream)
		return e
	}
	var setup [][]byte
	setup = append(setup, rec(gputracebpf.Event{Kind: gputracebpf.KindCaptureBegin, API: apiOf("cudaStreamBeginCapture"), A: [6]uint64{stream}}))
	for k := range benchGraphKernels {
		names.symbols[0x400000+uint64(k)*0x140] = fmt.Sprintf("kernel%d", k%20) // a decode step's kernels repeat
		setup = append(setup, rec(launch(k)))
		direct = append(direct, rec(launch(k)))
	}
	setup = append(setup,
		rec(gputracebpf.Event{Kind: gputracebpf.KindCaptureEnd, API: apiOf("cudaStreamEndCapture"), A: [6]uint64{stream, graph}}),
		rec(gputracebpf.Event{Kind: gputracebpf.KindGraphInstantiate, API: apiOf("cudaGraphInstantiate"), A: [6]uint64{graph, exec}}))
	replay := rec(gputracebpf.Event{Kind: gputracebpf.KindGraphLaunch, API: apiOf("cudaGraphLaunch"), A: [6]uint64{exec, stream + 0x100}})
	var errs int
	for _, r := range setup {
		benchHandle(s, r, &errs)
	}
	retime := func(r []byte) {
		ts += 200
		binary.LittleEndian.PutUint64(r, ts)
	}
	// Warm both paths: every series exists.
	for range 2 {
		retime(replay)
		benchHandle(s, replay, &errs)
		for _, r := range direct {
			retime(r)
			benchHandle(s, r, &errs)
		}
	}
	require.Zero(b, errs)
	var replayTime, directTime time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		retime(replay)
		benchHandle(s, replay, &errs)
		t1 := time.Now()
		for _, r := range direct {
			retime(r)
			benchHandle(s, r, &errs)
		}
		replayTime, directTime = replayTime+t1.Sub(t0), directTime+time.Since(t1)
	}
	b.StopTimer()
	require.Zero(b, errs)
	require.Zero(b, s.agg.unknownReplays, "the graph is known")
	b.ReportMetric(float64(replayTime.Nanoseconds())/float64(b.N), "ns/replay")
	b.ReportMetric(float64(directTime.Nanoseconds())/float64(b.N)/benchGraphKernels, "ns/direct-launch")
	b.ReportMetric(replayTime.Seconds()/directTime.Seconds(), "replay/direct")
	// Every replayed kernel counted, under the graph launch's API.
	s.publish()
	var graphLaunched float64
	for _, p := range testutil.Collect(b, reader).Find(semconv.CUDAKernelLaunches.Name, semconv.CUDAAPIName.String("cudaGraphLaunch")) {
		graphLaunched += p.Value
	}
	require.Equal(b, float64((b.N+2)*benchGraphKernels), graphLaunched)
}

// benchCheckCollect checks that the benchmark fed the series: the
// launches counted add up, and the histograms were collected.
func benchCheckCollect(b *testing.B, s *Source, reader *sdkmetric.ManualReader) {
	b.Helper()
	var launches int64
	s.mu.Lock()
	for _, c := range s.agg.launches {
		launches += c.n
	}
	series := len(s.agg.launches)
	s.mu.Unlock()
	s.publish()
	pts := testutil.Collect(b, reader)
	require.NotZero(b, launches, "no launches counted (%d points)", len(pts))
	require.NotEmpty(b, pts.Find(semconv.CUDAKernelGridSize.Name), "no grid sizes collected (%d points)", len(pts))
	require.LessOrEqual(b, series, 2*2*benchKernels, "%d launch series, want at most %d", series, 2*2*benchKernels)
}

// benchEnvInt reads a positive integer from the environment, or def.
func benchEnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkLaunchOverhead measures what a traced cudaLaunchKernel of the
// REAL libcudart costs: the cudaprog "runtime" program's "loop N T"
// scenario (T threads each time N calls themselves; it prints their mean
// NS_PER_CALL) runs, with one thread and with two,
//
//   - untraced;
//   - floor: the empty bench_empty program on a uprobe on cudaLaunchKernel;
//   - argread: bench_args, the floor plus the one user-memory read every
//     launch record needs (shared memory and stream, the 7th and 8th
//     arguments, on the stack): what no design that keeps them gets under;
//   - record: bench_record, the least a launch record costs through a BPF
//     ring buffer (the stack arguments, a timestamp, the ids, a record
//     without wakeup), drained by a polling reader;
//   - hot: bench_hot, the launch program's work (the thread's state, the
//     header, the arguments, the runtime-call marker) with its record
//     written to a slot of its CPU's that no reader touches instead of
//     to a lane: what the lanes' memory traffic costs, which the BPF
//     run-time statistics do not show (a store that misses the cache is
//     waited for on the return to user space);
//   - ours: the real Source (New, every probe on libcudart and libcuda),
//     with the OpenTelemetry SDK's MeterProvider and the Producer on its
//     reader, as the agent runs it;
//   - ours-noop: the same with the API's no-op MeterProvider, which
//     leaves out what the SDK's aggregation in the reader takes from the
//     workload on a small machine;
//   - naive (one thread only): bench_naive on cudaLaunchKernel (one
//     record per call, submitted with flags 0: the kernel's adaptive
//     notification, which wakes the reader whenever it has caught up,
//     i.e. about every record when it keeps up) drained by a blocking
//     ringbuf.Reader that decodes every record.
//
// The variants are interleaved (the order rotates each round) and the
// median of the rounds is reported per variant, with the ratios ours/floor,
// argread/floor, hot/floor, record/floor, ours/record and naive/ours of the whole call
// and of the
// cost added above untraced; the two-thread figures have a "-2t" suffix.
// A last pass with BPF run-time statistics on (not in the medians) gives
// the time spent in the BPF programs themselves: bench_empty,
// runtime_launch_kernel (attached alone, with its cookie, drained by the
// Source's lane reader: "alone", whose whole call is reported too),
// bench_naive, bench_record and bench_hot, with one thread,
// and the first two with two threads (what the threads contend on shows
// there).
//
// XPUSCOPE_BENCH_CALLS (default 300000, per thread) and
// XPUSCOPE_BENCH_ROUNDS (default 5) size it; Source.Close takes much of
// each round (see the logged time). Run it once: -benchtime=1x.
func BenchmarkLaunchOverhead(b *testing.B) {
	lib := cudaprog.RealCudart(b)
	exe := cudaprog.Build(b, "runtime")
	drvExe := cudaprog.Build(b, "driver")
	calls := benchEnvInt("XPUSCOPE_BENCH_CALLS", 300_000)
	rounds := benchEnvInt("XPUSCOPE_BENCH_ROUNDS", 5)
	o := newOverhead(b, lib, "cudaLaunchKernel", calls, func(threads int) *cudaprog.Proc {
		return cudaprog.Start(b, exe, "loop", strconv.Itoa(calls), strconv.Itoa(threads))
	})

	// drain reads the benchmark programs' ring buffer until stop is
	// called, blocking (naive) or polling every DefaultPollInterval (as
	// the Source's reader), and decodes every record; stop returns the
	// records read, having waited a second at most for want of them.
	drain := func(blocking bool) (stop func(want int64) int64) {
		rd, err := ringbuf.NewReader(o.objs.BenchEvents())
		require.NoError(b, err)
		var (
			wg sync.WaitGroup
			n  atomic.Int64
		)
		wg.Go(func() {
			var (
				rec ringbuf.Record
				ev  gputracebpf.Event
			)
			for {
				if !blocking {
					rd.SetDeadline(time.Now().Add(DefaultPollInterval))
				}
				err := rd.ReadInto(&rec)
				if errors.Is(err, ringbuf.ErrClosed) {
					return
				}
				if err == nil && gputracebpf.Decode(rec.RawSample, &ev) == nil {
					n.Add(1)
				}
			}
		})
		return func(want int64) int64 {
			for deadline := time.Now().Add(time.Second); n.Load() < want && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			_ = rd.Close()
			wg.Wait()
			return n.Load()
		}
	}
	var naiveRecords atomic.Int64
	naive := func(threads int) float64 {
		stop := drain(true)
		ns := o.under("bench_naive")(threads)
		naiveRecords.Add(stop(int64(threads * calls)))
		return ns
	}
	record := func(threads int) float64 {
		stop := drain(false)
		ns := o.under("bench_record")(threads)
		stop(int64(threads * calls))
		return ns
	}
	// ours: libcudart is mapped by the program waiting at READY, libcuda
	// (which cudart dlopens at its first call) by a helper linked against
	// it, also waiting.
	ours := func(sdk bool) func(threads int) float64 {
		return func(threads int) float64 {
			return o.ours(threads, oursRun{
				sdk:     sdk,
				targets: []string{TargetRuntime, TargetDriver},
				record:  func(e *gputracebpf.Event, _ int) bool { return e.Kind == gputracebpf.KindLaunch },
				helper: func() func() {
					helper := cudaprog.Start(b, drvExe, "loop", "1")
					return helper.Kill
				},
				drained: drainedAfterPolls,
			})
		}
	}
	runs := runOverhead(b, rounds, []int{1, 2}, []overheadVariant{
		{name: "untraced", run: func(threads int) float64 { return o.loop(threads, nil) }},
		{name: "floor", run: o.under("bench_empty")},
		{name: "argread", run: o.under("bench_args")},
		{name: "record", run: record},
		{name: "hot", run: o.under("bench_hot")},
		{name: "ours", run: ours(true)},
		{name: "ours-noop", run: ours(false)},
		{name: "naive", run: naive, once: true},
	}, foreignPrograms(b, o.objs.Program("sync_enter")))
	o.logOurs()
	for _, threads := range []int{1, 2} {
		sfx := threadSuffix(threads)
		untraced, floor, recordNs := runs.med("untraced", threads), runs.med("floor", threads), runs.med("record", threads)
		oursNs, noopNs := runs.med("ours", threads), runs.med("ours-noop", threads)
		argNs, hotNs := runs.med("argread", threads), runs.med("hot", threads)
		b.ReportMetric(untraced, "untraced"+sfx+"-ns/call")
		b.ReportMetric(floor, "floor"+sfx+"-ns/call")
		b.ReportMetric(argNs, "argread"+sfx+"-ns/call")
		b.ReportMetric(argNs/floor, "argread/floor"+sfx)
		b.ReportMetric(hotNs, "hot"+sfx+"-ns/call")
		b.ReportMetric(hotNs/floor, "hot/floor"+sfx)
		b.ReportMetric(recordNs, "record"+sfx+"-ns/call")
		b.ReportMetric(oursNs, "ours"+sfx+"-ns/call")
		b.ReportMetric(noopNs, "ours-noop"+sfx+"-ns/call")
		b.ReportMetric(oursNs/floor, "ours/floor"+sfx)
		b.ReportMetric(oursNs-floor, "ours-floor"+sfx+"-ns")
		b.ReportMetric(noopNs/floor, "ours-noop/floor"+sfx)
		b.ReportMetric(recordNs/floor, "record/floor"+sfx)
		b.ReportMetric(oursNs/recordNs, "ours/record"+sfx)
		b.ReportMetric((oursNs-untraced)/(floor-untraced), "ours/floor-added"+sfx)
		if threads == 1 {
			naiveNs := runs.med("naive", threads)
			b.ReportMetric(naiveNs, "naive-ns/call")
			b.ReportMetric(naiveNs/oursNs, "naive/ours")
			b.ReportMetric((naiveNs-untraced)/(oursNs-untraced), "naive/ours-added")
		}
	}
	b.ReportMetric(float64(o.drops.Load()), "ours-drops")
	b.ReportMetric(float64(o.records.Load())/float64(o.called.Load()), "ours-records/call") // ours and ours-noop
	b.ReportMetric(float64(naiveRecords.Load())/float64(rounds*calls), "naive-records/call")

	// The BPF programs' own run time, with statistics on.
	stop := bpfStats(b)
	if stop == nil {
		return
	}
	defer stop()
	launches := func(e *gputracebpf.Event) bool { return true }
	for _, threads := range []int{1, 2} {
		sfx := threadSuffix(threads)
		floorBPF, floorStat := perRun(b, o.objs.Program("bench_empty"), func() float64 { return o.under("bench_empty")(threads) })
		oursBPF, oursStat := perRun(b, o.objs.Program("runtime_launch_kernel"), func() float64 {
			ns, _ := o.alone(threads, "runtime_launch_kernel", launches)
			return ns
		})
		recordBPF, recordStat := perRun(b, o.objs.Program("bench_record"), func() float64 { return record(threads) })
		hotBPF, hotStat := perRun(b, o.objs.Program("bench_hot"), func() float64 { return o.under("bench_hot")(threads) })
		b.Logf("with BPF statistics on, %d thread(s), ns/call: floor %.0f, runtime_launch_kernel alone %.0f, record %.0f, hot %.0f",
			threads, floorStat, oursStat, recordStat, hotStat)
		b.ReportMetric(hotBPF, "hot-bpf"+sfx+"-ns/run")
		b.ReportMetric(oursStat, "alone"+sfx+"-ns/call")
		b.ReportMetric(floorBPF, "floor-bpf"+sfx+"-ns/run")
		b.ReportMetric(oursBPF, "ours-bpf"+sfx+"-ns/run")
		b.ReportMetric(recordBPF, "record-bpf"+sfx+"-ns/run")
	}
	naiveBPF, _ := perRun(b, o.objs.Program("bench_naive"), func() float64 { return naive(1) })
	b.ReportMetric(naiveBPF, "naive-bpf-ns/run")
}

// benchAttachment returns src's attachment to a file of target.
func benchAttachment(src *Source, target string) (uprobe.Attachment, bool) {
	for _, a := range src.Status().Attachments {
		if a.Target == target {
			return a, true
		}
	}
	return uprobe.Attachment{}, false
}

// BenchmarkSymbolizeCached: one kernel-name lookup through the Source's
// symbolizer on a warm cache (mappings read, ELF table built, the offset
// memoized): the vectorAdd host stub of a running cudaprog "static"
// program, a PIE whose stubs are in .symtab only, as in an unstripped
// nvcc-built application. (The test binary itself will not do: go test
// links it without .symtab.) The misses: an address in an anonymous
// mapping, and one outside every mapping, which rereads
// /proc/<pid>/maps each time.
func BenchmarkSymbolizeCached(b *testing.B) {
	p := cudaprog.Start(b, cudaprog.Build(b, "static"), "loop", "1")
	defer func() { p.Go(); p.Wait() }()
	stub := cudaprog.Stubs(p.Lines())[cudaprog.KernelVectorAdd]
	require.NotZero(b, stub, "no STUB line for %s in %q", cudaprog.KernelVectorAdd, p.Lines())
	s := newSymbolizer(procfs.FS{Root: procfs.DefaultRoot})
	pid := uint32(p.Pid)
	const want = "vectorAdd(float*, float*, float*, int)"
	name, ok := s.Symbolize(pid, stub)
	require.True(b, ok, "Symbolize(%d, %#x) = %q, %v; want %q", pid, stub, name, ok, want)
	require.Equal(b, want, name, "Symbolize(%d, %#x)", pid, stub)
	for _, bc := range []struct {
		name string
		addr uint64
		ok   bool
	}{
		{"hit", stub, true},
		{"miss-anonymous", cudaprog.HandleBase, false}, // the programs map their fake handles there
		{"miss-unmapped", 0x1000, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			_, ok := s.Symbolize(pid, bc.addr)
			require.Equal(b, bc.ok, ok, "Symbolize(%#x) ok", bc.addr)
			b.ReportAllocs()
			for b.Loop() {
				s.Symbolize(pid, bc.addr)
			}
		})
	}
}

// BenchmarkGraphLaunchOverhead measures what a traced cudaGraphLaunch of
// a graph of cudaprog.GraphLoopKernels (100) kernels costs the workload,
// through the REAL libcudart: the cudaprog "runtime graphloop N" program
// captures the graph and instantiates it, then times N replays
// (NS_PER_CALL), in interleaved rounds:
//
//   - untraced;
//   - floor: the empty bench_empty program on a uprobe on cudaGraphLaunch;
//   - alone: the Source's graph_launch program alone on it (with its
//     cookie), its lanes drained by a reader that only decodes: the
//     probe's own cost, without the expansion of the replays;
//   - ours: the real Source (New, every probe on libcudart and libcuda),
//     with the OpenTelemetry SDK's MeterProvider and the Producer on its
//     reader, as the agent runs it: it learns the graph from the capture,
//     and its reader counts each replay's 100 kernels (checked).
//
// It reports the median of the rounds per variant, ours/floor and
// ours−floor in ns per call (the workload's cost: the probe's program,
// and what the reader, on the other core, takes from it), the share of
// replays whose records the reader handled (replays past what it keeps up
// with are counted dropped, in xpuscope.cuda.events.dropped and
// cuda.api.calls: a loop of replays of a graph that does nothing outruns
// it), and this process's CPU time per replay handled (mostly the reader
// expanding the replays; BenchmarkGraphReplay has the expansion alone).
//
// XPUSCOPE_BENCH_GRAPH_CALLS (default 50000) and XPUSCOPE_BENCH_ROUNDS
// (default 5) size it. Run it once: -benchtime=1x.
func BenchmarkGraphLaunchOverhead(b *testing.B) {
	lib := cudaprog.RealCudart(b)
	exe := cudaprog.Build(b, "runtime")
	drvExe := cudaprog.Build(b, "driver")
	calls := benchEnvInt("XPUSCOPE_BENCH_GRAPH_CALLS", 50_000)
	rounds := benchEnvInt("XPUSCOPE_BENCH_ROUNDS", 5)
	loop := cudaprog.RuntimeGraphLoop
	require.Equal(b, cudaprog.GraphLoopKernels, len(loop.Setup)-3, "the graph's kernels: the setup less the capture's begin and end and the instantiation")
	o := newOverhead(b, lib, loop.Call.API, calls, func(int) *cudaprog.Proc {
		return cudaprog.Start(b, exe, loop.Name, strconv.Itoa(calls))
	})
	o.check = func(lines []string) {
		require.Equal(b, map[int]int{loop.Call.Ret: calls}, cudaprog.Rets(lines)[loop.Call.API], "the replays' return codes")
	}
	replay := func(e *gputracebpf.Event) bool { return e.Kind == gputracebpf.KindGraphLaunch }
	var aloneRecords, aloneRuns atomic.Int64
	alone := func(threads int) float64 {
		ns, n := o.alone(threads, "graph_launch", replay)
		aloneRecords.Add(n)
		aloneRuns.Add(1)
		return ns
	}
	var cpu, before time.Duration
	ours := func(threads int) float64 {
		return o.ours(threads, oursRun{
			sdk:     true,
			targets: []string{TargetRuntime, TargetDriver},
			record:  func(e *gputracebpf.Event, pid int) bool { return e.PID == uint32(pid) && replay(e) },
			// libcuda, which cudart loads at its first call, mapped by
			// a helper, so that it is attached before the run.
			helper: func() func() {
				helper := cudaprog.Start(b, drvExe, "loop", "1")
				return helper.Kill
			},
			started: func() { before = benchCPU(b) },
			// Until the replays stop coming.
			drained: func(replays *atomic.Int64) {
				for n := int64(-1); n != replays.Load(); {
					n = replays.Load()
					time.Sleep(4 * DefaultPollInterval)
				}
				cpu += benchCPU(b) - before
			},
			done: func(src *Source, pid int, replays int64) {
				src.mu.Lock()
				var kernels int64
				for k, c := range src.agg.launches {
					if k.pid == uint32(pid) && k.api == apiOf(loop.Call.API) {
						kernels += c.n
					}
				}
				src.mu.Unlock()
				require.Equal(b, replays*cudaprog.GraphLoopKernels, kernels, "every replay handled counts the graph's kernels")
			},
		})
	}
	runs := runOverhead(b, rounds, []int{1}, []overheadVariant{
		{name: "untraced", run: func(threads int) float64 { return o.loop(threads, nil) }},
		{name: "floor", run: o.under("bench_empty")},
		{name: "alone", run: alone},
		{name: "ours", run: ours},
	}, foreignPrograms(b, o.objs.Program("graph_launch")))
	untraced, floorNs, aloneNs, oursNs := runs.med("untraced", 1), runs.med("floor", 1), runs.med("alone", 1), runs.med("ours", 1)
	b.ReportMetric(untraced, "untraced-ns/call")
	b.ReportMetric(floorNs, "floor-ns/call")
	b.ReportMetric(aloneNs, "alone-ns/call")
	b.ReportMetric(aloneNs/floorNs, "alone/floor")
	b.ReportMetric(float64(aloneRecords.Load())/float64(aloneRuns.Load()*int64(calls)), "alone-records/call")
	b.ReportMetric(oursNs, "ours-ns/call")
	b.ReportMetric(oursNs/floorNs, "ours/floor")
	b.ReportMetric(oursNs-floorNs, "ours-floor-ns")
	b.ReportMetric(float64(o.records.Load())/float64(o.called.Load()), "ours-replays-handled/call")
	b.ReportMetric(float64(o.drops.Load())/float64(o.called.Load()), "ours-drops/call")
	if o.records.Load() > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(o.records.Load()), "ours-cpu-ns/replay")
	}
}

// benchCPU is the CPU time this process has used, user and system.
func benchCPU(b *testing.B) time.Duration {
	var ru unix.Rusage
	require.NoError(b, unix.Getrusage(unix.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
