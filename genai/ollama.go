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

// Ollama's native APIs.
const (
	APIOllamaChat     API = "ollama.chat"     // /api/chat
	APIOllamaGenerate API = "ollama.generate" // /api/generate
	APIOllamaEmbed    API = "ollama.embed"    // /api/embed, /api/embeddings
)

// ollamaPort is Ollama's port: a host Detect does not know is taken for
// an Ollama server when the request goes to it.
const ollamaPort = 11434

// ollamaProvider is Ollama's native API. Ollama has no host of its own:
// it is found on its port, or on a mapped host.
var ollamaProvider = provider{
	name: semconv.GenAIProviderOllama,
	apis: []apiReader{
		{APIOllamaChat, newOllamaParser, ollamaContent},
		{APIOllamaGenerate, newOllamaParser, ollamaContent},
		{APIOllamaEmbed, newOllamaParser, nil},
	},
	port:  ollamaPort,
	route: ollamaRoute,
	guesses: []guess{
		{provider: semconv.GenAIProviderOllama, route: ollamaShapeRoute},
	},
}

// ollamaShapeRoute matches Ollama's API on any host and port by its paths
// and the shape of their bodies: /api/chat with a "model" and "messages",
// /api/generate with a "model" and a "prompt", /api/embed (or
// /api/embeddings) with a "model" and an "input" (or a "prompt").
func ollamaShapeRoute(path string, x *Exchange) (routed, bool) {
	r, ok := ollamaRoute(path, x)
	if !ok {
		return r, false
	}
	keys := topLevelKeys(x.RequestBody, "model", "messages", "prompt", "input")
	const model, messages, prompt, input = 1, 2, 4, 8
	var want bool
	switch r.api {
	case APIOllamaChat:
		want = keys&(model|messages) == model|messages
	case APIOllamaGenerate:
		want = keys&(model|prompt) == model|prompt
	default:
		want = keys&model != 0 && keys&(input|prompt) != 0
	}
	return r, want
}

// ollamaRoute matches Ollama's native API.
func ollamaRoute(path string, _ *Exchange) (routed, bool) {
	switch path {
	case "/api/chat":
		return routed{api: APIOllamaChat, op: semconv.GenAIOperationChat}, true
	case "/api/generate":
		return routed{api: APIOllamaGenerate, op: semconv.GenAIOperationTextCompletion}, true
	case "/api/embed", "/api/embeddings":
		return routed{api: APIOllamaEmbed, op: semconv.GenAIOperationEmbeddings}, true
	}
	return routed{}, false
}

// ollamaCall reads an exchange in Ollama's native API into c:
// /api/chat, /api/generate and /api/embed (and the older /api/embeddings),
// streamed (newline-delimited JSON, application/x-ndjson) or not.
//
// It sets every request, response and timing field of c and leaves
// Provider alone; Operation too, unless it is empty, in which case it is
// inferred from the path.
//
//   - Request: model, stream, options.temperature, options.top_p,
//     options.num_predict (MaxTokens; Ollama's -1 and -2, "no limit", read
//     as absent) and tools[].function.name. Ollama streams /api/chat and
//     /api/generate unless the request says "stream": false, so Stream is
//     set when a whole request omits it, and whenever the response is
//     NDJSON.
//   - Response: model, done_reason (FinishReasons), prompt_eval_count
//     (InputTokens), eval_count (OutputTokens),
//     message.tool_calls[].function.name (ToolCalls). Ollama has no
//     response id and reports no cache or reasoning tokens. An error
//     object ({"error": "message"}), as the whole body or as a line of a
//     stream, sets ErrorType to "error" (Ollama errors carry no type; the
//     message is not kept), or to error.type when a proxy sends an OpenAI
//     style error object.
//
// A stream is complete when a line says "done": true or carries an error;
// otherwise, or when a body or line was cut, Incomplete is set. Lines are
// read up to 4 MiB each. Only names, numbers and identifiers are kept,
// never prompt, completion or thinking text.
//
// Timing: TimeToFirstChunk is from Start to the arrival of the first
// line that carries output (response, thinking, message content or
// thinking, or a tool call), TimePerChunk the mean gap between such lines
// after the first, OutputChunks their number; a response that is not
// streamed has none (-1, -1, 0).
func ollamaCall(x *Exchange, c *Call) { parseWith(newOllamaParser(), x, c) }

// newOllamaParser returns a parser of ollamaCall's from the pool.
func newOllamaParser() responseParser { return ollamaPool.Get().(*ollamaParser) }

var ollamaPool = sync.Pool{New: func() any { return new(ollamaParser) }}

// Request fields.
const (
	oqModel = iota
	oqStream
	oqTemperature
	oqTopP
	oqNumPredict
	oqToolName
)

var ollamaRequestPaths = jsonscan.Compile(ollamaRequestFields[:]...)

var ollamaRequestFields = [...]string{
	oqModel:       "model",
	oqStream:      "stream",
	oqTemperature: "options.temperature",
	oqTopP:        "options.top_p",
	oqNumPredict:  "options.num_predict",
	oqToolName:    "tools[*].function.name",
}

// Response fields: one matcher for bodies and stream lines of every
// endpoint.
const (
	orModel = iota
	orDone
	orDoneReason
	orPromptEvalCount
	orEvalCount
	orResponse        // generate
	orThinking        // generate
	orMessageContent  // chat
	orMessageThinking // chat
	orToolName        // chat
	orToolArgs        // chat, when a proxy sends the arguments as a string
	orError           // a message, or an object
	orErrorType       // OpenAI-style error object (proxies)
	orErrorCode       // OpenAI-style error object (proxies)
)

var ollamaResponsePaths = jsonscan.Compile(ollamaResponseFields[:]...)

var ollamaResponseFields = [...]string{
	orModel:           "model",
	orDone:            "done",
	orDoneReason:      "done_reason",
	orPromptEvalCount: "prompt_eval_count",
	orEvalCount:       "eval_count",
	orResponse:        "response",
	orThinking:        "thinking",
	orMessageContent:  "message.content",
	orMessageThinking: "message.thinking",
	orToolName:        "message.tool_calls[*].function.name",
	orToolArgs:        "message.tool_calls[*].function.arguments",
	orError:           "error",
	orErrorType:       "error.type",
	orErrorCode:       "error.code",
}

// ollamaParser is the state of one ollamaCall call, pooled so that its
// buffers are reused.
type ollamaParser struct {
	c     *Call
	lines ndjsonLines
	buf   []byte // a non-streamed body in several chunks
	f     ollamaFields

	body       bodyRead
	terminal   bool // a done line, or an error
	incomplete bool
	timer      contentTimer
}

// ollamaFields holds what one line (or body) says, until it has been
// read whole.
type ollamaFields struct {
	model, doneReason   []byte
	done                bool
	errMessage          bool // "error" is a string
	errType, errCode    []byte
	errTypeSeen         bool
	content             bool
	inTokens, outTokens int64
}

func (p *ollamaParser) release() {
	defer ollamaPool.Put(p)
	p.c = nil
	p.f = ollamaFields{}
	if cap(p.buf) > 1<<20 {
		p.buf = nil
	}
	p.buf = p.buf[:0]
	p.lines.reset()
}

// ollamaEndpoint returns the API of an Ollama path, ignoring the query.
func ollamaEndpoint(x *Exchange) (routed, bool) {
	path, _, _ := strings.Cut(x.Path, "?")
	if len(path) > 1 {
		path = strings.TrimSuffix(path, "/")
	}
	return ollamaRoute(path, x)
}

func (p *ollamaParser) begin(x *Exchange, c *Call) {
	*p = ollamaParser{lines: p.lines, buf: p.buf[:0], c: c}
	p.lines.reset()
	resetCall(c)
	r, known := ollamaEndpoint(x)
	if c.Operation == "" && known {
		c.Operation = r.op
	}
	p.incomplete = x.RequestTruncated || x.ResponseTruncated

	// Request.
	streamSet := false
	if len(x.RequestBody) > 0 && !encoded(x.RequestHeader) {
		req := ollamaRequest{c: c}
		switch ollamaRequestPaths.Scan(x.RequestBody, &req) {
		case jsonscan.Truncated:
			p.incomplete = true
		case jsonscan.Complete:
			// Ollama streams unless told not to.
			streamSet = !req.streamSeen && (r.api == APIOllamaChat || r.api == APIOllamaGenerate)
		}
	} else if x.RequestTruncated || encoded(x.RequestHeader) {
		p.incomplete = true
	}
	if streamSet {
		c.Stream = true
	}

	// Response: the headers and the request tell how it is read.
	if p.body.off = encoded(x.ResponseHeader); p.body.off {
		p.incomplete = true
	}
	p.body.decided, p.body.stream = true, isNDJSON(x, c.Stream)
	if p.body.stream && !p.body.off {
		c.Stream = true
	}
}

func (p *ollamaParser) chunk(ch Chunk) {
	if !p.body.streamed(ch) {
		return
	}
	p.lines.feed(ch.Data)
	for {
		l, cut, ok := p.lines.next()
		if !ok {
			break
		}
		p.line(l, cut, ch.At)
	}
}

func (p *ollamaParser) end(x *Exchange, c *Call) {
	switch {
	case p.body.off:
	case p.body.stream:
		if l, cut, ok := p.lines.flush(); ok && p.body.fed {
			// What arrived of a line the stream was cut in.
			p.line(l, cut, p.body.last)
		}
		if !p.terminal {
			p.incomplete = true
		}
	default:
		p.incomplete = p.incomplete || x.ResponseTruncated
		p.parseBody(x)
	}
	p.timer.finish(x, c)
	c.Incomplete = p.incomplete
}

// isNDJSON says whether the response is read line by line: an NDJSON
// Content-Type says so, a JSON one says not; without either, a streamed
// request decides.
func isNDJSON(x *Exchange, streamRequested bool) bool {
	ct := strings.ToLower(x.ResponseHeader.Get("Content-Type"))
	switch {
	case strings.Contains(ct, "ndjson"), strings.Contains(ct, "jsonl"), strings.Contains(ct, "json-seq"):
		return true
	case strings.Contains(ct, "json"):
		return false
	}
	return streamRequested
}

func (p *ollamaParser) parseBody(x *Exchange) {
	var body []byte
	if body, p.buf = wholeBody(p.buf, x.Chunks); body == nil {
		return
	}
	p.line(body, false, time.Time{})
}

// line reads one line of a stream, or a whole body. cut: the line was
// longer than the limit and this is its start.
func (p *ollamaParser) line(data []byte, cut bool, at time.Time) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return
	}
	p.f = ollamaFields{inTokens: -1, outTokens: -1}
	complete := true
	if cut {
		p.incomplete = true
		complete = false
	}
	if ollamaResponsePaths.Scan(data, p) == jsonscan.Truncated {
		p.incomplete = true
		complete = false
	}
	f, c := &p.f, p.c
	setOnce(&c.ResponseModel, f.model)
	if f.inTokens >= 0 {
		c.Usage.InputTokens = f.inTokens
	}
	if f.outTokens >= 0 {
		c.Usage.OutputTokens = f.outTokens
	}
	appendName(&c.FinishReasons, f.doneReason)
	if f.done {
		p.terminal = true
	}
	if et := ollamaError(f, complete); et != "" {
		p.terminal = true // a stream ends at an error
		if c.ErrorType == "" {
			c.ErrorType = et
		}
	}
	if p.body.stream && f.content {
		p.timer.mark(at)
	}
}

// ollamaError picks the error type of a line or body, or "". A message
// alone says "error"; an object's type is preferred to its code, which
// is taken from a cut line only once the type is known to be absent.
func ollamaError(f *ollamaFields, complete bool) string {
	switch {
	case f.errMessage:
		return "error"
	case usable(f.errType):
		return stringOf(f.errType)
	case len(f.errCode) > 0 && (f.errTypeSeen || complete):
		return stringOf(f.errCode)
	}
	return ""
}

// Value receives the response matcher's fields.
func (p *ollamaParser) Value(id int, kind jsonscan.Kind, raw []byte) {
	f := &p.f
	nonEmpty := kind == jsonscan.String && len(raw) > 0
	switch id {
	case orModel:
		f.model = strView(kind, raw)
	case orDone:
		f.done = kind == jsonscan.True
	case orDoneReason:
		f.doneReason = strView(kind, raw)
	case orPromptEvalCount:
		setInt(&f.inTokens, kind, raw)
	case orEvalCount:
		setInt(&f.outTokens, kind, raw)
	case orResponse, orThinking, orMessageContent, orMessageThinking, orToolArgs:
		if nonEmpty {
			f.content = true
		}
	case orToolName:
		if nonEmpty {
			f.content = true
			appendName(&p.c.ToolCalls, raw)
		}
	case orError:
		if kind == jsonscan.String {
			f.errMessage = true
		}
	case orErrorType:
		f.errType, f.errTypeSeen = strView(kind, raw), true
	case orErrorCode:
		f.errCode = scalarView(kind, raw)
	}
}

// ollamaRequest receives the request matcher's fields.
type ollamaRequest struct {
	c          *Call
	streamSeen bool
}

func (r *ollamaRequest) Value(id int, kind jsonscan.Kind, raw []byte) {
	c := r.c
	switch id {
	case oqModel:
		if kind == jsonscan.String && c.RequestModel == "" {
			c.RequestModel = stringOf(raw)
		}
	case oqStream:
		// null asks for the default, as absent does.
		if kind == jsonscan.True || kind == jsonscan.False {
			r.streamSeen = true
			c.Stream = kind == jsonscan.True
		}
	case oqTemperature:
		setFloat(&c.Temperature, kind, raw)
	case oqTopP:
		setFloat(&c.TopP, kind, raw)
	case oqNumPredict:
		setInt(&c.MaxTokens, kind, raw)
	case oqToolName:
		if kind == jsonscan.String && len(raw) > 0 {
			appendName(&c.ToolDefinitions, raw)
		}
	}
}

// ollamaContent reads Ollama content: /api/chat messages, or
// /api/generate's system and prompt, in; the message or response out,
// whole or as NDJSON lines whose text is joined.
func ollamaContent(x *Exchange, c *Call, r *contentReader) {
	r.request(x, ollamaInputPaths, &blockInput{r: r, fields: ollamaInputFields, msg: -1})
	if !r.response(x) {
		return
	}
	v := &ollamaOutput{out: &r.out}
	if !isNDJSON(x, c.Stream) {
		r.body(x, ollamaOutputPaths, v)
		return
	}
	var s ndjsonLines
	line := func(l []byte, cut bool) {
		if cut {
			r.out.cut = true
		}
		r.output(ollamaOutputPaths, l, v)
	}
	for _, ch := range x.Chunks {
		s.feed(ch.Data)
		for l, cut, ok := s.next(); ok; l, cut, ok = s.next() {
			line(l, cut)
		}
	}
	if l, cut, ok := s.flush(); ok {
		line(l, cut)
	}
}

// ollamaCallFields: a tool call's function.
var ollamaCallFields = []fieldPath{
	{"function.name", bfCallName},
	{"function.arguments", bfCallArgs},
}

var ollamaInputFields = slices.Concat([]fieldPath{
	{"system", biSystem},
	{"prompt", biPrompt},
	{"messages[*]", biMessage},
	{"messages[*].role", biRole},
	{"messages[*].content", biContent},
	{"messages[*].thinking", biReasoning},
	{"messages[*].tool_calls[*]", biBlock},
}, blockPaths("messages[*].tool_calls[*].", ollamaCallFields))

var ollamaInputPaths = compileFields(ollamaInputFields)

// Responses: a chat message or a generate response, whole or one line.
const (
	ooFinish = iota
	ooText
	ooReasoning
	ooCall
)

var ollamaOutputFields = slices.Concat([]fieldPath{
	{"done_reason", ooFinish},
	{"response", ooText},
	{"message.content", ooText},
	{"thinking", ooReasoning},
	{"message.thinking", ooReasoning},
	{"message.tool_calls[*]", ooCall},
}, blockPaths("message.tool_calls[*].", ollamaCallFields))

var ollamaOutputPaths = compileFields(ollamaOutputFields)

// ollamaOutput reads the response into one assistant message: text and
// thinking joined over the lines of a stream, a part per tool call.
type ollamaOutput struct {
	out  *contentSide
	call contentBlock
}

func (v *ollamaOutput) Value(id int, kind jsonscan.Kind, raw []byte) {
	out, s, f := v.out, strValue(kind, raw), ollamaOutputFields[id].field
	if f < blockField && len(s.raw) == 0 {
		return
	}
	switch {
	case f == ooFinish:
		out.finish(out.only("assistant"), s.raw)
	case f == ooText:
		out.delta(out.only("assistant"), keyText, partText, s)
	case f == ooReasoning:
		out.delta(out.only("assistant"), keyReasoning, partReasoning, s)
	case f >= blockField:
		v.call.value(f-blockField, kind, raw)
	}
}

func (v *ollamaOutput) Container(id int, raw []byte) {
	switch f := ollamaOutputFields[id].field; {
	case f == ooCall:
		v.endCall()
	case f >= blockField:
		v.call.container(f-blockField, raw)
	}
}

func (v *ollamaOutput) endCall() {
	v.out.addBlock(v.out.only("assistant"), &v.call)
	v.call = contentBlock{}
}

func (v *ollamaOutput) end() {
	if v.call.seen {
		v.endCall()
	}
}
