//go:build race

package genai

// hostileFlood is how many bytes the hostile-input tests send. The race
// detector slows them tenfold: they send less under it.
const hostileFlood = 4 << 20
