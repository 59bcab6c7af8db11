package gputrace

import (
	"errors"
	"fmt"
	"time"

	"github.com/cilium/ebpf"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/bpfsource"
	"github.com/xpuscope/xpuscope/internal/gputracebpf"
	"github.com/xpuscope/xpuscope/internal/procfs"
	"github.com/xpuscope/xpuscope/occupancy"
)

// Defaults.
const (
	DefaultMaxKernelNames = 256
	// DefaultMaxProcesses bounds the series of the processes that have
	// their own: ~30 each for a process calling every traced runtime
	// function (cudaprog's RuntimeLaunch), 18 of them cuda.api.calls, so
	// that the OpenTelemetry SDK's default cardinality limit (2,000
	// attribute sets an instrument) holds with room to spare. A process
	// past it costs nothing that grows.
	DefaultMaxProcesses = 64
	DefaultSpanRate     = 100 // spans per second per process
	DefaultPollInterval = 50 * time.Millisecond
	// DefaultRingBytes is split between the CPUs' ring buffers (lanes,
	// up to 16): on 2 CPUs each holds 26,000 records of 80 bytes, and at
	// the 50,000 launches a second of a busy thread the forced wakeup
	// comes at 130 ms and its lane is full at 520 ms (at 16 lanes, 16 and
	// 65 ms), while the reader drains some five million records a second
	// with the SDK and a Producer, one million without the Producer
	// (BenchmarkDecodeAggregate). The lanes are mapped once and cost
	// their size in RSS once touched: as much as the single 2 MiB BPF
	// ring buffer they replace, which was mapped twice.
	DefaultRingBytes = 4 << 20
	DefaultRescan    = 30 * time.Second
)

type config struct {
	meterProvider  metric.MeterProvider
	tracerProvider trace.TracerProvider
	procfs         procfs.FS
	maxKernelNames int
	maxProcesses   int
	spanRate       float64
	pollInterval   time.Duration
	ringBytes      uint32
	rescan         time.Duration
	loadHold       bool
	// capacity of every device, for the occupancy model, and its source.
	capacity       occupancy.Capacity
	capacitySource occupancy.CapacitySource
	resolver       xpuscope.ProcessResolver
	producer       *Producer
	exitGrace      time.Duration

	// Test seams (unexported options).
	wakeupBytes uint64                     // per lane; 0: a quarter of a lane
	eventHook   func(e *gputracebpf.Event) // sees every decoded event
	noMulti     bool                       // perf-event uprobes even where uprobe_multi works
	editObject  func(*ebpf.CollectionSpec) // tests: change the BPF object before it is loaded
}

func (c *config) spanBurst() float64 { return max(1, c.spanRate) }

func newConfig(opts []Option) (config, error) {
	c := config{
		procfs:         procfs.FS{Root: procfs.DefaultRoot},
		maxKernelNames: DefaultMaxKernelNames,
		maxProcesses:   DefaultMaxProcesses,
		spanRate:       DefaultSpanRate,
		pollInterval:   DefaultPollInterval,
		ringBytes:      DefaultRingBytes,
		rescan:         DefaultRescan,
		loadHold:       true,
		capacity:       occupancy.DefaultCapacity,
		capacitySource: occupancy.CapacityDefault,
	}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if c.meterProvider == nil {
		c.meterProvider = otel.GetMeterProvider()
	}
	if c.tracerProvider == nil {
		c.tracerProvider = otel.GetTracerProvider()
	}
	switch {
	case c.procfs.Root == "":
		return c, errors.New("WithProcRoot: the procfs root is empty")
	case c.maxKernelNames < 1:
		return c, fmt.Errorf("WithMaxKernelNames: the cap must be at least 1, got %d", c.maxKernelNames)
	case c.maxProcesses < 1:
		return c, fmt.Errorf("WithMaxProcesses: the cap must be at least 1, got %d", c.maxProcesses)
	case c.spanRate < 0:
		return c, fmt.Errorf("WithSpanRate: the rate must not be negative, got %v", c.spanRate)
	case c.pollInterval <= 0:
		return c, fmt.Errorf("WithPollInterval: the interval must be positive, got %v", c.pollInterval)
	case c.rescan <= 0:
		return c, fmt.Errorf("WithRescanInterval: the interval must be positive, got %v", c.rescan)
	case c.exitGrace < 0:
		return c, fmt.Errorf("WithExitGrace: the grace must not be negative, got %v", c.exitGrace)
	case c.capacity.SMs < 1 || c.capacity.ThreadsPerSM < 1:
		return c, fmt.Errorf("WithDeviceCapacity: the capacity must be positive, got %d SMs × %d threads", c.capacity.SMs, c.capacity.ThreadsPerSM)
	}
	if err := bpfsource.CheckRingBytes(c.ringBytes); err != nil {
		return c, fmt.Errorf("WithRingBufferSize: %w", err)
	}
	return c, nil
}

// Option configures a Source.
// An option given a value out of its range makes New fail; one left
// out keeps its default.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithMeterProvider sets the MeterProvider; the default is
// otel.GetMeterProvider().
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) { c.meterProvider = mp })
}

// WithTracerProvider sets the TracerProvider for the sampled spans; the
// default is otel.GetTracerProvider().
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) { c.tracerProvider = tp })
}

// WithProcRoot sets where the host's procfs is mounted (default /proc).
func WithProcRoot(path string) Option {
	return optionFunc(func(c *config) { c.procfs = procfs.FS{Root: path} })
}

// WithMaxKernelNames caps the distinct cuda.kernel.name values per
// process; later kernels count under semconv.Other.
func WithMaxKernelNames(n int) Option {
	return optionFunc(func(c *config) { c.maxKernelNames = n })
}

// WithMaxProcesses caps the processes that have series of their own
// (exited processes count until their series go, WithExitGrace). Past the
// cap a process is folded into the series with
// process.executable.name=semconv.Other and no process.pid or pod, for
// its life: its launches count under cuda.kernel.name=semconv.Other, its
// histograms are the fold's, its spans share one rate cap, and each such
// process counts once in xpuscope.cuda.process.overflow.
func WithMaxProcesses(n int) Option {
	return optionFunc(func(c *config) { c.maxProcesses = n })
}

// WithExitGrace sets how long, at least, the series of an exited process
// stay once its last records are read (two seconds after the exit is
// seen). They go at the first housekeeping (every second) after that at
// which a collection has reported their last values and the grace has
// passed; after a minute without a collection, they go anyway. The
// default, 0, retires them after the first collection: give a reader that
// collects less often than another (an OTLP exporter beside a Prometheus
// scrape) its interval, so that it too collects their last values.
func WithExitGrace(d time.Duration) Option {
	return optionFunc(func(c *config) { c.exitGrace = d })
}

// WithProducer makes the Source keep its histograms itself, for p to
// report to the readers p is registered on, rather than record each value
// into the MeterProvider's histograms (~200 ns a record in SDK v1.47, four
// per launch). Views of the MeterProvider do not apply to them, and they
// are cumulative whatever a reader's temporality. nil, the default,
// records into the MeterProvider.
func WithProducer(p *Producer) Option {
	return optionFunc(func(c *config) { c.producer = p })
}

// WithSpanRate caps the spans emitted per second per process (a token
// bucket with a burst of one second's worth); 0 turns spans off. Metrics
// see every event whatever the cap.
func WithSpanRate(perSecond float64) Option {
	return optionFunc(func(c *config) { c.spanRate = perSecond })
}

// WithPollInterval sets how often the reader drains the ring buffers when
// it has not been woken (it is woken once one is a quarter full). After a
// poll that finds nothing the wait doubles, up to a second, until records
// come again.
func WithPollInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.pollInterval = d })
}

// WithRingBufferSize sets the size in bytes of the ring buffers the
// records come in, all of them together, a power of two: one per CPU (up
// to 16, which CPUs past them share), each an even share of at least 4096
// bytes.
func WithRingBufferSize(n uint32) Option {
	return optionFunc(func(c *config) { c.ringBytes = n })
}

// WithRescanInterval sets the period of the fallback full scan for new
// CUDA libraries (exec and dlopen are reacted to at once).
func WithRescanInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.rescan = d })
}

// WithLoadHold says whether a process that maps a copy of the runtime the
// Source has not probed yet (or a new file while it uses a probed one, or
// runs a program not classified yet where a Target is InPrograms) is
// stopped until the probes are live (default true): its first calls into
// it are then seen, and its kernels named after it exits at once. Off, the
// process runs on, and its calls before the probes are live (attaching
// takes ~10 ms) are lost, counted in xpuscope.uprobe.attached_late. A
// hold lasts 500 ms at most, comes once per new file on the host, and
// never stops a process under ptrace, one with a controlling terminal, or
// one stopped already (docs/cudatrace.md says what it costs).
func WithLoadHold(on bool) Option {
	return optionFunc(func(c *config) { c.loadHold = on })
}

// WithDeviceCapacity sets the capacity of every device for the occupancy
// model (SM count × maximum resident threads per SM) and where it came
// from: occupancy.CapacityConfigured for a user's setting,
// occupancy.CapacityNVML when read from the GPUs (package gpu's
// Device.SMs and ThreadsPerSM). The default is occupancy.DefaultCapacity
// (an H100 SXM5: 132 × 2048), reported with gpu.capacity.source=default.
// One capacity serves every device: the CUDA device ordinal a process sees
// cannot be mapped to an NVML device from outside it.
func WithDeviceCapacity(c occupancy.Capacity, src occupancy.CapacitySource) Option {
	return optionFunc(func(cfg *config) { cfg.capacity, cfg.capacitySource = c, src })
}

// WithResolver places the traced processes in their containers and pods
// through r (a *podjoin.Resolver), asked once per process, when the Source
// first sees it: its series and spans get the attributes r gives, and its
// spans are children of the span context r gives, when valid (a workload
// started with TRACEPARENT). The default is none.
func WithResolver(r xpuscope.ProcessResolver) Option {
	return optionFunc(func(c *config) { c.resolver = r })
}

// withWakeupBytes sets the unread bytes in a lane past which BPF wakes
// the reader.
func withWakeupBytes(n uint64) Option {
	return optionFunc(func(c *config) { c.wakeupBytes = n })
}

// withEventHook calls f with every decoded event, before it is aggregated.
func withEventHook(f func(e *gputracebpf.Event)) Option {
	return optionFunc(func(c *config) { c.eventHook = f })
}

// withoutUprobeMulti attaches one perf-event uprobe per symbol, as on
// kernels before 6.6, even where uprobe_multi links work.
func withoutUprobeMulti() Option {
	return optionFunc(func(c *config) { c.noMulti = true })
}

// withObjectEdit changes the BPF object before it is loaded: a test makes
// one the verifier rejects.
func withObjectEdit(f func(*ebpf.CollectionSpec)) Option {
	return optionFunc(func(c *config) { c.editObject = f })
}
