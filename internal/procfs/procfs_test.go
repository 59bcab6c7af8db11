package procfs

import (
	"bytes"
	"errors"
	"io"
	iofs "io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	prometheus "github.com/prometheus/procfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/procfs/procfstest"
)

func TestExeBase(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/usr/bin/python3.11", "python3.11"},
		{"/opt/app/train (deleted)", "train"},
		{"/", ""},
		{"", ""},
		{" (deleted)", " (deleted)"},
	} {
		assert.Equal(t, tc.want, ExeBase(tc.in), "ExeBase(%q)", tc.in)
	}
}

func TestParseComm(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"python\n", "python"},
		{"pt_main_thread", "pt_main_thread"},
		{"a\nb\n", "a"},
		{"", ""},
	} {
		assert.Equal(t, tc.want, ParseComm([]byte(tc.in)), "ParseComm(%q)", tc.in)
	}
}

func TestExecutableName(t *testing.T) {
	root := procfstest.New(t,
		procfstest.Process{PID: 10, Exe: "/usr/local/bin/vllm", Comm: "ignored\n"}, // exe link wins.
		procfstest.Process{PID: 11, Comm: "kworker\n"},                             // comm fallback.
	)
	fs := FS{Root: root}
	for pid, want := range map[int]string{10: "vllm", 11: "kworker", 12: ""} {
		assert.Equal(t, want, fs.Proc(pid).ExecutableName(), "ExecutableName(%d)", pid)
	}
	// The real procfs: this test binary.
	real := FS{Root: DefaultRoot}
	self, _ := os.Executable()
	assert.Equal(t, filepath.Base(self), real.Proc(os.Getpid()).ExecutableName(), "ExecutableName(self)")
}

// The readers of one process name the file they could not read.
func TestProcReaders(t *testing.T) {
	root := procfstest.New(t,
		procfstest.Process{PID: 1, Exe: "/srv/train (deleted)", Comm: "train\n", Cgroup: "0::/init.scope\n",
			Environ: []string{"HOME=/root", "TRACEPARENT=00-x"}},
		procfstest.Process{PID: 2, Environ: []string{}},
	)
	fs := FS{Root: root}
	one, two, gone := fs.Proc(1), fs.Proc(2), fs.Proc(3)

	assert.True(t, one.Alive())
	assert.False(t, gone.Alive())

	exe, err := one.Exe()
	require.NoError(t, err)
	assert.Equal(t, "/srv/train", exe)
	_, err = two.Exe()
	assert.ErrorContains(t, err, filepath.Join(root, "2", "exe"))

	comm, err := one.Comm()
	require.NoError(t, err)
	assert.Equal(t, "train", comm)

	cg, err := one.Cgroup()
	require.NoError(t, err)
	assert.Equal(t, "0::/init.scope\n", string(cg))
	_, err = gone.Cgroup()
	require.ErrorIs(t, err, iofs.ErrNotExist)
	assert.ErrorContains(t, err, filepath.Join(root, "3", "cgroup"))

	var env []byte
	read := func(r io.Reader) (err error) { env, err = io.ReadAll(r); return err }
	require.NoError(t, one.Environ(read))
	assert.Equal(t, "HOME=/root\x00TRACEPARENT=00-x\x00", string(env))
	require.NoError(t, two.Environ(read))
	assert.Empty(t, env)
	assert.ErrorContains(t, gone.Environ(read), filepath.Join(root, "3", "environ"))
	failed := errors.New("scan failed")
	err = one.Environ(func(io.Reader) error { return failed })
	require.ErrorIs(t, err, failed)
	assert.ErrorContains(t, err, filepath.Join(root, "1", "environ"))

	pids, err := fs.PIDs()
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2}, pids)
	_, err = FS{Root: filepath.Join(root, "none")}.PIDs()
	assert.ErrorContains(t, err, filepath.Join(root, "none"))
}

// Cgroup reads at most maxCgroup bytes.
func TestCgroupIsBounded(t *testing.T) {
	root := procfstest.New(t, procfstest.Process{PID: 1, Cgroup: strings.Repeat("0::/x\n", maxCgroup)})
	cg, err := FS{Root: root}.Proc(1).Cgroup()
	require.NoError(t, err)
	assert.Len(t, cg, maxCgroup)
}

// OpenExe opens the executable itself: this test binary's, through the
// real procfs.
func TestOpenExe(t *testing.T) {
	f, err := FS{Root: DefaultRoot}.Proc(os.Getpid()).OpenExe()
	require.NoError(t, err)
	defer f.Close()
	var got, want syscall.Stat_t
	require.NoError(t, syscall.Fstat(int(f.Fd()), &got))
	self, err := os.Executable()
	require.NoError(t, err)
	require.NoError(t, syscall.Stat(self, &want))
	assert.Equal(t, want.Ino, got.Ino)
	_, err = FS{Root: t.TempDir()}.Proc(1).OpenExe()
	assert.ErrorIs(t, err, iofs.ErrNotExist)
}

func FuzzParseComm(f *testing.F) {
	f.Add([]byte("python\n"))
	f.Add([]byte{})
	f.Add(make([]byte, 4096))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := ParseComm(b)
		if len(s) > maxComm {
			require.LessOrEqual(t, len(s), maxComm, "len")
		}
	})
}

func FuzzExeBase(f *testing.F) {
	f.Add("/usr/bin/python3 (deleted)")
	f.Fuzz(func(t *testing.T, s string) {
		if n := len(ExeBase(s)); n > len(s) {
			require.LessOrEqual(t, n, len(s), "grew")
		}
	})
}

// BenchmarkExecutableName names a process by its exe link, and one whose
// link cannot be read (a kernel thread) by its comm, as the gpu Source
// does once per new process, against prometheus/procfs's Proc.Executable
// and Proc.Comm.
func BenchmarkExecutableName(b *testing.B) {
	root := procfstest.New(b,
		procfstest.Process{PID: 1, Exe: "/usr/bin/python3.11", Comm: "python3\n"},
		procfstest.Process{PID: 2, Comm: "kworker/0:1\n"})
	for _, tc := range []struct {
		name string
		pid  int
	}{{"exe", 1}, {"comm", 2}} {
		b.Run(tc.name, func(b *testing.B) {
			p := FS{Root: root}.Proc(tc.pid)
			procfstest.Versus(b, root, tc.pid,
				func() error {
					if p.ExecutableName() == "" {
						return errors.New("no name")
					}
					return nil
				},
				func(p prometheus.Proc) error {
					if exe, err := p.Executable(); err == nil && exe != "" {
						return nil
					}
					_, err := p.Comm()
					return err
				})
		})
	}
}

func TestParseSchedstat(t *testing.T) {
	for in, want := range map[string]uint64{
		"171780 5449 2\n": 171780, "0 0 0": 0, "18446744073709551615 1 1": 1<<64 - 1,
	} {
		got, ok := ParseSchedstat([]byte(in))
		assert.True(t, ok, "%q", in)
		assert.Equal(t, want, got, "%q", in)
	}
	for _, in := range []string{"", "\n", "x 1 2", "-1 2 3", "18446744073709551616 1 1"} {
		_, ok := ParseSchedstat([]byte(in))
		assert.False(t, ok, "%q", in)
	}
}

// The CPU time of this process grows as it spins.
func TestCPUTime(t *testing.T) {
	p := FS{Root: DefaultRoot}.Proc(os.Getpid())
	before, err := p.CPUTime()
	require.NoError(t, err)
	grew := func() bool {
		after, err := p.CPUTime()
		require.NoError(t, err)
		return after > before
	}
	for deadline := time.Now().Add(time.Minute); !grew(); {
		require.False(t, time.Now().After(deadline), "no CPU time counted in a minute of spinning")
	}
	_, err = FS{Root: t.TempDir()}.Proc(1).CPUTime()
	assert.Error(t, err, "a process that is not there")
}

func FuzzParseSchedstat(f *testing.F) {
	f.Add([]byte("171780 5449 2\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		if v, ok := ParseSchedstat(b); ok {
			first, err := strconv.ParseUint(string(bytes.Fields(b)[0]), 10, 64)
			require.NoError(t, err)
			assert.Equal(t, first, v)
		}
	})
}

// Self is this process, in the host's procfs.
func TestSelf(t *testing.T) {
	pid, err := FS{Root: DefaultRoot}.Self()
	require.NoError(t, err)
	assert.Equal(t, os.Getpid(), pid)
	_, err = FS{Root: t.TempDir()}.Self()
	assert.Error(t, err, "a fixture tree has no self link")
}

// MappedPath names the file a mapping maps, as the process sees it: this
// test binary's own executable.
func TestMappedPath(t *testing.T) {
	p := FS{Root: DefaultRoot}.Proc(os.Getpid())
	maps, err := p.Maps()
	require.NoError(t, err)
	exe, err := os.Executable()
	require.NoError(t, err)
	i := slices.IndexFunc(maps, func(m Mapping) bool { return m.Path == exe })
	require.GreaterOrEqual(t, i, 0, "the executable is not mapped: %+v", maps)
	path, err := p.MappedPath(maps[i])
	require.NoError(t, err)
	assert.Equal(t, exe, path)
	_, err = p.MappedPath(Mapping{Start: 0x1000, End: 0x2000})
	assert.Error(t, err, "no mapping there")
}

// Signal reaches the process through its directory, and fails for one
// that is gone.
func TestSignal(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	require.NoError(t, cmd.Start())
	p := FS{Root: DefaultRoot}.Proc(cmd.Process.Pid)
	require.NoError(t, p.Signal(syscall.SIGKILL))
	err := cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, syscall.SIGKILL, exit.Sys().(syscall.WaitStatus).Signal())
	assert.Error(t, p.Signal(syscall.SIGKILL), "the process is gone")
}

func TestParseNSPid(t *testing.T) {
	for _, tc := range []struct {
		status string
		pid    int
		ok     bool
	}{
		{"Name:\tpython3\nPid:\t4242\nNSpid:\t4242\t17\nPPid:\t1\n", 17, true},
		{"Pid:\t4242\nNSpid:\t4242\n", 4242, true},
		{"Pid:\t4242\n", 0, false},
		{"NSpid:\n", 0, false},
		{"NSpid:\t4242\tx\n", 0, false},
		{"NSpid:\t-1\n", 0, false},
		{"", 0, false},
	} {
		pid, ok := ParseNSPid([]byte(tc.status))
		if pid != tc.pid || ok != tc.ok {
			t.Errorf("ParseNSPid(%q) = %d, %v; want %d, %v", tc.status, pid, ok, tc.pid, tc.ok)
		}
	}
	self, err := FS{Root: DefaultRoot}.Proc(os.Getpid()).NSPid()
	if err != nil || self < 1 {
		t.Errorf("NSPid of this process: %d, %v", self, err)
	}
}
