package gpu

// Tests of the Level Zero backend: Debian's real loader (libze1), which
// finds no driver here, and the fake driver of internal/levelzero, built
// from C against the real headers and loaded by the real loader through
// ZE_ENABLE_ALT_DRIVERS. The loader initialises once per process, so each
// scenario runs in a child process (levelzerotest.Run) and checks what the
// Source reports there. Sysfs is a fixture with the fake GPUs' cards.

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/levelzero/levelzerotest"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

// lzSysfs is a node with three Intel cards on xe: the fake driver's two
// GPUs (0000:3a:00.0 and 0000:3b:00.0) and one it has no driver for
// (0000:9a:00.0), with a hwmon.
func lzSysfs() fstest.MapFS {
	f := fstest.MapFS{}
	for i, addr := range []string{"0000:3a:00.0", "0000:3b:00.0", "0000:9a:00.0"} {
		card := "class/drm/card" + string(rune('0'+i))
		f[card+"/device/uevent"] = &fstest.MapFile{Data: []byte("DRIVER=xe\nPCI_ID=8086:0BD5\nPCI_SLOT_NAME=" + addr + "\n")}
	}
	f["class/drm/card2/device/hwmon/hwmon1/name"] = &fstest.MapFile{Data: []byte("xe\n")}
	f["class/drm/card2/device/hwmon/hwmon1/energy1_input"] = &fstest.MapFile{Data: []byte("5000000\n")}
	return f
}

// TestLevelZeroWithoutDriver: Debian's loader with no driver (no compute
// runtime here, as on most nodes): zeInit fails with 0x78000001, the
// backend is unavailable and says so, and the kernel's files read the
// GPUs instead.
func TestLevelZeroWithoutDriver(t *testing.T) {
	levelzerotest.Run(t, "TestLevelZeroWithoutDriverChild")
}

func TestLevelZeroWithoutDriverChild(t *testing.T) {
	if !levelzerotest.InChild() {
		return
	}
	_, err := New(WithBackends(BackendLevelZero), withSysfsFS(lzSysfs()), WithProcRoot(t.TempDir()))
	require.ErrorIs(t, err, xpuscope.ErrUnavailable)
	assert.Equal(t, "gpu: Level Zero libze_loader.so.1: zeInit with ZES_ENABLE_SYSMAN=1 (set by the agent): ZE_RESULT_ERROR_UNINITIALIZED (0x78000001): "+
		"no Level Zero driver for the GPUs (Intel's compute runtime, libze_intel_gpu.so.1, is not installed, or found no GPU)", err.Error())

	s, _ := newSource(t, WithBackends(BackendLevelZero, BackendIntelSysfs), withSysfsFS(lzSysfs()), WithProcRoot(t.TempDir()))
	st := s.Status()
	require.Len(t, st.Backends, 2)
	assert.Equal(t, BackendLevelZero, st.Backends[0].Backend)
	assert.False(t, st.Backends[0].Active)
	assert.Contains(t, st.Backends[0].Detail, "ZE_RESULT_ERROR_UNINITIALIZED (0x78000001)")
	assert.True(t, st.Backends[1].Active)
	assert.Equal(t, 3, st.Backends[1].Devices, "the kernel's files read all three")
}

// TestLevelZeroNoIntelCard: on a node without an i915 or xe card Level
// Zero is not loaded at all.
func TestLevelZeroNoIntelCard(t *testing.T) {
	_, err := New(WithBackends(BackendLevelZero), withSysfsFS(fstest.MapFS{"class/drm/card0/device/uevent": {Data: []byte("DRIVER=amdgpu\nPCI_SLOT_NAME=0000:03:00.0\n")}}), WithProcRoot(t.TempDir()))
	assert.ErrorIs(t, err, xpuscope.ErrUnavailable)
	assert.Equal(t, "gpu: no Intel GPU: no card of the i915 or xe driver in (injected sysfs)/class/drm", err.Error())
	_, err = New(WithLevelZeroLibraryPath(""))
	assert.ErrorContains(t, err, "gpu: WithLevelZeroLibraryPath: Level Zero library path is empty")
}

// TestLevelZeroFakeDriver: the fake driver's two GPUs through the real
// loader, read by Level Zero; the third card, which no Level Zero driver
// has, by the kernel's files.
func TestLevelZeroFakeDriver(t *testing.T) {
	lib := levelzerotest.Build(t, "libze_fake.so")
	levelzerotest.Run(t, "TestLevelZeroFakeDriverChild", "ZE_ENABLE_ALT_DRIVERS="+lib)
}

func TestLevelZeroFakeDriverChild(t *testing.T) {
	if !levelzerotest.InChild() {
		return
	}
	s, reader := newSource(t, WithBackends(BackendLevelZero, BackendIntelSysfs), withSysfsFS(lzSysfs()), WithProcRoot(t.TempDir()))
	devs := s.Devices()
	require.Len(t, devs, 3)
	assert.Equal(t, Device{Index: 0, UUID: "0000:3a:00.0", Name: "Intel(R) Data Center GPU Max 1550 (fake)", Vendor: "Intel", PCIAddress: "0000:3a:00.0"}, devs[0])
	assert.Equal(t, "0000:3b:00.0", devs[1].UUID)
	assert.Equal(t, Device{Index: 2, UUID: "0000:9a:00.0", Name: "Intel GPU 8086:0BD5", Vendor: "Intel", PCIAddress: "0000:9a:00.0"}, devs[2])

	gpu0, gpu1 := semconv.HWID.String("0000:3a:00.0"), semconv.HWID.String("0000:3b:00.0")
	pts := testutil.Collect(t, reader)
	e := pts.One(t, semconv.HWEnergy.Name, gpu0)
	assert.Equal(t, 423.0, e.Value, "123 J at start, 300 J a read, µJ → J")
	assert.Equal(t, "1.3.29735 (fake)", e.Get(semconv.HWDriverVersion))
	assert.Equal(t, "Intel", e.Get(semconv.HWVendor))
	// The first read of a counter gives no rate.
	for _, m := range []semconv.Metric{semconv.HWPower, semconv.HWGPUUtilization, semconv.GPUEngineUtilization, semconv.GPUMemoryThroughput} {
		assert.Empty(t, pts.Find(m.Name, gpu0), m.Name)
	}
	assert.Equal(t, float64(128<<30), pts.One(t, semconv.HWGPUMemoryLimit.Name, gpu0).Value, "two 64 GiB device-memory modules")
	assert.Equal(t, float64(16<<30), pts.One(t, semconv.HWGPUMemoryUsage.Name, gpu0).Value)
	assert.Empty(t, pts.Find(semconv.HWGPUMemoryUsage.Name, gpu1), "GPU 1's zesMemoryGetState fails")
	assert.Equal(t, 1.0, pts.One(t, semconv.XpuscopeGPUReadErrors.Name, gpu1, semconv.XpuscopeRead.String("memory"),
		semconv.ErrorType.String("ZE_RESULT_ERROR_DEVICE_LOST")).Value)
	assert.Equal(t, 50.0, pts.One(t, semconv.HWTemperature.Name, gpu0, semconv.HWSensorLocation.String(semconv.SensorMemory)).Value)
	temps := pts.Find(semconv.HWTemperature.Name, gpu0)
	require.Len(t, temps, 2)
	for _, p := range temps {
		if p.Get(semconv.HWSensorLocation) == "" {
			assert.Equal(t, 65.5, p.Value, "the device's GPU sensor, not a tile's (70)")
		}
	}
	assert.Equal(t, 1.6e9, pts.One(t, semconv.GPUClockFrequency.Name, gpu0, semconv.GPUClockDomain.String(semconv.ClockDomainSM)).Value)
	assert.Equal(t, 3.2e9, pts.One(t, semconv.GPUClockFrequency.Name, gpu0, semconv.GPUClockDomain.String(semconv.ClockDomainMemory)).Value)
	p := pts.One(t, semconv.ProcessGPUMemoryUsage.Name, gpu0, pid(4242))
	assert.Equal(t, float64(8<<30), p.Value)
	assert.Equal(t, float64(1<<30), pts.One(t, semconv.ProcessGPUMemoryUsage.Name, gpu1, pid(5151)).Value)

	// Two polls more: every figure's rate; GPU 1's memory stays retired
	// (counted once).
	s.poll()
	s.poll()
	pts = testutil.Collect(t, reader)
	lz := source(semconv.MeasurementSourceLevelZero)
	util := semconv.HWGPUUtilization.Name
	assert.InDelta(t, 0.8, pts.One(t, util, gpu0, semconv.HWGPUTask.String(semconv.GPUTaskGeneral), lz).Value, 1e-9, "the device's ALL group")
	assert.InDelta(t, 0.3, pts.One(t, util, gpu0, semconv.HWGPUTask.String(semconv.GPUTaskDecoder), lz).Value, 1e-9, "the mean of two decode engines (0.2, 0.4)")
	assert.InDelta(t, 0.05, pts.One(t, util, gpu0, semconv.HWGPUTask.String(semconv.GPUTaskEncoder), lz).Value, 1e-9)
	eng := semconv.GPUEngineUtilization.Name
	noTile := func(ps testutil.Points) testutil.Points {
		var out testutil.Points
		for _, p := range ps {
			if p.Get(semconv.GPUTile) == "" {
				out = append(out, p)
			}
		}
		return out
	}
	one := func(ps testutil.Points) float64 {
		require.Len(t, ps, 1)
		return ps[0].Value
	}
	assert.InDelta(t, 0.7, one(noTile(pts.Find(eng, gpu0, class(semconv.EngineCompute), lz))), 1e-9, "COMPUTE_ALL")
	assert.InDelta(t, 0.1, one(noTile(pts.Find(eng, gpu0, class(semconv.EngineRender)))), 1e-9, "RENDER_SINGLE")
	assert.InDelta(t, 0.25, one(noTile(pts.Find(eng, gpu0, class(semconv.EngineCopy)))), 1e-9)
	assert.InDelta(t, 0.9, pts.One(t, eng, gpu0, class(semconv.EngineAll), semconv.GPUTile.Int(0)).Value, 1e-9, "tile 0's ALL group")
	assert.InDelta(t, 0.3, pts.One(t, eng, gpu0, class(semconv.EngineAll), semconv.GPUTile.Int(1)).Value, 1e-9)
	assert.InDelta(t, 0.6, pts.One(t, eng, gpu0, class(semconv.EngineCompute), semconv.GPUTile.Int(0)).Value, 1e-9)
	assert.InDelta(t, 0.2, pts.One(t, eng, gpu0, class(semconv.EngineCompute), semconv.GPUTile.Int(1)).Value, 1e-9)
	assert.Empty(t, noTile(pts.Find(eng, gpu0, class(semconv.EngineAll))), "the device's ALL group is hw.gpu.utilization{general}")
	assert.InDelta(t, 300.0, pts.One(t, semconv.HWPower.Name, gpu0).Value, 1e-9, "ΔµJ / Δµs")
	assert.InDelta(t, 2e9, pts.One(t, semconv.GPUMemoryThroughput.Name, gpu0, semconv.GPUMemoryOperation.String(semconv.MemoryRead)).Value, 1e-3,
		"two modules, 1e9 bytes each per 1e6 µs")
	assert.InDelta(t, 1e9, pts.One(t, semconv.GPUMemoryThroughput.Name, gpu0, semconv.GPUMemoryOperation.String(semconv.MemoryWrite)).Value, 1e-3)
	assert.Equal(t, 1.0, pts.One(t, semconv.XpuscopeGPUReadErrors.Name, gpu1).Value, "retired, so counted once")
	assert.Len(t, pts.Find(semconv.XpuscopeGPUReadErrors.Name), 1)

	st := s.Status()
	require.Len(t, st.Backends, 2)
	assert.True(t, st.Backends[0].Active)
	assert.Equal(t, 2, st.Backends[0].Devices)
	assert.Contains(t, st.Backends[0].Detail, "0000:3a:00.0 Intel(R) Data Center GPU Max 1550 (fake): engines from Level Zero (zeInit with ZES_ENABLE_SYSMAN=1 (set by the agent))")
	assert.True(t, st.Backends[1].Active)
	assert.Equal(t, 1, st.Backends[1].Devices)
	assert.Contains(t, st.Backends[1].Detail, "0000:9a:00.0 Intel GPU 8086:0BD5: engines from the DRM clients' fdinfo (Level Zero has no driver for it;")

	// The callback reporting what Level Zero read allocates nothing.
	ctx := context.Background()
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = s.observe(ctx, discard{}) }))

	names := testutil.CheckScope(t, reader, ScopeName)
	assert.Subset(t, names, []string{semconv.HWGPUUtilization.Name, semconv.GPUEngineUtilization.Name, semconv.GPUMemoryThroughput.Name,
		semconv.HWPower.Name, semconv.HWEnergy.Name, semconv.HWTemperature.Name, semconv.ProcessGPUMemoryUsage.Name})
}
