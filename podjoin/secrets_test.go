package podjoin

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// Secrets a workload's environment holds beside the variables podjoin
// reads. None may reach anything the Resolver returns or keeps.
var secrets = []string{
	"wJalrXUtnFEMI-K7MDENG-bPxRfiCYzSECRET1",
	"sk-proj-SECRET2-4f9a8b7c6d5e4f3a2b1c",
	"Bearer-SECRET3-otlp-header-token",
	"SECRET4-inside-a-huge-variable",
	"SECRET5-tracestate-lookalike",
	"SECRET6-mlflow-token",
}

// secretEnviron is an environment with secrets around the allowed
// variables: one in a variable that straddles two of the scanner's read
// pieces after a prefix of an allowed name (OTEL_), one deep in a large
// variable, one in a variable whose name starts like an allowed one.
func secretEnviron() []byte {
	var b []byte
	add := func(s string) { b = append(append(b, s...), 0) }
	add("AWS_SECRET_ACCESS_KEY=" + secrets[0])
	add("OPENAI_API_KEY=" + secrets[1])
	add("TRACEPARENT=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	add("FILLER=" + strings.Repeat("f", environBuf-len(b)-len("FILLER=")-3))
	// "OTEL_" ends the first piece; the scanner holds it over.
	add("OTEL_EXPORTER_OTLP_HEADERS=Authorization=" + secrets[2])
	add("BIG=" + strings.Repeat("b", 2*environBuf) + secrets[3] + strings.Repeat("b", environBuf))
	add("TRACESTATEX=" + secrets[4])
	add("MLFLOW_TRACKING_TOKEN=" + secrets[5])
	add("MLFLOW_TRACKING_URI=file:///data/mlruns")
	add("OTEL_SERVICE_NAME=payments")
	add("OTEL_RESOURCE_ATTRIBUTES=team=ml,deployment.environment=prod")
	return b
}

func TestEnvironSecretsAreNotKept(t *testing.T) {
	block := secretEnviron()
	i := bytes.Index(block, []byte("OTEL_EXPORTER"))
	require.GreaterOrEqual(t, i, environBuf-len("OTEL_"), "fixture: OTEL_EXPORTER… does not straddle the %d-byte piece", environBuf)
	require.Less(t, i, environBuf, "fixture: OTEL_EXPORTER… does not straddle the %d-byte piece", environBuf)
	proc := t.TempDir()
	writeProc(t, proc, 500, 7, podA, block)
	r, reader := newTestResolver(t, proc, "", WithRefresh(time.Hour)) // no goroutine runs while the test walks r

	info := r.Process(500)
	again := r.Process(500) // from the cache
	require.Equal(t, "payments", info.ServiceName, "allowed variables not read: %+v", info)
	require.True(t, info.SpanContext.IsValid(), "allowed variables not read: %+v", info)
	require.Len(t, info.ResourceAttrs, 2, "allowed variables not read: %+v", info)
	outputs := []string{
		fmt.Sprintf("%+v", info), fmt.Sprintf("%#v", again), fmt.Sprintf("%+v", info.Attributes()),
		fmt.Sprintf("%+v", r.Status()), fmt.Sprintf("%+v", testutil.Collect(t, reader)),
		fmt.Sprintf("%+v", ParseEnviron(block)),
	}
	for _, out := range outputs {
		for _, s := range secrets {
			assert.NotContains(t, out, s, "secret in output")
		}
	}
	require.Contains(t, outputs[0], "payments", "the output check sees nothing") // the check must be able to fail

	assert.False(t, bytes.ContainsFunc(r.envBuf, func(c rune) bool { return c != 0 }), "the environment buffer is not zeroed after the read")
	w := &memWalker{seen: map[visit]bool{}}
	for _, root := range []any{r, r.kube.Load(), r.logs.Load()} {
		w.walk(reflect.ValueOf(root), "r")
	}
	for _, s := range secrets {
		assert.Empty(t, w.find(s), "secret %q kept in these", s)
	}
	require.NotEmpty(t, w.find("payments"), "the walk found %d strings and not the service name: it cannot see the cache", w.strings)
	require.GreaterOrEqual(t, w.strings, 10, "the walk found too few strings: it cannot see the cache")
}

// memWalker collects every string and byte slice reachable from a value,
// unexported fields included.
type memWalker struct {
	seen    map[visit]bool
	found   []found
	strings int
}

type visit struct {
	ptr uintptr
	typ reflect.Type
	n   int
}

type found struct{ path, text string }

func (w *memWalker) find(s string) []string {
	var paths []string
	for _, f := range w.found {
		if strings.Contains(f.text, s) {
			paths = append(paths, f.path)
		}
	}
	return paths
}

func (w *memWalker) walk(v reflect.Value, path string) {
	if !v.IsValid() {
		return
	}
	switch v.Kind() {
	case reflect.String:
		w.strings++
		w.found = append(w.found, found{path, v.String()})
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		if v.Kind() == reflect.Pointer {
			k := visit{v.Pointer(), v.Type(), 0}
			if w.seen[k] {
				return
			}
			w.seen[k] = true
		}
		w.walk(v.Elem(), path)
	case reflect.Struct:
		if v.Type().PkgPath() == "context" {
			return // the refresh goroutine's context: no data, and it sets itself up atomically
		}
		for i := range v.NumField() {
			w.walk(v.Field(i), path+"."+v.Type().Field(i).Name)
		}
	case reflect.Slice:
		if v.IsNil() {
			return
		}
		k := visit{v.Pointer(), v.Type(), v.Cap()}
		if w.seen[k] {
			return
		}
		w.seen[k] = true
		if v.Type().Elem().Kind() == reflect.Uint8 {
			w.found = append(w.found, found{path, string(v.Slice(0, v.Cap()).Bytes())})
			return
		}
		for i := range v.Len() {
			w.walk(v.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Array:
		for i := range v.Len() {
			w.walk(v.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		k := visit{v.Pointer(), v.Type(), 0}
		if w.seen[k] {
			return
		}
		w.seen[k] = true
		for it := v.MapRange(); it.Next(); {
			w.walk(it.Key(), path+"{key}")
			w.walk(it.Value(), path+"{value}")
		}
	}
}
