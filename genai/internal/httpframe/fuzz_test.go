package httpframe

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bound is the most a Conn with cfg may retain (see Conn.Retained).
func bound(cfg Config) int {
	cfg = withDefaults(cfg)
	exchange := cfg.MaxBody + 2*(cfg.MaxHeader+MaxFields*int(unsafe.Sizeof(Header{})))
	marks := 2 * cfg.MaxPieces * int(unsafe.Sizeof(mark{}))
	direction := cfg.MaxHeader + cfg.MaxBody + marks
	http1 := 2*direction + (cfg.MaxPending+2)*exchange
	// HTTP/2: each direction a frame and a header block (whose last
	// field may go past MaxHeader by a string of at most MaxHeader), each
	// stream an exchange and a response body with its marks.
	block := 3*cfg.MaxHeader + 2*MaxFields*int(unsafe.Sizeof(Header{}))
	http2 := 2*(maxFrameKept+block) + cfg.MaxStreams*(exchange+cfg.MaxBody+marks)
	return max(http1, http2)
}

// A fuzz plan is a list of 3-byte steps: an op byte and a big-endian
// length of data. Op%8 < 6 feeds the next length bytes of data (at least
// one), written if op is even, read if odd; 6 is a gap, in the direction
// of bit 3; 7 closes. Data left after the plan is written in one Feed.
const planStep = 3

// encodePlan turns events into fuzz input.
func encodePlan(evs []event) (data, plan []byte) {
	for _, ev := range evs {
		switch ev.op {
		case opFeed:
			data = append(data, ev.data...)
			plan = append(plan, byte(ev.dir))
			plan = binary.BigEndian.AppendUint16(plan, uint16(len(ev.data)))
		case opGap:
			plan = append(plan, 6|byte(ev.dir)<<3, 0, 0)
		case opClose:
			plan = append(plan, 7, 0, 0)
		}
	}
	return data, plan
}

// decodePlan turns fuzz input into events, 10 ns apart.
func decodePlan(data, plan []byte) []event {
	var evs []event
	at := int64(0)
	for ; len(plan) >= planStep; plan = plan[planStep:] {
		at += 10
		op, n := plan[0], int(binary.BigEndian.Uint16(plan[1:]))
		switch op % 8 {
		case 6:
			evs = append(evs, gap(Dir(op>>3&1)))
		case 7:
			evs = append(evs, hangUp())
		default:
			n = min(max(n, 1), len(data))
			evs = append(evs, event{op: opFeed, dir: Dir(op & 1), data: string(data[:n]), at: at})
			data = data[n:]
		}
	}
	if len(data) > 0 {
		evs = append(evs, w(at+10, string(data)))
	}
	return evs
}

// fuzzConfig has small limits, so that fuzz input reaches them.
var fuzzConfig = Config{MaxHeader: 512, MaxBody: 256, MaxPieces: 8, MaxPending: 3, MaxStreams: 3, DropHeaders: credentials}

// playChecked runs events like play, and checks after each call that the
// Conn holds no more than the bound. The checks run for every byte fed
// one at a time: each is guarded by its condition, so that a check that
// passes costs no call into testify (whose t.Helper is not free).
func playChecked(t *testing.T, cfg Config, evs []event, split func([]byte) [][]byte) result {
	t.Helper()
	var res result
	// What OnResponse's func got of each response: all of its body, of
	// which the body kept is the start.
	streamed := map[*Exchange][]byte{}
	cfg.OnResponse = func(e *Exchange) func(Piece) {
		streamed[e] = []byte{}
		return func(p Piece) {
			if len(p.Data) == 0 {
				require.NotEmpty(t, p.Data, "an empty piece")
			}
			streamed[e] = append(streamed[e], p.Data...)
		}
	}
	cfg.OnExchange = func(e *Exchange) {
		res.exchanges = append(res.exchanges, e)
		all, ok := streamed[e]
		if !ok && (e.ResetBy == 0 || e.Status != 0) { // an HTTP/2 stream reset before its response has none
			require.True(t, ok, "exchange %d: OnResponse not called", len(res.exchanges))
		}
		if !bytes.HasPrefix(all, e.ResponseBody) || !e.ResponseTruncated && len(all) != len(e.ResponseBody) {
			require.Equal(t, string(all), string(e.ResponseBody), "exchange %d: streamed and kept bodies (truncated %v)",
				len(res.exchanges), e.ResponseTruncated)
		}
		delete(streamed, e)
	}
	c := New(cfg)
	limit := bound(cfg)
	for i, ev := range evs {
		switch ev.op {
		case opFeed:
			for _, p := range split([]byte(ev.data)) {
				c.Feed(ev.dir, p, ev.at)
				if n := c.Retained(); n > limit {
					require.LessOrEqual(t, n, limit, "event %d: the Conn retains %d bytes, over the bound %d", i, n, limit)
				}
				waiting := 0
				c.Waiting(func(*Exchange) { waiting++ })
				if most := max(withDefaults(cfg).MaxPending+2, withDefaults(cfg).MaxStreams); waiting > most {
					require.LessOrEqual(t, waiting, most, "event %d: %d requests waiting, over MaxPending + 2 and MaxStreams = %d", i, waiting, most)
				}
			}
		case opGap:
			c.Gap(ev.dir)
		case opClose:
			c.Close()
		}
	}
	res.stats = c.Stats()
	return res
}

// checkCaps checks what a Conn delivered against its limits.
func checkCaps(cfg Config, res result) error {
	cfg = withDefaults(cfg)
	if res.stats.Exchanges != int64(len(res.exchanges)) {
		return fmt.Errorf("Stats.Exchanges = %d, %d delivered", res.stats.Exchanges, len(res.exchanges))
	}
	for i, e := range res.exchanges {
		if err := checkTiming(e); err != nil {
			return fmt.Errorf("exchange %d: %w", i, err)
		}
		for _, m := range []struct {
			body      []byte
			truncated bool
			fields    Headers
		}{
			{e.RequestBody, e.RequestTruncated, e.RequestHeader},
			{e.ResponseBody, e.ResponseTruncated, e.ResponseHeader},
		} {
			if len(m.body) > cfg.MaxBody || m.truncated && len(m.body) != cfg.MaxBody {
				return fmt.Errorf("exchange %d: a body of %d bytes, truncated %v, with MaxBody %d", i, len(m.body), m.truncated, cfg.MaxBody)
			}
			if len(m.fields) > MaxFields {
				return fmt.Errorf("exchange %d: %d header fields", i, len(m.fields))
			}
			for _, f := range m.fields {
				for _, d := range cfg.DropHeaders {
					if strings.EqualFold(f.Name, d) {
						return fmt.Errorf("exchange %d: dropped field %q delivered", i, f.Name)
					}
				}
			}
		}
		if len(e.Pieces) > cfg.MaxPieces {
			return fmt.Errorf("exchange %d: %d pieces, MaxPieces %d", i, len(e.Pieces), cfg.MaxPieces)
		}
		if e.Role != Client && e.Role != Server {
			return fmt.Errorf("exchange %d: role %v", i, e.Role)
		}
	}
	return nil
}

// wellFormed reports whether a run met no gap and nothing malformed:
// its exchanges must then not depend on how the data was split.
func wellFormed(evs []event, s Stats) bool {
	for _, ev := range evs {
		if ev.op == opGap {
			return false
		}
	}
	return s.BadStartLine+s.BadHeader+s.HeaderTooLarge+s.BadContentLength+s.BadTransferEncoding+s.BadChunk+s.BadFrame+s.BadHeaderBlock+s.SkippedBytes == 0
}

func FuzzConn(f *testing.F) {
	for _, tc := range append(append(frameCases, malformedCases...), h2Cases...) {
		data, plan := encodePlan(tc.evs)
		f.Add(data, plan)
	}
	f.Fuzz(func(t *testing.T, data, plan []byte) { fuzzEvents(t, decodePlan(data, plan)) })
}

// FuzzHTTP2 fuzzes what follows the start of an HTTP/2 connection (the
// client's preface and both ends' SETTINGS), so that the input is read as
// frames: hostile frame sizes, padding, header blocks that do not decode
// or overflow the table, CONTINUATION floods, streams reset and refused.
func FuzzHTTP2(f *testing.F) {
	for _, tc := range h2Cases {
		data, plan := encodePlan(tc.evs[2:]) // the cases begin with h2Conversation's two events
		f.Add(data, plan)
	}
	f.Fuzz(func(t *testing.T, data, plan []byte) {
		_, _, start := h2Conversation(0)
		fuzzEvents(t, append(start, decodePlan(data, plan)...))
	})
}

// fuzzEvents plays events whole, checking the bounds; when nothing was
// lost or malformed, also one byte a Feed, which must deliver the same.
func fuzzEvents(t *testing.T, evs []event) {
	{
		res := playChecked(t, fuzzConfig, evs, whole)
		require.NoError(t, checkCaps(fuzzConfig, res))
		if !wellFormed(evs, res.stats) {
			return
		}
		want, err := normalize(res.exchanges)
		require.NoError(t, err)
		bytewiseRes := playChecked(t, fuzzConfig, evs, bytewise)
		got, err := normalize(bytewiseRes.exchanges)
		require.NoError(t, err, "one byte a Feed")
		require.Equal(t, want, got, "one byte a Feed: exchanges differ from those fed whole:\n got %s\nwant %s", describe(got), describe(want))
		require.Equal(t, res.stats, bytewiseRes.stats, "one byte a Feed: stats")
	}
}

// TestHostileMemory feeds streams built to make a parser hold or allocate
// in proportion to its input, and checks that a Conn does neither.
func TestHostileMemory(t *testing.T) {
	const size = 4 << 20
	repeat := func(head, unit string) string {
		return head + strings.Repeat(unit, (size-len(head))/len(unit))
	}
	for _, tc := range []struct {
		name string
		dir  Dir
		data string
	}{
		{"endless header lines", Write, repeat("GET / HTTP/1.1\r\n", "X-A: 1\r\n")},
		{"one endless line", Write, repeat("GET /", "a")},
		{"endless trailer", Read, repeat("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n", "T: 1\r\n")},
		{"a Content-Length of 10^18 - 1", Read, repeat("HTTP/1.1 200 OK\r\nContent-Length: 999999999999999999\r\n\r\n", "x")},
		{"the largest chunk", Read, repeat("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffff\r\n", "x")},
		{"endless chunk extensions", Read, repeat("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;", "e")},
		{"a body delimited by the close", Read, repeat("HTTP/1.1 200 OK\r\n\r\n", "data: x\n\n")},
		{"endless garbage after a gap", Read, repeat("", "HTTP/1.x\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Config{})
			c.Feed(Write, []byte(get("/")), 0) // the role
			if tc.name == "endless garbage after a gap" {
				c.Gap(Read)
			}
			limit := bound(Config{})
			data := []byte(tc.data)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for i := 0; i < len(data); i += 64 << 10 {
				c.Feed(tc.dir, data[i:min(i+64<<10, len(data))], int64(i))
				n := c.Retained()
				require.LessOrEqual(t, n, limit, "after %d bytes the Conn retains %d, over the bound %d", i, n, limit)
			}
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			assert.LessOrEqual(t, alloc, uint64(limit), "%d bytes allocated feeding %d, over the bound %d", alloc, len(data), limit)
		})
	}
}
