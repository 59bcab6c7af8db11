package gpu

// Tests of the ROCm SMI backend. The values come from a fake
// librocm_smi64.so built from C by the test
// (internal/rocmsmi/testdata/fakerocmsmi.c; package rocmsmi's tests check
// its struct layouts against the binding); the real Debian library
// (librocm-smi64-1, ROCm SMI 5.2) shows how the backend fails on this
// GPU-less machine. Both are loaded through purego into this process:
// unlike NVML, any number of ROCm SMI libraries can be loaded side by side.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/ebitengine/purego"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/amdsysfs/amdsysfstest"
	"github.com/xpuscope/xpuscope/internal/rocmsmi"
	"github.com/xpuscope/xpuscope/internal/rocmsmi/rocmsmitest"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

// rocmFixture is testdata/rocm-fake.txtar: the sysfs of the fake's GPUs.
func rocmFixture(t *testing.T) fstest.MapFS {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "rocm-fake.txtar"))
	require.NoError(t, err)
	return amdsysfstest.Parse(b)
}

// fakeHook binds a test hook the fake library exports (not part of ROCm
// SMI), through a handle of its own.
func fakeHook(t *testing.T, lib, name string, fptr any) {
	t.Helper()
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = purego.Dlclose(h) })
	addr, err := purego.Dlsym(h, name)
	require.NoError(t, err)
	purego.RegisterFunc(fptr, addr)
}

const (
	mi300xID = "0x5a3c9e01f00dbabe"
	w7900ID  = "0000:83:00.0" // the fake has no unique id for it
	// interval is the poll interval of the PCIe test; a poll's PCIe
	// estimate is the one-second rate times it.
	pcieInterval = 3600
)

func TestROCmSMIFakeLibrary(t *testing.T) {
	lib := rocmsmitest.Build(t)
	var initialized func() int32
	fakeHook(t, lib, "xpuscope_fake_rsmi_initialized", &initialized)
	procs := amdProcRoot(t, map[uint32]string{900: "/usr/bin/torchrun", 901: "/usr/local/bin/ollama"}, "unused")
	// newSource polls hourly: the PCIe estimate holds for 3600 s.
	s, reader := newSource(t, WithBackends(BackendROCmSMI, BackendAMDSysfs), WithROCmSMILibraryPath(lib),
		withSysfsFS(rocmFixture(t)), WithProcRoot(procs), WithAMDPCIeThroughput(true))
	require.Equal(t, int32(1), initialized())
	require.Len(t, s.backends, 1, "ROCm SMI found the GPUs: no sysfs fallback")

	assert.Equal(t, []Device{
		{Index: 0, UUID: mi300xID, Name: "AMD Instinct MI300X (fake)", Vendor: "AMD", PCIAddress: "0000:0c:00.0", SMs: 304},
		{Index: 1, UUID: w7900ID, Name: "AMD Radeon PRO W7900 (fake)", Vendor: "AMD", PCIAddress: "0000:83:00.0", SMs: 96},
	}, s.Devices())

	pts := testutil.Collect(t, reader)
	a, b := semconv.HWID.String(mi300xID), semconv.HWID.String(w7900ID)
	assert.Equal(t, amdAttrs(mi300xID, "AMD Instinct MI300X (fake)", "6.7.0-fake", 0, "0000:0c:00.0"), pts.One(t, semconv.HWPower.Name, a).Attrs)
	assert.Equal(t, amdAttrs(w7900ID, "AMD Radeon PRO W7900 (fake)", "6.7.0-fake", 1, "0000:83:00.0"), pts.One(t, semconv.HWPower.Name, b).Attrs)

	general := semconv.HWGPUTask.String(semconv.GPUTaskGeneral)
	assert.InDelta(t, 0.87, pts.One(t, semconv.HWGPUUtilization.Name, a, general).Value, 1e-12, "ROCm SMI's, not sysfs's 11 %")
	assert.InDelta(t, 0.12, pts.One(t, semconv.HWGPUUtilization.Name, b, general).Value, 1e-12)
	assert.InDelta(t, 0.45, pts.One(t, semconv.GPUMemoryControllerUtilization.Name, a).Value, 1e-12)
	assert.InDelta(t, 0.03, pts.One(t, semconv.GPUMemoryControllerUtilization.Name, b).Value, 1e-12)
	assert.Equal(t, float64(60<<30), pts.One(t, semconv.HWGPUMemoryUsage.Name, a).Value)
	assert.Equal(t, float64(192<<30), pts.One(t, semconv.HWGPUMemoryLimit.Name, a).Value)
	assert.Equal(t, float64(132<<30), pts.One(t, semconv.GPUMemoryFree.Name, a).Value)
	assert.InDelta(t, 60.0/192, pts.One(t, semconv.HWGPUMemoryUtilization.Name, a).Value, 1e-12)
	assert.Equal(t, float64(2<<30), pts.One(t, semconv.HWGPUMemoryUsage.Name, b).Value)

	// Millidegrees → °C; the W7900's memory sensor is unsupported.
	temp := semconv.HWTemperature.Name
	assert.Equal(t, 51.5, pts.One(t, temp, a, sensor(semconv.SensorEdge)).Value)
	assert.Equal(t, 68.25, pts.One(t, temp, a, sensor(semconv.SensorJunction)).Value)
	assert.Equal(t, 57.0, pts.One(t, temp, a, sensor(semconv.SensorMemory)).Value)
	assert.Equal(t, -5.0, pts.One(t, temp, b, sensor(semconv.SensorEdge)).Value)
	assert.Equal(t, 1.5, pts.One(t, temp, b, sensor(semconv.SensorJunction)).Value)
	assert.Len(t, pts.Find(temp, b), 2)

	// µW → W. The W7900 has no socket power: hw.power is its average.
	assert.InDelta(t, 512.345678, pts.One(t, semconv.HWPower.Name, a).Value, 1e-9)
	assert.InDelta(t, 498.0, pts.One(t, semconv.GPUPowerAverage.Name, a).Value, 1e-9)
	assert.InDelta(t, 45.5, pts.One(t, semconv.HWPower.Name, b).Value, 1e-9)
	assert.InDelta(t, 45.5, pts.One(t, semconv.GPUPowerAverage.Name, b).Value, 1e-9)
	assert.InDelta(t, 750.0, pts.One(t, semconv.GPUPowerLimit.Name, a).Value, 1e-9)
	assert.InDelta(t, 295.0, pts.One(t, semconv.GPUPowerLimit.Name, b).Value, 1e-9)

	// Energy: counter × resolution (15.25 µJ) → J.
	assert.InDelta(t, 123456789*15.25e-6, pts.One(t, semconv.HWEnergy.Name, a).Value, 1e-9)
	assert.InDelta(t, 987654*15.25e-6, pts.One(t, semconv.HWEnergy.Name, b).Value, 1e-9)

	// Fan: 102 of 255; the MI300X is passive.
	assert.InDelta(t, 0.4, pts.One(t, semconv.GPUFanSpeed.Name, b).Value, 1e-12)
	assert.Empty(t, pts.Find(semconv.GPUFanSpeed.Name, a))

	// Clocks: the current level, Hz.
	clock := semconv.GPUClockFrequency.Name
	sm, mem := semconv.GPUClockDomain.String(semconv.ClockDomainSM), semconv.GPUClockDomain.String(semconv.ClockDomainMemory)
	assert.Equal(t, 2100e6, pts.One(t, clock, a, sm).Value)
	assert.Equal(t, 1300e6, pts.One(t, clock, a, mem).Value)
	assert.Equal(t, 1800e6, pts.One(t, clock, b, sm).Value)
	assert.Empty(t, pts.Find(clock, b, mem))

	// PCIe: packets in one second × 256 B × the 3600 s interval.
	io := semconv.HWGPUIO.Name
	tx, rx := semconv.NetworkIODir.String(semconv.DirectionTransmit), semconv.NetworkIODir.String(semconv.DirectionReceive)
	assert.Equal(t, 1000.0*256*pcieInterval, pts.One(t, io, a, tx).Value)
	assert.Equal(t, 3000.0*256*pcieInterval, pts.One(t, io, a, rx).Value)
	assert.Empty(t, pts.Find(io, b))

	// ECC: UMC 3/1 + GFX 2/0; the W7900 supports no block.
	errs := semconv.HWErrors.Name
	assert.Equal(t, 5.0, pts.One(t, errs, a, semconv.ErrorType.String(semconv.ErrorCorrected)).Value)
	assert.Equal(t, 1.0, pts.One(t, errs, a, semconv.ErrorType.String(semconv.ErrorUncorrected)).Value)
	assert.Empty(t, pts.Find(errs, b))

	// Processes, from KFD: 900 on both GPUs, 901 on the MI300X only.
	pmem, putil := semconv.ProcessGPUMemoryUsage.Name, semconv.ProcessGPUUtilization.Name
	p900, p901 := semconv.ProcessPID.Int(900), semconv.ProcessPID.Int(901)
	assert.Equal(t, float64(16<<30), pts.One(t, pmem, a, p900).Value)
	assert.Equal(t, "torchrun", pts.One(t, pmem, a, p900).Get(semconv.ProcessExecutableName))
	assert.InDelta(t, 152.0/304, pts.One(t, putil, a, p900).Value, 1e-12)
	assert.Equal(t, float64(4<<30), pts.One(t, pmem, b, p900).Value)
	assert.InDelta(t, 24.0/96, pts.One(t, putil, b, p900).Value, 1e-12)
	assert.Equal(t, float64(2<<30), pts.One(t, pmem, a, p901).Value)
	assert.Empty(t, pts.Find(putil, p901), "no cu_occupancy")
	assert.Empty(t, pts.Find(pmem, b, p901), "901 holds nothing on the W7900")

	assert.Empty(t, pts.Find(semconv.XpuscopeGPUReadErrors.Name))
	assert.Empty(t, pts.Find(semconv.XpuscopeGPUSymbolMissing.Name))

	// The PCIe estimate accumulates; the other counters are the library's.
	s.poll()
	pts = testutil.Collect(t, reader)
	assert.Equal(t, 2*1000.0*256*pcieInterval, pts.One(t, io, a, tx).Value)
	assert.InDelta(t, 123456789*15.25e-6, pts.One(t, semconv.HWEnergy.Name, a).Value, 1e-9)

	require.NoError(t, s.Close())
	assert.Equal(t, int32(0), initialized(), "Close shuts ROCm SMI down once")
}

func TestROCmSMIReadErrors(t *testing.T) {
	lib := rocmsmitest.Build(t)
	var fail func(which int32, st rocmsmi.Status)
	fakeHook(t, lib, "xpuscope_fake_rsmi_fail", &fail)
	s, reader := newSource(t, WithBackends(BackendROCmSMI), WithROCmSMILibraryPath(lib),
		withSysfsFS(rocmFixture(t)), WithProcRoot(t.TempDir()))
	a, b := semconv.HWID.String(mi300xID), semconv.HWID.String(w7900ID)
	errs, util := semconv.XpuscopeGPUReadErrors.Name, semconv.HWGPUUtilization.Name
	busy := []attribute.KeyValue{semconv.XpuscopeRead.String("utilization"), semconv.ErrorType.String("RSMI_STATUS_BUSY")}
	eccFailed := []attribute.KeyValue{a, semconv.XpuscopeRead.String("ecc"), semconv.ErrorType.String("RSMI_STATUS_FILE_ERROR")}

	fail(0, rocmsmi.StatusBusy)      // rsmi_dev_busy_percent_get
	fail(1, rocmsmi.StatusFileError) // the GFX block's ECC count
	s.poll()
	pts := testutil.Collect(t, reader)
	assert.Empty(t, pts.Find(util))
	assert.Equal(t, 1.0, pts.One(t, errs, append(busy, a)...).Value)
	assert.Equal(t, 1.0, pts.One(t, errs, append(busy, b)...).Value)
	assert.Empty(t, pts.Find(semconv.HWErrors.Name, a), "no partial ECC sum")
	assert.Equal(t, 1.0, pts.One(t, errs, eccFailed...).Value)
	assert.Len(t, pts.Find(errs), 3)
	assert.Len(t, pts.Find(semconv.HWGPUMemoryUsage.Name), 2, "the other reads go on")

	// Failures are not retirements: the reads recover.
	fail(0, 0)
	fail(1, 0)
	s.poll()
	pts = testutil.Collect(t, reader)
	assert.Len(t, pts.Find(util), 2)
	assert.Equal(t, 5.0, pts.One(t, semconv.HWErrors.Name, a, semconv.ErrorType.String(semconv.ErrorCorrected)).Value)
	assert.Equal(t, 1.0, pts.One(t, errs, eccFailed...).Value)
}

func TestROCmSMIPCIeIsOptIn(t *testing.T) {
	_, reader := newSource(t, WithBackends(BackendROCmSMI), WithROCmSMILibraryPath(rocmsmitest.Build(t)),
		withSysfsFS(rocmFixture(t)), WithProcRoot(t.TempDir()))
	assert.Empty(t, testutil.Collect(t, reader).Find(semconv.HWGPUIO.Name))
}

func TestROCmSMIMissingOptionalFunction(t *testing.T) {
	_, reader := newSource(t, WithBackends(BackendROCmSMI), WithROCmSMILibraryPath(rocmsmitest.Build(t, "-DOMIT_ENERGY")),
		withSysfsFS(rocmFixture(t)), WithProcRoot(t.TempDir()))
	pts := testutil.Collect(t, reader)
	assert.Empty(t, pts.Find(semconv.HWEnergy.Name))
	missing := pts.One(t, semconv.XpuscopeGPUSymbolMissing.Name)
	assert.Equal(t, map[string]string{
		string(semconv.XpuscopeSymbol):     rocmsmi.SymEnergyCount,
		string(semconv.XpuscopeMetricName): semconv.HWEnergy.Name,
	}, missing.Attrs)
	assert.Equal(t, 1.0, missing.Value)
	// Only that metric is lost.
	assert.Len(t, pts.Find(semconv.HWPower.Name), 2)
	assert.Len(t, pts.Find(semconv.GPUClockFrequency.Name), 3)
	assert.Len(t, pts.Find(semconv.HWErrors.Name), 2)
	assert.Empty(t, pts.Find(semconv.XpuscopeGPUReadErrors.Name))
}

func TestROCmSMIInitFailure(t *testing.T) {
	lib := rocmsmitest.Build(t, "-DINIT_STATUS=8")
	_, err := New(WithBackends(BackendROCmSMI), WithROCmSMILibraryPath(lib), withSysfsFS(rocmFixture(t)))
	require.ErrorIs(t, err, xpuscope.ErrUnavailable)
	assert.Equal(t, "gpu: ROCm SMI "+lib+": rsmi_init: RSMI_STATUS_INIT_ERROR (8): fake: an error occurred during initialization", err.Error())

	// With the sysfs fallback, the same node is read from sysfs.
	s, reader := newSource(t, WithBackends(BackendROCmSMI, BackendAMDSysfs), WithROCmSMILibraryPath(lib),
		withSysfsFS(rocmFixture(t)), WithProcRoot(amdProcRoot(t, nil, "6.8.0")))
	require.Len(t, s.Devices(), 2)
	assert.Equal(t, "0000:0c:00.0", s.Devices()[0].UUID, "sysfs: no unique_id in the fixture")
	assert.InDelta(t, 0.11, testutil.Collect(t, reader).One(t, semconv.HWGPUUtilization.Name, semconv.HWID.String("0000:0c:00.0")).Value, 1e-12)
}

func TestROCmSMINotARocmLibrary(t *testing.T) {
	_, err := New(WithBackends(BackendROCmSMI), WithROCmSMILibraryPath("libc.so.6"), withSysfsFS(rocmFixture(t)))
	require.ErrorIs(t, err, xpuscope.ErrUnavailable)
	assert.Equal(t, "gpu: libc.so.6 is not a usable ROCm SMI library: it lacks rsmi_init", err.Error())
}

const (
	envRealRoot     = "XPUSCOPE_TEST_REAL_ROCM_SYSFS"
	envRealBackends = "XPUSCOPE_TEST_REAL_ROCM_BACKENDS"
)

// realChild is the child side of TestRealROCmSMIWithoutGPU: New with the
// real library, the sysfs root and backends of the environment.
func realChild() {
	var backends []Backend
	for _, b := range strings.Split(os.Getenv(envRealBackends), ",") {
		backends = append(backends, Backend(b))
	}
	s, err := New(WithBackends(backends...), WithSysfsRoot(os.Getenv(envRealRoot)), WithProcRoot(os.TempDir()))
	if err != nil {
		fmt.Printf("NEW_ERROR unavailable=%v %v\n", errors.Is(err, xpuscope.ErrUnavailable), err)
		return
	}
	fmt.Printf("NEW_OK devices=%d\n", len(s.Devices()))
	_ = s.Close()
}

// TestRealROCmSMIWithoutGPU runs the real library, Debian's ROCm SMI 5.2,
// in child processes whose output it reads: the library writes to the
// process's stderr itself.
func TestRealROCmSMIWithoutGPU(t *testing.T) {
	testutil.Native(t, "the host's vendor libraries")
	if _, ok := os.LookupEnv(envRealRoot); ok {
		realChild()
		return
	}
	lib, err := rocmsmi.Open(DefaultROCmSMILibrary)
	if err != nil {
		testutil.SkipOrFail(t, "the real ROCm SMI library is not installed (Debian package librocm-smi64-1): %v", err)
	}
	require.NoError(t, lib.Close())
	run := func(root string, backends ...Backend) (stdout, stderr string) {
		exe, err := os.Executable()
		require.NoError(t, err)
		cmd := exec.CommandContext(t.Context(), exe, "-test.run=^TestRealROCmSMIWithoutGPU$", "-test.count=1")
		names := make([]string, len(backends))
		for i, b := range backends {
			names[i] = string(b)
		}
		cmd.Env = append(os.Environ(), envRealRoot+"="+root, envRealBackends+"="+strings.Join(names, ","))
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		require.NoError(t, cmd.Run(), "stdout:\n%s\nstderr:\n%s", &out, &errOut)
		return out.String(), errOut.String()
	}
	noDRM := false
	if _, err := os.Stat("/sys/class/drm"); errors.Is(err, os.ErrNotExist) {
		noDRM = true
	}

	// No amdgpu card in sysfs: ROCm SMI is not even loaded, and nothing
	// is printed.
	empty := t.TempDir()
	stdout, stderr := run(empty, BackendROCmSMI)
	assert.Contains(t, stdout, "NEW_ERROR unavailable=true gpu: no AMD GPU: sysfs at "+empty+": open class/drm: no such file or directory\n")
	assert.Empty(t, stderr)

	// A card (the fixture, on disk): ROCm SMI is loaded, and rsmi_init,
	// which reads the real /sys, fails and complains on stderr.
	root := t.TempDir()
	for name, f := range rocmFixture(t) {
		require.NoError(t, os.MkdirAll(filepath.Join(root, filepath.Dir(name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, name), f.Data, 0o644))
	}
	stdout, stderr = run(root, BackendROCmSMI)
	if noDRM {
		assert.Contains(t, stdout, "NEW_ERROR unavailable=true gpu: ROCm SMI librocm_smi64.so.1: rsmi_init: RSMI_STATUS_INIT_ERROR (8): "+
			"An error occurred during initialization, during monitor discovery or when when initializing internal data structures\n")
		assert.Equal(t, "Failed to open drm root directory /sys/class/drm.: No such file or directory\nException caught: rsmi_init.\n", stderr)
	} else { // a DRM class without an AMD GPU
		assert.Contains(t, stdout, "NEW_ERROR unavailable=true gpu: ROCm SMI librocm_smi64.so.1")
	}

	// With the sysfs fallback, the card is read from sysfs.
	stdout, _ = run(root, BackendROCmSMI, BackendAMDSysfs)
	assert.Contains(t, stdout, "NEW_OK devices=2")
}
