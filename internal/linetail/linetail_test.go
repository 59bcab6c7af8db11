package linetail

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// MaxLine is the longest line of the tests' Tails.
const MaxLine = 4 << 10

// growing is a file written as the Inspector writes its dump: appended to,
// a line at a time or a part of one.
type growing struct{ b []byte }

func (g *growing) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(g.b)) {
		return 0, nil
	}
	return copy(p, g.b[off:]), nil
}

func (g *growing) size() int64 { return int64(len(g.b)) }

func collect(t *testing.T, tl *Tail, g *growing, max int) (got []string, skipped int) {
	t.Helper()
	_, skipped, err := tl.Read(g.size(), max, func(l []byte) { got = append(got, string(l)) })
	require.NoError(t, err)
	return got, skipped
}

func TestTail(t *testing.T) {
	g := &growing{}
	tl := New(g, 0, make([]byte, MaxLine+1))
	got, _ := collect(t, tl, g, 1<<20)
	assert.Empty(t, got)

	g.b = append(g.b, "one\ntwo\nthr"...)
	got, _ = collect(t, tl, g, 1<<20)
	assert.Equal(t, []string{"one", "two"}, got, "a line not ended waits")
	assert.Equal(t, int64(8), tl.Offset())

	g.b = append(g.b, "ee\n\nfour\n"...)
	got, _ = collect(t, tl, g, 1<<20)
	assert.Equal(t, []string{"three", "", "four"}, got)

	// Bounded: at most max bytes a Read, the rest at the next.
	g.b = append(g.b, strings.Repeat("0123456789\n", 100)...)
	got, _ = collect(t, tl, g, 55)
	assert.Len(t, got, 5)
	got, _ = collect(t, tl, g, 1<<20)
	assert.Len(t, got, 95)

	// A line past MaxLine is skipped, whole, and counted once; the next
	// ones come.
	g.b = append(g.b, bytes.Repeat([]byte{'x'}, 3*MaxLine+5)...)
	got, skipped := collect(t, tl, g, 1<<20)
	assert.Empty(t, got)
	assert.Equal(t, 1, skipped)
	g.b = append(g.b, "xx\nafter\n"...)
	got, skipped = collect(t, tl, g, 1<<20)
	assert.Equal(t, []string{"after"}, got)
	assert.Zero(t, skipped)

	// Cut (a new file at the path): read again from its start.
	g.b = []byte("new\n")
	got, _ = collect(t, tl, g, 1<<20)
	assert.Equal(t, []string{"new"}, got)

	// Rewritten in place, longer (a CSV with a column more): Rewind reads
	// it again from its start.
	g.b = []byte("a,b,c\n1,2,3\n")
	got, _ = collect(t, tl, g, 1<<20)
	assert.Equal(t, []string{"c", "1,2,3"}, got, "without Rewind, the bytes past the old end")
	tl.Rewind()
	got, _ = collect(t, tl, g, 1<<20)
	assert.Equal(t, []string{"a,b,c", "1,2,3"}, got)
}

// FuzzTail: whatever the file and however it grows, the lines handed out
// are the file's whole lines of up to MaxLine bytes, in order, each once.
func FuzzTail(f *testing.F) {
	f.Add([]byte("a\nbb\n\nccc"), uint16(3), uint16(2))
	f.Add(bytes.Repeat([]byte("0123456789"), 10000), uint16(7), uint16(5000))
	f.Fuzz(func(t *testing.T, content []byte, step, max uint16) {
		g := &growing{}
		tl := New(g, 0, make([]byte, MaxLine+1))
		var got []string
		for i := 0; i <= len(content); {
			i = min(len(content), i+int(step)+1)
			g.b = content[:i]
			for range 4 {
				_, _, err := tl.Read(g.size(), int(max)+1, func(l []byte) { got = append(got, string(l)) })
				require.NoError(t, err)
			}
			if i == len(content) {
				break
			}
		}
		for tl.Offset() < g.size() {
			before := tl.Offset()
			_, _, err := tl.Read(g.size(), 1<<30, func(l []byte) { got = append(got, string(l)) })
			require.NoError(t, err)
			if tl.Offset() == before {
				break // a last line not ended
			}
		}
		var want []string
		lines := strings.Split(string(content), "\n")
		for _, l := range lines[:len(lines)-1] {
			if len(l) <= MaxLine {
				want = append(want, l)
			}
		}
		assert.Equal(t, want, got)
	})
}
