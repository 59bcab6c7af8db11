package serving

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/procfs"
)

// Defaults of the options.
const (
	// DefaultInterval is how often the Source looks for servers and
	// scrapes them.
	DefaultInterval = 10 * time.Second
	// DefaultTimeout bounds one scrape: connecting, the answer and its
	// body.
	DefaultTimeout = 2 * time.Second
	// DefaultBodyLimit caps an answer's body: a vLLM server's is about
	// 30 KiB, a Triton's with a hundred models a few hundred.
	DefaultBodyLimit = 4 << 20
	// DefaultMaxServers caps the servers read on a node.
	DefaultMaxServers = 64
	// DefaultMaxModels caps the models of one server with series of
	// their own.
	DefaultMaxModels = 16
	// DefaultMaxSeries caps the series of one server.
	DefaultMaxSeries = 512
)

// Bounds of the options.
const (
	minInterval  = 100 * time.Millisecond
	minBodyLimit = 4 << 10
	maxBodyLimit = 64 << 20
)

type config struct {
	meterProvider metric.MeterProvider
	interval      time.Duration
	timeout       time.Duration
	bodyLimit     int
	maxServers    int
	maxModels     int
	maxSeries     int
	procRoot      string
	resolver      xpuscope.ProcessResolver
	producer      *Producer
}

func newConfig(opts []Option) (config, error) {
	c := config{
		interval:   DefaultInterval,
		timeout:    DefaultTimeout,
		bodyLimit:  DefaultBodyLimit,
		maxServers: DefaultMaxServers,
		maxModels:  DefaultMaxModels,
		maxSeries:  DefaultMaxSeries,
		procRoot:   procfs.DefaultRoot,
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
	case c.interval < minInterval:
		return c, fmt.Errorf("serving: WithInterval: the interval must be at least %v, got %v", minInterval, c.interval)
	case c.timeout <= 0:
		return c, fmt.Errorf("serving: WithTimeout: the timeout must be positive, got %v", c.timeout)
	case c.bodyLimit < minBodyLimit || c.bodyLimit > maxBodyLimit:
		return c, fmt.Errorf("serving: WithBodyLimit: the limit must be %d to %d bytes, got %d", minBodyLimit, maxBodyLimit, c.bodyLimit)
	case c.maxServers < 1:
		return c, fmt.Errorf("serving: WithMaxServers: the cap must be at least 1, got %d", c.maxServers)
	case c.maxModels < 1:
		return c, fmt.Errorf("serving: WithMaxModels: the cap must be at least 1, got %d", c.maxModels)
	case c.maxSeries < 1:
		return c, fmt.Errorf("serving: WithMaxSeries: the cap must be at least 1, got %d", c.maxSeries)
	case c.procRoot == "":
		return c, errors.New("serving: WithProcRoot: the procfs root is empty")
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

// WithInterval sets how often the Source looks for servers among the
// processes and scrapes those it found: 100 ms at least. The default is
// DefaultInterval. A server that fails is scraped less often (a backoff
// of up to 16 intervals).
func WithInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.interval = d })
}

// WithTimeout bounds one scrape, from connecting to the end of the body;
// it must be positive. The default is DefaultTimeout. Scrapes run side by
// side, so a server that hangs holds up none of the others.
func WithTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.timeout = d })
}

// WithBodyLimit caps the body of an answer, 4096 to 67108864 bytes; a
// larger one is not parsed, and counted (error.type body_too_large). The
// default is DefaultBodyLimit.
func WithBodyLimit(n int) Option {
	return optionFunc(func(c *config) { c.bodyLimit = n })
}

// WithMaxServers caps the servers the Source reads, at least 1; those
// found past it are counted (xpuscope.genai.serving.overflow, reason
// servers) and not read. The default is DefaultMaxServers.
func WithMaxServers(n int) Option {
	return optionFunc(func(c *config) { c.maxServers = n })
}

// WithMaxModels caps the models of one server that have series of their
// own, at least 1: the series of the models past it (a Triton with a
// large model repository) fold into one whose gen_ai.request.model is
// semconv.Other, and are counted. The default is DefaultMaxModels.
func WithMaxModels(n int) Option {
	return optionFunc(func(c *config) { c.maxModels = n })
}

// WithMaxSeries caps the series of one server, at least 1; the series
// past it are dropped, and counted. The default is DefaultMaxSeries.
func WithMaxSeries(n int) Option {
	return optionFunc(func(c *config) { c.maxSeries = n })
}

// WithProcRoot sets where the host's procfs is mounted. The default is
// /proc, right for an agent with hostPID; use e.g. /host/proc where the
// host's procfs is mounted there.
func WithProcRoot(path string) Option {
	return optionFunc(func(c *config) { c.procRoot = path })
}

// WithResolver places each server's series in the pod of the process
// that holds its endpoint, through r (a *podjoin.Resolver): asked once
// per server, when it is found, and told to Forget its processes when it
// goes. The default is none.
func WithResolver(r xpuscope.ProcessResolver) Option {
	return optionFunc(func(c *config) { c.resolver = r })
}

// WithProducer makes p report the servers' histograms (gen_ai.server.*
// and xpuscope.genai.server.queue.duration) as each server keeps them:
// its bucket bounds, its counts, its sum. They come already aggregated,
// so an SDK histogram instrument, whose bounds are fixed and which
// records one value at a time, cannot carry them without re-bucketing:
// without a Producer they are not reported, and Status says so. nil, the
// default, is no Producer.
func WithProducer(p *Producer) Option {
	return optionFunc(func(c *config) { c.producer = p })
}
