package genai

import (
	"bytes"
	"strings"
	"sync"
	"time"

	"github.com/xpuscope/xpuscope/genai/internal/jsonscan"
	"github.com/xpuscope/xpuscope/semconv"
)

// The OpenAI APIs, which Azure OpenAI, the OpenAI-compatible APIs of
// other providers and OpenAI-compatible servers speak too.
const (
	APIOpenAIChatCompletions API = "openai.chat_completions" // POST …/chat/completions
	APIOpenAICompletions     API = "openai.completions"      // POST …/completions (legacy)
	APIOpenAIResponses       API = "openai.responses"        // POST …/responses
	APIOpenAIEmbeddings      API = "openai.embeddings"       // POST …/embeddings
)

// OpenAIAPIType returns the openai.api.type value of the endpoint:
// chat_completions or responses, or "" for other APIs.
func (e Endpoint) OpenAIAPIType() string {
	switch e.API {
	case APIOpenAIChatCompletions:
		return semconv.OpenAIAPITypeChatCompletions
	case APIOpenAIResponses:
		return semconv.OpenAIAPITypeResponses
	}
	return ""
}

// openAIProvider is OpenAI, Azure OpenAI and Azure AI model inference,
// the OpenAI-compatible APIs of Mistral, Groq, DeepSeek, xAI, Perplexity
// and Cohere, and any OpenAI-compatible server or gateway.
var openAIProvider = provider{
	name: semconv.GenAIProviderOpenAI,
	apis: []apiReader{
		{APIOpenAIChatCompletions, newOpenAIParser, openaiChatContent},
		{APIOpenAICompletions, newOpenAIParser, openaiChatContent},
		{APIOpenAIResponses, newOpenAIParser, openaiResponsesContent},
		{APIOpenAIEmbeddings, newOpenAIParser, nil},
	},
	hosts: map[string]knownHost{
		"api.openai.com":    {provider: semconv.GenAIProviderOpenAI, route: openAIV1Route},
		"api.mistral.ai":    {provider: semconv.GenAIProviderMistralAI, route: compatRoute},
		"api.groq.com":      {provider: semconv.GenAIProviderGroq, route: compatRoute},
		"api.deepseek.com":  {provider: semconv.GenAIProviderDeepSeek, route: compatRoute},
		"api.x.ai":          {provider: semconv.GenAIProviderXAI, route: compatRoute},
		"api.perplexity.ai": {provider: semconv.GenAIProviderPerplexity, route: compatRoute},
		"api.cohere.com":    {provider: semconv.GenAIProviderCohere, route: compatRoute},
		"api.cohere.ai":     {provider: semconv.GenAIProviderCohere, route: compatRoute},
	},
	hostSuffixes: []hostSuffix{
		{suffix: ".openai.azure.com", host: &azureOpenAIHost},
		{suffix: ".cognitiveservices.azure.com", host: &azureOpenAIHost},
		{suffix: ".services.ai.azure.com", host: &azureOpenAIHost}, // Azure AI Foundry: the path tells which
		{suffix: ".inference.ai.azure.com", host: &azureInferenceHost},
		{suffix: ".models.ai.azure.com", host: &azureInferenceHost},
	},
	route: either(azureOpenAIRoute, openAIAnyRoute),
	guesses: []guess{
		// Azure's api-key field, on an OpenAI path of any shape.
		{semconv.GenAIProviderAzureAIOpenAI, hasField("Api-Key"), openAIAnyRoute},
		{semconv.GenAIProviderAzureAIOpenAI, nil, versionedAzureRoute},
		{semconv.GenAIProviderOpenAICompatible, nil, openAIV1SuffixRoute},
		{semconv.GenAIProviderOpenAICompatible, nil, chatMessagesRoute},
	},
}

// compatRoute serves the API of an OpenAI-compatible provider: the
// OpenAI endpoints under any prefix, and the Anthropic Messages API that
// some of them serve too.
var compatRoute = either(anthropicRoute, openAIAnyRoute)

// azureOpenAIHost and azureInferenceHost are the hosts of Azure OpenAI
// and of Azure AI model inference. Both serve azureHostRoute's paths,
// which tell the two apart on an Azure AI Foundry host.
var (
	azureOpenAIHost    = knownHost{provider: semconv.GenAIProviderAzureAIOpenAI, route: azureHostRoute}
	azureInferenceHost = knownHost{provider: semconv.GenAIProviderAzureAIInference, route: azureHostRoute}
)

// openAIEndpoint is one OpenAI endpoint, known by the suffix of its
// path.
type openAIEndpoint struct {
	suffix string
	api    API
	op     string
}

// openAIEndpoints are the OpenAI endpoints, in the order their suffixes
// are tried.
var openAIEndpoints = [...]openAIEndpoint{
	{"/chat/completions", APIOpenAIChatCompletions, semconv.GenAIOperationChat},
	{"/completions", APIOpenAICompletions, semconv.GenAIOperationTextCompletion},
	{"/responses", APIOpenAIResponses, semconv.GenAIOperationChat},
	{"/embeddings", APIOpenAIEmbeddings, semconv.GenAIOperationEmbeddings},
}

// openAIEndpointOf returns the first OpenAI endpoint whose suffix path
// ends in, and the prefix before it; nil when there is none.
func openAIEndpointOf(path string) (prefix string, ep *openAIEndpoint) {
	for i := range openAIEndpoints {
		if prefix, ok := strings.CutSuffix(path, openAIEndpoints[i].suffix); ok {
			return prefix, &openAIEndpoints[i]
		}
	}
	return "", nil
}

// route routes to ep when there is one and its prefix is allowed.
func (ep *openAIEndpoint) route(prefixAllowed bool) (routed, bool) {
	if ep == nil || !prefixAllowed {
		return routed{}, false
	}
	return routed{api: ep.api, op: ep.op}, true
}

// openAIV1Route matches /v1/{endpoint} exactly: api.openai.com.
func openAIV1Route(path string, _ *Exchange) (routed, bool) {
	prefix, ep := openAIEndpointOf(path)
	return ep.route(prefix == "/v1")
}

// openAIV1SuffixRoute matches {prefix}/v1/{endpoint}.
func openAIV1SuffixRoute(path string, _ *Exchange) (routed, bool) {
	prefix, ep := openAIEndpointOf(path)
	return ep.route(prefix == "/v1" || strings.HasSuffix(prefix, "/v1"))
}

// openAIAnyRoute matches {prefix}/{endpoint}, with any prefix.
func openAIAnyRoute(path string, _ *Exchange) (routed, bool) {
	_, ep := openAIEndpointOf(path)
	return ep.route(true)
}

// chatMessagesRoute matches {prefix}/chat/completions when the request
// body has top-level "messages".
func chatMessagesRoute(path string, x *Exchange) (routed, bool) {
	if !strings.HasSuffix(path, "/chat/completions") || topLevelKeys(x.RequestBody, "messages")&1 == 0 {
		return routed{}, false
	}
	return openAIAnyRoute(path, x)
}

// azureOpenAIRoute matches Azure OpenAI paths:
// /openai/deployments/{deployment}/{endpoint}, and the OpenAI endpoints
// under any other /openai/ prefix.
func azureOpenAIRoute(path string, x *Exchange) (routed, bool) {
	if rest, ok := strings.CutPrefix(path, "/openai/deployments/"); ok {
		dep, tail, _ := strings.Cut(rest, "/")
		if dep == "" || tail == "" {
			return routed{}, false
		}
		_, ep := openAIEndpointOf("/" + tail)
		r, ok := ep.route(true)
		if ok {
			r.deployment = cleanField(unescape(dep), maxModelLen)
		}
		return r, ok
	}
	if strings.HasPrefix(path, "/openai/") {
		return openAIAnyRoute(path, x)
	}
	return routed{}, false
}

// azureHostRoute serves an Azure host: Azure OpenAI paths (/openai/…),
// and else Azure AI model inference (/models/chat/completions, or the
// root paths of serverless endpoints).
func azureHostRoute(path string, x *Exchange) (routed, bool) {
	if strings.HasPrefix(path, "/openai/") {
		r, ok := azureOpenAIRoute(path, x)
		r.provider = semconv.GenAIProviderAzureAIOpenAI
		return r, ok
	}
	r, ok := openAIAnyRoute(path, x)
	r.provider = semconv.GenAIProviderAzureAIInference
	return r, ok
}

// versionedAzureRoute matches /openai/deployments/… paths whose query
// has an api-version: Azure OpenAI behind a gateway.
func versionedAzureRoute(path string, x *Exchange) (routed, bool) {
	if !strings.HasPrefix(path, "/openai/deployments/") || !strings.Contains(x.Path, "api-version=") {
		return routed{}, false
	}
	return azureOpenAIRoute(path, x)
}

// openAICall reads an exchange in the OpenAI API formats into c: chat
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
func openAICall(x *Exchange, c *Call) { parseWith(newOpenAIParser(), x, c) }

// newOpenAIParser returns a parser of openAICall's from the pool.
func newOpenAIParser() responseParser { return openaiPool.Get().(*openaiParser) }

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

// openaiParser is the state of one openAICall call, pooled so that its
// buffers are reused.
type openaiParser struct {
	c    *Call
	resp sseResponse
	req  openaiRequest
	f    openaiFields // the event (or body) being read
	buf  []byte       // a non-streamed body in several chunks

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
	defer openaiPool.Put(o)
	o.c = nil
	o.f = openaiFields{}
	o.req.c = nil
	if cap(o.buf) > 1<<20 {
		o.buf = nil
	}
	o.buf = o.buf[:0]
	o.resp.sse.Reset()
}

func (o *openaiParser) begin(x *Exchange, c *Call) {
	*o = openaiParser{resp: sseResponse{sse: o.resp.sse}, buf: o.buf[:0], c: c}
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
	if o.resp.begin(x.ResponseHeader); o.resp.body.off {
		o.incomplete = true
	}
}

func (o *openaiParser) chunk(ch Chunk) { o.resp.chunk(ch, o.c, o.sseEvent) }

func (o *openaiParser) sseEvent(ev SSEEvent, at time.Time) { o.event(ev.Data, ev.Type, at) }

func (o *openaiParser) end(x *Exchange, c *Call) {
	switch whole, skipped := o.resp.end(c, o.sseEvent); {
	case whole:
		o.incomplete = o.incomplete || x.ResponseTruncated
		o.parseBody(x)
	case o.resp.body.stream && (skipped || !o.terminal):
		o.incomplete = true
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

	if o.resp.body.stream && (f.content || bytes.HasSuffix(typ, []byte(".delta"))) {
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

// openaiChatContent reads the content of OpenAI chat completions and
// completions: messages or a prompt in, choices out, whole or streamed.
// Azure OpenAI and OpenAI-compatible servers send the same.
func openaiChatContent(x *Exchange, _ *Call, r *contentReader) {
	r.request(x, openaiChatInputPaths, &openaiChatInput{in: &r.in, msg: -1})
	if !r.response(x) {
		return
	}
	v := &openaiChatOutput{out: &r.out}
	if !isEventStream(x) {
		r.body(x, openaiChatOutputPaths, v)
		return
	}
	r.events(x, func(data []byte) {
		if !bytes.Equal(bytes.TrimSpace(data), done) {
			r.output(openaiChatOutputPaths, data, v)
		}
	})
}

// Chat completions and completions requests.
const (
	ociMessage = iota
	ociRole
	ociContent // a string
	ociPartText
	ociCall
	ociCallID
	ociCallName
	ociCallArgs
	ociFuncName
	ociFuncArgs
	ociCallRef // a tool message's tool_call_id
	ociPrompt  // completions: a string, or strings
	ociPrompts
)

var openaiChatInputPaths = jsonscan.Compile(openaiChatInputFields[:]...)

var openaiChatInputFields = [...]string{
	ociMessage:  "messages[*]",
	ociRole:     "messages[*].role",
	ociContent:  "messages[*].content",
	ociPartText: "messages[*].content[*].text",
	ociCall:     "messages[*].tool_calls[*]",
	ociCallID:   "messages[*].tool_calls[*].id",
	ociCallName: "messages[*].tool_calls[*].function.name",
	ociCallArgs: "messages[*].tool_calls[*].function.arguments",
	ociFuncName: "messages[*].function_call.name",
	ociFuncArgs: "messages[*].function_call.arguments",
	ociCallRef:  "messages[*].tool_call_id",
	ociPrompt:   "prompt",
	ociPrompts:  "prompt[*]",
}

// openaiChatInput reads the messages of a request, each into an input
// message as its fields arrive (the role may come last), or the prompt
// into one user message.
type openaiChatInput struct {
	in       *contentSide
	msg      int        // the message being read; -1 between messages
	call, fn toolFields // a tool call being read; a legacy function call
	callRef  []byte
}

func (v *openaiChatInput) message() int {
	if v.msg < 0 {
		v.msg = v.in.message(keyNone, "")
	}
	return v.msg
}

func (v *openaiChatInput) Value(id int, kind jsonscan.Kind, raw []byte) {
	if kind != jsonscan.String {
		return
	}
	s, in := jsonView{raw: raw, str: true}, v.in
	if id == ociPrompt || id == ociPrompts {
		in.onlyText("user", partText, s)
		return
	}
	mi := v.message()
	switch id {
	case ociRole:
		in.role(mi, raw)
	case ociContent, ociPartText:
		in.text(mi, partText, s)
	case ociCallID:
		v.call.id, v.call.seen = raw, true
	case ociCallName:
		v.call.name, v.call.seen = raw, true
	case ociCallArgs:
		v.call.args, v.call.seen = s, true
	case ociFuncName:
		v.fn.name, v.fn.seen = raw, true
	case ociFuncArgs:
		v.fn.args, v.fn.seen = s, true
	case ociCallRef:
		v.callRef = raw
	}
}

func (v *openaiChatInput) Container(id int, raw []byte) {
	switch id {
	case ociCallArgs: // some compatible servers send an object
		v.call.args, v.call.seen = containerValue(raw), true
	case ociCall:
		v.endCall()
	case ociMessage:
		v.endMessage()
	}
}

func (v *openaiChatInput) endCall() {
	if v.call.seen {
		v.in.addTool(v.message(), partToolCall, &v.call)
	}
	v.call = toolFields{}
}

// endMessage adds a legacy function call, and makes a tool's message
// the response to its call.
func (v *openaiChatInput) endMessage() {
	in, mi := v.in, v.msg
	if v.fn.seen {
		in.addTool(mi, partToolCall, &v.fn)
	}
	if mi >= 0 && (in.msgs[mi].role == "tool" || in.msgs[mi].role == "function") {
		in.responses(mi, v.callRef)
	}
	v.msg, v.fn, v.callRef = -1, toolFields{}, nil
}

func (v *openaiChatInput) end() {
	v.endCall()
	if v.msg >= 0 {
		v.endMessage()
	}
}

// Chat completions and completions responses: a body, or a streamed
// chunk. Streamed choices carry a delta where whole ones carry a
// message.
const (
	ocoChoice = iota
	ocoIndex
	ocoText // completions
	ocoFinish
	ocoContent
	ocoReasoning
	ocoRefusal
	ocoCall
	ocoCallIndex
	ocoCallID
	ocoCallName
	ocoCallArgs
	ocoFuncName
	ocoFuncArgs
)

var openaiChatOutputFields = func() []fieldPath {
	f := []fieldPath{
		{"choices[*]", ocoChoice},
		{"choices[*].index", ocoIndex},
		{"choices[*].text", ocoText},
		{"choices[*].finish_reason", ocoFinish},
	}
	for _, m := range []string{"choices[*].message.", "choices[*].delta."} {
		f = append(f,
			fieldPath{m + "content", ocoContent},
			fieldPath{m + "reasoning_content", ocoReasoning},
			fieldPath{m + "reasoning", ocoReasoning},
			fieldPath{m + "refusal", ocoRefusal},
			fieldPath{m + "tool_calls[*]", ocoCall},
			fieldPath{m + "tool_calls[*].index", ocoCallIndex},
			fieldPath{m + "tool_calls[*].id", ocoCallID},
			fieldPath{m + "tool_calls[*].function.name", ocoCallName},
			fieldPath{m + "tool_calls[*].function.arguments", ocoCallArgs},
			fieldPath{m + "function_call.name", ocoFuncName},
			fieldPath{m + "function_call.arguments", ocoFuncArgs},
		)
	}
	return f
}()

var openaiChatOutputPaths = compileFields(openaiChatOutputFields)

// openaiChatOutput reads choices, each into the output message of its
// index once the choice is read (the index may come last); streamed
// deltas join the text, reasoning and tool calls of earlier chunks.
type openaiChatOutput struct {
	out    *contentSide
	choice openaiChoice
}

type openaiChoice struct {
	index                       int
	finish                      []byte
	content, reasoning, refusal jsonView
	call                        toolFields // the tool call being read
	callIndex                   int        // its index; -1 if not given
	calls                       []indexedTool
	fn                          toolFields
	seen                        bool
}

type indexedTool struct {
	index int
	toolFields
}

// current returns the choice being read, begun when new.
func (v *openaiChatOutput) current() *openaiChoice {
	c := &v.choice
	if !c.seen {
		*c = openaiChoice{calls: c.calls[:0], callIndex: -1, seen: true}
	}
	return c
}

func (v *openaiChatOutput) Value(id int, kind jsonscan.Kind, raw []byte) {
	c, s := v.current(), strValue(kind, raw)
	switch openaiChatOutputFields[id].field {
	case ocoIndex:
		c.index = readIndex(kind, raw, c.index)
	case ocoText, ocoContent:
		c.content = s
	case ocoFinish:
		c.finish = s.raw
	case ocoReasoning:
		c.reasoning = s
	case ocoRefusal:
		c.refusal = s
	case ocoCallIndex:
		c.callIndex = readIndex(kind, raw, c.callIndex)
	case ocoCallID:
		c.call.id, c.call.seen = s.raw, true
	case ocoCallName:
		c.call.name, c.call.seen = s.raw, true
	case ocoCallArgs:
		c.call.args, c.call.seen = s, true
	case ocoFuncName:
		c.fn.name, c.fn.seen = s.raw, true
	case ocoFuncArgs:
		c.fn.args, c.fn.seen = s, true
	}
}

func (v *openaiChatOutput) Container(id int, raw []byte) {
	switch openaiChatOutputFields[id].field {
	case ocoCallArgs: // some compatible servers send an object
		c := v.current()
		c.call.args, c.call.seen = containerValue(raw), true
	case ocoCall:
		v.endCall()
	case ocoChoice:
		v.endChoice()
	}
}

// endCall keeps the tool call read, keyed by its index (in a whole
// message, by its place).
func (v *openaiChatOutput) endCall() {
	c := &v.choice
	if !c.call.seen {
		return
	}
	if c.callIndex < 0 {
		c.callIndex = len(c.calls)
	}
	if len(c.calls) < maxCallList {
		c.calls = append(c.calls, indexedTool{c.callIndex, c.call})
	} else {
		v.out.cut = true
	}
	c.call, c.callIndex = toolFields{}, -1
}

func (v *openaiChatOutput) endChoice() {
	c, out := &v.choice, v.out
	if !c.seen {
		return
	}
	mi := out.keyedMessage(c.index, "assistant")
	out.finish(mi, c.finish)
	out.delta(mi, keyReasoning, partReasoning, c.reasoning)
	out.delta(mi, keyText, partText, c.content)
	out.delta(mi, keyText, partText, c.refusal)
	if c.fn.seen {
		c.calls = append(c.calls, indexedTool{keyFunction, c.fn})
	}
	for i := range c.calls {
		t := &c.calls[i]
		pi := out.keyedPart(mi, t.index, partToolCall)
		out.tool(mi, pi, t.id, t.name)
		out.add(mi, pi, t.args)
	}
	c.seen = false
}

func (v *openaiChatOutput) end() {
	v.endCall()
	v.endChoice()
}

// openaiResponsesContent reads the content of the OpenAI Responses API:
// instructions and input items in, output items out, whole or as a
// stream of events.
func openaiResponsesContent(x *Exchange, _ *Call, r *contentReader) {
	r.request(x, responsesInputPaths, &responsesInput{r: r, item: -1})
	if !r.response(x) {
		return
	}
	if !isEventStream(x) {
		r.body(x, responsesOutputPaths, &responsesOutput{out: &r.out})
		return
	}
	v := &responsesEvent{out: &r.out}
	r.events(x, func(data []byte) { r.output(responsesEventPaths, data, v) })
}

// Responses API requests.
const (
	oriInstructions = iota
	oriInput        // a string
	oriItem
	oriType
	oriRole
	oriContent // a string
	oriPartText
	oriCallID
	oriName
	oriArgs
	oriOutput // a function call's output: a string, or content parts
)

var responsesInputPaths = jsonscan.Compile(responsesInputFields[:]...)

var responsesInputFields = [...]string{
	oriInstructions: "instructions",
	oriInput:        "input",
	oriItem:         "input[*]",
	oriType:         "input[*].type",
	oriRole:         "input[*].role",
	oriContent:      "input[*].content",
	oriPartText:     "input[*].content[*].text",
	oriCallID:       "input[*].call_id",
	oriName:         "input[*].name",
	oriArgs:         "input[*].arguments",
	oriOutput:       "input[*].output",
}

// responsesInput reads the instructions into the system instructions,
// and each input item into an input message: a message as its fields
// arrive, a function call or a function call's output once the item is
// read (its type may come last). Other items (reasoning, references)
// are left out.
type responsesInput struct {
	r    *contentReader
	item int // the message of the item being read; -1 between items
	typ  []byte
	call toolFields
}

func (v *responsesInput) message() int {
	if v.item < 0 {
		v.item = v.r.in.message(keyNone, "")
	}
	return v.item
}

func (v *responsesInput) Value(id int, kind jsonscan.Kind, raw []byte) {
	if kind != jsonscan.String {
		return
	}
	s, in := jsonView{raw: raw, str: true}, &v.r.in
	switch id {
	case oriInstructions:
		v.r.sys.onlyText("", partText, s)
	case oriInput:
		if len(raw) > 0 {
			in.text(in.message(keyNone, "user"), partText, s)
		}
	case oriType:
		v.message()
		v.typ = raw
	case oriRole:
		in.role(v.message(), raw)
	case oriContent, oriPartText:
		in.text(v.message(), partText, s)
	case oriCallID:
		v.message()
		v.call.id = raw
	case oriName:
		v.message()
		v.call.name = raw
	case oriArgs, oriOutput:
		v.message()
		v.call.args = s
	}
}

func (v *responsesInput) Container(id int, raw []byte) {
	switch id {
	case oriOutput:
		v.call.args = containerValue(raw)
	case oriItem:
		v.endItem()
	}
}

func (v *responsesInput) endItem() {
	in, mi := &v.r.in, v.item
	switch string(v.typ) {
	case "function_call":
		in.defaultRole(mi, "assistant")
		in.addTool(mi, partToolCall, &v.call)
	case "function_call_output":
		in.defaultRole(mi, "tool")
		in.addTool(mi, partToolResponse, &v.call)
	}
	in.dropEmpty(mi)
	v.item, v.typ, v.call = -1, nil, toolFields{}
}

func (v *responsesInput) end() {
	if v.item >= 0 {
		v.endItem()
	}
}

// Responses API response bodies.
const (
	oroStatus = iota
	oroIncomplete
	oroItem
	oroType
	oroPartText
	oroRefusal
	oroSummary
	oroCallID
	oroName
	oroArgs
)

var responsesOutputPaths = jsonscan.Compile(responsesOutputFields[:]...)

var responsesOutputFields = [...]string{
	oroStatus:     "status",
	oroIncomplete: "incomplete_details.reason",
	oroItem:       "output[*]",
	oroType:       "output[*].type",
	oroPartText:   "output[*].content[*].text",
	oroRefusal:    "output[*].content[*].refusal",
	oroSummary:    "output[*].summary[*].text",
	oroCallID:     "output[*].call_id",
	oroName:       "output[*].name",
	oroArgs:       "output[*].arguments",
}

// responsesOutput reads a response's output items, in order, into the
// parts of one assistant message: message text, reasoning summaries and
// function calls.
type responsesOutput struct {
	out            *contentSide
	typ            []byte
	call           toolFields
	status, reason []byte
}

func (v *responsesOutput) message() int { return v.out.only("assistant") }

func (v *responsesOutput) Value(id int, kind jsonscan.Kind, raw []byte) {
	if kind != jsonscan.String {
		return
	}
	s := jsonView{raw: raw, str: true}
	switch id {
	case oroStatus:
		v.status = raw
	case oroIncomplete:
		v.reason = raw
	case oroType:
		v.typ = raw
	case oroPartText, oroRefusal:
		v.out.text(v.message(), partText, s)
	case oroSummary:
		v.out.text(v.message(), partReasoning, s)
	case oroCallID:
		v.call.id = raw
	case oroName:
		v.call.name = raw
	case oroArgs:
		v.call.args = s
	}
}

func (v *responsesOutput) Container(id int, _ []byte) {
	if id == oroItem {
		v.endItem()
	}
}

func (v *responsesOutput) endItem() {
	if string(v.typ) == "function_call" {
		v.out.addTool(v.message(), partToolCall, &v.call)
	}
	v.typ, v.call = nil, toolFields{}
}

func (v *responsesOutput) end() {
	v.endItem()
	v.out.finish(v.out.find(0), responsesFinish(v.status, v.reason))
}

// responsesFinish is a response's finish reason, as openAICall reads
// it: "stop" when completed, the reason when incomplete.
func responsesFinish(status, reason []byte) []byte {
	switch string(status) {
	case "completed":
		return []byte("stop")
	case "incomplete":
		if len(reason) > 0 {
			return reason
		}
		return status
	}
	return nil
}

// Responses API streaming events.
const (
	oreType = iota
	oreIndex
	oreDelta
	oreItemType
	oreItemCallID
	oreItemName
	oreStatus
	oreIncomplete
)

var responsesEventPaths = jsonscan.Compile(responsesEventFields[:]...)

var responsesEventFields = [...]string{
	oreType:       "type",
	oreIndex:      "output_index",
	oreDelta:      "delta",
	oreItemType:   "item.type",
	oreItemCallID: "item.call_id",
	oreItemName:   "item.name",
	oreStatus:     "response.status",
	oreIncomplete: "response.incomplete_details.reason",
}

// responsesEvent reads a stream's deltas into the parts of one assistant
// message, a part per output item; the final event's copy of the whole
// output is not read again.
type responsesEvent struct {
	out            *contentSide
	typ, itemType  []byte
	index          int
	delta          jsonView
	callID, name   []byte
	status, reason []byte
}

func (v *responsesEvent) Value(id int, kind jsonscan.Kind, raw []byte) {
	switch id {
	case oreType:
		v.typ = strValue(kind, raw).raw
	case oreIndex:
		v.index = readIndex(kind, raw, v.index)
	case oreDelta:
		v.delta = strValue(kind, raw)
	case oreItemType:
		v.itemType = strValue(kind, raw).raw
	case oreItemCallID:
		v.callID = strValue(kind, raw).raw
	case oreItemName:
		v.name = strValue(kind, raw).raw
	case oreStatus:
		v.status = strValue(kind, raw).raw
	case oreIncomplete:
		v.reason = strValue(kind, raw).raw
	}
}

func (v *responsesEvent) end() {
	out := v.out
	switch string(v.typ) {
	case "response.output_text.delta", "response.refusal.delta":
		out.delta(out.only("assistant"), v.index, partText, v.delta)
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		out.delta(out.only("assistant"), v.index, partReasoning, v.delta)
	case "response.function_call_arguments.delta":
		out.delta(out.only("assistant"), v.index, partToolCall, v.delta)
	case "response.output_item.added":
		if string(v.itemType) == "function_call" {
			mi := out.only("assistant")
			out.tool(mi, out.keyedPart(mi, v.index, partToolCall), v.callID, v.name)
		}
	case "response.completed", "response.incomplete":
		out.finish(out.find(0), responsesFinish(v.status, v.reason))
	}
	*v = responsesEvent{out: out}
}
