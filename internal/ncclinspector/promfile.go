package ncclinspector

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The Inspector's textfiles are found by the process that writes them,
// not by their directory: the Inspector keeps each of its files open
// between its rewrites (its dump thread's table of files, one a GPU, in
// NCCL 2.29 and 2.30), so the process's descriptors name them. A shared
// node_exporter directory holds every process's GPUs' files, and their
// names (the GPU's UUID) say nothing of the process.

// Bounds on finding a process's textfiles: the descriptors looked at,
// and the files opened.
const (
	MaxFDs       = 8192
	MaxPromFiles = 16
)

// promPrefix and promSuffix make the name the Inspector gives its
// textfiles: nccl_inspector_metrics_<GPU UUID>.prom.
const (
	promPrefix = "nccl_inspector_metrics_"
	promSuffix = ".prom"
)

// IsPromFile says whether path names a textfile of the Inspector's.
func IsPromFile(path string) bool {
	base := filepath.Base(path)
	return strings.HasPrefix(base, promPrefix) && strings.HasSuffix(base, promSuffix) &&
		len(base) > len(promPrefix)+len(promSuffix)
}

// OpenPromFiles opens the Inspector's textfiles that the process whose
// procfs directory is procDir ("/proc/<pid>") holds open: each through
// its descriptor (procDir/fd/N), so in whatever mount namespace the
// process has it, a regular file, once however many descriptors name it,
// up to MaxPromFiles of them among its first MaxFDs descriptors. Reading
// another process's descriptors needs ptrace access to it (root). It
// returns an error wrapping ErrNoDump when the process holds none (the
// Inspector opens them at its first dump, and closes one for a moment at
// each rewrite).
func OpenPromFiles(procDir string) ([]*os.File, error) {
	fdDir := filepath.Join(procDir, "fd")
	d, err := os.Open(fdDir)
	if err != nil {
		return nil, fmt.Errorf("ncclinspector: %w", err)
	}
	defer d.Close()
	type fileID struct{ dev, ino uint64 }
	seen := map[fileID]bool{}
	var files []*os.File
	var errs []error
	for looked := 0; looked < MaxFDs && len(files) < MaxPromFiles; {
		names, err := d.Readdirnames(256)
		for _, n := range names {
			looked++
			if len(files) >= MaxPromFiles {
				break
			}
			target, rerr := os.Readlink(filepath.Join(fdDir, n))
			if rerr != nil || strings.HasSuffix(target, " (deleted)") || !IsPromFile(target) {
				continue // closed meanwhile, removed, or another file
			}
			fd, oerr := unix.Open(filepath.Join(fdDir, n), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
			if oerr != nil {
				errs = append(errs, fmt.Errorf("ncclinspector: open %s (%s): %w", filepath.Join(fdDir, n), target, oerr))
				continue
			}
			f := os.NewFile(uintptr(fd), target)
			var st unix.Stat_t
			if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
				f.Close()
				errs = append(errs, fmt.Errorf("ncclinspector: %s of %s is not a regular file", target, procDir))
				continue
			}
			if id := (fileID{st.Dev, st.Ino}); !seen[id] {
				seen[id] = true
				files = append(files, f)
				continue
			}
			f.Close()
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("ncclinspector: list %s: %w", fdDir, err))
			break
		}
	}
	if len(files) > 0 {
		return files, nil
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return nil, fmt.Errorf("ncclinspector: %w: %s holds no %s*%s open", ErrNoDump, procDir, promPrefix, promSuffix)
}

// ErrGone is what Snapshot.Read returns once its file has no name left:
// the Inspector removed it at its end, or another file took its name.
var ErrGone = errors.New("the file was removed")

// StatReaderAt is a file as Snapshot reads it.
type StatReaderAt interface {
	io.ReaderAt
	Stat() (fs.FileInfo, error)
}

// fileState is what says a file changed: its size and times, and whether
// it still has a name.
type fileState struct {
	size, mtime, ctime int64
	ino                uint64
	gone               bool
}

func stateOf(fi fs.FileInfo) fileState {
	s := fileState{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ctime = st.Ctim.Nano()
		s.ino = st.Ino
		s.gone = st.Nlink == 0
	}
	return s
}

// Snapshot reads a file that its writer rewrites whole from time to time
// (the Inspector: truncated and written again, in place, a line at a
// time): the whole file, once each time it changed, never while it is
// being written. A Snapshot is not safe for use by several goroutines.
type Snapshot struct {
	r    StatReaderAt
	last fileState // of the content Read last returned
	seen fileState // at the call before
	read bool      // Read has returned content
	buf  []byte
}

// NewSnapshot reads r.
func NewSnapshot(r StatReaderAt) *Snapshot { return &Snapshot{r: r} }

// Read returns the file's content when it changed since the content Read
// last returned, and has not changed since the call before: a file seen
// changing is left for the next call, by which the writer has written
// all of it (the Inspector writes a dump within milliseconds, once an
// interval of 30 s or more). A file that changes while it is read is
// left for a later call too. ok says whether it returns content (an
// empty file is content too); err is set for a file larger than max
// bytes (once for each change of it), and is ErrGone once the file has
// no name left. The content is valid until the next call.
func (s *Snapshot) Read(max int) (data []byte, ok bool, err error) {
	fi, err := s.r.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("ncclinspector: stat: %w", err)
	}
	st := stateOf(fi)
	if st.gone {
		return nil, false, ErrGone
	}
	if s.read && st == s.last {
		return nil, false, nil
	}
	if st != s.seen {
		s.seen = st
		return nil, false, nil // changing, or changed just now: settles by the next call
	}
	if st.size > int64(max) {
		s.last, s.read = st, true
		return nil, false, fmt.Errorf("ncclinspector: a textfile of %d bytes, over %d", st.size, max)
	}
	if cap(s.buf) < int(st.size)+1 {
		s.buf = make([]byte, int(st.size)+1)
	}
	buf := s.buf[:st.size+1] // a byte more, to see it grow
	n, err := s.r.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, false, fmt.Errorf("ncclinspector: read: %w", err)
	}
	fi, err = s.r.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("ncclinspector: stat: %w", err)
	}
	if after := stateOf(fi); after != st || int64(n) != st.size {
		s.seen = after // rewritten while read: later
		return nil, false, nil
	}
	s.last, s.read = st, true
	return buf[:n], true, nil
}
