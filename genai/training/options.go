package training

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
	// DefaultInterval is how often the Source looks at the processes and
	// reads what the jobs wrote.
	DefaultInterval = 10 * time.Second
	// DefaultMaxJobs caps the jobs read on a node.
	DefaultMaxJobs = 64
	// DefaultMaxFiles caps the log files read of one job (an MLflow run
	// has a file per metric).
	DefaultMaxFiles = 64
	// DefaultMaxTags caps the scalar tags of one job exported as
	// training.scalar.
	DefaultMaxTags = 64
	// DefaultReadLimit caps what is read of one file in one interval: a
	// job's backlog is caught up with over several.
	DefaultReadLimit = 8 << 20
)

// Bounds of the options.
const (
	minInterval  = 100 * time.Millisecond
	minReadLimit = 64 << 10
	maxReadLimit = 1 << 30
)

type config struct {
	meterProvider metric.MeterProvider
	interval      time.Duration
	procRoot      string
	resolver      xpuscope.ProcessResolver
	maxJobs       int
	maxFiles      int
	maxTags       int
	readLimit     int64
}

func newConfig(opts []Option) (config, error) {
	c := config{
		interval:  DefaultInterval,
		procRoot:  procfs.DefaultRoot,
		maxJobs:   DefaultMaxJobs,
		maxFiles:  DefaultMaxFiles,
		maxTags:   DefaultMaxTags,
		readLimit: DefaultReadLimit,
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
		return c, fmt.Errorf("training: WithInterval: the interval must be at least %v, got %v", minInterval, c.interval)
	case c.procRoot == "":
		return c, errors.New("training: WithProcRoot: the procfs root is empty")
	case c.maxJobs < 1:
		return c, fmt.Errorf("training: WithMaxJobs: the cap must be at least 1, got %d", c.maxJobs)
	case c.maxFiles < 1:
		return c, fmt.Errorf("training: WithMaxFiles: the cap must be at least 1, got %d", c.maxFiles)
	case c.maxTags < 0:
		return c, fmt.Errorf("training: WithMaxTags: the cap must be 0 or more, got %d", c.maxTags)
	case c.readLimit < minReadLimit || c.readLimit > maxReadLimit:
		return c, fmt.Errorf("training: WithReadLimit: the limit must be %d to %d bytes, got %d", minReadLimit, maxReadLimit, c.readLimit)
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

// WithInterval sets how often the Source looks at the processes and reads
// what the jobs appended: 100 ms at least. The default is
// DefaultInterval.
func WithInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.interval = d })
}

// WithProcRoot sets where the host's procfs is mounted. The default is
// /proc, right for an agent with hostPID; use e.g. /host/proc where the
// host's procfs is mounted there.
func WithProcRoot(path string) Option {
	return optionFunc(func(c *config) { c.procRoot = path })
}

// WithResolver places each job's series in the pod of its root process,
// through r (a *podjoin.Resolver): asked once per job, when it is found,
// and told to Forget it when it goes. The default is none.
func WithResolver(r xpuscope.ProcessResolver) Option {
	return optionFunc(func(c *config) { c.resolver = r })
}

// WithMaxJobs caps the jobs the Source reads, at least 1; those found
// past it are counted (xpuscope.training.overflow, reason jobs) and not
// read. The default is DefaultMaxJobs.
func WithMaxJobs(n int) Option {
	return optionFunc(func(c *config) { c.maxJobs = n })
}

// WithMaxFiles caps the log files read of one job, at least 1. Past it, a
// file that stopped growing makes room for a new one; otherwise the new
// one is counted (reason files) and not read. The default is
// DefaultMaxFiles.
func WithMaxFiles(n int) Option {
	return optionFunc(func(c *config) { c.maxFiles = n })
}

// WithMaxTags caps the scalar tags of one job exported as training.scalar
// (the tags mapped to training.loss and the others are not counted); the
// values of tags past it are counted (reason tags). 0 exports none. The
// default is DefaultMaxTags.
func WithMaxTags(n int) Option {
	return optionFunc(func(c *config) { c.maxTags = n })
}

// WithReadLimit caps the bytes read of one file in one interval, 65536 to
// 1073741824: a job's backlog (a file of months) is caught up with over
// several intervals. The default is DefaultReadLimit.
func WithReadLimit(n int64) Option {
	return optionFunc(func(c *config) { c.readLimit = n })
}
