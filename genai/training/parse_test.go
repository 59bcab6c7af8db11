package training

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// MLflow's metric lines as its FileStore writes them: "%s %s %s" of
// Python's int, float (its repr) and int.
func TestParseMLflowLine(t *testing.T) {
	for line, want := range map[string]struct {
		ts   int64
		v    float64
		step int64
		ok   bool
	}{
		"1700000000000 0.5 3":       {1700000000000, 0.5, 3, true},
		"1700000000000 1e-05 0":     {1700000000000, 1e-05, 0, true},
		"1700000000000 -2.25 7\r":   {1700000000000, -2.25, 7, true},
		"1700000000000 0.1":         {1700000000000, 0.1, 0, true},
		"1700000000000 inf 1":       {1700000000000, math.Inf(1), 1, true},
		"1700000000000 -inf 1":      {1700000000000, math.Inf(-1), 1, true},
		"1700000000000 123456789 2": {1700000000000, 123456789, 2, true},
		"":                          {},
		"1700000000000":             {},
		"1700000000000 x 1":         {},
		"1.5 0.5 1":                 {},
		"1700000000000 0.5 1 9":     {},
		"1700000000000  0.5 1":      {},
		"1700000000000 0.5 1.5":     {},
	} {
		ts, v, step, ok := parseMLflowLine([]byte(line))
		assert.Equal(t, want.ok, ok, "%q", line)
		if want.ok {
			assert.Equal(t, want.ts, ts, "%q", line)
			assert.Equal(t, want.v, v, "%q", line)
			assert.Equal(t, want.step, step, "%q", line)
		}
	}
	_, v, _, ok := parseMLflowLine([]byte("1 nan 1"))
	assert.True(t, ok)
	assert.True(t, math.IsNaN(v))
}

// CSV lines as Python's csv module writes them (Lightning's CSVLogger
// writes with DictWriter): quoted where a field holds a comma or a quote.
func TestSplitCSV(t *testing.T) {
	for line, want := range map[string][]string{
		"epoch,step,train_loss\r": {"epoch", "step", "train_loss"},
		"0,9,0.5,,":               {"0", "9", "0.5", "", ""},
		`"a,b",c,"say ""hi""",`:   {"a,b", "c", `say "hi"`, ""},
		"":                        {""},
		`"only"`:                  {"only"},
		"lr-AdamW/pg1,val/acc":    {"lr-AdamW/pg1", "val/acc"},
	} {
		var got []string
		_, ok := splitCSV([]byte(line), nil, func(_ int, b []byte) { got = append(got, string(b)) })
		assert.True(t, ok, "%q", line)
		assert.Equal(t, want, got, "%q", line)
	}
	for _, bad := range []string{`"open,1`, `"a"b,c`, strings.Repeat(",", maxCSVFields+1)} {
		_, ok := splitCSV([]byte(bad), nil, func(int, []byte) {})
		assert.False(t, ok, "%q", bad)
	}
	step, ok := stepOf([]byte("199.0"))
	assert.True(t, ok)
	assert.Equal(t, int64(199), step)
	for _, bad := range []string{"", "1.5", "-1", "x", "nan"} {
		_, ok := stepOf([]byte(bad))
		assert.False(t, ok, "%q", bad)
	}
}

// FuzzParseMLflowLine: any line parses or not without a panic; a line
// that parses (the path every line MLflow wrote takes) allocates nothing,
// and has two or three fields. (A line that does not parse costs strconv's
// error.)
func FuzzParseMLflowLine(f *testing.F) {
	f.Add([]byte("1700000000000 0.5 3"))
	f.Add([]byte("1 nan"))
	f.Add([]byte("1 1e308 -5"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var ok bool
		allocs := testing.AllocsPerRun(1, func() { _, _, _, ok = parseMLflowLine(b) })
		if ok && len(b) < 30 {
			require.Zero(t, allocs)
		}
		if ok {
			n := len(bytes.Split(bytes.TrimSpace(b), []byte{' '}))
			require.Contains(t, []int{2, 3}, n)
		}
	})
}

// FuzzSplitCSV: any line splits without a panic, into at most
// maxCSVFields fields, none longer than the line.
func FuzzSplitCSV(f *testing.F) {
	f.Add([]byte(`epoch,step,"a,b",""""`))
	f.Add([]byte(`"`))
	f.Fuzz(func(t *testing.T, b []byte) {
		scratch := make([]byte, 0, 16)
		n, _ := splitCSV(b, scratch, func(_ int, field []byte) {
			require.LessOrEqual(t, len(field), len(b))
		})
		require.LessOrEqual(t, n, maxCSVFields)
	})
}
