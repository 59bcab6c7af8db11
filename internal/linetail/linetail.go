// Package linetail reads the lines a growing file gains, a bounded piece
// at a time, from where it last stopped: what the NCCL Inspector appends
// to its dump, what MLflow's file store appends to a metric's file, what
// Lightning's CSVLogger appends to its metrics.csv. A last line without
// its newline is left for a later read, when its end has been written; a
// line longer than the buffer is skipped whole, and counted.
package linetail

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Tail reads the lines a growing file gains. A file can grow for as long
// as the job writing it runs (hundreds of MB for the Inspector's dump of a
// long one), so each Read takes a bounded piece, and what is read is only
// ever a line at a time. A Tail is not safe for use by several
// goroutines.
type Tail struct {
	r   io.ReaderAt
	off int64 // where the next read starts: past the last whole line handed out, or in a skipped one
	buf []byte
	// skipping is set while the line at off is longer than the buffer:
	// it is skipped up to its end.
	skipping bool
}

// New reads r from offset off, through buf: lines of up to len(buf)-1
// bytes are read, longer ones skipped. Tails read one after the other
// may share a buffer.
func New(r io.ReaderAt, off int64, buf []byte) *Tail {
	return &Tail{r: r, off: off, buf: buf}
}

// Offset is where the next Read starts.
func (t *Tail) Offset() int64 { return t.off }

// Rewind makes the next Read start from the file's start: for a file
// rewritten in place (Lightning's CSVLogger rewrites its file when a
// column is added).
func (t *Tail) Rewind() { t.off, t.skipping = 0, false }

// Read reads at most max bytes past what was read before, from a file of
// size bytes (a size below what was read means the file was cut or
// replaced: it is read again from its start), and calls line with each
// whole line, without its newline; a line's bytes are valid only during
// the call. A line longer than len(buf)-1 is skipped, counted in skipped. A
// last line without its newline is left for a later Read, when its end
// has been written.
func (t *Tail) Read(size int64, max int, line func([]byte)) (lines, skipped int, err error) {
	if size < t.off {
		t.off, t.skipping = 0, false
	}
	for read := 0; read < max && t.off < size; {
		n := int(min(int64(len(t.buf)), size-t.off, int64(max-read)))
		got, err := t.r.ReadAt(t.buf[:n], t.off)
		if got == 0 {
			if err == nil || errors.Is(err, io.EOF) {
				return lines, skipped, nil // shorter than size says: later
			}
			return lines, skipped, fmt.Errorf("linetail: read at %d: %w", t.off, err)
		}
		read += got
		b := t.buf[:got]
		used := 0
		for {
			i := bytes.IndexByte(b[used:], '\n')
			if i < 0 {
				break
			}
			if t.skipping {
				t.skipping = false
			} else {
				line(b[used : used+i])
				lines++
			}
			used += i + 1
		}
		switch {
		case used > 0:
			t.off += int64(used)
		case got == len(t.buf) || t.skipping:
			// No newline in a whole buffer: a line too long to keep.
			if !t.skipping {
				skipped++
			}
			t.skipping = true
			t.off += int64(got)
		default:
			return lines, skipped, nil // a line not ended yet
		}
	}
	return lines, skipped, nil
}
