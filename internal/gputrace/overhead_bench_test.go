package gputrace

// What the whole-call overhead benchmarks (BenchmarkLaunchOverhead,
// BenchmarkNCCLOverhead, BenchmarkGraphLaunchOverhead) share: a cudaprog
// loop run untraced, under a benchmark program on a uprobe, under a
// program of ours attached alone, or under the real Source; the variants
// interleaved in rounds whose order rotates, with the runs during which
// another Source was loaded on the host left out of the medians; and the
// BPF programs' own run time.

import (
	"fmt"
	"os"
	"slices"
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

// overhead is one whole-call benchmark's set-up: the benchmark programs
// loaded, and the probed function of lib.
type overhead struct {
	b      *testing.B
	objs   *gputracebpf.Objects
	lib    *link.Executable
	symbol string
	// start starts the loop program of threads threads, waiting at READY;
	// check, if set, checks its output once it is done.
	start func(threads int) *cudaprog.Proc
	check func(lines []string)
	// calls is each thread's calls of symbol in a run.
	calls int

	// What the runs of the real Source counted: the records of the calls
	// (oursRun.record), the calls made, the records dropped, the runs.
	records, called, drops, runs, newTime, closeTime atomic.Int64
}

// newOverhead loads the benchmark programs for b, which needs root, and
// opens lib.
func newOverhead(b *testing.B, lib, symbol string, calls int, start func(threads int) *cudaprog.Proc) *overhead {
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(b, "uprobes need root")
	}
	objs, err := gputracebpf.Load(gputracebpf.LoadOptions{RingBytes: DefaultRingBytes, Bench: true})
	require.NoError(b, err)
	b.Cleanup(func() { objs.Close() })
	exe, err := link.OpenExecutable(lib)
	require.NoError(b, err)
	return &overhead{b: b, objs: objs, lib: exe, symbol: symbol, calls: calls, start: start}
}

// loop runs the loop program on threads threads and returns its
// NS_PER_CALL; attach (may be nil) runs between READY and the go line
// and returns what to do after the run.
func (o *overhead) loop(threads int, attach func(pid int) func()) float64 {
	p := o.start(threads)
	var after func()
	if attach != nil {
		after = attach(p.Pid)
	}
	p.Go()
	lines := p.Wait()
	if after != nil {
		after()
	}
	ns, ok := cudaprog.NsPerCall(lines)
	require.True(o.b, ok, "no NS_PER_CALL line in %q", lines)
	if o.check != nil {
		o.check(lines)
	}
	return ns
}

// uprobe attaches the benchmark program prog to symbol with cookie, and
// returns its detach.
func (o *overhead) uprobe(prog string, cookie uint64) func() {
	l, err := o.lib.Uprobe(o.symbol, o.objs.Program(prog), &link.UprobeOptions{Cookie: cookie})
	require.NoError(o.b, err)
	return func() { _ = l.Close() }
}

// under runs the loop with prog on a uprobe, no reader.
func (o *overhead) under(prog string) func(threads int) float64 {
	return func(threads int) float64 {
		return o.loop(threads, func(int) func() { return o.uprobe(prog, 0) })
	}
}

// cookie is the attach cookie of symbol's probe in the probe table.
func (o *overhead) cookie() uint64 {
	i := slices.IndexFunc(gputracebpf.Probes, func(p gputracebpf.Probe) bool { return p.Symbol == o.symbol })
	require.GreaterOrEqual(o.b, i, 0, "no probe of %s", o.symbol)
	return gputracebpf.Probes[i].Cookie()
}

// alone runs the loop with prog, our probe of symbol, attached alone with
// its cookie, its records read by a lane reader as the Source's are and
// counted where kind says so; it returns the ns per call and the records.
func (o *overhead) alone(threads int, prog string, kind func(*gputracebpf.Event) bool) (float64, int64) {
	var (
		n  atomic.Int64
		ev gputracebpf.Event
	)
	ring, err := o.objs.NewRing(bpfsource.RingConfig{Poll: DefaultPollInterval, Decode: func(raw []byte) error {
		if err := gputracebpf.Decode(raw, &ev); err != nil {
			return err
		}
		if kind(&ev) {
			n.Add(1)
		}
		return nil
	}})
	require.NoError(o.b, err)
	want := int64(threads * o.calls)
	ns := o.loop(threads, func(int) func() { return o.uprobe(prog, o.cookie()) })
	for deadline := time.Now().Add(time.Second); n.Load() < want && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	require.NoError(o.b, ring.Close())
	if n.Load() < want {
		o.b.Logf("%s alone, %d threads: %d records for %d calls", prog, threads, n.Load(), want)
	}
	return ns, n.Load()
}

// oursRun is a run of the real Source.
type oursRun struct {
	// sdk: the SDK's MeterProvider with the Producer on its reader, as
	// the agent runs it; else the API's no-op one, which leaves out what
	// the SDK's aggregation in the reader takes from the workload on a
	// small machine.
	sdk bool
	// targets must be attached when New returns.
	targets []string
	// record says which of the run's process's records to count (pid).
	record func(e *gputracebpf.Event, pid int) bool
	// helper, if set, starts a process that maps files the Source must
	// have attached to before the run, and returns its end.
	helper func() func()
	// started, if set, runs once the Source is attached, before the run.
	started func()
	// drained says the reader is done, given the records counted.
	drained func(records *atomic.Int64)
	// done, if set, runs with the Source still open after the run.
	done func(src *Source, pid int, records int64)
}

// ours runs the loop under the real Source (New, every probe), made at
// READY, so that nothing is attached during the measured run, as in the
// steady state of a Source that has been up a while.
func (o *overhead) ours(threads int, r oursRun) float64 {
	var (
		src     *Source
		records atomic.Int64
	)
	ns := o.loop(threads, func(pid int) func() {
		if r.helper != nil {
			defer r.helper()()
		}
		var mp metric.MeterProvider = metricnoop.NewMeterProvider()
		opts := []Option{WithTracerProvider(tracenoop.NewTracerProvider()), withEventHook(func(e *gputracebpf.Event) {
			if r.record(e, pid) {
				records.Add(1)
			}
		})}
		if r.sdk {
			p := NewProducer()
			mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader(sdkmetric.WithProducer(p))))
			opts = append(opts, WithProducer(p))
		}
		t0 := time.Now()
		var err error
		src, err = New(CUDA, append(opts, WithMeterProvider(mp))...)
		require.NoError(o.b, err)
		o.newTime.Add(int64(time.Since(t0)))
		for _, target := range r.targets {
			if a, ok := benchAttachment(src, target); !ok || len(a.AttachErrors) > 0 {
				st := src.Status()
				src.Close()
				require.True(o.b, ok, "ours: %s not attached: %+v", target, st)
				require.Empty(o.b, a.AttachErrors, "ours: %s not fully attached: %+v", target, st)
			}
		}
		if r.started != nil {
			r.started()
		}
		return func() {
			r.drained(&records)
			c, err := src.objs.Counters()
			require.NoError(o.b, err)
			o.drops.Add(int64(c[gputracebpf.CounterDrops]))
			if r.done != nil {
				r.done(src, pid, records.Load())
			}
			t0 := time.Now()
			assert.NoError(o.b, src.Close())
			o.closeTime.Add(int64(time.Since(t0)))
		}
	})
	o.records.Add(records.Load())
	o.called.Add(int64(threads * o.calls))
	o.runs.Add(1)
	return ns
}

// drainedAfterPolls is oursRun.drained for a loop whose records all come
// during the run: a poll interval and a margin.
func drainedAfterPolls(*atomic.Int64) { time.Sleep(3 * DefaultPollInterval) }

// logOurs logs how long New and Close took on average.
func (o *overhead) logOurs() {
	if n := o.runs.Load(); n > 0 {
		o.b.Logf("ours: New %v, Close %v on average", time.Duration(o.newTime.Load()/n), time.Duration(o.closeTime.Load()/n))
	}
}

// overheadVariant is one way of running the loop.
type overheadVariant struct {
	name string
	run  func(threads int) float64
	once bool // with one thread only
}

type overheadKey struct {
	name    string
	threads int
}

// overheadRuns are the runs of the variants, by variant and threads:
// those during which another Source was loaded on the host apart.
type overheadRuns struct {
	b             *testing.B
	clean, spoilt map[overheadKey][]float64
	contaminated  int
}

// runOverhead runs each variant rounds times with each of threads, the
// order rotating each round, and logs each round once all are done (a
// benchmark's log is cut after a few lines). foreign counts the other
// Sources loaded on the host: a run during which there was one is spoilt
// (it probes the same library), and left out of the medians unless a
// variant has no other.
func runOverhead(b *testing.B, rounds int, threads []int, variants []overheadVariant, foreign func() int) *overheadRuns {
	r := &overheadRuns{b: b, clean: map[overheadKey][]float64{}, spoilt: map[overheadKey][]float64{}}
	var lines []string
	for round := range rounds {
		for _, t := range threads {
			var line []string
			for i := range variants {
				v := variants[(i+round)%len(variants)]
				if v.once && t > 1 {
					continue
				}
				for deadline := time.Now().Add(3 * time.Second); foreign() > 0 && time.Now().Before(deadline); {
					time.Sleep(100 * time.Millisecond)
				}
				before := foreign()
				ns := v.run(t)
				// A closed Source's programs linger a moment in the kernel.
				after := foreign()
				for deadline := time.Now().Add(2 * time.Second); after > 0 && time.Now().Before(deadline); after = foreign() {
					time.Sleep(20 * time.Millisecond)
				}
				mark, k := "", overheadKey{v.name, t}
				if max(before, after) > 0 {
					r.contaminated++
					mark = " (spoilt)"
					r.spoilt[k] = append(r.spoilt[k], ns)
				} else {
					r.clean[k] = append(r.clean[k], ns)
				}
				line = append(line, fmt.Sprintf("%s %.0f%s", v.name, ns, mark))
			}
			lines = append(lines, fmt.Sprintf("round %d, %d thread(s), ns/call: %s", round, t, strings.Join(line, ", ")))
		}
	}
	b.Logf("%s", strings.Join(lines, "\n"))
	b.ReportMetric(float64(r.contaminated), "spoilt-runs")
	b.ReportMetric(0, "ns/op") // the wall time of the whole run says nothing
	return r
}

// median is the median of a variant's runs, and their least and most.
func (r *overheadRuns) median(name string, threads int) (med, lo, hi float64) {
	k := overheadKey{name, threads}
	v := slices.Clone(r.clean[k])
	if len(v) == 0 {
		r.b.Logf("%s, %d threads: no clean run; the median is of spoilt runs", name, threads)
		v = slices.Clone(r.spoilt[k])
	}
	require.NotEmpty(r.b, v, "no run of %s with %d threads", name, threads)
	slices.Sort(v)
	return v[len(v)/2], v[0], v[len(v)-1]
}

// med is the median alone.
func (r *overheadRuns) med(name string, threads int) float64 {
	m, _, _ := r.median(name, threads)
	return m
}

// threadSuffix is the suffix of a metric with threads threads.
func threadSuffix(threads int) string {
	if threads == 1 {
		return ""
	}
	return fmt.Sprintf("-%dt", threads)
}

// foreignPrograms counts the BPF programs called like own loaded on the
// host but own: another Source's.
func foreignPrograms(b *testing.B, own *ebpf.Program) func() int {
	info, err := own.Info()
	require.NoError(b, err)
	id, ok := info.ID()
	require.True(b, ok, "no program id")
	name := info.Name
	return func() int {
		n := 0
		for next := ebpf.ProgramID(0); ; {
			var err error
			if next, err = ebpf.ProgramGetNextID(next); err != nil {
				return n
			}
			if next == id {
				continue
			}
			p, err := ebpf.NewProgramFromID(next)
			if err != nil {
				continue
			}
			if info, err := p.Info(); err == nil && info.Name == name {
				n++
			}
			p.Close()
		}
	}
}

// bpfStats turns the BPF programs' run-time statistics on until the
// returned function is called; nil where the kernel refuses.
func bpfStats(b *testing.B) func() {
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		b.Logf("no BPF statistics: %v", err)
		return nil
	}
	return func() { stats.Close() }
}

// perRun runs run and returns the ns p ran per run meanwhile (statistics
// on: bpfStats), and what run returned.
func perRun(b *testing.B, p *ebpf.Program, run func() float64) (bpfNs, callNs float64) {
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
