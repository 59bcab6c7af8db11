package node

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/genai"
	"github.com/xpuscope/xpuscope/internal/bpfsource"
	"github.com/xpuscope/xpuscope/internal/procfs"
)

// Defaults of the options.
const (
	// DefaultMaxEndpoints caps the server endpoints with series of their
	// own.
	DefaultMaxEndpoints = 64
	// DefaultMaxProcesses caps the processes whose series carry their
	// pod and process attributes.
	DefaultMaxProcesses = 256
	// DefaultMaxFiles caps the model files with series of their own.
	DefaultMaxFiles = 64
	// DefaultScanInterval is how often the processes' mappings and
	// descriptors are looked at for model files opened before the
	// Source started, or opened while the open syscalls are not watched.
	DefaultScanInterval = 30 * time.Second
	// DefaultPollInterval is how often the ring buffer is read while
	// records come.
	DefaultPollInterval = 100 * time.Millisecond
	// DefaultRingBytes sizes the ring buffer: 3,000 records.
	DefaultRingBytes = 256 << 10
)

// BurstGap is the pause in a process's reads and faults of a model file
// that ends a load (xpuscope.model.file.load.duration).
const BurstGap = 2 * time.Second

type config struct {
	meterProvider  metric.MeterProvider
	tracerProvider trace.TracerProvider
	resolver       xpuscope.ProcessResolver
	logger         *slog.Logger

	tcp, pageCache, fileSyscalls bool
	serverPorts                  []uint16
	modelServers                 func(pid int) bool
	procRoot                     string
	cgroupRoot                   string
	maxEndpoints, maxProcesses   int
	maxFiles                     int
	scanInterval, pollInterval   time.Duration
	ringBytes                    uint32
	burstGap                     time.Duration // tests: shorter loads
}

func newConfig(opts []Option) (config, error) {
	c := config{
		tcp: true, pageCache: true, fileSyscalls: true,
		serverPorts:  genai.DefaultPlaintextPorts(),
		procRoot:     procfs.DefaultRoot,
		maxEndpoints: DefaultMaxEndpoints,
		maxProcesses: DefaultMaxProcesses,
		maxFiles:     DefaultMaxFiles,
		scanInterval: DefaultScanInterval,
		pollInterval: DefaultPollInterval,
		ringBytes:    DefaultRingBytes,
		burstGap:     BurstGap,
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
	if slices.Contains(c.serverPorts, 0) {
		return c, errors.New("node: WithServerPorts: port 0")
	}
	switch {
	case c.procRoot == "":
		return c, errors.New("node: WithProcRoot: the procfs root is empty")
	case c.maxEndpoints < 1:
		return c, fmt.Errorf("node: WithMaxEndpoints: the cap must be at least 1, got %d", c.maxEndpoints)
	case c.maxProcesses < 1:
		return c, fmt.Errorf("node: WithMaxProcesses: the cap must be at least 1, got %d", c.maxProcesses)
	case c.maxFiles < 1:
		return c, fmt.Errorf("node: WithMaxFiles: the cap must be at least 1, got %d", c.maxFiles)
	case c.scanInterval < time.Second:
		return c, fmt.Errorf("node: WithScanInterval: the interval must be at least 1s, got %v", c.scanInterval)
	case c.pollInterval <= 0:
		return c, fmt.Errorf("node: WithPollInterval: the interval must be positive, got %v", c.pollInterval)
	}
	if err := bpfsource.CheckRingBytes(c.ringBytes); err != nil {
		return c, fmt.Errorf("node: WithRingBufferSize: %w", err)
	}
	return c, nil
}

// Option configures a Source. An option left out keeps its default; one
// given a value out of its range makes New fail, naming it. A nil Option
// is ignored.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithMeterProvider sets the MeterProvider the Source registers its
// instruments with. The default is otel.GetMeterProvider().
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) { c.meterProvider = mp })
}

// WithTracerProvider sets the TracerProvider of the reload spans. The
// default is otel.GetTracerProvider().
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) { c.tracerProvider = tp })
}

// WithResolver places the sockets' owners and the model files' processes
// in their pods through r (a *podjoin.Resolver), asked once per process,
// and parents a reload span on the process's TRACEPARENT. The default is
// none.
func WithResolver(r xpuscope.ProcessResolver) Option {
	return optionFunc(func(c *config) { c.resolver = r })
}

// WithLogger logs each model-file reload on l, at level Warn. The
// default, nil, logs nothing.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) { c.logger = l })
}

// WithTCP says whether TCP retransmits and resets are counted (default
// true): programs on the tcp_retransmit_skb, tcp_send_reset,
// tcp_receive_reset and inet_sock_set_state tracepoints, which run per
// retransmit, reset and socket state change.
func WithTCP(on bool) Option {
	return optionFunc(func(c *config) { c.tcp = on })
}

// WithPageCache says whether the page cache, page faults and readahead of
// model files are counted (default true): programs on the filemap and
// readahead tracepoints, which look the inode up among the watched files
// and return for any other.
func WithPageCache(on bool) Option {
	return optionFunc(func(c *config) { c.pageCache = on })
}

// WithFileSyscalls says whether the opens of model files and the reads of
// watched files are seen (default true): programs on the raw syscall
// tracepoints sys_enter and sys_exit, which run on every syscall of the
// node and return at once for any but the opens and reads. Off, model
// files are found only by the scans of the processes' mappings and
// descriptors (WithScanInterval), their loads timed from the first fault
// seen, and xpuscope.model.file.read is not reported. Where the kernel
// has x86's page_fault_user and WithPageCache is on, sys_enter and
// sys_exit run anyway, for the mmap and munmap calls that faults are
// matched by.
func WithFileSyscalls(on bool) Option {
	return optionFunc(func(c *config) { c.fileSyscalls = on })
}

// WithServerPorts sets the ports of model servers and local LLM endpoints
// (default genai.DefaultPlaintextPorts()): a connection to or from one
// has its retransmits and resets counted by its server address and port.
// Those of connections a caller named through Source.CallRetransmits are
// too, under that name. None leaves only those.
func WithServerPorts(ports ...uint16) Option {
	ports = slices.Clone(ports)
	return optionFunc(func(c *config) { c.serverPorts = ports })
}

// WithModelServers names the model servers' connections by their server
// address and port whatever the port: serves(pid) says whether process
// pid is a model server's (give it (*serving.Source).Serves, of package
// genai/serving). A connection a listener of such a process accepted has
// its server end counted by address and port, and so do the other
// connections to that end. It is asked from the Source's reader, once per
// new server end, and must only read. The default, nil, names the
// connections of WithServerPorts' ports only.
func WithModelServers(serves func(pid int) bool) Option {
	return optionFunc(func(c *config) { c.modelServers = serves })
}

// WithCgroupRoot sets where the host's cgroup v2 hierarchy is mounted
// (default: the first cgroup2 mount of the Source's mount table, as
// /sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid host): with
// WithResolver, a socket whose owner the kernel side did not see begin
// is put in its cgroup's pod through a process of the cgroup.
func WithCgroupRoot(path string) Option {
	return optionFunc(func(c *config) { c.cgroupRoot = path })
}

// WithProcRoot sets where the host's procfs is mounted (default /proc).
func WithProcRoot(path string) Option {
	return optionFunc(func(c *config) { c.procRoot = path })
}

// WithMaxEndpoints caps the server endpoints with series of their own, at
// least 1 (default DefaultMaxEndpoints); past it, a connection's events
// are counted under server.address=_OTHER.
func WithMaxEndpoints(n int) Option {
	return optionFunc(func(c *config) { c.maxEndpoints = n })
}

// WithMaxProcesses caps the processes whose series carry their pod and
// process attributes, at least 1 (default DefaultMaxProcesses); the
// series of the others carry none, and each is counted once.
func WithMaxProcesses(n int) Option {
	return optionFunc(func(c *config) { c.maxProcesses = n })
}

// WithMaxFiles caps the model files with series of their own, at least 1
// (default DefaultMaxFiles); past it, a file's series fold into one named
// _OTHER. The kernel side watches up to 1024 files whatever the cap.
func WithMaxFiles(n int) Option {
	return optionFunc(func(c *config) { c.maxFiles = n })
}

// WithScanInterval sets how often the processes' mappings and descriptors
// are read for model files the open syscalls did not show, at least 1 s
// (default DefaultScanInterval).
func WithScanInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.scanInterval = d })
}

// WithPollInterval sets how often the ring buffer is read while records
// come (default DefaultPollInterval); after a read that finds none the
// wait doubles, up to a second.
func WithPollInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.pollInterval = d })
}

// WithRingBufferSize sets the ring buffer's size in bytes, a power of two
// of at least 4096 (default DefaultRingBytes).
func WithRingBufferSize(n uint32) Option {
	return optionFunc(func(c *config) { c.ringBytes = n })
}

// withBurstGap sets the pause that ends a load (tests).
func withBurstGap(d time.Duration) Option {
	return optionFunc(func(c *config) { c.burstGap = d })
}
