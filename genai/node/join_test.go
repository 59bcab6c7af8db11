package node

import (
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strconv"
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

// joinClient is the client of TestGenAISpansCarryRetransmits: Python's
// http.client, each call on a connection of its own, held open a little
// after its response as a client that reuses its connections would (the
// capture finds a connection's socket by its descriptor when it first
// reads its bytes: a connection closed before then carries no count).
const joinClient = `
import http.client, sys, time
host, port, calls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
body = '{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}'
for _ in range(calls):
    c = http.client.HTTPConnection(host, port, timeout=60)
    c.request("POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    assert r.status == 200 and b"[DONE]" in data, (r.status, data[-200:])
    time.sleep(0.3)
    c.close()
`

// The genai capture joined to the Source (genai.WithRetransmits): a
// Python client, in the client's network namespace, makes streamed chat
// completions to the LLM mock over a link that drops half the client's
// data segments, each call on a connection of its own. The calls' GenAI
// spans carry the retransmits of their connections: some, and in all no
// more than the kernel counted in the client's namespace (RetransSegs),
// less the SYNs sent again, which come before a call begins; and the
// connections' series are named by the calls' server.
func TestGenAISpansCarryRetransmits(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		testutil.SkipOrFail(t, "python3: %v", err)
	}
	lab := netlab.New(t)
	ln := lab.Listen(t)
	port := ln.Addr().(*net.TCPAddr).Port
	llmserver.Start(t, llmserver.Options{Listener: ln, Chunks: 4, ChunkSize: 300})
	// No server port: the connections are named by the calls only.
	h := start(t, WithServerPorts(), WithPageCache(false), WithFileSyscalls(false))
	spans := tracetest.NewInMemoryExporter()
	capture, err := genai.NewCapture(
		genai.WithMeterProvider(sdkmetric.NewMeterProvider()),
		genai.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))),
		genai.WithPlaintextPorts(uint16(port)),
		genai.WithPollInterval(10*time.Millisecond),
		genai.WithRetransmits(h.s.CallRetransmits),
	)
	if err != nil && isUnavailable(err) {
		testutil.SkipOrFail(t, "%v", err)
	}
	require.NoError(t, err)
	defer capture.Close()
	defer func() {
		if t.Failed() {
			for _, s := range spans.GetSpans() {
				t.Logf("%s %s %v-%v %v", s.SpanKind, s.Name, s.StartTime.Format("15:04:05.000"), s.EndTime.Format("15:04:05.000"), s.Attributes)
			}
		}
	}()

	before := lab.Client.Counters(t)
	loss := lab.DropToServer(t, 2)
	const calls = 12
	out, err := lab.Client.Command(python, "-c", joinClient, lab.ServerAddr.String(), strconv.Itoa(port), strconv.Itoa(calls)).CombinedOutput()
	require.NoError(t, err, "the client: %s", out)
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
	// No more than the client's. Not always all of them: in runs on the
	// test machine, 31 of 34 and 11 of 12 (see genai-node.md).
	assert.LessOrEqual(t, carried, segs-syn, "retransmits on the spans: more than the client retransmitted")
	t.Logf("the spans carry %d of the client's %d retransmits of data, on %d of %d calls", carried, segs-syn, withAttr, calls)
	// Named by the calls: the client's series carry the server the calls
	// gave, though its port is no server port.
	eventually(t, 10*time.Second, func() (bool, string) {
		n := h.total(t, semconv.XpuscopeTCPRetransmits.Name, semconv.ServerAddress.String(lab.ServerAddr.String()),
			semconv.ServerPort.Int(port), semconv.XpuscopeTCPRole.String(semconv.TCPRoleClient))
		return n > 0, "no retransmit counted under the calls' server " + lab.ServerAddr.String() + ":" + strconv.Itoa(port)
	})
}
