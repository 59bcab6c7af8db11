package genai

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func parseGemini(x *Exchange) *Call {
	var c Call
	geminiCall(x, &c)
	return &c
}

func TestGeminiTranscripts(t *testing.T) { propTranscripts(t, "gemini", parseByDetect) }

func TestGeminiSplitAnywhere(t *testing.T) { propSplitAnywhere(t, "gemini", parseByDetect) }

func TestGeminiTruncation(t *testing.T) { propTruncation(t, "gemini", parseByDetect) }

func TestGeminiNoText(t *testing.T) { propNoText(t, "gemini", parseGemini) }

func TestGeminiConcurrent(t *testing.T) { propConcurrent(t, "gemini", parseGemini) }

func TestGeminiTruncationEarly(t *testing.T) {
	propTruncationEarly(t, "gemini", parseGemini, []earlyField{
		{"generate_basic", `"finishReason": "STOP"`, "finish_reasons[0]", "STOP"},
		{"generate_basic", `"promptTokenCount": 8,`, "usage.input", "8"},
		// The output sum waits for the thoughts count that follows it.
		{"generate_basic", `"candidatesTokenCount": 11,`, "usage.output", ""},
		{"generate_basic", "\"thoughtsTokenCount\": 474\n", "usage.output", "485"},
		{"generate_basic", "\"thoughtsTokenCount\": 474\n", "usage.reasoning", "474"},
		{"generate_basic", `"modelVersion": "gemini-2.5-flash"`, "response_model", "gemini-2.5-flash"},
		{"generate_function_call", `"name": "schedule_meeting"`, "tool_calls[0]", "schedule_meeting"},
		{"error_4xx", `"status": "INVALID_ARGUMENT"`, "error_type", "INVALID_ARGUMENT"},
		{"stream_sse", `"cachedContentTokenCount": 4096,`, "usage.cache_read", "4096"},
		{"stream_array", `"responseId": "UzHKaNmDH4WHz7IP5p_XmQM"`, "response_id", "UzHKaNmDH4WHz7IP5p_XmQM"},
	})
}

func TestGeminiHostile(t *testing.T) {
	propHostile(t, parseGemini, "/v1beta/models/gemini-2.0-flash:streamGenerateContent", `{"modelVersion":"`, `{"usageMetadata":{"promptTokenCount":`, true)
}

// TestGeminiEdges covers what the transcripts do not.
func TestGeminiEdges(t *testing.T) {
	sse := Header{"Content-Type": {"text/event-stream"}}
	js := Header{"Content-Type": {"application/json"}}
	stream := func(s string) []Chunk {
		return []Chunk{{At: transcriptStart.Add(time.Second), Data: []byte(s)}}
	}
	const streamPath = "/v1beta/models/gemini-2.0-flash:streamGenerateContent"
	tests := []struct {
		name string
		x    Exchange
		want func(c *Call) string // "" when fine
	}{
		{"gzip", Exchange{ResponseHeader: Header{"Content-Encoding": {"gzip"}}, Chunks: stream("\x1f\x8b")},
			func(c *Call) string { return cond(c.Incomplete, "not incomplete") }},
		{"array with escapes and brackets in strings", Exchange{Path: streamPath, ResponseHeader: js, Chunks: stream(
			`[{"candidates":[{"content":{"parts":[{"text":"a \"]}\\"}]}}]},` + "\r\n" + `{"candidates":[{"content":{"parts":[{"text":"[{"}]},"finishReason":"STOP"}],"responseId":"r\"1"}]`)},
			func(c *Call) string {
				return cond(c.OutputChunks == 2 && !c.Incomplete && c.ResponseID == `r"1` && slices.Equal(c.FinishReasons, []string{"STOP"}), "%s", callDump(c))
			}},
		{"array not closed", Exchange{Path: streamPath, ResponseHeader: js, Chunks: stream(`[{"candidates":[{"finishReason":"STOP"}]}`)},
			func(c *Call) string { return cond(c.Incomplete && len(c.FinishReasons) == 1, "%s", callDump(c)) }},
		{"array of scalars", Exchange{Path: streamPath, ResponseHeader: js, Chunks: stream(`[1,2]`)},
			func(c *Call) string { return cond(c.Incomplete && c.Stream, "%s", callDump(c)) }},
		{"array after its end", Exchange{Path: streamPath, ResponseHeader: js, Chunks: stream(`[] {"responseId":"x"}`)},
			func(c *Call) string { return cond(!c.Incomplete && c.ResponseID == "", "%s", callDump(c)) }},
		{"sse without finish reason", Exchange{Path: streamPath + "?alt=sse", ResponseHeader: sse, Chunks: stream(`data: {"candidates":[{"content":{"parts":[{"text":"Hi"}]}}]}` + "\r\n\r\n")},
			func(c *Call) string { return cond(c.Incomplete && c.OutputChunks == 1, "%s", callDump(c)) }},
		{"sse error event", Exchange{Path: streamPath + "?alt=sse", ResponseHeader: sse, Chunks: stream(`data: {"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}` + "\n\n")},
			func(c *Call) string { return cond(c.ErrorType == "INTERNAL" && !c.Incomplete, "%s", callDump(c)) }},
		{"error code only", Exchange{ResponseHeader: js, Status: 404, Chunks: stream(`{"error":{"code":404,"message":"models/x is not found"}}`)},
			func(c *Call) string { return cond(c.ErrorType == "404", "%q", c.ErrorType) }},
		{"thoughts only", Exchange{ResponseHeader: js, Chunks: stream(`{"usageMetadata":{"promptTokenCount":3,"thoughtsTokenCount":20}}`)},
			func(c *Call) string { return cond(c.Usage == Usage{3, 20, -1, -1, 20}, "%+v", c.Usage) }},
		{"huge counts saturate", Exchange{ResponseHeader: js, Chunks: stream(`{"usageMetadata":{"candidatesTokenCount":9223372036854775807,"thoughtsTokenCount":9223372036854775807}}`)},
			func(c *Call) string { return cond(c.Usage.OutputTokens == 1<<63-1, "%+v", c.Usage) }},
		{"tuned endpoint has no model", Exchange{Path: "/v1/projects/p/locations/us-central1/endpoints/4567:streamGenerateContent?alt=sse"},
			func(c *Call) string { return cond(c.RequestModel == "" && c.Stream && c.Incomplete, "%s", callDump(c)) }},
		{"escaped colon", Exchange{Path: "/v1beta/models/gemini-1.5-pro%3AstreamGenerateContent"},
			func(c *Call) string { return cond(c.RequestModel == "gemini-1.5-pro" && c.Stream, "%s", callDump(c)) }},
		{"gateway prefix", Exchange{Path: "/gemini/v1beta/models/gemini-2.0-flash:generateContent", ResponseHeader: js, Chunks: stream(`{}`)},
			func(c *Call) string {
				return cond(c.RequestModel == "gemini-2.0-flash" && !c.Stream && !c.Incomplete, "%s", callDump(c))
			}},
		{"camel and snake mixed", Exchange{RequestBody: []byte(`{"generation_config":{"topP":0.5,"max_output_tokens":7,"candidateCount":2},"tools":[{"function_declarations":[{"name":"a"}]},{"functionDeclarations":[{"name":"b"}]},{"googleSearch":{}}]}`)},
			func(c *Call) string {
				return cond(c.TopP == 0.5 && c.MaxTokens == 7 && c.ChoiceCount == 2 && slices.Equal(c.ToolDefinitions, []string{"a", "b"}), "%s", callDump(c))
			}},
		{"many finish reasons", Exchange{ResponseHeader: js, Chunks: stream(`{"candidates":[` + strings.Repeat(`{"finishReason":"STOP"},`, 1000) + `{}]}`)},
			func(c *Call) string { return cond(len(c.FinishReasons) == maxCallList, "%d", len(c.FinishReasons)) }},
	}
	for _, tt := range tests {
		assert.Empty(t, tt.want(parseGemini(&tt.x)), tt.name)
	}
}

// TestGeminiArraySplit: an array stream gives the same Call whatever
// its pieces, elements spanning pieces included.
func TestGeminiArraySplit(t *testing.T) {
	body := `[{"candidates":[{"content":{"parts":[{"text":"x\\\"]"}]}}]}` + "\r\n,\r\n" +
		`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"q":"}}"}}}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":4,"candidatesTokenCount":2}}` + "\r\n]"
	x := Exchange{Path: "/v1/models/gemini-2.0-flash:streamGenerateContent", Start: transcriptStart,
		ResponseHeader: Header{"Content-Type": {"application/json"}}, Chunks: []Chunk{{At: transcriptStart, Data: []byte(body)}}}
	want := callDump(parseGemini(&x))
	require.Contains(t, want, `tool_calls: ["f"]`)
	require.Contains(t, want, "incomplete: false")
	require.Contains(t, want, "output_chunks: 2")
	for i := 0; i <= len(body); i++ {
		for j := i; j <= len(body); j += 7 {
			y := x
			y.Chunks = []Chunk{{At: transcriptStart, Data: []byte(body[:i])}, {At: transcriptStart, Data: []byte(body[i:j])}, {At: transcriptStart, Data: []byte(body[j:])}}
			require.Equal(t, want, callDump(parseGemini(&y)), "cut at %d and %d", i, j)
		}
	}
}

// geminiStreamOf builds an alt=sse stream of n chunks, one event per
// chunk, 10ms apart, each with its usage so far.
func geminiStreamOf(n int) *Exchange {
	x := &Exchange{
		Method: "POST", Host: "generativelanguage.googleapis.com", Path: "/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse",
		RequestBody:    []byte(`{"contents":[{"role":"user","parts":[{"text":"Hello"}]}],"generationConfig":{"maxOutputTokens":4096}}`),
		Start:          transcriptStart,
		Status:         200,
		ResponseHeader: Header{"Content-Type": {"text/event-stream"}},
	}
	words := []string{"Hello", " there", "!", " How", " can", " I", " help", " you", " today", "?"}
	at := transcriptStart.Add(200 * time.Millisecond)
	for i := range n {
		finish := ""
		if i == n-1 {
			finish = `,"finishReason": "STOP"`
		}
		d := fmt.Sprintf(`data: {"candidates": [{"content": {"parts": [{"text": %q}],"role": "model"}%s,"index": 0}],"usageMetadata": {"promptTokenCount": 2,"candidatesTokenCount": %d,"totalTokenCount": %d},"modelVersion": "gemini-2.0-flash","responseId": "mfoXaOSXLIiDz7IPn7bN6Qs"}`+"\r\n\r\n",
			words[i%len(words)], finish, i+1, i+3)
		x.Chunks = append(x.Chunks, Chunk{At: at, Data: []byte(d)})
		at = at.Add(10 * time.Millisecond)
	}
	x.End = at
	return x
}

func TestGeminiStreamOf(t *testing.T) {
	c := parseGemini(geminiStreamOf(1000))
	dump := callDump(c)
	assert.Equal(t, 1000, c.OutputChunks, dump)
	assert.Equal(t, 200*time.Millisecond, c.TimeToFirstChunk, dump)
	assert.Equal(t, 10*time.Millisecond, c.TimePerChunk, dump)
	assert.Equal(t, Usage{2, 1000, -1, -1, -1}, c.Usage, dump)
	assert.False(t, c.Incomplete, dump)
	assert.Equal(t, "gemini-2.0-flash", c.ResponseModel, dump)
	assert.Equal(t, []string{"STOP"}, c.FinishReasons, dump)
}

// TestGeminiAllocs: a 1,000-chunk stream, as events or as an array,
// costs a handful of allocations in all, none per chunk.
func TestGeminiAllocs(t *testing.T) {
	x := geminiStreamOf(1000)
	var c Call
	geminiCall(x, &c)
	assert.LessOrEqual(t, testing.AllocsPerRun(20, func() { geminiCall(x, &c) }), 10.0, "allocs for 1,000 events")
	// The same responses as a JSON array, each element cut in two.
	y := *x
	y.Path = strings.TrimSuffix(x.Path, "?alt=sse")
	y.Chunks = nil
	for i, ch := range x.Chunks {
		d := strings.TrimSuffix(strings.TrimPrefix(string(ch.Data), "data: "), "\r\n\r\n")
		if i == 0 {
			d = "[" + d
		} else {
			d = ",\r\n" + d
		}
		if i == len(x.Chunks)-1 {
			d += "]"
		}
		h := len(d) / 2
		y.Chunks = append(y.Chunks, Chunk{At: ch.At, Data: []byte(d[:h])}, Chunk{At: ch.At, Data: []byte(d[h:])})
	}
	geminiCall(&y, &c)
	dump := callDump(&c)
	require.Equal(t, 1000, c.OutputChunks, dump)
	require.False(t, c.Incomplete, dump)
	require.Equal(t, int64(1000), c.Usage.OutputTokens, dump)
	assert.LessOrEqual(t, testing.AllocsPerRun(20, func() { geminiCall(&y, &c) }), 10.0, "allocs for 1,000 array elements")
}

// FuzzGemini parses arbitrary requests and responses (one object, an
// event stream or an array stream), whole and cut into pieces: the same
// Call, bounded, no panic.
func FuzzGemini(f *testing.F) {
	fuzzParser(f, "gemini", "/v1beta/models/gemini-2.0-flash:streamGenerateContent", parseGemini)
}
