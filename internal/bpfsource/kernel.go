package bpfsource

import (
	"errors"
	"io"
	"sync"

	"go.opentelemetry.io/otel/metric"
)

// Kernel is what an eBPF Source holds: its metric callback, what attaches
// its programs, the reader of its ring buffer and its loaded objects. Close
// releases them in the one safe order. A Source fills it as it starts;
// fields left nil are skipped, so that a start that failed part way closes
// what it had.
type Kernel struct {
	// Callback is unregistered first: no collection reads the Source
	// while it stops.
	Callback metric.Registration
	// Probes are detached next (uprobe tracers, tracepoint links), in
	// order: no new record comes.
	Probes []io.Closer
	// Ring is stopped then: no record is handled after Close.
	Ring *Ring
	// Objects are freed last.
	Objects io.Closer

	once sync.Once
}

// Close releases everything. Calls after the first return nil.
func (k *Kernel) Close() error {
	var err error
	k.once.Do(func() {
		var errs []error
		if k.Callback != nil {
			errs = append(errs, k.Callback.Unregister())
		}
		for _, p := range k.Probes {
			errs = append(errs, p.Close())
		}
		if k.Ring != nil {
			errs = append(errs, k.Ring.Close())
		}
		if k.Objects != nil {
			errs = append(errs, k.Objects.Close())
		}
		err = errors.Join(errs...)
	})
	return err
}
