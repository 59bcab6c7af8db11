//go:build race

package levelzero

// raceEnabled: under the race detector sync.Pool drops a quarter of what
// is put back on purpose, and purego.SyscallN takes its call frame from
// a sync.Pool, so a call may allocate; the allocation tests allow less
// than one allocation a call there and none without -race.
const raceEnabled = true
