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

// The APIs of the Gemini API, which Vertex AI serves too.
const (
	APIGeminiGenerateContent API = "gemini.generate_content" // :generateContent, :streamGenerateContent (Gemini API and Vertex AI)
	APIGeminiEmbedContent    API = "gemini.embed_content"    // :embedContent, :batchEmbedContents
)

// geminiProvider is the Gemini API and Vertex AI, whose paths name the
// model and the method (Vertex AI serves Anthropic models too).
var geminiProvider = provider{
	name: semconv.GenAIProviderGCPGemini,
	apis: []apiReader{
		{APIGeminiGenerateContent, newGeminiParser, geminiContent},
		{APIGeminiEmbedContent, nil, nil}, // detected, not parsed yet
	},
	hosts: map[string]knownHost{
		"generativelanguage.googleapis.com": {provider: semconv.GenAIProviderGCPGemini, route: either(geminiRoute, openAIAnyRoute)},
		"aiplatform.googleapis.com":         vertexHost,
	},
	hostSuffixes: []hostSuffix{
		{suffix: "-aiplatform.googleapis.com", host: &vertexHost, regionFirst: true},
	},
	route: either(vertexRoute, geminiRoute),
	guesses: []guess{
		{semconv.GenAIProviderGCPVertexAI, nil, vertexRoute},
		{semconv.GenAIProviderGCPGenAI, nil, geminiRoute},
	},
}

// vertexHost is a Vertex AI host: it serves Vertex AI's model and
// endpoint paths, and its OpenAI-compatible endpoints.
var vertexHost = knownHost{provider: semconv.GenAIProviderGCPVertexAI, route: either(vertexRoute, openAIAnyRoute)}

// geminiMethods maps Gemini API / Vertex AI methods to API and operation.
var geminiMethods = map[string]struct {
	api    API
	op     string
	stream bool
}{
	"generateContent":       {APIGeminiGenerateContent, semconv.GenAIOperationGenerateContent, false},
	"streamGenerateContent": {APIGeminiGenerateContent, semconv.GenAIOperationGenerateContent, true},
	"embedContent":          {APIGeminiEmbedContent, semconv.GenAIOperationEmbeddings, false},
	"batchEmbedContents":    {APIGeminiEmbedContent, semconv.GenAIOperationEmbeddings, false},
}

// geminiRoute matches /{v1,v1beta,v1alpha}/{models,tunedModels}/{model}:{method}.
func geminiRoute(path string, _ *Exchange) (routed, bool) {
	var buf [maxPathSegments]string
	segs := pathSegments(path, &buf)
	if len(segs) != 3 || (segs[1] != "models" && segs[1] != "tunedModels") {
		return routed{}, false
	}
	switch segs[0] {
	case "v1", "v1beta", "v1alpha":
	default:
		return routed{}, false
	}
	model, method, ok := modelMethod(segs[2])
	m, known := geminiMethods[method]
	if !ok || !known {
		return routed{}, false
	}
	return routed{api: m.api, op: m.op, stream: m.stream, model: model, version: segs[0]}, true
}

// vertexRoute matches
// /{v1,v1beta1}/projects/{p}/locations/{l}/publishers/{pub}/models/{model}:{method}
// and /{v1,v1beta1}/projects/{p}/locations/{l}/endpoints/{id}:{method}.
func vertexRoute(path string, _ *Exchange) (routed, bool) {
	var buf [maxPathSegments]string
	segs := pathSegments(path, &buf)
	if len(segs) < 6 || (segs[0] != "v1" && segs[0] != "v1beta1") || segs[1] != "projects" || segs[3] != "locations" {
		return routed{}, false
	}
	r := routed{version: segs[0], region: segs[4]}
	var last, publisher string
	switch {
	case len(segs) == 9 && segs[5] == "publishers" && segs[7] == "models":
		publisher, last = segs[6], segs[8]
	case len(segs) == 7 && segs[5] == "endpoints":
		last = segs[6]
	default:
		return routed{}, false
	}
	model, method, ok := modelMethod(last)
	if !ok {
		return routed{}, false
	}
	if publisher != "" {
		r.model = model
	}
	if m, known := geminiMethods[method]; known {
		r.api, r.op, r.stream = m.api, m.op, m.stream
		return r, true
	}
	if publisher == "anthropic" && (method == "rawPredict" || method == "streamRawPredict") {
		r.api, r.op, r.stream = APIAnthropicMessages, semconv.GenAIOperationChat, method == "streamRawPredict"
		return r, true
	}
	return routed{}, false
}

// maxPathSegments is the most segments that a Google path has
// (/v1/projects/{p}/locations/{l}/publishers/{pub}/models/{model}:{method}).
const maxPathSegments = 9

// pathSegments splits path, less its leading slash, at every slash, as
// strings.Split does, into buf, and returns the segments; none when
// there are more than maxPathSegments.
func pathSegments(path string, buf *[maxPathSegments]string) []string {
	path = strings.TrimPrefix(path, "/")
	for n := range buf {
		i := strings.IndexByte(path, '/')
		if i < 0 {
			buf[n] = path
			return buf[:n+1]
		}
		buf[n], path = path[:i], path[i+1:]
	}
	return nil
}

// modelMethod splits the last segment "{model}:{method}" (the colon may
// arrive escaped) and unescapes the model.
func modelMethod(seg string) (model, method string, ok bool) {
	seg = unescape(seg)
	i := strings.LastIndexByte(seg, ':')
	if i <= 0 || i == len(seg)-1 {
		return "", "", false
	}
	return cleanField(seg[:i], maxModelLen), seg[i+1:], true
}

// pathModelMethod reads a Google-style request path that ends in
// …/models/{model}:{method} (Gemini API, Vertex AI publisher models,
// behind any prefix; the colon may arrive escaped) and returns the model
// and the method. model is "" when the segment before the last is not
// models or tunedModels (a Vertex AI endpoints/{id} path names no model).
func pathModelMethod(path string) (model, method string) {
	path, _, _ = strings.Cut(path, "?")
	i := strings.LastIndexByte(path, '/')
	if i < 0 {
		return "", ""
	}
	m, meth, ok := modelMethod(path[i+1:])
	if !ok {
		return "", ""
	}
	prev := path[:i]
	prev = prev[strings.LastIndexByte(prev, '/')+1:]
	if prev != "models" && prev != "tunedModels" {
		m = ""
	}
	return clampString(m), meth
}

// geminiCall reads an exchange in the Gemini generateContent format
// into c: the Gemini API (generativelanguage.googleapis.com) and Vertex
// AI (…/publishers/google/models/{model}, …/endpoints/{id}), methods
// generateContent and streamGenerateContent, in all three response
// shapes: one JSON object (generateContent, and errors), server-sent
// events (streamGenerateContent?alt=sse, one GenerateContentResponse per
// event), and a JSON array of GenerateContentResponse objects
// (streamGenerateContent without alt=sse), which is read element by
// element as it arrives, like events.
//
// It sets every request, response and timing field of c and leaves
// Provider and Operation alone. Bodies may be truncated anywhere: fields
// that stood before the cut are read, and Incomplete says that some may
// be missing. Only names, numbers and identifiers are kept (strings at
// most 256 bytes, lists at most 128 entries), never prompt, completion,
// thought or function-argument text; of the headers only Content-Type
// and Content-Encoding are read.
//
// Request: the model of the path (the body names none), Stream for the
// streamGenerateContent method, generationConfig's temperature, topP,
// maxOutputTokens and candidateCount, and the names of
// tools[].functionDeclarations[]; the snake_case spellings the API also
// accepts (generation_config, top_p, max_output_tokens, candidate_count,
// function_declarations) are read too. Built-in tools (googleSearch,
// codeExecution, …) have no name and are not listed.
//
// Response: responseId, modelVersion, every candidate's finishReason
// (Gemini's own values: STOP, MAX_TOKENS, SAFETY, RECITATION,
// MALFORMED_FUNCTION_CALL, …) and, for a blocked prompt, which has no
// candidate, promptFeedback.blockReason (SAFETY, PROHIBITED_CONTENT, …)
// as the finish reason; the names of functionCall parts; and the error
// of a Google error object ({"error":{"code":429,"status":
// "RESOURCE_EXHAUSTED",…}}): its status, else its code, also on a 2xx.
//
// Usage is usageMetadata, mapped the OpenTelemetry way:
//
//   - InputTokens = promptTokenCount, which already includes the cached
//     content's tokens; toolUsePromptTokenCount (the results of built-in
//     tools fed back to the model) is not added;
//   - CacheReadTokens = cachedContentTokenCount;
//   - OutputTokens = candidatesTokenCount + thoughtsTokenCount: Gemini
//     counts thinking apart from the candidates, the conventions count it
//     as output;
//   - ReasoningTokens = thoughtsTokenCount;
//   - CacheCreationTokens stays -1 (caches are created by their own API).
//
// Streamed responses repeat usageMetadata in their chunks, with counts
// so far: later ones replace earlier ones, field by field. Within one
// body or chunk the output sum is taken once both counts have been read,
// or the JSON is whole, so that a body cut inside its usage never shows
// a partial sum.
//
// Streams have no end marker: a stream is complete once a chunk has given
// a finish reason (or an error, or a block reason), an array stream once
// its closing bracket has arrived. Timing: TimeToFirstChunk is from Start
// to the arrival of the first chunk (event or array element) that
// carries output (a text, thought, function call, inline data or
// executable code part), TimePerChunk the mean gap between such chunks
// after the first, OutputChunks their number; a response that is not
// streamed has none (-1, -1, 0).
func geminiCall(x *Exchange, c *Call) { parseWith(newGeminiParser(), x, c) }

// newGeminiParser returns a parser of geminiCall's from the pool.
func newGeminiParser() responseParser { return geminiPool.Get().(*geminiParser) }

var geminiPool = sync.Pool{New: func() any { return new(geminiParser) }}

// Request fields, by what they set.
const (
	gReqTemperature = iota
	gReqTopP
	gReqMaxTokens
	gReqCandidates
	gReqToolName
)

// geminiRequestFields: the API accepts lowerCamelCase and snake_case
// names alike, field by field.
var geminiRequestFields = [...]struct {
	path  string
	field int
}{
	{"generationConfig.temperature", gReqTemperature},
	{"generation_config.temperature", gReqTemperature},
	{"generationConfig.topP", gReqTopP},
	{"generationConfig.top_p", gReqTopP},
	{"generation_config.topP", gReqTopP},
	{"generation_config.top_p", gReqTopP},
	{"generationConfig.maxOutputTokens", gReqMaxTokens},
	{"generationConfig.max_output_tokens", gReqMaxTokens},
	{"generation_config.maxOutputTokens", gReqMaxTokens},
	{"generation_config.max_output_tokens", gReqMaxTokens},
	{"generationConfig.candidateCount", gReqCandidates},
	{"generationConfig.candidate_count", gReqCandidates},
	{"generation_config.candidateCount", gReqCandidates},
	{"generation_config.candidate_count", gReqCandidates},
	{"tools[*].functionDeclarations[*].name", gReqToolName},
	{"tools[*].function_declarations[*].name", gReqToolName},
}

var geminiRequestPaths = func() *jsonscan.Matcher {
	paths := make([]string, len(geminiRequestFields))
	for i, f := range geminiRequestFields {
		paths[i] = f.path
	}
	return jsonscan.Compile(paths...)
}()

// Response fields: a GenerateContentResponse (a body, an event or an
// array element) or an error.
const (
	gResponseID = iota
	gModelVersion
	gFinishReason
	gPartText
	gPartFunctionName
	gPartInlineData
	gPartCode
	gPromptTokens
	gCandidatesTokens
	gCachedTokens
	gThoughtsTokens
	gBlockReason
	gErrStatus
	gErrCode
)

var geminiResponsePaths = jsonscan.Compile(geminiResponseFields[:]...)

var geminiResponseFields = [...]string{
	gResponseID:       "responseId",
	gModelVersion:     "modelVersion",
	gFinishReason:     "candidates[*].finishReason",
	gPartText:         "candidates[*].content.parts[*].text",
	gPartFunctionName: "candidates[*].content.parts[*].functionCall.name",
	gPartInlineData:   "candidates[*].content.parts[*].inlineData.data",
	gPartCode:         "candidates[*].content.parts[*].executableCode.code",
	gPromptTokens:     "usageMetadata.promptTokenCount",
	gCandidatesTokens: "usageMetadata.candidatesTokenCount",
	gCachedTokens:     "usageMetadata.cachedContentTokenCount",
	gThoughtsTokens:   "usageMetadata.thoughtsTokenCount",
	gBlockReason:      "promptFeedback.blockReason",
	gErrStatus:        "error.status",
	gErrCode:          "error.code",
}

// The response shapes.
const (
	geminiBody  = iota // one JSON object
	geminiSSE          // text/event-stream (alt=sse)
	geminiArray        // a JSON array of responses
)

// geminiParser is the state of one geminiCall call, pooled so that its
// buffers are reused.
type geminiParser struct {
	c   *Call
	sse SSEParser
	seq jsonSeq
	f   geminiFields
	buf []byte // a non-streamed body in several chunks

	// The raw counts, merged over chunks; -1 until reported. cand and
	// thoughts are the output sum's terms, reasoning what
	// ReasoningTokens reports.
	prompt, cached, cand, thoughts, reasoning int64

	mode       int
	head       Header // the response's
	body       bodyRead
	terminal   bool // a finish reason, a block reason, an error, or the array's end
	incomplete bool
	timer      contentTimer
}

// geminiFields holds one chunk's (or body's) fields until it has been
// read.
type geminiFields struct {
	id, model                        []byte
	errStatus, errCode               []byte
	errStatusSeen                    bool
	prompt, cand, cached, thoughts   int64
	candSeen, thoughtsSeen, finished bool
	content                          bool
}

func (g *geminiParser) release() {
	defer geminiPool.Put(g)
	g.c = nil
	g.f = geminiFields{}
	if cap(g.buf) > 1<<20 {
		g.buf = nil
	}
	g.buf = g.buf[:0]
	g.sse.Reset()
	g.seq.reset()
}

func (g *geminiParser) begin(x *Exchange, c *Call) {
	*g = geminiParser{sse: g.sse, seq: g.seq, buf: g.buf[:0], c: c,
		prompt: -1, cached: -1, cand: -1, thoughts: -1, reasoning: -1}
	g.sse.Reset()
	g.seq.reset()
	resetCall(c)
	g.incomplete = x.RequestTruncated || x.ResponseTruncated

	// Request: the path, then the body.
	model, method := pathModelMethod(x.Path)
	c.RequestModel = model
	c.Stream = method == "streamGenerateContent"
	if len(x.RequestBody) > 0 && !encoded(x.RequestHeader) {
		if geminiRequestPaths.Scan(x.RequestBody, geminiRequest{c}) == jsonscan.Truncated {
			g.incomplete = true
		}
	} else if x.RequestTruncated || encoded(x.RequestHeader) {
		g.incomplete = true
	}

	// Response.
	g.head = x.ResponseHeader
	if g.body.off = encoded(x.ResponseHeader); g.body.off {
		g.incomplete = true
	}
}

func (g *geminiParser) chunk(ch Chunk) {
	if first, ok := g.body.start(ch); ok {
		g.setMode(geminiModeStart(g.head, g.c.Stream, first, true))
	}
	if !g.body.streamed(ch) {
		return
	}
	if g.mode == geminiSSE {
		sseChunk(&g.sse, ch, g.sseEvent)
		return
	}
	for d := ch.Data; len(d) > 0; {
		var elem []byte
		if elem, d = g.seq.next(d); elem != nil {
			g.event(elem, ch.At)
		}
	}
}

// setMode sets how the response is read.
func (g *geminiParser) setMode(mode int) {
	g.mode = mode
	g.body.decided, g.body.stream = true, mode != geminiBody
	if g.body.stream {
		g.c.Stream = true
	}
}

func (g *geminiParser) sseEvent(ev SSEEvent, at time.Time) { g.event(ev.Data, at) }

func (g *geminiParser) end(x *Exchange, c *Call) {
	if !g.body.off {
		if !g.body.decided {
			g.setMode(geminiModeStart(g.head, c.Stream, 0, false))
		}
		switch g.mode {
		case geminiBody:
			g.incomplete = g.incomplete || x.ResponseTruncated
			g.parseBody(x)
		case geminiSSE:
			if sseEnd(&g.sse, g.body.fed, g.body.last, g.sseEvent) || !g.terminal {
				g.incomplete = true
			}
		case geminiArray:
			g.endArray()
		}
	}

	u := &c.Usage
	u.InputTokens = g.prompt
	u.CacheReadTokens = g.cached
	u.ReasoningTokens = g.reasoning
	if g.cand >= 0 || g.thoughts >= 0 {
		u.OutputTokens = addCounts(max(g.cand, 0), max(g.thoughts, 0))
	}

	g.timer.finish(x, c)
	c.Incomplete = g.incomplete
}

// geminiMode tells the response's shape from its first byte: '{' is one
// object, '[' an array stream, anything else an event stream. An empty
// response is an (empty) stream when one was asked for or announced.
func geminiMode(x *Exchange, stream bool) int {
	first, ok := firstBodyByte(x.Chunks)
	return geminiModeStart(x.ResponseHeader, stream, first, ok)
}

// geminiModeStart is geminiMode for a response with header h whose body
// starts with first (ok: the first byte that is not JSON white space; !ok:
// a blank body).
func geminiModeStart(h Header, stream bool, first byte, ok bool) int {
	if ok {
		switch first {
		case '{':
			return geminiBody
		case '[':
			return geminiArray
		}
		return geminiSSE
	}
	if stream || strings.Contains(strings.ToLower(h.Get("Content-Type")), "text/event-stream") {
		return geminiSSE
	}
	return geminiBody
}

func (g *geminiParser) parseBody(x *Exchange) {
	var body []byte
	if body, g.buf = wholeBody(g.buf, x.Chunks); body == nil {
		return
	}
	g.event(body, time.Time{})
}

// endArray ends an array stream: what arrived of an element the stream
// was cut in is read.
func (g *geminiParser) endArray() {
	if elem := g.seq.rest(); elem != nil && g.body.fed {
		g.event(elem, g.body.last)
	}
	if g.seq.state == seqDone {
		g.terminal = true
	}
	if g.seq.skipped > 0 || !g.terminal {
		g.incomplete = true
	}
}

// event reads one streamed chunk (an event's data or an array element),
// or a whole body.
func (g *geminiParser) event(data []byte, at time.Time) {
	if len(bytes.TrimSpace(data)) == 0 {
		return
	}
	// Untrimmed: the white space after a number at the cut tells that
	// the number is whole.
	g.f = geminiFields{prompt: -1, cand: -1, cached: -1, thoughts: -1}
	complete := true
	if geminiResponsePaths.Scan(data, g) == jsonscan.Truncated {
		g.incomplete = true
		complete = false
	}
	f, c := &g.f, g.c
	setOnce(&c.ResponseID, f.id)
	setOnce(&c.ResponseModel, f.model)

	if f.prompt >= 0 {
		g.prompt = f.prompt
	}
	if f.cached >= 0 {
		g.cached = f.cached
	}
	if f.thoughts >= 0 {
		g.reasoning = f.thoughts
	}
	// The output sum: take a chunk's terms only together.
	if complete || (f.candSeen && f.thoughtsSeen) {
		if f.cand >= 0 {
			g.cand = f.cand
		}
		if f.thoughts >= 0 {
			g.thoughts = f.thoughts
		}
	}

	if et := geminiError(f, complete); et != "" {
		g.terminal = true
		if c.ErrorType == "" {
			c.ErrorType = et
		}
	}
	if f.finished && g.mode == geminiSSE {
		g.terminal = true
	}
	if g.mode != geminiBody && f.content {
		g.timer.mark(at)
	}
}

// geminiError picks the error of a chunk or body, or "": the error
// object's status, else its code. When the data was cut (!complete), the
// code is taken only once the status has been seen (Google's error
// objects give the code first), so that what a prefix yields, the whole
// yields too.
func geminiError(f *geminiFields, complete bool) string {
	var et []byte
	switch {
	case len(f.errStatus) > 0:
		et = f.errStatus
	case len(f.errCode) > 0:
		if f.errStatusSeen || complete {
			et = f.errCode
		}
	}
	if len(et) == 0 {
		return ""
	}
	return stringOf(et)
}

// Value receives the response matcher's fields.
func (g *geminiParser) Value(id int, kind jsonscan.Kind, raw []byte) {
	f := &g.f
	nonEmpty := kind == jsonscan.String && len(raw) > 0
	switch id {
	case gResponseID:
		f.id = strView(kind, raw)
	case gModelVersion:
		f.model = strView(kind, raw)
	case gFinishReason, gBlockReason:
		if nonEmpty {
			f.finished = true
			appendName(&g.c.FinishReasons, raw)
		}
	case gPartText, gPartInlineData, gPartCode:
		if nonEmpty {
			f.content = true
		}
	case gPartFunctionName:
		if nonEmpty {
			f.content = true
			appendName(&g.c.ToolCalls, raw)
		}
	case gPromptTokens:
		setInt(&f.prompt, kind, raw)
	case gCandidatesTokens:
		setInt(&f.cand, kind, raw)
		f.candSeen = true
	case gCachedTokens:
		setInt(&f.cached, kind, raw)
	case gThoughtsTokens:
		setInt(&f.thoughts, kind, raw)
		f.thoughtsSeen = true
	case gErrStatus:
		f.errStatus, f.errStatusSeen = strView(kind, raw), true
	case gErrCode:
		f.errCode = scalarView(kind, raw)
	}
}

// geminiRequest receives the request matcher's fields.
type geminiRequest struct{ c *Call }

func (r geminiRequest) Value(id int, kind jsonscan.Kind, raw []byte) {
	c := r.c
	switch geminiRequestFields[id].field {
	case gReqTemperature:
		setFloat(&c.Temperature, kind, raw)
	case gReqTopP:
		setFloat(&c.TopP, kind, raw)
	case gReqMaxTokens:
		setInt(&c.MaxTokens, kind, raw)
	case gReqCandidates:
		setInt(&c.ChoiceCount, kind, raw)
	case gReqToolName:
		if kind == jsonscan.String && len(raw) > 0 {
			appendName(&c.ToolDefinitions, raw)
		}
	}
}

// jsonSeq splits a JSON array that arrives in pieces into its elements,
// without parsing them: it follows strings and counts brackets. An
// element that lies within one piece is handed out as a view of it;
// one that spans pieces is gathered into a buffer of at most
// DefaultSSELimit bytes (a larger one is skipped and counted). Only
// arrays of objects or arrays are followed: anything else stops it.
type jsonSeq struct {
	state      uint8
	depth      int
	inStr, esc bool
	buf        []byte // the start of the current element, from earlier pieces
	carried    bool   // buf holds it
	poisoned   bool   // the current element outgrew the limit
	skipped    int
}

// jsonSeq states.
const (
	seqBefore  = iota // before the '['
	seqBetween        // in the array, between elements
	seqIn             // in an element
	seqDone           // after the ']'
	seqBad            // not an array of objects: stop
)

func (s *jsonSeq) reset() {
	buf := s.buf[:0]
	if cap(buf) > 64<<10 {
		buf = nil
	}
	*s = jsonSeq{buf: buf}
}

// next reads d up to the end of the next element and returns it (nil if
// d ended first) and the unread rest of d. The element is valid until
// the next call.
func (s *jsonSeq) next(d []byte) (elem, rest []byte) {
	start := 0
	for i := 0; i < len(d); i++ {
		c := d[i]
		switch s.state {
		case seqBefore:
			switch {
			case c == '[':
				s.state = seqBetween
			case !isJSONSpace(rune(c)):
				s.state = seqBad
			}
		case seqBetween:
			switch {
			case c == '{' || c == '[':
				s.state, s.depth, start = seqIn, 1, i
				s.carried, s.poisoned = false, false
				s.buf = s.buf[:0]
			case c == ']':
				s.state = seqDone
			case c != ',' && !isJSONSpace(rune(c)):
				s.state = seqBad
			}
		case seqIn:
			if s.inStr {
				// Skip to the next quote or backslash.
				j := bytes.IndexAny(d[i:], `"\`)
				if s.esc {
					s.esc, j = false, 0
				} else if j < 0 {
					i = len(d) - 1
					continue
				} else {
					i += j
					if d[i] == '\\' {
						s.esc = true
					} else {
						s.inStr = false
					}
				}
				continue
			}
			switch c {
			case '"':
				s.inStr = true
			case '{', '[':
				s.depth++
			case '}', ']':
				s.depth--
				if s.depth == 0 {
					s.state = seqBetween
					n := i + 1 - start
					if s.carried {
						n = len(s.buf) + i + 1
					}
					if s.poisoned || n > DefaultSSELimit {
						s.skipped++
						continue
					}
					if !s.carried {
						return d[start : i+1], d[i+1:]
					}
					s.buf = appendCapped(s.buf, d[:i+1], DefaultSSELimit)
					return s.buf, d[i+1:]
				}
			}
		default: // seqDone, seqBad: the rest is not read
			return nil, nil
		}
	}
	if s.state == seqIn && !s.poisoned {
		// The element goes on in the next piece.
		part := d[start:] // start is 0 when the element began earlier
		if len(s.buf)+len(part) > DefaultSSELimit {
			s.poisoned, s.buf = true, s.buf[:0]
		} else {
			s.buf = appendCapped(s.buf, part, DefaultSSELimit)
			s.carried = true
		}
	}
	return nil, nil
}

// rest returns what arrived of an element the input ended in, or nil.
func (s *jsonSeq) rest() []byte {
	if s.state != seqIn || s.poisoned || !s.carried {
		return nil
	}
	return s.buf
}

// geminiContent reads Gemini and Vertex AI generateContent content:
// systemInstruction and contents in, candidates out, whole or streamed
// (events or a JSON array), each candidate's text joined over the
// chunks.
func geminiContent(x *Exchange, _ *Call, r *contentReader) {
	r.request(x, geminiInputPaths, &blockInput{r: r, fields: geminiInputFields, msg: -1})
	for i := range r.in.msgs {
		r.in.msgs[i].role = geminiRole(r.in.msgs[i].role)
	}
	if !r.response(x) {
		return
	}
	v := &geminiOutput{out: &r.out}
	_, method := pathModelMethod(x.Path)
	switch geminiMode(x, method == "streamGenerateContent") {
	case geminiBody:
		r.body(x, geminiOutputPaths, v)
	case geminiSSE:
		r.events(x, func(data []byte) { r.output(geminiOutputPaths, data, v) })
	case geminiArray:
		r.elements(x, func(elem []byte) { r.output(geminiOutputPaths, elem, v) })
	}
}

// geminiRole maps Gemini's roles to the conventions': a content without
// a role is the user's.
func geminiRole(role string) string {
	switch role {
	case "", "user":
		return "user"
	case "model":
		return "assistant"
	case "function":
		return "tool"
	}
	return role
}

// elements reads each element of a JSON array response with fn.
func (r *contentReader) elements(x *Exchange, fn func(elem []byte)) {
	var s jsonSeq
	for _, ch := range x.Chunks {
		for d := ch.Data; len(d) > 0; {
			var elem []byte
			if elem, d = s.next(d); elem != nil {
				fn(elem)
			}
		}
	}
	if elem := s.rest(); elem != nil {
		fn(elem)
	}
	if s.skipped > 0 {
		r.out.cut = true
	}
}

// geminiPartFields: text (reasoning when thought is true), functionCall
// and functionResponse parts, in both spellings the API takes.
var geminiPartFields = []fieldPath{
	{"text", bfText},
	{"thought", bfThought},
	{"functionCall.id", bfCallID},
	{"functionCall.name", bfCallName},
	{"functionCall.args", bfCallArgs},
	{"function_call.id", bfCallID},
	{"function_call.name", bfCallName},
	{"function_call.args", bfCallArgs},
	{"functionResponse.id", bfResultID},
	{"functionResponse.response", bfResult},
	{"function_response.id", bfResultID},
	{"function_response.response", bfResult},
}

var geminiInputFields = slices.Concat([]fieldPath{
	{"systemInstruction.parts[*].text", biSystem},
	{"system_instruction.parts[*].text", biSystem},
	{"contents[*]", biMessage},
	{"contents[*].role", biRole},
	{"contents[*].parts[*]", biBlock},
}, blockPaths("contents[*].parts[*].", geminiPartFields))

var geminiInputPaths = compileFields(geminiInputFields)

// Responses: a GenerateContentResponse's candidates.
const (
	goCandidate = iota
	goIndex
	goFinish
	goPart
)

var geminiOutputFields = slices.Concat([]fieldPath{
	{"candidates[*]", goCandidate},
	{"candidates[*].index", goIndex},
	{"candidates[*].finishReason", goFinish},
	{"candidates[*].content.parts[*]", goPart},
}, blockPaths("candidates[*].content.parts[*].", geminiPartFields))

var geminiOutputPaths = compileFields(geminiOutputFields)

// geminiOutput reads candidates, each into the output message of its
// index once the candidate is read (the index comes after the content):
// text and reasoning joined over the chunks of a stream, a part per
// function call.
type geminiOutput struct {
	out    *contentSide
	index  int
	finish []byte
	part   contentBlock   // the part being read
	parts  []contentBlock // the candidate's parts
	seen   bool
}

func (v *geminiOutput) Value(id int, kind jsonscan.Kind, raw []byte) {
	v.seen = true
	switch f := geminiOutputFields[id].field; {
	case f == goIndex:
		v.index = readIndex(kind, raw, v.index)
	case f == goFinish:
		v.finish = strValue(kind, raw).raw
	case f >= blockField:
		v.part.value(f-blockField, kind, raw)
	}
}

func (v *geminiOutput) Container(id int, raw []byte) {
	switch f := geminiOutputFields[id].field; {
	case f == goPart:
		v.endPart()
	case f == goCandidate:
		v.endCandidate()
	case f >= blockField:
		v.part.container(f-blockField, raw)
	}
}

func (v *geminiOutput) endPart() {
	if len(v.parts) < maxCallList {
		v.parts = append(v.parts, v.part)
	} else {
		v.out.cut = true
	}
	v.part = contentBlock{}
}

func (v *geminiOutput) endCandidate() {
	out := v.out
	if !v.seen {
		return
	}
	mi := out.keyedMessage(v.index, "assistant")
	out.finish(mi, v.finish)
	for i := range v.parts {
		p := &v.parts[i]
		key, kind := p.textKind()
		out.delta(mi, key, kind, p.text)
		if p.call.seen {
			out.addTool(mi, partToolCall, &p.call)
		}
	}
	v.index, v.finish, v.parts, v.seen = 0, nil, v.parts[:0], false
}

func (v *geminiOutput) end() {
	if v.part.seen {
		v.endPart()
	}
	v.endCandidate()
}
