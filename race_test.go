//go:build race

package xpuscope_test

// raceFlags are the build flags of this test binary that change how the
// packages compile: the API check builds them the same way, and so from
// the build cache.
var raceFlags = []string{"-race"}
