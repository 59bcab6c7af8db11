package uprobe

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// dlcycleSrc maps vmas regions of its own (a large process's address
// space, for the walk to go through), then dlopens and dlcloses the
// library named by argv[1] n times, and prints the nanoseconds a cycle
// took. Each cycle calls the loader's _dl_debug_state four times.
const dlcycleSrc = `
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
int main(int argc, char **argv) {
	long n = atol(argv[2]), vmas = atol(argv[3]);
	for (long i = 0; i < vmas; i++) /* alternate protections: the regions do not merge */
		mmap(NULL, 4096, i % 2 ? PROT_READ : PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++) {
		void *h = dlopen(argv[1], RTLD_NOW);
		if (!h) {
			fprintf(stderr, "%s\n", dlerror());
			return 1;
		}
		dlclose(h);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%.1f\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n);
	return 0;
}
`

// BenchmarkLoaderWalk: what the watcher costs the process it watches, at
// every dlopen and dlclose: a cycle of both in a process of 1,000 mappings
// (the loader hook walks them all, twice a call: none is new), without a
// Tracer in this process and with one, in one run (another agent on the
// host would watch both); and per exec, a /bin/true
// started with and without. The ratios are the cost: the uprobe trap on
// _dl_debug_state, and the walks.
//
//	go test -run '^$' -bench LoaderWalk -benchtime 1x ./internal/uprobe
func BenchmarkLoaderWalk(b *testing.B) {
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(b, "attaching uprobes needs root")
	}
	prog := buildELF(b, dlcycleSrc, "-O2", "-ldl")
	lib := buildELF(b, holdLibSrc, "-shared", "-fPIC", "-O2")
	trueBin, err := exec.LookPath("true")
	require.NoError(b, err)
	const cycles, vmas, execs = 20000, "1000", 300
	cycle := func() float64 {
		out, err := exec.Command(prog, lib, strconv.Itoa(cycles), vmas).Output()
		require.NoError(b, err)
		ns, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
		require.NoError(b, err)
		return ns
	}
	start := func() float64 {
		t0 := time.Now()
		for range execs {
			require.NoError(b, exec.Command(trueBin).Run())
		}
		return float64(time.Since(t0).Nanoseconds()) / execs
	}
	hits, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	require.NoError(b, err)
	defer hits.Close()
	var bare, watched, bareExec, watchedExec float64
	for range b.N {
		bare += cycle()
		bareExec += start()
		tr, err := New(Config{Rescan: time.Hour, Capture: true, Hold: true, Targets: []Target{{
			Name: "none", Anchor: "xpu_no_such_anchor", Names: []string{"libxpunone.so"},
			Probes: []Probe{{Symbol: "xpu_no_such_anchor", Entry: hitCounter(b, hits, 0, ebpf.AttachNone)}},
		}}})
		require.NoError(b, err)
		cycle() // the first shows the library, new, to the Tracer
		watched += cycle()
		watchedExec += start()
		require.NoError(b, tr.Close())
	}
	n := float64(b.N)
	b.ReportMetric(bare/n, "ns/cycle-unwatched")
	b.ReportMetric(watched/n, "ns/cycle-watched")
	b.ReportMetric(watched/bare, "watched/unwatched")
	b.ReportMetric(bareExec/n, "ns/exec-unwatched")
	b.ReportMetric(watchedExec/n, "ns/exec-watched")
	b.ReportMetric(watchedExec/bareExec, "exec-watched/unwatched")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkNewProgram: what a program no Tracer has seen pays at its
// first exec (each exec here runs a new copy of true, a file of its own):
// without a Tracer, with a holding Tracer whose target only libraries
// carry (the program is classified while it runs), and with one whose
// target programs can carry (Target.InPrograms: the program is held from
// its exec until classified), in one run: 7 interleaved rounds of 100
// execs each, the median round of each. The difference between the last
// two is the hold: the watcher's record, user space's classification of
// the program, and the stop and continue. A program's later execs pay
// none of it.
//
//	go test -run '^$' -bench NewProgram -benchtime 1x ./internal/uprobe
func BenchmarkNewProgram(b *testing.B) {
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(b, "attaching uprobes needs root")
	}
	trueBin, err := exec.LookPath("true")
	require.NoError(b, err)
	const execs, rounds = 100, 7
	dir := b.TempDir()
	copies := 0
	// start runs execs new copies of true, each once, and returns the ns
	// an exec took.
	start := func() float64 {
		paths := make([]string, execs)
		for i := range paths {
			paths[i] = filepath.Join(dir, "true"+strconv.Itoa(copies))
			copies++
			copyFile(b, trueBin, paths[i])
		}
		t0 := time.Now()
		for _, p := range paths {
			cmd := exec.Command(p)
			// No controlling terminal: such a process is never held.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			require.NoError(b, cmd.Run())
		}
		ns := float64(time.Since(t0).Nanoseconds()) / execs
		for _, p := range paths {
			_ = os.Remove(p)
		}
		return ns
	}
	hits, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	require.NoError(b, err)
	defer hits.Close()
	watched := func(inPrograms bool) float64 {
		tr, err := New(Config{Rescan: time.Hour, Hold: true, Targets: []Target{{
			Name: "none", Anchor: "xpu_no_such_anchor", Names: []string{"libxpunone.so"}, InPrograms: inPrograms,
			Probes: []Probe{{Symbol: "xpu_no_such_anchor", Entry: hitCounter(b, hits, 0, ebpf.AttachNone)}},
		}}})
		require.NoError(b, err)
		defer func() { require.NoError(b, tr.Close()) }()
		return start()
	}
	median := func(v []float64) float64 {
		slices.Sort(v)
		return v[len(v)/2]
	}
	var bare, libs, progs []float64
	for range b.N * rounds {
		bare = append(bare, start())
		libs = append(libs, watched(false))
		progs = append(progs, watched(true))
	}
	mb, ml, mp := median(bare), median(libs), median(progs)
	b.ReportMetric(mb, "ns/exec-unwatched")
	b.ReportMetric(ml, "ns/exec-watched")
	b.ReportMetric(mp, "ns/exec-held")
	b.ReportMetric(ml/mb, "watched/unwatched")
	b.ReportMetric(mp/ml, "held/watched")
	b.ReportMetric(mp-ml, "ns/hold")
	b.ReportMetric(0, "ns/op")
}

// copyFile copies the file src to a new executable file dst.
func copyFile(tb testing.TB, src, dst string) {
	tb.Helper()
	b, err := os.ReadFile(src)
	require.NoError(tb, err)
	require.NoError(tb, os.WriteFile(dst, b, 0o755))
}
