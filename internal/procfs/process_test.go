package procfs

import (
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/procfs/procfstest"
	"github.com/xpuscope/xpuscope/internal/testutil"
)

func TestParseCmdline(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []string
	}{
		{"empty", "", nil},
		{"one", "tritonserver\x00", []string{"tritonserver"}},
		{"args", "python3\x00-m\x00vllm.entrypoints.openai.api_server\x00--port\x008000\x00",
			[]string{"python3", "-m", "vllm.entrypoints.openai.api_server", "--port", "8000"}},
		{"empty argument kept", "a\x00\x00b\x00", []string{"a", "", "b"}},
		// setproctitle: the title, then the rest of the old argument area
		// as NULs.
		{"title padded", "VLLM::EngineCore\x00\x00\x00\x00\x00\x00", []string{"VLLM::EngineCore"}},
		{"title without NUL", "VLLM::EngineCore", []string{"VLLM::EngineCore"}},
		{"title with spaces", "text-generation-router --port 80\x00", []string{"text-generation-router --port 80"}},
	} {
		assert.Equal(t, tc.want, ParseCmdline([]byte(tc.in)), tc.name)
	}
	many := strings.Repeat("x\x00", 2*maxCmdlineArgs)
	assert.Len(t, ParseCmdline([]byte(many)), maxCmdlineArgs, "arguments past the cap")
}

func FuzzParseCmdline(f *testing.F) {
	f.Add([]byte("python3\x00-m\x00vllm\x00"))
	f.Add([]byte("VLLM::EngineCore\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		args := ParseCmdline(b)
		require.LessOrEqual(t, len(args), maxCmdlineArgs)
		n := 0
		for _, a := range args {
			require.NotContains(t, a, "\x00")
			n += len(a)
		}
		require.LessOrEqual(t, n, len(b), "more bytes out than in")
	})
}

func TestParsePPID(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{procfstest.Stat(42, "python3", 7331), 1, true},
		{"7 (a) b) S 6 7 7 0 -1", 6, true},
		{"7 (VLLM::EngineCor) S 3301 7 7", 3301, true},
		{"7 (x) S", 0, false},
		{"7 (x) S -1", 0, false},
		{"no parenthesis", 0, false},
	} {
		got, ok := ParsePPID([]byte(tc.in))
		assert.Equal(t, tc.ok, ok, "ParsePPID(%q) ok", tc.in)
		assert.Equal(t, tc.want, got, "ParsePPID(%q)", tc.in)
	}
}

// TestProcessOfHost reads a child of this test through the host's
// procfs: its command line, its parent, its network namespace.
func TestProcessOfHost(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	p := FS{Root: DefaultRoot}.Proc(cmd.Process.Pid)
	// Start returns once exec has closed the child's descriptors, which
	// is before the kernel has set up its new argument area: until then
	// its command line reads empty.
	var args []string
	require.Eventually(t, func() bool {
		var err error
		args, err = p.Cmdline()
		return err == nil && len(args) > 0
	}, 10*time.Second, time.Millisecond, "the child's command line stays empty")
	assert.Equal(t, []string{"sleep", "30"}, args, "Cmdline")
	ppid, err := p.PPID()
	require.NoError(t, err)
	assert.Equal(t, os.Getpid(), ppid, "PPID")
	ns, err := p.NetNS()
	require.NoError(t, err)
	self, err := FS{Root: DefaultRoot}.Proc(os.Getpid()).NetNS()
	require.NoError(t, err)
	assert.Equal(t, self, ns, "a child shares its parent's network namespace")
	assert.True(t, strings.HasPrefix(ns, "net:["), "NetNS %q", ns)
	f, err := p.OpenNetNS()
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func TestOpenFile(t *testing.T) {
	testutil.Native(t, "openat2(2), which QEMU 7.2's user mode lacks")
	root := procfstest.New(t, procfstest.Process{PID: 9, Files: map[string]string{
		"root/etc/monitoring.config": "abs",
		"cwd/conf/monitoring.config": "rel",
	}})
	p := FS{Root: root}.Proc(9)
	for path, want := range map[string]string{
		"/etc/monitoring.config":           "abs",
		"/../../etc/monitoring.config":     "abs",
		"conf/monitoring.config":           "rel",
		"../../conf/monitoring.config":     "rel",
		"./conf/../conf/monitoring.config": "rel",
	} {
		f, err := p.OpenFile(path)
		if !assert.NoError(t, err, "OpenFile(%q)", path) {
			continue
		}
		b, err := io.ReadAll(f)
		f.Close()
		require.NoError(t, err)
		assert.Equal(t, want, string(b), "OpenFile(%q)", path)
	}
	_, err := p.OpenFile("/none")
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestSocketInodeTarget(t *testing.T) {
	for target, want := range map[string]uint64{"socket:[12345]": 12345, "pipe:[1]": 0, "socket:[x]": 0, "socket:[1": 0, "/dev/null": 0} {
		got, ok := socketInode(target)
		assert.Equal(t, want != 0, ok, "socketInode(%q) ok", target)
		assert.Equal(t, want, got, "socketInode(%q)", target)
	}
}
