package xpuscope

import (
	"io"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Version is the version of this module. Every Source creates its Meter
// and Tracer with it as the instrumentation scope's version.
const Version = "0.2.0"

// Source is what every data source's New returns. Close stops the source
// and releases everything it holds; calling it again returns nil.
type Source interface {
	io.Closer
}

// ProcessResolver places the processes a Source observes in their
// containers and pods. *podjoin.Resolver is one; each Source takes it
// through its WithResolver option.
type ProcessResolver interface {
	// ProcessAttributes returns the attributes of process pid's container
	// and pod, and the remote span context the process's spans are
	// children of (invalid for none: a workload started without
	// TRACEPARENT). A Source asks once per process, when it first sees
	// it, never per event.
	ProcessAttributes(pid int) ([]attribute.KeyValue, trace.SpanContext)
	// Forget says the Source dropped process pid: it exited, or left
	// what the Source observes.
	Forget(pid int)
}

// Attachment is a file that a uprobe-based Source (cudatrace, hiptrace,
// the genai capture) has attached its probes to. A uprobe fires in every
// process that maps the file, so a file is attached to once, whichever
// process first showed it.
type Attachment struct {
	// Target is the kind of file, as the Source names it ("libcudart",
	// "libssl").
	Target string
	// Path is the file's path as the first process that mapped it sees
	// it.
	Path string
	// PID is that process.
	PID int
	// Dev and Inode identify the file.
	Dev, Inode uint64
	// Symbols are the functions probed in it.
	Symbols []string
	// AttachedAt is when the probes were attached.
	AttachedAt time.Time
	// AttachErrors are the probes that could not be attached, with why.
	AttachErrors []string
	// Late says why the probes were attached only after PID had mapped
	// the file and run on (a semconv.LateReason* value; its calls into
	// the file before AttachedAt were not seen), or is "" when they were
	// live before its first call into it, or the file was found at
	// start-up. Each late file counts once in
	// xpuscope.uprobe.attached_late.
	Late string
}

// Rejection is a file that looked like one a Source probes (by its name)
// but could not be probed: stripped of the symbols, say.
type Rejection struct {
	Target string
	Path   string
	PID    int
	Reason string
}
