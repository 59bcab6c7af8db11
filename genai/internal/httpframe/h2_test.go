package httpframe

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"

	"github.com/xpuscope/xpuscope/internal/testutil/h2wire"
)

// A client's request head and the server's event-stream response head,
// as a Go client and server send them.
var (
	h2Req = []string{":method", "POST", ":scheme", "https", ":authority", "api.example.com", ":path", "/v1/chat/completions",
		"content-type", "application/json", "!authorization", "Bearer sk-h2-secret", "user-agent", "Go-http-client/2.0"}
	h2Resp = []string{":status", "200", "content-type", "text/event-stream", "cache-control", "no-cache"}

	h2ReqHeader  = hdr("Host", "api.example.com", "content-type", "application/json", "user-agent", "Go-http-client/2.0")
	h2RespHeader = hdr("content-type", "text/event-stream", "cache-control", "no-cache")
)

// h2Exchange is the exchange of a stream with h2Req and h2Resp heads.
func h2Exchange(reqBody, respBody string, reqStart, reqEnd, respStart, respEnd int64, ps ...Piece) Exchange {
	return Exchange{
		Role: Client, Method: "POST", Target: "/v1/chat/completions", Proto: "HTTP/2",
		RequestHeader: h2ReqHeader, RequestBody: []byte(reqBody),
		Status: 200, ResponseHeader: h2RespHeader, ResponseBody: []byte(respBody), Pieces: ps,
		RequestStart: reqStart, RequestEnd: reqEnd, ResponseStart: respStart, ResponseEnd: respEnd,
	}
}

// h2Conversation starts a connection: the client's preface and
// SETTINGS, the server's SETTINGS; the two ends' encoders to go on with.
func h2Conversation(at int64) (client, server *h2wire.End, evs []event) {
	client, server = h2wire.New(), h2wire.New()
	evs = []event{
		w(at, http2.ClientPreface+client.Settings(http2.Setting{ID: http2.SettingEnablePush, Val: 0})),
		r(at, server.Settings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 100})),
	}
	return client, server, evs
}

var h2Cases = func() []frameCase {
	var cases []frameCase
	add := func(name string, cfg Config, build func() ([]event, []Exchange, Stats)) {
		evs, want, stats := build()
		cases = append(cases, frameCase{name: name, cfg: cfg, evs: evs, want: want, stats: stats})
	}
	dropAuth := Config{DropHeaders: credentials}

	add("a streamed call: pieces per read, the authority as Host, the credential dropped", dropAuth, func() ([]event, []Exchange, Stats) {
		c, s, evs := h2Conversation(100)
		evs = append(evs,
			w(110, c.Headers(1, false, h2Req...)+c.Data(1, true, `{"stream":true}`)),
			r(200, s.Headers(1, false, h2Resp...)+s.Data(1, false, "data: a\n\n")),
			r(300, s.Data(1, false, "data: b\n\n")+s.Data(1, false, "data: c\n\n")),
			r(400, s.Data(1, true, "data: [DONE]\n\n")),
		)
		return evs, []Exchange{h2Exchange(`{"stream":true}`, "data: a\n\ndata: b\n\ndata: c\n\ndata: [DONE]\n\n", 110, 110, 200, 400,
			pieces(200, "data: a\n\n", 300, "data: b\n\ndata: c\n\n", 400, "data: [DONE]\n\n")...)}, Stats{Exchanges: 1, HTTP2: 1}
	})

	add("streams interleaved in one read each go to their exchange; the second head is from the dynamic table, its credential too", dropAuth, func() ([]event, []Exchange, Stats) {
		c, s, evs := h2Conversation(100)
		indexed := append([]string{}, h2Req...)
		indexed[10] = "authorization" // indexed, not never-indexed: the second request names it by its place in the table
		evs = append(evs,
			w(110, c.Headers(1, false, indexed...)+c.Data(1, true, "one")),
			w(120, c.Headers(3, false, indexed...)+c.Data(3, true, "three")),
			r(200, s.Headers(3, false, h2Resp...)+s.Headers(1, false, h2Resp...)+s.Data(1, false, "1a")+s.Data(3, false, "3a")),
			r(300, s.Data(3, true, "3b")+s.Data(1, true, "1b")),
		)
		return evs, []Exchange{
			h2Exchange("three", "3a3b", 120, 120, 200, 300, pieces(200, "3a", 300, "3b")...),
			h2Exchange("one", "1a1b", 110, 110, 200, 300, pieces(200, "1a", 300, "1b")...),
		}, Stats{Exchanges: 2, HTTP2: 1}
	})

	add("a header block over HEADERS and CONTINUATION, padded frames, a 100 Continue first", dropAuth, func() ([]event, []Exchange, Stats) {
		c, s, evs := h2Conversation(100)
		blk := c.Block(h2Req...)
		h2wire.Must(c.Framer.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: blk[:7], PadLength: 5,
			Priority: http2.PriorityParam{Weight: 15}}))
		h2wire.Must(c.Framer.WriteContinuation(1, false, blk[7:20]))
		h2wire.Must(c.Framer.WriteContinuation(1, true, blk[20:]))
		h2wire.Must(c.Framer.WriteDataPadded(1, true, []byte("body"), []byte{0, 0, 0}))
		evs = append(evs, w(110, c.Take()),
			r(150, s.Headers(1, false, ":status", "100")),
			r(200, s.Headers(1, false, h2Resp...)))
		h2wire.Must(s.Framer.WriteDataPadded(1, false, []byte("data: x\n\n"), make([]byte, 200)))
		evs = append(evs, r(300, s.Take()), r(400, s.Data(1, true, "")))
		return evs, []Exchange{h2Exchange("body", "data: x\n\n", 110, 110, 200, 400, pieces(300, "data: x\n\n")...)},
			Stats{Exchanges: 1, HTTP2: 1}
	})

	add("gRPC: trailers end the response", Config{}, func() ([]event, []Exchange, Stats) {
		c, s, evs := h2Conversation(100)
		req := []string{":method", "POST", ":scheme", "http", ":authority", "h", ":path", "/google.ai.generativelanguage.v1.GenerativeService/GenerateContent",
			"content-type", "application/grpc", "te", "trailers"}
		evs = append(evs,
			w(110, c.Headers(1, false, req...)+c.Data(1, true, "\x00\x00\x00\x00\x02ab")),
			r(200, s.Headers(1, false, ":status", "200", "content-type", "application/grpc")+s.Data(1, false, "\x00\x00\x00\x00\x01z")),
			r(300, s.Headers(1, true, "grpc-status", "0")),
		)
		return evs, []Exchange{{
			Role: Client, Method: "POST", Target: "/google.ai.generativelanguage.v1.GenerativeService/GenerateContent", Proto: "HTTP/2",
			RequestHeader: hdr("Host", "h", "content-type", "application/grpc", "te", "trailers"), RequestBody: []byte("\x00\x00\x00\x00\x02ab"),
			Status: 200, ResponseHeader: hdr("content-type", "application/grpc"), ResponseBody: []byte("\x00\x00\x00\x00\x01z"),
			Pieces:       pieces(200, "\x00\x00\x00\x00\x01z"),
			RequestStart: 110, RequestEnd: 110, ResponseStart: 200, ResponseEnd: 300,
		}}, Stats{Exchanges: 1, HTTP2: 1}
	})

	add("the client resets a stream mid-response: delivered as it stood", dropAuth, func() ([]event, []Exchange, Stats) {
		c, s, evs := h2Conversation(100)
		evs = append(evs,
			w(110, c.Headers(1, false, h2Req...)+c.Data(1, true, "q")),
			r(200, s.Headers(1, false, h2Resp...)+s.Data(1, false, "data: a\n\n")),
		)
		h2wire.Must(c.Framer.WriteRSTStream(1, http2.ErrCodeCancel))
		evs = append(evs, w(300, c.Take()))
		x := h2Exchange("q", "data: a\n\n", 110, 110, 200, 300, pieces(200, "data: a\n\n")...)
		x.ResetBy, x.ResetCode = Client, uint32(http2.ErrCodeCancel)
		return evs, []Exchange{x}, Stats{Exchanges: 1, HTTP2: 1, Reset: 1}
	})

	add("the server refuses a stream, and a GOAWAY leaves the streams above its last unprocessed", dropAuth, func() ([]event, []Exchange, Stats) {
		c, s, evs := h2Conversation(100)
		evs = append(evs,
			w(110, c.Headers(1, true, h2Req...)),
			w(120, c.Headers(3, true, h2Req...)),
			w(130, c.Headers(5, true, h2Req...)),
		)
		h2wire.Must(s.Framer.WriteRSTStream(3, http2.ErrCodeRefusedStream))
		h2wire.Must(s.Framer.WriteGoAway(1, http2.ErrCodeNo, nil))
		evs = append(evs, r(200, s.Take()), r(300, s.Headers(1, true, h2Resp...)))
		x := h2Exchange("", "", 110, 110, 300, 300)
		return evs, []Exchange{x}, Stats{Exchanges: 1, HTTP2: 1, AbandonedRefused: 2}
	})

	add("a loss resets the header state: a head that refers to an entry lost is abandoned, never mis-decoded", dropAuth, func() ([]event, []Exchange, Stats) {
		c, s, evs := h2Conversation(100)
		evs = append(evs,
			w(110, c.Headers(1, true, h2Req...)),
			r(200, s.Headers(1, false, h2Resp...)+s.Data(1, false, "data: a\n\n")),
			gap(Read),
			w(300, c.Headers(3, true, h2Req...)),
			r(400, s.Headers(3, true, h2Resp...)), // its fields are in the table lost
		)
		// A response head all literal decodes again.
		s.Encoder.SetMaxDynamicTableSizeLimit(0)
		evs = append(evs, w(500, c.Headers(5, true, h2Req...)),
			r(600, s.Headers(5, true, ":status", "204")))
		x := h2Exchange("", "", 500, 500, 600, 600)
		x.Status, x.ResponseHeader = 204, nil
		return evs, []Exchange{x}, Stats{Exchanges: 1, HTTP2: 1, AbandonedGap: 1, AbandonedMalformed: 1, BadHeaderBlock: 1}
	})

	add("a head over MaxHeader is abandoned; the table stays in step", Config{MaxHeader: 200}, func() ([]event, []Exchange, Stats) {
		c, s, evs := h2Conversation(100)
		big := append([]string{}, h2Req...)
		big = append(big, "x-big", strings.Repeat("b", 150))
		evs = append(evs,
			w(110, c.Headers(1, true, big...)),
			w(120, c.Headers(3, true, h2Req...)),
			r(200, s.Headers(3, true, h2Resp...)),
		)
		x := h2Exchange("", "", 120, 120, 200, 200)
		x.RequestHeader = append(hdr("Host", "api.example.com", "content-type", "application/json", "authorization", "Bearer sk-h2-secret"),
			hdr("user-agent", "Go-http-client/2.0")...)
		return evs, []Exchange{x}, Stats{Exchanges: 1, HTTP2: 1, HeaderTooLarge: 1, AbandonedMalformed: 1}
	})

	add("streams past MaxStreams are abandoned", Config{MaxStreams: 1, DropHeaders: credentials}, func() ([]event, []Exchange, Stats) {
		c, s, evs := h2Conversation(100)
		evs = append(evs,
			w(110, c.Headers(1, true, h2Req...)),
			w(120, c.Headers(3, true, h2Req...)),
			r(200, s.Headers(3, true, h2Resp...)+s.Headers(1, true, h2Resp...)),
		)
		return evs, []Exchange{h2Exchange("", "", 110, 110, 200, 200)}, Stats{Exchanges: 1, HTTP2: 1, AbandonedOverflow: 1}
	})

	add("the traced process is the server", dropAuth, func() ([]event, []Exchange, Stats) {
		c, s := h2wire.New(), h2wire.New()
		evs := []event{
			r(100, http2.ClientPreface+c.Settings()),
			w(100, s.Settings()),
			r(110, c.Headers(1, false, h2Req...)+c.Data(1, true, "q")),
			w(200, s.Headers(1, false, h2Resp...)+s.Data(1, true, "data: a\n\n")),
		}
		x := h2Exchange("q", "data: a\n\n", 110, 110, 200, 200, pieces(200, "data: a\n\n")...)
		x.Role = Server
		return evs, []Exchange{x}, Stats{Exchanges: 1, HTTP2: 1}
	})
	return cases
}()

// TestHTTP2 plays each case whole and one byte a Feed: the exchanges
// and counts do not depend on where reads end (but for the pieces, which
// follow the reads).
func TestHTTP2(t *testing.T) {
	for _, tc := range h2Cases {
		t.Run(tc.name, func(t *testing.T) {
			res := play(tc.cfg, tc.evs, whole)
			assert.Empty(t, checkExchanges(res.exchanges, tc.want))
			assert.Equal(t, tc.stats, res.stats, "stats")
			require.NoError(t, checkCaps(tc.cfg, res))

			if !wellFormed(tc.evs, res.stats) {
				return // a resync needs a frame header at the start of a Feed
			}
			bytewiseRes := play(tc.cfg, tc.evs, bytewise)
			want, err := normalize(res.exchanges)
			require.NoError(t, err)
			got, err := normalize(bytewiseRes.exchanges)
			require.NoError(t, err)
			assert.Equal(t, want, got, "one byte a Feed")
			assert.Equal(t, res.stats, bytewiseRes.stats, "one byte a Feed: stats")
		})
	}
}

// TestHTTP2HostileMemory feeds HTTP/2 streams built to make a reader
// hold or allocate in proportion to its input, and checks that a Conn
// does neither: a CONTINUATION flood, a frame that says it is 16 MiB
// long, DATA that never ends, streams opened and never ended, header
// blocks that ask for a dynamic table larger than allowed. (The Framer
// allocates each frame other than DATA it parses, some 64 bytes: that
// much per frame is allowed.)
func TestHTTP2HostileMemory(t *testing.T) {
	const size, perFrame = 4 << 20, 96
	_, _, start := h2Conversation(0)
	head := start[0].data
	// flood repeats what next writes until size bytes.
	flood := func(first string, next func(e *h2wire.End) string) (string, int) {
		var b strings.Builder
		b.WriteString(first)
		e, frames := h2wire.New(), 1
		for b.Len() < size {
			b.WriteString(next(e))
			frames++
		}
		return b.String(), frames
	}
	c0 := h2wire.New()
	h2wire.Must(c0.Framer.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: c0.Block(h2Req[:8]...)}))
	frag := c0.Block("x-a", strings.Repeat("a", 100))
	stream := uint32(1)
	for _, tc := range []struct {
		name    string
		data    func() (string, int)
		counted func(Stats) int64 // what the input must have been counted as, if anything
	}{
		{"a CONTINUATION flood", func() (string, int) {
			return flood(c0.Take(), func(*h2wire.End) string {
				h2wire.Must(c0.Framer.WriteContinuation(1, false, frag))
				return c0.Take()
			})
		}, nil},
		{"a DATA frame of 16 MiB", func() (string, int) {
			return h2wire.New().Headers(1, false, h2Req...) + "\xff\xff\xff\x00\x00\x00\x00\x00\x01" + strings.Repeat("d", size), 2
		}, nil},
		{"streams opened and never ended", func() (string, int) {
			return flood("", func(e *h2wire.End) string {
				stream += 2
				return e.Headers(stream, false, h2Req...)
			})
		}, func(s Stats) int64 { return s.AbandonedOverflow }},
		{"table size updates over the limit", func() (string, int) {
			return flood("", func(e *h2wire.End) string {
				stream += 2
				// A dynamic table size update to 1 MiB (RFC 7541, 6.3),
				// over the 4,096 bytes allowed.
				h2wire.Must(e.Framer.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: []byte{0x3f, 0xe1, 0xff, 0x3f}, EndHeaders: true}))
				return e.Take()
			})
		}, func(s Stats) int64 { return s.BadHeaderBlock }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Config{})
			c.Feed(Write, []byte(head), 0)
			limit := bound(Config{})
			text, frames := tc.data()
			data := []byte(text)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for i := 0; i < len(data); i += 64 << 10 {
				c.Feed(Write, data[i:min(i+64<<10, len(data))], int64(i))
				n := c.Retained()
				require.LessOrEqual(t, n, limit, "after %d bytes the Conn retains %d, over the bound %d", i, n, limit)
			}
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			most := uint64(limit + perFrame*frames)
			assert.LessOrEqual(t, alloc, most, "%d bytes allocated feeding %d in %d frames, over %d", alloc, len(data), frames, most)
			assert.Zero(t, c.Stats().Exchanges)
			if tc.counted != nil {
				assert.Greater(t, tc.counted(c.Stats()), int64(frames/2), "%+v", c.Stats())
			}
		})
	}
}
