package perfevent_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/perfevent"
	"github.com/xpuscope/xpuscope/internal/testutil"
)

// openDummy opens the software PMU's dummy event on this process with the
// sideband bits of a trace, or skips (fails in CI) without the privilege.
func openDummy(t *testing.T) int {
	t.Helper()
	testutil.Native(t, "the kernel's perf_event_open, which QEMU's user mode lacks")
	fd, err := perfevent.OpenTrace(perfevent.TraceAttr{Type: unix.PERF_TYPE_SOFTWARE, Configs: perfevent.Configs{unix.PERF_COUNT_SW_DUMMY}, PID: 0, CPU: -1})
	var oe *perfevent.OpenError
	if errors.As(err, &oe) && (oe.Errno == unix.EACCES || oe.Errno == unix.EPERM) {
		testutil.SkipOrFail(t, "opening a perf event on this process was refused: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Close(fd) })
	return fd
}

// TestAUXRefused: a software event has no AUX area; mapping one fails
// with EOPNOTSUPP (the kernel's rb_alloc_aux: !has_aux(event)), and the
// ring mapped before it is unmapped again, so that the data ring alone
// maps afterwards.
func TestAUXRefused(t *testing.T) {
	fd := openDummy(t)
	_, err := perfevent.MapRing(fd, 1, 4, false)
	require.Error(t, err)
	assert.ErrorIs(t, err, unix.EOPNOTSUPP)
	assert.Contains(t, err.Error(), "mmap the AUX area")
	_, err = perfevent.MapRing(fd, 1, 4, true)
	assert.ErrorIs(t, err, unix.EOPNOTSUPP, "read-only (snapshot) too")

	r, err := perfevent.MapRing(fd, 1, 0, false)
	require.NoError(t, err)
	assert.NoError(t, r.Close())
	a, b := r.AUX(0, 10)
	assert.Nil(t, a)
	assert.Nil(t, b)

	_, err = perfevent.MapRing(fd, 3, 0, false)
	assert.ErrorContains(t, err, "power of two")
}

// TestRecords: the kernel's sideband records of this process (an
// executable mapping of a file makes a PERF_RECORD_MMAP2 naming it) come
// out of a one-page ring whole, also those that wrap around its end.
//
// The event counts the thread that opens it (pid 0, cpu -1), so the test
// keeps its goroutine on that thread: a mapping made from another thread
// of the process is no record of this event (under -race and load the
// goroutine moved and 11 of 200 went missing).
func TestRecords(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	fd := openDummy(t)
	r, err := perfevent.MapRing(fd, 1, 0, false)
	require.NoError(t, err)
	defer r.Close()
	require.NoError(t, perfevent.Enable(fd))
	defer perfevent.Disable(fd)

	path := filepath.Join(t.TempDir(), "mapped-by-the-test")
	require.NoError(t, os.WriteFile(path, make([]byte, 4096), 0o755))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()

	const n = 200 // ~ 40 pages of records through a 1-page ring
	seen, lost := 0, 0
	for range n {
		m, err := unix.Mmap(int(f.Fd()), 0, 4096, unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE)
		require.NoError(t, err)
		require.NoError(t, unix.Munmap(m))
		require.NoError(t, r.Records(func(typ uint32, _ uint16, rec []byte) error {
			switch typ {
			case perfevent.RecordMmap2:
				if bytes.Contains(rec, []byte(path)) {
					seen++
				}
			case perfevent.RecordLost:
				l, err := perfevent.ParseLostRecord(rec)
				require.NoError(t, err)
				lost += int(l)
			}
			return nil
		}))
	}
	assert.Equal(t, n, seen+lost, "every mapping is a record, or counted lost")
	assert.Greater(t, seen, n/2)
	tc := r.TimeConv()
	if tc.Valid {
		assert.NotZero(t, tc.Mult)
	}
}

// TestParseAuxRecord: the body of PERF_RECORD_AUX.
func TestParseAuxRecord(t *testing.T) {
	rec := make([]byte, 40)
	rec[8] = 0x10  // offset
	rec[16] = 0x20 // size
	rec[24] = perfevent.AuxFlagTruncated
	a, err := perfevent.ParseAuxRecord(rec)
	require.NoError(t, err)
	assert.Equal(t, perfevent.AuxRecord{Offset: 0x10, Size: 0x20, Flags: perfevent.AuxFlagTruncated}, a)
	_, err = perfevent.ParseAuxRecord(rec[:20])
	assert.Error(t, err)
}
