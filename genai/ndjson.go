package genai

import "bytes"

// maxNDJSONLine bounds the bytes of one NDJSON line that are read. The
// last line of an Ollama /api/generate response carries the token
// "context" array before the counts, so the bound is generous.
const maxNDJSONLine = 4 << 20

// ndjsonLines splits a newline-delimited stream into lines as chunks
// arrive, with chunk boundaries at any byte. A line is handed out as a
// view of the chunk when it lies within one, else from a buffer. Memory
// is bounded: of a line longer than max, only the first max bytes are
// kept (and the line is reported as cut); the rest is discarded as it
// arrives. What a line yields does not depend on where chunks end.
type ndjsonLines struct {
	max  int
	in   []byte
	line []byte // the start of a line cut by the end of a chunk
	// partial: line holds the start of the current line; long: the
	// current line has passed max bytes, its excess is being dropped.
	partial, long bool
	cut           int // lines longer than max
}

func (s *ndjsonLines) reset() {
	line := s.line[:0]
	if cap(line) > 64<<10 {
		line = nil
	}
	*s = ndjsonLines{max: s.max, line: line}
}

func (s *ndjsonLines) limit() int {
	if s.max <= 0 {
		return maxNDJSONLine
	}
	return s.max
}

// feed hands the splitter the next chunk; next reads it.
func (s *ndjsonLines) feed(chunk []byte) { s.in = chunk }

// next returns the next complete line without its LF (a CR before it
// is kept: it is JSON white space), and whether the line was cut to the
// limit. The line is valid until the next call. ok is false when the
// fed chunk is used up.
func (s *ndjsonLines) next() (line []byte, cut, ok bool) {
	max := s.limit()
	for len(s.in) > 0 {
		i := bytes.IndexByte(s.in, '\n')
		if i < 0 {
			s.keep(s.in, max)
			s.in = nil
			return nil, false, false
		}
		l := s.in[:i]
		s.in = s.in[i+1:]
		if !s.partial && !s.long {
			if len(l) > max {
				s.cut++
				return l[:max], true, true
			}
			return l, false, true
		}
		s.keep(l, max)
		line, cut = s.line, s.long
		if cut {
			s.cut++
		}
		s.line, s.partial, s.long = s.line[:0], false, false
		return line, cut, true
	}
	return nil, false, false
}

// keep appends b to the buffered line, up to max bytes.
func (s *ndjsonLines) keep(b []byte, max int) {
	if s.long {
		return
	}
	if room := max - len(s.line); len(b) > room {
		b = b[:room]
		s.long = true
	}
	s.line = appendCapped(s.line, b, max)
	s.partial = true
}

// flush returns the last line when the stream ended without its LF,
// and whether it was cut to the limit; ok is false when none is
// pending. The line is valid until the next call.
func (s *ndjsonLines) flush() (line []byte, cut, ok bool) {
	if !s.partial {
		return nil, false, false
	}
	line, cut = s.line, s.long
	if cut {
		s.cut++
	}
	s.line, s.partial, s.long = s.line[:0], false, false
	return line, cut, true
}
