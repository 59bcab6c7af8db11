package genai

import "bytes"

// SSEEvent is one dispatched text/event-stream event. Its slices are
// views into the parser, valid until the next call on it.
type SSEEvent struct {
	// Type is the event field's value; empty means "message".
	Type []byte
	// Data is the data lines' values joined with "\n".
	Data []byte
	// ID is the last event ID seen so far in the stream.
	ID []byte
}

// DefaultSSELimit is the default cap on one line and on one event's data.
const DefaultSSELimit = 1 << 20

// SSEParser parses a text/event-stream incrementally, following the
// WHATWG rules: data, event and id fields, retry and unknown fields
// ignored, comments, CR, LF and CRLF line endings (also a CRLF split
// across two chunks), a leading byte order mark, and events dispatched
// on a blank line. Chunk boundaries may fall on any byte. Bytes are
// handed out as they came, without UTF-8 decoding.
//
// Memory is bounded: a line longer than the line limit, or an event
// whose data grows past the event limit, is skipped and counted, and
// the event it belongs to is not dispatched. In steady state it does
// not allocate: buffers are reused, and an event's views stay valid
// until the next call.
//
// The zero value is ready to use, with DefaultSSELimit for both limits.
//
//	var p genai.SSEParser
//	for _, chunk := range chunks {
//		p.Feed(chunk)
//		for p.Next() {
//			ev := p.Event()
//			…
//		}
//	}
type SSEParser struct {
	maxLine, maxEvent int

	in []byte // unread input from the last Feed
	lf int    // index in in of the next LF; len(in) if none; < 0 unknown

	started bool // past the (optional) byte order mark
	bom     int  // bytes of a byte order mark matched so far
	skipLF  bool // the last line ended in CR: a following LF is part of it

	line     []byte // a line cut by the end of a chunk
	partial  bool   // line holds the start of the current line
	skipLine bool   // discarding the rest of an oversize line

	data     []byte // the event's data, each value followed by LF
	view     []byte // the event's data when it is one value within the input
	hasView  bool
	typ      []byte
	id       []byte
	poisoned bool // part of the event was dropped: do not dispatch it

	ev         SSEEvent
	dispatched bool

	skippedLines, skippedEvents int
}

// SetLimits sets the longest line and the largest event data the parser
// holds; n <= 0 means DefaultSSELimit. Set them before the first Feed.
func (p *SSEParser) SetLimits(maxLine, maxEvent int) {
	p.maxLine, p.maxEvent = maxLine, maxEvent
}

func (p *SSEParser) limits() (int, int) {
	l, e := p.maxLine, p.maxEvent
	if l <= 0 {
		l = DefaultSSELimit
	}
	if e <= 0 {
		e = DefaultSSELimit
	}
	return l, e
}

// Reset forgets the stream (and the last event ID), keeping the limits
// and, when they are small, the buffers.
func (p *SSEParser) Reset() {
	const keep = 64 << 10
	shrink := func(b []byte) []byte {
		if cap(b) > keep {
			return nil
		}
		return b[:0]
	}
	*p = SSEParser{
		maxLine: p.maxLine, maxEvent: p.maxEvent,
		line: shrink(p.line), data: shrink(p.data), typ: shrink(p.typ), id: shrink(p.id),
	}
}

// Skipped returns how many lines and events were dropped for exceeding
// the limits since the last Reset.
func (p *SSEParser) Skipped() (lines, events int) {
	return p.skippedLines, p.skippedEvents
}

// Feed hands the parser the next chunk of the stream. The parser reads
// it during the following Next calls and keeps no reference to it once
// Next has returned false. Feed before Next has returned false drops the
// unread rest of the previous chunk.
func (p *SSEParser) Feed(chunk []byte) {
	if p.hasView && !p.dispatched {
		p.materialize() // the previous input was not read to its end
	}
	p.in, p.lf = chunk, -1
}

// materialize copies the event's data out of the input it points into.
func (p *SSEParser) materialize() {
	_, maxEvent := p.limits()
	p.data = append(appendCapped(p.data[:0], p.view, maxEvent), '\n')
	p.view, p.hasView = nil, false
}

// advance consumes n bytes of input.
func (p *SSEParser) advance(n int) {
	p.in = p.in[n:]
	p.lf -= n
}

// Event returns the event the last successful Next dispatched.
func (p *SSEParser) Event() SSEEvent { return p.ev }

// Next reads the fed input up to the next dispatched event and reports
// whether there was one; false means the input is used up.
func (p *SSEParser) Next() bool {
	if p.dispatched {
		p.endEvent()
	}
	maxLine, _ := p.limits()
	for {
		if !p.started {
			p.readBOM()
		}
		if len(p.in) == 0 {
			// The input is about to go back to its owner: copy what
			// the event still points at.
			if p.hasView {
				p.materialize()
			}
			return false
		}
		if p.skipLF {
			p.skipLF = false
			if p.in[0] == '\n' {
				p.advance(1)
				continue
			}
		}
		i := p.eol()
		if i < 0 {
			// The line goes on in the next chunk.
			if !p.skipLine {
				if len(p.line)+len(p.in) > maxLine {
					p.oversize()
				} else {
					p.line = appendCapped(p.line, p.in, maxLine)
					p.partial = true
				}
			}
			p.advance(len(p.in))
			continue
		}
		line, inInput := p.in[:i], true
		p.skipLF = p.in[i] == '\r'
		p.advance(i + 1)
		if p.skipLine {
			p.skipLine = false
			continue
		}
		if p.partial {
			if len(p.line)+len(line) > maxLine {
				p.line, p.partial = p.line[:0], false
				p.skippedLines++
				p.poisoned = true
				continue
			}
			p.line = appendCapped(p.line, line, maxLine)
			line, inInput = p.line, false
			p.line, p.partial = p.line[:0], false
		} else if len(line) > maxLine {
			p.skippedLines++
			p.poisoned = true
			continue
		}
		if p.processLine(line, inInput) {
			return true
		}
	}
}

// readBOM skips a leading U+FEFF, which may be split across chunks.
func (p *SSEParser) readBOM() {
	const bom = "\xEF\xBB\xBF"
	for len(p.in) > 0 && p.bom < len(bom) {
		if p.in[0] != bom[p.bom] {
			// Not a BOM after all: the bytes matched so far start the
			// first line.
			p.line = append(p.line, bom[:p.bom]...)
			p.partial = p.bom > 0
			p.started = true
			return
		}
		p.advance(1)
		p.bom++
	}
	if p.bom == len(bom) {
		p.started = true
	}
}

// appendCapped appends src to dst, growing dst by doubling but never
// past limit (plus room for a separator) when the result fits in it;
// append's own growth would overshoot, and by small steps.
func appendCapped(dst, src []byte, limit int) []byte {
	need := len(dst) + len(src)
	if need > cap(dst) {
		c := max(2*cap(dst), need, 512)
		if c > limit+1 && need <= limit+1 {
			c = limit + 1
		}
		dst = append(make([]byte, 0, c), dst...)
	}
	return append(dst, src...)
}

// oversize starts discarding the current line.
func (p *SSEParser) oversize() {
	p.line, p.partial = p.line[:0], false
	p.skipLine = true
	p.skippedLines++
	p.poisoned = true
}

// eol returns the index of the first CR or LF in the input, or -1. The
// next LF's position is kept, so that a run of CRs (or of short CR
// lines) does not make every call scan the rest of the input for an LF.
func (p *SSEParser) eol() int {
	if p.lf < 0 {
		p.lf = bytes.IndexByte(p.in, '\n')
		if p.lf < 0 {
			p.lf = len(p.in)
		}
	}
	if j := bytes.IndexByte(p.in[:p.lf], '\r'); j >= 0 {
		return j
	}
	if p.lf < len(p.in) {
		return p.lf
	}
	return -1
}

// processLine interprets one line; inInput says it is a view of the fed
// input (and may be kept as one until the input runs out). It reports
// whether an event was dispatched.
func (p *SSEParser) processLine(line []byte, inInput bool) bool {
	if len(line) == 0 {
		return p.dispatch()
	}
	if line[0] == ':' {
		return false // comment
	}
	field, value := line, line[:0]
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		field, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(field) {
	case "data":
		if p.poisoned {
			return false
		}
		_, maxEvent := p.limits()
		size := len(p.data) + len(value) + 1
		if p.hasView {
			size += len(p.view) + 1
		}
		if size > maxEvent {
			p.poisoned = true
			p.data, p.view, p.hasView = p.data[:0], nil, false
			return false
		}
		if inInput && !p.hasView && len(p.data) == 0 {
			p.view, p.hasView = value, true
			return false
		}
		if p.hasView {
			p.materialize()
		}
		p.data = append(appendCapped(p.data, value, maxEvent), '\n')
	case "event":
		p.typ = append(p.typ[:0], value...)
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			p.id = append(p.id[:0], value...)
		}
	}
	return false
}

// dispatch ends the event at a blank line.
func (p *SSEParser) dispatch() bool {
	if p.poisoned {
		p.skippedEvents++
		p.endEvent()
		return false
	}
	switch {
	case p.hasView:
		p.ev.Data = p.view
	case len(p.data) > 0:
		p.ev.Data = p.data[:len(p.data)-1]
	default:
		p.endEvent() // no data: nothing to dispatch
		return false
	}
	p.ev.Type, p.ev.ID = p.typ, p.id
	p.dispatched = true
	return true
}

func (p *SSEParser) endEvent() {
	p.data, p.view, p.hasView = p.data[:0], nil, false
	p.typ = p.typ[:0]
	p.poisoned, p.dispatched = false, false
	p.ev = SSEEvent{}
}

// Flush ends the stream. The rules drop an event that the stream ends
// in before its blank line; Flush returns it instead (with a final line
// that had no line ending), so that a caller can read what arrived of a
// cut stream. ok is false when nothing was pending. The parser is then
// Reset, except for the Skipped counts.
func (p *SSEParser) Flush() (ev SSEEvent, ok bool) {
	p.in, p.lf = nil, -1
	if p.dispatched {
		p.endEvent()
	}
	if !p.started && p.bom > 0 {
		// The stream was only part of a byte order mark.
		p.line = append(p.line[:0], "\xEF\xBB\xBF"[:p.bom]...)
		p.partial = true
	}
	if p.partial && !p.skipLine {
		line := p.line
		p.line, p.partial = nil, false
		p.processLine(line, false)
	}
	if p.poisoned {
		p.skippedEvents++
	} else {
		switch {
		case p.hasView:
			ev.Data, ok = p.view, true
		case len(p.data) > 0:
			ev.Data, ok = p.data[:len(p.data)-1], true
		}
	}
	if ok {
		// Detach the result from the buffers Reset keeps.
		ev.Data = bytes.Clone(ev.Data)
		ev.Type = bytes.Clone(p.typ)
		ev.ID = bytes.Clone(p.id)
	}
	lines, events := p.skippedLines, p.skippedEvents
	p.Reset()
	p.skippedLines, p.skippedEvents = lines, events
	return ev, ok
}
