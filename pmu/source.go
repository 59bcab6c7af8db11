package pmu

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/meterx"
	"github.com/xpuscope/xpuscope/internal/perfevent"
	"github.com/xpuscope/xpuscope/semconv"
)

// ScopeName is the instrumentation scope of the Source's meter.
const ScopeName = "github.com/xpuscope/xpuscope/pmu"

// Source reports the bytes the CPU's memory controllers move. Create it
// with New.
type Source struct {
	cfg  config
	plan *plan

	mu       sync.Mutex // guards what poll changes; held by poll and Status
	counters []*counter
	series   []*series
	sockets  []*socketStat
	cycle    uint64
	reopens  int64
	errs     map[string]int64 // read errors by errno name
	openErrs []string         // why counters that are not open did not open, last tried

	front, back *snapshot
	snapMu      sync.RWMutex // guards front: the callback reads it, publish swaps it
	errAttrs    map[string]*meterx.Attrs
	utilBytes   []float64
	utilNs      []uint64
	inst        instruments
	reg         metric.Registration
	stop        chan struct{}
	wg          sync.WaitGroup
	closeErr    error
	once        sync.Once
}

// counter is one event counted on one CPU.
type counter struct {
	ev     *plannedEvent
	cpu    int
	socket int
	series *series
	sock   *socketStat
	c      perfevent.Counter // nil while not open
	prev   perfevent.Value
	v      perfevent.Value
	ok     bool // read in the last interval
}

// series is one (socket, controller, direction): what hw.cpu.memory.io
// reports.
type series struct {
	socket     int
	controller string
	dir        string
	bytes      float64 // since the Source started
	interval   float64 // in the last interval
	enabledNs  uint64  // the last interval's length, as the counters saw it
	ctrl       int     // index of its controller among the Source's
	attrs      meterx.Attrs
}

// socketStat is one socket's coverage and multiplexing.
type socketStat struct {
	socket           int
	expected, read   int
	enabled, running uint64 // deltas of the last interval, summed
	attrs            meterx.Attrs
}

// New finds the memory controllers' PMUs, opens a counter for each
// bandwidth event on each CPU its PMU counts on, registers the
// instruments, reads the counters once and starts reading them every
// interval.
//
// It returns an error wrapping xpuscope.ErrUnavailable, which says
// exactly what is missing, when the kernel has no memory-controller PMU
// (a virtual machine, or an uncore driver that does not know the CPU),
// when none of their events can be encoded, or when no counter can be
// opened (without CAP_PERFMON or CAP_SYS_ADMIN, and with
// kernel.perf_event_paranoid above 0, say). Where only some counters
// open, New succeeds and reports the coverage it has
// (xpuscope.pmu.coverage, Status().Partial). Any other error is a fault.
func New(opts ...Option) (*Source, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	p, err := discover(cfg.sysfs, cfg.procfs, cfg.sysfsRoot)
	if err != nil {
		return nil, err
	}
	s := &Source{cfg: cfg, plan: p, errs: map[string]int64{}, errAttrs: map[string]*meterx.Attrs{},
		front: &snapshot{}, back: &snapshot{}, stop: make(chan struct{})}
	s.build()
	if err := s.openAll(); err != nil {
		s.closeCounters()
		return nil, err
	}
	if err := s.register(); err != nil {
		s.closeCounters()
		return nil, err
	}
	s.poll()
	if !cfg.manual {
		s.wg.Add(1)
		go s.run()
	}
	return s, nil
}

// build lays out the counters, series and sockets of the plan.
func (s *Source) build() {
	byKey := map[string]*series{}
	ctrls := map[string]int{}
	for i := range s.plan.events {
		ev := &s.plan.events[i]
		for _, cpu := range ev.pmu.CPUs {
			s.addCounter(ev, cpu, byKey, ctrls)
		}
	}
	for _, m := range s.plan.missing {
		for _, cpu := range m.pmu.CPUs {
			s.socketOf(s.socketNumber(cpu, m.pmu)).expected++
		}
	}
}

func (s *Source) addCounter(ev *plannedEvent, cpu int, byKey map[string]*series, ctrls map[string]int) *counter {
	sock := s.socketNumber(cpu, ev.pmu)
	key := fmt.Sprintf("%d/%s/%s", sock, ev.controller, ev.dir)
	se := byKey[key]
	if se == nil {
		ck := fmt.Sprintf("%d/%s", sock, ev.controller)
		ci, ok := ctrls[ck]
		if !ok {
			ci = len(ctrls)
			ctrls[ck] = ci
		}
		se = &series{socket: sock, controller: ev.controller, dir: ev.dir, ctrl: ci,
			attrs: meterx.NewAttrs(semconv.HWCPUSocket.Int(sock), semconv.HWCPUMemoryController.String(ev.controller), semconv.HWDirection.String(ev.dir))}
		byKey[key] = se
		s.series = append(s.series, se)
	}
	st := s.socketOf(sock)
	st.expected++
	c := &counter{ev: ev, cpu: cpu, socket: sock, series: se, sock: st}
	s.counters = append(s.counters, c)
	return c
}

// socketNumber is the socket of cpu: its physical_package_id, or where
// sysfs has no topology for it, its place in the PMU's cpumask (an
// uncore PMU lists one CPU per socket).
func (s *Source) socketNumber(cpu int, pm *perfevent.PMU) int {
	if n, err := perfevent.Socket(s.cfg.sysfs, cpu); err == nil {
		return n
	}
	return slices.Index(pm.CPUs, cpu)
}

func (s *Source) socketOf(n int) *socketStat {
	for _, st := range s.sockets {
		if st.socket == n {
			return st
		}
	}
	st := &socketStat{socket: n, attrs: meterx.NewAttrs(semconv.HWCPUSocket.Int(n))}
	s.sockets = append(s.sockets, st)
	slices.SortFunc(s.sockets, func(a, b *socketStat) int { return a.socket - b.socket })
	return st
}

// openAll opens every counter; none opening is unavailable.
func (s *Source) openAll() error {
	var errs []error
	opened := 0
	for _, c := range s.counters {
		if err := s.openCounter(c); err != nil {
			errs = append(errs, err)
			continue
		}
		opened++
	}
	s.noteOpenErrors(errs)
	if opened > 0 {
		return nil
	}
	return s.noCounter(errs)
}

func (s *Source) openCounter(c *counter) error {
	cc, err := s.cfg.opener.Open(perfevent.Attr{Type: c.ev.pmu.Type, Configs: c.ev.configs, PID: -1, CPU: c.cpu})
	if err != nil {
		return fmt.Errorf("%s/%s on CPU %d: %w", c.ev.pmu.Name, c.ev.name, c.cpu, err)
	}
	c.c, c.prev = cc, perfevent.Value{}
	return nil
}

func (s *Source) noteOpenErrors(errs []error) {
	s.openErrs = s.openErrs[:0]
	for _, e := range errs {
		if msg := e.Error(); !slices.Contains(s.openErrs, msg) && len(s.openErrs) < 16 {
			s.openErrs = append(s.openErrs, msg)
		}
	}
}

// noCounter says why no counter opened: unavailable when every failure
// is a missing privilege, PMU or feature, else a fault.
func (s *Source) noCounter(errs []error) error {
	if len(errs) == 0 {
		return xpuscope.Unavailablef("pmu: %s: no CPU in the PMUs' cpumasks", s.plan.kind)
	}
	unavailable := true
	var why []string
	for _, e := range errs {
		var oe *perfevent.OpenError
		if !errors.As(e, &oe) || !oe.Unavailable() {
			unavailable = false
		}
		if oe != nil && (oe.Errno == unix.EACCES || oe.Errno == unix.EPERM) {
			why = append(why, s.privilegeWhy())
			continue
		}
		why = append(why, e.Error())
	}
	err := fmt.Errorf("pmu: %s: %w: %s", s.plan.kind, errNoCounter, dedupe(why))
	if unavailable {
		return xpuscope.Unavailablef("%w", err)
	}
	return err
}

// privilegeWhy says exactly which privilege system-wide counting lacks.
func (s *Source) privilegeWhy() string {
	has, herr := perfevent.HasPerfmon()
	par, perr := perfevent.Paranoid(s.cfg.procfs)
	var b strings.Builder
	b.WriteString("not permitted: counting on a CPU for every task needs CAP_PERFMON (or CAP_SYS_ADMIN), or kernel.perf_event_paranoid <= 0")
	switch {
	case herr == nil && !has:
		b.WriteString("; this process has neither capability")
	case herr == nil:
		b.WriteString("; this process has the capability, and was refused (a seccomp or LSM policy?)")
	}
	if perr == nil {
		fmt.Fprintf(&b, ", and perf_event_paranoid is %d", par)
	}
	return b.String()
}

func (s *Source) run() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.poll()
		}
	}
}

// poll reads every counter, accumulates the bytes, and publishes a
// snapshot. Every rescan intervals, and after a read failed, it reads the
// PMUs' cpumasks again and follows them.
func (s *Source) poll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cycle++
	failed := false
	var openErrs []error
	for _, st := range s.sockets {
		st.read, st.enabled, st.running = 0, 0, 0
	}
	for _, se := range s.series {
		se.interval, se.enabledNs = 0, 0
	}
	for _, c := range s.counters {
		c.ok = false
		if c.c == nil {
			if err := s.openCounter(c); err != nil {
				openErrs = append(openErrs, err)
				continue
			}
			s.reopens++
		}
		if err := c.c.Read(&c.v); err != nil {
			s.countError(err)
			_ = c.c.Close()
			c.c = nil
			failed = true
			continue
		}
		s.account(c)
	}
	if openErrs != nil || failed {
		s.noteOpenErrors(openErrs)
	}
	if failed || s.cycle%uint64(s.cfg.rescan) == 0 {
		s.rescan()
	}
	s.publish()
}

// account adds a counter's read to its series: the count's change since
// the last read, scaled by the change of its enabled and running times
// (multiplexing), times the bytes one count is. The scale and unit of a
// sysfs event give those bytes once; they are never applied again.
func (s *Source) account(c *counter) {
	// A counter opened since the last read has a zero prev: it counted
	// from its open, and all of that is this interval's.
	v, p := c.v, c.prev
	c.prev = v
	if v.Count < p.Count || v.Enabled < p.Enabled || v.Running < p.Running {
		s.countErrorName("invalid_data")
		return
	}
	d := perfevent.Value{Count: v.Count - p.Count, Enabled: v.Enabled - p.Enabled, Running: v.Running - p.Running}
	c.ok = true
	c.sock.read++
	c.sock.enabled += d.Enabled
	c.sock.running += d.Running
	scaled, ok := d.Scaled()
	if !ok {
		return // not on a counter this interval: no estimate
	}
	b := scaled * c.ev.bytes
	c.series.bytes += b
	c.series.interval += b
	c.series.enabledNs = max(c.series.enabledNs, d.Enabled)
}

func (s *Source) countError(err error) {
	var errno unix.Errno
	if errors.As(err, &errno) {
		s.countErrorName(perfevent.ErrnoName(errno))
		return
	}
	s.countErrorName("invalid_data")
}

func (s *Source) countErrorName(name string) {
	if _, ok := s.errs[name]; !ok && len(s.errs) >= 32 {
		name = semconv.Other
	}
	s.errs[name]++
}

// rescan reads each PMU's cpumask again. A CPU that left it (offline)
// has its counters closed; one that joined it (back online, or the
// socket's first CPU again) has them opened. Each is a reopen. The
// series keep their bytes.
func (s *Source) rescan() {
	for _, pm := range s.plan.pmus {
		cpus, err := perfevent.ReadCPUMask(s.cfg.sysfs, pm.Name)
		if err != nil || slices.Equal(cpus, pm.CPUs) {
			continue
		}
		old := pm.CPUs
		pm.CPUs = cpus
		// Close the counters of CPUs that left.
		kept := s.counters[:0]
		for _, c := range s.counters {
			if c.ev.pmu == pm && !slices.Contains(pm.CPUs, c.cpu) {
				if c.c != nil {
					_ = c.c.Close()
				}
				c.sock.expected--
				continue
			}
			kept = append(kept, c)
		}
		clear(s.counters[len(kept):])
		s.counters = kept
		// Open those of CPUs that joined.
		byKey, ctrls := s.index()
		for i := range s.plan.events {
			ev := &s.plan.events[i]
			if ev.pmu != pm {
				continue
			}
			for _, cpu := range pm.CPUs {
				if slices.Contains(old, cpu) {
					continue
				}
				c := s.addCounter(ev, cpu, byKey, ctrls)
				if err := s.openCounter(c); err == nil {
					s.reopens++
				}
			}
		}
		for _, m := range s.plan.missing {
			if m.pmu == pm {
				for _, cpu := range old {
					s.socketOf(s.socketNumber(cpu, pm)).expected--
				}
				for _, cpu := range pm.CPUs {
					s.socketOf(s.socketNumber(cpu, pm)).expected++
				}
			}
		}
	}
}

// index rebuilds the lookups addCounter takes.
func (s *Source) index() (map[string]*series, map[string]int) {
	byKey := map[string]*series{}
	ctrls := map[string]int{}
	for _, se := range s.series {
		byKey[fmt.Sprintf("%d/%s/%s", se.socket, se.controller, se.dir)] = se
		ctrls[fmt.Sprintf("%d/%s", se.socket, se.controller)] = se.ctrl
	}
	return byKey, ctrls
}

// Close closes every counter and stops reading. Calls after the first
// return nil.
func (s *Source) Close() error {
	var err error
	s.once.Do(func() {
		close(s.stop)
		s.wg.Wait()
		if s.reg != nil {
			err = s.reg.Unregister()
		}
		s.mu.Lock()
		s.closeCounters()
		s.mu.Unlock()
	})
	return err
}

func (s *Source) closeCounters() {
	for _, c := range s.counters {
		if c.c != nil {
			_ = c.c.Close()
			c.c = nil
		}
	}
}

// Status is what the Source counts, and how completely.
type Status struct {
	// CPU is the processor's vendor, family and model, as CPUID reports
	// them.
	CPU string
	// Family is the per-family table's row for the CPU; "" when it is in
	// none, and only events sysfs describes are used.
	Family string
	// Kind is the kind of memory-controller PMU counted.
	Kind string
	// Controllers are the memory controllers counted, each with its
	// events.
	Controllers []Controller
	// Counters are the counters open now; Expected those there would be
	// were every event of every PMU open on every CPU of its cpumask.
	Counters, Expected int
	// Partial is set when some controller is not counted in full: a PMU
	// unreadable, an event that cannot be encoded, a counter that would
	// not open. The sums over a socket are then short of its traffic.
	Partial bool
	// Problems say what makes it partial.
	Problems []string
	// Skipped are the sysfs entries of the PMUs that did not parse.
	Skipped []string
	// TableEvents are the events whose encoding came from the per-family
	// table, sysfs describing none.
	TableEvents int
}

// Controller is one memory controller (or channel) on one socket.
type Controller struct {
	Socket int
	Name   string
	// Events are its events: direction, name, encoding and where the
	// encoding came from ("cas_count_read config=0x304 (sysfs)").
	Events []string
}

// Status returns a copy of what the Source counts.
func (s *Source) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Kind: s.plan.kind.String(), CPU: "unknown"}
	if s.plan.cpuErr == nil {
		st.CPU = s.plan.cpu.String()
	}
	if s.plan.family != nil {
		st.Family = s.plan.family.name
	}
	seen := map[string]int{}
	for _, c := range s.counters {
		st.Expected++
		if c.c != nil {
			st.Counters++
		}
		key := fmt.Sprintf("%d/%s", c.socket, c.ev.controller)
		i, ok := seen[key]
		if !ok {
			i = len(st.Controllers)
			seen[key] = i
			st.Controllers = append(st.Controllers, Controller{Socket: c.socket, Name: c.ev.controller})
		}
		desc := fmt.Sprintf("%s %s config=%#x (%s)", c.ev.dir, c.ev.name, c.ev.configs[perfevent.Config], c.ev.source)
		if !slices.Contains(st.Controllers[i].Events, desc) {
			st.Controllers[i].Events = append(st.Controllers[i].Events, desc)
		}
	}
	for _, ev := range s.plan.events {
		if ev.source == semconv.PMUEventTable {
			st.TableEvents++
		}
	}
	for _, m := range s.plan.missing {
		st.Expected += len(m.pmu.CPUs)
		st.Problems = append(st.Problems, fmt.Sprintf("%s %s: not counted: %s", m.pmu.Name, m.name, m.why))
	}
	st.Problems = append(st.Problems, s.plan.broken...)
	if st.Counters < st.Expected {
		st.Problems = append(st.Problems, s.openErrs...)
	}
	st.Partial = st.Counters < st.Expected || len(s.plan.broken) > 0
	for _, sk := range s.plan.skipped {
		st.Skipped = append(st.Skipped, sk.Path+": "+sk.Reason)
	}
	return st
}
