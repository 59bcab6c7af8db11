// Package amdsmitest builds the fake AMD SMI library that the tests of
// package amdsmi and of the gpu Source load.
package amdsmitest

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// Build compiles ../testdata/fakeamdsmi.c into a temporary libamd_smi.so
// and returns its path. The fake reports two AMD GPUs with the values its
// header comment lists, in the struct layouts of AMD SMI 26 (ROCm 7).
// defines are extra gcc flags: -DLAYOUT_24_6 and -DLAYOUT_23_2 select the
// layouts of those library versions, -DVERSION_24_7 a version the binding
// does not know; -DOMIT_ENERGY leaves amdsmi_get_energy_count out;
// -DINIT_STATUS=18 makes amdsmi_init fail with AMDSMI_STATUS_INIT_ERROR.
//
// The library has no soname, so it never stands in for the real one that
// the loader may already have loaded.
func Build(t testing.TB, defines ...string) string {
	t.Helper()
	testutil.Native(t, "C libraries built by the host's compiler")
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		testutil.SkipOrFail(t, "gcc is needed to build the fake AMD SMI library: %v", err)
	}
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), "..", "testdata", "fakeamdsmi.c")
	lib := filepath.Join(t.TempDir(), "libamd_smi.so")
	args := append([]string{"-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-std=c11"}, defines...)
	args = append(args, "-o", lib, src)
	if out, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return lib
}
