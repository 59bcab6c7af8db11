package genai

import (
	"bytes"
	"math"
	"time"
)

// contentTimer records when a streamed response's content-carrying
// events arrived, for the timing fields of a Call.
type contentTimer struct {
	n           int
	first, last time.Time
}

// mark counts one event that carries output, arrived at at.
func (t *contentTimer) mark(at time.Time) {
	if t.n == 0 {
		t.first = at
	}
	t.last = at
	t.n++
}

// finish sets c's timing fields: Duration from Start to End (or to the
// last chunk when End is unset), TimeToFirstChunk from Start to the first
// marked event, TimePerChunk the mean gap between marked events after the
// first, OutputChunks their number. Unmarked fields keep their "absent"
// values (-1).
func (t *contentTimer) finish(x *Exchange, c *Call) {
	end := x.End
	if end.IsZero() && len(x.Chunks) > 0 {
		end = x.Chunks[len(x.Chunks)-1].At
	}
	if !x.Start.IsZero() && !end.IsZero() && !end.Before(x.Start) {
		c.Duration = end.Sub(x.Start)
	}
	c.OutputChunks = t.n
	if t.n > 0 && !x.Start.IsZero() {
		c.TimeToFirstChunk = max(0, t.first.Sub(x.Start))
	}
	if t.n > 1 {
		c.TimePerChunk = max(0, t.last.Sub(t.first)/time.Duration(t.n-1))
	}
}

// addCounts adds two token counts that are not negative, saturating
// instead of overflowing (the counts come from the traffic).
func addCounts(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// wholeBody returns the response body of chunks: the only chunk's bytes,
// or the chunks joined in buf, which it returns for reuse. The body is
// nil when it is empty or blank.
func wholeBody(buf []byte, chunks []Chunk) (body, reuse []byte) {
	switch len(chunks) {
	case 0:
		return nil, buf
	case 1:
		body = chunks[0].Data
	default:
		body = buf[:0]
		for _, ch := range chunks {
			body = append(body, ch.Data...)
		}
		buf = body
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, buf
	}
	return body, buf
}

// sseEvents feeds chunks to p and calls fn with each event and the
// arrival of the chunk that completed it, then with what arrived of an
// event the stream was cut in. It reports whether an event was skipped
// for its size.
func sseEvents(p *SSEParser, chunks []Chunk, fn func(ev SSEEvent, at time.Time)) (skipped bool) {
	for _, ch := range chunks {
		sseChunk(p, ch, fn)
	}
	var last time.Time
	if len(chunks) > 0 {
		last = chunks[len(chunks)-1].At
	}
	return sseEnd(p, len(chunks) > 0, last, fn)
}
