package meterx

import (
	"strings"
	"testing"

	"go.opentelemetry.io/otel/metric/noop"

	"github.com/xpuscope/xpuscope/semconv"
)

func TestKindMustMatchRegistry(t *testing.T) {
	m := noop.NewMeterProvider().Meter("test")
	if _, err := Float64ObservableGauge(m, semconv.HWPower); err != nil {
		t.Fatalf("gauge as gauge: %v", err)
	}
	_, err := Int64ObservableCounter(m, semconv.HWPower)
	if err == nil || !strings.Contains(err.Error(), "hw.power is registered as a Gauge, not a Counter") {
		t.Fatalf("gauge as counter: %v", err)
	}
	if _, err := Int64ObservableUpDownCounter(m, semconv.HWEnergy); err == nil {
		t.Fatal("counter as up-down counter must fail")
	}
	if _, err := Float64ObservableCounter(m, semconv.HWGPUMemoryUsage); err == nil {
		t.Fatal("up-down counter as counter must fail")
	}
}

// The Builder keeps every instrument's error and reports them all.
func TestBuilderJoinsErrors(t *testing.T) {
	b := Builder{Meter: noop.NewMeterProvider().Meter("test")}
	b.Gauge(semconv.HWPower)
	b.Counter(semconv.HWEnergy)
	if err := b.Err(); err != nil {
		t.Fatalf("well-kinded instruments: %v", err)
	}
	b.Counter(semconv.HWPower)            // a gauge
	b.Histogram(semconv.HWGPUMemoryUsage) // an up-down counter
	err := b.Err()
	if err == nil || !strings.Contains(err.Error(), "hw.power is registered as a Gauge") ||
		!strings.Contains(err.Error(), "hw.gpu.memory.usage is registered as a UpDownCounter") {
		t.Fatalf("both errors wanted, got %v", err)
	}
}
