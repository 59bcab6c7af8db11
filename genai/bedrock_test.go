package genai

import (
	"bytes"
	"encoding/base64"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func parseBedrock(x *Exchange) *Call {
	var c Call
	bedrockCall(x, &c)
	return &c
}

func TestBedrockTranscripts(t *testing.T)   { propTranscripts(t, "bedrock", parseByDetect) }
func TestBedrockSplitAnywhere(t *testing.T) { propSplitAnywhere(t, "bedrock", parseByDetect) }
func TestBedrockTruncation(t *testing.T)    { propTruncation(t, "bedrock", parseByDetect) }
func TestBedrockNoText(t *testing.T)        { propNoTextRaw(t, "bedrock", parseBedrock) }

// TestBedrockParse: Parse sends Converse and InvokeModel to bedrockCall.
func TestBedrockParse(t *testing.T) {
	for _, tr := range loadTranscripts(t, "bedrock") {
		ep, ok := Detect(&tr.x, nil)
		require.True(t, ok, "%s: not detected", tr.name)
		c, err := Parse(&tr.x, ep)
		require.NoError(t, err, tr.name)
		want := parseBedrock(&tr.x)
		want.Provider = "aws.bedrock"
		assert.Equal(t, callDump(want), callDump(&c), "%s: Parse, want bedrockCall's", tr.name)
		assert.Equal(t, ep.Model, c.RequestModel, "%s: request model", tr.name)
		assert.NotEmpty(t, c.RequestModel, "%s: request model", tr.name)
	}
}

// TestBedrockTruncationEarly: a field is read as soon as its value is
// complete; a cut Converse body yields the input tokens once the cache
// counts that go with them have been seen, and not before.
func TestBedrockTruncationEarly(t *testing.T) {
	propTruncationEarly(t, "bedrock", parseBedrock, []earlyField{
		{"converse_cache", `"inputTokens":16,`, "usage.input", "1844"},
		{"converse_cache", `"cacheReadInputTokens":1828,`, "usage.cache_read", "1828"},
		{"converse_basic", `"inputTokens":21,`, "usage.input", ""},
		{"converse_basic", `"outputTokens":25,`, "usage.output", "25"},
		{"converse_basic", `"stopReason":"end_turn"`, "finish_reasons[0]", "end_turn"},
		{"converse_tools", `"name":"top_song"`, "tool_calls[0]", "top_song"},
		{"invoke_claude", `"id":"msg_bdrk_01XFDUDYJgAACzvnptvVoYEL"`, "response_id", "msg_bdrk_01XFDUDYJgAACzvnptvVoYEL"},
		{"invoke_claude", `"model":"claude-3-haiku-20240307"`, "response_model", "claude-3-haiku-20240307"},
		{"invoke_claude", `"type":"message"`, "usage.input", "410"}, // the headers
		{"invoke_llama", `"stop_reason":"stop"`, "finish_reasons[0]", "stop"},
	})
}

func TestBedrockConcurrent(t *testing.T) { propConcurrent(t, "bedrock", parseBedrock) }

// TestBedrockEdges covers what the transcripts do not.
func TestBedrockEdges(t *testing.T) {
	es := Header{"Content-Type": {"application/vnd.amazon.eventstream"}}
	js := Header{"Content-Type": {"application/json"}}
	at := transcriptStart.Add(time.Second)
	one := func(b []byte) []Chunk { return []Chunk{{At: at, Data: b}} }
	cat := func(ms ...[]byte) []Chunk { return one(bytes.Join(ms, nil)) }
	chunk := func(js string) []byte {
		return appendEventStreamMessage(nil, []esHeaderKV{{":event-type", "chunk"}, {":message-type", "event"}},
			[]byte(`{"bytes":"`+base64.StdEncoding.EncodeToString([]byte(js))+`"}`))
	}
	meta := bedrockEvent("metadata", `{"usage":{"inputTokens":1,"outputTokens":2}}`)
	tests := []struct {
		name string
		x    Exchange
		want func(c *Call) string
	}{
		{"model and operation from the path", Exchange{Path: "/model/amazon.titan-embed-text-v2%3A0/invoke", RequestBody: []byte(`{"inputText":"x"}`)},
			func(c *Call) string {
				return cond(c.RequestModel == "amazon.titan-embed-text-v2:0" && c.Operation == "embeddings" && !c.Stream, "%+v", c)
			}},
		{"unknown path", Exchange{Path: "/v1/whatever"},
			func(c *Call) string { return cond(c.RequestModel == "" && c.Operation == "", "%+v", c) }},
		{"gzip", Exchange{Path: "/model/m/converse", ResponseHeader: Header{"Content-Encoding": {"gzip"}}, Chunks: one([]byte("\x1f\x8b"))},
			func(c *Call) string { return cond(c.Incomplete, "not incomplete") }},
		{"error code of an error message", Exchange{Path: "/model/m/converse-stream", ResponseHeader: es,
			Chunks: cat(appendEventStreamMessage(nil, []esHeaderKV{{":message-type", "error"}, {":error-code", "InternalFailure"}, {":error-message", "boom"}}, nil))},
			func(c *Call) string { return cond(c.ErrorType == "InternalFailure" && !c.Incomplete, "%+v", c) }},
		{"exception without a type", Exchange{Path: "/model/m/converse-stream", ResponseHeader: es,
			Chunks: cat(appendEventStreamMessage(nil, []esHeaderKV{{":message-type", "exception"}}, []byte(`{"message":"x"}`)))},
			func(c *Call) string { return cond(c.ErrorType == "error" && !c.Incomplete, "%+v", c) }},
		{"bad crc drops the message and marks the call", Exchange{Path: "/model/m/converse-stream", ResponseHeader: es,
			Chunks: cat(func() []byte {
				b := bedrockEvent("contentBlockDelta", `{"delta":{"text":"x"}}`)
				b[len(b)-1] ^= 1
				return b
			}(), meta)},
			func(c *Call) string {
				return cond(c.Incomplete && c.OutputChunks == 0 && c.Usage.InputTokens == 1, "%+v", c)
			}},
		{"sniffed event stream", Exchange{Path: "/model/m/converse-stream", Chunks: cat(bedrockEvent("contentBlockDelta", `{"delta":{"text":"x"}}`), meta)},
			func(c *Call) string { return cond(c.OutputChunks == 1 && !c.Incomplete && c.Stream, "%+v", c) }},
		{"sniffed json error", Exchange{Path: "/model/m/converse-stream", Status: 400, Chunks: one([]byte(`{"__type":"com.amazon.coral.validate#ValidationException","message":"x"}`))},
			func(c *Call) string {
				return cond(c.ErrorType == "ValidationException" && c.Stream && !c.Incomplete, "%+v", c)
			}},
		{"chunk with escaped base64 and unknown family", Exchange{Path: "/model/cohere.command-r-v1%3A0/invoke-with-response-stream", ResponseHeader: es,
			Chunks: cat(appendEventStreamMessage(nil, []esHeaderKV{{":event-type", "chunk"}, {":message-type", "event"}},
				[]byte(`{"bytes":"`+strings.ReplaceAll(base64.StdEncoding.EncodeToString([]byte(`{"text":"a??>","amazon-bedrock-invocationMetrics":{"inputTokenCount":4,"outputTokenCount":5}}`)), "/", `\/`)+`"}`)))},
			func(c *Call) string {
				return cond(c.Usage.InputTokens == 4 && c.Usage.OutputTokens == 5 && !c.Incomplete, "%+v %s", c.Usage, callDump(c))
			}},
		{"chunk that is not base64", Exchange{Path: "/model/m/invoke-with-response-stream", ResponseHeader: es,
			Chunks: cat(appendEventStreamMessage(nil, []esHeaderKV{{":event-type", "chunk"}}, []byte(`{"bytes":"!!"}`)))},
			func(c *Call) string { return cond(c.Incomplete, "%+v", c) }},
		{"nova invoke stream", Exchange{Path: "/model/amazon.nova-lite-v1%3A0/invoke-with-response-stream", ResponseHeader: es,
			Chunks: cat(chunk(`{"contentBlockDelta":{"delta":{"text":"Hi"},"contentBlockIndex":0}}`),
				chunk(`{"metadata":{"usage":{"inputTokens":5,"outputTokens":1}},"amazon-bedrock-invocationMetrics":{"inputTokenCount":5,"outputTokenCount":1,"invocationLatency":100,"firstByteLatency":50}}`))},
			func(c *Call) string {
				return cond(c.OutputChunks == 1 && c.Usage.InputTokens == 5 && !c.Incomplete, "%+v", c)
			}},
		{"claude error event in a chunk", Exchange{Path: "/model/m/invoke-with-response-stream", ResponseHeader: es,
			Chunks: cat(chunk(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))},
			func(c *Call) string { return cond(c.ErrorType == "overloaded_error" && !c.Incomplete, "%+v", c) }},
		{"nova invoke body", Exchange{Path: "/model/amazon.nova-pro-v1%3A0/invoke", ResponseHeader: js, RequestBody: []byte(`{"inferenceConfig":{"max_new_tokens":300,"top_p":0.5,"temperature":0.3}}`),
			Chunks: one([]byte(`{"output":{"message":{"content":[{"text":"x"}],"role":"assistant"}},"stopReason":"end_turn","usage":{"inputTokens":10,"outputTokens":2,"totalTokens":20,"cacheReadInputTokenCount":8,"cacheWriteInputTokenCount":0}}`))},
			func(c *Call) string {
				return cond(c.MaxTokens == 300 && c.TopP == 0.5 && c.Temperature == 0.3 && c.Usage.InputTokens == 18 && c.Usage.CacheReadTokens == 8 &&
					slices.Equal(c.FinishReasons, []string{"end_turn"}), "%s", callDump(c))
			}},
		{"titan request", Exchange{Path: "/model/amazon.titan-text-express-v1/invoke", RequestBody: []byte(`{"inputText":"x","textGenerationConfig":{"maxTokenCount":512,"topP":0.9,"temperature":0}}`)},
			func(c *Call) string {
				return cond(c.MaxTokens == 512 && c.TopP == 0.9 && c.Temperature == 0 && c.Operation == "text_completion", "%s", callDump(c))
			}},
		{"bad token headers", Exchange{Path: "/model/m/invoke", ResponseHeader: Header{"X-Amzn-Bedrock-Input-Token-Count": {"-3"}, "X-Amzn-Bedrock-Output-Token-Count": {"99999999999999999999999"}}},
			func(c *Call) string { return cond(c.Usage == NoUsage, "%+v", c.Usage) }},
		{"error type header with namespace", Exchange{Path: "/model/m/converse", Status: 403, ResponseHeader: Header{"X-Amzn-Errortype": {"aws.bedrock#AccessDeniedException:http://x/"}}},
			func(c *Call) string { return cond(c.ErrorType == "AccessDeniedException", "%q", c.ErrorType) }},
	}
	for _, tt := range tests {
		tt.x.Start = transcriptStart
		assert.Empty(t, tt.want(parseBedrock(&tt.x)), tt.name)
	}
}

// streamOfBedrock builds a ConverseStream of n text deltas, one message
// per chunk, 10ms apart, then messageStop and metadata.
func streamOfBedrock(n int) *Exchange {
	x := &Exchange{Path: "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse-stream", Start: transcriptStart, Status: 200,
		RequestBody:    []byte(`{"messages":[{"role":"user","content":[{"text":"Hi"}]}]}`),
		ResponseHeader: Header{"Content-Type": {"application/vnd.amazon.eventstream"}}}
	at := transcriptStart.Add(200 * time.Millisecond)
	delta := bedrockEvent("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":" word"},"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKL"}`)
	for range n {
		x.Chunks = append(x.Chunks, Chunk{At: at, Data: delta})
		at = at.Add(10 * time.Millisecond)
	}
	x.Chunks = append(x.Chunks, Chunk{At: at, Data: append(bedrockEvent("messageStop", `{"stopReason":"end_turn"}`),
		bedrockEvent("metadata", `{"usage":{"inputTokens":21,"outputTokens":1000,"totalTokens":1021},"metrics":{"latencyMs":1121}}`)...)})
	x.End = at
	return x
}

func TestBedrockStreamOf(t *testing.T) {
	c := parseBedrock(streamOfBedrock(1000))
	dump := callDump(c)
	assert.Equal(t, 1000, c.OutputChunks, dump)
	assert.Equal(t, 200*time.Millisecond, c.TimeToFirstChunk, dump)
	assert.Equal(t, 10*time.Millisecond, c.TimePerChunk, dump)
	assert.Equal(t, int64(1000), c.Usage.OutputTokens, dump)
	assert.False(t, c.Incomplete, dump)
	assert.Equal(t, []string{"end_turn"}, c.FinishReasons, dump)
	assert.True(t, c.Stream, dump)
}

// TestBedrockAllocs: no allocation per message.
func TestBedrockAllocs(t *testing.T) {
	x := streamOfBedrock(1000)
	var c Call
	bedrockCall(x, &c)
	assert.LessOrEqual(t, testing.AllocsPerRun(20, func() { bedrockCall(x, &c) }), 10.0, "allocs for 1,000 messages")
	// Messages split across chunks are gathered in a reused buffer.
	y := *x
	y.Chunks = rechunk(x, 7, 1000, 5000, 20000)
	assert.LessOrEqual(t, testing.AllocsPerRun(20, func() { bedrockCall(&y, &c) }), 10.0, "allocs for 1,000 messages in pieces")
}

// TestBedrockHostile: huge bodies, deep nesting and huge numbers cost
// bounded memory.
func TestBedrockHostile(t *testing.T) {
	n := hostileFlood
	js := Header{"Content-Type": {"application/json"}}
	es := Header{"Content-Type": {"application/vnd.amazon.eventstream"}}
	big := bedrockEvent("contentBlockDelta", `{"delta":{"text":"`+strings.Repeat("a", esMaxMessage)+`"}}`)
	var many []Chunk
	for range n / len(big) {
		many = append(many, Chunk{At: transcriptStart, Data: big})
	}
	deepChunk := appendEventStreamMessage(nil, []esHeaderKV{{":event-type", "chunk"}},
		[]byte(`{"bytes":"`+base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("["), esMaxMessage/2))+`"}`))
	cases := []struct {
		name   string
		x      Exchange
		maxMem uint64
	}{
		{"oversize messages", Exchange{ResponseHeader: es, Chunks: many}, 1 << 20},
		{"deep chunk", Exchange{ResponseHeader: es, Chunks: []Chunk{{Data: deepChunk}}}, 2 << 20},
		{"deep json", Exchange{ResponseHeader: js, Chunks: []Chunk{{Data: bytes.Repeat([]byte("["), n)}}}, 1 << 20},
		{"huge number", Exchange{ResponseHeader: js, Chunks: []Chunk{{Data: append(append([]byte(`{"usage":{"inputTokens":`), bytes.Repeat([]byte("9"), n)...), "}}"...)}}}, 1 << 20},
		{"huge request", Exchange{RequestBody: append(append([]byte(`{"inferenceConfig":{"temperature":`), bytes.Repeat([]byte("9"), n)...), `}}`...)}, 1 << 20},
	}
	for _, tc := range cases {
		tc.x.Path = "/model/m/converse-stream"
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c := parseBedrock(&tc.x)
		runtime.ReadMemStats(&after)
		assert.LessOrEqual(t, after.TotalAlloc-before.TotalAlloc, tc.maxMem, "%s: bytes allocated", tc.name)
		dump := callDump(c)
		assert.Equal(t, NoUsage, c.Usage, "%s: %s", tc.name, dump)
		assert.True(t, math.IsNaN(c.Temperature), "%s: %s", tc.name, dump)
		assert.Zero(t, c.OutputChunks, "%s: %s", tc.name, dump)
		if tc.x.ResponseHeader.Get("Content-Type") != "application/json" {
			assert.True(t, c.Incomplete, "%s: not incomplete", tc.name)
		}
	}
}

// FuzzBedrock parses arbitrary requests and responses, event streams or
// JSON, whole and cut into pieces: the same Call, bounded, no panic.
func FuzzBedrock(f *testing.F) {
	for _, tr := range loadTranscripts(f, "bedrock") {
		f.Add(tr.x.RequestBody, responseBody(&tr.x), []byte{7, 100, 3}, strings.Contains(tr.x.ResponseHeader.Get("Content-Type"), "eventstream"))
	}
	f.Fuzz(func(t *testing.T, req, resp, cuts []byte, stream bool) {
		x := Exchange{Path: "/model/m/converse", RequestBody: req, Start: transcriptStart, Status: 200,
			ResponseHeader: Header{"Content-Type": {"application/json"}}}
		if stream {
			x.Path = "/model/m/invoke-with-response-stream"
			x.ResponseHeader["Content-Type"] = []string{"application/vnd.amazon.eventstream"}
		}
		fuzzProvider(t, &x, resp, cuts, parseBedrock)
	})
}
