package semconv

import "go.opentelemetry.io/otel/attribute"

// XpuscopeUprobeLateReason says why a file was attached to after a
// process had begun to use it.
const XpuscopeUprobeLateReason = attribute.Key("xpuscope.uprobe.late.reason")

// Values of XpuscopeUprobeLateReason.
const (
	LateReasonNotHeld   = "not_held"  // named like a target, and the Source does not hold processes (its load hold is off)
	LateReasonUnmatched = "unmatched" // named like no target, in a process that used no traced file: found by its symbols
	LateReasonTraced    = "traced"    // the process was under ptrace: a stop would have shown in its debugger
	LateReasonTerminal  = "terminal"  // the process had a controlling terminal: job control would have seen the stop
	LateReasonStopped   = "stopped"   // the process was stopped, or stopping, already
	LateReasonAgent     = "agent"     // the process runs a watcher itself
	LateReasonFull      = "full"      // no room to hold it: the watcher's ring buffer or its hold table was full
	LateReasonTimeout   = "timeout"   // held, and let go at the hold's limit before the probes were attached
	LateReasonSweep     = "sweep"     // no hook saw it mapped: found by a periodic sweep
	LateReasonRescan    = "rescan"    // the kernel could not walk the process's mappings (they were busy, or the kernel predates 6.7): found by reading them
)

// XpuscopeUprobeAttachedLate is the self-metric of every uprobe Source
// (cudatrace, hiptrace, the genai capture): what its calls may have lost
// because a file was probed only after a process started using it.
var XpuscopeUprobeAttachedLate = Metric{
	Name: "xpuscope.uprobe.attached_late", Kind: Counter, Unit: "{file}", Origin: Self,
	Description: "Files attached to after a process had mapped them and run on: the calls that process made into them before the probes were live were not seen. Each file counts once, when it is attached, whichever process on the host mapped it first. A file the watcher noticed as it was mapped, and whose process it held until the probes were live, is not counted.",
	Attributes:  []attribute.Key{XpuscopeTarget, XpuscopeUprobeLateReason},
	Note:        "Reported by cudatrace, hiptrace and the genai capture, each under its own instrumentation scope. Files found at start-up, mapped by processes that ran before the Source, are not counted.",
}

var uprobeMetrics = []Metric{XpuscopeUprobeAttachedLate}

var uprobeAttributes = []Attribute{
	{XpuscopeUprobeLateReason, "string", "Why a uprobe Source attached to a file only after a process had run on with it mapped.", Self,
		[]string{LateReasonNotHeld, LateReasonUnmatched, LateReasonTraced, LateReasonTerminal, LateReasonStopped,
			LateReasonAgent, LateReasonFull, LateReasonTimeout, LateReasonSweep, LateReasonRescan}},
}
