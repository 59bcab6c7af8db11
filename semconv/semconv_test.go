package semconv

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// designFixed are the extensions in OpenTelemetry's hw.* namespace that
// the design names: CPU memory bandwidth (hw.cpu.memory.io) and its
// utilization beside it, which OpenTelemetry does not define.
var designFixed = map[string]bool{HWCPUMemoryIO.Name: true, HWCPUMemoryUtilization.Name: true}

func TestMetricsAreWellFormed(t *testing.T) {
	registered := map[string]bool{}
	for _, a := range Attributes() {
		assert.False(t, registered[string(a.Key)], "attribute %s registered twice", a.Key)
		registered[string(a.Key)] = true
		assert.NotEmpty(t, a.Description, "attribute %s: missing description", a.Key)
		assert.Contains(t, []string{"string", "int", "double", "boolean", "string[]"}, a.Type, "attribute %s: bad type", a.Key)
	}
	seen := map[string]bool{}
	for _, m := range Metrics() {
		assert.False(t, seen[m.Name], "metric %s registered twice", m.Name)
		seen[m.Name] = true
		assert.NotEmpty(t, m.Description, "%s: description must be a sentence", m.Name)
		assert.True(t, strings.HasSuffix(m.Description, "."), "%s: description must be a sentence", m.Name)
		assert.NotEmpty(t, m.Unit, "%s: unit, kind and origin are required", m.Name)
		assert.NotZero(t, m.Kind, "%s: unit, kind and origin are required", m.Name)
		assert.NotZero(t, m.Origin, "%s: unit, kind and origin are required", m.Name)
		for _, k := range m.Attributes {
			assert.True(t, registered[string(k)], "%s: attribute %s is not registered", m.Name, k)
		}
		assert.Equal(t, m.Kind == Histogram, len(m.Buckets) > 0 || m.BucketsKeptBy != "", "%s: buckets belong to histograms, and histograms need them or a scope that keeps its figures' own", m.Name)
		if m.BucketsKeptBy != "" {
			assert.Equal(t, servingScope, m.BucketsKeptBy, "%s: only genai/serving keeps the buckets of what it reads", m.Name)
		}
		assert.True(t, slices.IsSorted(m.Buckets), "%s: buckets are not increasing", m.Name)
		if strings.HasSuffix(m.Name, "utilization") {
			assert.Equal(t, Gauge, m.Kind, "%s: a ratio is a Gauge with unit 1", m.Name)
			assert.Equal(t, "1", m.Unit, "%s: a ratio is a Gauge with unit 1", m.Name)
		}
		switch m.Origin {
		case Extension:
			if !designFixed[m.Name] {
				assert.False(t, strings.HasPrefix(m.Name, "hw."), "%s: extensions must not take names in OpenTelemetry's hw.* namespace", m.Name)
			}
		case Self:
			assert.True(t, strings.HasPrefix(m.Name, "xpuscope."), "%s: self-metrics live under xpuscope.*", m.Name)
		}
	}
}

func TestSpansAreWellFormed(t *testing.T) {
	registered := map[string]bool{}
	for _, a := range Attributes() {
		registered[string(a.Key)] = true
	}
	seen := map[string]bool{}
	for _, s := range Spans() {
		assert.False(t, seen[s.Name], "span %s: duplicate", s.Name)
		assert.NotEmpty(t, s.Description, "span %s: undocumented", s.Name)
		seen[s.Name] = true
		for _, k := range s.Attributes {
			assert.True(t, registered[string(k)], "span %s: attribute %s is not registered", s.Name, k)
		}
	}
}

func TestRegistryIsACopy(t *testing.T) {
	Metrics()[0].Name = "changed"
	Attributes()[0].Key = "changed"
	require.NotEqual(t, "changed", Metrics()[0].Name, "callers can change the registry")
	require.NotEqual(t, "changed", string(Attributes()[0].Key), "callers can change the registry")
}
