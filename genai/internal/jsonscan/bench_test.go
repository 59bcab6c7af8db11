package jsonscan

import "testing"

var benchChunk = []byte(`{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_06737a9306","choices":[{"index":0,"delta":{"content":" there"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"x5Yq"}`)

// BenchmarkScan reads a chat chunk's fields.
func BenchmarkScan(b *testing.B) {
	m := Compile("id", "model", "choices[*].finish_reason", "choices[*].delta.content", "choices[*].delta.tool_calls[*].function.name", "usage.prompt_tokens", "usage.completion_tokens", "error.type")
	var v nopVisitor
	b.SetBytes(int64(len(benchChunk)))
	b.ReportAllocs()
	for b.Loop() {
		m.Scan(benchChunk, &v)
	}
}

// BenchmarkSkip passes over a large array of numbers (an embedding).
func BenchmarkSkip(b *testing.B) {
	data := []byte(`{"data":[{"embedding":[`)
	for i := range 1536 {
		if i > 0 {
			data = append(data, ',')
		}
		data = append(data, "-0.0028842222"...)
	}
	data = append(data, `]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":8}}`...)
	m := Compile("model", "usage.prompt_tokens")
	var v nopVisitor
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		m.Scan(data, &v)
	}
}
