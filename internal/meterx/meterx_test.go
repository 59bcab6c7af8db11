package meterx

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/xpuscope/xpuscope/semconv"
)

func TestKindMustMatchRegistry(t *testing.T) {
	m := noop.NewMeterProvider().Meter("test")
	_, err := Float64ObservableGauge(m, semconv.HWPower)
	require.NoError(t, err, "gauge as gauge")
	_, err = Int64ObservableCounter(m, semconv.HWPower)
	require.ErrorContains(t, err, "hw.power is registered as a Gauge, not a Counter", "gauge as counter")
	_, err = Int64ObservableUpDownCounter(m, semconv.HWEnergy)
	require.Error(t, err, "counter as up-down counter must fail")
	_, err = Float64ObservableCounter(m, semconv.HWGPUMemoryUsage)
	require.Error(t, err, "up-down counter as counter must fail")
}

// The Builder keeps every instrument's error and reports them all.
func TestBuilderJoinsErrors(t *testing.T) {
	b := Builder{Meter: noop.NewMeterProvider().Meter("test")}
	b.Gauge(semconv.HWPower)
	b.Counter(semconv.HWEnergy)
	require.NoError(t, b.Err(), "well-kinded instruments")
	b.Counter(semconv.HWPower)            // a gauge
	b.Histogram(semconv.HWGPUMemoryUsage) // an up-down counter
	err := b.Err()
	require.ErrorContains(t, err, "hw.power is registered as a Gauge", "both errors wanted")
	require.ErrorContains(t, err, "hw.gpu.memory.usage is registered as a UpDownCounter", "both errors wanted")
}

func TestSources(t *testing.T) {
	var s Sources[*int]
	a, b, c := new(int), new(int), new(int)
	s.Add(a)
	s.Add(b)
	s.Add(c)
	got := s.List()
	s.Remove(b)
	if want := []*int{a, b, c}; !slices.Equal(got, want) {
		t.Fatalf("List before Remove = %v, want %v (a copy, untouched by Remove)", got, want)
	}
	if got, want := s.List(), []*int{a, c}; !slices.Equal(got, want) {
		t.Fatalf("List after Remove(b) = %v, want %v", got, want)
	}
	s.Remove(b)
	s.Remove(a)
	s.Remove(c)
	if got := s.List(); len(got) != 0 {
		t.Fatalf("List after removing all = %v", got)
	}
}
