// Package semconv is the single registry of every metric and attribute name
// that xpuscope emits, with its instrument kind, unit, description and, for
// histograms, bucket boundaries.
//
// Names follow the OpenTelemetry semantic conventions where they exist
// (hw.gpu.*, hw.power, hw.energy, hw.temperature, hw.errors, process.*).
// Everything else is an xpuscope extension (gpu.*, process.gpu.*) or a
// self-metric of the library (xpuscope.*), and says so in its Origin.
// Ratios are float gauges in 0..1.
//
// No other package spells a metric or attribute name: they take it from
// here. The reference table in docs/metrics.md is generated from this
// registry by go generate, and a test fails when it is stale.
package semconv

//go:generate go run ../internal/cmd/metricsdoc -o ../docs/metrics.md
