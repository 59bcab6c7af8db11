package gpu

// Tests of the amdgpu sysfs backend and of KFD's per-process usage, over
// the fixture trees of internal/amdsysfs/testdata: this machine has no
// AMD GPU, so sysfs is a file system the test serves (withSysfsFS), which
// can also fail chosen reads the way a driver's show callback does.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/amdsysfs"
	"github.com/xpuscope/xpuscope/internal/amdsysfs/amdsysfstest"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

// newSource starts a Source with opts, a manual reader and no polling of
// its own (the test polls), and closes it at the end of the test.
func newSource(t *testing.T, opts ...Option) (*Source, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	s, err := New(append([]Option{WithMeterProvider(mp), WithInterval(time.Hour)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s, reader
}

// amdProcRoot is a procfs with the given pid → executable links and the
// kernel release.
func amdProcRoot(t *testing.T, exes map[uint32]string, release string) string {
	root := procRoot(t, exes)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "sys", "kernel"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "sys", "kernel", "osrelease"), []byte(release+"\n"), 0o444))
	return root
}

func sensor(s string) attribute.KeyValue { return semconv.HWSensorLocation.String(s) }

// amdAttrs is the attribute set of an AMD GPU's plain series.
func amdAttrs(id, name, driver string, index int, pci string) map[string]string {
	return map[string]string{
		string(semconv.HWID):            id,
		string(semconv.HWName):          name,
		string(semconv.HWVendor):        semconv.VendorAMD,
		string(semconv.HWType):          semconv.HWTypeGPU,
		string(semconv.HWDriverVersion): driver,
		string(semconv.GPUIndex):        strconv.Itoa(index),
		string(semconv.GPUPCIAddress):   pci,
	}
}

func TestAMDSysfsOneGPU(t *testing.T) {
	procs := amdProcRoot(t, map[uint32]string{4242: "/usr/bin/python3.12", 5151: "/opt/vllm/bin/vllm"}, "6.8.0-49-generic")
	s, reader := newSource(t, WithBackends(BackendAMDSysfs), withSysfsFS(amdsysfstest.Load(t, "one-gpu")), WithProcRoot(procs))
	pts := testutil.Collect(t, reader)
	id := semconv.HWID.String("0xa1b2c3d4e5f60718")

	assert.Equal(t, amdAttrs("0xa1b2c3d4e5f60718", "AMD Instinct MI210", "6.8.0-49-generic", 0, "0000:03:00.0"),
		pts.One(t, semconv.HWGPUMemoryUsage.Name, id).Attrs, "the in-tree driver's version is the kernel release")
	assert.Equal(t, []Device{{Index: 0, UUID: "0xa1b2c3d4e5f60718", Name: "AMD Instinct MI210", Vendor: "AMD", PCIAddress: "0000:03:00.0",
		SMs: 104, ThreadsPerSM: 2048}}, s.Devices())
	assert.Empty(t, s.DriverVersion(), "no NVIDIA driver")

	assert.InDelta(t, 0.63, pts.One(t, semconv.HWGPUUtilization.Name, id, semconv.HWGPUTask.String(semconv.GPUTaskGeneral)).Value, 1e-12)
	assert.InDelta(t, 0.21, pts.One(t, semconv.GPUMemoryControllerUtilization.Name, id).Value, 1e-12)
	assert.Equal(t, 12884901888.0, pts.One(t, semconv.HWGPUMemoryUsage.Name, id).Value)
	assert.Equal(t, 68702699520.0, pts.One(t, semconv.HWGPUMemoryLimit.Name, id).Value)
	assert.Equal(t, 68702699520.0-12884901888, pts.One(t, semconv.GPUMemoryFree.Name, id).Value)
	assert.InDelta(t, 12884901888.0/68702699520, pts.One(t, semconv.HWGPUMemoryUtilization.Name, id).Value, 1e-12)

	// Millidegrees → °C, one series per sensor; the edge sensor is below 0.
	assert.Equal(t, -12.0, pts.One(t, semconv.HWTemperature.Name, id, sensor(semconv.SensorEdge)).Value)
	assert.Equal(t, 71.0, pts.One(t, semconv.HWTemperature.Name, id, sensor(semconv.SensorJunction)).Value)
	assert.Equal(t, 48.0, pts.One(t, semconv.HWTemperature.Name, id, sensor(semconv.SensorMemory)).Value)
	assert.Len(t, pts.Find(semconv.HWTemperature.Name, id), 3)

	// µW → W. No power1_input: hw.power is the average.
	assert.InDelta(t, 237.0, pts.One(t, semconv.HWPower.Name, id).Value, 1e-9)
	assert.InDelta(t, 237.0, pts.One(t, semconv.GPUPowerAverage.Name, id).Value, 1e-9)
	assert.InDelta(t, 300.0, pts.One(t, semconv.GPUPowerLimit.Name, id).Value, 1e-9)

	// What a passive card and sysfs do not have.
	for _, m := range []semconv.Metric{semconv.GPUFanSpeed, semconv.HWEnergy, semconv.GPUClockFrequency, semconv.HWGPUIO, semconv.HWErrors, semconv.GPUMemoryReserved, semconv.GPUClockThrottle} {
		assert.Empty(t, pts.Find(m.Name), m.Name)
	}

	// KFD: 4242 with cu_occupancy 52 of 104 CUs; 5151 on a kernel without
	// cu_occupancy; 6000 holds nothing and is left out.
	mem := semconv.ProcessGPUMemoryUsage.Name
	require.Len(t, pts.Find(mem), 2)
	p := pts.One(t, mem, id, semconv.ProcessPID.Int(4242))
	assert.Equal(t, float64(8<<30), p.Value)
	assert.Equal(t, "python3.12", p.Get(semconv.ProcessExecutableName))
	assert.Equal(t, semconv.VendorAMD, p.Get(semconv.HWVendor))
	assert.InDelta(t, 0.5, pts.One(t, semconv.ProcessGPUUtilization.Name, semconv.ProcessPID.Int(4242)).Value, 1e-12)
	assert.Equal(t, float64(1<<30), pts.One(t, mem, semconv.ProcessPID.Int(5151)).Value)
	assert.Equal(t, "vllm", pts.One(t, mem, semconv.ProcessPID.Int(5151)).Get(semconv.ProcessExecutableName))
	assert.Empty(t, pts.Find(semconv.ProcessGPUUtilization.Name, semconv.ProcessPID.Int(5151)))

	assert.Empty(t, pts.Find(semconv.XpuscopeGPUReadErrors.Name))
	assert.Empty(t, pts.Find(semconv.XpuscopeGPUSymbolMissing.Name))
}

func TestAMDSysfsEightGPUs(t *testing.T) {
	s, reader := newSource(t, WithBackends(BackendAMDSysfs), withSysfsFS(amdsysfstest.Load(t, "eight-gpus")),
		WithProcRoot(amdProcRoot(t, nil, "unused")))
	pts := testutil.Collect(t, reader)
	pci := []string{"0000:0c:00.0", "0000:22:00.0", "0000:38:00.0", "0000:5c:00.0", "0000:9f:00.0", "0000:af:00.0", "0000:bf:00.0", "0000:df:00.0"}

	devices := s.Devices()
	require.Len(t, devices, 8)
	for k, d := range devices {
		wantID := "0x7a3c00000000000" + strconv.Itoa(k)
		if k == 6 {
			wantID = pci[k] // no unique_id: the PCI address
		}
		// The KFD topology gives every MI300X its 304 CUs of 2,048
		// work-items (4 SIMDs × 8 waves × 64 lanes).
		assert.Equal(t, Device{Index: k, UUID: wantID, Name: "AMD Instinct MI300X", Vendor: "AMD", PCIAddress: pci[k],
			SMs: 304, ThreadsPerSM: 2048}, d, "GPUs in PCI order")
		id := semconv.HWID.String(wantID)
		assert.Equal(t, amdAttrs(wantID, "AMD Instinct MI300X", "6.8.5", k, pci[k]), pts.One(t, semconv.HWPower.Name, id).Attrs)

		util := pts.Find(semconv.HWGPUUtilization.Name, id)
		if k == 7 { // "n/a"
			assert.Empty(t, util)
			assert.Equal(t, 1.0, pts.One(t, semconv.XpuscopeGPUReadErrors.Name, id,
				semconv.XpuscopeRead.String("utilization"), semconv.ErrorType.String("invalid_data")).Value)
		} else {
			require.Len(t, util, 1)
			assert.InDelta(t, float64(10*k+5)/100, util[0].Value, 1e-12)
		}
		if k == 5 { // no file: not read, not an error
			assert.Empty(t, pts.Find(semconv.GPUMemoryControllerUtilization.Name, id))
		} else {
			assert.InDelta(t, float64(3*k+1)/100, pts.One(t, semconv.GPUMemoryControllerUtilization.Name, id).Value, 1e-12)
		}
		assert.Equal(t, float64(k+1)*(10<<30), pts.One(t, semconv.HWGPUMemoryUsage.Name, id).Value)
		edge := 40.0 + float64(k)
		if k == 3 {
			edge = -2.5
		}
		assert.Equal(t, edge, pts.One(t, semconv.HWTemperature.Name, id, sensor(semconv.SensorEdge)).Value)
		assert.Equal(t, 60.0+float64(k), pts.One(t, semconv.HWTemperature.Name, id, sensor(semconv.SensorJunction)).Value)
		assert.Equal(t, 50.0+0.5*float64(k), pts.One(t, semconv.HWTemperature.Name, id, sensor(semconv.SensorMemory)).Value)
		// power1_input, and no power1_average.
		assert.InDelta(t, 300.125+float64(k), pts.One(t, semconv.HWPower.Name, id).Value, 1e-9)
		assert.Empty(t, pts.Find(semconv.GPUPowerAverage.Name, id))
		assert.InDelta(t, 750.0, pts.One(t, semconv.GPUPowerLimit.Name, id).Value, 1e-9)

		// Process 7000 on every GPU: (k+1) × 8 GiB, 38 × (k mod 4 + 1) of
		// 304 CUs.
		p := pts.One(t, semconv.ProcessGPUMemoryUsage.Name, id, semconv.ProcessPID.Int(7000))
		assert.Equal(t, float64(k+1)*(8<<30), p.Value)
		assert.Equal(t, "", p.Get(semconv.ProcessExecutableName), "no such process in the procfs")
		assert.InDelta(t, 38*float64(k%4+1)/304, pts.One(t, semconv.ProcessGPUUtilization.Name, id, semconv.ProcessPID.Int(7000)).Value, 1e-12)
		if k > 0 {
			assert.Empty(t, pts.Find(semconv.ProcessGPUMemoryUsage.Name, id, semconv.ProcessPID.Int(7100)), "KFD lists 7100 on GPU %d with nothing", k)
		}
	}
	gpu0 := semconv.HWID.String("0x7a3c000000000000")
	assert.Equal(t, float64(2<<30), pts.One(t, semconv.ProcessGPUMemoryUsage.Name, gpu0, semconv.ProcessPID.Int(7100)).Value)
	assert.Equal(t, 1.0, pts.One(t, semconv.ProcessGPUUtilization.Name, gpu0, semconv.ProcessPID.Int(7100)).Value)

	// 7200's vram_ file of GPU 1 reads "-1": counted on GPU 1, no series.
	gpu1 := semconv.HWID.String("0x7a3c000000000001")
	assert.Empty(t, pts.Find(semconv.ProcessGPUMemoryUsage.Name, semconv.ProcessPID.Int(7200)))
	assert.Equal(t, 1.0, pts.One(t, semconv.XpuscopeGPUReadErrors.Name, gpu1,
		semconv.XpuscopeRead.String("processes"), semconv.ErrorType.String("invalid_data")).Value)
	assert.Len(t, pts.Find(semconv.XpuscopeGPUReadErrors.Name), 2)
}

func TestAMDSysfsReadErrors(t *testing.T) {
	fixture := amdsysfstest.Load(t, "one-gpu")
	delete(fixture, "class/drm/card1/device/mem_busy_percent") // a missing file
	faulty := &amdsysfstest.Faulty{FS: fixture}
	junction := "class/drm/card1/device/hwmon/hwmon2/temp2_input"
	faulty.Fail(junction, syscall.EAGAIN)
	// A sensor the driver does not support, and says so when read.
	faulty.Fail("class/drm/card1/device/hwmon/hwmon2/power1_cap", syscall.EOPNOTSUPP)
	s, reader := newSource(t, WithBackends(BackendAMDSysfs), withSysfsFS(faulty), WithProcRoot(amdProcRoot(t, nil, "6.8.0")))
	id := semconv.HWID.String("0xa1b2c3d4e5f60718")
	errs := semconv.XpuscopeGPUReadErrors.Name
	eagain := []attribute.KeyValue{id, semconv.XpuscopeRead.String("temperature"), semconv.ErrorType.String("EAGAIN")}

	pts := testutil.Collect(t, reader)
	assert.Empty(t, pts.Find(semconv.HWTemperature.Name, sensor(semconv.SensorJunction)), "the sensor answered EAGAIN")
	assert.Len(t, pts.Find(semconv.HWTemperature.Name, id), 2, "the other sensors go on")
	assert.Equal(t, 1.0, pts.One(t, errs, eagain...).Value)
	assert.Empty(t, pts.Find(semconv.GPUMemoryControllerUtilization.Name), "a missing file is no metric")
	assert.Empty(t, pts.Find(semconv.GPUPowerLimit.Name), "nor an unsupported sensor")
	assert.Len(t, pts.Find(errs), 1, "and neither is an error")
	assert.False(t, s.backends[0].(*sysfsBackend).devices[0].can(amdPowerLimit), "EOPNOTSUPP retires the read")

	// EAGAIN is transient: counted again, then the read recovers.
	s.poll()
	assert.Equal(t, 2.0, testutil.Collect(t, reader).One(t, errs, eagain...).Value)
	faulty.Fail(junction, nil)
	s.poll()
	pts = testutil.Collect(t, reader)
	assert.Equal(t, 71.0, pts.One(t, semconv.HWTemperature.Name, id, sensor(semconv.SensorJunction)).Value)
	assert.Equal(t, 2.0, pts.One(t, errs, eagain...).Value)

	// A file that disappears retires its read, without an error.
	delete(fixture, "class/drm/card1/device/gpu_busy_percent")
	s.poll()
	s.poll()
	pts = testutil.Collect(t, reader)
	assert.Empty(t, pts.Find(semconv.HWGPUUtilization.Name))
	assert.Len(t, pts.Find(errs), 1)
	assert.False(t, s.backends[0].(*sysfsBackend).devices[0].can(amdUtilization))
}

func TestAMDProcessCap(t *testing.T) {
	_, reader := newSource(t, WithBackends(BackendAMDSysfs), withSysfsFS(amdsysfstest.Load(t, "eight-gpus")),
		WithMaxProcesses(1), WithProcRoot(amdProcRoot(t, nil, "6.8.0")))
	pts := testutil.Collect(t, reader)
	gpu0 := semconv.HWID.String("0x7a3c000000000000")
	mem := semconv.ProcessGPUMemoryUsage.Name
	// 7000 holds 8 GiB on GPU 0, 7100 2 GiB: 7100 folds.
	assert.Equal(t, float64(8<<30), pts.One(t, mem, gpu0, semconv.ProcessPID.Int(7000)).Value)
	assert.Equal(t, float64(2<<30), pts.One(t, mem, gpu0, semconv.ProcessExecutableName.String(semconv.Other)).Value)
	assert.Equal(t, 1.0, pts.One(t, semconv.XpuscopeGPUProcessOverflow.Name, gpu0).Value)
}

func TestAMDWithoutCards(t *testing.T) {
	// No DRM at all, and a DRM with only another driver's card.
	for name, fsys := range map[string]fstest.MapFS{
		"no drm":    {},
		"no amdgpu": {"class/drm/card0/device/uevent": {Data: []byte("DRIVER=ast\nPCI_SLOT_NAME=0000:02:00.0\n")}},
	} {
		t.Run(name, func(t *testing.T) {
			missing := filepath.Join(t.TempDir(), "librocm_smi64.so.1")
			_, err := New(WithBackends(BackendROCmSMI, BackendAMDSysfs), withSysfsFS(fsys), WithROCmSMILibraryPath(missing))
			require.ErrorIs(t, err, xpuscope.ErrUnavailable)
			assert.Regexp(t, `^gpu: no AMD GPU: [^;]*$`, err.Error(), "said once, for both AMD backends")
			assert.NotContains(t, err.Error(), missing, "without an amdgpu card, ROCm SMI is not even loaded")
		})
	}
}

func TestBothVendors(t *testing.T) {
	nvidia := h100(0)
	fs := &fakeSystem{gpus: []*fakeGPU{nvidia}}
	s, reader := newSource(t, WithNVML(fs.lib()), WithBackends(BackendNVML, BackendAMDSysfs),
		withSysfsFS(amdsysfstest.Load(t, "one-gpu")), WithProcRoot(amdProcRoot(t, nil, "6.8.0")))
	pts := testutil.Collect(t, reader)

	devices := s.Devices()
	require.Len(t, devices, 2)
	assert.Equal(t, nvidia.uuid, devices[0].UUID, "NVIDIA first")
	assert.Equal(t, "0xa1b2c3d4e5f60718", devices[1].UUID)
	assert.Equal(t, "535.183.01", s.DriverVersion())
	power := pts.Find(semconv.HWPower.Name)
	require.Len(t, power, 2)
	vendors := map[string]string{}
	for _, p := range power {
		vendors[p.Get(semconv.HWID)] = p.Get(semconv.HWVendor)
	}
	assert.Equal(t, map[string]string{nvidia.uuid: semconv.VendorNVIDIA, "0xa1b2c3d4e5f60718": semconv.VendorAMD}, vendors)
	// NVIDIA's one temperature has no sensor location.
	assert.False(t, pts.One(t, semconv.HWTemperature.Name, hwID(nvidia)).Has(semconv.HWSensorLocation))
	assert.Len(t, pts.Find(semconv.GPUClockThrottle.Name), len(semconv.ThrottleReasons), "throttle reasons are NVIDIA's")

	require.NoError(t, s.Close())
	assert.Equal(t, 1, fs.shutdown)
}

func TestOneVendorUnavailable(t *testing.T) {
	amd := amdsysfstest.Load(t, "one-gpu")
	procs := WithProcRoot(amdProcRoot(t, nil, "6.8.0"))

	// NVML without a driver is no error when the AMD backend finds a GPU.
	noDriver := &fakeSystem{gpus: []*fakeGPU{h100(0)}, initRet: nvml.ERROR_DRIVER_NOT_LOADED}
	s, _ := newSource(t, WithNVML(noDriver.lib()), WithBackends(BackendNVML, BackendAMDSysfs), withSysfsFS(amd), procs)
	require.Len(t, s.Devices(), 1)
	assert.Equal(t, "0xa1b2c3d4e5f60718", s.Devices()[0].UUID)

	// Neither: the error says why, for each.
	_, err := New(WithNVML(noDriver.lib()), WithBackends(BackendNVML, BackendAMDSysfs), withSysfsFS(fstest.MapFS{}), procs)
	require.ErrorIs(t, err, xpuscope.ErrUnavailable)
	assert.Equal(t, "gpu: nvmlInit (injected NVML): NVIDIA driver not loaded (ERROR_DRIVER_NOT_LOADED); "+
		"no AMD GPU: sysfs at (injected sysfs): open class/drm: file does not exist", err.Error())

	// A fault of one backend is a fault, whatever the others find.
	broken := &fakeSystem{gpus: []*fakeGPU{h100(0)}, initRet: nvml.ERROR_UNKNOWN}
	_, err = New(WithNVML(broken.lib()), WithBackends(BackendNVML, BackendAMDSysfs), withSysfsFS(amd), procs)
	require.Error(t, err)
	assert.False(t, errors.Is(err, xpuscope.ErrUnavailable), "%v", err)
}

func TestBackendOptions(t *testing.T) {
	lib := WithNVML((&fakeSystem{gpus: []*fakeGPU{h100(0)}}).lib())
	for _, bad := range [][]Option{
		{WithBackends()},
		{WithBackends("cuda")},
		{WithBackends(BackendNVML, BackendNVML)},
		{WithROCmSMILibraryPath("")},
		{WithSysfsRoot("")},
	} {
		_, err := New(append(bad, lib)...)
		require.Error(t, err)
		assert.False(t, errors.Is(err, xpuscope.ErrUnavailable), "bad configuration is a fault: %v", err)
	}
	c, err := newConfig([]Option{WithBackends(BackendAMDSysfs, BackendNVML)})
	require.NoError(t, err)
	assert.Equal(t, []Backend{BackendNVML, BackendAMDSysfs}, c.backends, "New's order")
	c, err = newConfig(nil)
	require.NoError(t, err)
	assert.Equal(t, allBackends, c.backends)
	c, err = newConfig([]Option{lib})
	require.NoError(t, err)
	assert.Equal(t, []Backend{BackendNVML}, c.backends, "an injected NVML reads no host GPU of another vendor")
}

func TestAMDSysfsImpossibleValues(t *testing.T) {
	fixture := amdsysfstest.Load(t, "one-gpu")
	fixture["class/drm/card1/device/gpu_busy_percent"] = &fstest.MapFile{Data: []byte("150\n")}
	fixture["class/drm/card1/device/hwmon/hwmon2/pwm1"] = &fstest.MapFile{Data: []byte("300\n")}
	fixture["class/drm/card1/device/hwmon/hwmon2/pwm1_max"] = &fstest.MapFile{Data: []byte("255\n")}
	fixture["class/drm/card1/device/hwmon/hwmon2/power1_input"] = &fstest.MapFile{Data: []byte("241500000\n")}
	_, reader := newSource(t, WithBackends(BackendAMDSysfs), withSysfsFS(fixture), WithProcRoot(amdProcRoot(t, nil, "6.8.0")))
	pts := testutil.Collect(t, reader)
	id := semconv.HWID.String("0xa1b2c3d4e5f60718")
	assert.Empty(t, pts.Find(semconv.HWGPUUtilization.Name))
	assert.Empty(t, pts.Find(semconv.GPUFanSpeed.Name))
	for _, read := range []string{"utilization", "fan"} {
		assert.Equal(t, 1.0, pts.One(t, semconv.XpuscopeGPUReadErrors.Name, id,
			semconv.XpuscopeRead.String(read), semconv.ErrorType.String("invalid_data")).Value, read)
	}
	// With power1_input, hw.power is the socket power, not the average.
	assert.InDelta(t, 241.5, pts.One(t, semconv.HWPower.Name, id).Value, 1e-9)
	assert.InDelta(t, 237.0, pts.One(t, semconv.GPUPowerAverage.Name, id).Value, 1e-9)

	fixture["class/drm/card1/device/hwmon/hwmon2/pwm1"] = &fstest.MapFile{Data: []byte("51\n")}
	delete(fixture, "class/drm/card1/device/hwmon/hwmon2/pwm1_max") // RSMI_MAX_FAN_SPEED then
	_, reader = newSource(t, WithBackends(BackendAMDSysfs), withSysfsFS(fixture), WithProcRoot(amdProcRoot(t, nil, "6.8.0")))
	assert.InDelta(t, 0.2, testutil.Collect(t, reader).One(t, semconv.GPUFanSpeed.Name, id).Value, 1e-12)
}

func TestAMDID(t *testing.T) {
	assert.Equal(t, "0x00000000000000ff", amdID(0xff, true, "0000:03:00.0"))
	assert.Equal(t, "0000:03:00.0", amdID(0xff, false, "0000:03:00.0"))
	assert.Equal(t, "0000:03:00.0", amdID(0, true, "0000:03:00.0"), "a zero unique id is none")

	cards := []amdsysfs.Card{{PCIAddress: "0000:03:00.0", PCIID: "1002:740F"}}
	assert.Equal(t, "AMD GPU 1002:740F", fallbackName(cards, "0000:03:00.0"))
	assert.Equal(t, "AMD GPU", fallbackName(cards, "0000:04:00.0"))
}
