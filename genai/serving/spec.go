package serving

import (
	"path/filepath"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/attribute"

	"github.com/xpuscope/xpuscope/semconv"
)

// proc is what the Source reads of a process to recognise it: the base
// name of its executable, its comm (15 bytes at most) and its command
// line.
type proc struct {
	exe, comm string
	args      []string
}

// spec is how the Source finds and reads one kind of model server. Each
// kind's is in a file of its own (vllm.go, tgi.go, …).
type spec struct {
	kind Kind
	// role returns the role of a process of this kind (a
	// semconv.ServerRole* value), or "" for a process of another kind.
	role func(p *proc) string
	// endpoint reads the flags of the server's processes (each one's
	// arguments): the ports its metrics may be on, the likeliest first,
	// and the port of its API where that differs (TGI's /info); or why
	// it serves no metrics ("" when it may).
	endpoint func(args [][]string) (ports []uint16, why string)
	// path is the metrics path; nil for /metrics. TF Serving's comes from
	// its monitoring configuration, read through the process with read.
	path func(args [][]string, read func(path string) ([]byte, error)) (string, string)
	// info, when set, asks the server's API for its identity and model
	// (TGI's /info), at the ports the endpoint function gave.
	info func(body []byte) (model string, ok bool)
	// profile maps the server's metrics; nil for a kind without an
	// endpoint (ONNX Runtime).
	profile *profile
}

// specs are the kinds the Source reads from processes, in the order a
// process is tried against them. ONNX Runtime is found by the libraries
// a process maps, after them.
var specs = []*spec{&vllmSpec, &tgiSpec, &tritonSpec, &torchServeSpec, &tfServingSpec}

// specOf returns the spec of kind k.
func specOf(k Kind) *spec {
	for _, s := range append(specs, &onnxSpec) {
		if s.kind == k {
			return s
		}
	}
	return nil
}

// recognise returns the kind and role of process p, or false.
func recognise(p *proc) (*spec, string, bool) {
	for _, s := range specs {
		if r := s.role(p); r != "" {
			return s, r, true
		}
	}
	return nil, "", false
}

// program returns the base name of the program a command line runs:
// argv[0], or the script an interpreter (python, java is not one) runs,
// whose base name is then script.
func program(args []string) (argv0, script string) {
	if len(args) == 0 {
		return "", ""
	}
	argv0 = filepath.Base(args[0])
	if strings.HasPrefix(argv0, "python") && len(args) > 1 && !strings.HasPrefix(args[1], "-") {
		script = filepath.Base(args[1])
	}
	return argv0, script
}

// isProgram reports whether p runs the program name: its executable, its
// argv[0], or the script its Python runs.
func (p *proc) isProgram(name string) bool {
	argv0, script := program(p.args)
	return p.exe == name || argv0 == name || script == name
}

// flag returns the value of a command-line flag given as "--name value"
// or "--name=value" (the last one given wins), and whether it was given.
func flag(args []string, name string) (string, bool) {
	val, found := "", false
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			val, found = v, true
		} else if a == name && i+1 < len(args) {
			val, found = args[i+1], true
		}
	}
	return val, found
}

// portFlag returns the port a flag gives, in any of the processes'
// arguments; 0 for none, or one that is not a port.
func portFlag(args [][]string, name string) uint16 {
	for _, a := range args {
		if v, ok := flag(a, name); ok {
			if p, err := strconv.ParseUint(v, 10, 16); err == nil {
				return uint16(p)
			}
		}
	}
	return 0
}

// ports returns the non-zero ports in order, each once.
func ports(ps ...uint16) []uint16 {
	var out []uint16
	for _, p := range ps {
		if p != 0 && !contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func contains(ps []uint16, p uint16) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// Outcome readers of the rules.

// tokenType is the rule attribute of the input or output tokens.
func tokenType(t string) []attribute.KeyValue {
	return []attribute.KeyValue{semconv.GenAITokenType.String(t)}
}

// phase is the rule attribute of a cumulative time's phase.
func phase(p string) []attribute.KeyValue {
	return []attribute.KeyValue{semconv.XpuscopeGenAIServerPhase.String(p)}
}

// failed returns an outcome reader that puts the value of label on
// error.type (through the server's cap of words), or none when the
// value is one of ok (the statuses that mean success).
func failed(label string, ok ...string) func([]*dto.LabelPair, *values) ([]attribute.KeyValue, bool) {
	return func(labels []*dto.LabelPair, v *values) ([]attribute.KeyValue, bool) {
		w := labelOf(labels, []string{label})
		for _, o := range ok {
			if w == o {
				return nil, true
			}
		}
		if w == "" {
			w = semconv.Other
		}
		return []attribute.KeyValue{semconv.ErrorType.String(v.word(w))}, true
	}
}
