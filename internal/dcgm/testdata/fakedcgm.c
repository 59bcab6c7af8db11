/*
 * A fake libdcgm.so.4 for the tests of package dcgm and of the gpu
 * Source's DCGM backend. Debian ships no DCGM (NVIDIA distributes it from
 * its own repositories, with the datacenter driver), and its profiling
 * fields need a datacenter GPU: the tests build this library from C with
 * gcc instead. It exports the real entry points, by their real names,
 * with the real struct layouts, and answers with fixed values.
 *
 * The declarations below are copied from DCGM's public headers,
 * dcgmlib/dcgm_structs.h and dcgmlib/dcgm_fields.h of DCGM 4.6.0 (enums
 * cut to the values used). xpuscope_fake_dcgm_layout reports sizeof and
 * offsetof of the structs so that a test compares them with the Go
 * binding.
 *
 * Test hooks, not part of DCGM: xpuscope_fake_dcgm_layout,
 * xpuscope_fake_dcgm_state, xpuscope_fake_dcgm_fail,
 * xpuscope_fake_dcgm_busy, xpuscope_fake_dcgm_age,
 * xpuscope_fake_dcgm_connected (below). Values are stamped with the
 * time they are read, less the age the test sets.
 *
 * Build flags:
 *   -DFAKE_GPUS=N        report N GPUs (default 2); GPUs past the first
 *                        two repeat GPU 0's values;
 *   -DFAKE_MIG           GPU 1 is split into two MIG compute instances;
 *   -DOMIT_HIERARCHY     leave dcgmGetGpuInstanceHierarchy out, as a DCGM
 *                        too old to have it (an optional symbol);
 *   -DPROF_BUSY          another profiler holds the counters: watching a
 *                        profiling field fails with DCGM_ST_IN_USE until
 *                        xpuscope_fake_dcgm_busy(0);
 *   -DPROF_UNSUPPORTED   watching a profiling field fails with
 *                        DCGM_ST_PROFILING_NOT_SUPPORTED;
 *   -DINIT_STATUS=N      make dcgmInit return N.
 *
 * Values (GPU 0 | GPU 1), as DCGM reports them (dcgmFieldValue_v1):
 *
 *   UUID        GPU-0000000<i>-aaaa-bbbb-cccc-dddddddddddd (go-nvml mocks' h100(i))
 *   name        NVIDIA H100 80GB HBM3
 *   PCI bus id  00000000:<0x18+i>:00.0
 *   1001 GR_ENGINE_ACTIVE   0.875 | 0.5
 *   1002 SM_ACTIVE          0.75  | 0.4375
 *   1003 SM_OCCUPANCY       0.5   | 0.125
 *   1004 PIPE_TENSOR_ACTIVE 0.625 | 0.3125
 *   1005 DRAM_ACTIVE        0.25  | NaN
 *   1006 PIPE_FP64_ACTIVE   0.0625 | cannot be watched with 1004
 *                           (DCGM_ST_PROFILING_MULTI_PASS), as on GPUs
 *                           that count some pipes in separate passes
 *   1007 PIPE_FP32_ACTIVE   0.375 | 0.1875
 *   1008 PIPE_FP16_ACTIVE   DCGM_FP64_BLANK | 0.03125
 *   1009 PCIE_TX_BYTES      1500000000 | 1000000   (int64, B/s)
 *   1010 PCIE_RX_BYTES      2500000000 | 3000000
 *   1011 NVLINK_TX_BYTES    40000000000 | 0
 *   1012 NVLINK_RX_BYTES    DCGM_INT64_NOT_SUPPORTED | 0
 *
 * With -DFAKE_MIG, GPU 1's compute instances (GPU instances 9 and 2,
 * compute instance 0 of each, DCGM entity ids 0 and 1) report 1001-1008
 * as GPU 1 times 0.5 and 0.25 (DRAM_ACTIVE NaN, as GPU 1's).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

#ifndef FAKE_GPUS
#define FAKE_GPUS 2
#endif

/* --- from dcgm_structs.h and dcgm_fields.h (DCGM 4.6.0) --- */
typedef enum dcgmReturn_enum {
	DCGM_ST_OK = 0,
	DCGM_ST_BADPARAM = -1,
	DCGM_ST_NOT_CONFIGURED = -5,
	DCGM_ST_NOT_SUPPORTED = -6,
	DCGM_ST_INIT_ERROR = -7,
	DCGM_ST_UNINITIALIZED = -10,
	DCGM_ST_NOT_WATCHED = -16,
	DCGM_ST_CONNECTION_NOT_VALID = -21,
	DCGM_ST_MAX_LIMIT = -24,
	DCGM_ST_IN_USE = -34,
	DCGM_ST_PROFILING_NOT_SUPPORTED = -36,
	DCGM_ST_PROFILING_MULTI_PASS = -38,
	DCGM_ST_VER_MISMATCH = -12,
} dcgmReturn_t;

typedef enum dcgmOperationMode_enum {
	DCGM_OPERATION_MODE_AUTO = 1,
	DCGM_OPERATION_MODE_MANUAL = 2
} dcgmOperationMode_t;

typedef enum dcgmGroupType_enum {
	DCGM_GROUP_DEFAULT = 0,
	DCGM_GROUP_EMPTY = 1,
} dcgmGroupType_t;

typedef enum dcgm_field_entity_group_t {
	DCGM_FE_NONE = 0,
	DCGM_FE_GPU,
	DCGM_FE_VGPU,
	DCGM_FE_SWITCH,
	DCGM_FE_GPU_I,
	DCGM_FE_GPU_CI,
} dcgm_field_entity_group_t;

typedef unsigned int dcgm_field_eid_t;
typedef uintptr_t dcgmHandle_t;
typedef uintptr_t dcgmGpuGrp_t;
typedef uintptr_t dcgmFieldGrp_t;

#define DCGM_MAX_NUM_DEVICES 32
#define DCGM_MAX_STR_LENGTH 256
#define DCGM_MAX_BLOB_LENGTH 4096
#define DCGM_MAX_TOTAL_INSTANCES_PER_GPU 14
#define DCGM_MAX_HIERARCHY_INFO DCGM_MAX_NUM_DEVICES *DCGM_MAX_TOTAL_INSTANCES_PER_GPU
#define DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP 128
#define MAKE_DCGM_VERSION(typeName, ver) (unsigned int)(sizeof(typeName) | ((unsigned long)(ver) << 24U))

#define DCGM_FT_DOUBLE 'd'
#define DCGM_FT_INT64 'i'
#define DCGM_FT_STRING 's'

#define DCGM_INT64_BLANK 0x7ffffffffffffff0
#define DCGM_FP64_BLANK 140737488355328.0
#define DCGM_INT64_NOT_SUPPORTED (DCGM_INT64_BLANK + 2)

typedef struct {
	unsigned int version;
	unsigned short fieldId;
	unsigned short fieldType;
	int status;
	int64_t ts;
	union {
		int64_t i64;
		double dbl;
		char str[DCGM_MAX_STR_LENGTH];
		char blob[DCGM_MAX_BLOB_LENGTH];
	} value;
} dcgmFieldValue_v1;
#define dcgmFieldValue_version1 MAKE_DCGM_VERSION(dcgmFieldValue_v1, 1)

typedef struct {
	unsigned int version;
	unsigned int persistAfterDisconnect;
	unsigned int timeoutMs;
	unsigned int addressIsUnixSocket;
} dcgmConnectV2Params_v2;
typedef dcgmConnectV2Params_v2 dcgmConnectV2Params_t;
#define dcgmConnectV2Params_version2 MAKE_DCGM_VERSION(dcgmConnectV2Params_v2, 2)

typedef struct {
	dcgm_field_entity_group_t entityGroupId;
	dcgm_field_eid_t entityId;
} dcgmGroupEntityPair_t;

typedef struct {
	char gpuUuid[128];
	unsigned int nvmlGpuIndex;
	unsigned int nvmlInstanceId;
	unsigned int nvmlComputeInstanceId;
	unsigned int nvmlMigProfileId;
	unsigned int nvmlProfileSlices;
} dcgmMigEntityInfo_t;

typedef struct {
	dcgmGroupEntityPair_t entity;
	dcgmGroupEntityPair_t parent;
	dcgmMigEntityInfo_t info;
} dcgmMigHierarchyInfo_v2;

typedef struct {
	unsigned int version;
	unsigned int count;
	dcgmMigHierarchyInfo_v2 entityList[DCGM_MAX_HIERARCHY_INFO];
} dcgmMigHierarchy_v2;
#define dcgmMigHierarchy_version2 MAKE_DCGM_VERSION(dcgmMigHierarchy_v2, 2)
/* --- end of the header's declarations --- */

EXPORT void xpuscope_fake_dcgm_layout(uint64_t out[20])
{
	out[0] = sizeof(dcgmFieldValue_v1);
	out[1] = offsetof(dcgmFieldValue_v1, version);
	out[2] = offsetof(dcgmFieldValue_v1, fieldId);
	out[3] = offsetof(dcgmFieldValue_v1, fieldType);
	out[4] = offsetof(dcgmFieldValue_v1, status);
	out[5] = offsetof(dcgmFieldValue_v1, ts);
	out[6] = offsetof(dcgmFieldValue_v1, value);
	out[7] = sizeof(dcgmConnectV2Params_v2);
	out[8] = offsetof(dcgmConnectV2Params_v2, timeoutMs);
	out[9] = offsetof(dcgmConnectV2Params_v2, addressIsUnixSocket);
	out[10] = sizeof(dcgmGroupEntityPair_t);
	out[11] = sizeof(dcgmMigEntityInfo_t);
	out[12] = offsetof(dcgmMigEntityInfo_t, nvmlInstanceId);
	out[13] = offsetof(dcgmMigEntityInfo_t, nvmlComputeInstanceId);
	out[14] = sizeof(dcgmMigHierarchyInfo_v2);
	out[15] = offsetof(dcgmMigHierarchyInfo_v2, info);
	out[16] = sizeof(dcgmMigHierarchy_v2);
	out[17] = offsetof(dcgmMigHierarchy_v2, entityList);
	out[18] = dcgmConnectV2Params_version2;
	out[19] = dcgmMigHierarchy_version2;
}

/* --- state --- */

#define FAKE_HANDLE ((dcgmHandle_t)0x5ca1ab1e)
#define MAX_GROUPS 64
#define MAX_ENTITIES 64
#define MAX_WATCHES 1024

static int initialized;
static int embedded;
static int connected;
static char connectedTo[256];
static unsigned int connectedUnix;
static dcgmReturn_t failAll; /* every read fails with it, when not OK */
#ifdef PROF_BUSY
static int busy = 1;
#else
static int busy;
#endif
static int watchCalls;
static int latestCalls;
static int64_t ageUs; /* how old the values read are */

struct group {
	int used;
	int n;
	dcgmGroupEntityPair_t e[MAX_ENTITIES];
};
static struct group groups[MAX_GROUPS];

struct fieldGroup {
	int used;
	char name[64];
	int n;
	unsigned short ids[DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP];
};
static struct fieldGroup fieldGroups[MAX_GROUPS];

struct watch {
	dcgm_field_entity_group_t eg;
	unsigned int id;
	unsigned short field;
};
static struct watch watches[MAX_WATCHES];
static int nWatches;

/* state[0] initialized, [1] embedded, [2] connected, [3] groups in use,
 * [4] field groups in use, [5] watches, [6] dcgmWatchFields calls, [7]
 * dcgmEntityGetLatestValues calls. */
EXPORT void xpuscope_fake_dcgm_state(int64_t out[8])
{
	int g = 0, fg = 0;
	for (int i = 0; i < MAX_GROUPS; i++) {
		g += groups[i].used;
		fg += fieldGroups[i].used;
	}
	out[0] = initialized;
	out[1] = embedded;
	out[2] = connected;
	out[3] = g;
	out[4] = fg;
	out[5] = nWatches;
	out[6] = watchCalls;
	out[7] = latestCalls;
}

/* From now on every dcgmEntityGetLatestValues fails with ret (OK: none). */
EXPORT void xpuscope_fake_dcgm_fail(int ret) { failAll = (dcgmReturn_t)ret; }

/* Another profiler takes (1) or leaves (0) the counters: while it holds
 * them, watches of profiling fields fail with DCGM_ST_IN_USE and the
 * values already watched read DCGM_FP64_BLANK / DCGM_INT64_BLANK, as DCGM
 * stores while profiling is paused. */
EXPORT void xpuscope_fake_dcgm_busy(int on) { busy = on; }

/* From now on the values read are us microseconds old. */
EXPORT void xpuscope_fake_dcgm_age(int64_t us) { ageUs = us; }

/* Where dcgmConnect_v2 connected: the address, and whether it was a unix
 * socket. Returns 0 when not connected. */
EXPORT int xpuscope_fake_dcgm_connected(char *out, unsigned int len, unsigned int *isUnix)
{
	if (!connected)
		return 0;
	snprintf(out, len, "%s", connectedTo);
	*isUnix = connectedUnix;
	return 1;
}

/* --- values --- */

static int isProf(unsigned short f) { return f >= 1001 && f <= 1012; }

#define NOVALUE 1e300 /* a marker in the tables below: the special cases */

static const double profValues[2][12] = {
	{0.875, 0.75, 0.5, 0.625, 0.25, 0.0625, 0.375, NOVALUE, 1.5e9, 2.5e9, 40e9, NOVALUE},
	{0.5, 0.4375, 0.125, 0.3125, NOVALUE, NOVALUE, 0.1875, 0.03125, 1e6, 3e6, 0, 0},
};

static int hasMig(unsigned int gpu)
{
#ifdef FAKE_MIG
	return gpu == 1;
#else
	(void)gpu;
	return 0;
#endif
}

static void setDouble(dcgmFieldValue_v1 *v, double d)
{
	v->fieldType = DCGM_FT_DOUBLE;
	v->value.dbl = d;
}

static void setInt(dcgmFieldValue_v1 *v, int64_t i)
{
	v->fieldType = DCGM_FT_INT64;
	v->value.i64 = i;
}

static void setString(dcgmFieldValue_v1 *v, const char *s)
{
	v->fieldType = DCGM_FT_STRING;
	snprintf(v->value.str, sizeof(v->value.str), "%s", s);
}

static int watched(dcgm_field_entity_group_t eg, unsigned int id, unsigned short f)
{
	for (int i = 0; i < nWatches; i++)
		if (watches[i].eg == eg && watches[i].id == id && watches[i].field == f)
			return 1;
	return 0;
}

static void fill(dcgm_field_entity_group_t eg, unsigned int id, unsigned short f, dcgmFieldValue_v1 *v)
{
	char buf[128];
	memset(v, 0, sizeof(*v));
	v->version = dcgmFieldValue_version1;
	v->fieldId = f;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	v->ts = (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000 - ageUs;
	if (eg == DCGM_FE_NONE && f == 1) { /* DCGM_FI_DRIVER_VERSION */
		setString(v, "550.54.15");
		return;
	}
	if (!watched(eg, id, f)) {
		v->status = DCGM_ST_NOT_WATCHED;
		return;
	}
	if (eg == DCGM_FE_GPU) {
		switch (f) {
		case 50:
			setString(v, "NVIDIA H100 80GB HBM3");
			return;
		case 54:
			snprintf(buf, sizeof buf, "GPU-0000000%u-aaaa-bbbb-cccc-dddddddddddd", id);
			setString(v, buf);
			return;
		case 57:
			snprintf(buf, sizeof buf, "00000000:%02X:00.0", 0x18 + id);
			setString(v, buf);
			return;
		}
	}
	if (!isProf(f)) {
		v->status = DCGM_ST_NOT_SUPPORTED;
		return;
	}
	unsigned int gpu = eg == DCGM_FE_GPU ? id : 1;
	int row = gpu == 1 ? 1 : 0;
	int col = f - 1001;
	int isInt = f >= 1009;
	if (busy) {
		if (isInt)
			setInt(v, DCGM_INT64_BLANK);
		else
			setDouble(v, DCGM_FP64_BLANK);
		return;
	}
	double d = profValues[row][col];
	if (eg == DCGM_FE_GPU_CI && f > 1008) {
		v->status = DCGM_ST_NOT_SUPPORTED;
		return;
	}
	if (eg == DCGM_FE_GPU_CI && d != NOVALUE)
		d *= id == 0 ? 0.5 : 0.25;
	if (d == NOVALUE) {
		if (row == 0 && f == 1008) {
			setDouble(v, DCGM_FP64_BLANK);
		} else if (row == 0 && f == 1012) {
			setInt(v, DCGM_INT64_NOT_SUPPORTED);
		} else if (row == 1 && f == 1005) {
			setDouble(v, NAN);
		} else {
			setDouble(v, DCGM_FP64_BLANK);
		}
		return;
	}
	if (isInt)
		setInt(v, (int64_t)d);
	else
		setDouble(v, d);
}

/* --- the API --- */

#ifndef INIT_STATUS
#define INIT_STATUS DCGM_ST_OK
#endif

EXPORT dcgmReturn_t dcgmInit(void)
{
	if (INIT_STATUS != DCGM_ST_OK)
		return INIT_STATUS;
	initialized++;
	return DCGM_ST_OK;
}

EXPORT dcgmReturn_t dcgmShutdown(void)
{
	if (initialized == 0)
		return DCGM_ST_UNINITIALIZED;
	initialized--;
	if (initialized == 0) {
		memset(groups, 0, sizeof groups);
		memset(fieldGroups, 0, sizeof fieldGroups);
		nWatches = 0;
		embedded = connected = 0;
	}
	return DCGM_ST_OK;
}

EXPORT const char *errorString(dcgmReturn_t result)
{
	switch (result) {
	case DCGM_ST_IN_USE:
		return "fake: the requested operation could not be completed because the affected resource is in use";
	case DCGM_ST_CONNECTION_NOT_VALID:
		return "fake: the connection to the host engine is not valid any longer";
	case DCGM_ST_INIT_ERROR:
		return "fake: DCGM initialization error";
	default:
		return "fake: an error";
	}
}

static dcgmReturn_t checkHandle(dcgmHandle_t h)
{
	if (!initialized)
		return DCGM_ST_UNINITIALIZED;
	if (h != FAKE_HANDLE || (!embedded && !connected))
		return DCGM_ST_BADPARAM;
	return DCGM_ST_OK;
}

EXPORT dcgmReturn_t dcgmStartEmbedded(dcgmOperationMode_t opMode, dcgmHandle_t *pDcgmHandle)
{
	if (!initialized)
		return DCGM_ST_UNINITIALIZED;
	if (opMode != DCGM_OPERATION_MODE_AUTO && opMode != DCGM_OPERATION_MODE_MANUAL)
		return DCGM_ST_BADPARAM;
	if (pDcgmHandle == NULL)
		return DCGM_ST_BADPARAM;
	embedded = 1;
	*pDcgmHandle = FAKE_HANDLE;
	return DCGM_ST_OK;
}

EXPORT dcgmReturn_t dcgmStopEmbedded(dcgmHandle_t pDcgmHandle)
{
	if (!initialized || !embedded)
		return DCGM_ST_UNINITIALIZED;
	if (pDcgmHandle != FAKE_HANDLE)
		return DCGM_ST_BADPARAM;
	embedded = 0;
	nWatches = 0;
	return DCGM_ST_OK;
}

EXPORT dcgmReturn_t dcgmConnect_v2(const char *ipAddress, dcgmConnectV2Params_t *connectParams, dcgmHandle_t *pDcgmHandle)
{
	if (!initialized)
		return DCGM_ST_UNINITIALIZED;
	if (ipAddress == NULL || connectParams == NULL || pDcgmHandle == NULL)
		return DCGM_ST_BADPARAM;
	if (connectParams->version != dcgmConnectV2Params_version2)
		return DCGM_ST_VER_MISMATCH;
	/* The fake host engine answers only at the addresses the tests give. */
	if (strstr(ipAddress, "no-hostengine") != NULL)
		return DCGM_ST_CONNECTION_NOT_VALID;
	snprintf(connectedTo, sizeof connectedTo, "%s", ipAddress);
	connectedUnix = connectParams->addressIsUnixSocket;
	connected = 1;
	*pDcgmHandle = FAKE_HANDLE;
	return DCGM_ST_OK;
}

EXPORT dcgmReturn_t dcgmDisconnect(dcgmHandle_t pDcgmHandle)
{
	if (!initialized || !connected)
		return DCGM_ST_UNINITIALIZED;
	if (pDcgmHandle != FAKE_HANDLE)
		return DCGM_ST_BADPARAM;
	connected = 0;
	nWatches = 0;
	return DCGM_ST_OK;
}

EXPORT dcgmReturn_t dcgmGetAllSupportedDevices(dcgmHandle_t h, unsigned int gpuIdList[DCGM_MAX_NUM_DEVICES], int *count)
{
	dcgmReturn_t r = checkHandle(h);
	if (r != DCGM_ST_OK)
		return r;
	if (gpuIdList == NULL || count == NULL)
		return DCGM_ST_BADPARAM;
	for (unsigned int i = 0; i < FAKE_GPUS; i++)
		gpuIdList[i] = i;
	*count = FAKE_GPUS;
	return DCGM_ST_OK;
}

#ifndef OMIT_HIERARCHY
EXPORT dcgmReturn_t dcgmGetGpuInstanceHierarchy(dcgmHandle_t h, dcgmMigHierarchy_v2 *hierarchy)
{
	dcgmReturn_t r = checkHandle(h);
	if (r != DCGM_ST_OK)
		return r;
	if (hierarchy == NULL)
		return DCGM_ST_BADPARAM;
	if (hierarchy->version != dcgmMigHierarchy_version2)
		return DCGM_ST_VER_MISMATCH;
	hierarchy->count = 0;
	for (unsigned int gpu = 0; gpu < FAKE_GPUS; gpu++) {
		if (!hasMig(gpu))
			continue;
		static const unsigned int gis[2] = {9, 2};
		for (unsigned int k = 0; k < 2; k++) {
			/* the GPU instance, then its compute instance */
			dcgmMigHierarchyInfo_v2 *gi = &hierarchy->entityList[hierarchy->count++];
			gi->entity.entityGroupId = DCGM_FE_GPU_I;
			gi->entity.entityId = k;
			gi->parent.entityGroupId = DCGM_FE_GPU;
			gi->parent.entityId = gpu;
			snprintf(gi->info.gpuUuid, sizeof gi->info.gpuUuid, "GPU-0000000%u-aaaa-bbbb-cccc-dddddddddddd", gpu);
			gi->info.nvmlGpuIndex = gpu;
			gi->info.nvmlInstanceId = gis[k];
			gi->info.nvmlComputeInstanceId = (unsigned int)-1;
			dcgmMigHierarchyInfo_v2 *ci = &hierarchy->entityList[hierarchy->count++];
			*ci = *gi;
			ci->entity.entityGroupId = DCGM_FE_GPU_CI;
			ci->entity.entityId = k;
			ci->parent.entityGroupId = DCGM_FE_GPU_I;
			ci->parent.entityId = k;
			ci->info.nvmlComputeInstanceId = 0;
		}
	}
	return DCGM_ST_OK;
}
#endif

EXPORT dcgmReturn_t dcgmGroupCreate(dcgmHandle_t h, dcgmGroupType_t type, const char *groupName, dcgmGpuGrp_t *pDcgmGrpId)
{
	dcgmReturn_t r = checkHandle(h);
	if (r != DCGM_ST_OK)
		return r;
	if (type != DCGM_GROUP_EMPTY || groupName == NULL || pDcgmGrpId == NULL)
		return DCGM_ST_BADPARAM;
	for (int i = 0; i < MAX_GROUPS; i++) {
		if (!groups[i].used) {
			memset(&groups[i], 0, sizeof groups[i]);
			groups[i].used = 1;
			*pDcgmGrpId = (dcgmGpuGrp_t)(i + 1);
			return DCGM_ST_OK;
		}
	}
	return DCGM_ST_MAX_LIMIT;
}

static struct group *group(dcgmGpuGrp_t g)
{
	if (g < 1 || g > MAX_GROUPS || !groups[g - 1].used)
		return NULL;
	return &groups[g - 1];
}

static int entityExists(dcgm_field_entity_group_t eg, dcgm_field_eid_t id)
{
	switch (eg) {
	case DCGM_FE_GPU:
		return id < FAKE_GPUS;
	case DCGM_FE_GPU_I:
	case DCGM_FE_GPU_CI:
		return hasMig(1) && id < 2;
	default:
		return 0;
	}
}

EXPORT dcgmReturn_t dcgmGroupAddEntity(dcgmHandle_t h, dcgmGpuGrp_t groupId, dcgm_field_entity_group_t entityGroupId, dcgm_field_eid_t entityId)
{
	dcgmReturn_t r = checkHandle(h);
	if (r != DCGM_ST_OK)
		return r;
	struct group *g = group(groupId);
	if (g == NULL)
		return DCGM_ST_NOT_CONFIGURED;
	if (!entityExists(entityGroupId, entityId) || g->n == MAX_ENTITIES)
		return DCGM_ST_BADPARAM;
	g->e[g->n].entityGroupId = entityGroupId;
	g->e[g->n].entityId = entityId;
	g->n++;
	return DCGM_ST_OK;
}

EXPORT dcgmReturn_t dcgmGroupDestroy(dcgmHandle_t h, dcgmGpuGrp_t groupId)
{
	dcgmReturn_t r = checkHandle(h);
	if (r != DCGM_ST_OK)
		return r;
	struct group *g = group(groupId);
	if (g == NULL)
		return DCGM_ST_NOT_CONFIGURED;
	g->used = 0;
	return DCGM_ST_OK;
}

EXPORT dcgmReturn_t dcgmFieldGroupCreate(dcgmHandle_t h, int numFieldIds, const unsigned short *fieldIds, const char *fieldGroupName, dcgmFieldGrp_t *dcgmFieldGroupId)
{
	dcgmReturn_t r = checkHandle(h);
	if (r != DCGM_ST_OK)
		return r;
	if (numFieldIds < 1 || numFieldIds > DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP || fieldIds == NULL ||
	    fieldGroupName == NULL || dcgmFieldGroupId == NULL)
		return DCGM_ST_BADPARAM;
	for (int i = 0; i < MAX_GROUPS; i++) /* names are unique */
		if (fieldGroups[i].used && strcmp(fieldGroups[i].name, fieldGroupName) == 0)
			return DCGM_ST_BADPARAM;
	for (int i = 0; i < MAX_GROUPS; i++) {
		if (!fieldGroups[i].used) {
			fieldGroups[i].used = 1;
			snprintf(fieldGroups[i].name, sizeof fieldGroups[i].name, "%s", fieldGroupName);
			fieldGroups[i].n = numFieldIds;
			memcpy(fieldGroups[i].ids, fieldIds, numFieldIds * sizeof *fieldIds);
			*dcgmFieldGroupId = (dcgmFieldGrp_t)(i + 1);
			return DCGM_ST_OK;
		}
	}
	return DCGM_ST_MAX_LIMIT;
}

static struct fieldGroup *fieldGroup(dcgmFieldGrp_t fg)
{
	if (fg < 1 || fg > MAX_GROUPS || !fieldGroups[fg - 1].used)
		return NULL;
	return &fieldGroups[fg - 1];
}

EXPORT dcgmReturn_t dcgmFieldGroupDestroy(dcgmHandle_t h, dcgmFieldGrp_t dcgmFieldGroupId)
{
	dcgmReturn_t r = checkHandle(h);
	if (r != DCGM_ST_OK)
		return r;
	struct fieldGroup *fg = fieldGroup(dcgmFieldGroupId);
	if (fg == NULL)
		return DCGM_ST_BADPARAM;
	fg->used = 0;
	return DCGM_ST_OK;
}

static int hasField(struct fieldGroup *fg, unsigned short f)
{
	for (int i = 0; i < fg->n; i++)
		if (fg->ids[i] == f)
			return 1;
	return 0;
}

EXPORT dcgmReturn_t dcgmWatchFields(dcgmHandle_t h, dcgmGpuGrp_t groupId, dcgmFieldGrp_t fieldGroupId, long long updateFreq,
				    double maxKeepAge, int maxKeepSamples)
{
	dcgmReturn_t r = checkHandle(h);
	if (r != DCGM_ST_OK)
		return r;
	watchCalls++;
	struct group *g = group(groupId);
	struct fieldGroup *fg = fieldGroup(fieldGroupId);
	if (g == NULL || fg == NULL)
		return DCGM_ST_NOT_CONFIGURED;
	/* The arguments as the caller passes them: a frequency in µs, an age
	 * in seconds (a double: checks the float register), a sample count. */
	if (updateFreq <= 0 || !(maxKeepAge > 0) || maxKeepAge > 3600 || maxKeepSamples < 0)
		return DCGM_ST_BADPARAM;
	int prof = 0;
	for (int i = 0; i < fg->n; i++)
		prof |= isProf(fg->ids[i]);
	if (prof) {
#ifdef PROF_UNSUPPORTED
		return DCGM_ST_PROFILING_NOT_SUPPORTED;
#endif
		if (busy)
			return DCGM_ST_IN_USE;
	}
	for (int e = 0; e < g->n; e++) {
		/* GPU 1 cannot count the FP64 pipe in the pass of the tensor pipe */
		unsigned int gpu = g->e[e].entityGroupId == DCGM_FE_GPU ? g->e[e].entityId : 1;
		if (gpu == 1 && hasField(fg, 1004) && hasField(fg, 1006))
			return DCGM_ST_PROFILING_MULTI_PASS;
	}
	for (int e = 0; e < g->n; e++) {
		for (int i = 0; i < fg->n; i++) {
			if (watched(g->e[e].entityGroupId, g->e[e].entityId, fg->ids[i]))
				continue;
			if (nWatches == MAX_WATCHES)
				return DCGM_ST_MAX_LIMIT;
			watches[nWatches].eg = g->e[e].entityGroupId;
			watches[nWatches].id = g->e[e].entityId;
			watches[nWatches].field = fg->ids[i];
			nWatches++;
		}
	}
	return DCGM_ST_OK;
}

EXPORT dcgmReturn_t dcgmUnwatchFields(dcgmHandle_t h, dcgmGpuGrp_t groupId, dcgmFieldGrp_t fieldGroupId)
{
	dcgmReturn_t r = checkHandle(h);
	if (r != DCGM_ST_OK)
		return r;
	struct group *g = group(groupId);
	struct fieldGroup *fg = fieldGroup(fieldGroupId);
	if (g == NULL || fg == NULL)
		return DCGM_ST_NOT_CONFIGURED;
	int k = 0;
	for (int i = 0; i < nWatches; i++) {
		int drop = 0;
		for (int e = 0; e < g->n; e++)
			if (watches[i].eg == g->e[e].entityGroupId && watches[i].id == g->e[e].entityId && hasField(fg, watches[i].field))
				drop = 1;
		if (!drop)
			watches[k++] = watches[i];
	}
	nWatches = k;
	return DCGM_ST_OK;
}

EXPORT dcgmReturn_t dcgmUpdateAllFields(dcgmHandle_t h, int waitForUpdate)
{
	(void)waitForUpdate;
	return checkHandle(h);
}

EXPORT dcgmReturn_t dcgmEntityGetLatestValues(dcgmHandle_t h, dcgm_field_entity_group_t entityGroup, int entityId,
					      unsigned short fields[], unsigned int count, dcgmFieldValue_v1 values[])
{
	dcgmReturn_t r = checkHandle(h);
	if (r != DCGM_ST_OK)
		return r;
	latestCalls++;
	if (failAll != DCGM_ST_OK)
		return failAll;
	if (fields == NULL || values == NULL || count == 0)
		return DCGM_ST_BADPARAM;
	if (entityGroup != DCGM_FE_NONE && !entityExists(entityGroup, (dcgm_field_eid_t)entityId))
		return DCGM_ST_BADPARAM;
	for (unsigned int i = 0; i < count; i++)
		fill(entityGroup, (unsigned int)entityId, fields[i], &values[i]);
	return DCGM_ST_OK;
}
