package genai

// The capture's reassembly on synthetic records, as the BPF side makes
// them: no kernel.

import (
	"encoding/binary"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/xpuscope/xpuscope/genai/internal/httpframe"
	"github.com/xpuscope/xpuscope/internal/httpbpf"
	"github.com/xpuscope/xpuscope/semconv"
)

const (
	tRequestBody  = `{"model":"gpt-4o","n":1}`
	tResponseBody = `{"id":"c-1"}`
)

var (
	tRequest = "POST /v1/chat/completions HTTP/1.1\r\nHost: api.openai.com\r\nAuthorization: Bearer sk-x\r\n" +
		"Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(tRequestBody)) + "\r\n\r\n" + tRequestBody
	tResponse = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(tResponseBody)) +
		"\r\n\r\n" + tResponseBody
)

// recordedMutes records what the connTable tells the kernel side.
type recordedMutes struct {
	gens     []uint32
	sessions [2]uint32 // the session pointer offsets set last
	setTimes int       // how often they were set
}

func (r *recordedMutes) Mute(gen uint32) error {
	r.gens = append(r.gens, gen)
	return nil
}

func (r *recordedMutes) SetSessionOffsets(offsets [2]uint32) error {
	r.sessions = offsets
	r.setTimes++
	return nil
}

type tableHarness struct {
	t      *connTable
	got    []*Exchange
	calls  []Call // what readCall made of each
	muted  recordedMutes
	result outcome           // what deliver returns
	seq    map[dirKey]uint32 // the last call numbered, by connection and direction
	clock  time.Time
}

// dirKey is a direction of a connection.
type dirKey struct {
	connKey
	dir httpbpf.Dir
}

func newTableHarness(maxConns int) *tableHarness {
	h := &tableHarness{seq: map[dirKey]uint32{}, clock: time.Unix(1000, 0)}
	cfg := &captureConfig{bodyLimit: DefaultBodyLimit, maxConns: maxConns, idleTimeout: time.Minute}
	h.t = newConnTable(cfg, &h.muted, func(k uint64) time.Time { return time.Unix(0, int64(k)) },
		func(x *Exchange, _ *httpframe.Exchange, _ *capProc, live *liveCall) outcome {
			h.got = append(h.got, x)
			_, call, _ := readCall(x, nil, live)
			h.calls = append(h.calls, call)
			return h.result
		})
	h.t.now = func() time.Time { return h.clock }
	return h
}

// call feeds one call of pid's fd 7 moving data, numbered next in its
// direction.
func (h *tableHarness) call(pid uint32, dir httpbpf.Dir, data string, ts uint64) {
	k := dirKey{connKey{pid, httpbpf.SourceSocket, 7, 0}, dir}
	h.seq[k]++
	h.t.handle(&httpbpf.Record{TS: ts, Conn: 7, PID: pid, Kind: httpbpf.KindData, Source: httpbpf.SourceSocket,
		Dir: dir, Total: uint32(len(data)), Seq: h.seq[k], Data: []byte(data)})
}

// lose numbers a call in direction dir that never arrives.
func (h *tableHarness) lose(pid uint32, dir httpbpf.Dir) {
	h.seq[dirKey{connKey{pid, httpbpf.SourceSocket, 7, 0}, dir}]++
}

// end hands over a record of kind (a close, an end of stream) of pid's
// fd 7 at ts, with the last calls numbered.
func (h *tableHarness) end(pid uint32, kind httpbpf.Kind, ts uint64) {
	k := connKey{pid, httpbpf.SourceSocket, 7, 0}
	h.t.handle(&httpbpf.Record{TS: ts, Kind: kind, Source: httpbpf.SourceSocket, PID: pid, Conn: 7,
		Seq: h.seq[dirKey{k, httpbpf.Write}], Total: h.seq[dirKey{k, httpbpf.Read}]})
}

func (h *tableHarness) exchange(pid uint32, ts uint64) {
	h.call(pid, httpbpf.Write, tRequest, ts)
	h.call(pid, httpbpf.Read, tResponse, ts+10)
}

func TestConnTableExchanges(t *testing.T) {
	h := newTableHarness(16)
	h.exchange(1, 100)
	h.exchange(1, 200)
	require.Len(t, h.got, 2)
	x := h.got[0]
	require.Equal(t, "POST", x.Method)
	require.Equal(t, "api.openai.com", x.Host)
	require.Equal(t, "/v1/chat/completions", x.Path)
	require.Equal(t, tRequestBody, string(x.RequestBody))
	require.Equal(t, 200, x.Status)
	require.Equal(t, []string{""}, x.RequestHeader["Authorization"], "credentials are redacted as the message is framed: the field stays, its value goes")
	require.Equal(t, "application/json", x.RequestHeader.Get("Content-Type"))
	require.Equal(t, time.Unix(0, 100), x.Start)
	require.Equal(t, time.Unix(0, 110), x.End)
	require.Len(t, x.Chunks, 1)
	require.Equal(t, tResponseBody, string(x.Chunks[0].Data))
	require.Equal(t, int64(2), h.t.outcomes[outcomeEmitted])
}

// A lost call abandons the exchange it belonged to, and the next one on
// the connection is whole: nothing is mis-assembled.
func TestConnTableLostCall(t *testing.T) {
	h := newTableHarness(16)
	h.call(1, httpbpf.Write, tRequest, 100)
	h.lose(1, httpbpf.Read) // the response's first read
	h.call(1, httpbpf.Read, tResponse[40:], 110)
	h.exchange(1, 200)
	require.Len(t, h.got, 1)
	require.Equal(t, time.Unix(0, 200), h.got[0].Start)
	require.Equal(t, tResponseBody, string(h.got[0].Chunks[0].Data))
	require.Positive(t, h.t.frames.AbandonedGap)
}

// A call cut short (its tail not captured: the record says it moved
// more) is a gap too.
func TestConnTableShortCall(t *testing.T) {
	h := newTableHarness(16)
	k := dirKey{connKey{1, httpbpf.SourceSocket, 7, 0}, httpbpf.Read}
	h.call(1, httpbpf.Write, tRequest, 100)
	h.seq[k]++
	long := "HTTP/1.1 200 OK\r\nContent-Length: 113\r\n\r\n" + tResponseBody // and 100 bytes not captured
	h.t.handle(&httpbpf.Record{TS: 110, Conn: 7, PID: 1, Kind: httpbpf.KindData, Source: httpbpf.SourceSocket,
		Dir: httpbpf.Read, Total: uint32(len(long)) + 100, Seq: h.seq[k], Data: []byte(long)})
	h.exchange(1, 200)
	require.Len(t, h.got, 1, "the exchange whose response lost bytes is not delivered")
	require.Equal(t, time.Unix(0, 200), h.got[0].Start)
}

// The capture began mid-connection: the first record is in a body. The
// connection resyncs at the next request.
func TestConnTableMidConnection(t *testing.T) {
	h := newTableHarness(16)
	h.seq[dirKey{connKey{1, httpbpf.SourceSocket, 7, 0}, httpbpf.Read}] = 41
	h.call(1, httpbpf.Read, tResponse[60:], 50)
	h.exchange(1, 200)
	require.Len(t, h.got, 1)
	require.Equal(t, "/v1/chat/completions", h.got[0].Path)
}

// Closing: a close after every call ends the connection; one after a lost
// call abandons what was in progress.
func TestConnTableClose(t *testing.T) {
	h := newTableHarness(16)
	h.exchange(1, 100)
	h.end(1, httpbpf.KindClose, 0)
	require.Empty(t, h.t.conns)

	h.call(2, httpbpf.Write, tRequest, 100)
	h.lose(2, httpbpf.Read)
	h.end(2, httpbpf.KindClose, 0)
	require.Empty(t, h.t.conns)
	require.Len(t, h.got, 1)
	require.Positive(t, h.t.frames.AbandonedGap+h.t.frames.AbandonedClose)
}

// Connections are bounded: past the cap the least recently used goes,
// and idle ones go after the timeout; both are counted.
func TestConnTableEviction(t *testing.T) {
	h := newTableHarness(2)
	h.call(1, httpbpf.Write, tRequest, 100) // pid 1: waiting for its response
	h.call(2, httpbpf.Write, tRequest, 100)
	h.call(3, httpbpf.Write, tRequest, 100) // evicts pid 1
	require.Len(t, h.t.conns, 2)
	require.Nil(t, h.t.conns[connKey{1, httpbpf.SourceSocket, 7, 0}])
	require.Equal(t, int64(1), h.t.evicted)
	require.Zero(t, h.t.frames.AbandonedClose, "an eviction is not a close")

	h.clock = h.clock.Add(30 * time.Second)
	h.call(3, httpbpf.Read, tResponse, 110) // pid 3 is busy
	h.clock = h.clock.Add(45 * time.Second)
	h.t.evictIdle(h.clock)
	require.Len(t, h.t.conns, 1, "pid 2 idled past the timeout")
	require.NotNil(t, h.t.conns[connKey{3, httpbpf.SourceSocket, 7, 0}])
	require.Equal(t, int64(2), h.t.evicted)
}

// Exchanges that are no LLM API call, muteAfter in a row, stop the
// connection's capture in the kernel, unless it carried one; one seen
// from the server's end is counted as such and served, not delivered.
func TestConnTableOutcomes(t *testing.T) {
	h := newTableHarness(16)
	h.result = outcomeNotLLM
	for i := range muteAfter {
		require.Empty(t, h.muted.gens, "muted after %d exchanges", i)
		h.exchange(1, uint64(100+10*i))
	}
	require.Equal(t, []uint32{0}, h.muted.gens, "muted after %d exchanges that were no LLM call", muteAfter)

	h.result = outcomeEmitted
	h.call(2, httpbpf.Read, tRequest, 100) // pid 2 read the request: it is the server
	h.call(2, httpbpf.Write, tResponse, 110)
	require.Len(t, h.got, muteAfter, "only pid 1's")
	require.Equal(t, int64(1), h.t.outcomes[outcomeServerSide])
	require.Equal(t, int64(muteAfter), h.t.outcomes[outcomeNotLLM])

	// The server's end of a connection of no LLM API is muted the same
	// way, once its exchanges are served.
	h = newTableHarness(16)
	h.t.serve = func(*Exchange, *capProc, *liveCall) outcome { return outcomeNotLLM }
	for i := range muteAfter {
		h.call(2, httpbpf.Read, tRequest, uint64(100+10*i))
		h.call(2, httpbpf.Write, tResponse, uint64(105+10*i))
	}
	require.Equal(t, []uint32{0}, h.muted.gens)
	require.Equal(t, int64(muteAfter), h.t.outcomes[outcomeServerSide])

	// A connection that carried an LLM call is never muted.
	h = newTableHarness(16)
	h.exchange(1, 100)
	h.result = outcomeNotLLM
	for i := range 2 * muteAfter {
		h.exchange(1, uint64(200+10*i))
	}
	require.Empty(t, h.muted.gens)
}

// A connection that reuses a key (OpenSSL's next SSL object in the
// memory of the one freed, a new socket on the closed fd's number) is a
// new connection by its number: a muted one before it, whose bytes still
// in flight are skipped, or one whose close was lost, does not take its
// calls.
func TestConnTableKeyReuse(t *testing.T) {
	h := newTableHarness(16)
	// rec hands over a record of connection gen; seq is its number in
	// its direction (for a close, the last write's, and reads the last
	// read's).
	at := uint64(0)
	rec := func(gen uint32, kind httpbpf.Kind, dir httpbpf.Dir, seq uint32, data string, reads uint32) {
		at += 100
		total := uint32(len(data))
		if kind == httpbpf.KindClose {
			total = reads
		}
		h.t.handle(&httpbpf.Record{TS: at, Conn: 0x7f00, PID: 1, Kind: kind, Source: httpbpf.SourceTLS,
			Dir: dir, Total: total, Seq: seq, Gen: gen, Data: []byte(data)})
	}
	h.result = outcomeNotLLM
	seq := uint32(0)
	for range muteAfter {
		seq++
		rec(1, httpbpf.KindData, httpbpf.Write, seq, tRequest, 0)
		rec(1, httpbpf.KindData, httpbpf.Read, seq, tResponse, 0)
	}
	require.Equal(t, []uint32{1}, h.muted.gens)
	rec(1, httpbpf.KindData, httpbpf.Write, seq+1, tRequest, 0) // sent before the kernel side muted it
	require.Len(t, h.got, muteAfter, "a muted connection's bytes are skipped")

	h.result = outcomeEmitted
	rec(2, httpbpf.KindData, httpbpf.Write, 1, tRequest, 0) // the next connection, before the first's close
	rec(1, httpbpf.KindClose, 0, seq+1, "", seq)
	rec(2, httpbpf.KindData, httpbpf.Read, 1, tResponse, 0)
	require.Len(t, h.got, muteAfter+1)
	require.Len(t, h.t.conns, 1, "the muted connection went with its close")

	rec(3, httpbpf.KindData, httpbpf.Write, 1, tRequest, 0) // gen 2's close was lost
	rec(3, httpbpf.KindData, httpbpf.Read, 1, tResponse, 0)
	require.Len(t, h.got, muteAfter+2)
	require.Zero(t, h.t.frames.AbandonedGap, "no call was taken for another's")
}

// A TLS connection's socket record gives the exchanges on it their
// socket (for WithRetransmits): one that comes between the connection's
// calls, and one that comes first and makes the connection; the calls'
// numbering goes on across it. A connection told no socket has none.
func TestConnTableSocket(t *testing.T) {
	h := newTableHarness(16)
	at := uint64(0)
	rec := func(gen uint32, r httpbpf.Record) {
		at += 10
		r.TS, r.PID, r.Source, r.Conn, r.Gen = at, 1, httpbpf.SourceTLS, 0x7f00, gen
		if r.Kind == httpbpf.KindData {
			r.Total = uint32(len(r.Data))
		}
		h.t.handle(&r)
	}
	socket := func(gen uint32, ino uint64) {
		rec(gen, httpbpf.Record{Kind: httpbpf.KindSocket, Total: 8, Data: binary.LittleEndian.AppendUint64(nil, ino)})
	}
	call := func(gen uint32, seq uint32) {
		rec(gen, httpbpf.Record{Kind: httpbpf.KindData, Dir: httpbpf.Write, Seq: seq, Data: []byte(tRequest)})
		rec(gen, httpbpf.Record{Kind: httpbpf.KindData, Dir: httpbpf.Read, Seq: seq, Data: []byte(tResponse)})
	}
	rec(1, httpbpf.Record{Kind: httpbpf.KindData, Dir: httpbpf.Write, Seq: 1, Data: []byte(tRequest)})
	socket(1, 4242)
	rec(1, httpbpf.Record{Kind: httpbpf.KindData, Dir: httpbpf.Read, Seq: 1, Data: []byte(tResponse)})
	call(1, 2)
	socket(2, 4343) // a new connection at the same SSL pointer
	call(2, 1)
	call(3, 1)
	var socks []uint64
	for _, x := range h.got {
		socks = append(socks, x.sock)
	}
	require.Equal(t, []uint64{4242, 4242, 4343, 0}, socks, "the exchanges' sockets")
	require.Zero(t, h.t.frames.AbandonedGap, "a socket record is no call")
}

func FuzzIsGoELF(f *testing.F) {
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = isGoELF(bytesReaderAt(b)) // must not panic
	})
}

// A streamed response is parsed as it arrives: whatever its length, the
// usage at its end is read exactly, every content chunk counted, while
// only the body limit of it is kept, and the memory it holds stays flat
// (the heap after each tenth of a 50,000-chunk stream).
func TestConnTableLongStream(t *testing.T) {
	const head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
	chunk := func(s string) string { return strconv.FormatInt(int64(len(s)), 16) + "\r\n" + s + "\r\n" }
	content := chunk(`data: {"id":"c-1","object":"chat.completion.chunk","model":"gpt-4o","choices":[{"index":0,"delta":{"content":"tok "},"finish_reason":null}]}` + "\n\n")
	last := chunk(`data: {"id":"c-1","object":"chat.completion.chunk","model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n") +
		chunk(`data: {"id":"c-1","object":"chat.completion.chunk","model":"gpt-4o","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":4321,"total_tokens":4332}}`+"\n\ndata: [DONE]\n\n") +
		"0\r\n\r\n"
	for _, n := range []int{100, 1_000, 10_000, 50_000} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			h := newTableHarness(16)
			h.call(1, httpbpf.Write, tRequest, 100)
			h.call(1, httpbpf.Read, head, 200)
			var heap []uint64
			for i := range n {
				h.call(1, httpbpf.Read, content, uint64(300+i))
				if n >= 10_000 && (i+1)%(n/10) == 0 {
					var ms runtime.MemStats
					runtime.GC()
					runtime.ReadMemStats(&ms)
					heap = append(heap, ms.HeapAlloc)
					cc := h.t.conns[connKey{1, httpbpf.SourceSocket, 7, 0}]
					require.LessOrEqual(t, cc.frame.Retained(), DefaultBodyLimit+64<<10, "bytes kept at chunk %d", i+1)
				}
			}
			h.call(1, httpbpf.Read, last, uint64(300+n))
			require.Len(t, h.calls, 1)
			c := h.calls[0]
			require.Equal(t, Usage{InputTokens: 11, OutputTokens: 4321, CacheReadTokens: -1, CacheCreationTokens: -1, ReasoningTokens: -1}, c.Usage)
			require.Equal(t, n, c.OutputChunks)
			require.Equal(t, []string{"stop"}, c.FinishReasons)
			require.False(t, c.Incomplete)
			require.Equal(t, len(content)*n > DefaultBodyLimit, h.got[0].ResponseTruncated, "what is kept is cut at the limit")
			if len(heap) > 0 {
				slices.Sort(heap)
				require.Less(t, heap[len(heap)-1]-heap[0], uint64(1<<20), "heap after each tenth of the stream: %v", heap)
			}
		})
	}
}

// A call its connection's end cut short is a failed call, with what the
// stream said before the cut (here its usage) and nothing invented: of a
// plaintext connection, cancelled when the client ended it, else
// stream_truncated (the response had begun) or _OTHER (none had); one
// the capture lost bytes of is abandoned, not reported as failed.
func TestConnTableCutStream(t *testing.T) {
	const head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
	chunk := func(s string) string { return strconv.FormatInt(int64(len(s)), 16) + "\r\n" + s + "\r\n" }
	events := chunk(`data: {"id":"c-1","object":"chat.completion.chunk","model":"gpt-4o","choices":[{"index":0,"delta":{"content":"tok "}}],"usage":{"prompt_tokens":11,"completion_tokens":1,"total_tokens":12}}`+"\n\n") +
		chunk(`data: {"id":"c-1","object":"chat.completion.chunk","model":"gpt-4o","choices":[{"index":0,"delta":{"content":"tok "}}],"usage":{"prompt_tokens":11,"completion_tokens":2,"total_tokens":13}}`+"\n\n")
	// end ends pid 1's connection at 900, after its peer closed its end
	// first when peerFirst (a read returned the end of the stream).
	end := func(h *tableHarness, peerFirst bool) {
		if peerFirst {
			h.end(1, httpbpf.KindEOF, 890)
		}
		h.end(1, httpbpf.KindClose, 900)
	}
	for _, tt := range []struct {
		name      string
		response  bool // the response had begun
		peerFirst bool
		want      string
	}{
		{"the server cut the stream", true, true, semconv.GenAIErrorStreamTruncated},
		{"the client gave up mid-stream", true, false, semconv.GenAIErrorCancelled},
		{"the server closed without answering", false, true, semconv.Other},
		{"the client gave up waiting", false, false, semconv.GenAIErrorCancelled},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newTableHarness(16)
			h.call(1, httpbpf.Write, tRequest, 100)
			if tt.response {
				h.call(1, httpbpf.Read, head, 200)
				h.call(1, httpbpf.Read, events, 300)
			}
			end(h, tt.peerFirst)
			require.Len(t, h.calls, 1)
			c := h.calls[0]
			require.Equal(t, tt.want, c.ErrorType)
			require.True(t, c.Incomplete)
			require.Equal(t, "gpt-4o", c.RequestModel)
			require.Equal(t, int64(1), h.t.outcomes[outcomeEmitted])
			if !tt.response {
				require.Equal(t, NoUsage, c.Usage)
				require.Equal(t, time.Unix(0, 900), h.got[0].End, "the call ends with its connection")
				return
			}
			require.True(t, c.Stream)
			require.Equal(t, int64(11), c.Usage.InputTokens)
			require.Equal(t, int64(2), c.Usage.OutputTokens, "the last usage the stream sent")
			require.Equal(t, 2, c.OutputChunks)
			require.Empty(t, c.FinishReasons)
			require.Equal(t, time.Unix(0, 300), h.got[0].End, "the call ends at its last byte")
		})
	}

	h := newTableHarness(16)
	h.call(1, httpbpf.Write, tRequest, 100)
	h.call(1, httpbpf.Read, head, 200)
	h.lose(1, httpbpf.Read)
	h.call(1, httpbpf.Read, events, 300)
	end(h, true)
	require.Empty(t, h.calls, "a stream the capture lost part of is no failed call")
	require.Positive(t, h.t.frames.AbandonedGap)
}

// A capture's reader holds the spans of the calls it reads until the
// end of its batch of records; Close ends those it still holds.
func TestCaptureCloseEndsHeldSpans(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	c := userSpaceCapture(t, WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))))
	c.emitter.holdSpans()
	req, reads := benchExchange()
	recs := []httpbpf.Record{benchRecord(httpbpf.Write, req)}
	for _, r := range reads {
		recs = append(recs, benchRecord(httpbpf.Read, r))
	}
	var seq [2]uint32
	for i := range recs {
		seq[recs[i].Dir]++
		recs[i].Seq, recs[i].TS = seq[recs[i].Dir], uint64(i+1)*1000
		c.conns.handle(&recs[i])
	}
	require.Empty(t, spans.GetSpans(), "held until the batch ends")
	require.NoError(t, c.Close())
	got := spans.GetSpans()
	require.Len(t, got, 1)
	assert.Equal(t, time.Unix(0, int64(len(recs))*1000), got[0].EndTime, "the call's last record's time")
}
