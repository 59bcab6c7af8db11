package podjoin

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func env(entries ...string) []byte {
	var b []byte
	for _, e := range entries {
		b = append(append(b, e...), 0)
	}
	return b
}

func TestParseEnviron(t *testing.T) {
	tp := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, tc := range []struct {
		name string
		in   []byte
		want Environ
	}{
		{"all five among others", env("PATH=/bin", "TRACEPARENT="+tp, "TRACESTATE=a=b", "SECRET=x",
			"OTEL_RESOURCE_ATTRIBUTES=k=v", "MLFLOW_TRACKING_URI=file:///runs/mlruns", "OTEL_SERVICE_NAME=svc"),
			Environ{Traceparent: tp, Tracestate: "a=b", ResourceAttributes: "k=v", ServiceName: "svc", MLflowTrackingURI: "file:///runs/mlruns"}},
		{"MLflow's others are not read", env("MLFLOW_TRACKING_TOKEN=secret", "MLFLOW_TRACKING_PASSWORD=pw", "MLFLOW_TRACKING_URI_X=y", "MLFLOW_TRACKING_USERNAME=u"), Environ{}},
		{"a TPU workload's metrics ports", env("PATH=/bin", "TPU_RUNTIME_METRICS_PORTS=8431,8432", "TPU_NAME=x"), Environ{TPURuntimeMetricsPorts: "8431,8432"}},
		{"first occurrence counts", env("OTEL_SERVICE_NAME=one", "OTEL_SERVICE_NAME=two"), Environ{ServiceName: "one"}},
		{"an empty first occurrence counts", env("OTEL_SERVICE_NAME=", "OTEL_SERVICE_NAME=two"), Environ{}},
		{"a value over its cap is dropped whole", env("OTEL_SERVICE_NAME=" + strings.Repeat("s", MaxServiceName+1)), Environ{}},
		{"a value at its cap is kept", env("OTEL_SERVICE_NAME=" + strings.Repeat("s", MaxServiceName)), Environ{ServiceName: strings.Repeat("s", MaxServiceName)}},
		{"an over-long first occurrence still counts", env("OTEL_SERVICE_NAME="+strings.Repeat("s", MaxServiceName+1), "OTEL_SERVICE_NAME=two"), Environ{}},
		{"names are case-sensitive and whole", env("traceparent=x", "TRACEPARENTS=x", "XTRACEPARENT=x", "TRACEPARENT"), Environ{}},
		{"last entry without its NUL", []byte("A=b\x00OTEL_SERVICE_NAME=svc"), Environ{ServiceName: "svc"}},
		{"values may hold '='", env("TRACESTATE=a=b,c=d"), Environ{Tracestate: "a=b,c=d"}},
		{"empty", nil, Environ{}},
		{"only NULs", []byte{0, 0, 0}, Environ{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ParseEnviron(tc.in))
			got, err := scanEnviron(bytes.NewReader(tc.in), make([]byte, maxEnvEntry+1), maxEnviron)
			assert.NoError(t, err, "scanEnviron")
			assert.Equal(t, tc.want, got, "scanEnviron")
		})
	}
}

// The scanner reads an environment far larger than its buffer, piece by
// piece, and finds an allowed variable that straddles two pieces or sits
// past a long variable it skips.
func TestScanEnvironInPieces(t *testing.T) {
	var block []byte
	for i := range 4000 { // as a namespace with many services makes it
		block = append(block, "SVC_"+strings.Repeat("X", i%40)+"_SERVICE_HOST=10.0.0.1\x00"...)
	}
	block = append(block, "HUGE="+strings.Repeat("h", 3*environBuf)+"\x00"...)
	block = append(block, "OTEL_RESOURCE_ATTRIBUTES="+strings.Repeat("a", MaxResourceAttributes)+"\x00"...)
	block = append(block, "OTEL_SERVICE_NAME=far\x00"...)
	want := ParseEnviron(block)
	require.Equal(t, "far", want.ServiceName, "ParseEnviron")
	require.Equal(t, MaxResourceAttributes, len(want.ResourceAttributes), "ParseEnviron: bytes of %s", EnvResourceAttributes)
	buf := make([]byte, environBuf)
	for _, r := range []io.Reader{
		bytes.NewReader(block),
		iotest.OneByteReader(bytes.NewReader(block)),
		iotest.HalfReader(bytes.NewReader(block)),
		iotest.DataErrReader(bytes.NewReader(block)),
	} {
		got, err := scanEnviron(r, buf, maxEnviron)
		assert.NoError(t, err, "%T", r)
		assert.Equal(t, want, got, "%T: got %q, %d bytes", r, got.ServiceName, len(got.ResourceAttributes))
		assert.False(t, bytes.ContainsFunc(buf, func(r rune) bool { return r != 0 }), "%T: buffer not zeroed", r)
	}
}

func TestScanEnvironLimit(t *testing.T) {
	block := env("A=1", "OTEL_SERVICE_NAME=svc", "TRACESTATE=k=v")
	at := bytes.Index(block, []byte("TRACESTATE"))
	buf := make([]byte, maxEnvEntry+1)
	// The limit cuts TRACESTATE: it is dropped, not cut.
	got, err := scanEnviron(bytes.NewReader(block), buf, at+len("TRACESTATE=k"))
	require.NoError(t, err)
	require.Equal(t, Environ{ServiceName: "svc"}, got)
	// Nothing past the limit is read.
	r := &countingReader{r: bytes.NewReader(bytes.Repeat([]byte("A=b\x00"), 1<<20))}
	_, err = scanEnviron(r, buf, 10000)
	require.NoError(t, err, "read %d bytes", r.n)
	require.Equal(t, 10000, r.n, "bytes read; want the limit")
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestScanEnvironErrors(t *testing.T) {
	buf := make([]byte, maxEnvEntry+1)
	boom := errors.New("boom")
	got, err := scanEnviron(io.MultiReader(bytes.NewReader(env("OTEL_SERVICE_NAME=svc")), iotest.ErrReader(boom)), buf, maxEnviron)
	require.ErrorIs(t, err, boom, "got %+v", got)
	require.Equal(t, "svc", got.ServiceName)
	_, err = scanEnviron(emptyReader{}, buf, maxEnviron)
	require.ErrorIs(t, err, io.ErrNoProgress, "reader without progress")
	require.False(t, bytes.ContainsFunc(buf, func(r rune) bool { return r != 0 }), "buffer not zeroed after an error")
}

type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, nil }
