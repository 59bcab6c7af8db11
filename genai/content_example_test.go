package genai_test

import (
	"fmt"

	"github.com/xpuscope/xpuscope/genai"
)

func ExampleExtractContent() {
	x := &genai.Exchange{
		Method: "POST", Host: "api.anthropic.com", Path: "/v1/messages",
		RequestHeader:  genai.Header{"Content-Type": {"application/json"}, "X-Api-Key": {"sk-ant-never-read"}},
		RequestBody:    []byte(`{"model":"claude-sonnet-4-5","max_tokens":256,"system":"Answer in one word.","messages":[{"role":"user","content":"Capital of France?"}],"stream":true}`),
		Status:         200,
		ResponseHeader: genai.Header{"Content-Type": {"text/event-stream"}},
		Chunks: []genai.Chunk{{Data: []byte(
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Par\"}}\n\n" +
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"is\"}}\n\n" +
				"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\n" +
				"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")}},
	}
	ep, _ := genai.Detect(x, nil)
	c, _ := genai.Parse(x, ep)

	// An emitter built WithContentCapture(1024) puts these on the span.
	ct := genai.ExtractContent(x, &c, ep, 1024)
	fmt.Println(ct.SystemInstructions)
	fmt.Println(ct.InputMessages)
	fmt.Println(ct.OutputMessages)

	// Under a 60-byte cap, the text is cut where the JSON reaches 60
	// bytes, and the attributes cut are named.
	ct = genai.ExtractContent(x, &c, ep, 60)
	fmt.Println(ct.InputMessages)
	fmt.Println(ct.Truncated)
	// Output:
	// [{"type":"text","content":"Answer in one word."}]
	// [{"role":"user","parts":[{"type":"text","content":"Capital of France?"}]}]
	// [{"role":"assistant","finish_reason":"end_turn","parts":[{"type":"text","content":"Paris"}]}]
	// [{"role":"user","parts":[{"type":"text","content":"Capi"}]}]
	// [gen_ai.input.messages gen_ai.output.messages]
}
