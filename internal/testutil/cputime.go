package testutil

import (
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ProcessCPU is the user and system time this process has used, all its
// threads together: a benchmark's measure of what a Source costs in CPU,
// steadier than the wall time where the scheduler decides the waits.
func ProcessCPU(tb testing.TB) time.Duration {
	tb.Helper()
	var u unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &u); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// Median returns the median of v (the upper one of an even count),
// sorting v: a benchmark's figure over its rounds.
func Median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}
