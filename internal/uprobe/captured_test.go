package uprobe

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/procfs"
	"github.com/xpuscope/xpuscope/internal/testutil"
)

// tempFile returns a new file's opener, and counts its opens.
func tempFile(t *testing.T, opens *int) func() (*os.File, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(path, []byte("contents"), 0o644))
	return func() (*os.File, error) {
		*opens++
		return os.Open(path)
	}
}

func TestCapturedMappings(t *testing.T) {
	c := newCaptured()
	defer c.close()
	var opens int
	open := tempFile(t, &opens)
	a := procfs.Mapping{Start: 0x3000, End: 0x4000, Dev: 1, Inode: 10, Perms: procfs.PermRead | procfs.PermExec}
	b := procfs.Mapping{Start: 0x1000, End: 0x2000, Dev: 1, Inode: 11, Perms: procfs.PermRead | procfs.PermExec}
	c.add(7, a, "", false, open)
	c.add(7, b, "train", false, open)
	c.add(8, a, "", false, open)
	ms, ok := c.mappings(7)
	require.True(t, ok)
	assert.Equal(t, procfs.Maps{b, a}, ms, "sorted by start")
	exe, ok := c.executable(7)
	assert.True(t, ok)
	assert.Equal(t, "train", exe)
	_, ok = c.executable(8)
	assert.False(t, ok, "no executable's mapping captured")
	assert.Equal(t, 2, opens, "one open per file, however many processes map it")

	f, err := c.open(a)
	require.NoError(t, err)
	got, err := io.ReadAll(f)
	require.NoError(t, err)
	assert.Equal(t, "contents", string(got))
	require.NoError(t, f.Close())
	f, err = c.open(a)
	require.NoError(t, err, "the file is held, not handed over")
	f.Close()

	// A new address space (an exec) starts the process over.
	c.add(7, a, "", true, open)
	ms, _ = c.mappings(7)
	assert.Equal(t, procfs.Maps{a}, ms)
	_, ok = c.executable(7)
	assert.False(t, ok)
	_, err = c.open(b)
	require.Error(t, err, "the file only the old address space mapped is closed")

	// Gone at two sweeps in a row: forgotten, and its files closed.
	alive := map[int]bool{7: true}
	c.retire(func(pid int) bool { return alive[pid] })
	_, ok = c.mappings(8)
	assert.True(t, ok, "kept a sweep after it was found gone")
	c.retire(func(pid int) bool { return alive[pid] })
	_, ok = c.mappings(8)
	assert.False(t, ok)
	_, err = c.open(a)
	require.NoError(t, err, "7 still holds it")
	delete(alive, 7)
	c.retire(func(pid int) bool { return alive[pid] })
	c.retire(func(pid int) bool { return alive[pid] })
	_, err = c.open(a)
	require.Error(t, err)
	assert.Empty(t, c.files)
}

func TestCapturedIsBounded(t *testing.T) {
	c := newCaptured()
	defer c.close()
	var opens int
	open := tempFile(t, &opens)
	for pid := range maxCapturedProcs + 10 {
		c.add(pid, procfs.Mapping{Start: 0x1000, End: 0x2000, Dev: 1, Inode: 10}, "", false, open)
	}
	assert.Len(t, c.procs, maxCapturedProcs)
	for i := range maxCapturedMappings + 10 {
		c.add(1, procfs.Mapping{Start: uint64(i+2) << 12, End: uint64(i+3) << 12, Dev: 2, Inode: uint64(i)}, "", false, func() (*os.File, error) {
			return nil, os.ErrNotExist
		})
	}
	ms, _ := c.mappings(1)
	assert.Len(t, ms, maxCapturedMappings)
	assert.Len(t, c.files, 1, "a file that could not be opened is not held")
}

// anchorProgSrc defines the anchor itself, and exits once stdin closes.
const anchorProgSrc = `
#include <stdio.h>
int xpu_captured_anchor(void) { return 1; }
int main(void) {
	puts("READY");
	fflush(stdout);
	while (getchar() != EOF) {}
	return xpu_captured_anchor() - 1;
}
`

// TestCapturedAfterExit: the executable mappings of a process that maps a
// traced file are captured as it starts, and stay known, with its
// executable's name and its files, after it exited.
func TestCapturedAfterExit(t *testing.T) {
	testutil.Native(t, "the kernel's BPF and uprobes")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "attaching uprobes needs root")
	}
	exe := buildELF(t, anchorProgSrc, "-O0")
	hits, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	require.NoError(t, err)
	defer hits.Close()
	tr, err := New(Config{Rescan: time.Hour, Capture: true, Hold: true, Targets: []Target{{Name: "captured", Anchor: "xpu_captured_anchor",
		Probes: []Probe{{Symbol: "xpu_captured_anchor", Entry: hitCounter(t, hits, 0, ebpf.AttachNone)}}}}})
	require.NoError(t, err)
	defer tr.Close()
	attached := func() bool { a, _ := tr.Status(); return len(a) == 1 }

	start := func() (pid int, stop func()) {
		cmd := exec.Command(exe)
		in, err := cmd.StdinPipe()
		require.NoError(t, err)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		require.True(t, bufio.NewScanner(out).Scan())
		return cmd.Process.Pid, func() { in.Close(); require.NoError(t, cmd.Wait()) }
	}
	// The first process shows the executable to the Tracer, which
	// probes it: it is traced from the next exec on.
	_, stop := start()
	require.Eventually(t, attached, 10*time.Second, 10*time.Millisecond, "not attached: %+v", tr.Attachments())
	stop()

	pid, stop := start()
	stop()
	tr.Sync()
	ms, ok := tr.Mappings(pid)
	require.True(t, ok, "nothing captured of pid %d", pid)
	ino := inodeOf(t, exe)
	i := slices.IndexFunc(ms, func(m procfs.Mapping) bool { return m.Perms&procfs.PermExec != 0 && m.Inode == ino })
	require.GreaterOrEqual(t, i, 0, "the executable's mapping: %+v", ms)
	name, ok := tr.Executable(pid)
	require.True(t, ok)
	require.Equal(t, filepath.Base(exe), name)
	f, err := tr.OpenMapped(ms[i])
	require.NoError(t, err, "the executable, after its process exited")
	f.Close()
}

// inodeOf returns the inode number of the file at path.
func inodeOf(t *testing.T, path string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(path, &st))
	return st.Ino
}
