package cudatrace_test

import (
	"errors"
	"log"

	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/cudatrace"
)

// Trace every process's GPU runtime calls on the host. It needs root (or
// CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN and CAP_SYS_PTRACE); without them New
// is unavailable and says what is missing.
func ExampleNew() {
	src, err := cudatrace.New(
		cudatrace.WithMeterProvider(noop.NewMeterProvider()),
		cudatrace.WithTracerProvider(tracenoop.NewTracerProvider()),
	)
	if errors.Is(err, xpuscope.ErrUnavailable) {
		log.Printf("cudatrace off: %v", err)
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

// Report the histograms through a Producer, as the reference agent does:
// the Source keeps them itself rather than recording each launch's four
// into the SDK. The readers take their producers when they are made, so
// the Producer comes first.
func ExampleWithProducer() {
	producer := cudatrace.NewProducer()
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(producer)) // or a PeriodicReader, the Prometheus exporter
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	src, err := cudatrace.New(
		cudatrace.WithMeterProvider(mp),
		cudatrace.WithTracerProvider(tracenoop.NewTracerProvider()),
		cudatrace.WithProducer(producer),
	)
	if errors.Is(err, xpuscope.ErrUnavailable) {
		log.Printf("cudatrace off: %v", err)
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
}
