//go:build !race

package genai

// hostileFlood is how many bytes the hostile-input tests send.
const hostileFlood = 32 << 20
