//go:build cgo

package levelzero

import (
	"testing"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// TestWithoutCgo runs the library tests again in a test binary built with
// CGO_ENABLED=0, where purego loads libraries through its own fake cgo
// runtime: the binding must work in both builds, the real loader and its
// dispatch included.
func TestWithoutCgo(t *testing.T) {
	testutil.RunWithoutCgo(t, []string{"TestStructLayoutMatchesTheHeaders", "TestRealLoaderWithoutDriver", "TestFakeDriverThroughRealLoader", "TestTwoDriversThroughRealLoader", "TestZesInitLoader", "TestLoaderWithoutZesInit", "TestCallsAllocateNothing"})
}
