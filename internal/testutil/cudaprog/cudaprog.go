// Package cudaprog builds and drives small C programs that call the REAL
// CUDA runtime (libcudart) and driver (libcuda) with known arguments, for
// testing tracers of those APIs (cudatrace) on machines without a GPU.
//
// Debian's libcudart11.0 (CUDA 11.8) and libcuda1 (driver 535) install
// without a GPU or kernel module. Their calls then fail (cudart 100
// cudaErrorNoDevice, cuInit 100, other driver calls 3 or 400), but only
// after entering the exported entry points, so uprobes fire with the real
// arguments. The programs (testdata/*.c) run the scenarios described by
// this package's tables (RuntimeLaunch, DriverLaunch, ...), which are
// compiled into them (Build generates scenarios.h from scenario.go): a
// tracer test asserts exact values against the same tables.
//
// Programs (Build names):
//
//	runtime   PIE linked against the real libcudart; scenarios launch,
//	          threads, register, loop <n> [<threads>]
//	driver    PIE linked against the real libcuda.so.1; launch,
//	          loop <n> [<threads>]
//	static    PIE with its own cudaLaunchKernel (a statically linked
//	          cudart); launch, loop <n> [<threads>]
//	dlopen    PIE that dlopen()s the library named on its command line and
//	          calls its cudaLaunchKernel once (DlopenLaunch)
//	hip       PIE linked against the real HIP runtime (libamdhip64), which
//	          calls each probed HIP function once with known arguments (see
//	          testdata/hip.c for its lines)
//	forward   a stand-in libcudart.so.12 whose cudaLaunchKernel goes on to
//	          the real libcuda's cuLaunchKernel (ForwardLaunch)
//	recorder  an LD_PRELOAD library printing the arguments of every call
//	          (this package's own tests)
//	linger    an LD_PRELOAD library keeping a program alive at exit until
//	          its stdin is closed (Wait closes it), so that a tracer can
//	          still read its /proc/<pid> when it handles its events
//	late      PIE that dlopen()s the library named on its command line and
//	          calls its cudaLaunchKernel n times, gap µs apart, from the
//	          instruction after the load (see testdata/late.c)
//	linked    late linked against the real libcudart: the launches are the
//	          first thing main does
//	short     PIE linked against the real libcudart that launches each of
//	          ShortKernels once and exits at once, waiting for nothing
//	libnccl   a stand-in libnccl.so.2 with NCCL's signatures (Debian has
//	          no NCCL; see nccl.go)
//	nccl      PIE linked against libnccl, the ranks of two communicators
//	          as threads (see nccl.go for its lines); loop <n> [<threads>]
//
// Every program but linked and short prints "READY <pid>" and then waits
// for a line on stdin before its first CUDA call, so a tracer can attach
// first; Start, Go and Wait drive that protocol. See testdata/common.h
// for the output lines.
package cudaprog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// Debian packages providing the real libraries (non-free component).
const (
	CudartPackage  = "libcudart11.0"
	LibcudaPackage = "libcuda1"
	HIPPackage     = "libamdhip64-5"
)

// lib is a located shared library.
type lib struct {
	link   string // the path named by its soname, used to link
	real   string // symlinks resolved: the path /proc/<pid>/maps shows
	cached bool   // found in the ldconfig cache: the loader finds it unaided
}

var (
	cudartOnce, libcudaOnce, hipOnce sync.Once
	cudartLib, libcudaLib, hipLib    lib
	cudartErr, libcudaErr, hipErr    error
)

func locateCudart() (lib, error) {
	cudartOnce.Do(func() { cudartLib, cudartErr = locate("libcudart.so.11.0", "libcudart.so.12") })
	return cudartLib, cudartErr
}

func locateLibcuda() (lib, error) {
	libcudaOnce.Do(func() { libcudaLib, libcudaErr = locate("libcuda.so.1") })
	return libcudaLib, libcudaErr
}

func locateHIP() (lib, error) {
	hipOnce.Do(func() { hipLib, hipErr = locate("libamdhip64.so.5") })
	return hipLib, hipErr
}

// RealHIP returns the path of the real HIP runtime library (Debian's
// libamdhip64-5, HIP 5.2) with symlinks resolved, skipping t, or failing
// it in CI, when it is not installed.
func RealHIP(t testing.TB) string {
	t.Helper()
	l, err := locateHIP()
	if err != nil {
		testutil.SkipOrFail(t, "the HIP runtime is not installed (Debian package %s): %v", HIPPackage, err)
	}
	return l.real
}

// RealCudart returns the path of the real CUDA runtime library with
// symlinks resolved (e.g. /usr/lib/x86_64-linux-gnu/libcudart.so.11.8.89,
// the path /proc/<pid>/maps shows for it), skipping t, or failing it in
// CI, when it is not installed.
func RealCudart(t testing.TB) string {
	t.Helper()
	l, err := locateCudart()
	if err != nil {
		testutil.SkipOrFail(t, "the CUDA runtime is not installed (Debian package %s, non-free): %v", CudartPackage, err)
	}
	return l.real
}

// RealLibcuda returns the path of the real CUDA driver library with
// symlinks resolved (e.g.
// /usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.535.309.01),
// skipping t, or failing it in CI, when it is not installed.
func RealLibcuda(t testing.TB) string {
	t.Helper()
	l, err := locateLibcuda()
	if err != nil {
		testutil.SkipOrFail(t, "the CUDA driver library is not installed (Debian package %s, non-free): %v", LibcudaPackage, err)
	}
	return l.real
}

// locate finds the first of sonames the dynamic loader would find: in the
// ldconfig cache, else in the usual directories.
func locate(sonames ...string) (lib, error) {
	cache := ldconfigCache()
	dirs := []string{
		"/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib",
		"/usr/lib/x86_64-linux-gnu/nvidia/current", "/usr/local/cuda/lib64", "/usr/lib/wsl/lib",
	}
	for _, so := range sonames {
		cands := cache[so]
		n := len(cands)
		for _, d := range dirs {
			cands = append(cands, filepath.Join(d, so))
		}
		for i, c := range cands {
			real, err := filepath.EvalSymlinks(c)
			if err != nil {
				continue
			}
			if st, err := os.Stat(real); err == nil && st.Mode().IsRegular() {
				return lib{link: c, real: real, cached: i < n}, nil
			}
		}
	}
	return lib{}, fmt.Errorf("none of %s found in the ldconfig cache or %s", strings.Join(sonames, ", "), strings.Join(dirs, ", "))
}

// ldconfigCache maps sonames to paths from "ldconfig -p" (x86-64 only).
func ldconfigCache() map[string][]string {
	out := map[string][]string{}
	bin, err := exec.LookPath("ldconfig")
	if err != nil {
		for _, p := range []string{"/sbin/ldconfig", "/usr/sbin/ldconfig"} {
			if _, err := os.Stat(p); err == nil {
				bin = p
				break
			}
		}
	}
	if bin == "" {
		return out
	}
	b, err := exec.Command(bin, "-p").Output()
	if err != nil {
		return out
	}
	// "\tlibcuda.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcuda.so.1"
	for line := range strings.Lines(string(b)) {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), " (")
		if !ok {
			continue
		}
		flags, path, ok := strings.Cut(rest, ") => ")
		if !ok || (runtime.GOARCH == "amd64" && !strings.Contains(flags, "x86-64")) {
			continue
		}
		out[name] = append(out[name], strings.TrimSpace(path))
	}
	return out
}

// target is how to build one program.
type target struct {
	src     string // in testdata
	out     string // file name
	shared  bool
	lib     func() (lib, error)
	pkg     string   // Debian package providing lib
	defines []string // -D flags
	// needs is the shared library target the program is linked against
	// (built first), instead of lib.
	needs string
}

// targets are the programs Build knows. The executables are PIEs linked
// without -rdynamic: the kernel stubs (and static's cudaLaunchKernel) are
// in .symtab only, as in an unstripped nvcc-built application.
var targets = map[string]target{
	"runtime":    {src: "runtime.c", out: "runtime", lib: locateCudart, pkg: CudartPackage},
	"driver":     {src: "driver.c", out: "driver", lib: locateLibcuda, pkg: LibcudaPackage},
	"static":     {src: "static.c", out: "static"},
	"dlopen":     {src: "dlopen.c", out: "dlopen"},
	"hip":        {src: "hip.c", out: "hipprog", lib: locateHIP, pkg: HIPPackage},
	"forward":    {src: "forward.c", out: "libcudart.so.12", shared: true, lib: locateLibcuda, pkg: LibcudaPackage},
	"recorder":   {src: "recorder.c", out: "librecorder.so", shared: true},
	"linger":     {src: "linger.c", out: "liblinger.so", shared: true},
	"late":       {src: "late.c", out: "late"},
	"linked":     {src: "late.c", out: "linked", lib: locateCudart, pkg: CudartPackage, defines: []string{"CUDAPROG_LINKED"}},
	"staticlate": {src: "late.c", out: "staticlate", defines: []string{"CUDAPROG_LINKED", "CUDAPROG_STATIC"}},
	"short":      {src: "short.c", out: "short", lib: locateCudart, pkg: CudartPackage},
	"libnccl":    {src: "nccl_stub.c", out: "libnccl.so.2", shared: true},
	"nccl":       {src: "nccl.c", out: "nccl", needs: "libnccl"},
}

type built struct {
	once sync.Once
	path string
	warn string // gcc's warnings, logged
	skip string // a missing tool or library: skip, or fail in CI
	err  error  // a build failure: always fail
}

var (
	builds   sync.Map // name -> *built
	rootOnce sync.Once
	rootDir  string
	rootErr  error
)

// Build compiles the program (or library) called name, from
// testdata/<name>.c, and returns its path. The output is cached for the
// life of the test binary in a directory of its own (removed by the next
// test binary that finds its process gone), not in t.TempDir(), which
// would vanish with the first test. "forward" is a file named
// libcudart.so.12 alone in its directory. A missing gcc or library skips
// t, or fails it when CI is set; a compile error fails it.
func Build(t testing.TB, name string) string {
	t.Helper()
	testutil.Native(t, "the vendor libraries and C programs built by the host's compiler")
	tg, ok := targets[name]
	if !ok {
		t.Fatalf("cudaprog: no program %q", name)
	}
	b := buildOnce(name, tg)
	if b.warn != "" {
		t.Logf("cudaprog: gcc warned building %s:\n%s", name, b.warn)
	}
	if b.skip != "" {
		testutil.SkipOrFail(t, "cudaprog: building %s: %s", name, b.skip)
	}
	if b.err != nil {
		t.Fatalf("cudaprog: building %s: %v", name, b.err)
	}
	return b.path
}

// buildOnce builds the target name once for the life of the test
// binary.
func buildOnce(name string, tg target) *built {
	v, _ := builds.LoadOrStore(name, new(built))
	b := v.(*built)
	b.once.Do(func() { b.path, b.warn, b.skip, b.err = build(name, tg) })
	return b
}

func build(name string, tg target) (path, warn, skip string, err error) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return "", "", fmt.Sprintf("gcc is needed (Debian package gcc): %v", err), nil
	}
	var l lib
	if tg.lib != nil {
		if l, err = tg.lib(); err != nil {
			return "", "", fmt.Sprintf("Debian package %s (non-free) is needed: %v", tg.pkg, err), nil
		}
	}
	if tg.needs != "" {
		dep := buildOnce(tg.needs, targets[tg.needs])
		if dep.skip != "" || dep.err != nil {
			return "", "", dep.skip, dep.err
		}
		l = lib{link: dep.path, real: dep.path}
	}
	root, err := buildRoot()
	if err != nil {
		return "", "", "", err
	}
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", "", err
	}
	_, self, _, _ := runtime.Caller(0)
	testdata := filepath.Join(filepath.Dir(self), "testdata")
	out := filepath.Join(dir, tg.out)
	args := []string{
		"-std=gnu11", "-O2", "-g0", "-Wall", "-fno-ipa-icf", "-fno-omit-frame-pointer", "-pthread",
		"-I", root, "-I", testdata,
	}
	for _, d := range tg.defines {
		args = append(args, "-D"+d)
	}
	if tg.shared {
		args = append(args, "-shared", "-fPIC", "-Wl,-soname,"+tg.out)
	} else {
		args = append(args, "-fPIE", "-pie")
	}
	args = append(args, "-o", out, filepath.Join(testdata, tg.src))
	if l.link != "" {
		// By path: DT_NEEDED is the library's soname.
		args = append(args, l.link)
		if !l.cached { // the loader would not find it unaided
			args = append(args, "-Wl,-rpath,"+filepath.Dir(l.link))
		}
	}
	args = append(args, "-ldl")
	msg, err := exec.Command(gcc, args...).CombinedOutput()
	if err != nil {
		return "", "", "", fmt.Errorf("gcc %s: %v\n%s", strings.Join(args, " "), err, msg)
	}
	return out, string(bytes.TrimSpace(msg)), "", nil
}

// buildRoot creates this process's build directory with the generated
// scenarios.h, nccl.h and nccl_scenario.h, removing the directories of test binaries that are gone.
func buildRoot() (string, error) {
	rootOnce.Do(func() {
		parent := filepath.Join(os.TempDir(), fmt.Sprintf("xpuscope-cudaprog-%d", os.Getuid()))
		if rootErr = os.MkdirAll(parent, 0o755); rootErr != nil {
			return
		}
		if ents, err := os.ReadDir(parent); err == nil {
			for _, e := range ents {
				pid, _, _ := strings.Cut(e.Name(), "-")
				if n, err := strconv.Atoi(pid); err == nil && n != os.Getpid() &&
					errors.Is(syscall.Kill(n, 0), syscall.ESRCH) {
					_ = os.RemoveAll(filepath.Join(parent, e.Name()))
				}
			}
		}
		if rootDir, rootErr = os.MkdirTemp(parent, fmt.Sprintf("%d-", os.Getpid())); rootErr != nil {
			return
		}
		if rootErr = os.WriteFile(filepath.Join(rootDir, "scenarios.h"), []byte(header()), 0o644); rootErr != nil {
			return
		}
		rootErr = writeNCCLHeaders(rootDir)
	})
	return rootDir, rootErr
}

// CopyLib copies the file src to rel under a new t.TempDir() (creating
// the directories) and returns the new path, e.g.
// CopyLib(t, RealCudart(t), "site-packages/nvidia/cuda_runtime/lib/libcudart.so.12")
// for a pip-wheel-like layout. The copy is a distinct inode: uprobes
// attached to the original do not fire for it.
func CopyLib(t testing.TB, src, rel string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), rel)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// Stubs parses the "STUB <name> 0x<addr>" lines: name -> address.
func Stubs(lines []string) map[string]uint64 {
	out := map[string]uint64{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 3 && f[0] == "STUB" {
			if a, err := strconv.ParseUint(strings.TrimPrefix(f[2], "0x"), 16, 64); err == nil {
				out[f[1]] = a
			}
		}
	}
	return out
}

// Threads parses the "THREAD <i> <tid>" lines: the tid of each thread
// index.
func Threads(lines []string) map[int]int {
	out := map[int]int{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 3 && f[0] == "THREAD" {
			i, err1 := strconv.Atoi(f[1])
			tid, err2 := strconv.Atoi(f[2])
			if err1 == nil && err2 == nil {
				out[i] = tid
			}
		}
	}
	return out
}

// Rets parses the "RET <api> <code> <count>" lines: api -> code -> count.
func Rets(lines []string) map[string]map[int]int {
	out := map[string]map[int]int{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 4 || f[0] != "RET" {
			continue
		}
		code, err1 := strconv.Atoi(f[2])
		n, err2 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil {
			continue
		}
		if out[f[1]] == nil {
			out[f[1]] = map[int]int{}
		}
		out[f[1]][code] += n
	}
	return out
}

// NsPerCall parses the "NS_PER_CALL <ns>" line of a loop run.
func NsPerCall(lines []string) (float64, bool) {
	for _, l := range lines {
		if v, ok := strings.CutPrefix(l, "NS_PER_CALL "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
	}
	return 0, false
}
