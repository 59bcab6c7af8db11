package genai

import "slices"

// Bedrock Converse content: system and messages in, content blocks out,
// whole (Converse) or as an event stream of contentBlockStart and
// contentBlockDelta events (ConverseStream).

func bedrockContent(x *Exchange, r *contentReader) {
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
