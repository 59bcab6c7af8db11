package podjoin

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"
)

// fixtureFiles returns the contents of the fixture files named base
// (cgroup, environ), as the procfs tree has them.
func fixtureFiles(t testing.TB, base string) [][]byte {
	paths, err := filepath.Glob("testdata/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range parseArchive(data) {
			if filepath.Base(f.name) == base {
				if base == "environ" {
					out = append(out, environBlock(f.data))
				} else {
					out = append(out, f.data)
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no %s fixtures", base)
	}
	return out
}

func FuzzParseCgroup(f *testing.F) {
	for _, b := range fixtureFiles(f, "cgroup") {
		f.Add(b)
	}
	f.Add([]byte("0::/kubepods/pod" + uid1_ + "/" + id1 + "/docker/" + id2))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := ParseCgroup(b)
		if c.ContainerID != "" && !isContainerID([]byte(c.ContainerID)) {
			t.Fatalf("container id %q", c.ContainerID)
		}
		if c.Runtime != "" && c.ContainerID == "" {
			t.Fatalf("runtime %q without a container", c.Runtime)
		}
		switch c.Runtime {
		case "", RuntimeContainerd, RuntimeCRIO, RuntimeDocker, RuntimePodman:
		default:
			t.Fatalf("runtime %q", c.Runtime)
		}
		if c.PodUID != "" {
			if u, ok := normalizeUID([]byte(c.PodUID)); !ok || u != c.PodUID || strings.Contains(u, "_") {
				t.Fatalf("pod uid %q", c.PodUID)
			}
		}
		switch c.QoSClass {
		case QoSGuaranteed, QoSBurstable, QoSBestEffort:
			if c.PodUID == "" {
				t.Fatalf("QoS %q without a pod", c.QoSClass)
			}
		case "":
			if c.PodUID != "" {
				t.Fatal("pod without a QoS class")
			}
		default:
			t.Fatalf("QoS %q", c.QoSClass)
		}
		if c.ContainerID != "" && !bytes.Contains(b, []byte(c.ContainerID)) {
			t.Fatal("container id not from the input")
		}
	})
}

// chunkReader returns at most n bytes a read.
type chunkReader struct {
	r io.Reader
	n int
}

func (c chunkReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

func FuzzParseEnviron(f *testing.F) {
	for _, b := range fixtureFiles(f, "environ") {
		f.Add(b, uint16(7))
	}
	f.Add(secretEnviron(), uint16(4096))
	f.Add([]byte("TRACEPARENT=a\x00TRACEPARENT=b\x00OTEL_SERVICE_NAME"), uint16(1))
	f.Fuzz(func(t *testing.T, b []byte, piece uint16) {
		e := ParseEnviron(b)
		for _, v := range []struct {
			name, val string
			max       int
		}{
			{EnvTraceparent, e.Traceparent, MaxTraceparent},
			{EnvTracestate, e.Tracestate, MaxTracestate},
			{EnvResourceAttributes, e.ResourceAttributes, MaxResourceAttributes},
			{EnvServiceName, e.ServiceName, MaxServiceName},
		} {
			if len(v.val) > v.max || strings.IndexByte(v.val, 0) >= 0 {
				t.Fatalf("%s: %d bytes", v.name, len(v.val))
			}
			if v.val != "" && !bytes.Contains(b, []byte(v.name+"="+v.val)) {
				t.Fatalf("%s=%q is not an entry of the input", v.name, v.val)
			}
		}
		// The scanner, reading in pieces of any size, agrees.
		buf := make([]byte, maxEnvEntry+1)
		got, err := scanEnviron(chunkReader{bytes.NewReader(b), int(piece)%(2*maxEnvEntry) + 1}, buf, len(b)+1)
		if err != nil || got != e {
			t.Fatalf("scanEnviron = %+v, %v; ParseEnviron = %+v", got, err, e)
		}
		if bytes.ContainsFunc(buf, func(r rune) bool { return r != 0 }) {
			t.Fatal("buffer not zeroed")
		}
	})
}

func FuzzParseTraceparent(f *testing.F) {
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "rojo=00f067aa0ba902b7")
	f.Add("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03-extra", "")
	f.Add("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "a=1,b=2")
	f.Add("00-00000000000000000000000000000000-00f067aa0ba902b7-01", "")
	f.Fuzz(func(t *testing.T, tp, ts string) {
		sc := ParseTraceparent(tp, ts)
		if !sc.IsValid() {
			if !sc.Equal(trace.SpanContext{}) {
				t.Fatalf("invalid but not zero: %+v", sc)
			}
			return
		}
		if len(tp) < 55 || tp[:2] == "ff" || sc.TraceFlags()&^(trace.FlagsSampled|trace.FlagsRandom) != 0 || !sc.IsRemote() {
			t.Fatalf("accepted %q as %+v", tp, sc)
		}
		enc := fmt.Sprintf("%s-%s-%s-%02x", tp[:2], sc.TraceID(), sc.SpanID(), byte(sc.TraceFlags()))
		if tp[:2] == "00" && enc != tp {
			t.Fatalf("version 00 %q read as %q", tp, enc)
		}
		if tp[:2] != "00" && tp[:52] != enc[:52] {
			t.Fatalf("%q read as %q", tp, enc)
		}
		if len(sc.TraceState().String()) > len(ts) {
			t.Fatalf("tracestate grew: %q from %q", sc.TraceState().String(), ts)
		}
	})
}

func FuzzParseResourceAttributes(f *testing.F) {
	f.Add("service.name=checkout,deployment.environment=prod")
	f.Add(" a = b%2Cc ,, d=%E2%82%AC,a=z")
	f.Add("a=%zz")
	f.Add("a=%FF%FE")
	f.Fuzz(func(t *testing.T, s string) {
		kvs, err := ParseResourceAttributes(s)
		if err != nil {
			if kvs != nil || !strings.Contains(err.Error(), EnvResourceAttributes) {
				t.Fatalf("error %v with %v", err, kvs)
			}
			return
		}
		if len(kvs) > MaxResourceAttrs {
			t.Fatalf("%d attributes", len(kvs))
		}
		seen := map[string]bool{}
		for _, kv := range kvs {
			k, v := string(kv.Key), kv.Value.AsString()
			if k == "" || len(k) > MaxResourceKey || len(v) > MaxResourceValue || !utf8.ValidString(k) || !utf8.ValidString(v) {
				t.Fatalf("attribute %q=%q", k, v)
			}
			if seen[k] {
				t.Fatalf("key %q twice", k)
			}
			seen[k] = true
		}
	})
}
