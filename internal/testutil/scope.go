package testutil

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/semconv"
)

// CheckScope collects r and checks the metrics of the instrumentation
// scope named scope as a Source reported them, in the SDK's own data
// (not flattened): the scope carries xpuscope.Version, and every metric
// is registered in semconv with the unit, the kind (monotonic or not, for
// a sum) and the histogram bounds it has there. It returns the names of
// the scope's metrics, for the test to say which it expects.
func CheckScope(t testing.TB, r sdkmetric.Reader, scope string) []string {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	registry := map[string]semconv.Metric{}
	for _, m := range semconv.Metrics() {
		registry[m.Name] = m
	}
	var names []string
	found := false
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != scope {
			continue
		}
		found = true
		assert.Equal(t, xpuscope.Version, sm.Scope.Version, "the version of scope %s", scope)
		for _, m := range sm.Metrics {
			names = append(names, m.Name)
			d, ok := registry[m.Name]
			if !assert.True(t, ok, "%s is not in the semconv registry", m.Name) {
				continue
			}
			assert.Equal(t, d.Unit, m.Unit, "the unit of %s", m.Name)
			assert.Equal(t, d.Description, m.Description, "the description of %s", m.Name)
			checkKind(t, d, m.Data, scope)
		}
	}
	require.True(t, found, "no metrics of scope %s", scope)
	slices.Sort(names)
	return names
}

// checkKind checks that data is what the registry's kind and buckets for
// d make.
func checkKind(t testing.TB, d semconv.Metric, data metricdata.Aggregation, scope string) {
	t.Helper()
	var (
		kind      semconv.Kind
		monotonic bool
		bounds    [][]float64
	)
	switch a := data.(type) {
	case metricdata.Sum[int64]:
		kind, monotonic = semconv.UpDownCounter, a.IsMonotonic
	case metricdata.Sum[float64]:
		kind, monotonic = semconv.UpDownCounter, a.IsMonotonic
	case metricdata.Gauge[int64], metricdata.Gauge[float64]:
		kind = semconv.Gauge
	case metricdata.Histogram[int64]:
		kind = semconv.Histogram
		for _, dp := range a.DataPoints {
			bounds = append(bounds, dp.Bounds)
		}
	case metricdata.Histogram[float64]:
		kind = semconv.Histogram
		for _, dp := range a.DataPoints {
			bounds = append(bounds, dp.Bounds)
		}
	default:
		t.Errorf("%s: unexpected data %T", d.Name, data)
		return
	}
	if monotonic {
		kind = semconv.Counter
	}
	assert.Equal(t, d.Kind, kind, "the kind of %s", d.Name)
	if scope == d.BucketsKeptBy && d.BucketsKeptBy != "" {
		// The bounds of the figures the scope reads: whatever they
		// are, strictly increasing and finite.
		for _, b := range bounds {
			for i := range b {
				assert.False(t, math.IsInf(b[i], 0) || math.IsNaN(b[i]), "the bucket bounds of %s: %v is not finite", d.Name, b[i])
				if i > 0 {
					assert.Less(t, b[i-1], b[i], "the bucket bounds of %s increase", d.Name)
				}
			}
		}
		return
	}
	if d.Buckets != nil {
		for _, b := range bounds {
			assert.Equal(t, d.Buckets, b, "the bucket bounds of %s", d.Name)
		}
	}
}

// CheckSpanScope checks that every span is of the instrumentation scope
// named scope, at xpuscope.Version.
func CheckSpanScope(t testing.TB, spans tracetest.SpanStubs, scope string) {
	t.Helper()
	require.NotEmpty(t, spans, "no spans of scope %s", scope)
	for _, s := range spans {
		assert.Equal(t, scope, s.InstrumentationScope.Name, "the scope of span %s", s.Name)
		assert.Equal(t, xpuscope.Version, s.InstrumentationScope.Version, "the scope version of span %s", s.Name)
	}
}
