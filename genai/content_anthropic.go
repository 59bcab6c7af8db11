package genai

import "slices"

// Anthropic Messages content: system and messages in, content blocks
// out, whole or as a stream of content_block_start and
// content_block_delta events. The same format comes from Vertex AI's
// rawPredict.

func anthropicContent(x *Exchange, r *contentReader) {
	r.request(x, anthropicInputPaths, &blockInput{r: r, fields: anthropicInputFields, msg: -1})
	if !r.response(x) {
		return
	}
	v := &blockOutput{out: &r.out, fields: anthropicOutputFields}
	if !isEventStream(x) {
		r.body(x, anthropicOutputPaths, v)
		return
	}
	r.events(x, func(data []byte) { r.output(anthropicOutputPaths, data, v) })
}

// anthropicBlockFields: text, thinking, tool_use (id, name, input) and
// tool_result (tool_use_id, content) blocks.
var anthropicBlockFields = []fieldPath{
	{"text", bfText},
	{"thinking", bfReasoning},
	{"id", bfCallID},
	{"name", bfCallName},
	{"input", bfCallArgs},
	{"tool_use_id", bfResultID},
	{"content", bfResult},
}

var anthropicInputFields = slices.Concat([]fieldPath{
	{"system", biSystem},
	{"system[*].text", biSystem},
	{"messages[*]", biMessage},
	{"messages[*].role", biRole},
	{"messages[*].content", biContent},
	{"messages[*].content[*]", biBlock},
}, blockPaths("messages[*].content[*].", anthropicBlockFields))

var anthropicInputPaths = compileFields(anthropicInputFields)

// Responses: a message's content blocks and stop_reason; a stream's
// content_block_start, content_block_delta (text, thinking, a tool
// call's partial_json) and message_delta events.
var anthropicOutputFields = slices.Concat([]fieldPath{
	{"stop_reason", boStop},
	{"delta.stop_reason", boStop},
	{"index", boIndex},
	{"content[*]", boBlock},
	{"content_block.text", boStart + bfText},
	{"content_block.thinking", boStart + bfReasoning},
	{"content_block.id", boStart + bfCallID},
	{"content_block.name", boStart + bfCallName},
	{"delta.text", boDelta + bfText},
	{"delta.thinking", boDelta + bfReasoning},
	{"delta.partial_json", boDelta + bfCallArgs},
}, blockPaths("content[*].", anthropicBlockFields))

var anthropicOutputPaths = compileFields(anthropicOutputFields)
