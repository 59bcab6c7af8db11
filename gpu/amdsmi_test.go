package gpu

// Tests of the AMD SMI backend. The values come from a fake libamd_smi.so
// built from C by the test (internal/amdsmi/testdata/fakeamdsmi.c, in each
// struct layout the binding knows; package amdsmi's tests check those
// layouts against the binding), loaded through purego into this process
// next to the fake ROCm SMI that it takes precedence over.

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/amdsmi"
	"github.com/xpuscope/xpuscope/internal/amdsmi/amdsmitest"
	"github.com/xpuscope/xpuscope/internal/rocmsmi/rocmsmitest"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

// amdsmiFixture is the ROCm fixture (the same two GPUs) with a unique_id
// for the MI300X's card, which AMD SMI's backend takes its hw.id from.
func amdsmiFixture(t *testing.T) fstest.MapFS {
	fsys := rocmFixture(t)
	fsys["class/drm/card0/device/unique_id"] = &fstest.MapFile{Data: []byte("5a3c9e01f00dbabe\n")}
	return fsys
}

// both is what every test of the backend passes: the fake AMD SMI, the
// fake ROCm SMI behind it, and the fixture.
func amdsmiOpts(t *testing.T, amdsmiLib string, backends ...Backend) []Option {
	return []Option{WithBackends(backends...), WithAMDSMILibraryPath(amdsmiLib), WithROCmSMILibraryPath(rocmsmitest.Build(t)),
		withSysfsFS(amdsmiFixture(t)), WithProcRoot(amdProcRoot(t, map[uint32]string{900: "/usr/bin/torchrun", 901: "/usr/local/bin/ollama"}, "6.8.0-fake"))}
}

const mi300xName, w7900Name = "AMD Instinct MI300X (fake)", "AMD Radeon PRO W7900 (fake)"

func TestAMDSMIFakeLibrary(t *testing.T) {
	for _, tc := range []struct {
		layout  string
		defines []string
		driver  string  // 23.2 has no driver info: the kernel release of the proc root
		power   float64 // the MI300X's hw.power: 23.2 has only the average
	}{
		{"26.1", nil, "6.7.0-fake", 512},
		{"24.6", []string{"-DLAYOUT_24_6"}, "6.7.0-fake", 512},
		{"23.2", []string{"-DLAYOUT_23_2"}, "6.8.0-fake", 498},
	} {
		t.Run(tc.layout, func(t *testing.T) {
			lib := amdsmitest.Build(t, tc.defines...)
			var initialized func() int32
			fakeHook(t, lib, "xpuscope_fake_amdsmi_initialized", &initialized)
			s, reader := newSource(t, amdsmiOpts(t, lib, BackendAMDSMI, BackendROCmSMI, BackendAMDSysfs)...)
			require.Equal(t, int32(1), initialized())
			require.Len(t, s.backends, 1, "AMD SMI found the GPUs: neither ROCm SMI nor sysfs")

			assert.Equal(t, []Device{
				{Index: 0, UUID: mi300xID, Name: mi300xName, Vendor: "AMD", PCIAddress: "0000:0c:00.0", SMs: 304},
				{Index: 1, UUID: w7900ID, Name: w7900Name, Vendor: "AMD", PCIAddress: "0000:83:00.0", SMs: 96},
			}, s.Devices())

			pts := testutil.Collect(t, reader)
			a, b := semconv.HWID.String(mi300xID), semconv.HWID.String(w7900ID)
			assert.Equal(t, amdAttrs(mi300xID, mi300xName, tc.driver, 0, "0000:0c:00.0"), pts.One(t, semconv.HWPower.Name, a).Attrs)
			assert.Equal(t, amdAttrs(w7900ID, w7900Name, tc.driver, 1, "0000:83:00.0"), pts.One(t, semconv.HWPower.Name, b).Attrs)

			// Activity, %: the W7900 reports no UMC activity (UINT16_MAX).
			general := semconv.HWGPUTask.String(semconv.GPUTaskGeneral)
			assert.InDelta(t, 0.87, pts.One(t, semconv.HWGPUUtilization.Name, a, general).Value, 1e-12)
			assert.InDelta(t, 0.12, pts.One(t, semconv.HWGPUUtilization.Name, b, general).Value, 1e-12)
			assert.InDelta(t, 0.45, pts.One(t, semconv.GPUMemoryControllerUtilization.Name, a).Value, 1e-12)
			assert.Empty(t, pts.Find(semconv.GPUMemoryControllerUtilization.Name, b))

			assert.Equal(t, float64(60<<30), pts.One(t, semconv.HWGPUMemoryUsage.Name, a).Value)
			assert.Equal(t, float64(192<<30), pts.One(t, semconv.HWGPUMemoryLimit.Name, a).Value)
			assert.Equal(t, float64(132<<30), pts.One(t, semconv.GPUMemoryFree.Name, a).Value)
			assert.Equal(t, float64(2<<30), pts.One(t, semconv.HWGPUMemoryUsage.Name, b).Value)

			// °C as AMD SMI gives them; the W7900's VRAM sensor is unsupported.
			temp := semconv.HWTemperature.Name
			assert.Equal(t, 51.0, pts.One(t, temp, a, sensor(semconv.SensorEdge)).Value)
			assert.Equal(t, 68.0, pts.One(t, temp, a, sensor(semconv.SensorJunction)).Value)
			assert.Equal(t, 57.0, pts.One(t, temp, a, sensor(semconv.SensorMemory)).Value)
			assert.Equal(t, -5.0, pts.One(t, temp, b, sensor(semconv.SensorEdge)).Value)
			assert.Equal(t, 1.0, pts.One(t, temp, b, sensor(semconv.SensorJunction)).Value)
			assert.Len(t, pts.Find(temp, b), 2)

			// W as AMD SMI gives them; the W7900 has no current socket
			// power (UINT32_MAX): hw.power is its average. Power cap µW → W.
			assert.Equal(t, tc.power, pts.One(t, semconv.HWPower.Name, a).Value)
			assert.Equal(t, 498.0, pts.One(t, semconv.GPUPowerAverage.Name, a).Value)
			assert.Equal(t, 45.0, pts.One(t, semconv.HWPower.Name, b).Value)
			assert.Equal(t, 45.0, pts.One(t, semconv.GPUPowerAverage.Name, b).Value)
			assert.InDelta(t, 750.0, pts.One(t, semconv.GPUPowerLimit.Name, a).Value, 1e-9)
			assert.InDelta(t, 295.0, pts.One(t, semconv.GPUPowerLimit.Name, b).Value, 1e-9)

			// Energy: counter × resolution (15.25 µJ) → J.
			assert.InDelta(t, 123456789*15.25e-6, pts.One(t, semconv.HWEnergy.Name, a).Value, 1e-9)
			assert.InDelta(t, 987654*15.25e-6, pts.One(t, semconv.HWEnergy.Name, b).Value, 1e-9)

			// Fan: 102 of 255; the MI300X is passive.
			assert.InDelta(t, 0.4, pts.One(t, semconv.GPUFanSpeed.Name, b).Value, 1e-12)
			assert.Empty(t, pts.Find(semconv.GPUFanSpeed.Name, a))

			// Clocks: MHz → Hz; the W7900 has no MCLK (UINT32_MAX).
			clock := semconv.GPUClockFrequency.Name
			sm, mem := semconv.GPUClockDomain.String(semconv.ClockDomainSM), semconv.GPUClockDomain.String(semconv.ClockDomainMemory)
			assert.Equal(t, 2100e6, pts.One(t, clock, a, sm).Value)
			assert.Equal(t, 1300e6, pts.One(t, clock, a, mem).Value)
			assert.Equal(t, 1800e6, pts.One(t, clock, b, sm).Value)
			assert.Empty(t, pts.Find(clock, b, mem))

			// ECC: AMD SMI's total; the W7900 has none. No PCIe estimate.
			errs := semconv.HWErrors.Name
			assert.Equal(t, 5.0, pts.One(t, errs, a, semconv.ErrorType.String(semconv.ErrorCorrected)).Value)
			assert.Equal(t, 1.0, pts.One(t, errs, a, semconv.ErrorType.String(semconv.ErrorUncorrected)).Value)
			assert.Empty(t, pts.Find(errs, b))
			assert.Empty(t, pts.Find(semconv.HWGPUIO.Name))

			// Processes, from KFD, as for ROCm SMI.
			p900 := semconv.ProcessPID.Int(900)
			assert.Equal(t, float64(16<<30), pts.One(t, semconv.ProcessGPUMemoryUsage.Name, a, p900).Value)
			assert.InDelta(t, 24.0/96, pts.One(t, semconv.ProcessGPUUtilization.Name, b, p900).Value, 1e-12)

			assert.Empty(t, pts.Find(semconv.XpuscopeGPUReadErrors.Name))
			missing := pts.Find(semconv.XpuscopeGPUSymbolMissing.Name)
			assert.Empty(t, missing, "driver info is no metric's")

			require.NoError(t, s.Close())
			assert.Equal(t, int32(0), initialized(), "Close shuts AMD SMI down once")
		})
	}
}

func TestAMDSMIReadErrors(t *testing.T) {
	lib := amdsmitest.Build(t)
	var fail func(which int32, st amdsmi.Status)
	fakeHook(t, lib, "xpuscope_fake_amdsmi_fail", &fail)
	s, reader := newSource(t, amdsmiOpts(t, lib, BackendAMDSMI)...)
	a, b := semconv.HWID.String(mi300xID), semconv.HWID.String(w7900ID)
	errs, util := semconv.XpuscopeGPUReadErrors.Name, semconv.HWGPUUtilization.Name
	busy := semconv.ErrorType.String("AMDSMI_STATUS_BUSY")
	eccFailed := []attribute.KeyValue{a, semconv.XpuscopeRead.String("ecc"), semconv.ErrorType.String("AMDSMI_STATUS_NO_PERM")}

	fail(0, amdsmi.StatusBusy)   // amdsmi_get_gpu_activity
	fail(1, amdsmi.StatusNoPerm) // amdsmi_get_gpu_total_ecc_count
	s.poll()
	pts := testutil.Collect(t, reader)
	assert.Empty(t, pts.Find(util))
	assert.Equal(t, 1.0, pts.One(t, errs, a, busy, semconv.XpuscopeRead.String("utilization")).Value)
	assert.Equal(t, 1.0, pts.One(t, errs, b, busy, semconv.XpuscopeRead.String("utilization")).Value)
	assert.Equal(t, 1.0, pts.One(t, errs, a, busy, semconv.XpuscopeRead.String("memory_busy")).Value)
	assert.Empty(t, pts.Find(errs, b, semconv.XpuscopeRead.String("memory_busy")), "retired on the W7900")
	assert.Empty(t, pts.Find(semconv.HWErrors.Name, a))
	assert.Equal(t, 1.0, pts.One(t, errs, eccFailed...).Value)
	assert.Len(t, pts.Find(errs), 4)
	assert.Len(t, pts.Find(semconv.HWGPUMemoryUsage.Name), 2, "the other reads go on")

	// Failures are not retirements: the reads recover.
	fail(0, 0)
	fail(1, 0)
	s.poll()
	pts = testutil.Collect(t, reader)
	assert.Len(t, pts.Find(util), 2)
	assert.Equal(t, 5.0, pts.One(t, semconv.HWErrors.Name, a, semconv.ErrorType.String(semconv.ErrorCorrected)).Value)
}

func TestAMDSMIMissingOptionalFunction(t *testing.T) {
	_, reader := newSource(t, amdsmiOpts(t, amdsmitest.Build(t, "-DOMIT_ENERGY"), BackendAMDSMI)...)
	pts := testutil.Collect(t, reader)
	assert.Empty(t, pts.Find(semconv.HWEnergy.Name))
	missing := pts.One(t, semconv.XpuscopeGPUSymbolMissing.Name)
	assert.Equal(t, map[string]string{
		string(semconv.XpuscopeSymbol):     amdsmi.SymEnergyCount,
		string(semconv.XpuscopeMetricName): semconv.HWEnergy.Name,
	}, missing.Attrs)
	assert.Equal(t, 1.0, missing.Value)
	// Only that metric is lost.
	assert.Len(t, pts.Find(semconv.HWPower.Name), 2)
	assert.Len(t, pts.Find(semconv.GPUClockFrequency.Name), 3)
	assert.Len(t, pts.Find(semconv.HWErrors.Name), 2)
	assert.Empty(t, pts.Find(semconv.XpuscopeGPUReadErrors.Name))
}

// TestAMDSMIFallback covers what makes New go past AMD SMI to ROCm SMI,
// or to sysfs: an amdsmi_init failure, a version of unknown layout, a
// library that is not AMD SMI, none at all.
func TestAMDSMIFallback(t *testing.T) {
	initFails := amdsmitest.Build(t, "-DINIT_STATUS=18")
	unknown := amdsmitest.Build(t, "-DVERSION_24_7")
	for _, tc := range []struct {
		name, lib, why string
	}{
		{"init", initFails, "gpu: AMD SMI " + initFails + ": amdsmi_init: AMDSMI_STATUS_INIT_ERROR (18): fake: an error occurred when initializing internal data structures"},
		{"version", unknown, "gpu: AMD SMI " + unknown + " is version 24.7.1.0, whose struct layouts this binding does not know"},
		{"not AMD SMI", "libc.so.6", "gpu: libc.so.6 is not a usable AMD SMI library: it lacks amdsmi_init"},
		{"missing", "/nonexistent/libamd_smi.so", "gpu: AMD SMI library /nonexistent/libamd_smi.so cannot be loaded: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(amdsmiOpts(t, tc.lib, BackendAMDSMI)...)
			require.ErrorIs(t, err, xpuscope.ErrUnavailable)
			assert.Contains(t, err.Error(), tc.why)

			// ROCm SMI (its fake) reads the same node.
			s, reader := newSource(t, amdsmiOpts(t, tc.lib, BackendAMDSMI, BackendROCmSMI, BackendAMDSysfs)...)
			require.Len(t, s.backends, 1)
			assert.Equal(t, mi300xID, s.Devices()[0].UUID)
			assert.InDelta(t, 0.87, testutil.Collect(t, reader).One(t, semconv.HWGPUUtilization.Name, semconv.HWID.String(mi300xID)).Value, 1e-12)

			// Without ROCm SMI, sysfs does.
			s, reader = newSource(t, amdsmiOpts(t, tc.lib, BackendAMDSMI, BackendAMDSysfs)...)
			require.Len(t, s.Devices(), 2)
			assert.InDelta(t, 0.11, testutil.Collect(t, reader).One(t, semconv.HWGPUUtilization.Name, semconv.HWID.String(mi300xID)).Value, 1e-12, "sysfs's 11 %")
		})
	}
}

func TestAMDSMIDefaultLibraries(t *testing.T) {
	c, err := newConfig(nil)
	require.NoError(t, err)
	assert.Equal(t, []Backend{BackendNVML, BackendDCGM, BackendAMDSMI, BackendROCmSMI, BackendAMDSysfs, BackendRDC, BackendLevelZero, BackendIntelSysfs, BackendTPU}, c.backends)
	assert.Empty(t, c.amdsmiPath, "the default list")
	assert.Equal(t, "libamd_smi.so", amdsmi.DefaultLibraries[0])
}
