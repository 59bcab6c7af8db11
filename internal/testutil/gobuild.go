package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// OtherGoReleases are the Go toolchains, beside the machine's own, that
// the tests build Go programs with (GOTOOLCHAIN), so that together they
// cover the last three Go releases: scripts/install-test-deps.sh fetches
// each.
var OtherGoReleases = []string{"go1.25.14", "go1.27.4"}

// BuildGo builds the main package in dir, which may import the standard
// library only, with the Go toolchain (GOTOOLCHAIN: "local" is the
// machine's), CGO_ENABLED=0, -trimpath and ldflags, for the architecture
// the tests run on, and returns the executable's path, named name, in a
// t.TempDir(). The package is built as a module of its own, so that a
// toolchain older than the one this module requires builds it too.
func BuildGo(t testing.TB, dir, toolchain, name, ldflags string) string {
	t.Helper()
	return BuildGoFor(t, runtime.GOARCH, dir, toolchain, name, ldflags)
}

// BuildGoFor is BuildGo for the architecture goarch (GOARCH).
func BuildGoFor(t testing.TB, goarch, dir, toolchain, name, ldflags string) string {
	t.Helper()
	srcs, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(srcs) == 0 {
		t.Fatalf("testutil: no Go files in %s (%v)", dir, err)
	}
	mod := t.TempDir()
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module "+name+"\n\ngo 1.24\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, src := range srcs {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mod, filepath.Base(src)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	exe := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags="+ldflags, "-o", exe, ".")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOTOOLCHAIN="+toolchain, "GOARCH="+goarch)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testutil: go build of %s with %s for %s: %v\n%s", dir, toolchain, goarch, err, out)
	}
	return exe
}
