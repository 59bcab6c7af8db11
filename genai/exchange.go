package genai

import "time"

// Exchange is one captured HTTP request and its response. Bodies may be
// truncated by the capture; the flags say so.
type Exchange struct {
	Method string
	// Host is the request's Host (or :authority), with the port when the
	// capture knows it ("api.openai.com", "10.0.0.7:8000").
	Host string
	// Path is the request target: path and query ("/v1/chat/completions",
	// "/openai/deployments/gpt4o/chat/completions?api-version=2024-06-01").
	Path             string
	RequestHeader    Header
	RequestBody      []byte
	RequestTruncated bool

	// Start is when the request was sent; End when the response ended
	// (the last chunk, or the capture gave up). RequestEnd, when known, is
	// when the last byte of the request went: for a server, when it had
	// read the request in full.
	Start, End, RequestEnd time.Time

	Status            int
	ResponseHeader    Header
	Chunks            []Chunk
	ResponseTruncated bool

	// sock is the inode number of the capture's connection's socket,
	// where known (WithRetransmits).
	sock uint64
}

// Chunk is a piece of the response body as the capture read it.
type Chunk struct {
	At   time.Time
	Data []byte
}

// Header is an HTTP header block. Keys are canonical (textproto); the
// parsers never look at credentials (Authorization, x-api-key, api-key,
// x-goog-api-key, Cookie). In the capture's exchanges those fields are
// there with an empty value (SensitiveHeaders), except an AWS Signature
// Version 4 Authorization, which reads "AWS4-HMAC-SHA256", or
// "AWS4-HMAC-SHA256 bedrock" when signed for Bedrock: never the secret.
type Header map[string][]string

// Get returns the first value of key (canonical form), or "".
func (h Header) Get(key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Usage is token usage. A field the response did not report is -1.
type Usage struct {
	InputTokens, OutputTokens            int64
	CacheReadTokens, CacheCreationTokens int64
	ReasoningTokens                      int64
}

// NoUsage is a Usage with nothing reported.
var NoUsage = Usage{-1, -1, -1, -1, -1}

// Call is what the parsers read from an exchange.
type Call struct {
	Provider  string // gen_ai.provider.name: "openai", "anthropic", "gcp.gemini", …
	Operation string // gen_ai.operation.name: "chat", "text_completion", "embeddings", "generate_content", …

	// Request.
	RequestModel    string
	Temperature     float64 // NaN when absent
	TopP            float64 // NaN when absent
	MaxTokens       int64   // -1 when absent
	ChoiceCount     int64   // -1 when absent
	Stream          bool
	ToolDefinitions []string // names of the tools offered

	// Response.
	ResponseID    string
	ResponseModel string
	FinishReasons []string
	Usage         Usage
	ToolCalls     []string // names of the tools the model called
	// ErrorType is the provider's error type or code, also when a 2xx
	// response carries an error object; "" when none.
	ErrorType string

	// Timing, from the chunks' arrival times.
	TimeToFirstChunk time.Duration // first chunk with content; -1 if none
	TimePerChunk     time.Duration // mean gap between content chunks after the first; -1 if fewer than two
	OutputChunks     int
	Duration         time.Duration

	// Incomplete is set when a body was truncated or a stream cut, and
	// fields after the cut could not be read.
	Incomplete bool
}
