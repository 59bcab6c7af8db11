package uprobe

import (
	"bufio"
	"fmt"
	"io"
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
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/procfs"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/testutil/cudaprog"
	"github.com/xpuscope/xpuscope/semconv"
)

// holdLibSrc is a library whose one function a test probes.
const holdLibSrc = `int xpu_hold_anchor(void) { return 42; }`

// holdProgSrc dlopens the library named by argv[1] once stdin has a
// line, calls its function the instruction after dlopen returns, and
// exits once stdin closes.
const holdProgSrc = `
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
	puts("READY");
	fflush(stdout);
	if (getchar() == EOF)
		return 3;
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	int (*f)(void) = (int (*)(void))dlsym(h, "xpu_hold_anchor");
	printf("CALLED %d\n", f());
	fflush(stdout);
	while (getchar() != EOF) {}
	return 0;
}
`

// holdLibName is the prefix of the library's file name the Tracers of
// these tests target.
const holdLibName = "libxpuhold.so"

// holdCase is a built program and library, and counters of the probe's
// hits, one slot per Tracer.
type holdCase struct {
	prog, lib string
	hits      *ebpf.Map
}

func newHoldCase(t *testing.T) *holdCase {
	t.Helper()
	testutil.Native(t, "the kernel's BPF and uprobes")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "holding processes needs root")
	}
	hits, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 4})
	require.NoError(t, err)
	t.Cleanup(func() { hits.Close() })
	return &holdCase{
		prog: buildELF(t, holdProgSrc, "-O2", "-ldl"),
		lib:  buildELF(t, holdLibSrc, "-shared", "-fPIC", "-O2", "-Wl,-soname,"+holdLibName+".1"),
		hits: hits,
	}
}

// tracer starts a Tracer of the library on root, counting hits in slot.
func (c *holdCase) tracer(t *testing.T, root string, slot int32, hold bool) *Tracer {
	t.Helper()
	tr, err := New(Config{Procfs: procfs.FS{Root: root}, Rescan: time.Hour, Hold: hold, Targets: []Target{{
		Name: "xpuhold", Anchor: "xpu_hold_anchor", Names: []string{holdLibName},
		Probes: []Probe{{Symbol: "xpu_hold_anchor", Entry: hitCounter(t, c.hits, slot, ebpf.AttachNone)}},
	}}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tr.Close()) })
	return tr
}

// run loads a fresh copy of the library (a new inode, named like the
// target) in a new process, which calls into it at once, and returns the
// process's pid once it is done, and until held holds. attrs are the
// process's.
func (c *holdCase) run(t *testing.T, until func() bool, attrs *syscall.SysProcAttr, extra ...*os.File) int {
	t.Helper()
	lib := filepath.Join(t.TempDir(), holdLibName+".1")
	b, err := os.ReadFile(c.lib)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(lib, b, 0o755))
	cmd := exec.Command(c.prog, lib)
	cmd.SysProcAttr = attrs
	cmd.ExtraFiles = extra
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(out)
	require.True(t, sc.Scan(), "no READY line")
	_, err = io.WriteString(in, "go\n")
	require.NoError(t, err)
	require.True(t, sc.Scan(), "no CALLED line; stderr: %s", stderr.String())
	require.Equal(t, "CALLED 42", sc.Text())
	if until != nil {
		require.Eventually(t, until, 10*time.Second, 10*time.Millisecond)
	}
	require.NoError(t, in.Close())
	require.NoError(t, cmd.Wait(), "stderr: %s", stderr.String())
	return cmd.Process.Pid
}

func (c *holdCase) count(t *testing.T, slot int32) uint64 {
	t.Helper()
	var n uint64
	require.NoError(t, c.hits.Lookup(slot, &n))
	return n
}

// TestHoldSeesTheFirstCall: a process that loads a library named like a
// target, new to the Tracer, is held until the probe is attached: its
// call the instruction after dlopen returns is seen, and nothing counts
// as late.
func TestHoldSeesTheFirstCall(t *testing.T) {
	c := newHoldCase(t)
	tr := c.tracer(t, procfs.DefaultRoot, 0, true)
	for i := range 3 {
		pid := c.run(t, nil, nil)
		require.Equal(t, uint64(i+1), c.count(t, 0), "calls seen after process %d", pid)
	}
	require.Empty(t, tr.Late())
	attached, _ := tr.Status()
	require.Len(t, attached, 3, "one attachment per copy")
}

// holdExeSrc defines the function a test probes in the program itself,
// calls it as main's first act, and exits once stdin closes.
const holdExeSrc = `
#include <stdio.h>
__attribute__((noipa, used)) int xpu_prog_anchor(void) { return 42; }
int main(void) {
	printf("CALLED %d\n", xpu_prog_anchor());
	fflush(stdout);
	while (getchar() != EOF) {}
	return 0;
}
`

// launcherSrc forks argv[2] processes that wait on one pipe, then lets
// them all exec argv[1] at once (with argv[3] as its argument, if
// given), with stdin closed, and exits 0 if each did and exited 0.
const launcherSrc = `
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
int main(int argc, char **argv) {
	int n = atoi(argv[2]), p[2];
	if (pipe(p))
		return 2;
	for (int i = 0; i < n; i++) {
		if (fork() == 0) {
			char c;
			close(p[1]);
			close(0);
			if (read(p[0], &c, 1) < 0)
				_exit(126);
			execl(argv[1], argv[1], argc > 3 ? argv[3] : (char *)0, (char *)0);
			_exit(127);
		}
	}
	close(p[0]);
	close(p[1]);
	int st, bad = 0;
	while (wait(&st) > 0)
		bad += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	return bad != 0;
}
`

// TestHoldSeesAProgramsFirstCall: a program no Tracer has seen, which
// calls a target function linked into it from its first instructions,
// is held from its exec until the probe is attached, where the target is
// InPrograms: each new copy's call is seen, and nothing counts as late.
// Where it is not, the program runs on while it is classified, and the
// file counts as attached late.
func TestHoldSeesAProgramsFirstCall(t *testing.T) {
	c := newHoldCase(t)
	prog := buildELF(t, holdExeSrc, "-O2")
	tracer := func(slot int32, inPrograms bool) *Tracer {
		tr, err := New(Config{Rescan: time.Hour, Hold: true, Targets: []Target{{
			Name: "xpuprog", Anchor: "xpu_prog_anchor", InPrograms: inPrograms,
			Probes: []Probe{{Symbol: "xpu_prog_anchor", Entry: hitCounter(t, c.hits, slot, ebpf.AttachNone)}},
		}}})
		require.NoError(t, err)
		// Whatever happens: a Tracer left open when the test binary
		// exits leaves the processes it holds then stopped.
		t.Cleanup(func() { require.NoError(t, tr.Close()) })
		return tr
	}
	// run execs a new copy of the program, with no controlling terminal
	// (a process job control watches is never held), and lets it exit
	// once it called and until holds.
	run := func(until func() bool) {
		exe := filepath.Join(t.TempDir(), "prog")
		copyFile(t, prog, exe)
		cmd := exec.Command(exe)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		in, err := cmd.StdinPipe()
		require.NoError(t, err)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		sc := bufio.NewScanner(out)
		require.True(t, sc.Scan(), "no CALLED line")
		require.Equal(t, "CALLED 42", sc.Text())
		if until != nil {
			require.Eventually(t, until, 10*time.Second, 10*time.Millisecond)
		}
		require.NoError(t, in.Close())
		require.NoError(t, cmd.Wait())
	}
	tr := tracer(0, true)
	for i := range 5 {
		run(nil)
		require.Equal(t, uint64(i+1), c.count(t, 0), "calls seen after copy %d", i)
	}
	require.Empty(t, tr.Late())
	attached, _ := tr.Status()
	require.Len(t, attached, 5, "one attachment per copy")

	// Processes that run one new program together, forked by a launcher
	// and let go at once: each waits for the program's one
	// classification, though the watcher tells user space of the new
	// file once.
	const together = 16
	exe := filepath.Join(t.TempDir(), "prog")
	copyFile(t, prog, exe)
	cmd := exec.Command(buildELF(t, launcherSrc, "-O2"), exe, strconv.Itoa(together))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, strings.Repeat("CALLED 42\n", together), string(out))
	require.Equal(t, uint64(5+together), c.count(t, 0), "calls seen of %d processes of one new program", together)
	require.Empty(t, tr.Late())
	require.NoError(t, tr.Close())

	tr = tracer(1, false)
	want := Late{Target: "xpuprog", Reason: semconv.LateReasonUnmatched, Files: 1}
	run(func() bool { return slices.Contains(tr.Late(), want) })
	require.Equal(t, []Late{want}, tr.Late())
}

// dlopenAtOnceSrc dlopens the library named by argv[1] and calls its
// function the instruction after dlopen returns.
const dlopenAtOnceSrc = `
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	int (*f)(void) = (int (*)(void))dlsym(h, "xpu_hold_anchor");
	printf("CALLED %d\n", f());
	return 0;
}
`

// TestHoldSeesTheFirstCallsTogether: processes that load one new library
// together, each calling it at once, are each held until it is probed,
// though the watcher tells user space of the file once: every call is
// seen.
func TestHoldSeesTheFirstCallsTogether(t *testing.T) {
	c := newHoldCase(t)
	tr := c.tracer(t, procfs.DefaultRoot, 0, true)
	prog := buildELF(t, dlopenAtOnceSrc, "-O2", "-ldl")
	launcher := buildELF(t, launcherSrc, "-O2")
	const together = 16
	for round := range 3 {
		lib := filepath.Join(t.TempDir(), holdLibName+".1")
		copyFile(t, c.lib, lib)
		cmd := exec.Command(launcher, prog, strconv.Itoa(together), lib)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Equal(t, strings.Repeat("CALLED 42\n", together), string(out))
		require.Equal(t, uint64((round+1)*together), c.count(t, 0), "calls seen after round %d", round)
	}
	require.Empty(t, tr.Late())
}

// TestHoldsAreShared: two watchers (two procfs roots, as two agents on a
// node would have) hold the same process; it runs again only when both
// attached, so that both see its first call.
func TestHoldsAreShared(t *testing.T) {
	c := newHoldCase(t)
	a := c.tracer(t, procfs.DefaultRoot, 0, true)
	b := c.tracer(t, procfs.DefaultRoot+"/.", 1, true)
	require.NotSame(t, a.hub, b.hub)
	for i := range 3 {
		c.run(t, nil, nil)
		require.Equal(t, uint64(i+1), c.count(t, 0), "calls the first watcher saw")
		require.Equal(t, uint64(i+1), c.count(t, 1), "calls the second watcher saw")
	}
}

// TestUnheldLoadsAreLate: without holding, and for a process with a
// controlling terminal, the library is attached while the process runs
// on: counted late, with why.
func TestUnheldLoadsAreLate(t *testing.T) {
	c := newHoldCase(t)
	// The processes wait to exit until the library is attached: a
	// process that is gone before its file is opened has it told of
	// again only by the next that maps it.
	lateFor := func(tr *Tracer, reason string) func() bool {
		return func() bool { return slices.Contains(tr.Late(), Late{Target: "xpuhold", Reason: reason, Files: 1}) }
	}
	tr := c.tracer(t, procfs.DefaultRoot, 0, false)
	c.run(t, lateFor(tr, semconv.LateReasonNotHeld), nil)
	require.Equal(t, []Late{{Target: "xpuhold", Reason: semconv.LateReasonNotHeld, Files: 1}}, tr.Late())
	require.NoError(t, tr.Close())

	tr = c.tracer(t, procfs.DefaultRoot, 1, true)
	tty := cudaprog.Terminal(t)
	c.run(t, lateFor(tr, semconv.LateReasonTerminal), &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 3}, tty)
	require.Equal(t, []Late{{Target: "xpuhold", Reason: semconv.LateReasonTerminal, Files: 1}}, tr.Late())
}

// TestWithoutKernelWalks: on a kernel without the VMA iterator the hooks
// ask for the process's maps to be read: a library a process loads is
// found and probed so, late, and counted as such.
func TestWithoutKernelWalks(t *testing.T) {
	c := newHoldCase(t)
	tr, err := New(Config{Procfs: procfs.FS{Root: procfs.DefaultRoot + "/./."}, Rescan: time.Hour, Hold: true, noWalks: true,
		Targets: []Target{{Name: "xpuhold", Anchor: "xpu_hold_anchor", Names: []string{holdLibName},
			Probes: []Probe{{Symbol: "xpu_hold_anchor", Entry: hitCounter(t, c.hits, 0, ebpf.AttachNone)}}}}})
	require.NoError(t, err)
	defer tr.Close()
	require.Nil(t, tr.hub.holder, "nothing is held without walks")
	want := Late{Target: "xpuhold", Reason: semconv.LateReasonRescan, Files: 1}
	c.run(t, func() bool { return slices.Contains(tr.Late(), want) }, nil)
	require.Equal(t, []Late{want}, tr.Late())
}

// TestHoldPastItsLimit: a hold whose record is read after its limit has
// passed (a reader held up that long) ends at once, from the timer's
// goroutine, while the reader is still noting it: the timer must be set
// before anyone can end the hold (the race detector checks).
func TestHoldPastItsLimit(t *testing.T) {
	testutil.Native(t, "the kernel's BPF and uprobes")
	h := &hub{held: map[int]*hold{}, filling: map[int]*hold{}}
	for pid := 1; pid <= 100; pid++ {
		hd := h.startHold(record{pid: pid, what: watchWatchWhatWATCH_HOLD, start: 1, ktime: 0})
		require.Eventually(t, hd.ended.Load, 10*time.Second, time.Millisecond)
		require.True(t, hd.expired.Load())
		require.Nil(t, h.held[pid])
	}
}

// A process the watcher stopped just before the hub closed, whose news
// the hub never read, runs again when the hub closes: the hold map says
// the hub holds it. (TestLoaderCopy once hung on such a cat.)
func TestCloseResumesUnheardHolds(t *testing.T) {
	testutil.Native(t, "the kernel's BPF and uprobes")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "the watcher needs root")
	}
	tr, err := New(Config{Rescan: time.Hour, Targets: []Target{{Name: "xpu_anchor_a", Anchor: "xpu_anchor_a"}}})
	require.NoError(t, err)
	closed := false
	defer func() {
		if !closed {
			tr.Close()
		}
	}()
	hd := tr.hub.holder
	require.NotNil(t, hd, "processes are held here")
	cmd := exec.Command("sleep", "30")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid
	// As the watcher does: stop it, and note this hub among its holders.
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	require.NoError(t, hd.m.Update(uint32(pid), watchHold{Holders: [4]uint64{hd.id}}, ebpf.UpdateAny))
	stopped := func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		require.NoError(t, err)
		_, rest, _ := strings.Cut(string(b), ") ")
		return strings.HasPrefix(rest, "T")
	}
	require.Eventually(t, stopped, 5*time.Second, time.Millisecond)

	require.NoError(t, tr.Close())
	closed = true
	require.Eventually(t, func() bool { return !stopped() }, 5*time.Second, time.Millisecond, "still stopped after Close")
}

// A process held by a watcher that is gone runs again: a live hub finds
// the hold within a second and resumes it, whether the holder's process
// is gone (killed while it held) or it was a hub of this process since
// closed (a hook still running when it closed took the hold). A process a
// live hub holds stays stopped, and the mark of a process that is gone is
// removed.
func TestOrphanedHoldsResume(t *testing.T) {
	testutil.Native(t, "the kernel's BPF and uprobes")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "the watcher needs root")
	}
	tr, err := New(Config{Rescan: time.Hour, Targets: []Target{{Name: "xpu_anchor_a", Anchor: "xpu_anchor_a"}}})
	require.NoError(t, err)
	defer tr.Close()
	hd := tr.hub.holder
	require.NotNil(t, hd, "processes are held here")

	// A process that is gone, and an id of this process no hub has.
	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	goneID := uint64(gone.Process.Pid)<<32 | 1
	closedID := newHolderID(hd.self)
	retireHolderID(closedID)

	stopped := func(pid int) bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		require.NoError(t, err)
		_, rest, _ := strings.Cut(string(b), ") ")
		return strings.HasPrefix(rest, "T")
	}
	hold := func(holders ...uint64) int {
		cmd := exec.Command("sleep", "30")
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		pid := cmd.Process.Pid
		require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
		var h watchHold
		copy(h.Holders[:], holders)
		require.NoError(t, hd.m.Update(uint32(pid), h, ebpf.UpdateAny))
		require.Eventually(t, func() bool { return stopped(pid) }, 5*time.Second, time.Millisecond)
		return pid
	}
	byGone, byClosed, byBoth := hold(goneID), hold(closedID), hold(goneID, closedID)
	byLive := hold(goneID, hd.id) // this hub holds it still
	require.NoError(t, hd.m.Update(uint32(gone.Process.Pid), watchHold{Agent: 1}, ebpf.UpdateAny))

	for _, pid := range []int{byGone, byClosed, byBoth} {
		require.Eventually(t, func() bool { return !stopped(pid) }, 5*time.Second, time.Millisecond, "pid %d still stopped", pid)
	}
	require.Eventually(t, func() bool {
		var h watchHold
		return hd.m.Lookup(uint32(gone.Process.Pid), &h) != nil
	}, 5*time.Second, time.Millisecond, "the mark of a process that is gone")
	require.True(t, stopped(byLive), "a process a live hub holds stays stopped")
	var h watchHold
	require.NoError(t, hd.m.Lookup(uint32(byLive), &h))
	require.Equal(t, [4]uint64{0, hd.id}, h.Holders, "the gone holder's share dropped, the live one's kept")
	ok, err := hd.resume(byLive)
	require.NoError(t, err)
	require.True(t, ok)
	require.Eventually(t, func() bool { return !stopped(byLive) }, 5*time.Second, time.Millisecond)
}

// TestHoldsOutliveTheWatcher: a watcher killed while it holds a process
// leaves the hold map pinned in the BPF file system, with the hold in it;
// the next watcher started finds it there and resumes the process at
// once. The watchers are this test binary run again, each in a process of
// its own: the first stops a process as the watcher does, notes the hold,
// and is killed; the second starts a Tracer and exits.
func TestHoldsOutliveTheWatcher(t *testing.T) {
	testutil.Native(t, "the kernel's BPF and uprobes")
	switch os.Getenv("XPUSCOPE_HOLDS_CHILD") {
	case "hold":
		holdsChild(t, true)
		return
	case "start":
		holdsChild(t, false)
		return
	}
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "the watcher and a BPF file system need root")
	}
	dir := t.TempDir()
	require.NoError(t, unix.Mount("bpf", dir, "bpf", 0, "mode=0700"))
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })

	child := func(what string) (*exec.Cmd, *bufio.Scanner) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHoldsOutliveTheWatcher$", "-test.v")
		cmd.Env = append(os.Environ(), "XPUSCOPE_HOLDS_CHILD="+what, "XPUSCOPE_HOLDS_DIR="+dir)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd, bufio.NewScanner(out)
	}
	line := func(sc *bufio.Scanner, prefix string) string {
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), prefix); ok {
				return v
			}
		}
		t.Fatalf("no %q line", prefix)
		return ""
	}

	holder, out := child("hold")
	pid, err := strconv.Atoi(line(out, "HELD "))
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	require.NoError(t, holder.Process.Kill())
	_ = holder.Wait()
	_, err = os.Stat(filepath.Join(dir, holdsMapName))
	require.NoError(t, err, "the hold map is pinned")
	require.True(t, processStopped(t, pid), "the held process is still stopped")

	starter, out := child("start")
	line(out, "STARTED")
	require.NoError(t, starter.Wait())
	require.Eventually(t, func() bool { return !processStopped(t, pid) }, 5*time.Second, time.Millisecond,
		"the next watcher resumed the process")
}

// holdsChild is a watcher of TestHoldsOutliveTheWatcher: with hold, it
// stops a sleep as the watcher does, notes its hold, says HELD <pid> and
// waits to be killed; without, it starts a Tracer, says STARTED and ends.
func holdsChild(t *testing.T, hold bool) {
	tr, err := New(Config{Rescan: time.Hour, holdsDir: os.Getenv("XPUSCOPE_HOLDS_DIR"),
		Targets: []Target{{Name: "xpu_anchor_a", Anchor: "xpu_anchor_a"}}})
	require.NoError(t, err)
	defer tr.Close()
	if !hold {
		fmt.Println("STARTED")
		return
	}
	hd := tr.hub.holder
	require.NotNil(t, hd)
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	require.NoError(t, cmd.Start())
	require.NoError(t, syscall.Kill(cmd.Process.Pid, syscall.SIGSTOP))
	require.NoError(t, hd.m.Update(uint32(cmd.Process.Pid), watchHold{Holders: [4]uint64{hd.id}}, ebpf.UpdateAny))
	require.Eventually(t, func() bool { return processStopped(t, cmd.Process.Pid) }, 5*time.Second, time.Millisecond)
	fmt.Printf("HELD %d\n", cmd.Process.Pid)
	select {}
}

// processStopped says whether pid is in the stopped state.
func processStopped(t *testing.T, pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	_, rest, _ := strings.Cut(string(b), ") ")
	return strings.HasPrefix(rest, "T")
}
