package gpu

// Tests of the Intel PMU reader. No i915 or xe PMU exists here (no Intel
// GPU): the PMUs are sysfs fixtures (internal/intelsysfs/testdata, with
// format/ and events/ as i915_pmu.c and xe_pmu.c write them), counted by
// a fake opener that checks what is opened; and the real perf_event_open
// path runs on this machine's software PMU (cpu-clock) described as an
// i915 PMU, with and without the privilege it needs.

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/intelsysfs/intelsysfstest"
	"github.com/xpuscope/xpuscope/internal/perfevent"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

// fakeCounter counts rate per poll: its value is rate × the polls the
// test says have passed.
type fakeCounter struct {
	f    *fakeOpener
	rate uint64
}

func (c *fakeCounter) Read(v *perfevent.Value) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if c.f.readErr != nil {
		return c.f.readErr
	}
	v.Count = 1_000_000 + c.rate*c.f.polls
	v.Enabled, v.Running = 1, 1
	return nil
}

func (c *fakeCounter) Close() error {
	c.f.mu.Lock()
	c.f.closed++
	c.f.mu.Unlock()
	return nil
}

// fakeOpener opens fakeCounters: rates by config, what it refuses by
// config, and what was opened.
type fakeOpener struct {
	mu      sync.Mutex
	rates   map[uint64]uint64
	refuse  func(a perfevent.Attr) error
	opened  []perfevent.Attr
	closed  int
	polls   uint64
	readErr error
}

func (f *fakeOpener) Open(a perfevent.Attr) (perfevent.Counter, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuse != nil {
		if err := f.refuse(a); err != nil {
			return nil, err
		}
	}
	f.opened = append(f.opened, a)
	return &fakeCounter{f: f, rate: f.rates[a.Configs[perfevent.Config]]}, nil
}

func (f *fakeOpener) tick() {
	f.mu.Lock()
	f.polls++
	f.mu.Unlock()
}

// refuseAll is an opener that refuses every open as the kernel does a
// process without CAP_PERFMON.
func refuseAll() *fakeOpener {
	return &fakeOpener{refuse: func(a perfevent.Attr) error { return perfevent.NewOpenError(a, unix.EACCES) }}
}

func TestIntelPMUI915(t *testing.T) {
	clock := newTestClock()
	// ns busy a second (one poll): rcs0 half, the two video engines 0.2
	// and 0.6 (a mean of 0.4), vecs0 always, bcs0 and ccs0 never.
	f := &fakeOpener{rates: map[uint64]uint64{0x0: 5e8, 0x2000: 2e8, 0x2010: 6e8, 0x3000: 1e9}}
	procs := intelProcRoot(t)
	s, reader := newSource(t, WithBackends(BackendIntelSysfs), withSysfsFS(intelsysfstest.Load(t, "i915-one-gpu")), WithProcRoot(procs),
		withClock(clock.now), withPerfOpener(f))
	var configs []string
	for _, a := range f.opened {
		assert.Equal(t, uint32(24), a.Type, "the PMU's type file")
		assert.Equal(t, -1, a.PID, "every task")
		assert.Equal(t, 0, a.CPU, "the cpumask's CPU")
		configs = append(configs, fmt.Sprintf("%#x", a.Configs[perfevent.Config]))
	}
	assert.Equal(t, []string{"0x1000", "0x4000", "0x0", "0x2000", "0x2010", "0x3000"}, configs,
		"bcs0, ccs0, rcs0, vcs0, vcs1, vecs0 -busy, in name order, their config= strings; not rcs0-wait nor actual-frequency")

	id := semconv.HWID.String("0000:03:00.0")
	assert.Empty(t, testutil.Collect(t, reader).Find(semconv.GPUEngineUtilization.Name), "the first read gives no figure")
	clock.advance(time.Second)
	f.tick()
	s.poll()
	pts := testutil.Collect(t, reader)
	pmu := source(semconv.MeasurementSourcePMU)
	eng := semconv.GPUEngineUtilization.Name
	for c, want := range map[string]float64{semconv.EngineRender: 0.5, semconv.EngineVideo: 0.4, semconv.EngineVideoEnhance: 1, semconv.EngineCopy: 0, semconv.EngineCompute: 0} {
		assert.InDelta(t, want, pts.One(t, eng, id, class(c), pmu).Value, 1e-9, c)
	}
	assert.InDelta(t, 1.0, pts.One(t, semconv.HWGPUUtilization.Name, id, pmu).Value, 1e-9, "general: the busiest class")

	// A read that fails is counted, and the engine starts over.
	f.mu.Lock()
	f.readErr = unix.EIO
	f.mu.Unlock()
	s.poll()
	pts = testutil.Collect(t, reader)
	assert.Equal(t, 6.0, pts.One(t, semconv.XpuscopeGPUReadErrors.Name, id, semconv.XpuscopeRead.String("engines"), semconv.ErrorType.String("EIO")).Value)

	st := s.Status()
	assert.Contains(t, st.Backends[0].Detail, "engines from the i915 PMU i915_0000_03_00.0 (6 engines)")
	require.NoError(t, s.Close())
	assert.Equal(t, 6, f.closed, "every counter closed")
}

func TestIntelPMUXe(t *testing.T) {
	clock := newTestClock()
	// Instances: ccs has four engines, vcs two, the others one; the PMU
	// refuses the next instance with ENOENT (xe_pmu.c, event_param_valid).
	instances := map[uint64]uint64{0: 1, 1: 1, 2: 2, 3: 1, 4: 4}
	f := &fakeOpener{rates: map[uint64]uint64{}}
	f.refuse = func(a perfevent.Attr) error {
		c := a.Configs[perfevent.Config]
		class, inst := c>>20&0xff, c>>12&0xff
		if inst >= instances[class] {
			return perfevent.NewOpenError(a, unix.ENOENT)
		}
		return nil
	}
	// config as the fixture's format files place it: event config:0-11,
	// engine_instance config:12-19, engine_class config:20-27, gt
	// config:60-63.
	cfg := func(event, gt, class, inst uint64) uint64 { return event | inst<<12 | class<<20 | gt<<60 }
	for inst := range uint64(4) {
		f.rates[cfg(2, 0, 4, inst)] = 250 * (inst + 1) // ccs active: 250, 500, 750, 1000 of 1000
		f.rates[cfg(3, 0, 4, inst)] = 1000
	}
	f.rates[cfg(2, 1, 2, 0)], f.rates[cfg(3, 1, 2, 0)] = 100, 1000 // vcs0 on the media GT
	f.rates[cfg(2, 1, 2, 1)], f.rates[cfg(3, 1, 2, 1)] = 300, 1000 // vcs1
	for _, c := range []uint64{0, 1} {
		f.rates[cfg(3, 0, c, 0)] = 1000
	}
	f.rates[cfg(3, 1, 3, 0)] = 1000

	s, reader := newSource(t, WithBackends(BackendIntelSysfs), withSysfsFS(intelsysfstest.Load(t, "xe-one-gpu")), WithProcRoot(intelProcRoot(t)),
		withClock(clock.now), withPerfOpener(f))
	assert.Len(t, f.opened, 2*(1+4+1+2+1), "active and total ticks of bcs0, ccs0-3, rcs0, vcs0-1, vecs0")
	for _, a := range f.opened {
		assert.Equal(t, uint32(25), a.Type)
		assert.Equal(t, 1, a.CPU, "the cpumask's CPU")
		assert.Equal(t, -1, a.PID)
	}
	clock.advance(time.Hour) // xe's figures are in the GPU's ticks, whatever the wall time
	f.tick()
	s.poll()
	pts := testutil.Collect(t, reader)
	id := semconv.HWID.String("0000:03:00.0")
	eng := semconv.GPUEngineUtilization.Name
	assert.InDelta(t, 0.625, pts.One(t, eng, id, class(semconv.EngineCompute)).Value, 1e-9, "the mean of four compute engines")
	assert.InDelta(t, 0.2, pts.One(t, eng, id, class(semconv.EngineVideo)).Value, 1e-9, "the media GT's two video engines")
	assert.InDelta(t, 0.0, pts.One(t, eng, id, class(semconv.EngineRender)).Value, 1e-9)
	assert.Contains(t, s.Status().Backends[0].Detail, "engines from the xe PMU xe_0000_03_00.0 (9 engines)")
}

// Without the privilege the PMU needs, the engines come from fdinfo, and
// Status says why.
func TestIntelPMURefused(t *testing.T) {
	s, _ := newSource(t, WithBackends(BackendIntelSysfs), withSysfsFS(intelsysfstest.Load(t, "i915-one-gpu")), WithProcRoot(intelProcRoot(t)), withPerfOpener(refuseAll()))
	d := s.Status().Backends[0].Detail
	assert.Contains(t, d, "engines from the DRM clients' fdinfo (the PMU i915_0000_03_00.0: perf_event_open(type 24 config 0x1000")
	assert.Contains(t, d, "EACCES: not permitted: counting on a CPU for every task needs CAP_PERFMON")

	// A GPU whose driver registers no PMU (an SR-IOV virtual function).
	fsys := intelsysfstest.Load(t, "xe-one-gpu")
	for k := range fsys {
		if strings.HasPrefix(k, "bus/event_source") {
			delete(fsys, k)
		}
	}
	s, _ = newSource(t, WithBackends(BackendIntelSysfs), withSysfsFS(fsys), WithProcRoot(intelProcRoot(t)), withPerfOpener(&fakeOpener{}))
	assert.Contains(t, s.Status().Backends[0].Detail, "(no PMU xe_0000_03_00.0 in (injected sysfs)/bus/event_source/devices)")
}

// softwareAsI915 is the i915 fixture whose PMU is this machine's software
// PMU: rcs0-busy is config 0, cpu-clock, nanoseconds CPU 0 ran.
func softwareAsI915(t *testing.T) fstest.MapFS {
	typ, err := os.ReadFile("/sys/bus/event_source/devices/software/type")
	if err != nil {
		testutil.SkipOrFail(t, "the software PMU's type: %v", err)
	}
	fsys := intelsysfstest.Load(t, "i915-one-gpu")
	for k := range fsys {
		if strings.HasPrefix(k, "bus/event_source/devices/i915_0000_03_00.0/events/") && !strings.Contains(k, "/rcs0-busy") {
			delete(fsys, k)
		}
	}
	fsys["bus/event_source/devices/i915_0000_03_00.0/type"] = &fstest.MapFile{Data: typ}
	return fsys
}

// TestIntelPMUKernel: the real perf_event_open, on the software PMU
// standing in for i915's: counting cpu-clock on CPU 0 for every task, its
// count advances with the wall clock, so the "engine" is busy about all
// the time.
func TestIntelPMUKernel(t *testing.T) {
	testutil.Native(t, "the kernel's perf_event_open, which QEMU's user mode lacks")
	if has, err := perfevent.HasPerfmon(); err != nil || !has {
		testutil.SkipOrFail(t, "counting for every task on a CPU needs CAP_PERFMON (or root): %v", err)
	}
	s, reader := newSource(t, WithBackends(BackendIntelSysfs), withSysfsFS(softwareAsI915(t)), WithProcRoot(intelProcRoot(t)))
	require.Contains(t, s.Status().Backends[0].Detail, "engines from the i915 PMU i915_0000_03_00.0 (1 engines)")
	time.Sleep(50 * time.Millisecond) // a period to measure; the figure does not depend on its length
	s.poll()
	v := testutil.Collect(t, reader).One(t, semconv.GPUEngineUtilization.Name, class(semconv.EngineRender), source(semconv.MeasurementSourcePMU)).Value
	assert.InDelta(t, 1.0, v, 0.2, "cpu-clock runs with the wall clock")
}

// TestIntelPMUKernelWithoutPerfmon: the same open, from a thread whose
// effective capabilities lack CAP_PERFMON and CAP_SYS_ADMIN: the kernel
// refuses it (EACCES) unless kernel.perf_event_paranoid allows every
// user, and the engines fall back to fdinfo with the reason.
func TestIntelPMUKernelWithoutPerfmon(t *testing.T) {
	testutil.Native(t, "the kernel's perf_event_open, which QEMU's user mode lacks")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "dropping capabilities and raising them again needs them permitted: run as root")
	}
	paranoid, err := perfevent.Paranoid(nil)
	require.NoError(t, err)
	fsys := softwareAsI915(t)
	procs := intelProcRoot(t)

	runtime.LockOSThread() // capabilities are per thread; New opens the PMU on this goroutine
	defer runtime.UnlockOSThread()
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var saved, dropped [2]unix.CapUserData
	require.NoError(t, unix.Capget(&hdr, &saved[0]))
	dropped = saved
	for _, c := range []uint{unix.CAP_PERFMON, unix.CAP_SYS_ADMIN} {
		dropped[c/32].Effective &^= 1 << (c % 32)
	}
	require.NoError(t, unix.Capset(&hdr, &dropped[0]))
	has, err := perfevent.HasPerfmon()
	require.NoError(t, err)
	require.False(t, has)
	s, err := New(WithBackends(BackendIntelSysfs), withSysfsFS(fsys), WithProcRoot(procs), WithInterval(time.Hour))
	require.NoError(t, unix.Capset(&hdr, &saved[0]))
	require.NoError(t, err)
	defer s.Close()
	d := s.Status().Backends[0].Detail
	if paranoid <= 0 {
		assert.Contains(t, d, "engines from the i915 PMU", "kernel.perf_event_paranoid %d lets every user count", paranoid)
		return
	}
	assert.Contains(t, d, "engines from the DRM clients' fdinfo (the PMU i915_0000_03_00.0: perf_event_open(")
	assert.Contains(t, d, "EACCES: not permitted: counting on a CPU for every task needs CAP_PERFMON")
	assert.Contains(t, d, fmt.Sprintf("(it is %d)", paranoid))
}
