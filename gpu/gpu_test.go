package gpu

import (
	"errors"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/procfs/procfstest"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

func hwID(g *fakeGPU) attribute.KeyValue { return semconv.HWID.String(g.uuid) }

func TestSeveralGPUs(t *testing.T) {
	gpus := []*fakeGPU{h100(0), h100(1), h100(2)}
	_, reader := start(t, &fakeSystem{gpus: gpus})
	pts := testutil.Collect(t, reader)

	for i, g := range gpus {
		id := hwID(g)
		p := pts.One(t, semconv.HWGPUUtilization.Name, id, semconv.HWGPUTask.String(semconv.GPUTaskGeneral))
		assert.InDelta(t, float64(40+i)/100, p.Value, 1e-9)
		assert.Equal(t, g.name, p.Get(semconv.HWName))
		assert.Equal(t, "NVIDIA", p.Get(semconv.HWVendor))
		assert.Equal(t, semconv.HWTypeGPU, p.Get(semconv.HWType))
		assert.Equal(t, "535.183.01", p.Get(semconv.HWDriverVersion))
		assert.Equal(t, strconv.Itoa(i), p.Get(semconv.GPUIndex))
		assert.Equal(t, "0000:"+strconv.FormatInt(int64(0x18+i), 16)+":00.0", p.Get(semconv.GPUPCIAddress))
		assert.False(t, p.Has(semconv.HWParent), "a GPU has no hw.parent")

		assert.InDelta(t, 0.03, pts.One(t, semconv.HWGPUUtilization.Name, id, semconv.HWGPUTask.String(semconv.GPUTaskEncoder)).Value, 1e-9)
		assert.InDelta(t, 0.07, pts.One(t, semconv.HWGPUUtilization.Name, id, semconv.HWGPUTask.String(semconv.GPUTaskDecoder)).Value, 1e-9)
		assert.InDelta(t, float64(20+i)/100, pts.One(t, semconv.GPUMemoryControllerUtilization.Name, id).Value, 1e-9)

		used := float64(uint64(10+i) << 30)
		assert.Equal(t, used, pts.One(t, semconv.HWGPUMemoryUsage.Name, id).Value)
		assert.Equal(t, float64(80<<30), pts.One(t, semconv.HWGPUMemoryLimit.Name, id).Value)
		assert.Equal(t, float64(g.memory.Free), pts.One(t, semconv.GPUMemoryFree.Name, id).Value)
		assert.Equal(t, float64(512<<20), pts.One(t, semconv.GPUMemoryReserved.Name, id).Value)
		assert.InDelta(t, used/float64(80<<30), pts.One(t, semconv.HWGPUMemoryUtilization.Name, id).Value, 1e-12)

		assert.Equal(t, float64(50+i), pts.One(t, semconv.HWTemperature.Name, id).Value)
		assert.InDelta(t, 300+float64(i), pts.One(t, semconv.HWPower.Name, id).Value, 1e-9)
		assert.InDelta(t, 700.0, pts.One(t, semconv.GPUPowerLimit.Name, id).Value, 1e-9)
		assert.InDelta(t, 1000+float64(i)/1000, pts.One(t, semconv.HWEnergy.Name, id).Value, 1e-9)
		assert.Equal(t, 1980e6, pts.One(t, semconv.GPUClockFrequency.Name, id, semconv.GPUClockDomain.String(semconv.ClockDomainSM)).Value)
		assert.Equal(t, 2619e6, pts.One(t, semconv.GPUClockFrequency.Name, id, semconv.GPUClockDomain.String(semconv.ClockDomainMemory)).Value)
		assert.Equal(t, float64(1000+i), pts.One(t, semconv.HWGPUIO.Name, id, semconv.NetworkIODir.String(semconv.DirectionTransmit)).Value)
		assert.Equal(t, float64(2000+i), pts.One(t, semconv.HWGPUIO.Name, id, semconv.NetworkIODir.String(semconv.DirectionReceive)).Value)
		assert.InDelta(t, 0.35, pts.One(t, semconv.GPUFanSpeed.Name, id).Value, 1e-9)
		assert.Equal(t, float64(i), pts.One(t, semconv.HWErrors.Name, id, semconv.ErrorType.String(semconv.ErrorCorrected)).Value)
		assert.Equal(t, 0.0, pts.One(t, semconv.HWErrors.Name, id, semconv.ErrorType.String(semconv.ErrorUncorrected)).Value)

		// One series per known reason; mask 0x5 = gpu_idle | sw_power_cap.
		require.Len(t, pts.Find(semconv.GPUClockThrottle.Name, id), len(semconv.ThrottleReasons))
		for _, r := range semconv.ThrottleReasons {
			want := 0.0
			if r == "gpu_idle" || r == "sw_power_cap" {
				want = 1
			}
			assert.Equal(t, want, pts.One(t, semconv.GPUClockThrottle.Name, id, semconv.GPUClockThrottleReason.String(r)).Value, r)
		}
	}
	assert.Empty(t, pts.Find(semconv.XpuscopeGPUReadErrors.Name))
	assert.Empty(t, pts.Find(semconv.XpuscopeGPUSymbolMissing.Name))
}

// procRoot makes a fake procfs with the given pid → executable links.
func procRoot(t *testing.T, exes map[uint32]string) string {
	var procs []procfstest.Process
	for pid, exe := range exes {
		procs = append(procs, procfstest.Process{PID: int(pid), Exe: exe})
	}
	return procfstest.New(t, procs...)
}

func TestProcessListChangesBetweenCycles(t *testing.T) {
	g := h100(0)
	g.compute = []nvml.ProcessInfo{{Pid: 100, UsedGpuMemory: 1 << 30}, {Pid: 200, UsedGpuMemory: 2 << 30}}
	// A process in both lists counts once, with the larger figure.
	g.graphics = []nvml.ProcessInfo{{Pid: 200, UsedGpuMemory: 3 << 30}}
	g.processUtil = []nvml.ProcessUtilizationSample{
		{Pid: 100, TimeStamp: 10, SmUtil: 30},
		{Pid: 100, TimeStamp: 20, SmUtil: 60}, // newer sample wins
		{Pid: 200, TimeStamp: 15, SmUtil: 5},
	}
	root := procRoot(t, map[uint32]string{100: "/usr/bin/python3.11", 200: "/opt/vllm/bin/vllm", 300: "/srv/train (deleted)"})
	s, reader := start(t, &fakeSystem{gpus: []*fakeGPU{g}}, WithProcRoot(root))

	pts := testutil.Collect(t, reader)
	mem := semconv.ProcessGPUMemoryUsage.Name
	require.Len(t, pts.Find(mem), 2)
	p := pts.One(t, mem, semconv.ProcessPID.Int(100))
	assert.Equal(t, float64(1<<30), p.Value)
	assert.Equal(t, "python3.11", p.Get(semconv.ProcessExecutableName))
	assert.Equal(t, g.uuid, p.Get(semconv.HWID))
	assert.Equal(t, float64(3<<30), pts.One(t, mem, semconv.ProcessPID.Int(200)).Value)
	assert.Equal(t, "vllm", pts.One(t, mem, semconv.ProcessPID.Int(200)).Get(semconv.ProcessExecutableName))
	assert.InDelta(t, 0.60, pts.One(t, semconv.ProcessGPUUtilization.Name, semconv.ProcessPID.Int(100)).Value, 1e-9)
	assert.InDelta(t, 0.05, pts.One(t, semconv.ProcessGPUUtilization.Name, semconv.ProcessPID.Int(200)).Value, 1e-9)

	// Next cycle: 100 exits, 300 starts. No new utilization samples: the
	// processes ran no kernel, so they report 0.
	g.set(func(g *fakeGPU) {
		g.compute = []nvml.ProcessInfo{{Pid: 200, UsedGpuMemory: 2 << 30}, {Pid: 300, UsedGpuMemory: 5 << 30}}
		g.graphics = nil
	})
	s.poll()
	pts = testutil.Collect(t, reader)
	require.Len(t, pts.Find(mem), 2)
	assert.Empty(t, pts.Find(mem, semconv.ProcessPID.Int(100)), "an exited process leaves no series")
	assert.Equal(t, float64(2<<30), pts.One(t, mem, semconv.ProcessPID.Int(200)).Value)
	p = pts.One(t, mem, semconv.ProcessPID.Int(300))
	assert.Equal(t, float64(5<<30), p.Value)
	assert.Equal(t, "train", p.Get(semconv.ProcessExecutableName))
	assert.Equal(t, 0.0, pts.One(t, semconv.ProcessGPUUtilization.Name, semconv.ProcessPID.Int(300)).Value)
	assert.Len(t, s.devices[0].procs, 2, "the cache forgets exited processes")
}

func TestProcessCapFoldsTheSmallest(t *testing.T) {
	g := h100(0)
	for pid := uint32(1); pid <= 5; pid++ {
		g.compute = append(g.compute, nvml.ProcessInfo{Pid: pid, UsedGpuMemory: uint64(pid) << 20})
	}
	s, reader := start(t, &fakeSystem{gpus: []*fakeGPU{g}}, WithMaxProcesses(2), WithProcRoot(t.TempDir()))
	pts := testutil.Collect(t, reader)
	mem := semconv.ProcessGPUMemoryUsage.Name
	require.Len(t, pts.Find(mem), 3)
	pts.One(t, mem, semconv.ProcessPID.Int(5))
	pts.One(t, mem, semconv.ProcessPID.Int(4))
	other := pts.One(t, mem, semconv.ProcessExecutableName.String(semconv.Other))
	assert.Equal(t, float64((1+2+3)<<20), other.Value)
	assert.False(t, other.Has(semconv.ProcessPID))
	assert.Equal(t, 3.0, pts.One(t, semconv.XpuscopeGPUProcessOverflow.Name, hwID(g)).Value)

	s.poll()
	pts = testutil.Collect(t, reader)
	assert.Equal(t, 6.0, pts.One(t, semconv.XpuscopeGPUProcessOverflow.Name, hwID(g)).Value)
	assert.Len(t, s.devices[0].procs, 2, "folded processes get no cached series")
}

func TestOneDeviceFailingDoesNotStopTheOthers(t *testing.T) {
	bad, good := h100(0), h100(1)
	bad.fail = map[string]nvml.Return{"power": nvml.ERROR_UNKNOWN, "memory": nvml.ERROR_GPU_IS_LOST}
	s, reader := start(t, &fakeSystem{gpus: []*fakeGPU{bad, good}})
	pts := testutil.Collect(t, reader)

	assert.Empty(t, pts.Find(semconv.HWPower.Name, hwID(bad)))
	assert.Empty(t, pts.Find(semconv.HWGPUMemoryUsage.Name, hwID(bad)))
	assert.Len(t, pts.Find(semconv.HWTemperature.Name, hwID(bad)), 1, "the failing device's other reads go on")
	assert.Len(t, pts.Find(semconv.HWPower.Name, hwID(good)), 1)
	assert.Len(t, pts.Find(semconv.HWGPUMemoryUsage.Name, hwID(good)), 1)

	errs := semconv.XpuscopeGPUReadErrors.Name
	assert.Equal(t, 1.0, pts.One(t, errs, hwID(bad), semconv.XpuscopeRead.String("power"), semconv.ErrorType.String("ERROR_UNKNOWN")).Value)
	assert.Equal(t, 1.0, pts.One(t, errs, hwID(bad), semconv.XpuscopeRead.String("memory"), semconv.ErrorType.String("ERROR_GPU_IS_LOST")).Value)
	assert.Empty(t, pts.Find(errs, hwID(good)))

	// Errors are counted per cycle, and the read is tried again.
	s.poll()
	pts = testutil.Collect(t, reader)
	assert.Equal(t, 2.0, pts.One(t, errs, hwID(bad), semconv.XpuscopeRead.String("power")).Value)
	assert.Equal(t, 2, bad.callCount("power"))

	// The device recovers.
	bad.set(func(g *fakeGPU) { g.fail = nil })
	s.poll()
	pts = testutil.Collect(t, reader)
	assert.Len(t, pts.Find(semconv.HWPower.Name, hwID(bad)), 1)
}

func TestUnsupportedReadIsRetiredNotCounted(t *testing.T) {
	g := h100(0)
	g.fail = map[string]nvml.Return{"fan": nvml.ERROR_NOT_SUPPORTED}
	s, reader := start(t, &fakeSystem{gpus: []*fakeGPU{g}})
	s.poll()
	s.poll()
	pts := testutil.Collect(t, reader)
	assert.Empty(t, pts.Find(semconv.GPUFanSpeed.Name))
	assert.Empty(t, pts.Find(semconv.XpuscopeGPUReadErrors.Name))
	assert.Equal(t, 1, g.callCount("fan"), "an unsupported read is not retried")
	assert.Equal(t, 3, g.callCount("power"))
}

func TestMIG(t *testing.T) {
	parent := h100(0)
	parent.migEnabled = true
	// NVML answers these as unsupported on a GPU in MIG mode.
	parent.fail = map[string]nvml.Return{"utilization": nvml.ERROR_NOT_SUPPORTED, "process_utilization": nvml.ERROR_NOT_SUPPORTED}
	small := &fakeGPU{
		uuid: "MIG-11111111-2222-3333-4444-555555555555", name: "NVIDIA H100 80GB HBM3 MIG 1g.10gb", gi: 9, ci: 0,
		memory:  nvml.Memory_v2{Total: 10 << 30, Used: 1 << 30, Free: 9 << 30},
		compute: []nvml.ProcessInfo{{Pid: 4242, UsedGpuMemory: 1 << 30}},
	}
	big := &fakeGPU{
		uuid: "MIG-66666666-7777-8888-9999-000000000000", name: "NVIDIA H100 80GB HBM3 MIG 3g.40gb", gi: 2, ci: 0,
		memory: nvml.Memory_v2{Total: 40 << 30, Used: 30 << 30, Free: 10 << 30},
	}
	parent.instances = []*fakeGPU{small, big}
	_, reader := start(t, &fakeSystem{gpus: []*fakeGPU{parent}}, WithProcRoot(t.TempDir()))
	pts := testutil.Collect(t, reader)

	for _, tc := range []struct {
		in      *fakeGPU
		profile string
	}{{small, "1g.10gb"}, {big, "3g.40gb"}} {
		p := pts.One(t, semconv.HWGPUMemoryUsage.Name, hwID(tc.in))
		assert.Equal(t, float64(tc.in.memory.Used), p.Value)
		assert.Equal(t, parent.uuid, p.Get(semconv.HWParent))
		assert.Equal(t, tc.profile, p.Get(semconv.GPUMIGProfile))
		assert.Equal(t, strconv.Itoa(tc.in.gi), p.Get(semconv.GPUMIGGPUInstanceID))
		assert.Equal(t, "0", p.Get(semconv.GPUMIGComputeInstance))
		assert.Equal(t, "0", p.Get(semconv.GPUIndex))
		assert.Equal(t, "0000:18:00.0", p.Get(semconv.GPUPCIAddress))
		assert.Equal(t, float64(tc.in.memory.Total), pts.One(t, semconv.HWGPUMemoryLimit.Name, hwID(tc.in)).Value)
		// What NVML does not report per instance is never copied from
		// the parent.
		for _, m := range []semconv.Metric{semconv.HWPower, semconv.HWTemperature, semconv.HWGPUUtilization, semconv.HWEnergy, semconv.GPUClockFrequency, semconv.ProcessGPUUtilization} {
			assert.Empty(t, pts.Find(m.Name, hwID(tc.in)), m.Name)
		}
	}
	proc := pts.One(t, semconv.ProcessGPUMemoryUsage.Name, semconv.ProcessPID.Int(4242))
	assert.Equal(t, small.uuid, proc.Get(semconv.HWID), "under MIG a process is reported on its instance")
	assert.Equal(t, float64(1<<30), proc.Value)

	// The parent keeps its own device series, without utilization.
	assert.Len(t, pts.Find(semconv.HWPower.Name, hwID(parent)), 1)
	assert.Empty(t, pts.Find(semconv.HWGPUUtilization.Name, hwID(parent), semconv.HWGPUTask.String(semconv.GPUTaskGeneral)))
	assert.Empty(t, pts.Find(semconv.XpuscopeGPUReadErrors.Name))
}

func TestMIGInstanceDestroyedLeavesNoSeries(t *testing.T) {
	parent := h100(0)
	parent.migEnabled = true
	in := &fakeGPU{uuid: "MIG-a", name: "NVIDIA A100-SXM4-40GB MIG 1g.5gb", memory: nvml.Memory_v2{Total: 5 << 30}}
	parent.instances = []*fakeGPU{in}
	s, reader := start(t, &fakeSystem{gpus: []*fakeGPU{parent}})
	require.Len(t, testutil.Collect(t, reader).Find(semconv.HWGPUMemoryLimit.Name, semconv.HWID.String("MIG-a")), 1)

	in.set(func(g *fakeGPU) { g.fail = map[string]nvml.Return{"uuid": nvml.ERROR_NOT_FOUND} })
	parent.set(func(g *fakeGPU) { g.migEnabled = false })
	s.poll()
	pts := testutil.Collect(t, reader)
	assert.Empty(t, pts.Find(semconv.HWGPUMemoryLimit.Name, semconv.HWID.String("MIG-a")))
	assert.Empty(t, s.devices[0].instances)
}

func TestXIDErrors(t *testing.T) {
	gpus := []*fakeGPU{h100(0), h100(1)}
	fs := &fakeSystem{gpus: gpus}
	_, reader := start(t, fs)
	fs.events <- nvml.EventData{Device: fs.handles[1], EventType: nvml.EventTypeXidCriticalError, EventData: 79}
	fs.events <- nvml.EventData{Device: fs.handles[1], EventType: nvml.EventTypeXidCriticalError, EventData: 79}
	fs.events <- nvml.EventData{Device: fs.handles[0], EventType: nvml.EventTypeXidCriticalError, EventData: 48}

	xid := func(g *fakeGPU, code string) testutil.Points {
		return testutil.Collect(t, reader).Find(semconv.HWErrors.Name, hwID(g),
			semconv.ErrorType.String(semconv.ErrorXID), semconv.GPUXIDCode.String(code))
	}
	require.Eventually(t, func() bool {
		a, b := xid(gpus[1], "79"), xid(gpus[0], "48")
		return len(a) == 1 && a[0].Value == 2 && len(b) == 1 && b[0].Value == 1
	}, 10*time.Second, 10*time.Millisecond)
	assert.Empty(t, xid(gpus[0], "79"))
}

func TestXIDCodesAreCapped(t *testing.T) {
	d := newDevice(nil, Device{UUID: "GPU-x"}, "1")
	for code := range uint64(maxXIDCodes + 10) {
		d.xid.add(code)
	}
	assert.Len(t, d.xid.codes, maxXIDCodes+1)
	assert.Equal(t, int64(10), d.xid.codes[semconv.Other].n)
}

func TestMissingOptionalSymbol(t *testing.T) {
	g := h100(0)
	fs := &fakeSystem{gpus: []*fakeGPU{g}, missing: map[string]bool{
		"nvmlDeviceGetTotalEnergyConsumption": true,
		"nvmlDeviceGetMemoryInfo_v2":          true,
	}}
	_, reader := start(t, fs)
	pts := testutil.Collect(t, reader)
	assert.Empty(t, pts.Find(semconv.HWEnergy.Name))
	assert.Zero(t, g.callCount("energy"), "a missing symbol is never called")
	missing := semconv.XpuscopeGPUSymbolMissing.Name
	assert.Equal(t, 1.0, pts.One(t, missing, semconv.XpuscopeSymbol.String("nvmlDeviceGetTotalEnergyConsumption"), semconv.XpuscopeMetricName.String(semconv.HWEnergy.Name)).Value)
	// Without the _v2 memory call, v1 still gives usage; only reserved is lost.
	assert.Equal(t, 1.0, pts.One(t, missing, semconv.XpuscopeSymbol.String("nvmlDeviceGetMemoryInfo_v2"), semconv.XpuscopeMetricName.String(semconv.GPUMemoryReserved.Name)).Value)
	assert.Len(t, pts.Find(missing), 2)
	assert.Empty(t, pts.Find(semconv.GPUMemoryReserved.Name))
	assert.Equal(t, float64(g.memory.Used+g.memory.Reserved), pts.One(t, semconv.HWGPUMemoryUsage.Name, hwID(g)).Value)
	assert.Len(t, pts.Find(semconv.HWPower.Name), 1)
}

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		name        string
		fs          *fakeSystem
		unavailable bool
		says        string
	}{
		{"driver not loaded", &fakeSystem{gpus: []*fakeGPU{h100(0)}, initRet: nvml.ERROR_DRIVER_NOT_LOADED}, true, "driver not loaded"},
		{"no permission", &fakeSystem{gpus: []*fakeGPU{h100(0)}, initRet: nvml.ERROR_NO_PERMISSION}, true, "/dev/nvidia"},
		{"no GPU", &fakeSystem{}, true, "no NVIDIA GPU"},
		{"required symbol missing", &fakeSystem{gpus: []*fakeGPU{h100(0)}, missing: map[string]bool{"nvmlDeviceGetUUID": true}}, true, "nvmlDeviceGetUUID"},
		{"unknown init failure", &fakeSystem{gpus: []*fakeGPU{h100(0)}, initRet: nvml.ERROR_UNKNOWN}, false, "ERROR_UNKNOWN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(WithNVML(tc.fs.lib()))
			require.Error(t, err)
			assert.Equal(t, tc.unavailable, errors.Is(err, xpuscope.ErrUnavailable), err.Error())
			assert.Contains(t, err.Error(), tc.says)
		})
	}
	for _, bad := range [][]Option{{WithInterval(0)}, {WithMaxProcesses(0)}, {WithNVMLLibraryPath("")}} {
		_, err := New(append(bad, WithNVML((&fakeSystem{gpus: []*fakeGPU{h100(0)}}).lib()))...)
		require.Error(t, err)
		assert.False(t, errors.Is(err, xpuscope.ErrUnavailable), "bad configuration is a fault: %v", err)
	}
}

func TestUnidentifiableGPUIsLeftOut(t *testing.T) {
	lost := h100(1)
	lost.fail = map[string]nvml.Return{"uuid": nvml.ERROR_GPU_IS_LOST}
	s, _ := start(t, &fakeSystem{gpus: []*fakeGPU{h100(0), lost}})
	require.Len(t, s.Devices(), 1)
	assert.Equal(t, h100(0).uuid, s.Devices()[0].UUID)

	_, err := New(WithNVML((&fakeSystem{gpus: []*fakeGPU{lost}}).lib()))
	require.ErrorIs(t, err, xpuscope.ErrUnavailable)
	assert.Contains(t, err.Error(), "ERROR_GPU_IS_LOST")
}

func TestPollingGoroutineAndClose(t *testing.T) {
	before := runtime.NumGoroutine()
	g := h100(0)
	fs := &fakeSystem{gpus: []*fakeGPU{g}}
	s, err := New(WithNVML(fs.lib()), WithInterval(5*time.Millisecond))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return g.callCount("power") >= 3 }, 10*time.Second, time.Millisecond,
		"the Source polls on its own")
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
	assert.Equal(t, 1, fs.shutdown, "NVML is shut down once")
	calls := g.callCount("power")
	// A plain loop: testify's Eventually runs goroutines of its own.
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), before, "Close leaves no goroutine behind")
	time.Sleep(20 * time.Millisecond)
	assert.Equal(t, calls, g.callCount("power"), "no poll after Close")
}

func TestDevicesListsGPUsAndMIGInstances(t *testing.T) {
	parent, plain := h100(0), h100(1)
	parent.migEnabled = true
	parent.instances = []*fakeGPU{{uuid: "MIG-a", name: "NVIDIA H100 80GB HBM3 MIG 7g.80gb", gi: 0, ci: 0}}
	s, _ := start(t, &fakeSystem{gpus: []*fakeGPU{parent, plain}}, WithProcRoot(t.TempDir()))
	assert.Equal(t, []Device{
		{Index: 0, UUID: parent.uuid, Name: parent.name, Vendor: "NVIDIA", PCIAddress: "0000:18:00.0", SMs: 132, ThreadsPerSM: 2048},
		{Index: 0, UUID: "MIG-a", Name: "NVIDIA H100 80GB HBM3 MIG 7g.80gb", Vendor: "NVIDIA", PCIAddress: "0000:18:00.0", Parent: parent.uuid, Profile: "7g.80gb"},
		{Index: 1, UUID: plain.uuid, Name: plain.name, Vendor: "NVIDIA", PCIAddress: "0000:19:00.0", SMs: 132, ThreadsPerSM: 2048},
	}, s.Devices())
	assert.Equal(t, "535.183.01", s.DriverVersion())
}
