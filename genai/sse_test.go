package genai

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type sseEv struct{ Type, Data, ID string }

func (e sseEv) String() string { return fmt.Sprintf("{%q %q %q}", e.Type, e.Data, e.ID) }

type sseResult struct {
	events        []sseEv
	pending       *sseEv
	skippedLines  int
	skippedEvents int
}

func (r sseResult) String() string {
	return fmt.Sprintf("events=%v pending=%v skipped=%d/%d", r.events, r.pending, r.skippedLines, r.skippedEvents)
}

// feedSSE runs the parser over chunks and collects everything.
func feedSSE(p *SSEParser, chunks [][]byte) sseResult {
	var r sseResult
	for _, c := range chunks {
		p.Feed(c)
		for p.Next() {
			ev := p.Event()
			r.events = append(r.events, sseEv{string(ev.Type), string(ev.Data), string(ev.ID)})
		}
	}
	r.skippedLines, r.skippedEvents = p.Skipped()
	if ev, ok := p.Flush(); ok {
		r.pending = &sseEv{string(ev.Type), string(ev.Data), string(ev.ID)}
	}
	l, e := p.Skipped()
	if l != r.skippedLines {
		panic("Flush changed the skipped-line count")
	}
	r.skippedEvents = e
	return r
}

// refSSE is a direct reading of the WHATWG rules over the whole stream,
// with the same limits and the same Flush extension.
func refSSE(s string, maxLine, maxEvent int) sseResult {
	var r sseResult
	s = strings.TrimPrefix(s, "\xEF\xBB\xBF")
	var data strings.Builder
	var typ, id string
	poisoned := false
	process := func(line string) {
		if len(line) > maxLine {
			r.skippedLines++
			poisoned = true
			return
		}
		if line == "" {
			switch {
			case poisoned:
				r.skippedEvents++
			case data.Len() > 0:
				d := data.String()
				r.events = append(r.events, sseEv{typ, d[:len(d)-1], id})
			}
			data.Reset()
			typ, poisoned = "", false
			return
		}
		if line[0] == ':' {
			return
		}
		field, value, found := strings.Cut(line, ":")
		if found {
			value = strings.TrimPrefix(value, " ")
		}
		switch field {
		case "data":
			if poisoned {
				return
			}
			if data.Len()+len(value)+1 > maxEvent {
				poisoned = true
				data.Reset()
				return
			}
			data.WriteString(value)
			data.WriteByte('\n')
		case "event":
			typ = value
		case "id":
			if !strings.Contains(value, "\x00") {
				id = value
			}
		}
	}
	for {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			break
		}
		process(s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
	if s != "" {
		process(s)
	}
	if poisoned {
		r.skippedEvents++
	} else if data.Len() > 0 {
		d := data.String()
		r.pending = &sseEv{typ, d[:len(d)-1], id}
	}
	return r
}

func TestSSESpecExamples(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		// The examples of the HTML standard, 9.2.6.
		{"data: YHOO\ndata: +2\ndata: 10\n\n", `events=[{"" "YHOO\n+2\n10" ""}] pending=<nil> skipped=0/0`},
		{": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n",
			`events=[{"" "first event" "1"} {"" "second event" ""} {"" " third event" ""}] pending=<nil> skipped=0/0`},
		{"data\n\ndata\ndata\n\ndata:", `events=[{"" "" ""} {"" "\n" ""}] pending={"" "" ""} skipped=0/0`},
		{"data:test\n\ndata: test\n\n", `events=[{"" "test" ""} {"" "test" ""}] pending=<nil> skipped=0/0`},
		// Event types, reset after each event; retry and unknown fields.
		{"event: add\ndata: 1\nretry: 10\nfoo: bar\n\ndata: 2\n\n", `events=[{"add" "1" ""} {"" "2" ""}] pending=<nil> skipped=0/0`},
		// No data: nothing dispatched, and the type does not leak.
		{"event: x\n\ndata: y\n\n", `events=[{"" "y" ""}] pending=<nil> skipped=0/0`},
		// Line endings.
		{"data: a\r\ndata: b\r\n\r\ndata: c\rdata: d\r\rdata: e\n\r\n", `events=[{"" "a\nb" ""} {"" "c\nd" ""} {"" "e" ""}] pending=<nil> skipped=0/0`},
		// A byte order mark, only at the start.
		{"\xEF\xBB\xBFdata: a\n\n\xEF\xBB\xBFdata: b\n\n", `events=[{"" "a" ""}] pending=<nil> skipped=0/0`},
		{"\xEF\xBBdata: a\n\n", `events=[] pending=<nil> skipped=0/0`},
		// Colons: only the first splits; one space is stripped.
		{"data:a:b\ndata:: c\n\n", `events=[{"" "a:b\n: c" ""}] pending=<nil> skipped=0/0`},
		// id with NUL is ignored; id persists.
		{"id: 7\ndata: a\n\nid: x\x00y\ndata: b\n\n", `events=[{"" "a" "7"} {"" "b" "7"}] pending=<nil> skipped=0/0`},
		// A stream cut mid-event.
		{"data: {\"a\":1}\n\ndata: {\"b\"", `events=[{"" "{\"a\":1}" ""}] pending={"" "{\"b\"" ""} skipped=0/0`},
		{"", `events=[] pending=<nil> skipped=0/0`},
	}
	for _, tt := range tests {
		ref := refSSE(tt.in, DefaultSSELimit, DefaultSSELimit)
		if !(strings.Contains(tt.in, "\xEF\xBB") && !strings.HasPrefix(tt.in, "\xEF\xBB\xBF")) {
			assert.Equal(t, tt.want, ref.String(), "refSSE(%q)", tt.in)
		}
		var p SSEParser
		got := feedSSE(&p, [][]byte{[]byte(tt.in)})
		assert.Equal(t, ref.String(), got.String(), "SSEParser(%q)", tt.in)
		// Every split point, and every byte in its own chunk.
		for k := 0; k <= len(tt.in); k++ {
			p.Reset()
			got := feedSSE(&p, [][]byte{[]byte(tt.in[:k]), []byte(tt.in[k:])})
			assert.Equal(t, ref.String(), got.String(), "SSEParser(%q | %q)", tt.in[:k], tt.in[k:])
		}
		var bytewise [][]byte
		for i := range len(tt.in) {
			bytewise = append(bytewise, []byte{tt.in[i]})
		}
		p.Reset()
		assert.Equal(t, ref.String(), feedSSE(&p, bytewise).String(), "SSEParser(%q bytewise)", tt.in)
	}
}

func TestSSEPartialBOM(t *testing.T) {
	// "\xEF\xBB" then "data: a": the two bytes start the first line, so
	// its field name is "\xEF\xBBdata" and nothing is dispatched.
	var p SSEParser
	r := feedSSE(&p, [][]byte{[]byte("\xEF"), []byte("\xBB"), []byte("data: a\n\ndata: b\n\n")})
	assert.Equal(t, `events=[{"" "b" ""}] pending=<nil> skipped=0/0`, r.String())
	// A stream that is only part of a byte order mark.
	p.Reset()
	r = feedSSE(&p, [][]byte{[]byte("\xEF\xBB")})
	assert.Nil(t, r.pending, "got %s", r)
	assert.Empty(t, r.events, "got %s", r)
}

func TestSSELimits(t *testing.T) {
	const maxLine, maxEvent = 16, 20
	in := "data: short\n\n" +
		"data: this line is far too long\ndata: x\n\n" + // oversize line
		"data: 0123456789\ndata: 0123456789\n\n" + // 11+11 > 20: oversize event
		": a comment that is far too long\ndata: y\n\n" + // oversize comment poisons too
		"data: ok\n\n"
	want := refSSE(in, maxLine, maxEvent)
	require.Equal(t, `events=[{"" "short" ""} {"" "ok" ""}] pending=<nil> skipped=2/3`, want.String(), "refSSE")
	for k := 0; k <= len(in); k++ {
		var p SSEParser
		p.SetLimits(maxLine, maxEvent)
		got := feedSSE(&p, [][]byte{[]byte(in[:k]), []byte(in[k:])})
		assert.Equal(t, want.String(), got.String(), "split at %d", k)
	}
}

// TestSSEHostile feeds an endless line and an endless event in 64 KiB
// chunks: the parser's buffers stay within the limits.
func TestSSEHostile(t *testing.T) {
	chunk := bytes.Repeat([]byte("a"), 64<<10)
	for _, tc := range []struct {
		name   string
		prefix string
		chunk  []byte
	}{
		{"endless-line", "data: ", chunk},
		{"endless-event", "", []byte(strings.Repeat("data: "+strings.Repeat("b", 1000)+"\n", 64))},
		{"endless-cr", "", bytes.Repeat([]byte("\r"), 64<<10)},
	} {
		var p SSEParser
		p.SetLimits(4096, 8192)
		p.Feed([]byte(tc.prefix))
		for p.Next() {
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range hostileFlood / len(tc.chunk) {
			p.Feed(tc.chunk)
			require.False(t, p.Next(), "%s: an event", tc.name)
			require.LessOrEqual(t, cap(p.line), 2*4096, "%s: buffers grew to %d/%d", tc.name, cap(p.line), cap(p.data))
			require.LessOrEqual(t, cap(p.data), 2*8192, "%s: buffers grew to %d/%d", tc.name, cap(p.line), cap(p.data))
		}
		runtime.ReadMemStats(&after)
		assert.LessOrEqual(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "%s: bytes allocated", tc.name)
		p.Feed([]byte("\n\ndata: after\n\n"))
		var got []string
		for p.Next() {
			got = append(got, string(p.Event().Data))
		}
		assert.Equal(t, []string{"after"}, got, "%s: after the flood", tc.name)
	}
}

// TestSSEAllocs: no allocation per event in steady state, whether events
// arrive whole, split, or with multi-line data.
func TestSSEAllocs(t *testing.T) {
	whole := []byte("data: {\"id\":\"x\",\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n")
	multi := []byte("event: e\nid: 1\ndata: a\ndata: b\r\n\r\n")
	var p SSEParser
	n := 0
	run := func(chunks ...[]byte) {
		for _, c := range chunks {
			p.Feed(c)
			for p.Next() {
				n += len(p.Event().Data)
			}
		}
	}
	run(whole, multi, whole[:10], whole[10:]) // warm up the buffers
	for name, chunks := range map[string][][]byte{
		"whole": {whole},
		"split": {whole[:10], whole[10:]},
		"multi": {multi[:5], multi[5:]},
	} {
		assert.Zero(t, testing.AllocsPerRun(1000, func() { run(chunks...) }), "%s: allocs per event", name)
	}
}

// ssePieces cuts b at the positions the fuzzer's bytes choose.
func ssePieces(b []byte, cuts []byte) [][]byte {
	var out [][]byte
	for _, c := range cuts {
		if len(b) == 0 {
			break
		}
		k := int(c) % (len(b) + 1)
		out = append(out, b[:k])
		b = b[k:]
	}
	return append(out, b)
}

func FuzzSSE(f *testing.F) {
	f.Add([]byte("data: YHOO\ndata: +2\ndata: 10\n\n"), []byte{3, 7}, uint8(0))
	f.Add([]byte(": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n"), []byte{1, 1, 1}, uint8(8))
	f.Add([]byte("\xEF\xBB\xBFevent: a\r\ndata: b\r\rdata: c\r\n\r\ndata: d"), []byte{1, 2, 3, 4}, uint8(3))
	f.Add([]byte("data: this line is too long for a small limit\n\ndata: ok\n\n"), []byte{20}, uint8(2))
	f.Fuzz(func(t *testing.T, in, cuts []byte, lim uint8) {
		maxLine, maxEvent := DefaultSSELimit, DefaultSSELimit
		if lim > 0 {
			maxLine, maxEvent = int(lim&15)+1, int(lim>>4)*2+1
		}
		want := refSSE(string(in), maxLine, maxEvent)
		var p SSEParser
		p.SetLimits(maxLine, maxEvent)
		got := feedSSE(&p, ssePieces(in, cuts))
		require.Equal(t, want.String(), got.String(), "SSEParser(%q, cut %v, limits %d/%d)", in, cuts, maxLine, maxEvent)
		require.LessOrEqual(t, cap(p.line), 2*maxLine+8, "buffers %d/%d over limits %d/%d", cap(p.line), cap(p.data), maxLine, maxEvent)
		require.LessOrEqual(t, cap(p.data), 2*maxEvent+8, "buffers %d/%d over limits %d/%d", cap(p.line), cap(p.data), maxLine, maxEvent)
	})
}

// TestSSERandomSplits cross-checks against the reference on generated
// streams cut at random points.
func TestSSERandomSplits(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	parts := []string{"data", "data:", "data: ", "event:", "id:", "retry: 1", ":", "x", " ", "\r", "\n", "\r\n", "\xEF\xBB\xBF", "\x00", "é"}
	for range 2000 {
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		in := []byte(b.String())
		cuts := make([]byte, r.IntN(6))
		for i := range cuts {
			cuts[i] = byte(r.Uint32())
		}
		for _, lim := range [][2]int{{DefaultSSELimit, DefaultSSELimit}, {4, 6}, {8, 3}} {
			want := refSSE(string(in), lim[0], lim[1])
			var p SSEParser
			p.SetLimits(lim[0], lim[1])
			got := feedSSE(&p, ssePieces(in, cuts))
			require.Equal(t, want.String(), got.String(), "SSEParser(%q, cut %v, limits %v)", in, cuts, lim)
		}
	}
}
