package genai

// Property checks shared by the provider parsers' tests, the same ones
// openai_test.go runs for the OpenAI family, over any testdata/<dir> of
// transcripts and any parse function. Transcripts are parsed the way an
// agent does it (parseByDetect: Detect, then Parse), so their want files
// show the provider, the operation and a model taken from the path.

import (
	"bytes"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parseByDetect runs Detect and Parse on x. A failure shows in the Call,
// so that a transcript's want file catches it.
func parseByDetect(x *Exchange) *Call {
	ep, ok := Detect(x, nil)
	if !ok {
		return &Call{Provider: "(not detected)"}
	}
	c, err := Parse(x, ep)
	if err != nil {
		c.ErrorType = "(parse: " + err.Error() + ")"
	}
	return &c
}

// propTranscripts compares each transcript's Call with its want file
// (-update-transcripts rewrites them).
func propTranscripts(t *testing.T, dir string, parse func(*Exchange) *Call) {
	for _, tr := range loadTranscripts(t, dir) {
		t.Run(tr.name, func(t *testing.T) {
			got := callDump(parse(&tr.x))
			if *updateTranscripts {
				if got != tr.want {
					tr.writeWant(t, got)
				}
				return
			}
			assert.Equal(t, tr.want, got)
		})
	}
}

// propSplitAnywhere: feeding a transcript's response cut at any byte, or
// one byte per chunk, gives exactly the same Call; fed as one chunk, the
// same Call but for the timing.
func propSplitAnywhere(t *testing.T, dir string, parse func(*Exchange) *Call) {
	for _, tr := range loadTranscripts(t, dir) {
		want := callDump(parse(&tr.x))
		n := len(responseBody(&tr.x))
		for k := 0; k <= n; k++ {
			x := tr.x
			x.Chunks = rechunk(&tr.x, k)
			// Guarded: this runs for every byte of every transcript, and
			// testify's t.Helper is not free.
			if got := callDump(parse(&x)); got != want {
				require.Equal(t, want, got, "%s cut at %d", tr.name, k)
			}
		}
		cuts := make([]int, n)
		for i := range cuts {
			cuts[i] = i
		}
		x := tr.x
		x.Chunks = rechunk(&tr.x, cuts...)
		require.Equal(t, want, callDump(parse(&x)), "%s byte by byte", tr.name)
		if n == 0 {
			continue
		}
		x.Chunks = []Chunk{{At: tr.x.Chunks[len(tr.x.Chunks)-1].At, Data: responseBody(&tr.x)}}
		whole := parse(&x)
		ref := parse(&tr.x)
		whole.TimeToFirstChunk, whole.TimePerChunk = ref.TimeToFirstChunk, ref.TimePerChunk
		require.Equal(t, want, callDump(whole), "%s in one chunk", tr.name)
	}
}

// isStreamBody: the response is a stream of several JSON documents (an
// event stream, a JSON array), not one object.
func isStreamBody(body []byte) bool {
	b := bytes.TrimSpace(body)
	return len(b) > 0 && b[0] != '{'
}

// propTruncation cuts each transcript's request body, and its response
// body, at every byte: nothing panics, a field read at cut k is read,
// the same, at cut k+1, a cut call is Incomplete, and the whole body
// gives the whole call. Timing is left out (it changes as chunks
// arrive), and so is the usage of a stream, whose chunks may each
// report counts so far.
func propTruncation(t *testing.T, dir string, parse func(*Exchange) *Call) {
	for _, tr := range loadTranscripts(t, dir) {
		full := parse(&tr.x)
		fullFields := callFields(full)
		body := responseBody(&tr.x)
		streamed := isStreamBody(body)
		// check runs for every byte of every transcript: each check in
		// its loop is guarded by its condition, so that a check that
		// passes costs no call into testify (whose t.Helper is not free).
		check := func(what string, n int, cut func(k int) *Exchange) {
			prev := map[string]string{}
			for k := 0; k <= n; k++ {
				c := parse(cut(k))
				if k < n && !c.Incomplete {
					assert.True(t, c.Incomplete, "%s: %s cut at %d: not incomplete", tr.name, what, k)
				}
				got := callFields(c)
				if streamed && what == "response" && k < n {
					for f := range got {
						if strings.HasPrefix(f, "usage.") {
							delete(got, f)
						}
					}
				}
				for f, v := range prev {
					if got[f] != v {
						require.Equal(t, v, got[f], "%s: %s cut at %d: %s, was %q at %d", tr.name, what, k, f, v, k-1)
					}
				}
				for f, v := range got {
					if fullFields[f] != v {
						require.Equal(t, fullFields[f], v, "%s: %s cut at %d: %s, the whole says %q", tr.name, what, k, f, fullFields[f])
					}
				}
				prev = got
			}
			assert.Equal(t, fullFields, prev, "%s: %s whole", tr.name, what)
		}
		check("request", len(tr.x.RequestBody), func(k int) *Exchange {
			x := tr.x
			x.RequestBody = tr.x.RequestBody[:k]
			x.RequestTruncated = k < len(tr.x.RequestBody)
			return &x
		})
		check("response", len(body), func(k int) *Exchange {
			x := tr.x
			x.Chunks = nil
			for _, ch := range rechunk(&tr.x, k) {
				if len(responseBody(&x)) < k {
					x.Chunks = append(x.Chunks, ch)
				}
			}
			x.ResponseTruncated = k < len(body) || tr.x.ResponseTruncated
			return &x
		})
	}
}

// propTruncationEarly: a field is read as soon as its value is
// complete, whatever follows the cut.
type earlyField struct {
	transcript, upTo, field, want string
}

func propTruncationEarly(t *testing.T, dir string, parse func(*Exchange) *Call, tests []earlyField) {
	trs := map[string]*transcript{}
	for _, tr := range loadTranscripts(t, dir) {
		trs[tr.name] = tr
	}
	for _, tt := range tests {
		tr := trs[tt.transcript]
		require.NotNil(t, tr, "no transcript %s", tt.transcript)
		body := responseBody(&tr.x)
		i := bytes.Index(body, []byte(tt.upTo))
		require.GreaterOrEqual(t, i, 0, "%s: %q not in the body", tt.transcript, tt.upTo)
		k := i + len(tt.upTo)
		x := tr.x
		x.Chunks = nil
		for _, ch := range rechunk(&tr.x, k) {
			if len(responseBody(&x)) < k {
				x.Chunks = append(x.Chunks, ch)
			}
		}
		x.ResponseTruncated = true
		assert.Equal(t, tt.want, callFields(parse(&x))[tt.field], "%s cut after %s: %s", tt.transcript, tt.upTo, tt.field)
	}
}

// propNoText: no prompt, completion, argument or error message text, and
// no credential, ends up in a Call.
func propNoText(t *testing.T, dir string, parse func(*Exchange) *Call) {
	checked := 0
	for _, tr := range loadTranscripts(t, dir) {
		texts := map[string]bool{}
		textValues(tr.x.RequestBody, texts)
		body := responseBody(&tr.x)
		textValues(body, texts)
		for line := range bytes.Lines(body) {
			if d, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:")); ok {
				textValues(d, texts)
			}
		}
		for _, h := range []string{"Authorization", "Api-Key", "X-Api-Key", "X-Goog-Api-Key"} {
			for _, v := range tr.x.RequestHeader[h] {
				texts[v] = true
				texts[strings.TrimPrefix(v, "Bearer ")] = true
			}
		}
		if len(texts) == 0 {
			continue
		}
		checked++
		dump := callDump(parse(&tr.x))
		for s := range texts {
			assert.NotContains(t, dump, s, "%s: the Call holds %q", tr.name, s)
		}
	}
	assert.NotZero(t, checked, "testdata/%s: no text to look for", dir)
}

// propConcurrent: the parser is safe for concurrent use (its state is
// pooled).
func propConcurrent(t *testing.T, dir string, parse func(*Exchange) *Call) {
	trs := loadTranscripts(t, dir)
	want := make([]string, len(trs))
	for i, tr := range trs {
		want[i] = callDump(parse(&tr.x))
	}
	errs := make(chan string, 8)
	for g := range 8 {
		go func() {
			for r := range 20 {
				i := (g + r) % len(trs)
				if got := callDump(parse(&trs[i].x)); got != want[i] {
					errs <- trs[i].name + ":\n" + got
					return
				}
			}
			errs <- ""
		}()
	}
	for range 8 {
		assert.Empty(t, <-errs)
	}
}

// propHostile: endless lines, endless strings, deep nesting and huge
// numbers cost bounded memory and leave the Call sane. prefix is a
// response prefix that leads into a field the parser reads (a string
// value left open), num one that leads into a usage count. arrays: the
// parser reads JSON array streams piece by piece (other JSON bodies are
// held whole).
func propHostile(t *testing.T, parse func(*Exchange) *Call, path, prefix, num string, arrays bool) {
	n := hostileFlood
	const piece = 64 << 10
	chunked := func(prefix string, fill byte) []Chunk {
		out := []Chunk{{At: transcriptStart, Data: []byte(prefix)}}
		p := bytes.Repeat([]byte{fill}, piece)
		for range n / piece {
			out = append(out, Chunk{At: transcriptStart, Data: p})
		}
		return out
	}
	sse := Header{"Content-Type": {"text/event-stream"}}
	js := Header{"Content-Type": {"application/json"}}
	cases := []struct {
		name   string
		x      Exchange
		maxMem uint64
	}{
		{"endless sse line", Exchange{ResponseHeader: sse, Chunks: chunked("data: "+prefix, 'a')}, 4 << 20},
		{"endless sse event", Exchange{ResponseHeader: sse, Chunks: chunked("data: x", '\n')}, 4 << 20},
		{"endless comment", Exchange{ResponseHeader: sse, Chunks: chunked(":", ' ')}, 4 << 20},
		{"endless array element", Exchange{ResponseHeader: js, Chunks: chunked("["+prefix, 'a')}, 4 << 20},
		{"endless array nesting", Exchange{ResponseHeader: js, Chunks: chunked("[", '[')}, 4 << 20},
		{"endless array of empty objects", Exchange{ResponseHeader: js, Chunks: chunked("[{}", ',')}, 4 << 20},
		// A non-streamed body is held whole (the capture bounds it): the
		// scan itself adds nothing.
		{"deep json", Exchange{ResponseHeader: js, Chunks: []Chunk{{Data: append([]byte("{\"a\":"), bytes.Repeat([]byte("["), n)...)}}}, 1 << 20},
		{"huge number", Exchange{ResponseHeader: js, Chunks: []Chunk{{Data: append(append([]byte(num), bytes.Repeat([]byte("9"), n)...), "}}"...)}}}, 1 << 20},
		{"endless string", Exchange{ResponseHeader: js, Chunks: []Chunk{{Data: append([]byte(prefix), bytes.Repeat([]byte("a"), n)...)}}}, 1 << 20},
		{"huge request", Exchange{RequestBody: append(append([]byte(`{"model":"`), bytes.Repeat([]byte("m"), n)...), `","temperature":1e99999}`...)}, 1 << 20},
	}
	for _, tc := range cases {
		if strings.HasPrefix(tc.name, "endless array") && !arrays {
			continue
		}
		tc.x.Path = path
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c := parse(&tc.x)
		runtime.ReadMemStats(&after)
		assert.LessOrEqual(t, after.TotalAlloc-before.TotalAlloc, tc.maxMem, "%s: bytes allocated", tc.name)
		dump := callDump(c)
		assert.LessOrEqual(t, len(c.ResponseModel), maxCallString, "%s: %s", tc.name, dump)
		assert.LessOrEqual(t, len(c.RequestModel), maxCallString, "%s: %s", tc.name, dump)
		assert.LessOrEqual(t, len(c.ResponseID), maxCallString, "%s: %s", tc.name, dump)
		assert.Equal(t, NoUsage, c.Usage, "%s: %s", tc.name, dump)
		assert.True(t, math.IsNaN(c.Temperature), "%s: %s", tc.name, dump)
		if len(tc.x.Chunks) > 1 {
			assert.True(t, c.Incomplete, "%s: not incomplete", tc.name)
		}
	}
}

// fuzzParser parses arbitrary requests and responses, streamed or not,
// whole and cut into pieces: the same Call, bounded, no panic.
func fuzzParser(f *testing.F, dir, path string, parse func(*Exchange) *Call) {
	for _, tr := range loadTranscripts(f, dir) {
		f.Add(tr.x.RequestBody, responseBody(&tr.x), []byte{7, 100, 3}, strings.Contains(tr.x.ResponseHeader.Get("Content-Type"), "event-stream"))
	}
	f.Fuzz(func(t *testing.T, req, resp, cuts []byte, sse bool) {
		x := Exchange{Path: path, RequestBody: req, Start: transcriptStart, Status: 200,
			ResponseHeader: Header{"Content-Type": {"application/json"}}}
		if sse {
			x.ResponseHeader["Content-Type"] = []string{"text/event-stream"}
		}
		fuzzProvider(t, &x, resp, cuts, parse)
	})
}

// fuzzProvider checks one fuzzed exchange: the response in the given
// pieces, one arrival time, gives the same Call as whole; the Call stays
// within its bounds. The fuzzer runs it for every input: each check is
// guarded by its condition, so that a check that passes costs no call
// into testify (whose t.Helper is not free).
func fuzzProvider(t *testing.T, x *Exchange, resp, cuts []byte, parse func(*Exchange) *Call) {
	at := transcriptStart
	for _, p := range ssePieces(resp, cuts) {
		at = at.Add(time.Millisecond)
		x.Chunks = append(x.Chunks, Chunk{At: at, Data: p})
	}
	c := parse(x)
	y := *x
	y.Chunks = nil
	for _, ch := range x.Chunks {
		y.Chunks = append(y.Chunks, Chunk{At: at, Data: ch.Data})
	}
	cy := parse(&y)
	y.Chunks = []Chunk{{At: at, Data: resp}}
	if got, want := callDump(parse(&y)), callDump(cy); got != want {
		require.Equal(t, want, got, "the response whole, want the Call of its pieces")
	}
	for _, s := range append(append(append([]string{c.RequestModel, c.ResponseModel, c.ResponseID, c.ErrorType}, c.FinishReasons...), c.ToolCalls...), c.ToolDefinitions...) {
		if len(s) > maxCallString {
			require.LessOrEqual(t, len(s), maxCallString, "a %d-byte string", len(s))
		}
	}
	if len(c.FinishReasons) > maxCallList || len(c.ToolCalls) > maxCallList || len(c.ToolDefinitions) > maxCallList {
		require.LessOrEqual(t, len(c.FinishReasons), maxCallList, "a list over the bound")
		require.LessOrEqual(t, len(c.ToolCalls), maxCallList, "a list over the bound")
		require.LessOrEqual(t, len(c.ToolDefinitions), maxCallList, "a list over the bound")
	}
	if most := time.Duration(len(cuts)+1) * time.Millisecond; c.OutputChunks > 0 && (c.TimeToFirstChunk < 0 || c.TimeToFirstChunk > most) {
		require.GreaterOrEqual(t, c.TimeToFirstChunk, time.Duration(0), "time to first chunk")
		require.LessOrEqual(t, c.TimeToFirstChunk, most, "time to first chunk")
	}
	if c.OutputChunks < 2 && c.TimePerChunk != -1 {
		require.Equal(t, time.Duration(-1), c.TimePerChunk, "time per chunk with %d chunks", c.OutputChunks)
	}
	u := c.Usage
	for _, n := range []int64{u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheCreationTokens, u.ReasoningTokens} {
		if n < -1 {
			require.GreaterOrEqual(t, n, int64(-1), "usage %+v", u)
		}
	}
}
