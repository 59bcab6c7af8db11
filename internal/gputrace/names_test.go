package gputrace

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xpuscope/xpuscope/internal/procfs"
)

// A process that exited before its events were handled is gone from
// procfs; its executable is still known from the tracer's scan of it.
func TestExecutableNameOfExitedProcess(t *testing.T) {
	s := newSymbolizer(procfs.FS{Root: t.TempDir()}) // an empty procfs: every process has exited
	assert.Equal(t, "", s.ExecutableName(42))
	s.exe = func(pid int) (string, bool) {
		if pid == 42 {
			return "/opt/app/bin/train", true
		}
		return "", false
	}
	assert.Equal(t, "train", s.ExecutableName(42))
	assert.Equal(t, "", s.ExecutableName(43))
}
