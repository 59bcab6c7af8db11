package testutil

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

// Hogs starts n processes that spin on the CPU, at the caller's priority,
// and kills them when t ends: a loaded node's run queue, for tests that
// must hold on one. They are processes, not goroutines, so that the
// scheduler shares the cores between them and the test's own processes
// as it does on a busy node.
func Hogs(t testing.TB, n int) {
	t.Helper()
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		require.NoError(t, cmd.Start(), "starting a busy loop")
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
}
