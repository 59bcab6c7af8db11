package intelpt

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope/internal/perfevent"
)

// Defaults: the hard caps a capture cannot exceed, and where captures
// are written.
const (
	// DefaultMaxDuration caps how long one capture runs.
	DefaultMaxDuration = 10 * time.Second
	// DefaultMaxAUXBytes caps one capture's AUX area, the kernel memory
	// the trace is written to before it is copied out.
	DefaultMaxAUXBytes = 4 << 20
	// DefaultMaxBytes caps what one capture writes to disk, trace and
	// sideband together.
	DefaultMaxBytes = 256 << 20
	// DefaultMaxConcurrent caps the captures running at once.
	DefaultMaxConcurrent = 1
	// DefaultCaptureDir is where captures are written, each in a
	// directory of its own.
	DefaultCaptureDir = "/var/lib/xpuscope/intelpt"
	// DefaultSysfsRoot and DefaultProcRoot are where the host's sysfs and
	// procfs are mounted.
	DefaultSysfsRoot = "/sys"
	DefaultProcRoot  = "/proc"

	// Bounds of the caps themselves.
	maxMaxDuration = 10 * time.Minute
	maxMaxAUXBytes = 1 << 30
	maxMaxBytes    = 64 << 30
	maxMaxConc     = 64
)

type config struct {
	meterProvider metric.MeterProvider
	sysfsRoot     string
	procRoot      string
	sysfs, procfs fs.FS
	captureDir    string
	maxDuration   time.Duration
	maxAUXBytes   int
	maxBytes      int64
	maxConcurrent int
	open          opener
}

func newConfig(opts []Option) (config, error) {
	c := config{
		sysfsRoot:     DefaultSysfsRoot,
		procRoot:      DefaultProcRoot,
		captureDir:    DefaultCaptureDir,
		maxDuration:   DefaultMaxDuration,
		maxAUXBytes:   DefaultMaxAUXBytes,
		maxBytes:      DefaultMaxBytes,
		maxConcurrent: DefaultMaxConcurrent,
		open:          openKernel,
	}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if c.meterProvider == nil {
		c.meterProvider = otel.GetMeterProvider()
	}
	page := perfevent.PageSize
	switch {
	case c.sysfsRoot == "":
		return c, fmt.Errorf("intelpt: WithSysfsRoot: the sysfs root is empty")
	case c.procRoot == "":
		return c, fmt.Errorf("intelpt: WithProcRoot: the procfs root is empty")
	case !filepath.IsAbs(c.captureDir):
		return c, fmt.Errorf("intelpt: WithCaptureDir: %q is not an absolute path", c.captureDir)
	case c.maxDuration <= 0 || c.maxDuration > maxMaxDuration:
		return c, fmt.Errorf("intelpt: WithMaxDuration: the cap must be above 0 and at most %v, got %v", maxMaxDuration, c.maxDuration)
	case c.maxAUXBytes < page || c.maxAUXBytes > maxMaxAUXBytes || !pow2Pages(c.maxAUXBytes):
		return c, fmt.Errorf("intelpt: WithMaxAUXBytes: the cap must be a power of two pages (%d bytes a page) of at most %d bytes, got %d", page, maxMaxAUXBytes, c.maxAUXBytes)
	case c.maxBytes < int64(page) || c.maxBytes > maxMaxBytes:
		return c, fmt.Errorf("intelpt: WithMaxBytes: the cap must be %d to %d bytes, got %d", page, int64(maxMaxBytes), c.maxBytes)
	case c.maxConcurrent < 1 || c.maxConcurrent > maxMaxConc:
		return c, fmt.Errorf("intelpt: WithMaxConcurrent: the cap must be 1 to %d, got %d", maxMaxConc, c.maxConcurrent)
	}
	if c.sysfs == nil {
		c.sysfs = os.DirFS(c.sysfsRoot)
	}
	if c.procfs == nil {
		c.procfs = os.DirFS(c.procRoot)
	}
	return c, nil
}

func pow2Pages(n int) bool {
	p := n / perfevent.PageSize
	return n%perfevent.PageSize == 0 && p > 0 && p&(p-1) == 0
}

// Option configures a Source.
// An option given a value out of its range makes New fail; one left
// out keeps its default.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithMeterProvider sets the MeterProvider the Source registers its
// self-metrics with. The default is otel.GetMeterProvider().
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) { c.meterProvider = mp })
}

// WithSysfsRoot sets where the host's sysfs is mounted (the intel_pt
// PMU's description). The default is DefaultSysfsRoot.
func WithSysfsRoot(path string) Option {
	return optionFunc(func(c *config) { c.sysfsRoot = path })
}

// WithProcRoot sets where the host's procfs is mounted (the CPU's
// identity, written beside each capture for its decoder). The default is
// DefaultProcRoot.
func WithProcRoot(path string) Option {
	return optionFunc(func(c *config) { c.procRoot = path })
}

// WithCaptureDir sets the directory captures are written under, each in
// a directory of its own made there (mode 0700); an absolute path. The
// default is DefaultCaptureDir.
func WithCaptureDir(path string) Option {
	return optionFunc(func(c *config) { c.captureDir = path })
}

// WithMaxDuration caps how long a capture runs: a request for longer is
// refused. Above 0, at most 10 minutes; the default is
// DefaultMaxDuration.
func WithMaxDuration(d time.Duration) Option {
	return optionFunc(func(c *config) { c.maxDuration = d })
}

// WithMaxAUXBytes caps a capture's AUX area, the locked kernel memory the
// trace goes to: a request for more is refused. A power of two pages, at
// most 1 GiB; the default is DefaultMaxAUXBytes.
func WithMaxAUXBytes(n int) Option {
	return optionFunc(func(c *config) { c.maxAUXBytes = n })
}

// WithMaxBytes caps what a capture writes, trace and sideband together:
// a request for more is refused, and a capture that reaches it stops. At
// least a page, at most 64 GiB; the default is DefaultMaxBytes.
func WithMaxBytes(n int64) Option {
	return optionFunc(func(c *config) { c.maxBytes = n })
}

// WithMaxConcurrent caps the captures running at once: one asked for past
// it is refused, never queued. 1 to 64; the default is
// DefaultMaxConcurrent.
func WithMaxConcurrent(n int) Option {
	return optionFunc(func(c *config) { c.maxConcurrent = n })
}

// withOpener replaces the kernel's perf_event_open and mmap: the seam of
// the capture tests, this machine having no Intel PT.
func withOpener(o opener) Option {
	return optionFunc(func(c *config) { c.open = o })
}
