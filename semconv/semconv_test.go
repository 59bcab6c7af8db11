package semconv

import (
	"slices"
	"strings"
	"testing"
)

func TestMetricsAreWellFormed(t *testing.T) {
	registered := map[string]bool{}
	for _, a := range Attributes() {
		if registered[string(a.Key)] {
			t.Errorf("attribute %s registered twice", a.Key)
		}
		registered[string(a.Key)] = true
		if a.Description == "" || !slices.Contains([]string{"string", "int", "double", "boolean", "string[]"}, a.Type) {
			t.Errorf("attribute %s: missing description or bad type %q", a.Key, a.Type)
		}
	}
	seen := map[string]bool{}
	for _, m := range Metrics() {
		if seen[m.Name] {
			t.Errorf("metric %s registered twice", m.Name)
		}
		seen[m.Name] = true
		if m.Description == "" || !strings.HasSuffix(m.Description, ".") {
			t.Errorf("%s: description must be a sentence", m.Name)
		}
		if m.Unit == "" || m.Kind == 0 || m.Origin == 0 {
			t.Errorf("%s: unit, kind and origin are required", m.Name)
		}
		for _, k := range m.Attributes {
			if !registered[string(k)] {
				t.Errorf("%s: attribute %s is not registered", m.Name, k)
			}
		}
		if (m.Kind == Histogram) != (len(m.Buckets) > 0) {
			t.Errorf("%s: buckets belong to histograms, and histograms need them", m.Name)
		}
		if !slices.IsSorted(m.Buckets) {
			t.Errorf("%s: buckets are not increasing", m.Name)
		}
		if strings.HasSuffix(m.Name, "utilization") && (m.Kind != Gauge || m.Unit != "1") {
			t.Errorf("%s: a ratio is a Gauge with unit 1", m.Name)
		}
		switch m.Origin {
		case Extension:
			if strings.HasPrefix(m.Name, "hw.") {
				t.Errorf("%s: extensions must not take names in OpenTelemetry's hw.* namespace", m.Name)
			}
		case Self:
			if !strings.HasPrefix(m.Name, "xpuscope.") {
				t.Errorf("%s: self-metrics live under xpuscope.*", m.Name)
			}
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
		if seen[s.Name] || s.Description == "" {
			t.Errorf("span %s: duplicate or undocumented", s.Name)
		}
		seen[s.Name] = true
		for _, k := range s.Attributes {
			if !registered[string(k)] {
				t.Errorf("span %s: attribute %s is not registered", s.Name, k)
			}
		}
	}
}

func TestRegistryIsACopy(t *testing.T) {
	Metrics()[0].Name = "changed"
	Attributes()[0].Key = "changed"
	if Metrics()[0].Name == "changed" || Attributes()[0].Key == "changed" {
		t.Fatal("callers can change the registry")
	}
}
