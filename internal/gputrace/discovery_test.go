package gputrace

// Kernel-tier tests of what the discovery (internal/uprobe) does for the
// tracer: no call lost when a process loads a copy of the runtime nobody
// has seen and calls it at once, the loss that cannot be avoided counted,
// and the kernels of processes that launch and exit at once named.

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/gputracebpf"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/testutil/cudaprog"
	"github.com/xpuscope/xpuscope/internal/uprobe"
	"github.com/xpuscope/xpuscope/semconv"
)

// lateStarter is how a late starter is run: the late program (dlopen) or
// the linked one, with n launches gap apart from the first instruction
// after the load.
type lateStarter struct {
	linked bool
	n      int
	gap    time.Duration
}

func (l lateStarter) String() string {
	how := "dlopen"
	if l.linked {
		how = "linked"
	}
	return fmt.Sprintf("%s/%d launches %v apart", how, l.n, l.gap)
}

// start runs l in a mount namespace of its own, with a copy of the real
// runtime on a tmpfs mounted there: a file no tracer has seen, at a path
// only that namespace has, found through LD_LIBRARY_PATH (linked) or
// dlopened by path (late). It returns the process and the library's path
// as the process sees it. attrs, if set, is the process's SysProcAttr
// (the default: a session of its own, without a controlling terminal).
func (l lateStarter) start(t *testing.T, attrs *syscall.SysProcAttr, extra ...*os.File) (*cudaprog.Proc, string) {
	t.Helper()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		testutil.SkipOrFail(t, "unshare (util-linux) is needed: %v", err)
	}
	real := cudaprog.RealCudart(t)
	linger := buildLinger(t)
	mnt := t.TempDir() // empty on the host; a tmpfs in the program's namespace
	var exe, lib, script string
	if l.linked {
		exe = cudaprog.Build(t, "linked")
		lib = filepath.Join(mnt, soname(t, real))
		script = `mount -t tmpfs none "$1" && cp "$2" "$3" && export LD_LIBRARY_PATH="$1" LD_PRELOAD="$5" && exec "$4" "$6" "$7"`
	} else {
		exe = cudaprog.Build(t, "late")
		lib = filepath.Join(mnt, pipWheelPath)
		script = `mount -t tmpfs none "$1" && mkdir -p "$(dirname "$3")" && cp "$2" "$3" && export LD_PRELOAD="$5" && exec "$4" "$3" "$6" "$7"`
	}
	// LD_PRELOAD for the program only: the linger library would hold up
	// mount and cp too.
	cmd := exec.Command(unshare, "-m", "sh", "-c", script, "sh", mnt, real, lib, exe, linger,
		strconv.Itoa(l.n), strconv.Itoa(int(l.gap/time.Microsecond)))
	if attrs == nil {
		// A process with a controlling terminal is never held: make
		// sure the test's does not inherit one.
		attrs = &syscall.SysProcAttr{Setsid: true}
	}
	cmd.SysProcAttr = attrs
	cmd.ExtraFiles = extra
	p := cudaprog.StartCmd(t, cmd)
	_, err = os.Stat(lib)
	require.ErrorIs(t, err, os.ErrNotExist, "the library must not be visible on the host")
	return p, lib
}

// soname returns the DT_SONAME of the shared library at path.
func soname(t *testing.T, path string) string {
	t.Helper()
	f, err := elf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	names, err := f.DynString(elf.DT_SONAME)
	require.NoError(t, err)
	require.Len(t, names, 1, "%s: DT_SONAME", path)
	return names[0]
}

// run runs l under tr, and returns the launches tr counted of it (the
// calls of cudaLaunchKernel, records received plus the calls the kernel
// counted unrecorded) once its process is done, and the records received.
// lossy says calls may be lost: the count may stay under n.
func (l lateStarter) run(t *testing.T, tr *traced, lossy bool, attrs *syscall.SysProcAttr, extra ...*os.File) (calls float64, records int) {
	t.Helper()
	p, lib := l.start(t, attrs, extra...)
	p.Go()
	lines := p.Wait() // the linger library keeps it until its events are read
	require.Equal(t, map[string]map[int]int{"cudaLaunchKernel": {cudaprog.DlopenLaunch.Ret: l.n}}, cudaprog.Rets(lines))
	a, ok := tr.attachment(TargetRuntime, lib)
	require.True(t, ok, "not attached to %s: %+v", lib, tr.Status())
	require.Equal(t, lib, a.Path, "the path as the process sees it")
	require.Equal(t, p.Pid, a.PID)

	api := semconv.CUDAAPIName.String("cudaLaunchKernel")
	countedOf := func(pts testutil.Points) float64 {
		c := ofPid(pts, p.Pid).Find(semconv.CUDAAPICalls.Name, api)
		if len(c) != 1 {
			return 0
		}
		return c[0].Value
	}
	// Every record was made before DONE; the reader drains the ring each
	// poll interval, and the unrecorded calls come from the kernel once a
	// second. What l counted is the count once it reaches n (all there
	// are), or, when lost calls keep it under, once it held still over
	// two housekeeping periods.
	var (
		pts  testutil.Points
		last = -1.0
		at   time.Time
	)
	settled := poll(30*time.Second, func() bool {
		pts = tr.collect(t)
		c := countedOf(pts)
		switch {
		case c == float64(l.n):
			return true
		case c != last:
			last, at = c, time.Now()
		}
		return lossy && c > 0 && time.Since(at) > 2*housekeeping
	})
	records = tr.rec.Counts()[uint32(p.Pid)]
	require.True(t, settled || !lossy, "no launch of pid %d counted: %d records", p.Pid, records)
	return countedOf(pts), records
}

// TestLateStarters: a process that loads a copy of the runtime no tracer
// has seen, linked or dlopened, in a mount namespace of its own, and calls
// it from the first instruction after the load, back to back or 1 ms
// apart, has every call counted: the discovery holds it from the load
// until the probes are live. The fallback sweep is an hour away: only the
// exec and loader hooks find the copies.
func TestLateStarters(t *testing.T) {
	requireRoot(t)
	tr := startTracing(t, WithRescanInterval(time.Hour))
	for _, l := range []lateStarter{
		{linked: false, n: 1000, gap: 0},
		{linked: false, n: 100, gap: time.Millisecond},
		{linked: true, n: 1000, gap: 0},
		{linked: true, n: 100, gap: time.Millisecond},
	} {
		t.Run(l.String(), func(t *testing.T) {
			calls, records := l.run(t, tr, false, nil)
			require.Equal(t, float64(l.n), calls, "launches counted; attached late: %+v", tr.tracer.Late())
			require.Equal(t, l.n, records, "launch records")
		})
	}
}

// TestLateStarterOnATerminal: a process with a controlling terminal is not
// held (job control would see it stop): the copy of the runtime it loads
// is attached while it runs, and counted as attached late, for that
// reason. Its calls before the probes were live are lost; what is counted
// is never more than it made.
func TestLateStarterOnATerminal(t *testing.T) {
	requireRoot(t)
	tr := startTracing(t, WithRescanInterval(time.Hour))
	pty := cudaprog.Terminal(t)
	l := lateStarter{n: 100, gap: time.Millisecond}
	// The terminal is the child's fd 3 (its first extra file).
	calls, _ := l.run(t, tr, true, &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 3}, pty)
	require.LessOrEqual(t, calls, float64(l.n))
	require.Contains(t, tr.tracer.Late(), uprobe.Late{Target: TargetRuntime, Reason: semconv.LateReasonTerminal, Files: 1})
	late := tr.collect(t).Find(semconv.XpuscopeUprobeAttachedLate.Name, semconv.XpuscopeTarget.String(TargetRuntime),
		semconv.XpuscopeUprobeLateReason.String(semconv.LateReasonTerminal))
	require.Len(t, late, 1)
	require.Equal(t, 1.0, late[0].Value)
}

// TestLoadHoldOff: WithLoadHold(false) lets the late starter run on: its
// copy of the runtime is counted as attached late, not held.
func TestLoadHoldOff(t *testing.T) {
	requireRoot(t)
	tr := startTracing(t, WithRescanInterval(time.Hour), WithLoadHold(false))
	l := lateStarter{n: 100, gap: time.Millisecond}
	calls, _ := l.run(t, tr, true, nil)
	require.LessOrEqual(t, calls, float64(l.n))
	require.Contains(t, tr.tracer.Late(), uprobe.Late{Target: TargetRuntime, Reason: semconv.LateReasonNotHeld, Files: 1})
}

// namer records the name the Source gives each launch record, by process,
// as it reads it.
type namer struct {
	tr    **traced
	mu    sync.Mutex
	names map[uint32][]string
}

func (n *namer) hook(e *gputracebpf.Event) {
	if e.Kind != gputracebpf.KindLaunch {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	name, ok := (*n.tr).names.Symbolize(e.PID, e.Func())
	if !ok {
		name = semconv.Unknown
	}
	n.names[e.PID] = append(n.names[e.PID], name)
}

// TestShortLivedNamed: 100 processes that launch 10 kernels each and exit
// at once, waiting for nothing, get every launch named, though each is
// gone long before its records are read: the discovery captured its
// mappings, and held the files open, while it ran.
func TestShortLivedNamed(t *testing.T) {
	requireRoot(t)
	var tr *traced
	n := &namer{tr: &tr, names: map[uint32][]string{}}
	tr = startTracing(t, WithRescanInterval(time.Hour), withEventHook(n.hook))
	exe := cudaprog.Build(t, "short")
	want := make([]string, len(cudaprog.ShortKernels))
	for i, k := range cudaprog.ShortKernels {
		want[i] = demangled(cudaprog.Call{Func: k})
	}
	slices.Sort(want)

	const procs = 100
	pids := make([]uint32, 0, procs)
	for range procs {
		cmd := exec.Command(exe)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		pids = append(pids, uint32(cmd.Process.Pid))
	}
	done := func() bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		for _, pid := range pids {
			if len(n.names[pid]) < len(want) {
				return false
			}
		}
		return true
	}
	if !poll(30*time.Second, done) {
		n.mu.Lock()
		short := map[uint32][]string{}
		for _, pid := range pids {
			if len(n.names[pid]) < len(want) {
				short[pid] = n.names[pid]
			}
		}
		n.mu.Unlock()
		require.Fail(t, "not every launch was read", "the processes with fewer than %d: %v; dropped %v", len(want), short,
			tr.collect(t).Find(semconv.XpuscopeCUDAEventsDropped.Name))
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, pid := range pids {
		got := slices.Sorted(slices.Values(n.names[pid]))
		require.Equal(t, want, got, "the kernels of pid %d", pid)
	}
}
