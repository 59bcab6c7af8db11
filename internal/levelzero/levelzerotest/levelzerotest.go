// Package levelzerotest builds the fake Level Zero driver the tests of
// package levelzero and of the gpu Source load (../testdata/fakeze.c),
// and runs a test in a child process: the Level Zero loader initialises
// once per process (zeInit's outcome, drivers found or not, is kept for
// the process's life), so each scenario of the real loader runs in a
// process of its own.
package levelzerotest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// Header is the Level Zero header the fake is built against (Debian's
// libze-dev).
const Header = "/usr/include/level_zero/zes_api.h"

// Build compiles ../testdata/fakeze.c with gcc into a library named name
// in a temporary directory and returns its path. defines are extra gcc
// flags: -DFAKE_AS_LOADER builds a stand-in for a Level Zero 1.5+ loader
// (the API itself, with zesInit), -DFAKE_NO_ZES_INIT leaves zesInit,
// zesDriverGet and zesDeviceGet out of it; -DFAKE_GPUS=N, -DFAKE_BUS=N and
// -DFAKE_FAIL_GPU=N change what it reports. The default is a driver the
// real loader loads through ZE_ENABLE_ALT_DRIVERS.
func Build(t testing.TB, name string, defines ...string) string {
	t.Helper()
	testutil.Native(t, "a fake library built by the host's compiler")
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		testutil.SkipOrFail(t, "gcc is needed to build the fake Level Zero driver: %v", err)
	}
	if _, err := os.Stat(Header); err != nil {
		testutil.SkipOrFail(t, "the Level Zero headers (Debian's libze-dev) are needed to build the fake driver: %v", err)
	}
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), "..", "testdata", "fakeze.c")
	lib := filepath.Join(t.TempDir(), name)
	args := append([]string{"-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-std=c11", "-fvisibility=hidden"}, defines...)
	args = append(args, "-o", lib, src)
	if out, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return lib
}

// ChildEnv marks a child process: a test that finds it set runs its
// scenario; without it, it is the parent's helper and returns.
const ChildEnv = "XPUSCOPE_TEST_LEVEL_ZERO_CHILD"

// InChild reports whether this process is a child that Run started.
func InChild() bool { return os.Getenv(ChildEnv) == "1" }

// Run runs the test named test of this test binary in a child process
// with env added to the environment (ZE_ENABLE_ALT_DRIVERS, …; the
// parent's ZES_ENABLE_SYSMAN and ZE_ENABLE_ALT_DRIVERS are removed first),
// and fails t with the child's output if it fails.
func Run(t *testing.T, test string, env ...string) string {
	t.Helper()
	testutil.Native(t, "the test binary run again as a program, with the host's Level Zero loader")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "ZES_ENABLE_SYSMAN=") || strings.HasPrefix(kv, "ZE_ENABLE_ALT_DRIVERS=") || strings.HasPrefix(kv, ChildEnv+"=") {
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, ChildEnv+"=1")
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil || !strings.Contains(out.String(), "--- PASS: "+test) {
		t.Fatalf("child %s: %v\n%s", test, err, out.String())
	}
	return out.String()
}
