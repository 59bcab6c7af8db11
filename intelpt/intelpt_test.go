package intelpt

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/perfevent"
	"github.com/xpuscope/xpuscope/internal/perfevent/perfeventtest"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

// chunk is n bytes of a recognisable pattern.
func chunk(seed byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i%251)
	}
	return b
}

// TestDefaultConfig: the configuration is perf's default, placed through
// the fixture's formats: tsc, mtc with mtc_period 3 (of the periods
// 0x249 allows), psb_period 3, pt and branch.
func TestDefaultConfig(t *testing.T) {
	s, _, _ := newSource(t, &fakeOpener{})
	st := s.Status()
	assert.Equal(t, uint32(8), st.PMUType)
	assert.Equal(t, uint64(1<<0|1<<9|1<<10|1<<13|3<<14|3<<24), st.Config, "got %#x", st.Config)
	assert.Equal(t, "tsc=0x1,mtc=0x1,mtc_period=0x3,psb_period=0x3,pt=0x1,branch=0x1", st.Terms)
	assert.Contains(t, st.Describe(), "captures on demand only")

	for _, tc := range []struct {
		bits   uint64
		target int
		want   int
	}{{0x249, 3, 3}, {0x241, 3, 0}, {0x240, 3, 6}, {0x3f, 3, 3}, {0x1, 3, 0}, {0x100, 3, 8}} {
		assert.Equal(t, tc.want, pickBit(tc.bits, tc.target), "%#x", tc.bits)
	}
}

// TestCapture: the AUX bytes each AUX record points at, in order (also
// across the area's end), make trace.pt; every record, as the kernel laid
// it out, makes sideband.pevent; the manifest says what a decoder needs.
// The event ends disabled and closed.
func TestCapture(t *testing.T) {
	page := perfevent.PageSize
	a, b, c := chunk(1, page+page/2), chunk(2, page+page/2), chunk(3, 100) // b wraps a 2-page area
	comm := commRecord(4242, "dataloader")
	o := &fakeOpener{prepare: func(f *fakeEvent) {
		f.steps = []step{{aux: a, records: [][]byte{comm}}, {aux: b}, {aux: c}}
		f.hupAtEnd = true
	}}
	s, reader, dir := newSource(t, o)
	res, err := s.Capture(t.Context(), Request{Target: Process(4242), Duration: 5 * time.Second, AUXBytes: 2 * page})
	require.NoError(t, err)

	evs := o.events()
	require.Len(t, evs, 1)
	f := evs[0]
	enabled, closed := f.state()
	assert.False(t, enabled)
	assert.True(t, closed)
	assert.Equal(t, 4242, f.attr.PID)
	assert.Equal(t, -1, f.attr.CPU)
	assert.False(t, f.attr.Kernel)
	assert.Equal(t, uint64(len(a)+len(b)+len(c)), f.consumed, "every AUX byte handed back")

	assert.Equal(t, semconv.IntelPTStopExit, res.Stop)
	assert.Equal(t, filepath.Dir(res.Dir), dir)
	trace, err := os.ReadFile(filepath.Join(res.Dir, TraceFile))
	require.NoError(t, err)
	assert.True(t, bytes.Equal(append(append(append([]byte{}, a...), b...), c...), trace), "trace.pt is the AUX stream in order")
	side, err := os.ReadFile(filepath.Join(res.Dir, SidebandFile))
	require.NoError(t, err)
	want := append(append([]byte{}, comm...), auxRecord(0, uint64(len(a)), 0)...)
	want = append(want, auxRecord(uint64(len(a)), uint64(len(b)), 0)...)
	want = append(want, auxRecord(uint64(len(a)+len(b)), uint64(len(c)), 0)...)
	assert.Equal(t, want, side, "sideband.pevent holds the records as the kernel wrote them")
	assert.Equal(t, int64(len(trace)), res.TraceBytes)
	assert.Equal(t, int64(len(side)), res.SidebandBytes)

	m, err := ReadManifest(res.Dir)
	require.NoError(t, err)
	assert.Equal(t, ManifestFormat, m.Format)
	assert.Equal(t, "0x300e601", m.Config)
	require.NotNil(t, m.MTCPeriod)
	assert.Equal(t, uint64(3), *m.MTCPeriod)
	assert.Equal(t, "0x10086", m.SampleType)
	assert.Equal(t, 4242, m.PID)
	assert.Equal(t, -1, m.CPU)
	assert.Equal(t, perfevent.VendorIntel, m.Vendor)
	assert.Equal(t, 106, m.Model)
	assert.Equal(t, uint32(1234567), m.TimeMult)
	assert.True(t, m.Complete)
	assert.True(t, m.ExcludeKernel)
	assert.Equal(t, "249", m.Caps["mtc_periods"])
	assert.Equal(t, res.TraceBytes, m.TraceBytes)

	pts := testutil.Collect(t, reader)
	assert.Equal(t, 1.0, pts.One(t, semconv.XpuscopeIntelPTCaptures.Name,
		semconv.XpuscopeIntelPTOutcome.String(semconv.IntelPTDone), semconv.XpuscopeIntelPTStop.String(semconv.IntelPTStopExit)).Value)
	assert.Equal(t, float64(res.TraceBytes+res.SidebandBytes), pts.One(t, semconv.XpuscopeIntelPTBytes.Name).Value)
	assert.Equal(t, 0.0, pts.One(t, semconv.XpuscopeIntelPTActive.Name).Value)
}

// TestCaps: a request past a cap is refused before anything is opened
// or made.
func TestCaps(t *testing.T) {
	o := &fakeOpener{}
	s, reader, dir := newSource(t, o, WithMaxDuration(time.Second), WithMaxAUXBytes(4*perfevent.PageSize), WithMaxBytes(1<<20))
	for _, tc := range []struct {
		req  Request
		want string
	}{
		{Request{Target: Process(1), Duration: 2 * time.Second}, "WithMaxDuration"},
		{Request{Target: Process(1)}, "duration 0s"},
		{Request{Target: Process(1), Duration: time.Second, AUXBytes: 8 * perfevent.PageSize}, "WithMaxAUXBytes"},
		{Request{Target: Process(1), Duration: time.Second, AUXBytes: 3 * perfevent.PageSize}, "power of two"},
		{Request{Target: Process(1), Duration: time.Second, MaxBytes: 2 << 20}, "WithMaxBytes"},
		{Request{Duration: time.Second}, "no target"},
		{Request{Target: Process(0), Duration: time.Second}, "no target"},
		{Request{Target: CPU(-2), Duration: time.Second}, "no target"},
	} {
		_, err := s.Capture(t.Context(), tc.req)
		require.Error(t, err)
		assert.ErrorIs(t, err, ErrRefused)
		assert.Contains(t, err.Error(), tc.want)
	}
	assert.Empty(t, o.events(), "nothing opened")
	_, err := os.Stat(dir)
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing made")
	pts := testutil.Collect(t, reader)
	assert.Equal(t, 8.0, pts.One(t, semconv.XpuscopeIntelPTCaptures.Name, semconv.XpuscopeIntelPTOutcome.String(semconv.IntelPTRefused)).Value)
}

// TestConcurrent: past the concurrent captures allowed, a capture is
// refused, not queued; once one ends, the next may run.
func TestConcurrent(t *testing.T) {
	release := make(chan struct{})
	o := &fakeOpener{prepare: func(f *fakeEvent) { f.block = release; f.hupAtEnd = true }}
	s, _, _ := newSource(t, o)
	done := make(chan error, 1)
	go func() {
		_, err := s.Capture(context.Background(), Request{Target: CPU(0), Duration: time.Minute / 10})
		done <- err
	}()
	require.Eventually(t, func() bool { return s.Status().Running == 1 }, 10*time.Second, time.Millisecond)
	_, err := s.Capture(t.Context(), Request{Target: CPU(1), Duration: time.Second})
	assert.ErrorIs(t, err, ErrRefused)
	assert.Contains(t, err.Error(), "WithMaxConcurrent")
	close(release)
	require.NoError(t, <-done)
	o.prepare = func(f *fakeEvent) { f.hupAtEnd = true }
	_, err = s.Capture(t.Context(), Request{Target: CPU(1), Duration: time.Second})
	assert.NoError(t, err)
}

// TestMaxBytes: a capture stops at its byte cap, having written exactly
// the cap, and says so.
func TestMaxBytes(t *testing.T) {
	page := perfevent.PageSize
	o := &fakeOpener{prepare: func(f *fakeEvent) {
		f.steps = []step{{aux: chunk(1, page)}, {aux: chunk(2, page)}, {aux: chunk(3, page)}}
	}}
	s, reader, _ := newSource(t, o)
	res, err := s.Capture(t.Context(), Request{Target: Process(7), Duration: 5 * time.Second, AUXBytes: 4 * page, MaxBytes: int64(2 * page)})
	require.NoError(t, err)
	assert.Equal(t, semconv.IntelPTStopBytes, res.Stop)
	assert.Equal(t, int64(2*page), res.TraceBytes+res.SidebandBytes)
	m, err := ReadManifest(res.Dir)
	require.NoError(t, err)
	assert.True(t, m.CutAtMaxBytes)
	_, closed := o.events()[0].state()
	assert.True(t, closed)
	pts := testutil.Collect(t, reader)
	assert.Equal(t, 1.0, pts.One(t, semconv.XpuscopeIntelPTCaptures.Name, semconv.XpuscopeIntelPTStop.String(semconv.IntelPTStopBytes)).Value)
}

// TestStops: a capture ends at its duration, or when cancelled.
func TestStops(t *testing.T) {
	o := &fakeOpener{prepare: func(f *fakeEvent) { f.sleep = true }}
	s, _, _ := newSource(t, o)
	res, err := s.Capture(t.Context(), Request{Target: Process(7), Duration: 30 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, semconv.IntelPTStopDuration, res.Stop)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res, err = s.Capture(ctx, Request{Target: Process(7), Duration: time.Second})
	require.NoError(t, err)
	assert.Equal(t, semconv.IntelPTStopCancelled, res.Stop)
	for _, f := range o.events() {
		enabled, closed := f.state()
		assert.False(t, enabled)
		assert.True(t, closed)
	}
}

// TestFailClosed: a capture that cannot start is an error with the
// reason, leaves nothing open and no directory; one that breaks off is an
// error, the event disabled and closed, its manifest saying it is
// incomplete.
func TestFailClosed(t *testing.T) {
	o := &fakeOpener{err: perfevent.NewOpenError(perfevent.Attr{Type: 8, PID: 7, CPU: -1}, unix.EACCES)}
	s, reader, dir := newSource(t, o)
	_, err := s.Capture(t.Context(), Request{Target: Process(7), Duration: time.Second})
	require.Error(t, err)
	assert.False(t, errors.Is(err, ErrRefused), "asked for and not started: a failure, not a refusal")
	assert.Contains(t, err.Error(), "CAP_PERFMON")
	entries, _ := os.ReadDir(dir)
	assert.Empty(t, entries, "no capture directory left")

	o.err = nil
	o.prepare = func(f *fakeEvent) { f.enableErr = errInjected }
	_, err = s.Capture(t.Context(), Request{Target: Process(7), Duration: time.Second})
	assert.ErrorIs(t, err, errInjected)
	enabled, closed := o.events()[0].state()
	assert.False(t, enabled)
	assert.True(t, closed)
	entries, _ = os.ReadDir(dir)
	assert.Empty(t, entries)

	o.prepare = func(f *fakeEvent) {
		f.steps = []step{{aux: chunk(1, 100)}}
		f.waitErr = errInjected
	}
	res, err := s.Capture(t.Context(), Request{Target: Process(7), Duration: time.Second})
	assert.ErrorIs(t, err, errInjected)
	assert.Contains(t, err.Error(), "broke off")
	f := o.events()[1]
	enabled, closed = f.state()
	assert.False(t, enabled)
	assert.True(t, closed)
	assert.GreaterOrEqual(t, f.disables, 1)
	m, err := ReadManifest(res.Dir)
	require.NoError(t, err)
	assert.False(t, m.Complete)
	assert.Contains(t, m.Error, "injected")
	assert.Equal(t, int64(100), m.TraceBytes)

	pts := testutil.Collect(t, reader)
	assert.Equal(t, 3.0, pts.One(t, semconv.XpuscopeIntelPTCaptures.Name, semconv.XpuscopeIntelPTOutcome.String(semconv.IntelPTFailed)).Value)
}

// TestLoss: AUX records flagged truncated and PERF_RECORD_LOST are
// counted, the trace kept.
func TestLoss(t *testing.T) {
	o := &fakeOpener{prepare: func(f *fakeEvent) {
		f.steps = []step{{aux: chunk(1, 64), truncated: true, records: [][]byte{lostRecord(5)}}, {aux: chunk(2, 64), truncated: true}}
		f.hupAtEnd = true
	}}
	s, reader, _ := newSource(t, o)
	res, err := s.Capture(t.Context(), Request{Target: CPU(3), Duration: time.Second, Kernel: true})
	require.NoError(t, err)
	assert.Equal(t, uint64(2), res.Truncated)
	assert.Equal(t, uint64(5), res.Lost)
	assert.Equal(t, int64(128), res.TraceBytes)
	assert.True(t, o.events()[0].attr.Kernel)
	assert.Equal(t, 3, o.events()[0].attr.CPU)
	assert.Equal(t, -1, o.events()[0].attr.PID)
	pts := testutil.Collect(t, reader)
	assert.Equal(t, 2.0, pts.One(t, semconv.XpuscopeIntelPTLost.Name, semconv.XpuscopeIntelPTLoss.String(semconv.IntelPTLossTruncated)).Value)
	assert.Equal(t, 5.0, pts.One(t, semconv.XpuscopeIntelPTLost.Name, semconv.XpuscopeIntelPTLoss.String(semconv.IntelPTLossRecords)).Value)
}

// TestSnapshot: in snapshot mode the AUX area is overwritten and only
// its last bytes, copied at the end, make the trace; the AUX records'
// data is not copied as it comes.
func TestSnapshot(t *testing.T) {
	page := perfevent.PageSize
	a, b := chunk(1, page), chunk(2, page+page/2) // 2.5 pages through a 2-page area
	o := &fakeOpener{prepare: func(f *fakeEvent) {
		f.steps = []step{{aux: a}, {aux: b}}
		f.hupAtEnd = true
	}}
	s, _, _ := newSource(t, o)
	res, err := s.Capture(t.Context(), Request{Target: Process(9), Duration: time.Second, AUXBytes: 2 * page, Snapshot: true})
	require.NoError(t, err)
	trace, err := os.ReadFile(filepath.Join(res.Dir, TraceFile))
	require.NoError(t, err)
	all := append(append([]byte{}, a...), b...)
	assert.True(t, bytes.Equal(all[len(all)-2*page:], trace), "the last two pages of trace")
	assert.Zero(t, o.events()[0].consumed, "a snapshot's tail is not moved")
}

// TestClose: Close cancels a running capture (which ends complete, as
// cancelled), and refuses those asked for after.
func TestClose(t *testing.T) {
	o := &fakeOpener{prepare: func(f *fakeEvent) { f.sleep = true }}
	s, _, _ := newSource(t, o)
	done := make(chan Result, 1)
	go func() {
		res, _ := s.Capture(context.Background(), Request{Target: Process(7), Duration: 5 * time.Second})
		done <- res
	}()
	require.Eventually(t, func() bool { return s.Status().Running == 1 }, 10*time.Second, time.Millisecond)
	require.NoError(t, s.Close())
	assert.Equal(t, semconv.IntelPTStopCancelled, (<-done).Stop)
	_, err := s.Capture(t.Context(), Request{Target: Process(7), Duration: time.Second})
	assert.ErrorIs(t, err, ErrRefused)
	assert.NoError(t, s.Close())
}

// TestNoPMU: without an intel_pt PMU, New is unavailable and says why:
// on an Intel fixture without it, and on this machine where it has none
// (an AMD VM; a machine with Intel PT is checked by the fixture alone).
func TestNoPMU(t *testing.T) {
	if _, serr := os.Stat("/sys/bus/event_source/devices/intel_pt"); serr != nil {
		_, err := New()
		require.ErrorIs(t, err, xpuscope.ErrUnavailable)
		assert.Contains(t, err.Error(), "no intel_pt PMU (/sys/bus/event_source/devices/intel_pt)")
		info, ierr := perfevent.ReadCPUInfo(os.DirFS("/proc"))
		require.NoError(t, ierr)
		switch {
		case info.Vendor != perfevent.VendorIntel:
			assert.Contains(t, err.Error(), "Intel PT is Intel's")
		case info.Hypervisor:
			assert.Contains(t, err.Error(), "virtual machine")
		}
	}

	tree := perfeventtest.Write(t, "spr")
	_, err := New(WithSysfsRoot(tree.Sys), WithProcRoot(tree.Proc))
	require.ErrorIs(t, err, xpuscope.ErrUnavailable)
	assert.Contains(t, err.Error(), "CONFIG_PERF_EVENTS_INTEL_PT")
}

// TestKernelAUXRefused: the kernel's open path on a PMU without an AUX
// area (a software event stands in for intel_pt, which this machine
// lacks): mapping the AUX area fails with EOPNOTSUPP, and openKernel
// leaves no file descriptor open.
func TestKernelAUXRefused(t *testing.T) {
	testutil.Native(t, "the kernel's perf_event_open, which QEMU's user mode lacks")
	before := countFDs(t)
	_, err := openKernel(perfevent.TraceAttr{Type: unix.PERF_TYPE_SOFTWARE, Configs: perfevent.Configs{unix.PERF_COUNT_SW_DUMMY}, PID: 0, CPU: -1}, 16, 4, false)
	var oe *perfevent.OpenError
	if errors.As(err, &oe) && (oe.Errno == unix.EACCES || oe.Errno == unix.EPERM) {
		testutil.SkipOrFail(t, "opening a perf event on this process was refused: %v", err)
	}
	require.Error(t, err)
	assert.ErrorIs(t, err, unix.EOPNOTSUPP)
	assert.Equal(t, before, countFDs(t), "the event closed again")

	// The same open succeeds with the data ring alone, and closes.
	ev, err := openKernel(perfevent.TraceAttr{Type: unix.PERF_TYPE_SOFTWARE, Configs: perfevent.Configs{unix.PERF_COUNT_SW_DUMMY}, PID: 0, CPU: -1}, 16, 0, false)
	require.NoError(t, err)
	require.NoError(t, ev.Enable())
	hup, err := ev.Wait(time.Millisecond)
	require.NoError(t, err)
	assert.False(t, hup)
	require.NoError(t, ev.Close())
	require.NoError(t, ev.Close())
	assert.Equal(t, before, countFDs(t))
}

func countFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(entries)
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		opt  Option
		want string
	}{
		{WithMaxDuration(0), "WithMaxDuration"},
		{WithMaxDuration(time.Hour), "WithMaxDuration"},
		{WithMaxAUXBytes(0), "WithMaxAUXBytes"},
		{WithMaxAUXBytes(3 * perfevent.PageSize), "WithMaxAUXBytes"},
		{WithMaxBytes(1), "WithMaxBytes"},
		{WithMaxConcurrent(0), "WithMaxConcurrent"},
		{WithCaptureDir("relative"), "WithCaptureDir"},
		{WithSysfsRoot(""), "WithSysfsRoot"},
	} {
		_, err := New(tc.opt)
		require.Error(t, err)
		assert.False(t, errors.Is(err, xpuscope.ErrUnavailable))
		assert.True(t, strings.HasPrefix(err.Error(), "intelpt: "+tc.want), err.Error())
	}
}
