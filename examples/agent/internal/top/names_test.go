package top

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/xpuscope/xpuscope/semconv"
)

// Every semconv metric, recorded through the OpenTelemetry Prometheus
// exporter as the agent serves it, has the family name promName gives,
// and each of its attributes the label name promLabel gives.
func TestNamesMatchTheExporter(t *testing.T) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	require.NoError(t, err)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	defer mp.Shutdown(context.Background())
	meter := mp.Meter("test")
	ctx := context.Background()
	want := map[string]semconv.Metric{}
	for _, m := range semconv.Metrics() {
		var attrs []attribute.KeyValue
		for _, k := range m.Attributes {
			attrs = append(attrs, k.String("v"))
		}
		opt := metric.WithAttributes(attrs...)
		switch m.Kind {
		case semconv.Counter:
			c, err := meter.Float64Counter(m.Name, metric.WithUnit(m.Unit))
			require.NoError(t, err)
			c.Add(ctx, 1, opt)
		case semconv.UpDownCounter:
			c, err := meter.Float64UpDownCounter(m.Name, metric.WithUnit(m.Unit))
			require.NoError(t, err)
			c.Add(ctx, 1, opt)
		case semconv.Gauge:
			g, err := meter.Float64Gauge(m.Name, metric.WithUnit(m.Unit))
			require.NoError(t, err)
			g.Record(ctx, 1, opt)
		case semconv.Histogram:
			h, err := meter.Float64Histogram(m.Name, metric.WithUnit(m.Unit))
			require.NoError(t, err)
			h.Record(ctx, 1, opt)
		}
		want[promName(m)] = m
	}
	fams, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]bool{}
	for _, f := range fams {
		m, ok := want[f.GetName()]
		if !ok {
			continue // target_info
		}
		got[f.GetName()] = true
		labels := map[string]bool{}
		for _, l := range f.GetMetric()[0].GetLabel() {
			labels[l.GetName()] = true
		}
		for _, k := range m.Attributes {
			assert.True(t, labels[promLabel(k)], "%s: no label %s (from %s) among %v", f.GetName(), promLabel(k), k, labels)
		}
	}
	for name, m := range want {
		assert.True(t, got[name], "the exporter names %s (%s %s, %s) otherwise than %s", m.Name, m.Kind, m.Unit, "promName", name)
	}
	// What the handlers read is among them.
	for name := range handlers {
		_, ok := want[name]
		assert.True(t, ok, "handler of %s, which is no semconv metric", name)
	}
	for name := range defaultTraining.byName {
		assert.True(t, got[name], "training column of %s, which the exporter does not write", name)
	}
	for i, c := range defaultTraining.cols {
		if c.Where.Key != "" {
			assert.Contains(t, c.Metric.Attributes, c.Where.Key, "column %s takes series by an attribute %s has not", c.Title, c.Metric.Name)
			assert.NotEmpty(t, defaultTraining.where[i])
		}
	}
}
