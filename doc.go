// Package xpuscope is a library of OpenTelemetry collectors for GPUs and AI
// workloads. It observes accelerators, GPU runtime activity and LLM API
// traffic from outside the application: no SDK in the workload, no code
// change.
//
// Each data source is its own package (gpu, and later cudatrace, genai, …)
// and follows one contract, the Source:
//
//	src, err := gpu.New(
//		gpu.WithMeterProvider(mp), // default: otel.GetMeterProvider()
//	)
//	if errors.Is(err, xpuscope.ErrUnavailable) {
//		// Soft skip: the library, device, kernel feature or privilege the
//		// source needs is missing. err says exactly what.
//	} else if err != nil {
//		// Fault: a bug or a bad configuration. Stop.
//	}
//	defer src.Close()
//
// New probes, creates instruments, attaches and starts the goroutine the
// Source owns. Close detaches, stops, waits and frees, and is idempotent.
// Failures while running (a blank sample, a failed read, a dropped event)
// never stop a Source: they are counted in self-metrics named
// xpuscope.*.
//
// Every metric, span and attribute name lives in package semconv; the
// generated reference is docs/metrics.md.
package xpuscope

import (
	"errors"
	"fmt"
	"io"
)

// ErrUnavailable is wrapped by every error that means "this Source cannot
// run here": a vendor library, a device, a kernel feature or a privilege is
// missing. The wrapping error names what was tried and what was missing.
// Callers treat it as a soft skip. Any other error from New is a fault.
var ErrUnavailable = errors.New("unavailable")

// Source is what every data source's New returns. Close stops the source
// and releases everything it holds; calling it again returns nil.
type Source interface {
	io.Closer
}

// Unavailablef returns an error that wraps ErrUnavailable, with the message
// fmt.Errorf(format, args...) gives (and whatever %w wraps in it). The
// message says what was tried and what is missing.
func Unavailablef(format string, args ...any) error {
	return &unavailableError{cause: fmt.Errorf(format, args...)}
}

type unavailableError struct{ cause error }

func (e *unavailableError) Error() string   { return e.cause.Error() }
func (e *unavailableError) Unwrap() []error { return []error{ErrUnavailable, e.cause} }
