package podjoin

import (
	"bytes"
	"io"
)

// The only environment variables podjoin reads. Every other variable of a
// process is skipped while scanning: never copied, kept, logged or
// exported.
const (
	EnvTraceparent        = "TRACEPARENT"
	EnvTracestate         = "TRACESTATE"
	EnvResourceAttributes = "OTEL_RESOURCE_ATTRIBUTES"
	EnvServiceName        = "OTEL_SERVICE_NAME"
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
	MaxTracestate             = 512
	MaxResourceAttributes     = 4096
	MaxServiceName            = 256
	MaxTPURuntimeMetricsPorts = 256
)

// Environ holds the allowed variables of a process environment, as
// written: ParseTraceparent and ParseResourceAttributes read them.
type Environ struct {
	Traceparent        string
	Tracestate         string
	ResourceAttributes string
	ServiceName        string
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
	{[]byte(EnvTPURuntimeMetricsPorts + "="), MaxTPURuntimeMetricsPorts},
}

// maxEnvEntry is the longest entry the scanner holds across reads: the
// longest allowed NAME= and its value cap.
const maxEnvEntry = len(EnvResourceAttributes) + 1 + MaxResourceAttributes

type envParser struct {
	env  Environ
	seen [len(envVars)]bool
}

// entry takes one NAME=value entry. The first occurrence of a name counts,
// as getenv(3) has it; a value over its cap is dropped.
func (p *envParser) entry(e []byte) {
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
			p.env.TPURuntimeMetricsPorts = s
		}
		return
	}
}

// wanted reports whether an unfinished entry may still become one the
// parser keeps: it is a prefix of NAME=, or NAME= and a value within the
// cap, for a name not seen yet.
func (p *envParser) wanted(tail []byte) bool {
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

// ParseEnviron returns the allowed variables of an environment block: the
// contents of /proc/<pid>/environ, NAME=value entries each ended by a NUL
// (a last entry without one counts too). Entries of any other name are
// skipped by comparing their first bytes; no string is built of them.
func ParseEnviron(b []byte) Environ {
	var p envParser
	for len(b) > 0 {
		var e []byte
		e, b, _ = bytes.Cut(b, []byte{0})
		p.entry(e)
	}
	return p.env
}

// maxEmptyReads bounds the reads that return nothing and no error.
const maxEmptyReads = 100

// scanEnviron reads an environment block from r, at most limit bytes, in
// pieces of len(buf), which must exceed maxEnvEntry, and returns what
// ParseEnviron would of the bytes read. Between reads it keeps only the
// unfinished entry at the end, and only when it may be an allowed variable;
// the rest of such an entry is skipped up to its NUL. An entry cut by the
// limit is dropped. buf is zeroed before scanEnviron returns, so that no
// byte of the environment outlives the call in it.
func scanEnviron(r io.Reader, buf []byte, limit int) (Environ, error) {
	defer clear(buf)
	var p envParser
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
			p.entry(data[i : i+j])
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
				p.entry(buf[:held])
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
