// Package rocmsmitest builds the fake ROCm SMI library that the tests of
// package rocmsmi and of the gpu Source load.
package rocmsmitest

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// Build compiles ../testdata/fakerocmsmi.c into a temporary
// librocm_smi64.so.1 and returns its path. The fake reports two AMD GPUs
// with the values its header comment lists. defines are extra gcc flags:
// -DOMIT_ENERGY leaves rsmi_dev_energy_count_get out; -DINIT_STATUS=8
// makes rsmi_init fail with RSMI_STATUS_INIT_ERROR.
//
// The library has no soname, so it never stands in for the real one that
// the loader may already have loaded.
func Build(t testing.TB, defines ...string) string {
	t.Helper()
	testutil.Native(t, "C libraries built by the host's compiler")
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		testutil.SkipOrFail(t, "gcc is needed to build the fake ROCm SMI library: %v", err)
	}
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), "..", "testdata", "fakerocmsmi.c")
	lib := filepath.Join(t.TempDir(), "librocm_smi64.so.1")
	args := append([]string{"-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-std=c11"}, defines...)
	args = append(args, "-o", lib, src)
	if out, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return lib
}
