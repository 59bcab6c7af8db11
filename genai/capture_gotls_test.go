package genai

import (
	"cmp"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/httpbpf"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/testutil/llmserver"
	"github.com/xpuscope/xpuscope/semconv"
)

// committedStripped is goclient built once with the Go of the day and
// -ldflags=-s -w (no symbol table, no DWARF: the probes are placed from
// its pclntab), committed so that a build the tests do not make is
// probed too:
//
//	CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o testdata/capture/goclient-stripped ./testdata/capture/goclient
const committedStripped = "testdata/capture/goclient-stripped"

// buildGoClient builds testdata/capture/goclient as b says.
func buildGoClient(t *testing.T, b testutil.GoBuild) string {
	t.Helper()
	return testutil.BuildGo(t, "testdata/capture/goclient", "goclient", b)
}

// runGoClient runs a goclient binary against s once the capture has
// probed it, and returns the protocol of each call. A client the capture
// holds from its exec has its connections read at their sockets (its
// handshakes and key log probed); with withTLSByCall, its calls are
// (Read's returns on its call of runtime.memmove, or, with
// withGoReadAtRETs, on its RETs).
func runGoClient(t *testing.T, h *captureHarness, exe string, s *llmserver.Server, model string, n int, args ...string) []string {
	t.Helper()
	protos, _ := runGoClientPID(t, h, exe, s, model, n, args...)
	return protos
}

// runGoClientPID is runGoClient, returning the client's pid too.
func runGoClientPID(t *testing.T, h *captureHarness, exe string, s *llmserver.Server, model string, n int, args ...string) ([]string, int) {
	t.Helper()
	cmd := exec.Command(exe, append(args, s.URL, s.CAFile, model, strconv.Itoa(n))...)
	cmd.Env = append(os.Environ(), "CAPTURE_SECRET="+captureSecret)
	c := startReady(t, cmd)
	fi, err := os.Stat(exe)
	require.NoError(t, err)
	ok := poll(10*time.Second, func() bool {
		for _, a := range h.c.Status().Attachments {
			if a.Target == TargetGoTLS && sameFile(fi, a.Dev, a.Inode) {
				// By connection: the client's handshakes (a client
				// links no serverHandshake) and its key log. By call:
				// Read's returns at its call of runtime.memmove, where
				// the receiver is read from its spill slot, with no
				// entry probe; or at its RETs, after its entry's.
				want := []string{"crypto/tls.(*Conn).clientHandshake", httpbpf.GoTLSKeyLog}
				switch {
				case h.c.cfg.goReadAtRETs:
					want = []string{"crypto/tls.(*Conn).Write", "crypto/tls.(*Conn).Read", "crypto/tls.(*Conn).Read (returns)", "crypto/tls.(*Conn).Close"}
				case h.c.cfg.tlsByCall:
					want = []string{"crypto/tls.(*Conn).Write", "crypto/tls.(*Conn).Read (call of runtime.memmove)", "crypto/tls.(*Conn).Close"}
				}
				require.ElementsMatch(t, want, a.Symbols)
				return true
			}
		}
		return false
	})
	require.True(t, ok, "%s not probed: %+v", exe, h.c.Status())
	_, err = io.WriteString(c.stdin, "go\n")
	require.NoError(t, err)
	var protos []string
	for c.out.Scan() {
		protos = append(protos, c.out.Text())
	}
	require.NoError(t, cmd.Wait())
	return protos, cmd.Process.Pid
}

// TestCaptureGoTLS: Go programs' crypto/tls, unmodified net/http clients
// over TLS to the local mock: over HTTP/2 (ALPN) and HTTP/1.1, on one
// keep-alive connection and on a new connection per call, built by the
// test with each Go release the machine has, stripped of their symbols
// (-s -w) or not, linked by Go's linker or by the C toolchain (as with
// cgo; as a PIE too), and a stripped build committed; and one that writes
// its requests a byte at a time from ever deeper calls. Every call is a
// span with the fields a Python client's has; the credential appears
// nowhere. Each client is read by connection (at its socket, decrypted
// with the secrets it logs), as a program the capture sees from its exec
// is, and by call, as one found running is.
func TestCaptureGoTLS(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts []CaptureOption
	}{{"by connection", nil}, {"by call", []CaptureOption{withTLSByCall()}}} {
		t.Run(mode.name, func(t *testing.T) { testCaptureGoTLS(t, mode.opts...) })
	}
}

func testCaptureGoTLS(t *testing.T, opts ...CaptureOption) {
	s := llmserver.Start(t, llmserver.Options{TLS: true, HTTP2: true, FirstDelay: firstDelay, ChunkDelay: chunkDelay, Chunks: chunks})
	h := startCapture(t, append(opts, WithGoTLS(true))...)
	full, stripped := buildGoClient(t, testutil.GoBuild{}), buildGoClient(t, testutil.GoBuild{LDFlags: "-s -w"})
	type clientCase struct {
		name  string
		exe   string
		args  []string
		proto string
		calls int // 3 if 0
	}
	cases := []clientCase{
		{"http2", full, nil, "HTTP/2.0", 0},
		{"http2, anthropic", full, []string{"-anthropic"}, "HTTP/2.0", 0},
		{"http1.1", full, []string{"-http1"}, "HTTP/1.1", 0},
		{"http2, a connection per call", full, []string{"-fresh"}, "HTTP/2.0", 0},
		// Past the fixtures: fifty handshakes in a row from one process,
		// each with its own secrets.
		{"http2, 50 connections, a call each", full, []string{"-fresh"}, "HTTP/2.0", 50},
		// Each request written a byte at a time, from ever deeper calls:
		// a Write that grows its goroutine's stack at its bound check
		// starts over, through its probe a second time, and that byte
		// is captured once; and the connection's protocol is told from
		// its first four writes, held until the fourth.
		{"http1.1, a byte a write, from ever deeper calls", full, []string{"-bytewise"}, "HTTP/1.1", 0},
		{"stripped", stripped, nil, "HTTP/2.0", 0},
		{"committed stripped", committedStripped, []string{"-http1", "-fresh"}, "HTTP/1.1", 0},
		// Linked by the C toolchain, as every program that uses cgo is:
		// C code comes first in .text, and the stripped build's probes
		// are placed from its pclntab, whose entries count from
		// runtime.text, not from the section's start.
		{"externally linked, stripped", buildGoClient(t, testutil.GoBuild{External: true, LDFlags: "-s -w"}), nil, "HTTP/2.0", 0},
		{"externally linked PIE, stripped", buildGoClient(t, testutil.GoBuild{External: true, PIE: true, LDFlags: "-s -w"}), []string{"-http1"}, "HTTP/1.1", 0},
	}
	for _, release := range testutil.OtherGoReleases {
		cases = append(cases, clientCase{release + ", stripped", buildGoClient(t, testutil.GoBuild{Toolchain: release, LDFlags: "-s -w"}), []string{"-fresh"}, "HTTP/2.0", 0})
	}
	calls := 0
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := cmp.Or(tc.calls, 3)
			started := time.Now()
			provider, model, finish := semconv.GenAIProviderOpenAICompatible, "gpt-4o-mini", "stop"
			if slices.Contains(tc.args, "-anthropic") {
				provider, model, finish = "anthropic", "claude-sonnet-4", "end_turn"
			}
			protos := runGoClient(t, h, tc.exe, s, model, n, tc.args...)
			require.Equal(t, strings.Repeat(tc.proto+" ", n), strings.Join(protos, " ")+" ")
			calls += n
			got := 0
			for _, sp := range h.spansTo(t, s.Port, calls) {
				if attrs(sp)[semconv.GenAIRequestModel].AsString() == model && sp.StartTime.After(started) {
					checkStreamedCall(t, h, sp, provider, model, finish)
					got++
				}
			}
			require.Equal(t, n, got, "spans of this client's calls")
		})
	}
	// The capturing process's own crypto/tls (an agent's exports) is not
	// captured: two calls from this process add no span.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: s.TLSConfig(t), ForceAttemptHTTP2: true}}
	for range 2 {
		resp, err := client.Post(s.URL+"/v1/chat/completions", "application/json", strings.NewReader(h2ChatRequest))
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	h.spansTo(t, s.Port, calls)
	h.requireNoSecret(t)
}

// TestCaptureGoTLSAtOnce: a Go program no capture has seen, which calls
// from its first instructions (its first request is written a few ms
// after its exec, over a new TLS connection to the local mock), has every
// call captured: the discovery holds it from its exec until its
// crypto/tls is probed, and its file is not counted as attached late.
// Without the hold (a terminal, or WithLoadHold(false)) the first call is
// lost.
func TestCaptureGoTLSAtOnce(t *testing.T) {
	s := llmserver.Start(t, llmserver.Options{TLS: true, HTTP2: true, FirstDelay: firstDelay, ChunkDelay: chunkDelay, Chunks: chunks})
	h := startCapture(t, WithGoTLS(true))
	const n, model = 3, "gpt-4o-mini"
	for round := range 3 {
		// A new build each round: a file no capture has classified.
		exe := buildGoClient(t, testutil.GoBuild{LDFlags: "-s -w"})
		started := time.Now()
		cmd := exec.Command(exe, "-at-once", "-fresh", s.URL, s.CAFile, model, strconv.Itoa(n))
		cmd.Env = append(os.Environ(), "CAPTURE_SECRET="+captureSecret)
		// No controlling terminal: a process job control watches is
		// never held.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Equal(t, strings.Repeat("HTTP/2.0\n", n), string(out))
		got := 0
		for _, sp := range h.spansTo(t, s.Port, (round+1)*n) {
			if sp.StartTime.After(started) {
				checkStreamedCall(t, h, sp, semconv.GenAIProviderOpenAICompatible, model, "stop")
				got++
			}
		}
		require.Equal(t, n, got, "round %d: the calls of this run", round)
		fi, err := os.Stat(exe)
		require.NoError(t, err)
		i := slices.IndexFunc(h.c.Status().Attachments, func(a xpuscope.Attachment) bool {
			return a.Target == TargetGoTLS && sameFile(fi, a.Dev, a.Inode)
		})
		require.GreaterOrEqual(t, i, 0, "round %d: %s not probed", round, exe)
		require.Empty(t, h.c.Status().Attachments[i].Late, "round %d: held from its exec until probed", round)
	}
	h.requireNoSecret(t)
}

// TestCaptureGoTLSAtRETs: in a Go build where crypto/tls's Read does not
// make its one call of runtime.memmove, its returns are probed at its RET
// instructions (each single-stepped) and the count is read there: the
// same calls, with the same fields, as at the call.
func TestCaptureGoTLSAtRETs(t *testing.T) {
	s := llmserver.Start(t, llmserver.Options{TLS: true, HTTP2: true, FirstDelay: firstDelay, ChunkDelay: chunkDelay, Chunks: chunks})
	h := startCapture(t, WithGoTLS(true), withGoReadAtRETs())
	const n, model = 3, "gpt-4o-mini"
	protos := runGoClient(t, h, buildGoClient(t, testutil.GoBuild{LDFlags: "-s -w"}), s, model, n)
	require.Equal(t, []string{"HTTP/2.0", "HTTP/2.0", "HTTP/2.0"}, protos)
	for _, sp := range h.spansTo(t, s.Port, n) {
		checkStreamedCall(t, h, sp, semconv.GenAIProviderOpenAICompatible, model, "stop")
	}
	h.requireNoSecret(t)
}

// TestCaptureGoTLSSockets: with WithRetransmits, each call of a Go client
// over crypto/tls is asked about by its connection's socket, which the
// kernel side told: with a connection per call, as many sockets as
// calls, of the client's process, read by connection or by call. Over a
// tls.Conn whose net.Conn wraps the *net.TCPConn (-wrap), whose itab has
// the wrapper's type hash, no socket is found: read by call, the calls
// are captured all the same and asked nothing; read by connection, the
// connections are not read, and each is counted (not_socket).
func TestCaptureGoTLSSockets(t *testing.T) {
	t.Run("by connection", func(t *testing.T) { testCaptureGoTLSSockets(t, false) })
	t.Run("by call", func(t *testing.T) { testCaptureGoTLSSockets(t, true) })
}

func testCaptureGoTLSSockets(t *testing.T, byCall bool) {
	s := llmserver.Start(t, llmserver.Options{TLS: true, FirstDelay: firstDelay, ChunkDelay: chunkDelay, Chunks: chunks})
	type ask struct {
		pid int
		ino uint64
	}
	var (
		mu  sync.Mutex
		all []ask
	)
	opts := []CaptureOption{WithGoTLS(true), WithRetransmits(func(pid int, ino uint64, _ string, _, _ time.Time) int {
		mu.Lock()
		defer mu.Unlock()
		all = append(all, ask{pid, ino})
		return 0
	})}
	if byCall {
		opts = append(opts, withTLSByCall())
	}
	h := startCapture(t, opts...)
	// The calls of other processes of the node (other tests' clients)
	// are asked about too: only the client's count.
	askedBy := func(pid int) []ask {
		mu.Lock()
		defer mu.Unlock()
		var out []ask
		for _, a := range all {
			if a.pid == pid {
				out = append(out, a)
			}
		}
		return out
	}
	exe := buildGoClient(t, testutil.GoBuild{})
	const n, model = 3, "gpt-4o-mini"
	counters, err := h.c.objs.Counters()
	require.NoError(t, err)
	notSocket := counters[httpbpf.CounterNotSocket]
	protos, pid := runGoClientPID(t, h, exe, s, model, n, "-http1", "-fresh", "-wrap")
	require.Equal(t, []string{"HTTP/1.1", "HTTP/1.1", "HTTP/1.1"}, protos)
	spans := 0
	if byCall {
		spans = n
	}
	h.spansTo(t, s.Port, spans)
	require.Empty(t, askedBy(pid), "the calls over wrapped connections: asked about a socket")
	counters, err = h.c.objs.Counters()
	require.NoError(t, err)
	if byCall {
		require.Equal(t, notSocket, counters[httpbpf.CounterNotSocket], "read by call: no handshake probed")
	} else {
		require.Equal(t, notSocket+n, counters[httpbpf.CounterNotSocket], "read by connection: each wrapped connection counted")
	}

	protos, pid = runGoClientPID(t, h, exe, s, model, n, "-http1", "-fresh")
	require.Equal(t, []string{"HTTP/1.1", "HTTP/1.1", "HTTP/1.1"}, protos)
	h.spansTo(t, s.Port, spans+n)
	asked := askedBy(pid)
	require.Len(t, asked, n, "the calls asked about: %+v", asked)
	inodes := map[uint64]bool{}
	for _, a := range asked {
		assert.NotZero(t, a.ino, "a socket's inode number: %+v", asked)
		inodes[a.ino] = true
	}
	assert.Len(t, inodes, n, "one socket a connection: %+v", asked)
}

// WithGoTLS(false) leaves Go programs alone: after a sweep of every
// process, a Go program that links crypto/tls (the committed client,
// waiting before its first call) is probed by a capture with the
// default and by none without. The capturing process's own file, which
// no other process maps, is probed by neither: its own calls (an agent's
// exports) are not wanted, and cost it no trap.
func TestCaptureWithoutGoTLS(t *testing.T) {
	c := startReady(t, exec.Command(committedStripped, "https://127.0.0.1:1", "/dev/null", "m", "1"))
	t.Cleanup(func() { _ = c.cmd.Process.Kill(); _ = c.cmd.Wait() })
	client, err := os.Stat(committedStripped)
	require.NoError(t, err)
	self, err := os.Stat("/proc/self/exe")
	require.NoError(t, err)
	for _, on := range []bool{true, false} {
		h := startCapture(t, WithGoTLS(on))
		require.NoError(t, h.c.tracer.Rescan())
		probed := func(fi os.FileInfo) bool {
			return slices.ContainsFunc(h.c.Status().Attachments, func(a xpuscope.Attachment) bool {
				return a.Target == TargetGoTLS && sameFile(fi, a.Dev, a.Inode)
			})
		}
		require.Equal(t, on, probed(client), "WithGoTLS(%v): %+v", on, h.c.Status())
		require.False(t, probed(self), "WithGoTLS(%v): the capture's own file", on)
		if on {
			// Found running: its connections may predate the capture,
			// so it is read by call, not by connection.
			i := slices.IndexFunc(h.c.Status().Attachments, func(a xpuscope.Attachment) bool {
				return a.Target == TargetGoTLS && sameFile(client, a.Dev, a.Inode)
			})
			require.ElementsMatch(t, []string{"crypto/tls.(*Conn).Write", "crypto/tls.(*Conn).Read (call of runtime.memmove)",
				"crypto/tls.(*Conn).Close"}, h.c.Status().Attachments[i].Symbols)
		}
		require.NoError(t, h.c.Close())
	}
}
