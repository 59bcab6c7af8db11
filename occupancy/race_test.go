//go:build race

package occupancy

// raceEnabled scales the property tests down under the race detector,
// which slows them tenfold; go test without -race runs them in full.
const raceEnabled = true
