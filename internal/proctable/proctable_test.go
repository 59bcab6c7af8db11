package proctable

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/procfs"
	"github.com/xpuscope/xpuscope/internal/procfs/procfstest"
)

// kinds of the tests: a process whose argv[0] names one.
type kind string

func identifyByArg(asked *[]int) Identify {
	return func(_ procfs.Proc, p *Process) (any, string) {
		*asked = append(*asked, p.PID)
		if len(p.Args) > 0 && p.Args[0] == "job" {
			return kind("job"), "worker"
		}
		return nil, ""
	}
}

// start runs sleep 1000 under the given argv[0] until the test ends.
// (The argument stays a number: sleep given a word exits at once.)
func start(t *testing.T, argv0 string) *exec.Cmd {
	args := []string{argv0, "1000"}
	cmd := exec.Command("/bin/sleep", "1000")
	cmd.Args = args
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	require.Eventually(t, func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cmdline")
		return err == nil && len(b) > 0 && string(b[:len(args[0])]) == args[0]
	}, 10*time.Second, time.Millisecond)
	return cmd
}

// Real processes of the host: one recognised is asked once; one of
// nothing is asked again at each of the ages, and not after; one gone is
// forgotten.
func TestScan(t *testing.T) {
	job := start(t, "job")
	other := start(t, "other")
	root := procfstest.New(t)
	link := func(pid int) {
		require.NoError(t, os.Symlink(filepath.Join("/proc", strconv.Itoa(pid)), filepath.Join(root, strconv.Itoa(pid))))
	}
	link(job.Process.Pid)
	link(other.Process.Pid)
	fs := procfs.FS{Root: root}
	h, err := fs.Open()
	require.NoError(t, err)
	defer h.Close()
	var asked []int
	tab := Table{FS: fs, Handle: h, Identify: identifyByArg(&asked), Ages: []time.Duration{0, time.Second, time.Minute}}
	t0 := time.Unix(1000, 0)
	count := func(pid int) int {
		n := 0
		for _, p := range asked {
			if p == pid {
				n++
			}
		}
		return n
	}
	for _, at := range []time.Duration{0, 500 * time.Millisecond, time.Second, 2 * time.Second, 59 * time.Second, time.Minute, time.Hour} {
		require.NoError(t, tab.Scan(t0.Add(at)))
	}
	assert.Equal(t, 1, count(job.Process.Pid), "a recognised process is asked once")
	assert.Equal(t, 3, count(other.Process.Pid), "a process of nothing, at each of the ages")
	p := tab.Get(job.Process.Pid)
	require.NotNil(t, p)
	assert.Equal(t, kind("job"), p.Kind)
	assert.Equal(t, "worker", p.Role)
	assert.Equal(t, "sleep", p.Exe)
	assert.Equal(t, []string{"job", "1000"}, p.Args)
	assert.Equal(t, os.Getpid(), p.PPID)

	groups := tab.Groups()
	require.Len(t, groups, 1)
	assert.Equal(t, job.Process.Pid, groups[0].Root.PID)

	require.NoError(t, job.Process.Kill())
	_ = job.Wait()
	require.NoError(t, os.Remove(filepath.Join(root, strconv.Itoa(job.Process.Pid))))
	require.NoError(t, tab.Scan(t0.Add(2*time.Hour)))
	assert.Nil(t, tab.Get(job.Process.Pid), "gone, forgotten")
	assert.Empty(t, tab.Groups())

	require.NoError(t, os.RemoveAll(root))
	assert.Error(t, tab.Scan(t0.Add(3*time.Hour)), "a procfs that cannot be listed")
}

// Groups: each recognised process joins the farthest ancestor of its
// kind, through others; the oldest root first; members by pid.
func TestGroups(t *testing.T) {
	var tab Table
	add := func(pid, ppid int, start uint64, k any) *Process {
		p := &Process{PID: pid, PPID: ppid, Start: start, Kind: k}
		tab.Put(p)
		return p
	}
	add(1, 0, 1, nil)
	add(10, 1, 50, kind("a"))  // a launcher
	add(11, 10, 51, nil)       // its shell
	add(13, 11, 52, kind("a")) // a rank, through the shell
	add(12, 11, 52, kind("a")) // another
	add(20, 1, 40, kind("a"))  // an older job
	add(30, 13, 60, kind("b")) // a child of another kind: its own
	groups := tab.Groups()
	require.Len(t, groups, 3)
	assert.Equal(t, []int{20, 10, 30}, []int{groups[0].Root.PID, groups[1].Root.PID, groups[2].Root.PID}, "oldest first")
	var members []int
	for _, m := range groups[1].Members {
		members = append(members, m.PID)
	}
	assert.Equal(t, []int{10, 12, 13}, members)
	assert.Equal(t, Key{10, 50}, groups[1].Key)
}
