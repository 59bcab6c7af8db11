package genai

import (
	"bytes"

	"github.com/xpuscope/xpuscope/genai/internal/jsonscan"
)

// OpenAI content, chat completions and completions: messages or a
// prompt in, choices out, whole or streamed. Azure OpenAI and
// OpenAI-compatible servers send the same.

func openaiChatContent(x *Exchange, r *contentReader) {
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
