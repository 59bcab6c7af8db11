//go:build !race

package levelzero

const raceEnabled = false
