// Package genai turns captured LLM API traffic into OpenAI GenAI
// conventions: one HTTP exchange (request, response, and when each
// response chunk arrived) in, a parsed Call out, ready for a span and
// metrics.
//
// The parts are pure functions over bytes, usable by any agent that
// captures HTTP its own way:
//
//   - Detect: provider, operation and wire API from host, path, headers
//     and body (OpenAI, Azure OpenAI, Anthropic, Gemini, Vertex AI,
//     Bedrock, Ollama, OpenAI-compatible servers);
//   - Parse: request and response fields, usage, errors, tool calls and
//     chunk timing, streamed or not: the OpenAI family (chat completions,
//     completions, Responses, embeddings; Azure and compatible servers),
//     Anthropic Messages, Gemini and Vertex AI generateContent (JSON, SSE
//     and JSON-array streams), Ollama (JSON and NDJSON) and Bedrock
//     Converse and InvokeModel (with AWS's binary event-stream framing);
//   - SSEParser: an incremental text/event-stream parser that accepts
//     chunk boundaries at any byte;
//   - partial JSON: fields are read from bodies cut off by a capture
//     buffer, as long as they stand before the cut;
//   - Rates: cost from user-given prices (no price table is built in);
//   - ExtractContent: the prompt and completion text, as the conventions'
//     gen_ai.system_instructions, gen_ai.input.messages and
//     gen_ai.output.messages JSON, each cut to a size cap;
//   - Emitter: a CLIENT span and the GenAI client metrics per call, with
//     exemplars that point at the span.
//
// Secrets never leave: Authorization, API-key and cookie headers are
// never read. No prompt or completion text is kept by default: the
// parsers keep names, numbers and identifiers only, and the Emitter
// reads the bodies again for text only with WithContentCapture, which
// puts the text on the span (never on metrics or exemplars), each
// attribute at most its cap long and still valid JSON, and names the
// attributes it cut in xpuscope.genai.content.truncated.
package genai
