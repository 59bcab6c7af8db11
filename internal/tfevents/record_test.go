package tfevents

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil/trainlog"
)

// readBuf is the read buffer of the tests: 64 KiB, the Source's.
const readBuf = 64 << 10

// scalarOf is a decoded scalar, in the manifest's terms.
func scalarOf(ev Event, s Scalar) trainlog.Scalar {
	return trainlog.Scalar{Tag: string(s.Tag), Step: ev.Step, WallTime: ev.WallTime, Value: s.Value, DType: s.DType.String(), Tensor: s.Tensor}
}

// reader reads a file as the Source does: records through a Reader,
// each decoded.
type reader struct {
	t       testing.TB
	f       *os.File
	rd      *Reader
	buf     []byte
	got     []trainlog.Scalar
	counts  Counts // summed
	pending bool   // of the last Read
	records int
}

func newReader(t testing.TB, path string) *reader {
	f, err := os.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return &reader{t: t, f: f, rd: NewReader(f, 0), buf: make([]byte, readBuf)}
}

func (r *reader) read(limit int64) Counts {
	st, err := r.f.Stat()
	require.NoError(r.t, err)
	c, err := r.rd.Read(r.buf, st.Size(), limit, func(data []byte) {
		r.records++
		_, err := DecodeEvent(data, func(ev Event, s Scalar) { r.got = append(r.got, scalarOf(ev, s)) })
		require.NoError(r.t, err)
	})
	require.NoError(r.t, err)
	r.counts.Records += c.Records
	r.counts.BadCRC += c.BadCRC
	r.counts.Corrupt += c.Corrupt
	r.counts.TooLarge += c.TooLarge
	r.pending = c.Pending
	return c
}

// The fixture, written by the tests' own Python writer: every scalar in
// both forms and every dtype comes out as the writer computed it; values
// that are not scalars are passed over; the record with a bad checksum,
// the bytes that are no record and the record too large for the buffer
// are skipped and counted; the torn last record is waited for, and read
// once its end is written.
func TestFixture(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.out.tfevents.1700000000.host.42.0")
	m := trainlog.Fixture(t, path)
	require.Greater(t, len(m.Scalars), 12, "the fixture holds every form")

	r := newReader(t, path)
	r.read(-1)
	assert.Equal(t, m.Scalars, r.got)
	assert.Equal(t, m.Records, r.counts.Records, "records")
	assert.Equal(t, m.BadCRC, r.counts.BadCRC, "bad checksums")
	assert.Equal(t, m.Corrupt, r.counts.Corrupt, "corrupt stretches")
	assert.Equal(t, m.TooLarge, r.counts.TooLarge, "records too large")
	assert.True(t, r.pending, "the torn tail is waited for")
	assert.Less(t, r.rd.Offset(), m.Size, "the torn record is not consumed")

	// Nothing new: nothing read.
	r.got = nil
	r.read(-1)
	assert.Empty(t, r.got, "the torn tail is not misread")

	rest, err := os.ReadFile(path + ".rest")
	require.NoError(t, err)
	appendFile(t, path, rest)
	r.read(-1)
	assert.Equal(t, []trainlog.Scalar{m.Torn}, r.got, "the torn record, once whole")
	assert.False(t, r.pending)
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, st.Size(), r.rd.Offset(), "read to the end")
}

// The same file, written a piece at a time (pieces of every size, cutting
// records, headers and the corrupt stretch anywhere), read after each
// piece: every scalar comes out once, in order, and the counts are the
// whole file's.
func TestFixtureGrowing(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "fixture")
	m := trainlog.Fixture(t, src)
	whole, err := os.ReadFile(src)
	require.NoError(t, err)
	rest, err := os.ReadFile(src + ".rest")
	require.NoError(t, err)
	whole = append(whole, rest...)
	want := append(append([]trainlog.Scalar(nil), m.Scalars...), m.Torn)

	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		path := filepath.Join(dir, "grown")
		require.NoError(t, os.WriteFile(path, nil, 0o644))
		r := newReader(t, path)
		for off := 0; off < len(whole); {
			n := 1 + rng.IntN(1+rng.IntN(300))
			if rng.IntN(20) == 0 {
				n = 1 + rng.IntN(120<<10) // past the large record at once
			}
			n = min(n, len(whole)-off)
			appendFile(t, path, whole[off:off+n])
			off += n
			r.read(-1)
		}
		require.Equal(t, want, r.got, "seed %d", seed)
		assert.Equal(t, m.Records+1, r.counts.Records, "seed %d: records", seed)
		assert.Equal(t, m.BadCRC, r.counts.BadCRC, "seed %d", seed)
		assert.Equal(t, m.Corrupt, r.counts.Corrupt, "seed %d", seed)
		assert.Equal(t, m.TooLarge, r.counts.TooLarge, "seed %d", seed)
		assert.False(t, r.pending, "seed %d", seed)
		assert.Equal(t, int64(len(whole)), r.rd.Offset(), "seed %d", seed)
	}
}

// A file of 100,000 records, written by the Python writer: every one is
// read, whether in one Read or in Reads of at most 256 KiB each.
func TestBigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.out.tfevents.big")
	m := trainlog.Big(t, path, 100_000)
	for _, limit := range []int64{-1, 256 << 10} {
		r := newReader(t, path)
		var last trainlog.Scalar
		reads := 0
		for {
			before := r.rd.Offset()
			r.read(limit)
			reads++
			if r.rd.Offset() == before {
				break
			}
			if limit > 0 {
				assert.LessOrEqual(t, r.rd.Offset()-before, limit+readBuf, "a Read stops near its limit")
			}
		}
		last = r.got[len(r.got)-1]
		assert.Equal(t, m.Records, r.counts.Records, "limit %d", limit)
		assert.Len(t, r.got, m.Records-1, "limit %d", limit)
		assert.Equal(t, m.Last.Step, last.Step)
		assert.Equal(t, m.Last.Value, last.Value)
		assert.Zero(t, r.counts.BadCRC+r.counts.Corrupt+r.counts.TooLarge)
		if limit > 0 {
			assert.Greater(t, reads, 10, "bounded reads")
		}
	}
}

// A file shorter than where the Reader stopped was cut or replaced: it is
// read again from its start.
func TestRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events")
	m := trainlog.Big(t, path, 10)
	r := newReader(t, path)
	r.read(-1)
	require.Equal(t, m.Records, r.counts.Records)
	require.NoError(t, os.Truncate(path, 0))
	m2 := trainlog.Big(t, path, 3)
	r.got = nil
	c := r.read(-1)
	assert.True(t, c.Restarted)
	assert.Equal(t, m2.Records, c.Records)
	assert.Len(t, r.got, 3)
}

// A read buffer too small for any record is refused; one record larger
// than the buffer is skipped only once it is whole.
func TestTooLargeWaitsForItsEnd(t *testing.T) {
	big := AppendRecord(nil, bytes.Repeat([]byte{1}, 200))
	small := AppendRecord(nil, []byte("x"))
	file := &mem{b: append([]byte(nil), big[:100]...)}
	rd := NewReader(file, 0)
	buf := make([]byte, 64)
	_, err := rd.Read(buf[:Overhead], file.size(), -1, nil)
	assert.Error(t, err, "a buffer that holds no record")
	c, err := rd.Read(buf, file.size(), -1, func([]byte) { t.Fatal("no record yet") })
	require.NoError(t, err)
	assert.True(t, c.Pending)
	assert.Zero(t, c.TooLarge)
	assert.Zero(t, rd.Offset())
	file.b = append(append(file.b, big[100:]...), small...)
	var got [][]byte
	c, err = rd.Read(buf, file.size(), -1, func(d []byte) { got = append(got, bytes.Clone(d)) })
	require.NoError(t, err)
	assert.Equal(t, 1, c.TooLarge)
	assert.Equal(t, [][]byte{[]byte("x")}, got)
}

// The checksum is CRC-32C's, masked: TensorFlow's check value of
// "123456789" is 0xE3069283 before the mask.
func TestMaskedCRC(t *testing.T) {
	c := uint32(0xE3069283)
	assert.Equal(t, (c>>15|c<<17)+0xa282ead8, MaskedCRC([]byte("123456789")))
	var h [8]byte
	binary.LittleEndian.PutUint64(h[:], 3)
	rec := AppendRecord(nil, []byte("abc"))
	assert.Equal(t, h[:], rec[:8])
	assert.Equal(t, MaskedCRC(h[:]), binary.LittleEndian.Uint32(rec[8:]))
}

// FuzzReader: whatever the file holds and however it grows, Read never
// panics, never hands out a record longer than its buffer allows nor one
// whose checksum is wrong, never moves past the file's end (but to skip a
// record too large, once whole), and allocates nothing.
func FuzzReader(f *testing.F) {
	f.Add(AppendRecord(AppendRecord(nil, []byte("one")), []byte("two")), uint8(5), uint8(40))
	f.Add(append([]byte("garbage garbage"), AppendRecord(nil, bytes.Repeat([]byte{9}, 100))...), uint8(1), uint8(32))
	f.Add(AppendRecord(nil, nil)[:7], uint8(3), uint8(17))
	f.Fuzz(func(t *testing.T, content []byte, step, bufLen uint8) {
		file := &mem{}
		rd := NewReader(file, 0)
		buf := make([]byte, Overhead+1+int(bufLen))
		for off := 0; off < len(content); {
			n := min(1+int(step), len(content)-off)
			file.b = content[:off+n]
			off += n
			var c Counts
			var err error
			allocs := testing.AllocsPerRun(1, func() {
				c, err = rd.Read(buf, file.size(), int64(step)*4, func(d []byte) {
					if len(d) > len(buf)-Overhead {
						t.Fatalf("a record of %d bytes through a buffer of %d", len(d), len(buf))
					}
					if !bytes.Contains(file.b, d) {
						t.Fatal("a record that is not the file's")
					}
				})
			})
			require.NoError(t, err)
			require.Zero(t, allocs, "allocations in Read")
			require.GreaterOrEqual(t, c.Records+c.BadCRC+c.TooLarge+c.Corrupt, 0)
			require.LessOrEqual(t, rd.Offset(), file.size(), "past the end")
		}
	})
}

// mem is a file in memory.
type mem struct{ b []byte }

func (m *mem) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(m.b)) {
		return 0, nil
	}
	return copy(p, m.b[off:]), nil
}

func (m *mem) size() int64 { return int64(len(m.b)) }

func appendFile(t testing.TB, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write(b)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}
