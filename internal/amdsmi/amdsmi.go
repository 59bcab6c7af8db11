// Package amdsmi binds the AMD SMI library of ROCm 6 and later
// (libamd_smi.so) through purego: no cgo, so it builds with CGO_ENABLED=0
// as well as 1.
//
// The signatures below are those of amd_smi/amdsmi.h, the same in every
// ROCm 6 and 7 release for the functions bound. Several structs, though,
// changed layout between releases without a change of soname, and the
// binding reads only what it can place for certain:
//
//   - amdsmi_version_t: {year, major, minor, release, build} up to ROCm 6.4
//     (library 23.x–25.x), {major, minor, release, build} from ROCm 7
//     (library 26 and later). The first word tells which: a year is at
//     most 25, a year-less major at least 26.
//   - amdsmi_power_info_t: the average socket power alone at offset 0
//     (library 23.2), current then average socket power at 0 and 4
//     (library 24.6, ROCm 6.2), a 64-bit socket power first and current
//     and average at 8 and 12 (library 26 and later). The library's
//     header comment says its major version changes with every header
//     change, so year and major name one layout. PowerLayout maps the
//     versions whose header was checked; for any other the layout is
//     unknown, and callers should not read power through this library.
//   - amdsmi_asic_info_t: market_name is the first member in every layout
//     (at least 64 bytes); the members after it moved. Only the name is
//     read, from a buffer larger than any layout.
//   - amdsmi_clk_info_t: the current clock (MHz) is the first member in
//     every layout; amdsmi_frequencies_t gained a leading has_deep_sleep
//     and a longer array, so the binding reads amdsmi_get_clock_info, not
//     amdsmi_get_clk_freq.
//   - amdsmi_error_count_t: correctable then uncorrectable (uint64) first
//     in every layout; the buffer is larger than any layout.
//   - amdsmi_engine_usage_t: gfx, umc and mm activity (uint32) first.
//   - amdsmi_power_cap_info_t: power_cap (uint64, µW) first.
//   - amdsmi_driver_info_t: driver_version (char[64]) first in the 24.6
//     and 26 headers.
//
// Every symbol is looked up with dlsym before it is bound. A library that
// lacks an optional function loses only that function: its method returns
// StatusNoSymbol and never calls into the library. Open fails only when a
// required function (init, shutdown, discovery, PCI address, version) is
// missing.
package amdsmi

import (
	"fmt"
	"strconv"
	"unsafe"

	"github.com/xpuscope/xpuscope/internal/dynlib"
)

// DefaultLibraries are the names tried, in order, when no path is given:
// the unversioned development link ROCm installs, then the sonames of the
// library majors whose layouts the binding knows.
var DefaultLibraries = []string{"libamd_smi.so", "libamd_smi.so.26", "libamd_smi.so.25", "libamd_smi.so.24", "libamd_smi.so.23"}

// Status is an amdsmi_status_t.
type Status uint32

// amdsmi_status_t values.
const (
	StatusSuccess           Status = 0
	StatusInval             Status = 1
	StatusNotSupported      Status = 2
	StatusNotYetImplemented Status = 3
	StatusFailLoadModule    Status = 4
	StatusFailLoadSymbol    Status = 5
	StatusDRMError          Status = 6
	StatusAPIFailed         Status = 7
	StatusTimeout           Status = 8
	StatusRetry             Status = 9
	StatusNoPerm            Status = 10
	StatusInterrupt         Status = 11
	StatusIO                Status = 12
	StatusAddressFault      Status = 13
	StatusFileError         Status = 14
	StatusOutOfResources    Status = 15
	StatusInternalException Status = 16
	StatusInputOutOfBounds  Status = 17
	StatusInitError         Status = 18
	StatusRefcountOverflow  Status = 19
	StatusBusy              Status = 30
	StatusNotFound          Status = 31
	StatusNotInit           Status = 32
	StatusNoSlot            Status = 33
	StatusNoData            Status = 40
	StatusInsufficientSize  Status = 41
	StatusUnexpectedSize    Status = 42
	StatusUnexpectedData    Status = 43
	StatusMapError          Status = 0xFFFFFFFE
	StatusUnknownError      Status = 0xFFFFFFFF
)

// StatusNoSymbol is not an AMD SMI status: the loaded library lacks the
// function, so the method did not call anything.
const StatusNoSymbol Status = 0xFFFFFFFD

var statusNames = map[Status]string{
	StatusSuccess:           "AMDSMI_STATUS_SUCCESS",
	StatusInval:             "AMDSMI_STATUS_INVAL",
	StatusNotSupported:      "AMDSMI_STATUS_NOT_SUPPORTED",
	StatusNotYetImplemented: "AMDSMI_STATUS_NOT_YET_IMPLEMENTED",
	StatusFailLoadModule:    "AMDSMI_STATUS_FAIL_LOAD_MODULE",
	StatusFailLoadSymbol:    "AMDSMI_STATUS_FAIL_LOAD_SYMBOL",
	StatusDRMError:          "AMDSMI_STATUS_DRM_ERROR",
	StatusAPIFailed:         "AMDSMI_STATUS_API_FAILED",
	StatusTimeout:           "AMDSMI_STATUS_TIMEOUT",
	StatusRetry:             "AMDSMI_STATUS_RETRY",
	StatusNoPerm:            "AMDSMI_STATUS_NO_PERM",
	StatusInterrupt:         "AMDSMI_STATUS_INTERRUPT",
	StatusIO:                "AMDSMI_STATUS_IO",
	StatusAddressFault:      "AMDSMI_STATUS_ADDRESS_FAULT",
	StatusFileError:         "AMDSMI_STATUS_FILE_ERROR",
	StatusOutOfResources:    "AMDSMI_STATUS_OUT_OF_RESOURCES",
	StatusInternalException: "AMDSMI_STATUS_INTERNAL_EXCEPTION",
	StatusInputOutOfBounds:  "AMDSMI_STATUS_INPUT_OUT_OF_BOUNDS",
	StatusInitError:         "AMDSMI_STATUS_INIT_ERROR",
	StatusRefcountOverflow:  "AMDSMI_STATUS_REFCOUNT_OVERFLOW",
	StatusBusy:              "AMDSMI_STATUS_BUSY",
	StatusNotFound:          "AMDSMI_STATUS_NOT_FOUND",
	StatusNotInit:           "AMDSMI_STATUS_NOT_INIT",
	StatusNoSlot:            "AMDSMI_STATUS_NO_SLOT",
	StatusNoData:            "AMDSMI_STATUS_NO_DATA",
	StatusInsufficientSize:  "AMDSMI_STATUS_INSUFFICIENT_SIZE",
	StatusUnexpectedSize:    "AMDSMI_STATUS_UNEXPECTED_SIZE",
	StatusUnexpectedData:    "AMDSMI_STATUS_UNEXPECTED_DATA",
	StatusMapError:          "AMDSMI_STATUS_MAP_ERROR",
	StatusUnknownError:      "AMDSMI_STATUS_UNKNOWN_ERROR",
	StatusNoSymbol:          "SYMBOL_MISSING",
}

// String is the status's name in the header (AMDSMI_STATUS_INIT_ERROR), a
// stable, low-cardinality label.
func (s Status) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return "AMDSMI_STATUS_" + strconv.FormatUint(uint64(s), 10)
}

// initAMDGPUs is AMDSMI_INIT_AMD_GPUS.
const initAMDGPUs uint64 = 1 << 1

// MemVRAM is AMDSMI_MEM_TYPE_VRAM.
const MemVRAM uint32 = 0

// TempSensor is an amdsmi_temperature_type_t.
type TempSensor uint32

// Temperature sensors.
const (
	TempEdge    TempSensor = 0 // AMDSMI_TEMPERATURE_TYPE_EDGE
	TempHotspot TempSensor = 1 // AMDSMI_TEMPERATURE_TYPE_HOTSPOT (= _JUNCTION)
	TempVRAM    TempSensor = 2 // AMDSMI_TEMPERATURE_TYPE_VRAM
)

// tempCurrent is AMDSMI_TEMP_CURRENT.
const tempCurrent uint32 = 0

// ClockType is an amdsmi_clk_type_t.
type ClockType uint32

// Clocks.
const (
	ClockSystem ClockType = 0 // AMDSMI_CLK_TYPE_SYS (= _GFX)
	ClockMemory ClockType = 4 // AMDSMI_CLK_TYPE_MEM
)

// Unsupported32 is what AMD SMI writes to a 32-bit struct member the GPU
// does not report (UINT32_MAX); Unsupported16 the activity sentinel
// (UINT16_MAX in a 32-bit member).
const (
	Unsupported32 = 0xFFFFFFFF
	Unsupported16 = 0xFFFF
)

// EngineUsage is the leading part of amdsmi_engine_usage_t, with room for
// every layout (64 bytes).
type EngineUsage struct {
	GfxActivity uint32 // %
	UmcActivity uint32 // %
	MmActivity  uint32 // %
	_           [13]uint32
}

// ErrorCount is the leading part of amdsmi_error_count_t, with room for
// every layout (64 bytes).
type ErrorCount struct {
	Correctable   uint64
	Uncorrectable uint64
	_             [6]uint64
}

// Version is the library version of amdsmi_get_lib_version. Year is 0
// for a library whose version has none (26 and later).
type Version struct {
	Year, Major, Minor, Release uint32
}

func (v Version) String() string {
	if v.Year == 0 {
		return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Release)
	}
	return fmt.Sprintf("%d.%d.%d.%d", v.Year, v.Major, v.Minor, v.Release)
}

// lastYear is the last year-numbered library (ROCm 6.4); from 26 on the
// first word is the major version.
const lastYear = 25

// versionOf decodes the words of an amdsmi_version_t of either layout.
func versionOf(w [4]uint32) Version {
	if w[0] <= lastYear {
		return Version{Year: w[0], Major: w[1], Minor: w[2], Release: w[3]}
	}
	return Version{Major: w[0], Minor: w[1], Release: w[2]}
}

// PowerLayout says where amdsmi_power_info_t keeps the socket power.
type PowerLayout struct {
	Known      bool
	Current    int  // offset of current_socket_power (uint32, W); -1: none
	Average    int  // offset of average_socket_power (uint32, W)
	DriverInfo bool // amdsmi_driver_info_t starts with driver_version[64]
}

// PowerLayout maps a library version to the layout of its
// amdsmi_power_info_t: known only for headers that were checked.
func (v Version) PowerLayout() PowerLayout {
	switch {
	case v.Year == 23 && v.Major == 2:
		return PowerLayout{Known: true, Current: -1, Average: 0}
	case v.Year == 24 && v.Major == 6:
		return PowerLayout{Known: true, Current: 0, Average: 4, DriverInfo: true}
	case v.Year == 0 && v.Major >= 26:
		return PowerLayout{Known: true, Current: 8, Average: 12, DriverInfo: true}
	}
	return PowerLayout{}
}

// Handle is an amdsmi_processor_handle or amdsmi_socket_handle.
type Handle uintptr

// Lib is a loaded AMD SMI library. Its methods are safe to call from one
// goroutine at a time.
type Lib struct {
	*dynlib.Library
	layout PowerLayout

	init                func(flags uint64) Status
	shutDown            func() Status
	getLibVersion       func(v *rawVersion) Status
	getSocketHandles    func(n *uint32, h *Handle) Status
	getProcessorHandles func(s Handle, n *uint32, h *Handle) Status
	getGPUDeviceBDF     func(h Handle, bdf *uint64) Status
	statusCodeToString  func(s Status, str **byte) Status
	getGPUAsicInfo      func(h Handle, info *byte) Status
	getGPUDriverInfo    func(h Handle, info *byte) Status
	getGPUActivity      func(h Handle, u *EngineUsage) Status
	getGPUMemoryTotal   func(h Handle, t uint32, v *uint64) Status
	getGPUMemoryUsage   func(h Handle, t uint32, v *uint64) Status
	getTempMetric       func(h Handle, sensor TempSensor, metric uint32, v *int64) Status
	getPowerInfo        func(h Handle, info *uint64) Status
	getPowerCapInfo     func(h Handle, sensor uint32, info *uint64) Status
	getEnergyCount      func(h Handle, energy *uint64, resolution *float32, ts *uint64) Status
	getGPUFanSpeed      func(h Handle, sensor uint32, v *int64) Status
	getGPUFanSpeedMax   func(h Handle, sensor uint32, v *uint64) Status
	getClockInfo        func(h Handle, clk ClockType, info *uint32) Status
	getGPUTotalECCCount func(h Handle, ec *ErrorCount) Status
}

// rawVersion has room for either amdsmi_version_t layout: four words, then
// the build string pointer (at offset 16 in both).
type rawVersion struct {
	w     [4]uint32
	build uintptr
	_     [4]uint64
}

// Symbol names, for callers that report what a library lacks.
const (
	SymStatusCodeToString  = "amdsmi_status_code_to_string"
	SymGPUAsicInfo         = "amdsmi_get_gpu_asic_info"
	SymGPUDriverInfo       = "amdsmi_get_gpu_driver_info"
	SymGPUActivity         = "amdsmi_get_gpu_activity"
	SymGPUMemoryTotal      = "amdsmi_get_gpu_memory_total"
	SymGPUMemoryUsage      = "amdsmi_get_gpu_memory_usage"
	SymTempMetric          = "amdsmi_get_temp_metric"
	SymPowerInfo           = "amdsmi_get_power_info"
	SymPowerCapInfo        = "amdsmi_get_power_cap_info"
	SymEnergyCount         = "amdsmi_get_energy_count"
	SymGPUFanSpeed         = "amdsmi_get_gpu_fan_speed"
	SymGPUFanSpeedMax      = "amdsmi_get_gpu_fan_speed_max"
	SymClockInfo           = "amdsmi_get_clock_info"
	SymGPUTotalECCCount    = "amdsmi_get_gpu_total_ecc_count"
	SymInit                = "amdsmi_init"
	SymGetLibVersion       = "amdsmi_get_lib_version"
	SymGetSocketHandles    = "amdsmi_get_socket_handles"
	SymGetProcessorHandles = "amdsmi_get_processor_handles"
	SymGPUDeviceBDF        = "amdsmi_get_gpu_device_bdf"
)

func (l *Lib) bindings() []dynlib.Binding {
	return []dynlib.Binding{
		{Name: SymInit, Fn: &l.init, Required: true},
		{Name: "amdsmi_shut_down", Fn: &l.shutDown, Required: true},
		{Name: SymGetLibVersion, Fn: &l.getLibVersion, Required: true},
		{Name: SymGetSocketHandles, Fn: &l.getSocketHandles, Required: true},
		{Name: SymGetProcessorHandles, Fn: &l.getProcessorHandles, Required: true},
		{Name: SymGPUDeviceBDF, Fn: &l.getGPUDeviceBDF, Required: true},
		{Name: SymStatusCodeToString, Fn: &l.statusCodeToString},
		{Name: SymGPUAsicInfo, Fn: &l.getGPUAsicInfo},
		{Name: SymGPUDriverInfo, Fn: &l.getGPUDriverInfo},
		{Name: SymGPUActivity, Fn: &l.getGPUActivity},
		{Name: SymGPUMemoryTotal, Fn: &l.getGPUMemoryTotal},
		{Name: SymGPUMemoryUsage, Fn: &l.getGPUMemoryUsage},
		{Name: SymTempMetric, Fn: &l.getTempMetric},
		{Name: SymPowerInfo, Fn: &l.getPowerInfo},
		{Name: SymPowerCapInfo, Fn: &l.getPowerCapInfo},
		{Name: SymEnergyCount, Fn: &l.getEnergyCount},
		{Name: SymGPUFanSpeed, Fn: &l.getGPUFanSpeed},
		{Name: SymGPUFanSpeedMax, Fn: &l.getGPUFanSpeedMax},
		{Name: SymClockInfo, Fn: &l.getClockInfo},
		{Name: SymGPUTotalECCCount, Fn: &l.getGPUTotalECCCount},
	}
}

// Open loads the library at path (a soname the loader searches for, or a
// path) and binds its functions. It does not call amdsmi_init.
func Open(path string) (*Lib, error) {
	l := &Lib{}
	lib, err := dynlib.Open(path, "AMD SMI", l.bindings())
	if err != nil {
		return nil, err
	}
	l.Library = lib
	if v, st := l.Version(); st == StatusSuccess {
		l.layout = v.PowerLayout()
	}
	return l, nil
}

// Version calls amdsmi_get_lib_version (which needs no amdsmi_init).
func (l *Lib) Version() (Version, Status) {
	var raw rawVersion
	st := l.getLibVersion(&raw)
	return versionOf(raw.w), st
}

// Layout is the power layout of the library's version; Known is false
// when the version is not one whose header the binding was checked
// against.
func (l *Lib) Layout() PowerLayout { return l.layout }

// Init calls amdsmi_init(AMDSMI_INIT_AMD_GPUS).
func (l *Lib) Init() Status { return l.init(initAMDGPUs) }

// Shutdown calls amdsmi_shut_down.
func (l *Lib) Shutdown() Status { return l.shutDown() }

// StatusText is the library's own description of s
// (amdsmi_status_code_to_string), or "" when the library has none.
func (l *Lib) StatusText(s Status) string {
	if l.statusCodeToString == nil {
		return ""
	}
	var p *byte
	if l.statusCodeToString(s, &p) != StatusSuccess || p == nil {
		return ""
	}
	return dynlib.CString(p, maxStatusText)
}

// maxStatusText bounds a status description read from C memory.
const maxStatusText = 512

// GPUs lists the processor handles of every socket: the AMD GPUs, since
// Init asks for AMD GPUs only. Both calls count first, then fill.
func (l *Lib) GPUs() ([]Handle, string, Status) {
	var n uint32
	if st := l.getSocketHandles(&n, nil); st != StatusSuccess {
		return nil, SymGetSocketHandles, st
	}
	if n == 0 {
		return nil, "", StatusSuccess
	}
	sockets := make([]Handle, n)
	if st := l.getSocketHandles(&n, &sockets[0]); st != StatusSuccess {
		return nil, SymGetSocketHandles, st
	}
	var gpus []Handle
	for _, s := range sockets[:min(int(n), len(sockets))] {
		var m uint32
		if st := l.getProcessorHandles(s, &m, nil); st != StatusSuccess {
			return nil, SymGetProcessorHandles, st
		}
		if m == 0 {
			continue
		}
		hs := make([]Handle, m)
		if st := l.getProcessorHandles(s, &m, &hs[0]); st != StatusSuccess {
			return nil, SymGetProcessorHandles, st
		}
		gpus = append(gpus, hs[:min(int(m), len(hs))]...)
	}
	return gpus, "", StatusSuccess
}

// BDF calls amdsmi_get_gpu_device_bdf: the amdsmi_bdf_t as one integer,
// see PCIAddress.
func (l *Lib) BDF(h Handle) (uint64, Status) {
	var v uint64
	return v, l.getGPUDeviceBDF(h, &v)
}

// PCIAddress formats an amdsmi_bdf_t (function_number:3, device_number:5,
// bus_number:8, domain_number:48, from the low bit) in sysfs form:
// 0000:03:00.0.
func PCIAddress(bdf uint64) string {
	return fmt.Sprintf("%04x:%02x:%02x.%x", bdf>>16, bdf>>8&0xff, bdf>>3&0x1f, bdf&0x7)
}

// infoLen is the buffer for amdsmi_asic_info_t and amdsmi_driver_info_t:
// larger than any layout.
const infoLen = 4096

// nameLen bounds the strings read from those structs: AMDSMI_MAX_STRING_LENGTH,
// the smallest their first member has been.
const nameLen = 64

// MarketName calls amdsmi_get_gpu_asic_info for market_name.
func (l *Lib) MarketName(h Handle) (string, Status) {
	if l.getGPUAsicInfo == nil {
		return "", StatusNoSymbol
	}
	b := make([]byte, infoLen)
	st := l.getGPUAsicInfo(h, &b[0])
	return dynlib.BufString(b[:nameLen]), st
}

// DriverVersion calls amdsmi_get_gpu_driver_info for driver_version;
// StatusNotSupported where the layout of the library's version is not
// known to start with it.
func (l *Lib) DriverVersion(h Handle) (string, Status) {
	if l.getGPUDriverInfo == nil {
		return "", StatusNoSymbol
	}
	if !l.layout.DriverInfo {
		return "", StatusNotSupported
	}
	b := make([]byte, infoLen)
	st := l.getGPUDriverInfo(h, &b[0])
	return dynlib.BufString(b[:nameLen]), st
}

// Activity calls amdsmi_get_gpu_activity: percentages, Unsupported16 (or
// Unsupported32) where the GPU has none.
func (l *Lib) Activity(h Handle) (EngineUsage, Status) {
	if l.getGPUActivity == nil {
		return EngineUsage{}, StatusNoSymbol
	}
	var u EngineUsage
	return u, l.getGPUActivity(h, &u)
}

// MemoryTotal calls amdsmi_get_gpu_memory_total for VRAM: bytes.
func (l *Lib) MemoryTotal(h Handle) (uint64, Status) {
	if l.getGPUMemoryTotal == nil {
		return 0, StatusNoSymbol
	}
	var v uint64
	return v, l.getGPUMemoryTotal(h, MemVRAM, &v)
}

// MemoryUsage calls amdsmi_get_gpu_memory_usage for VRAM: bytes.
func (l *Lib) MemoryUsage(h Handle) (uint64, Status) {
	if l.getGPUMemoryUsage == nil {
		return 0, StatusNoSymbol
	}
	var v uint64
	return v, l.getGPUMemoryUsage(h, MemVRAM, &v)
}

// Temperature calls amdsmi_get_temp_metric for the sensor's current
// value: degrees Celsius (AMD SMI divides ROCm SMI's millidegrees by 1000).
func (l *Lib) Temperature(h Handle, sensor TempSensor) (int64, Status) {
	if l.getTempMetric == nil {
		return 0, StatusNoSymbol
	}
	var v int64
	return v, l.getTempMetric(h, sensor, tempCurrent, &v)
}

// Power calls amdsmi_get_power_info: the current and average socket power,
// watts, each Unsupported32 where the GPU (or, for current, the layout)
// has none. StatusNotSupported where the library's layout is unknown.
func (l *Lib) Power(h Handle) (current, average uint32, st Status) {
	if l.getPowerInfo == nil {
		return 0, 0, StatusNoSymbol
	}
	if !l.layout.Known {
		return 0, 0, StatusNotSupported
	}
	var b [64]uint64 // larger than any layout (192 bytes in 26)
	if st = l.getPowerInfo(h, &b[0]); st != StatusSuccess {
		return 0, 0, st
	}
	at := func(off int) uint32 { return *(*uint32)(unsafe.Add(unsafe.Pointer(&b[0]), off)) }
	current = Unsupported32
	if l.layout.Current >= 0 {
		current = at(l.layout.Current)
	}
	return current, at(l.layout.Average), StatusSuccess
}

// PowerCap calls amdsmi_get_power_cap_info for sensor 0: power_cap, µW.
func (l *Lib) PowerCap(h Handle) (uint64, Status) {
	if l.getPowerCapInfo == nil {
		return 0, StatusNoSymbol
	}
	var b [16]uint64 // amdsmi_power_cap_info_t is 64 bytes
	st := l.getPowerCapInfo(h, 0, &b[0])
	return b[0], st
}

// EnergyCount calls amdsmi_get_energy_count: the accumulator and its
// resolution in microjoules per count.
func (l *Lib) EnergyCount(h Handle) (count uint64, resolutionMicroJ float32, st Status) {
	if l.getEnergyCount == nil {
		return 0, 0, StatusNoSymbol
	}
	var ts uint64
	st = l.getEnergyCount(h, &count, &resolutionMicroJ, &ts)
	return count, resolutionMicroJ, st
}

// FanSpeed calls amdsmi_get_gpu_fan_speed for sensor 0: a value between
// 0 and FanSpeedMax.
func (l *Lib) FanSpeed(h Handle) (int64, Status) {
	if l.getGPUFanSpeed == nil {
		return 0, StatusNoSymbol
	}
	var v int64
	return v, l.getGPUFanSpeed(h, 0, &v)
}

// FanSpeedMax calls amdsmi_get_gpu_fan_speed_max for sensor 0.
func (l *Lib) FanSpeedMax(h Handle) (uint64, Status) {
	if l.getGPUFanSpeedMax == nil {
		return 0, StatusNoSymbol
	}
	var v uint64
	return v, l.getGPUFanSpeedMax(h, 0, &v)
}

// ClockMHz calls amdsmi_get_clock_info: the current clock, MHz
// (Unsupported32 where there is none).
func (l *Lib) ClockMHz(h Handle, clk ClockType) (uint32, Status) {
	if l.getClockInfo == nil {
		return 0, StatusNoSymbol
	}
	var b [16]uint32 // amdsmi_clk_info_t is 32 bytes
	st := l.getClockInfo(h, clk, &b[0])
	return b[0], st
}

// TotalECCCount calls amdsmi_get_gpu_total_ecc_count: the GPU's
// correctable and uncorrectable errors, summed over its blocks.
func (l *Lib) TotalECCCount(h Handle) (ErrorCount, Status) {
	if l.getGPUTotalECCCount == nil {
		return ErrorCount{}, StatusNoSymbol
	}
	var ec ErrorCount
	return ec, l.getGPUTotalECCCount(h, &ec)
}

// ErrStatus is a failed call, for errors.As.
type ErrStatus struct {
	Func   string
	Status Status
	Text   string // the library's description; may be empty
}

func (e *ErrStatus) Error() string {
	if e.Text == "" {
		return fmt.Sprintf("%s: %s (%d)", e.Func, e.Status, uint32(e.Status))
	}
	return fmt.Sprintf("%s: %s (%d): %s", e.Func, e.Status, uint32(e.Status), e.Text)
}

// Err returns nil for StatusSuccess and an *ErrStatus naming fn otherwise.
func (l *Lib) Err(fn string, s Status) error {
	if s == StatusSuccess {
		return nil
	}
	return &ErrStatus{Func: fn, Status: s, Text: l.StatusText(s)}
}
