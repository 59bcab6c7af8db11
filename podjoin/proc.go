package podjoin

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope"
)

// procDir is an open procfs root. The start time of a process is read on
// every lookup, so it is read without allocating: openat on the root's
// descriptor with a path built on the stack.
type procDir struct {
	root string
	mu   sync.RWMutex // Close waits for the readers of fd
	fd   int          // -1 once closed
}

func openProcDir(root string) (*procDir, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, xpuscope.Unavailablef("podjoin: procfs root %s: %v", root, err)
	}
	return &procDir{root: root, fd: fd}, nil
}

func (d *procDir) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fd >= 0 {
		unix.Close(d.fd)
		d.fd = -1
	}
}

var errClosed = errors.New("podjoin: resolver closed")

// startTime returns the start time of process pid, field 22 of
// /proc/<pid>/stat, in clock ticks after boot. With the pid it identifies
// a process: a pid the kernel reuses comes with another start time.
func (d *procDir) startTime(pid int) (uint64, error) {
	var path [32]byte
	p := strconv.AppendInt(path[:0], int64(pid), 10)
	p = append(p, "/stat\x00"...)
	var buf [1024]byte
	d.mu.RLock()
	if d.fd < 0 {
		d.mu.RUnlock()
		return 0, errClosed
	}
	n, err := readAt(d.fd, p, buf[:])
	d.mu.RUnlock()
	if err != nil {
		return 0, fmt.Errorf("podjoin: %s: %w", d.path(pid, "stat"), err)
	}
	st, ok := parseStartTime(buf[:n])
	if !ok {
		return 0, fmt.Errorf("podjoin: %s: no start time in field 22", d.path(pid, "stat"))
	}
	return st, nil
}

func (d *procDir) path(pid int, file string) string {
	return filepath.Join(d.root, strconv.Itoa(pid), file)
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

// maxCgroupFile caps what is read of /proc/<pid>/cgroup.
const maxCgroupFile = 64 << 10

// readCgroup reads and parses /proc/<pid>/cgroup.
func (d *procDir) readCgroup(pid int) (Cgroup, error) {
	f, err := os.Open(d.path(pid, "cgroup"))
	if err != nil {
		return Cgroup{}, fmt.Errorf("podjoin: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCgroupFile))
	if err != nil {
		return Cgroup{}, fmt.Errorf("podjoin: %s: %w", d.path(pid, "cgroup"), err)
	}
	return ParseCgroup(b), nil
}

// Environment reads.
const (
	// maxEnviron caps what is read of /proc/<pid>/environ. Pods in a
	// namespace with many services carry a few variables per service
	// (enableServiceLinks), so the allowed ones can sit far in.
	maxEnviron = 1 << 20
	// environBuf is the piece read at a time; only an allowed variable
	// that straddles two pieces is held over.
	environBuf = 16 << 10
)

// environ reads the allowed variables of /proc/<pid>/environ. buf is the
// caller's reusable buffer; it is zeroed before environ returns.
func (d *procDir) environ(pid int, buf []byte) (Environ, error) {
	f, err := os.Open(d.path(pid, "environ"))
	if err != nil {
		clear(buf)
		return Environ{}, fmt.Errorf("podjoin: %w", err)
	}
	defer f.Close()
	env, err := scanEnviron(f, buf, maxEnviron)
	if err != nil {
		return Environ{}, fmt.Errorf("podjoin: %s: %w", d.path(pid, "environ"), err)
	}
	return env, nil
}
