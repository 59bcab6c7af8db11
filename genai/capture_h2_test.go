package genai

// The capture's reassembly of HTTP/2 connections, on synthetic records
// as the BPF side makes them, written by the x/net/http2 Framer and
// hpack: no kernel.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"golang.org/x/net/http2"

	"github.com/xpuscope/xpuscope/internal/httpbpf"
	"github.com/xpuscope/xpuscope/internal/testutil/h2wire"
	"github.com/xpuscope/xpuscope/semconv"
)

// h2Chat is an OpenAI streamed chat request's head; h2Events the
// response head.
var (
	h2Chat = []string{":method", "POST", ":scheme", "https", ":authority", "api.openai.com", ":path", "/v1/chat/completions",
		"!authorization", "Bearer sk-h2-never", "content-type", "application/json"}
	h2Events = []string{":status", "200", "content-type", "text/event-stream"}
)

const h2ChatBody = `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`

// h2Chunk is an OpenAI stream event of call id with content; h2Usage
// its last events.
func h2Chunk(id, content string) string {
	return fmt.Sprintf(`data: {"id":%q,"object":"chat.completion.chunk","model":"gpt-4o","choices":[{"index":0,"delta":{"content":%q}}]}`+"\n\n", id, content)
}

func h2Usage(id string, out int) string {
	return fmt.Sprintf(`data: {"id":%q,"object":"chat.completion.chunk","model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n", id) +
		fmt.Sprintf(`data: {"id":%q,"object":"chat.completion.chunk","model":"gpt-4o","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":%d,"total_tokens":%d}}`+"\n\ndata: [DONE]\n\n", id, out, 9+out)
}

// h2Harness is a table harness with one HTTP/2 connection open on pid
// 1's fd 7, the two ends' encoders to go on with.
type h2Harness struct {
	*tableHarness
	client, server *h2wire.End
}

func newH2Harness() *h2Harness {
	h := &h2Harness{tableHarness: newTableHarness(16), client: h2wire.New(), server: h2wire.New()}
	h.call(1, httpbpf.Write, http2.ClientPreface+h.client.Settings(), 10)
	h.call(1, httpbpf.Read, h.server.Settings(), 20)
	return h
}

// TestConnTableHTTP2: streams on one HTTP/2 connection are calls of
// their own, read as they arrive, each with exact usage, whatever
// interleaves with them; the credential's value is dropped.
func TestConnTableHTTP2(t *testing.T) {
	h := newH2Harness()
	c, s := h.client, h.server
	h.call(1, httpbpf.Write, c.Headers(1, false, h2Chat...)+c.Data(1, true, h2ChatBody), 100)
	h.call(1, httpbpf.Write, c.Headers(3, false, h2Chat...)+c.Data(3, true, h2ChatBody), 110)
	h.call(1, httpbpf.Read, s.Headers(3, false, h2Events...)+s.Headers(1, false, h2Events...), 200)
	const n = 10_000
	for i := range n {
		// Both streams' events in each read.
		h.call(1, httpbpf.Read, s.Data(1, false, h2Chunk("one", "a"))+s.Data(3, false, h2Chunk("three", "b")), uint64(300+i))
	}
	h.call(1, httpbpf.Read, s.Data(3, true, h2Usage("three", 3*n)), 20_000)
	h.call(1, httpbpf.Read, s.Data(1, true, h2Usage("one", n)), 20_010)
	require.Len(t, h.calls, 2)
	for i, want := range []struct {
		id          string
		out         int64
		start, last time.Time
	}{
		{"three", 3 * n, time.Unix(0, 110), time.Unix(0, 20_000)},
		{"one", n, time.Unix(0, 100), time.Unix(0, 20_010)},
	} {
		call, x := h.calls[i], h.got[i]
		require.Equal(t, want.id, call.ResponseID)
		require.Equal(t, Usage{InputTokens: 9, OutputTokens: want.out, CacheReadTokens: -1, CacheCreationTokens: -1, ReasoningTokens: -1}, call.Usage)
		require.Equal(t, n, call.OutputChunks)
		require.Equal(t, []string{"stop"}, call.FinishReasons)
		require.Empty(t, call.ErrorType)
		require.Equal(t, "api.openai.com", x.Host)
		require.Equal(t, want.start, x.Start)
		require.Equal(t, want.last, x.End)
		require.Equal(t, time.Unix(0, 300).Sub(want.start), call.TimeToFirstChunk, "the first event came in the first read of DATA")
		require.Equal(t, []string{""}, x.RequestHeader["Authorization"], "the field stays, its value goes")
	}
	require.Equal(t, int64(2), h.t.outcomes[outcomeEmitted])
	require.Zero(t, h.t.frames.Abandoned())
}

// TestConnTableHTTP2Failed: a stream an end resets is a failed call with
// what it carried before the reset: cancelled when the client reset it,
// stream_truncated when the server did mid-response, _OTHER before any
// response; the streams the client's close of the connection cut are
// cancelled (a plaintext connection tells who closed first), whether
// their responses had begun or not. A stream the server refused is no
// call at all: its client retries it.
func TestConnTableHTTP2Failed(t *testing.T) {
	h := newH2Harness()
	c, s := h.client, h.server
	for id := uint32(1); id <= 11; id += 2 {
		h.call(1, httpbpf.Write, c.Headers(id, false, h2Chat...)+c.Data(id, true, h2ChatBody), uint64(100+id))
	}
	// 1 and 3 and 9 begin their responses; 5, 7 and 11 get none.
	for _, id := range []uint32{1, 3, 9} {
		h.call(1, httpbpf.Read, s.Headers(id, false, h2Events...)+s.Data(id, false, h2Chunk(strconv.Itoa(int(id)), "x")), uint64(200+id))
	}
	h.call(1, httpbpf.Write, c.Reset(1, http2.ErrCodeCancel), 301)
	h.call(1, httpbpf.Read, s.Reset(3, http2.ErrCodeInternal), 303)
	h.call(1, httpbpf.Read, s.Reset(5, http2.ErrCodeInternal), 305)
	h.call(1, httpbpf.Read, s.Reset(7, http2.ErrCodeRefusedStream), 307)
	h.end(1, httpbpf.KindClose, 400)
	byID := map[string]Call{}
	ends := map[string]time.Time{}
	for i, call := range h.calls {
		id := call.ResponseID
		if id == "" {
			id = "none:" + strconv.Itoa(i)
		}
		byID[id] = call
		ends[id] = h.got[i].End
	}
	require.Len(t, h.calls, 5, "%v", byID)
	for id, want := range map[string]string{
		"1": semconv.GenAIErrorCancelled, "3": semconv.GenAIErrorStreamTruncated, "9": semconv.GenAIErrorCancelled,
	} {
		call := byID[id]
		require.Equal(t, want, call.ErrorType, id)
		require.True(t, call.Incomplete, id)
		require.Equal(t, 1, call.OutputChunks, id)
	}
	require.Equal(t, time.Unix(0, 301), ends["1"], "the call ends at the reset")
	var unanswered []string
	for id, call := range byID {
		if call.ResponseID == "" {
			unanswered = append(unanswered, call.ErrorType)
			require.Equal(t, "gpt-4o", call.RequestModel, id)
		}
	}
	require.ElementsMatch(t, []string{semconv.Other, semconv.GenAIErrorCancelled}, unanswered, "5 reset before any response, 11 cut by the close")
	require.Equal(t, int64(1), h.t.frames.AbandonedRefused)
	require.Equal(t, int64(5), h.t.outcomes[outcomeEmitted])
}

// TestConnTableHTTP2GRPC: a gRPC call is counted, not parsed, and a
// connection of nothing else is muted like one of no LLM API.
func TestConnTableHTTP2GRPC(t *testing.T) {
	h := newH2Harness()
	c, s := h.client, h.server
	grpc := []string{":method", "POST", ":scheme", "https", ":authority", "generativelanguage.googleapis.com",
		":path", "/google.ai.generativelanguage.v1.GenerativeService/StreamGenerateContent", "content-type", "application/grpc"}
	for i := range muteAfter {
		id := uint32(2*i + 1)
		h.call(1, httpbpf.Write, c.Headers(id, false, grpc...)+c.Data(id, true, "\x00\x00\x00\x00\x00"), uint64(100+10*i))
		h.call(1, httpbpf.Read, s.Headers(id, false, ":status", "200", "content-type", "application/grpc")+
			s.Data(id, false, "\x00\x00\x00\x00\x00")+s.Headers(id, true, "grpc-status", "0"), uint64(105+10*i))
	}
	require.Empty(t, h.calls)
	require.Equal(t, int64(muteAfter), h.t.outcomes[outcomeGRPC])
	require.Len(t, h.muted.gens, 1)
}

// TestCaptureHTTP2Secrets: every credential header, sent over HTTP/2
// with incremental indexing (and then again as a reference to the
// table) and as never indexed, appears nowhere in what the capture
// exports or hands an exchange handler, while the calls themselves are
// exported.
func TestCaptureHTTP2Secrets(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	reader := sdkmetric.NewManualReader()
	var handed strings.Builder // what an embedder's exchange handler gets
	c := userSpaceCapture(t, WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))),
		WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))),
		WithExchangeHandler(func(x *Exchange, call *Call, _ Endpoint) { fmt.Fprintf(&handed, "%+v %+v\n", x, call) }))
	client, server := h2wire.New(), h2wire.New()
	var seq [2]uint32 // by direction
	at := uint64(0)
	feed := func(dir httpbpf.Dir, data string) {
		seq[dir]++
		at += 1000
		c.conns.handle(&httpbpf.Record{TS: at, Conn: 7, PID: 1, Kind: httpbpf.KindData, Source: httpbpf.SourceTLS,
			Dir: dir, Total: uint32(len(data)), Seq: seq[dir], Data: []byte(data)})
	}
	feed(httpbpf.Write, http2.ClientPreface+client.Settings())
	feed(httpbpf.Read, server.Settings())
	id := uint32(1)
	for _, never := range []string{"", "!", "", "!"} {
		head := append([]string{}, h2Chat[:8]...)
		for _, h := range sensitiveHeaders {
			head = append(head, never+strings.ToLower(h), "Bearer "+headerSecret)
		}
		head = append(head, "content-type", "application/json")
		feed(httpbpf.Write, client.Headers(id, false, head...)+client.Data(id, true, h2ChatBody))
		feed(httpbpf.Read, server.Headers(id, false, ":status", "200", "content-type", "text/event-stream", "set-cookie", "s="+headerSecret))
		feed(httpbpf.Read, server.Data(id, false, h2Chunk("c", "x")))
		feed(httpbpf.Read, server.Data(id, true, h2Usage("c", 1)))
		id += 2
	}
	require.Len(t, spans.GetSpans(), 4)
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	all := fmt.Sprintf("%+v\n%+v\n%s", spans.GetSpans(), rm, handed.String())
	require.Contains(t, all, "gpt-4o")
	require.NotContains(t, all, headerSecret)
}

// TestTranscriptsOverHTTP2: every provider's transcript (SSE, NDJSON,
// AWS event streams, JSON bodies, errors), sent as an HTTP/2 stream on a
// connection with others before it (so its heads come partly from the
// HPACK tables), each response chunk a DATA frame in a read of its own at
// its time, is read through the capture into the Call its want file
// holds, as over HTTP/1.1. Transcripts of bodies cut at the capture's
// limit or with an end of their own are left out: their framing is what
// they test.
func TestTranscriptsOverHTTP2(t *testing.T) {
	h := newH2Harness()
	c, s := h.client, h.server
	start := transcriptStart.UnixNano()
	id, tested := uint32(1), 0
	for _, tr := range allTranscripts(t) {
		x := &tr.x
		if x.RequestTruncated || x.ResponseTruncated || !x.End.IsZero() && (len(x.Chunks) == 0 || !x.End.Equal(x.Chunks[len(x.Chunks)-1].At)) {
			continue
		}
		before := len(h.calls)
		head := []string{":method", x.Method, ":scheme", "https", ":authority", x.Host, ":path", x.Path}
		for name, vs := range x.RequestHeader {
			if strings.EqualFold(name, "Host") {
				continue
			}
			for _, v := range vs {
				head = append(head, strings.ToLower(name), v)
			}
		}
		h.call(1, httpbpf.Write, c.Headers(id, len(x.RequestBody) == 0, head...)+dataFrames(c, id, x.RequestBody), uint64(start))
		resp := []string{":status", strconv.Itoa(x.Status)}
		for name, vs := range x.ResponseHeader {
			for _, v := range vs {
				resp = append(resp, strings.ToLower(name), v)
			}
		}
		if len(x.Chunks) == 0 {
			h.call(1, httpbpf.Read, s.Headers(id, true, resp...), uint64(start))
		}
		for i, ch := range x.Chunks {
			frames := s.Data(id, i == len(x.Chunks)-1, string(ch.Data))
			if i == 0 {
				frames = s.Headers(id, false, resp...) + frames
			}
			h.call(1, httpbpf.Read, frames, uint64(ch.At.UnixNano()))
		}
		require.Len(t, h.calls, before+1, "%s: not delivered", tr.name)
		// The capture names the provider the endpoint says (Parse
		// leaves that to its caller); the rest is the want file's.
		call := h.calls[before]
		ep, _ := Detect(x, nil)
		require.Equal(t, ep.Provider, call.Provider, tr.name)
		call.Provider = ""
		_, want, _ := strings.Cut(tr.want, "\n")
		_, got, _ := strings.Cut(callDump(&call), "\n")
		require.Equal(t, want, got, tr.name)
		id += 2
		tested++
	}
	require.Greater(t, tested, 40, "transcripts sent over HTTP/2")
	require.Zero(t, h.t.frames.Abandoned(), "%+v", h.t.frames)
}

// dataFrames sends body in DATA frames of at most 16 KiB, the last one
// ending the stream; none for an empty body.
func dataFrames(e *h2wire.End, id uint32, body []byte) string {
	var b strings.Builder
	for len(body) > 0 {
		n := min(len(body), 16<<10)
		b.WriteString(e.Data(id, n == len(body), string(body[:n])))
		body = body[n:]
	}
	return b.String()
}
