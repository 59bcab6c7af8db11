// Package levelzero binds Level Zero Sysman, Intel's GPU management API,
// through purego (package dynlib): no cgo, so it builds with CGO_ENABLED=0
// as well as 1.
//
// It loads the Level Zero loader, libze_loader.so.1, which finds the GPU
// drivers (Intel's compute runtime, libze_intel_gpu.so.1; or those
// ZE_ENABLE_ALT_DRIVERS names) and dispatches each call to the driver of
// its handle. Every constant, signature and struct layout below is copied
// from the Level Zero specification's headers, include/ze_api.h and
// include/zes_api.h of oneapi-src/level-zero at v1.8.12 (the headers of
// specification v1.4-r1.4.8, which Debian 12's libze-dev ships), except
// zesInit, zesDriverGet and zesDeviceGet, which specification v1.5
// (zes_api.h v1.5-r1.5.8, loader v1.9) added. A test checks the layouts
// against offsetof in C of those headers (testdata/fakeze.c).
//
// Initialisation follows the specification (zes_api.h v1.5, zesInit):
// "The application must call this function or zeInit with the
// ZES_ENABLE_SYSMAN environment variable set before calling any other
// sysman function". Init calls zesInit where the loader exports it, and
// otherwise sets ZES_ENABLE_SYSMAN=1 and calls zeInit(0), using the core
// driver and device handles as Sysman's; never both. Debian 12's loader
// (1.8.12) exports neither zesInit nor zesDriverGet nor zesDeviceGet.
//
// Every function is looked up with dlsym before it is bound, and called
// through purego.SyscallN, which allocates nothing per call: each takes
// only handles, integers and pointers.
package levelzero

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/xpuscope/xpuscope/internal/dynlib"
)

// DefaultLibrary is the loader's soname.
const DefaultLibrary = "libze_loader.so.1"

// SysmanEnv is the environment variable that makes zeInit initialise
// Sysman too.
const SysmanEnv = "ZES_ENABLE_SYSMAN"

// Result is a ze_result_t.
type Result uint32

// ze_result_t values (ze_api.h).
const (
	Success                      Result = 0
	NotReady                     Result = 1
	ErrorDeviceLost              Result = 0x70000001
	ErrorOutOfHostMemory         Result = 0x70000002
	ErrorInsufficientPermissions Result = 0x70010000
	ErrorNotAvailable            Result = 0x70010001
	ErrorUninitialized           Result = 0x78000001
	ErrorUnsupportedVersion      Result = 0x78000002
	ErrorUnsupportedFeature      Result = 0x78000003
	ErrorInvalidArgument         Result = 0x78000004
	ErrorInvalidNullHandle       Result = 0x78000005
	ErrorInvalidNullPointer      Result = 0x78000007
	ErrorUnknown                 Result = 0x7ffffffe
)

var resultNames = map[Result]string{
	Success:                      "ZE_RESULT_SUCCESS",
	NotReady:                     "ZE_RESULT_NOT_READY",
	ErrorDeviceLost:              "ZE_RESULT_ERROR_DEVICE_LOST",
	ErrorOutOfHostMemory:         "ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY",
	ErrorInsufficientPermissions: "ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS",
	ErrorNotAvailable:            "ZE_RESULT_ERROR_NOT_AVAILABLE",
	ErrorUninitialized:           "ZE_RESULT_ERROR_UNINITIALIZED",
	ErrorUnsupportedVersion:      "ZE_RESULT_ERROR_UNSUPPORTED_VERSION",
	ErrorUnsupportedFeature:      "ZE_RESULT_ERROR_UNSUPPORTED_FEATURE",
	ErrorInvalidArgument:         "ZE_RESULT_ERROR_INVALID_ARGUMENT",
	ErrorInvalidNullHandle:       "ZE_RESULT_ERROR_INVALID_NULL_HANDLE",
	ErrorInvalidNullPointer:      "ZE_RESULT_ERROR_INVALID_NULL_POINTER",
	ErrorUnknown:                 "ZE_RESULT_ERROR_UNKNOWN",
	noSymbol:                     "SYMBOL_MISSING",
}

// String is the result's name in ze_api.h, a stable, low-cardinality
// label; ZE_RESULT_0x… for one not listed.
func (r Result) String() string {
	if n, ok := resultNames[r]; ok {
		return n
	}
	return "ZE_RESULT_0x" + strconv.FormatUint(uint64(r), 16)
}

// Unsupported reports whether r says the device or driver has no such
// thing, rather than that a read failed.
func (r Result) Unsupported() bool {
	return r == ErrorUnsupportedFeature || r == ErrorUnsupportedVersion
}

// Handle is a Level Zero handle: a driver, a device or a Sysman object.
type Handle uintptr

// Structure types (zes_structure_type_t, ze_structure_type_t).
const (
	stypeDeviceProperties     = 0x1  // ZES_STRUCTURE_TYPE_DEVICE_PROPERTIES
	stypePCIProperties        = 0x2  // ZES_STRUCTURE_TYPE_PCI_PROPERTIES
	stypeEngineProperties     = 0x5  // ZES_STRUCTURE_TYPE_ENGINE_PROPERTIES
	stypeFreqProperties       = 0x9  // ZES_STRUCTURE_TYPE_FREQ_PROPERTIES
	stypeMemProperties        = 0xb  // ZES_STRUCTURE_TYPE_MEM_PROPERTIES
	stypePowerProperties      = 0xd  // ZES_STRUCTURE_TYPE_POWER_PROPERTIES
	stypeTempProperties       = 0x14 // ZES_STRUCTURE_TYPE_TEMP_PROPERTIES
	stypeProcessState         = 0x16 // ZES_STRUCTURE_TYPE_PROCESS_STATE
	stypeFreqState            = 0x1b // ZES_STRUCTURE_TYPE_FREQ_STATE
	stypeMemState             = 0x1e // ZES_STRUCTURE_TYPE_MEM_STATE
	stypeCoreDeviceProperties = 0x3  // ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES
)

// StringSize is ZES_STRING_PROPERTY_SIZE.
const StringSize = 64

// CoreDeviceProperties is ze_device_properties_t (368 bytes).
type CoreDeviceProperties struct {
	SType                    uint32
	_                        uint32
	PNext                    uintptr
	Type                     uint32
	VendorID                 uint32
	DeviceID                 uint32
	Flags                    uint32
	SubdeviceID              uint32
	CoreClockRate            uint32
	MaxMemAllocSize          uint64
	MaxHardwareContexts      uint32
	MaxCommandQueuePriority  uint32
	NumThreadsPerEU          uint32
	PhysicalEUSimdWidth      uint32
	NumEUsPerSubslice        uint32
	NumSubslicesPerSlice     uint32
	NumSlices                uint32
	_                        uint32
	TimerResolution          uint64
	TimestampValidBits       uint32
	KernelTimestampValidBits uint32
	UUID                     [16]byte // ze_device_uuid_t
	Name                     [256]byte
}

// DeviceProperties is zes_device_properties_t.
type DeviceProperties struct {
	SType         uint32
	_             uint32
	PNext         uintptr
	Core          CoreDeviceProperties
	NumSubdevices uint32
	SerialNumber  [StringSize]byte
	BoardNumber   [StringSize]byte
	BrandName     [StringSize]byte
	ModelName     [StringSize]byte
	VendorName    [StringSize]byte
	DriverVersion [StringSize]byte
}

// PCIAddress is zes_pci_address_t.
type PCIAddress struct{ Domain, Bus, Device, Function uint32 }

// String is the address in sysfs form, 0000:3a:00.0.
func (a PCIAddress) String() string {
	return fmt.Sprintf("%04x:%02x:%02x.%x", a.Domain, a.Bus&0xff, a.Device&0x1f, a.Function&0x7)
}

// PCIProperties is zes_pci_properties_t.
type PCIProperties struct {
	SType                 uint32
	_                     uint32
	PNext                 uintptr
	Address               PCIAddress
	Gen, Width            int32 // zes_pci_speed_t
	MaxBandwidth          int64
	HaveBandwidthCounters uint8 // ze_bool_t
	HavePacketCounters    uint8
	HaveReplayCounters    uint8
}

// EngineGroup is a zes_engine_group_t.
type EngineGroup uint32

// zes_engine_group_t values.
const (
	EngineAll                EngineGroup = 0  // ZES_ENGINE_GROUP_ALL
	EngineComputeAll         EngineGroup = 1  // ZES_ENGINE_GROUP_COMPUTE_ALL
	EngineMediaAll           EngineGroup = 2  // ZES_ENGINE_GROUP_MEDIA_ALL
	EngineCopyAll            EngineGroup = 3  // ZES_ENGINE_GROUP_COPY_ALL
	EngineComputeSingle      EngineGroup = 4  // ZES_ENGINE_GROUP_COMPUTE_SINGLE
	EngineRenderSingle       EngineGroup = 5  // ZES_ENGINE_GROUP_RENDER_SINGLE
	EngineMediaDecodeSingle  EngineGroup = 6  // ZES_ENGINE_GROUP_MEDIA_DECODE_SINGLE
	EngineMediaEncodeSingle  EngineGroup = 7  // ZES_ENGINE_GROUP_MEDIA_ENCODE_SINGLE
	EngineCopySingle         EngineGroup = 8  // ZES_ENGINE_GROUP_COPY_SINGLE
	EngineMediaEnhanceSingle EngineGroup = 9  // ZES_ENGINE_GROUP_MEDIA_ENHANCEMENT_SINGLE
	Engine3DSingle           EngineGroup = 10 // ZES_ENGINE_GROUP_3D_SINGLE
	Engine3DRenderComputeAll EngineGroup = 11 // ZES_ENGINE_GROUP_3D_RENDER_COMPUTE_ALL
	EngineRenderAll          EngineGroup = 12 // ZES_ENGINE_GROUP_RENDER_ALL
	Engine3DAll              EngineGroup = 13 // ZES_ENGINE_GROUP_3D_ALL
)

// EngineProperties is zes_engine_properties_t.
type EngineProperties struct {
	SType       uint32
	_           uint32
	PNext       uintptr
	Type        EngineGroup
	OnSubdevice uint8
	SubdeviceID uint32
}

// EngineStats is zes_engine_stats_t: both in µs.
type EngineStats struct {
	ActiveTime, Timestamp uint64
}

// Memory locations (zes_mem_loc_t).
const (
	MemLocSystem = 0 // ZES_MEM_LOC_SYSTEM
	MemLocDevice = 1 // ZES_MEM_LOC_DEVICE
)

// MemProperties is zes_mem_properties_t.
type MemProperties struct {
	SType        uint32
	_            uint32
	PNext        uintptr
	Type         uint32
	OnSubdevice  uint8
	SubdeviceID  uint32
	Location     uint32
	PhysicalSize uint64
	BusWidth     int32
	NumChannels  int32
}

// MemState is zes_mem_state_t.
type MemState struct {
	SType  uint32
	_      uint32
	PNext  uintptr
	Health uint32
	_      uint32
	Free   uint64
	Size   uint64
}

// MemBandwidth is zes_mem_bandwidth_t: bytes, bytes a second, µs.
type MemBandwidth struct {
	ReadCounter, WriteCounter, MaxBandwidth, Timestamp uint64
}

// PowerProperties is zes_power_properties_t.
type PowerProperties struct {
	SType                      uint32
	_                          uint32
	PNext                      uintptr
	OnSubdevice                uint8
	SubdeviceID                uint32
	CanControl                 uint8
	IsEnergyThresholdSupported uint8
	DefaultLimit               int32 // mW, deprecated
	MinLimit, MaxLimit         int32
}

// EnergyCounter is zes_power_energy_counter_t: µJ and µs.
type EnergyCounter struct {
	Energy, Timestamp uint64
}

// Temperature sensors (zes_temp_sensors_t).
const (
	TempGlobal = 0 // ZES_TEMP_SENSORS_GLOBAL
	TempGPU    = 1 // ZES_TEMP_SENSORS_GPU
	TempMemory = 2 // ZES_TEMP_SENSORS_MEMORY
)

// TempProperties is zes_temp_properties_t.
type TempProperties struct {
	SType                 uint32
	_                     uint32
	PNext                 uintptr
	Type                  uint32
	OnSubdevice           uint8
	SubdeviceID           uint32
	MaxTemperature        float64
	IsCriticalTempSupport uint8
	IsThreshold1Supported uint8
	IsThreshold2Supported uint8
}

// Frequency domains (zes_freq_domain_t).
const (
	FreqGPU    = 0 // ZES_FREQ_DOMAIN_GPU
	FreqMemory = 1 // ZES_FREQ_DOMAIN_MEMORY
)

// FreqProperties is zes_freq_properties_t.
type FreqProperties struct {
	SType                    uint32
	_                        uint32
	PNext                    uintptr
	Type                     uint32
	OnSubdevice              uint8
	SubdeviceID              uint32
	CanControl               uint8
	IsThrottleEventSupported uint8
	Min, Max                 float64
}

// FreqState is zes_freq_state_t: MHz; a negative value is unknown.
type FreqState struct {
	SType                                           uint32
	_                                               uint32
	PNext                                           uintptr
	CurrentVoltage, Request, TDP, Efficient, Actual float64
	ThrottleReasons                                 uint32
}

// ProcessState is zes_process_state_t.
type ProcessState struct {
	SType      uint32
	_          uint32
	PNext      uintptr
	ProcessID  uint32
	MemSize    uint64
	SharedSize uint64
	Engines    uint32
}

// Lib is the loaded loader.
type Lib struct {
	lib  *dynlib.Library
	path string

	zeInit, zeDriverGet, zeDeviceGet    uintptr
	zesInit, zesDriverGet, zesDeviceGet uintptr // 0 before Level Zero 1.5

	deviceGetProperties, pciGetProperties, processesGetState uintptr
	enumEngineGroups, engineGetProperties, engineGetActivity uintptr
	enumMemoryModules, memoryGetProperties                   uintptr
	memoryGetState, memoryGetBandwidth                       uintptr
	enumPowerDomains, getCardPowerDomain                     uintptr
	powerGetProperties, powerGetEnergyCounter                uintptr
	enumTemperatureSensors, temperatureGetProperties         uintptr
	temperatureGetState                                      uintptr
	enumFrequencyDomains, frequencyGetProperties             uintptr
	frequencyGetState                                        uintptr

	sysmanInit bool // zesInit and its driver and device enumeration exist

	// mu guards sc, what the poll's calls write into: a heap object of
	// the Lib's, so that a call allocates nothing. purego.SyscallN's
	// variadic arguments escape (go:uintptrescapes), one allocation a
	// call, unless they come in a slice: sys passes sc.args, and what
	// the arguments point at is sc's, on the heap and kept alive by l.
	mu sync.Mutex
	sc *scratch
}

// scratch is what the poll's calls read into.
type scratch struct {
	args  [4]uintptr
	es    EngineStats
	ms    MemState
	mb    MemBandwidth
	ec    EnergyCounter
	fs    FreqState
	temp  float64
	n     uint32
	procs []ProcessState
}

// sys calls fn with the arguments given, through sc.args: the callers
// pass only integers, handles and pointers into l.sc. l.mu is held.
func (l *Lib) sys(fn uintptr, a ...uintptr) Result {
	if fn == 0 {
		return noSymbol
	}
	n := copy(l.sc.args[:], a)
	r, _, _ := purego.SyscallN(fn, l.sc.args[:n]...)
	runtime.KeepAlive(l.sc)
	return Result(uint32(r))
}

// Open loads the loader at path (a soname or a path).
func Open(path string) (*Lib, error) {
	l := &Lib{path: path, sc: &scratch{}}
	req := func(name string, addr *uintptr) dynlib.Binding {
		return dynlib.Binding{Name: name, Addr: addr, Required: true}
	}
	opt := func(name string, addr *uintptr) dynlib.Binding { return dynlib.Binding{Name: name, Addr: addr} }
	bs := []dynlib.Binding{
		req("zeInit", &l.zeInit),
		req("zeDriverGet", &l.zeDriverGet),
		req("zeDeviceGet", &l.zeDeviceGet),
		opt("zesInit", &l.zesInit),
		opt("zesDriverGet", &l.zesDriverGet),
		opt("zesDeviceGet", &l.zesDeviceGet),
		req("zesDeviceGetProperties", &l.deviceGetProperties),
		req("zesDevicePciGetProperties", &l.pciGetProperties),
		opt("zesDeviceProcessesGetState", &l.processesGetState),
		req("zesDeviceEnumEngineGroups", &l.enumEngineGroups),
		req("zesEngineGetProperties", &l.engineGetProperties),
		req("zesEngineGetActivity", &l.engineGetActivity),
		opt("zesDeviceEnumMemoryModules", &l.enumMemoryModules),
		opt("zesMemoryGetProperties", &l.memoryGetProperties),
		opt("zesMemoryGetState", &l.memoryGetState),
		opt("zesMemoryGetBandwidth", &l.memoryGetBandwidth),
		opt("zesDeviceEnumPowerDomains", &l.enumPowerDomains),
		opt("zesDeviceGetCardPowerDomain", &l.getCardPowerDomain),
		opt("zesPowerGetProperties", &l.powerGetProperties),
		opt("zesPowerGetEnergyCounter", &l.powerGetEnergyCounter),
		opt("zesDeviceEnumTemperatureSensors", &l.enumTemperatureSensors),
		opt("zesTemperatureGetProperties", &l.temperatureGetProperties),
		opt("zesTemperatureGetState", &l.temperatureGetState),
		opt("zesDeviceEnumFrequencyDomains", &l.enumFrequencyDomains),
		opt("zesFrequencyGetProperties", &l.frequencyGetProperties),
		opt("zesFrequencyGetState", &l.frequencyGetState),
	}
	lib, err := dynlib.Open(path, "Level Zero", bs)
	if err != nil {
		return nil, err
	}
	l.lib = lib
	l.sysmanInit = l.zesInit != 0 && l.zesDriverGet != 0 && l.zesDeviceGet != 0
	return l, nil
}

// Path is what Open was given.
func (l *Lib) Path() string { return l.path }

// Missing lists the optional functions the loader lacks.
func (l *Lib) Missing() []string { return l.lib.Missing() }

// Has reports whether the loader exports sym.
func (l *Lib) Has(sym string) bool { return l.lib.Has(sym) }

// HasSysmanInit reports whether the loader has zesInit (Level Zero 1.5
// and later) and its driver and device enumeration.
func (l *Lib) HasSysmanInit() bool { return l.sysmanInit }

// Init initialises Sysman: zesInit(0) where the loader has it, else
// ZES_ENABLE_SYSMAN=1 in the environment (set only if not already so) and
// zeInit(0). It returns which, for messages, and the result.
func (l *Lib) Init() (string, Result) {
	if l.sysmanInit {
		return "zesInit", call(l.zesInit, 0)
	}
	how := "zeInit with " + SysmanEnv + "=1"
	if os.Getenv(SysmanEnv) != "1" {
		// Before zeInit: the driver reads it when zeInit reaches it.
		// Setting the variable is process-wide; it is what the
		// specification asks of an application using zeInit.
		if err := os.Setenv(SysmanEnv, "1"); err != nil {
			return how, ErrorUninitialized
		}
		how += " (set by the agent)"
	}
	return how, call(l.zeInit, 0)
}

// Devices returns the Sysman device handles of every driver.
func (l *Lib) Devices() ([]Handle, Result) {
	driverGet, deviceGet := l.zeDriverGet, l.zeDeviceGet
	if l.sysmanInit {
		driverGet, deviceGet = l.zesDriverGet, l.zesDeviceGet
	}
	drivers, r := enum(func(n *uint32, out *Handle) Result {
		r, _, _ := purego.SyscallN(driverGet, uintptr(unsafe.Pointer(n)), uintptr(unsafe.Pointer(out)))
		return Result(uint32(r))
	})
	if r != Success {
		return nil, r
	}
	var devices []Handle
	for _, d := range drivers {
		ds, r := enum(func(n *uint32, out *Handle) Result {
			r, _, _ := purego.SyscallN(deviceGet, uintptr(d), uintptr(unsafe.Pointer(n)), uintptr(unsafe.Pointer(out)))
			return Result(uint32(r))
		})
		if r != Success {
			return nil, r
		}
		devices = append(devices, ds...)
	}
	return devices, Success
}

// maxHandles bounds one enumeration: no GPU has more engine groups,
// sensors or domains than this.
const maxHandles = 256

// enum runs a count-then-fill enumeration.
func enum(f func(n *uint32, out *Handle) Result) ([]Handle, Result) {
	var n uint32
	if r := f(&n, nil); r != Success {
		return nil, r
	}
	if n == 0 {
		return nil, Success
	}
	if n > maxHandles {
		n = maxHandles
	}
	out := make([]Handle, n)
	if r := f(&n, &out[0]); r != Success {
		return nil, r
	}
	return out[:min(int(n), len(out))], Success
}

// noSymbol is the Result of a call to a function the loader lacks: not a
// ze_result_t the specification defines.
const noSymbol Result = 0x7fffffff

// call calls fn with integer arguments only.
func call(fn uintptr, args ...uintptr) Result {
	if fn == 0 {
		return noSymbol
	}
	r, _, _ := purego.SyscallN(fn, args...)
	return Result(uint32(r))
}

// Enumerations of a device's Sysman objects.
type Kind int

// The kinds Enum lists.
const (
	Engines Kind = iota
	MemoryModules
	PowerDomains
	TemperatureSensors
	FrequencyDomains
)

// Enum lists the device's objects of kind k.
func (l *Lib) Enum(dev Handle, k Kind) ([]Handle, Result) {
	fn := [...]uintptr{l.enumEngineGroups, l.enumMemoryModules, l.enumPowerDomains, l.enumTemperatureSensors, l.enumFrequencyDomains}[k]
	if fn == 0 {
		return nil, noSymbol
	}
	return enum(func(n *uint32, out *Handle) Result {
		r, _, _ := purego.SyscallN(fn, uintptr(dev), uintptr(unsafe.Pointer(n)), uintptr(unsafe.Pointer(out)))
		return Result(uint32(r))
	})
}

// DeviceProperties fills p for dev.
func (l *Lib) DeviceProperties(dev Handle, p *DeviceProperties) Result {
	*p = DeviceProperties{SType: stypeDeviceProperties}
	p.Core.SType = stypeCoreDeviceProperties
	if l.deviceGetProperties == 0 {
		return noSymbol
	}
	r, _, _ := purego.SyscallN(l.deviceGetProperties, uintptr(dev), uintptr(unsafe.Pointer(p)))
	return Result(uint32(r))
}

// PCIProperties fills p for dev.
func (l *Lib) PCIProperties(dev Handle, p *PCIProperties) Result {
	*p = PCIProperties{SType: stypePCIProperties}
	if l.pciGetProperties == 0 {
		return noSymbol
	}
	r, _, _ := purego.SyscallN(l.pciGetProperties, uintptr(dev), uintptr(unsafe.Pointer(p)))
	return Result(uint32(r))
}

// Processes returns dev's processes (zesDeviceProcessesGetState), at
// most max; the slice is the Lib's, valid until the next call.
func (l *Lib) Processes(dev Handle, max int) ([]ProcessState, Result) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sc := l.sc
	sc.n = 0
	if r := l.sys(l.processesGetState, uintptr(dev), uintptr(unsafe.Pointer(&sc.n)), 0); r != Success {
		return nil, r
	}
	n := min(int(sc.n), max)
	if n == 0 {
		return nil, Success
	}
	if cap(sc.procs) < n {
		sc.procs = make([]ProcessState, n)
	}
	sc.procs = sc.procs[:n]
	for i := range sc.procs {
		sc.procs[i] = ProcessState{SType: stypeProcessState}
	}
	sc.n = uint32(n)
	r := l.sys(l.processesGetState, uintptr(dev), uintptr(unsafe.Pointer(&sc.n)), uintptr(unsafe.Pointer(&sc.procs[0])))
	return sc.procs[:min(int(sc.n), n)], r
}

// EngineProperties fills p for an engine group.
func (l *Lib) EngineProperties(h Handle, p *EngineProperties) Result {
	*p = EngineProperties{SType: stypeEngineProperties}
	if l.engineGetProperties == 0 {
		return noSymbol
	}
	r, _, _ := purego.SyscallN(l.engineGetProperties, uintptr(h), uintptr(unsafe.Pointer(p)))
	return Result(uint32(r))
}

// EngineActivity fills s for an engine group.
func (l *Lib) EngineActivity(h Handle) (EngineStats, Result) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.sys(l.engineGetActivity, uintptr(h), uintptr(unsafe.Pointer(&l.sc.es)))
	return l.sc.es, r
}

// MemoryProperties fills p for a memory module.
func (l *Lib) MemoryProperties(h Handle, p *MemProperties) Result {
	*p = MemProperties{SType: stypeMemProperties}
	if l.memoryGetProperties == 0 {
		return noSymbol
	}
	r, _, _ := purego.SyscallN(l.memoryGetProperties, uintptr(h), uintptr(unsafe.Pointer(p)))
	return Result(uint32(r))
}

// MemoryState fills s for a memory module.
func (l *Lib) MemoryState(h Handle) (MemState, Result) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sc.ms = MemState{SType: stypeMemState}
	r := l.sys(l.memoryGetState, uintptr(h), uintptr(unsafe.Pointer(&l.sc.ms)))
	return l.sc.ms, r
}

// MemoryBandwidth fills b for a memory module.
func (l *Lib) MemoryBandwidth(h Handle) (MemBandwidth, Result) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.sys(l.memoryGetBandwidth, uintptr(h), uintptr(unsafe.Pointer(&l.sc.mb)))
	return l.sc.mb, r
}

// CardPowerDomain returns the domain of the whole card.
func (l *Lib) CardPowerDomain(dev Handle) (Handle, Result) {
	if l.getCardPowerDomain == 0 {
		return 0, noSymbol
	}
	var h Handle
	r, _, _ := purego.SyscallN(l.getCardPowerDomain, uintptr(dev), uintptr(unsafe.Pointer(&h)))
	return h, Result(uint32(r))
}

// PowerProperties fills p for a power domain.
func (l *Lib) PowerProperties(h Handle, p *PowerProperties) Result {
	*p = PowerProperties{SType: stypePowerProperties}
	if l.powerGetProperties == 0 {
		return noSymbol
	}
	r, _, _ := purego.SyscallN(l.powerGetProperties, uintptr(h), uintptr(unsafe.Pointer(p)))
	return Result(uint32(r))
}

// EnergyCounter fills e for a power domain.
func (l *Lib) EnergyCounter(h Handle) (EnergyCounter, Result) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.sys(l.powerGetEnergyCounter, uintptr(h), uintptr(unsafe.Pointer(&l.sc.ec)))
	return l.sc.ec, r
}

// TemperatureProperties fills p for a sensor.
func (l *Lib) TemperatureProperties(h Handle, p *TempProperties) Result {
	*p = TempProperties{SType: stypeTempProperties}
	if l.temperatureGetProperties == 0 {
		return noSymbol
	}
	r, _, _ := purego.SyscallN(l.temperatureGetProperties, uintptr(h), uintptr(unsafe.Pointer(p)))
	return Result(uint32(r))
}

// Temperature reads a sensor, °C.
func (l *Lib) Temperature(h Handle) (float64, Result) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.sys(l.temperatureGetState, uintptr(h), uintptr(unsafe.Pointer(&l.sc.temp)))
	return l.sc.temp, r
}

// FrequencyProperties fills p for a frequency domain.
func (l *Lib) FrequencyProperties(h Handle, p *FreqProperties) Result {
	*p = FreqProperties{SType: stypeFreqProperties}
	if l.frequencyGetProperties == 0 {
		return noSymbol
	}
	r, _, _ := purego.SyscallN(l.frequencyGetProperties, uintptr(h), uintptr(unsafe.Pointer(p)))
	return Result(uint32(r))
}

// FrequencyState fills s for a frequency domain.
func (l *Lib) FrequencyState(h Handle) (FreqState, Result) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sc.fs = FreqState{SType: stypeFreqState}
	r := l.sys(l.frequencyGetState, uintptr(h), uintptr(unsafe.Pointer(&l.sc.fs)))
	return l.sc.fs, r
}

// String returns a fixed-size C string field.
func String(b []byte) string { return dynlib.BufString(b) }

// Err is a failed call, for messages.
func Err(fn string, r Result) error { return fmt.Errorf("%s: %s", fn, r) }

// Close does not unload the loader: Level Zero has no call that undoes
// zeInit, and the loader keeps its drivers and its one-time
// initialisation for the process's life; a later Open finds it loaded.
func (l *Lib) Close() error { return nil }
