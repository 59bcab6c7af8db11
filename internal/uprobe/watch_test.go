package uprobe

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/procfs"
)

// rawRecord lays r out as struct watch_event.
func rawRecord(r record) []byte {
	b := make([]byte, recordSize)
	le := binary.LittleEndian
	le.PutUint32(b[0:], uint32(r.pid))
	le.PutUint32(b[4:], uint32(r.what))
	le.PutUint32(b[8:], uint32(r.flags))
	le.PutUint32(b[12:], uint32(r.reason))
	le.PutUint64(b[16:], r.file.Ino)
	le.PutUint32(b[24:], r.file.Dev)
	le.PutUint32(b[28:], r.file.Gen)
	le.PutUint64(b[32:], r.start)
	le.PutUint64(b[40:], r.end)
	le.PutUint64(b[48:], r.pgoff)
	le.PutUint64(b[56:], r.ktime)
	copy(b[64:], r.name)
	return b
}

func TestRecordLayout(t *testing.T) {
	require.Equal(t, recordSize, binary.Size(watchWatchEvent{}), "struct watch_event")
}

func TestDecodeRecord(t *testing.T) {
	file := record{pid: 4242, what: watchWatchWhatWATCH_FILE, flags: watchWatchFlagFLAG_EXE | watchWatchFlagFLAG_HELD,
		reason: watchWatchReasonREASON_TERMINAL, file: watchFileKey{Ino: 1312, Dev: 253<<20 | 1, Gen: 7},
		start: 0x7f0000001000, end: 0x7f0000005000, pgoff: 2, ktime: 99, name: "libcudart.so.12"}
	long := file
	long.name = "a-base-name-of-32-bytes-exactly!"
	for _, tc := range []struct {
		name string
		raw  []byte
		want record
	}{
		{"file", rawRecord(file), file},
		{"a name that fills its field", rawRecord(long), long},
		{"longer", append(rawRecord(file), 1, 2, 3), file},
		{"hold", rawRecord(record{pid: 7, what: watchWatchWhatWATCH_HOLD, start: 3}), record{pid: 7, what: watchWatchWhatWATCH_HOLD, start: 3}},
	} {
		got, err := decodeRecord(tc.raw)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}
	_, err := decodeRecord(make([]byte, recordSize-1))
	assert.ErrorContains(t, err, "of 95 bytes, want 96", "a short record")
	_, err = decodeRecord(rawRecord(record{what: 0}))
	assert.ErrorContains(t, err, "unknown kind 0")
	_, err = decodeRecord(rawRecord(record{what: watchWatchWhatWATCH_MARK + 1}))
	assert.ErrorContains(t, err, "unknown kind 6")
}

// A record's mapping is the line /proc/<pid>/maps has for it.
func TestRecordMapping(t *testing.T) {
	r := record{file: watchFileKey{Ino: 1312, Dev: 0xfd<<20 | 0x101}, start: 0x1000, end: 0x3000, pgoff: 5}
	m := r.mapping()
	want, err := procfs.ParseMaps(strings.NewReader("0000000000001000-0000000000003000 r-xp 00005000 fd:101 1312 /x\n"))
	require.NoError(t, err)
	want[0].Path = ""
	assert.Equal(t, want[0], m)
	assert.Equal(t, unix.Mkdev(0xfd, 0x101), m.Dev)
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(rawRecord(record{pid: 1, what: watchWatchWhatWATCH_FILE, name: "ld-linux-x86-64.so.2"}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := decodeRecord(raw)
		if err != nil {
			return
		}
		assert.Equal(t, int(binary.LittleEndian.Uint32(raw)), r.pid)
		assert.LessOrEqual(t, len(r.name), 32)
		assert.NotContains(t, r.name, "\x00")
	})
}

// A pattern matches the way the watcher's match does: the name's words,
// masked, equal the prefix's.
func TestPattern(t *testing.T) {
	matches := func(p watchPattern, name string) bool {
		var b [24]byte
		copy(b[:], name)
		for i := range p.Word {
			if binary.LittleEndian.Uint64(b[8*i:])&p.Mask[i] != p.Word[i] {
				return false
			}
		}
		return true
	}
	p, err := pattern("libcudart.so", true)
	require.NoError(t, err)
	assert.Equal(t, uint32(12), p.Len)
	assert.Equal(t, uint32(1), p.Hold)
	for name, want := range map[string]bool{
		"libcudart.so": true, "libcudart.so.12": true, "libcudart.so.11.8.89": true,
		"libcuda.so.1": false, "libcudart": false, "xlibcudart.so": false, "": false,
	} {
		assert.Equal(t, want, matches(p, name), name)
	}
	p, err = pattern("ld-", false)
	require.NoError(t, err)
	assert.Equal(t, uint32(0), p.Hold)
	assert.True(t, matches(p, "ld-linux-x86-64.so.2"))
	assert.False(t, matches(p, "ldconfig"))
	_, err = pattern("", true)
	assert.ErrorContains(t, err, "want 1 to 24 bytes")
	_, err = pattern(strings.Repeat("x", 25), true)
	assert.ErrorContains(t, err, "want 1 to 24 bytes")
}

// How a file was noticed decides whether attaching to it is late, and
// why.
func TestNoticeOf(t *testing.T) {
	held, expired := &hold{}, &hold{}
	expired.expired.Store(true)
	file := record{what: watchWatchWhatWATCH_FILE}
	matched := file
	matched.flags = watchWatchFlagFLAG_MATCHED
	for _, tc := range []struct {
		name   string
		r      record
		hd     *hold
		reason watchWatchReason
		want   string
	}{
		{"held", matched, held, watchWatchReasonREASON_NONE, ""},
		{"held past the limit", matched, expired, watchWatchReasonREASON_NONE, lateTimeout},
		{"named like no target", file, nil, watchWatchReasonREASON_OFF, lateUnmatched},
		{"holds are off", matched, nil, watchWatchReasonREASON_OFF, lateNotHeld},
		{"ptrace", matched, nil, watchWatchReasonREASON_TRACED, lateTraced},
		{"terminal", matched, nil, watchWatchReasonREASON_TERMINAL, lateTerminal},
		{"stopped", matched, nil, watchWatchReasonREASON_STOPPED, lateStopped},
		{"agent", matched, nil, watchWatchReasonREASON_AGENT, lateAgent},
		{"full", file, nil, watchWatchReasonREASON_FULL, lateFull},
	} {
		tc.r.reason = tc.reason
		assert.Equal(t, notice{late: tc.want}, noticeOf(tc.r, tc.hd), tc.name)
	}
}
