package ncclinspector

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/procfs"
	"github.com/xpuscope/xpuscope/internal/testutil"
)

// fakeProc makes a procfs directory of one process whose root and working
// directory are directories of the test (links, as /proc/<pid>/root and
// cwd are), and returns it with the root.
func fakeProc(t *testing.T) (procDir, root string) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "rootfs")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "work"), 0o755))
	procDir = filepath.Join(base, "proc", "4242")
	require.NoError(t, os.MkdirAll(procDir, 0o755))
	require.NoError(t, os.Symlink(root, filepath.Join(procDir, "root")))
	require.NoError(t, os.Symlink(filepath.Join(root, "work"), filepath.Join(procDir, "cwd")))
	return procDir, root
}

// proc is the process of a procfs directory fakeProc made.
func proc(procDir string) procfs.Proc {
	pid, _ := strconv.Atoi(filepath.Base(procDir))
	return procfs.FS{Root: filepath.Dir(procDir)}.Proc(pid)
}

func write(t *testing.T, path, s string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(s), 0o644))
}

func read(t *testing.T, files []*os.File) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range files {
		b, err := io.ReadAll(f)
		require.NoError(t, err)
		out[f.Name()] = string(b)
		f.Close()
	}
	return out
}

func TestOpenDumps(t *testing.T) {
	testutil.Native(t, "openat2(2), which QEMU 7.2's user mode lacks")
	procDir, root := fakeProc(t)
	// Absolute: in the process's root. The host name is the pod's, not
	// known: the files are those of the pid (two here: a directory
	// shared by two nodes).
	write(t, filepath.Join(root, "logs/job/node-a-pid7.log"), "a\n")
	write(t, filepath.Join(root, "logs/job/node-b-pid7.log"), "b\n")
	write(t, filepath.Join(root, "logs/job/trainer-0-pid17.log"), "not this\n")
	write(t, filepath.Join(root, "logs/job/trainer-0-pid7.log.gz"), "nor this\n")
	write(t, filepath.Join(root, "logs/job/-pid7.log"), "nor this\n")
	_, err := OpenDumps(proc(procDir), "/logs/job", 1)
	assert.True(t, errors.Is(err, ErrNoDump), "%v", err)
	files, err := OpenDumps(proc(procDir), "/logs/job/", 7)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"/logs/job/node-a-pid7.log": "a\n", "/logs/job/node-b-pid7.log": "b\n"}, read(t, files))

	// Relative: in its working directory.
	write(t, filepath.Join(root, "work/nccl-inspector-unknown-jobid/node1-pid7.log"), "here\n")
	files, err = OpenDumps(proc(procDir), "nccl-inspector-unknown-jobid", 7)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"nccl-inspector-unknown-jobid/node1-pid7.log": "here\n"}, read(t, files))

	_, err = OpenDumps(proc(procDir), "nccl-inspector-42", 7)
	assert.True(t, errors.Is(err, ErrNoDump), "no directory yet: %v", err)

	// Bounded: MaxDumps of one pid at most.
	for i := range MaxDumps + 3 {
		write(t, filepath.Join(root, "many", strconv.Itoa(i)+"-pid9.log"), "x\n")
	}
	files, err = OpenDumps(proc(procDir), "/many", 9)
	require.NoError(t, err)
	assert.Len(t, read(t, files), MaxDumps)
}

// TestOpenDumpsStaysInside: the variables are the workload's; what they
// name never leads out of its root (or working directory), and the file
// is never a link or other than a regular file.
func TestOpenDumpsStaysInside(t *testing.T) {
	testutil.Native(t, "openat2(2), which QEMU 7.2's user mode lacks")
	procDir, root := fakeProc(t)
	outside := filepath.Join(filepath.Dir(filepath.Dir(procDir)), "outside")
	write(t, filepath.Join(outside, "host-pid7.log"), "the host's\n")

	// ".." climbing out of the root resolves in it (RESOLVE_IN_ROOT): to
	// the root's own /outside, which has no dump.
	_, err := OpenDumps(proc(procDir), "/../../outside", 7)
	assert.Error(t, err)
	// A relative directory may not leave the working directory.
	_, err = OpenDumps(proc(procDir), "../../outside", 7)
	assert.Error(t, err)
	// A link in the root to a host path resolves in the root.
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "escape")))
	_, err = OpenDumps(proc(procDir), "/escape", 7)
	assert.Error(t, err)
	// The file itself a link: not followed.
	require.NoError(t, os.MkdirAll(filepath.Join(root, "logs"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(outside, "host-pid7.log"), filepath.Join(root, "logs", "x-pid7.log")))
	_, err = OpenDumps(proc(procDir), "/logs", 7)
	assert.Error(t, err)
	// A directory of that name: not a regular file.
	require.NoError(t, os.MkdirAll(filepath.Join(root, "logs2", "x-pid7.log"), 0o755))
	_, err = OpenDumps(proc(procDir), "/logs2", 7)
	assert.Error(t, err)
}
