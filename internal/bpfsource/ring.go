package bpfsource

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope/internal/ringpoll"
	"github.com/xpuscope/xpuscope/semconv"
)

// HousekeepEvery is how many records a Ring hands over between looks at
// the clock for housekeeping: a batch lasts as long as records keep
// coming, and under a steady stream housekeeping must not wait for its
// end.
const HousekeepEvery = 256

// RingConfig says what a Ring does with what it reads.
type RingConfig struct {
	// Poll is how long a read waits for records while they come; after
	// a wait that brings none it doubles, up to a second (ringpoll). The
	// BPF side wakes the reader sooner past its wakeup threshold.
	Poll time.Duration
	// Decode is called with every record, on the Ring's goroutine. The
	// record's bytes are only valid until it returns. An error says the
	// record could not be read; it is counted.
	Decode func(raw []byte) error
	// Flush, if set, is called after each batch that brought records,
	// on the Ring's goroutine: a Source publishes there what its metric
	// callback reads.
	Flush func()
	// Housekeep, if set, is called every Housekeeping, on the Ring's
	// goroutine, between records; the first time one period after
	// NewRing (a Source housekeeps once itself as it starts).
	Housekeep    func(now time.Time)
	Housekeeping time.Duration
}

// RingErrors are what a Ring could not read.
type RingErrors struct {
	// Read counts the reads of the ring that failed (not the poll's
	// deadline): the batch ends there, and the next read waits a poll
	// interval.
	Read int64
	// Decode counts the records Decode refused.
	Decode int64
}

var (
	readErrorAttrs   = metric.WithAttributeSet(attribute.NewSet(semconv.ErrorType.String(semconv.RingErrorRead)))
	decodeErrorAttrs = metric.WithAttributeSet(attribute.NewSet(semconv.ErrorType.String(semconv.RingErrorDecode)))
)

// Observe reports the Ring's errors on inst, an instrument of
// semconv.XpuscopeBPFRingErrors, from a Source's metric callback.
func (g *Ring) Observe(o metric.Observer, inst metric.Int64Observable) {
	e := g.Errors()
	o.ObserveInt64(inst, e.Read, readErrorAttrs)
	o.ObserveInt64(inst, e.Decode, decodeErrorAttrs)
}

// records is what a Ring reads from: a *ringbuf.Reader, or a test's.
type records interface {
	ReadInto(*ringbuf.Record) error
	SetDeadline(time.Time)
	Close() error
}

// Ring drains a BPF ring buffer in a goroutine of its own. Create it with
// NewRing once everything Decode and Housekeep use is ready.
type Ring struct {
	r            records
	cfg          RingConfig
	readErrors   atomic.Int64
	decodeErrors atomic.Int64
	stop         chan struct{}
	done         chan struct{}
	closeOnce    sync.Once
}

// NewRing starts reading the ring buffer map m.
func NewRing(m *ebpf.Map, cfg RingConfig) (*Ring, error) {
	rb, err := ringbuf.NewReader(m)
	if err != nil {
		return nil, fmt.Errorf("ring buffer reader: %w", err)
	}
	return startRing(rb, cfg), nil
}

func startRing(r records, cfg RingConfig) *Ring {
	g := &Ring{r: r, cfg: cfg, stop: make(chan struct{}), done: make(chan struct{})}
	go g.run()
	return g
}

// Errors returns what the Ring could not read so far.
func (g *Ring) Errors() RingErrors {
	return RingErrors{Read: g.readErrors.Load(), Decode: g.decodeErrors.Load()}
}

// Close stops the reader and waits for its goroutine: neither Decode nor
// Housekeep is called after it returns. Calls after the first return nil.
func (g *Ring) Close() error {
	var err error
	g.closeOnce.Do(func() {
		close(g.stop)
		err = g.r.Close()
		<-g.done
	})
	return err
}

func (g *Ring) run() {
	defer close(g.done)
	var (
		rec  ringbuf.Record
		pace = ringpoll.New(g.cfg.Poll)
		next = time.Now().Add(g.cfg.Housekeeping)
	)
	housekeepIfDue := func() {
		if g.cfg.Housekeep == nil {
			return
		}
		if now := time.Now(); !now.Before(next) {
			g.cfg.Housekeep(now)
			next = now.Add(g.cfg.Housekeeping)
		}
	}
	for {
		g.r.SetDeadline(time.Now().Add(pace.Wait()))
		n := 0
		for {
			err := g.r.ReadInto(&rec)
			if err != nil {
				if errors.Is(err, ringbuf.ErrClosed) {
					return
				}
				if !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, ringbuf.ErrFlushed) {
					// A broken read returns at once: wait out a poll
					// before the next, or a lasting fault would spin.
					g.readErrors.Add(1)
					select {
					case <-g.stop:
						return
					case <-time.After(pace.Wait()):
					}
				}
				break
			}
			n++
			if g.cfg.Decode(rec.RawSample) != nil {
				g.decodeErrors.Add(1)
			}
			if n%HousekeepEvery == 0 {
				housekeepIfDue()
			}
		}
		pace.Next(n)
		if n > 0 && g.cfg.Flush != nil {
			g.cfg.Flush()
		}
		housekeepIfDue()
	}
}
