// Package dcgm binds NVIDIA's Data Center GPU Manager library (libdcgm.so)
// through purego: no cgo, so it builds with CGO_ENABLED=0 as well as 1.
//
// It binds what the gpu Source needs to read DCGM's profiling fields:
// dcgmInit, an embedded host engine (dcgmStartEmbedded) or a connection to
// nv-hostengine (dcgmConnect_v2), the supported GPUs and the MIG
// hierarchy, entity and field groups, field watches, and
// dcgmEntityGetLatestValues, which fills dcgmFieldValue_v1 records. The
// declarations follow DCGM's public headers (header.go says which); a test
// checks the struct layouts against a C library built from them.
//
// dcgmProfPause and dcgmProfResume, which let Nsight or CUPTI take the
// profiling counters, are deliberately not bound: pausing is the user's
// call (dcgmi profile --pause), never the agent's.
//
// Every symbol is looked up with dlsym before it is bound. A library that
// lacks an optional function (dcgmGetGpuInstanceHierarchy, before DCGM 2.0)
// loses only that function: its method returns NoSymbol and calls nothing.
package dcgm

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/xpuscope/xpuscope/internal/dynlib"
)

// DefaultLibraries are the sonames of DCGM 4, 3 and 2, tried in order.
var DefaultLibraries = []string{"libdcgm.so.4", "libdcgm.so.3", "libdcgm.so.2"}

// Handle is a dcgmHandle_t; Group a dcgmGpuGrp_t; FieldGroup a
// dcgmFieldGrp_t (all uintptr_t).
type (
	Handle     uintptr
	Group      uintptr
	FieldGroup uintptr
)

// Lib is a loaded DCGM library. Its methods are safe to call from one
// goroutine at a time.
type Lib struct {
	*dynlib.Library

	init                   func() Return
	shutdown               func() Return
	startEmbedded          func(mode int32, h *Handle) Return
	stopEmbedded           func(h Handle) Return
	connectV2              func(addr string, p *ConnectParams, h *Handle) Return
	disconnect             func(h Handle) Return
	errorString            func(r Return) *byte
	getAllSupportedDevices func(h Handle, ids *[MaxDevices]uint32, count *int32) Return
	getGpuInstanceHier     func(h Handle, hier *MigHierarchy) Return
	groupCreate            func(h Handle, typ int32, name string, g *Group) Return
	groupAddEntity         func(h Handle, g Group, eg EntityGroup, id uint32) Return
	groupDestroy           func(h Handle, g Group) Return
	fieldGroupCreate       func(h Handle, n int32, ids *uint16, name string, fg *FieldGroup) Return
	fieldGroupDestroy      func(h Handle, fg FieldGroup) Return
	watchFields            func(h Handle, g Group, fg FieldGroup, updateFreqUs int64, maxKeepAge float64, maxKeepSamples int32) Return
	unwatchFields          func(h Handle, g Group, fg FieldGroup) Return
	updateAllFields        func(h Handle, wait int32) Return
	// entityGetLatestValues is called with purego.SyscallN: the poll's
	// one call per entity allocates nothing.
	entityGetLatestValues uintptr
}

// Symbol names, for callers that report what a library lacks.
const (
	SymInit             = "dcgmInit"
	SymStartEmbedded    = "dcgmStartEmbedded"
	SymConnectV2        = "dcgmConnect_v2"
	SymGpuInstanceHier  = "dcgmGetGpuInstanceHierarchy"
	SymEntityLatest     = "dcgmEntityGetLatestValues"
	SymWatchFields      = "dcgmWatchFields"
	SymFieldGroupCreate = "dcgmFieldGroupCreate"
)

func (l *Lib) bindings() []dynlib.Binding {
	return []dynlib.Binding{
		{Name: SymInit, Fn: &l.init, Required: true},
		{Name: "dcgmShutdown", Fn: &l.shutdown, Required: true},
		{Name: SymStartEmbedded, Fn: &l.startEmbedded, Required: true},
		{Name: "dcgmStopEmbedded", Fn: &l.stopEmbedded, Required: true},
		{Name: SymConnectV2, Fn: &l.connectV2, Required: true},
		{Name: "dcgmDisconnect", Fn: &l.disconnect, Required: true},
		{Name: "dcgmGetAllSupportedDevices", Fn: &l.getAllSupportedDevices, Required: true},
		{Name: "dcgmGroupCreate", Fn: &l.groupCreate, Required: true},
		{Name: "dcgmGroupAddEntity", Fn: &l.groupAddEntity, Required: true},
		{Name: "dcgmGroupDestroy", Fn: &l.groupDestroy, Required: true},
		{Name: SymFieldGroupCreate, Fn: &l.fieldGroupCreate, Required: true},
		{Name: "dcgmFieldGroupDestroy", Fn: &l.fieldGroupDestroy, Required: true},
		{Name: SymWatchFields, Fn: &l.watchFields, Required: true},
		{Name: "dcgmUnwatchFields", Fn: &l.unwatchFields, Required: true},
		{Name: "dcgmUpdateAllFields", Fn: &l.updateAllFields, Required: true},
		{Name: SymEntityLatest, Addr: &l.entityGetLatestValues, Required: true},
		{Name: "errorString", Fn: &l.errorString},
		{Name: SymGpuInstanceHier, Fn: &l.getGpuInstanceHier},
	}
}

// Open loads the library at path (a soname the loader searches for, or a
// path) and binds its functions. It does not call dcgmInit.
func Open(path string) (*Lib, error) {
	l := &Lib{}
	lib, err := dynlib.Open(path, "DCGM", l.bindings())
	if err != nil {
		return nil, err
	}
	l.Library = lib
	return l, nil
}

// Init calls dcgmInit.
func (l *Lib) Init() Return { return l.init() }

// Shutdown calls dcgmShutdown.
func (l *Lib) Shutdown() Return { return l.shutdown() }

// StartEmbedded starts a host engine inside this process in
// DCGM_OPERATION_MODE_AUTO: it samples the watched fields itself.
func (l *Lib) StartEmbedded() (Handle, Return) {
	var h Handle
	return h, l.startEmbedded(operationAuto, &h)
}

// StopEmbedded calls dcgmStopEmbedded.
func (l *Lib) StopEmbedded(h Handle) Return { return l.stopEmbedded(h) }

// Connect connects to nv-hostengine at addr (host:port, or the path of its
// domain socket when unixSocket is set) through dcgmConnect_v2, waiting at
// most timeout. The connection's watches end with it.
func (l *Lib) Connect(addr string, unixSocket bool, timeout time.Duration) (Handle, Return) {
	p := ConnectParams{TimeoutMs: uint32(timeout.Milliseconds())}
	p.Version = makeVersion(unsafe.Sizeof(p), 2) // dcgmConnectV2Params_version2
	if unixSocket {
		p.AddressIsUnixSocket = 1
	}
	var h Handle
	return h, l.connectV2(addr, &p, &h)
}

// Disconnect calls dcgmDisconnect.
func (l *Lib) Disconnect(h Handle) Return { return l.disconnect(h) }

// SupportedGPUs calls dcgmGetAllSupportedDevices: the DCGM ids of the GPUs
// DCGM supports.
func (l *Lib) SupportedGPUs(h Handle) ([]uint32, Return) {
	var ids [MaxDevices]uint32
	var n int32
	r := l.getAllSupportedDevices(h, &ids, &n)
	if r != OK {
		return nil, r
	}
	n = min(max(n, 0), MaxDevices)
	return append([]uint32(nil), ids[:n]...), OK
}

// Hierarchy calls dcgmGetGpuInstanceHierarchy into hier (73 KB: keep one).
func (l *Lib) Hierarchy(h Handle, hier *MigHierarchy) Return {
	if l.getGpuInstanceHier == nil {
		return NoSymbol
	}
	*hier = MigHierarchy{}
	hier.Version = makeVersion(unsafe.Sizeof(*hier), 2) // dcgmMigHierarchy_version2
	return l.getGpuInstanceHier(h, hier)
}

// GroupCreate creates an empty entity group.
func (l *Lib) GroupCreate(h Handle, name string) (Group, Return) {
	var g Group
	return g, l.groupCreate(h, groupEmpty, name, &g)
}

// GroupAddEntity calls dcgmGroupAddEntity.
func (l *Lib) GroupAddEntity(h Handle, g Group, eg EntityGroup, id uint32) Return {
	return l.groupAddEntity(h, g, eg, id)
}

// GroupDestroy calls dcgmGroupDestroy.
func (l *Lib) GroupDestroy(h Handle, g Group) Return { return l.groupDestroy(h, g) }

// FieldGroupCreate creates a field group of ids named name (unique in the
// host engine).
func (l *Lib) FieldGroupCreate(h Handle, ids []FieldID, name string) (FieldGroup, Return) {
	if len(ids) == 0 {
		return 0, BadParam
	}
	var fg FieldGroup
	return fg, l.fieldGroupCreate(h, int32(len(ids)), &ids[0], name, &fg)
}

// FieldGroupDestroy calls dcgmFieldGroupDestroy.
func (l *Lib) FieldGroupDestroy(h Handle, fg FieldGroup) Return { return l.fieldGroupDestroy(h, fg) }

// Watch makes the host engine sample the fields of fg on the entities of g
// every updateEvery, keeping keepAge of samples, at most keepSamples.
func (l *Lib) Watch(h Handle, g Group, fg FieldGroup, updateEvery, keepAge time.Duration, keepSamples int) Return {
	return l.watchFields(h, g, fg, updateEvery.Microseconds(), keepAge.Seconds(), int32(keepSamples))
}

// Unwatch calls dcgmUnwatchFields.
func (l *Lib) Unwatch(h Handle, g Group, fg FieldGroup) Return { return l.unwatchFields(h, g, fg) }

// UpdateAll calls dcgmUpdateAllFields, waiting for the update when wait
// is set.
func (l *Lib) UpdateAll(h Handle, wait bool) Return {
	var w int32
	if wait {
		w = 1
	}
	return l.updateAllFields(h, w)
}

// LatestValues calls dcgmEntityGetLatestValues for fields of one entity,
// into values[:len(fields)]. Each value carries a status of its own.
func (l *Lib) LatestValues(h Handle, eg EntityGroup, id uint32, fields []FieldID, values []FieldValue) Return {
	if len(fields) == 0 || len(values) < len(fields) {
		return BadParam
	}
	// dcgmEntityGetLatestValues(dcgmHandle_t, dcgm_field_entity_group_t,
	// int entityId, unsigned short fields[], unsigned int count,
	// dcgmFieldValue_v1 values[]): integers and pointers only, as
	// SyscallN needs; the 32-bit arguments go in the low halves.
	r, _, _ := purego.SyscallN(l.entityGetLatestValues, uintptr(h), uintptr(eg), uintptr(uint32(int32(id))),
		uintptr(unsafe.Pointer(&fields[0])), uintptr(uint32(len(fields))), uintptr(unsafe.Pointer(&values[0])))
	return Return(int32(r))
}

// maxErrorText bounds an error description read from C memory.
const maxErrorText = 512

// ErrorText is the library's own description of r (errorString), or ""
// when the library has none.
func (l *Lib) ErrorText(r Return) string {
	if l.errorString == nil {
		return ""
	}
	p := l.errorString(r)
	if p == nil {
		return ""
	}
	return dynlib.CString(p, maxErrorText)
}

// ErrReturn is a failed call, for errors.As.
type ErrReturn struct {
	Func   string
	Return Return
	Text   string // the library's description; may be empty
}

func (e *ErrReturn) Error() string {
	if e.Text == "" {
		return fmt.Sprintf("%s: %s (%d)", e.Func, e.Return, int32(e.Return))
	}
	return fmt.Sprintf("%s: %s (%d): %s", e.Func, e.Return, int32(e.Return), e.Text)
}

// Err returns nil for OK and an *ErrReturn naming fn otherwise.
func (l *Lib) Err(fn string, r Return) error {
	if r == OK {
		return nil
	}
	return &ErrReturn{Func: fn, Return: r, Text: l.ErrorText(r)}
}
