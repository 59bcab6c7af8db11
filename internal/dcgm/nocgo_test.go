//go:build !cgo

package dcgm

import "testing"

// TestNoCgo marks a run built with CGO_ENABLED=0: TestWithoutCgo checks
// that it passed.
func TestNoCgo(t *testing.T) {}
