// Package procfs reads the few /proc facts xpuscope needs, under a root
// that tests and containerised agents can change (/host/proc, a fixture).
package procfs

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// DefaultRoot is the procfs mount point of the host when the agent runs
// with hostPID.
const DefaultRoot = "/proc"

// FS is a procfs mounted at Root.
type FS struct {
	Root string
}

// ExecutableName returns the base name of /proc/<pid>/exe. When the link
// cannot be read (a kernel thread, a process that is gone, no privilege)
// it falls back to /proc/<pid>/comm, and returns "" when both fail.
func (fs FS) ExecutableName(pid int) string {
	dir := filepath.Join(fs.Root, strconv.Itoa(pid))
	if target, err := os.Readlink(filepath.Join(dir, "exe")); err == nil {
		if name := ExeBase(target); name != "" {
			return name
		}
	}
	comm, err := os.ReadFile(filepath.Join(dir, "comm"))
	if err != nil {
		return ""
	}
	return ParseComm(comm)
}

// deletedSuffix is what the kernel appends to /proc/<pid>/exe when the
// executable was replaced or removed after exec.
const deletedSuffix = " (deleted)"

// ExeBase returns the base name of an /proc/<pid>/exe link target, without
// the kernel's " (deleted)" suffix.
func ExeBase(target string) string {
	if len(target) > len(deletedSuffix) && target[len(target)-len(deletedSuffix):] == deletedSuffix {
		target = target[:len(target)-len(deletedSuffix)]
	}
	base := filepath.Base(target)
	if base == "." || base == "/" {
		return ""
	}
	return base
}

// maxComm bounds what is kept of a comm file: the kernel's TASK_COMM_LEN is
// 16 bytes, so anything longer is not a real comm file.
const maxComm = 64

// ParseComm returns the process name in the contents of /proc/<pid>/comm:
// the first line, at most 64 bytes.
func ParseComm(b []byte) string {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	if len(b) > maxComm {
		b = b[:maxComm]
	}
	return string(b)
}
