package tpu

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/xpuscope/xpuscope/internal/procfs"
)

// maxFDs bounds the descriptors read of one process.
const maxFDs = 1 << 16

// Owners returns, for each of files (device files, /dev/accel0 or
// /dev/vfio/12), the pids of the processes under procRoot that have it
// open, in pid order: the links of /proc/<pid>/fd. Processes it cannot
// read (gone, or not permitted) are skipped.
func Owners(procRoot string, files []string) (map[string][]int, error) {
	want := map[string]bool{}
	for _, f := range files {
		if f != "" {
			want[f] = true
		}
	}
	out := map[string][]int{}
	if len(want) == 0 {
		return out, nil
	}
	pids, err := procfs.FS{Root: procRoot}.PIDs()
	if err != nil {
		return nil, err
	}
	for _, pid := range pids {
		dir := filepath.Join(procRoot, strconv.Itoa(pid), "fd")
		f, err := os.Open(dir)
		if err != nil {
			continue
		}
		names, _ := f.Readdirnames(maxFDs)
		f.Close()
		seen := map[string]bool{}
		for _, n := range names {
			target, err := os.Readlink(filepath.Join(dir, n))
			if err != nil || !want[target] || seen[target] {
				continue
			}
			seen[target] = true
			out[target] = append(out[target], pid)
		}
	}
	for _, pids := range out {
		slices.Sort(pids)
	}
	return out, nil
}

// IsNoListener reports whether err is a refused connection: nothing
// listens at the address.
func IsNoListener(err error) bool {
	return err != nil && (strings.Contains(err.Error(), syscall.ECONNREFUSED.Error()))
}
