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
// Capture (NewCapture) is the Source that feeds them from unmodified
// processes on the host, with eBPF:
//
//   - HTTPS through OpenSSL, of every libssl.so (1.1 and 3, in containers
//     and wheels too) and every executable with OpenSSL linked in (Node),
//     found as processes exec and dlopen: a process seen from its start is
//     read by connection (a uprobe on SSL_do_handshake; its sockets'
//     ciphertext decrypted with the secrets found in the connection's
//     object), one found running by call (uprobes on ssl_write_internal
//     and ssl_read_internal, which SSL_write(_ex) and SSL_read(_ex) call,
//     found through them in a stripped library; the exported four where
//     they are not);
//   - plaintext HTTP to local model servers (WithPlaintextPorts, default
//     vLLM 8000, llama.cpp and TGI 8080, LiteLLM 4000, TGI's launcher 3000,
//     SGLang 30000, Ollama 11434), from
//     the tracepoints of close and the data syscalls (read, write and
//     their vector and socket forms; where tracefs, which names them, is
//     not mounted, the raw sys_enter and sys_exit, which every system call
//     runs: CaptureStatus.RawSyscalls says why), which stand aside while
//     no TCP connection with a watched port exists (a listener does not
//     count); no kprobes. The capturing process's own calls (an agent's
//     exports and endpoints) are left out, in plaintext as over TLS;
//   - HTTP/1.1 framing per connection (Content-Length, chunked, SSE,
//     keep-alive, pipelining), each response read stamped with the
//     kernel's time of the read; a streamed response parsed as it
//     arrives, whatever its length; what is kept of a body capped
//     (WithBodyLimit, 64 KiB); memory bounded per connection and in
//     total (WithMaxConnections, WithIdleTimeout), evictions counted;
//   - calls lost to a full ring buffer abandon the exchange they belong
//     to, counted: an exchange is never assembled from the wrong bytes;
//   - the streaming calls sent and waiting for their first chunk, counted
//     at each collection (xpuscope.genai.client.waiting_requests): the
//     server's queue as the clients see it.
//
// With WithRetransmits (given package genai/node's CallRetransmits), each
// call's span carries the TCP segments its connection retransmitted
// during the call. A plaintext connection's socket is found by its
// descriptor; a TLS connection's is told by the kernel side, once: a Go
// crypto/tls connection's through its *tls.Conn (where it is over a
// *net.TCPConn), an OpenSSL connection's read by call at a system call
// that SSL_read or SSL_write makes on it, which only the system-call
// programs see, one read by connection as its socket is marked.
//
// With WithResolver (a *podjoin.Resolver, or any Resolver), each call's
// span carries the attributes of the calling process's container and pod,
// and is a child of the span context the resolver gives (a workload
// started with TRACEPARENT). The resolver is asked once per process, at
// its first LLM API call, and hears of the process's exit when its last
// connection goes. The GenAI metrics carry no pod: they are histograms by
// provider, model and operation, and each pod that ever made a call (pod
// names change with every rollout) would multiply their series; the span
// names the pod.
//
// A process on the node that serves an LLM API has each request it served
// reported at its end too: a SERVER span and the gen_ai.server.* metrics,
// but those that package genai/serving reports from the server's own
// metrics endpoint (WithServedElsewhere): no request is counted twice.
// HTTPS is read through OpenSSL and through Go's crypto/tls (found by
// symbol, or in a stripped binary's pclntab), HTTP/1.1 and HTTP/2 alike.
// A Go program the capture sees from its exec is read by connection: its
// handshakes mark their sockets, whose ciphertext the system-call
// programs capture, and the traffic secrets it logs (whether or not it
// sets a KeyLogWriter) decrypt it in this process, where they stay; one
// found running when the capture begins is probed at every call. So is
// an OpenSSL program, whose secrets are found in each connection's
// object (TLS 1.3) or its session (TLS 1.2, read from the process's
// memory).
// Client exchanges go to the Emitter and, with WithExchangeHandler, to
// the caller.
//
// Secrets never leave: the values of the Authorization, API-key and
// cookie headers (SensitiveHeaders) are dropped as each message is
// framed, before anything else sees them; the fields stay, empty, so that
// detection can tell the kind of credential (of an AWS signature, whether
// it is Bedrock's). No prompt or completion text is kept by default: the
// parsers keep names, numbers and identifiers only, and the Emitter
// reads the bodies again for text only with WithContentCapture, which
// puts the text on the span (never on metrics or exemplars), each
// attribute at most its cap long and still valid JSON, and names the
// attributes it cut in xpuscope.genai.content.truncated.
package genai
