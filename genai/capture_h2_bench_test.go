package genai

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/uprobe"
)

// The test binary as the HTTP/2 benchmarks' client (see TestMain): Go's
// net/http over HTTP/2, in plaintext (prior knowledge) or over TLS, in a
// process of its own.
const (
	h2cClientEnv = "XPUSCOPE_BENCH_H2_CLIENT" // the mock's base URL
	clientCAEnv  = "XPUSCOPE_BENCH_CA"        // over TLS: the CA file to trust
	mockH2CEnv   = "XPUSCOPE_BENCH_MOCK_H2C"  // the mock serves plaintext HTTP/2
	// With h2cClientEnv: make this many calls at once, not the
	// benchmark's one after another (goH2CClient).
	h2cParallelEnv = "XPUSCOPE_TEST_H2C_PARALLEL"
)

// runH2CClient makes XPUSCOPE_BENCH_REQUESTS streamed chat calls one
// after another on one HTTP/2 connection to url, as sslclient does on
// its TLS one: it prints READY once connected, starts at a line on
// stdin, and prints NS_PER_REQUEST.
func runH2CClient(url string) {
	n := benchEnv("XPUSCOPE_BENCH_REQUESTS", 1000)
	tr := &http.Transport{ForceAttemptHTTP2: true}
	if ca := os.Getenv(clientCAEnv); ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			fmt.Fprintln(os.Stderr, "h2 client:", err)
			os.Exit(1)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	} else {
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		tr.Protocols = &p
	}
	client := &http.Client{Transport: tr}
	call := func() error {
		_, err := chatOverH2(client, url, io.Discard)
		return err
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "h2c client:", err)
		os.Exit(1)
	}
	if err := call(); err != nil { // the connection, before the count
		fail(err)
	}
	fmt.Println("READY")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fail(err)
	}
	start := time.Now()
	for range n {
		if err := call(); err != nil {
			fail(err)
		}
	}
	fmt.Println("NS_PER_REQUEST", float64(time.Since(start).Nanoseconds())/float64(n))
}

// chatOverH2 makes one streamed chat call to url with client over HTTP/2,
// copies the response's body to w, and returns how many bytes it had.
func chatOverH2(client *http.Client, url string, w io.Writer) (int64, error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url+"/v1/chat/completions", strings.NewReader(h2ChatRequest))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+captureSecret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(w, resp.Body)
	if err == nil && (resp.ProtoMajor != 2 || resp.StatusCode != http.StatusOK) {
		err = fmt.Errorf("%s %s", resp.Proto, resp.Status)
	}
	return n, err
}

// startH2CClient runs runH2CClient in a child process, connected and
// waiting at READY; run (sslClient's) lets it go. With a CA file, the
// client speaks TLS.
func startH2CClient(b *testing.B, exe, url, ca string, n int) *sslClient {
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), h2cClientEnv+"="+url, clientCAEnv+"="+ca, "XPUSCOPE_BENCH_REQUESTS="+strconv.Itoa(n))
	return startReady(b, cmd)
}

// BenchmarkCaptureOverheadHTTP2: requests/s of Go's net/http client
// making streamed chat calls one after another on one HTTP/2 connection
// (plaintext, prior knowledge), to the mock in a process of its own on a
// watched port, without and with the capture (the SDK's providers), in
// rounds as BenchmarkCaptureOverhead's. With the capture on, every call
// must become a CLIENT call. "watched": the mock stands in for a provider
// off the node, as in BenchmarkCaptureOverhead, its end left out;
// "watched, both ends": a client and a model server on one node, each
// call captured at both. Run it once: -benchtime=1x.
func BenchmarkCaptureOverheadHTTP2(b *testing.B) {
	s, mock := startMockFrom(b, os.Args[0], mockH2CEnv+"=1")
	url := "http://127.0.0.1:" + strconv.Itoa(s.Port)
	watched := WithPlaintextPorts(uint16(s.Port))
	b.Run("watched", func(b *testing.B) { goClientRounds(b, os.Args[0], url, "", watched, withLeftOut(mock)) })
	b.Run("watched, both ends", func(b *testing.B) { goClientRounds(b, os.Args[0], url, "", watched) })
	// The system-call programs attached, watching a port nobody uses:
	// what they cost the client when they capture nothing.
	b.Run("other port", func(b *testing.B) { goClientRoundsCapturing(b, os.Args[0], url, "", false, WithPlaintextPorts(1)) })
}

// BenchmarkCaptureOverheadGoTLS: as BenchmarkCaptureOverheadHTTP2, over
// TLS: Go's net/http client negotiates HTTP/2 by ALPN with the mock (a
// process of its own). "connection" reads the client as the capture
// reads a program it sees from its exec: each connection's handshake and
// key log probed, its records captured at its socket and decrypted in
// user space. "call" probes its every call, as the capture does a
// program found running: Read's plaintext at its call of
// runtime.memmove; "rets" at its RET instructions, as in a build without
// that call. In each the mock, a Go program too, stands in for a
// provider off the node, as in BenchmarkCaptureOverhead: it runs from a
// copy of the test binary that the capture leaves unprobed, as it does
// its own; the client runs from another, which the capture first sees
// at the client's exec (the test binary is this process's, found
// running). "call, both ends" captures the mock's end as well (found
// running, by call): each call's reads and writes probed twice, on the
// same two cores.
func BenchmarkCaptureOverheadGoTLS(b *testing.B) {
	dir := b.TempDir()
	src, err := os.ReadFile(os.Args[0])
	require.NoError(b, err)
	mockExe, client := filepath.Join(dir, "mock"), filepath.Join(dir, "client")
	for _, exe := range []string{mockExe, client} {
		require.NoError(b, os.WriteFile(exe, src, 0o755))
	}
	s, mock := startMockFrom(b, mockExe, mockH2CEnv+"=tls")
	url := "https://127.0.0.1:" + strconv.Itoa(s.Port)
	b.Run("connection", func(b *testing.B) { goClientRounds(b, client, url, s.CAFile, withLeftOut(mock)) })
	b.Run("call", func(b *testing.B) { goClientRounds(b, client, url, s.CAFile, withLeftOut(mock), withTLSByCall()) })
	b.Run("rets", func(b *testing.B) { goClientRounds(b, client, url, s.CAFile, withLeftOut(mock), withGoReadAtRETs()) })
	b.Run("call, both ends", func(b *testing.B) { goClientRounds(b, client, url, s.CAFile, withTLSByCall()) })
	// Without plaintext ports: by call, the system-call programs, which
	// run at every system call of every process while they are attached,
	// are not, and this is what the TLS probes cost alone; by
	// connection, they are, for the TLS sockets.
	b.Run("call, no plaintext ports", func(b *testing.B) {
		goClientRounds(b, client, url, s.CAFile, withLeftOut(mock), WithPlaintextPorts(), withTLSByCall())
	})
	b.Run("connection, no plaintext ports", func(b *testing.B) {
		goClientRounds(b, client, url, s.CAFile, withLeftOut(mock), WithPlaintextPorts())
	})
}

// goClientRounds measures the Go client's rate against url (over TLS
// with a CA file) without and with a capture made with opts.
func goClientRounds(b *testing.B, exe, url, ca string, opts ...CaptureOption) {
	goClientRoundsCapturing(b, exe, url, ca, true, opts...)
}

// goClientRoundsCapturing is goClientRounds with the calls the capture
// must see said: all of them, or none.
func goClientRoundsCapturing(b *testing.B, exe, url, ca string, captures bool, opts ...CaptureOption) {
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(b, "the capture's BPF programs need root")
	}
	n := benchEnv("XPUSCOPE_BENCH_REQUESTS", 1000)
	rounds := benchEnv("XPUSCOPE_BENCH_ROUNDS", 9)
	untraced := func() float64 { return startH2CClient(b, exe, url, ca, n).run(b) }
	cost := newCaptureCost(b)
	traced := func() float64 {
		var calls int
		c, err := NewCapture(append(append(sdkProviders(), opts...), WithExchangeHandler(func(*Exchange, *Call, Endpoint) { calls++ }))...)
		require.NoError(b, err)
		defer c.Close()
		// The client's first call, before READY, opens the connection,
		// which the capture sees from its start: over TLS, the client
		// (this test binary, run again, which the capture leaves alone
		// in its own process) is held at its exec until probed.
		cl := startH2CClient(b, exe, url, ca, n)
		if ca != "" {
			fi, err := os.Stat(exe)
			require.NoError(b, err)
			ok := poll(5*time.Second, func() bool {
				return slices.ContainsFunc(c.Status().Attachments, func(a uprobe.Attachment) bool {
					return a.Target == TargetGoTLS && sameFile(fi, a.Dev, a.Inode)
				})
			})
			require.True(b, ok, "the client not probed: %+v", c.Status())
		}
		cl.start(b)
		cost.start(b, c)
		ns := cl.wait(b)
		want := n + 1
		if !captures {
			want = 0
		}
		got := poll(5*time.Second, func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			return calls == want
		})
		require.True(b, got, "%d calls captured, want %d", calls, want)
		cost.stop(b, c, n)
		return ns
	}
	benchRounds(b, rounds, untraced, traced)
}
