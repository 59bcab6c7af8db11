package podjoin

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
)

// fixtureFiles returns the contents of the fixture files named base
// (cgroup, environ), as the procfs tree has them.
func fixtureFiles(t testing.TB, base string) [][]byte {
	paths, err := filepath.Glob("testdata/*.txtar")
	require.NoError(t, err)
	var out [][]byte
	for _, p := range paths {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
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
	require.NotEmpty(t, out, "no %s fixtures", base)
	return out
}

func FuzzParseCgroup(f *testing.F) {
	for _, b := range fixtureFiles(f, "cgroup") {
		f.Add(b)
	}
	f.Add([]byte("0::/kubepods/pod" + uid1_ + "/" + id1 + "/docker/" + id2))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := ParseCgroup(b)
		if c.ContainerID != "" {
			require.True(t, isContainerID([]byte(c.ContainerID)), "container id %q", c.ContainerID)
		}
		if c.Runtime != "" {
			require.NotEmpty(t, c.ContainerID, "runtime %q without a container", c.Runtime)
		}
		switch c.Runtime {
		case "", RuntimeContainerd, RuntimeCRIO, RuntimeDocker, RuntimePodman:
		default:
			require.Failf(t, "unknown runtime", "runtime %q", c.Runtime)
		}
		if c.PodUID != "" {
			u, ok := normalizeUID([]byte(c.PodUID))
			require.True(t, ok, "pod uid %q", c.PodUID)
			require.Equal(t, c.PodUID, u, "pod uid normalised")
			require.NotContains(t, u, "_", "pod uid %q", c.PodUID)
		}
		switch c.QoSClass {
		case QoSGuaranteed, QoSBurstable, QoSBestEffort:
			require.NotEmpty(t, c.PodUID, "QoS %q without a pod", c.QoSClass)
		case "":
			require.Empty(t, c.PodUID, "pod without a QoS class")
		default:
			require.Failf(t, "unknown QoS class", "QoS %q", c.QoSClass)
		}
		if c.ContainerID != "" {
			require.Contains(t, string(b), c.ContainerID, "container id not from the input")
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
			{EnvMLflowTrackingURI, e.MLflowTrackingURI, MaxMLflowTrackingURI},
		} {
			require.LessOrEqual(t, len(v.val), v.max, "%s: bytes", v.name)
			require.NotContains(t, v.val, "\x00", "%s: %d bytes", v.name, len(v.val))
			if v.val != "" {
				require.Contains(t, string(b), v.name+"="+v.val, "%s=%q is not an entry of the input", v.name, v.val)
			}
		}
		// The scanner, reading in pieces of any size, agrees.
		buf := make([]byte, maxEnvEntry+1)
		got, err := scanEnviron(chunkReader{bytes.NewReader(b), int(piece)%(2*maxEnvEntry) + 1}, buf, len(b)+1)
		require.NoError(t, err, "scanEnviron")
		require.Equal(t, e, got, "scanEnviron, against ParseEnviron")
		require.False(t, bytes.ContainsFunc(buf, func(r rune) bool { return r != 0 }), "buffer not zeroed")
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
			require.True(t, sc.Equal(trace.SpanContext{}), "invalid but not zero: %+v", sc)
			return
		}
		require.GreaterOrEqual(t, len(tp), 55, "accepted %q as %+v", tp, sc)
		require.NotEqual(t, "ff", tp[:2], "accepted %q as %+v", tp, sc)
		require.Zero(t, sc.TraceFlags()&^(trace.FlagsSampled|trace.FlagsRandom), "accepted %q as %+v", tp, sc)
		require.True(t, sc.IsRemote(), "accepted %q as %+v", tp, sc)
		enc := fmt.Sprintf("%s-%s-%s-%02x", tp[:2], sc.TraceID(), sc.SpanID(), byte(sc.TraceFlags()))
		if tp[:2] == "00" {
			require.Equal(t, tp, enc, "version 00 %q read", tp)
		} else {
			require.Equal(t, tp[:52], enc[:52], "%q read as %q", tp, enc)
		}
		require.LessOrEqual(t, len(sc.TraceState().String()), len(ts), "tracestate grew: %q from %q", sc.TraceState().String(), ts)
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
			require.Nil(t, kvs, "error %v", err)
			require.ErrorContains(t, err, EnvResourceAttributes)
			return
		}
		require.LessOrEqual(t, len(kvs), MaxResourceAttrs, "attributes")
		seen := map[string]bool{}
		for _, kv := range kvs {
			k, v := string(kv.Key), kv.Value.AsString()
			require.NotEmpty(t, k, "attribute %q=%q", k, v)
			require.LessOrEqual(t, len(k), MaxResourceKey, "attribute %q=%q: key bytes", k, v)
			require.LessOrEqual(t, len(v), MaxResourceValue, "attribute %q=%q: value bytes", k, v)
			require.True(t, utf8.ValidString(k), "attribute %q=%q: key not UTF-8", k, v)
			require.True(t, utf8.ValidString(v), "attribute %q=%q: value not UTF-8", k, v)
			require.False(t, seen[k], "key %q twice", k)
			seen[k] = true
		}
	})
}
