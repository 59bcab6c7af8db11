package genai

import (
	"bytes"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func parseOllama(x *Exchange) *Call {
	var c Call
	ollamaCall(x, &c)
	return &c
}

func TestOllamaTranscripts(t *testing.T)   { propTranscripts(t, "ollama", parseByDetect) }
func TestOllamaSplitAnywhere(t *testing.T) { propSplitAnywhere(t, "ollama", parseByDetect) }
func TestOllamaTruncation(t *testing.T)    { propTruncation(t, "ollama", parseByDetect) }
func TestOllamaNoText(t *testing.T)        { propNoTextRaw(t, "ollama", parseOllama) }

func TestOllamaConcurrent(t *testing.T) { propConcurrent(t, "ollama", parseOllama) }

// TestOllamaTruncationEarly: a field is read as soon as its value is
// complete, whatever follows the cut.
func TestOllamaTruncationEarly(t *testing.T) {
	propTruncationEarly(t, "ollama", parseOllama, []earlyField{
		{"chat_basic", `"model":"llama3.1"`, "response_model", "llama3.1"},
		{"chat_basic", `"done_reason":"stop"`, "finish_reasons[0]", "stop"},
		{"chat_basic", `"prompt_eval_count":34,`, "usage.input", "34"},
		{"chat_tools", `"name": "get_current_weather"`, "tool_calls[0]", "get_current_weather"},
		{"error_404", `"error":"model \"llama3.3\" not found, try pulling it first"`, "error_type", "error"},
		{"generate_stream", `"response":" sky","done":false}`, "response_model", "llama3.2"},
		{"embed", `"prompt_eval_count":8`, "usage.input", ""}, // a number at the cut may go on
	})
}

// TestOllamaParse: Parse sends every Ollama API to ollamaCall.
func TestOllamaParse(t *testing.T) {
	for _, tr := range loadTranscripts(t, "ollama") {
		ep, ok := Detect(&tr.x, nil)
		require.True(t, ok, "%s: not detected", tr.name)
		c, err := Parse(&tr.x, ep)
		require.NoError(t, err, tr.name)
		want := parseOllama(&tr.x)
		want.Provider = "ollama"
		assert.Equal(t, callDump(want), callDump(&c), "%s: Parse, want ollamaCall's", tr.name)
	}
}

// TestOllamaEdges covers what the transcripts do not.
func TestOllamaEdges(t *testing.T) {
	nd := Header{"Content-Type": {"application/x-ndjson"}}
	js := Header{"Content-Type": {"application/json"}}
	at := transcriptStart.Add(time.Second)
	body := func(s string) []Chunk { return []Chunk{{At: at, Data: []byte(s)}} }
	tests := []struct {
		name string
		x    Exchange
		want func(c *Call) string
	}{
		{"operation from the path", Exchange{Path: "/api/generate?x=1"},
			func(c *Call) string { return cond(c.Operation == "text_completion", "%q", c.Operation) }},
		{"stream null is the default", Exchange{Path: "/api/chat", RequestBody: []byte(`{"model":"m","stream":null}`)},
			func(c *Call) string { return cond(c.Stream, "%+v", c) }},
		{"stream false", Exchange{Path: "/api/chat", RequestBody: []byte(`{"model":"m","stream":false}`)},
			func(c *Call) string { return cond(!c.Stream, "%+v", c) }},
		{"embed never streams", Exchange{Path: "/api/embed", RequestBody: []byte(`{"model":"m","input":"x"}`)},
			func(c *Call) string { return cond(!c.Stream, "%+v", c) }},
		{"num_predict -1 is no limit", Exchange{Path: "/api/chat", RequestBody: []byte(`{"options":{"num_predict":-1}}`)},
			func(c *Call) string { return cond(c.MaxTokens == -1, "%d", c.MaxTokens) }},
		{"gzip", Exchange{Path: "/api/chat", ResponseHeader: Header{"Content-Encoding": {"gzip"}}, Chunks: body("\x1f\x8b")},
			func(c *Call) string { return cond(c.Incomplete, "not incomplete") }},
		{"crlf lines and blank lines", Exchange{Path: "/api/chat", ResponseHeader: nd,
			Chunks: body("{\"message\":{\"content\":\"a\"},\"done\":false}\r\n\r\n{\"done\":true,\"done_reason\":\"stop\",\"eval_count\":1}\r\n")},
			func(c *Call) string {
				return cond(c.OutputChunks == 1 && !c.Incomplete && c.Usage.OutputTokens == 1 && slices.Equal(c.FinishReasons, []string{"stop"}), "%+v", c)
			}},
		{"last line without LF", Exchange{Path: "/api/chat", ResponseHeader: nd, Chunks: body(`{"done":true,"done_reason":"stop"}`)},
			func(c *Call) string { return cond(!c.Incomplete && len(c.FinishReasons) == 1, "%+v", c) }},
		{"sniffed ndjson from a streamed request", Exchange{Path: "/api/chat", RequestBody: []byte(`{"model":"m"}`),
			Chunks: body("{\"message\":{\"content\":\"a\"},\"done\":false}\n{\"done\":true}\n")},
			func(c *Call) string { return cond(c.OutputChunks == 1 && !c.Incomplete && c.Stream, "%+v", c) }},
		{"openai-style error object", Exchange{Path: "/api/chat", ResponseHeader: js, Status: 500,
			Chunks: body(`{"error":{"message":"boom","type":"api_error","code":"500"}}`)},
			func(c *Call) string { return cond(c.ErrorType == "api_error", "%q", c.ErrorType) }},
		{"error code without type", Exchange{Path: "/api/chat", ResponseHeader: js, Chunks: body(`{"error":{"code":"x"}}`)},
			func(c *Call) string { return cond(c.ErrorType == "x", "%q", c.ErrorType) }},
		{"error null", Exchange{Path: "/api/chat", ResponseHeader: js, Chunks: body(`{"model":"m","error":null}`)},
			func(c *Call) string { return cond(c.ErrorType == "" && c.ResponseModel == "m", "%+v", c) }},
		{"thinking in generate", Exchange{Path: "/api/generate", ResponseHeader: nd,
			Chunks: body("{\"thinking\":\"hmm\",\"response\":\"\",\"done\":false}\n{\"response\":\"\",\"done\":true}\n")},
			func(c *Call) string { return cond(c.OutputChunks == 1 && !c.Incomplete, "%+v", c) }},
		{"huge counts", Exchange{Path: "/api/chat", ResponseHeader: js, Chunks: body(`{"prompt_eval_count":1e400,"eval_count":-5}`)},
			func(c *Call) string { return cond(c.Usage == NoUsage, "%+v", c.Usage) }},
	}
	for _, tt := range tests {
		tt.x.Start = transcriptStart
		assert.Empty(t, tt.want(parseOllama(&tt.x)), tt.name)
	}
}

// TestOllamaLongLine: a line longer than the limit is read up to the
// limit, whatever the chunking, and makes the call incomplete.
func TestOllamaLongLine(t *testing.T) {
	line := `{"model":"m","done":true,"done_reason":"stop","context":[` + strings.Repeat("1,", maxNDJSONLine/2) + `1],"eval_count":3}` + "\n"
	x := Exchange{Path: "/api/generate", ResponseHeader: Header{"Content-Type": {"application/x-ndjson"}},
		Chunks: []Chunk{{At: transcriptStart, Data: []byte(line)}}}
	want := callDump(parseOllama(&x))
	c := parseOllama(&x)
	assert.Equal(t, "m", c.ResponseModel, want)
	assert.True(t, c.Incomplete, want)
	assert.Equal(t, int64(-1), c.Usage.OutputTokens, want)
	assert.Len(t, c.FinishReasons, 1, want)
	for _, k := range []int{1, 100, maxNDJSONLine - 1, maxNDJSONLine, maxNDJSONLine + 1, len(line) - 1} {
		x.Chunks = []Chunk{{At: transcriptStart, Data: []byte(line[:k])}, {At: transcriptStart, Data: []byte(line[k:])}}
		assert.Equal(t, want, callDump(parseOllama(&x)), "cut at %d", k)
	}
}

// streamOfOllama builds a chat stream of n content lines, one per chunk,
// 10ms apart, and the final line.
func streamOfOllama(n int) *Exchange {
	x := &Exchange{Path: "/api/chat", Start: transcriptStart, Status: 200,
		RequestBody:    []byte(`{"model":"llama3.2","messages":[{"role":"user","content":"Hi"}]}`),
		ResponseHeader: Header{"Content-Type": {"application/x-ndjson"}}}
	at := transcriptStart.Add(200 * time.Millisecond)
	for range n {
		x.Chunks = append(x.Chunks, Chunk{At: at, Data: []byte(`{"model":"llama3.2","created_at":"2025-06-01T12:00:00.41Z","message":{"role":"assistant","content":" word"},"done":false}` + "\n")})
		at = at.Add(10 * time.Millisecond)
	}
	x.Chunks = append(x.Chunks, Chunk{At: at, Data: []byte(`{"model":"llama3.2","created_at":"2025-06-01T12:00:00.48Z","message":{"role":"assistant","content":""},"done_reason":"stop","done":true,"total_duration":480210000,"load_duration":1334875,"prompt_eval_count":26,"prompt_eval_duration":342546000,"eval_count":1000,"eval_duration":70000000}` + "\n")})
	x.End = at
	return x
}

func TestOllamaStreamOf(t *testing.T) {
	c := parseOllama(streamOfOllama(1000))
	dump := callDump(c)
	assert.Equal(t, 1000, c.OutputChunks, dump)
	assert.Equal(t, 200*time.Millisecond, c.TimeToFirstChunk, dump)
	assert.Equal(t, 10*time.Millisecond, c.TimePerChunk, dump)
	assert.Equal(t, int64(1000), c.Usage.OutputTokens, dump)
	assert.False(t, c.Incomplete, dump)
	assert.Equal(t, "llama3.2", c.ResponseModel, dump)
	assert.True(t, c.Stream, dump)
}

// TestOllamaAllocs: no allocation per line.
func TestOllamaAllocs(t *testing.T) {
	x := streamOfOllama(1000)
	var c Call
	ollamaCall(x, &c)
	assert.LessOrEqual(t, testing.AllocsPerRun(20, func() { ollamaCall(x, &c) }), 10.0, "allocs for 1,000 lines")
}

// TestOllamaHostile: endless lines, deep nesting and huge numbers cost
// bounded memory.
func TestOllamaHostile(t *testing.T) {
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
	nd := Header{"Content-Type": {"application/x-ndjson"}}
	js := Header{"Content-Type": {"application/json"}}
	cases := []struct {
		name   string
		x      Exchange
		maxMem uint64
	}{
		{"endless line", Exchange{ResponseHeader: nd, Chunks: chunked(`{"model":"`, 'a')}, 3 * maxNDJSONLine},
		{"endless blank lines", Exchange{ResponseHeader: nd, Chunks: chunked("", '\n')}, 1 << 20},
		{"deep line", Exchange{ResponseHeader: nd, Chunks: chunked(`{"message":`, '[')}, 3 * maxNDJSONLine},
		{"deep json", Exchange{ResponseHeader: js, Chunks: []Chunk{{Data: bytes.Repeat([]byte("["), n)}}}, 1 << 20},
		{"huge number", Exchange{ResponseHeader: js, Chunks: []Chunk{{Data: append(append([]byte(`{"eval_count":`), bytes.Repeat([]byte("9"), n)...), "}"...)}}}, 1 << 20},
		{"huge request", Exchange{RequestBody: append(append([]byte(`{"model":"`), bytes.Repeat([]byte("m"), n)...), `","options":{"temperature":1e99999}}`...)}, 1 << 20},
	}
	for _, tc := range cases {
		tc.x.Path = "/api/chat"
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c := parseOllama(&tc.x)
		runtime.ReadMemStats(&after)
		assert.LessOrEqual(t, after.TotalAlloc-before.TotalAlloc, tc.maxMem, "%s: bytes allocated", tc.name)
		dump := callDump(c)
		assert.LessOrEqual(t, len(c.ResponseModel), maxCallString, "%s: %s", tc.name, dump)
		assert.LessOrEqual(t, len(c.RequestModel), maxCallString, "%s: %s", tc.name, dump)
		assert.Equal(t, NoUsage, c.Usage, "%s: %s", tc.name, dump)
		assert.True(t, math.IsNaN(c.Temperature), "%s: %s", tc.name, dump)
		if tc.x.ResponseHeader.Get("Content-Type") == "application/x-ndjson" {
			assert.True(t, c.Incomplete, "%s: not incomplete", tc.name)
		}
	}
}

// FuzzOllama parses arbitrary requests and responses, streamed or not,
// whole and cut into pieces: the same Call, bounded, no panic.
func FuzzOllama(f *testing.F) {
	for _, tr := range loadTranscripts(f, "ollama") {
		f.Add(tr.x.RequestBody, responseBody(&tr.x), []byte{7, 100, 3}, strings.Contains(tr.x.ResponseHeader.Get("Content-Type"), "ndjson"))
	}
	f.Fuzz(func(t *testing.T, req, resp, cuts []byte, stream bool) {
		x := Exchange{Path: "/api/chat", RequestBody: req, Start: transcriptStart, Status: 200,
			ResponseHeader: Header{"Content-Type": {"application/json"}}}
		if stream {
			x.ResponseHeader["Content-Type"] = []string{"application/x-ndjson"}
		}
		fuzzProvider(t, &x, resp, cuts, parseOllama)
	})
}
