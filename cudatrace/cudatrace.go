package cudatrace

import (
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/xpuscope/xpuscope/internal/gputrace"
	"github.com/xpuscope/xpuscope/occupancy"
)

// The Source, its options and its reports are those of the tracer cudatrace
// shares with the other GPU runtime tracers (internal/gputrace).
type (
	// Source traces the CUDA runtime and driver APIs of every process
	// on the host. Create it with New.
	Source = gputrace.Source
	// Status says what a Source is attached to.
	Status = gputrace.Status
	// Allocation is an outstanding device allocation.
	Allocation = gputrace.Allocation
	// Option configures a Source.
	Option = gputrace.Option
	// Resolver places traced processes in their containers and pods,
	// for WithResolver. *podjoin.Resolver is one.
	Resolver = gputrace.Resolver
)

// ScopeName is the instrumentation scope of the Source's meter and tracer.
const ScopeName = "github.com/xpuscope/xpuscope/cudatrace"

// Target names, as Status and xpuscope.cuda.attached_files report them.
const (
	TargetRuntime = gputrace.TargetRuntime
	TargetDriver  = gputrace.TargetDriver
)

// Defaults.
const (
	DefaultMaxKernelNames = gputrace.DefaultMaxKernelNames
	DefaultMaxProcesses   = gputrace.DefaultMaxProcesses
	DefaultSpanRate       = gputrace.DefaultSpanRate // spans per second per process
	DefaultPollInterval   = gputrace.DefaultPollInterval
	DefaultRingBytes      = gputrace.DefaultRingBytes
	DefaultRescan         = gputrace.DefaultRescan
)

// New loads the probes, attaches them to every CUDA runtime and driver
// library mapped on the host (and to every new copy as it is loaded), and
// starts aggregating. Missing privilege (CAP_BPF, CAP_PERFMON, or root) or kernel
// support is xpuscope.ErrUnavailable; finding no process using the library
// is not an error, since a process can start later. A BPF object the
// kernel rejects is a fault.
func New(opts ...Option) (*Source, error) { return gputrace.New(gputrace.CUDA, opts...) }

// WithMeterProvider sets the MeterProvider; the default is
// otel.GetMeterProvider().
func WithMeterProvider(mp metric.MeterProvider) Option { return gputrace.WithMeterProvider(mp) }

// WithTracerProvider sets the TracerProvider for the sampled spans; the
// default is otel.GetTracerProvider().
func WithTracerProvider(tp trace.TracerProvider) Option { return gputrace.WithTracerProvider(tp) }

// WithProcRoot sets where the host's procfs is mounted (default /proc).
func WithProcRoot(path string) Option { return gputrace.WithProcRoot(path) }

// WithMaxKernelNames caps the distinct cuda.kernel.name values per
// process; later kernels count under semconv.Other.
func WithMaxKernelNames(n int) Option { return gputrace.WithMaxKernelNames(n) }

// WithMaxProcesses caps the processes tracked at once; events of others
// are dropped from metrics (the kernel-side call counts keep them).
func WithMaxProcesses(n int) Option { return gputrace.WithMaxProcesses(n) }

// WithSpanRate caps the spans emitted per second per process (a token
// bucket with a burst of one second's worth); 0 turns spans off. Metrics
// see every event whatever the cap.
func WithSpanRate(perSecond float64) Option { return gputrace.WithSpanRate(perSecond) }

// WithPollInterval sets how often the reader drains the ring buffer when
// it has not been woken (it is woken once the buffer is a quarter full).
// After a poll that finds nothing the wait doubles, up to a second, until
// records come again.
func WithPollInterval(d time.Duration) Option { return gputrace.WithPollInterval(d) }

// WithRingBufferSize sets the ring buffer's size in bytes, a power of two.
func WithRingBufferSize(n uint32) Option { return gputrace.WithRingBufferSize(n) }

// WithRescanInterval sets the period of the fallback full scan for new
// libraries (exec and dlopen are reacted to at once).
func WithRescanInterval(d time.Duration) Option { return gputrace.WithRescanInterval(d) }

// WithDeviceCapacity sets the capacity of every device for the occupancy
// model (SMs or compute units × maximum resident threads per SM or CU)
// and where it came from (occupancy.CapacityConfigured for a user's
// setting). One capacity serves every device. The default is
// occupancy.DefaultCapacity, reported with gpu.capacity.source=default.
func WithDeviceCapacity(c occupancy.Capacity, src occupancy.CapacitySource) Option {
	return gputrace.WithDeviceCapacity(c, src)
}

// WithResolver places the traced processes in their containers and pods
// through r (a *podjoin.Resolver), asked once per process, when the Source
// first sees it: its series and spans get the attributes r gives, and its
// spans are children of the span context r gives, when valid. The default
// is none.
func WithResolver(r Resolver) Option { return gputrace.WithResolver(r) }
