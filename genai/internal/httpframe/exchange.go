package httpframe

import "strings"

// Dir is the direction of a chunk of data, from the traced process's view.
type Dir uint8

const (
	// Write is data the traced process wrote (sent).
	Write Dir = iota
	// Read is data the traced process read (received).
	Read
)

// String returns "write" or "read".
func (d Dir) String() string {
	if d == Write {
		return "write"
	}
	return "read"
}

// Role says which end of the connection the traced process is.
type Role uint8

const (
	// Client: the traced process sent the requests (wrote them) and
	// received the responses.
	Client Role = iota + 1
	// Server: the traced process received the requests (read them) and
	// sent the responses.
	Server
)

// String returns "client", "server", or "unknown" for the zero Role.
func (r Role) String() string {
	switch r {
	case Client:
		return "client"
	case Server:
		return "server"
	}
	return "unknown"
}

// Header is one header field as it came: the name keeps its case, the
// value is trimmed of surrounding whitespace.
type Header struct {
	Name, Value string
}

// Headers is a header block in wire order. A name may repeat.
type Headers []Header

// Get returns the value of the first field named name, compared without
// regard to case, or "" when there is none.
func (h Headers) Get(name string) string {
	for _, f := range h {
		if strings.EqualFold(f.Name, name) {
			return f.Value
		}
	}
	return ""
}

// Piece is the part of a response body that one read delivered.
type Piece struct {
	// At is the timestamp of the read, as given to Feed.
	At int64
	// Data is the body bytes the read delivered, chunked framing
	// removed: a view into Exchange.ResponseBody.
	Data []byte
}

// Exchange is one HTTP/1.x request and its response, or one HTTP/2
// stream. It belongs to the receiver of Config.OnExchange.
//
// Timestamps are those given to Feed: each is the timestamp of the read
// or write that carried the byte in question.
type Exchange struct {
	// Role is the traced process's end of the connection.
	Role Role

	// The request line: Method "POST", Target "/v1/chat/completions"
	// (the request-target as sent), Proto "HTTP/1.1".
	Method, Target, Proto string
	// RequestHeader is the request's header block, less the fields that
	// Config.DropHeaders names.
	RequestHeader Headers
	// RequestBody is the request body, chunked framing removed, cut at
	// Config.MaxBody bytes; RequestTruncated says it was cut.
	RequestBody      []byte
	RequestTruncated bool

	// Status is the final status code; informational (1xx) responses
	// before it are skipped, except 101 Switching Protocols, which is
	// final.
	Status int
	// ResponseHeader is the response's header block, less the fields
	// that Config.DropHeaders names.
	ResponseHeader Headers
	// ResponseBody is the response body, chunked framing removed, cut at
	// Config.MaxBody bytes; ResponseTruncated says it was cut. Content
	// codings (gzip) are left as they are.
	ResponseBody      []byte
	ResponseTruncated bool
	// Pieces splits ResponseBody by the read that delivered each part,
	// in order: one piece per read that carried body bytes. When a body
	// arrives over more than Config.MaxPieces reads, the last piece also
	// takes in the later reads' bytes.
	Pieces []Piece

	// First and last byte of the request (start line to end of body), and
	// of the final response. For a response delimited by the close of
	// the connection, ResponseEnd is the last read before the close.
	RequestStart, RequestEnd   int64
	ResponseStart, ResponseEnd int64

	// ResetBy is set for an HTTP/2 exchange that an end reset
	// (RST_STREAM) before it was complete: which end (Client, Server),
	// with the error code it gave (ResetCode: 0x8 CANCEL, 0x2
	// INTERNAL_ERROR, …). What came before the reset is in the exchange;
	// a part that did not end (RequestEnd, ResponseEnd) ends at the
	// reset.
	ResetBy   Role
	ResetCode uint32
}
