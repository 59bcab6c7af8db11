// Package testutil holds what several packages' tests share: the CI skip
// policy, flattened metric points, and the fake NVML library.
package testutil

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// InCI reports whether the tests run in CI (the CI variable is set).
func InCI() bool { return os.Getenv("CI") != "" }

// SkipOrFail skips t for a missing tool, privilege or kernel feature, or
// fails it when running in CI, where the setup must provide them. Under
// emulation (Emulated) it skips, CI or not: what is missing there is the
// machine's own architecture's (its kernel, libraries, programs), which
// the native run of the suite has, and where the same call fails in CI.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	if e := Emulated(); e != "" {
		t.Skipf(format+" (under %s: the native run has it)", append(args, e)...)
	}
	if InCI() {
		t.Fatalf(format+" (CI is set: a skip is a failure)", args...)
	}
	t.Skipf(format, args...)
}

// Emulated is the emulator the tests run under, or "": scripts/qemu-aarch64,
// the runner of `make test-arm64`, sets XPUSCOPE_EMULATED to run arm64
// test binaries on an x86-64 machine, whose kernel, libraries and
// programs are x86-64's.
func Emulated() string { return os.Getenv("XPUSCOPE_EMULATED") }

// Native skips t when the tests run emulated (Emulated): t needs what
// only the machine's own architecture gives it, which needs says (the
// kernel's BPF and uprobes, vendor libraries, C programs or libraries
// built by the host's compiler, the test binary run again as a program).
// Such a test runs in the native run of the suite, where a skip in CI is
// a failure; the emulated run is for the pure tests (decoders, parsers,
// models, probe placement, calling conventions), so that arm64's code
// paths are executed, and skipping the rest there is by design, CI or
// not.
func Native(t testing.TB, needs string) {
	t.Helper()
	if e := Emulated(); e != "" {
		t.Skipf("needs %s: not under %s", needs, e)
	}
}

// Point is one data point, flattened. For a histogram Value is the sum,
// Count the number of values and Buckets the counts per bucket.
type Point struct {
	Name    string            `json:"name"`
	Attrs   map[string]string `json:"attrs"`
	Value   float64           `json:"value"`
	Count   uint64            `json:"count,omitempty"`
	Buckets []uint64          `json:"buckets,omitempty"`
}

// Get returns the value of attribute k, or "".
func (p Point) Get(k attribute.Key) string { return p.Attrs[string(k)] }

// Has reports whether the point carries attribute k.
func (p Point) Has(k attribute.Key) bool {
	_, ok := p.Attrs[string(k)]
	return ok
}

// Points is a collection's data points.
type Points []Point

// Find returns the points of metric name whose attributes include every kv.
func (ps Points) Find(name string, kvs ...attribute.KeyValue) Points {
	var out Points
next:
	for _, p := range ps {
		if p.Name != name {
			continue
		}
		for _, kv := range kvs {
			if v, ok := p.Attrs[string(kv.Key)]; !ok || v != kv.Value.Emit() {
				continue next
			}
		}
		out = append(out, p)
	}
	return out
}

// One returns the single point Find returns, failing t unless there is
// exactly one.
func (ps Points) One(t testing.TB, name string, kvs ...attribute.KeyValue) Point {
	t.Helper()
	got := ps.Find(name, kvs...)
	if len(got) != 1 {
		t.Fatalf("%d points of %s with %v, want 1", len(got), name, kvs)
	}
	return got[0]
}

// Collect collects r once and flattens the result.
func Collect(t testing.TB, r sdkmetric.Reader) Points {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	ps, err := Flatten(rm)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// Flatten lists the gauge and sum points of rm.
func Flatten(rm metricdata.ResourceMetrics) (Points, error) {
	var out Points
	add := func(name string, attrs attribute.Set, v float64) *Point {
		m := make(map[string]string, attrs.Len())
		for it := attrs.Iter(); it.Next(); {
			kv := it.Attribute()
			m[string(kv.Key)] = kv.Value.Emit()
		}
		out = append(out, Point{Name: name, Attrs: m, Value: v})
		return &out[len(out)-1]
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Gauge[float64]:
				for _, dp := range d.DataPoints {
					add(m.Name, dp.Attributes, dp.Value)
				}
			case metricdata.Gauge[int64]:
				for _, dp := range d.DataPoints {
					add(m.Name, dp.Attributes, float64(dp.Value))
				}
			case metricdata.Sum[float64]:
				for _, dp := range d.DataPoints {
					add(m.Name, dp.Attributes, dp.Value)
				}
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					add(m.Name, dp.Attributes, float64(dp.Value))
				}
			case metricdata.Histogram[int64]:
				for _, dp := range d.DataPoints {
					p := add(m.Name, dp.Attributes, float64(dp.Sum))
					p.Count, p.Buckets = dp.Count, dp.BucketCounts
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					p := add(m.Name, dp.Attributes, dp.Sum)
					p.Count, p.Buckets = dp.Count, dp.BucketCounts
				}
			default:
				return nil, fmt.Errorf("metric %s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return out, nil
}
