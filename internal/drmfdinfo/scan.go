package drmfdinfo

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Bounds of one scan.
const (
	// MaxFDs is how many descriptors of one process are looked at.
	MaxFDs = 1 << 16
	// MaxClients is how many DRM descriptors one scan reads; the rest are
	// counted in Stats.Dropped.
	MaxClients = 1 << 14
	// MaxFileSize bounds one fdinfo file: the drivers write a few hundred
	// bytes; a longer file is read up to here.
	MaxFileSize = 8192
)

// Stats are what one scan saw.
type Stats struct {
	Processes int // processes whose descriptors were listed
	FDs       int // descriptors looked at
	Clients   int // DRM descriptors read
	// Denied counts processes whose descriptors could not be listed
	// (EACCES: the agent lacks CAP_SYS_PTRACE or runs in another user
	// namespace).
	Denied int
	// Dropped counts DRM descriptors past MaxClients.
	Dropped int
}

// Scanner walks the processes of a procfs and reads the fdinfo of every
// descriptor that is a DRM card or render node. It keeps its buffers
// between scans, so that a scan allocates nothing; it is not safe for
// concurrent use.
type Scanner struct {
	// Root is where procfs is mounted (/proc, or /host/proc).
	Root string

	root    []byte // Root, NUL-terminated
	procBuf []byte // getdents of the root
	fdBuf   []byte // getdents of one fd directory
	path    []byte // "<pid>/fd/<n>", "<pid>/fdinfo/<n>", NUL-terminated
	link    []byte
	file    []byte
	client  Client
}

// Scan calls fn for each DRM descriptor of each process: the process's
// pid, the descriptor's number, and what its fdinfo says (valid during the
// call). It returns an error only when the root cannot be listed.
func (s *Scanner) Scan(fn func(pid, fd int, c *Client)) (Stats, error) {
	var st Stats
	if s.procBuf == nil {
		s.root = append([]byte(s.Root), 0)
		s.procBuf = make([]byte, 32<<10)
		s.fdBuf = make([]byte, 32<<10)
		s.path = make([]byte, 0, 64)
		s.link = make([]byte, 256)
		s.file = make([]byte, MaxFileSize)
	}
	rootfd, err := openat(unix.AT_FDCWD, s.root, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return st, fmt.Errorf("drmfdinfo: open %s: %w", s.Root, err)
	}
	defer unix.Close(rootfd)
	for {
		n, err := unix.Getdents(rootfd, s.procBuf)
		if err != nil {
			return st, fmt.Errorf("drmfdinfo: list %s: %w", s.Root, err)
		}
		if n <= 0 {
			return st, nil
		}
		eachName(s.procBuf[:n], func(name []byte) {
			pid, ok := atoi(name)
			if !ok || pid <= 0 {
				return
			}
			s.process(rootfd, pid, name, &st, fn)
		})
	}
}

// process lists pid's descriptors and reads those on DRM nodes.
func (s *Scanner) process(rootfd, pid int, pidName []byte, st *Stats, fn func(pid, fd int, c *Client)) {
	s.path = append(append(append(s.path[:0], pidName...), "/fd"...), 0)
	fdfd, err := openat(rootfd, s.path, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
			st.Denied++
		}
		return
	}
	defer unix.Close(fdfd)
	st.Processes++
	seen := 0
	for seen < MaxFDs {
		n, err := unix.Getdents(fdfd, s.fdBuf)
		if err != nil || n <= 0 {
			return
		}
		eachName(s.fdBuf[:n], func(name []byte) {
			fd, ok := atoi(name)
			if !ok || seen >= MaxFDs {
				return
			}
			seen++
			st.FDs++
			s.path = append(append(s.path[:0], name...), 0)
			ln, err := readlinkat(fdfd, s.path, s.link)
			if err != nil || !IsDRMNode(s.link[:ln]) {
				return
			}
			if st.Clients >= MaxClients {
				st.Dropped++
				return
			}
			s.path = append(append(append(append(s.path[:0], pidName...), "/fdinfo/"...), name...), 0)
			b, ok := s.read(rootfd)
			if !ok {
				return
			}
			Parse(b, &s.client)
			if !s.client.IsDRM() {
				return
			}
			st.Clients++
			fn(pid, fd, &s.client)
		})
	}
}

// read reads the file at s.path under rootfd into s.file.
func (s *Scanner) read(rootfd int) ([]byte, bool) {
	f, err := openat(rootfd, s.path, unix.O_RDONLY)
	if err != nil {
		return nil, false
	}
	defer unix.Close(f)
	n := 0
	for n < len(s.file) {
		m, err := unix.Read(f, s.file[n:])
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			return nil, false
		}
		if m <= 0 {
			break
		}
		n += m
	}
	return s.file[:n], true
}

// IsDRMNode reports whether a descriptor's link target is a DRM card or
// render node: a file named card<N> or renderD<N> in a directory named
// dri (/dev/dri/renderD128 in whatever mount namespace the process
// sees it).
func IsDRMNode(target []byte) bool {
	i := bytes.LastIndexByte(target, '/')
	if i < len("/dri") || string(target[i-len("/dri"):i]) != "/dri" {
		return false
	}
	base := target[i+1:]
	for _, p := range []string{"renderD", "card"} {
		if rest, ok := bytes.CutPrefix(base, []byte(p)); ok {
			_, ok := atoi(rest)
			return ok
		}
	}
	return false
}

// eachName calls fn with the name of each entry of a getdents64 buffer
// (struct linux_dirent64: d_ino, d_off, d_reclen at 16, d_type, d_name
// at 19, NUL-terminated).
func eachName(buf []byte, fn func(name []byte)) {
	for len(buf) >= 19 {
		reclen := int(buf[16]) | int(buf[17])<<8
		if reclen < 19 || reclen > len(buf) {
			return
		}
		name := buf[19:reclen]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		fn(name)
		buf = buf[reclen:]
	}
}

// atoi parses a non-negative decimal of at most 9 digits.
func atoi(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// openat opens the NUL-terminated path relative to dirfd without
// allocating (unix.Openat copies its string argument).
func openat(dirfd int, path []byte, flags int) (int, error) {
	r, _, e := unix.Syscall6(unix.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(&path[0])), uintptr(flags|unix.O_CLOEXEC), 0, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

// readlinkat reads the link at the NUL-terminated path into buf.
func readlinkat(dirfd int, path, buf []byte) (int, error) {
	r, _, e := unix.Syscall6(unix.SYS_READLINKAT, uintptr(dirfd), uintptr(unsafe.Pointer(&path[0])), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// Key identifies a client across descriptors and processes: drm-pdev and
// drm-client-id (unique per device, or globally).
type Key struct {
	PDev Name
	ID   uint64
}

// KeyOf is c's key, and whether c has a client id at all (without one, a
// descriptor is a client of its own).
func KeyOf(c *Client) (Key, bool) {
	return Key{PDev: c.PDev, ID: c.ID}, c.HasID
}

// String is for messages.
func (k Key) String() string { return k.PDev.String() + "#" + strconv.FormatUint(k.ID, 10) }
