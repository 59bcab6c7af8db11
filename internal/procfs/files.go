package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// maxFDs bounds the descriptors FDs looks at: a process may hold a
// million, and what the callers look for (a server's listening sockets,
// a training job's log files) is among its first.
const maxFDs = 1 << 16

// FDs calls fn with each of the process's open descriptors and the target
// of its link ("socket:[12345]", "/runs/exp/events.out.tfevents…" as the
// process names the file, "pipe:[7]"), in the order of the directory,
// looking at its first 65536, until fn returns false. A descriptor
// closed meanwhile is passed over. It needs the privilege to read the
// process's fd directory (ptrace access: root, or the same user).
func (p Proc) FDs(fn func(fd int, target string) bool) error {
	dir, err := os.Open(p.path("fd"))
	if err != nil {
		return fmt.Errorf("procfs: %w", err)
	}
	defer dir.Close()
	seen := 0
	for seen < maxFDs {
		names, err := dir.Readdirnames(256)
		for _, name := range names {
			seen++
			fd, convErr := strconv.Atoi(name)
			target, linkErr := os.Readlink(filepath.Join(dir.Name(), name))
			if convErr != nil || linkErr != nil {
				continue // closed meanwhile
			}
			if !fn(fd, target) {
				return nil
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("procfs: read %s: %w", dir.Name(), err)
		}
	}
	return nil
}

// OpenFD opens the file descriptor fd of the process refers to, through
// its link in /proc/<pid>/fd: the same file, read from outside the
// process's mount namespace, even after it was removed. It opens it for
// reading, without blocking on a FIFO, and only if it is a regular file.
func (p Proc) OpenFD(fd int) (*os.File, error) {
	path := p.path("fd", strconv.Itoa(fd))
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("procfs: %w", err)
	}
	if err := regular(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Cwd returns the process's working directory, as the process names it
// (the target of its cwd link).
func (p Proc) Cwd() (string, error) {
	target, err := os.Readlink(p.path("cwd"))
	if err != nil {
		return "", fmt.Errorf("procfs: %w", err)
	}
	return target, nil
}

// OpenFile opens a file the process names, for reading, as the process
// sees it: an absolute path in the process's root (its mount namespace),
// a relative one from its working directory. See Open.
func (p Proc) OpenFile(path string) (*os.File, error) {
	return p.Open(path, unix.O_RDONLY)
}

// Open opens path as the process names it, with the open(2) flags given
// (O_DIRECTORY for a directory; O_CLOEXEC and O_NONBLOCK are added, so
// that a FIFO does not block), never out of what the process sees: an
// absolute path is resolved in the process's root (openat2's
// RESOLVE_IN_ROOT: "..", and links, absolute ones too, resolve as they
// would in the process), a relative one in its working directory,
// treated as a root the same way. No magic link (/proc/<pid>/…) is
// followed. The file's Name is path.
func (p Proc) Open(path string, flags int) (*os.File, error) {
	base, name := "root", path
	if !filepath.IsAbs(path) {
		base, path = "cwd", filepath.Clean("/"+path)
	}
	bfd, err := unix.Open(p.path(base), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("procfs: open %s: %w", p.path(base), err)
	}
	defer unix.Close(bfd)
	fd, err := unix.Openat2(bfd, path, &unix.OpenHow{
		Flags:   uint64(flags | unix.O_CLOEXEC | unix.O_NONBLOCK),
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, fmt.Errorf("procfs: open %s in the %s of process %d: %w", name, base, p.PID, err)
	}
	return os.NewFile(uintptr(fd), name), nil
}

// OpenIn opens the regular file name in dir (a directory Open or OpenIn's
// caller opened), for reading: name is one entry of dir, not a path, and
// no link is followed, so that what a process's directory holds cannot
// lead the reader out of it.
func OpenIn(dir *os.File, name string) (*os.File, error) {
	fd, err := unix.Openat2(int(dir.Fd()), name, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		return nil, fmt.Errorf("procfs: open %s in %s: %w", name, dir.Name(), err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(dir.Name(), name))
	if err := regular(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// OpenDirIn opens the directory name in dir (a directory Open or OpenDirIn
// opened): name is one entry of dir, not a path, and no link is
// followed.
func OpenDirIn(dir *os.File, name string) (*os.File, error) {
	fd, err := unix.Openat2(int(dir.Fd()), name, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		return nil, fmt.Errorf("procfs: open directory %s in %s: %w", name, dir.Name(), err)
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir.Name(), name)), nil
}

// regular fails for a file that is not a regular one.
func regular(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("procfs: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("procfs: %s is not a regular file (%v)", f.Name(), st.Mode().Type())
	}
	return nil
}

// clockTick is the kernel's USER_HZ, the unit of a process's start time:
// 100 on every Linux architecture's ABI.
const clockTick = 100

// BootTime reads when the host booted, the btime line of the procfs's
// stat file.
func (fs FS) BootTime() (time.Time, error) {
	b, err := os.ReadFile(filepath.Join(fs.Root, "stat"))
	if err != nil {
		return time.Time{}, fmt.Errorf("procfs: %w", err)
	}
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			secs, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("procfs: %s/stat: btime %q", fs.Root, v)
			}
			return time.Unix(secs, 0), nil
		}
	}
	return time.Time{}, fmt.Errorf("procfs: %s/stat has no btime line", fs.Root)
}

// StartedAt converts a process's start time (Handle.StartTime's clock
// ticks after boot) to the wall clock, given the host's boot time.
func StartedAt(boot time.Time, ticks uint64) time.Time {
	return boot.Add(time.Duration(ticks) * time.Second / clockTick)
}
