package genai

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Resolver places the processes making LLM API calls in their containers
// and pods, for WithResolver. *podjoin.Resolver is one.
type Resolver interface {
	// ProcessAttributes returns the attributes of process pid's container
	// and pod, for the spans of its calls, and the remote span context
	// they are children of (invalid for none). The capture asks once per
	// process, at its first LLM API call.
	ProcessAttributes(pid int) ([]attribute.KeyValue, trace.SpanContext)
	// Forget says the capture saw process pid, which it asked about, exit:
	// its last connection went, and so did the process.
	Forget(pid int)
}

// capProc is a process with connections in the capture's table: how
// many, and, once its first LLM API call is delivered, what the resolver
// says of it.
type capProc struct {
	pid      uint32
	conns    int
	resolved bool
	attrs    []attribute.KeyValue
	parent   trace.SpanContext
}

// resolve asks r about p, the first time only.
func (p *capProc) resolve(r Resolver) {
	if !p.resolved {
		p.attrs, p.parent = r.ProcessAttributes(int(p.pid))
		p.resolved = true
	}
}

// alive reports whether process pid exists.
func (c *captureConfig) alive(pid uint32) bool {
	return c.procfs.Proc(int(pid)).Alive()
}
