package genai

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/tlsdecrypt"
)

// capProc is a process with connections in the capture's table: how
// many, and, once its first LLM API call is delivered, what the resolver
// says of it.
type capProc struct {
	pid      uint32
	conns    int
	resolved bool
	attrs    []attribute.KeyValue
	parent   trace.SpanContext
	// keys are the TLS secrets the process logged, for its connections
	// read at their sockets: by process, so that no process's secrets
	// name another's connection.
	keys *tlsdecrypt.Keys
}

// resolve asks r about p, the first time only.
func (p *capProc) resolve(r xpuscope.ProcessResolver) {
	if !p.resolved {
		p.attrs, p.parent = r.ProcessAttributes(int(p.pid))
		p.resolved = true
	}
}

// alive reports whether process pid exists.
func (c *captureConfig) alive(pid uint32) bool {
	return c.procfs.Proc(int(pid)).Alive()
}
