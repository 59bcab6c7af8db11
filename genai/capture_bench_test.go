package genai

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/httpbpf"
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
// emitter (the API's no-op providers), as the reader runs them.
func BenchmarkCaptureReader(b *testing.B) {
	req, reads := benchExchange()
	recs := make([]httpbpf.Record, 0, 1+len(reads))
	add := func(dir httpbpf.Dir, data string) {
		recs = append(recs, httpbpf.Record{Conn: 0x5500, PID: 42, Kind: httpbpf.KindData, Source: httpbpf.SourceTLS,
			Dir: dir, Total: uint32(len(data)), Data: []byte(data)})
	}
	add(httpbpf.Write, req)
	for _, r := range reads {
		add(httpbpf.Read, r)
	}
	calls := 0
	t := userSpaceCapture(b, WithExchangeHandler(func(*Exchange, *Call, Endpoint) { calls++ })).conns
	var seq uint32
	ts := uint64(1)
	b.ReportAllocs()
	for b.Loop() {
		for i := range recs {
			seq++
			ts += 1000
			recs[i].Seq, recs[i].TS = seq, ts
			t.handle(&recs[i])
		}
	}
	require.Equal(b, b.N, calls, "calls emitted of %d", b.N)
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
