package genai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func parseOpenAI(x *Exchange) *Call {
	var c Call
	openAICall(x, &c)
	return &c
}

func TestOpenAITranscripts(t *testing.T) { propTranscripts(t, "openai", parseOpenAI) }

// rechunk cuts the response body at the given offsets in addition to
// the chunk boundaries; each piece keeps its chunk's arrival time.
func rechunk(x *Exchange, cuts ...int) []Chunk {
	var out []Chunk
	off := 0
	for _, ch := range x.Chunks {
		d := ch.Data
		for _, k := range cuts {
			if k > off && k < off+len(d) {
				n := k - off
				out = append(out, Chunk{At: ch.At, Data: d[:n]})
				d, off = d[n:], k
			}
		}
		out = append(out, Chunk{At: ch.At, Data: d})
		off += len(d)
	}
	return out
}

// TestOpenAISplitAnywhere: feeding a transcript's response cut at any
// byte, or one byte per chunk, gives exactly the same Call; fed as one
// chunk, the same Call but for the timing.
func TestOpenAISplitAnywhere(t *testing.T) { propSplitAnywhere(t, "openai", parseOpenAI) }

// callFields lists a Call's fields that are set, with their values;
// lists as one entry per element.
func callFields(c *Call) map[string]string {
	m := map[string]string{}
	set := func(k string, v any, ok bool) {
		if ok {
			m[k] = fmt.Sprint(v)
		}
	}
	set("request_model", c.RequestModel, c.RequestModel != "")
	set("temperature", c.Temperature, !math.IsNaN(c.Temperature))
	set("top_p", c.TopP, !math.IsNaN(c.TopP))
	set("max_tokens", c.MaxTokens, c.MaxTokens >= 0)
	set("choice_count", c.ChoiceCount, c.ChoiceCount >= 0)
	set("stream", c.Stream, c.Stream)
	set("response_id", c.ResponseID, c.ResponseID != "")
	set("response_model", c.ResponseModel, c.ResponseModel != "")
	set("error_type", c.ErrorType, c.ErrorType != "")
	set("usage.input", c.Usage.InputTokens, c.Usage.InputTokens >= 0)
	set("usage.output", c.Usage.OutputTokens, c.Usage.OutputTokens >= 0)
	set("usage.cache_read", c.Usage.CacheReadTokens, c.Usage.CacheReadTokens >= 0)
	set("usage.cache_creation", c.Usage.CacheCreationTokens, c.Usage.CacheCreationTokens >= 0)
	set("usage.reasoning", c.Usage.ReasoningTokens, c.Usage.ReasoningTokens >= 0)
	for name, l := range map[string][]string{"tool_definitions": c.ToolDefinitions, "finish_reasons": c.FinishReasons, "tool_calls": c.ToolCalls} {
		for i, v := range l {
			m[fmt.Sprintf("%s[%d]", name, i)] = v
		}
	}
	return m
}

// TestOpenAITruncation cuts each transcript's request body, and its
// response body, at every byte: nothing panics, a field read at cut k is
// read, the same, at cut k+1, a cut call is Incomplete, and the whole
// body gives the whole call. Timing is left out (it changes as chunks
// arrive), and so is a stream's usage (see below).
func TestOpenAITruncation(t *testing.T) { propTruncation(t, "openai", parseOpenAI) }

func maps2Equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// textValues collects the strings under keys that hold prompt or
// completion text, in a JSON document.
func textValues(data []byte, out map[string]bool) {
	var v any
	if json.Unmarshal(data, &v) != nil {
		return
	}
	var walk func(v any, key string)
	walk = func(v any, key string) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				walk(e, k)
			}
		case []any:
			for _, e := range v {
				walk(e, key)
			}
		case string:
			switch key {
			case "content", "text", "input", "prompt", "instructions", "arguments", "delta", "reasoning_content", "message", "error", "description":
				if len(v) >= 4 {
					out[v] = true
				}
			}
		}
	}
	walk(v, "")
}

// TestOpenAINoText: no prompt, completion, argument or error message
// text, and no credential, ends up in a Call.
func TestOpenAINoText(t *testing.T) { propNoText(t, "openai", parseOpenAI) }

func TestOpenAIOperation(t *testing.T) {
	for path, want := range map[string]string{
		"/v1/chat/completions": "chat",
		"/openai/deployments/gpt4o/chat/completions?api-version=2024-06-01": "chat",
		"/v1/completions":     "text_completion",
		"/v1/embeddings":      "embeddings",
		"/v1/responses":       "chat",
		"/api/v1/responses/":  "chat",
		"/v1/models":          "",
		"/v1/embeddings?x=/y": "embeddings",
	} {
		assert.Equal(t, want, openaiOperation(path), "openaiOperation(%q)", path)
	}
	// The detector's operation is kept.
	c := Call{Provider: "openai", Operation: "generate_content"}
	openAICall(&Exchange{Path: "/v1/chat/completions"}, &c)
	assert.Equal(t, "openai", c.Provider, "Provider changed")
	assert.Equal(t, "generate_content", c.Operation, "Operation changed")
}

// TestOpenAIEdges covers what the transcripts do not.
func TestOpenAIEdges(t *testing.T) {
	sse := Header{"Content-Type": {"text/event-stream"}}
	js := Header{"Content-Type": {"application/json"}}
	stream := func(s string) []Chunk {
		return []Chunk{{At: transcriptStart.Add(time.Second), Data: []byte(s)}}
	}
	tests := []struct {
		name string
		x    Exchange
		want func(c *Call) string // "" when fine
	}{
		{"gzip", Exchange{ResponseHeader: Header{"Content-Encoding": {"gzip"}}, Chunks: stream("\x1f\x8b")},
			func(c *Call) string { return cond(c.Incomplete, "not incomplete") }},
		{"json error on a stream", Exchange{ResponseHeader: sse, Status: 401,
			Chunks: stream(`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)},
			func(c *Call) string {
				return cond(c.ErrorType == "invalid_request_error" && !c.Incomplete && !c.Stream, "%+v", c)
			}},
		{"litellm None type", Exchange{ResponseHeader: js, Status: 400,
			Chunks: stream(`{"error":{"message":"x","type":"None","param":"None","code":"400"}}`)},
			func(c *Call) string { return cond(c.ErrorType == "400", "%q", c.ErrorType) }},
		{"error null", Exchange{ResponseHeader: js, Chunks: stream(`{"id":"r","error":null}`)},
			func(c *Call) string { return cond(c.ErrorType == "" && c.ResponseID == "r", "%+v", c) }},
		{"sse error event", Exchange{ResponseHeader: sse, Chunks: stream("event: error\ndata: {\"message\":\"overloaded\"}\n\n")},
			func(c *Call) string { return cond(c.ErrorType == "error" && !c.Incomplete, "%+v", c) }},
		{"responses error event", Exchange{ResponseHeader: sse, Chunks: stream(`data: {"type":"error","code":"ERR_SOMETHING","message":"x","param":null,"sequence_number":1}` + "\n\n")},
			func(c *Call) string { return cond(c.ErrorType == "ERR_SOMETHING", "%q", c.ErrorType) }},
		{"escaped model", Exchange{ResponseHeader: js, Chunks: stream(`{"model":"a\/b\u00e9"}`)},
			func(c *Call) string { return cond(c.ResponseModel == "a/bé", "%q", c.ResponseModel) }},
		{"long model", Exchange{ResponseHeader: js, Chunks: stream(`{"model":"` + strings.Repeat("é", 1000) + `"}`)},
			func(c *Call) string {
				return cond(len(c.ResponseModel) <= maxCallString && len(c.ResponseModel) >= maxCallString-1 && strings.Trim(c.ResponseModel, "é") == "", "%d bytes", len(c.ResponseModel))
			}},
		{"many finish reasons", Exchange{ResponseHeader: js, Chunks: stream(`{"choices":[` + strings.Repeat(`{"finish_reason":"stop"},`, 1000) + `{}]}`)},
			func(c *Call) string { return cond(len(c.FinishReasons) == maxCallList, "%d", len(c.FinishReasons)) }},
		{"negative and huge usage", Exchange{ResponseHeader: js, Chunks: stream(`{"usage":{"prompt_tokens":-3,"completion_tokens":1e400,"prompt_tokens_details":{"cached_tokens":99999999999999999999999}}}`)},
			func(c *Call) string { return cond(c.Usage == NoUsage, "%+v", c.Usage) }},
		{"done without blank line", Exchange{ResponseHeader: sse, Chunks: stream("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\ndata: [DONE]")},
			func(c *Call) string { return cond(!c.Incomplete && c.OutputChunks == 1, "%+v", c) }},
		{"no end time", Exchange{Start: transcriptStart, ResponseHeader: js, Chunks: stream(`{}`)},
			func(c *Call) string { return cond(c.Duration == time.Second, "%v", c.Duration) }},
		{"sniffed json", Exchange{Chunks: stream(" \n{\"model\":\"m\"}")},
			func(c *Call) string { return cond(c.ResponseModel == "m" && !c.Stream, "%+v", c) }},
		{"sniffed sse", Exchange{Chunks: stream("data: {\"model\":\"m\"}\n\ndata: [DONE]\n\n")},
			func(c *Call) string { return cond(c.ResponseModel == "m" && c.Stream && !c.Incomplete, "%+v", c) }},
		{"request stream false", Exchange{RequestBody: []byte(`{"stream":false,"n":3,"functions":[{"name":"f"}],"max_tokens":null,"max_output_tokens":5}`)},
			func(c *Call) string {
				return cond(!c.Stream && c.ChoiceCount == 3 && slices.Equal(c.ToolDefinitions, []string{"f"}) && c.MaxTokens == 5, "%+v", c)
			}},
		{"legacy function call", Exchange{ResponseHeader: js, Chunks: stream(`{"choices":[{"message":{"function_call":{"name":"lookup","arguments":"{}"}},"finish_reason":"function_call"}]}`)},
			func(c *Call) string {
				return cond(slices.Equal(c.ToolCalls, []string{"lookup"}) && slices.Equal(c.FinishReasons, []string{"function_call"}), "%+v", c)
			}},
	}
	for _, tt := range tests {
		assert.Empty(t, tt.want(parseOpenAI(&tt.x)), tt.name)
	}
}

func cond(ok bool, format string, args ...any) string {
	if ok {
		return ""
	}
	return fmt.Sprintf(format, args...)
}

// streamOf builds a chat stream of n content chunks, one event per
// chunk, 10ms apart, with a final usage chunk and [DONE].
func streamOf(n int) *Exchange {
	x := &Exchange{
		Method: "POST", Host: "api.openai.com", Path: "/v1/chat/completions",
		RequestHeader:  Header{"Content-Type": {"application/json"}},
		RequestBody:    []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello!"}],"stream":true,"stream_options":{"include_usage":true}}`),
		Start:          transcriptStart,
		Status:         200,
		ResponseHeader: Header{"Content-Type": {"text/event-stream; charset=utf-8"}},
	}
	words := []string{"Hello", " there", "!", " How", " can", " I", " help", " you", " today", "?"}
	at := transcriptStart.Add(200 * time.Millisecond)
	for i := range n {
		d := fmt.Sprintf(`data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_06737a9306","choices":[{"index":0,"delta":{"content":%q},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"x5Yq"}`+"\n\n", words[i%len(words)])
		x.Chunks = append(x.Chunks, Chunk{At: at, Data: []byte(d)})
		at = at.Add(10 * time.Millisecond)
	}
	x.Chunks = append(x.Chunks,
		Chunk{At: at, Data: []byte(`data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_06737a9306","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}` + "\n\n")},
		Chunk{At: at, Data: []byte(`data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_06737a9306","choices":[],"usage":{"prompt_tokens":19,"completion_tokens":1000,"total_tokens":1019,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}` + "\n\n")},
		Chunk{At: at, Data: []byte("data: [DONE]\n\n")})
	x.End = at
	return x
}

func TestOpenAIStreamOf(t *testing.T) {
	c := parseOpenAI(streamOf(1000))
	dump := callDump(c)
	assert.Equal(t, 1000, c.OutputChunks, dump)
	assert.Equal(t, 200*time.Millisecond, c.TimeToFirstChunk, dump)
	assert.Equal(t, 10*time.Millisecond, c.TimePerChunk, dump)
	assert.Equal(t, int64(1000), c.Usage.OutputTokens, dump)
	assert.False(t, c.Incomplete, dump)
	assert.Equal(t, "gpt-4o-mini-2024-07-18", c.ResponseModel, dump)
	assert.Equal(t, []string{"stop"}, c.FinishReasons, dump)
}

// TestOpenAIAllocs: a 1,000-chunk stream costs a handful of allocations
// in all (the Call's strings and lists), none per chunk.
func TestOpenAIAllocs(t *testing.T) {
	x := streamOf(1000)
	var c Call
	openAICall(x, &c)
	assert.LessOrEqual(t, testing.AllocsPerRun(20, func() { openAICall(x, &c) }), 10.0, "allocs for 1,000 chunks")
}

// TestOpenAIHostile: endless lines, endless strings, deep nesting and
// huge numbers cost bounded memory and leave the Call sane.
func TestOpenAIHostile(t *testing.T) {
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
		{"endless sse line", Exchange{ResponseHeader: sse, Chunks: chunked("data: {\"model\":\"", 'a')}, 4 << 20},
		{"endless sse event", Exchange{ResponseHeader: sse, Chunks: chunked("data: x", '\n')}, 4 << 20},
		{"endless comment", Exchange{ResponseHeader: sse, Chunks: chunked(":", ' ')}, 4 << 20},
		// A non-streamed body is held whole (the capture bounds it): the
		// scan itself adds nothing.
		{"deep json", Exchange{ResponseHeader: js, Chunks: []Chunk{{Data: bytes.Repeat([]byte("["), n)}}}, 1 << 20},
		{"deep json on a path", Exchange{ResponseHeader: js, Chunks: []Chunk{{Data: append([]byte(`{"choices":[{"message":{"tool_calls":[{"function":`), bytes.Repeat([]byte(`{"name":`), n/8)...)}}}, 1 << 20},
		{"huge number", Exchange{ResponseHeader: js, Chunks: []Chunk{{Data: append(append([]byte(`{"usage":{"prompt_tokens":`), bytes.Repeat([]byte("9"), n)...), "}}"...)}}}, 1 << 20},
		{"endless string", Exchange{ResponseHeader: js, Chunks: []Chunk{{Data: append([]byte(`{"model":"`), bytes.Repeat([]byte("a"), n)...)}}}, 1 << 20},
		{"huge request", Exchange{RequestBody: append(append([]byte(`{"model":"`), bytes.Repeat([]byte("m"), n)...), `","temperature":1e99999}`...)}, 1 << 20},
	}
	for _, tc := range cases {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c := parseOpenAI(&tc.x)
		runtime.ReadMemStats(&after)
		assert.LessOrEqual(t, after.TotalAlloc-before.TotalAlloc, tc.maxMem, "%s: bytes allocated", tc.name)
		dump := callDump(c)
		assert.LessOrEqual(t, len(c.ResponseModel), maxCallString, "%s: %s", tc.name, dump)
		assert.LessOrEqual(t, len(c.RequestModel), maxCallString, "%s: %s", tc.name, dump)
		assert.Equal(t, NoUsage, c.Usage, "%s: %s", tc.name, dump)
		assert.True(t, math.IsNaN(c.Temperature), "%s: %s", tc.name, dump)
		if tc.x.ResponseHeader.Get("Content-Type") == "text/event-stream" {
			assert.True(t, c.Incomplete, "%s: not incomplete", tc.name)
		}
	}
}

// FuzzOpenAI parses arbitrary requests and responses, streamed or not,
// whole and cut into pieces: same Call, bounded, no panic.
func FuzzOpenAI(f *testing.F) { fuzzParser(f, "openai", "/v1/chat/completions", parseOpenAI) }

// TestOpenAIConcurrent: openAICall is safe for concurrent use (the
// parsers' state is pooled).
func TestOpenAIConcurrent(t *testing.T) { propConcurrent(t, "openai", parseOpenAI) }

// TestOpenAITruncationEarly: a field is read as soon as its value is
// complete, whatever follows the cut.
func TestOpenAITruncationEarly(t *testing.T) {
	trs := map[string]*transcript{}
	for _, tr := range loadTranscripts(t, "openai") {
		trs[tr.name] = tr
	}
	tests := []struct {
		transcript, upTo, field, want string
	}{
		{"chat_basic", `"id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT"`, "response_id", "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT"},
		{"chat_basic", `"model": "gpt-4o-2024-08-06"`, "response_model", "gpt-4o-2024-08-06"},
		{"chat_basic", `"finish_reason": "stop"`, "finish_reasons[0]", "stop"},
		{"chat_basic", `"prompt_tokens": 19,`, "usage.input", "19"},
		{"chat_basic", `"cached_tokens": 0,`, "usage.cache_read", "0"},
		{"chat_reasoning_n2", `"finish_reason":"length"`, "finish_reasons[1]", "length"},
		{"chat_reasoning_n2", `"reasoning_tokens":1536,`, "usage.reasoning", "1536"},
		{"chat_error_4xx", `"type": "invalid_request_error"`, "error_type", "invalid_request_error"},
		{"responses_function_call", `"status": "completed"`, "finish_reasons[0]", "stop"},
		{"responses_function_call", `"name": "get_current_weather"`, "tool_calls[0]", "get_current_weather"},
		{"embeddings", `"prompt_tokens": 8,`, "usage.input", "8"},
		{"chat_stream_usage", `"model":"gpt-4o-mini-2024-07-18"`, "response_model", "gpt-4o-mini-2024-07-18"},
		{"chat_stream_tools", `"name":"get_weather"`, "tool_calls[0]", "get_weather"},
		{"responses_stream_tool", `"cached_tokens":1920}`, "usage.cache_read", "1920"},
	}
	for _, tt := range tests {
		tr := trs[tt.transcript]
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
		assert.Equal(t, tt.want, callFields(parseOpenAI(&x))[tt.field], "%s cut after %s: %s", tt.transcript, tt.upTo, tt.field)
	}
	// The same for requests.
	tr := trs["chat_basic"]
	for upTo, field := range map[string]string{`"model":"gpt-4o"`: "request_model", `"temperature":0.7,`: "temperature"} {
		k := bytes.Index(tr.x.RequestBody, []byte(upTo)) + len(upTo)
		x := tr.x
		x.RequestBody, x.RequestTruncated = tr.x.RequestBody[:k], true
		assert.Contains(t, callFields(parseOpenAI(&x)), field, "request cut after %s: no %s", upTo, field)
	}
}
