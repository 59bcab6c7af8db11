package genai_test

import (
	"fmt"
	"time"

	"github.com/xpuscope/xpuscope/genai"
)

// An OpenAI chat completion, streamed: Detect names the API from the
// exchange, Parse reads the call.
func ExampleParse() {
	start := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	event := func(content string) []byte {
		return fmt.Appendf(nil, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"content":%q},"finish_reason":null}]}`+"\n\n", content)
	}
	x := &genai.Exchange{
		Method: "POST", Host: "api.openai.com", Path: "/v1/chat/completions",
		RequestBody:    []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}],"stream":true,"stream_options":{"include_usage":true}}`),
		Start:          start,
		Status:         200,
		ResponseHeader: genai.Header{"Content-Type": {"text/event-stream"}},
		Chunks: []genai.Chunk{
			{At: start.Add(300 * time.Millisecond), Data: event("Hello")},
			{At: start.Add(320 * time.Millisecond), Data: event("!")},
			{At: start.Add(330 * time.Millisecond), Data: []byte(`data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" +
				`data: {"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":8,"completion_tokens":2}}` + "\n\ndata: [DONE]\n\n")},
		},
		End: start.Add(330 * time.Millisecond),
	}
	ep, ok := genai.Detect(x, nil)
	if !ok {
		fmt.Println("not an LLM API call")
		return
	}
	c, err := genai.Parse(x, ep)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Provider, c.Operation, c.RequestModel, c.ResponseModel, c.FinishReasons)
	fmt.Println("tokens:", c.Usage.InputTokens, c.Usage.OutputTokens)
	fmt.Println("first chunk after", c.TimeToFirstChunk, "then every", c.TimePerChunk, "over", c.OutputChunks, "chunks")
	// Output:
	// openai chat gpt-4o-mini gpt-4o-mini-2024-07-18 [stop]
	// tokens: 8 2
	// first chunk after 300ms then every 20ms over 2 chunks
}

func ExampleSSEParser() {
	var p genai.SSEParser
	for _, chunk := range []string{"event: add\nda", "ta: 1\r", "\ndata: 2\r\n\r\n: comment\n", "data: 3\n\n"} {
		p.Feed([]byte(chunk))
		for p.Next() {
			ev := p.Event()
			fmt.Printf("%q %q\n", ev.Type, ev.Data)
		}
	}
	// Output:
	// "add" "1\n2"
	// "" "3"
}
