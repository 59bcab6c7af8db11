package bpfsource

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf/ringbuf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/xpuscope/xpuscope/internal/meterx"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

// fakeRecords stands in for a *ringbuf.Reader: a read error cannot be
// made to happen on a real ring buffer. Each ReadInto takes the next
// step; with none left it waits out the deadline, as the real one does.
type fakeRecords struct {
	mu       sync.Mutex
	steps    []step
	deadline time.Time
	closed   chan struct{}
	reads    int
}

type step struct {
	raw []byte
	err error
}

func newFakeRecords(steps ...step) *fakeRecords {
	return &fakeRecords{steps: steps, closed: make(chan struct{})}
}

func (f *fakeRecords) ReadInto(rec *ringbuf.Record) error {
	f.mu.Lock()
	f.reads++
	if len(f.steps) > 0 {
		s := f.steps[0]
		f.steps = f.steps[1:]
		f.mu.Unlock()
		rec.RawSample = s.raw
		return s.err
	}
	wait := time.Until(f.deadline)
	f.mu.Unlock()
	select {
	case <-f.closed:
		return ringbuf.ErrClosed
	case <-time.After(wait):
		return os.ErrDeadlineExceeded
	}
}

func (f *fakeRecords) SetDeadline(t time.Time) {
	f.mu.Lock()
	f.deadline = t
	f.mu.Unlock()
}

func (f *fakeRecords) Close() error {
	close(f.closed)
	return nil
}

// eventually polls cond for up to 10 s: the Ring's goroutine runs on its
// own schedule, and the machine may be loaded.
func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, 10*time.Second, time.Millisecond, msg)
}

// A read that fails, not by the poll's deadline, is counted, and the
// reader goes on to the records after it; a record Decode refuses is
// counted too. Both reach the self-metric.
func TestRingCountsReadAndDecodeErrors(t *testing.T) {
	broken := errors.New("epoll_wait: bad file descriptor")
	var (
		mu      sync.Mutex
		decoded []string
	)
	f := newFakeRecords(
		step{raw: []byte("a")},
		step{err: broken},
		step{raw: []byte("bad")},
		step{raw: []byte("b")},
	)
	g := startRing(f, RingConfig{Poll: time.Millisecond, Decode: func(raw []byte) error {
		if string(raw) == "bad" {
			return errors.New("short record")
		}
		mu.Lock()
		decoded = append(decoded, string(raw))
		mu.Unlock()
		return nil
	}})
	defer g.Close()
	eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(decoded) == 2
	}, "the records around the failed read are decoded")
	mu.Lock()
	assert.Equal(t, []string{"a", "b"}, decoded)
	mu.Unlock()
	assert.Equal(t, RingErrors{Read: 1, Decode: 1}, g.Errors())

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	inst, err := meterx.Int64ObservableCounter(mp.Meter("test"), semconv.XpuscopeBPFRingErrors)
	require.NoError(t, err)
	_, err = mp.Meter("test").RegisterCallback(func(_ context.Context, o metric.Observer) error {
		g.Observe(o, inst)
		return nil
	}, inst)
	require.NoError(t, err)
	pts := testutil.Collect(t, reader)
	assert.Equal(t, float64(1), pts.One(t, semconv.XpuscopeBPFRingErrors.Name, semconv.ErrorType.String(semconv.RingErrorRead)).Value)
	assert.Equal(t, float64(1), pts.One(t, semconv.XpuscopeBPFRingErrors.Name, semconv.ErrorType.String(semconv.RingErrorDecode)).Value)
}

// A read that keeps failing does not spin: each failure waits out a poll
// interval before the next read.
func TestRingLastingReadErrorWaits(t *testing.T) {
	steps := make([]step, 1000)
	for i := range steps {
		steps[i] = step{err: errors.New("broken")}
	}
	f := newFakeRecords(steps...)
	poll := 20 * time.Millisecond
	g := startRing(f, RingConfig{Poll: poll, Decode: func([]byte) error { return nil }})
	time.Sleep(10 * poll)
	require.NoError(t, g.Close())
	f.mu.Lock()
	reads := f.reads
	f.mu.Unlock()
	// A spinning reader would have taken all 1000 steps; one that waits
	// takes about ten. Allow for a loaded machine's late timers only.
	assert.Less(t, reads, 100, "reads of a ring that keeps failing")
	assert.Equal(t, int64(reads), g.Errors().Read)
}

// Housekeeping runs on time during a long batch, not only after it, and
// between batches; nothing runs after Close.
func TestRingHousekeeping(t *testing.T) {
	steps := make([]step, 4*HousekeepEvery)
	for i := range steps {
		steps[i] = step{raw: []byte{1}}
	}
	f := newFakeRecords(steps...)
	var (
		mu          sync.Mutex
		decoded     int
		atHousekeep []int
	)
	g := startRing(f, RingConfig{
		Poll: time.Millisecond,
		Decode: func([]byte) error {
			mu.Lock()
			decoded++
			mu.Unlock()
			if decoded == HousekeepEvery/2 {
				time.Sleep(5 * time.Millisecond) // housekeeping falls due mid-batch
			}
			return nil
		},
		Housekeep: func(time.Time) {
			mu.Lock()
			atHousekeep = append(atHousekeep, decoded)
			mu.Unlock()
		},
		Housekeeping: time.Millisecond,
	})
	eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return decoded == len(steps) && len(atHousekeep) >= 2
	}, "every record decoded, and housekeeping after them")
	require.NoError(t, g.Close())
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, HousekeepEvery, atHousekeep[0], "the first housekeeping comes inside the batch, at its first look at the clock")
	n := len(atHousekeep)
	time.Sleep(5 * time.Millisecond)
	assert.Len(t, atHousekeep, n, "housekeeping after Close")
	require.NoError(t, g.Close(), "a second Close")
}
