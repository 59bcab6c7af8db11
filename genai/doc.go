// Package genai turns captured LLM API traffic into OpenAI GenAI
// conventions: one HTTP exchange (request, response, and when each
// response chunk arrived) in, a parsed Call out, ready for a span and
// metrics.
//
// The parts are pure functions over bytes, usable by any agent that
// captures HTTP its own way:
//
//   - Detect: provider and operation from host, path, headers and body;
//   - the provider parsers: request and response fields, usage, errors,
//     tool calls, streamed or not;
//   - SSEParser: an incremental text/event-stream parser that accepts
//     chunk boundaries at any byte;
//   - partial JSON: fields are read from bodies cut off by a capture
//     buffer, as long as they stand before the cut;
//   - Rates: cost from user-given prices (no price table is built in).
//
// Secrets never leave: Authorization and API-key headers are never read,
// and prompt and completion text is not kept unless explicitly asked for.
package genai
