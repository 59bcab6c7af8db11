package serving

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/procfs"
	"github.com/xpuscope/xpuscope/internal/proctable"
)

// ScopeName is the instrumentation scope of the Source's meter and of
// the histograms its Producer reports.
const ScopeName = "github.com/xpuscope/xpuscope/genai/serving"

// Source finds the model servers on the node and reads their metrics.
// Create it with New.
type Source struct {
	cfg    config
	procs  procfs.FS
	handle *procfs.Handle
	selfNS string // the Source's network namespace

	// The state below is the run goroutine's (and New's, before it
	// starts).
	table      proctable.Table // the Source's own pid left out
	servers    map[serverKey]*server
	generation uint64
	listErr    string
	over       overflowCounts
	scrapes    map[scrapeKey]int64

	inst instruments
	reg  metric.Registration
	snap atomic.Pointer[snapshot]

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// overflowCounts are the Source's counts of what went past a cap or was
// refused, since it started.
type overflowCounts struct {
	servers, models, series, processes, invalid int
}

// scrapeKey counts scrapes by kind and outcome ("" for read).
type scrapeKey struct {
	kind   Kind
	reason string
}

// New checks the options, reads the host's processes once, scrapes the
// servers it finds (within the timeout), registers the instruments and
// starts looking and scraping every interval.
//
// A procfs that cannot be read is unavailable (an error wrapping
// xpuscope.ErrUnavailable that says what); a bad option, or instruments
// that cannot be made, a fault. A node with no model server is no error:
// the Source reports none, and keeps looking.
func New(opts ...Option) (*Source, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	fs := procfs.FS{Root: cfg.procRoot}
	if _, err := fs.PIDs(); err != nil {
		return nil, xpuscope.Unavailablef("serving: cannot list the processes: %w", err)
	}
	h, err := fs.Open()
	if err != nil {
		return nil, xpuscope.Unavailablef("serving: %w", err)
	}
	s := &Source{
		cfg:     cfg,
		procs:   fs,
		handle:  h,
		selfNS:  selfNetNS(),
		servers: map[serverKey]*server{},
		scrapes: map[scrapeKey]int64{},
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	self, _ := fs.Self()
	s.table = proctable.Table{FS: fs, Handle: h, Self: self, Identify: s.identify}
	meter := cfg.meterProvider.Meter(ScopeName, metric.WithInstrumentationVersion(xpuscope.Version))
	if err := s.inst.create(meter); err != nil {
		_ = h.Close()
		return nil, fmt.Errorf("serving: %w", err)
	}
	s.cycle(time.Now())
	s.reg, err = meter.RegisterCallback(s.observe, s.inst.all()...)
	if err != nil {
		_ = h.Close()
		return nil, fmt.Errorf("serving: register callback: %w", err)
	}
	if cfg.producer != nil {
		cfg.producer.sources.Add(s)
	}
	go s.run()
	return s, nil
}

func (s *Source) run() {
	defer close(s.done)
	t := time.NewTicker(s.cfg.interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			s.cycle(now)
		}
	}
}

// cycle looks for servers, scrapes those due, side by side, and
// publishes what it read.
func (s *Source) cycle(now time.Time) {
	s.discover(now)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	var wg sync.WaitGroup
	for _, srv := range s.servers {
		srv.attempted = false
		if !srv.due(now) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.scrape(ctx, srv, now)
		}()
	}
	wg.Wait()
	cancel()
	for _, srv := range s.servers {
		s.over.processes += srv.overProc
		if !srv.attempted {
			continue
		}
		switch {
		case srv.lastErr != nil:
			s.scrapes[scrapeKey{srv.spec.kind, srv.lastErr.reason}]++
		case srv.read:
			s.scrapes[scrapeKey{srv.spec.kind, ""}]++
		}
		if srv.read {
			s.over.models += srv.m.over.models
			s.over.series += srv.m.over.series
			s.over.invalid += srv.m.over.invalid
		}
	}
	s.publish(now)
}

// Close stops looking and scraping, unregisters the instruments and lets
// go of the connections; a Producer given the Source reports it no more.
// Calls after the first return nil.
func (s *Source) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.done
		if s.cfg.producer != nil {
			s.cfg.producer.sources.Remove(s)
		}
		var errs []error
		if s.reg != nil {
			errs = append(errs, s.reg.Unregister())
		}
		for _, srv := range s.servers {
			s.forget(srv)
		}
		errs = append(errs, s.handle.Close())
		err = errors.Join(errs...)
	})
	return err
}
