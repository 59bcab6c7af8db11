package perfevent

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// The configuration words of perf_event_attr a format field can name.
const (
	Config     = 0 // attr.config
	Config1    = 1 // attr.config1
	Config2    = 2 // attr.config2
	Config3    = 3 // attr.config3 (Linux 6.3)
	numConfigs = 4
)

var configNames = [numConfigs]string{"config", "config1", "config2", "config3"}

// maxFormatLen bounds a format file: the kernel's are a few dozen bytes.
const maxFormatLen = 256

// Format is one field of a PMU's format/ directory: which configuration
// word it lives in and which of that word's bits, in order. The kernel
// writes it as "config:0-7", "config1:8", or with several ranges,
// "config:0-7,32-35" (AMD DF's event) and "config:8-15,32-55" (Sapphire
// Rapids' extended umask).
type Format struct {
	Word int    // Config, Config1, Config2 or Config3
	Mask uint64 // the field's bits in that word
}

// Width is how many bits of a value the field holds.
func (f Format) Width() int { return bits.OnesCount64(f.Mask) }

// ParseFormat parses a format file's contents, as the kernel writes them
// (a trailing newline is allowed).
func ParseFormat(s string) (Format, error) {
	if len(s) > maxFormatLen {
		return Format{}, fmt.Errorf("format is %d bytes, longer than %d", len(s), maxFormatLen)
	}
	s = strings.TrimSpace(s)
	word, ranges, ok := strings.Cut(s, ":")
	if !ok {
		return Format{}, fmt.Errorf("format %q has no ':'", s)
	}
	f := Format{Word: -1}
	for i, n := range configNames {
		if word == n {
			f.Word = i
		}
	}
	if f.Word < 0 {
		return Format{}, fmt.Errorf("format %q names no configuration word (config, config1, config2, config3)", s)
	}
	if ranges == "" {
		return Format{}, fmt.Errorf("format %q has no bits", s)
	}
	for r := range strings.SplitSeq(ranges, ",") {
		lo, hi, err := parseRange(r)
		if err != nil {
			return Format{}, fmt.Errorf("format %q: %w", s, err)
		}
		m := rangeMask(lo, hi)
		if f.Mask&m != 0 {
			return Format{}, fmt.Errorf("format %q: range %q overlaps an earlier one", s, r)
		}
		f.Mask |= m
	}
	return f, nil
}

func parseRange(r string) (lo, hi int, err error) {
	a, b, isRange := strings.Cut(r, "-")
	if lo, err = parseBit(a); err != nil {
		return 0, 0, err
	}
	hi = lo
	if isRange {
		if hi, err = parseBit(b); err != nil {
			return 0, 0, err
		}
	}
	if hi < lo {
		return 0, 0, fmt.Errorf("range %q runs backwards", r)
	}
	return lo, hi, nil
}

func parseBit(s string) (int, error) {
	n, err := strconv.ParseUint(s, 10, 8)
	if err != nil || n > 63 {
		return 0, fmt.Errorf("bit %q is not 0 to 63", s)
	}
	return int(n), nil
}

func rangeMask(lo, hi int) uint64 {
	if hi-lo == 63 {
		return ^uint64(0)
	}
	return ((uint64(1) << (hi - lo + 1)) - 1) << lo
}

// ErrTooWide is wrapped by Place for a value wider than its field.
var ErrTooWide = errors.New("value wider than the field")

// Place returns v's bits at the field's positions: the value's lowest bit
// at the field's lowest bit, and on upwards through the field's bits, as
// perf's own parser does (pmu_format_value: the ranges in the order of
// their bits, whatever order the file lists them in). A value with more significant bits than the field has is
// an error wrapping ErrTooWide, never silently cut.
func (f Format) Place(v uint64) (uint64, error) {
	if w := f.Width(); w < 64 && v>>w != 0 {
		return 0, fmt.Errorf("%#x in a %d-bit field: %w", v, w, ErrTooWide)
	}
	var out uint64
	for m := f.Mask; m != 0 && v != 0; m &= m - 1 {
		if v&1 != 0 {
			out |= m & -m
		}
		v >>= 1
	}
	return out, nil
}

// Extract is Place undone: the field's value in word.
func (f Format) Extract(word uint64) uint64 {
	var v uint64
	i := 0
	for m := f.Mask; m != 0; m &= m - 1 {
		if word&(m&-m) != 0 {
			v |= 1 << i
		}
		i++
	}
	return v
}

// String writes the format back as the kernel does.
func (f Format) String() string {
	var b strings.Builder
	if f.Word >= 0 && f.Word < numConfigs {
		b.WriteString(configNames[f.Word])
	}
	b.WriteByte(':')
	first := true
	for m := f.Mask; m != 0; {
		lo := bits.TrailingZeros64(m)
		hi := lo
		for hi < 63 && m&(1<<(hi+1)) != 0 {
			hi++
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(strconv.Itoa(lo))
		if hi > lo {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(hi))
		}
		m &^= rangeMask(lo, hi)
	}
	return b.String()
}
