// Package envscan reads the few allowed variables of a process's
// environment, and nothing else: the environment block of
// /proc/<pid>/environ holds the workload's credentials beside them, and
// no other variable is ever copied, kept, logged or exported. It is the
// one allowlist of the project: podjoin reads TRACEPARENT, TRACESTATE,
// OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME through it,
// genai/training MLFLOW_TRACKING_URI (where a job's MLflow file store
// is), and gpu's TPU backend TPU_RUNTIME_METRICS_PORTS (where a TPU
// workload's runtime serves its metrics).
package envscan

import (
	"bytes"
	"fmt"
	"io"

	"github.com/xpuscope/xpuscope/internal/procfs"
)

// The only environment variables read. Every other variable of a process
// is skipped while scanning: never copied, kept, logged or exported.
const (
	EnvTraceparent        = "TRACEPARENT"
	EnvTracestate         = "TRACESTATE"
	EnvResourceAttributes = "OTEL_RESOURCE_ATTRIBUTES"
	EnvServiceName        = "OTEL_SERVICE_NAME"
	EnvMLflowTrackingURI  = "MLFLOW_TRACKING_URI"
	// EnvTPURuntimeMetricsPorts is where a TPU workload says which ports
	// its runtime (libtpu) serves its metrics on, comma-separated: the gpu
	// Source's TPU backend reads them there.
	EnvTPURuntimeMetricsPorts = "TPU_RUNTIME_METRICS_PORTS"
)

// Value caps: a longer value is dropped whole, never cut.
const (
	// MaxTraceparent leaves room for future traceparent versions, which
	// may append fields to the 55 bytes of version 00.
	MaxTraceparent = 256
	// MaxTracestate is what W3C Trace Context asks vendors to propagate at
	// least (32 list members).
	MaxTracestate         = 512
	MaxResourceAttributes = 4096
	MaxServiceName        = 256
	// MaxMLflowTrackingURI is a path's length (PATH_MAX) and a scheme.
	MaxMLflowTrackingURI      = 4096 + 16
	MaxTPURuntimeMetricsPorts = 256
)

// Vars holds the allowed variables of a process environment, as written.
// podjoin.Environ has its fields, in its order.
type Vars struct {
	Traceparent        string
	Tracestate         string
	ResourceAttributes string
	ServiceName        string
	MLflowTrackingURI  string
	// TPURuntimeMetricsPorts is TPU_RUNTIME_METRICS_PORTS as written.
	TPURuntimeMetricsPorts string
}

var envVars = [...]struct {
	prefix []byte // NAME=
	max    int
}{
	{[]byte(EnvTraceparent + "="), MaxTraceparent},
	{[]byte(EnvTracestate + "="), MaxTracestate},
	{[]byte(EnvResourceAttributes + "="), MaxResourceAttributes},
	{[]byte(EnvServiceName + "="), MaxServiceName},
	{[]byte(EnvMLflowTrackingURI + "="), MaxMLflowTrackingURI},
	{[]byte(EnvTPURuntimeMetricsPorts + "="), MaxTPURuntimeMetricsPorts},
}

// MaxEntry is the longest entry the scanner holds across reads: the
// longest allowed NAME= and its value cap.
const MaxEntry = len(EnvMLflowTrackingURI) + 1 + MaxMLflowTrackingURI

// Parser takes the allowed variables of an environment, one entry at a
// time.
type Parser struct {
	env  Vars
	seen [len(envVars)]bool
}

// Vars is what the parser took.
func (p *Parser) Vars() Vars { return p.env }

// Entry takes one NAME=value entry. The first occurrence of a name counts,
// as getenv(3) has it; a value over its cap is dropped.
func (p *Parser) Entry(e []byte) {
	for i, v := range envVars {
		if !bytes.HasPrefix(e, v.prefix) {
			continue
		}
		if p.seen[i] {
			return
		}
		p.seen[i] = true
		val := e[len(v.prefix):]
		if len(val) > v.max {
			return
		}
		s := string(val)
		switch i {
		case 0:
			p.env.Traceparent = s
		case 1:
			p.env.Tracestate = s
		case 2:
			p.env.ResourceAttributes = s
		case 3:
			p.env.ServiceName = s
		case 4:
			p.env.MLflowTrackingURI = s
		case 5:
			p.env.TPURuntimeMetricsPorts = s
		}
		return
	}
}

// wanted reports whether an unfinished entry may still become one the
// parser keeps: it is a prefix of NAME=, or NAME= and a value within the
// cap, for a name not seen yet.
func (p *Parser) wanted(tail []byte) bool {
	for i, v := range envVars {
		if p.seen[i] {
			continue
		}
		if len(tail) <= len(v.prefix) {
			if bytes.HasPrefix(v.prefix, tail) {
				return true
			}
		} else if bytes.HasPrefix(tail, v.prefix) && len(tail)-len(v.prefix) <= v.max {
			return true
		}
	}
	return false
}

// Parse returns the allowed variables of an environment block: the
// contents of /proc/<pid>/environ, NAME=value entries each ended by a NUL
// (a last entry without one counts too). Entries of any other name are
// skipped by comparing their first bytes; no string is built of them.
func Parse(b []byte) Vars {
	var p Parser
	for len(b) > 0 {
		var e []byte
		e, b, _ = bytes.Cut(b, []byte{0})
		p.Entry(e)
	}
	return p.env
}

// maxEmptyReads bounds the reads that return nothing and no error.
const maxEmptyReads = 100

// Scan reads an environment block from r, at most limit bytes, in pieces
// of len(buf), which must exceed MaxEntry, and returns what Parse would of
// the bytes read. Between reads it keeps only the
// unfinished entry at the end, and only when it may be an allowed variable;
// the rest of such an entry is skipped up to its NUL. An entry cut by the
// limit is dropped. buf is zeroed before scanEnviron returns, so that no
// byte of the environment outlives the call in it.
func Scan(r io.Reader, buf []byte, limit int) (Vars, error) {
	defer clear(buf)
	var p Parser
	held, total, empty := 0, 0, 0
	skipping := false // in an entry not kept: drop bytes up to its NUL
	for {
		room := min(len(buf)-held, limit-total)
		if room <= 0 {
			return p.env, nil // at the limit: an unfinished entry is dropped
		}
		n, err := r.Read(buf[held : held+room])
		total += n
		data := buf[:held+n]
		i := 0
		if skipping {
			if j := bytes.IndexByte(data, 0); j >= 0 {
				i, skipping = j+1, false
			} else {
				i = len(data)
			}
		}
		for {
			j := bytes.IndexByte(data[i:], 0)
			if j < 0 {
				break
			}
			p.Entry(data[i : i+j])
			i += j + 1
		}
		held = 0
		if tail := data[i:]; len(tail) > 0 {
			if p.wanted(tail) {
				held = copy(buf, tail)
			} else {
				skipping = true
			}
		}
		clear(buf[held:len(data)])
		switch {
		case err == io.EOF:
			if held > 0 {
				p.Entry(buf[:held])
			}
			return p.env, nil
		case err != nil:
			return p.env, err
		case n == 0:
			if empty++; empty > maxEmptyReads {
				return p.env, io.ErrNoProgress
			}
		}
	}
}

// Reading a process's environment.
const (
	// Limit caps what is read of /proc/<pid>/environ. Pods in a namespace
	// with many services carry a few variables per service
	// (enableServiceLinks), so the allowed ones can sit far in.
	Limit = 1 << 20
	// BufSize is the size of the piece read at a time that Read's callers
	// give it; only an allowed variable that straddles two pieces is held
	// over.
	BufSize = 16 << 10
)

// Read reads the allowed variables of process p's environment, through
// buf (BufSize bytes; it must exceed MaxEntry), which is zeroed before
// Read returns, whatever happens. The scanner is ours, not
// prometheus/procfs's Proc.Environ: that makes a string of every
// variable, credentials included.
func Read(p procfs.Proc, buf []byte) (Vars, error) {
	var env Vars
	err := p.Environ(func(r io.Reader) (err error) {
		env, err = Scan(r, buf, Limit)
		return err
	})
	if err != nil {
		clear(buf)
		return Vars{}, fmt.Errorf("envscan: %w", err)
	}
	return env, nil
}
