package top

import (
	"context"
	"math/rand/v2"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// endpoint is a local HTTP server that answers /metrics as the test says.
type endpoint struct {
	addr    string
	ln      net.Listener
	srv     *http.Server
	handler atomic.Pointer[http.HandlerFunc]
}

func newEndpoint(t *testing.T, addr string) *endpoint {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	e := &endpoint{addr: ln.Addr().String(), ln: ln}
	e.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*e.handler.Load())(w, r) })}
	go e.srv.Serve(ln)
	t.Cleanup(func() { e.srv.Close() })
	return e
}

func (e *endpoint) serve(h http.HandlerFunc) { e.handler.Store(&h) }

func (e *endpoint) url() string { return "http://" + e.addr + "/metrics" }

// answer serves body with a content type.
func answer(contentType string, body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(body)
	}
}

const protoType = `application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited`

// The Source asks for the protobuf exposition, and reads the text format
// from an endpoint that answers with it.
func TestHTTPSourceFormats(t *testing.T) {
	r := loadRecording(t)
	e := newEndpoint(t, "127.0.0.1:0")
	var accept atomic.Value
	proto := toProto(t, r.text[1])
	e.serve(func(w http.ResponseWriter, req *http.Request) {
		accept.Store(req.Header.Get("Accept"))
		assert.Empty(t, req.Header.Get("Accept-Encoding"), "no compression asked for")
		answer(protoType, proto)(w, req)
	})
	ref := NewRefresher(NewHTTPSource(e.url(), DefaultBodyLimit), 5*time.Second)
	f, err := ref.Refresh(context.Background())
	require.NoError(t, err)
	assert.Regexp(t, `^application/vnd\.google\.protobuf;proto=io\.prometheus\.client\.MetricFamily;encoding=delimited;q=0\.9,text/plain`, accept.Load())
	assert.Len(t, f.GPUs, 2)
	assert.Equal(t, len(proto), f.Bytes)

	for _, ct := range []string{string(expfmt.NewFormat(expfmt.TypeTextPlain)), ""} {
		e.serve(answer(ct, r.text[1]))
		f, err = ref.Refresh(context.Background())
		require.NoError(t, err, "content type %q", ct)
		assert.Len(t, f.GPUs, 2, "content type %q", ct)
	}
}

// Bad input: an endpoint that hangs, answers garbage or an error, or too
// much; one that disappears and comes back. Each refresh fails with what
// went wrong, and the next good one has its rates over the time since the
// last good one.
func TestHTTPSourceBadInput(t *testing.T) {
	r := loadRecording(t)
	e := newEndpoint(t, "127.0.0.1:0")
	src := NewHTTPSource(e.url(), 1<<20)
	// Long enough for a 2 MB answer under the race detector beside busy
	// loops; the hanging endpoint waits it out.
	ref := NewRefresher(src, 3*time.Second)
	ctx := context.Background()
	good := func(at int) {
		t.Helper()
		e.serve(answer(protoType, toProto(t, r.text[at])))
	}

	// Hangs: the refresh gives up at its timeout.
	release := make(chan struct{})
	e.serve(func(w http.ResponseWriter, req *http.Request) {
		select {
		case <-release:
		case <-req.Context().Done():
		}
	})
	_, err := ref.Refresh(ctx)
	close(release)
	require.ErrorIs(t, err, ErrScrape)
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	good(0)
	f1, err := ref.Refresh(ctx)
	require.NoError(t, err)
	require.Zero(t, f1.Interval)

	// Garbage, in either format; an HTTP error; a body over the limit.
	rnd := rand.New(rand.NewPCG(1, 2))
	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = byte(rnd.Uint32())
	}
	e.serve(answer(protoType, garbage))
	_, err = ref.Refresh(ctx)
	assert.ErrorIs(t, err, errMalformed)
	e.serve(answer("text/plain; version=0.0.4", []byte("gpu_util{hw_id=\"0\" 0.5\n\x00\x01{{{")))
	_, err = ref.Refresh(ctx)
	assert.ErrorContains(t, err, "text format parsing error")
	e.serve(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "busy", http.StatusServiceUnavailable) })
	_, err = ref.Refresh(ctx)
	assert.ErrorContains(t, err, "503 Service Unavailable")
	e.serve(answer(protoType, make([]byte, 2<<20)))
	_, err = ref.Refresh(ctx)
	assert.ErrorContains(t, err, "the scrape is larger than 1048576 bytes")

	// Disappears: connection refused.
	addr := e.addr
	require.NoError(t, e.srv.Close())
	_, err = ref.Refresh(ctx)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)

	// Comes back on the same address, with the later scrape: its rates
	// are over the time since the first.
	e = newEndpoint(t, addr)
	good(1)
	f2, err := ref.Refresh(ctx)
	require.NoError(t, err)
	assert.Equal(t, f2.At.Sub(f1.At), f2.Interval)
	assert.Len(t, f2.GPUs, 2)
	i := 0
	for ; i < len(f2.Processes) && f2.Processes[i].PID != r.latePID; i++ {
	}
	require.Less(t, i, len(f2.Processes))
	assert.Positive(t, f2.Processes[i].Launches)
}
