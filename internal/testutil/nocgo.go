package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// RunWithoutCgo runs the tests pass, and alsoRun, of the calling test's
// package again in a test binary built with CGO_ENABLED=0, where purego
// loads libraries through its own fake cgo runtime, and fails unless
// every test of pass passed there (those of alsoRun may skip): a purego
// binding must work in both builds. -race, which needs cgo, is left out of
// the child's GOFLAGS.
func RunWithoutCgo(t *testing.T, pass []string, alsoRun ...string) {
	t.Helper()
	Native(t, "the test binary built again without cgo and run")
	goTool, err := exec.LookPath("go")
	if err != nil {
		SkipOrFail(t, "the go tool is needed to build the tests with CGO_ENABLED=0: %v", err)
	}
	_, caller, _, ok := runtime.Caller(1)
	if !ok {
		t.Fatal("testutil: RunWithoutCgo cannot tell its caller's package")
	}
	run := "^(" + strings.Join(append(append([]string{}, pass...), alsoRun...), "|") + ")$"
	cmd := exec.CommandContext(t.Context(), goTool, "test", "-count=1", "-v", "-run", run, ".")
	cmd.Dir = filepath.Dir(caller)
	var flags []string
	for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
		if f != "-race" {
			flags = append(flags, f)
		}
	}
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS="+strings.Join(flags, " "))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("testutil: the tests without cgo: %v\n%s", err, out)
	}
	for _, name := range pass {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Fatalf("testutil: %s did not pass without cgo:\n%s", name, out)
		}
	}
}
