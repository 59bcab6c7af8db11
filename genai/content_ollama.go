package genai

import (
	"slices"

	"github.com/xpuscope/xpuscope/genai/internal/jsonscan"
)

// Ollama content: /api/chat messages, or /api/generate's system and
// prompt, in; the message or response out, whole or as NDJSON lines
// whose text is joined.

func ollamaContent(x *Exchange, stream bool, r *contentReader) {
	r.request(x, ollamaInputPaths, &blockInput{r: r, fields: ollamaInputFields, msg: -1})
	if !r.response(x) {
		return
	}
	v := &ollamaOutput{out: &r.out}
	if !isNDJSON(x, stream) {
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
