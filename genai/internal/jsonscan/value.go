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
	for {
		i := bytes.IndexByte(raw, '\\')
		if i < 0 {
			return appendValidUTF8(dst, raw), true
		}
		dst = appendValidUTF8(dst, raw[:i])
		raw = raw[i:]
		if len(raw) < 2 {
			return dst, false
		}
		switch c := raw[1]; c {
		case '"', '\\', '/':
			dst = append(dst, c)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(raw[2:])
			if !ok {
				return dst, false
			}
			raw = raw[6:]
			if utf16.IsSurrogate(r) {
				r2, ok2 := rune(-1), false
				if len(raw) >= 6 && raw[0] == '\\' && raw[1] == 'u' {
					r2, ok2 = hex4(raw[2:])
				}
				if ok2 {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						raw = raw[6:]
						dst = utf8.AppendRune(dst, dec)
						continue
					}
				}
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default:
			return dst, false
		}
		raw = raw[2:]
	}
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

func appendValidUTF8(dst, b []byte) []byte {
	for len(b) > 0 {
		// Fast path: a run of ASCII.
		i := 0
		for i < len(b) && b[i] < utf8.RuneSelf {
			i++
		}
		dst = append(dst, b[:i]...)
		b = b[i:]
		if len(b) == 0 {
			break
		}
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, "\uFFFD"...)
		} else {
			dst = append(dst, b[:size]...)
		}
		b = b[size:]
	}
	return dst
}
