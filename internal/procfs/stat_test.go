package procfs

import (
	"os"
	"strconv"
	"strings"
	"testing"

	prometheus "github.com/prometheus/procfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/procfs/procfstest"
	"github.com/xpuscope/xpuscope/internal/testutil"
)

// The start time parser reads this very process's stat as awk would.
func TestStartTimeOfThisProcess(t *testing.T) {
	testutil.Native(t, "the kernel's own /proc/self/stat, which QEMU rewrites")
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		testutil.SkipOrFail(t, "no procfs: %v", err)
	}
	got, ok := parseStartTime(b)
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	want, err := strconv.ParseUint(fields[19], 10, 64)
	require.True(t, ok, "start time %d %v", got, ok)
	require.NoError(t, err, "field 22 as awk reads it")
	require.Equal(t, want, got, "start time")
	h, err := FS{Root: DefaultRoot}.Open()
	require.NoError(t, err)
	defer h.Close()
	st, err := h.StartTime(os.Getpid())
	require.NoError(t, err, "StartTime")
	require.Equal(t, want, st, "StartTime")
	_, err = h.StartTime(1 << 30)
	require.ErrorContains(t, err, "/proc/1073741824/stat", "missing pid")
}

func TestParseStartTime(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{procfstest.Stat(1, "init", 7), 7, true},
		{procfstest.Stat(1, "a) (b", 7), 7, true},
		{procfstest.Stat(1, "", 0), 0, true},
		{"1 (x) S 1 2 3", 0, false},
		{"1 x S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20", 0, false},
		{"1 (x) S 1 1 1 0 -1 4 1 0 0 0 1 2 0 0 20 0 1 0 99999999999999999999999 1", 0, false},
		{"1 (x) S 1 1 1 0 -1 4 1 0 0 0 1 2 0 0 20 0 1 0 12x 1", 0, false},
		{"1 (x) S 1 1 1 0 -1 4 1 0 0 0 1 2 0 0 20 0 1 0  1", 0, false},
		{"1 (x) S 1 1 1 0 -1 4 1 0 0 0 1 2 0 0 20 0 1 0 18446744073709551615", 18446744073709551615, true},
	} {
		got, ok := parseStartTime([]byte(tc.in))
		assert.Equal(t, tc.want, got, "%q", tc.in)
		assert.Equal(t, tc.ok, ok, "%q ok", tc.in)
	}
}

// A closed Handle reads nothing, and closes once.
func TestHandleClose(t *testing.T) {
	root := procfstest.New(t, procfstest.Process{PID: 42, Stat: procfstest.Stat(42, "worker", 7)})
	h, err := FS{Root: root}.Open()
	require.NoError(t, err)
	st, err := h.StartTime(42)
	require.NoError(t, err)
	assert.Equal(t, uint64(7), st)
	require.NoError(t, h.Close())
	require.NoError(t, h.Close())
	_, err = h.StartTime(42)
	assert.ErrorIs(t, err, errClosed)

	procfstest.Write(t, root, procfstest.Process{PID: 43, Stat: "43 (x) S 1\n"})
	h, err = FS{Root: root}.Open()
	require.NoError(t, err)
	defer h.Close()
	_, err = h.StartTime(43)
	assert.ErrorContains(t, err, root+"/43/stat: no start time in field 22")

	_, err = FS{Root: root + "/none"}.Open()
	assert.ErrorContains(t, err, root+"/none")
}

func FuzzParseStartTime(f *testing.F) {
	f.Add([]byte(procfstest.Stat(1, "a) (b", 7)))
	f.Add([]byte("1 (x) S 1 1 1 0 -1 4 1 0 0 0 1 2 0 0 20 0 1 0 18446744073709551615"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, ok := parseStartTime(b)
		if !ok && st != 0 {
			require.Zero(t, st, "no start time, yet %d", st)
		}
		if ok && !strings.Contains(string(b), strconv.FormatUint(st, 10)) {
			require.Contains(t, string(b), strconv.FormatUint(st, 10), "start time %d is not in the input", st)
		}
	})
}

// BenchmarkStartTime is the read a podjoin cache makes on every lookup, on
// a fixture file and on the real procfs, against prometheus/procfs's
// Proc.Stat, which parses every field with fmt.Fscan.
func BenchmarkStartTime(b *testing.B) {
	fixture := procfstest.New(b, procfstest.Process{PID: 42, Stat: procfstest.Stat(42, "worker", 7)})
	for _, tc := range []struct {
		name, root string
		pid        int
	}{{"fixture", fixture, 42}, {"procfs", DefaultRoot, os.Getpid()}} {
		b.Run(tc.name, func(b *testing.B) {
			h, err := FS{Root: tc.root}.Open()
			require.NoError(b, err)
			defer h.Close()
			procfstest.Versus(b, tc.root, tc.pid,
				func() error { _, err := h.StartTime(tc.pid); return err },
				func(p prometheus.Proc) error { _, err := p.Stat(); return err })
		})
	}
}
