package jsonscan

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Int parses a Number as an int64. Fractions and exponents are accepted
// when the value is integral ("12.0", "1e3"); anything else, or a value
// out of range, is not ok.
func Int(raw []byte) (int64, bool) {
	neg := false
	d := raw
	if len(d) > 0 && d[0] == '-' {
		neg, d = true, d[1:]
	}
	if len(d) == 0 {
		return 0, false
	}
	var n uint64
	for i, c := range d {
		if c < '0' || c > '9' {
			if c == '.' || c == 'e' || c == 'E' {
				return intFromFloat(raw)
			}
			return 0, false
		}
		if i >= 19 { // 19 digits always fit in uint64; beyond, check
			if n > (math.MaxUint64-9)/10 {
				return 0, false
			}
		}
		n = n*10 + uint64(c-'0')
	}
	if neg {
		if n > 1<<63 {
			return 0, false
		}
		return -int64(n), true
	}
	if n > math.MaxInt64 {
		return 0, false
	}
	return int64(n), true
}

func intFromFloat(raw []byte) (int64, bool) {
	f, ok := Float(raw)
	if !ok || f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, false
	}
	return int64(f), true
}

// maxFloatLen bounds the numbers Float parses; longer literals are not
// ok (no real parameter needs 64 digits).
const maxFloatLen = 64

// Float parses a Number as a float64. Literals longer than 64 bytes, or
// out of range, are not ok.
func Float(raw []byte) (float64, bool) {
	if len(raw) == 0 || len(raw) > maxFloatLen {
		return 0, false
	}
	var buf [maxFloatLen]byte
	n := copy(buf[:], raw)
	f, err := strconv.ParseFloat(string(buf[:n]), 64)
	if err != nil {
		return 0, false
	}
	return f, true
}

// AppendString appends the decoded content of a raw String to dst. It
// is not ok on a malformed escape; invalid UTF-8 and lone surrogates
// become U+FFFD, as encoding/json does.
func AppendString(dst, raw []byte) ([]byte, bool) {
	dst, ok, _ := AppendStringMax(dst, raw, math.MaxInt)
	return dst, ok
}

// AppendStringMax is AppendString that appends at most max bytes of
// the content, cut before a rune that does not fit; cut says that some
// was left out. A malformed escape stops it (not ok), as AppendString.
func AppendStringMax(dst, raw []byte, max int) (out []byte, ok, cut bool) {
	room := max
	for {
		i := bytes.IndexByte(raw, '\\')
		run := raw
		if i >= 0 {
			run = raw[:i]
		}
		n := len(dst)
		if dst, cut = appendValidUTF8(dst, run, room); cut {
			return dst, true, true
		}
		room -= len(dst) - n
		if i < 0 {
			return dst, true, false
		}
		r, size, ok := escape(raw[i:])
		if !ok {
			return dst, false, false
		}
		w := utf8.RuneLen(r)
		if w > room {
			return dst, true, true
		}
		dst = utf8.AppendRune(dst, r)
		room -= w
		raw = raw[i+size:]
	}
}

// escape decodes the escape raw starts with: the rune, and how many
// bytes it takes. A surrogate pair is one rune; a lone surrogate is
// U+FFFD.
func escape(raw []byte) (rune, int, bool) {
	if len(raw) < 2 {
		return 0, 0, false
	}
	switch c := raw[1]; c {
	case '"', '\\', '/':
		return rune(c), 2, true
	case 'b':
		return '\b', 2, true
	case 'f':
		return '\f', 2, true
	case 'n':
		return '\n', 2, true
	case 'r':
		return '\r', 2, true
	case 't':
		return '\t', 2, true
	case 'u':
		r, ok := hex4(raw[2:])
		if !ok {
			return 0, 0, false
		}
		if !utf16.IsSurrogate(r) {
			return r, 6, true
		}
		if len(raw) >= 12 && raw[6] == '\\' && raw[7] == 'u' {
			if r2, ok := hex4(raw[8:]); ok {
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					return dec, 12, true
				}
			}
		}
		return utf8.RuneError, 6, true
	}
	return 0, 0, false
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

var replacement = []byte(string(utf8.RuneError))

// appendValidUTF8 appends b with invalid UTF-8 as U+FFFD, at most room
// bytes, cut before a rune that does not fit; cut: some was left out.
func appendValidUTF8(dst, b []byte, room int) ([]byte, bool) {
	for len(b) > 0 {
		// Fast path: a run of ASCII.
		i := 0
		for i < len(b) && b[i] < utf8.RuneSelf {
			i++
		}
		if i > room {
			return append(dst, b[:room]...), true
		}
		dst = append(dst, b[:i]...)
		room -= i
		b = b[i:]
		if len(b) == 0 {
			break
		}
		r, size := utf8.DecodeRune(b)
		enc := b[:size]
		if r == utf8.RuneError && size == 1 {
			enc = replacement
		}
		if len(enc) > room {
			return dst, true
		}
		dst = append(dst, enc...)
		room -= len(enc)
		b = b[size:]
	}
	return dst, false
}
