package httpframe

import (
	"bytes"
	"strings"
)

// kind is what messages a direction carries.
type kind uint8

const (
	kindAny      kind = iota // the role is not known yet: a request or a response
	kindRequest              // requests
	kindResponse             // responses
)

// verdict is what the first bytes of a message say about it.
type verdict uint8

const (
	needMore  verdict = iota // too few bytes to tell
	plausible                // the start of an HTTP/1.x start line: its end decides
	notHTTP                  // cannot start an HTTP/1.x message
	isHTTP2                  // HTTP/2 (only asked of the first bytes of a connection)
)

const (
	// preface is the first line of the HTTP/2 connection preface
	// (RFC 9113, 3.4), sent by the client.
	preface = "PRI * HTTP/2.0\r\n"
	// statusPrefix starts every HTTP/1.x status line.
	statusPrefix = "HTTP/1."
	// statusTemplate is the fixed part of a status line; '#' is a digit.
	statusTemplate = "HTTP/1.# ###"
	// maxMethod is the longest method the quick check accepts; registered
	// methods have at most 17 characters.
	maxMethod = 20
	// frameHeader is the size of an HTTP/2 frame header.
	frameHeader = 9
	// quickCheck is enough bytes for classify to decide: a method of
	// maxMethod bytes, its space and a byte of target.
	quickCheck = maxMethod + 2
)

// MaxFields caps the fields of a header block: a block of more is too
// large, whatever its size in bytes (each field costs a Header).
const MaxFields = 256

// classify looks at p, the first bytes of a message on a direction that
// carries messages of kind k, and says whether they can start one. For
// notHTTP, at is the offset of the first byte that rules it out (or a
// lower bound, for kindAny).
func classify(p []byte, k kind) (v verdict, at int) {
	switch k {
	case kindRequest:
		return matchRequest(p)
	case kindResponse:
		return matchStatus(p)
	}
	if v := http2Start(p); v != notHTTP {
		return v, 0
	}
	rv, ri := matchRequest(p)
	sv, si := matchStatus(p)
	switch {
	case rv == plausible || sv == plausible:
		return plausible, 0
	case rv == needMore || sv == needMore:
		return needMore, 0
	}
	return notHTTP, max(ri, si)
}

// matchRequest checks p against the start of a request line: a method
// token, a space, and the first byte of a request-target.
func matchRequest(p []byte) (verdict, int) {
	for i, b := range p {
		if b == ' ' {
			switch {
			case i == 0:
				return notHTTP, 0
			case i+1 == len(p):
				return needMore, 0
			case !isTargetByte(p[i+1]):
				return notHTTP, i + 1
			}
			return plausible, 0
		}
		if i == maxMethod || !isTchar(b) {
			return notHTTP, i
		}
	}
	return needMore, 0
}

// matchStatus checks p against the start of a status line: "HTTP/1.",
// a digit, a space and a three-digit status code.
func matchStatus(p []byte) (verdict, int) {
	for i := range min(len(p), len(statusTemplate)) {
		if t := statusTemplate[i]; t != p[i] && !(t == '#' && isDigit(p[i])) {
			return notHTTP, i
		}
	}
	if len(p) < len(statusTemplate) {
		return needMore, 0
	}
	return plausible, 0
}

// http2Start says whether p starts an HTTP/2 connection: the client's
// preface, or a server's first SETTINGS frame (a server may send it
// before it reads the preface).
func http2Start(p []byte) verdict {
	if len(p) < len(preface) && string(p) == preface[:len(p)] {
		return needMore
	}
	if bytes.HasPrefix(p, []byte(preface)) {
		return isHTTP2
	}
	if len(p) == 0 || p[0] != 0 {
		return notHTTP // a SETTINGS frame is at most 16 KiB long: its first length byte is 0
	}
	if len(p) < frameHeader {
		return needMore
	}
	length := int(p[1])<<8 | int(p[2])
	const settings = 0x4
	if p[3] == settings && p[4] == 0 && length%6 == 0 && string(p[5:9]) == "\x00\x00\x00\x00" {
		return isHTTP2
	}
	return notHTTP
}

// indexStatus returns the offset in p of the first "HTTP/1.", or of a
// tail of p that could begin one, or -1.
func indexStatus(p []byte) int {
	if i := bytes.Index(p, []byte(statusPrefix)); i >= 0 {
		return i
	}
	for n := min(len(p), len(statusPrefix)-1); n > 0; n-- {
		if string(p[len(p)-n:]) == statusPrefix[:n] {
			return len(p) - n
		}
	}
	return -1
}

// lineKind says whether line, without its line ending, is a request line
// or a status line of HTTP/1.x; ok is false when it is neither.
func lineKind(line []byte) (k kind, ok bool) {
	if _, _, _, ok := parseRequestLine(line); ok {
		return kindRequest, true
	}
	if _, ok := parseStatusLine(line); ok {
		return kindResponse, true
	}
	return kindAny, false
}

// parseRequestLine splits method SP request-target SP HTTP-version
// (RFC 9112, 3), for HTTP/1.x.
func parseRequestLine(line []byte) (method, target, proto []byte, ok bool) {
	method, rest, ok := bytes.Cut(line, []byte(" "))
	if !ok || !isToken(method) {
		return nil, nil, nil, false
	}
	target, proto, ok = bytes.Cut(rest, []byte(" "))
	if !ok || len(target) == 0 || !isHTTP1(proto) {
		return nil, nil, nil, false
	}
	for _, b := range target {
		if !isTargetByte(b) {
			return nil, nil, nil, false
		}
	}
	return method, target, proto, true
}

// parseStatusLine reads HTTP-version SP status-code [SP reason-phrase]
// (RFC 9112, 4) for HTTP/1.x, and returns the status code (100 to 999).
// The reason phrase is optional, with or without its space.
func parseStatusLine(line []byte) (status int, ok bool) {
	n := len(statusTemplate)
	if len(line) < n || len(line) > n && line[n] != ' ' {
		return 0, false
	}
	if v, _ := matchStatus(line[:n]); v != plausible || line[n-3] == '0' {
		return 0, false
	}
	return int(line[n-3]-'0')*100 + int(line[n-2]-'0')*10 + int(line[n-1]-'0'), true
}

// isHTTP1 reports whether p is an HTTP/1.x version.
func isHTTP1(p []byte) bool {
	return len(p) == len(statusPrefix)+1 && string(p[:len(statusPrefix)]) == statusPrefix && isDigit(p[len(statusPrefix)])
}

// head is a parsed start line and header block.
type head struct {
	method, target, proto string // a request's
	status                int    // a response's
	fields                Headers

	length    int64 // Content-Length; -1 when absent
	badLength bool  // a Content-Length field is not a valid length, or they disagree
	encoded   bool  // Transfer-Encoding is present
	chunked   bool  // the last transfer coding is chunked
}

// problem is what made a message malformed.
type problem uint8

const (
	probNone problem = iota
	probStartLine
	probHeader
	probTooLarge
	probLength
	probEncoding
	probChunk
)

// parseHead parses a complete start line and header block (up to and
// with its empty line) of a message of kind k, whose start line is
// known to be valid. Fields named in drop are left out of the result,
// but still read for framing, or, when redact is set, kept with the value
// it returns for them. The strings of the result share one allocation.
func parseHead(block []byte, k kind, drop []string, redact func(name, value []byte) string) (head, problem) {
	h := head{length: -1}
	first, fields := cutLine(block)
	kept, size := 0, 0
	var redacted []string // the values of the dropped fields kept, in order
	for r, n := fields, 0; ; n++ {
		name, value, ok, p := nextField(&r)
		if p != probNone {
			return h, p
		}
		if !ok {
			break
		}
		if n == MaxFields {
			return h, probTooLarge
		}
		h.frame(name, value)
		switch {
		case !dropped(name, drop):
			kept++
			size += len(name) + len(value)
		case redact != nil:
			v := redact(name, value)
			redacted = append(redacted, v)
			kept++
			size += len(name) + len(v)
		}
	}
	var method, target, proto []byte
	if k == kindRequest {
		method, target, proto, _ = parseRequestLine(first)
	} else {
		h.status, _ = parseStatusLine(first)
	}
	var b strings.Builder
	b.Grow(len(method) + len(target) + len(proto) + size)
	b.Write(method)
	b.Write(target)
	b.Write(proto)
	for r, i := fields, 0; ; {
		name, value, ok, _ := nextField(&r)
		if !ok {
			break
		}
		switch {
		case !dropped(name, drop):
			b.Write(name)
			b.Write(value)
		case redact != nil:
			b.Write(name)
			b.WriteString(redacted[i])
			i++
		}
	}
	s := b.String()
	off := 0
	cut := func(n int) string {
		off += n
		return s[off-n : off]
	}
	h.method, h.target, h.proto = cut(len(method)), cut(len(target)), cut(len(proto))
	if kept > 0 {
		h.fields = make(Headers, 0, kept)
	}
	for r, i := fields, 0; ; {
		name, value, ok, _ := nextField(&r)
		if !ok {
			break
		}
		switch {
		case !dropped(name, drop):
			h.fields = append(h.fields, Header{Name: cut(len(name)), Value: cut(len(value))})
		case redact != nil:
			h.fields = append(h.fields, Header{Name: cut(len(name)), Value: cut(len(redacted[i]))})
			i++
		}
	}
	return h, probNone
}

// nextField reads the field line at the start of *rest, the part of a
// header block after its start line, and moves *rest past it. ok is
// false at the empty line that ends the block. A line folded onto the
// one before (obs-fold, RFC 9112, 5.2) is malformed, and so is
// whitespace between a field name and its colon.
func nextField(rest *[]byte) (name, value []byte, ok bool, p problem) {
	line, r := cutLine(*rest)
	*rest = r
	if len(line) == 0 {
		return nil, nil, false, probNone
	}
	name, value, found := bytes.Cut(line, []byte(":"))
	if !found || !isToken(name) {
		return nil, nil, false, probHeader
	}
	return name, trimOWS(value), true, probNone
}

// frame reads the fields that delimit the body.
func (h *head) frame(name, value []byte) {
	switch {
	case equalFold(name, "Content-Length"):
		h.addLength(value)
	case equalFold(name, "Transfer-Encoding"):
		h.addCodings(value)
	}
}

// addLength reads a Content-Length value. A list of equal values
// ("42, 42") is one length (RFC 9110, 8.6); so are repeated fields with
// the same value. Anything else than decimal digits, a number of more
// than 18 digits, or a value that disagrees with another makes the
// length bad.
func (h *head) addLength(value []byte) {
	seen := false
	for elem := range bytes.SplitSeq(value, []byte(",")) {
		elem = trimOWS(elem)
		if len(elem) == 0 {
			continue
		}
		n, ok := parseDecimal(elem)
		if !ok || h.length >= 0 && n != h.length {
			h.badLength = true
			return
		}
		h.length, seen = n, true
	}
	if !seen {
		h.badLength = true
	}
}

// addCodings reads a Transfer-Encoding value: the last coding named in
// the last field decides whether the body is chunked.
func (h *head) addCodings(value []byte) {
	h.encoded = true
	for elem := range bytes.SplitSeq(value, []byte(",")) {
		coding, _, _ := bytes.Cut(elem, []byte(";"))
		if coding = trimOWS(coding); len(coding) > 0 {
			h.chunked = equalFold(coding, "chunked")
		}
	}
}

// maxDigits is the most digits of a Content-Length: 10^18 - 1 fits in an
// int64, and no body is that long.
const maxDigits = 18

// parseDecimal parses 1 to maxDigits decimal digits.
func parseDecimal(p []byte) (int64, bool) {
	if len(p) == 0 || len(p) > maxDigits {
		return 0, false
	}
	var n int64
	for _, b := range p {
		if !isDigit(b) {
			return 0, false
		}
		n = n*10 + int64(b-'0')
	}
	return n, true
}

// cutLine splits b after its first LF, returning the line without its
// ending (LF or CRLF).
func cutLine(b []byte) (line, rest []byte) {
	line, rest, _ = bytes.Cut(b, []byte("\n"))
	return trimCR(line), rest
}

// isBlank reports whether line, with its LF, is empty.
func isBlank(line []byte) bool {
	return len(line) == 1 || len(line) == 2 && line[0] == '\r'
}

func trimCR(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		return line[:n-1]
	}
	return line
}

// trimOWS trims optional whitespace (SP and HTAB).
func trimOWS(p []byte) []byte {
	for len(p) > 0 && (p[0] == ' ' || p[0] == '\t') {
		p = p[1:]
	}
	for len(p) > 0 && (p[len(p)-1] == ' ' || p[len(p)-1] == '\t') {
		p = p[:len(p)-1]
	}
	return p
}

// dropped reports whether name is one of drop, in any case.
func dropped(name []byte, drop []string) bool {
	for _, d := range drop {
		if equalFold(name, d) {
			return true
		}
	}
	return false
}

// equalFold compares an ASCII name without regard to case.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		if lower(b[i]) != lower(s[i]) {
			return false
		}
	}
	return true
}

func lower(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

// tchars are the bytes that may appear in a token (RFC 9110, 5.6.2): a
// table, as every byte of every header name is looked up.
var tchars = func() (t [256]bool) {
	for b := range 256 {
		t[b] = 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || isDigit(byte(b)) ||
			strings.IndexByte("!#$%&'*+-.^_`|~", byte(b)) >= 0
	}
	return t
}()

// isTchar reports whether b may appear in a token.
func isTchar(b byte) bool { return tchars[b] }

func isToken(p []byte) bool {
	if len(p) == 0 {
		return false
	}
	for _, b := range p {
		if !isTchar(b) {
			return false
		}
	}
	return true
}

// isTargetByte reports whether b may appear in a request-target: any
// visible byte, obs-text included.
func isTargetByte(b byte) bool { return b > ' ' && b != 0x7f }
