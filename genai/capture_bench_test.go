package genai

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"

	"github.com/xpuscope/xpuscope/internal/httpbpf"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/testutil/h2wire"
)

// benchExchange is one call as the capture benchmark's client makes it:
// the request it writes, and the streamed response (chunked SSE, 8
// content events of ~400 bytes, then the finish, the usage and [DONE])
// in the reads it makes, one event each.
func benchExchange() (req string, reads []string) {
	body := `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	req = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8443\r\nAuthorization: Bearer sk-bench\r\n" +
		fmt.Sprintf("Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	chunk := func(ev string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(ev), ev) }
	reads = append(reads, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n")
	for i := range 8 {
		word := fmt.Sprintf("w%d %s", i, strings.Repeat("x", 396))
		reads = append(reads, chunk(fmt.Sprintf(`data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":%q},"finish_reason":null}]}`+"\n\n", word)))
	}
	reads = append(reads,
		chunk(`data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n"),
		chunk(`data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":8,"total_tokens":20}}`+"\n\n"),
		chunk("data: [DONE]\n\n"),
		"0\r\n\r\n")
	return req, reads
}

// BenchmarkCaptureReader is the capture's user-space work per call, with
// no kernel: the records of one streamed call on a keep-alive TLS
// connection, through reassembly, framing, detection, parsing and the
// emitter, as the reader runs them, on the API's no-op providers and
// (+sdk) on the SDK's. Over HTTP/1.1, and over HTTP/2: the same call as
// a stream of its own, one after another on one connection, each head
// after the first made of references to the HPACK tables, each event a
// DATA frame in a read.
func BenchmarkCaptureReader(b *testing.B) {
	http1 := func(b *testing.B, opts ...CaptureOption) {
		req, reads := benchExchange()
		recs := []httpbpf.Record{benchRecord(httpbpf.Write, req)}
		for _, r := range reads {
			recs = append(recs, benchRecord(httpbpf.Read, r))
		}
		benchReader(b, nil, recs, nil, opts...)
	}
	b.Run("http1", func(b *testing.B) { http1(b) })
	// As the agent runs it: the SDK's MeterProvider and a batching
	// TracerProvider.
	b.Run("http1+sdk", func(b *testing.B) { http1(b, sdkProviders()...) })
	http2 := func(b *testing.B, opts ...CaptureOption) {
		client, server := h2wire.New(), h2wire.New()
		start := []httpbpf.Record{
			benchRecord(httpbpf.Write, http2.ClientPreface+client.Settings()),
			benchRecord(httpbpf.Read, server.Settings()),
		}
		req, reads := benchExchange()
		_, body, _ := strings.Cut(req, "\r\n\r\n")
		call := func(id uint32) []httpbpf.Record {
			recs := []httpbpf.Record{benchRecord(httpbpf.Write, client.Headers(id, false, ":method", "POST", ":scheme", "https",
				":authority", "127.0.0.1:8443", ":path", "/v1/chat/completions", "authorization", "Bearer sk-bench",
				"content-type", "application/json")+client.Data(id, true, body))}
			recs = append(recs, benchRecord(httpbpf.Read, server.Headers(id, false, ":status", "200",
				"content-type", "text/event-stream", "cache-control", "no-cache")))
			for _, r := range reads[1 : len(reads)-1] {
				// The SSE event inside the chunk: hex size, CRLF, event, CRLF.
				_, ev, _ := strings.Cut(r, "\r\n")
				recs = append(recs, benchRecord(httpbpf.Read, server.Data(id, false, strings.TrimSuffix(ev, "\r\n"))))
			}
			return append(recs, benchRecord(httpbpf.Read, server.Data(id, true, "")))
		}
		// The first call fills the tables; the second's records are what
		// every later call sends, but for its stream number.
		start = append(start, call(1)...)
		benchReader(b, start, call(3), func(recs []httpbpf.Record, n int) {
			for i := range recs {
				setStream(recs[i].Data, uint32(2*n+3))
			}
		}, opts...)
	}
	b.Run("http2", func(b *testing.B) { http2(b) })
	b.Run("http2+sdk", func(b *testing.B) { http2(b, sdkProviders()...) })
}

func benchRecord(dir httpbpf.Dir, data string) httpbpf.Record {
	return httpbpf.Record{Conn: 0x5500, PID: 42, Kind: httpbpf.KindData, Source: httpbpf.SourceTLS,
		Dir: dir, Total: uint32(len(data)), Data: []byte(data)}
}

// setStream sets the stream of every frame in data.
func setStream(data []byte, id uint32) {
	for len(data) >= 9 {
		n := int(data[0])<<16 | int(data[1])<<8 | int(data[2])
		binary.BigEndian.PutUint32(data[5:9], id)
		data = data[min(9+n, len(data)):]
	}
}

// benchReader hands the capture's reader start once, then call for each
// call measured, after renumber (if set) readies it for the nth time.
func benchReader(b *testing.B, start, call []httpbpf.Record, renumber func([]httpbpf.Record, int), opts ...CaptureOption) {
	calls := 0
	c := userSpaceCapture(b, append(opts, WithExchangeHandler(func(*Exchange, *Call, Endpoint) { calls++ }))...)
	t := c.conns
	// As the capture's reader does, the spans are ended together after a
	// batch of records: here of benchBatch calls, fewer than a busy
	// reader's.
	c.emitter.holdSpans()
	const benchBatch = 16
	var seq [2]uint32 // by direction
	ts := uint64(1)
	feed := func(recs []httpbpf.Record) {
		for i := range recs {
			d := recs[i].Dir
			seq[d]++
			ts += 1000
			recs[i].Seq, recs[i].TS = seq[d], ts
			t.handle(&recs[i])
		}
	}
	feed(start)
	before := calls
	b.ReportAllocs()
	n := 0
	cpu := testutil.ProcessCPU(b)
	for b.Loop() {
		if renumber != nil {
			renumber(call, n)
		}
		n++
		feed(call)
		if n%benchBatch == 0 {
			c.emitter.endHeld()
		}
	}
	c.emitter.endHeld()
	// The process's CPU a call, its other goroutines' too: the SDK's span
	// batcher and the collector run beside the loop, on other cores.
	b.ReportMetric(float64(testutil.ProcessCPU(b)-cpu)/float64(n), "cpu-ns/call")
	require.Equal(b, n, calls-before, "calls emitted of %d", n)
	require.Zero(b, t.frames.Abandoned(), "%+v", t.frames)
}

// userSpaceCapture is a Capture without its kernel side: a test hands
// records to its connection table (c.conns) itself.
func userSpaceCapture(tb testing.TB, opts ...CaptureOption) *Capture {
	tb.Helper()
	cfg, err := newCaptureConfig(opts)
	require.NoError(tb, err)
	e, err := newEmitter(cfg.config)
	require.NoError(tb, err)
	c := &Capture{cfg: cfg, emitter: e}
	c.conns = newConnTable(&c.cfg, nil, func(k uint64) time.Time { return time.Unix(0, int64(k)) }, c.exchange)
	return c
}
