package genai

import (
	"encoding/json"
	"unicode/utf8"
)

// Writing the content attributes: JSON no longer than the cap, valid
// however it is cut.

// json writes the side as its attribute's JSON, at most max bytes: an
// array of messages, or when flat, of the messages' parts. It returns
// "" when there is nothing, and whether something was left out.
func (s *contentSide) json(max int) (string, bool) {
	w := capWriter{max: max}
	if !w.open([]byte("["), 1, 0) {
		return "", s.cut || !s.empty()
	}
	n := 0
	for _, m := range s.msgs {
		if s.flat {
			for _, p := range m.parts {
				w.part(&n, &p)
			}
		} else {
			w.message(&n, &m)
		}
	}
	w.close("]")
	if n == 0 {
		return "", s.cut || w.full
	}
	return string(w.buf), s.cut || w.full
}

// empty says whether the side has nothing to write: no message, or
// when flat, no part.
func (s *contentSide) empty() bool {
	for _, m := range s.msgs {
		if !s.flat || len(m.parts) > 0 {
			return false
		}
	}
	return true
}

// capWriter writes JSON of at most max bytes: values while they fit,
// then as much of the string that does not as fits, cut at a rune, then
// the closing brackets. full: something was left out.
type capWriter struct {
	buf     []byte
	max     int
	owed    int // bytes of closing brackets still to write
	full    bool
	scratch []byte
}

func (w *capWriter) fits(n int) bool { return len(w.buf)+n+w.owed <= w.max }

// open writes head, which a closing of n bytes ends, if head, the
// closing and reserve more bytes fit; else nothing more is written.
func (w *capWriter) open(head []byte, n, reserve int) bool {
	if w.full || !w.fits(len(head)+n+reserve) {
		w.full = true
		return false
	}
	w.buf = append(w.buf, head...)
	w.owed += n
	return true
}

func (w *capWriter) close(s string) {
	w.buf = append(w.buf, s...)
	w.owed -= len(s)
}

// head starts an element of an array: a comma after the n-th.
func (w *capWriter) head(n int) []byte {
	w.scratch = w.scratch[:0]
	if n > 0 {
		w.scratch = append(w.scratch, ',')
	}
	return w.scratch
}

// message writes {"role":…,"finish_reason":…,"parts":[…]}, the n-th
// element of its array.
func (w *capWriter) message(n *int, m *contentMsg) {
	h := append(w.head(*n), `{"role":`...)
	h = appendJSONString(h, []byte(m.role))
	if m.finish != "" {
		h = append(h, `,"finish_reason":`...)
		h = appendJSONString(h, []byte(m.finish))
	}
	h = append(h, `,"parts":[`...)
	w.scratch = h
	if !w.open(h, len("]}"), 0) {
		return
	}
	*n++
	k := 0
	for i := range m.parts {
		w.part(&k, &m.parts[i])
	}
	w.close("]}")
}

// part writes one part, the n-th element of its array.
func (w *capWriter) part(n *int, p *contentPart) {
	h := append(w.head(*n), `{"type":`...)
	h = appendJSONString(h, []byte(p.kind))
	tool := p.kind == partToolCall || p.kind == partToolResponse
	if tool && p.id != "" {
		h = append(h, `,"id":`...)
		h = appendJSONString(h, []byte(p.id))
	}
	switch p.kind {
	case partToolCall:
		h = append(h, `,"name":`...)
		h = appendJSONString(h, []byte(p.name))
		h = append(h, `,"arguments":`...)
	case partToolResponse:
		h = append(h, `,"response":`...)
	default:
		h = append(h, `,"content":`...)
	}
	w.scratch = h
	least := len(`""`)
	if tool && len(p.body) == 0 {
		least = len("null")
	}
	if !w.open(h, len("}"), least) {
		return
	}
	*n++
	switch {
	case !tool:
		w.str(p.body)
	case len(p.body) == 0:
		w.buf = append(w.buf, "null"...)
	default:
		w.value(p.body)
	}
	w.close("}")
}

// value writes JSON text as it is when it is valid and fits, else as a
// string.
func (w *capWriter) value(b []byte) {
	if utf8.Valid(b) && json.Valid(b) && w.fits(len(b)) {
		w.buf = append(w.buf, b...)
		return
	}
	w.str(b)
}

// str writes b as a JSON string, cut at a rune to what fits (the quotes
// always do: open reserved them).
func (w *capWriter) str(b []byte) {
	w.buf = append(w.buf, '"')
	w.owed++
	var esc [12]byte
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		e := appendJSONRune(esc[:0], r)
		if !w.fits(len(e)) {
			w.full = true
			break
		}
		w.buf = append(w.buf, e...)
		b = b[size:]
	}
	w.close(`"`)
}

// appendJSONString appends b as a JSON string; invalid UTF-8 becomes
// U+FFFD.
func appendJSONString(dst, b []byte) []byte {
	dst = append(dst, '"')
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		dst = appendJSONRune(dst, r)
		b = b[size:]
	}
	return append(dst, '"')
}

// appendJSONRune appends r as it stands in a JSON string.
func appendJSONRune(dst []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	switch {
	case r == '"' || r == '\\':
		return append(dst, '\\', byte(r))
	case r == '\n':
		return append(dst, '\\', 'n')
	case r == '\r':
		return append(dst, '\\', 'r')
	case r == '\t':
		return append(dst, '\\', 't')
	case r < 0x20:
		return append(dst, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xF])
	}
	return utf8.AppendRune(dst, r)
}

// appendCompact appends the JSON text raw without the white space
// between its tokens, at most limit bytes, cut before a rune that does
// not fit; cut says that some was left out.
func appendCompact(dst, raw []byte, limit int) (out []byte, cut bool) {
	start := len(dst)
	inStr, esc := false, false
	for _, c := range raw {
		switch {
		case inStr:
			esc, inStr = !esc && c == '\\', esc || c != '"'
		case c == '"':
			inStr = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		}
		if len(dst)-start == limit {
			return trimPartialRune(dst, start), true
		}
		dst = append(dst, c)
	}
	return dst, false
}

// trimPartialRune drops the incomplete UTF-8 sequence that b ends with,
// if any, keeping b[:start].
func trimPartialRune(b []byte, start int) []byte {
	for k := len(b) - 1; k >= start && k >= len(b)-utf8.UTFMax; k-- {
		if utf8.RuneStart(b[k]) {
			if !utf8.FullRune(b[k:]) {
				return b[:k]
			}
			break
		}
	}
	return b
}
