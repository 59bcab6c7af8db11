package testutil

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// BuildFakeNVML compiles testdata/fakenvml.c into a temporary
// libnvidia-ml.so.1 and returns its path. The fake stands in for NVIDIA
// GPUs, which test machines lack: it reports two GPUs with the fixed
// values its header comment lists. defines are extra gcc flags
// (-DOMIT_ENERGY leaves nvmlDeviceGetTotalEnergyConsumption out;
// -DFAKE_GPUS=8 reports eight GPUs, the two repeated with distinct UUIDs
// and PCI bus ids).
func BuildFakeNVML(t testing.TB, defines ...string) string {
	t.Helper()
	Native(t, "C libraries built by the host's compiler")
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		SkipOrFail(t, "gcc is needed to build the fake NVML library: %v", err)
	}
	// The fake includes go-nvml's own nvml.h, so its ABI is the one the
	// bindings were generated from.
	goNVML, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/NVIDIA/go-nvml").Output()
	if err != nil {
		t.Fatalf("locating go-nvml's module directory: %v", err)
	}
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), "testdata", "fakenvml.c")
	lib := filepath.Join(t.TempDir(), "libnvidia-ml.so.1")
	args := append([]string{
		"-shared", "-fPIC", "-O2", "-Wall", "-Wno-deprecated-declarations",
		"-DNVML_NO_UNVERSIONED_FUNC_DEFS=1",
		"-I" + filepath.Join(strings.TrimSpace(string(goNVML)), "pkg", "nvml"),
	}, defines...)
	args = append(args, "-o", lib, src)
	if out, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return lib
}
