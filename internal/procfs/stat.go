package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Handle is an FS whose root is held open, for the read a cache makes on
// every lookup: StartTime opens the stat file relative to the root's
// descriptor with a path built on the stack, and allocates nothing.
// prometheus/procfs's Proc.Stat parses every field with fmt.Fscan: on the
// real procfs BenchmarkStartTime has it take 2.6 times as long (28 µs
// against 10.8 µs) with 36 allocations. A Handle is safe for concurrent
// use.
type Handle struct {
	FS
	mu sync.RWMutex // Close waits for the readers of fd
	fd int          // -1 once closed
}

// errClosed is the error of a read through a closed Handle.
var errClosed = errors.New("procfs: handle closed")

// Open opens the root of fs and holds it open until Close.
func (fs FS) Open() (*Handle, error) {
	fd, err := unix.Open(fs.Root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("procfs: open %s: %w", fs.Root, err)
	}
	return &Handle{FS: fs, fd: fd}, nil
}

// Close closes the root, after the reads in flight. It is idempotent.
func (h *Handle) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fd < 0 {
		return nil
	}
	err := unix.Close(h.fd)
	h.fd = -1
	if err != nil {
		return fmt.Errorf("procfs: close %s: %w", h.Root, err)
	}
	return nil
}

// StartTime returns the start time of process pid, field 22 of its stat
// file, in clock ticks after boot. With the pid it identifies a process:
// a pid the kernel reuses comes with another start time.
func (h *Handle) StartTime(pid int) (uint64, error) {
	var path [32]byte
	p := strconv.AppendInt(path[:0], int64(pid), 10)
	p = append(p, "/stat\x00"...)
	var buf [1024]byte
	h.mu.RLock()
	if h.fd < 0 {
		h.mu.RUnlock()
		return 0, errClosed
	}
	n, err := readAt(h.fd, p, buf[:])
	h.mu.RUnlock()
	if err != nil {
		return 0, fmt.Errorf("procfs: %s: %w", h.Proc(pid).path("stat"), err)
	}
	st, ok := parseStartTime(buf[:n])
	if !ok {
		return 0, fmt.Errorf("procfs: %s: no start time in field 22", h.Proc(pid).path("stat"))
	}
	return st, nil
}

// readAt reads the file at the NUL-terminated path relative to dirfd into
// buf, as much as fits.
func readAt(dirfd int, path, buf []byte) (int, error) {
	r, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(&path[0])),
		uintptr(unix.O_RDONLY|unix.O_CLOEXEC), 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	fd := int(r)
	defer unix.Close(fd)
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}

// parseStartTime reads field 22 of a /proc/<pid>/stat line. The command
// name (field 2) is in parentheses and may hold spaces and parentheses
// itself, so the fields are counted from the last ')'.
func parseStartTime(b []byte) (uint64, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	b = b[i+1:]
	// After ')' come " state ppid …", fields 3, 4, …: skip 3 to 21.
	for range 19 {
		if len(b) < 2 || b[0] != ' ' {
			return 0, false
		}
		j := bytes.IndexByte(b[1:], ' ')
		if j < 0 {
			return 0, false
		}
		b = b[1+j:]
	}
	if len(b) < 2 || b[0] != ' ' {
		return 0, false
	}
	b = b[1:]
	var v uint64
	n := 0
	for ; n < len(b) && '0' <= b[n] && b[n] <= '9'; n++ {
		d := uint64(b[n] - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if n == 0 || (n < len(b) && b[n] != ' ' && b[n] != '\n') {
		return 0, false
	}
	return v, true
}
