package podjoin

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope/internal/procfs"
)

// Defaults.
const (
	// DefaultKubeletSocket is where the kubelet serves the PodResources
	// API.
	DefaultKubeletSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"
	// DefaultLogRoot is the directory holding the kubelet's pods and
	// containers log directories.
	DefaultLogRoot   = "/var/log"
	DefaultRefresh   = 10 * time.Second
	DefaultCacheSize = 4096
	DefaultTTL       = 5 * time.Minute
)

type config struct {
	meterProvider metric.MeterProvider
	procRoot      string
	kubeletSocket string
	logRoot       string
	refresh       time.Duration
	cacheSize     int
	ttl           time.Duration
}

func newConfig(opts []Option) (config, error) {
	c := config{
		procRoot:      procfs.DefaultRoot,
		kubeletSocket: DefaultKubeletSocket,
		logRoot:       DefaultLogRoot,
		refresh:       DefaultRefresh,
		cacheSize:     DefaultCacheSize,
		ttl:           DefaultTTL,
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
	case c.procRoot == "":
		return c, errors.New("podjoin: WithProcRoot: procfs root is empty")
	case c.kubeletSocket != "" && !filepath.IsAbs(c.kubeletSocket):
		return c, fmt.Errorf("podjoin: WithKubeletSocket: kubelet socket %q is not an absolute path", c.kubeletSocket)
	case c.refresh <= 0:
		return c, fmt.Errorf("podjoin: WithRefresh: refresh interval must be positive, got %v", c.refresh)
	case c.cacheSize < 1:
		return c, fmt.Errorf("podjoin: WithCacheSize: cache size must be at least 1, got %d", c.cacheSize)
	case c.ttl <= 0:
		return c, fmt.Errorf("podjoin: WithTTL: TTL must be positive, got %v", c.ttl)
	}
	return c, nil
}

// Option configures a Resolver.
// An option given a value out of its range makes New fail; one left
// out keeps its default.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithMeterProvider sets the MeterProvider the Resolver registers its
// self-metrics with. The default is otel.GetMeterProvider().
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) { c.meterProvider = mp })
}

// WithProcRoot sets where the host's procfs is mounted. The default is
// /proc, right for an agent with hostPID; use e.g. /host/proc where the
// host's procfs is mounted there. Cgroup paths are read as the agent's
// cgroup namespace shows them; the host's (hostCgroupns, or a v1 host)
// shows them whole.
func WithProcRoot(path string) Option {
	return optionFunc(func(c *config) { c.procRoot = path })
}

// WithKubeletSocket sets the unix socket of the kubelet's PodResources
// API. The default is DefaultKubeletSocket; "" turns the kubelet client
// off (a host without Kubernetes). A socket that is missing or refuses is
// not an error: the Resolver runs without device owners and retries.
func WithKubeletSocket(path string) Option {
	return optionFunc(func(c *config) { c.kubeletSocket = path })
}

// WithLogRoot sets the directory whose pods and containers subdirectories
// the kubelet writes container logs to; their names give the pod name,
// namespace and container name of a pod UID or container id. The default
// is DefaultLogRoot (mount the host's /var/log read-only into the
// agent); "" turns this off, leaving processes with their pod UID and
// container id only.
func WithLogRoot(path string) Option {
	return optionFunc(func(c *config) { c.logRoot = path })
}

// WithRefresh sets how often the Resolver asks the kubelet for device
// allocations, rescans the log directories and drops the cache entries of
// processes that exited. The default is DefaultRefresh.
func WithRefresh(d time.Duration) Option {
	return optionFunc(func(c *config) { c.refresh = d })
}

// WithCacheSize caps the processes the Resolver remembers; past it the
// least recently resolved is dropped. The default is DefaultCacheSize.
func WithCacheSize(n int) Option {
	return optionFunc(func(c *config) { c.cacheSize = n })
}

// WithTTL sets how long a process's entry is served before it is read
// again, and how long the last device allocations are kept while the
// kubelet does not answer. The default is DefaultTTL.
func WithTTL(d time.Duration) Option {
	return optionFunc(func(c *config) { c.ttl = d })
}
