package gpu

import (
	"fmt"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope/internal/procfs"
)

// Defaults.
const (
	DefaultInterval     = 10 * time.Second
	DefaultMaxProcesses = 128
	// DefaultNVMLLibrary is the soname the NVIDIA driver installs.
	DefaultNVMLLibrary = "libnvidia-ml.so.1"
)

type config struct {
	meterProvider metric.MeterProvider
	interval      time.Duration
	nvml          nvml.Interface
	nvmlPath      string
	procRoot      string
	maxProcesses  int
}

func newConfig(opts []Option) (config, error) {
	c := config{
		interval:     DefaultInterval,
		nvmlPath:     DefaultNVMLLibrary,
		procRoot:     procfs.DefaultRoot,
		maxProcesses: DefaultMaxProcesses,
	}
	for _, o := range opts {
		o.apply(&c)
	}
	if c.meterProvider == nil {
		c.meterProvider = otel.GetMeterProvider()
	}
	if c.interval <= 0 {
		return c, fmt.Errorf("gpu: poll interval must be positive, got %v", c.interval)
	}
	if c.maxProcesses < 1 {
		return c, fmt.Errorf("gpu: process cap must be at least 1, got %d", c.maxProcesses)
	}
	if c.nvmlPath == "" {
		return c, fmt.Errorf("gpu: NVML library path is empty")
	}
	return c, nil
}

// Option configures a Source.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithMeterProvider sets the MeterProvider the Source registers its
// instruments with. The default is otel.GetMeterProvider().
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) { c.meterProvider = mp })
}

// WithInterval sets how often the Source reads the devices. The default is
// DefaultInterval. Exports between two reads see the last one.
func WithInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.interval = d })
}

// WithMaxProcesses caps the per-process series of one device. Past the cap
// the smallest processes (by GPU memory) fold into one series whose
// process.executable.name is semconv.Other, and
// xpuscope.gpu.process.overflow counts them. The default is
// DefaultMaxProcesses.
func WithMaxProcesses(n int) Option {
	return optionFunc(func(c *config) { c.maxProcesses = n })
}

// WithProcRoot sets where the host's procfs is mounted, for executable
// names of GPU processes. The default is /proc, right for an agent with
// hostPID; use e.g. /host/proc where the host's procfs is mounted there.
func WithProcRoot(path string) Option {
	return optionFunc(func(c *config) { c.procRoot = path })
}

// WithNVMLLibraryPath loads NVML from path instead of DefaultNVMLLibrary,
// for drivers installed outside the loader path (a GPU operator's
// /run/nvidia/driver, say).
func WithNVMLLibraryPath(path string) Option {
	return optionFunc(func(c *config) { c.nvmlPath = path })
}

// WithNVML makes the Source read through lib instead of loading the NVML
// library. It is a test seam: pass a github.com/NVIDIA/go-nvml/pkg/nvml/mock
// Interface. lib must implement Extensions().LookupSymbol.
func WithNVML(lib nvml.Interface) Option {
	return optionFunc(func(c *config) { c.nvml = lib })
}
