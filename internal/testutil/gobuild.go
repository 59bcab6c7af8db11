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

// GoBuild is how BuildGo builds a program. The zero value builds with the
// machine's toolchain, for the architecture the tests run on, with cgo
// off and Go's own linker, as `CGO_ENABLED=0 go build -trimpath` does.
type GoBuild struct {
	Toolchain string // GOTOOLCHAIN, such as "go1.27.4"; "": "local", the machine's
	GOARCH    string // "": the tests' own
	LDFlags   string // such as "-s -w"
	// External turns cgo on and links with the C toolchain
	// (-linkmode=external), as every program that uses cgo is linked:
	// the C runtime's code then comes first in .text, before the Go
	// code the pclntab's entries count from.
	External bool
	PIE      bool // -buildmode=pie
}

// crossCC is the C compiler of each GOARCH the tests build external
// links for on another architecture.
var crossCC = map[string]string{"arm64": "aarch64-linux-gnu-gcc", "amd64": "x86_64-linux-gnu-gcc"}

// BuildGo builds the main package in dir, which may import the standard
// library only, as b says, and returns the executable's path, named name,
// in a t.TempDir(). The package is built as a module of its own, so that
// a toolchain older than the one this module requires builds it too.
func BuildGo(t testing.TB, dir, name string, b GoBuild) string {
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
	toolchain, goarch, ldflags, cgo := b.Toolchain, b.GOARCH, b.LDFlags, "0"
	if toolchain == "" {
		toolchain = "local"
	}
	if goarch == "" {
		goarch = runtime.GOARCH
	}
	env := append(os.Environ(), "GOTOOLCHAIN="+toolchain, "GOARCH="+goarch)
	if b.External {
		ldflags, cgo = "-linkmode=external "+ldflags, "1"
		if goarch != runtime.GOARCH {
			env = append(env, "CC="+crossCC[goarch])
		}
	}
	args := []string{"build", "-trimpath", "-ldflags=" + ldflags}
	if b.PIE {
		args = append(args, "-buildmode=pie")
	}
	exe := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("go", append(args, "-o", exe, ".")...)
	cmd.Dir = mod
	cmd.Env = append(env, "CGO_ENABLED="+cgo)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testutil: go build of %s as %+v: %v\n%s", dir, b, err, out)
	}
	return exe
}
