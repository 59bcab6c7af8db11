package pmu

import (
	"fmt"
	"sync"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/perfevent"
	"github.com/xpuscope/xpuscope/internal/perfevent/perfeventtest"
)

// fakeOpener stands in for perf_event_open: this machine is a virtual
// machine with no uncore PMU, so the counting logic is tested against
// counters whose values the test sets. It records every open and close.
type fakeOpener struct {
	mu       sync.Mutex
	counters map[fakeKey]*fakeCounter
	opens    []perfevent.Attr
	refuse   func(perfevent.Attr) error // nil: every open succeeds
}

type fakeKey struct {
	typ    uint32
	config uint64
	cpu    int
}

func newFakeOpener() *fakeOpener { return &fakeOpener{counters: map[fakeKey]*fakeCounter{}} }

func (f *fakeOpener) Open(a perfevent.Attr) (perfevent.Counter, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a.PID != -1 {
		return nil, fmt.Errorf("opened for pid %d: uncore PMUs count per CPU only", a.PID)
	}
	if f.refuse != nil {
		if err := f.refuse(a); err != nil {
			return nil, perfevent.NewOpenError(a, err)
		}
	}
	f.opens = append(f.opens, a)
	c := &fakeCounter{f: f, key: fakeKey{a.Type, a.Configs[perfevent.Config], a.CPU}}
	f.counters[c.key] = c
	return c, nil
}

// counter returns the open counter of (typ, config, cpu), or nil.
func (f *fakeOpener) counter(typ uint32, config uint64, cpu int) *fakeCounter {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.counters[fakeKey{typ, config, cpu}]
	if c == nil || c.closed {
		return nil
	}
	return c
}

// all returns the open counters.
func (f *fakeOpener) all() []*fakeCounter {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*fakeCounter
	for _, c := range f.counters {
		if !c.closed {
			out = append(out, c)
		}
	}
	return out
}

type fakeCounter struct {
	f      *fakeOpener
	key    fakeKey
	v      perfevent.Value
	err    error // returned by the next Read, once
	closed bool
}

// add advances the counter: count more events over enabled ns, on a
// hardware counter for running of them.
func (c *fakeCounter) add(count, enabled, running uint64) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.v.Count += count
	c.v.Enabled += enabled
	c.v.Running += running
}

func (c *fakeCounter) failNext(err error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.err = err
}

func (c *fakeCounter) Read(v *perfevent.Value) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if c.closed {
		return unix.EBADF
	}
	if c.err != nil {
		err := c.err
		c.err = nil
		return err
	}
	*v = c.v
	return nil
}

func (c *fakeCounter) Close() error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.closed = true
	return nil
}

// start makes a Source on fixture name with the fake opener, polled by
// the test, and a reader of its metrics.
func start(t testing.TB, name string, opts ...Option) (*Source, *fakeOpener, perfeventtest.Tree, *sdkmetric.ManualReader) {
	t.Helper()
	tree := perfeventtest.Write(t, name)
	f := newFakeOpener()
	src, reader, err := startOn(t, tree, f, opts...)
	if err != nil {
		t.Fatalf("New on %s: %v", name, err)
	}
	return src, f, tree, reader
}

func startOn(t testing.TB, tree perfeventtest.Tree, f perfevent.Opener, opts ...Option) (*Source, *sdkmetric.ManualReader, error) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(t.Context()) })
	all := append([]Option{
		WithMeterProvider(mp), WithSysfsRoot(tree.Sys), WithProcRoot(tree.Proc),
		withOpener(f), withManualPoll(),
	}, opts...)
	src, err := New(all...)
	if err == nil {
		t.Cleanup(func() { _ = src.Close() })
	}
	return src, reader, err
}

var errTest = unix.EIO
