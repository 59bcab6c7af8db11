package genai

import (
	"bytes"
	"strings"
	"sync"
	"time"

	"github.com/xpuscope/xpuscope/genai/internal/jsonscan"
	"github.com/xpuscope/xpuscope/semconv"
)

// ParseOpenAI reads an exchange in the OpenAI API formats into c: chat
// completions, completions, the Responses API and embeddings, streamed
// (text/event-stream) or not; the same formats served by Azure OpenAI and
// by OpenAI-compatible servers (vLLM, TGI, llama.cpp, LiteLLM, …).
//
// It sets every request, response and timing field of c and leaves
// Provider alone; Operation too, unless it is empty, in which case it is
// inferred from the path. Bodies may be truncated anywhere: fields that
// stood before the cut are read, and Incomplete says that some may be
// missing. Only names, numbers and identifiers are kept (strings at most
// 256 bytes, lists at most 128 entries), never prompt or completion text;
// of the headers only Content-Type and Content-Encoding are read.
//
// Timing: TimeToFirstChunk is from Start to the arrival of the first
// streamed event that carries output (text, reasoning, refusal, audio or
// a tool call), TimePerChunk the mean gap between such events after the
// first, OutputChunks their number; a response that is not streamed has
// none (-1, -1, 0). For the Responses API, FinishReasons is "stop" for a
// completed response and the incomplete_details reason for an incomplete
// one.
func ParseOpenAI(x *Exchange, c *Call) {
	o := openaiPool.Get().(*openaiParser)
	o.parse(x, c)
	o.release()
	openaiPool.Put(o)
}

var openaiPool = sync.Pool{New: func() any { return new(openaiParser) }}

// openaiOperation infers gen_ai.operation.name from an OpenAI-style path.
func openaiOperation(path string) string {
	path, _, _ = strings.Cut(path, "?")
	path = strings.TrimRight(path, "/")
	switch {
	case strings.HasSuffix(path, "/chat/completions"), strings.HasSuffix(path, "/responses"):
		return semconv.GenAIOperationChat
	case strings.HasSuffix(path, "/completions"):
		return semconv.GenAIOperationTextCompletion
	case strings.HasSuffix(path, "/embeddings"):
		return semconv.GenAIOperationEmbeddings
	}
	return ""
}

// azureDeployment returns the deployment of an Azure OpenAI path
// (/openai/deployments/{name}/…), or "".
func azureDeployment(path string) string {
	_, rest, ok := strings.Cut(path, "/openai/deployments/")
	if !ok {
		return ""
	}
	name, _, ok := strings.Cut(rest, "/")
	if !ok {
		return ""
	}
	return clampString(name)
}

// Request fields.
const (
	reqModel = iota
	reqTemperature
	reqTopP
	reqMaxTokens
	reqMaxCompletionTokens
	reqMaxOutputTokens
	reqStream
	reqN
	reqToolName         // chat: tools[*].function.name
	reqResponseToolName // Responses API: tools[*].name
	reqFunctionName     // legacy chat: functions[*].name
)

var openaiRequestPaths = jsonscan.Compile(openaiRequestFields[:]...)

var openaiRequestFields = [...]string{
	reqModel:               "model",
	reqTemperature:         "temperature",
	reqTopP:                "top_p",
	reqMaxTokens:           "max_tokens",
	reqMaxCompletionTokens: "max_completion_tokens",
	reqMaxOutputTokens:     "max_output_tokens",
	reqStream:              "stream",
	reqN:                   "n",
	reqToolName:            "tools[*].function.name",
	reqResponseToolName:    "tools[*].name",
	reqFunctionName:        "functions[*].name",
}

// Response fields. Chat chunks, completions, embeddings, Responses API
// objects and streaming events all go through one matcher: the formats
// do not collide.
const (
	rID = iota
	rModel
	rObject
	rType // Responses API event type; vLLM error type
	rCode // Responses API error event
	rStatus
	rIncompleteReason
	rFinishReason
	rDeltaContent
	rDeltaReasoningContent
	rDeltaReasoning
	rDeltaRefusal
	rDeltaAudioData
	rDeltaAudioTranscript
	rDeltaToolName
	rDeltaToolArguments
	rDeltaFunctionName
	rDeltaFunctionArguments
	rText // completions
	rMessageToolName
	rMessageFunctionName
	rOutputName // Responses API, not streamed: output[*].name
	rItemName   // Responses API: response.output_item.added
	rPromptTokens
	rCompletionTokens
	rInputTokens
	rOutputTokens
	rPromptCached
	rInputCached
	rCompletionReasoning
	rOutputReasoning
	rError     // a scalar error: a message (TGI), or null
	rErrorType // TGI: error_type
	rErrorObjType
	rErrorObjCode
	rRespID
	rRespModel
	rRespStatus
	rRespIncompleteReason
	rRespInputTokens
	rRespOutputTokens
	rRespInputCached
	rRespOutputReasoning
	rRespErrorCode
	rRespErrorType
)

var openaiResponsePaths = jsonscan.Compile(openaiResponseFields[:]...)

var openaiResponseFields = [...]string{
	rID:                     "id",
	rModel:                  "model",
	rObject:                 "object",
	rType:                   "type",
	rCode:                   "code",
	rStatus:                 "status",
	rIncompleteReason:       "incomplete_details.reason",
	rFinishReason:           "choices[*].finish_reason",
	rDeltaContent:           "choices[*].delta.content",
	rDeltaReasoningContent:  "choices[*].delta.reasoning_content",
	rDeltaReasoning:         "choices[*].delta.reasoning",
	rDeltaRefusal:           "choices[*].delta.refusal",
	rDeltaAudioData:         "choices[*].delta.audio.data",
	rDeltaAudioTranscript:   "choices[*].delta.audio.transcript",
	rDeltaToolName:          "choices[*].delta.tool_calls[*].function.name",
	rDeltaToolArguments:     "choices[*].delta.tool_calls[*].function.arguments",
	rDeltaFunctionName:      "choices[*].delta.function_call.name",
	rDeltaFunctionArguments: "choices[*].delta.function_call.arguments",
	rText:                   "choices[*].text",
	rMessageToolName:        "choices[*].message.tool_calls[*].function.name",
	rMessageFunctionName:    "choices[*].message.function_call.name",
	rOutputName:             "output[*].name",
	rItemName:               "item.name",
	rPromptTokens:           "usage.prompt_tokens",
	rCompletionTokens:       "usage.completion_tokens",
	rInputTokens:            "usage.input_tokens",
	rOutputTokens:           "usage.output_tokens",
	rPromptCached:           "usage.prompt_tokens_details.cached_tokens",
	rInputCached:            "usage.input_tokens_details.cached_tokens",
	rCompletionReasoning:    "usage.completion_tokens_details.reasoning_tokens",
	rOutputReasoning:        "usage.output_tokens_details.reasoning_tokens",
	rError:                  "error",
	rErrorType:              "error_type",
	rErrorObjType:           "error.type",
	rErrorObjCode:           "error.code",
	rRespID:                 "response.id",
	rRespModel:              "response.model",
	rRespStatus:             "response.status",
	rRespIncompleteReason:   "response.incomplete_details.reason",
	rRespInputTokens:        "response.usage.input_tokens",
	rRespOutputTokens:       "response.usage.output_tokens",
	rRespInputCached:        "response.usage.input_tokens_details.cached_tokens",
	rRespOutputReasoning:    "response.usage.output_tokens_details.reasoning_tokens",
	rRespErrorCode:          "response.error.code",
	rRespErrorType:          "response.error.type",
}

// openaiParser is the state of one ParseOpenAI call, pooled so that its
// buffers are reused.
type openaiParser struct {
	c   *Call
	sse SSEParser
	req openaiRequest
	f   openaiFields // the event (or body) being read
	buf []byte       // a non-streamed body in several chunks

	streaming  bool
	terminal   bool // [DONE], or a final Responses API event
	incomplete bool
	contentN   int
	first      time.Time
	last       time.Time
}

// openaiFields holds one event's scalar fields, as views of its data,
// until the event has been read: what they mean can depend on each other
// (an event's type, an object's kind), whatever order they come in.
type openaiFields struct {
	id, model, object, typ, code, status, incomplete []byte
	itemName                                         []byte
	errScalarSet                                     bool // "error" is a string
	errTypeTop                                       []byte
	errType, errCode                                 []byte
	errTypeSeen, errTypeTopSeen, respErrTypeSeen     bool
	respID, respModel, respStatus, respIncomplete    []byte
	respErrType, respErrCode                         []byte
	usage                                            Usage
	content                                          bool
}

func (o *openaiParser) release() {
	o.c = nil
	o.f = openaiFields{}
	o.req.c = nil
	if cap(o.buf) > 1<<20 {
		o.buf = nil
	}
	o.buf = o.buf[:0]
	o.sse.Reset()
}

func (o *openaiParser) parse(x *Exchange, c *Call) {
	*o = openaiParser{sse: o.sse, buf: o.buf[:0], c: c}
	o.sse.Reset()
	resetCall(c)
	if c.Operation == "" {
		c.Operation = openaiOperation(x.Path)
	}
	o.incomplete = x.RequestTruncated || x.ResponseTruncated

	// Request.
	if len(x.RequestBody) > 0 && !encoded(x.RequestHeader) {
		o.req = openaiRequest{c: c}
		if openaiRequestPaths.Scan(x.RequestBody, &o.req) == jsonscan.Truncated {
			o.incomplete = true
		}
	} else if x.RequestTruncated || encoded(x.RequestHeader) {
		o.incomplete = true
	}
	if c.RequestModel == "" {
		c.RequestModel = azureDeployment(x.Path)
	}

	// Response.
	if encoded(x.ResponseHeader) {
		o.incomplete = true
	} else if o.streaming = isEventStream(x); o.streaming {
		c.Stream = true
		o.parseStream(x)
	} else {
		o.parseBody(x)
	}

	// Timing.
	end := x.End
	if end.IsZero() && len(x.Chunks) > 0 {
		end = x.Chunks[len(x.Chunks)-1].At
	}
	if !x.Start.IsZero() && !end.IsZero() && !end.Before(x.Start) {
		c.Duration = end.Sub(x.Start)
	}
	c.OutputChunks = o.contentN
	if o.contentN > 0 && !x.Start.IsZero() {
		c.TimeToFirstChunk = max(0, o.first.Sub(x.Start))
	}
	if o.contentN > 1 {
		c.TimePerChunk = max(0, o.last.Sub(o.first)/time.Duration(o.contentN-1))
	}
	c.Incomplete = o.incomplete
}

func (o *openaiParser) parseBody(x *Exchange) {
	var body []byte
	if body, o.buf = wholeBody(o.buf, x.Chunks); body == nil {
		return
	}
	o.event(body, nil, time.Time{})
}

func (o *openaiParser) parseStream(x *Exchange) {
	skipped := sseEvents(&o.sse, x.Chunks, func(ev SSEEvent, at time.Time) { o.event(ev.Data, ev.Type, at) })
	if skipped || !o.terminal {
		o.incomplete = true
	}
}

var done = []byte("[DONE]")

// event reads one streamed event's data, or a whole body.
func (o *openaiParser) event(data, sseType []byte, at time.Time) {
	data = bytes.TrimSpace(data)
	if bytes.Equal(data, done) {
		o.terminal = true
		return
	}
	o.f = openaiFields{usage: NoUsage}
	complete := true
	if len(data) > 0 && openaiResponsePaths.Scan(data, o) == jsonscan.Truncated {
		o.incomplete = true
		complete = false
	}
	f, c := &o.f, o.c

	setOnce(&c.ResponseID, f.id)
	setOnce(&c.ResponseID, f.respID)
	setOnce(&c.ResponseModel, f.model)
	setOnce(&c.ResponseModel, f.respModel)
	mergeUsage(&c.Usage, &f.usage)

	typ := f.typ
	if len(typ) == 0 {
		typ = sseType
	}
	if et := openaiError(f, typ, complete); et != "" {
		// A stream ends at an error: nothing is missing after it.
		o.terminal = true
		if c.ErrorType == "" {
			c.ErrorType = et
		}
	}
	status, reason := f.status, f.incomplete
	switch string(typ) {
	case "response.completed", "response.incomplete":
		o.terminal = true
		status, reason = f.respStatus, f.respIncomplete
	case "response.failed", "error":
		o.terminal = true
	case "response.output_item.added":
		appendName(&c.ToolCalls, f.itemName)
	}
	switch string(status) {
	case "completed":
		appendName(&c.FinishReasons, []byte("stop"))
	case "incomplete":
		if len(reason) == 0 && complete {
			reason = status
		}
		appendName(&c.FinishReasons, reason)
	}

	if o.streaming && (f.content || bytes.HasSuffix(typ, []byte(".delta"))) {
		if o.contentN == 0 {
			o.first = at
		}
		o.last = at
		o.contentN++
	}
}

// openaiError picks the error type of an event or body, or "". A type
// is preferred to a code, a code to a generic "error". When the data was
// cut (!complete), a fallback is taken only once the preferred field has
// been seen: what a prefix yields, the whole must yield too.
func openaiError(f *openaiFields, typ []byte, complete bool) string {
	var et []byte
	generic := []byte("error")
	switch {
	case usable(f.errType):
		et = f.errType
	case len(f.errCode) > 0:
		if f.errTypeSeen || complete {
			et = f.errCode
		}
	case f.errScalarSet: // {"error": "message", "error_type": …} (TGI)
		if usable(f.errTypeTop) {
			et = f.errTypeTop
		} else if f.errTypeTopSeen || complete {
			et = generic
		}
	case string(f.object) == "error": // vLLM: the body is the error
		switch {
		case usable(f.typ):
			et = f.typ
		case !complete:
		case len(f.code) > 0:
			et = f.code
		default:
			et = generic
		}
	case string(typ) == "error": // Responses API error event, SSE "event: error"
		switch {
		case len(f.code) > 0:
			et = f.code
		case complete:
			et = generic
		}
	case usable(f.respErrType):
		et = f.respErrType
	case len(f.respErrCode) > 0:
		if f.respErrTypeSeen || complete {
			et = f.respErrCode
		}
	}
	if len(et) == 0 {
		return ""
	}
	return stringOf(et)
}

// Value receives the response matcher's fields.
func (o *openaiParser) Value(id int, kind jsonscan.Kind, raw []byte) {
	f := &o.f
	str := kind == jsonscan.String
	nonEmpty := str && len(raw) > 0
	switch id {
	case rID:
		f.id = strView(kind, raw)
	case rModel:
		f.model = strView(kind, raw)
	case rObject:
		f.object = strView(kind, raw)
	case rType:
		f.typ = strView(kind, raw)
	case rCode:
		f.code = scalarView(kind, raw)
	case rStatus:
		f.status = strView(kind, raw)
	case rIncompleteReason:
		f.incomplete = strView(kind, raw)
	case rFinishReason:
		if nonEmpty {
			appendName(&o.c.FinishReasons, raw)
		}
	case rDeltaContent, rDeltaReasoningContent, rDeltaReasoning, rDeltaRefusal,
		rDeltaAudioData, rDeltaAudioTranscript, rDeltaToolArguments, rDeltaFunctionArguments, rText:
		if nonEmpty {
			f.content = true
		}
	case rDeltaToolName, rDeltaFunctionName:
		if nonEmpty {
			f.content = true
			appendName(&o.c.ToolCalls, raw)
		}
	case rMessageToolName, rMessageFunctionName, rOutputName:
		if nonEmpty {
			appendName(&o.c.ToolCalls, raw)
		}
	case rItemName:
		f.itemName = strView(kind, raw)
	case rPromptTokens, rInputTokens, rRespInputTokens:
		setInt(&f.usage.InputTokens, kind, raw)
	case rCompletionTokens, rOutputTokens, rRespOutputTokens:
		setInt(&f.usage.OutputTokens, kind, raw)
	case rPromptCached, rInputCached, rRespInputCached:
		setInt(&f.usage.CacheReadTokens, kind, raw)
	case rCompletionReasoning, rOutputReasoning, rRespOutputReasoning:
		setInt(&f.usage.ReasoningTokens, kind, raw)
	case rError:
		if str {
			f.errScalarSet = true
		}
	case rErrorType:
		f.errTypeTop, f.errTypeTopSeen = strView(kind, raw), true
	case rErrorObjType:
		f.errType, f.errTypeSeen = strView(kind, raw), true
	case rErrorObjCode:
		f.errCode = scalarView(kind, raw)
	case rRespID:
		f.respID = strView(kind, raw)
	case rRespModel:
		f.respModel = strView(kind, raw)
	case rRespStatus:
		f.respStatus = strView(kind, raw)
	case rRespIncompleteReason:
		f.respIncomplete = strView(kind, raw)
	case rRespErrorCode:
		f.respErrCode = scalarView(kind, raw)
	case rRespErrorType:
		f.respErrType, f.respErrTypeSeen = strView(kind, raw), true
	}
}

// openaiRequest receives the request matcher's fields.
type openaiRequest struct {
	c           *Call
	maxTokensAt int // which field set MaxTokens
}

func (r *openaiRequest) Value(id int, kind jsonscan.Kind, raw []byte) {
	c := r.c
	switch id {
	case reqModel:
		if kind == jsonscan.String && c.RequestModel == "" {
			c.RequestModel = stringOf(raw)
		}
	case reqTemperature:
		setFloat(&c.Temperature, kind, raw)
	case reqTopP:
		setFloat(&c.TopP, kind, raw)
	case reqMaxTokens, reqMaxCompletionTokens, reqMaxOutputTokens:
		// The first one present counts; a request has only one.
		if c.MaxTokens < 0 {
			setInt(&c.MaxTokens, kind, raw)
		}
	case reqStream:
		c.Stream = kind == jsonscan.True
	case reqN:
		setInt(&c.ChoiceCount, kind, raw)
	case reqToolName, reqResponseToolName, reqFunctionName:
		if kind == jsonscan.String && len(raw) > 0 {
			appendName(&c.ToolDefinitions, raw)
		}
	}
}

func mergeUsage(dst, src *Usage) {
	for _, p := range [...]struct{ d, s *int64 }{
		{&dst.InputTokens, &src.InputTokens},
		{&dst.OutputTokens, &src.OutputTokens},
		{&dst.CacheReadTokens, &src.CacheReadTokens},
		{&dst.CacheCreationTokens, &src.CacheCreationTokens},
		{&dst.ReasoningTokens, &src.ReasoningTokens},
	} {
		if *p.s >= 0 {
			*p.d = *p.s
		}
	}
}
