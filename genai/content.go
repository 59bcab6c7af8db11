package genai

import (
	"bytes"
	"time"

	"github.com/xpuscope/xpuscope/genai/internal/jsonscan"
	"github.com/xpuscope/xpuscope/semconv"
)

// Content is the prompt and completion text of one exchange, as the
// OpenTelemetry GenAI conventions (v1.41) record it on a span: each
// field is the JSON value of one attribute, "" when there is none.
//
// Parts are {"type":"text","content":…}, {"type":"reasoning",
// "content":…}, {"type":"tool_call","id":…,"name":…,"arguments":…} and
// {"type":"tool_call_response","id":…,"response":…}. Tool arguments and
// responses are embedded as JSON when they are whole, valid JSON that
// fits, else as a string. Images, audio, files and other non-text parts
// are left out. Roles are the provider's, but Gemini's "model" reads
// "assistant" and "function" reads "tool"; finish reasons are the
// provider's own, as gen_ai.response.finish_reasons has them.
type Content struct {
	// SystemInstructions is gen_ai.system_instructions, a JSON array of
	// parts: the instructions of the APIs that take them apart from the
	// conversation (Anthropic system, Gemini systemInstruction, Bedrock
	// system, the Responses API's instructions, Ollama generate's
	// system). Instructions sent as a message of the conversation (an
	// OpenAI system or developer message) stay in InputMessages.
	SystemInstructions string
	// InputMessages is gen_ai.input.messages, a JSON array of
	// {"role","parts"} in the order they were sent.
	InputMessages string
	// OutputMessages is gen_ai.output.messages, a JSON array of
	// {"role","finish_reason","parts"}, one per choice or candidate;
	// finish_reason is left out when the response did not give it (a
	// stream cut short). A stream's text is its deltas joined.
	OutputMessages string
	// Truncated names the attributes (semconv keys) whose content is not
	// all there: cut to the size cap, or read from a body that the
	// capture cut short or that came compressed. It may name an
	// attribute that is absent because of that.
	Truncated []string
}

// ExtractContent reads the prompt and completion text of an exchange
// that Parse read into c with the endpoint ep: the system instructions
// and input messages from the request, the output messages from the
// response, streamed or not, in every format Parse reads but Bedrock
// InvokeModel (whose bodies are each model family's own). Embeddings
// have none.
//
// maxBytes caps each attribute: its JSON is at most maxBytes long and
// stays valid JSON. Whole messages and parts are kept while they fit;
// the text (or tool arguments) that does not fit is cut at a UTF-8
// boundary and ends the attribute, and Truncated names it. Reading
// keeps no more than about maxBytes of text per attribute, whatever
// the size of the bodies or the length of a stream; at most 128 parts
// per message and 128 output messages are kept. maxBytes <= 0 gives an
// empty Content. Of the headers, only Content-Type and Content-Encoding
// are read.
func ExtractContent(x *Exchange, c *Call, ep Endpoint, maxBytes int) Content {
	if maxBytes <= 0 {
		return Content{}
	}
	r := contentReader{
		sys: contentSide{budget: maxBytes, flat: true},
		in:  contentSide{budget: maxBytes},
		out: contentSide{budget: maxBytes},
	}
	read := readerOf(ep.API).content
	if read == nil {
		return Content{}
	}
	read(x, c, &r)
	return r.content(maxBytes)
}

// contentReader gathers the three attributes of one exchange.
type contentReader struct {
	sys, in, out contentSide
}

// contentVisitor reads content out of one JSON text (a body, an event,
// a line); end is called once the text is read, to act on what it said
// and to close what a cut left open.
type contentVisitor interface {
	jsonscan.Visitor
	end()
}

// scanContent reads data (unless blank) with m and v, and reports
// whether data was cut short.
func scanContent(m *jsonscan.Matcher, data []byte, v contentVisitor) (cut bool) {
	if len(bytes.TrimSpace(data)) == 0 {
		return false
	}
	cut = m.Scan(data, v) == jsonscan.Truncated
	v.end()
	return cut
}

// request reads the request body, which gives the system instructions
// and the input messages.
func (r *contentReader) request(x *Exchange, m *jsonscan.Matcher, v contentVisitor) {
	cut := encoded(x.RequestHeader) || x.RequestTruncated
	if !encoded(x.RequestHeader) && scanContent(m, x.RequestBody, v) {
		cut = true
	}
	if cut {
		r.sys.cut, r.in.cut = true, true
	}
}

// output reads a piece of the response (a body, an event, a line) with
// m and v.
func (r *contentReader) output(m *jsonscan.Matcher, data []byte, v contentVisitor) {
	if scanContent(m, data, v) {
		r.out.cut = true
	}
}

// response says whether the response body can be read, marking the
// output cut when the capture cut it or it came compressed.
func (r *contentReader) response(x *Exchange) bool {
	if x.ResponseTruncated || encoded(x.ResponseHeader) {
		r.out.cut = true
	}
	return !encoded(x.ResponseHeader)
}

// body reads a response that is one JSON text.
func (r *contentReader) body(x *Exchange, m *jsonscan.Matcher, v contentVisitor) {
	if body, _ := wholeBody(nil, x.Chunks); body != nil {
		r.output(m, body, v)
	}
}

// events reads the data of each event of a text/event-stream response
// with fn.
func (r *contentReader) events(x *Exchange, fn func(data []byte)) {
	var p SSEParser
	if sseEvents(&p, x.Chunks, func(ev SSEEvent, _ time.Time) { fn(ev.Data) }) {
		r.out.cut = true
	}
}

func (r *contentReader) content(maxBytes int) Content {
	var ct Content
	for _, a := range []struct {
		dst  *string
		side *contentSide
		key  string
	}{
		{&ct.SystemInstructions, &r.sys, string(semconv.GenAISystemInstructions)},
		{&ct.InputMessages, &r.in, string(semconv.GenAIInputMessages)},
		{&ct.OutputMessages, &r.out, string(semconv.GenAIOutputMessages)},
	} {
		var cut bool
		*a.dst, cut = a.side.json(maxBytes)
		if cut {
			ct.Truncated = append(ct.Truncated, a.key)
		}
	}
	return ct
}

// Part types (gen_ai.*.messages).
const (
	partText         = "text"
	partReasoning    = "reasoning"
	partToolCall     = "tool_call"
	partToolResponse = "tool_call_response"
)

// Keys of streamed parts: text and reasoning deltas go to one part each,
// a legacy OpenAI function call to one; tool calls and content blocks
// are keyed by their index (>= 0). Parts and messages added whole have
// keyNone.
const (
	keyNone      = -4
	keyFunction  = -3
	keyReasoning = -2
	keyText      = -1
)

// What a message and a part cost of a budget, beyond their text: the
// least JSON they take, {"role":"","parts":[]} and
// {"type":"","content":""}. Every charge is at most what the JSON
// takes, so that what fits in the cap is never dropped while reading.
const (
	messageCharge = 22
	partCharge    = 24
)

// contentSide gathers the messages of one attribute (for system
// instructions, flat: one message whose parts are the instructions),
// keeping at most budget bytes: text, strings, and a charge per message
// and part. cut: something was left out.
type contentSide struct {
	msgs   []contentMsg
	budget int
	flat   bool
	cut    bool
}

type contentMsg struct {
	key          int
	role, finish string
	parts        []contentPart
}

type contentPart struct {
	key      int
	kind     string
	id, name string
	// body is the text; for a tool call or response, the arguments or
	// the response, JSON text when whole.
	body []byte
}

// jsonView is a value the scanner reported: a string (raw, to be
// decoded) or a container's JSON text.
type jsonView struct {
	raw []byte
	str bool
}

func strValue(kind jsonscan.Kind, raw []byte) jsonView {
	if kind != jsonscan.String {
		return jsonView{}
	}
	return jsonView{raw: raw, str: true}
}

func containerValue(raw []byte) jsonView { return jsonView{raw: raw} }

// charge takes n bytes of the budget, or marks the side cut.
func (s *contentSide) charge(n int) bool {
	if n > s.budget {
		s.budget, s.cut = 0, true
		return false
	}
	s.budget -= n
	return true
}

// message adds a message and returns its index; -1 when the budget is
// spent.
func (s *contentSide) message(key int, role string) int {
	charge := messageCharge
	if s.flat {
		charge = 0 // its parts are written without it
	}
	if !s.charge(charge) {
		return -1
	}
	s.msgs = append(s.msgs, contentMsg{key: key, role: role})
	return len(s.msgs) - 1
}

// find returns the index of the message with key, or -1.
func (s *contentSide) find(key int) int {
	for i := range s.msgs {
		if s.msgs[i].key == key {
			return i
		}
	}
	return -1
}

// keyedMessage returns the message with key (a choice or candidate
// index), added with role when new; -1 past the budget or the bound.
func (s *contentSide) keyedMessage(key int, role string) int {
	if i := s.find(key); i >= 0 {
		return i
	}
	if len(s.msgs) >= maxCallList {
		s.cut = true
		return -1
	}
	return s.message(key, role)
}

// only returns the side's one message (system instructions, an output
// that has one), added with role when new.
func (s *contentSide) only(role string) int { return s.keyedMessage(0, role) }

// dropEmpty removes message mi, the last one, if it has neither a role
// nor a part.
func (s *contentSide) dropEmpty(mi int) {
	if mi >= 0 && mi == len(s.msgs)-1 && s.msgs[mi].role == "" && len(s.msgs[mi].parts) == 0 {
		s.msgs = s.msgs[:mi]
	}
}

// part adds a part of kind to message mi and returns its index; -1 when
// mi < 0, or past the budget or the bound.
func (s *contentSide) part(mi, key int, kind string) int {
	if mi < 0 {
		return -1
	}
	m := &s.msgs[mi]
	if len(m.parts) >= maxCallList {
		s.cut = true
		return -1
	}
	if !s.charge(partCharge) {
		return -1
	}
	m.parts = append(m.parts, contentPart{key: key, kind: kind})
	return len(m.parts) - 1
}

// keyedPart returns the part of message mi with key, added with kind
// when new.
func (s *contentSide) keyedPart(mi, key int, kind string) int {
	if mi < 0 {
		return -1
	}
	for i := range s.msgs[mi].parts {
		if s.msgs[mi].parts[i].key == key {
			return i
		}
	}
	return s.part(mi, key, kind)
}

// role sets message mi's role (when not set yet). Roles, finish
// reasons, tool ids and names cost none of the budget: they are short
// (see stringOf), one or two per message or part, and kept even when
// the text did not all fit.
func (s *contentSide) role(mi int, raw []byte) {
	if mi >= 0 {
		setOnce(&s.msgs[mi].role, raw)
	}
}

// defaultRole sets message mi's role to role when it has none.
func (s *contentSide) defaultRole(mi int, role string) {
	if mi >= 0 && s.msgs[mi].role == "" {
		s.msgs[mi].role = role
	}
}

// finish sets message mi's finish reason (when not set yet).
func (s *contentSide) finish(mi int, raw []byte) {
	if mi >= 0 {
		setOnce(&s.msgs[mi].finish, raw)
	}
}

// tool sets part pi's id and name (when not set yet).
func (s *contentSide) tool(mi, pi int, id, name []byte) {
	if mi < 0 || pi < 0 {
		return
	}
	p := &s.msgs[mi].parts[pi]
	setOnce(&p.id, id)
	setOnce(&p.name, name)
}

// add appends v to the body of part pi of message mi: a string decoded,
// a container compacted, as much as the budget takes, cut at a rune.
func (s *contentSide) add(mi, pi int, v jsonView) {
	if mi < 0 || pi < 0 || len(v.raw) == 0 {
		return
	}
	p := &s.msgs[mi].parts[pi]
	n := len(p.body)
	var cut bool
	if v.str {
		p.body, _, cut = jsonscan.AppendStringMax(p.body, v.raw, s.budget)
	} else {
		p.body, cut = appendCompact(p.body, v.raw, s.budget)
	}
	s.budget -= len(p.body) - n
	s.cut = s.cut || cut
}

// text adds a part of kind holding the string or container v to
// message mi.
func (s *contentSide) text(mi int, kind string, v jsonView) {
	if len(v.raw) > 0 {
		s.add(mi, s.part(mi, keyNone, kind), v)
	}
}

// onlyText adds a part of kind holding v to the side's one message,
// added with role when new: system instructions, a prompt.
func (s *contentSide) onlyText(role, kind string, v jsonView) {
	if len(v.raw) > 0 {
		s.text(s.only(role), kind, v)
	}
}

// delta appends v to the part of message mi with key, added with kind
// when new: a streamed delta.
func (s *contentSide) delta(mi, key int, kind string, v jsonView) {
	if len(v.raw) > 0 {
		s.add(mi, s.keyedPart(mi, key, kind), v)
	}
}

// responses turns the text parts of message mi, a tool's message, into
// tool_call_response parts answering the call id.
func (s *contentSide) responses(mi int, id []byte) {
	if mi < 0 {
		return
	}
	for i := range s.msgs[mi].parts {
		if p := &s.msgs[mi].parts[i]; p.kind == partText {
			p.kind = partToolResponse
			setOnce(&p.id, id)
		}
	}
}

// fieldPath maps a path to the field it sets; several paths may set one.
type fieldPath struct {
	path  string
	field int
}

func compileFields(f []fieldPath) *jsonscan.Matcher {
	paths := make([]string, len(f))
	for i := range f {
		paths[i] = f[i].path
	}
	return jsonscan.Compile(paths...)
}

// maxIndex bounds the choice, candidate and block indexes taken as keys.
const maxIndex = 1 << 20

// readIndex reads an index (a Number from 0 to maxIndex), else returns
// def.
func readIndex(kind jsonscan.Kind, raw []byte, def int) int {
	if kind != jsonscan.Number {
		return def
	}
	if n, ok := jsonscan.Int(raw); ok && n >= 0 && n < maxIndex {
		return int(n)
	}
	return def
}

// toolFields are the fields of a tool call (or a tool's response) being
// read, as views.
type toolFields struct {
	id, name []byte
	args     jsonView
	seen     bool
}

// addTool adds f to message mi as a part of kind.
func (s *contentSide) addTool(mi int, kind string, f *toolFields) {
	pi := s.part(mi, keyNone, kind)
	s.tool(mi, pi, f.id, f.name)
	s.add(mi, pi, f.args)
}
