package genai

// Kernel-tier tests of the capture: real clients (Python's http.client and
// ssl, curl), the real system OpenSSL, the real kernel, against a local
// mock of the providers' APIs (internal/testutil/llmserver), which stands
// in for the providers a test cannot reach.

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/httpbpf"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/testutil/llmserver"
	"github.com/xpuscope/xpuscope/internal/uprobe"
	"github.com/xpuscope/xpuscope/semconv"
)

const captureSecret = "sk-capture-9c1d77e0-never-export"

type captureHarness struct {
	c      *Capture
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
}

func startCapture(t *testing.T, opts ...CaptureOption) *captureHarness {
	t.Helper()
	testutil.Native(t, "the kernel's BPF and uprobes")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "the capture's BPF programs need root")
	}
	h := &captureHarness{spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader()}
	c, err := NewCapture(append([]CaptureOption{
		WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(h.spans))),
		WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))),
		// Go's crypto/tls probes go on every Go program on the host (the
		// go command, the other packages' test binaries), and attaching
		// to a file takes a lock the kernel's fork and exec wait on: the
		// tests that read Go programs' TLS ask for it, so that the
		// package's dozens of captures do not each attach to them all
		// while other packages' tests run.
		WithGoTLS(false),
	}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	h.c = c
	return h
}

// waitAttached waits until the system libssl is probed.
func (h *captureHarness) waitAttached(t *testing.T, lib string) uprobe.Attachment {
	t.Helper()
	var found uprobe.Attachment
	ok := poll(10*time.Second, func() bool {
		for _, a := range h.c.Status().Attachments {
			if fi, err := os.Stat(lib); err == nil && sameFile(fi, a.Dev, a.Inode) {
				found = a
				return true
			}
		}
		// The library is mapped by no process yet: load it in one.
		_ = exec.Command("curl", "-s", "--version").Run()
		return false
	})
	require.True(t, ok, "%s not attached: %+v", lib, h.c.Status())
	return found
}

// spansTo returns the CLIENT spans of calls to port, waiting until there
// are n.
func (h *captureHarness) spansTo(t *testing.T, port, n int) tracetest.SpanStubs {
	t.Helper()
	return h.spansOf(t, trace.SpanKindClient, port, n)
}

// spansOf returns the spans of kind of calls to port, waiting until there
// are n.
func (h *captureHarness) spansOf(t *testing.T, kind trace.SpanKind, port, n int) tracetest.SpanStubs {
	t.Helper()
	var got tracetest.SpanStubs
	collect := func() {
		got = got[:0]
		for _, s := range h.spans.GetSpans() {
			if s.SpanKind != kind {
				continue
			}
			for _, kv := range s.Attributes {
				if kv.Key == semconv.ServerPort && kv.Value.AsInt64() == int64(port) {
					got = append(got, s)
				}
			}
		}
	}
	ok := poll(15*time.Second, func() bool {
		collect()
		return len(got) >= n
	})
	require.True(t, ok, "%d %v spans to port %d, want %d", len(got), kind, port, n)
	time.Sleep(300 * time.Millisecond) // no more than n come
	collect()
	require.Len(t, got, n, "%v spans to port %d", kind, port)
	return got
}

func poll(d time.Duration, f func() bool) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		if f() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// requireNoSecret fails if the secret appears in any span or metric.
func (h *captureHarness) requireNoSecret(t *testing.T) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, h.reader.Collect(context.Background(), &rm))
	all := fmt.Sprintf("%+v\n%+v", h.spans.GetSpans(), rm)
	require.NotContains(t, all, captureSecret)
	require.NotContains(t, all, "Bearer")
}

// python runs testdata/capture/client.py: n streaming requests on one
// keep-alive connection, with env added to its environment.
func python(t *testing.T, s *llmserver.Server, path, model string, n int, env ...string) {
	t.Helper()
	pythonClient(t, s, path, model, n, false, env...)
}

// pythonClient runs testdata/capture/client.py: n streaming requests to
// the comma-separated paths with the models, in turn, on one keep-alive
// connection or (fresh) on a new connection each, with env added to its
// environment.
func pythonClient(t *testing.T, s *llmserver.Server, paths, models string, n int, fresh bool, env ...string) {
	t.Helper()
	args := []string{"testdata/capture/client.py", s.URL, paths, models, strconv.Itoa(n)}
	if s.CAFile != "" {
		args = append(args, s.CAFile)
	}
	cmd := exec.Command("/usr/bin/python3", args...)
	cmd.Env = append(append(os.Environ(), "CAPTURE_SECRET="+captureSecret), env...)
	if fresh {
		cmd.Env = append(cmd.Env, "CAPTURE_FRESH=1")
	}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "python client: %s", out)
}

// curlChat posts n streaming chat completions to s, in parallel over n
// connections, with env added to curl's environment.
func curlChat(t *testing.T, s *llmserver.Server, n int, env ...string) {
	t.Helper()
	cmd := curlChatCmd(s, n)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "curl: %s", out)
}

// privateLibSSL copies the system libssl.so.3 to a directory of the
// test's and returns the environment that has a program load the copy in
// its place: a file no process had mapped before, so that the capture
// sees each of its processes from the load, and reads its connections
// by connection (a file found mapped when a capture starts is read by
// call, and on a shared machine another program may map the system's).
func privateLibSSL(t testing.TB) (env string, lib string) {
	t.Helper()
	b, err := os.ReadFile(systemLibSSL(t))
	require.NoError(t, err)
	dir := t.TempDir()
	lib = filepath.Join(dir, "libssl.so.3")
	require.NoError(t, os.WriteFile(lib, b, 0o755))
	return "LD_LIBRARY_PATH=" + dir, lib
}

// requireByConnection requires that the capture probed lib, in the
// processes seen, by connection: at SSL_do_handshake alone.
func (h *captureHarness) requireByConnection(t *testing.T, lib string) {
	t.Helper()
	fi, err := os.Stat(lib)
	require.NoError(t, err)
	var seen int
	for _, a := range h.c.Status().Attachments {
		if sameFile(fi, a.Dev, a.Inode) {
			seen++
			require.Equal(t, []string{httpbpf.TLSHandshake}, a.Symbols, "%s read by connection", lib)
		}
	}
	require.NotZero(t, seen, "%s not attached: %+v", lib, h.c.Status())
}

// curlChatCmd is the command curlChat runs.
func curlChatCmd(s *llmserver.Server, n int) *exec.Cmd {
	args := []string{"-sS", "--http1.1", "-N", "--fail", "-H", "Authorization: Bearer " + captureSecret,
		"-H", "Content-Type: application/json", "-d", `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`,
		"-o", "/dev/null"}
	if n > 1 {
		args = append(args, "--parallel", "--parallel-immediate", "--parallel-max", strconv.Itoa(n))
	}
	if s.CAFile != "" {
		args = append(args, "--cacert", s.CAFile)
	}
	for range n {
		args = append(args, s.URL+"/v1/chat/completions")
	}
	return exec.Command("curl", args...)
}

const (
	firstDelay = 300 * time.Millisecond
	chunkDelay = 30 * time.Millisecond
	chunks     = 3
)

// checkStreamedCall checks one span of a streamed call to the mock.
func checkStreamedCall(t *testing.T, h *captureHarness, s tracetest.SpanStub, provider, model, finish string) {
	t.Helper()
	a := attrs(s)
	require.Equal(t, provider, a[semconv.GenAIProviderName].AsString())
	require.Equal(t, "chat "+model, s.Name)
	require.Equal(t, model, a[semconv.GenAIRequestModel].AsString())
	require.Equal(t, int64(llmserver.InputTokens), a[semconv.GenAIUsageInputTokens].AsInt64())
	require.Equal(t, int64(llmserver.OutputTokens), a[semconv.GenAIUsageOutputTokens].AsInt64())
	require.Equal(t, []string{finish}, a[semconv.GenAIResponseFinishReasons].AsStringSlice())
	// The stream: the first chunk after firstDelay, then one every
	// chunkDelay; the span covers it all.
	minDur := firstDelay + (chunks-1)*chunkDelay
	require.GreaterOrEqual(t, s.EndTime.Sub(s.StartTime), minDur, "span duration")
}

// TestCaptureTLSClients: Python's http.client (SSL_read_ex and
// SSL_write_ex) and curl (SSL_read and SSL_write) over TLS to the OpenAI
// and Anthropic APIs: one span per request, with provider, model, usage
// and finish reason; a time to first chunk of at least the server's first
// delay; a duration covering the stream; the Authorization secret
// nowhere. By call, the probes sit on the internal functions all four
// call; by connection (the clients seen from their load of libssl), on
// SSL_do_handshake, and the bytes are decrypted from their sockets'.
func TestCaptureTLSClients(t *testing.T) {
	t.Run("by call", func(t *testing.T) {
		h := startCapture(t, withTLSByCall())
		a := h.waitAttached(t, systemLibSSL(t))
		require.ElementsMatch(t, []string{"ssl_write_internal", "ssl_read_internal", "SSL_free"}, a.Symbols,
			"Debian's libssl.so.3 (OpenSSL 3.0) has no symbol for the internal functions: they are found through the exported ones")
		tlsClients(t, h)
	})
	t.Run("by connection", func(t *testing.T) {
		h := startCapture(t)
		env, lib := privateLibSSL(t)
		tlsClients(t, h, env)
		h.requireByConnection(t, lib)
	})
}

// tlsClients makes TestCaptureTLSClients' calls, with env added to the
// clients' environment, and checks what h made of them.
func tlsClients(t *testing.T, h *captureHarness, env ...string) {
	s := llmserver.Start(t, llmserver.Options{TLS: true, FirstDelay: firstDelay, ChunkDelay: chunkDelay, Chunks: chunks})
	python(t, s, "/v1/chat/completions", "gpt-4o-mini", 1, env...)
	python(t, s, "/v1/messages", "claude-sonnet-4", 1, env...)
	curlChat(t, s, 1, env...)
	spans := h.spansTo(t, s.Port, 3)
	byProvider := map[string][]tracetest.SpanStub{}
	for _, sp := range spans {
		p := attrs(sp)[semconv.GenAIProviderName].AsString()
		byProvider[p] = append(byProvider[p], sp)
	}
	// A server at an address of no provider: what the path says.
	compat := semconv.GenAIProviderOpenAICompatible
	require.Len(t, byProvider[compat], 2)
	require.Len(t, byProvider["anthropic"], 1)
	for _, sp := range byProvider[compat] {
		checkStreamedCall(t, h, sp, compat, "gpt-4o-mini", "stop")
	}
	checkStreamedCall(t, h, byProvider["anthropic"][0], "anthropic", "claude-sonnet-4", "end_turn")

	// Time to first chunk: the first content chunk came firstDelay after
	// the request (the Anthropic stream's first content delta one
	// chunkDelay later), give or take the scheduler.
	pts := testutil.Collect(t, h.reader)
	// (Other processes on the host may make calls of their own while the
	// test runs: only those to the mock count.)
	ttft := pts.Find(semconv.GenAIClientOperationTimeToFirstChunk.Name, semconv.ServerPort.Int(s.Port))
	for _, p := range ttft {
		mean := time.Duration(p.Value / float64(p.Count) * float64(time.Second))
		require.GreaterOrEqual(t, mean, firstDelay, "time to first chunk %v", p.Attrs)
		require.Less(t, mean, firstDelay+chunkDelay+500*time.Millisecond, "time to first chunk %v", p.Attrs)
	}
	require.NotEmpty(t, ttft)
	require.GreaterOrEqual(t, pts.One(t, semconv.XpuscopeGenAICaptureExchanges.Name,
		semconv.XpuscopeGenAIOutcome.String(semconv.CaptureOutcomeEmitted)).Value, 3.0)
	// This test binary is a Go program: its crypto/tls is not seen, and
	// it is counted.
	require.GreaterOrEqual(t, pts.One(t, semconv.XpuscopeGenAICaptureGoProcesses.Name).Value, 1.0)
	require.GreaterOrEqual(t, pts.One(t, semconv.XpuscopeGenAICaptureAttachedFiles.Name).Value, 1.0)
	// Python sent the secret in Authorization and x-api-key, curl in
	// Authorization: the capture saw it in the clients' writes.
	auths := s.Authorizations()
	require.Len(t, auths, 5)
	for _, v := range auths {
		require.Contains(t, v, captureSecret)
	}
	h.requireNoSecret(t)
}

// TestCaptureConnectionPerCall: a client that opens a new TLS connection
// for each call (urllib), 75 calls in a row from one process: OpenAI,
// Anthropic and a REST call that is no LLM call, in turn. Every LLM call
// is a span with its usage. OpenSSL gives a new connection the memory of
// the SSL object just freed, so a connection's key names the next one
// too: a connection the capture stopped reading (the REST call's) must
// not make it stop reading the next.
// The same in plaintext to a watched port: a new socket takes the closed
// one's descriptor.
func TestCaptureConnectionPerCall(t *testing.T) {
	t.Run("tls", func(t *testing.T) { connectionPerCall(t, true, []CaptureOption{withTLSByCall()}) })
	t.Run("tls by connection", func(t *testing.T) {
		env, lib := privateLibSSL(t)
		h := connectionPerCall(t, true, nil, env)
		h.requireByConnection(t, lib)
	})
	// TLS 1.2: the master secret read from the session, which the
	// connection's object points to.
	t.Run("tls 1.2 by connection", func(t *testing.T) {
		env, lib := privateLibSSL(t)
		h := connectionPerCall(t, true, nil, env, "CAPTURE_TLS12=1")
		h.requireByConnection(t, lib)
	})
	// asyncio: OpenSSL over memory BIOs, the program moving the bytes.
	t.Run("tls by connection, asyncio", func(t *testing.T) {
		env, lib := privateLibSSL(t)
		h := connectionPerCall(t, true, nil, env, "CAPTURE_ASYNC=1")
		h.requireByConnection(t, lib)
	})
	t.Run("plaintext", func(t *testing.T) { connectionPerCall(t, false, nil) })
	// As where tracefs is not mounted: the programs at every system call.
	t.Run("plaintext, raw syscalls", func(t *testing.T) { connectionPerCall(t, false, []CaptureOption{withRawSyscalls()}) })
}

// connectionPerCall makes the calls of TestCaptureConnectionPerCall, with
// env added to the client's environment, to a capture made with opts.
func connectionPerCall(t *testing.T, tls bool, opts []CaptureOption, env ...string) *captureHarness {
	const n = 50 // LLM calls
	s := llmserver.Start(t, llmserver.Options{TLS: tls, Chunks: chunks})
	var h *captureHarness
	if env == nil {
		h = captureOver(t, tls, s.Port, opts...)
	} else {
		h = startCapture(t, opts...) // the client loads a libssl of its own
	}

	pythonClient(t, s, "/v1/chat/completions,/v1/files,/v1/messages", "gpt-4o-mini,x,claude-sonnet-4", n*3/2, true, env...)
	spans := h.spansTo(t, s.Port, n)
	models := map[string]int{}
	for _, sp := range spans {
		a := attrs(sp)
		models[a[semconv.GenAIRequestModel].AsString()]++
		require.Equal(t, int64(llmserver.InputTokens), a[semconv.GenAIUsageInputTokens].AsInt64(), sp.Name)
		require.Equal(t, int64(llmserver.OutputTokens), a[semconv.GenAIUsageOutputTokens].AsInt64(), sp.Name)
	}
	require.Equal(t, map[string]int{"gpt-4o-mini": n / 2, "claude-sonnet-4": n / 2}, models)
	for _, p := range testutil.Collect(t, h.reader).Find(semconv.XpuscopeGenAIClientWaitingRequests.Name) {
		require.Zero(t, p.Value, "calls left waiting: %v", p.Attrs)
	}
	h.requireNoSecret(t)
	return h
}

// TestCaptureTLSExitAtOnce: curl processes, read by connection, each
// making one call and exiting at once, over TLS 1.3 and 1.2: each call is
// a span with its usage, though the process is gone before the capture
// reads its bytes (its TLS 1.2 session is copied by the kernel side at
// the handshake's end, not read from the process after).
func TestCaptureTLSExitAtOnce(t *testing.T) {
	const n = 10 // processes a version
	s := llmserver.Start(t, llmserver.Options{TLS: true, Chunks: chunks})
	h := startCapture(t)
	env, lib := privateLibSSL(t)
	for _, version := range []string{"1.3", "1.2"} {
		for range n {
			cmd := curlChatCmd(s, 1)
			cmd.Args = append(cmd.Args, "--tls-max", version)
			cmd.Env = append(os.Environ(), env)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "curl: %s", out)
		}
	}
	for _, sp := range h.spansTo(t, s.Port, 2*n) {
		a := attrs(sp)
		require.Equal(t, int64(llmserver.InputTokens), a[semconv.GenAIUsageInputTokens].AsInt64(), sp.Name)
		require.Equal(t, int64(llmserver.OutputTokens), a[semconv.GenAIUsageOutputTokens].AsInt64(), sp.Name)
	}
	h.requireByConnection(t, lib)
	h.requireNoSecret(t)
}

// captureTLSMode starts a capture that reads calls over TLS by connection
// (byConn: the clients load a libssl of their own, by the environment it
// returns) or by call, or in plaintext to port.
func captureTLSMode(t *testing.T, tls, byConn bool, port int) (*captureHarness, []string) {
	t.Helper()
	if byConn {
		h := startCapture(t)
		env, _ := privateLibSSL(t)
		return h, []string{env}
	}
	return captureOver(t, tls, port, withTLSByCall()), nil
}

// captureOver starts a capture that sees calls over TLS (once the system
// libssl is probed) or in plaintext to port.
func captureOver(t *testing.T, tls bool, port int, opts ...CaptureOption) *captureHarness {
	t.Helper()
	if !tls {
		return startCapture(t, append(opts, WithPlaintextPorts(uint16(port)))...)
	}
	h := startCapture(t, opts...)
	h.waitAttached(t, systemLibSSL(t))
	return h
}

// systemLibSSL is the libssl.so.3 curl and Python load.
func systemLibSSL(t testing.TB) string {
	for _, p := range []string{"/usr/lib/x86_64-linux-gnu/libssl.so.3", "/lib/x86_64-linux-gnu/libssl.so.3"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	require.Fail(t, "no libssl.so.3 (Debian's libssl3; make deps installs it with curl)")
	return ""
}

// TestCapturePlaintextKeepAlive: plaintext HTTP to a watched port (the
// syscall tracepoints): three requests on one keep-alive connection give
// three spans, named by the host map, and curl's gives a fourth.
func TestCapturePlaintextKeepAlive(t *testing.T) {
	s := llmserver.Start(t, llmserver.Options{FirstDelay: firstDelay, ChunkDelay: chunkDelay, Chunks: chunks})
	hosts, err := NewHostMap(map[string]string{"127.0.0.1:" + strconv.Itoa(s.Port): "openai"})
	require.NoError(t, err)
	h := startCapture(t, WithHostMap(hosts), WithPlaintextPorts(uint16(s.Port)))

	python(t, s, "/v1/chat/completions", "gpt-4o-mini", 3)
	curlChat(t, s, 1)
	for _, sp := range h.spansTo(t, s.Port, 4) {
		checkStreamedCall(t, h, sp, "openai", "gpt-4o-mini", "stop")
	}
	h.requireNoSecret(t)
}

// TestCaptureLeavesItselfOut: the capture's own process (an agent's
// exports and endpoints) is never captured, in plaintext either: its
// calls to a watched port, and its end of another's, make no span. Its
// own calls come first, so their records are in the ring before those of
// the one call that counts, whose span ends the wait.
func TestCaptureLeavesItselfOut(t *testing.T) {
	s := llmserver.Start(t, llmserver.Options{Chunks: chunks})
	h := startCapture(t, WithPlaintextPorts(uint16(s.Port)))
	for range 2 {
		resp, err := http.Post(s.URL+"/v1/chat/completions", "application/json", strings.NewReader(h2ChatRequest))
		require.NoError(t, err)
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	python(t, s, "/v1/chat/completions", "gpt-4o-mini", 1)
	h.spansTo(t, s.Port, 1) // python's alone
	for _, sp := range h.spans.GetSpans() {
		require.NotEqual(t, trace.SpanKindServer, sp.SpanKind, "a span of this process's own end: %v", sp.Attributes)
	}
}

// TestCaptureWaitingRequests: streaming calls count as waiting from their
// request until their first chunk (the mock holds it for 3 s, as a
// server with a queue would), and no longer once it came.
func TestCaptureWaitingRequests(t *testing.T) {
	const n = 4
	s := llmserver.Start(t, llmserver.Options{FirstDelay: 3 * time.Second, ChunkDelay: chunkDelay, Chunks: chunks})
	hosts, err := NewHostMap(map[string]string{"127.0.0.1:" + strconv.Itoa(s.Port): "openai"})
	require.NoError(t, err)
	h := startCapture(t, WithHostMap(hosts), WithPlaintextPorts(uint16(s.Port)))
	// waiting returns the calls waiting on s, and whether the series is
	// there at all.
	waiting := func() (float64, bool) {
		var sum float64
		pts := testutil.Collect(t, h.reader).Find(semconv.XpuscopeGenAIClientWaitingRequests.Name,
			semconv.ServerPort.Int(s.Port))
		for _, p := range pts {
			require.Equal(t, "openai", p.Get(semconv.GenAIProviderName))
			require.Equal(t, "chat", p.Get(semconv.GenAIOperationName))
			require.Equal(t, "gpt-4o-mini", p.Get(semconv.GenAIRequestModel))
			require.Equal(t, "127.0.0.1", p.Get(semconv.ServerAddress))
			sum += p.Value
		}
		return sum, len(pts) > 0
	}
	_, seen := waiting()
	require.False(t, seen, "a series before any call")

	curl := curlChatCmd(s, n)
	var out bytes.Buffer
	curl.Stdout, curl.Stderr = &out, &out
	require.NoError(t, curl.Start())
	var got float64
	ok := poll(2500*time.Millisecond, func() bool { got, _ = waiting(); return got == n })
	require.NoError(t, curl.Wait(), "curl: %s", &out)
	require.True(t, ok, "%v calls waiting for their first chunk, want %d", got, n)
	// Then 0, reported: the series stays.
	require.True(t, poll(5*time.Second, func() bool { got, seen = waiting(); return got == 0 && seen }),
		"%v calls still waiting after their responses (series there: %v)", got, seen)
	h.spansTo(t, s.Port, n)
}

// TestCaptureLoad: 200 concurrent streaming requests over TLS, each on its
// own connection, give 200 whole spans: the bodies of interleaved
// connections do not mix. Should the ring buffer overflow, the drops are
// counted and the exchanges they touch abandoned, never mis-assembled.
func TestCaptureLoad(t *testing.T) {
	const n = 200
	s := llmserver.Start(t, llmserver.Options{TLS: true, FirstDelay: 50 * time.Millisecond, ChunkDelay: 10 * time.Millisecond, Chunks: chunks})
	h := startCapture(t)
	h.waitAttached(t, systemLibSSL(t))
	curlChat(t, s, n)

	var spans tracetest.SpanStubs
	var dropped float64
	ok := poll(20*time.Second, func() bool {
		spans = spans[:0]
		for _, sp := range h.spans.GetSpans() {
			if attrs(sp)[semconv.ServerPort].AsInt64() == int64(s.Port) {
				spans = append(spans, sp)
			}
		}
		pts := testutil.Collect(t, h.reader)
		dropped = pts.One(t, semconv.XpuscopeGenAICaptureDropped.Name).Value
		return len(spans) == n || (dropped > 0 && len(spans) > 0)
	})
	require.True(t, ok, "%d spans of %d, %v records dropped", len(spans), n, dropped)
	for _, sp := range spans {
		a := attrs(sp)
		require.Equal(t, "gpt-4o-mini", a[semconv.GenAIRequestModel].AsString())
		require.Equal(t, int64(llmserver.OutputTokens), a[semconv.GenAIUsageOutputTokens].AsInt64())
		require.Equal(t, "chatcmpl-mock1", a[semconv.GenAIResponseID].AsString())
	}
	if dropped == 0 {
		require.Len(t, spans, n)
	}
	t.Logf("%d spans, %v records dropped", len(spans), dropped)
	h.requireNoSecret(t)
}

// TestCaptureLongStreams: streamed answers of 100 to 50,000 chunks
// (~15 KB to ~7 MB) through the real capture with the default 64 KiB body
// limit: each is parsed as it arrives, so the usage in its last event is
// read exactly and every chunk counted, though only 64 KiB of the body is
// kept. (The reader's memory staying flat is TestConnTableLongStream's.)
func TestCaptureLongStreams(t *testing.T) {
	type hostCall struct {
		host string
		call Call
	}
	// Other processes on the host (other tests) may make calls too.
	calls := make(chan hostCall, 64)
	h := startCapture(t, WithExchangeHandler(func(x *Exchange, c *Call, _ Endpoint) {
		select {
		case calls <- hostCall{x.Host, *c}:
		default:
		}
	}))
	h.waitAttached(t, systemLibSSL(t))
	for _, n := range []int{100, 1_000, 10_000, 50_000} {
		s := llmserver.Start(t, llmserver.Options{TLS: true, Chunks: n})
		pythonClient(t, s, "/v1/chat/completions", "gpt-4o-mini", 1, false)
		var c Call
		for deadline := time.After(20 * time.Second); c.Provider == ""; {
			select {
			case hc := <-calls:
				if hc.host == "127.0.0.1:"+strconv.Itoa(s.Port) {
					c = hc.call
				}
			case <-deadline:
				pts := testutil.Collect(t, h.reader)
				require.Fail(t, "no call", "%d chunks: %v abandoned, %v dropped", n,
					pts.Find(semconv.XpuscopeGenAICaptureAbandoned.Name), pts.Find(semconv.XpuscopeGenAICaptureDropped.Name))
			}
		}
		require.Equal(t, int64(llmserver.InputTokens), c.Usage.InputTokens, "%d chunks", n)
		require.Equal(t, int64(llmserver.OutputTokens), c.Usage.OutputTokens, "%d chunks", n)
		require.Equal(t, n, c.OutputChunks)
		require.Equal(t, []string{"stop"}, c.FinishReasons)
		require.False(t, c.Incomplete, "%d chunks", n)
	}
}

// TestCaptureCutStream: a server that fails mid-stream, closing the
// connection after two chunks, between two calls that complete, over TLS
// and in plaintext: the cut call is a span with status Error and
// error.type stream_truncated, and its duration is recorded with that
// error.type; the calls around it are whole.
func TestCaptureCutStream(t *testing.T) {
	for _, tt := range []struct {
		name        string
		tls, byConn bool
	}{{"tls", true, false}, {"tls by connection", true, true}, {"plaintext", false, false}} {
		t.Run(tt.name, func(t *testing.T) {
			s := llmserver.Start(t, llmserver.Options{TLS: tt.tls, Chunks: chunks})
			h, env := captureTLSMode(t, tt.tls, tt.byConn, s.Port)
			pythonClient(t, s, "/v1/chat/completions,/v1/chat/completions?cut=2,/v1/chat/completions", "gpt-4o-mini", 3, true, env...)
			var cut []tracetest.SpanStub
			for _, sp := range h.spansTo(t, s.Port, 3) {
				a := attrs(sp)
				if sp.Status.Code == codes.Error {
					cut = append(cut, sp)
					require.Equal(t, semconv.GenAIErrorStreamTruncated, a[semconv.ErrorType].AsString())
					require.Equal(t, semconv.GenAIErrorStreamTruncated, sp.Status.Description)
					_, usage := a[semconv.GenAIUsageOutputTokens]
					require.False(t, usage, "no usage came before the cut: none is invented")
					continue
				}
				require.Equal(t, int64(llmserver.OutputTokens), a[semconv.GenAIUsageOutputTokens].AsInt64())
			}
			require.Len(t, cut, 1)
			pts := testutil.Collect(t, h.reader).Find(semconv.GenAIClientOperationDuration.Name, semconv.ServerPort.Int(s.Port),
				semconv.ErrorType.String(semconv.GenAIErrorStreamTruncated))
			require.Len(t, pts, 1)
			require.Equal(t, uint64(1), pts[0].Count)
			h.requireNoSecret(t)
		})
	}
}

// TestCaptureGaveUpWaiting: a client that gives up waiting for a server
// that never answers (urllib with a 0.5 s timeout; a server that reads
// and sends nothing) is a failed call with the request's model: over TLS
// read by call with error.type _OTHER (the capture cannot tell which end
// gave up); read by connection, and in plaintext, cancelled (its reads
// never saw the server close, nor a TLS alert of the server's).
func TestCaptureGaveUpWaiting(t *testing.T) {
	files := llmserver.Start(t, llmserver.Options{TLS: true}) // for its certificate and key
	cert, err := tls.LoadX509KeyPair(files.CAFile, files.KeyFile)
	require.NoError(t, err)
	for _, tt := range []struct {
		name   string
		tls    bool
		byConn bool
		want   string
	}{{"tls", true, false, semconv.Other}, {"tls by connection", true, true, semconv.GenAIErrorCancelled},
		{"plaintext", false, false, semconv.GenAIErrorCancelled}} {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			if tt.tls {
				ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}})
			}
			t.Cleanup(func() { ln.Close() })
			go func() {
				for {
					conn, err := ln.Accept()
					if err != nil {
						return
					}
					go func() { _, _ = io.Copy(io.Discard, conn); conn.Close() }()
				}
			}()
			port := ln.Addr().(*net.TCPAddr).Port
			url := "http://127.0.0.1:" + strconv.Itoa(port)
			if tt.tls {
				url = "https://127.0.0.1:" + strconv.Itoa(port)
			}
			h, env := captureTLSMode(t, tt.tls, tt.byConn, port)
			const script = `
import json, socket, ssl, sys, urllib.request
ctx = ssl.create_default_context(cafile=sys.argv[2])
body = json.dumps({"model": "gpt-4o-mini", "stream": True, "messages": [{"role": "user", "content": "hi"}]}).encode()
req = urllib.request.Request(sys.argv[1] + "/v1/chat/completions", data=body,
                             headers={"Content-Type": "application/json", "Authorization": "Bearer " + sys.argv[3]}, method="POST")
try:
    urllib.request.urlopen(req, context=ctx, timeout=0.5).read()
    sys.exit("the server answered")
except (socket.timeout, TimeoutError):
    pass
`
			py := exec.Command("/usr/bin/python3", "-c", script, url, files.CAFile, captureSecret)
			py.Env = append(os.Environ(), env...)
			out, err := py.CombinedOutput()
			require.NoError(t, err, "python: %s", out)
			sp := h.spansTo(t, port, 1)[0]
			a := attrs(sp)
			require.Equal(t, codes.Error, sp.Status.Code)
			require.Equal(t, tt.want, a[semconv.ErrorType].AsString())
			require.Equal(t, "gpt-4o-mini", a[semconv.GenAIRequestModel].AsString())
			h.requireNoSecret(t)
		})
	}
}

// TestCaptureSharedKeepAlive: one keep-alive connection to a server that
// serves a REST API beside its LLM API, as a gateway does, used for both
// in turn (two REST calls first): every LLM call on it is a span. (The
// first REST call muted the connection before.)
func TestCaptureSharedKeepAlive(t *testing.T) {
	s := llmserver.Start(t, llmserver.Options{TLS: true, Chunks: chunks})
	h := startCapture(t)
	h.waitAttached(t, systemLibSSL(t))

	pythonClient(t, s, "/v1/files,/v1/files,/v1/chat/completions,/v1/files,/v1/messages,/v1/files",
		"x,x,gpt-4o-mini,x,claude-sonnet-4,x", 12, false)
	models := map[string]int{}
	for _, sp := range h.spansTo(t, s.Port, 4) {
		models[attrs(sp)[semconv.GenAIRequestModel].AsString()]++
	}
	require.Equal(t, map[string]int{"gpt-4o-mini": 2, "claude-sonnet-4": 2}, models)
}

// TestCaptureServerSide: a process on the node serving an OpenAI-
// compatible API, with a client beside it: in plaintext on a watched port
// (the mock, in this test's process, whose socket calls the capture reads
// like any other's), and over TLS (testdata/capture/server.py, Python's
// http.server on the system OpenSSL). Each request it served is a SERVER
// span with the usage and model it sent, and the GenAI server metrics
// hold what it did: a first token no sooner than its first delay after it
// read the request, a token no sooner than its chunk delay after the last
// (its stream carries three content chunks and two more, each a chunk
// delay apart, for five output tokens). (Bounds from above would be
// wall-clock asserts: none.)
func TestCaptureServerSide(t *testing.T) {
	t.Run("plaintext", func(t *testing.T) {
		// The mock in a process of its own: the capture leaves its own
		// process's calls out.
		s := startMockProcess(t, mockH2CEnv+"=1", mockTestEnv+"=1")
		h := startCapture(t, WithPlaintextPorts(uint16(s.Port)))
		checkServed(t, h, s)
	})
	t.Run("tls", func(t *testing.T) {
		s := startServerPyTest(t, "")
		h := startCapture(t, withTLSByCall())
		h.waitAttached(t, systemLibSSL(t))
		checkServed(t, h, s)
	})
	// Both ends seen from their load of libssl: read at their sockets.
	t.Run("tls by connection", func(t *testing.T) {
		h := startCapture(t)
		env, lib := privateLibSSL(t)
		s := startServerPyTest(t, env)
		checkServed(t, h, s, env)
		h.requireByConnection(t, lib)
	})
	t.Run("go tls", func(t *testing.T) {
		// The mock in a process of its own (this test binary run again):
		// a Go server over TLS, read through the crypto/tls probes,
		// as a Go model server or gateway on the node would be.
		h := startCapture(t, WithGoTLS(true))
		s := startMockProcess(t, mockH2CEnv+"=tls", mockTestEnv+"=1")
		checkServed(t, h, s)
	})
}

// pyServer is a running testdata/capture/server.py.
type pyServer struct {
	*llmserver.Server
	pid int
	cmd *exec.Cmd
}

func (p *pyServer) stop() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() }

// startServerPy starts testdata/capture/server.py over TLS with the
// certificate and key of files (an llmserver's), args its
// FIRST_DELAY_MS, CHUNK_DELAY_MS and CHUNKS, and env ("": none) added to
// its environment.
func startServerPy(t testing.TB, files *llmserver.Server, env string, args ...string) *pyServer {
	cmd := exec.Command("/usr/bin/python3", append([]string{"testdata/capture/server.py", files.CAFile, files.KeyFile}, args...)...)
	if env != "" {
		cmd.Env = append(os.Environ(), env)
	}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	p := &pyServer{pid: cmd.Process.Pid, cmd: cmd}
	var port int
	if _, err = fmt.Fscanf(out, "PORT %d\n", &port); err != nil {
		p.stop()
		require.NoError(t, err, "server.py printed no port")
	}
	p.Server = &llmserver.Server{URL: "https://127.0.0.1:" + strconv.Itoa(port), Port: port, CAFile: files.CAFile}
	return p
}

// startServerPyTest starts server.py for a test: TestCaptureTLSClients'
// delays and chunks, stopped at the test's end.
func startServerPyTest(t *testing.T, env string) *llmserver.Server {
	files := llmserver.Start(t, llmserver.Options{TLS: true}) // for its certificate and key
	p := startServerPy(t, files, env, strconv.Itoa(int(firstDelay.Milliseconds())), strconv.Itoa(int(chunkDelay.Milliseconds())), strconv.Itoa(chunks))
	t.Cleanup(p.stop)
	return p.Server
}

// checkServed makes three calls to s (the client with env added to its
// environment) and checks what its end did.
func checkServed(t *testing.T, h *captureHarness, s *llmserver.Server, env ...string) {
	const n = 3
	python(t, s, "/v1/chat/completions", "gpt-4o-mini", n, env...)
	h.spansTo(t, s.Port, n) // the client's calls
	for _, sp := range h.spansOf(t, trace.SpanKindServer, s.Port, n) {
		a := attrs(sp)
		require.Equal(t, "chat gpt-4o-mini", sp.Name)
		require.Equal(t, "gpt-4o-mini", a[semconv.GenAIResponseModel].AsString())
		require.Equal(t, int64(llmserver.InputTokens), a[semconv.GenAIUsageInputTokens].AsInt64())
		require.Equal(t, int64(llmserver.OutputTokens), a[semconv.GenAIUsageOutputTokens].AsInt64())
		require.Equal(t, codes.Unset, sp.Status.Code)
		require.GreaterOrEqual(t, sp.EndTime.Sub(sp.StartTime), firstDelay+(chunks+1)*chunkDelay, "the request's duration")
	}

	pts := testutil.Collect(t, h.reader)
	port := semconv.ServerPort.Int(s.Port)
	dur := pts.Find(semconv.GenAIServerRequestDuration.Name, port)
	require.Len(t, dur, 1)
	require.Equal(t, uint64(n), dur[0].Count)
	first := pts.Find(semconv.GenAIServerTimeToFirstToken.Name, port)
	require.Len(t, first, 1)
	require.Equal(t, uint64(n), first[0].Count)
	require.GreaterOrEqual(t, first[0].Value/float64(n), firstDelay.Seconds(), "mean time to first token")
	perToken := pts.Find(semconv.GenAIServerTimePerOutputToken.Name, port)
	require.Len(t, perToken, 1)
	require.Equal(t, uint64(n), perToken[0].Count)
	require.GreaterOrEqual(t, perToken[0].Value/float64(n), chunkDelay.Seconds(), "mean time per output token")
	h.requireNoSecret(t)
}

// TestCaptureUnknownAddress: calls to an address that names no provider,
// through the real capture, are told by what they carry: a Bedrock
// Converse call signed for Bedrock (Signature Version 4, no X-Amz-Date)
// and an Ollama chat off its port. The mock answers both 404, so both are
// failed calls with error.type 404, and the signature is nowhere.
func TestCaptureUnknownAddress(t *testing.T) {
	s := llmserver.Start(t, llmserver.Options{TLS: true})
	h := startCapture(t)
	h.waitAttached(t, systemLibSSL(t))
	const script = `
import ssl, sys, urllib.error, urllib.request
url, cafile, secret = sys.argv[1], sys.argv[2], sys.argv[3]
ctx = ssl.create_default_context(cafile=cafile)
calls = [
    ("/model/anthropic.claude-3-haiku/converse", b'{"messages":[{"role":"user","content":[{"text":"hi"}]}]}',
     {"Authorization": "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20250101/us-east-1/bedrock/aws4_request, "
      "SignedHeaders=content-type;host, Signature=" + secret, "Content-Type": "application/json"}),
    ("/api/chat", b'{"model":"llama3","messages":[{"role":"user","content":"hi"}]}', {"Content-Type": "application/json"}),
]
for path, body, headers in calls:
    req = urllib.request.Request(url + path, data=body, headers=headers, method="POST")
    try:
        urllib.request.urlopen(req, context=ctx).read()
        sys.exit("%s: the mock answered" % path)
    except urllib.error.HTTPError as e:
        e.read()
`
	out, err := exec.Command("/usr/bin/python3", "-c", script, s.URL, s.CAFile, captureSecret).CombinedOutput()
	require.NoError(t, err, "python: %s", out)
	got := map[string]string{}
	for _, sp := range h.spansTo(t, s.Port, 2) {
		a := attrs(sp)
		got[a[semconv.GenAIProviderName].AsString()] = a[semconv.ErrorType].AsString()
	}
	require.Equal(t, map[string]string{semconv.GenAIProviderAWSBedrock: "404", semconv.GenAIProviderOllama: "404"}, got)
	h.requireNoSecret(t)
}

// TestCaptureCloseLeavesNothing: after Close, the goroutines and file
// descriptors (maps, programs, links, the ring buffer) are gone; a second
// Close returns nil. The capture sees no process (an empty procfs root),
// which keeps it quick.
func TestCaptureCloseLeavesNothing(t *testing.T) {
	testutil.Native(t, "the kernel's BPF and uprobes")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "the capture's BPF programs need root")
	}
	open := func() *Capture {
		c, err := NewCapture(WithProcRoot(t.TempDir()))
		require.NoError(t, err)
		return c
	}
	// A first round creates what lives as long as the test binary.
	require.NoError(t, open().Close())
	fds, goroutines := countFDs(t), runtime.NumGoroutine()
	c := open()
	require.Greater(t, countFDs(t), fds)
	require.Greater(t, runtime.NumGoroutine(), goroutines)
	require.NoError(t, c.Close())
	require.NoError(t, c.Close())
	ok := poll(5*time.Second, func() bool { return runtime.NumGoroutine() <= goroutines && countFDs(t) <= fds })
	require.True(t, ok, "after Close: %d goroutines (%d before), %d fds (%d before)",
		runtime.NumGoroutine(), goroutines, countFDs(t), fds)
}

func countFDs(t testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}

// noPrivEnv runs TestCaptureNoPrivilegeChild for real.
const noPrivEnv = "XPUSCOPE_GENAI_NOPRIV_CHILD"

// TestCaptureNoPrivilege: without privilege NewCapture says what is
// missing, as an ErrUnavailable. The test binary runs itself as nobody
// (uid/gid 65534, no capabilities).
func TestCaptureNoPrivilege(t *testing.T) {
	testutil.Native(t, "the test binary run again as a program")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "switching to nobody needs root")
	}
	self, err := os.Executable()
	require.NoError(t, err)
	dir, err := os.MkdirTemp("", "genai-nopriv-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755)) // nobody must reach the binary
	bin := filepath.Join(dir, "genai.test")
	b, err := os.ReadFile(self)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bin, b, 0o755))
	cmd := exec.Command(bin, "-test.run=^TestCaptureNoPrivilegeChild$", "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), noPrivEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "--- PASS: TestCaptureNoPrivilegeChild", "%s", out)
	require.Contains(t, string(out), "CAP_BPF", "%s", out)
}

// TestCaptureNoPrivilegeChild is TestCaptureNoPrivilege's child.
func TestCaptureNoPrivilegeChild(t *testing.T) {
	if os.Getenv(noPrivEnv) == "" {
		return // only TestCaptureNoPrivilege's child does anything
	}
	require.Equal(t, 65534, os.Geteuid())
	c, err := NewCapture(WithMeterProvider(sdkmetric.NewMeterProvider()))
	if err == nil {
		c.Close()
	}
	require.Error(t, err, "NewCapture succeeded without privilege")
	require.ErrorIs(t, err, xpuscope.ErrUnavailable)
	require.Contains(t, err.Error(), "CAP_BPF")
	t.Logf("NewCapture: %v", err)
}

// TestCaptureOptions: bad options are errors that say which, before
// anything is loaded.
func TestCaptureOptions(t *testing.T) {
	for name, o := range map[string]CaptureOption{
		"port 0":      WithPlaintextPorts(8000, 0),
		"body limit":  WithBodyLimit(-1),
		"huge body":   WithBodyLimit(64 << 20),
		"poll":        WithPollInterval(-time.Second),
		"connections": WithMaxConnections(-1),
		"idle":        WithIdleTimeout(-time.Second),
		"content cap": WithContentCapture(-5),
		// A value given is what it says: 0 is no "default" (one rule for
		// every Source, docs/architecture.md).
		"body limit 0":  WithBodyLimit(0),
		"poll 0":        WithPollInterval(0),
		"ring 0":        WithRingBufferSize(0),
		"ring 5000":     WithRingBufferSize(5000),
		"connections 0": WithMaxConnections(0),
		"idle 0":        WithIdleTimeout(0),
		"no proc root":  WithProcRoot(""),
		"models 0":      WithMaxModels(0),
	} {
		_, err := NewCapture(o)
		require.Error(t, err, name)
		require.NotErrorIs(t, err, xpuscope.ErrUnavailable, name)
		require.Regexp(t, `^genai: With\w+: `, err.Error(), "%s: the error names the option", name)
	}
}

// TestCapturePlaintextGate: a listener on a watched port that predates
// the capture holds the plaintext gate open, found by the procfs scan;
// once it is gone the next scan closes the gate, and with no port
// watched the syscall programs are not attached at all.
func TestCapturePlaintextGate(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	port := uint16(l.Addr().(*net.TCPAddr).Port)
	// A connection from before the capture: bytes may pass through it
	// that the capture must read, with no change of state to see.
	client, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	server, err := l.Accept()
	require.NoError(t, err)

	h := startCapture(t, WithPlaintextPorts(port))
	gate := func() httpbpf.Gate {
		g, err := h.c.objs.Gate()
		require.NoError(t, err)
		return g
	}
	g := gate()
	require.True(t, g.Preexisting, "a connection on %d predates the capture: %+v", port, g)
	// tracefs mounted (make deps mounts it as a node's systemd does),
	// the syscall programs are at the data syscalls' own tracepoints.
	if _, err := os.Stat("/sys/kernel/tracing/events/syscalls"); err == nil || os.Getenv("CI") != "" {
		require.NoError(t, h.c.Status().RawSyscalls)
		require.Len(t, h.c.kernel.Probes, 1+1+1+2*len(httpbpf.DataSyscalls), "the TLS tracer, the socket state program, and close's and the data syscalls' tracepoints")
	}

	// Closed, it no longer holds the gate open, and neither does the
	// listener: a new connection changes state before a byte passes.
	require.NoError(t, client.Close())
	require.NoError(t, server.Close())
	require.True(t, poll(5*time.Second, func() bool {
		require.NoError(t, h.c.checkPreexisting())
		g = gate()
		return !g.IsOpen()
	}), "only the listener on %d is left: %+v", port, g)

	// A new connection opens it, and its close shuts it again.
	client, err = net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	server, err = l.Accept()
	require.NoError(t, err)
	g = gate()
	require.True(t, g.IsOpen() && !g.Preexisting, "a new connection on %d: %+v", port, g)
	require.NoError(t, client.Close())
	require.NoError(t, server.Close())
	require.True(t, poll(5*time.Second, func() bool { g = gate(); return !g.IsOpen() }),
		"the new connection closed: %+v", g)

	none := startCapture(t, WithPlaintextPorts(), withTLSByCall())
	require.Len(t, none.c.kernel.Probes, 1, "no port watched, TLS by call: no program on every syscall, the TLS tracer alone")
	require.Nil(t, none.c.objs.Program(httpbpf.SysEnter), "no port watched, TLS by call: the syscall programs not even loaded")
	// TLS read by connection (the default) needs them, for the sockets of
	// the TLS connections; no socket is theirs yet: the gate is shut.
	byConn := startCapture(t, WithPlaintextPorts())
	require.NotNil(t, byConn.c.objs.Program(httpbpf.SysEnter))
	g, err = byConn.c.objs.Gate()
	require.NoError(t, err)
	require.False(t, g.IsOpen(), "no port watched, no TLS connection read: %+v", g)
}

// Where tracefs is not mounted (a container given /sys without it), the
// syscalls' own tracepoints cannot be named: the plaintext capture runs
// its programs at the raw ones, and Status says why. The capture starts
// on a thread of its own in a mount namespace of its own, private, with
// tracefs unmounted there alone.
func TestCaptureWithoutTracefs(t *testing.T) {
	startCapture(t) // root, and the kernel's BPF
	type started struct {
		c   *Capture
		err error
	}
	done := make(chan started)
	go func() {
		// Never unlocked: the thread, and its namespace, end with the
		// goroutine.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			done <- started{err: fmt.Errorf("unshare: %w", err)}
			return
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			done <- started{err: fmt.Errorf("make the mounts private: %w", err)}
			return
		}
		for _, dir := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing", "/sys/kernel/debug"} {
			_ = unix.Unmount(dir, unix.MNT_DETACH)
		}
		c, err := NewCapture(WithPlaintextPorts(8000), WithGoTLS(false))
		done <- started{c, err}
	}()
	s := <-done
	require.NoError(t, s.err)
	t.Cleanup(func() { require.NoError(t, s.c.Close()) })
	st := s.c.Status()
	require.ErrorContains(t, st.RawSyscalls, "syscalls:sys_enter_close")
	require.Len(t, s.c.kernel.Probes, 1+3, "the TLS tracer, the socket state program and the raw sys_enter and sys_exit")
}
