package perfevent_test

import (
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/perfevent"
	"github.com/xpuscope/xpuscope/internal/testutil"
)

// hostPMU reads one of this machine's own PMUs, or skips (fails in CI)
// when the kernel has none of that name.
func hostPMU(t *testing.T, name string) *perfevent.PMU {
	t.Helper()
	testutil.Native(t, "the kernel's perf_event_open, which QEMU's user mode lacks")
	p, err := perfevent.ReadPMU(os.DirFS("/sys"), name)
	if err != nil {
		testutil.SkipOrFail(t, "no %s PMU here: %v", name, err)
	}
	return p
}

// openOrSkip opens a, skipping (failing in CI) when the process lacks
// the privilege.
func openOrSkip(t *testing.T, a perfevent.Attr) perfevent.Counter {
	t.Helper()
	c, err := perfevent.KernelOpener{}.Open(a)
	var oe *perfevent.OpenError
	if errors.As(err, &oe) && (oe.Errno == unix.EACCES || oe.Errno == unix.EPERM) {
		testutil.SkipOrFail(t, "counting on a CPU needs CAP_PERFMON or root: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestKernelCountMSR opens this machine's msr PMU the way pmu opens an
// uncore PMU: its type and config from sysfs (events/tsc through
// format/event), one counter per CPU with pid -1. It counts the time
// stamp counter, so two reads must differ, and the times must run.
func TestKernelCountMSR(t *testing.T) {
	p := hostPMU(t, "msr")
	ev, ok := p.Events["tsc"]
	require.True(t, ok, "the msr PMU always has tsc")
	cfg, err := p.Encode(ev.Terms)
	require.NoError(t, err)
	c := openOrSkip(t, perfevent.Attr{Type: p.Type, Configs: cfg, PID: -1, CPU: 0})
	var v1, v2 perfevent.Value
	require.NoError(t, c.Read(&v1))
	for range 1000 {
		require.NoError(t, c.Read(&v2))
		if v2.Count > v1.Count {
			break
		}
	}
	assert.Greater(t, v2.Count, v1.Count, "the TSC advances")
	assert.Greater(t, v2.Enabled, uint64(0))
	assert.Greater(t, v2.Running, uint64(0))
	s, ok := v2.Scaled()
	assert.True(t, ok)
	assert.GreaterOrEqual(t, s, float64(v2.Count))

	require.NoError(t, c.Close())
	assert.NoError(t, c.Close(), "Close is idempotent")
	assert.Error(t, c.Read(&v1), "a closed counter does not read")
}

// TestKernelCountSoftware counts cpu-clock (the software PMU, type 1,
// config 0) on CPU 0 for every task: its count is nanoseconds the CPU
// ran, and it runs whenever it is enabled (no multiplexing).
func TestKernelCountSoftware(t *testing.T) {
	p := hostPMU(t, "software")
	c := openOrSkip(t, perfevent.Attr{Type: p.Type, PID: -1, CPU: 0})
	var v perfevent.Value
	require.NoError(t, c.Read(&v))
	assert.Equal(t, v.Enabled, v.Running, "a software event is never multiplexed")
}

// TestKernelOpenErrors: what the kernel answers for a type it has no PMU
// of, and for a configuration a PMU refuses, and how each is classified.
func TestKernelOpenErrors(t *testing.T) {
	testutil.Native(t, "the kernel's perf_event_open, which QEMU's user mode lacks")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "the errors below are the kernel's answers to root; others get EACCES first")
	}
	// No PMU has type 0x7ffffff0.
	_, err := perfevent.KernelOpener{}.Open(perfevent.Attr{Type: 0x7ffffff0, PID: -1, CPU: 0})
	var oe *perfevent.OpenError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, unix.ENOENT, oe.Errno)
	assert.True(t, oe.Unavailable(), "a PMU the kernel does not have is unavailable, not a fault")
	assert.Contains(t, oe.Error(), "ENOENT")
	assert.Contains(t, oe.Error(), "no PMU of this type")

	// The msr PMU refuses a config past its events with EINVAL
	// (arch/x86/events/msr.c, msr_event_init: cfg >= PERF_MSR_EVENT_MAX).
	p := hostPMU(t, "msr")
	_, err = perfevent.KernelOpener{}.Open(perfevent.Attr{Type: p.Type, Configs: perfevent.Configs{0xffff}, PID: -1, CPU: 0})
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, unix.EINVAL, oe.Errno)
	assert.False(t, oe.Unavailable(), "a configuration refused for every task on a CPU is a bad request")
	assert.Contains(t, oe.Error(), "refused the event's configuration")

	// The same EINVAL for a per-task open. No PMU of this machine refuses
	// per-task opens as the uncore PMUs do (their event_init returns
	// EINVAL for event->cpu < 0), so the errno is msr's again; what is
	// checked is that a per-task EINVAL reads as a PMU that counts only
	// per CPU, which is unavailable.
	_, err = perfevent.KernelOpener{}.Open(perfevent.Attr{Type: p.Type, Configs: perfevent.Configs{0xffff}, PID: 0, CPU: -1})
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, unix.EINVAL, oe.Errno)
	assert.True(t, oe.Unavailable())
	assert.Contains(t, oe.Error(), "counts only per CPU")
}

// TestOpenErrorPermission: EACCES says what privilege is missing, with
// the paranoid setting it depends on.
func TestOpenErrorPermission(t *testing.T) {
	e := perfevent.NewOpenError(perfevent.Attr{Type: 14, PID: -1, CPU: 0}, unix.EACCES)
	assert.True(t, e.Unavailable())
	assert.Contains(t, e.Error(), "CAP_PERFMON")
	assert.Contains(t, e.Error(), "perf_event_paranoid")
	if p, err := perfevent.Paranoid(nil); err == nil {
		assert.Contains(t, e.Error(), "(it is ")
		assert.GreaterOrEqual(t, p, -1)
	}
	assert.False(t, perfevent.NewOpenError(perfevent.Attr{}, unix.EBUSY).Unavailable(), "counters taken by another user: a failed open, counted, not a missing feature")
}

func TestHasPerfmon(t *testing.T) {
	has, err := perfevent.HasPerfmon()
	require.NoError(t, err)
	if os.Geteuid() == 0 {
		assert.True(t, has, "root holds CAP_SYS_ADMIN")
	}
}
