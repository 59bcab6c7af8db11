package genai

import "github.com/xpuscope/xpuscope/genai/internal/jsonscan"

// Readers of requests and responses made of content blocks (Anthropic
// Messages, Bedrock Converse, Gemini parts, Ollama tool calls), each
// configured by its fields: paths and what they set.

// contentBlock is a content block (Anthropic, Bedrock) or a part
// (Gemini) being read: text or reasoning, a tool call, or a tool's
// response.
type contentBlock struct {
	text, reasoning jsonView
	thought         bool // the text is reasoning (Gemini)
	call, result    toolFields
	seen            bool
}

// A block's fields: blockField plus one of these.
const (
	bfText = iota
	bfReasoning
	bfThought // true: the text is reasoning
	bfCallID
	bfCallName
	bfCallArgs // an object, or a string
	bfResultID
	bfResult // a string, or JSON
)

// blockField is the first field number of a block's fields, after a
// provider's own.
const blockField = 1000

// blockPaths returns a block's paths (relative, in fields) under prefix,
// numbered from blockField.
func blockPaths(prefix string, fields []fieldPath) []fieldPath {
	out := make([]fieldPath, len(fields))
	for i, f := range fields {
		out[i] = fieldPath{prefix + f.path, blockField + f.field}
	}
	return out
}

// value reads one of the block's fields (a bf… constant) into b.
func (b *contentBlock) value(field int, kind jsonscan.Kind, raw []byte) {
	s := strValue(kind, raw)
	b.seen = true
	switch field {
	case bfText:
		b.text = s
	case bfReasoning:
		b.reasoning = s
	case bfThought:
		b.thought = kind == jsonscan.True
	case bfCallID:
		b.call.id, b.call.seen = s.raw, true
	case bfCallName:
		b.call.name, b.call.seen = s.raw, true
	case bfCallArgs:
		b.call.args, b.call.seen = s, true
	case bfResultID:
		b.result.id, b.result.seen = s.raw, true
	case bfResult:
		b.result.args, b.result.seen = s, true
	}
}

// container reads a tool call's arguments or a tool's response as JSON.
func (b *contentBlock) container(field int, raw []byte) {
	switch field {
	case bfCallArgs:
		b.seen = true
		b.call.args, b.call.seen = containerValue(raw), true
	case bfResult:
		b.seen = true
		b.result.args, b.result.seen = containerValue(raw), true
	}
}

// textKind is what b's text is: text, or reasoning.
func (b *contentBlock) textKind() (int, string) {
	if b.thought {
		return keyReasoning, partReasoning
	}
	return keyText, partText
}

// addBlock adds b to message mi, a part for each thing it holds.
func (s *contentSide) addBlock(mi int, b *contentBlock) {
	_, kind := b.textKind()
	s.text(mi, kind, b.text)
	s.text(mi, partReasoning, b.reasoning)
	if b.call.seen {
		s.addTool(mi, partToolCall, &b.call)
	}
	if b.result.seen {
		s.addTool(mi, partToolResponse, &b.result)
	}
}

// Fields of requests read by a blockInput.
const (
	biSystem    = iota // a string, or a block's text
	biPrompt           // a string: one user message
	biMessage          // a message: its end
	biRole             // a string
	biContent          // a string: a text part
	biReasoning        // a string: a reasoning part
	biBlock            // a block: its end
)

// blockInput reads system instructions, and messages made of blocks,
// each into an input message as its fields arrive (the role may come
// last), a part per block as it ends. A tool's message is a response to
// a call.
type blockInput struct {
	r      *contentReader
	fields []fieldPath
	msg    int // the message being read; -1 between messages
	block  contentBlock
}

func (v *blockInput) message() int {
	if v.msg < 0 {
		v.msg = v.r.in.message(keyNone, "")
	}
	return v.msg
}

func (v *blockInput) Value(id int, kind jsonscan.Kind, raw []byte) {
	sys, in, s := &v.r.sys, &v.r.in, strValue(kind, raw)
	switch f := v.fields[id].field; {
	case f == biSystem:
		sys.onlyText("", partText, s)
	case f == biPrompt:
		in.onlyText("user", partText, s)
	case f == biRole:
		in.role(v.message(), s.raw)
	case f == biContent:
		in.text(v.message(), partText, s)
	case f == biReasoning:
		in.text(v.message(), partReasoning, s)
	case f >= blockField:
		v.message()
		v.block.value(f-blockField, kind, raw)
	}
}

func (v *blockInput) Container(id int, raw []byte) {
	switch f := v.fields[id].field; {
	case f == biBlock:
		v.endBlock()
	case f == biMessage:
		v.endMessage()
	case f >= blockField:
		v.block.container(f-blockField, raw)
	}
}

func (v *blockInput) endBlock() {
	v.r.in.addBlock(v.message(), &v.block)
	v.block = contentBlock{}
}

func (v *blockInput) endMessage() {
	if in := &v.r.in; v.msg >= 0 && in.msgs[v.msg].role == "tool" {
		in.responses(v.msg, nil)
	}
	v.msg = -1
}

func (v *blockInput) end() {
	if v.block.seen {
		v.endBlock()
	}
	v.endMessage()
}

// Fields of responses read by a blockOutput.
const (
	boStop  = iota // the finish reason
	boIndex        // the index of a streamed block
	boBlock        // a whole block: its end
	// A streamed block's start and its deltas: boStart or boDelta plus
	// a bf… field.
	boStart = blockField * 2
	boDelta = blockField * 3
)

// blockOutput reads a whole message's blocks into the parts of one
// assistant message; or a stream's events, a part per block index, its
// start and deltas joined.
type blockOutput struct {
	out          *contentSide
	fields       []fieldPath
	block        contentBlock // a whole block being read
	stop         []byte
	index        int
	start, delta contentBlock
}

func (v *blockOutput) Value(id int, kind jsonscan.Kind, raw []byte) {
	switch f := v.fields[id].field; {
	case f == boStop:
		v.stop = strValue(kind, raw).raw
	case f == boIndex:
		v.index = readIndex(kind, raw, v.index)
	case f >= boDelta:
		v.delta.value(f-boDelta, kind, raw)
	case f >= boStart:
		v.start.value(f-boStart, kind, raw)
	case f >= blockField:
		v.block.value(f-blockField, kind, raw)
	}
}

func (v *blockOutput) Container(id int, raw []byte) {
	switch f := v.fields[id].field; {
	case f == boBlock:
		v.endBlock()
	case f >= blockField && f < boStart:
		v.block.container(f-blockField, raw)
	}
}

func (v *blockOutput) endBlock() {
	v.out.addBlock(v.out.only("assistant"), &v.block)
	v.block = contentBlock{}
}

func (v *blockOutput) end() {
	out := v.out
	if v.block.seen {
		v.endBlock()
	}
	for _, b := range []*contentBlock{&v.start, &v.delta} {
		if b.seen {
			out.deltaBlock(out.only("assistant"), v.index, b)
		}
	}
	out.finish(out.find(0), v.stop)
	*v = blockOutput{out: out, fields: v.fields}
}

// deltaBlock adds a streamed block's start or delta to the part of
// message mi with key: its text, reasoning, or tool call.
func (s *contentSide) deltaBlock(mi, key int, b *contentBlock) {
	s.delta(mi, key, partText, b.text)
	s.delta(mi, key, partReasoning, b.reasoning)
	if b.call.seen {
		pi := s.keyedPart(mi, key, partToolCall)
		s.tool(mi, pi, b.call.id, b.call.name)
		s.add(mi, pi, b.call.args)
	}
}
