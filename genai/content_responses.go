package genai

import "github.com/xpuscope/xpuscope/genai/internal/jsonscan"

// OpenAI Responses API content: instructions and input items in, output
// items out, whole or as a stream of events.

func openaiResponsesContent(x *Exchange, r *contentReader) {
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

// responsesFinish is a response's finish reason, as ParseOpenAI reads
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
