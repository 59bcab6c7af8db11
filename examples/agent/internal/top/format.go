package top

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// dash is a figure that is not known.
const dash = "-"

// si formats v with a k, M, G, T suffix of 1000s: 3 significant digits.
func si(v float64, units []string, base float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return dash
	}
	neg := v < 0
	v = math.Abs(v)
	i := 0
	for v >= base*0.9995 && i < len(units)-1 {
		v /= base
		i++
	}
	var s string
	switch {
	case i == 0 && v == math.Trunc(v):
		s = strconv.FormatFloat(v, 'f', 0, 64)
	case v < 9.995:
		s = strconv.FormatFloat(v, 'f', 2, 64)
	case v < 99.95:
		s = strconv.FormatFloat(v, 'f', 1, 64)
	default:
		s = strconv.FormatFloat(v, 'f', 0, 64)
	}
	if neg {
		s = "-" + s
	}
	return s + units[i]
}

var (
	countUnits = []string{"", "k", "M", "G", "T"}
	byteUnits  = []string{"B", "K", "M", "G", "T", "P"}
)

// count formats a number or a rate: 498, 1.25k, 3.40M.
func count(v float64) string { return si(v, countUnits, 1000) }

// bytesIEC formats bytes in powers of 1024: 512B, 1.00G, 20.0G.
func bytesIEC(v float64) string { return si(v, byteUnits, 1024) }

// pct formats a ratio in 0..1 as a percentage.
func pct(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return dash
	}
	return strconv.FormatFloat(v*100, 'f', 0, 64) + "%"
}

// seconds formats a duration in seconds: 350µs, 12.0ms, 1.25s, 2m05s.
func seconds(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return dash
	case v == 0:
		return "0s"
	case v < 1e-3:
		return si(v*1e6, []string{"µs"}, math.Inf(1))
	case v < 1:
		return si(v*1e3, []string{"ms"}, math.Inf(1))
	case v < 60:
		return si(v, []string{"s"}, math.Inf(1))
	}
	return age(v)
}

// age formats seconds as 45s, 5m12s, 3h04m, 2d03h.
func age(v float64) string {
	if math.IsNaN(v) || v < 0 {
		return dash
	}
	d := time.Duration(v) * time.Second
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m" + two(int(d%time.Minute/time.Second)) + "s"
	case d < 24*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h" + two(int(d%time.Hour/time.Minute)) + "m"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + "d" + two(int(d%(24*time.Hour)/time.Hour)) + "h"
}

func two(n int) string {
	if n < 10 {
		return "0" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

// of formats used/total with one unit: 20.0/80.0G.
func of(used, total float64, f func(float64) string) string {
	if math.IsNaN(total) {
		return f(used)
	}
	t := f(total)
	u := f(used)
	// The total's unit stands for both where they share it.
	if n := len(t); n > 0 && len(u) > 0 && !isDigit(t[n-1]) && u[len(u)-1] == t[n-1] {
		u = u[:len(u)-1]
	}
	return u + "/" + t
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// bar draws v (0..1) as a bar of width cells in eighths.
func bar(v float64, width int) string {
	if width <= 0 {
		return ""
	}
	if math.IsNaN(v) {
		return strings.Repeat(" ", width)
	}
	v = min(max(v, 0), 1)
	eighths := int(math.Round(v * float64(width*8)))
	full := eighths / 8
	var b strings.Builder
	b.WriteString(strings.Repeat("█", full))
	if rem := eighths % 8; rem > 0 {
		b.WriteRune([]rune(" ▏▎▍▌▋▊▉")[rem])
		full++
	}
	b.WriteString(strings.Repeat(" ", width-full))
	return b.String()
}

// sparkline draws values (0..1) as one cell each, the last width of them.
func sparkline(values []float64, width int) string {
	if len(values) > width {
		values = values[len(values)-width:]
	}
	levels := []rune("▁▂▃▄▅▆▇█")
	var b strings.Builder
	for _, v := range values {
		if math.IsNaN(v) {
			b.WriteByte(' ')
			continue
		}
		i := int(math.Round(min(max(v, 0), 1) * float64(len(levels)-1)))
		b.WriteRune(levels[i])
	}
	return b.String()
}
