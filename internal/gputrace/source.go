package gputrace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf/features"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/bpfsource"
	"github.com/xpuscope/xpuscope/internal/gputracebpf"
	"github.com/xpuscope/xpuscope/internal/ktime"
	"github.com/xpuscope/xpuscope/internal/meterx"
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
	TargetNCCL    = "libnccl"
)

// Runtime is a GPU runtime a Source traces: the files it probes, and the
// names it reports under.
type Runtime struct {
	// Name is the public package's, which prefixes New's errors and
	// ends the instrumentation scope's name (ScopeName).
	Name    string
	Targets []Target
}

// ScopeName is the instrumentation scope of rt's meter and tracer: its
// public package's import path.
func (rt Runtime) ScopeName() string { return "github.com/xpuscope/xpuscope/" + rt.Name }

// Target is one kind of file: every file that defines its Library's
// anchor (gputracebpf.Anchors) gets the probes of that Library.
type Target struct {
	// Name names it in Status and xpuscope.cuda.attached_files.
	Name    string
	Library gputracebpf.Library
	// Prefix is how the base names of its files start: a file named so
	// that lacks the anchor is reported as rejected.
	Prefix string
	// InPrograms says the library is linked into programs too, so that
	// with the load hold a new program is held until it is classified.
	InPrograms bool
}

// The runtimes: CUDA's runtime (libcudart, or anything defining
// cudaLaunchKernel, such as a statically linked application), driver
// (libcuda) and collectives (libnccl, or anything defining ncclAllReduce),
// and HIP's (libamdhip64).
var (
	CUDA = Runtime{Name: "cudatrace", Targets: []Target{
		// nvcc links the runtime statically by default; NCCL has a
		// static library too. The driver is a library of its own.
		{Name: TargetRuntime, Library: gputracebpf.Runtime, Prefix: "libcudart.so", InPrograms: true},
		{Name: TargetDriver, Library: gputracebpf.Driver, Prefix: "libcuda.so"},
		{Name: TargetNCCL, Library: gputracebpf.NCCL, Prefix: "libnccl.so", InPrograms: true},
	}}
	HIP = Runtime{Name: "hiptrace", Targets: []Target{
		{Name: TargetHIP, Library: gputracebpf.HIP, Prefix: "libamdhip64.so"},
	}}
)

// Source traces a GPU runtime's API in every process on the host. Create
// it with New.
type Source struct {
	rt     Runtime
	cfg    config
	objs   *gputracebpf.Objects
	tracer *uprobe.Tracer
	kernel bpfsource.Kernel // objs, tracer, ring reader and callback, to close
	names  *symbolizer
	inst   instruments
	mono   func() uint64

	// snapMu guards front: the metric callback reads it while the
	// reader fills back (see publish).
	snapMu      sync.RWMutex
	front, back snapshot
	// collected is the ktime of the last snapshot a collection reported.
	collected atomic.Uint64

	mu               sync.Mutex // guards everything below
	agg              *aggregator
	ev               gputracebpf.Event // the record being handled
	bpfCounters      [gputracebpf.NumCounters]uint64
	attachedByTarget map[string]int64
	targetAttrs      map[string]meterx.Attrs
	// The NCCL Inspector's dumps read and not, and the samples of its
	// textfiles not joined (inspector.go).
	inspReadErrors, inspRecordErrors, inspUnjoined int64

	// The reader's alone (housekeeping): the NCCL Inspector's state per
	// process, and buffers reused.
	insp        map[uint32]*inspected
	inspPIDs    []uint32
	inspRecs    []inspRecord
	promUpdates []promRead
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
		insp:             map[uint32]*inspected{},
	}
	for _, t := range rt.Targets {
		s.targetAttrs[t.Name] = meterx.NewAttrs(semconv.XpuscopeTarget.String(t.Name))
	}
	// uprobe_multi links attach and detach in one call per program, where
	// perf-event uprobes take one (slow to tear down) per symbol.
	multi := !cfg.noMulti && features.HaveBPFLinkUprobeMulti() == nil
	libs := make([]gputracebpf.Library, 0, len(rt.Targets))
	for _, t := range rt.Targets {
		libs = append(libs, t.Library)
	}
	s.objs, err = gputracebpf.Load(gputracebpf.LoadOptions{Libraries: libs, RingBytes: cfg.ringBytes,
		WakeupBytes: cfg.wakeupBytes, UprobeMulti: multi, Edit: cfg.editObject})
	if err != nil {
		return nil, bpfsource.Classify("load BPF object", err)
	}
	s.kernel.Objects = s.objs
	if err := s.start(multi); err != nil {
		return nil, errors.Join(err, s.kernel.Close())
	}
	return s, nil
}

func (s *Source) start(multi bool) error {
	meter := s.cfg.meterProvider.Meter(s.rt.ScopeName(), metric.WithInstrumentationVersion(xpuscope.Version))
	if err := s.inst.create(meter); err != nil {
		return err
	}
	sp := &spanner{
		tracer: s.cfg.tracerProvider.Tracer(s.rt.ScopeName(), trace.WithInstrumentationVersion(xpuscope.Version)),
		wall:   ktime.WallClock(s.mono),
	}
	s.agg = newAggregator(&s.cfg, s.names, &s.inst, sp)
	var err error
	s.tracer, err = uprobe.New(uprobe.Config{
		Procfs:  s.cfg.procfs,
		Rescan:  s.cfg.rescan,
		Targets: targets(s.rt, s.objs, multi),
		Capture: true,
		Hold:    s.cfg.loadHold,
	})
	if err != nil {
		return err
	}
	s.kernel.Probes = append(s.kernel.Probes, s.tracer)
	s.names.captured = s.tracer
	s.housekeep(time.Now())
	s.kernel.Ring, err = s.objs.NewRing(bpfsource.RingConfig{
		Poll: s.cfg.pollInterval, Decode: s.decode, Flush: s.publish, Housekeep: s.housekeep, Housekeeping: housekeeping})
	if err != nil {
		return err
	}
	s.kernel.Callback, err = meter.RegisterCallback(s.observe, s.inst.observables()...)
	if err != nil {
		return fmt.Errorf("register callback: %w", err)
	}
	if p := s.cfg.producer; p != nil {
		p.sources.Add(s)
	}
	return nil
}

// targets are the files of rt to probe, each with its library's probes.
func targets(rt Runtime, o *gputracebpf.Objects, multi bool) []uprobe.Target {
	out := make([]uprobe.Target, 0, len(rt.Targets))
	for _, t := range rt.Targets {
		var probes []uprobe.Probe
		for _, p := range gputracebpf.Probes {
			if p.Library != t.Library {
				continue
			}
			up := uprobe.Probe{Symbol: p.Symbol, Cookie: p.Cookie(), Entry: o.Program(p.Entry)}
			if p.Return != "" {
				up.Return = o.Program(p.Return)
			}
			probes = append(probes, up)
		}
		out = append(out, uprobe.Target{Name: t.Name, Anchor: gputracebpf.Anchors[t.Library], Probes: probes, Multi: multi,
			Names: []string{t.Prefix}, InPrograms: t.InPrograms})
	}
	return out
}

// decode decodes and aggregates one ring buffer record.
func (s *Source) decode(raw []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := gputracebpf.Decode(raw, &s.ev); err != nil {
		return err
	}
	if s.cfg.eventHook != nil {
		s.cfg.eventHook(&s.ev)
	}
	s.agg.handle(context.Background(), &s.ev)
	return nil
}

// housekeep reads the kernel-side counters and the unrecorded call
// counts, counts the attached files, forgets exited processes and
// publishes the result.
func (s *Source) housekeep(now time.Time) {
	s.readInspectors(now)
	s.refresh()
	s.publish()
}

func (s *Source) refresh() {
	counters, cerr := s.objs.Counters()
	type unrecorded struct {
		k gputracebpf.CallKey
		n uint64
	}
	var calls []unrecorded
	var (
		k gputracebpf.CallKey
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
	nowK := s.mono()
	for _, c := range calls {
		s.agg.unrecorded(c.k, int64(c.n), nowK)
	}
	for _, t := range s.rt.Targets {
		s.attachedByTarget[t.Name] = attached[t.Name]
	}
	alive := func(pid uint32) bool { return s.cfg.procfs.Proc(int(pid)).Alive() }
	s.agg.report(nowK)
	s.agg.forget(alive, nowK, s.collected.Load())
	for _, c := range calls {
		if s.agg.procs[c.k.Pid] == nil && !s.agg.folded[c.k.Pid] {
			_ = s.objs.UnrecordedCalls().Delete(c.k)
		}
	}
	s.names.forget(alive)
}

// Status says what the Source is attached to.
type Status struct {
	Attachments []xpuscope.Attachment
	Rejections  []xpuscope.Rejection
}

// Status lists the files the probes are attached to, and the files that
// looked like the runtime's libraries but could not be probed, with why.
func (s *Source) Status() Status {
	a, r := s.tracer.Status()
	return Status{Attachments: a, Rejections: r}
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
	for k, al := range p.allocs {
		out = append(out, Allocation{Address: k.ptr, Size: al.size, Age: time.Duration(now - min(now, al.at)),
			Device: int(al.device), Function: al.api.String()})
	}
	slices.SortFunc(out, func(a, b Allocation) int { return int(b.Age - a.Age) })
	return out[:min(n, len(out))]
}

// Close detaches every probe, stops the reader and frees the kernel
// objects; a Producer given the Source reports it no more. Calls after
// the first return nil.
func (s *Source) Close() error {
	if p := s.cfg.producer; p != nil {
		p.sources.Remove(s)
	}
	err := s.kernel.Close()
	s.closeInspectors() // the reader, which reads them, has stopped
	return err
}
