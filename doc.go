// Package xpuscope is a library of OpenTelemetry collectors for GPUs and AI
// workloads. It observes accelerators, GPU runtime activity and LLM API
// traffic from outside the application: no SDK in the workload, no code
// change.
//
// Each data source is its own package (gpu, pmu, cudatrace, hiptrace,
// genai, intelpt; podjoin places what they see in pods) and follows one
// contract, the Source:
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
// The options follow one rule in every Source: left out, the default;
// given, what the value says, and an error naming the option when it is
// out of range. Every Meter and Tracer carries Version as its
// instrumentation scope's version. What several Sources report is defined
// here: Attachment and Rejection (the uprobe Sources' Status), and
// ProcessResolver (what WithResolver takes).
//
// Every metric, span and attribute name lives in package semconv; the
// generated reference is docs/metrics.md. docs/architecture.md gives the
// shape of a Source.
package xpuscope
