// Package procfstest writes procfs fixture trees for the tests of package
// procfs and of every package that reads procfs through it: a root
// directory under t.TempDir() holding one directory per process, with the
// files and links the test gives (New, Write), or links to processes of
// this host (Host). A Source takes the root as its WithProcRoot.
//
//	root := procfstest.New(t, procfstest.Process{
//		PID: 42, Exe: "/usr/bin/python3.11",
//		Stat:   procfstest.Stat(42, "python3", 7331),
//		Cgroup: "0::/system.slice/train.service\n",
//	})
//	src, err := gpu.New(gpu.WithProcRoot(root))
//
// Versus is the benchmark that a reader of package procfs kept in place of
// github.com/prometheus/procfs's is measured with.
package procfstest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	prometheus "github.com/prometheus/procfs"
	"github.com/stretchr/testify/require"
)

// Process is one process of a fixture tree. A field left empty writes no
// file, so that a test can leave out what a process would not let it
// read.
type Process struct {
	PID int
	// Exe is the target of the exe link: the executable's path, with
	// " (deleted)" after it for one removed after exec.
	Exe string
	// Comm, Maps, Cgroup and Stat are the contents of the files of those
	// names (the function Stat makes a stat line).
	Comm, Maps, Cgroup, Stat string
	// Environ holds the entries of the environ file, NAME=value, each
	// written with its NUL after it. A nil Environ writes no file; an
	// empty one writes an empty file, as a process that cleared its
	// environment has.
	Environ []string
	// NetNS is the target of the ns/net link, "net:[4026531840]".
	NetNS string
	// Files are more files of the process, by path under its directory
	// ("net/tcp"), with their contents, written after the fields' (an
	// empty one too).
	Files map[string]string
}

// New writes a tree of procs under t.TempDir() and returns its root.
func New(t testing.TB, procs ...Process) string {
	t.Helper()
	root := t.TempDir()
	Write(t, root, procs...)
	return root
}

// Write writes procs into the tree at root, replacing the files and links
// it writes; others stay as they were.
func Write(t testing.TB, root string, procs ...Process) {
	t.Helper()
	for _, p := range procs {
		dir := filepath.Join(root, strconv.Itoa(p.PID))
		require.NoError(t, os.MkdirAll(dir, 0o755))
		for name, content := range map[string]string{"comm": p.Comm, "maps": p.Maps, "cgroup": p.Cgroup, "stat": p.Stat} {
			if content != "" {
				write(t, filepath.Join(dir, name), content)
			}
		}
		for name, content := range p.Files {
			write(t, filepath.Join(dir, filepath.FromSlash(name)), content)
		}
		if p.Environ != nil {
			var b strings.Builder
			for _, e := range p.Environ {
				b.WriteString(e)
				b.WriteByte(0)
			}
			write(t, filepath.Join(dir, "environ"), b.String())
		}
		for name, target := range map[string]string{"exe": p.Exe, "ns/net": p.NetNS} {
			if target != "" {
				link(t, target, filepath.Join(dir, name))
			}
		}
	}
}

// Host returns a root holding only the given processes of this host's
// procfs, each a link to its /proc/<pid>, and the host's stat file (its
// boot time): a Source given it sees those processes alone, as they are.
func Host(t testing.TB, pids ...int) string {
	t.Helper()
	root := t.TempDir()
	link(t, "/proc/stat", filepath.Join(root, "stat"))
	for _, pid := range pids {
		link(t, filepath.Join("/proc", strconv.Itoa(pid)), filepath.Join(root, strconv.Itoa(pid)))
	}
	return root
}

// Versus measures one read of process pid of the procfs at root two
// ways, as the sub-benchmarks "ours" and "prometheus": ours, and theirs
// with the process as github.com/prometheus/procfs gives it, its FS made
// once and the Proc (which checks that the process exists) per read. Each
// reader kept in place of prometheus/procfs's states its ratio from it.
func Versus(b *testing.B, root string, pid int, ours func() error, theirs func(prometheus.Proc) error) {
	b.Run("ours", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := ours(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("prometheus", func(b *testing.B) {
		fs, err := prometheus.NewFS(root)
		require.NoError(b, err)
		b.ReportAllocs()
		for b.Loop() {
			p, err := fs.Proc(pid)
			if err == nil {
				err = theirs(p)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Stat returns the stat line of a sleeping process pid named comm that
// started start clock ticks after boot (field 22).
func Stat(pid int, comm string, start uint64) string {
	return fmt.Sprintf("%d (%s) S 1 %d %d 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 %d 1000000 100 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
		pid, comm, pid, pid, start)
}

func write(t testing.TB, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

// link makes path a symbolic link to target, replacing what is there.
func link(t testing.TB, target, path string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	if err := os.Remove(path); !os.IsNotExist(err) {
		require.NoError(t, err)
	}
	require.NoError(t, os.Symlink(target, path))
}
