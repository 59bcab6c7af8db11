package semconv

import "go.opentelemetry.io/otel/attribute"

// Kind is the OpenTelemetry data-model kind of a metric. Whether the
// instrument is synchronous or observable is an implementation detail of
// the emitting Source and does not change the kind.
type Kind int

// Instrument kinds.
const (
	Counter       Kind = iota + 1 // monotonic sum
	UpDownCounter                 // non-monotonic sum
	Gauge                         // last value
	Histogram                     // distribution with explicit buckets
)

func (k Kind) String() string {
	switch k {
	case Counter:
		return "Counter"
	case UpDownCounter:
		return "UpDownCounter"
	case Gauge:
		return "Gauge"
	case Histogram:
		return "Histogram"
	}
	return "Kind(?)"
}

// Origin says who defines a name.
type Origin int

// Origins.
const (
	// OTel names are defined by the OpenTelemetry semantic conventions.
	OTel Origin = iota + 1
	// Extension names are defined by xpuscope where OpenTelemetry has none.
	Extension
	// Self names describe xpuscope itself: failed reads, drops, overflow.
	Self
)

func (o Origin) String() string {
	switch o {
	case OTel:
		return "OpenTelemetry"
	case Extension:
		return "extension"
	case Self:
		return "self"
	}
	return "Origin(?)"
}

// Metric describes one metric.
type Metric struct {
	Name        string
	Kind        Kind
	Unit        string // UCUM, as OpenTelemetry writes it: "1", "By", "W", "J", "Cel", "Hz", "{error}"
	Description string
	Origin      Origin
	// Attributes lists every attribute the metric can carry.
	Attributes []attribute.Key
	// Buckets are the explicit histogram boundaries; nil for other kinds.
	Buckets []float64
	// BucketsKeptBy names the one instrumentation scope that reports the
	// histogram with the bucket bounds of the figures it reads, never
	// re-bucketed (genai/serving re-exports a model server's own
	// histograms); Buckets, where set, are those every other scope
	// records with.
	BucketsKeptBy string
	// Note documents availability: which backends fill it, where it is
	// omitted and why.
	Note string
}

// Attribute describes one attribute key.
type Attribute struct {
	Key         attribute.Key
	Type        string // as OpenTelemetry names attribute types: "string", "int", "double", "boolean", "string[]"
	Description string
	Origin      Origin
	// Values lists the closed set of values, where the set is closed.
	Values []string
}

// Span describes one span name.
type Span struct {
	Name        string
	Description string
	Attributes  []attribute.Key
}
