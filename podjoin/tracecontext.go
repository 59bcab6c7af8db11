package podjoin

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// envCarrier hands the two trace-context variables to the W3C propagator.
type envCarrier struct{ traceparent, tracestate string }

func (c envCarrier) Get(key string) string {
	switch key {
	case "traceparent":
		return c.traceparent
	case "tracestate":
		return c.tracestate
	}
	return ""
}

func (envCarrier) Set(string, string) {}
func (envCarrier) Keys() []string     { return []string{"traceparent", "tracestate"} }

// ParseTraceparent returns the remote span context that a TRACEPARENT and
// a TRACESTATE value carry, as the W3C Trace Context specification reads
// them (OpenTelemetry's environment-variable carriers use the same
// format), through OpenTelemetry's TraceContext propagator: version-
// traceid-parentid-flags in lower-case hex; version ff is invalid; version
// 00 has exactly these four fields and no reserved flag set; a later
// version may append fields after a dash, which are ignored; an all-zero
// trace or parent id is invalid. Only the sampled and random flags are
// kept. A tracestate that does not parse is dropped without affecting the
// traceparent. An invalid traceparent gives the zero, invalid,
// SpanContext.
func ParseTraceparent(traceparent, tracestate string) trace.SpanContext {
	if traceparent == "" {
		return trace.SpanContext{}
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), envCarrier{traceparent, tracestate})
	return trace.SpanContextFromContext(ctx)
}

// Bounds of ParseResourceAttributes.
const (
	// MaxResourceAttrs is the most attributes kept; later keys are
	// dropped.
	MaxResourceAttrs = 32
	// MaxResourceKey is the longest key kept; a pair with a longer key is
	// dropped.
	MaxResourceKey = 256
	// MaxResourceValue is the longest value kept; a longer one is cut, at
	// a character boundary, as an SDK's attribute value length limit
	// does.
	MaxResourceValue = 256
)

// ParseResourceAttributes reads an OTEL_RESOURCE_ATTRIBUTES value as the
// OpenTelemetry resource SDK specification defines it: a comma-separated
// list of key=value pairs in the W3C Baggage format without properties,
// keys and values percent-encoded (',' and '=' must be; '+' is a plus),
// surrounding spaces and tabs trimmed, every value a string. Empty list
// members are skipped. On a decoding error (a pair without '=', an empty
// key, a bad percent escape) the whole value is discarded, as the
// specification asks, and the error says which member. A key given twice
// keeps its last value, at its first position. Decoded text that is not
// UTF-8 has its bad bytes replaced. At most MaxResourceAttrs attributes are
// kept, with keys of at most MaxResourceKey bytes and values cut to
// MaxResourceValue bytes.
func ParseResourceAttributes(s string) ([]attribute.KeyValue, error) {
	var out []attribute.KeyValue
	for n := 1; s != ""; n++ {
		var member string
		member, s, _ = strings.Cut(s, ",")
		member = strings.Trim(member, " \t")
		if member == "" {
			continue
		}
		k, v, ok := strings.Cut(member, "=")
		if !ok {
			return nil, fmt.Errorf("podjoin: %s: member %d has no '='", EnvResourceAttributes, n)
		}
		key, err := url.PathUnescape(strings.Trim(k, " \t"))
		if err != nil {
			return nil, fmt.Errorf("podjoin: %s: member %d: key: %w", EnvResourceAttributes, n, err)
		}
		val, err := url.PathUnescape(strings.Trim(v, " \t"))
		if err != nil {
			return nil, fmt.Errorf("podjoin: %s: member %d: value: %w", EnvResourceAttributes, n, err)
		}
		if key == "" {
			return nil, fmt.Errorf("podjoin: %s: member %d has an empty key", EnvResourceAttributes, n)
		}
		key = strings.ToValidUTF8(key, string(utf8.RuneError))
		if len(key) > MaxResourceKey {
			continue
		}
		val = cut(strings.ToValidUTF8(val, string(utf8.RuneError)), MaxResourceValue)
		if i := indexKey(out, key); i >= 0 {
			out[i].Value = attribute.StringValue(val)
		} else if len(out) < MaxResourceAttrs {
			out = append(out, attribute.String(key, val))
		}
	}
	return out, nil
}

func indexKey(kvs []attribute.KeyValue, key string) int {
	for i, kv := range kvs {
		if string(kv.Key) == key {
			return i
		}
	}
	return -1
}

// cut shortens valid UTF-8 s to at most n bytes, at a character boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
