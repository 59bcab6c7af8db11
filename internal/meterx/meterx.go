// Package meterx creates OpenTelemetry instruments from semconv
// descriptors, so that the name, unit and description always come from the
// registry and the instrument always matches the registered kind.
package meterx

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope/semconv"
)

func check(d semconv.Metric, want semconv.Kind) error {
	if d.Kind != want {
		return fmt.Errorf("metric %s is registered as a %v, not a %v", d.Name, d.Kind, want)
	}
	return nil
}

func wrap(d semconv.Metric, err error) error {
	if err != nil {
		return fmt.Errorf("create instrument %s: %w", d.Name, err)
	}
	return nil
}

// Float64ObservableGauge creates the gauge d describes.
func Float64ObservableGauge(m metric.Meter, d semconv.Metric) (metric.Float64ObservableGauge, error) {
	if err := check(d, semconv.Gauge); err != nil {
		return nil, err
	}
	i, err := m.Float64ObservableGauge(d.Name, metric.WithUnit(d.Unit), metric.WithDescription(d.Description))
	return i, wrap(d, err)
}

// Int64ObservableUpDownCounter creates the up-down counter d describes.
func Int64ObservableUpDownCounter(m metric.Meter, d semconv.Metric) (metric.Int64ObservableUpDownCounter, error) {
	if err := check(d, semconv.UpDownCounter); err != nil {
		return nil, err
	}
	i, err := m.Int64ObservableUpDownCounter(d.Name, metric.WithUnit(d.Unit), metric.WithDescription(d.Description))
	return i, wrap(d, err)
}

// Int64ObservableCounter creates the monotonic counter d describes.
func Int64ObservableCounter(m metric.Meter, d semconv.Metric) (metric.Int64ObservableCounter, error) {
	if err := check(d, semconv.Counter); err != nil {
		return nil, err
	}
	i, err := m.Int64ObservableCounter(d.Name, metric.WithUnit(d.Unit), metric.WithDescription(d.Description))
	return i, wrap(d, err)
}

// Float64ObservableCounter creates the monotonic counter d describes.
func Float64ObservableCounter(m metric.Meter, d semconv.Metric) (metric.Float64ObservableCounter, error) {
	if err := check(d, semconv.Counter); err != nil {
		return nil, err
	}
	i, err := m.Float64ObservableCounter(d.Name, metric.WithUnit(d.Unit), metric.WithDescription(d.Description))
	return i, wrap(d, err)
}

// Float64Histogram creates the histogram d describes, with its buckets.
func Float64Histogram(m metric.Meter, d semconv.Metric) (metric.Float64Histogram, error) {
	if err := check(d, semconv.Histogram); err != nil {
		return nil, err
	}
	i, err := m.Float64Histogram(d.Name, metric.WithUnit(d.Unit), metric.WithDescription(d.Description),
		metric.WithExplicitBucketBoundaries(d.Buckets...))
	return i, wrap(d, err)
}

// Int64Histogram creates the histogram d describes, with its buckets.
func Int64Histogram(m metric.Meter, d semconv.Metric) (metric.Int64Histogram, error) {
	if err := check(d, semconv.Histogram); err != nil {
		return nil, err
	}
	i, err := m.Int64Histogram(d.Name, metric.WithUnit(d.Unit), metric.WithDescription(d.Description),
		metric.WithExplicitBucketBoundaries(d.Buckets...))
	return i, wrap(d, err)
}

// Attrs is one attribute set, turned once into the option slices that
// observing, adding and recording take, so that reporting a value
// allocates nothing.
type Attrs struct {
	Set     attribute.Set
	Observe []metric.ObserveOption
	Record  []metric.RecordOption
}

// NewAttrs builds the Attrs of kvs.
func NewAttrs(kvs ...attribute.KeyValue) Attrs {
	set := attribute.NewSet(kvs...)
	o := metric.WithAttributeSet(set)
	return Attrs{Set: set, Observe: []metric.ObserveOption{o}, Record: []metric.RecordOption{o}}
}

// Float64Counter creates the synchronous counter d describes.
func Float64Counter(m metric.Meter, d semconv.Metric) (metric.Float64Counter, error) {
	if err := check(d, semconv.Counter); err != nil {
		return nil, err
	}
	i, err := m.Float64Counter(d.Name, metric.WithUnit(d.Unit), metric.WithDescription(d.Description))
	return i, wrap(d, err)
}

// Builder creates a Source's instruments one after the other and keeps
// their errors, so that the whole set is written as a list and checked
// once, with Err.
type Builder struct {
	Meter metric.Meter
	errs  []error
}

func (b *Builder) keep(err error) {
	if err != nil {
		b.errs = append(b.errs, err)
	}
}

// Err joins the errors of every instrument that could not be created.
func (b *Builder) Err() error { return errors.Join(b.errs...) }

// Gauge creates the observable gauge d describes.
func (b *Builder) Gauge(d semconv.Metric) metric.Float64ObservableGauge {
	i, err := Float64ObservableGauge(b.Meter, d)
	b.keep(err)
	return i
}

// UpDownCounter creates the observable up-down counter d describes.
func (b *Builder) UpDownCounter(d semconv.Metric) metric.Int64ObservableUpDownCounter {
	i, err := Int64ObservableUpDownCounter(b.Meter, d)
	b.keep(err)
	return i
}

// Counter creates the observable integer counter d describes.
func (b *Builder) Counter(d semconv.Metric) metric.Int64ObservableCounter {
	i, err := Int64ObservableCounter(b.Meter, d)
	b.keep(err)
	return i
}

// FloatCounter creates the observable float counter d describes.
func (b *Builder) FloatCounter(d semconv.Metric) metric.Float64ObservableCounter {
	i, err := Float64ObservableCounter(b.Meter, d)
	b.keep(err)
	return i
}

// Histogram creates the float histogram d describes.
func (b *Builder) Histogram(d semconv.Metric) metric.Float64Histogram {
	i, err := Float64Histogram(b.Meter, d)
	b.keep(err)
	return i
}

// IntHistogram creates the integer histogram d describes.
func (b *Builder) IntHistogram(d semconv.Metric) metric.Int64Histogram {
	i, err := Int64Histogram(b.Meter, d)
	b.keep(err)
	return i
}

// AddCounter creates the synchronous float counter d describes.
func (b *Builder) AddCounter(d semconv.Metric) metric.Float64Counter {
	i, err := Float64Counter(b.Meter, d)
	b.keep(err)
	return i
}
