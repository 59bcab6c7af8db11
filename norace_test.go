//go:build !race

package xpuscope_test

// raceFlags: see race_test.go.
var raceFlags []string
