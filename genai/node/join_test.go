package node

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/xpuscope/xpuscope/genai"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/testutil/llmserver"
	"github.com/xpuscope/xpuscope/internal/testutil/netlab"
	"github.com/xpuscope/xpuscope/semconv"
)

// joinClient is the Python client of TestGenAISpansCarryRetransmits:
// http.client, over ssl (the system OpenSSL) when given a CA file. In
// plaintext each call is on a connection of its own, closed as soon as
// its response is read; over TLS the calls share one keep-alive
// connection, a little apart. It prints READY once ssl is loaded and waits for a line on
// stdin, so that the test can make sure the capture probes its OpenSSL
// first.
const joinClient = `
import http.client, ssl, sys, time
host, port, calls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ctx = None
if len(sys.argv) > 4:
    ctx = ssl.create_default_context(cafile=sys.argv[4])
    ctx.check_hostname = False  # the mock's certificate names localhost, not the lab's address; it is still verified
print("READY", flush=True)
sys.stdin.readline()
body = '{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}'
c = None
for _ in range(calls):
    if ctx is None:
        c = http.client.HTTPConnection(host, port, timeout=60)
    elif c is None:
        c = http.client.HTTPSConnection(host, port, timeout=60, context=ctx)
    c.request("POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    assert r.status == 200 and b"[DONE]" in data, (r.status, data[-200:])
    if ctx is None:
        c.close()
    else:
        time.sleep(0.3)
c.close()
`

// The genai capture joined to the Source (genai.WithRetransmits): a
// client, in the client's network namespace, makes streamed chat
// completions to the LLM mock over a link that drops half the client's
// data segments: Python's http.client in plaintext, each call on a
// connection of its own, closed at once, and over OpenSSL, and Go's net/http over
// crypto/tls (genai's goclient, built by the test), the calls of each
// on one keep-alive connection (a TLS handshake through that loss takes
// seconds). The capture's kernel side tells each connection's socket
// once; its reader reads a second apart, mostly after the plaintext
// connections have closed (a /proc lookup of their sockets would miss
// those). The
// calls' GenAI spans carry the retransmits of their connections: some,
// and in all no more than the kernel counted in the client's namespace
// (RetransSegs), less the SYNs sent again, which come before a call
// begins; and the keep-alive connections' series are named by the
// calls' server.
func TestGenAISpansCarryRetransmits(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		testutil.SkipOrFail(t, "python3: %v", err)
	}
	lab := netlab.New(t)
	plain := lab.Listen(t)
	// No server port: the connections are named by the calls only.
	h := start(t, WithServerPorts(), WithPageCache(false), WithFileSyscalls(false))
	spans := tracetest.NewInMemoryExporter()
	capture, err := genai.NewCapture(
		genai.WithMeterProvider(sdkmetric.NewMeterProvider()),
		genai.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))),
		genai.WithPlaintextPorts(uint16(plain.Addr().(*net.TCPAddr).Port)),
		genai.WithPollInterval(time.Second),
		genai.WithRetransmits(h.s.CallRetransmits),
	)
	if err != nil && isUnavailable(err) {
		testutil.SkipOrFail(t, "%v", err)
	}
	require.NoError(t, err)
	defer capture.Close()
	// The genai capture tests' Go client (its READY line and wait are
	// startReady's).
	goClient := testutil.BuildGo(t, "../testdata/capture/goclient", "goclient", testutil.GoBuild{})

	const calls = 12
	for _, tc := range []struct {
		name string
		tls  bool
		// client is the command that makes the calls to the mock at
		// port, whose CA file is ca (TLS).
		client func(port int, ca string) *exec.Cmd
		// target and file name what the capture must probe before the
		// calls: the file, of the target's, that the client maps whose
		// path contains file.
		target, file string
	}{
		{"plaintext, Python", false, func(port int, _ string) *exec.Cmd {
			return lab.Client.Command(python, "-c", joinClient, lab.ServerAddr.String(), strconv.Itoa(port), strconv.Itoa(calls))
		}, "", ""},
		{"OpenSSL, Python", true, func(port int, ca string) *exec.Cmd {
			return lab.Client.Command(python, "-c", joinClient, lab.ServerAddr.String(), strconv.Itoa(port), strconv.Itoa(calls), ca)
		}, genai.TargetOpenSSL, "/libssl.so"},
		{"crypto/tls, Go", true, func(port int, ca string) *exec.Cmd {
			return lab.Client.Command(goClient, "-http1", "-servername", "localhost",
				"https://"+net.JoinHostPort(lab.ServerAddr.String(), strconv.Itoa(port)), ca, "m", strconv.Itoa(calls))
		}, genai.TargetGoTLS, "/goclient"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln := plain
			if tc.tls {
				ln = lab.Listen(t)
			}
			port := ln.Addr().(*net.TCPAddr).Port
			s := llmserver.Start(t, llmserver.Options{Listener: ln, TLS: tc.tls, Chunks: 4, ChunkSize: 300})
			defer func() {
				if t.Failed() {
					for _, s := range spans.GetSpans() {
						t.Logf("%s %s %v-%v %v", s.SpanKind, s.Name, s.StartTime.Format("15:04:05.000"), s.EndTime.Format("15:04:05.000"), s.Attributes)
					}
				}
			}()

			c := startReady(t, tc.client(port, s.CAFile))
			if tc.target != "" {
				waitProbed(t, capture, c.cmd.Process.Pid, tc.target, tc.file)
			}
			before := lab.Client.Counters(t)
			loss := lab.DropDataToServer(t, 2)
			c.run(t)
			dropped := loss.Dropped()
			loss.Close()
			after := lab.Client.Counters(t)
			segs := after["RetransSegs"] - before["RetransSegs"]
			syn := after["TCPSynRetrans"] - before["TCPSynRetrans"]
			t.Logf("dropped %d of the client's segments; it retransmitted %d (%d SYNs)", dropped, segs, syn)
			require.Positive(t, segs-syn, "no data segment retransmitted: the lossy link dropped none?")

			var carried, withAttr int64
			eventually(t, 20*time.Second, func() (bool, string) {
				carried, withAttr = 0, 0
				var got tracetest.SpanStubs
				for _, s := range spans.GetSpans() {
					if s.SpanKind == trace.SpanKindClient && slices.Contains(s.Attributes, semconv.ServerPort.Int(port)) {
						got = append(got, s)
					}
				}
				for _, s := range got {
					for _, kv := range s.Attributes {
						if kv.Key == semconv.XpuscopeTCPCallRetransmits {
							carried += kv.Value.AsInt64()
							withAttr++
							assert.Positive(t, kv.Value.AsInt64(), "a span with no retransmit carries the attribute")
						}
					}
				}
				return len(got) == calls && carried > 0, fmt.Sprintf("%d spans of %d calls; %d retransmits on %d of them, the client's %d less %d SYNs",
					len(got), calls, carried, withAttr, segs, syn)
			})
			// No more than the client's. Not always all of them: in runs on
			// the test machine, 31 of 34 and 11 of 12 in plaintext (see
			// genai-node.md).
			assert.LessOrEqual(t, carried, segs-syn, "retransmits on the spans: more than the client retransmitted")
			t.Logf("the spans carry %d of the client's %d retransmits of data, on %d of %d calls", carried, segs-syn, withAttr, calls)
			if !tc.tls {
				// Each connection closed before the capture read its
				// call: the name comes after its retransmits, which stay
				// under its pod's series (docs/genai-node.md).
				return
			}
			// Named by the calls: the client's series carry the server the
			// calls gave, though its port is no server port, from the
			// first call the capture read on the keep-alive connection.
			eventually(t, 10*time.Second, func() (bool, string) {
				n := h.total(t, semconv.XpuscopeTCPRetransmits.Name, semconv.ServerAddress.String(lab.ServerAddr.String()),
					semconv.ServerPort.Int(port), semconv.XpuscopeTCPRole.String(semconv.TCPRoleClient))
				return n > 0, "no retransmit counted under the calls' server " + lab.ServerAddr.String() + ":" + strconv.Itoa(port)
			})
		})
	}
}

// readyClient is a client started by startReady.
type readyClient struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	stderr bytes.Buffer
}

// startReady starts cmd and waits for the READY line it prints before it
// waits for a line on its stdin.
func startReady(t *testing.T, cmd *exec.Cmd) *readyClient {
	t.Helper()
	c := &readyClient{cmd: cmd}
	cmd.Stderr = &c.stderr
	var err error
	c.stdin, err = cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c.out = bufio.NewReader(stdout)
	line, err := c.out.ReadString('\n')
	require.Equal(t, "READY\n", line, "%s: %v: %s", cmd, err, &c.stderr)
	return c
}

// run lets the client make its calls and waits for it to exit.
func (c *readyClient) run(t *testing.T) {
	t.Helper()
	_, err := io.WriteString(c.stdin, "go\n")
	require.NoError(t, err)
	out, _ := io.ReadAll(c.out)
	require.NoError(t, c.cmd.Wait(), "%s: %s%s", c.cmd, out, &c.stderr)
}

// waitProbed waits until the capture has probed, as a file of target's,
// the file that process pid maps whose path contains name.
func waitProbed(t *testing.T, capture *genai.Capture, pid int, target, name string) {
	t.Helper()
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	require.NoError(t, err)
	var path string
	for line := range strings.Lines(string(maps)) {
		if f := strings.Fields(line); len(f) == 6 && strings.Contains(f[5], name) {
			path = f[5]
			break
		}
	}
	require.NotEmpty(t, path, "process %d maps no file named like %s:\n%s", pid, name, maps)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	st := fi.Sys().(*syscall.Stat_t)
	eventually(t, 10*time.Second, func() (bool, string) {
		for _, a := range capture.Status().Attachments {
			if a.Target == target && a.Dev == uint64(st.Dev) && a.Inode == st.Ino {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%s not probed as %s: %+v", path, target, capture.Status())
	})
}
