package perfevent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Attr is what a counter is opened with: the PMU's type, its
// configuration words, and where.
type Attr struct {
	Type    uint32
	Configs Configs
	// PID is the task to count (-1: every task, which a PMU counting on a
	// CPU needs); CPU the CPU (-1: wherever the task runs).
	PID, CPU int
}

func (a Attr) String() string {
	return fmt.Sprintf("type %d config %#x config1 %#x config2 %#x pid %d cpu %d",
		a.Type, a.Configs[Config], a.Configs[Config1], a.Configs[Config2], a.PID, a.CPU)
}

// Value is one read of a counter opened with read_format
// TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING: the count, and how long the
// event was enabled and how long it was actually on a counter.
type Value struct {
	Count, Enabled, Running uint64
}

// Scaled is the count undone of multiplexing, count × enabled / running,
// as perf stat scales it. ok is false when the event never ran (running
// 0): there is no estimate then, not a zero.
func (v Value) Scaled() (float64, bool) {
	if v.Running == 0 {
		return 0, false
	}
	if v.Running >= v.Enabled {
		return float64(v.Count), true
	}
	return float64(v.Count) * float64(v.Enabled) / float64(v.Running), true
}

// Counter is an open counting event.
type Counter interface {
	// Read reads the counter into v, allocating nothing.
	Read(v *Value) error
	// Close closes the event; calls after the first return nil.
	Close() error
}

// Opener opens counters. KernelOpener is the kernel's; tests give one of
// their own.
type Opener interface {
	Open(a Attr) (Counter, error)
}

// KernelOpener opens counters with perf_event_open.
type KernelOpener struct{}

// attrSize is the perf_event_attr size the kernel is told: the struct
// golang.org/x/sys lays out, which has no config3.
var attrSize = uint32(unsafe.Sizeof(unix.PerfEventAttr{}))

// Open opens a counting event with read_format TOTAL_TIME_ENABLED and
// TOTAL_TIME_RUNNING, enabled from the start and closed on exec. An error
// is an *OpenError.
func (KernelOpener) Open(a Attr) (Counter, error) {
	if a.Configs[Config3] != 0 {
		return nil, &OpenError{Attr: a, Errno: unix.EINVAL, Why: "config3 is not supported"}
	}
	attr := unix.PerfEventAttr{
		Type:        a.Type,
		Size:        attrSize,
		Config:      a.Configs[Config],
		Ext1:        a.Configs[Config1],
		Ext2:        a.Configs[Config2],
		Read_format: unix.PERF_FORMAT_TOTAL_TIME_ENABLED | unix.PERF_FORMAT_TOTAL_TIME_RUNNING,
	}
	fd, err := unix.PerfEventOpen(&attr, a.PID, a.CPU, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return nil, NewOpenError(a, err)
	}
	return &kernelCounter{fd: fd}, nil
}

type kernelCounter struct {
	fd  int
	buf [24]byte
}

func (c *kernelCounter) Read(v *Value) error {
	if c.fd < 0 {
		return errors.New("read a closed counter")
	}
	n, err := unix.Read(c.fd, c.buf[:])
	if err != nil {
		return err
	}
	if n != len(c.buf) {
		return fmt.Errorf("read %d bytes of a counter, want %d", n, len(c.buf))
	}
	v.Count = binary.NativeEndian.Uint64(c.buf[0:])
	v.Enabled = binary.NativeEndian.Uint64(c.buf[8:])
	v.Running = binary.NativeEndian.Uint64(c.buf[16:])
	return nil
}

func (c *kernelCounter) Close() error {
	if c.fd < 0 {
		return nil
	}
	err := unix.Close(c.fd)
	c.fd = -1
	return err
}

// OpenError is a perf_event_open that failed: what was opened, the errno,
// and what the errno means for it.
type OpenError struct {
	Attr  Attr
	Errno unix.Errno
	Why   string
}

func (e *OpenError) Error() string {
	return fmt.Sprintf("perf_event_open(%v): %s: %s", e.Attr, ErrnoName(e.Errno), e.Why)
}

func (e *OpenError) Unwrap() error { return e.Errno }

// Unavailable reports whether the failure means a privilege, PMU or
// kernel feature is missing here, rather than a bad request.
func (e *OpenError) Unavailable() bool {
	switch e.Errno {
	case unix.EACCES, unix.EPERM, unix.ENOENT, unix.ENODEV, unix.EOPNOTSUPP, unix.ENOSYS:
		return true
	case unix.EINVAL:
		// A per-task open of a PMU that counts only per CPU (every
		// uncore PMU) is refused with EINVAL.
		return e.Attr.PID >= 0
	}
	return false
}

// NewOpenError says what err, returned by perf_event_open for a, means.
func NewOpenError(a Attr, err error) *OpenError {
	var errno unix.Errno
	if !errors.As(err, &errno) {
		return &OpenError{Attr: a, Errno: unix.EIO, Why: err.Error()}
	}
	e := &OpenError{Attr: a, Errno: errno}
	switch errno {
	case unix.EACCES, unix.EPERM:
		e.Why = "not permitted: counting on a CPU for every task needs CAP_PERFMON (or CAP_SYS_ADMIN), or kernel.perf_event_paranoid <= 0"
		if p, err := Paranoid(nil); err == nil {
			e.Why += fmt.Sprintf(" (it is %d)", p)
		}
	case unix.ENOENT:
		e.Why = "the kernel has no PMU of this type (its driver is not loaded, or the PMU went away)"
	case unix.ENODEV:
		e.Why = "the PMU does not count on this CPU (offline, or not one of its cpumask)"
	case unix.EINVAL:
		if a.PID >= 0 {
			e.Why = "the PMU counts only per CPU for every task, not per task"
		} else {
			e.Why = "the kernel refused the event's configuration"
		}
	case unix.EOPNOTSUPP:
		e.Why = "the PMU does not support this kind of event"
	case unix.EBUSY:
		e.Why = "the PMU's counters are taken by someone else"
	case unix.EMFILE, unix.ENFILE:
		e.Why = "out of file descriptors"
	case unix.ENOSYS:
		e.Why = "the kernel has no perf_event_open"
	default:
		e.Why = errno.Error()
	}
	return e
}

// ErrnoName is the errno's C name (EACCES), or its number.
func ErrnoName(e unix.Errno) string {
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return "errno " + strconv.Itoa(int(e))
}

// ParanoidFile is where the kernel says how much unprivileged users may
// count, under a procfs root.
const ParanoidFile = "sys/kernel/perf_event_paranoid"

// Paranoid reads kernel.perf_event_paranoid from procfs (fsys rooted at
// its mount point; nil for the host's /proc).
func Paranoid(fsys fs.FS) (int, error) {
	var (
		s   string
		err error
	)
	if fsys == nil {
		var b []byte
		b, err = readHost("/proc/" + ParanoidFile)
		s = string(b)
	} else {
		s, err = ReadFile(fsys, ParanoidFile)
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("perf_event_paranoid %.20q is not a number", s)
	}
	return n, nil
}

func readHost(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var buf [64]byte
	n, err := unix.Read(fd, buf[:])
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// Capabilities numbers (linux/capability.h).
const (
	capSysAdmin = 21
	capPerfmon  = 38
)

// HasPerfmon reports whether this process holds CAP_PERFMON or
// CAP_SYS_ADMIN in its effective set: what system-wide counting needs
// when perf_event_paranoid is above 0.
func HasPerfmon() (bool, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false, fmt.Errorf("capget: %w", err)
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	return has(capPerfmon) || has(capSysAdmin), nil
}
