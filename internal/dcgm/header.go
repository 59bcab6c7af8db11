package dcgm

import "strconv"

// What this file declares is copied from NVIDIA DCGM's public headers,
// dcgmlib/dcgm_structs.h and dcgmlib/dcgm_fields.h of DCGM 4.6.0 (the
// NVIDIA/DCGM repository, commit 72fa3fe); the same values hold in DCGM
// 2.x and 3.x, whose headers this binding was checked against where they
// differ in names only (DCGM 4 renamed DCGM_FI_PROF_SM_ACTIVE to
// DCGM_FI_PROF_SM_UTIL_RATIO and kept the old names as aliases of the same
// ids). The struct layouts are checked by a test against a C library
// built from the header's declarations (testdata/fakedcgm.c).

// Return is a dcgmReturn_t.
type Return int32

// dcgmReturn_t values the binding acts on (dcgm_structs.h).
const (
	OK                    Return = 0   // DCGM_ST_OK
	BadParam              Return = -1  // DCGM_ST_BADPARAM
	NotSupported          Return = -6  // DCGM_ST_NOT_SUPPORTED
	InitError             Return = -7  // DCGM_ST_INIT_ERROR
	Uninitialized         Return = -10 // DCGM_ST_UNINITIALIZED
	NoData                Return = -14 // DCGM_ST_NO_DATA
	StaleData             Return = -15 // DCGM_ST_STALE_DATA
	NotWatched            Return = -16 // DCGM_ST_NOT_WATCHED
	NoPermission          Return = -17 // DCGM_ST_NO_PERMISSION
	ConnectionNotValid    Return = -21 // DCGM_ST_CONNECTION_NOT_VALID
	RequiresRoot          Return = -29 // DCGM_ST_REQUIRES_ROOT
	InUse                 Return = -34 // DCGM_ST_IN_USE: another profiler (Nsight, CUPTI, another host engine) holds the counters
	ProfilingNotSupported Return = -36 // DCGM_ST_PROFILING_NOT_SUPPORTED
	ProfilingLibraryError Return = -37 // DCGM_ST_PROFILING_LIBRARY_ERROR
	ProfilingMultiPass    Return = -38 // DCGM_ST_PROFILING_MULTI_PASS: the fields cannot be counted in one pass
	InsufficientDriver    Return = -44 // DCGM_ST_INSUFFICIENT_DRIVER_VERSION
	Paused                Return = -54 // DCGM_ST_PAUSED
)

// NoSymbol is not a DCGM return: the loaded library lacks the function,
// so the method did not call anything.
const NoSymbol Return = -1000

// returnNames are the names of dcgm_structs.h's dcgmReturn_t values.
var returnNames = map[Return]string{
	0:   "DCGM_ST_OK",
	-1:  "DCGM_ST_BADPARAM",
	-3:  "DCGM_ST_GENERIC_ERROR",
	-4:  "DCGM_ST_MEMORY",
	-5:  "DCGM_ST_NOT_CONFIGURED",
	-6:  "DCGM_ST_NOT_SUPPORTED",
	-7:  "DCGM_ST_INIT_ERROR",
	-8:  "DCGM_ST_NVML_ERROR",
	-9:  "DCGM_ST_PENDING",
	-10: "DCGM_ST_UNINITIALIZED",
	-11: "DCGM_ST_TIMEOUT",
	-12: "DCGM_ST_VER_MISMATCH",
	-13: "DCGM_ST_UNKNOWN_FIELD",
	-14: "DCGM_ST_NO_DATA",
	-15: "DCGM_ST_STALE_DATA",
	-16: "DCGM_ST_NOT_WATCHED",
	-17: "DCGM_ST_NO_PERMISSION",
	-18: "DCGM_ST_GPU_IS_LOST",
	-19: "DCGM_ST_RESET_REQUIRED",
	-20: "DCGM_ST_FUNCTION_NOT_FOUND",
	-21: "DCGM_ST_CONNECTION_NOT_VALID",
	-22: "DCGM_ST_GPU_NOT_SUPPORTED",
	-23: "DCGM_ST_GROUP_INCOMPATIBLE",
	-24: "DCGM_ST_MAX_LIMIT",
	-25: "DCGM_ST_LIBRARY_NOT_FOUND",
	-26: "DCGM_ST_DUPLICATE_KEY",
	-27: "DCGM_ST_GPU_IN_SYNC_BOOST_GROUP",
	-28: "DCGM_ST_GPU_NOT_IN_SYNC_BOOST_GROUP",
	-29: "DCGM_ST_REQUIRES_ROOT",
	-30: "DCGM_ST_NVVS_ERROR",
	-31: "DCGM_ST_INSUFFICIENT_SIZE",
	-32: "DCGM_ST_FIELD_UNSUPPORTED_BY_API",
	-33: "DCGM_ST_MODULE_NOT_LOADED",
	-34: "DCGM_ST_IN_USE",
	-35: "DCGM_ST_GROUP_IS_EMPTY",
	-36: "DCGM_ST_PROFILING_NOT_SUPPORTED",
	-37: "DCGM_ST_PROFILING_LIBRARY_ERROR",
	-38: "DCGM_ST_PROFILING_MULTI_PASS",
	-39: "DCGM_ST_DIAG_ALREADY_RUNNING",
	-40: "DCGM_ST_DIAG_BAD_JSON",
	-41: "DCGM_ST_DIAG_BAD_LAUNCH",
	-42: "DCGM_ST_DIAG_UNUSED",
	-43: "DCGM_ST_DIAG_THRESHOLD_EXCEEDED",
	-44: "DCGM_ST_INSUFFICIENT_DRIVER_VERSION",
	-45: "DCGM_ST_INSTANCE_NOT_FOUND",
	-46: "DCGM_ST_COMPUTE_INSTANCE_NOT_FOUND",
	-47: "DCGM_ST_CHILD_NOT_KILLED",
	-48: "DCGM_ST_3RD_PARTY_LIBRARY_ERROR",
	-49: "DCGM_ST_INSUFFICIENT_RESOURCES",
	-50: "DCGM_ST_PLUGIN_EXCEPTION",
	-51: "DCGM_ST_NVVS_ISOLATE_ERROR",
	-52: "DCGM_ST_NVVS_BINARY_NOT_FOUND",
	-53: "DCGM_ST_NVVS_KILLED",
	-54: "DCGM_ST_PAUSED",
	-55: "DCGM_ST_ALREADY_INITIALIZED",
	-56: "DCGM_ST_NVML_NOT_LOADED",
	-57: "DCGM_ST_NVML_DRIVER_TIMEOUT",
	-58: "DCGM_ST_NVVS_NO_AVAILABLE_TEST",
	-59: "DCGM_ST_MNDIAG_CONNECTION_NOT_AVAILABLE",
	-60: "DCGM_ST_MNDIAG_CONNECTION_UNAUTHORIZED",
	-61: "DCGM_ST_REMOTE_SSH_CONNECTION_FAILED",
	-62: "DCGM_ST_CHILD_SPAWN_FAILED",
	-63: "DCGM_ST_FILE_IO_ERROR",
	-64: "DCGM_ST_CHILD_SIGNAL_RECEIVED",
	-65: "DCGM_ST_CALLER_ALREADY_STOPPED",
	-66: "DCGM_ST_DIAG_STOPPED",
	-67: "DCGM_ST_GPUS_DETACHED",
}

// String is the return's name in the header (DCGM_ST_IN_USE), a stable,
// low-cardinality label; DCGM_ST_<n> for a value the header does not name.
func (r Return) String() string {
	if s, ok := returnNames[r]; ok {
		return s
	}
	if r == NoSymbol {
		return "SYMBOL_MISSING"
	}
	return "DCGM_ST_" + strconv.Itoa(int(r))
}

// EntityGroup is a dcgm_field_entity_group_t (dcgm_fields.h).
type EntityGroup uint32

// Entity groups.
const (
	FENone  EntityGroup = 0 // DCGM_FE_NONE: global fields
	FEGPU   EntityGroup = 1 // DCGM_FE_GPU
	FEGPUI  EntityGroup = 4 // DCGM_FE_GPU_I: a MIG GPU instance
	FEGPUCI EntityGroup = 5 // DCGM_FE_GPU_CI: a MIG compute instance
)

// Field types (DCGM_FT_*, dcgm_fields.h): the character stored in
// dcgmFieldValue_v1.fieldType.
const (
	FTDouble    = 'd' // DCGM_FT_DOUBLE
	FTInt64     = 'i' // DCGM_FT_INT64
	FTString    = 's' // DCGM_FT_STRING
	FTTimestamp = 't' // DCGM_FT_TIMESTAMP
	FTBinary    = 'b' // DCGM_FT_BINARY
)

// FieldID is a DCGM_FI_* field id (dcgm_fields.h).
type FieldID = uint16

// Field ids the gpu Source reads. The profiling ids are those of DCGM 2
// and 3's names (DCGM_FI_PROF_GR_ENGINE_ACTIVE …), which DCGM 4 keeps as
// aliases of its *_UTIL_RATIO names; the ids have not changed.
const (
	FIDriverVersion FieldID = 1  // DCGM_FI_DRIVER_VERSION (global)
	FIDevName       FieldID = 50 // DCGM_FI_DEV_NAME
	FIDevUUID       FieldID = 54 // DCGM_FI_DEV_UUID
	FIDevPCIBusID   FieldID = 57 // DCGM_FI_DEV_PCI_BUSID

	FIProfGrEngineActive    FieldID = 1001 // DCGM_FI_PROF_GR_ENGINE_ACTIVE: ratio of time the graphics engine is active
	FIProfSMActive          FieldID = 1002 // DCGM_FI_PROF_SM_ACTIVE: ratio of cycles an SM has at least one warp assigned
	FIProfSMOccupancy       FieldID = 1003 // DCGM_FI_PROF_SM_OCCUPANCY: ratio of warps resident to the theoretical maximum
	FIProfPipeTensorActive  FieldID = 1004 // DCGM_FI_PROF_PIPE_TENSOR_ACTIVE
	FIProfDRAMActive        FieldID = 1005 // DCGM_FI_PROF_DRAM_ACTIVE
	FIProfPipeFP64Active    FieldID = 1006 // DCGM_FI_PROF_PIPE_FP64_ACTIVE
	FIProfPipeFP32Active    FieldID = 1007 // DCGM_FI_PROF_PIPE_FP32_ACTIVE
	FIProfPipeFP16Active    FieldID = 1008 // DCGM_FI_PROF_PIPE_FP16_ACTIVE
	FIProfPCIeTxBytes       FieldID = 1009 // DCGM_FI_PROF_PCIE_TX_BYTES: bytes per second
	FIProfPCIeRxBytes       FieldID = 1010 // DCGM_FI_PROF_PCIE_RX_BYTES: bytes per second
	FIProfNVLinkTxBytes     FieldID = 1011 // DCGM_FI_PROF_NVLINK_TX_BYTES: bytes per second
	FIProfNVLinkRxBytes     FieldID = 1012 // DCGM_FI_PROF_NVLINK_RX_BYTES: bytes per second
	FirstProfilingField     FieldID = FIProfGrEngineActive
	LastProfilingFieldRead  FieldID = FIProfNVLinkRxBytes
	profilingFieldsReadByUs         = int(LastProfilingFieldRead-FirstProfilingField) + 1
)

// FieldName is the header's name of the fields above (the DCGM 2 and 3
// spelling), for labels and messages; DCGM_FI_<id> for another.
func FieldName(id FieldID) string {
	switch id {
	case FIDriverVersion:
		return "DCGM_FI_DRIVER_VERSION"
	case FIDevName:
		return "DCGM_FI_DEV_NAME"
	case FIDevUUID:
		return "DCGM_FI_DEV_UUID"
	case FIDevPCIBusID:
		return "DCGM_FI_DEV_PCI_BUSID"
	}
	if id >= FirstProfilingField && id <= LastProfilingFieldRead {
		return profNames[id-FirstProfilingField]
	}
	return "DCGM_FI_" + strconv.Itoa(int(id))
}

var profNames = [profilingFieldsReadByUs]string{
	"DCGM_FI_PROF_GR_ENGINE_ACTIVE",
	"DCGM_FI_PROF_SM_ACTIVE",
	"DCGM_FI_PROF_SM_OCCUPANCY",
	"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
	"DCGM_FI_PROF_DRAM_ACTIVE",
	"DCGM_FI_PROF_PIPE_FP64_ACTIVE",
	"DCGM_FI_PROF_PIPE_FP32_ACTIVE",
	"DCGM_FI_PROF_PIPE_FP16_ACTIVE",
	"DCGM_FI_PROF_PCIE_TX_BYTES",
	"DCGM_FI_PROF_PCIE_RX_BYTES",
	"DCGM_FI_PROF_NVLINK_TX_BYTES",
	"DCGM_FI_PROF_NVLINK_RX_BYTES",
}

// Blank values (dcgm_structs.h, DCGM_BLANK_VALUES): a value at or above
// the base of its type is no measurement. The bases plus 1, 2 and 3 say
// why.
const (
	Int64Blank = 0x7ffffffffffffff0 // DCGM_INT64_BLANK
	// FP64Blank is DCGM_FP64_BLANK, 2^47: float64's 52-bit mantissa still
	// tells apart the base plus 0 … 15.
	FP64Blank = 140737488355328.0
	// StrBlankPrefix starts every blank string (DCGM_STR_BLANK
	// "<<<NULL>>>", DCGM_STR_NOT_FOUND "<<<NOT_FOUND>>>", …):
	// DCGM_STR_IS_BLANK looks for "<<<" at the start and ">>>" in it.
	StrBlankPrefix = "<<<"
	StrBlankSuffix = ">>>"
)

// Offsets of the named blanks from their type's base (DCGM_*_NOT_FOUND is
// DCGM_*_BLANK + 1, and so on).
const (
	blankOffset           = 0
	notFoundOffset        = 1
	notSupportedOffset    = 2
	notPermissionedOffset = 3
)

// DefaultHostEnginePort is DCGM_HE_PORT_NUMBER, nv-hostengine's TCP port.
const DefaultHostEnginePort = 5555

// DefaultHostEngineSocket is DCGM_DEFAULT_SOCKET_PATH, where nv-hostengine
// listens when started with a domain socket (nv-hostengine -d).
const DefaultHostEngineSocket = "/tmp/nv-hostengine"

// Group types (dcgmGroupType_t) and operation modes
// (dcgmOperationMode_t).
const (
	groupEmpty    = 1 // DCGM_GROUP_EMPTY
	operationAuto = 1 // DCGM_OPERATION_MODE_AUTO
)

// MaxDevices is DCGM_MAX_NUM_DEVICES, the size of the array
// dcgmGetAllSupportedDevices fills.
const MaxDevices = 32

// MaxHierarchyInfo is DCGM_MAX_HIERARCHY_INFO: DCGM_MAX_NUM_DEVICES ×
// DCGM_MAX_TOTAL_INSTANCES_PER_GPU (14).
const MaxHierarchyInfo = MaxDevices * 14

// makeVersion is MAKE_DCGM_VERSION(typeName, ver): the struct's size in
// the low 24 bits, the version above.
func makeVersion(size uintptr, ver uint32) uint32 { return uint32(size) | ver<<24 }

// FieldValue is dcgmFieldValue_v1:
//
//	typedef struct {
//	    unsigned int version;
//	    unsigned short fieldId;
//	    unsigned short fieldType;
//	    int status;
//	    int64_t ts;
//	    union { int64_t i64; double dbl; char str[DCGM_MAX_STR_LENGTH];
//	            char blob[DCGM_MAX_BLOB_LENGTH]; } value;
//	} dcgmFieldValue_v1;
//
// The union is DCGM_MAX_BLOB_LENGTH (4096) bytes at offset 24; the struct
// is 4120 bytes.
type FieldValue struct {
	Version   uint32
	FieldID   uint16
	FieldType uint16
	Status    int32
	TS        int64 // µs since 1970
	Value     [maxBlobLength]byte
}

const (
	maxBlobLength = 4096 // DCGM_MAX_BLOB_LENGTH
	maxStrLength  = 256  // DCGM_MAX_STR_LENGTH
)

// ConnectParams is dcgmConnectV2Params_v2.
type ConnectParams struct {
	Version                uint32
	PersistAfterDisconnect uint32
	TimeoutMs              uint32
	AddressIsUnixSocket    uint32
}

// GroupEntityPair is dcgmGroupEntityPair_t.
type GroupEntityPair struct {
	EntityGroup EntityGroup
	EntityID    uint32
}

// MigEntityInfo is dcgmMigEntityInfo_t.
type MigEntityInfo struct {
	GPUUUID               [128]byte
	NVMLGPUIndex          uint32
	NVMLInstanceID        uint32
	NVMLComputeInstanceID uint32
	NVMLMigProfileID      uint32
	NVMLProfileSlices     uint32
}

// MigHierarchyInfo is dcgmMigHierarchyInfo_v2.
type MigHierarchyInfo struct {
	Entity GroupEntityPair
	Parent GroupEntityPair
	Info   MigEntityInfo
}

// MigHierarchy is dcgmMigHierarchy_v2.
type MigHierarchy struct {
	Version    uint32
	Count      uint32
	EntityList [MaxHierarchyInfo]MigHierarchyInfo
}
