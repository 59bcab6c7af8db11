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

// lateStarter is how a late starter is run: the late program (dlopen),
// the linked one, or, static, a copy of the staticlate program (the
// runtime linked in), with n launches gap apart from the first
// instruction after the load (static: after the exec).
type lateStarter struct {
	linked, static bool
	n              int
	gap            time.Duration
}

func (l lateStarter) String() string {
	how := "dlopen"
	switch {
	case l.static:
		how = "static"
	case l.linked:
		how = "linked"
	}
	return fmt.Sprintf("%s/%d launches %v apart", how, l.n, l.gap)
}

// start runs l in a mount namespace of its own, with a copy of the real
// runtime on a tmpfs mounted there: a file no tracer has seen, at a path
// only that namespace has, found through LD_LIBRARY_PATH (linked) or
// dlopened by path (late); static, a copy of the program itself there. It
// returns the process and the path of the file that defines
// cudaLaunchKernel as the process sees it. attrs, if set, is the
// process's SysProcAttr (the default: a session of its own, without a
// controlling terminal).
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
	switch {
	case l.static:
		exe = cudaprog.Build(t, "staticlate")
		lib = filepath.Join(mnt, "app")
		script = `mount -t tmpfs none "$1" && cp "$4" "$3" && export LD_PRELOAD="$5" && exec "$3" "$6" "$7"`
	case l.linked:
		exe = cudaprog.Build(t, "linked")
		lib = filepath.Join(mnt, soname(t, real))
		script = `mount -t tmpfs none "$1" && cp "$2" "$3" && export LD_LIBRARY_PATH="$1" LD_PRELOAD="$5" && exec "$4" "$6" "$7"`
	default:
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

// lateRun is what run saw of a late starter: the launches tr counted of
// it (the calls of cudaLaunchKernel, records received plus the calls the
// kernel counted unrecorded) once its process was done, the records
// received, the attachment of its copy of the runtime, and the records
// the ring dropped meanwhile, of any process (the probes on the host's
// libcudart see every program on the host).
type lateRun struct {
	calls   float64
	records int
	lib     uprobe.Attachment
	dropped float64
}

// droppedRecords returns xpuscope.cuda.events.dropped of pts.
func droppedRecords(t *testing.T, pts testutil.Points) float64 {
	t.Helper()
	d := pts.Find(semconv.XpuscopeCUDAEventsDropped.Name)
	require.Len(t, d, 1)
	return d[0].Value
}

// run runs l under tr. lossy says calls may be lost: the count may stay
// under n.
func (l lateStarter) run(t *testing.T, tr *traced, lossy bool, attrs *syscall.SysProcAttr, extra ...*os.File) lateRun {
	t.Helper()
	droppedBefore := droppedRecords(t, tr.collect(t))
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
	records := tr.rec.Counts()[uint32(p.Pid)]
	require.True(t, settled || !lossy, "no launch of pid %d counted: %d records", p.Pid, records)
	return lateRun{calls: countedOf(pts), records: records, lib: a, dropped: droppedRecords(t, pts) - droppedBefore}
}

// requireLate checks that tr's copy of the runtime lib was attached late
// for reason, and that xpuscope.uprobe.attached_late and Late count it: at
// least one file of the runtime for that reason, and, since the count is
// of the whole host's files (other processes may map new files meanwhile),
// exactly the files Status shows attached late for it.
func requireLate(t *testing.T, tr *traced, lib uprobe.Attachment, reason string) {
	t.Helper()
	require.Equal(t, reason, lib.Late, "why %s was attached late", lib.Path)
	want := uprobe.Late{Target: TargetRuntime, Reason: reason}
	// Late and Status read apart: count again until nothing was attached
	// between them.
	require.True(t, poll(10*time.Second, func() bool {
		before := len(tr.Status().Attachments)
		late := tr.tracer.Late()
		st := tr.Status().Attachments
		if len(st) != before {
			return false
		}
		want.Files = 0
		for _, a := range st {
			if a.Target == want.Target && a.Late == reason {
				want.Files++
			}
		}
		require.GreaterOrEqual(t, want.Files, int64(1))
		require.Contains(t, late, want, "the files attached late by target and why; attached: %+v", st)
		return true
	}), "files kept being attached")
	pts := tr.collect(t).Find(semconv.XpuscopeUprobeAttachedLate.Name, semconv.XpuscopeTarget.String(TargetRuntime),
		semconv.XpuscopeUprobeLateReason.String(reason))
	require.Len(t, pts, 1)
	require.GreaterOrEqual(t, pts[0].Value, float64(want.Files))
}

// TestLateStarters: a process that loads a copy of the runtime no tracer
// has seen, linked or dlopened, in a mount namespace of its own, and calls
// it from the first instruction after the load, back to back or 1 ms
// apart, has every call counted: the discovery holds it from the load
// until the probes are live. So has a program no tracer has seen that
// links the runtime in (a copy of staticlate, launching from main's first
// instruction): it is held from its exec. The fallback sweep is an hour away: only the
// exec and loader hooks find the copies. Every call has its record, but
// where the ring was full (another program on the host flooding it), the
// calls that found no room are counted without one.
func TestLateStarters(t *testing.T) {
	requireRoot(t)
	tr := startTracing(t, WithRescanInterval(time.Hour))
	for _, l := range []lateStarter{
		{linked: false, n: 1000, gap: 0},
		{linked: false, n: 100, gap: time.Millisecond},
		{linked: true, n: 1000, gap: 0},
		{linked: true, n: 100, gap: time.Millisecond},
		{static: true, n: 1000, gap: 0},
		{static: true, n: 100, gap: time.Millisecond},
	} {
		t.Run(l.String(), func(t *testing.T) {
			r := l.run(t, tr, false, nil)
			require.Equal(t, float64(l.n), r.calls, "launches counted; attached late: %+v", tr.tracer.Late())
			if r.dropped == 0 {
				require.Equal(t, l.n, r.records, "launch records")
			}
			require.LessOrEqual(t, r.records, l.n, "launch records")
			require.Empty(t, r.lib.Late, "held until the probes were live")
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
	r := l.run(t, tr, true, &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 3}, pty)
	require.LessOrEqual(t, r.calls, float64(l.n))
	requireLate(t, tr, r.lib, semconv.LateReasonTerminal)
}

// TestLoadHoldOff: WithLoadHold(false) lets the late starter run on: its
// copy of the runtime is counted as attached late, not held. (Every new
// file the host maps is then late: the host's own libcudart too, when
// another test's program is the first to map it after the Source began.)
func TestLoadHoldOff(t *testing.T) {
	requireRoot(t)
	tr := startTracing(t, WithRescanInterval(time.Hour), WithLoadHold(false))
	l := lateStarter{n: 100, gap: time.Millisecond}
	r := l.run(t, tr, true, nil)
	require.LessOrEqual(t, r.calls, float64(l.n))
	requireLate(t, tr, r.lib, semconv.LateReasonNotHeld)
}

// namer records the name the Source gives each launch record, by process,
// as it reads it. The hook runs on the Source's reader, which may read
// records (of other processes) before New returns: it names records only
// once the test has published the Source (set).
type namer struct {
	mu    sync.Mutex
	src   *Source
	names map[uint32][]string
}

// set publishes src to the hook.
func (n *namer) set(src *Source) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.src = src
}

func (n *namer) hook(e *gputracebpf.Event) {
	if e.Kind != gputracebpf.KindLaunch {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.src == nil {
		return // before the test's processes start
	}
	// On the reader, with the Source's lock held: its symbolizer is the
	// reader's to use.
	name, ok := n.src.names.Symbolize(e.PID, e.Func())
	if !ok {
		name = semconv.Unknown
	}
	n.names[e.PID] = append(n.names[e.PID], name)
}

// TestShortLivedNamed: 100 processes that launch 10 kernels each and exit
// at once, waiting for nothing, get every launch named, though each is
// gone long before its records are read: the discovery captured its
// mappings, and held the files open, while it ran. Every launch is
// counted; one whose record found the ring full (another program on the
// host flooding it: the probes see them all) is counted unrecorded and has
// no name to check, so every launch must have been read only when the
// ring dropped nothing meanwhile.
func TestShortLivedNamed(t *testing.T) {
	requireRoot(t)
	n := &namer{names: map[uint32][]string{}}
	tr := startTracing(t, WithRescanInterval(time.Hour), withEventHook(n.hook))
	n.set(tr.Source)
	exe := cudaprog.Build(t, "short")
	want := make([]string, len(cudaprog.ShortKernels))
	for i, k := range cudaprog.ShortKernels {
		want[i] = demangled(cudaprog.Call{Func: k})
	}
	slices.Sort(want)

	droppedBefore := droppedRecords(t, tr.collect(t))
	const procs = 100
	pids := make([]int, 0, procs)
	for range procs {
		cmd := exec.Command(exe)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		pids = append(pids, cmd.Process.Pid)
	}
	// The launches counted of each process (records read and calls
	// counted unrecorded), the most any collection showed: the series of
	// an exited process go once a collection reported them.
	api := semconv.CUDAAPIName.String("cudaLaunchKernel")
	counted := map[int]float64{}
	var droppedAfter float64
	done := func() bool {
		pts := tr.collect(t)
		droppedAfter = droppedRecords(t, pts)
		n.mu.Lock()
		defer n.mu.Unlock()
		all := true
		for _, pid := range pids {
			if c := ofPid(pts, pid).Find(semconv.CUDAAPICalls.Name, api); len(c) == 1 {
				counted[pid] = max(counted[pid], c[0].Value)
			}
			read := len(n.names[uint32(pid)])
			all = all && counted[pid] == float64(len(want)) && (read == len(want) || droppedAfter > droppedBefore)
		}
		return all
	}
	settled := poll(30*time.Second, done)
	n.mu.Lock()
	defer n.mu.Unlock()
	if !settled {
		short := map[int][]string{}
		for _, pid := range pids {
			if counted[pid] != float64(len(want)) || len(n.names[uint32(pid)]) < len(want) {
				short[pid] = n.names[uint32(pid)]
			}
		}
		require.Fail(t, "not every launch was counted and read", "counted %v; of those with fewer than %d named: %v; dropped %v",
			counted, len(want), short, droppedAfter-droppedBefore)
	}
	for _, pid := range pids {
		got := slices.Sorted(slices.Values(n.names[uint32(pid)]))
		require.Subset(t, want, got, "the kernels of pid %d", pid)
		require.Len(t, slices.Compact(got), len(got), "the kernels of pid %d, each launched once", pid)
		if droppedAfter == droppedBefore {
			require.Equal(t, want, got, "the kernels of pid %d", pid)
		}
	}
}
