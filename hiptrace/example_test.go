package hiptrace_test

import (
	"errors"
	"log"

	"go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/hiptrace"
)

// Trace every process's GPU runtime calls on the host. It needs root (or
// CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN and CAP_SYS_PTRACE); without them New
// is unavailable and says what is missing.
func ExampleNew() {
	src, err := hiptrace.New(
		hiptrace.WithMeterProvider(noop.NewMeterProvider()),
		hiptrace.WithTracerProvider(tracenoop.NewTracerProvider()),
	)
	if errors.Is(err, xpuscope.ErrUnavailable) {
		log.Printf("hiptrace off: %v", err)
		return
	}
	if err != nil {
		log.Fatal(err) // a fault: a BPF object the kernel rejects, a bad option
	}
	defer src.Close()
	for _, a := range src.Status().Attachments {
		log.Printf("probing %s %s (pid %d)", a.Target, a.Path, a.PID)
	}
}
