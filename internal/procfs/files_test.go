package procfs

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/procfs/procfstest"
	"github.com/xpuscope/xpuscope/internal/testutil"
)

// The test's own process: its descriptors, a file it holds open read
// back through its fd link after the file was removed, its working
// directory.
func TestFDsOfSelf(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.out.tfevents.1.host.7.0")
	require.NoError(t, os.WriteFile(path, []byte("held"), 0o644))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, os.Remove(path))
	p := FS{Root: DefaultRoot}.Proc(os.Getpid())
	found := -1
	require.NoError(t, p.FDs(func(fd int, target string) bool {
		if strings.HasPrefix(target, path) {
			found = fd
			return false
		}
		return true
	}))
	require.Equal(t, int(f.Fd()), found, "the descriptor of the file held")
	g, err := p.OpenFD(found)
	require.NoError(t, err)
	b, err := io.ReadAll(g)
	g.Close()
	require.NoError(t, err)
	assert.Equal(t, "held", string(b), "read through the link, removed")
	// A descriptor that is not a regular file: refused.
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	_, err = p.OpenFD(int(r.Fd()))
	assert.ErrorContains(t, err, "not a regular file")

	cwd, err := os.Getwd()
	require.NoError(t, err)
	got, err := p.Cwd()
	require.NoError(t, err)
	assert.Equal(t, cwd, got)
}

// Open resolves what a process names in its root or working directory,
// and never leads out of them; OpenIn opens an entry of a directory, no
// link followed, a regular file only.
func TestOpenStaysInside(t *testing.T) {
	testutil.Native(t, "openat2(2), which QEMU 7.2's user mode lacks")
	base := t.TempDir()
	root := filepath.Join(base, "rootfs")
	outside := filepath.Join(base, "outside")
	for path, s := range map[string]string{
		"rootfs/runs/exp/events":  "in the root",
		"rootfs/work/metrics.csv": "in the cwd",
		"rootfs/outside/secret":   "the root's own",
		"outside/secret":          "the host's",
	} {
		require.NoError(t, os.MkdirAll(filepath.Join(base, filepath.Dir(path)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(base, path), []byte(s), 0o644))
	}
	procDir := filepath.Join(base, "proc", "42")
	require.NoError(t, os.MkdirAll(procDir, 0o755))
	require.NoError(t, os.Symlink(root, filepath.Join(procDir, "root")))
	require.NoError(t, os.Symlink(filepath.Join(root, "work"), filepath.Join(procDir, "cwd")))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "runs", "escape")))
	require.NoError(t, os.Symlink("/outside/secret", filepath.Join(root, "runs", "abs-link")))
	p := FS{Root: filepath.Join(base, "proc")}.Proc(42)

	read := func(path string) (string, error) {
		f, err := p.OpenFile(path)
		if err != nil {
			return "", err
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		return string(b), err
	}
	for path, want := range map[string]string{
		"/runs/exp/events":            "in the root",
		"metrics.csv":                 "in the cwd",
		"../../../outside/secret":     "", // the cwd's ../.. is the cwd: no such file
		"/../../outside/secret":       "the root's own",
		"/runs/escape/secret":         "", // a link to a host path resolves in the root, where there is none
		"/runs/abs-link":              "the root's own",
		"/proc/self/root/etc/passwd?": "",
	} {
		got, err := read(path)
		if want == "" {
			assert.Error(t, err, "%s", path)
			continue
		}
		require.NoError(t, err, "%s", path)
		assert.Equal(t, want, got, "%s", path)
	}

	dir, err := p.Open("/runs", unix.O_RDONLY|unix.O_DIRECTORY)
	require.NoError(t, err)
	defer dir.Close()
	_, err = OpenIn(dir, "abs-link")
	assert.Error(t, err, "a link, not followed")
	_, err = OpenIn(dir, "exp")
	assert.ErrorContains(t, err, "not a regular file")
	_, err = OpenIn(dir, "../rootfs/runs/exp/events")
	assert.Error(t, err, "a path, not an entry")
	sub, err := OpenDirIn(dir, "exp")
	require.NoError(t, err)
	defer sub.Close()
	assert.Equal(t, "/runs/exp", sub.Name())
	_, err = OpenDirIn(dir, "escape")
	assert.Error(t, err, "a link to a directory, not followed")
	_, err = OpenDirIn(sub, "events")
	assert.Error(t, err, "not a directory")
	f, err := OpenIn(sub, "events")
	require.NoError(t, err)
	f.Close()
}

func TestBootTime(t *testing.T) {
	root := procfstest.New(t)
	require.NoError(t, os.WriteFile(filepath.Join(root, "stat"), []byte("cpu  1 2 3\nintr 5\nbtime 1700000000\nprocesses 9\n"), 0o644))
	boot, err := FS{Root: root}.BootTime()
	require.NoError(t, err)
	assert.Equal(t, time.Unix(1700000000, 0), boot)
	assert.Equal(t, time.Unix(1700000012, 500_000_000), StartedAt(boot, 1250), "clock ticks of 10 ms")
	require.NoError(t, os.WriteFile(filepath.Join(root, "stat"), []byte("cpu  1 2 3\n"), 0o644))
	_, err = FS{Root: root}.BootTime()
	assert.ErrorContains(t, err, "no btime")

	// The host's: this process started after boot, and not in the future.
	fs := FS{Root: DefaultRoot}
	boot, err = fs.BootTime()
	require.NoError(t, err)
	h, err := fs.Open()
	require.NoError(t, err)
	defer h.Close()
	ticks, err := h.StartTime(os.Getpid())
	require.NoError(t, err)
	started := StartedAt(boot, ticks)
	assert.True(t, started.After(boot) && started.Before(time.Now().Add(2*time.Second)), "started %v, booted %v", started, boot)
}
