/*
 * A fake libamd_smi.so: two AMD GPUs on two sockets with fixed values,
 * for the tests of package amdsmi and of the gpu Source's AMD SMI backend.
 * Machines without an AMD GPU cannot get values out of the real library.
 *
 * The declarations below are those the binding uses, copied from
 * amd_smi/amdsmi.h (enums cut to the values used; structs whole). The
 * structs whose layout changed between releases come in the layout of
 * the version the build selects:
 *
 *   (default)            library 26.1.0 (ROCm 7): amdsmi_version_t
 *                        without year; amdsmi_power_info_t with a 64-bit
 *                        socket_power first;
 *   -DLAYOUT_24_6        library 24.6.1 (ROCm 6.2): year in the version;
 *                        current and average socket power first;
 *   -DLAYOUT_23_2        library 23.2.0: average socket power alone;
 *   -DVERSION_24_7       the 24.6 layout, reporting 24.7.1: a version whose
 *                        header the binding was not checked against.
 *
 * xpuscope_fake_amdsmi_layout reports sizes and offsets so that a test can
 * compare them with the Go binding.
 *
 * Every function checks its arguments the way the real library would see
 * them and answers AMDSMI_STATUS_INVAL otherwise: an unknown handle, an
 * enum with the wrong value, a sensor index other than 0, a NULL pointer.
 *
 * Other build flags:
 *   -DOMIT_ENERGY        leave amdsmi_get_energy_count out;
 *   -DINIT_STATUS=N      make amdsmi_init return N.
 *
 * Values (GPU 0 | GPU 1), as AMD SMI reports them:
 *
 *   market name      AMD Instinct MI300X (fake) | AMD Radeon PRO W7900 (fake)
 *   BDF              0000:0c:00.0 | 0000:83:00.0
 *   gfx, umc %       87, 45 | 12, UINT16_MAX (unsupported)
 *   VRAM total, used 192 GiB, 60 GiB | 48 GiB, 2 GiB
 *   temperature °C   edge 51, hotspot 68, vram 57 |
 *                    edge -5, hotspot 1, vram NOT_SUPPORTED
 *   socket power W   current 512, average 498 | current UINT32_MAX, average 45
 *                    (23.2: average only)
 *   power cap µW     750000000 | 295000000
 *   energy           123456789 × 15.25 µJ | 987654 × 15.25 µJ
 *   fan              NOT_SUPPORTED | 102 of 255
 *   clocks MHz       SYS 2100, MEM 1300 | SYS 1800, MEM UINT32_MAX
 *   ECC corr/uncorr  5/1 | NOT_SUPPORTED
 *   driver version   6.7.0-fake
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

/* --- from amdsmi.h --- */
typedef enum {
	AMDSMI_STATUS_SUCCESS = 0,
	AMDSMI_STATUS_INVAL = 1,
	AMDSMI_STATUS_NOT_SUPPORTED = 2,
	AMDSMI_STATUS_NO_PERM = 10,
	AMDSMI_STATUS_INIT_ERROR = 18,
	AMDSMI_STATUS_BUSY = 30,
	AMDSMI_STATUS_NOT_INIT = 32,
	AMDSMI_STATUS_MAP_ERROR = 0xFFFFFFFE,
	AMDSMI_STATUS_UNKNOWN_ERROR = 0xFFFFFFFF,
} amdsmi_status_t;

typedef enum {
	AMDSMI_INIT_AMD_CPUS = (1 << 0),
	AMDSMI_INIT_AMD_GPUS = (1 << 1),
} amdsmi_init_flags_t;

typedef void *amdsmi_processor_handle;
typedef void *amdsmi_socket_handle;

typedef enum {
	AMDSMI_MEM_TYPE_FIRST = 0,
	AMDSMI_MEM_TYPE_VRAM = AMDSMI_MEM_TYPE_FIRST,
	AMDSMI_MEM_TYPE_VIS_VRAM,
	AMDSMI_MEM_TYPE_GTT,
} amdsmi_memory_type_t;

typedef enum {
	AMDSMI_TEMPERATURE_TYPE_EDGE,
	AMDSMI_TEMPERATURE_TYPE_HOTSPOT,
	AMDSMI_TEMPERATURE_TYPE_JUNCTION = AMDSMI_TEMPERATURE_TYPE_HOTSPOT,
	AMDSMI_TEMPERATURE_TYPE_VRAM,
} amdsmi_temperature_type_t;

typedef enum { AMDSMI_TEMP_CURRENT = 0x0 } amdsmi_temperature_metric_t;

typedef enum {
	AMDSMI_CLK_TYPE_SYS = 0x0,
	AMDSMI_CLK_TYPE_DF,
	AMDSMI_CLK_TYPE_DCEF,
	AMDSMI_CLK_TYPE_SOC,
	AMDSMI_CLK_TYPE_MEM,
} amdsmi_clk_type_t;

typedef union {
	struct {
		uint64_t function_number : 3;
		uint64_t device_number : 5;
		uint64_t bus_number : 8;
		uint64_t domain_number : 48;
	};
	uint64_t as_uint;
} amdsmi_bdf_t;

typedef struct {
	uint32_t gfx_activity;
	uint32_t umc_activity;
	uint32_t mm_activity;
	uint32_t reserved[13];
} amdsmi_engine_usage_t;

typedef struct {
	uint64_t power_cap;
	uint64_t default_power_cap;
	uint64_t dpm_cap;
	uint64_t min_power_cap;
	uint64_t max_power_cap;
	uint64_t reserved[3];
} amdsmi_power_cap_info_t;

typedef struct {
	uint32_t clk;
	uint32_t min_clk;
	uint32_t max_clk;
	uint8_t clk_locked;
	uint8_t clk_deep_sleep;
	uint32_t reserved[4];
} amdsmi_clk_info_t;

#if defined(LAYOUT_23_2)
typedef struct {
	uint32_t year, major, minor, release;
	const char *build;
} amdsmi_version_t;
typedef struct {
	uint32_t average_socket_power;
	uint32_t gfx_voltage;
	uint32_t soc_voltage;
	uint32_t mem_voltage;
	uint32_t power_limit;
	uint32_t reserved[11];
} amdsmi_power_info_t;
typedef struct {
	char market_name[64];
	uint32_t vendor_id;
	uint32_t subvendor_id;
	uint64_t device_id;
	uint32_t rev_id;
	char asic_serial[32];
	uint32_t reserved[3];
} amdsmi_asic_info_t;
typedef struct {
	uint64_t correctable_count;
	uint64_t uncorrectable_count;
	uint64_t reserved[2];
} amdsmi_error_count_t;
#define VERSION 23, 2, 0, 0
#define VERSION_STRING "23.2.0.0"
#elif defined(LAYOUT_24_6) || defined(VERSION_24_7)
typedef struct {
	uint32_t year, major, minor, release;
	const char *build;
} amdsmi_version_t;
typedef struct {
	uint32_t current_socket_power;
	uint32_t average_socket_power;
	uint32_t gfx_voltage;
	uint32_t soc_voltage;
	uint32_t mem_voltage;
	uint32_t power_limit;
	uint32_t reserved[11];
} amdsmi_power_info_t;
typedef struct {
	char market_name[256];
	uint32_t vendor_id;
	char vendor_name[64];
	uint32_t subvendor_id;
	uint64_t device_id;
	uint32_t rev_id;
	char asic_serial[32];
	uint32_t oam_id;
	uint32_t reserved[18];
} amdsmi_asic_info_t;
typedef struct {
	uint64_t correctable_count;
	uint64_t uncorrectable_count;
	uint64_t deferred_count;
	uint64_t reserved[5];
} amdsmi_error_count_t;
typedef struct {
	char driver_version[64];
	char driver_date[64];
	char driver_name[64];
} amdsmi_driver_info_t;
#ifdef VERSION_24_7
#define VERSION 24, 7, 1, 0
#define VERSION_STRING "24.7.1.0"
#else
#define VERSION 24, 6, 1, 0
#define VERSION_STRING "24.6.1.0"
#endif
#else
typedef struct {
	uint32_t major, minor, release;
	const char *build;
} amdsmi_version_t;
typedef struct {
	uint64_t socket_power;
	uint32_t current_socket_power;
	uint32_t average_socket_power;
	uint64_t gfx_voltage;
	uint64_t soc_voltage;
	uint64_t mem_voltage;
	uint32_t power_limit;
	uint64_t reserved[18];
} amdsmi_power_info_t;
typedef struct {
	char market_name[64];
	uint32_t vendor_id;
	char vendor_name[64];
	uint32_t subvendor_id;
	uint64_t device_id;
	uint32_t rev_id;
	char asic_serial[64];
	uint32_t oam_id;
	uint32_t num_of_compute_units;
	uint64_t target_graphics_version;
	uint32_t subsystem_id;
	uint32_t reserved[21];
} amdsmi_asic_info_t;
typedef struct {
	uint64_t correctable_count;
	uint64_t uncorrectable_count;
	uint64_t deferred_count;
	uint64_t reserved[5];
} amdsmi_error_count_t;
typedef struct {
	char driver_version[64];
	char driver_date[64];
	char driver_name[64];
	uint64_t reserved[64];
} amdsmi_driver_info_t;
#define VERSION 26, 1, 0
#define VERSION_STRING "26.1.0"
#define LAYOUT_26
#endif
/* --- end of amdsmi.h --- */

#define NS AMDSMI_STATUS_NOT_SUPPORTED
#define GIB (1ull << 30)

struct fake_gpu {
	const char *name;
	uint64_t domain, bus, device, function;
	uint32_t gfx, umc;
	uint64_t vram_total, vram_used;
	amdsmi_status_t temp_status[3];
	int64_t temp[3];
	uint32_t current_w, average_w;
	uint64_t cap_uw;
	uint64_t energy;
	amdsmi_status_t fan_status;
	int64_t fan;
	uint32_t sclk, mclk;
	amdsmi_status_t ecc_status;
	uint64_t corrected, uncorrected;
};

static const struct fake_gpu gpus[] = {
	{
		.name = "AMD Instinct MI300X (fake)",
		.bus = 0x0c,
		.gfx = 87, .umc = 45,
		.vram_total = 192 * GIB, .vram_used = 60 * GIB,
		.temp = {51, 68, 57},
		.current_w = 512, .average_w = 498, .cap_uw = 750000000,
		.energy = 123456789,
		.fan_status = NS,
		.sclk = 2100, .mclk = 1300,
		.corrected = 5, .uncorrected = 1,
	},
	{
		.name = "AMD Radeon PRO W7900 (fake)",
		.bus = 0x83,
		.gfx = 12, .umc = 0xFFFF,
		.vram_total = 48 * GIB, .vram_used = 2 * GIB,
		.temp_status = {0, 0, NS},
		.temp = {-5, 1, 0},
		.current_w = 0xFFFFFFFF, .average_w = 45, .cap_uw = 295000000,
		.energy = 987654,
		.fan = 102,
		.sclk = 1800, .mclk = 0xFFFFFFFF,
		.ecc_status = NS,
	},
};

#define NUM_GPUS 2
#define ENERGY_RESOLUTION 15.25f

#ifndef INIT_STATUS
#define INIT_STATUS AMDSMI_STATUS_SUCCESS
#endif

static int initialized; /* amdsmi_init minus amdsmi_shut_down calls */

/* One socket per GPU; the handles are addresses in these arrays. */
static char sockets[NUM_GPUS];
static char processors[NUM_GPUS];

/* Failures a test injects with xpuscope_fake_amdsmi_fail. */
enum { FAIL_ACTIVITY, FAIL_ECC, NUM_FAILS };
static amdsmi_status_t fail[NUM_FAILS];

static int gpu_index(amdsmi_processor_handle h)
{
	for (int i = 0; i < NUM_GPUS; i++)
		if (h == &processors[i])
			return i;
	return -1;
}

#define DEVICE(h)                                                      \
	if (initialized <= 0)                                          \
		return AMDSMI_STATUS_NOT_INIT;                         \
	int idx_ = gpu_index(h);                                       \
	if (idx_ < 0)                                                  \
		return AMDSMI_STATUS_INVAL;                            \
	const struct fake_gpu *g = &gpus[idx_]

EXPORT amdsmi_status_t amdsmi_init(uint64_t flags)
{
	if (flags != AMDSMI_INIT_AMD_GPUS)
		return AMDSMI_STATUS_INVAL;
	if (INIT_STATUS != AMDSMI_STATUS_SUCCESS)
		return INIT_STATUS;
	initialized++;
	return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_shut_down(void)
{
	if (initialized <= 0)
		return AMDSMI_STATUS_NOT_INIT;
	initialized--;
	return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_lib_version(amdsmi_version_t *v)
{
	if (v == NULL)
		return AMDSMI_STATUS_INVAL;
	*v = (amdsmi_version_t){VERSION, VERSION_STRING};
	return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_status_code_to_string(amdsmi_status_t status, const char **str)
{
	if (str == NULL)
		return AMDSMI_STATUS_INVAL;
	switch (status) {
	case AMDSMI_STATUS_NOT_SUPPORTED:
		*str = "fake: command not supported";
		break;
	case AMDSMI_STATUS_INIT_ERROR:
		*str = "fake: an error occurred when initializing internal data structures";
		break;
	default:
		*str = "fake: some status";
	}
	return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_socket_handles(uint32_t *count, amdsmi_socket_handle *handles)
{
	if (initialized <= 0)
		return AMDSMI_STATUS_NOT_INIT;
	if (count == NULL)
		return AMDSMI_STATUS_INVAL;
	if (handles == NULL) {
		*count = NUM_GPUS;
		return AMDSMI_STATUS_SUCCESS;
	}
	uint32_t n = *count < NUM_GPUS ? *count : NUM_GPUS;
	for (uint32_t i = 0; i < n; i++)
		handles[i] = &sockets[i];
	*count = n;
	return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_processor_handles(amdsmi_socket_handle s, uint32_t *count, amdsmi_processor_handle *handles)
{
	if (initialized <= 0)
		return AMDSMI_STATUS_NOT_INIT;
	int i = -1;
	for (int k = 0; k < NUM_GPUS; k++)
		if (s == &sockets[k])
			i = k;
	if (i < 0 || count == NULL)
		return AMDSMI_STATUS_INVAL;
	if (handles == NULL) {
		*count = 1;
		return AMDSMI_STATUS_SUCCESS;
	}
	if (*count < 1)
		return AMDSMI_STATUS_INVAL;
	handles[0] = &processors[i];
	*count = 1;
	return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_gpu_device_bdf(amdsmi_processor_handle h, amdsmi_bdf_t *bdf)
{
	DEVICE(h);
	if (bdf == NULL)
		return AMDSMI_STATUS_INVAL;
	bdf->as_uint = 0;
	bdf->domain_number = g->domain;
	bdf->bus_number = g->bus;
	bdf->device_number = g->device;
	bdf->function_number = g->function;
	return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_gpu_asic_info(amdsmi_processor_handle h, amdsmi_asic_info_t *info)
{
	DEVICE(h);
	if (info == NULL)
		return AMDSMI_STATUS_INVAL;
	memset(info, 0, sizeof(*info));
	snprintf(info->market_name, sizeof(info->market_name), "%s", g->name);
	info->vendor_id = 0x1002;
	snprintf(info->asic_serial, sizeof(info->asic_serial), "0xDEADBEEF");
	return AMDSMI_STATUS_SUCCESS;
}

#ifndef LAYOUT_23_2
EXPORT amdsmi_status_t amdsmi_get_gpu_driver_info(amdsmi_processor_handle h, amdsmi_driver_info_t *info)
{
	DEVICE(h);
	(void)g;
	if (info == NULL)
		return AMDSMI_STATUS_INVAL;
	memset(info, 0, sizeof(*info));
	snprintf(info->driver_version, sizeof(info->driver_version), "6.7.0-fake");
	snprintf(info->driver_name, sizeof(info->driver_name), "amdgpu");
	return AMDSMI_STATUS_SUCCESS;
}
#endif

EXPORT amdsmi_status_t amdsmi_get_gpu_activity(amdsmi_processor_handle h, amdsmi_engine_usage_t *u)
{
	DEVICE(h);
	if (u == NULL)
		return AMDSMI_STATUS_INVAL;
	if (fail[FAIL_ACTIVITY])
		return fail[FAIL_ACTIVITY];
	memset(u, 0xff, sizeof(*u));
	u->gfx_activity = g->gfx;
	u->umc_activity = g->umc;
	u->mm_activity = 0xFFFF;
	return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_gpu_memory_total(amdsmi_processor_handle h, amdsmi_memory_type_t t, uint64_t *total)
{
	DEVICE(h);
	if (t != AMDSMI_MEM_TYPE_VRAM || total == NULL)
		return AMDSMI_STATUS_INVAL;
	*total = g->vram_total;
	return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_gpu_memory_usage(amdsmi_processor_handle h, amdsmi_memory_type_t t, uint64_t *used)
{
	DEVICE(h);
	if (t != AMDSMI_MEM_TYPE_VRAM || used == NULL)
		return AMDSMI_STATUS_INVAL;
	*used = g->vram_used;
	return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_temp_metric(amdsmi_processor_handle h, amdsmi_temperature_type_t sensor,
					      amdsmi_temperature_metric_t metric, int64_t *t)
{
	DEVICE(h);
	if (sensor > AMDSMI_TEMPERATURE_TYPE_VRAM || metric != AMDSMI_TEMP_CURRENT || t == NULL)
		return AMDSMI_STATUS_INVAL;
	if (g->temp_status[sensor])
		return g->temp_status[sensor];
	*t = g->temp[sensor];
	return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_power_info(amdsmi_processor_handle h, amdsmi_power_info_t *p)
{
	DEVICE(h);
	if (p == NULL)
		return AMDSMI_STATUS_INVAL;
	memset(p, 0xee, sizeof(*p));
	p->average_socket_power = g->average_w;
#ifndef LAYOUT_23_2
	p->current_socket_power = g->current_w;
#endif
#ifdef LAYOUT_26
	p->socket_power = g->current_w == 0xFFFFFFFF ? g->average_w : g->current_w;
#endif
	return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_power_cap_info(amdsmi_processor_handle h, uint32_t sensor, amdsmi_power_cap_info_t *info)
{
	DEVICE(h);
	if (sensor != 0 || info == NULL)
		return AMDSMI_STATUS_INVAL;
	memset(info, 0, sizeof(*info));
	info->power_cap = g->cap_uw;
	info->default_power_cap = g->cap_uw;
	return AMDSMI_STATUS_SUCCESS;
}

#ifndef OMIT_ENERGY
EXPORT amdsmi_status_t amdsmi_get_energy_count(amdsmi_processor_handle h, uint64_t *energy, float *resolution, uint64_t *timestamp)
{
	DEVICE(h);
	if (energy == NULL || resolution == NULL || timestamp == NULL)
		return AMDSMI_STATUS_INVAL;
	*energy = g->energy;
	*resolution = ENERGY_RESOLUTION;
	*timestamp = 1700000000000000000ull;
	return AMDSMI_STATUS_SUCCESS;
}
#endif

EXPORT amdsmi_status_t amdsmi_get_gpu_fan_speed(amdsmi_processor_handle h, uint32_t sensor, int64_t *speed)
{
	DEVICE(h);
	if (sensor != 0 || speed == NULL)
		return AMDSMI_STATUS_INVAL;
	if (g->fan_status)
		return g->fan_status;
	*speed = g->fan;
	return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_gpu_fan_speed_max(amdsmi_processor_handle h, uint32_t sensor, uint64_t *max)
{
	DEVICE(h);
	if (sensor != 0 || max == NULL)
		return AMDSMI_STATUS_INVAL;
	if (g->fan_status)
		return g->fan_status;
	*max = 255;
	return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_clock_info(amdsmi_processor_handle h, amdsmi_clk_type_t clk, amdsmi_clk_info_t *info)
{
	DEVICE(h);
	if (info == NULL)
		return AMDSMI_STATUS_INVAL;
	memset(info, 0, sizeof(*info));
	switch (clk) {
	case AMDSMI_CLK_TYPE_SYS:
		info->clk = g->sclk;
		break;
	case AMDSMI_CLK_TYPE_MEM:
		info->clk = g->mclk;
		break;
	default:
		return AMDSMI_STATUS_INVAL;
	}
	info->min_clk = 100;
	info->max_clk = 3000;
	return AMDSMI_STATUS_SUCCESS;
}

EXPORT amdsmi_status_t amdsmi_get_gpu_total_ecc_count(amdsmi_processor_handle h, amdsmi_error_count_t *ec)
{
	DEVICE(h);
	if (ec == NULL)
		return AMDSMI_STATUS_INVAL;
	if (g->ecc_status)
		return g->ecc_status;
	if (fail[FAIL_ECC])
		return fail[FAIL_ECC];
	memset(ec, 0, sizeof(*ec));
	ec->correctable_count = g->corrected;
	ec->uncorrectable_count = g->uncorrected;
	return AMDSMI_STATUS_SUCCESS;
}

/* --- test hooks, not part of AMD SMI --- */

/* xpuscope_fake_amdsmi_layout writes the layout of the structs the binding
 * reads: sizes and member offsets, and the version words' positions. */
EXPORT void xpuscope_fake_amdsmi_layout(uint64_t out[16])
{
	memset(out, 0, 16 * sizeof(uint64_t));
	out[0] = sizeof(amdsmi_engine_usage_t);
	out[1] = offsetof(amdsmi_engine_usage_t, gfx_activity);
	out[2] = offsetof(amdsmi_engine_usage_t, umc_activity);
	out[3] = sizeof(amdsmi_error_count_t);
	out[4] = offsetof(amdsmi_error_count_t, correctable_count);
	out[5] = offsetof(amdsmi_error_count_t, uncorrectable_count);
	out[6] = sizeof(amdsmi_power_info_t);
#ifdef LAYOUT_23_2
	out[7] = (uint64_t)-1;
#else
	out[7] = offsetof(amdsmi_power_info_t, current_socket_power);
#endif
	out[8] = offsetof(amdsmi_power_info_t, average_socket_power);
	out[9] = offsetof(amdsmi_version_t, build);
	out[10] = sizeof(amdsmi_version_t);
	out[11] = offsetof(amdsmi_clk_info_t, clk);
	out[12] = sizeof(amdsmi_clk_info_t);
	out[13] = offsetof(amdsmi_power_cap_info_t, power_cap) | sizeof(amdsmi_power_cap_info_t) << 32;
	out[14] = offsetof(amdsmi_asic_info_t, market_name) | sizeof(amdsmi_asic_info_t) << 32;
#ifdef LAYOUT_23_2
	out[15] = 0;
#else
	out[15] = offsetof(amdsmi_driver_info_t, driver_version) | sizeof(amdsmi_driver_info_t) << 32;
#endif
}

/* xpuscope_fake_amdsmi_bdf packs a PCI address the way the compiler lays
 * out amdsmi_bdf_t's bitfields. */
EXPORT uint64_t xpuscope_fake_amdsmi_bdf(uint64_t domain, uint64_t bus, uint64_t device, uint64_t function)
{
	amdsmi_bdf_t b = {.as_uint = 0};
	b.domain_number = domain;
	b.bus_number = bus;
	b.device_number = device;
	b.function_number = function;
	return b.as_uint;
}

/* xpuscope_fake_amdsmi_fail makes a call fail with st (0: succeed again):
 * which 0 is amdsmi_get_gpu_activity, 1 amdsmi_get_gpu_total_ecc_count (of
 * a GPU that supports it). */
EXPORT void xpuscope_fake_amdsmi_fail(int which, amdsmi_status_t st)
{
	if (which >= 0 && which < NUM_FAILS)
		fail[which] = st;
}

/* xpuscope_fake_amdsmi_initialized is amdsmi_init calls minus
 * amdsmi_shut_down calls. */
EXPORT int xpuscope_fake_amdsmi_initialized(void)
{
	return initialized;
}
