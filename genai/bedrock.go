package genai

import (
	"bytes"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xpuscope/xpuscope/genai/internal/jsonscan"
	"github.com/xpuscope/xpuscope/semconv"
)

// The Amazon Bedrock Runtime APIs.
const (
	APIBedrockConverse API = "bedrock.converse" // /model/{id}/converse, /converse-stream
	APIBedrockInvoke   API = "bedrock.invoke"   // /model/{id}/invoke, /invoke-with-response-stream (body is the model family's own)
)

// bedrockProvider is the Amazon Bedrock Runtime.
var bedrockProvider = provider{
	name: semconv.GenAIProviderAWSBedrock,
	apis: []apiReader{
		{APIBedrockConverse, newBedrockParser, bedrockContent},
		{APIBedrockInvoke, newBedrockParser, nil},
	},
	matchHost: bedrockHost,
	route:     bedrockRoute,
	guesses: []guess{
		{semconv.GenAIProviderAWSBedrock, awsSigned, bedrockRoute},
	},
}

// awsSigned says a request is signed for AWS: an X-Amz-Date field, or
// an Authorization whose Signature Version 4 scope names Bedrock (what
// redactCredential keeps of it).
func awsSigned(h Header) bool {
	if _, ok := h["X-Amz-Date"]; ok {
		return true
	}
	for _, v := range h["Authorization"] {
		if v == sigV4Bedrock {
			return true
		}
	}
	return false
}

// bedrockRuntimeHost is a Bedrock Runtime host.
var bedrockRuntimeHost = knownHost{provider: semconv.GenAIProviderAWSBedrock, route: bedrockRoute}

// bedrockHost recognises the Bedrock Runtime hosts,
// bedrock-runtime[-fips].<region>.amazonaws.com[.cn], and VPC endpoint
// names with a bedrock-runtime label
// (vpce-….bedrock-runtime.<region>.vpce.amazonaws.com).
func bedrockHost(host string) (*knownHost, string) {
	if !strings.HasSuffix(host, ".amazonaws.com") && !strings.HasSuffix(host, ".amazonaws.com.cn") {
		return nil, ""
	}
	labels := strings.Split(host, ".")
	for i := 0; i+1 < len(labels); i++ {
		if labels[i] == "bedrock-runtime" || labels[i] == "bedrock-runtime-fips" {
			return &bedrockRuntimeHost, labels[i+1]
		}
	}
	return nil, ""
}

// bedrockRoute matches /model/{modelId}/{converse,converse-stream,invoke,invoke-with-response-stream}.
func bedrockRoute(path string, x *Exchange) (routed, bool) {
	rest, ok := strings.CutPrefix(path, "/model/")
	if !ok {
		return routed{}, false
	}
	id, action, ok := strings.Cut(rest, "/")
	if !ok || id == "" || strings.Contains(action, "/") {
		return routed{}, false
	}
	r := routed{model: cleanField(unescape(id), maxModelLen)}
	switch action {
	case "converse", "converse-stream":
		r.api, r.op, r.stream = APIBedrockConverse, semconv.GenAIOperationChat, action == "converse-stream"
	case "invoke", "invoke-with-response-stream":
		r.api, r.stream = APIBedrockInvoke, action == "invoke-with-response-stream"
		r.op = bedrockInvokeOperation(r.model, x.RequestBody)
	default:
		return routed{}, false
	}
	return r, true
}

// bedrockInvokeOperation infers the operation of an InvokeModel call, whose
// body is the model family's own format: embedding model ids and bodies
// with "texts" are embeddings; "messages" is chat (Anthropic, Llama 3.2+,
// Nova, Mistral chat); "prompt" or "inputText" is text_completion (Llama,
// Mistral, Titan Text). Chat when nothing tells.
func bedrockInvokeOperation(model string, body []byte) string {
	if strings.Contains(strings.ToLower(model), "embed") {
		return semconv.GenAIOperationEmbeddings
	}
	keys := topLevelKeys(body, "messages", "prompt", "inputText", "texts")
	switch {
	case keys&1 != 0:
		return semconv.GenAIOperationChat
	case keys&8 != 0:
		return semconv.GenAIOperationEmbeddings
	case keys&6 != 0:
		return semconv.GenAIOperationTextCompletion
	}
	return semconv.GenAIOperationChat
}

// bedrockCall reads an Amazon Bedrock Runtime exchange into c: Converse
// and ConverseStream, InvokeModel and InvokeModelWithResponseStream. The
// streamed operations' responses are AWS event streams
// (application/vnd.amazon.eventstream), a binary framing with CRCs,
// decoded here incrementally with chunk boundaries at any byte.
//
// It sets every request, response and timing field of c and leaves
// Provider alone; Operation too, unless it is empty, in which case it is
// inferred from the path (and, for InvokeModel, the body's shape).
// RequestModel is the model id (or inference profile, or ARN) of the
// path, /model/{modelId}/{action}.
//
//   - Converse: inferenceConfig.temperature, topP, maxTokens and
//     toolConfig.tools[].toolSpec.name from the request;
//     output.message.content[].toolUse.name, stopReason and usage from
//     the response. ConverseStream: contentBlockStart's toolUse name,
//     contentBlockDelta (output), messageStop's stopReason, metadata's
//     usage (the stream's last event: a stream without it is
//     Incomplete).
//   - InvokeModel bodies are the model family's own. Usage is read for
//     every family from the X-Amzn-Bedrock-*-Token-Count response
//     headers, or, streamed, from the amazon-bedrock-invocationMetrics
//     object of the last chunk. Anthropic Claude bodies are read in full
//     (Messages API: id, model, stop_reason, usage, tool_use names;
//     streamed, the events base64-encoded in each chunk), Meta Llama
//     bodies for stop_reason and token counts, Amazon Nova bodies through
//     their Converse-like shape, and the request parameters of Claude,
//     Llama, Nova, Titan and Mistral. Other families yield the model and
//     usage only.
//   - Usage is read the OpenTelemetry way: Bedrock's input token counts
//     exclude the prompt-cache reads and writes, which are added to
//     InputTokens. In a body cut before its usage is whole, InputTokens is
//     reported only once both cache counts have been seen.
//   - Errors: the X-Amzn-Errortype response header or a body's __type
//     ("ValidationException"), an event stream's exception message
//     (:exception-type, written as the exception's shape name:
//     "throttlingException" → "ThrottlingException"), an error message
//     (:error-code), or an Anthropic error object in an InvokeModel body.
//
// Event-stream messages are checked against both CRCs; a message cut by
// the end of the capture is not read (it cannot be checked), and a bad
// one, a message over 1 MiB, or a broken framing make the call
// Incomplete. Only names, numbers and identifiers are kept, never prompt
// or completion text; of the headers only Content-Type,
// Content-Encoding, X-Amzn-Errortype and the token-count headers are
// read.
//
// Timing: TimeToFirstChunk is from Start to the arrival of the first
// message that carries output (a text, tool input or reasoning delta, a
// tool use starting), TimePerChunk the mean gap between such messages
// after the first, OutputChunks their number; a response that is not
// streamed has none (-1, -1, 0).
func bedrockCall(x *Exchange, c *Call) { parseWith(newBedrockParser(), x, c) }

// newBedrockParser returns a parser of bedrockCall's from the pool.
func newBedrockParser() responseParser { return bedrockPool.Get().(*bedrockParser) }

var bedrockPool = sync.Pool{New: func() any { return new(bedrockParser) }}

// Request fields: Converse, and the InvokeModel families.
const (
	bqTemperature = iota
	bqTopP
	bqMaxTokens
	bqToolSpecName
	bqTemperatureTop // Claude, Llama, Mistral
	bqTopPTop        // Claude, Llama, Mistral
	bqMaxTokensTop   // Claude, Mistral
	bqMaxGenLen      // Llama
	bqToolName       // Claude
	bqNovaTopP
	bqNovaMaxNewTokens
	bqTitanTemperature
	bqTitanTopP
	bqTitanMaxTokenCount
)

var bedrockRequestPaths = jsonscan.Compile(bedrockRequestFields[:]...)

var bedrockRequestFields = [...]string{
	bqTemperature:        "inferenceConfig.temperature",
	bqTopP:               "inferenceConfig.topP",
	bqMaxTokens:          "inferenceConfig.maxTokens",
	bqToolSpecName:       "toolConfig.tools[*].toolSpec.name",
	bqTemperatureTop:     "temperature",
	bqTopPTop:            "top_p",
	bqMaxTokensTop:       "max_tokens",
	bqMaxGenLen:          "max_gen_len",
	bqToolName:           "tools[*].name",
	bqNovaTopP:           "inferenceConfig.top_p",
	bqNovaMaxNewTokens:   "inferenceConfig.max_new_tokens",
	bqTitanTemperature:   "textGenerationConfig.temperature",
	bqTitanTopP:          "textGenerationConfig.topP",
	bqTitanMaxTokenCount: "textGenerationConfig.maxTokenCount",
}

// Response fields: Converse bodies and ConverseStream event payloads,
// InvokeModel bodies and the chunks of their streams. The shapes do not
// collide.
const (
	brStopReason = iota // Converse, messageStop, Nova
	brToolUseName
	brUsageIn
	brUsageOut
	brUsageCacheRead
	brUsageCacheWrite
	brUsageCacheReadCount  // Nova InvokeModel
	brUsageCacheWriteCount // Nova InvokeModel
	brAWSType              // an error body's __type
	brStartToolName        // contentBlockStart
	brDeltaText            // contentBlockDelta; Claude content_block_delta
	brDeltaToolInput
	brDeltaReasoningText
	brDeltaReasoningRedacted
	brBytes // InvokeModelWithResponseStream chunk: base64 of the model's event
	// Anthropic Claude (InvokeModel).
	brID
	brModel
	brType
	brClaudeStopReason // also Llama
	brClaudeIn
	brClaudeOut
	brClaudeCacheRead
	brClaudeCacheWrite
	brClaudeToolName
	brMessageID
	brMessageModel
	brMessageIn
	brMessageOut
	brMessageCacheRead
	brMessageCacheWrite
	brDeltaStopReason
	brBlockName
	brDeltaPartialJSON
	brDeltaThinking
	brErrorType
	brCompletion // Claude text completions
	// Meta Llama.
	brGeneration
	brPromptTokenCount
	brGenerationTokenCount
	// Other families' streamed output, for timing only.
	brOutputText    // Titan
	brOutputsText   // Mistral
	brNovaDeltaText // Nova
	// amazon-bedrock-invocationMetrics, in every InvokeModel stream's
	// last chunk; the latencies only tell the object apart.
	brMetricsIn
	brMetricsOut
	brMetricsCacheRd
	brMetricsCacheWr
	brMetricsLatency
	brMetricsFirstLat
)

var bedrockResponsePaths = jsonscan.Compile(bedrockResponseFields[:]...)

var bedrockResponseFields = [...]string{
	brStopReason:             "stopReason",
	brToolUseName:            "output.message.content[*].toolUse.name",
	brUsageIn:                "usage.inputTokens",
	brUsageOut:               "usage.outputTokens",
	brUsageCacheRead:         "usage.cacheReadInputTokens",
	brUsageCacheWrite:        "usage.cacheWriteInputTokens",
	brUsageCacheReadCount:    "usage.cacheReadInputTokenCount",
	brUsageCacheWriteCount:   "usage.cacheWriteInputTokenCount",
	brAWSType:                "__type",
	brStartToolName:          "start.toolUse.name",
	brDeltaText:              "delta.text",
	brDeltaToolInput:         "delta.toolUse.input",
	brDeltaReasoningText:     "delta.reasoningContent.text",
	brDeltaReasoningRedacted: "delta.reasoningContent.redactedContent",
	brBytes:                  "bytes",
	brID:                     "id",
	brModel:                  "model",
	brType:                   "type",
	brClaudeStopReason:       "stop_reason",
	brClaudeIn:               "usage.input_tokens",
	brClaudeOut:              "usage.output_tokens",
	brClaudeCacheRead:        "usage.cache_read_input_tokens",
	brClaudeCacheWrite:       "usage.cache_creation_input_tokens",
	brClaudeToolName:         "content[*].name",
	brMessageID:              "message.id",
	brMessageModel:           "message.model",
	brMessageIn:              "message.usage.input_tokens",
	brMessageOut:             "message.usage.output_tokens",
	brMessageCacheRead:       "message.usage.cache_read_input_tokens",
	brMessageCacheWrite:      "message.usage.cache_creation_input_tokens",
	brDeltaStopReason:        "delta.stop_reason",
	brBlockName:              "content_block.name",
	brDeltaPartialJSON:       "delta.partial_json",
	brDeltaThinking:          "delta.thinking",
	brErrorType:              "error.type",
	brCompletion:             "completion",
	brGeneration:             "generation",
	brPromptTokenCount:       "prompt_token_count",
	brGenerationTokenCount:   "generation_token_count",
	brOutputText:             "outputText",
	brOutputsText:            "outputs[*].text",
	brNovaDeltaText:          "contentBlockDelta.delta.text",
	brMetricsIn:              "amazon-bedrock-invocationMetrics.inputTokenCount",
	brMetricsOut:             "amazon-bedrock-invocationMetrics.outputTokenCount",
	brMetricsCacheRd:         "amazon-bedrock-invocationMetrics.cacheReadInputTokenCount",
	brMetricsCacheWr:         "amazon-bedrock-invocationMetrics.cacheWriteInputTokenCount",
	brMetricsLatency:         "amazon-bedrock-invocationMetrics.invocationLatency",
	brMetricsFirstLat:        "amazon-bedrock-invocationMetrics.firstByteLatency",
}

// bedrockParser is the state of one bedrockCall call, pooled so that
// its buffers are reused.
type bedrockParser struct {
	c   *Call
	es  eventStreamDecoder
	buf []byte // a non-streamed body in several chunks
	dec []byte // a chunk's decoded bytes
	// unesc is a chunk's base64 with JSON escapes undone.
	unesc []byte
	f     bedrockFields

	// Usage as Bedrock counts it: input without the cache.
	in, out, cacheRead, cacheWrite int64

	head       Header // the response's
	body       bodyRead
	terminal   bool // metadata, the invocation metrics, or an error
	incomplete bool
	timer      contentTimer
}

// bedrockFields holds what one message (or body) says, until it has
// been read whole.
type bedrockFields struct {
	id, model, typ, awsType, errType []byte
	bytes                            []byte
	in, out, cacheRead, cacheWrite   int64
	content, metrics                 bool
}

func (p *bedrockParser) release() {
	defer bedrockPool.Put(p)
	p.c = nil
	p.f = bedrockFields{}
	for _, b := range []*[]byte{&p.buf, &p.dec, &p.unesc} {
		if cap(*b) > 1<<20 {
			*b = nil
		}
		*b = (*b)[:0]
	}
	p.es.reset()
}

// bedrockEndpoint matches a Bedrock Runtime path, ignoring the query.
func bedrockEndpoint(x *Exchange) (routed, bool) {
	path, _, _ := strings.Cut(x.Path, "?")
	path, _, _ = strings.Cut(path, "#")
	if len(path) > 1 {
		path = strings.TrimSuffix(path, "/")
	}
	return bedrockRoute(path, x)
}

func (p *bedrockParser) begin(x *Exchange, c *Call) {
	*p = bedrockParser{es: p.es, buf: p.buf[:0], dec: p.dec[:0], unesc: p.unesc[:0], c: c,
		in: -1, out: -1, cacheRead: -1, cacheWrite: -1}
	p.es.reset()
	resetCall(c)
	r, known := bedrockEndpoint(x)
	if known {
		if c.Operation == "" {
			c.Operation = r.op
		}
		c.RequestModel = r.model
		c.Stream = r.stream
	}
	p.incomplete = x.RequestTruncated || x.ResponseTruncated

	// Request.
	if len(x.RequestBody) > 0 && !encoded(x.RequestHeader) {
		if bedrockRequestPaths.Scan(x.RequestBody, &bedrockRequest{c: c}) == jsonscan.Truncated {
			p.incomplete = true
		}
	} else if x.RequestTruncated || encoded(x.RequestHeader) {
		p.incomplete = true
	}

	// Response.
	if et := awsErrorType(x.ResponseHeader.Get("X-Amzn-Errortype")); et != "" {
		c.ErrorType = et
	}
	p.head = x.ResponseHeader
	if p.body.off = encoded(x.ResponseHeader); p.body.off {
		p.incomplete = true
	}
}

func (p *bedrockParser) chunk(ch Chunk) {
	if first, ok := p.body.start(ch); ok {
		p.setStream(awsEventStreamStart(p.head, p.c.Stream, first, true))
	}
	if !p.body.streamed(ch) {
		return
	}
	p.es.feed(ch.Data)
	for {
		m, ok := p.es.next()
		if !ok {
			break
		}
		p.message(m, ch.At)
	}
}

// setStream says whether the response is read as an event stream.
func (p *bedrockParser) setStream(stream bool) {
	p.body.decided, p.body.stream = true, stream
	if stream {
		p.c.Stream = true
	}
}

func (p *bedrockParser) end(x *Exchange, c *Call) {
	if !p.body.off {
		if !p.body.decided {
			p.setStream(awsEventStreamStart(p.head, c.Stream, 0, false))
		}
		if p.body.stream {
			if !p.terminal || p.es.broken || p.es.dropped > 0 || p.es.oversize > 0 || p.es.pending() {
				p.incomplete = true
			}
		} else {
			p.incomplete = p.incomplete || x.ResponseTruncated
			p.parseBody(x)
		}
	}
	p.headerUsage(x.ResponseHeader)
	if p.in >= 0 {
		c.Usage.InputTokens = p.in + max(p.cacheRead, 0) + max(p.cacheWrite, 0)
	}
	c.Usage.OutputTokens = p.out
	c.Usage.CacheReadTokens = p.cacheRead
	c.Usage.CacheCreationTokens = p.cacheWrite

	p.timer.finish(x, c)
	c.Incomplete = p.incomplete
}

// isAWSEventStream says whether the response is an event stream: its
// Content-Type says so, or, without a JSON one, the path asked for a
// stream and the body does not start as JSON.
func isAWSEventStream(x *Exchange, pathStream bool) bool {
	first, ok := firstBodyByte(x.Chunks)
	return awsEventStreamStart(x.ResponseHeader, pathStream, first, ok)
}

// awsEventStreamStart is isAWSEventStream for a response with header h
// whose body starts with first (ok: the first byte that is not JSON white
// space; !ok: a blank body).
func awsEventStreamStart(h Header, pathStream bool, first byte, ok bool) bool {
	ct := strings.ToLower(h.Get("Content-Type"))
	switch {
	case strings.Contains(ct, "vnd.amazon.eventstream"):
		return true
	case strings.Contains(ct, "json"):
		return false
	}
	if ok && first == '{' {
		return false
	}
	return pathStream
}

// headerUsage reads InvokeModel's token-count headers, which every model
// family gets; they win over the body.
func (p *bedrockParser) headerUsage(h Header) {
	for _, u := range [...]struct {
		key string
		dst *int64
	}{
		{"X-Amzn-Bedrock-Input-Token-Count", &p.in},
		{"X-Amzn-Bedrock-Output-Token-Count", &p.out},
		{"X-Amzn-Bedrock-Cache-Read-Input-Token-Count", &p.cacheRead},
		{"X-Amzn-Bedrock-Cache-Write-Input-Token-Count", &p.cacheWrite},
	} {
		if v := h.Get(u.key); v != "" && len(v) < 20 {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
				*u.dst = n
			}
		}
	}
}

func (p *bedrockParser) parseBody(x *Exchange) {
	var body []byte
	if body, p.buf = wholeBody(p.buf, x.Chunks); body == nil {
		return
	}
	p.payload(body, time.Time{})
}

// message reads one event-stream message.
func (p *bedrockParser) message(m *esMessage, at time.Time) {
	c := p.c
	switch string(m.header(":message-type")) {
	case "exception":
		p.terminal = true
		if c.ErrorType == "" {
			c.ErrorType = exceptionType(m.header(":exception-type"))
		}
		return
	case "error":
		p.terminal = true
		if c.ErrorType == "" {
			c.ErrorType = awsErrorType(string(m.header(":error-code")))
			if c.ErrorType == "" {
				c.ErrorType = "error"
			}
		}
		return
	}
	if string(m.header(":event-type")) == "metadata" {
		p.terminal = true
	}
	p.payload(m.payload, at)
}

// exceptionType turns an exception event's type, the member name of the
// stream's union ("throttlingException"), into the exception's shape
// name, as the X-Amzn-Errortype header of a failed request gives it.
func exceptionType(b []byte) string {
	s := awsErrorType(string(b))
	if s == "" {
		return "error"
	}
	if s[0] >= 'a' && s[0] <= 'z' {
		s = string(s[0]-'a'+'A') + s[1:]
	}
	return s
}

// awsErrorType cleans an AWS error code: the part before a ':' (the
// header appends a URL), after a '#' (a namespace). "" when unusable.
func awsErrorType(v string) string {
	v, _, _ = strings.Cut(v, ":")
	if i := strings.LastIndexByte(v, '#'); i >= 0 {
		v = v[i+1:]
	}
	v = strings.TrimSpace(v)
	if len(v) > maxCallString || !printable(v) {
		return ""
	}
	return v
}

// payload reads a JSON body or an event's payload.
func (p *bedrockParser) payload(data []byte, at time.Time) {
	p.f = bedrockFields{in: -1, out: -1, cacheRead: -1, cacheWrite: -1}
	complete := true
	if len(bytes.TrimSpace(data)) > 0 && bedrockResponsePaths.Scan(data, p) == jsonscan.Truncated {
		p.incomplete = true
		complete = false
	}
	if raw := p.f.bytes; len(raw) > 0 {
		// An InvokeModelWithResponseStream chunk: the model's own event,
		// base64-encoded.
		p.f.bytes = nil
		if inner, ok := p.decodeChunk(raw); ok {
			if bedrockResponsePaths.Scan(inner, p) == jsonscan.Truncated {
				p.incomplete = true
				complete = false
			}
		} else {
			p.incomplete = true
		}
	}
	f, c := &p.f, p.c
	setOnce(&c.ResponseID, f.id)
	setOnce(&c.ResponseModel, f.model)
	if f.cacheRead >= 0 {
		p.cacheRead = f.cacheRead
	}
	if f.cacheWrite >= 0 {
		p.cacheWrite = f.cacheWrite
	}
	// Input tokens count only with the cache counts that go with them.
	if f.in >= 0 && (complete || (f.cacheRead >= 0 && f.cacheWrite >= 0)) {
		p.in = f.in
	}
	if f.out >= 0 {
		p.out = f.out
	}
	if len(f.awsType) > 0 && c.ErrorType == "" {
		c.ErrorType = awsErrorType(stringOf(f.awsType))
	}
	if usable(f.errType) && c.ErrorType == "" && (string(f.typ) == "error" || !p.body.stream) {
		c.ErrorType = stringOf(f.errType)
	}
	if p.body.stream {
		if f.metrics || string(f.typ) == "message_stop" || string(f.typ) == "error" {
			p.terminal = true
		}
		if f.content {
			p.timer.mark(at)
		}
	}
}

// decodeChunk decodes a chunk's base64 bytes (a raw JSON string).
func (p *bedrockParser) decodeChunk(raw []byte) ([]byte, bool) {
	if bytes.IndexByte(raw, '\\') >= 0 {
		// JSON encoders may write "/" as "\/".
		var ok bool
		if p.unesc, ok = jsonscan.AppendString(p.unesc[:0], raw); !ok {
			return nil, false
		}
		raw = p.unesc
	}
	n := base64.StdEncoding.DecodedLen(len(raw))
	if cap(p.dec) < n {
		p.dec = make([]byte, n)
	}
	n, err := base64.StdEncoding.Decode(p.dec[:n], raw)
	if err != nil {
		return nil, false
	}
	return p.dec[:n], true
}

// Value receives the response matcher's fields.
func (p *bedrockParser) Value(id int, kind jsonscan.Kind, raw []byte) {
	f := &p.f
	nonEmpty := kind == jsonscan.String && len(raw) > 0
	switch id {
	case brStopReason, brClaudeStopReason, brDeltaStopReason:
		if nonEmpty {
			appendName(&p.c.FinishReasons, raw)
		}
	case brToolUseName, brClaudeToolName:
		if nonEmpty {
			appendName(&p.c.ToolCalls, raw)
		}
	case brStartToolName, brBlockName:
		if nonEmpty {
			f.content = true
			appendName(&p.c.ToolCalls, raw)
		}
	case brUsageIn, brClaudeIn, brMessageIn, brPromptTokenCount, brMetricsIn:
		setInt(&f.in, kind, raw)
	case brUsageOut, brClaudeOut, brMessageOut, brGenerationTokenCount, brMetricsOut:
		setInt(&f.out, kind, raw)
	case brUsageCacheRead, brUsageCacheReadCount, brClaudeCacheRead, brMessageCacheRead, brMetricsCacheRd:
		setInt(&f.cacheRead, kind, raw)
	case brUsageCacheWrite, brUsageCacheWriteCount, brClaudeCacheWrite, brMessageCacheWrite, brMetricsCacheWr:
		setInt(&f.cacheWrite, kind, raw)
	case brAWSType:
		f.awsType = strView(kind, raw)
	case brDeltaText, brDeltaToolInput, brDeltaReasoningText, brDeltaReasoningRedacted,
		brDeltaPartialJSON, brDeltaThinking, brCompletion, brGeneration,
		brOutputText, brOutputsText, brNovaDeltaText:
		if nonEmpty {
			f.content = true
		}
	case brBytes:
		f.bytes = strView(kind, raw)
	case brID, brMessageID:
		f.id = strView(kind, raw)
	case brModel, brMessageModel:
		f.model = strView(kind, raw)
	case brType:
		f.typ = strView(kind, raw)
	case brErrorType:
		f.errType = strView(kind, raw)
	}
	if id >= brMetricsIn && id <= brMetricsFirstLat {
		f.metrics = true
	}
}

// bedrockRequest receives the request matcher's fields.
type bedrockRequest struct{ c *Call }

func (r *bedrockRequest) Value(id int, kind jsonscan.Kind, raw []byte) {
	c := r.c
	switch id {
	case bqTemperature, bqTemperatureTop, bqTitanTemperature:
		setFloat(&c.Temperature, kind, raw)
	case bqTopP, bqTopPTop, bqNovaTopP, bqTitanTopP:
		setFloat(&c.TopP, kind, raw)
	case bqMaxTokens, bqMaxTokensTop, bqMaxGenLen, bqNovaMaxNewTokens, bqTitanMaxTokenCount:
		setInt(&c.MaxTokens, kind, raw)
	case bqToolSpecName, bqToolName:
		if kind == jsonscan.String && len(raw) > 0 {
			appendName(&c.ToolDefinitions, raw)
		}
	}
}

// bedrockContent reads Bedrock Converse content: system and messages
// in, content blocks out, whole (Converse) or as an event stream of
// contentBlockStart and contentBlockDelta events (ConverseStream).
func bedrockContent(x *Exchange, _ *Call, r *contentReader) {
	r.request(x, bedrockInputPaths, &blockInput{r: r, fields: bedrockInputFields, msg: -1})
	if !r.response(x) {
		return
	}
	v := &blockOutput{out: &r.out, fields: bedrockOutputFields}
	route, _ := bedrockEndpoint(x)
	if !isAWSEventStream(x, route.stream) {
		r.body(x, bedrockOutputPaths, v)
		return
	}
	var es eventStreamDecoder
	for _, ch := range x.Chunks {
		es.feed(ch.Data)
		for m, ok := es.next(); ok; m, ok = es.next() {
			if string(m.header(":message-type")) == "event" {
				r.output(bedrockOutputPaths, m.payload, v)
			}
		}
	}
	if es.broken || es.dropped > 0 || es.oversize > 0 || es.pending() {
		r.out.cut = true
	}
}

// bedrockBlockFields: text, reasoning, toolUse and toolResult blocks.
var bedrockBlockFields = []fieldPath{
	{"text", bfText},
	{"reasoningContent.reasoningText.text", bfReasoning},
	{"toolUse.toolUseId", bfCallID},
	{"toolUse.name", bfCallName},
	{"toolUse.input", bfCallArgs},
	{"toolResult.toolUseId", bfResultID},
	{"toolResult.content", bfResult},
}

var bedrockInputFields = slices.Concat([]fieldPath{
	{"system[*].text", biSystem},
	{"messages[*]", biMessage},
	{"messages[*].role", biRole},
	{"messages[*].content[*]", biBlock},
}, blockPaths("messages[*].content[*].", bedrockBlockFields))

var bedrockInputPaths = compileFields(bedrockInputFields)

// Responses: the output message's blocks and stopReason; a stream's
// contentBlockStart (a tool use), contentBlockDelta and messageStop
// events.
var bedrockOutputFields = slices.Concat([]fieldPath{
	{"stopReason", boStop},
	{"contentBlockIndex", boIndex},
	{"output.message.content[*]", boBlock},
	{"start.toolUse.toolUseId", boStart + bfCallID},
	{"start.toolUse.name", boStart + bfCallName},
	{"delta.text", boDelta + bfText},
	{"delta.reasoningContent.text", boDelta + bfReasoning},
	{"delta.toolUse.input", boDelta + bfCallArgs},
}, blockPaths("output.message.content[*].", bedrockBlockFields))

var bedrockOutputPaths = compileFields(bedrockOutputFields)
