/*
 * A fake librdc_bootstrap.so for the tests of package rdc and of the gpu
 * Source's RDC backend. Debian ships no RDC (ROCm's Data Center tool
 * comes from AMD's repositories), and its fields need an AMD GPU: the
 * tests build this library from C with gcc instead. It exports RDC's real
 * entry points, by their real names, with the real struct layouts, and
 * answers with fixed values.
 *
 * The declarations below are copied from RDC's public header,
 * include/rdc/rdc.h (ROCm's rocm-systems repository, projects/rdc; enums
 * cut to the values used). xpuscope_fake_rdc_layout reports sizeof and
 * offsetof of the structs so that a test compares them with the Go
 * binding.
 *
 * Test hooks, not part of RDC: xpuscope_fake_rdc_layout,
 * xpuscope_fake_rdc_state, xpuscope_fake_rdc_fail (below).
 *
 * Build flags:
 *   -DFAKE_GPUS=N         report N GPUs (default 2); GPUs past the first
 *                         two repeat GPU 0's values;
 *   -DOMIT_STATUS_STRING  leave rdc_status_string out (an optional symbol);
 *   -DSTART_STATUS=N      make rdc_start_embedded return N (3 is
 *                         RDC_ST_FAIL_LOAD_MODULE: librdc.so not found).
 *
 * Values (GPU 0 | GPU 1), as RDC reports them:
 *
 *   name        AMD Instinct MI300X (fake) | AMD Radeon PRO W7900 (fake)
 *   300 POWER_USAGE µW          512000000 | UINT64_MAX (amd-smi's "no value")
 *   500 GPU_UTIL %              87 | 12
 *   501 GPU_MEMORY_USAGE        60 GiB | 2 GiB
 *   502 GPU_MEMORY_TOTAL        192 GiB | 48 GiB
 *   600 ECC_CORRECT_TOTAL       5 | RDC_ST_NOT_SUPPORTED
 *   601 ECC_UNCORRECT_TOTAL     1 | RDC_ST_NOT_SUPPORTED
 *   716 XGMI_TOTAL_READ_KB      1000000 | RDC_ST_NOT_SUPPORTED
 *   717 XGMI_TOTAL_WRITE_KB     2000000 | RDC_ST_NOT_SUPPORTED
 *   800 PROF_OCCUPANCY_PERCENT  45.5 | 20
 *   802 PROF_ACTIVE_WAVES       123456 | 1000
 *   804 PROF_TENSOR_ACTIVE_%    62.5 | 31.25
 *   806 PROF_EVAL_MEM_R_BW      1500 (KiB/ms) | not watched: see below
 *   807 PROF_EVAL_MEM_W_BW      500 | not watched
 *   812 PROF_SM_ACTIVE %        RDC_ST_NOT_SUPPORTED (a GPU without the
 *                               counter) | not watched
 *
 * GPU 1's counters hold three profiling fields: a watch that would give it
 * a fourth fails with RDC_ST_INSUFF_RESOURCES.
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

/* --- from include/rdc/rdc.h --- */
typedef enum {
	RDC_ST_OK = 0,
	RDC_ST_NOT_SUPPORTED,
	RDC_ST_SMI_ERROR,
	RDC_ST_FAIL_LOAD_MODULE,
	RDC_ST_INVALID_HANDLER,
	RDC_ST_BAD_PARAMETER,
	RDC_ST_NOT_FOUND,
	RDC_ST_CONFLICT,
	RDC_ST_CLIENT_ERROR,
	RDC_ST_ALREADY_EXIST,
	RDC_ST_MAX_LIMIT,
	RDC_ST_INSUFF_RESOURCES,
	RDC_ST_FILE_ERROR,
	RDC_ST_NO_DATA,
	RDC_ST_PERM_ERROR,
	RDC_ST_CORRUPTED_EEPROM,
	RDC_ST_DISABLED_MODULE,
	RDC_ST_UNKNOWN_ERROR = 0xFFFFFFFF
} rdc_status_t;

typedef enum { RDC_OPERATION_MODE_AUTO = 0, RDC_OPERATION_MODE_MANUAL } rdc_operation_mode_t;
typedef enum { RDC_GROUP_DEFAULT = 0, RDC_GROUP_EMPTY } rdc_group_type_t;
typedef enum { INTEGER = 0, DOUBLE, STRING, BLOB } rdc_field_type_t;

#define RDC_MAX_STR_LENGTH 256
#define RDC_GROUP_MAX_ENTITIES 64
#define RDC_MAX_NUM_DEVICES 128
#define RDC_MAX_FIELD_IDS_PER_FIELD_GROUP 128
#define RDC_MAX_NUM_GROUPS 64
#define RDC_MAX_NUM_FIELD_GROUPS 64

typedef enum {
	RDC_FI_INVALID = 0,
	RDC_FI_POWER_USAGE = 300,
	RDC_FI_GPU_UTIL = 500,
	RDC_FI_GPU_MEMORY_USAGE,
	RDC_FI_GPU_MEMORY_TOTAL,
	RDC_FI_ECC_CORRECT_TOTAL = 600,
	RDC_FI_ECC_UNCORRECT_TOTAL,
	RDC_FI_XGMI_0_READ_KB = 700,
	RDC_FI_XGMI_1_READ_KB,
	RDC_FI_XGMI_2_READ_KB,
	RDC_FI_XGMI_3_READ_KB,
	RDC_FI_XGMI_4_READ_KB,
	RDC_FI_XGMI_5_READ_KB,
	RDC_FI_XGMI_6_READ_KB,
	RDC_FI_XGMI_7_READ_KB,
	RDC_FI_XGMI_0_WRITE_KB,
	RDC_FI_XGMI_1_WRITE_KB,
	RDC_FI_XGMI_2_WRITE_KB,
	RDC_FI_XGMI_3_WRITE_KB,
	RDC_FI_XGMI_4_WRITE_KB,
	RDC_FI_XGMI_5_WRITE_KB,
	RDC_FI_XGMI_6_WRITE_KB,
	RDC_FI_XGMI_7_WRITE_KB,
	RDC_FI_XGMI_TOTAL_READ_KB,
	RDC_FI_XGMI_TOTAL_WRITE_KB,
	RDC_FI_PROF_OCCUPANCY_PERCENT = 800,
	RDC_FI_PROF_ACTIVE_CYCLES,
	RDC_FI_PROF_ACTIVE_WAVES,
	RDC_FI_PROF_ELAPSED_CYCLES,
	RDC_FI_PROF_TENSOR_ACTIVE_PERCENT,
	RDC_FI_PROF_GPU_UTIL_PERCENT,
	RDC_FI_PROF_EVAL_MEM_R_BW,
	RDC_FI_PROF_EVAL_MEM_W_BW,
	RDC_FI_PROF_EVAL_FLOPS_16,
	RDC_FI_PROF_EVAL_FLOPS_32,
	RDC_FI_PROF_EVAL_FLOPS_64,
	RDC_FI_PROF_VALU_PIPE_ISSUE_UTIL,
	RDC_FI_PROF_SM_ACTIVE,
} rdc_field_t;

typedef void *rdc_handle_t;
typedef uint32_t rdc_gpu_group_t;
typedef uint32_t rdc_field_grp_t;

typedef struct {
	char device_name[RDC_MAX_STR_LENGTH];
	uint64_t device_id;
	uint32_t num_of_compute_units;
	uint64_t target_graphics_version;
} rdc_device_attributes_t;

typedef union {
	int64_t l_int;
	double dbl;
	char str[RDC_MAX_STR_LENGTH];
} rdc_field_value_data;

typedef struct {
	rdc_field_t field_id;
	int status;
	uint64_t ts;
	rdc_field_type_t type;
	rdc_field_value_data value;
} rdc_field_value;
/* --- end of the header's declarations --- */

/* The ids the binding hard-codes, as the header's implicit enumerators
 * number them. */
_Static_assert(RDC_FI_XGMI_TOTAL_READ_KB == 716 && RDC_FI_XGMI_TOTAL_WRITE_KB == 717, "RDC_FI_XGMI_TOTAL_*_KB");
_Static_assert(RDC_FI_PROF_ACTIVE_WAVES == 802 && RDC_FI_PROF_TENSOR_ACTIVE_PERCENT == 804, "RDC_FI_PROF_*");
_Static_assert(RDC_FI_PROF_EVAL_MEM_R_BW == 806 && RDC_FI_PROF_EVAL_MEM_W_BW == 807, "RDC_FI_PROF_EVAL_MEM_*_BW");
_Static_assert(RDC_FI_PROF_SM_ACTIVE == 812, "RDC_FI_PROF_SM_ACTIVE");

EXPORT void xpuscope_fake_rdc_layout(uint64_t out[10])
{
	out[0] = sizeof(rdc_field_value);
	out[1] = offsetof(rdc_field_value, field_id);
	out[2] = offsetof(rdc_field_value, status);
	out[3] = offsetof(rdc_field_value, ts);
	out[4] = offsetof(rdc_field_value, type);
	out[5] = offsetof(rdc_field_value, value);
	out[6] = sizeof(rdc_device_attributes_t);
	out[7] = offsetof(rdc_device_attributes_t, device_id);
	out[8] = offsetof(rdc_device_attributes_t, num_of_compute_units);
	out[9] = offsetof(rdc_device_attributes_t, target_graphics_version);
}

/* --- state --- */

#define FAKE_HANDLE ((rdc_handle_t)0x0dc0ffee)
#define MAX_WATCHES 1024
#define GPU1_PROFILING_CAPACITY 3

static int initialized;
static int embedded;
static rdc_status_t failAll;
static int latestCalls;

struct group {
	int used;
	int n;
	uint32_t gpus[RDC_GROUP_MAX_ENTITIES];
};
static struct group groups[RDC_MAX_NUM_GROUPS];

struct fieldGroup {
	int used;
	char name[64];
	uint32_t n;
	rdc_field_t ids[RDC_MAX_FIELD_IDS_PER_FIELD_GROUP];
};
static struct fieldGroup fieldGroups[RDC_MAX_NUM_FIELD_GROUPS];

struct watch {
	uint32_t gpu;
	rdc_field_t field;
};
static struct watch watches[MAX_WATCHES];
static int nWatches;

/* state[0] initialized, [1] embedded, [2] GPU groups, [3] field groups,
 * [4] watches, [5] rdc_field_get_latest_value calls. */
EXPORT void xpuscope_fake_rdc_state(int64_t out[6])
{
	int g = 0, fg = 0;
	for (int i = 0; i < RDC_MAX_NUM_GROUPS; i++)
		g += groups[i].used;
	for (int i = 0; i < RDC_MAX_NUM_FIELD_GROUPS; i++)
		fg += fieldGroups[i].used;
	out[0] = initialized;
	out[1] = embedded;
	out[2] = g;
	out[3] = fg;
	out[4] = nWatches;
	out[5] = latestCalls;
}

/* From now on every rdc_field_get_latest_value fails with st (0: none). */
EXPORT void xpuscope_fake_rdc_fail(uint32_t st) { failAll = (rdc_status_t)st; }

static int isProf(rdc_field_t f) { return f >= 800 && f < 1000; }

static int watched(uint32_t gpu, rdc_field_t f)
{
	for (int i = 0; i < nWatches; i++)
		if (watches[i].gpu == gpu && watches[i].field == f)
			return 1;
	return 0;
}

static int profWatched(uint32_t gpu)
{
	int n = 0;
	for (int i = 0; i < nWatches; i++)
		n += watches[i].gpu == gpu && isProf(watches[i].field);
	return n;
}

/* --- the API --- */

#ifndef START_STATUS
#define START_STATUS RDC_ST_OK
#endif

EXPORT rdc_status_t rdc_init(uint64_t init_flags)
{
	if (init_flags != 0)
		return RDC_ST_BAD_PARAMETER;
	initialized = 1;
	return RDC_ST_OK;
}

EXPORT rdc_status_t rdc_shutdown(void)
{
	initialized = 0;
	embedded = 0;
	nWatches = 0;
	memset(groups, 0, sizeof groups);
	memset(fieldGroups, 0, sizeof fieldGroups);
	return RDC_ST_OK;
}

#ifndef OMIT_STATUS_STRING
EXPORT const char *rdc_status_string(rdc_status_t status)
{
	switch (status) {
	case RDC_ST_INSUFF_RESOURCES:
		return "fake: not enough resources to complete operation";
	case RDC_ST_FAIL_LOAD_MODULE:
		return "fake: fail to load module";
	case RDC_ST_NOT_SUPPORTED:
		return "fake: not supported";
	default:
		return "fake: an error";
	}
}
#endif

EXPORT rdc_status_t rdc_start_embedded(rdc_operation_mode_t op_mode, rdc_handle_t *p_rdc_handle)
{
	if (!initialized)
		return RDC_ST_FAIL_LOAD_MODULE;
	if (START_STATUS != RDC_ST_OK)
		return START_STATUS;
	if (op_mode != RDC_OPERATION_MODE_AUTO && op_mode != RDC_OPERATION_MODE_MANUAL)
		return RDC_ST_BAD_PARAMETER;
	if (p_rdc_handle == NULL)
		return RDC_ST_BAD_PARAMETER;
	embedded = 1;
	*p_rdc_handle = FAKE_HANDLE;
	return RDC_ST_OK;
}

static rdc_status_t check(rdc_handle_t h)
{
	if (h != FAKE_HANDLE || !embedded)
		return RDC_ST_INVALID_HANDLER;
	return RDC_ST_OK;
}

EXPORT rdc_status_t rdc_stop_embedded(rdc_handle_t p_rdc_handle)
{
	rdc_status_t st = check(p_rdc_handle);
	if (st != RDC_ST_OK)
		return st;
	embedded = 0;
	nWatches = 0;
	return RDC_ST_OK;
}

EXPORT rdc_status_t rdc_device_get_all(rdc_handle_t h, uint32_t gpu_index_list[RDC_MAX_NUM_DEVICES], uint32_t *count)
{
	rdc_status_t st = check(h);
	if (st != RDC_ST_OK)
		return st;
	for (uint32_t i = 0; i < FAKE_GPUS; i++)
		gpu_index_list[i] = i;
	*count = FAKE_GPUS;
	return RDC_ST_OK;
}

EXPORT rdc_status_t rdc_device_get_attributes(rdc_handle_t h, uint32_t gpu_index, rdc_device_attributes_t *p_rdc_attr)
{
	rdc_status_t st = check(h);
	if (st != RDC_ST_OK)
		return st;
	if (gpu_index >= FAKE_GPUS || p_rdc_attr == NULL)
		return RDC_ST_BAD_PARAMETER;
	memset(p_rdc_attr, 0, sizeof *p_rdc_attr);
	snprintf(p_rdc_attr->device_name, sizeof p_rdc_attr->device_name, "%s",
		 gpu_index == 1 ? "AMD Radeon PRO W7900 (fake)" : "AMD Instinct MI300X (fake)");
	p_rdc_attr->device_id = gpu_index == 1 ? 0x7448 : 0x74a1;
	p_rdc_attr->num_of_compute_units = gpu_index == 1 ? 96 : 304;
	return RDC_ST_OK;
}

EXPORT rdc_status_t rdc_group_gpu_create(rdc_handle_t h, rdc_group_type_t type, const char *group_name, rdc_gpu_group_t *p_rdc_group_id)
{
	rdc_status_t st = check(h);
	if (st != RDC_ST_OK)
		return st;
	if (type != RDC_GROUP_EMPTY || group_name == NULL || p_rdc_group_id == NULL)
		return RDC_ST_BAD_PARAMETER;
	for (int i = 0; i < RDC_MAX_NUM_GROUPS; i++) {
		if (!groups[i].used) {
			memset(&groups[i], 0, sizeof groups[i]);
			groups[i].used = 1;
			*p_rdc_group_id = (rdc_gpu_group_t)i;
			return RDC_ST_OK;
		}
	}
	return RDC_ST_MAX_LIMIT;
}

static struct group *group(rdc_gpu_group_t g)
{
	if (g >= RDC_MAX_NUM_GROUPS || !groups[g].used)
		return NULL;
	return &groups[g];
}

EXPORT rdc_status_t rdc_group_gpu_add(rdc_handle_t h, rdc_gpu_group_t group_id, uint32_t gpu_index)
{
	rdc_status_t st = check(h);
	if (st != RDC_ST_OK)
		return st;
	struct group *g = group(group_id);
	if (g == NULL || gpu_index >= FAKE_GPUS || g->n == RDC_GROUP_MAX_ENTITIES)
		return RDC_ST_BAD_PARAMETER;
	g->gpus[g->n++] = gpu_index;
	return RDC_ST_OK;
}

EXPORT rdc_status_t rdc_group_gpu_destroy(rdc_handle_t h, rdc_gpu_group_t p_rdc_group_id)
{
	rdc_status_t st = check(h);
	if (st != RDC_ST_OK)
		return st;
	struct group *g = group(p_rdc_group_id);
	if (g == NULL)
		return RDC_ST_NOT_FOUND;
	g->used = 0;
	return RDC_ST_OK;
}

EXPORT rdc_status_t rdc_group_field_create(rdc_handle_t h, uint32_t num_field_ids, rdc_field_t *field_ids, const char *field_group_name,
					   rdc_field_grp_t *rdc_field_group_id)
{
	rdc_status_t st = check(h);
	if (st != RDC_ST_OK)
		return st;
	if (num_field_ids == 0 || num_field_ids > RDC_MAX_FIELD_IDS_PER_FIELD_GROUP || field_ids == NULL ||
	    field_group_name == NULL || rdc_field_group_id == NULL)
		return RDC_ST_BAD_PARAMETER;
	for (int i = 0; i < RDC_MAX_NUM_FIELD_GROUPS; i++)
		if (fieldGroups[i].used && strcmp(fieldGroups[i].name, field_group_name) == 0)
			return RDC_ST_ALREADY_EXIST;
	for (int i = 0; i < RDC_MAX_NUM_FIELD_GROUPS; i++) {
		if (!fieldGroups[i].used) {
			fieldGroups[i].used = 1;
			snprintf(fieldGroups[i].name, sizeof fieldGroups[i].name, "%s", field_group_name);
			fieldGroups[i].n = num_field_ids;
			memcpy(fieldGroups[i].ids, field_ids, num_field_ids * sizeof *field_ids);
			*rdc_field_group_id = (rdc_field_grp_t)i;
			return RDC_ST_OK;
		}
	}
	return RDC_ST_MAX_LIMIT;
}

static struct fieldGroup *fieldGroup(rdc_field_grp_t fg)
{
	if (fg >= RDC_MAX_NUM_FIELD_GROUPS || !fieldGroups[fg].used)
		return NULL;
	return &fieldGroups[fg];
}

EXPORT rdc_status_t rdc_group_field_destroy(rdc_handle_t h, rdc_field_grp_t rdc_field_group_id)
{
	rdc_status_t st = check(h);
	if (st != RDC_ST_OK)
		return st;
	struct fieldGroup *fg = fieldGroup(rdc_field_group_id);
	if (fg == NULL)
		return RDC_ST_NOT_FOUND;
	fg->used = 0;
	return RDC_ST_OK;
}

EXPORT rdc_status_t rdc_field_watch(rdc_handle_t h, rdc_gpu_group_t group_id, rdc_field_grp_t field_group_id, uint64_t update_freq,
				    double max_keep_age, uint32_t max_keep_samples)
{
	rdc_status_t st = check(h);
	if (st != RDC_ST_OK)
		return st;
	struct group *g = group(group_id);
	struct fieldGroup *fg = fieldGroup(field_group_id);
	if (g == NULL || fg == NULL)
		return RDC_ST_NOT_FOUND;
	/* update_freq in µs, max_keep_age in seconds: a double, which checks
	 * the float register. */
	if (update_freq == 0 || !(max_keep_age > 0) || max_keep_age > 3600 || max_keep_samples > 1000)
		return RDC_ST_BAD_PARAMETER;
	for (int e = 0; e < g->n; e++) {
		uint32_t gpu = g->gpus[e];
		if (gpu != 1)
			continue;
		int prof = profWatched(gpu);
		for (uint32_t i = 0; i < fg->n; i++)
			prof += isProf(fg->ids[i]) && !watched(gpu, fg->ids[i]);
		if (prof > GPU1_PROFILING_CAPACITY)
			return RDC_ST_INSUFF_RESOURCES;
	}
	for (int e = 0; e < g->n; e++) {
		for (uint32_t i = 0; i < fg->n; i++) {
			if (watched(g->gpus[e], fg->ids[i]))
				continue;
			if (nWatches == MAX_WATCHES)
				return RDC_ST_MAX_LIMIT;
			watches[nWatches].gpu = g->gpus[e];
			watches[nWatches].field = fg->ids[i];
			nWatches++;
		}
	}
	return RDC_ST_OK;
}

static int inGroup(struct fieldGroup *fg, rdc_field_t f)
{
	for (uint32_t i = 0; i < fg->n; i++)
		if (fg->ids[i] == f)
			return 1;
	return 0;
}

EXPORT rdc_status_t rdc_field_unwatch(rdc_handle_t h, rdc_gpu_group_t group_id, rdc_field_grp_t field_group_id)
{
	rdc_status_t st = check(h);
	if (st != RDC_ST_OK)
		return st;
	struct group *g = group(group_id);
	struct fieldGroup *fg = fieldGroup(field_group_id);
	if (g == NULL || fg == NULL)
		return RDC_ST_NOT_FOUND;
	int k = 0;
	for (int i = 0; i < nWatches; i++) {
		int drop = 0;
		for (int e = 0; e < g->n; e++)
			if (watches[i].gpu == g->gpus[e] && inGroup(fg, watches[i].field))
				drop = 1;
		if (!drop)
			watches[k++] = watches[i];
	}
	nWatches = k;
	return RDC_ST_OK;
}

EXPORT rdc_status_t rdc_field_update_all(rdc_handle_t h, uint32_t wait_for_update)
{
	(void)wait_for_update;
	return check(h);
}

static void setInt(rdc_field_value *v, int64_t i)
{
	v->type = INTEGER;
	v->value.l_int = i;
}

static void setDouble(rdc_field_value *v, double d)
{
	v->type = DOUBLE;
	v->value.dbl = d;
}

EXPORT rdc_status_t rdc_field_get_latest_value(rdc_handle_t h, uint32_t gpu_index, rdc_field_t field, rdc_field_value *value)
{
	rdc_status_t st = check(h);
	if (st != RDC_ST_OK)
		return st;
	latestCalls++;
	if (failAll != RDC_ST_OK)
		return failAll;
	if (gpu_index >= FAKE_GPUS || value == NULL)
		return RDC_ST_BAD_PARAMETER;
	if (!watched(gpu_index, field))
		return RDC_ST_NOT_FOUND; /* nothing cached for a field not watched */
	memset(value, 0, sizeof *value);
	value->field_id = field;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	value->ts = (uint64_t)now.tv_sec * 1000000 + (uint64_t)now.tv_nsec / 1000;
	int one = gpu_index == 1;
	switch (field) {
	case RDC_FI_POWER_USAGE:
		setInt(value, one ? -1 /* UINT64_MAX */ : 512000000);
		break;
	case RDC_FI_GPU_UTIL:
		setInt(value, one ? 12 : 87);
		break;
	case RDC_FI_GPU_MEMORY_USAGE:
		setInt(value, one ? 2LL << 30 : 60LL << 30);
		break;
	case RDC_FI_GPU_MEMORY_TOTAL:
		setInt(value, one ? 48LL << 30 : 192LL << 30);
		break;
	case RDC_FI_ECC_CORRECT_TOTAL:
	case RDC_FI_ECC_UNCORRECT_TOTAL:
	case RDC_FI_XGMI_TOTAL_READ_KB:
	case RDC_FI_XGMI_TOTAL_WRITE_KB:
		if (one) {
			value->status = RDC_ST_NOT_SUPPORTED;
			break;
		}
		setInt(value, field == RDC_FI_ECC_CORRECT_TOTAL ? 5 : field == RDC_FI_ECC_UNCORRECT_TOTAL ? 1 : field == RDC_FI_XGMI_TOTAL_READ_KB ? 1000000 : 2000000);
		break;
	case RDC_FI_PROF_OCCUPANCY_PERCENT:
		setDouble(value, one ? 20 : 45.5);
		break;
	case RDC_FI_PROF_ACTIVE_WAVES:
		setDouble(value, one ? 1000 : 123456);
		break;
	case RDC_FI_PROF_TENSOR_ACTIVE_PERCENT:
		setDouble(value, one ? 31.25 : 62.5);
		break;
	case RDC_FI_PROF_EVAL_MEM_R_BW:
		setDouble(value, 1500);
		break;
	case RDC_FI_PROF_EVAL_MEM_W_BW:
		setDouble(value, 500);
		break;
	case RDC_FI_PROF_SM_ACTIVE:
		value->status = RDC_ST_NOT_SUPPORTED;
		break;
	default:
		value->status = RDC_ST_NOT_SUPPORTED;
		break;
	}
	return RDC_ST_OK;
}
