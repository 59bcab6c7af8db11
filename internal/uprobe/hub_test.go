package uprobe

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/procfs"
	"github.com/xpuscope/xpuscope/internal/testutil"
)

// anchorsSrc defines an anchor for each of two Tracers, and waits for
// stdin to close.
const anchorsSrc = `
#include <stdio.h>
int xpu_anchor_a(void) { return 1; }
int xpu_anchor_b(void) { return 2; }
int main(void) {
	puts("READY");
	fflush(stdout);
	while (getchar() != EOF) {}
	return xpu_anchor_a() + xpu_anchor_b();
}
`

// TestTracersShareTheHub: two Tracers on one procfs root share one hub:
// a process started after both is found through its one exec event and
// probed by each. Closing one leaves the other watching; closing the last
// stops the hub.
func TestTracersShareTheHub(t *testing.T) {
	testutil.Native(t, "the kernel's BPF and uprobes")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "attaching uprobes needs root")
	}
	exe := buildELF(t, anchorsSrc, "-O0")
	hits, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	require.NoError(t, err)
	defer hits.Close()
	prog := hitCounter(t, hits, 0, ebpf.AttachNone)
	tracer := func(anchor string) *Tracer {
		tr, err := New(Config{Rescan: time.Hour, // only the exec event finds the processes
			Targets: []Target{{Name: anchor, Anchor: anchor, Probes: []Probe{{Symbol: anchor, Entry: prog}}}}})
		require.NoError(t, err)
		return tr
	}
	a, b := tracer("xpu_anchor_a"), tracer("xpu_anchor_b")
	defer b.Close()
	defer a.Close()
	require.Same(t, a.hub, b.hub)
	hubs.Lock()
	require.Same(t, a.hub, hubs.byRoot[procfs.FS{Root: procfs.DefaultRoot}])
	hubs.Unlock()

	// start runs a copy of exe (a file of its own: a new inode) and
	// returns its pid; it ends with the test.
	start := func(name string) int {
		path := filepath.Join(t.TempDir(), name)
		bin, err := os.ReadFile(exe)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, bin, 0o755))
		cmd := exec.Command(path)
		in, err := cmd.StdinPipe()
		require.NoError(t, err)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { in.Close(); cmd.Wait() })
		sc := bufio.NewScanner(out)
		require.True(t, sc.Scan())
		return cmd.Process.Pid
	}
	attached := func(tr *Tracer, target string, pid int) bool {
		return slices.ContainsFunc(tr.Attachments(), func(a Attachment) bool { return a.Target == target && a.PID == pid })
	}
	within := func(d time.Duration, f func() bool) bool {
		for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if f() {
				return true
			}
		}
		return f()
	}

	pid := start("first")
	require.True(t, within(5*time.Second, func() bool {
		return attached(a, "xpu_anchor_a", pid) && attached(b, "xpu_anchor_b", pid)
	}), "both Tracers probe a process started after them: %+v %+v", a.Attachments(), b.Attachments())

	require.NoError(t, a.Close())
	pid = start("second")
	require.True(t, within(5*time.Second, func() bool { return attached(b, "xpu_anchor_b", pid) }),
		"the Tracer left still probes new processes: %+v", b.Attachments())
	require.False(t, attached(a, "xpu_anchor_a", pid), "a closed Tracer probed a new process")

	require.NoError(t, b.Close())
	hubs.Lock()
	defer hubs.Unlock()
	require.NotContains(t, hubs.byRoot, procfs.FS{Root: procfs.DefaultRoot}, "the hub outlived its last Tracer")
}

// TestSyncAfterClose: a Source's reader may Sync while the Source closes
// its Tracer, and the hub with it: Sync then returns at once, and runs
// nothing of the closed watcher (the race detector checks).
func TestSyncAfterClose(t *testing.T) {
	testutil.Native(t, "the kernel's BPF and uprobes")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "attaching uprobes needs root")
	}
	tr, err := New(Config{Rescan: time.Hour})
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 1000 {
			tr.Sync()
		}
	}()
	require.NoError(t, tr.Close())
	<-done
	tr.Sync()
}

// TestLoaderCopy: a process run by a copy of the dynamic loader the hub
// has not seen (a file of its own, as in a container's image) gets the
// copy probed by the hub's own loader Tracer, which counts it as any
// Tracer counts a file attached late. The hub's Tracer is made as every
// Tracer is: it once lacked the map of late files, and the first late
// loader copy panicked the hub.
func TestLoaderCopy(t *testing.T) {
	testutil.Native(t, "the kernel's BPF and uprobes")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "attaching uprobes needs root")
	}
	ldso, err := filepath.EvalSymlinks("/lib64/ld-linux-x86-64.so.2")
	require.NoError(t, err)
	bin, err := os.ReadFile(ldso)
	require.NoError(t, err)
	hits, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	require.NoError(t, err)
	defer hits.Close()
	prog := hitCounter(t, hits, 0, ebpf.AttachNone)
	tr, err := New(Config{Rescan: time.Hour, Targets: []Target{{Name: "xpu_anchor_a", Anchor: "xpu_anchor_a",
		Probes: []Probe{{Symbol: "xpu_anchor_a", Entry: prog}}}}})
	require.NoError(t, err)
	defer tr.Close()

	copied := filepath.Join(t.TempDir(), "ld-copy.so")
	require.NoError(t, os.WriteFile(copied, bin, 0o755))
	cat, err := exec.LookPath("cat")
	require.NoError(t, err)
	cmd := exec.Command(copied, cat)
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { in.Close(); cmd.Wait() })

	st, err := os.Stat(copied)
	require.NoError(t, err)
	ino := st.Sys().(*syscall.Stat_t).Ino
	probed := func() bool {
		return slices.ContainsFunc(tr.hub.loader.Attachments(), func(a Attachment) bool { return a.Inode == ino })
	}
	deadline := time.Now().Add(10 * time.Second)
	for !probed() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	require.True(t, probed(), "the loader copy is not probed; the loader's attachments: %+v", tr.hub.loader.Attachments())
	var late, n int64
	for _, l := range tr.hub.loader.Late() {
		late += l.Files
	}
	a := tr.hub.loader.Attachments()
	for _, x := range a {
		if x.Late != "" {
			n++
		}
	}
	require.Equal(t, n, late, "late loader files counted, against the attachments that say why they were late: %+v", a)
}
