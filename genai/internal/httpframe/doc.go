// Package httpframe reassembles HTTP/1.x and HTTP/2 exchanges from the
// data a traced process wrote and read on one connection, as an eBPF
// capture hands it over (SSL_read/SSL_write uprobes, or socket syscalls):
// chunks in order, each with its direction and the timestamp of the read
// or write, and the losses reported.
//
// A Conn per connection takes Feed (data written or read), Gap (data lost
// in one direction) and Close, and hands each complete exchange to
// Config.OnExchange: request line, headers and body; status, headers and
// body; the response body split by the read that delivered each piece, for
// the time to first chunk and per-chunk timing; and the timestamps of the
// first and last bytes of request and response.
//
// # Role
//
// The direction whose first message is a request line carries the
// client's messages, so the traced process may be either end; each
// Exchange says which (Role). A status line first tells the role too
// (capture began between two exchanges; that response is dropped as
// unpaired). A connection whose first bytes are neither HTTP/1.x nor
// HTTP/2 (TLS ciphertext, another protocol), or that switches protocols
// (101, a CONNECT tunnel) is ignored from then on, at the cost of a
// counter.
//
// # HTTP/2
//
// A connection that starts with the client's preface, or with a server's
// SETTINGS frame (the direction that carries the preface is the client's),
// is read as HTTP/2 (RFC 9113): frame headers and every frame but DATA
// through the golang.org/x/net/http2 Framer, header blocks (HEADERS,
// CONTINUATION, PUSH_PROMISE) through an hpack.Decoder per direction,
// whose dynamic table follows the encoder's as long as nothing is lost.
// Each stream a client opens is an exchange (Proto "HTTP/2", :authority
// as a Host field, the other pseudo-header fields in Method, Target and
// Status); DATA payloads are taken as they come, never buffered whole, so
// a streamed response reaches OnResponse's sink read by read, as over
// HTTP/1.x. Informational heads are skipped; trailers end a message. A
// stream an end resets (RST_STREAM) is delivered as it stood, with
// Exchange.ResetBy; one the server refused (REFUSED_STREAM, or above a
// GOAWAY's last stream) is abandoned, for its client retries it.
//
// A loss (Gap), a frame the Framer rejects, or a header block that does
// not decode leaves the header state unknown: the decoder starts afresh,
// and the streams in progress are abandoned (for a bad block, its stream
// only). A fresh table holds only what the encoder added since, at the
// places the encoder has them, so a later block that refers to an entry
// lost fails to decode, and is abandoned, instead of naming another
// field: headers are never mis-decoded. After a loss the direction
// resumes at the first Feed that starts with a plausible frame header.
//
// # Framing
//
// Framing follows RFC 9112: Content-Length, chunked transfer coding
// (extensions and trailers skipped), bodies delimited by the close of the
// connection, informational (1xx) responses skipped, no body for HEAD, 204
// and 304, keep-alive, and pipelined requests paired with their responses
// in order. Streamed responses (Server-Sent Events, chunked or delimited
// by the close) are framed as they come, over any number of reads; chunk
// boundaries and read boundaries may fall on any byte.
//
// A malformed message, or a gap, abandons its exchange (counted in Stats
// by cause) and its direction resyncs at the next plausible message start.
// Responses pair with requests in order, and only with one that began no
// later than they did: the response to a request lost whole is dropped,
// not paired with the next request.
//
// # Memory
//
// Memory is bounded per connection whatever the input: a start line and
// header block by Config.MaxHeader and MaxFields, a body by Config.MaxBody
// (the rest of it is framed, not kept: Truncated says so), the pieces of a
// response by Config.MaxPieces, the requests awaiting responses by
// Config.MaxPending, the HTTP/2 streams in progress by Config.MaxStreams,
// an HTTP/2 frame other than DATA by 16 KiB (a larger one is skipped).
// Retained reports what a Conn holds. In steady state an HTTP/1.x Feed
// allocates only what it hands over (the exchange, one string and one
// field list per header block, the bodies and the pieces), never per read
// or per chunk; over HTTP/2 the Framer also allocates each frame but DATA
// it parses (some 64 bytes), and the HPACK decoder each literal string.
//
// # Secrets
//
// The package keeps every header field it is not told to drop, and logs
// nothing. A caller that passes exchanges on must name the credentials
// (Authorization, Proxy-Authorization, Cookie, X-Api-Key, Api-Key,
// X-Goog-Api-Key, …) in Config.DropHeaders: they are left out before any
// string is made of them. Bodies are passed on as they are.
//
// The package is pure: no I/O, no goroutines, no clock.
package httpframe
