package pmu

import (
	"fmt"
	"io/fs"
	"math"
	"os"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope/internal/perfevent"
)

// Defaults.
const (
	DefaultInterval = 10 * time.Second
	// DefaultSysfsRoot is where the host's sysfs is mounted.
	DefaultSysfsRoot = "/sys"
	// DefaultProcRoot is where the host's procfs is mounted.
	DefaultProcRoot = "/proc"
	// DefaultRescan is how many intervals pass between two reads of the
	// PMUs' cpumasks, which change when CPUs go offline or come back.
	DefaultRescan = 6
)

type config struct {
	meterProvider metric.MeterProvider
	interval      time.Duration
	sysfsRoot     string
	procRoot      string
	sysfs, procfs fs.FS   // nil: os.DirFS of the roots
	peak          float64 // bytes a second a controller; 0: not given
	peakSet       bool
	rescan        int
	opener        perfevent.Opener
	manual        bool // tests: no poll goroutine; they call poll
}

func newConfig(opts []Option) (config, error) {
	c := config{
		interval:  DefaultInterval,
		sysfsRoot: DefaultSysfsRoot,
		procRoot:  DefaultProcRoot,
		rescan:    DefaultRescan,
		opener:    perfevent.KernelOpener{},
	}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if c.meterProvider == nil {
		c.meterProvider = otel.GetMeterProvider()
	}
	switch {
	case c.interval <= 0:
		return c, fmt.Errorf("pmu: WithInterval: the interval must be positive, got %v", c.interval)
	case c.sysfsRoot == "":
		return c, fmt.Errorf("pmu: WithSysfsRoot: the sysfs root is empty")
	case c.procRoot == "":
		return c, fmt.Errorf("pmu: WithProcRoot: the procfs root is empty")
	case c.peakSet && (!(c.peak > 0) || math.IsInf(c.peak, 0)):
		return c, fmt.Errorf("pmu: WithPeakBandwidth: the peak must be a positive number of bytes a second, got %v", c.peak)
	case c.rescan < 1:
		return c, fmt.Errorf("pmu: withRescan: at least every interval, got %d", c.rescan)
	}
	if c.sysfs == nil {
		c.sysfs = os.DirFS(c.sysfsRoot)
	}
	if c.procfs == nil {
		c.procfs = os.DirFS(c.procRoot)
	}
	return c, nil
}

// Option configures a Source.
// An option given a value out of its range makes New fail; one left
// out keeps its default.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithMeterProvider sets the MeterProvider the Source registers its
// instruments with. The default is otel.GetMeterProvider().
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) { c.meterProvider = mp })
}

// WithInterval sets how often the Source reads the counters. The default
// is DefaultInterval. Exports between two reads see the last one.
func WithInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.interval = d })
}

// WithSysfsRoot sets where the host's sysfs is mounted: the PMUs are
// read from <root>/bus/event_source/devices and the CPUs' sockets from
// <root>/devices/system/cpu. The default is DefaultSysfsRoot.
func WithSysfsRoot(path string) Option {
	return optionFunc(func(c *config) { c.sysfsRoot = path })
}

// WithProcRoot sets where the host's procfs is mounted: the CPU's
// vendor, family and model are read from <root>/cpuinfo, and
// kernel.perf_event_paranoid from <root>/sys/kernel. The default is
// DefaultProcRoot.
func WithProcRoot(path string) Option {
	return optionFunc(func(c *config) { c.procRoot = path })
}

// WithPeakBandwidth gives the most bytes a second one memory controller
// (one hw.cpu.memory.controller series) can move, so that the Source
// reports hw.cpu.memory.utilization: for a DDR5-4800 channel, 4800e6
// transfers of 8 bytes, 38.4e9. The CPU's family does not say what DIMMs
// it runs, so there is no default: left out, utilization is not
// reported. The peak must be positive.
func WithPeakBandwidth(bytesPerSecond float64) Option {
	return optionFunc(func(c *config) { c.peak, c.peakSet = bytesPerSecond, true })
}

// withOpener replaces perf_event_open: the seam of the counting tests.
func withOpener(o perfevent.Opener) Option {
	return optionFunc(func(c *config) { c.opener = o })
}

// withRescan sets how many intervals pass between cpumask reads.
func withRescan(n int) Option {
	return optionFunc(func(c *config) { c.rescan = n })
}

// withManualPoll leaves the polling to the test.
func withManualPoll() Option {
	return optionFunc(func(c *config) { c.manual = true })
}
