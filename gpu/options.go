package gpu

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope/internal/levelzero"
	"github.com/xpuscope/xpuscope/internal/perfevent"
	"github.com/xpuscope/xpuscope/internal/procfs"
	"github.com/xpuscope/xpuscope/internal/rocmsmi"
)

// Defaults.
const (
	DefaultInterval     = 10 * time.Second
	DefaultMaxProcesses = 128
	// DefaultNVMLLibrary is the soname the NVIDIA driver installs.
	DefaultNVMLLibrary = "libnvidia-ml.so.1"
	// DefaultROCmSMILibrary is the soname ROCm installs.
	DefaultROCmSMILibrary = rocmsmi.DefaultLibrary
	// DefaultLevelZeroLibrary is the Level Zero loader's soname.
	DefaultLevelZeroLibrary = levelzero.DefaultLibrary
	// DefaultSysfsRoot is where the host's sysfs is mounted.
	DefaultSysfsRoot = "/sys"
)

// Backend is a way of reading GPUs.
type Backend string

// The backends, in the order New tries them.
const (
	// BackendNVML reads NVIDIA GPUs through NVML.
	BackendNVML Backend = "nvml"
	// BackendAMDSMI reads AMD GPUs through AMD SMI (ROCm 6 and later).
	BackendAMDSMI Backend = "amd_smi"
	// BackendROCmSMI reads AMD GPUs through ROCm SMI, when AMD SMI found
	// none.
	BackendROCmSMI Backend = "rocm_smi"
	// BackendAMDSysfs reads AMD GPUs from what the amdgpu driver publishes
	// in sysfs, when neither AMD SMI nor ROCm SMI found any.
	BackendAMDSysfs Backend = "amdgpu_sysfs"
	// BackendDCGM reads the profiling fields of NVIDIA GPUs (SM activity
	// and occupancy, pipe and DRAM activity, PCIe and NVLink throughput)
	// through NVIDIA DCGM: an embedded host engine, or nv-hostengine.
	BackendDCGM Backend = "dcgm"
	// BackendRDC reads AMD GPUs through ROCm's RDC: utilization, memory,
	// power, ECC, XGMI bytes and its profiling fields.
	BackendRDC Backend = "rdc"
	// BackendLevelZero reads Intel GPUs through Level Zero Sysman, where
	// Intel's compute runtime is installed.
	BackendLevelZero Backend = "level_zero"
	// BackendIntelSysfs reads Intel GPUs from what the i915 and xe
	// drivers publish: sysfs, hwmon, their PMU and the DRM clients'
	// fdinfo; for the GPUs Level Zero does not read.
	BackendIntelSysfs Backend = "intel_sysfs"
	// BackendTPU reads Google TPUs: the chips from sysfs, their figures
	// from the TPU runtime's metrics service while a workload runs.
	BackendTPU Backend = "tpu"
)

// allBackends is the default: every backend, in the order New tries them.
// The runtime backends come after the backend that finds their vendor's
// devices (DCGM after NVML, RDC after the AMD ones), so that their series
// take those devices' identity.
var allBackends = []Backend{BackendNVML, BackendDCGM, BackendAMDSMI, BackendROCmSMI, BackendAMDSysfs, BackendRDC, BackendLevelZero, BackendIntelSysfs, BackendTPU}

type config struct {
	meterProvider metric.MeterProvider
	interval      time.Duration
	nvml          nvml.Interface
	nvmlPath      string
	procRoot      string
	maxProcesses  int
	backends      []Backend
	rocmPath      string
	amdsmiPath    string // "": the first of amdsmi.DefaultLibraries that loads
	sysfsRoot     string
	sysfs         fs.FS // nil: os.DirFS(sysfsRoot)
	amdPCIe       bool
	resolver      Resolver

	dcgmPath      string  // "": the first of dcgm.DefaultLibraries found
	dcgmEngine    *string // nil: look for nv-hostengine at dcgmProbe
	dcgmProbe     dcgmProbe
	rdcPath       string // "": the first of rdc.DefaultLibraries found
	levelZeroPath string
	tpuPorts      []int // nil: the workloads' TPU_RUNTIME_METRICS_PORTS, else DefaultTPUMetricsPort
	tpuHost       string
	tpuTimeout    time.Duration

	now func() time.Time // the clock of rates (power from energy, fdinfo's ns); a test seam
	// perfOpener opens the Intel PMUs' counters: the kernel's, or a
	// test's.
	perfOpener perfevent.Opener
}

func newConfig(opts []Option) (config, error) {
	c := config{
		interval:      DefaultInterval,
		nvmlPath:      DefaultNVMLLibrary,
		procRoot:      procfs.DefaultRoot,
		maxProcesses:  DefaultMaxProcesses,
		rocmPath:      DefaultROCmSMILibrary,
		levelZeroPath: DefaultLevelZeroLibrary,
		sysfsRoot:     DefaultSysfsRoot,
		dcgmProbe:     defaultDCGMProbe,
		tpuHost:       DefaultTPUMetricsHost,
		tpuTimeout:    DefaultTPUTimeout,
		now:           time.Now,
		perfOpener:    perfevent.KernelOpener{},
	}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if c.backends == nil {
		c.backends = allBackends
		if c.nvml != nil {
			// An injected NVML is a test of the NVIDIA code paths: the
			// host's AMD GPUs stay out unless WithBackends asks for them.
			c.backends = []Backend{BackendNVML}
		}
	}
	if c.sysfs == nil {
		c.sysfs = os.DirFS(c.sysfsRoot)
	}
	if c.meterProvider == nil {
		c.meterProvider = otel.GetMeterProvider()
	}
	if c.interval <= 0 {
		return c, fmt.Errorf("gpu: WithInterval: poll interval must be positive, got %v", c.interval)
	}
	if c.maxProcesses < 1 {
		return c, fmt.Errorf("gpu: WithMaxProcesses: process cap must be at least 1, got %d", c.maxProcesses)
	}
	if c.nvmlPath == "" {
		return c, errors.New("gpu: WithNVMLLibraryPath: NVML library path is empty")
	}
	if c.levelZeroPath == "" {
		return c, errors.New("gpu: WithLevelZeroLibraryPath: Level Zero library path is empty")
	}
	if c.rocmPath == "" {
		return c, errors.New("gpu: WithROCmSMILibraryPath: ROCm SMI library path is empty")
	}
	if c.sysfsRoot == "" {
		return c, errors.New("gpu: WithSysfsRoot: sysfs root is empty")
	}
	if c.procRoot == "" {
		return c, errors.New("gpu: WithProcRoot: procfs root is empty")
	}
	if len(c.backends) == 0 {
		return c, errors.New("gpu: WithBackends: no backend selected")
	}
	for _, p := range c.tpuPorts {
		if p < 1 || p > 65535 {
			return c, fmt.Errorf("gpu: WithTPUMetricsPorts: a port must be 1 to 65535, got %d", p)
		}
	}
	if c.tpuHost == "" {
		return c, errors.New("gpu: WithTPUMetricsHost: host is empty")
	}
	if c.tpuTimeout <= 0 {
		return c, fmt.Errorf("gpu: WithTPUTimeout: the timeout must be positive, got %v", c.tpuTimeout)
	}

	for i, b := range c.backends {
		if !slices.Contains(allBackends, b) {
			return c, fmt.Errorf("gpu: WithBackends: unknown backend %q (known: %v)", b, allBackends)
		}
		if slices.Contains(c.backends[:i], b) {
			return c, fmt.Errorf("gpu: WithBackends: backend %q selected twice", b)
		}
	}
	// New tries them in its own order, whatever the order given.
	c.backends = slices.DeleteFunc(slices.Clone(allBackends), func(b Backend) bool { return !slices.Contains(c.backends, b) })
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
// Interface. lib must implement Extensions().LookupSymbol. New then tries
// NVML alone, unless WithBackends names other backends too.
func WithNVML(lib nvml.Interface) Option {
	return optionFunc(func(c *config) { c.nvml = lib })
}

// WithBackends selects the backends New tries; the default is all of
// them, in the order BackendNVML, BackendDCGM, BackendAMDSMI,
// BackendROCmSMI, BackendAMDSysfs, BackendRDC, BackendLevelZero,
// BackendIntelSysfs, BackendTPU (which New
// keeps whatever the order given). With WithNVML, the default is
// BackendNVML alone.
func WithBackends(b ...Backend) Option {
	return optionFunc(func(c *config) { c.backends = append([]Backend{}, b...) })
}

// WithROCmSMILibraryPath loads ROCm SMI from path instead of
// DefaultROCmSMILibrary (a ROCm installed under /opt/rocm/lib, say).
func WithROCmSMILibraryPath(path string) Option {
	return optionFunc(func(c *config) { c.rocmPath = path })
}

// WithAMDSMILibraryPath loads AMD SMI from path (an absolute path, say
// /opt/rocm/lib/libamd_smi.so, or a soname). By default the Source tries
// libamd_smi.so, then the versioned sonames libamd_smi.so.26, .25, .24
// and .23, and uses the first that loads.
func WithAMDSMILibraryPath(path string) Option {
	return optionFunc(func(c *config) { c.amdsmiPath = path })
}

// WithSysfsRoot sets where the host's sysfs is mounted, for the amdgpu
// cards, their hwmon sensors and the KFD topology and processes. The
// default is /sys; use e.g. /host/sys where the host's sysfs is mounted
// there. AMD SMI and ROCm SMI themselves always read /sys.
func WithSysfsRoot(path string) Option {
	return optionFunc(func(c *config) { c.sysfsRoot = path })
}

// WithAMDPCIeThroughput makes the ROCm SMI backend read PCIe traffic
// (hw.gpu.io). Off by default: ROCm SMI's rsmi_dev_pci_throughput_get
// makes the kernel count for one second, so each read takes a second per
// GPU, and the figure is an estimate (see docs/metrics.md).
func WithAMDPCIeThroughput(on bool) Option {
	return optionFunc(func(c *config) { c.amdPCIe = on })
}

// WithResolver places the Source's series in pods through r (a
// *podjoin.Resolver): a per-process series gets the process's container
// and pod attributes, asked for when the process first appears on the
// device; a device's series get those of the pod holding it, asked for at
// every poll, only while exactly one pod holds it. The default is none.
func WithResolver(r Resolver) Option {
	return optionFunc(func(c *config) { c.resolver = r })
}

// WithDCGMLibraryPath loads DCGM from path (a path, or a soname) instead
// of the first of libdcgm.so.4, .so.3 and .so.2 found in the loader path
// or under the GPU operator's driver root (/run/nvidia/driver).
func WithDCGMLibraryPath(path string) Option {
	return optionFunc(func(c *config) { c.dcgmPath = path })
}

// WithDCGMHostEngine makes the DCGM backend connect to nv-hostengine at
// addr: host:port (host alone: DCGM's port, 5555), or unix:// and the path
// of its domain socket. "" starts an embedded host engine in the agent's
// process instead, whatever runs on the node. Without this option the
// backend connects to nv-hostengine where one answers on its default
// socket (/tmp/nv-hostengine) or 127.0.0.1:5555, and starts an embedded
// one otherwise.
func WithDCGMHostEngine(addr string) Option {
	return optionFunc(func(c *config) { c.dcgmEngine = &addr })
}

// WithRDCLibraryPath loads RDC's bootstrap library from path instead of
// the first of librdc_bootstrap.so.1, .so and .so.0 found in the loader
// path or /opt/rocm/lib.
func WithRDCLibraryPath(path string) Option {
	return optionFunc(func(c *config) { c.rdcPath = path })
}

// WithLevelZeroLibraryPath loads the Level Zero loader from path (a path,
// or a soname) instead of DefaultLevelZeroLibrary. The loader finds its
// drivers itself (Intel's compute runtime, libze_intel_gpu.so.1; or those
// ZE_ENABLE_ALT_DRIVERS names).
func WithLevelZeroLibraryPath(path string) Option {
	return optionFunc(func(c *config) { c.levelZeroPath = path })
}

// WithTPUMetricsPorts sets the ports of the TPU runtime's metrics service
// to read. Without this option the Source reads the ports the processes
// holding the TPUs publish in their TPU_RUNTIME_METRICS_PORTS
// (comma-separated, as libtpu takes it), and DefaultTPUMetricsPort for a
// process without it, or when it sees none (no workload, or no access to
// the host's /proc). With no port, the TPU backend reads the chips and no
// runtime figures.
func WithTPUMetricsPorts(ports ...int) Option {
	return optionFunc(func(c *config) { c.tpuPorts = append([]int{}, ports...) })
}

// WithTPUMetricsHost sets the host the TPU runtime's metrics service is
// reached at; the default is DefaultTPUMetricsHost, the node itself (TPU
// workloads run in the host's network namespace).
func WithTPUMetricsHost(host string) Option {
	return optionFunc(func(c *config) { c.tpuHost = host })
}

// WithTPUTimeout bounds one scrape of a TPU runtime's metrics service
// (its calls together); the default is DefaultTPUTimeout.
func WithTPUTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.tpuTimeout = d })
}

// withSysfsFS makes the Source read sysfs through fsys, rooted where sysfs
// is mounted: a test seam, for fixtures and injected read errors.
func withSysfsFS(fsys fs.FS) Option {
	return optionFunc(func(c *config) { c.sysfs, c.sysfsRoot = fsys, "(injected sysfs)" })
}

// withClock makes the Source time its rates (power from an energy
// counter, fdinfo's busy nanoseconds) with now: a test seam.
func withClock(now func() time.Time) Option {
	return optionFunc(func(c *config) { c.now = now })
}

// withPerfOpener makes the Source open the Intel PMUs' counters with o: a
// test seam (no GPU PMU here).
func withPerfOpener(o perfevent.Opener) Option {
	return optionFunc(func(c *config) { c.perfOpener = o })
}
