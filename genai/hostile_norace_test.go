//go:build !race

package genai

import "github.com/xpuscope/xpuscope/internal/testutil"

// hostileFlood is how many bytes the hostile-input tests send: under an
// emulator (make test-arm64), which slows them as the race detector
// does, as many as under the race detector.
var hostileFlood = map[bool]int{false: 32 << 20, true: 4 << 20}[testutil.Emulated() != ""]
