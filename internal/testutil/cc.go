package testutil

import (
	"os/exec"
	"testing"
)

// Triplets are the GNU names of the architectures the tests build C code
// for, by GOARCH.
var Triplets = map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}

// CC returns the C compiler that builds for goarch ("amd64", "arm64"):
// Debian's gcc by its triplet's name, native or a cross compiler
// (gcc-aarch64-linux-gnu with libc6-dev-arm64-cross on an x86-64 machine,
// which scripts/install-test-deps.sh installs). A compiler missing skips
// t, or fails it in CI.
func CC(t testing.TB, goarch string) string {
	t.Helper()
	triplet, ok := Triplets[goarch]
	if !ok {
		t.Fatalf("testutil: no C compiler known for GOARCH %q", goarch)
	}
	cc := triplet + "-gcc"
	if _, err := exec.LookPath(cc); err != nil {
		SkipOrFail(t, "the C compiler for %s is not installed: %v", goarch, err)
	}
	return cc
}
