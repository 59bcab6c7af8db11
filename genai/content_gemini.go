package genai

import (
	"slices"

	"github.com/xpuscope/xpuscope/genai/internal/jsonscan"
)

// Gemini and Vertex AI generateContent content: systemInstruction and
// contents in, candidates out, whole or streamed (events or a JSON
// array), each candidate's text joined over the chunks.

func geminiContent(x *Exchange, r *contentReader) {
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
