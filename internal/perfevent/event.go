package perfevent

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Bounds of what an event string may hold: the kernel's are one short
// line.
const (
	maxEventLen   = 512
	maxTerms      = 16
	maxTermName   = 32
	maxScaleLen   = 64
	maxUnitLen    = 16
	maxPMUNameLen = 64
)

// Term is one "name=value" (or bare "name", which means 1) of an event
// string.
type Term struct {
	Name  string
	Value uint64
}

// ParseTerms parses an event string as sysfs writes it under events/
// ("event=0x04,umask=0x03", "event=0xff,umask=0x20", "edge"): terms
// separated by commas, values in hexadecimal with 0x or in decimal. A
// trailing newline is allowed; a name given twice is an error.
func ParseTerms(s string) ([]Term, error) {
	if len(s) > maxEventLen {
		return nil, fmt.Errorf("event string is %d bytes, longer than %d", len(s), maxEventLen)
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty event string")
	}
	var terms []Term
	for t := range strings.SplitSeq(s, ",") {
		t = strings.TrimSpace(t)
		name, val, hasVal := strings.Cut(t, "=")
		if !validTermName(name) {
			return nil, fmt.Errorf("term %.40q: bad name", t)
		}
		term := Term{Name: name, Value: 1}
		if hasVal {
			v, err := parseValue(val)
			if err != nil {
				return nil, fmt.Errorf("term %.40q: %w", t, err)
			}
			term.Value = v
		}
		for _, o := range terms {
			if o.Name == name {
				return nil, fmt.Errorf("term %q given twice", name)
			}
		}
		if len(terms) == maxTerms {
			return nil, fmt.Errorf("more than %d terms", maxTerms)
		}
		terms = append(terms, term)
	}
	return terms, nil
}

func validTermName(s string) bool {
	if s == "" || len(s) > maxTermName {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func parseValue(s string) (uint64, error) {
	if h, ok := strings.CutPrefix(s, "0x"); ok {
		return strconv.ParseUint(h, 16, 64)
	}
	if h, ok := strings.CutPrefix(s, "0X"); ok {
		return strconv.ParseUint(h, 16, 64)
	}
	return strconv.ParseUint(s, 10, 64)
}

// FormatTerms writes terms back as an event string.
func FormatTerms(terms []Term) string {
	var b strings.Builder
	for i, t := range terms {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%#x", t.Name, t.Value)
	}
	return b.String()
}

// Configs are the configuration words of an event: attr.config, config1,
// config2 and config3.
type Configs [numConfigs]uint64

// Encode places each term's value through the PMU's format field of its
// name. A term named config, config1, config2 or config3 sets that word
// as a whole, as perf allows. A term the PMU has no format for, a value
// wider than its field, or two terms setting the same bit are errors.
func Encode(formats map[string]Format, terms []Term) (Configs, error) {
	var c, set Configs
	for _, t := range terms {
		var (
			word   int
			placed uint64
			mask   uint64
		)
		if f, ok := formats[t.Name]; ok {
			p, err := f.Place(t.Value)
			if err != nil {
				return Configs{}, fmt.Errorf("term %s: %w", t.Name, err)
			}
			word, placed, mask = f.Word, p, f.Mask
		} else if w := rawConfigWord(t.Name); w >= 0 {
			word, placed, mask = w, t.Value, math.MaxUint64
		} else {
			return Configs{}, fmt.Errorf("term %s: the PMU has no format field of that name", t.Name)
		}
		if set[word]&mask != 0 {
			return Configs{}, fmt.Errorf("term %s: its bits are set by an earlier term", t.Name)
		}
		set[word] |= mask
		c[word] |= placed
	}
	return c, nil
}

func rawConfigWord(name string) int {
	for i, n := range configNames {
		if name == n {
			return i
		}
	}
	return -1
}

// ParseScale parses an event's .scale file: a positive finite decimal
// ("6.103515625e-5").
func ParseScale(s string) (float64, error) {
	if len(s) > maxScaleLen {
		return 0, fmt.Errorf("scale is %d bytes, longer than %d", len(s), maxScaleLen)
	}
	s = strings.TrimSpace(s)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("scale %.40q is not a positive number", s)
	}
	return v, nil
}

// ParseUnit parses an event's .unit file: a short printable word ("MiB").
func ParseUnit(s string) (string, error) {
	if len(s) > maxUnitLen+1 {
		return "", fmt.Errorf("unit is %d bytes, longer than %d", len(s), maxUnitLen)
	}
	s = strings.TrimSpace(s)
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return "", fmt.Errorf("unit %.40q holds a character that is not printable ASCII", s)
		}
	}
	return s, nil
}

// byteUnits are the units an event's .unit can give that measure bytes,
// with how many bytes each is.
var byteUnits = map[string]float64{
	"B": 1, "Bytes": 1, "bytes": 1,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30,
	"kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9,
}

// BytesPerCount is how many bytes one count of an event is, from its
// scale and unit: the kernel scales the IMC's CAS counts to MiB
// (6.103515625e-5 MiB, 64 bytes). It is an error when the unit is not
// one of bytes (a count of cycles, say), so that a count is never taken
// for bytes.
func BytesPerCount(scale float64, unit string) (float64, error) {
	n, ok := byteUnits[unit]
	if !ok {
		return 0, fmt.Errorf("unit %q is not a unit of bytes", unit)
	}
	if scale == 0 {
		scale = 1
	}
	return scale * n, nil
}
