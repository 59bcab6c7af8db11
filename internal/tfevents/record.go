package tfevents

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
)

// The TFRecord framing of one record, as record_writer.cc writes it:
//
//	uint64 length              (little-endian)
//	uint32 masked CRC-32C of the 8 bytes of length
//	byte   data[length]
//	uint32 masked CRC-32C of data
const (
	headerLen = 12
	footerLen = 4
	// Overhead is the framing around one record's data: its header and
	// footer.
	Overhead = headerLen + footerLen
	// maskDelta is what a CRC is added to once rotated (crc32c::Mask).
	maskDelta = 0xa282ead8
	// maxLength is past any length a writer writes; a length over it is
	// taken for a corrupt header, whatever its checksum says.
	maxLength = math.MaxInt64 / 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// MaskedCRC returns the checksum TFRecord stores for b: its CRC-32C
// (Castagnoli), rotated right by 15 bits and added to 0xa282ead8.
func MaskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return (c>>15 | c<<17) + maskDelta
}

// Counts are what one Reader.Read found.
type Counts struct {
	// Records is the records handed out, their checksums right.
	Records int
	// BadCRC is the records whose data did not match their checksum:
	// skipped.
	BadCRC int
	// Corrupt is the stretches where no header was found whose length
	// matched its checksum: skipped, up to the next one that did.
	Corrupt int
	// TooLarge is the records longer than the read buffer (an image, a
	// graph, a histogram of a large tensor, never a scalar): skipped
	// unread once their end was written.
	TooLarge int
	// Restarted says the file was shorter than where the reader had
	// stopped (cut, or replaced by another): it was read again from its
	// start.
	Restarted bool
	// Pending says the bytes after the reader's offset are the start of
	// a record not written whole yet (a torn tail), waited for.
	Pending bool
}

// Reader takes the records off a TFRecord file that is being written: it
// remembers where it stopped, and each Read goes on from there, to the
// end of the records written whole. A Reader is not safe for use by
// several goroutines.
type Reader struct {
	r   io.ReaderAt
	off int64
	// resyncing is set while the bytes at off are not a good header:
	// the stretch is counted once.
	resyncing bool
}

// NewReader reads r from offset off, the start of a record.
func NewReader(r io.ReaderAt, off int64) *Reader { return &Reader{r: r, off: off} }

// Offset is where the next Read starts: past the last record handed out
// or skipped.
func (rd *Reader) Offset() int64 { return rd.off }

// Read reads the records of a file of size bytes that lie whole past
// where the Reader stopped, at most limit bytes of them (a record that
// starts within limit is read whole), and calls fn with each one's data,
// valid only during the call. It reads through buf, whose length less
// Overhead is the longest record read; a longer one is skipped unread.
// It allocates nothing.
//
// A record whose end is not written yet is left for a later Read
// (Counts.Pending). A record whose data does not match its checksum is
// skipped; a header whose length does not match its checksum makes the
// Reader look for the next header that does, one byte at a time; both
// are counted, neither stops the Read. An error is a read of r that
// failed.
func (rd *Reader) Read(buf []byte, size, limit int64, fn func(data []byte)) (Counts, error) {
	var c Counts
	if len(buf) < Overhead+1 {
		return c, fmt.Errorf("tfevents: a read buffer of %d bytes holds no record", len(buf))
	}
	if size < rd.off {
		rd.off, rd.resyncing, c.Restarted = 0, false, true
	}
	maxData := uint64(len(buf) - Overhead)
	stop := rd.off + limit
	if limit < 0 || stop < rd.off {
		stop = math.MaxInt64
	}
	for rd.off < size && rd.off < stop {
		n := int(min(int64(len(buf)), size-rd.off))
		got, err := rd.r.ReadAt(buf[:n], rd.off)
		if got < n && err != nil && !errors.Is(err, io.EOF) {
			return c, fmt.Errorf("tfevents: read at %d: %w", rd.off, err)
		}
		if got == 0 {
			return c, nil // shorter than size said: later
		}
		b := buf[:got]
		i := 0
	records:
		for len(b)-i >= headerLen {
			length := binary.LittleEndian.Uint64(b[i:])
			if length > maxLength || MaskedCRC(b[i:i+8]) != binary.LittleEndian.Uint32(b[i+8:]) {
				if !rd.resyncing {
					c.Corrupt++
					rd.resyncing = true
				}
				j := nextHeader(b, i+1)
				if j < 0 {
					// Keep what may be the start of a header.
					i = max(i+1, len(b)-headerLen+1)
					break records
				}
				i = j
				continue
			}
			rd.resyncing = false
			total := int64(Overhead) + int64(length)
			end := rd.off + int64(i) + total
			if length > maxData {
				if end > size {
					c.Pending = true
					rd.off += int64(i)
					return c, nil
				}
				c.TooLarge++
				rd.off = end
				i = 0
				b = nil
				break records
			}
			if int64(len(b)-i) < total {
				if end > size {
					c.Pending = true
					rd.off += int64(i)
					return c, nil
				}
				break records // whole in the file: read again from its start
			}
			data := b[i+headerLen : i+headerLen+int(length)]
			if MaskedCRC(data) != binary.LittleEndian.Uint32(b[i+headerLen+int(length):]) {
				c.BadCRC++
			} else {
				c.Records++
				fn(data)
			}
			i += int(total)
		}
		if b == nil {
			continue // skipped a record too large: off is past it
		}
		if i == 0 {
			c.Pending = !rd.resyncing
			return c, nil // the start of a header, not written whole
		}
		rd.off += int64(i)
	}
	return c, nil
}

// nextHeader returns the first index from i of b at which a header lies
// whose length matches its checksum, or -1.
func nextHeader(b []byte, i int) int {
	for ; i+headerLen <= len(b); i++ {
		if binary.LittleEndian.Uint64(b[i:]) <= maxLength && MaskedCRC(b[i:i+8]) == binary.LittleEndian.Uint32(b[i+8:]) {
			return i
		}
	}
	return -1
}

// AppendRecord appends data to b framed as a TFRecord. The tests' files
// are written by a writer of their own; this is for tools and examples.
func AppendRecord(b, data []byte) []byte {
	var h [headerLen]byte
	binary.LittleEndian.PutUint64(h[:], uint64(len(data)))
	binary.LittleEndian.PutUint32(h[8:], MaskedCRC(h[:8]))
	b = append(b, h[:]...)
	b = append(b, data...)
	return binary.LittleEndian.AppendUint32(b, MaskedCRC(data))
}
