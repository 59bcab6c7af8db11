package cudatrace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
	"github.com/xpuscope/xpuscope/internal/uprobe"
	"github.com/xpuscope/xpuscope/semconv"
)

// ScopeName is the instrumentation scope of the Source's meter and tracer.
const ScopeName = "github.com/xpuscope/xpuscope/cudatrace"

// housekeeping is how often the Source reads the kernel-side counters and
// forgets processes that have exited.
const housekeeping = time.Second

// Target names, as Status and xpuscope.cuda.attached_files report them.
const (
	TargetRuntime = "libcudart"
	TargetDriver  = "libcuda"
)

// Source traces the CUDA runtime and driver APIs of every process on the
// host. Create it with New.
type Source struct {
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

// New loads the probes, attaches them to every CUDA runtime and driver
// library mapped on the host (and to every new copy as it is loaded), and
// starts aggregating. Missing privilege (CAP_BPF, CAP_PERFMON, or root)
// or kernel support is xpuscope.ErrUnavailable; finding no CUDA process
// is not an error, since a process can start later.
func New(opts ...Option) (*Source, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	s := &Source{
		cfg:              cfg,
		mono:             ktime.Now,
		names:            newSymbolizer(cfg.procRoot),
		attachedByTarget: map[string]int64{},
		targetAttrs:      map[string]meterx.Attrs{},
	}
	for _, t := range []string{TargetRuntime, TargetDriver} {
		s.targetAttrs[t] = meterx.NewAttrs(semconv.XpuscopeTarget.String(t))
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
			return nil, xpuscope.Unavailablef("cudatrace: %w (needs CAP_BPF and CAP_PERFMON, or root)", err)
		}
		return nil, fmt.Errorf("cudatrace: %w", err)
	}
	if err := s.start(multi); err != nil {
		s.objs.Close()
		return nil, err
	}
	return s, nil
}

func (s *Source) start(multi bool) error {
	meter := s.cfg.meterProvider.Meter(ScopeName)
	if err := s.inst.create(meter); err != nil {
		return fmt.Errorf("cudatrace: %w", err)
	}
	sp := &spanner{tracer: s.cfg.tracerProvider.Tracer(ScopeName)}
	s.agg = newAggregator(&s.cfg, s.names, &s.inst, sp, ktime.WallClock(s.mono))
	var err error
	s.rb, err = ringbuf.NewReader(s.objs.Events())
	if err != nil {
		return fmt.Errorf("cudatrace: ring buffer reader: %w", err)
	}
	s.tracer, err = uprobe.New(uprobe.Config{
		ProcRoot: s.cfg.procRoot,
		Rescan:   s.cfg.rescan,
		Targets:  targets(s.objs, multi),
	})
	if err != nil {
		s.rb.Close()
		return fmt.Errorf("cudatrace: %w", err)
	}
	s.names.exe = s.tracer.Executable
	s.reg, err = meter.RegisterCallback(s.observe, s.inst.observables()...)
	if err != nil {
		s.tracer.Close()
		s.rb.Close()
		return fmt.Errorf("cudatrace: register callback: %w", err)
	}
	s.housekeep()
	s.wg.Add(1)
	go s.read()
	return nil
}

// targets are the files to probe: the runtime (libcudart, or anything
// defining cudaLaunchKernel, such as a statically linked application) and
// the driver (libcuda).
func targets(o *cudabpf.Objects, multi bool) []uprobe.Target {
	var rt, drv []uprobe.Probe
	for _, p := range cudabpf.Probes {
		up := uprobe.Probe{Symbol: p.Symbol, Cookie: p.Cookie(), Entry: p.Entry(o)}
		if p.Return != nil {
			up.Return = p.Return(o)
		}
		if p.Library == cudabpf.Driver {
			drv = append(drv, up)
		} else {
			rt = append(rt, up)
		}
	}
	return []uprobe.Target{
		{Name: TargetRuntime, Anchor: cudabpf.Anchors[cudabpf.Runtime], Probes: rt, Multi: multi,
			Hint: func(b string) bool { return strings.HasPrefix(b, "libcudart.so") }},
		{Name: TargetDriver, Anchor: cudabpf.Anchors[cudabpf.Driver], Probes: drv, Multi: multi,
			Hint: func(b string) bool { return strings.HasPrefix(b, "libcuda.so") }},
	}
}

// read drains the ring buffer: it wakes every poll interval, or sooner
// when the BPF side finds the buffer a quarter full.
func (s *Source) read() {
	defer s.wg.Done()
	ctx := context.Background()
	var (
		rec  ringbuf.Record
		ev   cudabpf.Event
		next = time.Now().Add(housekeeping)
	)
	housekeepIfDue := func() {
		if now := time.Now(); now.After(next) {
			s.housekeep()
			next = now.Add(housekeeping)
		}
	}
	for {
		s.rb.SetDeadline(time.Now().Add(s.cfg.pollInterval))
		for n := 1; ; n++ {
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
			if n%housekeepCheck == 0 {
				housekeepIfDue()
			}
		}
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
	for _, t := range []string{TargetRuntime, TargetDriver} {
		s.attachedByTarget[t] = attached[t]
	}
	alive := func(pid uint32) bool {
		_, err := os.Stat(filepath.Join(s.cfg.procRoot, strconv.Itoa(int(pid))))
		return err == nil
	}
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

// Status lists the CUDA files the probes are attached to, and the files
// that looked like CUDA libraries but could not be probed, with why.
func (s *Source) Status() Status {
	st := Status{Rejections: s.tracer.Rejections()}
	for _, a := range s.tracer.Attachments() {
		if a.Target == TargetRuntime || a.Target == TargetDriver {
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
