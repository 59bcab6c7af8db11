// Package rdctest builds the fake RDC library that the tests of package
// rdc and of the gpu Source load.
package rdctest

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// Build compiles ../testdata/fakerdc.c into a temporary
// librdc_bootstrap.so.1 and returns its path. Debian ships no RDC, and its
// fields need an AMD GPU: the fake stands in, with RDC's real entry points
// and struct layouts and the values its header comment lists. defines are
// extra gcc flags: -DFAKE_GPUS=8 reports eight GPUs; -DOMIT_STATUS_STRING
// leaves rdc_status_string out; -DSTART_STATUS=N makes rdc_start_embedded
// return N.
//
// The library has no soname, so it never stands in for a real one the
// loader may already have loaded.
func Build(t testing.TB, defines ...string) string {
	t.Helper()
	testutil.Native(t, "a fake library built by the host's compiler")
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		testutil.SkipOrFail(t, "gcc is needed to build the fake RDC library: %v", err)
	}
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), "..", "testdata", "fakerdc.c")
	lib := filepath.Join(t.TempDir(), "librdc_bootstrap.so.1")
	args := append([]string{"-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-std=c11"}, defines...)
	args = append(args, "-o", lib, src, "-lm")
	if out, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return lib
}
