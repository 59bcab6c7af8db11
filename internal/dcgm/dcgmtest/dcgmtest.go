// Package dcgmtest builds the fake DCGM library that the tests of package
// dcgm and of the gpu Source load.
package dcgmtest

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// Build compiles ../testdata/fakedcgm.c into a temporary libdcgm.so.4 and
// returns its path. Debian ships no DCGM, and its profiling fields need a
// datacenter GPU: the fake stands in, with DCGM's real entry points and
// struct layouts and the values its header comment lists. defines are
// extra gcc flags: -DFAKE_GPUS=8 reports eight GPUs; -DFAKE_MIG splits
// GPU 1 into two MIG compute instances; -DOMIT_HIERARCHY leaves
// dcgmGetGpuInstanceHierarchy out; -DPROF_BUSY starts with another
// profiler holding the counters; -DPROF_UNSUPPORTED refuses profiling;
// -DINIT_STATUS=N makes dcgmInit return N.
//
// The library has no soname, so it never stands in for a real one the
// loader may already have loaded.
func Build(t testing.TB, defines ...string) string {
	t.Helper()
	testutil.Native(t, "a fake library built by the host's compiler")
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		testutil.SkipOrFail(t, "gcc is needed to build the fake DCGM library: %v", err)
	}
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), "..", "testdata", "fakedcgm.c")
	lib := filepath.Join(t.TempDir(), "libdcgm.so.4")
	args := append([]string{"-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-std=c11"}, defines...)
	args = append(args, "-o", lib, src, "-lm")
	if out, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return lib
}
