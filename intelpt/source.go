package intelpt

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/perfevent"
)

// ScopeName is the instrumentation scope of the Source's meter.
const ScopeName = "github.com/xpuscope/xpuscope/intelpt"

// PMUName is the Intel PT PMU's name in sysfs.
const PMUName = "intel_pt"

// Source captures Intel PT traces on demand, within its caps. Create it
// with New; ask for a capture with Capture.
type Source struct {
	cfg    config
	pmu    *perfevent.PMU
	cpu    perfevent.CPUID
	cpuErr error
	config perfevent.Configs // the default configuration
	terms  []perfevent.Term

	slots chan struct{} // one token per capture that may run

	mu      sync.Mutex
	closed  bool
	cancels map[int]func() // running captures, to stop at Close
	nextID  int
	wg      sync.WaitGroup
	stats   stats

	inst instruments
	reg  metric.Registration
	once sync.Once
}

// New finds the intel_pt PMU and works out the capture's configuration
// from its format/ and caps/ files, as perf's default: tsc, mtc with the
// MTC period nearest 3 its caps allow, the PSB period nearest 3, pt and
// branch. It opens nothing: a capture is opened when asked for.
//
// Without an intel_pt PMU (an AMD CPU, a virtual machine, a kernel built
// without CONFIG_PERF_EVENTS_INTEL_PT) it returns an error wrapping
// xpuscope.ErrUnavailable that says which. Any other error is a fault.
func New(opts ...Option) (*Source, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	s := &Source{cfg: cfg, slots: make(chan struct{}, cfg.maxConcurrent), cancels: map[int]func(){}}
	s.cpu, s.cpuErr = perfevent.ReadCPUInfo(cfg.procfs)
	s.pmu, err = perfevent.ReadPMU(cfg.sysfs, PMUName)
	if err != nil {
		return nil, s.noPMU(err)
	}
	s.terms = defaultTerms(s.pmu)
	if s.config, err = s.pmu.Encode(s.terms); err != nil {
		return nil, xpuscope.Unavailablef("intelpt: the intel_pt PMU's formats cannot place perf's default configuration %s: %w", perfevent.FormatTerms(s.terms), err)
	}
	if err := s.register(); err != nil {
		return nil, err
	}
	return s, nil
}

// noPMU says why there is no intel_pt PMU.
func (s *Source) noPMU(err error) error {
	dir := path.Join(s.cfg.sysfsRoot, perfevent.DevicesDir, PMUName)
	why := "the CPU has no Intel PT, or the kernel was built without CONFIG_PERF_EVENTS_INTEL_PT"
	switch {
	case s.cpuErr != nil:
	case s.cpu.Vendor != perfevent.VendorIntel:
		why = fmt.Sprintf("the CPU is %v: Intel PT is Intel's", s.cpu)
	case s.cpu.Hypervisor:
		why = fmt.Sprintf("this is a virtual machine (%v, cpuinfo's hypervisor flag): its hypervisor does not pass Intel PT through", s.cpu)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return xpuscope.Unavailablef("intelpt: no intel_pt PMU (%s): %s", dir, why)
	}
	return xpuscope.Unavailablef("intelpt: %s: %v: %s", dir, err, why)
}

// defaultTerms is perf's default Intel PT configuration for pmu (its
// tools/perf/arch/x86/util/intel-pt.c, intel_pt_default_config): tsc;
// mtc with mtc_period the caps' period nearest 3, where caps/mtc (or its
// absence) allows it; psb_period nearest 3 where caps/psb_cyc does and
// MTC periods are known; pt and branch where the PMU has both formats.
// Each only where the PMU has the format field.
func defaultTerms(pmu *perfevent.PMU) []perfevent.Term {
	var terms []perfevent.Term
	add := func(name string, v uint64) {
		if _, ok := pmu.Formats[name]; ok {
			terms = append(terms, perfevent.Term{Name: name, Value: v})
		}
	}
	add("tsc", 1)
	capInt := func(name string, base int, dflt uint64) uint64 {
		s, ok := pmu.Caps[name]
		if !ok {
			return dflt
		}
		v, err := strconv.ParseUint(s, base, 32)
		if err != nil {
			return 0
		}
		return v
	}
	mtcPeriods := uint64(0)
	if capInt("mtc", 10, 1) != 0 {
		mtcPeriods = capInt("mtc_periods", 16, 0)
		if mtcPeriods != 0 {
			add("mtc", 1)
			add("mtc_period", uint64(pickBit(mtcPeriods, 3)))
		}
	}
	if capInt("psb_cyc", 10, 1) != 0 && mtcPeriods != 0 {
		if p := capInt("psb_periods", 16, 0); p != 0 {
			add("psb_period", uint64(pickBit(p, 3)))
		}
	}
	_, pt := pmu.Formats["pt"]
	_, branch := pmu.Formats["branch"]
	if pt && branch {
		add("pt", 1)
		add("branch", 1)
	}
	return terms
}

// pickBit is perf's intel_pt_pick_bit: the set bit of bits at target, or
// the nearest below it, or failing those the lowest above it.
func pickBit(bits uint64, target int) int {
	pick := -1
	for pos := 0; bits != 0; bits, pos = bits>>1, pos+1 {
		if bits&1 != 0 {
			if pos <= target || pick < 0 {
				pick = pos
			}
			if pos >= target {
				break
			}
		}
	}
	return pick
}

// Status is what the Source can capture with, and what it has done.
type Status struct {
	// PMUType is the intel_pt PMU's perf_event_attr.type.
	PMUType uint32
	// Config is the configuration a capture opens with, and Terms the
	// same as named fields ("tsc=0x1,mtc=0x1,…").
	Config uint64
	Terms  string
	// Caps are the PMU's caps/ files.
	Caps map[string]string
	// CaptureDir is where captures are written.
	CaptureDir string
	// Running are the captures running now; Done, Refused and Failed
	// how many ended each way since New.
	Running, Done, Refused, Failed int
	// Limits are the caps a request must keep within.
	MaxDuration   string
	MaxAUXBytes   int
	MaxBytes      int64
	MaxConcurrent int
}

// Status returns a copy of what the Source is.
func (s *Source) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	done := int64(0)
	for i := range s.stats.done {
		done += s.stats.done[i].Load()
	}
	return Status{
		PMUType: s.pmu.Type, Config: s.config[perfevent.Config], Terms: perfevent.FormatTerms(s.terms),
		Caps: maps.Clone(s.pmu.Caps), CaptureDir: s.cfg.captureDir,
		Running: len(s.cancels), Done: int(done), Refused: int(s.stats.refused.Load()), Failed: int(s.stats.failed.Load()),
		MaxDuration: s.cfg.maxDuration.String(), MaxAUXBytes: s.cfg.maxAUXBytes, MaxBytes: s.cfg.maxBytes, MaxConcurrent: s.cfg.maxConcurrent,
	}
}

// Describe says in one line what the Source captures with: for the
// agent's -check.
func (st Status) Describe() string {
	caps := slices.Sorted(maps.Keys(st.Caps))
	return fmt.Sprintf("intel_pt type %d, config %#x (%s); caps %s; captures on demand only, into %s, at most %s, %d AUX bytes, %d bytes written, %d at once",
		st.PMUType, st.Config, st.Terms, strings.Join(caps, ","), st.CaptureDir, st.MaxDuration, st.MaxAUXBytes, st.MaxBytes, st.MaxConcurrent)
}

// Close stops the captures running (each ends as cancelled, its files
// complete), waits for them, and refuses those asked for after. Calls
// after the first return nil.
func (s *Source) Close() error {
	var err error
	s.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		for _, cancel := range s.cancels {
			cancel()
		}
		s.mu.Unlock()
		s.wg.Wait()
		if s.reg != nil {
			err = s.reg.Unregister()
		}
	})
	return err
}
