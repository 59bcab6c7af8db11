package genai

import (
	"bytes"
	"time"
)

// responseParser reads one exchange in three steps, so that a streamed
// response is read as it arrives and what is kept of it is bounded by the
// parser's state, not by the body's length: begin with the request and
// the response's head (x.Chunks may be empty), chunk with each piece of
// the response body in order, end once the exchange is over (x.Chunks
// then holds what was kept of the body, which a body that is not a
// stream is read from). Parse does the three at once; the capture calls
// chunk as the pieces are read.
type responseParser interface {
	begin(x *Exchange, c *Call)
	chunk(ch Chunk)
	end(x *Exchange, c *Call)
	// release returns the parser to its pool.
	release()
}

// parseWith reads the whole exchange x with p into c, and releases p.
func parseWith(p responseParser, x *Exchange, c *Call) {
	p.begin(x, c)
	for _, ch := range x.Chunks {
		p.chunk(ch)
	}
	p.end(x, c)
	p.release()
}

// bodyRead is how a parser reads a response body: as a stream, each chunk
// as it arrives, or whole at the end, from the chunks kept. The first body
// byte that is not JSON white space decides which, with the headers; the
// end does for a blank body.
type bodyRead struct {
	off     bool // not read: a content coding the parsers cannot undo
	decided bool
	stream  bool
	fed     bool      // a chunk was read as a stream
	last    time.Time // the arrival of the last one
}

// start reports whether ch decides how the body is read, with the byte
// that does.
func (b *bodyRead) start(ch Chunk) (first byte, deciding bool) {
	if b.off || b.decided {
		return 0, false
	}
	first, ok := firstByte(ch.Data)
	b.decided = ok
	return first, ok
}

// streamed reports whether ch is read as a stream, and notes its arrival.
func (b *bodyRead) streamed(ch Chunk) bool {
	if b.off || !b.decided || !b.stream {
		return false
	}
	b.fed, b.last = true, ch.At
	return true
}

// firstByte returns the first byte of data that is not JSON white space.
func firstByte(data []byte) (byte, bool) {
	i := bytes.IndexFunc(data, func(r rune) bool { return !isJSONSpace(r) })
	if i < 0 {
		return 0, false
	}
	return data[i], true
}

// firstBodyByte returns the first byte of chunks that is not JSON white
// space.
func firstBodyByte(chunks []Chunk) (byte, bool) {
	for _, ch := range chunks {
		if b, ok := firstByte(ch.Data); ok {
			return b, true
		}
	}
	return 0, false
}

// sseChunk feeds ch to p and calls fn with each event it completes.
func sseChunk(p *SSEParser, ch Chunk, fn func(ev SSEEvent, at time.Time)) {
	p.Feed(ch.Data)
	for p.Next() {
		fn(p.Event(), ch.At)
	}
}

// sseEnd calls fn with what arrived of an event the stream was cut in,
// at the arrival of the last chunk when one came (fed), and reports
// whether an event was skipped for its size.
func sseEnd(p *SSEParser, fed bool, last time.Time, fn func(ev SSEEvent, at time.Time)) (skipped bool) {
	if ev, ok := p.Flush(); ok && fed {
		fn(ev, last)
	}
	_, events := p.Skipped()
	return events > 0
}

// sseResponse is how the parsers of APIs that stream text/event-stream
// (OpenAI's, Anthropic's) read a response body: as an event stream when
// eventStreamStart says so, else whole at the end.
type sseResponse struct {
	head Header // the response's
	body bodyRead
	sse  SSEParser
}

// begin starts reading a response with header h.
func (r *sseResponse) begin(h Header) {
	r.head, r.body = h, bodyRead{off: encoded(h)}
	r.sse.Reset()
}

// chunk reads ch, calling fn with each event it completes; c.Stream is
// set once the body is known to be a stream.
func (r *sseResponse) chunk(ch Chunk, c *Call, fn func(ev SSEEvent, at time.Time)) {
	if first, ok := r.body.start(ch); ok {
		r.decide(c, eventStreamStart(r.head, first, true))
	}
	if r.body.streamed(ch) {
		sseChunk(&r.sse, ch, fn)
	}
}

func (r *sseResponse) decide(c *Call, stream bool) {
	r.body.decided, r.body.stream = true, stream
	if stream {
		c.Stream = true
	}
}

// end ends the body: for a stream, fn gets what arrived of an event it
// was cut in, and skipped says whether an event was dropped for its
// size. whole is set when the body is to be read whole (it is no
// stream, and no content coding hides it).
func (r *sseResponse) end(c *Call, fn func(ev SSEEvent, at time.Time)) (whole, skipped bool) {
	if r.body.off {
		return false, false
	}
	if !r.body.decided {
		r.decide(c, eventStreamStart(r.head, 0, false))
	}
	if !r.body.stream {
		return true, false
	}
	return false, sseEnd(&r.sse, r.body.fed, r.body.last, fn)
}
