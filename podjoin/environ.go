package podjoin

import (
	"io"

	"github.com/xpuscope/xpuscope/internal/envscan"
)

// The only environment variables podjoin reads (package internal/envscan's
// allowlist, the project's one). Every other variable of a process is
// skipped while scanning: never copied, kept, logged or exported.
// MLFLOW_TRACKING_URI is on the list for genai/training, which reads a
// training job's MLflow file store where it says, and
// TPU_RUNTIME_METRICS_PORTS for gpu's TPU backend (through ReadEnviron);
// the Resolver reads them with the rest and uses them for nothing.
const (
	EnvTraceparent            = envscan.EnvTraceparent
	EnvTracestate             = envscan.EnvTracestate
	EnvResourceAttributes     = envscan.EnvResourceAttributes
	EnvServiceName            = envscan.EnvServiceName
	EnvMLflowTrackingURI      = envscan.EnvMLflowTrackingURI
	EnvTPURuntimeMetricsPorts = envscan.EnvTPURuntimeMetricsPorts
)

// Value caps: a longer value is dropped whole, never cut.
const (
	// MaxTraceparent leaves room for future traceparent versions, which
	// may append fields to the 55 bytes of version 00.
	MaxTraceparent = envscan.MaxTraceparent
	// MaxTracestate is what W3C Trace Context asks vendors to propagate at
	// least (32 list members).
	MaxTracestate         = envscan.MaxTracestate
	MaxResourceAttributes = envscan.MaxResourceAttributes
	MaxServiceName        = envscan.MaxServiceName
	// MaxMLflowTrackingURI is a path's length (PATH_MAX) and a scheme.
	MaxMLflowTrackingURI      = envscan.MaxMLflowTrackingURI
	MaxTPURuntimeMetricsPorts = envscan.MaxTPURuntimeMetricsPorts
)

// Environ holds the allowed variables of a process environment, as
// written: ParseTraceparent and ParseResourceAttributes read them.
type Environ struct {
	Traceparent        string
	Tracestate         string
	ResourceAttributes string
	ServiceName        string
	MLflowTrackingURI  string
	// TPURuntimeMetricsPorts is TPU_RUNTIME_METRICS_PORTS as written.
	TPURuntimeMetricsPorts string
}

// maxEnvEntry is the longest entry the scanner holds across reads.
const maxEnvEntry = envscan.MaxEntry

// ParseEnviron returns the allowed variables of an environment block: the
// contents of /proc/<pid>/environ, NAME=value entries each ended by a NUL
// (a last entry without one counts too). Entries of any other name are
// skipped by comparing their first bytes; no string is built of them.
func ParseEnviron(b []byte) Environ { return Environ(envscan.Parse(b)) }

// scanEnviron is envscan.Scan, in podjoin's terms.
func scanEnviron(r io.Reader, buf []byte, limit int) (Environ, error) {
	v, err := envscan.Scan(r, buf, limit)
	return Environ(v), err
}
