// Package rdc binds AMD's ROCm Data Center tool library (RDC) through
// purego: no cgo, so it builds with CGO_ENABLED=0 as well as 1.
//
// It binds librdc_bootstrap.so, which RDC's applications link: the
// bootstrap loads librdc.so for an embedded agent (rdc_start_embedded) or
// librdc_client.so for rdcd. It binds what the gpu Source needs: the
// embedded agent, the GPUs and their names, GPU and field groups, field
// watches, and rdc_field_get_latest_value, which fills rdc_field_value.
//
// Every constant, field id and struct layout below is copied from RDC's
// public header, include/rdc/rdc.h (ROCm's rocm-systems repository,
// projects/rdc, commit 1466fc7, which has RDC_FI_PROF_SM_ACTIVE; the ids
// below it are the same in earlier releases). A test checks the layouts
// against a C library built from the header's declarations
// (testdata/fakerdc.c).
//
// Every symbol is looked up with dlsym before it is bound; a library that
// lacks an optional function (rdc_status_string) loses only that.
package rdc

import (
	"fmt"
	"math"
	"strconv"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/xpuscope/xpuscope/internal/dynlib"
)

// DefaultLibraries are the bootstrap library's names, tried in order
// (RDC 1.x of ROCm 6 and later, then 0.x), in the loader path and in
// DefaultDir.
var DefaultLibraries = []string{"librdc_bootstrap.so.1", "librdc_bootstrap.so", "librdc_bootstrap.so.0"}

// DefaultDir is where ROCm installs RDC.
const DefaultDir = "/opt/rocm/lib"

// Status is an rdc_status_t.
type Status uint32

// rdc_status_t values (rdc.h).
const (
	OK              Status = 0  // RDC_ST_OK
	NotSupported    Status = 1  // RDC_ST_NOT_SUPPORTED
	FailLoadModule  Status = 3  // RDC_ST_FAIL_LOAD_MODULE
	BadParameter    Status = 5  // RDC_ST_BAD_PARAMETER
	NotFound        Status = 6  // RDC_ST_NOT_FOUND
	MaxLimit        Status = 10 // RDC_ST_MAX_LIMIT
	InsuffResources Status = 11 // RDC_ST_INSUFF_RESOURCES
	NoData          Status = 13 // RDC_ST_NO_DATA
	PermError       Status = 14 // RDC_ST_PERM_ERROR
	UnknownError    Status = 0xFFFFFFFF
)

// NoSymbol is not an RDC status: the loaded library lacks the function.
const NoSymbol Status = 0xFFFFFFFE

var statusNames = [...]string{
	"RDC_ST_OK",
	"RDC_ST_NOT_SUPPORTED",
	"RDC_ST_SMI_ERROR",
	"RDC_ST_FAIL_LOAD_MODULE",
	"RDC_ST_INVALID_HANDLER",
	"RDC_ST_BAD_PARAMETER",
	"RDC_ST_NOT_FOUND",
	"RDC_ST_CONFLICT",
	"RDC_ST_CLIENT_ERROR",
	"RDC_ST_ALREADY_EXIST",
	"RDC_ST_MAX_LIMIT",
	"RDC_ST_INSUFF_RESOURCES",
	"RDC_ST_FILE_ERROR",
	"RDC_ST_NO_DATA",
	"RDC_ST_PERM_ERROR",
	"RDC_ST_CORRUPTED_EEPROM",
	"RDC_ST_DISABLED_MODULE",
}

// String is the status's name in the header, a stable, low-cardinality
// label.
func (s Status) String() string {
	switch {
	case int(s) < len(statusNames):
		return statusNames[s]
	case s == UnknownError:
		return "RDC_ST_UNKNOWN_ERROR"
	case s == NoSymbol:
		return "SYMBOL_MISSING"
	}
	return "RDC_ST_" + strconv.FormatUint(uint64(s), 10)
}

// FieldID is an rdc_field_t.
type FieldID = uint32

// The fields the gpu Source reads (rdc.h's rdc_field_t).
const (
	FIPowerUsage          FieldID = 300 // RDC_FI_POWER_USAGE: µW
	FIGPUUtil             FieldID = 500 // RDC_FI_GPU_UTIL: percent
	FIGPUMemoryUsage      FieldID = 501 // RDC_FI_GPU_MEMORY_USAGE: bytes
	FIGPUMemoryTotal      FieldID = 502 // RDC_FI_GPU_MEMORY_TOTAL: bytes
	FIECCCorrectTotal     FieldID = 600 // RDC_FI_ECC_CORRECT_TOTAL
	FIECCUncorrectTotal   FieldID = 601 // RDC_FI_ECC_UNCORRECT_TOTAL
	FIXGMITotalReadKB     FieldID = 716 // RDC_FI_XGMI_TOTAL_READ_KB: accumulated, KB
	FIXGMITotalWriteKB    FieldID = 717 // RDC_FI_XGMI_TOTAL_WRITE_KB: accumulated, KB
	FIProfOccupancy       FieldID = 800 // RDC_FI_PROF_OCCUPANCY_PERCENT
	FIProfActiveWaves     FieldID = 802 // RDC_FI_PROF_ACTIVE_WAVES
	FIProfTensorActive    FieldID = 804 // RDC_FI_PROF_TENSOR_ACTIVE_PERCENT
	FIProfEvalMemReadBW   FieldID = 806 // RDC_FI_PROF_EVAL_MEM_R_BW: KiB per ms
	FIProfEvalMemWriteBW  FieldID = 807 // RDC_FI_PROF_EVAL_MEM_W_BW: KiB per ms
	FIProfSMActive        FieldID = 812 // RDC_FI_PROF_SM_ACTIVE: percent
	FirstProfilingFieldID FieldID = 800
)

// FieldName is the header's name of the fields above; RDC_FI_<id> for
// another.
func FieldName(id FieldID) string {
	switch id {
	case FIPowerUsage:
		return "RDC_FI_POWER_USAGE"
	case FIGPUUtil:
		return "RDC_FI_GPU_UTIL"
	case FIGPUMemoryUsage:
		return "RDC_FI_GPU_MEMORY_USAGE"
	case FIGPUMemoryTotal:
		return "RDC_FI_GPU_MEMORY_TOTAL"
	case FIECCCorrectTotal:
		return "RDC_FI_ECC_CORRECT_TOTAL"
	case FIECCUncorrectTotal:
		return "RDC_FI_ECC_UNCORRECT_TOTAL"
	case FIXGMITotalReadKB:
		return "RDC_FI_XGMI_TOTAL_READ_KB"
	case FIXGMITotalWriteKB:
		return "RDC_FI_XGMI_TOTAL_WRITE_KB"
	case FIProfOccupancy:
		return "RDC_FI_PROF_OCCUPANCY_PERCENT"
	case FIProfActiveWaves:
		return "RDC_FI_PROF_ACTIVE_WAVES"
	case FIProfTensorActive:
		return "RDC_FI_PROF_TENSOR_ACTIVE_PERCENT"
	case FIProfEvalMemReadBW:
		return "RDC_FI_PROF_EVAL_MEM_R_BW"
	case FIProfEvalMemWriteBW:
		return "RDC_FI_PROF_EVAL_MEM_W_BW"
	case FIProfSMActive:
		return "RDC_FI_PROF_SM_ACTIVE"
	}
	return "RDC_FI_" + strconv.FormatUint(uint64(id), 10)
}

// FieldType is an rdc_field_type_t.
type FieldType uint32

// Field types.
const (
	TypeInteger FieldType = 0 // INTEGER
	TypeDouble  FieldType = 1 // DOUBLE
	TypeString  FieldType = 2 // STRING
	TypeBlob    FieldType = 3 // BLOB
)

// Sizes and modes of rdc.h.
const (
	MaxStrLength  = 256 // RDC_MAX_STR_LENGTH
	MaxNumDevices = 128 // RDC_MAX_NUM_DEVICES
	operationAuto = 0   // RDC_OPERATION_MODE_AUTO
	groupEmpty    = 1   // RDC_GROUP_EMPTY
)

// FieldValue is rdc_field_value:
//
//	typedef struct {
//	  rdc_field_t field_id;
//	  int status;
//	  uint64_t ts;                 // µs since 1970
//	  rdc_field_type_t type;
//	  rdc_field_value_data value;  // union { int64_t l_int; double dbl; char str[256]; }
//	} rdc_field_value;
//
// 280 bytes, the union at 24.
type FieldValue struct {
	FieldID FieldID
	Status  int32
	TS      uint64
	Type    FieldType
	_       uint32
	Value   [MaxStrLength]byte
}

// DeviceAttributes is rdc_device_attributes_t as RDC 1.x lays it out;
// earlier releases fill only the name, its first member.
type DeviceAttributes struct {
	DeviceName            [MaxStrLength]byte
	DeviceID              uint64
	NumOfComputeUnits     uint32
	_                     uint32
	TargetGraphicsVersion uint64
}

// Int64 reads the value as INTEGER.
func (v *FieldValue) Int64() int64 { return *(*int64)(unsafe.Pointer(&v.Value[0])) }

// Float64 reads the value as DOUBLE.
func (v *FieldValue) Float64() float64 { return math.Float64frombits(uint64(v.Int64())) }

// Handle is an rdc_handle_t; Group an rdc_gpu_group_t; FieldGroup an
// rdc_field_grp_t.
type (
	Handle     uintptr
	Group      uint32
	FieldGroup uint32
)

// Lib is a loaded RDC bootstrap library. Its methods are safe to call
// from one goroutine at a time.
type Lib struct {
	*dynlib.Library

	init              func(flags uint64) Status
	shutdown          func() Status
	startEmbedded     func(mode uint32, h *Handle) Status
	stopEmbedded      func(h Handle) Status
	deviceGetAll      func(h Handle, list *[MaxNumDevices]uint32, count *uint32) Status
	deviceGetAttrs    func(h Handle, idx uint32, attrs *DeviceAttributes) Status
	groupGPUCreate    func(h Handle, typ uint32, name string, g *Group) Status
	groupGPUAdd       func(h Handle, g Group, idx uint32) Status
	groupGPUDestroy   func(h Handle, g Group) Status
	groupFieldCreate  func(h Handle, n uint32, ids *FieldID, name string, fg *FieldGroup) Status
	groupFieldDestroy func(h Handle, fg FieldGroup) Status
	fieldWatch        func(h Handle, g Group, fg FieldGroup, updateFreqUs uint64, maxKeepAge float64, maxKeepSamples uint32) Status
	fieldUnwatch      func(h Handle, g Group, fg FieldGroup) Status
	fieldUpdateAll    func(h Handle, wait uint32) Status
	statusString      func(s Status) *byte
	// fieldGetLatest is called with purego.SyscallN: integers and
	// pointers only.
	fieldGetLatest uintptr
}

// Symbol names, for callers that report what a library lacks.
const (
	SymInit         = "rdc_init"
	SymStatusString = "rdc_status_string"
	SymFieldWatch   = "rdc_field_watch"
)

func (l *Lib) bindings() []dynlib.Binding {
	return []dynlib.Binding{
		{Name: SymInit, Fn: &l.init, Required: true},
		{Name: "rdc_shutdown", Fn: &l.shutdown, Required: true},
		{Name: "rdc_start_embedded", Fn: &l.startEmbedded, Required: true},
		{Name: "rdc_stop_embedded", Fn: &l.stopEmbedded, Required: true},
		{Name: "rdc_device_get_all", Fn: &l.deviceGetAll, Required: true},
		{Name: "rdc_device_get_attributes", Fn: &l.deviceGetAttrs, Required: true},
		{Name: "rdc_group_gpu_create", Fn: &l.groupGPUCreate, Required: true},
		{Name: "rdc_group_gpu_add", Fn: &l.groupGPUAdd, Required: true},
		{Name: "rdc_group_gpu_destroy", Fn: &l.groupGPUDestroy, Required: true},
		{Name: "rdc_group_field_create", Fn: &l.groupFieldCreate, Required: true},
		{Name: "rdc_group_field_destroy", Fn: &l.groupFieldDestroy, Required: true},
		{Name: SymFieldWatch, Fn: &l.fieldWatch, Required: true},
		{Name: "rdc_field_unwatch", Fn: &l.fieldUnwatch, Required: true},
		{Name: "rdc_field_update_all", Fn: &l.fieldUpdateAll, Required: true},
		{Name: "rdc_field_get_latest_value", Addr: &l.fieldGetLatest, Required: true},
		{Name: SymStatusString, Fn: &l.statusString},
	}
}

// Open loads the library at path and binds its functions. It does not
// call rdc_init.
func Open(path string) (*Lib, error) {
	l := &Lib{}
	lib, err := dynlib.Open(path, "RDC", l.bindings())
	if err != nil {
		return nil, err
	}
	l.Library = lib
	return l, nil
}

// Init calls rdc_init(0).
func (l *Lib) Init() Status { return l.init(0) }

// Shutdown calls rdc_shutdown.
func (l *Lib) Shutdown() Status { return l.shutdown() }

// StartEmbedded starts RDC's agent in this process in
// RDC_OPERATION_MODE_AUTO: it samples the watched fields itself.
func (l *Lib) StartEmbedded() (Handle, Status) {
	var h Handle
	return h, l.startEmbedded(operationAuto, &h)
}

// StopEmbedded calls rdc_stop_embedded.
func (l *Lib) StopEmbedded(h Handle) Status { return l.stopEmbedded(h) }

// GPUs calls rdc_device_get_all: the GPU indexes.
func (l *Lib) GPUs(h Handle) ([]uint32, Status) {
	var list [MaxNumDevices]uint32
	var n uint32
	if st := l.deviceGetAll(h, &list, &n); st != OK {
		return nil, st
	}
	return append([]uint32(nil), list[:min(n, MaxNumDevices)]...), OK
}

// Name calls rdc_device_get_attributes: the GPU's device name.
func (l *Lib) Name(h Handle, idx uint32) (string, Status) {
	var a DeviceAttributes
	st := l.deviceGetAttrs(h, idx, &a)
	return dynlib.BufString(a.DeviceName[:]), st
}

// GroupCreate creates an empty GPU group.
func (l *Lib) GroupCreate(h Handle, name string) (Group, Status) {
	var g Group
	return g, l.groupGPUCreate(h, groupEmpty, name, &g)
}

// GroupAdd calls rdc_group_gpu_add.
func (l *Lib) GroupAdd(h Handle, g Group, idx uint32) Status { return l.groupGPUAdd(h, g, idx) }

// GroupDestroy calls rdc_group_gpu_destroy.
func (l *Lib) GroupDestroy(h Handle, g Group) Status { return l.groupGPUDestroy(h, g) }

// FieldGroupCreate creates a field group of ids named name.
func (l *Lib) FieldGroupCreate(h Handle, ids []FieldID, name string) (FieldGroup, Status) {
	if len(ids) == 0 {
		return 0, BadParameter
	}
	var fg FieldGroup
	return fg, l.groupFieldCreate(h, uint32(len(ids)), &ids[0], name, &fg)
}

// FieldGroupDestroy calls rdc_group_field_destroy.
func (l *Lib) FieldGroupDestroy(h Handle, fg FieldGroup) Status { return l.groupFieldDestroy(h, fg) }

// Watch makes RDC sample the fields of fg on the GPUs of g every
// updateEvery, keeping keepAge of samples, at most keepSamples.
func (l *Lib) Watch(h Handle, g Group, fg FieldGroup, updateEvery, keepAge time.Duration, keepSamples uint32) Status {
	return l.fieldWatch(h, g, fg, uint64(updateEvery.Microseconds()), keepAge.Seconds(), keepSamples)
}

// Unwatch calls rdc_field_unwatch.
func (l *Lib) Unwatch(h Handle, g Group, fg FieldGroup) Status { return l.fieldUnwatch(h, g, fg) }

// UpdateAll calls rdc_field_update_all, waiting when wait is set.
func (l *Lib) UpdateAll(h Handle, wait bool) Status {
	var w uint32
	if wait {
		w = 1
	}
	return l.fieldUpdateAll(h, w)
}

// Latest calls rdc_field_get_latest_value(handle, gpu_index, field,
// &value).
func (l *Lib) Latest(h Handle, idx uint32, f FieldID, v *FieldValue) Status {
	r, _, _ := purego.SyscallN(l.fieldGetLatest, uintptr(h), uintptr(idx), uintptr(f), uintptr(unsafe.Pointer(v)))
	return Status(uint32(r))
}

// maxStatusText bounds a status description read from C memory.
const maxStatusText = 512

// StatusText is the library's own description of s, or "".
func (l *Lib) StatusText(s Status) string {
	if l.statusString == nil {
		return ""
	}
	p := l.statusString(s)
	if p == nil {
		return ""
	}
	return dynlib.CString(p, maxStatusText)
}

// ErrStatus is a failed call, for errors.As.
type ErrStatus struct {
	Func   string
	Status Status
	Text   string
}

func (e *ErrStatus) Error() string {
	if e.Text == "" {
		return fmt.Sprintf("%s: %s (%d)", e.Func, e.Status, uint32(e.Status))
	}
	return fmt.Sprintf("%s: %s (%d): %s", e.Func, e.Status, uint32(e.Status), e.Text)
}

// Err returns nil for OK and an *ErrStatus naming fn otherwise.
func (l *Lib) Err(fn string, s Status) error {
	if s == OK {
		return nil
	}
	return &ErrStatus{Func: fn, Status: s, Text: l.StatusText(s)}
}
