package gputrace

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/bpfsource"
	"github.com/xpuscope/xpuscope/internal/gputracebpf"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/testutil/cudaprog"
)

// BenchmarkNCCLOverhead measures what a traced ncclAllReduce costs: the
// cudaprog "nccl" program's loop (T threads, each a communicator of one
// rank of its own on the stand-in libnccl.so.2, each making N
// ncclAllReduce calls; it prints their mean NS_PER_CALL) runs, with one
// thread and with two,
//
//   - untraced;
//   - floor: the empty bench_empty program on a uprobe on ncclAllReduce;
//   - ours: the real Source (New, every probe on every CUDA and NCCL
//     library mapped), with the OpenTelemetry SDK's MeterProvider and the
//     Producer on its reader, as the agent runs it;
//   - ours-noop: the same with the API's no-op MeterProvider.
//
// The variants are interleaved (the order rotates each round) and the
// median of the rounds is reported per variant, with ours/floor, the
// cost above the floor in ns (ours-floor), and (ours-untraced) /
// (floor-untraced); the two-thread figures have a "-2t" suffix. A last
// pass with BPF run-time statistics on gives the time spent in the BPF
// programs themselves: bench_empty, and nccl_reduction attached alone
// (with ncclAllReduce's cookie, drained by a lane reader; "alone", whose
// whole call is reported too).
//
// The stub's ncclAllReduce checks its arguments and its communicator
// under a mutex and returns: a few tens of ns, where NCCL's enqueues a
// kernel, so the untraced figure is the stub's, not NCCL's; the added
// cost is what a traced NCCL call pays.
//
// XPUSCOPE_BENCH_CALLS (default 200000, per thread) and
// XPUSCOPE_BENCH_ROUNDS (default 5) size it. Run it once: -benchtime=1x.
func BenchmarkNCCLOverhead(b *testing.B) {
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(b, "uprobes need root")
	}
	lib := cudaprog.Build(b, "libnccl")
	exe := cudaprog.Build(b, "nccl")
	calls := benchEnvInt("XPUSCOPE_BENCH_CALLS", 200_000)
	rounds := benchEnvInt("XPUSCOPE_BENCH_ROUNDS", 5)

	objs, err := gputracebpf.Load(gputracebpf.LoadOptions{RingBytes: DefaultRingBytes, Bench: true})
	require.NoError(b, err)
	defer objs.Close()
	nccl, err := link.OpenExecutable(lib)
	require.NoError(b, err)
	allReduceCookie := func() uint64 {
		for _, p := range gputracebpf.Probes {
			if p.Symbol == "ncclAllReduce" {
				return p.Cookie()
			}
		}
		require.Fail(b, "no ncclAllReduce probe")
		return 0
	}()

	loop := func(threads int, attach func() func()) float64 {
		p := cudaprog.Start(b, exe, "loop", strconv.Itoa(calls), strconv.Itoa(threads))
		var detach func()
		if attach != nil {
			detach = attach()
		}
		p.Go()
		lines := p.Wait()
		if detach != nil {
			detach()
		}
		ns, ok := cudaprog.NsPerCall(lines)
		require.True(b, ok, "no NS_PER_CALL line in %q", lines)
		return ns
	}
	uprobe := func(prog *ebpf.Program, cookie uint64) func() {
		l, err := nccl.Uprobe("ncclAllReduce", prog, &link.UprobeOptions{Cookie: cookie})
		require.NoError(b, err)
		return func() { _ = l.Close() }
	}

	var oursRecords, oursCalls, oursDrops, oursRuns, newTime, closeTime atomic.Int64
	ours := func(threads int, mp metric.MeterProvider, p *Producer) float64 {
		var (
			src     *Source
			records atomic.Int64
		)
		ns := loop(threads, func() func() {
			// New attaches to the files mapped now (the program waits at
			// READY, its communicators made), so that nothing is attached
			// during the measured run.
			t0 := time.Now()
			opts := []Option{WithMeterProvider(mp)}
			if p != nil {
				opts = append(opts, WithProducer(p))
			}
			var err error
			src, err = New(CUDA, append(opts,
				WithTracerProvider(tracenoop.NewTracerProvider()),
				withEventHook(func(e *gputracebpf.Event) {
					if e.Kind == gputracebpf.KindNCCLColl {
						records.Add(1)
					}
				}))...)
			require.NoError(b, err)
			newTime.Add(int64(time.Since(t0)))
			if a, ok := benchAttachment(src, TargetNCCL); !ok || len(a.AttachErrors) > 0 {
				st := src.Status()
				src.Close()
				require.True(b, ok, "ours: libnccl not attached: %+v", st)
				require.Empty(b, a.AttachErrors, "ours: libnccl not fully attached: %+v", st)
			}
			return func() {
				time.Sleep(3 * DefaultPollInterval) // the reader drains
				c, err := src.objs.Counters()
				require.NoError(b, err)
				oursDrops.Add(int64(c[gputracebpf.CounterDrops]))
				t0 := time.Now()
				assert.NoError(b, src.Close())
				closeTime.Add(int64(time.Since(t0)))
			}
		})
		oursRecords.Add(records.Load())
		oursCalls.Add(int64(threads * calls))
		oursRuns.Add(1)
		return ns
	}
	floorRun := func(threads int) float64 {
		return loop(threads, func() func() { return uprobe(objs.Program("bench_empty"), 0) })
	}
	variants := []struct {
		name string
		run  func(threads int) float64
	}{
		{"untraced", func(threads int) float64 { return loop(threads, nil) }},
		{"floor", floorRun},
		{"ours", func(threads int) float64 {
			p := NewProducer()
			return ours(threads, sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader(sdkmetric.WithProducer(p)))), p)
		}},
		{"ours-noop", func(threads int) float64 { return ours(threads, metricnoop.NewMeterProvider(), nil) }},
	}

	// Another cudatrace Source on the host (another test binary) probes
	// every libnccl a process maps, this one's too, and spoils every
	// variant: runs with one loaded are left out of the medians.
	own := benchProgID(b, objs.Program("nccl_reduction"))
	foreign := func() int { return benchForeignPrograms(own, "nccl_reduction") }
	type key struct {
		name    string
		threads int
	}
	results, spoilt := map[key][]float64{}, map[key][]float64{}
	contaminated := 0
	var roundLines []string // logged after the summary: a benchmark's log is cut after a few lines
	for r := range rounds {
		for _, threads := range []int{1, 2} {
			var line []string
			for i := range variants {
				v := variants[(i+r)%len(variants)]
				for deadline := time.Now().Add(3 * time.Second); foreign() > 0 && time.Now().Before(deadline); {
					time.Sleep(100 * time.Millisecond)
				}
				before := foreign()
				ns := v.run(threads)
				after := foreign()
				for deadline := time.Now().Add(2 * time.Second); after > 0 && time.Now().Before(deadline); after = foreign() {
					time.Sleep(20 * time.Millisecond)
				}
				mark, k := "", key{v.name, threads}
				if n := max(before, after); n > 0 {
					contaminated++
					mark = " (spoilt)"
					spoilt[k] = append(spoilt[k], ns)
				} else {
					results[k] = append(results[k], ns)
				}
				line = append(line, fmt.Sprintf("%s %.0f%s", v.name, ns, mark))
			}
			roundLines = append(roundLines, fmt.Sprintf("round %d, %d thread(s), ns/call: %s", r, threads, strings.Join(line, ", ")))
		}
	}
	b.Logf("ours: New %v, Close %v on average", time.Duration(newTime.Load()/oursRuns.Load()),
		time.Duration(closeTime.Load()/oursRuns.Load()))
	med := func(name string, threads int) (median, lo, hi float64) {
		k := key{name, threads}
		v := slices.Clone(results[k])
		if len(v) == 0 {
			b.Logf("%s, %d threads: no clean run; the median is of spoilt runs", name, threads)
			v = slices.Clone(spoilt[k])
		}
		slices.Sort(v)
		return v[len(v)/2], v[0], v[len(v)-1]
	}
	b.ReportMetric(0, "ns/op") // the wall time of the whole run says nothing
	for _, threads := range []int{1, 2} {
		sfx := map[int]string{1: "", 2: "-2t"}[threads]
		untraced, _, _ := med("untraced", threads)
		floor, floorLo, floorHi := med("floor", threads)
		oursNs, oursLo, oursHi := med("ours", threads)
		noopNs, _, _ := med("ours-noop", threads)
		b.Logf("%d thread(s): floor %.0f (%.0f–%.0f), ours %.0f (%.0f–%.0f) ns/call", threads, floor, floorLo, floorHi,
			oursNs, oursLo, oursHi)
		b.ReportMetric(untraced, "untraced"+sfx+"-ns/call")
		b.ReportMetric(floor, "floor"+sfx+"-ns/call")
		b.ReportMetric(oursNs, "ours"+sfx+"-ns/call")
		b.ReportMetric(noopNs, "ours-noop"+sfx+"-ns/call")
		b.ReportMetric(oursNs/floor, "ours/floor"+sfx)
		b.ReportMetric(noopNs/floor, "ours-noop/floor"+sfx)
		b.ReportMetric(oursNs-floor, "ours-floor"+sfx+"-ns")
		b.ReportMetric(noopNs-floor, "ours-noop-floor"+sfx+"-ns")
		b.ReportMetric((oursNs-untraced)/(floor-untraced), "ours/floor-added"+sfx)
	}
	b.Logf("%s", strings.Join(roundLines, "\n"))
	b.ReportMetric(float64(oursDrops.Load()), "ours-drops")
	b.ReportMetric(float64(oursRecords.Load())/float64(oursCalls.Load()), "ours-records/call")
	b.ReportMetric(float64(contaminated), "spoilt-runs")

	// The BPF programs' own run time, with statistics on.
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		b.Logf("no BPF statistics: %v", err)
		return
	}
	defer stats.Close()
	perRun := func(p *ebpf.Program, run func() float64) (bpfNs, callNs float64) {
		s0, err := p.Stats()
		require.NoError(b, err)
		callNs = run()
		s1, err := p.Stats()
		require.NoError(b, err)
		if n := s1.RunCount - s0.RunCount; n > 0 {
			bpfNs = float64(s1.Runtime-s0.Runtime) / float64(n)
		}
		return bpfNs, callNs
	}
	alone := func(threads int) func() float64 {
		return func() float64 {
			var n atomic.Int64
			var ev gputracebpf.Event
			ring, err := objs.NewRing(bpfsource.RingConfig{Poll: DefaultPollInterval, Decode: func(raw []byte) error {
				if err := gputracebpf.Decode(raw, &ev); err != nil {
					return err
				}
				n.Add(1)
				return nil
			}})
			require.NoError(b, err)
			ns := loop(threads, func() func() { return uprobe(objs.Program("nccl_reduction"), allReduceCookie) })
			for deadline := time.Now().Add(time.Second); n.Load() < int64(threads*calls) && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			require.NoError(b, ring.Close())
			if got := n.Load(); got < int64(threads*calls) {
				b.Logf("nccl_reduction alone, %d threads: %d records for %d calls", threads, got, threads*calls)
			}
			return ns
		}
	}
	for _, threads := range []int{1, 2} {
		sfx := map[int]string{1: "", 2: "-2t"}[threads]
		floorBPF, floorStat := perRun(objs.Program("bench_empty"), func() float64 { return floorRun(threads) })
		oursBPF, oursStat := perRun(objs.Program("nccl_reduction"), alone(threads))
		b.Logf("with BPF statistics on, %d thread(s), ns/call: floor %.0f, nccl_reduction alone %.0f", threads, floorStat, oursStat)
		b.ReportMetric(oursStat, "alone"+sfx+"-ns/call")
		b.ReportMetric(floorBPF, "floor-bpf"+sfx+"-ns/run")
		b.ReportMetric(oursBPF, "ours-bpf"+sfx+"-ns/run")
	}
}

// benchForeignPrograms counts the BPF programs called name loaded on the
// host but own: another Source's.
func benchForeignPrograms(own ebpf.ProgramID, name string) int {
	n := 0
	for id := ebpf.ProgramID(0); ; {
		next, err := ebpf.ProgramGetNextID(id)
		if err != nil {
			return n
		}
		id = next
		if id == own {
			continue
		}
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue
		}
		if info, err := p.Info(); err == nil && info.Name == name {
			n++
		}
		p.Close()
	}
}
