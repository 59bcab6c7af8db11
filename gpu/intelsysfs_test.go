package gpu

// Tests of the Intel sysfs backend and of the DRM clients' fdinfo, over
// the fixture trees of internal/intelsysfs/testdata and procfs trees of
// DRM clients written by drmfdinfotest: this machine has no Intel GPU, so
// sysfs is a file system the test serves (withSysfsFS), which can also
// fail chosen reads the way a driver's show callback does, and time is
// the test's clock (withClock).

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/amdsysfs/amdsysfstest"
	"github.com/xpuscope/xpuscope/internal/drmfdinfo/drmfdinfotest"
	"github.com/xpuscope/xpuscope/internal/intelsysfs/intelsysfstest"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

// testClock is a clock the test moves.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock { return &testClock{t: time.Unix(1_700_000_000, 0)} }

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// intelProcRoot is a procfs with the kernel release and the DRM clients
// of procs.
func intelProcRoot(t *testing.T, procs ...drmfdinfotest.Proc) string {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "sys", "kernel"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "sys", "kernel", "osrelease"), []byte("6.18.0-intel\n"), 0o444))
	drmfdinfotest.Write(t, root, procs...)
	return root
}

func class(c string) attribute.KeyValue  { return semconv.GPUEngineClass.String(c) }
func source(s string) attribute.KeyValue { return semconv.GPUMeasurementSource.String(s) }
func pid(p int) attribute.KeyValue       { return semconv.ProcessPID.Int(p) }

// i915Clients writes the DRM clients of the i915 test: python3 (4242)
// holds one client through two descriptors (a render node and a dup of
// it on the card node), vllm (5151) one client, and 6000 a client of
// another GPU; 7000 holds sockets only.
func i915Clients(t *testing.T, root string, render4242, video4242, render5151 uint64) {
	pdev := "0000:03:00.0"
	drmfdinfotest.Write(t, root,
		drmfdinfotest.Proc{PID: 4242, Exe: "/usr/bin/python3.12", FDs: []drmfdinfotest.FD{
			{N: 3, Target: "socket:[1]"},
			{N: 5, Target: "/dev/dri/renderD128", Info: drmfdinfotest.Header(5) + drmfdinfotest.I915(pdev, 11, render4242, 0, video4242, 0, 0, 1<<30, 8<<20)},
			{N: 6, Target: "/dev/dri/card1", Info: drmfdinfotest.Header(6) + drmfdinfotest.I915(pdev, 11, render4242, 0, video4242, 0, 0, 1<<30, 8<<20)},
		}},
		drmfdinfotest.Proc{PID: 5151, Exe: "/opt/vllm/bin/vllm", FDs: []drmfdinfotest.FD{
			{N: 9, Target: "/dev/dri/renderD128", Info: drmfdinfotest.I915(pdev, 12, render5151, 0, 0, 0, 0, 3<<30, 0)},
		}},
		drmfdinfotest.Proc{PID: 6000, Exe: "/usr/bin/ffmpeg", FDs: []drmfdinfotest.FD{
			{N: 4, Target: "/dev/dri/renderD129", Info: drmfdinfotest.I915("0000:04:00.0", 11, 1, 0, 0, 0, 0, 1<<20, 0)},
		}},
		drmfdinfotest.Proc{PID: 7000, Exe: "/usr/sbin/sshd", FDs: []drmfdinfotest.FD{{N: 3, Target: "socket:[2]"}}},
	)
}

func TestIntelSysfsI915(t *testing.T) {
	clock := newTestClock()
	sysfs := intelsysfstest.Load(t, "i915-one-gpu")
	faulty := &amdsysfstest.Faulty{FS: sysfs}
	procs := intelProcRoot(t)
	i915Clients(t, procs, 10e9, 4e9, 1e9)
	s, reader := newSource(t, WithBackends(BackendIntelSysfs), withSysfsFS(faulty), WithProcRoot(procs), withClock(clock.now), withPerfOpener(refuseAll()))
	id := semconv.HWID.String("0000:03:00.0")

	assert.Equal(t, []Device{{Index: 0, UUID: "0000:03:00.0", Name: "Intel GPU 8086:56A0", Vendor: "Intel", PCIAddress: "0000:03:00.0"}}, s.Devices())
	pts := testutil.Collect(t, reader)
	e := pts.One(t, semconv.HWEnergy.Name, id)
	assert.Equal(t, 1500.0, e.Value, "energy1_input in µJ → J")
	assert.Equal(t, map[string]string{
		string(semconv.HWID): "0000:03:00.0", string(semconv.HWName): "Intel GPU 8086:56A0", string(semconv.HWVendor): "Intel",
		string(semconv.HWType): "gpu", string(semconv.HWDriverVersion): "6.18.0-intel", string(semconv.GPUIndex): "0",
		string(semconv.GPUPCIAddress): "0000:03:00.0",
	}, e.Attrs, "the in-tree driver's version is the kernel release")
	assert.Equal(t, 2.1e9, pts.One(t, semconv.GPUClockFrequency.Name, id, semconv.GPUClockDomain.String(semconv.ClockDomainSM)).Value,
		"cardN/gt_act_freq_mhz, MHz → Hz")
	// The first read of a counter gives no rate: no power, no engine
	// figure; memory needs none.
	for _, m := range []semconv.Metric{semconv.HWPower, semconv.GPUEngineUtilization, semconv.HWGPUUtilization, semconv.ProcessGPUEngineUtilization} {
		assert.Empty(t, pts.Find(m.Name), m.Name)
	}
	// What i915's files do not give: a power limit (power1_max is 0, the
	// limit disabled), temperatures (i915's hwmon has none), memory.
	for _, m := range []semconv.Metric{semconv.GPUPowerLimit, semconv.HWTemperature, semconv.HWGPUMemoryUsage, semconv.HWGPUMemoryLimit} {
		assert.Empty(t, pts.Find(m.Name), m.Name)
	}
	mem := semconv.ProcessGPUMemoryUsage.Name
	require.Len(t, pts.Find(mem), 2, "4242's client counted once; 6000's is another GPU's; 7000 holds none")
	p := pts.One(t, mem, id, pid(4242))
	assert.Equal(t, float64(1<<30), p.Value, "drm-resident-local0, not system0")
	assert.Equal(t, "python3.12", p.Get(semconv.ProcessExecutableName))
	assert.Equal(t, float64(3<<30), pts.One(t, mem, pid(5151)).Value)

	// Ten seconds later: 2000 J more (200 W); 4242's render engine busy
	// 5 s, its video engines 10 s over their 2; 5151's render 2.5 s.
	clock.advance(10 * time.Second)
	sysfs["class/drm/card1/device/hwmon/hwmon3/energy1_input"] = &fstest.MapFile{Data: []byte("3500000000\n")}
	i915Clients(t, procs, 15e9, 14e9, 3.5e9)
	s.poll()
	pts = testutil.Collect(t, reader)
	assert.InDelta(t, 200.0, pts.One(t, semconv.HWPower.Name, id).Value, 1e-9, "ΔJ / Δs")
	assert.Equal(t, 3500.0, pts.One(t, semconv.HWEnergy.Name, id).Value)
	fd := source(semconv.MeasurementSourceFdinfo)
	eng := semconv.GPUEngineUtilization.Name
	assert.InDelta(t, 0.75, pts.One(t, eng, id, class(semconv.EngineRender), fd).Value, 1e-9, "both clients' render engine")
	assert.InDelta(t, 0.5, pts.One(t, eng, id, class(semconv.EngineVideo), fd).Value, 1e-9, "10 s of 2 engines over 10 s")
	assert.InDelta(t, 0.0, pts.One(t, eng, id, class(semconv.EngineCopy)).Value, 1e-9)
	assert.Empty(t, pts.Find(eng, semconv.GPUTile.Int(0)), "sysfs figures are the whole device's")
	assert.InDelta(t, 0.75, pts.One(t, semconv.HWGPUUtilization.Name, id, semconv.HWGPUTask.String(semconv.GPUTaskGeneral), fd).Value, 1e-9,
		"general: the busiest class")
	peng := semconv.ProcessGPUEngineUtilization.Name
	assert.InDelta(t, 0.5, pts.One(t, peng, pid(4242), class(semconv.EngineRender), fd).Value, 1e-9)
	assert.InDelta(t, 0.5, pts.One(t, peng, pid(4242), class(semconv.EngineVideo)).Value, 1e-9)
	assert.InDelta(t, 0.25, pts.One(t, peng, pid(5151), class(semconv.EngineRender)).Value, 1e-9)
	assert.Empty(t, pts.Find(semconv.XpuscopeGPUReadErrors.Name))

	// The energy counter fails with EAGAIN: counted, that poll has no
	// energy; then it reads again, lower (the driver reloaded): the value
	// as read, and no power from it.
	clock.advance(10 * time.Second)
	faulty.Fail("class/drm/card1/device/hwmon/hwmon3/energy1_input", syscall.EAGAIN)
	s.poll()
	pts = testutil.Collect(t, reader)
	assert.Empty(t, pts.Find(semconv.HWEnergy.Name))
	assert.Equal(t, 1.0, pts.One(t, semconv.XpuscopeGPUReadErrors.Name, id, semconv.XpuscopeRead.String("energy"), semconv.ErrorType.String("EAGAIN")).Value)
	faulty.Fail("class/drm/card1/device/hwmon/hwmon3/energy1_input", nil)
	sysfs["class/drm/card1/device/hwmon/hwmon3/energy1_input"] = &fstest.MapFile{Data: []byte("1000000\n")}
	clock.advance(10 * time.Second)
	s.poll()
	pts = testutil.Collect(t, reader)
	assert.Equal(t, 1.0, pts.One(t, semconv.HWEnergy.Name, id).Value)
	assert.Empty(t, pts.Find(semconv.HWPower.Name), "a counter that went backwards gives no power")

	// The processes leave: their series go, and the GPU is idle.
	require.NoError(t, os.RemoveAll(filepath.Join(procs, "4242")))
	require.NoError(t, os.RemoveAll(filepath.Join(procs, "5151")))
	s.poll()
	pts = testutil.Collect(t, reader)
	assert.Empty(t, pts.Find(mem))
	assert.Equal(t, 0.0, pts.One(t, semconv.HWGPUUtilization.Name, id).Value, "no client of the GPU among all processes: idle")

	st := s.Status()
	require.Len(t, st.Backends, 1)
	assert.True(t, st.Backends[0].Active)
	assert.Equal(t, 1, st.Backends[0].Devices)
	assert.Contains(t, st.Backends[0].Detail, "0000:03:00.0 Intel GPU 8086:56A0: engines from the DRM clients' fdinfo (the PMU i915_0000_03_00.0: perf_event_open(")
}

func TestIntelSysfsXe(t *testing.T) {
	clock := newTestClock()
	sysfs := intelsysfstest.Load(t, "xe-one-gpu")
	pdev := "0000:03:00.0"
	procs := intelProcRoot(t)
	write := func(ts, ccs uint64) {
		drmfdinfotest.Write(t, procs, drmfdinfotest.Proc{PID: 300, Exe: "/usr/bin/python3", FDs: []drmfdinfotest.FD{
			{N: 7, Target: "/dev/dri/renderD128", Info: drmfdinfotest.Xe(pdev, 3, ts, 0, 0, 0, 0, ccs, 4, 2<<30, 1<<20)},
		}})
	}
	write(1000, 0)
	s, reader := newSource(t, WithBackends(BackendIntelSysfs), withSysfsFS(sysfs), WithProcRoot(procs), withClock(clock.now), withPerfOpener(refuseAll()))
	id := semconv.HWID.String(pdev)
	pts := testutil.Collect(t, reader)
	temps := pts.Find(semconv.HWTemperature.Name, id)
	require.Len(t, temps, 2)
	for _, p := range temps {
		if p.Get(semconv.HWSensorLocation) == semconv.SensorMemory {
			assert.Equal(t, 54.0, p.Value, "temp3, labelled vram")
		} else {
			assert.Equal(t, "", p.Get(semconv.HWSensorLocation), "the GPU's own sensor carries no location, as NVML's")
			assert.Equal(t, 61.0, p.Value, "temp2, labelled pkg")
		}
	}
	assert.Equal(t, 190.0, pts.One(t, semconv.GPUPowerLimit.Name, id).Value, "the card channel's power1_max, not the package's")
	assert.Equal(t, 7000.0, pts.One(t, semconv.HWEnergy.Name, id).Value, "energy1, labelled card")
	assert.Equal(t, float64(12<<30), pts.One(t, semconv.HWGPUMemoryLimit.Name, id).Value, "tile0/physical_vram_size_bytes")
	assert.Empty(t, pts.Find(semconv.HWGPUMemoryUsage.Name), "no file says what is in use")
	assert.Equal(t, 2.85e9, pts.One(t, semconv.GPUClockFrequency.Name, id).Value, "the faster GT's act_freq")
	assert.Equal(t, float64(2<<30), pts.One(t, semconv.ProcessGPUMemoryUsage.Name, pid(300)).Value, "drm-resident-vram0")

	// 2000 of 4000 GPU cycles on 4 compute engines: 0.125, whatever the
	// wall-clock time (xe's figures are in the GPU's clock domain).
	write(5000, 2000)
	clock.advance(time.Hour)
	s.poll()
	pts = testutil.Collect(t, reader)
	assert.InDelta(t, 0.125, pts.One(t, semconv.GPUEngineUtilization.Name, id, class(semconv.EngineCompute)).Value, 1e-9)
	assert.InDelta(t, 0.125, pts.One(t, semconv.ProcessGPUEngineUtilization.Name, pid(300), class(semconv.EngineCompute)).Value, 1e-9)
	assert.InDelta(t, 0.0, pts.One(t, semconv.GPUEngineUtilization.Name, id, class(semconv.EngineRender)).Value, 1e-9)
}

func TestIntelSysfsEightGPUs(t *testing.T) {
	sysfs := intelsysfstest.Load(t, "eight-gpus")
	s, reader := newSource(t, WithBackends(BackendIntelSysfs), withSysfsFS(sysfs), WithProcRoot(intelProcRoot(t)), withPerfOpener(refuseAll()))
	devs := s.Devices()
	require.Len(t, devs, 8)
	for i, d := range devs {
		assert.Equal(t, i, d.Index, "PCI order")
		assert.Equal(t, d.PCIAddress, d.UUID)
		assert.Equal(t, "Intel GPU 8086:0BD5", d.Name)
	}
	pts := testutil.Collect(t, reader)
	energy := map[string]float64{}
	for _, p := range pts.Find(semconv.HWEnergy.Name) {
		energy[p.Get(semconv.HWID)] = p.Value
	}
	assert.Equal(t, map[string]float64{
		"0000:29:00.0": 1000, "0000:3a:00.0": 2000, "0000:9a:00.0": 3000, "0000:ab:00.0": 4000,
		"0000:1b:00.0": 5000, "0000:4d:00.0": 6000, "0000:8c:00.0": 7000,
	}, energy, "the pkg channel's energy2, the unlabelled energy1 of the older xe (0000:9a:00.0); none without hwmon (0000:cc:00.0)")
	assert.Len(t, pts.Find(semconv.GPUPowerLimit.Name), 7)
	assert.Len(t, pts.Find(semconv.HWGPUMemoryLimit.Name), 8)
	assert.Equal(t, float64(128<<30), pts.One(t, semconv.HWGPUMemoryLimit.Name, semconv.HWID.String("0000:1b:00.0")).Value, "two tiles of 64 GiB")
	assert.Equal(t, 1.6e9, pts.One(t, semconv.GPUClockFrequency.Name, semconv.HWID.String("0000:ab:00.0")).Value, "tile1's N/A aside, tile0's")
	assert.Equal(t, 1.0, pts.One(t, semconv.XpuscopeGPUReadErrors.Name, semconv.HWID.String("0000:ab:00.0"),
		semconv.XpuscopeRead.String("clocks"), semconv.ErrorType.String("invalid_data")).Value)
	assert.Len(t, pts.Find(semconv.XpuscopeGPUReadErrors.Name), 1)
	assert.Equal(t, 0.0, pts.One(t, semconv.HWGPUUtilization.Name, semconv.HWID.String("0000:cc:00.0")).Value, "no DRM client anywhere: idle")
}

func TestIntelSysfsUnavailable(t *testing.T) {
	_, err := New(WithBackends(BackendIntelSysfs), withSysfsFS(amdsysfstest.Parse(nil)), WithProcRoot(t.TempDir()))
	assert.ErrorIs(t, err, xpuscope.ErrUnavailable)
	assert.ErrorContains(t, err, "no Intel GPU: sysfs at (injected sysfs)")

	_, err = New(WithBackends(BackendIntelSysfs), withSysfsFS(fstest.MapFS{"class/drm/card0/device/uevent": {Data: []byte("DRIVER=amdgpu\nPCI_SLOT_NAME=0000:03:00.0\n")}}), WithProcRoot(t.TempDir()))
	assert.ErrorIs(t, err, xpuscope.ErrUnavailable)
	assert.ErrorContains(t, err, "gpu: no Intel GPU: no card of the i915 or xe driver in (injected sysfs)/class/drm")
}

// TestScopeIntelSysfs: the Intel metrics, in the SDK's own data, as the
// registry gives them.
func TestScopeIntelSysfs(t *testing.T) {
	clock := newTestClock()
	procs := intelProcRoot(t)
	i915Clients(t, procs, 1e9, 1e9, 1e9)
	s, reader := newSource(t, WithBackends(BackendIntelSysfs), withSysfsFS(intelsysfstest.Load(t, "i915-one-gpu")), WithProcRoot(procs), withClock(clock.now), withPerfOpener(refuseAll()))
	clock.advance(time.Second)
	i915Clients(t, procs, 2e9, 1e9, 1e9)
	s.poll()
	names := testutil.CheckScope(t, reader, ScopeName)
	assert.Subset(t, names, []string{
		semconv.HWGPUUtilization.Name, semconv.GPUEngineUtilization.Name, semconv.ProcessGPUEngineUtilization.Name,
		semconv.HWEnergy.Name, semconv.HWPower.Name, semconv.GPUClockFrequency.Name, semconv.ProcessGPUMemoryUsage.Name,
	})
}

// FuzzIntelSysfs runs the kernel files' backend, PMU included (counted by
// a fake opener: no GPU PMU here), over any sysfs tree given as a txtar
// archive, seeded with the i915, xe and eight-GPU fixtures: the values it
// reads (hwmon, frequencies, VRAM sizes, the PMUs' events and formats)
// must never panic it, and what it reports stays a number.
func FuzzIntelSysfs(f *testing.F) {
	for _, name := range []string{"i915-one-gpu", "xe-one-gpu", "eight-gpus"} {
		b, err := os.ReadFile(filepath.Join("..", "internal", "intelsysfs", "testdata", name+".txtar"))
		require.NoError(f, err)
		f.Add(b)
	}
	procs := f.TempDir()
	f.Fuzz(func(t *testing.T, archive []byte) {
		clock := newTestClock()
		opener := &fakeOpener{rates: map[uint64]uint64{0: 5e8}}
		s, err := New(WithBackends(BackendIntelSysfs), withSysfsFS(amdsysfstest.Parse(archive)), WithProcRoot(procs),
			withClock(clock.now), withPerfOpener(opener), WithInterval(time.Hour))
		if err != nil {
			require.ErrorIs(t, err, xpuscope.ErrUnavailable)
			return
		}
		defer s.Close()
		for range 2 {
			clock.advance(time.Second)
			opener.tick()
			s.poll()
		}
		for _, sm := range s.front.samples {
			for _, e := range sm.engines {
				if e.v < 0 || e.v > 1 {
					t.Fatalf("engine utilization %v outside [0, 1]", e.v)
				}
			}
		}
	})
}
