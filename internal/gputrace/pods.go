package gputrace

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Resolver places traced processes in their containers and pods, for
// WithResolver. *podjoin.Resolver is one.
type Resolver interface {
	// ProcessAttributes returns the attributes of process pid's container
	// and pod, for its series and spans, and the remote span context its
	// spans are children of (invalid for none). The Source asks once per
	// process, when it first sees it.
	ProcessAttributes(pid int) ([]attribute.KeyValue, trace.SpanContext)
	// Forget says the Source saw process pid exit.
	Forget(pid int)
}
