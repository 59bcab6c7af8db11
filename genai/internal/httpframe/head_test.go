package httpframe

import (
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http/httpguts"
	"golang.org/x/sys/unix"
)

func TestStartLines(t *testing.T) {
	for _, tc := range []struct {
		line   string
		kind   kind // kindAny: neither
		status int
	}{
		{"GET /hello.txt HTTP/1.1", kindRequest, 0},
		{"POST /v1/chat/completions?api-version=2024-06-01 HTTP/1.1", kindRequest, 0},
		{"OPTIONS * HTTP/1.1", kindRequest, 0},
		{"CONNECT api.openai.com:443 HTTP/1.1", kindRequest, 0},
		{"GET http://example.com/x HTTP/1.0", kindRequest, 0},
		{"M-SEARCH * HTTP/1.1", kindRequest, 0},
		{"GET /x HTTP/2.0", kindAny, 0},
		{"GET /x HTTP/1.1 ", kindAny, 0},
		{"GET  /x HTTP/1.1", kindAny, 0},
		{"GET /x\tHTTP/1.1", kindAny, 0},
		{"GET /a\x7fb HTTP/1.1", kindAny, 0},
		{"GE:T /x HTTP/1.1", kindAny, 0},
		{" GET /x HTTP/1.1", kindAny, 0},
		{"GET /x http/1.1", kindAny, 0},
		{"PRI * HTTP/2.0", kindAny, 0},
		{"HTTP/1.1 200 OK", kindResponse, 200},
		{"HTTP/1.0 404 Not Found", kindResponse, 404},
		{"HTTP/1.1 204", kindResponse, 204},
		{"HTTP/1.1 204 ", kindResponse, 204},
		{"HTTP/1.1 101 Switching Protocols", kindResponse, 101},
		{"HTTP/1.1 999 Custom", kindResponse, 999},
		{"HTTP/1.1 099 Too low", kindAny, 0},
		{"HTTP/1.1 20 OK", kindAny, 0},
		{"HTTP/1.1 2000 OK", kindAny, 0},
		{"HTTP/1.1 20x OK", kindAny, 0},
		{"HTTP/1.1  200 OK", kindAny, 0},
		{"HTTP/2 200", kindAny, 0},
		{"HTTP/1.1", kindAny, 0},
		{"", kindAny, 0},
	} {
		k, ok := lineKind([]byte(tc.line))
		assert.Equal(t, tc.kind != kindAny, ok, "lineKind(%q) = %v, %v; want %v", tc.line, k, ok, tc.kind)
		assert.Equal(t, tc.kind, k, "lineKind(%q) = %v, %v; want %v", tc.line, k, ok, tc.kind)
		status, _ := parseStatusLine([]byte(tc.line))
		assert.Equal(t, tc.status, status, "parseStatusLine(%q)", tc.line)
	}
}

func TestContentLength(t *testing.T) {
	for _, tc := range []struct {
		values []string // one per field
		length int64
		bad    bool
	}{
		{[]string{"0"}, 0, false},
		{[]string{"42"}, 42, false},
		{[]string{"42, 42"}, 42, false},
		{[]string{"42", "42"}, 42, false},
		{[]string{"42,"}, 42, false},
		{[]string{"999999999999999999"}, 999999999999999999, false},
		{[]string{"1000000000000000000"}, 0, true},
		{[]string{"99999999999999999999"}, 0, true},
		{[]string{"-1"}, 0, true},
		{[]string{"+1"}, 0, true},
		{[]string{"0x10"}, 0, true},
		{[]string{"1 2"}, 0, true},
		{[]string{""}, 0, true},
		{[]string{"42, 43"}, 0, true},
		{[]string{"42", "43"}, 0, true},
	} {
		h := head{length: -1}
		for _, v := range tc.values {
			h.frame([]byte("content-length"), []byte(v))
		}
		assert.Equal(t, tc.bad, h.badLength, "Content-Length %q: length %d, bad %v", tc.values, h.length, h.badLength)
		if !tc.bad {
			assert.Equal(t, tc.length, h.length, "Content-Length %q: length %d, bad %v", tc.values, h.length, h.badLength)
		}
	}
}

func TestTransferCodings(t *testing.T) {
	for _, tc := range []struct {
		values  []string
		chunked bool
	}{
		{[]string{"chunked"}, true},
		{[]string{"Chunked"}, true},
		{[]string{"gzip, chunked"}, true},
		{[]string{"gzip", "chunked"}, true},
		{[]string{"chunked, gzip"}, false},
		{[]string{"chunked", "gzip"}, false},
		{[]string{"gzip;q=1.0 , chunked ; x=y"}, true},
		{[]string{"chunked", ""}, true},
		{[]string{"x-chunked"}, false},
	} {
		var h head
		for _, v := range tc.values {
			h.frame([]byte("Transfer-Encoding"), []byte(v))
		}
		assert.True(t, h.encoded, "Transfer-Encoding %q: encoded %v, chunked %v", tc.values, h.encoded, h.chunked)
		assert.Equal(t, tc.chunked, h.chunked, "Transfer-Encoding %q: encoded %v, chunked %v", tc.values, h.encoded, h.chunked)
	}
}

// TestChunkedGrammar frames chunked response bodies: a well-formed one
// yields its data, a broken one is counted as a bad chunk.
func TestChunkedGrammar(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       string // "": malformed
	}{
		{"upper-case hex", "A\r\n0123456789\r\n0\r\n\r\n", "0123456789"},
		{"leading zeros", "0003\r\nabc\r\n000\r\n\r\n", "abc"},
		{"bare LF line endings", "3\nabc\n0\n\n", "abc"},
		{"extensions with quoted strings", "3;a=\"x;y\";b\r\nabc\r\n0;end\r\n\r\n", "abc"},
		{"spaces before an extension", "3 \t;a\r\nabc\r\n0\r\n\r\n", "abc"},
		{"trailer fields", "3\r\nabc\r\n0\r\nA: 1\r\nB: 2\r\n\r\n", "abc"},
		{"empty body", "0\r\n\r\n", ""},
		{"no size", "\r\nabc\r\n0\r\n\r\n", ""},
		{"a size in 0x form", "0x3\r\nabc\r\n0\r\n\r\n", ""},
		{"CR CR LF after the data", "3\r\nabc\r\r\n0\r\n\r\n", ""},
		{"data longer than its size", "3\r\nabcd\r\n0\r\n\r\n", ""},
		{"16 hex digits", "0000000000000003\r\nabc\r\n0\r\n\r\n", ""},
		{"an extension line over the cap", "3;" + strings.Repeat("e", maxChunkLine) + "\r\nabc\r\n0\r\n\r\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := play(Config{}, []event{
				w(1, get("/")),
				r(2, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"+tc.body),
			}, whole)
			malformed := tc.want == "" && tc.name != "empty body"
			if malformed {
				assert.Equal(t, int64(1), res.stats.BadChunk, "%d exchanges, stats %+v; want it counted as a bad chunk", len(res.exchanges), res.stats)
				assert.Empty(t, res.exchanges, "%d exchanges, stats %+v; want it counted as a bad chunk", len(res.exchanges), res.stats)
			} else if assert.Len(t, res.exchanges, 1, "stats %+v", res.stats) {
				assert.Equal(t, tc.want, string(res.exchanges[0].ResponseBody), "body")
			}
		})
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		kind   kind
		want   verdict
		at     int // for notHTTP
	}{
		{"", kindAny, needMore, 0},
		{"G", kindAny, needMore, 0},
		{"GET ", kindAny, needMore, 0},
		{"GET /", kindAny, plausible, 0},
		{"GET  ", kindRequest, notHTTP, 4},
		{"GET\r", kindRequest, notHTTP, 3},
		{strings.Repeat("A", maxMethod) + " /", kindRequest, plausible, 0},
		{strings.Repeat("A", maxMethod+1) + " /", kindRequest, notHTTP, maxMethod},
		{"HTTP/1.1 2", kindAny, needMore, 0},
		{"HTTP/1.1 200", kindResponse, plausible, 0},
		{"HTTP/1.1 2x0", kindResponse, notHTTP, 10},
		{"HTTP/1.1 200", kindRequest, notHTTP, 4},
		{"GET /", kindResponse, notHTTP, 0},
		{"PRI * HTTP/2.", kindAny, needMore, 0},
		{"PRI * HTTP/2.0\r\n", kindAny, isHTTP2, 0},
		{"PRI * HTTP/1.1\r\n", kindAny, plausible, 0},
		{"\x00\x00\x12\x04\x00", kindAny, needMore, 0},
		{"\x00\x00\x12\x04\x00\x00\x00\x00\x00", kindAny, isHTTP2, 0},
		{"\x00\x00\x00\x04\x01\x00\x00\x00\x00", kindAny, notHTTP, 0}, // a SETTINGS ack is not a first frame
		{"\x00\x00\x07\x04\x00\x00\x00\x00\x00", kindAny, notHTTP, 0},
		{"\x16\x03\x01\x00\xa5", kindAny, notHTTP, 0},
	} {
		v, at := classify([]byte(tc.prefix), tc.kind)
		assert.Equal(t, tc.want, v, "classify(%q, %v) = %v, %d; want %v, %d", tc.prefix, tc.kind, v, at, tc.want, tc.at)
		if v == notHTTP {
			assert.Equal(t, tc.at, at, "classify(%q, %v) = %v, %d; want %v, %d", tc.prefix, tc.kind, v, at, tc.want, tc.at)
		}
	}
}

// TestLinearTime feeds hostile streams of two sizes: framing the larger
// must not take more than about as much longer as it is larger (a ratio
// in one run, not a wall-clock limit). The time is this thread's CPU time
// (CLOCK_THREAD_CPUTIME_ID, the goroutine locked to it; getrusage's counts
// in ticks), the best of rounds that
// alternate the sizes: on a busy machine the wall clock also counts the
// time other processes held the CPU, which made a linear framer look
// superlinear.
func TestLinearTime(t *testing.T) {
	const small, factor, rounds = 128 << 10, 8, 5
	cpu := func() time.Duration {
		var ts unix.Timespec
		require.NoError(t, unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts))
		return time.Duration(ts.Nano())
	}
	for _, tc := range []struct {
		name string
		dir  Dir
		gap  bool
		unit string
	}{
		{"status line candidates with no line end", Read, true, "HTTP/1.1 200 "},
		{"status line candidates failing the quick check", Read, true, "HTTP/1.1 "},
		{"request words with no line end", Write, true, "GET / "},
		{"pipelined requests", Write, false, "GET / HTTP/1.1\r\n\r\n"},
		{"header lines", Read, false, "HTTP/1.1 200 OK\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runtime.LockOSThread() // each subtest runs on a goroutine of its own
			defer runtime.UnlockOSThread()
			run := func(data []byte) time.Duration {
				c := New(Config{})
				c.Feed(Write, []byte(get("/")), 0)
				if tc.gap {
					c.Gap(tc.dir)
				}
				start := cpu()
				for i := 0; i < len(data); i += 64 << 10 {
					c.Feed(tc.dir, data[i:min(i+64<<10, len(data))], 1)
				}
				return cpu() - start
			}
			shortData := []byte(strings.Repeat(tc.unit, small/len(tc.unit)))
			longData := []byte(strings.Repeat(tc.unit, small*factor/len(tc.unit)))
			short, long := time.Duration(1<<63-1), time.Duration(1<<63-1)
			for range rounds {
				short, long = min(short, run(shortData)), min(long, run(longData))
			}
			ratio := float64(long) / float64(max(short, time.Microsecond))
			assert.LessOrEqual(t, ratio, float64(3*factor), "%d× the input took %.0f× the CPU time (%v, %v): superlinear", factor, ratio, short, long)
		})
	}
}

// Redact keeps the fields DropHeaders names, in their place, with the
// value it returns; without it they are left out.
func TestParseHeadRedact(t *testing.T) {
	block := []byte("POST /v1/x HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer sk-secret\r\nX-Api-Key: k\r\nContent-Length: 0\r\n\r\n")
	drop := []string{"authorization", "x-api-key"}
	h, p := parseHead(block, kindRequest, drop, nil)
	require.Equal(t, probNone, p)
	require.Equal(t, Headers{{"Host", "h"}, {"Content-Length", "0"}}, h.fields)
	h, p = parseHead(block, kindRequest, drop, func(name, value []byte) string { return "<" + strings.ToLower(string(name)) + ">" })
	require.Equal(t, probNone, p)
	require.Equal(t, Headers{{"Host", "h"}, {"Authorization", "<authorization>"}, {"X-Api-Key", "<x-api-key>"}, {"Content-Length", "0"}}, h.fields)
	require.Equal(t, "/v1/x", h.target)
}

// The token table agrees, byte by byte, with x/net's own token check.
func TestTchars(t *testing.T) {
	for b := range 256 {
		if got, want := isTchar(byte(b)), b < utf8.RuneSelf && httpguts.IsTokenRune(rune(b)); got != want {
			t.Errorf("isTchar(%q) = %v, want %v", rune(b), got, want)
		}
	}
}
