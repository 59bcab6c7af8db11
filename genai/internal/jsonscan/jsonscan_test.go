package jsonscan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type hit struct {
	id   int
	kind Kind
	val  string // decoded strings, literal numbers
}

func (h hit) String() string { return fmt.Sprintf("%d:%v:%q", h.id, h.kind, h.val) }

type collector struct {
	hits []hit
	bad  bool // a string that did not decode
}

func (c *collector) Value(id int, kind Kind, raw []byte) {
	v := string(raw)
	if kind == String {
		b, ok := AppendString(nil, raw)
		if !ok {
			c.bad = true
		}
		v = string(b)
	}
	c.hits = append(c.hits, hit{id, kind, v})
}

// containerKind marks a container in a hit; its val is the raw text.
const containerKind Kind = 0

// containerCollector is also told of containers.
type containerCollector struct{ collector }

func (c *containerCollector) Container(id int, raw []byte) {
	c.hits = append(c.hits, hit{id, containerKind, string(raw)})
}

func scan(m *Matcher, data string) ([]hit, Status) {
	var c collector
	st := m.Scan([]byte(data), &c)
	return c.hits, st
}

var testPaths = []string{
	"model",                       // 0
	"usage.prompt_tokens",         // 1
	"choices[*].finish_reason",    // 2
	"choices[*].delta.content",    // 3
	"error",                       // 4
	"error.type",                  // 5
	"[*]",                         // 6
	"[*].a",                       // 7
	"m[*][*]",                     // 8
	"choices[*].delta.tool_calls", // 9
}

func TestScan(t *testing.T) {
	m := Compile(testPaths...)
	tests := []struct {
		in   string
		want string
		st   Status
	}{
		{`{"model":"gpt-4o","x":{"model":"no"}}`, `[0:string:"gpt-4o"]`, Complete},
		{` {"usage" : {"prompt_tokens" : 12 , "completion_tokens":3}} `, `[1:number:"12"]`, Complete},
		{`{"choices":[{"delta":{"content":"Hi"},"finish_reason":null},{"finish_reason":"stop"}]}`,
			`[3:string:"Hi" 2:null:"null" 2:string:"stop"]`, Complete},
		{`{"error":null}`, `[4:null:"null"]`, Complete},
		{`{"error":{"type":"server_error","code":null}}`, `[5:string:"server_error"]`, Complete},
		{`{"error":"boom"}`, `[4:string:"boom"]`, Complete},
		{`[1,{"a":true},[2],{"a":false}]`, `[6:number:"1" 7:true:"true" 7:false:"false"]`, Complete},
		{`{"m":[[1,2],[3],4]}`, `[8:number:"1" 8:number:"2" 8:number:"3"]`, Complete},
		{`{"model":"a\"b\\"}`, `[0:string:"a\"b\\"]`, Complete},
		{`{"model":"\u00e9\ud83d\ude00"}`, `[0:string:"é😀"]`, Complete},
		// Escaped keys do not match.
		{`{"mod\u0065l":"x"}`, `[]`, Complete},
		// Containers at a scalar path are not reported.
		{`{"model":{"model":"x"},"choices":{"finish_reason":"x"}}`, `[]`, Complete},
		{`{"choices":[{"delta":{"tool_calls":[{"x":1}]}}]}`, `[]`, Complete},
		// Skipped subtrees are not validated.
		{`{"x":[{]},"model":"m"}`, `[0:string:"m"]`, Complete},
		// Truncation.
		{``, `[]`, Truncated},
		{`{"model":"gp`, `[]`, Truncated},
		{`{"model":"gpt","usage":{"prompt_tokens":12`, `[0:string:"gpt"]`, Truncated},
		{`{"model":"gpt","usage":{"prompt_tokens":12}`, `[0:string:"gpt" 1:number:"12"]`, Truncated},
		{`{"error":nul`, `[]`, Truncated},
		{`{"error":null`, `[]`, Truncated},
		{`{"error":null `, `[4:null:"null"]`, Truncated},
		{`{"x":"\"`, `[]`, Truncated},
		{`{"x":1.`, `[]`, Truncated},
		{`{"x":1e-`, `[]`, Truncated},
		// Errors stop the scan; what came before stays reported.
		{`{"model":"a",}`, `[0:string:"a"]`, Invalid},
		{`{"model":"a"}x`, `[0:string:"a"]`, Invalid},
		{`{"model":"a" "b"}`, `[0:string:"a"]`, Invalid},
		{`{"error":nulx}`, `[]`, Invalid},
		{`{"error":01}`, `[]`, Invalid},
		{`{"error":1.e2}`, `[]`, Invalid},
		{`{"error":+1}`, `[]`, Invalid},
		{`{model:1}`, `[]`, Invalid},
	}
	for _, tt := range tests {
		got, st := scan(m, tt.in)
		assert.Equal(t, tt.want, fmt.Sprint(got), "Scan(%s) = %v, %v", tt.in, got, st)
		assert.Equal(t, tt.st, st, "Scan(%s) = %v, %v", tt.in, got, st)
	}
}

// TestScanContainers: a ContainerVisitor is told of the containers at a
// path, whole, after what is inside them; a plain Visitor of none.
func TestScanContainers(t *testing.T) {
	m := Compile(testPaths...)
	tests := []struct{ in, want string }{
		{`{"choices":[{"delta":{"tool_calls":[{"x":1}]}}]}`, `[9:Kind(0):"[{\"x\":1}]"]`},
		{`{"error":{"type":"e","code":1},"model":{"a":[]}}`, `[5:string:"e" 4:Kind(0):"{\"type\":\"e\",\"code\":1}" 0:Kind(0):"{\"a\":[]}"]`},
		{`[{"a":1},[2]]`, `[7:number:"1" 6:Kind(0):"{\"a\":1}" 6:Kind(0):"[2]"]`},
		{`{"m":[[1,[2]]]}`, `[8:number:"1" 8:Kind(0):"[2]"]`},
		// A container the input ends in is not reported; what stood in
		// it before the cut is.
		{`{"error":{"type":"e"`, `[5:string:"e"]`},
		{`{"model":{"a":1}`, `[0:Kind(0):"{\"a\":1}"]`},
	}
	for _, tt := range tests {
		var c containerCollector
		m.Scan([]byte(tt.in), &c)
		assert.Equal(t, tt.want, fmt.Sprint(c.hits), "Scan(%s)", tt.in)
		got, _ := scan(m, tt.in)
		assert.False(t, slices.ContainsFunc(got, func(h hit) bool { return h.kind == containerKind }),
			"Scan(%s): a plain Visitor is told of containers: %v", tt.in, got)
	}
}

func TestCompilePanics(t *testing.T) {
	for _, p := range []string{"", "a..b", "a[", "a[1]", "a[*]x", `a"b`, "a.b", strings.Repeat("a.", MaxPathDepth) + "a"} {
		assert.Panics(t, func() {
			if p == "a.b" {
				Compile("a.b", "a.b")
			} else {
				Compile(p)
			}
		}, "Compile(%q) did not panic", p)
	}
}

func TestInt(t *testing.T) {
	tests := []struct {
		in string
		n  int64
		ok bool
	}{
		{"0", 0, true}, {"-0", 0, true}, {"12", 12, true}, {"-12", -12, true},
		{"9223372036854775807", 9223372036854775807, true},
		{"9223372036854775808", 0, false},
		{"-9223372036854775808", -9223372036854775808, true},
		{"-9223372036854775809", 0, false},
		{"18446744073709551615", 0, false},
		{"184467440737095516150", 0, false},
		{strings.Repeat("9", 10000), 0, false},
		{"12.0", 12, true}, {"1e3", 1000, true}, {"1.5", 0, false}, {"1e300", 0, false},
		{"", 0, false}, {"-", 0, false}, {"x", 0, false},
	}
	for _, tt := range tests {
		n, ok := Int([]byte(tt.in))
		assert.Equal(t, tt.n, n, "Int(%.30s) = %d, %v", tt.in, n, ok)
		assert.Equal(t, tt.ok, ok, "Int(%.30s) = %d, %v", tt.in, n, ok)
	}
}

func TestFloat(t *testing.T) {
	for in, want := range map[string]float64{"0.7": 0.7, "1": 1, "-2.5e-1": -0.25} {
		f, ok := Float([]byte(in))
		assert.True(t, ok, "Float(%s) = %v, %v", in, f, ok)
		assert.Equal(t, want, f, "Float(%s) = %v, %v", in, f, ok)
	}
	for _, in := range []string{"", "1e999", strings.Repeat("1", 65), "x"} {
		_, ok := Float([]byte(in))
		assert.False(t, ok, "Float(%.20s) ok", in)
	}
}

func TestAppendString(t *testing.T) {
	tests := []struct {
		raw, want string
		ok        bool
	}{
		{`plain`, "plain", true},
		{`a\nb\t\"\\\/\b\f\r`, "a\nb\t\"\\/\b\f\r", true},
		{`\u0041\u00e9\u20ac`, "Aé€", true},
		{`\ud83d\ude00`, "😀", true},
		{`\ud83d`, "\uFFFD", true},
		{`\ud83dx`, "\uFFFDx", true},
		{`\ud83d\u0041`, "\uFFFDA", true},
		{`\ude00`, "\uFFFD", true},
		{"\xff", "\uFFFD", true},
		{`\x`, "", false},
		{`\u12`, "", false},
		{`a\`, "a", false},
	}
	for _, tt := range tests {
		got, ok := AppendString(nil, []byte(tt.raw))
		assert.Equal(t, tt.want, string(got), "AppendString(%s) = %q, %v", tt.raw, got, ok)
		assert.Equal(t, tt.ok, ok, "AppendString(%s) = %q, %v", tt.raw, got, ok)
	}
}

// TestAppendStringMax: at most max bytes, cut before the rune that does
// not fit (a rune from an escape, a surrogate pair, U+FFFD for a bad
// byte), never inside one; all of it when it fits.
func TestAppendStringMax(t *testing.T) {
	tests := []struct {
		raw     string
		max     int
		want    string
		ok, cut bool
	}{
		{`plain`, 5, "plain", true, false},
		{`plain`, 4, "plai", true, true},
		{`plain`, 0, "", true, true},
		{"aé€", 3, "aé", true, true},
		{"aé€", 2, "a", true, true},
		{"aé€", 6, "aé€", true, false},
		{`a\nb`, 2, "a\n", true, true},
		{`\u0041\u00e9`, 2, "A", true, true},
		{`\u0041\u00e9`, 3, "Aé", true, false},
		{`x\ud83d\ude00`, 4, "x", true, true},
		{`x\ud83d\ude00`, 5, "x😀", true, false},
		{"a\xff", 3, "a", true, true},
		{"a\xff", 4, "a\uFFFD", true, false},
		{`a\x`, 10, "a", false, false},
		{`ab\`, 1, "a", true, true},
	}
	for _, tt := range tests {
		got, ok, cut := AppendStringMax([]byte("p:"), []byte(tt.raw), tt.max)
		assert.Equal(t, "p:"+tt.want, string(got), "AppendStringMax(%q, %d) = %q, %v, %v", tt.raw, tt.max, got, ok, cut)
		assert.Equal(t, tt.ok, ok, "AppendStringMax(%q, %d) = %q, %v, %v: ok", tt.raw, tt.max, got, ok, cut)
		assert.Equal(t, tt.cut, cut, "AppendStringMax(%q, %d) = %q, %v, %v: cut", tt.raw, tt.max, got, ok, cut)
	}
}

// TestHostile: deep nesting, endless strings and huge numbers cost time
// linear in the input and no memory.
func TestHostile(t *testing.T) {
	m := Compile(testPaths...)
	const n = 4 << 20
	inputs := map[string][]byte{
		"deep-skipped":   []byte(`{"x":` + strings.Repeat("[", n)),
		"deep-on-path":   []byte(`{"m":` + strings.Repeat("[", n)),
		"deep-top":       bytes.Repeat([]byte("["), n),
		"deep-objects":   []byte(strings.Repeat(`{"model":`, n/8)),
		"endless-string": []byte(`{"model":"` + strings.Repeat("a", n)),
		"endless-escape": []byte(`{"model":"` + strings.Repeat(`\"`, n/2)),
		"huge-number":    []byte(`{"usage":{"prompt_tokens":` + strings.Repeat("9", n) + `}}`),
		"huge-exponent":  []byte(`{"usage":{"prompt_tokens":1e` + strings.Repeat("9", n) + `}}`),
		"closed-deep":    []byte(`{"x":` + strings.Repeat("[", n/2) + strings.Repeat("]", n/2) + `,"model":"m"}`),
	}
	for name, in := range inputs {
		var v hostileVisitor
		allocs := testing.AllocsPerRun(1, func() {
			v = hostileVisitor{}
			m.Scan(in, &v)
		})
		assert.LessOrEqual(t, allocs, 0.0, "%s: allocs", name)
		assert.False(t, v.parsed, "%s: huge number parsed", name)
		if name == "closed-deep" {
			assert.Equal(t, 1, v.n, "closed-deep: %d values, last %q", v.n, v.last)
			assert.Equal(t, "m", v.last, "closed-deep: %d values, last %q", v.n, v.last)
		}
	}
}

func TestScanAllocs(t *testing.T) {
	m := Compile(testPaths...)
	in := []byte(`{"id":"chatcmpl-1","model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}],"usage":{"prompt_tokens":1}}`)
	var v nopVisitor
	assert.Zero(t, testing.AllocsPerRun(100, func() { m.Scan(in, &v) }), "Scan: allocs")
	assert.Zero(t, testing.AllocsPerRun(100, func() { Float([]byte("0.7")) }), "Float: allocs")
}

type hostileVisitor struct {
	n      int
	last   string
	parsed bool
}

func (v *hostileVisitor) Value(id int, kind Kind, raw []byte) {
	v.n++
	if len(raw) < 8 {
		v.last = string(raw) // small: no allocation
	}
	if id == 1 {
		_, v.parsed = Int(raw)
		if _, ok := Float(raw); ok {
			v.parsed = true
		}
	}
}

type nopVisitor struct{ n int }

func (v *nopVisitor) Value(id int, kind Kind, raw []byte) { v.n += len(raw) }

// oracle finds the same values with encoding/json's tokenizer. Keys are
// matched raw, as the scanner does (InputOffset gives the raw token).
// With containers, it reports the containers at a path too, as a
// ContainerVisitor is told of them.
func oracle(t testing.TB, paths []string, data []byte, containers bool) []hit {
	var pats [][]string
	for _, p := range paths {
		e, err := split(p)
		require.NoError(t, err)
		pats = append(pats, e)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		array  bool
		key    string // current key (raw), objects
		wantKv bool   // an object expecting a key
		id     int    // the path the container stands at, -1 if none
		start  int64  // offset of its opening bracket
	}
	var stack []frame
	var hits []hit
	prev := int64(0)
	match := func() (int, bool) {
	next:
		for id, p := range pats {
			if len(p) != len(stack) {
				continue
			}
			for i, f := range stack {
				if f.array != (p[i] == "[*]") || !f.array && p[i] != f.key {
					continue next
				}
			}
			return id, true
		}
		return 0, false
	}
	afterValue := func() {
		if n := len(stack); n > 0 && !stack[n-1].array {
			stack[n-1].wantKv = true
		}
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return hits
		}
		if err != nil { // guarded: this runs for every token the fuzzer makes
			require.NoError(t, err, "oracle: on valid JSON")
		}
		off := dec.InputOffset()
		raw := bytes.Trim(data[prev:off], " \t\r\n,:")
		prev = off
		closeFrame := func() {
			f := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if containers && f.id >= 0 {
				hits = append(hits, hit{f.id, containerKind, string(data[f.start:off])})
			}
			afterValue()
		}
		if n := len(stack); n > 0 && !stack[n-1].array && stack[n-1].wantKv {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				closeFrame()
				continue
			}
			stack[n-1].key = string(raw[1 : len(raw)-1])
			stack[n-1].wantKv = false
			continue
		}
		var h hit
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				id, ok := match()
				if !ok {
					id = -1
				}
				stack = append(stack, frame{array: v == '[', wantKv: v == '{', id: id, start: off - 1})
			case '}', ']':
				closeFrame()
			}
			continue
		case string:
			h = hit{kind: String, val: v}
		case json.Number:
			h = hit{kind: Number, val: string(v)}
		case bool:
			h = hit{kind: False, val: "false"}
			if v {
				h = hit{kind: True, val: "true"}
			}
		case nil:
			h = hit{kind: Null, val: "null"}
		}
		if id, ok := match(); ok {
			h.id = id
			hits = append(hits, h)
		}
		afterValue()
	}
}

var seeds = []string{
	`{"model":"gpt-4o","x":{"model":"no"}}`,
	`{"id":"chatcmpl-1","model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Hi \"you\"\n"},"finish_reason":null}],"usage":{"prompt_tokens":1}}`,
	`{"choices":[{"finish_reason":"stop","delta":{"content":"\u00e9\ud83d\ude00"}},{"finish_reason":"length"}],"usage":{"prompt_tokens":12e0}}`,
	`[1,{"a":true},[2],{"a":false},"x",null,-0.5e+3]`,
	`{"m":[[1,2],[3,[4]],4,{"a":1}]}`,
	`{"error":{"type":"server_error","code":null},"error":null,"error":"x"}`,
	`  "top"  `,
	`{"mod\u0065l":"x","model":"\\"}`,
}

// FuzzScan checks the scanner against encoding/json on valid input, that
// every prefix reports a prefix of the values (and says Truncated), and
// that nothing panics on any input; the same with a ContainerVisitor,
// which is told of containers too.
func FuzzScan(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	m := Compile(testPaths...)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkScan(t, m, data, false)
		checkScan(t, m, data, true)
	})
}

// visit scans data with a plain collector, or one told of containers.
func visit(m *Matcher, data []byte, containers bool) (*collector, Status) {
	if containers {
		var c containerCollector
		st := m.Scan(data, &c)
		return &c.collector, st
	}
	var c collector
	return &c, m.Scan(data, &c)
}

// checkScan runs for every input of the fuzzer, its prefix check for up
// to 256 cuts of each: every check is guarded by its condition, so that a
// check that passes costs no call into testify (whose t.Helper is not
// free).
func checkScan(t *testing.T, m *Matcher, data []byte, containers bool) {
	c, st := visit(m, data, containers)
	if !json.Valid(data) {
		return
	}
	want := oracle(t, testPaths, data, containers)
	if got, w := fmt.Sprint(c.hits), fmt.Sprint(want); got != w {
		require.Equal(t, w, got, "Scan(%q), containers %v", data, containers)
	}
	trimmed := bytes.TrimRight(data, " \t\r\n")
	switch trimmed[0] {
	case '{', '[', '"':
		if st != Complete {
			require.Equal(t, Complete, st, "Scan(%q) on valid JSON", data)
		}
	}
	if c.bad {
		require.False(t, c.bad, "Scan(%q): undecodable string in valid JSON", data)
	}
	// Prefixes: a prefix of the values, and Truncated. Checking every
	// cut is quadratic: cap the work.
	step := 1 + len(trimmed)/256
	for k := 0; k < len(trimmed); k += step {
		p, st := visit(m, trimmed[:k], containers)
		if st != Truncated {
			require.Equal(t, Truncated, st, "Scan(%q)", trimmed[:k])
		}
		if len(p.hits) > len(c.hits) || fmt.Sprint(p.hits) != fmt.Sprint(c.hits[:len(p.hits)]) {
			require.LessOrEqual(t, len(p.hits), len(c.hits), "Scan(%q) = %v, not a prefix of %v", trimmed[:k], p.hits, c.hits)
			require.Equal(t, fmt.Sprint(c.hits[:len(p.hits)]), fmt.Sprint(p.hits), "Scan(%q) = %v, not a prefix of %v", trimmed[:k], p.hits, c.hits)
		}
	}
}

// FuzzAppendStringMax: the bounded decoding is the longest prefix of the
// whole decoding that fits, cut at a rune.
func FuzzAppendStringMax(f *testing.F) {
	f.Add([]byte(`a\u00e9\ud83d\ude00\n`), 4)
	f.Add([]byte("\xff\xfe"), 3)
	f.Fuzz(func(t *testing.T, raw []byte, max int) {
		if max < 0 || max > 1<<16 {
			return
		}
		// Each check is guarded by its condition: the fuzzer runs this
		// for every input, and testify's t.Helper is not free.
		whole, wholeOK := AppendString(nil, raw)
		got, ok, cut := AppendStringMax(nil, raw, max)
		if len(got) > max || !bytes.HasPrefix(whole, got) || !utf8.Valid(got) {
			require.LessOrEqual(t, len(got), max, "AppendStringMax(%q, %d) = %q, not a prefix of %q within the bound", raw, max, got, whole)
			require.True(t, bytes.HasPrefix(whole, got), "AppendStringMax(%q, %d) = %q, not a prefix of %q within the bound", raw, max, got, whole)
			require.True(t, utf8.Valid(got), "AppendStringMax(%q, %d) = %q, not valid UTF-8", raw, max, got)
		}
		if !cut && (ok != wholeOK || len(got) != len(whole)) {
			require.Equal(t, wholeOK, ok, "AppendStringMax(%q, %d) = %q, %v uncut; AppendString = %q, %v", raw, max, got, ok, whole, wholeOK)
			require.Len(t, got, len(whole), "AppendStringMax(%q, %d) = %q, %v uncut; AppendString = %q, %v", raw, max, got, ok, whole, wholeOK)
		}
		if cut && len(whole) > len(got) && len(got)+utf8RuneLen(whole[len(got):]) <= max {
			require.Greater(t, len(got)+utf8RuneLen(whole[len(got):]), max, "AppendStringMax(%q, %d) = %q: the next rune of %q fits", raw, max, got, whole)
		}
	})
}

// utf8RuneLen is the length of the first rune of b.
func utf8RuneLen(b []byte) int {
	_, n := utf8.DecodeRune(b)
	return n
}
