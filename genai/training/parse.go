package training

import (
	"bytes"
	"math"
	"strconv"
)

// parseMLflowLine reads a line of an MLflow file store's metric file, as
// its FileStore writes it ("%s %s %s\n" of timestamp, value and step) and
// reads it (_get_metric_from_line: two or three fields separated by a
// space, the step 0 when left out): the timestamp in milliseconds since
// the Unix epoch, the value (Python's repr of a float: 0.5, 1e-05, nan,
// inf) and the step. It allocates nothing.
func parseMLflowLine(line []byte) (ts int64, v float64, step int64, ok bool) {
	line = bytes.TrimSpace(line)
	f1, rest, ok1 := bytes.Cut(line, []byte{' '})
	f2, f3, has3 := bytes.Cut(rest, []byte{' '})
	if !ok1 || len(f1) == 0 || len(f2) == 0 || (has3 && (len(f3) == 0 || bytes.IndexByte(f3, ' ') >= 0)) {
		return 0, 0, 0, false
	}
	var err error
	if ts, err = strconv.ParseInt(string(f1), 10, 64); err != nil {
		return 0, 0, 0, false
	}
	if v, err = strconv.ParseFloat(string(f2), 64); err != nil {
		return 0, 0, 0, false
	}
	if has3 {
		if step, err = strconv.ParseInt(string(f3), 10, 64); err != nil {
			return 0, 0, 0, false
		}
	}
	return ts, v, step, true
}

// maxCSVFields bounds the columns of a CSV read.
const maxCSVFields = 1024

// splitCSV calls field with each field of a CSV line (RFC 4180, as
// Python's csv module writes it: a field quoted where it holds a comma, a
// quote or white space, a quote doubled inside), unquoted through
// scratch, and reports whether the line was well formed. A field's bytes
// are valid only during the call. At most maxCSVFields fields are taken.
func splitCSV(line, scratch []byte, field func(i int, b []byte)) (n int, ok bool) {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	for i := 0; ; i++ {
		if i == maxCSVFields {
			return i, false
		}
		if len(line) > 0 && line[0] == '"' {
			out := scratch[:0]
			j := 1
			for {
				k := bytes.IndexByte(line[j:], '"')
				if k < 0 {
					return i, false // unterminated
				}
				out = append(out, line[j:j+k]...)
				j += k + 1
				if j < len(line) && line[j] == '"' {
					out = append(out, '"')
					j++
					continue
				}
				break
			}
			field(i, out)
			line = line[j:]
			if len(line) == 0 {
				return i + 1, true
			}
			if line[0] != ',' {
				return i + 1, false
			}
			line = line[1:]
			continue
		}
		k := bytes.IndexByte(line, ',')
		if k < 0 {
			field(i, line)
			return i + 1, true
		}
		field(i, line[:k])
		line = line[k+1:]
	}
}

// parseNumber reads a CSV cell as Python writes a number (an int, a
// float's repr, nan, inf).
func parseNumber(b []byte) (float64, bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(b), 64)
	return v, err == nil
}

// stepOf reads a step column's cell: an integer, or a float that is one
// (a column pandas wrote as 199.0).
func stepOf(b []byte) (int64, bool) {
	v, ok := parseNumber(b)
	if !ok || v != math.Trunc(v) || v < 0 || v > 1<<62 {
		return 0, false
	}
	return int64(v), true
}
