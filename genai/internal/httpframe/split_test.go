package httpframe

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// normalize checks the timing of exchanges, and returns them without
// it: no timestamps and no pieces, which follow the Feeds.
func normalize(exs []*Exchange) ([]Exchange, error) {
	out := make([]Exchange, len(exs))
	for i, e := range exs {
		if err := checkTiming(e); err != nil {
			return nil, fmt.Errorf("exchange %d: %w", i, err)
		}
		n := *e
		n.Pieces = nil
		n.RequestStart, n.RequestEnd, n.ResponseStart, n.ResponseEnd = 0, 0, 0, 0
		out[i] = n
	}
	return out, nil
}

// checkTiming checks that the pieces of an exchange cover its response
// body, in order, within the response's time, and that each message
// ends no earlier than it starts.
func checkTiming(e *Exchange) error {
	if e.RequestEnd < e.RequestStart || e.ResponseEnd < e.ResponseStart {
		return fmt.Errorf("request %d..%d, response %d..%d", e.RequestStart, e.RequestEnd, e.ResponseStart, e.ResponseEnd)
	}
	var body []byte
	for i, p := range e.Pieces {
		switch {
		case len(p.Data) == 0:
			return fmt.Errorf("piece %d is empty", i)
		case p.At < e.ResponseStart || p.At > e.ResponseEnd:
			return fmt.Errorf("piece %d at %d, outside the response's %d..%d", i, p.At, e.ResponseStart, e.ResponseEnd)
		case i > 0 && p.At < e.Pieces[i-1].At:
			return fmt.Errorf("piece %d at %d, before piece %d at %d", i, p.At, i-1, e.Pieces[i-1].At)
		}
		body = append(body, p.Data...)
	}
	if !bytes.Equal(body, e.ResponseBody) {
		return fmt.Errorf("pieces hold %q, the body is %q", body, e.ResponseBody)
	}
	return nil
}

// splitAt cuts the data of the Feeds at one offset of all the data fed.
func splitAt(k int) func([]byte) [][]byte {
	off := 0
	return func(p []byte) [][]byte {
		start := off
		off += len(p)
		if start < k && k < off {
			return [][]byte{p[:k-start], p[k-start:]}
		}
		return [][]byte{p}
	}
}

// bytewise feeds one byte at a time.
func bytewise(p []byte) [][]byte {
	out := make([][]byte, len(p))
	for i := range p {
		out[i] = p[i : i+1]
	}
	return out
}

// randomly cuts each Feed at random places.
func randomly(rng *rand.Rand) func([]byte) [][]byte {
	return func(p []byte) [][]byte {
		var out [][]byte
		for len(p) > 0 {
			n := 1 + rng.IntN(min(len(p), 1+rng.IntN(64)))
			out, p = append(out, p[:n]), p[n:]
		}
		return out
	}
}

// merged joins the data of consecutive Feeds in the same direction, at
// the first one's time.
func merged(evs []event) []event {
	var out []event
	for _, ev := range evs {
		if n := len(out); n > 0 && ev.op == opFeed && out[n-1].op == opFeed && out[n-1].dir == ev.dir {
			out[n-1].data += ev.data
			continue
		}
		out = append(out, ev)
	}
	return out
}

func totalFed(evs []event) int {
	n := 0
	for _, ev := range evs {
		n += len(ev.data)
	}
	return n
}

// TestSplitAnywhere feeds every case split at every byte, one byte at a
// time, at random, and merged, and wants the same exchanges and counts
// as when each Feed comes whole.
func TestSplitAnywhere(t *testing.T) {
	for _, tc := range append(frameCases, malformedCases...) {
		t.Run(tc.name, func(t *testing.T) {
			ref := play(tc.cfg, tc.evs, whole)
			want, err := normalize(ref.exchanges)
			require.NoError(t, err, "fed whole")
			// check runs some 11,000 times in all: each check is guarded
			// by its condition, so that a check that passes costs no call
			// into testify (whose t.Helper is not free).
			check := func(how string, res result) {
				t.Helper()
				got, err := normalize(res.exchanges)
				if err != nil {
					require.NoError(t, err, how)
				}
				if !reflect.DeepEqual(got, want) {
					require.Equal(t, want, got, "%s: exchanges differ from those fed whole:\n got %s\nwant %s", how, describe(got), describe(want))
				}
				if res.stats != ref.stats {
					require.Equal(t, ref.stats, res.stats, "%s: stats", how)
				}
			}
			for k := 1; k < totalFed(tc.evs); k++ {
				check(fmt.Sprintf("split at %d", k), play(tc.cfg, tc.evs, splitAt(k)))
			}
			check("one byte a Feed", play(tc.cfg, tc.evs, bytewise))
			rng := rand.New(rand.NewPCG(1, uint64(len(tc.name))))
			for i := range 20 {
				check(fmt.Sprintf("random split %d", i), play(tc.cfg, tc.evs, randomly(rng)))
			}
			check("merged Feeds", play(tc.cfg, merged(tc.evs), whole))
		})
	}
}

func describe(exs []Exchange) string {
	var b strings.Builder
	for _, e := range exs {
		fmt.Fprintf(&b, "\n\t%s %s %s %v %q | %d %v %q", e.Method, e.Target, e.Proto, e.RequestHeader, e.RequestBody,
			e.Status, e.ResponseHeader, e.ResponseBody)
	}
	return b.String()
}

// TestTruncation cuts bodies at a small MaxBody: the kept part is the
// start of the body, Truncated says so, and the framing reads the whole
// body, so that the next exchange comes through.
func TestTruncation(t *testing.T) {
	const maxBody = 8
	long := strings.Repeat("0123456789", 5)
	evs := []event{
		w(100, "POST /v1/embeddings HTTP/1.1\r\nContent-Length: 50\r\n\r\n"+long),
		r(200, "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n"+long[:5]),
		r(210, long[5:]),
		w(300, get("/stream")),
		r(400, sseHead+chunk(long[:6])),
		r(410, chunk(long[6:])+lastChunk),
		w(500, "POST /v1/small HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"+chunk("12345678")+lastChunk),
		r(600, ok("exact:8!")),
	}
	want := []Exchange{
		{
			Role: Client, Method: "POST", Target: "/v1/embeddings", Proto: "HTTP/1.1",
			RequestHeader: hdr("Content-Length", "50"),
			RequestBody:   []byte("01234567"), RequestTruncated: true,
			Status: 200, ResponseHeader: hdr("Content-Length", "50"),
			ResponseBody: []byte("01234567"), ResponseTruncated: true,
			Pieces:       pieces(200, "01234", 210, "567"),
			RequestStart: 100, RequestEnd: 100, ResponseStart: 200, ResponseEnd: 210,
		},
		{
			Role: Client, Method: "GET", Target: "/stream", Proto: "HTTP/1.1",
			RequestHeader: hdr("Host", "h"),
			Status:        200, ResponseHeader: sseHeader,
			ResponseBody: []byte("01234567"), ResponseTruncated: true,
			Pieces:       pieces(400, "012345", 410, "67"),
			RequestStart: 300, RequestEnd: 300, ResponseStart: 400, ResponseEnd: 410,
		},
		{
			// Bodies of exactly MaxBody bytes are whole.
			Role: Client, Method: "POST", Target: "/v1/small", Proto: "HTTP/1.1",
			RequestHeader: hdr("Transfer-Encoding", "chunked"),
			RequestBody:   []byte("12345678"),
			Status:        200, ResponseHeader: hdr("Content-Length", "8"),
			ResponseBody: []byte("exact:8!"), Pieces: pieces(600, "exact:8!"),
			RequestStart: 500, RequestEnd: 500, ResponseStart: 600, ResponseEnd: 600,
		},
	}
	cfg := Config{MaxBody: maxBody}
	res := play(cfg, evs, whole)
	assert.Empty(t, checkExchanges(res.exchanges, want))
	assert.Equal(t, Stats{Exchanges: 3, TruncatedBodies: 3}, res.stats, "stats")
	// Split anyhow, the bodies are cut at the same place.
	wantN, err := normalize(res.exchanges)
	require.NoError(t, err)
	for k := 1; k < totalFed(evs); k++ {
		got, err := normalize(play(cfg, evs, splitAt(k)).exchanges)
		require.NoError(t, err, "split at %d", k)
		require.Equal(t, wantN, got, "split at %d:\n got %s\nwant %s", k, describe(got), describe(wantN))
	}
}
