package gpu

// Tests in this file read "GPUs" through go-nvml's pkg/nvml/mock: this
// machine has no NVIDIA GPU, and the mock is how values a real device would
// report reach the Source.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// fakeGPU holds what one mocked device reports. Tests change its fields
// between poll cycles; the mock reads them under mu.
type fakeGPU struct {
	mu sync.Mutex

	uuid, name, busID string
	util, memCtrl     uint32
	encoder, decoder  uint32
	memory            nvml.Memory_v2
	temperature       uint32
	powerMW, limitMW  uint32
	energyMJ          uint64
	smMHz, memMHz     uint32
	txBytes, rxBytes  uint64
	fan               uint32
	eccCorrected      uint64
	eccUncorrected    uint64
	throttle          uint64
	compute, graphics []nvml.ProcessInfo
	processUtil       []nvml.ProcessUtilizationSample

	// fail makes a read return the given code instead of a value; keys
	// are read names from the reads table ("power", "memory", …).
	fail map[string]nvml.Return
	// calls counts calls per read name.
	calls map[string]int

	// Compute capability and FP32 cores, for the SM capacity.
	ccMajor, ccMinor, cores int

	// MIG: a parent with instances; an instance with its ids.
	migEnabled bool
	instances  []*fakeGPU
	gi, ci     int
}

func (g *fakeGPU) read(name string) nvml.Return {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.calls == nil {
		g.calls = map[string]int{}
	}
	g.calls[name]++
	if ret, ok := g.fail[name]; ok {
		return ret
	}
	return nvml.SUCCESS
}

func (g *fakeGPU) set(f func(g *fakeGPU)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f(g)
}

func (g *fakeGPU) callCount(name string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls[name]
}

func busID(s string) [32]int8 {
	var b [32]int8
	for i := range min(len(s), 31) {
		b[i] = int8(s[i])
	}
	return b
}

// device builds the mock handle. Every reader locks g, so tests may change
// values while the Source runs.
func (g *fakeGPU) device() *mock.Device {
	locked := func(f func()) { g.mu.Lock(); defer g.mu.Unlock(); f() }
	d := &mock.Device{
		GetUUIDFunc: func() (string, nvml.Return) { return g.uuid, g.read("uuid") },
		GetNameFunc: func() (string, nvml.Return) { return g.name, g.read("name") },
		GetPciInfoFunc: func() (nvml.PciInfo, nvml.Return) {
			return nvml.PciInfo{BusId: busID(g.busID)}, g.read("pci")
		},
		GetUtilizationRatesFunc: func() (u nvml.Utilization, r nvml.Return) {
			r = g.read("utilization")
			locked(func() { u = nvml.Utilization{Gpu: g.util, Memory: g.memCtrl} })
			return
		},
		GetEncoderUtilizationFunc: func() (uint32, uint32, nvml.Return) { return g.encoder, 167000, g.read("encoder_utilization") },
		GetDecoderUtilizationFunc: func() (uint32, uint32, nvml.Return) { return g.decoder, 167000, g.read("decoder_utilization") },
		GetMemoryInfo_v2Func: func() (m nvml.Memory_v2, r nvml.Return) {
			r = g.read("memory")
			locked(func() { m = g.memory })
			return
		},
		GetMemoryInfoFunc: func() (m nvml.Memory, r nvml.Return) {
			r = g.read("memory")
			locked(func() {
				m = nvml.Memory{Total: g.memory.Total, Free: g.memory.Free, Used: g.memory.Used + g.memory.Reserved}
			})
			return
		},
		GetTemperatureFunc: func(nvml.TemperatureSensors) (uint32, nvml.Return) { return g.temperature, g.read("temperature") },
		GetPowerUsageFunc: func() (p uint32, r nvml.Return) {
			r = g.read("power")
			locked(func() { p = g.powerMW })
			return
		},
		GetEnforcedPowerLimitFunc:        func() (uint32, nvml.Return) { return g.limitMW, g.read("power_limit") },
		GetTotalEnergyConsumptionFunc:    func() (uint64, nvml.Return) { return g.energyMJ, g.read("energy") },
		GetCurrentClocksEventReasonsFunc: func() (uint64, nvml.Return) { return g.throttle, g.read("throttle") },
		GetClockInfoFunc: func(c nvml.ClockType) (uint32, nvml.Return) {
			if c == nvml.CLOCK_SM {
				return g.smMHz, g.read("clocks")
			}
			return g.memMHz, g.read("clocks")
		},
		GetFieldValuesFunc: func(fv []nvml.FieldValue) nvml.Return {
			r := g.read("pcie")
			for i := range fv {
				v := g.txBytes
				if fv[i].FieldId == nvml.FI_DEV_PCIE_COUNT_RX_BYTES {
					v = g.rxBytes
				}
				fv[i].ValueType = uint32(nvml.VALUE_TYPE_UNSIGNED_LONG_LONG)
				for b := range 8 {
					fv[i].Value[b] = byte(v >> (8 * b))
				}
			}
			return r
		},
		GetFanSpeedFunc: func() (uint32, nvml.Return) { return g.fan, g.read("fan") },
		GetCudaComputeCapabilityFunc: func() (int, int, nvml.Return) {
			return g.ccMajor, g.ccMinor, g.read("capacity")
		},
		GetNumGpuCoresFunc: func() (int, nvml.Return) { return g.cores, g.read("capacity") },
		GetTotalEccErrorsFunc: func(t nvml.MemoryErrorType, _ nvml.EccCounterType) (uint64, nvml.Return) {
			if t == nvml.MEMORY_ERROR_TYPE_CORRECTED {
				return g.eccCorrected, g.read("ecc")
			}
			return g.eccUncorrected, g.read("ecc")
		},
		GetComputeRunningProcessesFunc: func() (p []nvml.ProcessInfo, r nvml.Return) {
			r = g.read("compute_processes")
			locked(func() { p = append(p, g.compute...) })
			return
		},
		GetGraphicsRunningProcessesFunc: func() (p []nvml.ProcessInfo, r nvml.Return) {
			r = g.read("graphics_processes")
			locked(func() { p = append(p, g.graphics...) })
			return
		},
		GetProcessUtilizationFunc: func(last uint64) (out []nvml.ProcessUtilizationSample, r nvml.Return) {
			r = g.read("process_utilization")
			locked(func() {
				for _, s := range g.processUtil {
					if s.TimeStamp > last {
						out = append(out, s)
					}
				}
			})
			if r == nvml.SUCCESS && len(out) == 0 {
				r = nvml.ERROR_NOT_FOUND
			}
			return
		},
		GetMigModeFunc: func() (int, int, nvml.Return) {
			if g.migEnabled {
				return nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE, g.read("mig")
			}
			return nvml.DEVICE_MIG_DISABLE, nvml.DEVICE_MIG_DISABLE, g.read("mig")
		},
		GetMaxMigDeviceCountFunc: func() (int, nvml.Return) { return 7, g.read("mig") },
		GetGpuInstanceIdFunc:     func() (int, nvml.Return) { return g.gi, g.read("mig") },
		GetComputeInstanceIdFunc: func() (int, nvml.Return) { return g.ci, g.read("mig") },
		RegisterEventsFunc:       func(uint64, nvml.EventSet) nvml.Return { return g.read("xid") },
	}
	children := make([]*mock.Device, len(g.instances))
	for i, in := range g.instances {
		children[i] = in.device()
	}
	d.GetMigDeviceHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if r := g.read("mig"); r != nvml.SUCCESS {
			return nil, r
		}
		if i >= len(children) {
			return nil, nvml.ERROR_NOT_FOUND
		}
		return children[i], nvml.SUCCESS
	}
	return d
}

// fakeSystem is a mocked NVML library with the given GPUs.
type fakeSystem struct {
	gpus    []*fakeGPU
	handles []*mock.Device
	missing map[string]bool // symbols the "library" lacks
	initRet nvml.Return
	events  chan nvml.EventData // delivered by the event set's Wait

	mu       sync.Mutex
	shutdown int
}

func (fs *fakeSystem) lib() *mock.Interface {
	fs.handles = make([]*mock.Device, len(fs.gpus))
	for i, g := range fs.gpus {
		fs.handles[i] = g.device()
	}
	if fs.events == nil {
		fs.events = make(chan nvml.EventData, 16)
	}
	set := &mock.EventSet{
		WaitFunc: func(ms uint32) (nvml.EventData, nvml.Return) {
			select {
			case e := <-fs.events:
				return e, nvml.SUCCESS
			case <-time.After(time.Duration(ms) * time.Millisecond):
				return nvml.EventData{}, nvml.ERROR_TIMEOUT
			}
		},
		FreeFunc: func() nvml.Return { return nvml.SUCCESS },
	}
	ext := &mock.ExtendedInterface{LookupSymbolFunc: func(s string) error {
		if fs.missing[s] {
			return fmt.Errorf("undefined symbol: %s", s)
		}
		return nil
	}}
	return &mock.Interface{
		InitFunc: func() nvml.Return { return fs.initRet },
		ShutdownFunc: func() nvml.Return {
			fs.mu.Lock()
			defer fs.mu.Unlock()
			fs.shutdown++
			return nvml.SUCCESS
		},
		ExtensionsFunc:             func() nvml.ExtendedInterface { return ext },
		SystemGetDriverVersionFunc: func() (string, nvml.Return) { return "535.183.01", nvml.SUCCESS },
		DeviceGetCountFunc:         func() (int, nvml.Return) { return len(fs.gpus), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i >= len(fs.handles) {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return fs.handles[i], nvml.SUCCESS
		},
		EventSetCreateFunc: func() (nvml.EventSet, nvml.Return) { return set, nvml.SUCCESS },
	}
}

// h100 returns a fully populated fake GPU; i makes its values distinct.
func h100(i int) *fakeGPU {
	return &fakeGPU{
		uuid:  fmt.Sprintf("GPU-0000000%d-aaaa-bbbb-cccc-dddddddddddd", i),
		name:  "NVIDIA H100 80GB HBM3",
		busID: fmt.Sprintf("00000000:%02X:00.0", 0x18+i),
		util:  uint32(40 + i), memCtrl: uint32(20 + i),
		encoder: 3, decoder: 7,
		memory: nvml.Memory_v2{
			Total:    80 << 30,
			Reserved: 512 << 20,
			Used:     uint64(10+i) << 30,
			Free:     80<<30 - 512<<20 - uint64(10+i)<<30,
		},
		temperature: uint32(50 + i),
		powerMW:     uint32(300_000 + i*1000), limitMW: 700_000,
		energyMJ: uint64(1_000_000 + i),
		smMHz:    1980, memMHz: 2619,
		txBytes: uint64(1000 + i), rxBytes: uint64(2000 + i),
		fan:          35,
		eccCorrected: uint64(i), eccUncorrected: 0,
		throttle: 0x1 | 0x4, // gpu_idle, sw_power_cap
		ccMajor:  9, ccMinor: 0, cores: 132 * 128,
	}
}

// start creates a Source over the fake system with a manual reader and a
// long interval, so that tests drive poll cycles themselves.
func start(t testing.TB, fs *fakeSystem, opts ...Option) (*Source, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	opts = append([]Option{WithNVML(fs.lib()), WithMeterProvider(mp), WithInterval(time.Hour)}, opts...)
	s, err := New(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s, reader
}
