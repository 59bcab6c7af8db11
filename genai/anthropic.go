package genai

import (
	"bytes"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/xpuscope/xpuscope/genai/internal/jsonscan"
	"github.com/xpuscope/xpuscope/semconv"
)

// The Anthropic API, which Vertex AI serves too for Anthropic models.
const (
	APIAnthropicMessages API = "anthropic.messages" // POST /v1/messages; Vertex rawPredict of Anthropic models
)

// anthropicProvider is Anthropic's API and the proxies that speak it.
var anthropicProvider = provider{
	name: semconv.GenAIProviderAnthropic,
	apis: []apiReader{
		{APIAnthropicMessages, newAnthropicParser, anthropicContent},
	},
	hosts: map[string]knownHost{
		"api.anthropic.com": {provider: semconv.GenAIProviderAnthropic, route: anthropicHostRoute},
	},
	route: anthropicRoute,
	guesses: []guess{
		{semconv.GenAIProviderAnthropic, hasField("Anthropic-Version"), anthropicRoute},
	},
}

// anthropicRoute matches {prefix}/v1/messages.
func anthropicRoute(path string, x *Exchange) (routed, bool) {
	if path != "/v1/messages" && !strings.HasSuffix(path, "/v1/messages") {
		return routed{}, false
	}
	v := x.RequestHeader.Get("Anthropic-Version")
	return routed{api: APIAnthropicMessages, op: semconv.GenAIOperationChat, version: cleanField(v, maxVersionLen)}, true
}

// anthropicHostRoute serves api.anthropic.com: /v1/messages, and its
// OpenAI compatibility endpoints.
func anthropicHostRoute(path string, x *Exchange) (routed, bool) {
	if path == "/v1/messages" {
		return anthropicRoute(path, x)
	}
	return openAIV1Route(path, x)
}

// anthropicCall reads an exchange in the Anthropic Messages API format
// into c: POST /v1/messages, streamed (text/event-stream) or not, as
// served by api.anthropic.com, by Vertex AI's rawPredict and
// streamRawPredict for Anthropic models (whose path names the model), and
// by proxies that speak the same format.
//
// It sets every request, response and timing field of c and leaves
// Provider and Operation alone. Bodies may be truncated anywhere: fields
// that stood before the cut are read, and Incomplete says that some may
// be missing. Only names, numbers and identifiers are kept (strings at
// most 256 bytes, lists at most 128 entries), never prompt, completion,
// thinking or tool-argument text; of the headers only Content-Type and
// Content-Encoding are read.
//
// Request: model (or the model of a Vertex AI path), temperature, top_p,
// max_tokens, stream and tools[].name. The API has no choice count.
//
// Response: the message's id, model and stop_reason (FinishReasons holds
// Anthropic's own values: end_turn, max_tokens, stop_sequence, tool_use,
// pause_turn, refusal, …), the names of its tool_use (and server and MCP
// tool use) content blocks, and the error type of an error body or an
// error event ({"type":"error","error":{"type":"overloaded_error",…}}),
// also on a 2xx; on Vertex AI an error in Google's format
// ({"error":{"code":429,"status":"RESOURCE_EXHAUSTED",…}}) gives its
// status, else its code.
//
// Streams: message_start carries the id, the model and the input side of
// the usage; content_block_start names tool calls; content_block_delta
// carries the output; message_delta carries the stop reason and the
// output tokens (cumulative, and in newer API versions the input side
// again); message_stop and error end the stream. A stream that ends
// before either is Incomplete.
//
// Usage is mapped the OpenTelemetry way, which counts cached input as
// input: InputTokens = input_tokens + cache_read_input_tokens +
// cache_creation_input_tokens (Anthropic's input_tokens counts only the
// tokens after the last cache breakpoint), CacheReadTokens =
// cache_read_input_tokens, CacheCreationTokens =
// cache_creation_input_tokens, OutputTokens = output_tokens (which
// includes extended-thinking tokens; the API does not report those
// apart, so ReasoningTokens stays -1). Within one body or event the sum
// is taken once the three counts have been read, or the JSON is whole,
// so that a body cut inside its usage never shows a partial sum. Later
// events replace earlier counts, field by field.
//
// Timing: TimeToFirstChunk is from Start to the arrival of the first
// event that carries output (a text, thinking or tool-input delta, or the
// start of a tool_use block), TimePerChunk the mean gap between such
// events after the first, OutputChunks their number; a response that is
// not streamed has none (-1, -1, 0).
func anthropicCall(x *Exchange, c *Call) { parseWith(newAnthropicParser(), x, c) }

// newAnthropicParser returns a parser of anthropicCall's from the pool.
func newAnthropicParser() responseParser { return anthropicPool.Get().(*anthropicParser) }

var anthropicPool = sync.Pool{New: func() any { return new(anthropicParser) }}

// Request fields.
const (
	aReqModel = iota
	aReqTemperature
	aReqTopP
	aReqMaxTokens
	aReqStream
	aReqToolName
)

var anthropicRequestPaths = jsonscan.Compile(anthropicRequestFields[:]...)

var anthropicRequestFields = [...]string{
	aReqModel:       "model",
	aReqTemperature: "temperature",
	aReqTopP:        "top_p",
	aReqMaxTokens:   "max_tokens",
	aReqStream:      "stream",
	aReqToolName:    "tools[*].name",
}

// Response fields: a whole message, the events of a stream, and error
// bodies go through one matcher.
const (
	aType = iota
	aID
	aModel
	aStopReason
	aContentName
	aUsageInput
	aUsageOutput
	aUsageCacheRead
	aUsageCacheCreation
	aMsgID
	aMsgModel
	aMsgStopReason
	aMsgUsageInput
	aMsgUsageOutput
	aMsgUsageCacheRead
	aMsgUsageCacheCreation
	aBlockName
	aBlockText
	aBlockThinking
	aDeltaText
	aDeltaPartialJSON
	aDeltaThinking
	aDeltaStopReason
	aErrType
	aErrStatus
	aErrCode
)

var anthropicResponsePaths = jsonscan.Compile(anthropicResponseFields[:]...)

var anthropicResponseFields = [...]string{
	aType:                  "type",
	aID:                    "id",
	aModel:                 "model",
	aStopReason:            "stop_reason",
	aContentName:           "content[*].name",
	aUsageInput:            "usage.input_tokens",
	aUsageOutput:           "usage.output_tokens",
	aUsageCacheRead:        "usage.cache_read_input_tokens",
	aUsageCacheCreation:    "usage.cache_creation_input_tokens",
	aMsgID:                 "message.id",
	aMsgModel:              "message.model",
	aMsgStopReason:         "message.stop_reason",
	aMsgUsageInput:         "message.usage.input_tokens",
	aMsgUsageOutput:        "message.usage.output_tokens",
	aMsgUsageCacheRead:     "message.usage.cache_read_input_tokens",
	aMsgUsageCacheCreation: "message.usage.cache_creation_input_tokens",
	aBlockName:             "content_block.name",
	aBlockText:             "content_block.text",
	aBlockThinking:         "content_block.thinking",
	aDeltaText:             "delta.text",
	aDeltaPartialJSON:      "delta.partial_json",
	aDeltaThinking:         "delta.thinking",
	aDeltaStopReason:       "delta.stop_reason",
	aErrType:               "error.type",
	aErrStatus:             "error.status",
	aErrCode:               "error.code",
}

// anthropicParser is the state of one anthropicCall call, pooled so
// that its buffers are reused.
type anthropicParser struct {
	c    *Call
	resp sseResponse
	f    anthropicFields
	buf  []byte // a non-streamed body in several chunks

	// The raw counts, merged over events; -1 until reported.
	input, output, cacheRead, cacheCreation int64

	terminal   bool // message_stop, or an error
	incomplete bool
	timer      contentTimer
}

// anthropicFields holds one event's (or body's) fields until it has been
// read.
type anthropicFields struct {
	typ, id, model                        []byte
	errName, errCode                      []byte // errName: the error's type, or its status
	errNameSeen                           bool
	input, output, cacheRead, cacheCreate int64
	cacheReadSeen, cacheCrtSeen           bool
	content                               bool
}

func (a *anthropicParser) release() {
	defer anthropicPool.Put(a)
	a.c = nil
	a.f = anthropicFields{}
	if cap(a.buf) > 1<<20 {
		a.buf = nil
	}
	a.buf = a.buf[:0]
	a.resp.sse.Reset()
}

func (a *anthropicParser) begin(x *Exchange, c *Call) {
	*a = anthropicParser{resp: sseResponse{sse: a.resp.sse}, buf: a.buf[:0], c: c,
		input: -1, output: -1, cacheRead: -1, cacheCreation: -1}
	resetCall(c)
	a.incomplete = x.RequestTruncated || x.ResponseTruncated

	// Request.
	if len(x.RequestBody) > 0 && !encoded(x.RequestHeader) {
		if anthropicRequestPaths.Scan(x.RequestBody, anthropicRequest{c}) == jsonscan.Truncated {
			a.incomplete = true
		}
	} else if x.RequestTruncated || encoded(x.RequestHeader) {
		a.incomplete = true
	}
	if c.RequestModel == "" {
		// Vertex AI: …/publishers/anthropic/models/{model}:rawPredict.
		c.RequestModel, _ = pathModelMethod(x.Path)
	}

	// Response.
	if a.resp.begin(x.ResponseHeader); a.resp.body.off {
		a.incomplete = true
	}
}

func (a *anthropicParser) chunk(ch Chunk) { a.resp.chunk(ch, a.c, a.sseEvent) }

func (a *anthropicParser) sseEvent(ev SSEEvent, at time.Time) { a.event(ev.Data, ev.Type, at) }

func (a *anthropicParser) end(x *Exchange, c *Call) {
	switch whole, skipped := a.resp.end(c, a.sseEvent); {
	case whole:
		a.incomplete = a.incomplete || x.ResponseTruncated
		a.parseBody(x)
	case a.resp.body.stream && (skipped || !a.terminal):
		a.incomplete = true
	}

	// Usage, the OpenTelemetry way: input includes the cache.
	u := &c.Usage
	if a.input >= 0 {
		u.InputTokens = addCounts(addCounts(a.input, max(a.cacheRead, 0)), max(a.cacheCreation, 0))
	}
	u.OutputTokens = a.output
	u.CacheReadTokens = a.cacheRead
	u.CacheCreationTokens = a.cacheCreation

	a.timer.finish(x, c)
	c.Incomplete = a.incomplete
}

func (a *anthropicParser) parseBody(x *Exchange) {
	var body []byte
	if body, a.buf = wholeBody(a.buf, x.Chunks); body == nil {
		return
	}
	a.event(body, nil, time.Time{})
}

// event reads one streamed event's data, or a whole body.
func (a *anthropicParser) event(data, sseType []byte, at time.Time) {
	if len(bytes.TrimSpace(data)) == 0 {
		return
	}
	// Untrimmed: the white space after a number at the cut tells that
	// the number is whole.
	a.f = anthropicFields{input: -1, output: -1, cacheRead: -1, cacheCreate: -1}
	complete := true
	if anthropicResponsePaths.Scan(data, a) == jsonscan.Truncated {
		a.incomplete = true
		complete = false
	}
	f, c := &a.f, a.c
	setOnce(&c.ResponseID, f.id)
	setOnce(&c.ResponseModel, f.model)

	// The input side is summed at the end: take an event's input_tokens
	// only with the cache counts that stand beside it.
	if f.input >= 0 && (complete || (f.cacheReadSeen && f.cacheCrtSeen)) {
		a.input = f.input
	}
	if f.cacheRead >= 0 {
		a.cacheRead = f.cacheRead
	}
	if f.cacheCreate >= 0 {
		a.cacheCreation = f.cacheCreate
	}
	if f.output >= 0 {
		a.output = f.output
	}

	typ := f.typ
	if len(typ) == 0 {
		typ = sseType
	}
	if et := anthropicError(f, typ, complete); et != "" {
		// A stream ends at an error: nothing is missing after it.
		a.terminal = true
		if c.ErrorType == "" {
			c.ErrorType = et
		}
	}
	if string(typ) == "message_stop" {
		a.terminal = true
	}
	if a.resp.body.stream && f.content {
		a.timer.mark(at)
	}
}

// anthropicError picks the error type of an event or body, or "": the
// error object's type (Anthropic) or status (Google's format, from
// Vertex AI; the two formats do not mix, and the first one present
// counts), else its code, else "error" for an error event without one.
// When the data was cut (!complete), a fallback is taken only once the
// preferred field has been seen (Google's error objects give the code
// before the status), so that what a prefix yields, the whole yields
// too.
func anthropicError(f *anthropicFields, typ []byte, complete bool) string {
	var et []byte
	switch {
	case usable(f.errName):
		et = f.errName
	case len(f.errCode) > 0:
		if f.errNameSeen || complete {
			et = f.errCode
		}
	case string(typ) == "error":
		if complete {
			et = []byte("error")
		}
	}
	if len(et) == 0 {
		return ""
	}
	return stringOf(et)
}

// Value receives the response matcher's fields.
func (a *anthropicParser) Value(id int, kind jsonscan.Kind, raw []byte) {
	f := &a.f
	nonEmpty := kind == jsonscan.String && len(raw) > 0
	switch id {
	case aType:
		f.typ = strView(kind, raw)
	case aID, aMsgID:
		f.id = strView(kind, raw)
	case aModel, aMsgModel:
		f.model = strView(kind, raw)
	case aStopReason, aMsgStopReason, aDeltaStopReason:
		if nonEmpty {
			appendName(&a.c.FinishReasons, raw)
		}
	case aContentName:
		if nonEmpty {
			appendName(&a.c.ToolCalls, raw)
		}
	case aBlockName:
		if nonEmpty {
			f.content = true
			appendName(&a.c.ToolCalls, raw)
		}
	case aBlockText, aBlockThinking, aDeltaText, aDeltaPartialJSON, aDeltaThinking:
		if nonEmpty {
			f.content = true
		}
	case aUsageInput, aMsgUsageInput:
		setInt(&f.input, kind, raw)
	case aUsageOutput, aMsgUsageOutput:
		setInt(&f.output, kind, raw)
	case aUsageCacheRead, aMsgUsageCacheRead:
		setInt(&f.cacheRead, kind, raw)
		f.cacheReadSeen = true
	case aUsageCacheCreation, aMsgUsageCacheCreation:
		setInt(&f.cacheCreate, kind, raw)
		f.cacheCrtSeen = true
	case aErrType, aErrStatus:
		if len(f.errName) == 0 {
			f.errName = strView(kind, raw)
		}
		f.errNameSeen = true
	case aErrCode:
		f.errCode = scalarView(kind, raw)
	}
}

// anthropicRequest receives the request matcher's fields.
type anthropicRequest struct{ c *Call }

func (r anthropicRequest) Value(id int, kind jsonscan.Kind, raw []byte) {
	c := r.c
	switch id {
	case aReqModel:
		if kind == jsonscan.String && c.RequestModel == "" {
			c.RequestModel = stringOf(raw)
		}
	case aReqTemperature:
		setFloat(&c.Temperature, kind, raw)
	case aReqTopP:
		setFloat(&c.TopP, kind, raw)
	case aReqMaxTokens:
		setInt(&c.MaxTokens, kind, raw)
	case aReqStream:
		c.Stream = kind == jsonscan.True
	case aReqToolName:
		if kind == jsonscan.String && len(raw) > 0 {
			appendName(&c.ToolDefinitions, raw)
		}
	}
}

// anthropicContent reads Anthropic Messages content: system and
// messages in, content blocks out, whole or as a stream of
// content_block_start and content_block_delta events. The same format
// comes from Vertex AI's rawPredict.
func anthropicContent(x *Exchange, _ *Call, r *contentReader) {
	r.request(x, anthropicInputPaths, &blockInput{r: r, fields: anthropicInputFields, msg: -1})
	if !r.response(x) {
		return
	}
	v := &blockOutput{out: &r.out, fields: anthropicOutputFields}
	if !isEventStream(x) {
		r.body(x, anthropicOutputPaths, v)
		return
	}
	r.events(x, func(data []byte) { r.output(anthropicOutputPaths, data, v) })
}

// anthropicBlockFields: text, thinking, tool_use (id, name, input) and
// tool_result (tool_use_id, content) blocks.
var anthropicBlockFields = []fieldPath{
	{"text", bfText},
	{"thinking", bfReasoning},
	{"id", bfCallID},
	{"name", bfCallName},
	{"input", bfCallArgs},
	{"tool_use_id", bfResultID},
	{"content", bfResult},
}

var anthropicInputFields = slices.Concat([]fieldPath{
	{"system", biSystem},
	{"system[*].text", biSystem},
	{"messages[*]", biMessage},
	{"messages[*].role", biRole},
	{"messages[*].content", biContent},
	{"messages[*].content[*]", biBlock},
}, blockPaths("messages[*].content[*].", anthropicBlockFields))

var anthropicInputPaths = compileFields(anthropicInputFields)

// Responses: a message's content blocks and stop_reason; a stream's
// content_block_start, content_block_delta (text, thinking, a tool
// call's partial_json) and message_delta events.
var anthropicOutputFields = slices.Concat([]fieldPath{
	{"stop_reason", boStop},
	{"delta.stop_reason", boStop},
	{"index", boIndex},
	{"content[*]", boBlock},
	{"content_block.text", boStart + bfText},
	{"content_block.thinking", boStart + bfReasoning},
	{"content_block.id", boStart + bfCallID},
	{"content_block.name", boStart + bfCallName},
	{"delta.text", boDelta + bfText},
	{"delta.thinking", boDelta + bfReasoning},
	{"delta.partial_json", boDelta + bfCallArgs},
}, blockPaths("content[*].", anthropicBlockFields))

var anthropicOutputPaths = compileFields(anthropicOutputFields)
