package procfs

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// CPUTime returns the CPU time the process's threads alive now have run,
// the sum of the first field of their schedstat files, in nanoseconds.
// The stat file's utime and stime count in clock ticks (10 ms): a
// measure of an agent's fraction of a percent of a core over a minute
// needs the nanoseconds. Threads that exited are not counted: take the
// difference of two reads over a window in which the process keeps its
// threads, as a Go program does.
func (p Proc) CPUTime() (time.Duration, error) {
	tasks, err := os.ReadDir(p.path("task"))
	if err != nil {
		return 0, fmt.Errorf("procfs: %w", err)
	}
	var sum uint64
	for _, t := range tasks {
		b, err := os.ReadFile(p.path("task", t.Name(), "schedstat"))
		if err != nil {
			continue // exited meanwhile
		}
		ns, ok := ParseSchedstat(b)
		if !ok {
			return 0, fmt.Errorf("procfs: %s: no run time in %q", p.path("task", t.Name(), "schedstat"), excerpt(b))
		}
		sum += ns
	}
	return time.Duration(sum), nil
}

// ParseSchedstat returns the run time, in nanoseconds, that a schedstat
// file ("<run ns> <wait ns> <timeslices>") starts with.
func ParseSchedstat(b []byte) (uint64, bool) {
	f, _, _ := bytes.Cut(bytes.TrimSpace(b), []byte{' '})
	if len(f) == 0 || len(f) > 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(f), 10, 64)
	return v, err == nil
}
