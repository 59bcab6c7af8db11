package gputrace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/ringbuf"
	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/cudabpf"
	"github.com/xpuscope/xpuscope/internal/ktime"
	"github.com/xpuscope/xpuscope/internal/meterx"
	"github.com/xpuscope/xpuscope/internal/ringpoll"
	"github.com/xpuscope/xpuscope/internal/uprobe"
	"github.com/xpuscope/xpuscope/semconv"
)

// housekeeping is how often the Source reads the kernel-side counters and
// forgets processes that have exited.
const housekeeping = time.Second

// Target names, as Status and xpuscope.cuda.attached_files report them.
const (
	TargetRuntime = "libcudart"
	TargetDriver  = "libcuda"
	TargetHIP     = "libamdhip64"
)

// Runtime is a GPU runtime a Source traces: the files it probes, and the
// names it reports under.
type Runtime struct {
	// Name is the public package's, which prefixes New's errors.
	Name string
	// ScopeName is the instrumentation scope of the meter and tracer.
	ScopeName string
	Targets   []Target
}

// Target is one kind of file: every file that defines its Library's
// anchor (cudabpf.Anchors) gets the probes of that Library.
type Target struct {
	// Name names it in Status and xpuscope.cuda.attached_files.
	Name    string
	Library cudabpf.Library
	// Prefix is how the base names of its files start: a file named so
	// that lacks the anchor is reported as rejected.
	Prefix string
}

// The runtimes: CUDA's runtime (libcudart, or anything defining
// cudaLaunchKernel, such as a statically linked application) and driver
// (libcuda), and HIP's (libamdhip64).
var (
	CUDA = Runtime{Name: "cudatrace", ScopeName: "github.com/xpuscope/xpuscope/cudatrace", Targets: []Target{
		{Name: TargetRuntime, Library: cudabpf.Runtime, Prefix: "libcudart.so"},
		{Name: TargetDriver, Library: cudabpf.Driver, Prefix: "libcuda.so"},
	}}
	HIP = Runtime{Name: "hiptrace", ScopeName: "github.com/xpuscope/xpuscope/hiptrace", Targets: []Target{
		{Name: TargetHIP, Library: cudabpf.HIP, Prefix: "libamdhip64.so"},
	}}
)

// Source traces a GPU runtime's API in every process on the host. Create
// it with New.
type Source struct {
	rt     Runtime
	cfg    config
	objs   *cudabpf.Objects
	tracer *uprobe.Tracer
	rb     *ringbuf.Reader
	names  *symbolizer
	inst   instruments
	reg    metric.Registration
	mono   func() uint64

	mu               sync.Mutex // guards everything below
	agg              *aggregator
	bpfCounters      [cudabpf.NumCounters]uint64
	attachedByTarget map[string]int64
	targetAttrs      map[string]meterx.Attrs
	decodeErrors     int64

	wg        sync.WaitGroup
	closeOnce sync.Once
}

// New loads the probes, attaches them to every file of rt mapped on the
// host (and to every new copy as it is loaded), and starts aggregating.
// Missing privilege (CAP_BPF, CAP_PERFMON, or root) or kernel support is
// xpuscope.ErrUnavailable; finding no process using rt is not an error,
// since a process can start later. Errors are prefixed with rt.Name.
func New(rt Runtime, opts ...Option) (*Source, error) {
	s, err := newSource(rt, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rt.Name, err)
	}
	return s, nil
}

func newSource(rt Runtime, opts []Option) (*Source, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	s := &Source{
		rt:               rt,
		cfg:              cfg,
		mono:             ktime.Now,
		names:            newSymbolizer(cfg.procfs),
		attachedByTarget: map[string]int64{},
		targetAttrs:      map[string]meterx.Attrs{},
	}
	for _, t := range rt.Targets {
		s.targetAttrs[t.Name] = meterx.NewAttrs(semconv.XpuscopeTarget.String(t.Name))
	}
	wakeup := cfg.wakeupBytes
	if wakeup == 0 {
		wakeup = uint64(cfg.ringBytes / 4)
	}
	// uprobe_multi links attach and detach in one call per program, where
	// perf-event uprobes take one (slow to tear down) per symbol.
	multi := !cfg.noMulti && features.HaveBPFLinkUprobeMulti() == nil
	s.objs, err = cudabpf.Load(cudabpf.LoadOptions{RingBytes: cfg.ringBytes, WakeupBytes: wakeup, UprobeMulti: multi,
		Edit: cfg.editObject})
	if err != nil {
		if uprobe.Denied(err) {
			return nil, xpuscope.Unavailablef("%w (needs CAP_BPF and CAP_PERFMON, or root)", err)
		}
		return nil, err
	}
	if err := s.start(multi); err != nil {
		s.objs.Close()
		return nil, err
	}
	return s, nil
}

func (s *Source) start(multi bool) error {
	meter := s.cfg.meterProvider.Meter(s.rt.ScopeName)
	if err := s.inst.create(meter); err != nil {
		return err
	}
	sp := &spanner{tracer: s.cfg.tracerProvider.Tracer(s.rt.ScopeName)}
	s.agg = newAggregator(&s.cfg, s.names, &s.inst, sp, ktime.WallClock(s.mono))
	var err error
	s.rb, err = ringbuf.NewReader(s.objs.Events())
	if err != nil {
		return fmt.Errorf("ring buffer reader: %w", err)
	}
	s.tracer, err = uprobe.New(uprobe.Config{
		Procfs:  s.cfg.procfs,
		Rescan:  s.cfg.rescan,
		Targets: targets(s.rt, s.objs, multi),
	})
	if err != nil {
		s.rb.Close()
		return err
	}
	s.names.exe = s.tracer.Executable
	s.reg, err = meter.RegisterCallback(s.observe, s.inst.observables()...)
	if err != nil {
		s.tracer.Close()
		s.rb.Close()
		return fmt.Errorf("register callback: %w", err)
	}
	s.housekeep()
	s.wg.Add(1)
	go s.read()
	return nil
}

// targets are the files of rt to probe, each with its library's probes.
func targets(rt Runtime, o *cudabpf.Objects, multi bool) []uprobe.Target {
	out := make([]uprobe.Target, 0, len(rt.Targets))
	for _, t := range rt.Targets {
		var probes []uprobe.Probe
		for _, p := range cudabpf.Probes {
			if p.Library != t.Library {
				continue
			}
			up := uprobe.Probe{Symbol: p.Symbol, Cookie: p.Cookie(), Entry: p.Entry(o)}
			if p.Return != nil {
				up.Return = p.Return(o)
			}
			probes = append(probes, up)
		}
		out = append(out, uprobe.Target{Name: t.Name, Anchor: cudabpf.Anchors[t.Library], Probes: probes, Multi: multi,
			Hint: func(b string) bool { return strings.HasPrefix(b, t.Prefix) }})
	}
	return out
}

// read drains the ring buffer: it wakes every poll interval (backing off
// to a second while nothing comes, see ringpoll), or sooner when the BPF
// side finds the buffer a quarter full.
func (s *Source) read() {
	defer s.wg.Done()
	ctx := context.Background()
	var (
		rec  ringbuf.Record
		ev   cudabpf.Event
		next = time.Now().Add(housekeeping)
		pace = ringpoll.New(s.cfg.pollInterval)
	)
	housekeepIfDue := func() {
		if now := time.Now(); now.After(next) {
			s.housekeep()
			next = now.Add(housekeeping)
		}
	}
	for {
		s.rb.SetDeadline(time.Now().Add(pace.Wait()))
		n := 0
		for ; ; n++ {
			err := s.rb.ReadInto(&rec)
			if errors.Is(err, ringbuf.ErrClosed) {
				return
			}
			if err != nil {
				break // the deadline: this batch is done
			}
			s.mu.Lock()
			if cudabpf.Decode(rec.RawSample, &ev) == nil {
				if s.cfg.eventHook != nil {
					s.cfg.eventHook(&ev)
				}
				s.agg.handle(ctx, &ev)
			} else {
				s.decodeErrors++
			}
			s.mu.Unlock()
			// A batch lasts as long as records keep coming: under a
			// steady stream, housekeeping must not wait for its end.
			if (n+1)%housekeepCheck == 0 {
				housekeepIfDue()
			}
		}
		pace.Next(n)
		housekeepIfDue()
	}
}

// housekeepCheck is how many records the reader handles between looks at
// the clock for housekeeping.
const housekeepCheck = 256

// housekeep reads the kernel-side counters and the unrecorded call
// counts, counts the attached files and forgets exited processes.
func (s *Source) housekeep() {
	counters, cerr := s.objs.Counters()
	type unrecorded struct {
		k cudabpf.CallKey
		n uint64
	}
	var calls []unrecorded
	var (
		k cudabpf.CallKey
		n uint64
	)
	it := s.objs.UnrecordedCalls().Iterate()
	for it.Next(&k, &n) {
		calls = append(calls, unrecorded{k, n})
	}
	attached := map[string]int64{}
	for _, a := range s.tracer.Attachments() {
		attached[a.Target]++
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if cerr == nil {
		s.bpfCounters = counters
	}
	for _, c := range calls {
		if p := s.agg.proc(c.k.Pid); p != nil {
			s.agg.call(p, cudabpf.API(c.k.Api)).unrecorded = int64(c.n)
		}
	}
	for _, t := range s.rt.Targets {
		s.attachedByTarget[t.Name] = attached[t.Name]
	}
	alive := func(pid uint32) bool { return s.cfg.procfs.Proc(int(pid)).Alive() }
	nowK := s.mono()
	s.agg.report(nowK)
	s.agg.forget(alive, time.Now(), nowK)
	for _, c := range calls {
		if s.agg.procs[c.k.Pid] == nil {
			_ = s.objs.UnrecordedCalls().Delete(c.k)
		}
	}
	s.names.forget(alive)
}

// Status says what the Source is attached to.
type Status struct {
	Attachments []uprobe.Attachment
	Rejections  []uprobe.Rejection
}

// Status lists the files the probes are attached to, and the files that
// looked like the runtime's libraries but could not be probed, with why.
func (s *Source) Status() Status {
	st := Status{Rejections: s.tracer.Rejections()}
	for _, a := range s.tracer.Attachments() {
		if _, ours := s.targetAttrs[a.Target]; ours {
			st.Attachments = append(st.Attachments, a)
		}
	}
	return st
}

// Allocation is an outstanding device allocation.
type Allocation struct {
	Address, Size uint64
	Age           time.Duration
	Device        int
	// Function is the API that allocated it (cudaMalloc, cuMemAlloc_v2, …).
	// The allocating call site in the application is not recorded.
	Function string
}

// LeakSuspects returns up to n of pid's oldest outstanding allocations,
// oldest first: allocations made while tracing and not freed since.
func (s *Source) LeakSuspects(pid int, n int) []Allocation {
	now := s.mono()
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.agg.procs[uint32(pid)]
	if p == nil || n <= 0 {
		return nil
	}
	out := make([]Allocation, 0, len(p.allocs))
	for addr, al := range p.allocs {
		out = append(out, Allocation{Address: addr, Size: al.size, Age: time.Duration(now - min(now, al.at)),
			Device: int(al.device), Function: al.api.String()})
	}
	slices.SortFunc(out, func(a, b Allocation) int { return int(b.Age - a.Age) })
	return out[:min(n, len(out))]
}

// Close detaches every probe, stops the reader and frees the kernel
// objects. Calls after the first return nil.
func (s *Source) Close() error {
	var err error
	s.closeOnce.Do(func() {
		errs := []error{s.reg.Unregister(), s.tracer.Close(), s.rb.Close()}
		s.wg.Wait()
		errs = append(errs, s.objs.Close())
		err = errors.Join(errs...)
	})
	return err
}
