// Package jsonscan reads chosen scalar fields out of JSON that may be cut
// off at any byte, without allocating.
//
// A Matcher is compiled once from paths such as "model",
// "usage.prompt_tokens" or "choices[*].delta.content". Scan walks one
// JSON text and reports every scalar value (string, number, true, false,
// null) whose path is one of them, in document order, as a view of the
// input. It never fails as a whole: when the input ends early, everything
// that stood before the cut has been reported and Scan says Truncated;
// on a syntax error it stops there and says Invalid.
//
// Values are reported only once they are complete: a string after its
// closing quote, a number after the byte that ends it, so a value seen
// in a prefix of a text is the same value in the whole text. Only the
// subtrees a path leads into are walked key by key; everything else is
// skipped with a depth counter, so the scanner's memory does not grow
// with nesting, and the recursion depth is bounded by the longest path
// (at most MaxPathDepth). Keys are compared as they stand in the input:
// a key written with escapes does not match.
//
// A ContainerVisitor is also told of the objects and arrays that stand
// at a path, once they are complete: after the values inside them, with
// their whole text. That marks where one element of an array ends (a
// message of a conversation) and hands out a subtree as JSON (a tool
// call's arguments).
package jsonscan

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"strings"
)

// Kind is the kind of a reported scalar.
type Kind uint8

// Scalar kinds.
const (
	String Kind = iota + 1 // raw bytes between the quotes, escapes not decoded
	Number                 // the literal, e.g. -1.5e3
	True
	False
	Null
)

func (k Kind) String() string {
	switch k {
	case String:
		return "string"
	case Number:
		return "number"
	case True:
		return "true"
	case False:
		return "false"
	case Null:
		return "null"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Status is how a scan ended.
type Status uint8

// Scan outcomes.
const (
	// Complete: one whole JSON value, then only white space.
	Complete Status = iota
	// Truncated: the input ended inside the value (or was empty). A
	// number or literal at the very end counts as cut: more may follow.
	Truncated
	// Invalid: a syntax error, or data after the value. Values before
	// the error were reported.
	Invalid
)

func (s Status) String() string {
	switch s {
	case Complete:
		return "complete"
	case Truncated:
		return "truncated"
	case Invalid:
		return "invalid"
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// Visitor receives matched values. id is the index of the matching path
// in the list given to Compile; raw is a view of the input, valid as long
// as the input is.
type Visitor interface {
	Value(id int, kind Kind, raw []byte)
}

// ContainerVisitor is a Visitor that is told of containers too. When a
// path ends at an object or an array, Container is called once the
// container is complete, after the values inside it that other paths
// lead to, with raw the container's whole text, brackets included. A
// container that the input ends in is not reported. A plain Visitor is
// told of scalars only.
type ContainerVisitor interface {
	Visitor
	Container(id int, raw []byte)
}

// MaxPathDepth is the most elements (keys and [*]) a path may have.
const MaxPathDepth = 32

// Matcher is a compiled set of paths: a trie of keys and array
// wildcards. It is immutable and safe for concurrent use.
type Matcher struct {
	nodes []node
}

type node struct {
	id       int32 // path id ending here, -1 if none
	elem     int32 // child for array elements, -1 if none
	keys     []string
	children []int32 // parallel to keys
}

// Compile builds a Matcher. A path is a dot-separated list of object
// keys, each optionally followed by [*] (any element of an array);
// "[*]" alone at the start matches elements of a top-level array. It
// panics on a malformed or duplicate path: paths are program constants.
func Compile(paths ...string) *Matcher {
	m := &Matcher{nodes: []node{{id: -1, elem: -1}}}
	for id, p := range paths {
		elems, err := split(p)
		if err != nil {
			panic(fmt.Sprintf("jsonscan: path %q: %v", p, err))
		}
		n := int32(0)
		for _, e := range elems {
			n = m.child(n, e)
		}
		if m.nodes[n].id >= 0 {
			panic(fmt.Sprintf("jsonscan: duplicate path %q", p))
		}
		m.nodes[n].id = int32(id)
	}
	return m
}

// split turns "a.b[*].c" into ["a", "b", "[*]", "c"].
func split(p string) ([]string, error) {
	var out []string
	for part := range strings.SplitSeq(p, ".") {
		key, rest, _ := strings.Cut(part, "[")
		if rest != "" || strings.HasSuffix(part, "[") {
			rest = "[" + rest
		}
		if key == "" && (len(out) > 0 || rest == "") {
			return nil, fmt.Errorf("empty key")
		}
		if key != "" {
			if strings.ContainsAny(key, `"\]*`) {
				return nil, fmt.Errorf("bad key %q", key)
			}
			out = append(out, key)
		}
		for rest != "" {
			if !strings.HasPrefix(rest, "[*]") {
				return nil, fmt.Errorf("bad array element %q", rest)
			}
			out = append(out, "[*]")
			rest = rest[3:]
		}
	}
	if len(out) == 0 || len(out) > MaxPathDepth {
		return nil, fmt.Errorf("%d elements (1..%d)", len(out), MaxPathDepth)
	}
	return out, nil
}

func (m *Matcher) child(n int32, e string) int32 {
	if e == "[*]" {
		if m.nodes[n].elem < 0 {
			m.nodes = append(m.nodes, node{id: -1, elem: -1})
			m.nodes[n].elem = int32(len(m.nodes) - 1)
		}
		return m.nodes[n].elem
	}
	for i, k := range m.nodes[n].keys {
		if k == e {
			return m.nodes[n].children[i]
		}
	}
	m.nodes = append(m.nodes, node{id: -1, elem: -1})
	c := int32(len(m.nodes) - 1)
	m.nodes[n].keys = append(m.nodes[n].keys, e)
	m.nodes[n].children = append(m.nodes[n].children, c)
	return c
}

// Scan walks data and reports the matching scalars to v, and to a
// ContainerVisitor the matching containers.
func (m *Matcher) Scan(data []byte, v Visitor) Status {
	s := scanner{data: data, m: m, v: v}
	s.cv, _ = v.(ContainerVisitor)
	i, st := s.value(skipWS(data, 0), 0)
	if st != Complete {
		return st
	}
	if skipWS(data, i) != len(data) {
		return Invalid
	}
	return Complete
}

type scanner struct {
	data []byte
	m    *Matcher
	v    Visitor
	cv   ContainerVisitor // v, when it is told of containers; else nil
}

func isWS(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

func skipWS(d []byte, i int) int {
	for i < len(d) && isWS(d[i]) {
		i++
	}
	return i
}

// value reads the value at d[i] (no leading white space) under trie node
// n and returns the index after it.
func (s *scanner) value(i int, n int32) (int, Status) {
	d := s.data
	if i >= len(d) {
		return i, Truncated
	}
	nd := &s.m.nodes[n]
	switch c := d[i]; c {
	case '{':
		var end int
		var st Status
		if len(nd.keys) == 0 {
			end, st = skip(d, i)
		} else {
			end, st = s.object(i, nd)
		}
		s.container(nd, i, end, st)
		return end, st
	case '[':
		var end int
		var st Status
		if nd.elem < 0 {
			end, st = skip(d, i)
		} else {
			end, st = s.array(i, nd.elem)
		}
		s.container(nd, i, end, st)
		return end, st
	case '"':
		end, st := stringEnd(d, i)
		if st != Complete {
			return end, st
		}
		if nd.id >= 0 {
			s.v.Value(int(nd.id), String, d[i+1:end-1])
		}
		return end, Complete
	default:
		end, k, st := scalar(d, i)
		if st != Complete {
			return end, st
		}
		if nd.id >= 0 {
			s.v.Value(int(nd.id), k, d[i:end])
		}
		return end, Complete
	}
}

// container reports the container d[start:end] at node nd to a
// ContainerVisitor, if a path ends there and the container is complete.
func (s *scanner) container(nd *node, start, end int, st Status) {
	if st == Complete && nd.id >= 0 && s.cv != nil {
		s.cv.Container(int(nd.id), s.data[start:end])
	}
}

func (s *scanner) object(i int, nd *node) (int, Status) {
	d := s.data
	i = skipWS(d, i+1)
	if i < len(d) && d[i] == '}' {
		return i + 1, Complete
	}
	for {
		if i >= len(d) {
			return i, Truncated
		}
		if d[i] != '"' {
			return i, Invalid
		}
		end, st := stringEnd(d, i)
		if st != Complete {
			return end, st
		}
		key := d[i+1 : end-1]
		i = skipWS(d, end)
		if i >= len(d) {
			return i, Truncated
		}
		if d[i] != ':' {
			return i, Invalid
		}
		i = skipWS(d, i+1)
		c := int32(-1)
		for j, k := range nd.keys {
			if string(key) == k {
				c = nd.children[j]
				break
			}
		}
		if c >= 0 {
			i, st = s.value(i, c)
		} else {
			i, st = skip(d, i)
		}
		if st != Complete {
			return i, st
		}
		i = skipWS(d, i)
		if i >= len(d) {
			return i, Truncated
		}
		switch d[i] {
		case ',':
			i = skipWS(d, i+1)
		case '}':
			return i + 1, Complete
		default:
			return i, Invalid
		}
	}
}

func (s *scanner) array(i int, elem int32) (int, Status) {
	d := s.data
	i = skipWS(d, i+1)
	if i < len(d) && d[i] == ']' {
		return i + 1, Complete
	}
	for {
		var st Status
		i, st = s.value(i, elem)
		if st != Complete {
			return i, st
		}
		i = skipWS(d, i)
		if i >= len(d) {
			return i, Truncated
		}
		switch d[i] {
		case ',':
			i = skipWS(d, i+1)
		case ']':
			return i + 1, Complete
		default:
			return i, Invalid
		}
	}
}

// stringEnd returns the index after the closing quote of the string
// starting at d[i] == '"'. Control characters are not checked.
func stringEnd(d []byte, i int) (int, Status) {
	j := i + 1
	for {
		k := quote(d, j)
		if k < 0 {
			return len(d), Truncated
		}
		j = k
		// An odd run of backslashes escapes the quote.
		b := j - 1
		for b > i && d[b] == '\\' {
			b--
		}
		j++
		if (j-2-b)%2 == 0 {
			return j, Complete
		}
	}
}

// quote returns the index of the first '"' in d[j:], or -1. Most strings
// (keys, ids, small deltas) are short: the first 32 bytes are searched 8
// at a time in a register, cheaper than a call to IndexByte.
func quote(d []byte, j int) int {
	const lo, hi, q = 0x0101010101010101, 0x8080808080808080, 0x2222222222222222
	end := min(len(d), j+32)
	for ; j+8 <= end; j += 8 {
		x := binary.LittleEndian.Uint64(d[j:]) ^ q
		if t := (x - lo) &^ x & hi; t != 0 {
			return j + bits.TrailingZeros64(t)/8
		}
	}
	for ; j < end; j++ {
		if d[j] == '"' {
			return j
		}
	}
	if j == len(d) {
		return -1
	}
	if k := bytes.IndexByte(d[j:], '"'); k >= 0 {
		return j + k
	}
	return -1
}

// scalar reads a number or literal at d[i].
func scalar(d []byte, i int) (int, Kind, Status) {
	switch d[i] {
	case 't':
		end, st := literal(d, i, "true")
		return end, True, st
	case 'f':
		end, st := literal(d, i, "false")
		return end, False, st
	case 'n':
		end, st := literal(d, i, "null")
		return end, Null, st
	}
	end, st := number(d, i)
	return end, Number, st
}

func literal(d []byte, i int, lit string) (int, Status) {
	rest := d[i:]
	if len(rest) < len(lit) {
		if string(rest) == lit[:len(rest)] {
			return len(d), Truncated
		}
		return i, Invalid
	}
	if string(rest[:len(lit)]) != lit {
		return i, Invalid
	}
	end := i + len(lit)
	if end >= len(d) {
		return end, Truncated // like a number: "nullx" would be invalid
	}
	if !isDelim(d[end]) {
		return end, Invalid
	}
	return end, Complete
}

func isDelim(c byte) bool {
	return isWS(c) || c == ',' || c == '}' || c == ']'
}

// number checks the JSON number grammar. A number that runs to the end of
// the input is Truncated: more digits could follow.
func number(d []byte, i int) (int, Status) {
	j := i
	if d[j] == '-' {
		j++
	}
	// int
	switch {
	case j >= len(d):
		return j, Truncated
	case d[j] == '0':
		j++
	case d[j] >= '1' && d[j] <= '9':
		j = digits(d, j+1)
	default:
		return j, Invalid
	}
	// frac
	if j < len(d) && d[j] == '.' {
		j++
		if j >= len(d) {
			return j, Truncated
		}
		if !isDigit(d[j]) {
			return j, Invalid
		}
		j = digits(d, j+1)
	}
	// exp
	if j < len(d) && (d[j] == 'e' || d[j] == 'E') {
		j++
		if j < len(d) && (d[j] == '+' || d[j] == '-') {
			j++
		}
		if j >= len(d) {
			return j, Truncated
		}
		if !isDigit(d[j]) {
			return j, Invalid
		}
		j = digits(d, j+1)
	}
	if j >= len(d) {
		return j, Truncated
	}
	if !isDelim(d[j]) {
		return j, Invalid
	}
	return j, Complete
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func digits(d []byte, j int) int {
	for j < len(d) && isDigit(d[j]) {
		j++
	}
	return j
}

// skip passes over the value at d[i] without looking into it: brackets
// are counted, not matched, so the memory needed does not grow with
// nesting. Structure inside a skipped container is not validated.
func skip(d []byte, i int) (int, Status) {
	if i >= len(d) {
		return i, Truncated
	}
	switch d[i] {
	case '"':
		return stringEnd(d, i)
	case '{', '[':
	default:
		end, _, st := scalar(d, i)
		return end, st
	}
	depth := 0
	for j := i; j < len(d); j++ {
		switch d[j] {
		case '"':
			end, st := stringEnd(d, j)
			if st != Complete {
				return end, st
			}
			j = end - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1, Complete
			}
		}
	}
	return len(d), Truncated
}
