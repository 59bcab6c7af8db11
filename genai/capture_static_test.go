package genai

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/httpbpf"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/testutil/llmserver"
	"github.com/xpuscope/xpuscope/internal/uprobe"
	"github.com/xpuscope/xpuscope/semconv"
)

// buildSSLClient compiles testdata/capture/sslclient.c with OpenSSL linked
// in statically (libssl-dev's archives), as Node links it.
func buildSSLClient(t testing.TB) string {
	t.Helper()
	src, err := filepath.Abs("testdata/capture/sslclient.c")
	require.NoError(t, err)
	exe := filepath.Join(t.TempDir(), "sslclient")
	out, err := exec.Command("gcc", "-O2", "-Wall", "-o", exe, src,
		"-Wl,-Bstatic", "-lssl", "-lcrypto", "-Wl,-Bdynamic", "-lpthread", "-ldl").CombinedOutput()
	require.NoError(t, err, "gcc (libssl-dev has the static archives): %s", out)
	return exe
}

// sslClient is a running sslclient, connected and waiting at READY.
type sslClient struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

func startSSLClient(t testing.TB, exe string, s *llmserver.Server, n int) *sslClient {
	t.Helper()
	cmd := exec.Command(exe, strconv.Itoa(s.Port), s.CAFile, "/v1/chat/completions", "gpt-4o-mini", strconv.Itoa(n))
	cmd.Env = append(os.Environ(), "CAPTURE_SECRET="+captureSecret)
	return startReady(t, cmd)
}

// startReady starts a client that says READY once connected and waits
// for a line on stdin (sslclient's protocol; run lets it go).
func startReady(t testing.TB, cmd *exec.Cmd) *sslClient {
	t.Helper()
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	c := &sslClient{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
	require.True(t, c.out.Scan(), "%s printed nothing", cmd.Path)
	require.Equal(t, "READY", c.out.Text())
	return c
}

// run lets the client go and returns its ns per request.
func (c *sslClient) run(t testing.TB) float64 {
	t.Helper()
	c.start(t)
	return c.wait(t)
}

// start lets the client go. What the setup left (a capture's load parses
// the kernel's BTF: tens of MB of garbage) is collected and returned
// first, not by the runtime's background workers on the measured run's
// cores.
func (c *sslClient) start(t testing.TB) {
	t.Helper()
	debug.FreeOSMemory() // a collection, then the memory returned
	_, err := io.WriteString(c.stdin, "go\n")
	require.NoError(t, err)
}

// wait returns the started client's ns per request.
func (c *sslClient) wait(t testing.TB) float64 {
	t.Helper()
	var ns float64
	for c.out.Scan() {
		if v, ok := strings.CutPrefix(c.out.Text(), "NS_PER_REQUEST "); ok {
			var err error
			ns, err = strconv.ParseFloat(v, 64)
			require.NoError(t, err)
		}
	}
	require.NoError(t, c.cmd.Wait())
	require.Positive(t, ns, "no NS_PER_REQUEST line")
	return ns
}

// TestCaptureStaticOpenSSL: a program with OpenSSL linked in (no libssl.so)
// started after the capture is found and probed, and its keep-alive
// requests are captured, one span each: by connection, as the capture
// reads a program it sees from its exec, and by call.
func TestCaptureStaticOpenSSL(t *testing.T) {
	exe := buildSSLClient(t)
	t.Run("by connection", func(t *testing.T) {
		staticOpenSSL(t, exe, []string{httpbpf.TLSHandshake})
	})
	t.Run("by call", func(t *testing.T) {
		staticOpenSSL(t, exe, []string{"ssl_write_internal", "ssl_read_internal", "SSL_free"}, withTLSByCall())
	})
}

// staticOpenSSL runs the sslclient at exe under a capture made with opts,
// which must probe symbols in it.
func staticOpenSSL(t *testing.T, exe string, symbols []string, opts ...CaptureOption) {
	s := llmserver.Start(t, llmserver.Options{TLS: true, Chunks: chunks})
	h := startCapture(t, opts...)
	c := startSSLClient(t, exe, s, 3)
	var att uprobe.Attachment
	ok := poll(5*time.Second, func() bool {
		i := slices.IndexFunc(h.c.Status().Attachments, func(a uprobe.Attachment) bool { return a.PID == c.cmd.Process.Pid })
		if i >= 0 {
			att = h.c.Status().Attachments[i]
		}
		return i >= 0
	})
	require.True(t, ok, "the static client was not probed: %+v", h.c.Status())
	require.ElementsMatch(t, symbols, att.Symbols, "the executable's .symtab names them")
	c.run(t)
	for _, sp := range h.spansTo(t, s.Port, 3) {
		a := attrs(sp)
		require.Equal(t, "gpt-4o-mini", a[semconv.GenAIRequestModel].AsString())
		require.Equal(t, int64(llmserver.OutputTokens), a[semconv.GenAIUsageOutputTokens].AsInt64())
	}
	h.requireNoSecret(t)
}

// mockServerEnv makes the test binary serve the benchmark's mock instead of
// running tests (see TestMain): the mock then runs in a process of its
// own, as a model server does, and not in the one that runs the capture,
// whose reader would otherwise slow it through the shared Go runtime
// (its scheduler, and garbage collections it would assist).
const mockServerEnv = "XPUSCOPE_BENCH_MOCK_SERVER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(mockServerEnv); dir != "" {
		serveMock(dir)
		return
	}
	if url := os.Getenv(h2cClientEnv); url != "" {
		if n, err := strconv.Atoi(os.Getenv(h2cParallelEnv)); err == nil {
			if err := runParallelH2CClient(url, n); err != nil {
				fmt.Fprintln(os.Stderr, "h2c client:", err)
				os.Exit(1)
			}
			return
		}
		runH2CClient(url)
		return
	}
	os.Exit(m.Run())
}

// serveMock serves the benchmark's mock, prints its port and CA file, and
// returns when its stdin closes.
func serveMock(dir string) {
	// 8 content chunks of 400 bytes, with the SSE and JSON around them
	// and the final chunks: about 4 KiB a response.
	// XPUSCOPE_BENCH_MOCK_H2C: "tls" serves HTTP/2 over TLS too, anything
	// else plaintext HTTP/2; unset, HTTP/1.1 over TLS.
	mode := os.Getenv(mockH2CEnv)
	o := llmserver.Options{TLS: mode == "" || mode == "tls", HTTP2: mode != "", Chunks: 8, ChunkSize: 400}
	if os.Getenv(mockTestEnv) != "" {
		// The capture tests' stream: their delays and chunks.
		o.FirstDelay, o.ChunkDelay, o.Chunks, o.ChunkSize = firstDelay, chunkDelay, chunks, 0
	}
	s, err := llmserver.Serve(o, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mock server:", err)
		os.Exit(1)
	}
	defer s.Close()
	fmt.Println(s.Port, cmp.Or(s.CAFile, "-")) // "-": plaintext
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// mockTestEnv makes the mock process stream as the capture tests' mock
// does (firstDelay, chunkDelay, chunks).
const mockTestEnv = "XPUSCOPE_MOCK_TEST_STREAM"

// startMockProcess runs serveMock in a child process until the test or
// benchmark ends; env is added to its environment.
func startMockProcess(b testing.TB, env ...string) *llmserver.Server {
	s, _ := startMockFrom(b, os.Args[0], env...)
	return s
}

// startMockFrom is startMockProcess with exe, a copy of the test binary,
// and returns the mock's pid too.
func startMockFrom(b testing.TB, exe string, env ...string) (*llmserver.Server, int) {
	testutil.Native(b, "the test binary run again as a program")
	cmd := exec.Command(exe)
	cmd.Env = append(append(os.Environ(), mockServerEnv+"="+b.TempDir()), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(b, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(b, err)
	require.NoError(b, cmd.Start())
	b.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	var s llmserver.Server
	_, err = fmt.Fscanln(stdout, &s.Port, &s.CAFile)
	require.NoError(b, err, "the mock server process printed no port")
	scheme := "https"
	if s.CAFile == "-" {
		s.CAFile, scheme = "", "http"
	}
	s.URL = scheme + "://127.0.0.1:" + strconv.Itoa(s.Port)
	return &s, cmd.Process.Pid
}

// BenchmarkCaptureOverhead: requests/s of a TLS client loop (sslclient:
// OpenSSL, one keep-alive connection, streamed chat completions of about
// 4 KiB each from the local mock, in a process of its own) without and
// with the capture, in one
// run: the variants alternate over XPUSCOPE_BENCH_ROUNDS rounds (default
// 9) of XPUSCOPE_BENCH_REQUESTS requests (default 1000), and the medians
// are reported: of each variant's rate, and of each round's ratio. With the capture on, every request must
// become a span. Run it once: -benchtime=1x. `connection`: the client,
// seen from its exec, read by connection (its handshake probed, its
// ciphertext decrypted); `call`: probed at every SSL_read and SSL_write,
// as a program found running is.
func BenchmarkCaptureOverhead(b *testing.B) {
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(b, "the capture's BPF programs need root")
	}
	exe := buildSSLClient(b)
	s := startMockProcess(b)
	b.Run("connection", func(b *testing.B) { sslClientRounds(b, exe, s) })
	b.Run("call", func(b *testing.B) { sslClientRounds(b, exe, s, withTLSByCall()) })
}

// sslClientRounds measures the sslclient's rate against s without and
// with a capture made with opts.
func sslClientRounds(b *testing.B, exe string, s *llmserver.Server, opts ...CaptureOption) {
	n := benchEnv("XPUSCOPE_BENCH_REQUESTS", 1000)
	rounds := benchEnv("XPUSCOPE_BENCH_ROUNDS", 9)
	untraced := func() float64 { return startSSLClient(b, exe, s, n).run(b) }
	cost := newCaptureCost(b)
	traced := func() float64 {
		var spans int
		// The mock, a Go program, stands in for a provider off the node:
		// its end is not captured.
		c, err := NewCapture(append(append(sdkProviders(), WithGoTLS(false), WithExchangeHandler(func(*Exchange, *Call, Endpoint) { spans++ })), opts...)...)
		require.NoError(b, err)
		defer c.Close()
		cl := startSSLClient(b, exe, s, n)
		ok := poll(5*time.Second, func() bool {
			return slices.ContainsFunc(c.Status().Attachments, func(a uprobe.Attachment) bool { return a.PID == cl.cmd.Process.Pid })
		})
		require.True(b, ok, "sslclient not probed: %+v", c.Status())
		cl.start(b)
		cost.start(b, c)
		ns := cl.wait(b)
		got := poll(5*time.Second, func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			return spans == n
		})
		require.True(b, got, "%d calls captured of %d", spans, n)
		cost.stop(b, c, n)
		return ns
	}
	benchRounds(b, rounds, untraced, traced)
}

// captureCost sums, over a benchmark's traced runs, what the capture
// cost: its BPF programs' runs and run time (the kernel's BPF statistics,
// on until the benchmark ends; they read the clock twice a run, a cost of
// their own), and the CPU time of this process (the capture's reader and
// the SDK, which share the client's cores; with the benchmark's own
// polling, which is little). It reports them a call.
type captureCost struct {
	runs, runNs, cpuNs, calls uint64
	// At start.
	runs0, runNs0, cpu0 uint64
}

// newCaptureCost turns the BPF statistics on and reports the sums when
// the benchmark ends.
func newCaptureCost(b *testing.B) *captureCost {
	k := &captureCost{}
	if stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME)); err == nil {
		b.Cleanup(func() { stats.Close() })
	} else {
		b.Logf("no BPF statistics: %v", err)
	}
	b.Cleanup(func() {
		if k.calls > 0 {
			b.ReportMetric(float64(k.runs)/float64(k.calls), "bpf-runs/call")
			b.ReportMetric(float64(k.runNs)/float64(k.calls), "bpf-ns/call")
			b.ReportMetric(float64(k.cpuNs)/float64(k.calls), "reader-cpu-ns/call")
		}
	})
	return k
}

// start begins a traced run of capture c.
func (k *captureCost) start(b *testing.B, c *Capture) {
	k.runs0, k.runNs0 = bpfRuns(c)
	k.cpu0 = uint64(testutil.ProcessCPU(b))
}

// stop ends it, after calls calls, once the capture has read them.
func (k *captureCost) stop(b *testing.B, c *Capture, calls int) {
	runs, ns := bpfRuns(c)
	k.runs, k.runNs = k.runs+runs-k.runs0, k.runNs+ns-k.runNs0
	k.cpuNs += uint64(testutil.ProcessCPU(b)) - k.cpu0
	k.calls += uint64(calls)
}

// bpfRuns sums the runs and run time of c's programs: a run is a probe's
// hit (the TLS probes) or a system call's (the plaintext programs, of
// every process on the node).
func bpfRuns(c *Capture) (count, ns uint64) {
	for _, name := range []string{httpbpf.SysEnter, httpbpf.SysExit, httpbpf.SockState, "go_tls", "tls_enter", "tls_return", "tls_free", httpbpf.SyscallEnter, httpbpf.SyscallExit, httpbpf.SyscallClose} {
		if p := c.objs.Program(name); p != nil {
			if st, err := p.Stats(); err == nil {
				count, ns = count+st.RunCount, ns+uint64(st.Runtime)
			}
		}
	}
	return count, ns
}

// benchRounds runs untraced and traced (each returns ns per request) in
// turn over rounds rounds and reports the medians: of each one's rate,
// and of each round's ratio.
func benchRounds(b *testing.B, rounds int, untraced, traced func() float64) {
	var off, on, ratio []float64
	b.ResetTimer()
	for r := range rounds {
		var offNs, onNs float64
		if r%2 == 0 {
			offNs = untraced()
			onNs = traced()
		} else {
			onNs = traced()
			offNs = untraced()
		}
		off, on, ratio = append(off, offNs), append(on, onNs), append(ratio, offNs/onNs)
	}
	b.StopTimer()
	b.Logf("each round's ratio, in order: %.3f", ratio)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(1e9/testutil.Median(off), "untraced-req/s")
	b.ReportMetric(1e9/testutil.Median(on), "captured-req/s")
	// The median of each round's own ratio: a round's two runs are
	// back to back, so the machine's drift between rounds cancels.
	b.ReportMetric(testutil.Median(ratio), "captured/untraced")
}

// BenchmarkServerCaptureOverhead: requests/s that a local OpenAI-
// compatible server serves (testdata/capture/server.py: Python's
// http.server over TLS on OpenSSL, streamed chat completions of eight
// chunks, in a process of its own) to the sslclient loop, without and
// with the capture, which then reports both ends of every request: each
// must become a SERVER span. Rounds and requests as
// BenchmarkCaptureOverhead's. Each run starts a server of its own, on a
// copy of the system libssl that no other program maps, after the
// capture: `connection` reads both ends by connection, as the capture
// reads programs it sees from their start; `call`, at every call. Run it
// once: -benchtime=1x.
func BenchmarkServerCaptureOverhead(b *testing.B) {
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(b, "the capture's BPF programs need root")
	}
	exe := buildSSLClient(b)
	files, err := llmserver.Serve(llmserver.Options{TLS: true}, b.TempDir()) // for its certificate and key
	require.NoError(b, err)
	defer files.Close()
	env, _ := privateLibSSL(b)
	b.Run("connection", func(b *testing.B) { serverRounds(b, exe, files, env) })
	b.Run("call", func(b *testing.B) { serverRounds(b, exe, files, env, withTLSByCall()) })
}

// serverRounds measures the rate at which server.py, with env added to
// its environment, serves the sslclient without and with a capture made
// with opts.
func serverRounds(b *testing.B, exe string, files *llmserver.Server, env string, opts ...CaptureOption) {
	n := benchEnv("XPUSCOPE_BENCH_REQUESTS", 1000)
	rounds := benchEnv("XPUSCOPE_BENCH_ROUNDS", 9)
	untraced := func() float64 {
		srv := startServerPy(b, files, env, "0", "0", "8")
		defer srv.stop()
		return startSSLClient(b, exe, srv.Server, n).run(b)
	}
	cost := newCaptureCost(b)
	traced := func() float64 {
		spans := tracetest.NewInMemoryExporter()
		// The SDK's MeterProvider, and a TracerProvider that keeps the
		// spans to count them.
		c, err := NewCapture(append([]CaptureOption{sdkProviders()[0], WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans)))}, opts...)...)
		require.NoError(b, err)
		defer c.Close()
		srv := startServerPy(b, files, env, "0", "0", "8")
		defer srv.stop()
		s := srv.Server
		cl := startSSLClient(b, exe, s, n)
		ok := poll(5*time.Second, func() bool {
			return slices.ContainsFunc(c.Status().Attachments, func(a uprobe.Attachment) bool { return a.PID == srv.pid })
		})
		require.True(b, ok, "server.py not probed: %+v", c.Status())
		cl.start(b)
		cost.start(b, c)
		ns := cl.wait(b)
		served := 0
		got := poll(5*time.Second, func() bool {
			served = 0
			for _, sp := range spans.GetSpans() {
				if sp.SpanKind == trace.SpanKindServer {
					served++
				}
			}
			return served == n
		})
		require.True(b, got, "%d requests served of %d reported", served, n)
		cost.stop(b, c, n)
		return ns
	}
	benchRounds(b, rounds, untraced, traced)
}

// sdkProviders gives a capture the OpenTelemetry SDK's providers, as the
// agent runs it: a MeterProvider with a reader, a TracerProvider that
// batches to an exporter (one that drops what it gets).
func sdkProviders() []CaptureOption {
	return []CaptureOption{
		WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))),
		WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))),
	}
}

func benchEnv(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestCaptureLibssl11Shape: OpenSSL 1.1.1's libssl.so.1.1, which Debian
// 12 does not ship, stood in for by testdata/capture/fakessl11.c (no TLS;
// 1.1.1's exported functions, symbol versions and wrapper shape, built by
// gcc): a process that loads it is probed, on the internal functions
// found through the versioned exports, and its calls become spans.
func TestCaptureLibssl11Shape(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "libssl.map")
	require.NoError(t, os.WriteFile(script, []byte(
		"OPENSSL_1_1_0 { global: SSL_read; SSL_write; SSL_free; local: *; };\n"+
			"OPENSSL_1_1_1 { global: SSL_read_ex; SSL_write_ex; } OPENSSL_1_1_0;\n"), 0o644))
	lib := filepath.Join(dir, "libssl.so.1.1")
	client := filepath.Join(dir, "client")
	for _, args := range [][]string{
		{"-O2", "-Wall", "-shared", "-fPIC", "-Wl,-soname,libssl.so.1.1", "-Wl,--version-script=" + script, "-o", lib, "testdata/capture/fakessl11.c"},
		{"-O2", "-Wall", "-o", client, "testdata/capture/fakessl11client.c", lib, "-Wl,-rpath," + dir},
	} {
		out, err := exec.Command("gcc", args...).CombinedOutput()
		require.NoError(t, err, "gcc: %s", out)
	}
	h := startCapture(t)
	const port, calls = 4242, 2
	cmd := exec.Command(client, strconv.Itoa(port), strconv.Itoa(calls))
	cmd.Env = append(os.Environ(), "CAPTURE_SECRET="+captureSecret)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(stdout)
	require.True(t, sc.Scan() && sc.Text() == "READY", "the client did not start")
	a := h.waitAttached(t, lib)
	require.ElementsMatch(t, []string{"ssl_write_internal", "ssl_read_internal", "SSL_free"}, a.Symbols)
	_, err = io.WriteString(stdin, "go\n")
	require.NoError(t, err)
	require.NoError(t, cmd.Wait())
	for _, sp := range h.spansTo(t, port, calls) {
		a := attrs(sp)
		require.Equal(t, "gpt-4o-mini", a[semconv.GenAIRequestModel].AsString())
		require.Equal(t, int64(2), a[semconv.GenAIUsageOutputTokens].AsInt64())
		require.Equal(t, []string{"stop"}, a[semconv.GenAIResponseFinishReasons].AsStringSlice())
	}
	h.requireNoSecret(t)
}
