package gputrace

import (
	"runtime"
	"testing"
	"time"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// TestTraceUnderLoad runs the record-exact scenarios while two busy loops
// per core keep every core's run queue full (a load average of four
// times the cores): the Source's reader, the probed programs and the test
// all wait for a core, and still every record arrives, each with its
// arguments, and every series is exact (issue 16, item 2).
func TestTraceUnderLoad(t *testing.T) {
	requireRoot(t)
	testutil.Hogs(t, 2*runtime.NumCPU())
	runScenarios(t, startTracing(t, WithRescanInterval(time.Hour)), recordExact)
}

// TestTraceNCCLUnderLoad is TestTraceNCCL with two busy loops per core:
// the ranks' threads, the reader and the test wait for a core, and every
// record, series and span is still exact.
func TestTraceNCCLUnderLoad(t *testing.T) {
	requireRoot(t)
	testutil.Hogs(t, 2*runtime.NumCPU())
	testTraceNCCL(t)
}
