//go:build cgo

package rocmsmi

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// TestWithoutCgo runs the library tests again in a test binary built with
// CGO_ENABLED=0, where purego loads libraries through its own fake cgo
// runtime: the binding must work in both builds.
func TestWithoutCgo(t *testing.T) {
	testutil.Native(t, "the test binary built again without cgo and run")
	goTool, err := exec.LookPath("go")
	if err != nil {
		testutil.SkipOrFail(t, "the go tool is needed to build the tests with CGO_ENABLED=0: %v", err)
	}
	_, self, _, _ := runtime.Caller(0)
	cmd := exec.CommandContext(t.Context(), goTool, "test", "-count=1", "-v",
		"-run", "^(TestNoCgo|TestStructLayoutMatchesTheFake|TestFakeLibraryValues|TestMissingOptionalFunction|TestInitFailure|TestOpenErrors|TestRealLibraryWithoutGPU)$", ".")
	cmd.Dir = filepath.Dir(self)
	// -race needs cgo: keep it out of the child's flags.
	var flags []string
	for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
		if f != "-race" {
			flags = append(flags, f)
		}
	}
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS="+strings.Join(flags, " "))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, name := range []string{"TestNoCgo", "TestFakeLibraryValues", "TestMissingOptionalFunction", "TestStructLayoutMatchesTheFake"} {
		require.Contains(t, string(out), "--- PASS: "+name+" ", "%s", out)
	}
}
