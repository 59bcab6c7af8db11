package genai

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func parseAnthropic(x *Exchange) *Call {
	var c Call
	anthropicCall(x, &c)
	return &c
}

func TestAnthropicTranscripts(t *testing.T) { propTranscripts(t, "anthropic", parseByDetect) }

func TestAnthropicSplitAnywhere(t *testing.T) { propSplitAnywhere(t, "anthropic", parseByDetect) }

func TestAnthropicTruncation(t *testing.T) { propTruncation(t, "anthropic", parseByDetect) }

func TestAnthropicNoText(t *testing.T) { propNoText(t, "anthropic", parseAnthropic) }

func TestAnthropicConcurrent(t *testing.T) { propConcurrent(t, "anthropic", parseAnthropic) }

func TestAnthropicTruncationEarly(t *testing.T) {
	propTruncationEarly(t, "anthropic", parseAnthropic, []earlyField{
		{"messages_basic", `"id": "msg_013Zva2CMHLNnXjNJJKqJ2EF"`, "response_id", "msg_013Zva2CMHLNnXjNJJKqJ2EF"},
		{"messages_basic", `"model": "claude-sonnet-4-20250514"`, "response_model", "claude-sonnet-4-20250514"},
		{"messages_basic", `"stop_reason": "end_turn"`, "finish_reasons[0]", "end_turn"},
		// The input sum waits for the cache counts that follow it.
		{"messages_basic", `"input_tokens": 10,`, "usage.input", ""},
		{"messages_basic", `"cache_creation_input_tokens": 0,`, "usage.cache_creation", "0"},
		{"messages_basic", `"cache_read_input_tokens": 2048,`, "usage.input", "2058"},
		{"messages_basic", `"output_tokens": 12,`, "usage.output", "12"},
		{"messages_tool_use", `"name": "get_weather"`, "tool_calls[0]", "get_weather"},
		{"messages_error_overloaded", `"type":"overloaded_error"`, "error_type", "overloaded_error"},
		{"messages_stream", `"cache_read_input_tokens":0,`, "usage.input", "1825"},
		{"messages_stream", `"stop_reason":"end_turn"`, "finish_reasons[0]", "end_turn"},
		{"messages_stream_tool_use", `"name":"get_weather"`, "tool_calls[0]", "get_weather"},
		{"vertex_error_429", `"status": "RESOURCE_EXHAUSTED"`, "error_type", "RESOURCE_EXHAUSTED"},
	})
}

func TestAnthropicHostile(t *testing.T) {
	propHostile(t, parseAnthropic, "/v1/messages", `{"model":"`, `{"usage":{"input_tokens":`, false)
}

// TestAnthropicEdges covers what the transcripts do not.
func TestAnthropicEdges(t *testing.T) {
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
		{"json error on a stream request", Exchange{RequestBody: []byte(`{"stream":true}`), ResponseHeader: sse, Status: 401,
			Chunks: stream(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)},
			func(c *Call) string {
				return cond(c.ErrorType == "authentication_error" && !c.Incomplete && c.Stream, "%+v", c)
			}},
		{"error event without a type", Exchange{ResponseHeader: sse, Chunks: stream("event: error\ndata: {\"message\":\"x\"}\n\n")},
			func(c *Call) string { return cond(c.ErrorType == "error" && !c.Incomplete, "%+v", c) }},
		{"google error without status", Exchange{ResponseHeader: js, Status: 500, Chunks: stream(`{"error":{"code":500,"message":"Internal error encountered."}}`)},
			func(c *Call) string { return cond(c.ErrorType == "500", "%q", c.ErrorType) }},
		{"usage without cache counts", Exchange{ResponseHeader: js, Chunks: stream(`{"usage":{"input_tokens":7,"output_tokens":3}}`)},
			func(c *Call) string {
				return cond(c.Usage == Usage{7, 3, -1, -1, -1}, "%+v", c.Usage)
			}},
		{"message_delta repeats the input side", Exchange{ResponseHeader: sse, Chunks: stream(
			`data: {"type":"message_start","message":{"id":"m","usage":{"input_tokens":5,"cache_read_input_tokens":100,"cache_creation_input_tokens":0,"output_tokens":1}}}` + "\n\n" +
				`data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":5,"cache_read_input_tokens":100,"cache_creation_input_tokens":20,"output_tokens":9}}` + "\n\n" +
				`data: {"type":"message_stop"}` + "\n\n")},
			func(c *Call) string {
				return cond(c.Usage == Usage{125, 9, 100, 20, -1} && !c.Incomplete, "%+v", c)
			}},
		{"huge counts saturate", Exchange{ResponseHeader: js, Chunks: stream(`{"usage":{"input_tokens":9223372036854775807,"cache_read_input_tokens":9223372036854775807,"cache_creation_input_tokens":1}}`)},
			func(c *Call) string { return cond(c.Usage.InputTokens == 1<<63-1, "%+v", c.Usage) }},
		{"no message_stop", Exchange{ResponseHeader: sse, Chunks: stream(`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}` + "\n\n")},
			func(c *Call) string { return cond(c.Incomplete && c.OutputChunks == 1, "%+v", c) }},
		{"empty deltas are not output", Exchange{ResponseHeader: sse, Chunks: stream(
			`data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
				`data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}` + "\n\n" +
				"data:\n\n" + `data: {"type":"message_stop"}` + "\n\n")},
			func(c *Call) string { return cond(c.OutputChunks == 0 && !c.Incomplete, "%+v", c) }},
		{"vertex model from the path", Exchange{Path: "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-3-7-sonnet@20250219:rawPredict",
			RequestBody: []byte(`{"anthropic_version":"vertex-2023-10-16","max_tokens":10}`)},
			func(c *Call) string {
				return cond(c.RequestModel == "claude-3-7-sonnet@20250219" && c.MaxTokens == 10, "%+v", c)
			}},
		{"many tool calls", Exchange{ResponseHeader: js, Chunks: stream(`{"content":[` + strings.Repeat(`{"type":"tool_use","name":"f"},`, 1000) + `{}]}`)},
			func(c *Call) string { return cond(len(c.ToolCalls) == maxCallList, "%d", len(c.ToolCalls)) }},
		{"request", Exchange{RequestBody: []byte(`{"model":"claude-opus-4-1","max_tokens":64,"stream":false,"tools":[{"name":"a","input_schema":{"properties":{"name":{"type":"string"}}}},{"type":"web_search_20250305","name":"web_search"}]}`)},
			func(c *Call) string {
				return cond(!c.Stream && c.MaxTokens == 64 && c.ChoiceCount == -1 && slices.Equal(c.ToolDefinitions, []string{"a", "web_search"}), "%+v", c)
			}},
	}
	for _, tt := range tests {
		assert.Empty(t, tt.want(parseAnthropic(&tt.x)), tt.name)
	}
}

// anthropicStreamOf builds a Messages stream of n text deltas, one event
// per chunk, 10ms apart.
func anthropicStreamOf(n int) *Exchange {
	x := &Exchange{
		Method: "POST", Host: "api.anthropic.com", Path: "/v1/messages",
		RequestBody:    []byte(`{"model":"claude-sonnet-4-20250514","max_tokens":4096,"stream":true,"messages":[{"role":"user","content":"Hello"}]}`),
		Start:          transcriptStart,
		Status:         200,
		ResponseHeader: Header{"Content-Type": {"text/event-stream; charset=utf-8"}},
	}
	at := transcriptStart.Add(200 * time.Millisecond)
	x.Chunks = append(x.Chunks, Chunk{At: at, Data: []byte("event: message_start\n" +
		`data: {"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","model":"claude-sonnet-4-20250514","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}` + "\n\n" +
		"event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n")})
	words := []string{"Hello", " there", "!", " How", " can", " I", " help", " you", " today", "?"}
	for i := range n {
		d := fmt.Sprintf("event: content_block_delta\n"+`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%q}}`+"\n\n", words[i%len(words)])
		x.Chunks = append(x.Chunks, Chunk{At: at, Data: []byte(d)})
		at = at.Add(10 * time.Millisecond)
	}
	x.Chunks = append(x.Chunks, Chunk{At: at, Data: []byte("event: content_block_stop\n" + `data: {"type":"content_block_stop","index":0}` + "\n\n" +
		"event: message_delta\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":1000}}` + "\n\n" +
		"event: message_stop\n" + `data: {"type":"message_stop"}` + "\n\n")})
	x.End = at
	return x
}

func TestAnthropicStreamOf(t *testing.T) {
	c := parseAnthropic(anthropicStreamOf(1000))
	dump := callDump(c)
	assert.Equal(t, 1000, c.OutputChunks, dump)
	assert.Equal(t, 200*time.Millisecond, c.TimeToFirstChunk, dump)
	assert.Equal(t, 10*time.Millisecond, c.TimePerChunk, dump)
	assert.Equal(t, Usage{12, 1000, 0, 0, -1}, c.Usage, dump)
	assert.False(t, c.Incomplete, dump)
	assert.Equal(t, "claude-sonnet-4-20250514", c.ResponseModel, dump)
	assert.Equal(t, []string{"end_turn"}, c.FinishReasons, dump)
}

// TestAnthropicAllocs: a 1,000-chunk stream costs a handful of
// allocations in all, none per chunk.
func TestAnthropicAllocs(t *testing.T) {
	x := anthropicStreamOf(1000)
	var c Call
	anthropicCall(x, &c)
	assert.LessOrEqual(t, testing.AllocsPerRun(20, func() { anthropicCall(x, &c) }), 10.0, "allocs for 1,000 chunks")
}

// FuzzAnthropic parses arbitrary requests and responses, streamed or
// not, whole and cut into pieces: the same Call, bounded, no panic.
func FuzzAnthropic(f *testing.F) {
	fuzzParser(f, "anthropic", "/v1/messages", parseAnthropic)
}
