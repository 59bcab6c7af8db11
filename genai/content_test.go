package genai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/semconv"
)

// extract runs Detect, Parse and ExtractContent on x, as the emitter
// does. TestContentCap calls it some 8,000 times: its checks are
// guarded by their conditions, so that a check that passes costs no call
// into testify (whose t.Helper is not free).
func extract(t testing.TB, x *Exchange, maxBytes int) Content {
	t.Helper()
	ep, ok := Detect(x, nil)
	if !ok {
		require.True(t, ok, "%s %s: not detected", x.Host, x.Path)
	}
	c, err := Parse(x, ep)
	if err != nil {
		require.NoError(t, err, x.Path)
	}
	return ExtractContent(x, &c, ep, maxBytes)
}

func transcriptNamed(t testing.TB, dir, name string) *transcript {
	t.Helper()
	for _, tr := range loadTranscripts(t, dir) {
		if tr.name == name {
			return tr
		}
	}
	require.Failf(t, "no transcript", "no transcript %s/%s", dir, name)
	return nil
}

const (
	sysKey = string(semconv.GenAISystemInstructions)
	inKey  = string(semconv.GenAIInputMessages)
	outKey = string(semconv.GenAIOutputMessages)
)

// TestContentTranscripts: the text of transcripts, as read from their
// bodies by hand: streamed deltas joined, tool arguments as JSON.
func TestContentTranscripts(t *testing.T) {
	userText := func(s string) string {
		return `[{"role":"user","parts":[{"type":"text","content":"` + s + `"}]}]`
	}
	tests := []struct {
		dir, name    string
		sys, in, out string
		truncated    []string
	}{
		{dir: "openai", name: "chat_basic",
			in: `[{"role":"developer","parts":[{"type":"text","content":"You are a helpful assistant."}]},` +
				`{"role":"user","parts":[{"type":"text","content":"Hello!"}]}]`,
			out: `[{"role":"assistant","finish_reason":"stop","parts":[{"type":"text","content":"Hello! How can I assist you today?"}]}]`},
		{dir: "openai", name: "chat_stream_tools",
			in: userText("What's the weather like in Paris today, and what time is it there?"),
			out: `[{"role":"assistant","finish_reason":"tool_calls","parts":[` +
				`{"type":"tool_call","id":"call_DdmO9pD3xa9XTPNJ32zg2hcA","name":"get_weather","arguments":{"location": "Paris, France"}},` +
				`{"type":"tool_call","id":"call_8ZpFTVqhcQkM2K1bSHpGRjbu","name":"get_time","arguments":{"tz": "Europe/Paris"}}]}]`},
		{dir: "openai", name: "chat_reasoning_n2",
			in: userText("Write a bash script that takes a matrix represented as a string with format '[1,2],[3,4],[5,6]' and prints the transpose in the same format."),
			out: `[{"role":"assistant","finish_reason":"stop","parts":[{"type":"text","content":"Here is a bash script that transposes the matrix..."}]},` +
				`{"role":"assistant","finish_reason":"length","parts":[{"type":"text","content":"#!/bin/bash\n# transpose"}]}]`},
		{dir: "openai", name: "chat_stream_cut",
			in:        userText("Count to three"),
			out:       `[{"role":"assistant","parts":[{"type":"text","content":"One, two"}]}]`,
			truncated: []string{outKey}},
		{dir: "openai", name: "completions_stream",
			in:  userText("Say this is a test"),
			out: `[{"role":"assistant","finish_reason":"stop","parts":[{"type":"text","content":"This is a test"}]}]`},
		{dir: "openai", name: "responses_stream",
			sys: `[{"type":"text","content":"You are a helpful assistant."}]`,
			in:  userText("Hello!"),
			out: `[{"role":"assistant","finish_reason":"stop","parts":[{"type":"text","content":"Hi there! How can I help?"}]}]`},
		{dir: "openai", name: "responses_stream_tool",
			in:  userText("What's the weather like in Paris today?"),
			out: `[{"role":"assistant","finish_reason":"stop","parts":[{"type":"tool_call","id":"call_12345xyz","name":"get_weather","arguments":{"location":"Paris, France"}}]}]`},
		{dir: "openai", name: "embeddings"},
		{dir: "anthropic", name: "messages_basic",
			sys: `[{"type":"text","content":"You are an AI assistant tasked with analyzing literary works. Your goal is to provide insightful commentary."}]`,
			in:  userText("Hello, Claude"),
			out: `[{"role":"assistant","finish_reason":"end_turn","parts":[{"type":"text","content":"Hi! My name is Claude."}]}]`},
		{dir: "anthropic", name: "messages_stream_thinking",
			in: userText("What is 27 * 453?"),
			out: `[{"role":"assistant","finish_reason":"end_turn","parts":[` +
				`{"type":"reasoning","content":"Let me solve this step by step:\n\n1. First break down 27 * 453\n2. 453 = 400 + 50 + 3"},` +
				`{"type":"text","content":"27 * 453 = 12,231"}]}]`},
		{dir: "anthropic", name: "messages_stream_tool_use",
			in: userText("What is the weather like in San Francisco?"),
			out: `[{"role":"assistant","finish_reason":"tool_use","parts":[` +
				`{"type":"text","content":"Okay, let's check the weather for San Francisco, CA:"},` +
				`{"type":"tool_call","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","arguments":{"location": "San Francisco, CA"}}]}]`},
		{dir: "gemini", name: "stream_sse",
			in:  userText("Please summarize this transcript"),
			out: `[{"role":"assistant","finish_reason":"STOP","parts":[{"type":"text","content":"The transcript covers the Apollo 11 mission from launch to splashdown, including the lunar landing and moonwalk.\n"}]}]`},
		{dir: "gemini", name: "generate_function_call",
			in: userText("Schedule a meeting with Bob and Alice for 03/27/2025 at 10:00 AM about the Q3 planning."),
			out: `[{"role":"assistant","finish_reason":"STOP","parts":[{"type":"tool_call","name":"schedule_meeting",` +
				`"arguments":{"topic":"Q3 planning","time":"10:00","date":"2025-03-27","attendees":["Bob","Alice"]}}]}]`},
		{dir: "ollama", name: "chat_stream",
			in:  userText("why is the sky blue?"),
			out: `[{"role":"assistant","finish_reason":"stop","parts":[{"type":"text","content":"The sky is blue."}]}]`},
		{dir: "ollama", name: "generate_stream",
			in:  userText("Why is the sky blue?"),
			out: `[{"role":"assistant","finish_reason":"length","parts":[{"type":"text","content":"The sky scatters"}]}]`},
		{dir: "ollama", name: "embed"},
		{dir: "bedrock", name: "converse_basic",
			sys: `[{"type":"text","content":"You are a poet."}]`,
			in:  userText("Write a haiku about the sea."),
			out: `[{"role":"assistant","finish_reason":"end_turn","parts":[{"type":"text","content":"Waves fold into foam,\nsalt wind carries gull voices,\nthe tide keeps its time."}]}]`},
		{dir: "bedrock", name: "converse_stream_tools",
			in: userText("What is the most popular song on WZPZ?"),
			out: `[{"role":"assistant","finish_reason":"tool_use","parts":[` +
				`{"type":"reasoning","content":"The user wants the top song on WZPZ."},` +
				`{"type":"tool_call","id":"tooluse_kZJMlvQmRJ6eAyJE5GIl7Q","name":"top_song","arguments":{"sign": "WZPZ"}}]}]`},
	}
	for _, tt := range tests {
		tr := transcriptNamed(t, tt.dir, tt.name)
		got := extract(t, &tr.x, 1<<16)
		want := Content{SystemInstructions: tt.sys, InputMessages: tt.in, OutputMessages: tt.out, Truncated: tt.truncated}
		assert.True(t, contentEqual(got, want), "%s/%s:\n got %s\nwant %s", tt.dir, tt.name, contentDump(got), contentDump(want))
	}
}

func contentEqual(a, b Content) bool {
	return a.SystemInstructions == b.SystemInstructions && a.InputMessages == b.InputMessages &&
		a.OutputMessages == b.OutputMessages && slices.Equal(a.Truncated, b.Truncated)
}

func contentDump(c Content) string {
	return fmt.Sprintf("\n  system: %s\n  input:  %s\n  output: %s\n  truncated: %v", c.SystemInstructions, c.InputMessages, c.OutputMessages, c.Truncated)
}

// TestContentRequests: conversations with every kind of part, in each
// provider's request format, fields in any order.
func TestContentRequests(t *testing.T) {
	tests := []struct {
		name, path, body string
		sys, in          string
	}{
		{"openai chat", "/v1/chat/completions",
			`{"model":"gpt-4o","messages":[` +
				`{"role":"system","content":"Be brief."},` +
				`{"content":[{"type":"text","text":"What is in"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},{"type":"text","text":" Paris?"}],"role":"user"},` +
				`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}},{"id":"call_2","type":"function","function":{"name":"time","arguments":"not json"}}]},` +
				`{"content":"{\"temp\":21}","role":"tool","tool_call_id":"call_1"},` +
				`{"role":"assistant","function_call":{"name":"legacy","arguments":"{}"}},` +
				`{"role":"assistant","tool_calls":[{"id":"call_3","function":{"name":"map","arguments":{"city":"Rome"}}}]}]}`,
			"",
			`[{"role":"system","parts":[{"type":"text","content":"Be brief."}]},` +
				`{"role":"user","parts":[{"type":"text","content":"What is in"},{"type":"text","content":" Paris?"}]},` +
				`{"role":"assistant","parts":[{"type":"tool_call","id":"call_1","name":"weather","arguments":{"city":"Paris"}},{"type":"tool_call","id":"call_2","name":"time","arguments":"not json"}]},` +
				`{"role":"tool","parts":[{"type":"tool_call_response","id":"call_1","response":{"temp":21}}]},` +
				`{"role":"assistant","parts":[{"type":"tool_call","name":"legacy","arguments":{}}]},` +
				`{"role":"assistant","parts":[{"type":"tool_call","id":"call_3","name":"map","arguments":{"city":"Rome"}}]}]`},
		{"openai completions, prompts", "/v1/completions",
			`{"model":"gpt-3.5-turbo-instruct","prompt":["one","two"]}`,
			"", `[{"role":"user","parts":[{"type":"text","content":"one"},{"type":"text","content":"two"}]}]`},
		{"openai responses", "/v1/responses",
			`{"model":"gpt-4.1","instructions":"Be brief.","input":[` +
				`{"role":"user","content":[{"type":"input_text","text":"Weather in Paris?"},{"type":"input_image","image_url":"https://x/y.png"}]},` +
				`{"type":"reasoning","id":"rs_1","summary":[]},` +
				`{"arguments":"{\"city\":\"Paris\"}","call_id":"call_1","name":"weather","type":"function_call"},` +
				`{"type":"function_call_output","call_id":"call_1","output":"21C"},` +
				`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"It is 21C."}]}]}`,
			`[{"type":"text","content":"Be brief."}]`,
			`[{"role":"user","parts":[{"type":"text","content":"Weather in Paris?"}]},` +
				`{"role":"assistant","parts":[{"type":"tool_call","id":"call_1","name":"weather","arguments":{"city":"Paris"}}]},` +
				`{"role":"tool","parts":[{"type":"tool_call_response","id":"call_1","response":"21C"}]},` +
				`{"role":"assistant","parts":[{"type":"text","content":"It is 21C."}]}]`},
		{"anthropic", "/v1/messages",
			`{"model":"claude-sonnet-4-5","system":"Be brief.","messages":[` +
				`{"role":"user","content":[{"type":"text","text":"Weather in Paris?"},{"type":"image","source":{"type":"base64","data":"AAAA"}}]},` +
				`{"role":"assistant","content":[{"type":"thinking","thinking":"Call the tool.","signature":"sig"},{"type":"tool_use","id":"toolu_1","name":"weather","input":{ "city" : "Paris" }}]},` +
				`{"content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"21C"},{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"sunny"}]}],"role":"user"}]}`,
			`[{"type":"text","content":"Be brief."}]`,
			`[{"role":"user","parts":[{"type":"text","content":"Weather in Paris?"}]},` +
				`{"role":"assistant","parts":[{"type":"reasoning","content":"Call the tool."},{"type":"tool_call","id":"toolu_1","name":"weather","arguments":{"city":"Paris"}}]},` +
				`{"role":"user","parts":[{"type":"tool_call_response","id":"toolu_1","response":"21C"},{"type":"tool_call_response","id":"toolu_2","response":[{"type":"text","text":"sunny"}]}]}]`},
		{"gemini", "/v1beta/models/gemini-2.5-flash:generateContent",
			`{"systemInstruction":{"parts":[{"text":"Be brief."}]},"contents":[` +
				`{"parts":[{"text":"Weather in Paris?"}],"role":"user"},` +
				`{"role":"model","parts":[{"text":"Call the tool.","thought":true},{"functionCall":{"name":"weather","args":{"city":"Paris"}}}]},` +
				`{"role":"function","parts":[{"functionResponse":{"name":"weather","response":{"temp":21}}}]},` +
				`{"parts":[{"text":"Thanks"}]}]}`,
			`[{"type":"text","content":"Be brief."}]`,
			`[{"role":"user","parts":[{"type":"text","content":"Weather in Paris?"}]},` +
				`{"role":"assistant","parts":[{"type":"reasoning","content":"Call the tool."},{"type":"tool_call","name":"weather","arguments":{"city":"Paris"}}]},` +
				`{"role":"tool","parts":[{"type":"tool_call_response","response":{"temp":21}}]},` +
				`{"role":"user","parts":[{"type":"text","content":"Thanks"}]}]`},
		{"ollama chat", "/api/chat",
			`{"model":"qwen3","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Weather in Paris?"},` +
				`{"role":"assistant","content":"","thinking":"Call the tool.","tool_calls":[{"function":{"name":"weather","arguments":{"city":"Paris"}}}]},` +
				`{"role":"tool","content":"21C","tool_name":"weather"}]}`,
			"",
			`[{"role":"system","parts":[{"type":"text","content":"Be brief."}]},{"role":"user","parts":[{"type":"text","content":"Weather in Paris?"}]},` +
				`{"role":"assistant","parts":[{"type":"reasoning","content":"Call the tool."},{"type":"tool_call","name":"weather","arguments":{"city":"Paris"}}]},` +
				`{"role":"tool","parts":[{"type":"tool_call_response","response":"21C"}]}]`},
		{"ollama generate", "/api/generate",
			`{"model":"llama3.2","system":"Be brief.","prompt":"Why is the sky blue?"}`,
			`[{"type":"text","content":"Be brief."}]`, `[{"role":"user","parts":[{"type":"text","content":"Why is the sky blue?"}]}]`},
		{"bedrock converse", "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse",
			`{"system":[{"text":"Be brief."}],"messages":[{"role":"user","content":[{"text":"Weather in Paris?"}]},` +
				`{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"Call the tool.","signature":"sig"}}},{"toolUse":{"toolUseId":"tooluse_1","name":"weather","input":{"city":"Paris"}}}]},` +
				`{"role":"user","content":[{"toolResult":{"toolUseId":"tooluse_1","content":[{"json":{"temp":21}}]}}]}]}`,
			`[{"type":"text","content":"Be brief."}]`,
			`[{"role":"user","parts":[{"type":"text","content":"Weather in Paris?"}]},` +
				`{"role":"assistant","parts":[{"type":"reasoning","content":"Call the tool."},{"type":"tool_call","id":"tooluse_1","name":"weather","arguments":{"city":"Paris"}}]},` +
				`{"role":"user","parts":[{"type":"tool_call_response","id":"tooluse_1","response":[{"json":{"temp":21}}]}]}]`},
	}
	for _, tt := range tests {
		host := map[bool]string{true: "bedrock-runtime.us-east-1.amazonaws.com", false: "api.example.com"}[strings.HasPrefix(tt.path, "/model/")]
		switch {
		case strings.HasPrefix(tt.path, "/api/"):
			host = "localhost:11434"
		case strings.Contains(tt.path, "gemini"):
			host = "generativelanguage.googleapis.com"
		case tt.path == "/v1/messages":
			host = "api.anthropic.com"
		case strings.HasPrefix(tt.path, "/v1/"):
			host = "api.openai.com"
		}
		x := &Exchange{Method: "POST", Host: host, Path: tt.path, RequestBody: []byte(tt.body), Status: 200,
			RequestHeader: Header{"Content-Type": {"application/json"}}}
		got := extract(t, x, 1<<16)
		want := Content{SystemInstructions: tt.sys, InputMessages: tt.in}
		assert.True(t, contentEqual(got, want), "%s:\n got %s\nwant %s", tt.name, contentDump(got), contentDump(want))
		for _, a := range []string{got.SystemInstructions, got.InputMessages} {
			if a != "" {
				assert.True(t, json.Valid([]byte(a)), "%s: not JSON: %s", tt.name, a)
			}
		}
	}
}

// TestContentResponses: responses in shapes the transcripts do not
// show: choices and candidates interleaved in a stream with their index
// last, tool arguments as an object, every kind of output item.
func TestContentResponses(t *testing.T) {
	sse := "text/event-stream"
	tests := []struct {
		name, host, path, contentType string
		chunks                        []string
		out                           string
	}{
		{"openai n=2 stream", "api.openai.com", "/v1/chat/completions", sse, []string{
			`data: {"choices":[{"delta":{"content":"A1"},"index":0},{"delta":{"content":"B1"},"index":1}]}` + "\n\n",
			`data: {"choices":[{"delta":{"content":"B2"},"finish_reason":"length","index":1}]}` + "\n\n",
			`data: {"choices":[{"delta":{"tool_calls":[{"function":{"arguments":{"q":1},"name":"f"},"id":"c1","index":0}]},"index":0}]}` + "\n\n",
			`data: {"choices":[{"delta":{},"finish_reason":"tool_calls","index":0}]}` + "\n\ndata: [DONE]\n\n"},
			`[{"role":"assistant","finish_reason":"tool_calls","parts":[{"type":"text","content":"A1"},{"type":"tool_call","id":"c1","name":"f","arguments":{"q":1}}]},` +
				`{"role":"assistant","finish_reason":"length","parts":[{"type":"text","content":"B1B2"}]}]`},
		{"responses body", "api.openai.com", "/v1/responses", "application/json", []string{
			`{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[` +
				`{"type":"reasoning","summary":[{"type":"summary_text","text":"Think."}]},` +
				`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hi"},{"type":"refusal","refusal":"No."}]},` +
				`{"name":"f","arguments":"{\"q\":1}","call_id":"c1","type":"function_call"}]}`},
			`[{"role":"assistant","finish_reason":"max_output_tokens","parts":[{"type":"reasoning","content":"Think."},` +
				`{"type":"text","content":"Hi"},{"type":"text","content":"No."},{"type":"tool_call","id":"c1","name":"f","arguments":{"q":1}}]}]`},
		{"gemini two candidates streamed", "generativelanguage.googleapis.com", "/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse", sse, []string{
			`data: {"candidates":[{"content":{"parts":[{"text":"A1"}],"role":"model"},"index":0},{"content":{"parts":[{"text":"B1"}]},"index":1}]}` + "\n\n",
			`data: {"candidates":[{"content":{"parts":[{"text":"B2"},{"functionCall":{"name":"f","args":{}}}]},"finishReason":"STOP","index":1}]}` + "\n\n"},
			`[{"role":"assistant","parts":[{"type":"text","content":"A1"}]},` +
				`{"role":"assistant","finish_reason":"STOP","parts":[{"type":"text","content":"B1B2"},{"type":"tool_call","name":"f","arguments":{}}]}]`},
		{"ollama generate thinking", "localhost:11434", "/api/generate", "application/x-ndjson", []string{
			`{"model":"qwen3","thinking":"Hm","response":"","done":false}` + "\n",
			`{"model":"qwen3","response":"Blue","done":false}` + "\n" + `{"model":"qwen3","response":"","done":true,"done_reason":"stop"}` + "\n"},
			`[{"role":"assistant","finish_reason":"stop","parts":[{"type":"reasoning","content":"Hm"},{"type":"text","content":"Blue"}]}]`},
	}
	for _, tt := range tests {
		x := &Exchange{Method: "POST", Host: tt.host, Path: tt.path, RequestBody: []byte(`{"model":"m","stream":true}`),
			Status: 200, ResponseHeader: Header{"Content-Type": {tt.contentType}}}
		for _, ch := range tt.chunks {
			x.Chunks = append(x.Chunks, Chunk{At: transcriptStart, Data: []byte(ch)})
		}
		got := extract(t, x, 1<<16)
		assert.Equal(t, tt.out, got.OutputMessages, "%s:\n got %s", tt.name, contentDump(got))
		assert.Empty(t, got.Truncated, "%s:\n got %s", tt.name, contentDump(got))
	}
}

// allTranscripts are the transcripts of every provider.
func allTranscripts(t testing.TB) []*transcript {
	var trs []*transcript
	for _, dir := range []string{"openai", "anthropic", "gemini", "ollama", "bedrock"} {
		trs = append(trs, loadTranscripts(t, dir)...)
	}
	return trs
}

// TestContentCap: under every cap, each attribute is at most the cap
// long, valid JSON, and named in Truncated when it is shorter than it
// would be uncapped; what fits whole is kept whole.
func TestContentCap(t *testing.T) {
	checked := 0
	for _, tr := range allTranscripts(t) {
		full := extract(t, &tr.x, 1<<20)
		longest := max(len(full.SystemInstructions), len(full.InputMessages), len(full.OutputMessages))
		for limit := 1; limit <= longest+1; limit++ {
			got := extract(t, &tr.x, limit)
			for _, a := range []struct{ key, got, full string }{
				{sysKey, got.SystemInstructions, full.SystemInstructions},
				{inKey, got.InputMessages, full.InputMessages},
				{outKey, got.OutputMessages, full.OutputMessages},
			} {
				checked++
				// Guarded: some 25,000 checks, and testify's t.Helper is
				// not free.
				if msg := checkCapped(a.key, a.got, a.full, limit, got.Truncated, full.Truncated); msg != "" {
					require.Empty(t, msg, "%s, cap %d", tr.name, limit)
				}
			}
		}
	}
	assert.GreaterOrEqual(t, checked, 1000, "only %d attributes checked", checked)
}

// checkCapped checks one attribute under a cap against its uncapped
// form; "" when it holds.
func checkCapped(key, got, full string, limit int, truncated, fullTruncated []string) string {
	cut := slices.Contains(truncated, key)
	switch {
	case len(got) > limit:
		return fmt.Sprintf("%s is %d bytes", key, len(got))
	case got != "" && !json.Valid([]byte(got)):
		return fmt.Sprintf("%s is not JSON: %s", key, got)
	case len(full) <= limit && (got != full || cut != slices.Contains(fullTruncated, key)):
		return fmt.Sprintf("%s fits, but reads %s (truncated %v), not %s", key, got, truncated, full)
	case len(full) > limit && !cut:
		return fmt.Sprintf("%s cut to %s, not named in %v", key, got, truncated)
	}
	return ""
}

// TestContentCutAtRune: text is cut at a rune, whatever it holds; the
// cut text is the start of the whole.
func TestContentCutAtRune(t *testing.T) {
	text := "héllo \"wörld\" 😀\n\t\u0001 ünïcödé €€€"
	body, _ := json.Marshal(map[string]any{"model": "gpt-4o", "messages": []map[string]string{{"role": "user", "content": text}}})
	x := &Exchange{Method: "POST", Host: "api.openai.com", Path: "/v1/chat/completions", RequestBody: body}
	for limit := 1; limit < 200; limit++ {
		got := extract(t, x, limit).InputMessages
		require.LessOrEqual(t, len(got), limit, "cap %d: %d bytes", limit, len(got))
		if got == "" {
			continue
		}
		var msgs []struct {
			Parts []struct{ Content string }
		}
		require.NoError(t, json.Unmarshal([]byte(got), &msgs), "cap %d: %s", limit, got)
		for _, m := range msgs {
			for _, p := range m.Parts {
				require.True(t, utf8.ValidString(p.Content), "cap %d: %q is not the start of the text", limit, p.Content)
				require.True(t, strings.HasPrefix(text, p.Content), "cap %d: %q is not the start of the text", limit, p.Content)
			}
		}
	}
}

// TestContentStreamBounded: a long stream costs memory by the cap, not
// by its length.
func TestContentStreamBounded(t *testing.T) {
	const limit = 1 << 10
	alloc := func(n int) (uint64, Content) {
		x := streamOf(n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		ct := extract(t, x, limit)
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc, ct
	}
	small, _ := alloc(100)
	large, ct := alloc(20000)
	dump := contentDump(ct)
	assert.LessOrEqual(t, len(ct.OutputMessages), limit, dump)
	assert.Contains(t, ct.Truncated, outKey, dump)
	assert.True(t, strings.HasPrefix(ct.OutputMessages, `[{"role":"assistant","finish_reason":"stop","parts":[{"type":"text","content":"Hello there! How can I help you today?Hello`), dump)
	// Detect and Parse allocate a little per call, not per event.
	assert.LessOrEqual(t, large, small+64<<10, "20,000 events: %d bytes allocated; 100 events: %d", large, small)
}

// TestContentHostile: huge texts and endless lists of messages or parts
// cost memory by the cap, not by their size.
func TestContentHostile(t *testing.T) {
	const limit = 4 << 10
	n := hostileFlood
	many := func(prefix, elem, suffix string) []byte {
		b := []byte(prefix)
		for len(b) < n {
			b = append(b, elem...)
			b = append(b, ',')
		}
		return append(append(b, elem...), suffix...)
	}
	cases := []struct {
		name, path string
		body       []byte
	}{
		{"huge prompt", "/v1/chat/completions", []byte(`{"messages":[{"role":"user","content":"` + strings.Repeat("a", n) + `"}]}`)},
		{"huge escaped prompt", "/v1/chat/completions", []byte(`{"messages":[{"role":"user","content":"` + strings.Repeat(`\u00e9`, n/6) + `"}]}`)},
		{"endless messages", "/v1/chat/completions", many(`{"messages":[`, `{"role":"user","content":"hi"}`, `]}`)},
		{"endless blocks", "/v1/messages", many(`{"messages":[{"role":"user","content":[`, `{"type":"text","text":"hi"}`, `]}]}`)},
		{"endless parts", "/v1beta/models/gemini-2.0-flash:generateContent", many(`{"contents":[{"parts":[`, `{"text":"hi"}`, `]}]}`)},
		{"huge tool input", "/v1/messages", []byte(`{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{"a":"` + strings.Repeat("b", n) + `"}}]}]}`)},
	}
	for _, tc := range cases {
		x := &Exchange{Method: "POST", Path: tc.path, RequestBody: tc.body}
		switch {
		case strings.HasPrefix(tc.path, "/v1beta/"):
			x.Host = "generativelanguage.googleapis.com"
		case tc.path == "/v1/messages":
			x.Host = "api.anthropic.com"
		default:
			x.Host = "api.openai.com"
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		ct := extract(t, x, limit)
		runtime.ReadMemStats(&after)
		assert.LessOrEqual(t, after.TotalAlloc-before.TotalAlloc, uint64(256<<10), "%s: bytes allocated", tc.name)
		dump := contentDump(ct)
		assert.LessOrEqual(t, len(ct.InputMessages), limit, "%s: %s", tc.name, dump)
		assert.Contains(t, ct.Truncated, inKey, "%s: %s", tc.name, dump)
		assert.True(t, json.Valid([]byte(ct.InputMessages)), "%s: %s", tc.name, dump)
	}
}

// TestContentOff: a cap of 0 reads nothing.
func TestContentOff(t *testing.T) {
	for _, tr := range allTranscripts(t) {
		got := extract(t, &tr.x, 0)
		require.True(t, contentEqual(got, Content{}), "%s: %s", tr.name, contentDump(got))
	}
}

// fuzzContent reads the content of arbitrary requests and responses of
// one API, streamed (as streamType) or not, whole and cut into pieces,
// under any cap: the same Content either way, each attribute valid JSON
// within the cap, nothing when the cap is 0, no panic.
func fuzzContent(f *testing.F, dir, path string, api API, streamType string) {
	for _, tr := range loadTranscripts(f, dir) {
		streamed := strings.HasPrefix(tr.x.ResponseHeader.Get("Content-Type"), streamType)
		f.Add(tr.x.RequestBody, responseBody(&tr.x), []byte{7, 100, 3}, streamed, uint16(300))
	}
	f.Fuzz(func(t *testing.T, req, resp, cuts []byte, stream bool, limit uint16) {
		x := Exchange{Path: path, RequestBody: req, Start: transcriptStart, Status: 200,
			ResponseHeader: Header{"Content-Type": {"application/json"}}}
		if stream {
			x.ResponseHeader["Content-Type"] = []string{streamType}
		}
		for _, p := range ssePieces(resp, cuts) {
			x.Chunks = append(x.Chunks, Chunk{At: transcriptStart, Data: p})
		}
		ep := Endpoint{API: api}
		c, err := Parse(&x, ep)
		require.NoError(t, err)
		got := ExtractContent(&x, &c, ep, int(limit))
		whole := x
		whole.Chunks = []Chunk{{At: transcriptStart, Data: resp}}
		w := ExtractContent(&whole, &c, ep, int(limit))
		require.True(t, contentEqual(got, w), "pieces:%s\nwhole:%s", contentDump(got), contentDump(w))
		if limit == 0 {
			require.True(t, contentEqual(got, Content{}), "cap 0:%s", contentDump(got))
		}
		for _, a := range []string{got.SystemInstructions, got.InputMessages, got.OutputMessages} {
			require.LessOrEqual(t, len(a), int(limit), "cap %d: %d bytes: %s", limit, len(a), a)
			if a != "" {
				require.True(t, json.Valid([]byte(a)), "cap %d: %d bytes: %s", limit, len(a), a)
			}
		}
	})
}

func FuzzContentOpenAI(f *testing.F) {
	fuzzContent(f, "openai", "/v1/chat/completions", APIOpenAIChatCompletions, "text/event-stream")
}

func FuzzContentResponses(f *testing.F) {
	fuzzContent(f, "openai", "/v1/responses", APIOpenAIResponses, "text/event-stream")
}

func FuzzContentAnthropic(f *testing.F) {
	fuzzContent(f, "anthropic", "/v1/messages", APIAnthropicMessages, "text/event-stream")
}

func FuzzContentGemini(f *testing.F) {
	fuzzContent(f, "gemini", "/v1beta/models/gemini-2.0-flash:streamGenerateContent", APIGeminiGenerateContent, "text/event-stream")
}

func FuzzContentOllama(f *testing.F) {
	fuzzContent(f, "ollama", "/api/chat", APIOllamaChat, "application/x-ndjson")
}

func FuzzContentBedrock(f *testing.F) {
	fuzzContent(f, "bedrock", "/model/m/converse-stream", APIBedrockConverse, "application/vnd.amazon.eventstream")
}

// FuzzAppendCompact: compacting is json.Compact on valid JSON; capped,
// it is the start of the whole, cut at a rune.
func FuzzAppendCompact(f *testing.F) {
	f.Add([]byte(`{ "a" : [1, 2 ,"x y\" z"],"é": "€ €" }`), uint16(9))
	f.Add([]byte("[\"\\\\\", \"\xff\"]"), uint16(3))
	f.Fuzz(func(t *testing.T, raw []byte, limit uint16) {
		// Each check is guarded by its condition: the fuzzer runs this
		// for every input, and testify's t.Helper is not free.
		whole, cut := appendCompact(nil, raw, len(raw))
		if cut {
			require.False(t, cut, "appendCompact(%q) cut with room for all", raw)
		}
		var want bytes.Buffer
		if json.Compact(&want, raw) == nil && !bytes.Equal(whole, want.Bytes()) {
			require.Equal(t, want.Bytes(), whole, "appendCompact(%q), want json.Compact's", raw)
		}
		got, cut := appendCompact([]byte("p"), raw, int(limit))
		got = got[1:]
		if len(got) > int(limit) || !bytes.HasPrefix(whole, got) || cut != (len(got) < len(whole)) {
			require.LessOrEqual(t, len(got), int(limit), "appendCompact(%q, %d) = %q, %v; whole %q", raw, limit, got, cut, whole)
			require.True(t, bytes.HasPrefix(whole, got), "appendCompact(%q, %d) = %q, %v; whole %q", raw, limit, got, cut, whole)
			require.Equal(t, len(got) < len(whole), cut, "appendCompact(%q, %d) = %q, %v; whole %q", raw, limit, got, cut, whole)
		}
		if utf8.Valid(raw) && !utf8.Valid(got) {
			require.True(t, utf8.Valid(got), "appendCompact(%q, %d) = %q: cut inside a rune", raw, limit, got)
		}
	})
}
