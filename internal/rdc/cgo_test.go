//go:build cgo

package rdc

import (
	"testing"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// TestWithoutCgo runs the library tests again in a test binary built with
// CGO_ENABLED=0, where purego loads libraries through its own fake cgo
// runtime: the binding must work in both builds.
func TestWithoutCgo(t *testing.T) {
	testutil.RunWithoutCgo(t, []string{"TestNoCgo", "TestFakeLibraryValues", "TestMissingOptionalFunction", "TestStartFailure", "TestStructLayoutMatchesTheFake"},
		"TestOpenErrors")
}
