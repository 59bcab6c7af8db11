//go:build !race

package occupancy

const raceEnabled = false
