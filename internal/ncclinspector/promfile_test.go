package ncclinspector

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestOpenPromFiles: the textfiles a process holds open are found through
// its descriptors (the test's own, in /proc/self): each once, however
// many descriptors name it; a removed one, one of another name and one
// that is not a regular file are not.
func TestOpenPromFiles(t *testing.T) {
	dir := t.TempDir()
	hold := func(name string, flag int) *os.File {
		f, err := os.OpenFile(filepath.Join(dir, name), flag, 0o644)
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		return f
	}
	a := "nccl_inspector_metrics_GPU-a.prom"
	hold(a, os.O_CREATE|os.O_WRONLY)
	hold(a, os.O_RDONLY) // the same file, twice
	hold("nccl_inspector_metrics_GPU-b.prom", os.O_CREATE|os.O_WRONLY|os.O_APPEND)
	hold("metrics_GPU-x.prom", os.O_CREATE|os.O_WRONLY)
	hold("nccl_inspector_metrics_GPU-c.prom", os.O_CREATE|os.O_WRONLY)
	require.NoError(t, os.Remove(filepath.Join(dir, "nccl_inspector_metrics_GPU-c.prom")))
	require.NoError(t, unix.Mkfifo(filepath.Join(dir, "nccl_inspector_metrics_fifo.prom"), 0o600))
	hold("nccl_inspector_metrics_fifo.prom", os.O_RDWR)

	files, err := OpenPromFiles("/proc/self")
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f.Name()))
		_, err := f.Write([]byte("x"))
		assert.Error(t, err, "opened for reading only")
		f.Close()
	}
	slices.Sort(names)
	assert.Equal(t, []string{"nccl_inspector_metrics_GPU-a.prom", "nccl_inspector_metrics_GPU-b.prom"}, names)
}

// TestOpenPromFilesNone: a process that holds no textfile has none, as
// ErrNoDump says (a procfs directory of the test's, its fd links to files
// of other names).
func TestOpenPromFilesNone(t *testing.T) {
	proc := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(proc, "fd"), 0o755))
	other := filepath.Join(t.TempDir(), "nccl_inspector_metrics_.prom") // no UUID: not the Inspector's name
	require.NoError(t, os.WriteFile(other, nil, 0o644))
	require.NoError(t, os.Symlink(other, filepath.Join(proc, "fd", "3")))
	require.NoError(t, os.Symlink("socket:[1234]", filepath.Join(proc, "fd", "4")))
	_, err := OpenPromFiles(proc)
	assert.True(t, errors.Is(err, ErrNoDump), "%v", err)
	_, err = OpenPromFiles(filepath.Join(proc, "gone"))
	assert.Error(t, err)
	assert.False(t, errors.Is(err, ErrNoDump), "%v", err)
}

// fakeFile is a file whose content the test changes, even during a read
// (onRead), as the Inspector's rewrite can.
type fakeFile struct {
	data   []byte
	mtime  time.Time
	onRead func(f *fakeFile)
}

func (f *fakeFile) ReadAt(p []byte, off int64) (int, error) {
	if f.onRead != nil {
		f.onRead(f)
		f.onRead = nil
	}
	if off >= int64(len(f.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *fakeFile) Stat() (fs.FileInfo, error) { return fakeInfo{int64(len(f.data)), f.mtime}, nil }

func (f *fakeFile) write(s string) {
	f.data = []byte(s)
	f.mtime = f.mtime.Add(time.Millisecond)
}

type fakeInfo struct {
	size  int64
	mtime time.Time
}

func (i fakeInfo) Name() string       { return "f" }
func (i fakeInfo) Size() int64        { return i.size }
func (i fakeInfo) Mode() fs.FileMode  { return 0o644 }
func (i fakeInfo) ModTime() time.Time { return i.mtime }
func (i fakeInfo) IsDir() bool        { return false }
func (i fakeInfo) Sys() any           { return nil }

func TestSnapshot(t *testing.T) {
	f := &fakeFile{mtime: time.Unix(1000, 0)}
	f.write("one\n")
	s := NewSnapshot(f)
	read := func() (string, bool) {
		t.Helper()
		b, ok, err := s.Read(64)
		require.NoError(t, err)
		return string(b), ok
	}
	none := func(why string) {
		t.Helper()
		b, ok := read()
		assert.False(t, ok, "%s: got %q", why, b)
	}
	want := func(s string) {
		t.Helper()
		b, ok := read()
		assert.True(t, ok, "want %q", s)
		assert.Equal(t, s, b)
	}
	none("first seen: it may be being written")
	want("one\n")
	none("unchanged")
	none("unchanged")

	f.write("two\n")
	none("changed just now")
	want("two\n")

	// Rewritten while being read: what was read is dropped, and the new
	// content, unchanged by the next call, is read then.
	f.write("three\n")
	none("changed")
	f.onRead = func(f *fakeFile) { f.write("four, longer\n") }
	none("rewritten during the read")
	want("four, longer\n")

	// Cut while being read (the Inspector truncates, then writes).
	f.write("five, and more\n")
	none("changed")
	f.onRead = func(f *fakeFile) { f.write("") }
	none("truncated during the read")
	want("")

	// Too big: an error, once.
	f.write(string(make([]byte, 65)))
	none("changed")
	_, ok, err := s.Read(64)
	assert.False(t, ok)
	assert.Error(t, err)
	none("too big, said once")
	f.write("six\n")
	none("changed")
	want("six\n")
}

// TestSnapshotFile: on a real file, rewritten in place as the Inspector
// rewrites it (fopen "w": truncated, then written), and removed at its
// end.
func TestSnapshotFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nccl_inspector_metrics_GPU-a.prom")
	require.NoError(t, os.WriteFile(path, []byte("a 1\n"), 0o644))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	s := NewSnapshot(f)
	next := func() string {
		t.Helper()
		for range 3 {
			b, ok, err := s.Read(MaxPromFile)
			require.NoError(t, err)
			if ok {
				return string(b)
			}
		}
		t.Fatal("no content in 3 reads")
		return ""
	}
	assert.Equal(t, "a 1\n", next())
	require.NoError(t, os.WriteFile(path, []byte("a 22\nb 3\n"), 0o644)) // O_TRUNC: the same file
	assert.Equal(t, "a 22\nb 3\n", next())
	require.NoError(t, os.Remove(path))
	_, _, err = s.Read(MaxPromFile)
	assert.ErrorIs(t, err, ErrGone)
}
