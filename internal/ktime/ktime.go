// Package ktime converts the kernel's BPF timestamps (bpf_ktime_get_ns,
// CLOCK_MONOTONIC nanoseconds) to wall-clock time.
package ktime

import (
	"time"

	"golang.org/x/sys/unix"
)

// Now reads CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns.
func Now() uint64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

// WallClock returns a converter from monotonic nanoseconds, as now reads
// them, to wall-clock time, anchored at the moment of the call. The
// anchor is fixed: a later step of the wall clock does not move it.
func WallClock(now func() uint64) func(uint64) time.Time {
	wall, m := time.Now(), now()
	return func(k uint64) time.Time {
		return wall.Add(time.Duration(int64(k) - int64(m)))
	}
}
