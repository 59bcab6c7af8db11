package semconv

import "go.opentelemetry.io/otel/attribute"

// Values of ErrorType on XpuscopeBPFRingErrors.
const (
	RingErrorRead   = "read"   // a read of the ring buffer failed
	RingErrorDecode = "decode" // a record had no layout the decoder knows
)

// XpuscopeBPFRingErrors is the self-metric of every eBPF Source's ring
// buffer reader (internal/bpfsource): cudatrace, hiptrace, the genai
// capture and genai/node each report it under their own instrumentation
// scope.
var XpuscopeBPFRingErrors = Metric{
	Name: "xpuscope.bpf.ring.errors", Kind: Counter, Unit: "{error}", Origin: Self,
	Description: "Failed reads of an eBPF Source's ring buffer, and records in it that could not be decoded, by error.type (read, decode). A read that fails ends its batch, and the next waits a poll interval.",
	Attributes:  []attribute.Key{ErrorType},
	Note:        "Reported by cudatrace, hiptrace, the genai capture and genai/node, each under its own instrumentation scope.",
}

var bpfMetrics = []Metric{XpuscopeBPFRingErrors}
