package procfs

import (
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// Self returns the process id of the caller in the pid namespace of the
// procfs (its self link): with the host's procfs mounted in a container,
// the id the host's kernel and BPF programs know it by.
func (fs FS) Self() (int, error) {
	target, err := os.Readlink(fs.Root + "/self")
	if err != nil {
		return 0, fmt.Errorf("procfs: %w", err)
	}
	pid, err := strconv.Atoi(target)
	if err != nil {
		return 0, fmt.Errorf("procfs: %s/self links to %q, not a process id", fs.Root, target)
	}
	return pid, nil
}

// Signal sends sig to the process through a descriptor of its directory
// (pidfd_send_signal), which names the process in the pid namespace of
// the procfs, not the caller's, and cannot reach another process that
// took its pid after it exited.
func (p Proc) Signal(sig syscall.Signal) error {
	fd, err := unix.Open(p.path(), unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("procfs: open %s: %w", p.path(), err)
	}
	defer unix.Close(fd)
	if err := unix.PidfdSendSignal(fd, sig, nil, 0); err != nil {
		return fmt.Errorf("procfs: send %v to process %d: %w", sig, p.PID, err)
	}
	return nil
}

// MappedPath returns the path of the file m, a mapping of the process,
// maps, as the process sees it (the target of its map_files link),
// without the kernel's " (deleted)" suffix.
func (p Proc) MappedPath(m Mapping) (string, error) {
	target, err := os.Readlink(p.mapFilesPath(m))
	if err != nil {
		return "", fmt.Errorf("procfs: %w", err)
	}
	return trimDeleted(target), nil
}
