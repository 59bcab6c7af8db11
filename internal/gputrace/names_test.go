package gputrace

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xpuscope/xpuscope/internal/procfs"
)

// fakeCaptured is a discovery that captured one exited process.
type fakeCaptured struct {
	pid   int
	exe   string
	maps  procfs.Maps
	syncs int
}

func (c *fakeCaptured) Mappings(pid int) (procfs.Maps, bool) {
	return c.maps, pid == c.pid && c.maps != nil
}
func (c *fakeCaptured) OpenMapped(procfs.Mapping) (*os.File, error) {
	return nil, os.ErrNotExist
}
func (c *fakeCaptured) Executable(pid int) (string, bool) { return c.exe, pid == c.pid }
func (c *fakeCaptured) Sync()                             { c.syncs++ }

// A process that exited before its events were handled is gone from
// procfs; its executable is still known from what the discovery captured.
func TestExecutableNameOfExitedProcess(t *testing.T) {
	s := newSymbolizer(procfs.FS{Root: t.TempDir()}) // an empty procfs: every process has exited
	assert.Equal(t, "", s.ExecutableName(42))
	s.captured = &fakeCaptured{pid: 42, exe: "train"}
	assert.Equal(t, "train", s.ExecutableName(42))
	assert.Equal(t, "", s.ExecutableName(43))
}

// A miss for a process that is gone, and that the discovery has captured
// nothing of, waits once for the discovery to catch up, then is a miss.
func TestSymbolizeWaitsOnceForTheDiscovery(t *testing.T) {
	s := newSymbolizer(procfs.FS{Root: t.TempDir()})
	c := &fakeCaptured{pid: 42}
	s.captured = c
	_, ok := s.Symbolize(42, 0x1000)
	assert.False(t, ok)
	_, ok = s.Symbolize(42, 0x2000)
	assert.False(t, ok)
	assert.Equal(t, 1, c.syncs)
	s.forget(func(uint32) bool { return false })
	_, ok = s.Symbolize(42, 0x1000)
	assert.False(t, ok)
	assert.Equal(t, 2, c.syncs, "forgotten with the process")
}
