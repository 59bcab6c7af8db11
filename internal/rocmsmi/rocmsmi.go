// Package rocmsmi binds the ROCm SMI library (librocm_smi64.so.1) through
// purego: no cgo, so it builds with CGO_ENABLED=0 as well as 1.
//
// The binding follows the ROCm 5.2 header (rocm_smi/rocm_smi.h of
// librocm-smi-dev 5.2.3): the function signatures below, and the structs
// Frequencies and ErrorCount, whose layouts a test checks against a C
// library built from the same declarations.
//
// Every symbol is looked up with dlsym before it is bound. A library that
// lacks an optional function loses only that function: its method returns
// StatusNoSymbol and never calls into the library. Open fails only when a
// required function (init, shutdown, device count, identity) is missing.
package rocmsmi

import (
	"fmt"
	"strconv"

	"github.com/xpuscope/xpuscope/internal/dynlib"
)

// DefaultLibrary is the soname ROCm installs (Debian: librocm-smi64-1).
const DefaultLibrary = "librocm_smi64.so.1"

// Status is an rsmi_status_t.
type Status uint32

// rsmi_status_t values, in the header's order.
const (
	StatusSuccess Status = iota
	StatusInvalidArgs
	StatusNotSupported
	StatusFileError
	StatusPermission
	StatusOutOfResources
	StatusInternalException
	StatusInputOutOfBounds
	StatusInitError
	StatusNotYetImplemented
	StatusNotFound
	StatusInsufficientSize
	StatusInterrupt
	StatusUnexpectedSize
	StatusNoData
	StatusUnexpectedData
	StatusBusy
	StatusRefcountOverflow
	StatusUnknownError Status = 0xFFFFFFFF
)

// StatusNoSymbol is not a ROCm SMI status: the loaded library lacks the
// function, so the method did not call anything.
const StatusNoSymbol Status = 0xFFFFFFFE

var statusNames = [...]string{
	StatusSuccess:           "RSMI_STATUS_SUCCESS",
	StatusInvalidArgs:       "RSMI_STATUS_INVALID_ARGS",
	StatusNotSupported:      "RSMI_STATUS_NOT_SUPPORTED",
	StatusFileError:         "RSMI_STATUS_FILE_ERROR",
	StatusPermission:        "RSMI_STATUS_PERMISSION",
	StatusOutOfResources:    "RSMI_STATUS_OUT_OF_RESOURCES",
	StatusInternalException: "RSMI_STATUS_INTERNAL_EXCEPTION",
	StatusInputOutOfBounds:  "RSMI_STATUS_INPUT_OUT_OF_BOUNDS",
	StatusInitError:         "RSMI_STATUS_INIT_ERROR",
	StatusNotYetImplemented: "RSMI_STATUS_NOT_YET_IMPLEMENTED",
	StatusNotFound:          "RSMI_STATUS_NOT_FOUND",
	StatusInsufficientSize:  "RSMI_STATUS_INSUFFICIENT_SIZE",
	StatusInterrupt:         "RSMI_STATUS_INTERRUPT",
	StatusUnexpectedSize:    "RSMI_STATUS_UNEXPECTED_SIZE",
	StatusNoData:            "RSMI_STATUS_NO_DATA",
	StatusUnexpectedData:    "RSMI_STATUS_UNEXPECTED_DATA",
	StatusBusy:              "RSMI_STATUS_BUSY",
	StatusRefcountOverflow:  "RSMI_STATUS_REFCOUNT_OVERFLOW",
}

// String is the status's name in the header (RSMI_STATUS_INIT_ERROR), a
// stable, low-cardinality label.
func (s Status) String() string {
	switch {
	case int(s) < len(statusNames):
		return statusNames[s]
	case s == StatusUnknownError:
		return "RSMI_STATUS_UNKNOWN_ERROR"
	case s == StatusNoSymbol:
		return "SYMBOL_MISSING"
	}
	return "RSMI_STATUS_" + strconv.FormatUint(uint64(s), 10)
}

// MemoryType is an rsmi_memory_type_t.
type MemoryType uint32

// MemVRAM is RSMI_MEM_TYPE_VRAM.
const MemVRAM MemoryType = 0

// TempSensor is an rsmi_temperature_type_t.
type TempSensor uint32

// Temperature sensors.
const (
	TempEdge     TempSensor = 0 // RSMI_TEMP_TYPE_EDGE
	TempJunction TempSensor = 1 // RSMI_TEMP_TYPE_JUNCTION (hotspot)
	TempMemory   TempSensor = 2 // RSMI_TEMP_TYPE_MEMORY (VRAM)
)

// tempCurrent is RSMI_TEMP_CURRENT, the only temperature metric read.
const tempCurrent uint32 = 0

// ClockType is an rsmi_clk_type_t.
type ClockType uint32

// Clocks.
const (
	ClockSystem ClockType = 0 // RSMI_CLK_TYPE_SYS (SCLK, the shader clock)
	ClockMemory ClockType = 4 // RSMI_CLK_TYPE_MEM (MCLK)
)

// GPUBlock is an rsmi_gpu_block_t: one bit per block. The C enum holds
// RSMI_GPU_BLOCK_RESERVED = 1<<63, so it is 64 bits wide and is passed as
// such.
type GPUBlock uint64

// The blocks that count ECC errors, RSMI_GPU_BLOCK_UMC … _FUSE.
const (
	BlockFirst GPUBlock = 1 << 0  // RSMI_GPU_BLOCK_UMC
	BlockLast  GPUBlock = 1 << 13 // RSMI_GPU_BLOCK_FUSE
)

// maxFrequencies is RSMI_MAX_NUM_FREQUENCIES.
const maxFrequencies = 32

// Frequencies is rsmi_frequencies_t.
type Frequencies struct {
	NumSupported uint32
	Current      uint32
	Frequency    [maxFrequencies]uint64 // Hz
}

// CurrentHz returns the current frequency, or false when the library
// marked none current or the indices are out of range.
func (f *Frequencies) CurrentHz() (uint64, bool) {
	if f.NumSupported > maxFrequencies || f.Current >= f.NumSupported {
		return 0, false
	}
	return f.Frequency[f.Current], true
}

// ErrorCount is rsmi_error_count_t.
type ErrorCount struct {
	Correctable   uint64
	Uncorrectable uint64
}

// swCompDriver is RSMI_SW_COMP_DRIVER.
const swCompDriver uint32 = 0

// Lib is a loaded ROCm SMI library. Its methods are safe to call from one
// goroutine at a time; ROCm SMI serialises per device itself.
type Lib struct {
	*dynlib.Library

	init                     func(flags uint64) Status
	shutDown                 func() Status
	numMonitorDevices        func(n *uint32) Status
	statusString             func(s Status, str **byte) Status
	devNameGet               func(dv uint32, name *byte, n uintptr) Status
	devPCIIDGet              func(dv uint32, bdfid *uint64) Status
	devUniqueIDGet           func(dv uint32, id *uint64) Status
	devBusyPercentGet        func(dv uint32, pct *uint32) Status
	devMemoryBusyPercentGet  func(dv uint32, pct *uint32) Status
	devMemoryTotalGet        func(dv uint32, t MemoryType, total *uint64) Status
	devMemoryUsageGet        func(dv uint32, t MemoryType, used *uint64) Status
	devTempMetricGet         func(dv uint32, sensor TempSensor, metric uint32, milliC *int64) Status
	devCurrentSocketPowerGet func(dv uint32, microW *uint64) Status
	devPowerAveGet           func(dv, sensor uint32, microW *uint64) Status
	devPowerCapGet           func(dv, sensor uint32, microW *uint64) Status
	devEnergyCountGet        func(dv uint32, count *uint64, resolution *float32, timestamp *uint64) Status
	devFanSpeedGet           func(dv, sensor uint32, speed *int64) Status
	devFanSpeedMaxGet        func(dv, sensor uint32, max *uint64) Status
	devGPUClkFreqGet         func(dv uint32, clk ClockType, f *Frequencies) Status
	devPCIThroughputGet      func(dv uint32, sent, received, maxPktSz *uint64) Status
	devECCCountGet           func(dv uint32, block GPUBlock, ec *ErrorCount) Status
	versionStrGet            func(comp uint32, s *byte, n uint32) Status
}

// Symbol names, for callers that report what a library lacks.
const (
	SymCurrentSocketPower = "rsmi_dev_current_socket_power_get"
	SymPowerAve           = "rsmi_dev_power_ave_get"
	SymPowerCap           = "rsmi_dev_power_cap_get"
	SymEnergyCount        = "rsmi_dev_energy_count_get"
	SymBusyPercent        = "rsmi_dev_busy_percent_get"
	SymMemoryBusyPercent  = "rsmi_dev_memory_busy_percent_get"
	SymMemoryTotal        = "rsmi_dev_memory_total_get"
	SymMemoryUsage        = "rsmi_dev_memory_usage_get"
	SymTempMetric         = "rsmi_dev_temp_metric_get"
	SymFanSpeed           = "rsmi_dev_fan_speed_get"
	SymFanSpeedMax        = "rsmi_dev_fan_speed_max_get"
	SymGPUClkFreq         = "rsmi_dev_gpu_clk_freq_get"
	SymPCIThroughput      = "rsmi_dev_pci_throughput_get"
	SymECCCount           = "rsmi_dev_ecc_count_get"
	SymUniqueID           = "rsmi_dev_unique_id_get"
	SymVersionStr         = "rsmi_version_str_get"
	SymStatusString       = "rsmi_status_string"
)

func (l *Lib) bindings() []dynlib.Binding {
	return []dynlib.Binding{
		{Name: "rsmi_init", Fn: &l.init, Required: true},
		{Name: "rsmi_shut_down", Fn: &l.shutDown, Required: true},
		{Name: "rsmi_num_monitor_devices", Fn: &l.numMonitorDevices, Required: true},
		{Name: "rsmi_dev_name_get", Fn: &l.devNameGet, Required: true},
		{Name: "rsmi_dev_pci_id_get", Fn: &l.devPCIIDGet, Required: true},
		{Name: SymStatusString, Fn: &l.statusString},
		{Name: SymUniqueID, Fn: &l.devUniqueIDGet},
		{Name: SymBusyPercent, Fn: &l.devBusyPercentGet},
		{Name: SymMemoryBusyPercent, Fn: &l.devMemoryBusyPercentGet},
		{Name: SymMemoryTotal, Fn: &l.devMemoryTotalGet},
		{Name: SymMemoryUsage, Fn: &l.devMemoryUsageGet},
		{Name: SymTempMetric, Fn: &l.devTempMetricGet},
		{Name: SymCurrentSocketPower, Fn: &l.devCurrentSocketPowerGet},
		{Name: SymPowerAve, Fn: &l.devPowerAveGet},
		{Name: SymPowerCap, Fn: &l.devPowerCapGet},
		{Name: SymEnergyCount, Fn: &l.devEnergyCountGet},
		{Name: SymFanSpeed, Fn: &l.devFanSpeedGet},
		{Name: SymFanSpeedMax, Fn: &l.devFanSpeedMaxGet},
		{Name: SymGPUClkFreq, Fn: &l.devGPUClkFreqGet},
		{Name: SymPCIThroughput, Fn: &l.devPCIThroughputGet},
		{Name: SymECCCount, Fn: &l.devECCCountGet},
		{Name: SymVersionStr, Fn: &l.versionStrGet},
	}
}

// Open loads the library at path (a soname the loader searches for, or a
// path) and binds its functions. It does not call rsmi_init.
func Open(path string) (*Lib, error) {
	l := &Lib{}
	lib, err := dynlib.Open(path, "ROCm SMI", l.bindings())
	if err != nil {
		return nil, err
	}
	l.Library = lib
	return l, nil
}

// Init calls rsmi_init(0).
func (l *Lib) Init() Status { return l.init(0) }

// Shutdown calls rsmi_shut_down.
func (l *Lib) Shutdown() Status { return l.shutDown() }

// StatusText is the library's own description of s (rsmi_status_string),
// or "" when the library has none.
func (l *Lib) StatusText(s Status) string {
	if l.statusString == nil {
		return ""
	}
	var p *byte
	if l.statusString(s, &p) != StatusSuccess || p == nil {
		return ""
	}
	return dynlib.CString(p, maxStatusText)
}

// maxStatusText bounds a status description read from C memory.
const maxStatusText = 512

// nameLen is the buffer for names and version strings; ROCm SMI truncates
// to it (RSMI_STATUS_INSUFFICIENT_SIZE, still with the prefix written).
const nameLen = 256

// NumDevices calls rsmi_num_monitor_devices.
func (l *Lib) NumDevices() (uint32, Status) {
	var n uint32
	return n, l.numMonitorDevices(&n)
}

// Name calls rsmi_dev_name_get. A name longer than the buffer comes back
// truncated with StatusSuccess.
func (l *Lib) Name(dv uint32) (string, Status) {
	var b [nameLen]byte
	st := l.devNameGet(dv, &b[0], uintptr(len(b)))
	if st == StatusInsufficientSize {
		st = StatusSuccess
	}
	return dynlib.BufString(b[:]), st
}

// PCIID calls rsmi_dev_pci_id_get: the BDFID, see PCIAddress.
func (l *Lib) PCIID(dv uint32) (uint64, Status) {
	var v uint64
	return v, l.devPCIIDGet(dv, &v)
}

// PCIAddress formats a BDFID, ((domain & 0xffffffff) << 32) | (bus << 8) |
// (device << 3) | function, in sysfs form: 0000:03:00.0.
func PCIAddress(bdfid uint64) string {
	return fmt.Sprintf("%04x:%02x:%02x.%x", bdfid>>32, bdfid>>8&0xff, bdfid>>3&0x1f, bdfid&0x7)
}

// UniqueID calls rsmi_dev_unique_id_get.
func (l *Lib) UniqueID(dv uint32) (uint64, Status) {
	if l.devUniqueIDGet == nil {
		return 0, StatusNoSymbol
	}
	var v uint64
	return v, l.devUniqueIDGet(dv, &v)
}

// BusyPercent calls rsmi_dev_busy_percent_get.
func (l *Lib) BusyPercent(dv uint32) (uint32, Status) {
	if l.devBusyPercentGet == nil {
		return 0, StatusNoSymbol
	}
	var v uint32
	return v, l.devBusyPercentGet(dv, &v)
}

// MemoryBusyPercent calls rsmi_dev_memory_busy_percent_get.
func (l *Lib) MemoryBusyPercent(dv uint32) (uint32, Status) {
	if l.devMemoryBusyPercentGet == nil {
		return 0, StatusNoSymbol
	}
	var v uint32
	return v, l.devMemoryBusyPercentGet(dv, &v)
}

// MemoryTotal calls rsmi_dev_memory_total_get: bytes.
func (l *Lib) MemoryTotal(dv uint32, t MemoryType) (uint64, Status) {
	if l.devMemoryTotalGet == nil {
		return 0, StatusNoSymbol
	}
	var v uint64
	return v, l.devMemoryTotalGet(dv, t, &v)
}

// MemoryUsage calls rsmi_dev_memory_usage_get: bytes.
func (l *Lib) MemoryUsage(dv uint32, t MemoryType) (uint64, Status) {
	if l.devMemoryUsageGet == nil {
		return 0, StatusNoSymbol
	}
	var v uint64
	return v, l.devMemoryUsageGet(dv, t, &v)
}

// Temperature calls rsmi_dev_temp_metric_get for the sensor's current
// value: millidegrees Celsius.
func (l *Lib) Temperature(dv uint32, sensor TempSensor) (int64, Status) {
	if l.devTempMetricGet == nil {
		return 0, StatusNoSymbol
	}
	var v int64
	return v, l.devTempMetricGet(dv, sensor, tempCurrent, &v)
}

// CurrentSocketPower calls rsmi_dev_current_socket_power_get (newer ROCm
// releases; 5.2 lacks it): microwatts.
func (l *Lib) CurrentSocketPower(dv uint32) (uint64, Status) {
	if l.devCurrentSocketPowerGet == nil {
		return 0, StatusNoSymbol
	}
	var v uint64
	return v, l.devCurrentSocketPowerGet(dv, &v)
}

// PowerAverage calls rsmi_dev_power_ave_get for sensor 0: microwatts.
func (l *Lib) PowerAverage(dv uint32) (uint64, Status) {
	if l.devPowerAveGet == nil {
		return 0, StatusNoSymbol
	}
	var v uint64
	return v, l.devPowerAveGet(dv, 0, &v)
}

// PowerCap calls rsmi_dev_power_cap_get for sensor 0: microwatts.
func (l *Lib) PowerCap(dv uint32) (uint64, Status) {
	if l.devPowerCapGet == nil {
		return 0, StatusNoSymbol
	}
	var v uint64
	return v, l.devPowerCapGet(dv, 0, &v)
}

// EnergyCount calls rsmi_dev_energy_count_get: the accumulator and its
// resolution in microjoules per count.
func (l *Lib) EnergyCount(dv uint32) (count uint64, resolutionMicroJ float32, st Status) {
	if l.devEnergyCountGet == nil {
		return 0, 0, StatusNoSymbol
	}
	var ts uint64
	st = l.devEnergyCountGet(dv, &count, &resolutionMicroJ, &ts)
	return count, resolutionMicroJ, st
}

// FanSpeed calls rsmi_dev_fan_speed_get for sensor 0: a value between 0
// and FanSpeedMax.
func (l *Lib) FanSpeed(dv uint32) (int64, Status) {
	if l.devFanSpeedGet == nil {
		return 0, StatusNoSymbol
	}
	var v int64
	return v, l.devFanSpeedGet(dv, 0, &v)
}

// FanSpeedMax calls rsmi_dev_fan_speed_max_get for sensor 0.
func (l *Lib) FanSpeedMax(dv uint32) (uint64, Status) {
	if l.devFanSpeedMaxGet == nil {
		return 0, StatusNoSymbol
	}
	var v uint64
	return v, l.devFanSpeedMaxGet(dv, 0, &v)
}

// ClockFrequencies calls rsmi_dev_gpu_clk_freq_get into f.
func (l *Lib) ClockFrequencies(dv uint32, clk ClockType, f *Frequencies) Status {
	if l.devGPUClkFreqGet == nil {
		return StatusNoSymbol
	}
	return l.devGPUClkFreqGet(dv, clk, f)
}

// PCIThroughput calls rsmi_dev_pci_throughput_get: what the kernel's
// pcie_bw file counts over one second (it sleeps that second), as ROCm
// SMI names it, sent and received, and the maximum payload size in bytes.
func (l *Lib) PCIThroughput(dv uint32) (sent, received, maxPktSz uint64, st Status) {
	if l.devPCIThroughputGet == nil {
		return 0, 0, 0, StatusNoSymbol
	}
	st = l.devPCIThroughputGet(dv, &sent, &received, &maxPktSz)
	return sent, received, maxPktSz, st
}

// ECCCount calls rsmi_dev_ecc_count_get for one block.
func (l *Lib) ECCCount(dv uint32, block GPUBlock) (ErrorCount, Status) {
	if l.devECCCountGet == nil {
		return ErrorCount{}, StatusNoSymbol
	}
	var ec ErrorCount
	return ec, l.devECCCountGet(dv, block, &ec)
}

// DriverVersion calls rsmi_version_str_get(RSMI_SW_COMP_DRIVER): the
// amdgpu module version, or the kernel release when the module has none.
func (l *Lib) DriverVersion() (string, Status) {
	if l.versionStrGet == nil {
		return "", StatusNoSymbol
	}
	var b [nameLen]byte
	st := l.versionStrGet(swCompDriver, &b[0], uint32(len(b)))
	if st == StatusInsufficientSize {
		st = StatusSuccess
	}
	return dynlib.BufString(b[:]), st
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
