package top

import (
	"fmt"

	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/otel/attribute"

	"github.com/xpuscope/xpuscope/semconv"
)

// The agent serves its metrics through the OpenTelemetry Prometheus
// exporter, whose default translation is otlptranslator's
// UnderscoreEscapingWithSuffixes: dots become underscores, the unit is a
// suffix (hw.power in W is hw_power_watts) and a monotonic counter ends in
// _total. top spells no name of its own: each family and label it reads is
// a semconv descriptor put through the same translator
// (TestNamesMatchTheExporter holds the two together).
var (
	metricNamer = otlptranslator.NewMetricNamer("", otlptranslator.UnderscoreEscapingWithSuffixes)
	labelNamer  = otlptranslator.LabelNamer{}
)

// promName is the name of m's family in the agent's Prometheus
// exposition.
func promName(m semconv.Metric) string {
	t := otlptranslator.MetricType(otlptranslator.MetricTypeGauge)
	switch m.Kind {
	case semconv.Counter:
		t = otlptranslator.MetricTypeMonotonicCounter
	case semconv.UpDownCounter:
		t = otlptranslator.MetricTypeNonMonotonicCounter
	case semconv.Histogram:
		t = otlptranslator.MetricTypeHistogram
	}
	n, err := metricNamer.Build(otlptranslator.Metric{Name: m.Name, Unit: m.Unit, Type: t})
	if err != nil {
		// Only an empty or all-invalid name fails: a semconv bug.
		panic(fmt.Sprintf("top: the Prometheus name of %s: %v", m.Name, err))
	}
	return n
}

// promLabel is the name of attribute k's label.
func promLabel(k attribute.Key) string {
	n, err := labelNamer.Build(string(k))
	if err != nil {
		panic(fmt.Sprintf("top: the Prometheus label of %s: %v", k, err))
	}
	return n
}
