package node

import (
	"bufio"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// fileidKernfs is the file handle type of a kernfs node (cgroup v2's
// directories): its 8-byte id, which is the cgroup id a BPF program reads
// (include/linux/exportfs.h: FILEID_KERNFS).
const fileidKernfs = 0xfe

// cgroupProcess returns a process of cgroup v2 id (the first that its
// cgroup.procs lists), for a socket whose owner the kernel side did not
// see begin: its pod is the cgroup's. 0 where the cgroup has none, is
// gone, or cannot be opened (cgroup v2 not mounted at the cgroup root;
// opening by handle needs CAP_DAC_READ_SEARCH). A cgroup's process is
// kept while it lives.
func (s *Source) cgroupProcess(id uint64) uint32 {
	if pid, ok := s.cgroupPIDs[id]; ok && (pid == 0 || s.alive(pid)) {
		return pid
	}
	if s.cfg.cgroupRoot == "" {
		s.cfg.cgroupRoot = cgroup2Mount(s.cfg.procRoot)
	}
	pid := readCgroupProcess(s.cfg.cgroupRoot, id)
	bound(s.cgroupPIDs, maxSockets)
	s.cgroupPIDs[id] = pid
	return pid
}

// readCgroupProcess opens cgroup id under root, the cgroup v2 mount, by
// its handle, and reads the first pid of its cgroup.procs.
func readCgroupProcess(root string, id uint64) uint32 {
	mount, err := os.Open(root)
	if err != nil {
		return 0
	}
	defer mount.Close()
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], id)
	fd, err := unix.OpenByHandleAt(int(mount.Fd()), unix.NewFileHandle(fileidKernfs, b[:]), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return 0
	}
	defer unix.Close(fd)
	pfd, err := unix.Openat(fd, "cgroup.procs", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	f := os.NewFile(uintptr(pfd), "cgroup.procs")
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0
	}
	pid, err := strconv.ParseUint(sc.Text(), 10, 32)
	if err != nil {
		return 0
	}
	return uint32(pid)
}

// cgroup2Mount returns where cgroup v2 is mounted, from procRoot's
// self/mountinfo; "" where it is not.
func cgroup2Mount(procRoot string) string {
	f, err := os.Open(filepath.Join(procRoot, "self", "mountinfo"))
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [TAGS...] - FSTYPE SOURCE SUPER
		fields := strings.Fields(sc.Text())
		for i, f := range fields {
			if f == "-" && i+1 < len(fields) && len(fields) > 4 {
				if fields[i+1] == "cgroup2" {
					return fields[4]
				}
				break
			}
		}
	}
	return ""
}
