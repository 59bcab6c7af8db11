/*
 * A fake librocm_smi64.so: two AMD GPUs with fixed values, for the tests
 * of package rocmsmi and of the gpu Source's ROCm SMI backend. Machines
 * without an AMD GPU (CI among them) cannot get values out of the real
 * library, whose rsmi_init fails without a GPU.
 *
 * The declarations below are those the binding uses, copied from
 * rocm_smi/rocm_smi.h of ROCm 5.2 (Debian librocm-smi-dev 5.2.3; enums cut
 * to the values used), except rsmi_dev_current_socket_power_get,
 * which later ROCm releases added (5.2 lacks it). xpuscope_fake_rsmi_layout reports
 * the struct layouts so that a test can compare them with the Go binding.
 *
 * Every function checks its arguments the way the real library would see
 * them and answers RSMI_STATUS_INVALID_ARGS otherwise: an enum passed with
 * the wrong width or value, a sensor index other than 0, a NULL pointer.
 *
 * Test hooks, not part of ROCm SMI: xpuscope_fake_rsmi_layout,
 * xpuscope_fake_rsmi_initialized, xpuscope_fake_rsmi_fail (below).
 *
 * Build flags:
 *   -DOMIT_ENERGY        leave rsmi_dev_energy_count_get out, as a library
 *                        too old to have it;
 *   -DINIT_STATUS=N      make rsmi_init return N.
 *
 * Values (GPU 0 | GPU 1), as ROCm SMI reports them:
 *
 *   name              AMD Instinct MI300X (fake) | AMD Radeon PRO W7900 (fake)
 *   unique id         0x5a3c9e01f00dbabe | NOT_SUPPORTED
 *   BDFID             0000:0c:00.0 | 0000:83:00.0
 *   busy, mem busy %  87, 45 | 12, 3
 *   VRAM total, used  192 GiB, 60 GiB | 48 GiB, 2 GiB
 *   temperature m°C   edge 51500, junction 68250, memory 57000 |
 *                     edge -5000, junction 1500, memory NOT_SUPPORTED
 *   socket power µW   512345678 | NOT_SUPPORTED
 *   average power µW  498000000 | 45500000
 *   power cap µW      750000000 | 295000000
 *   energy            123456789 × 15.25 µJ | 987654 × 15.25 µJ
 *   fan               NOT_SUPPORTED | 102 of 255
 *   SCLK Hz           current 2100 MHz of 500/1200/2100 | 1800 MHz of 700/1800
 *   MCLK Hz           current 1300 MHz of 900/1300 | NOT_SUPPORTED
 *   PCIe (1 s)        sent 1000, received 3000, max payload 256 | NOT_SUPPORTED
 *   ECC corr/uncorr   UMC 3/1, GFX 2/0, other blocks NOT_SUPPORTED |
 *                     every block NOT_SUPPORTED
 *   driver version    6.7.0-fake
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

/* --- from rocm_smi.h (5.2) --- */
typedef enum {
	RSMI_STATUS_SUCCESS = 0x0,
	RSMI_STATUS_INVALID_ARGS,
	RSMI_STATUS_NOT_SUPPORTED,
	RSMI_STATUS_FILE_ERROR,
	RSMI_STATUS_PERMISSION,
	RSMI_STATUS_OUT_OF_RESOURCES,
	RSMI_STATUS_INTERNAL_EXCEPTION,
	RSMI_STATUS_INPUT_OUT_OF_BOUNDS,
	RSMI_STATUS_INIT_ERROR,
	RSMI_INITIALIZATION_ERROR = RSMI_STATUS_INIT_ERROR,
	RSMI_STATUS_NOT_YET_IMPLEMENTED,
	RSMI_STATUS_NOT_FOUND,
	RSMI_STATUS_INSUFFICIENT_SIZE,
	RSMI_STATUS_INTERRUPT,
	RSMI_STATUS_UNEXPECTED_SIZE,
	RSMI_STATUS_NO_DATA,
	RSMI_STATUS_UNEXPECTED_DATA,
	RSMI_STATUS_BUSY,
	RSMI_STATUS_REFCOUNT_OVERFLOW,
	RSMI_STATUS_UNKNOWN_ERROR = 0xFFFFFFFF,
} rsmi_status_t;

typedef enum { RSMI_SW_COMP_DRIVER = 0 } rsmi_sw_component_t;

typedef enum {
	RSMI_CLK_TYPE_SYS = 0x0,
	RSMI_CLK_TYPE_DF,
	RSMI_CLK_TYPE_DCEF,
	RSMI_CLK_TYPE_SOC,
	RSMI_CLK_TYPE_MEM,
	RSMI_CLK_TYPE_PCIE,
} rsmi_clk_type_t;

typedef enum { RSMI_TEMP_CURRENT = 0x0 } rsmi_temperature_metric_t;

typedef enum {
	RSMI_TEMP_TYPE_EDGE = 0,
	RSMI_TEMP_TYPE_JUNCTION,
	RSMI_TEMP_TYPE_MEMORY,
} rsmi_temperature_type_t;

typedef enum {
	RSMI_GPU_BLOCK_INVALID = 0x0000000000000000,
	RSMI_GPU_BLOCK_UMC = 0x0000000000000001,
	RSMI_GPU_BLOCK_SDMA = 0x0000000000000002,
	RSMI_GPU_BLOCK_GFX = 0x0000000000000004,
	RSMI_GPU_BLOCK_FUSE = 0x0000000000002000,
	RSMI_GPU_BLOCK_RESERVED = 0x8000000000000000,
} rsmi_gpu_block_t;

typedef enum { RSMI_MEM_TYPE_VRAM = 0 } rsmi_memory_type_t;

#define RSMI_MAX_NUM_FREQUENCIES 32

typedef struct {
	uint32_t num_supported;
	uint32_t current;
	uint64_t frequency[RSMI_MAX_NUM_FREQUENCIES];
} rsmi_frequencies_t;

typedef struct {
	uint64_t correctable_err;
	uint64_t uncorrectable_err;
} rsmi_error_count_t;
/* --- end of rocm_smi.h --- */

_Static_assert(sizeof(rsmi_gpu_block_t) == 8, "rsmi_gpu_block_t is 64 bits wide, as in the real header");

#define NS RSMI_STATUS_NOT_SUPPORTED
#define MHZ 1000000ull
#define GIB (1ull << 30)

struct clock {
	rsmi_status_t status;
	uint32_t n, current;
	uint64_t hz[4];
};

struct fake_gpu {
	const char *name;
	rsmi_status_t unique_status;
	uint64_t unique_id;
	uint64_t bdfid;
	uint32_t busy, mem_busy;
	uint64_t vram_total, vram_used;
	rsmi_status_t temp_status[3];
	int64_t temp[3];
	rsmi_status_t socket_status;
	uint64_t socket_uw, average_uw, cap_uw;
	uint64_t energy;
	rsmi_status_t fan_status;
	int64_t fan;
	struct clock sclk, mclk;
	rsmi_status_t pcie_status;
	uint64_t sent, received, max_pkt;
	rsmi_error_count_t umc, gfx; /* zero: NOT_SUPPORTED */
};

static const struct fake_gpu gpus[] = {
	{
		.name = "AMD Instinct MI300X (fake)",
		.unique_id = 0x5a3c9e01f00dbabeull,
		.bdfid = (0ull << 32) | (0x0c << 8) | (0 << 3) | 0,
		.busy = 87, .mem_busy = 45,
		.vram_total = 192 * GIB, .vram_used = 60 * GIB,
		.temp = {51500, 68250, 57000},
		.socket_uw = 512345678, .average_uw = 498000000, .cap_uw = 750000000,
		.energy = 123456789,
		.fan_status = NS,
		.sclk = {.n = 3, .current = 2, .hz = {500 * MHZ, 1200 * MHZ, 2100 * MHZ}},
		.mclk = {.n = 2, .current = 1, .hz = {900 * MHZ, 1300 * MHZ}},
		.sent = 1000, .received = 3000, .max_pkt = 256,
		.umc = {3, 1}, .gfx = {2, 0},
	},
	{
		.name = "AMD Radeon PRO W7900 (fake)",
		.unique_status = NS,
		.bdfid = (0ull << 32) | (0x83 << 8) | (0 << 3) | 0,
		.busy = 12, .mem_busy = 3,
		.vram_total = 48 * GIB, .vram_used = 2 * GIB,
		.temp_status = {0, 0, NS},
		.temp = {-5000, 1500, 0},
		.socket_status = NS,
		.average_uw = 45500000, .cap_uw = 295000000,
		.energy = 987654,
		.fan = 102,
		.sclk = {.n = 2, .current = 1, .hz = {700 * MHZ, 1800 * MHZ}},
		.mclk = {.status = NS},
		.pcie_status = NS,
	},
};

#define NUM_GPUS ((uint32_t)(sizeof(gpus) / sizeof(gpus[0])))
#define ENERGY_RESOLUTION 15.25f

#ifndef INIT_STATUS
#define INIT_STATUS RSMI_STATUS_SUCCESS
#endif

static int initialized; /* rsmi_init minus rsmi_shut_down calls */

/* Failures a test injects with xpuscope_fake_rsmi_fail. */
enum { FAIL_BUSY_PERCENT, FAIL_ECC_GFX, NUM_FAILS };
static rsmi_status_t fail[NUM_FAILS];

#define DEVICE(dv)                                                     \
	if (initialized <= 0)                                          \
		return RSMI_STATUS_INIT_ERROR;                         \
	if ((dv) >= NUM_GPUS)                                          \
		return RSMI_STATUS_INVALID_ARGS;                       \
	const struct fake_gpu *g = &gpus[dv]

EXPORT rsmi_status_t rsmi_init(uint64_t flags)
{
	if (flags != 0)
		return RSMI_STATUS_INVALID_ARGS;
	if (INIT_STATUS != RSMI_STATUS_SUCCESS)
		return INIT_STATUS;
	initialized++;
	return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t rsmi_shut_down(void)
{
	if (initialized <= 0)
		return RSMI_STATUS_INIT_ERROR;
	initialized--;
	return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t rsmi_status_string(rsmi_status_t status, const char **str)
{
	if (str == NULL)
		return RSMI_STATUS_INVALID_ARGS;
	switch (status) {
	case RSMI_STATUS_NOT_SUPPORTED:
		*str = "fake: feature not supported";
		break;
	case RSMI_STATUS_INIT_ERROR:
		*str = "fake: an error occurred during initialization";
		break;
	default:
		*str = "fake: some status";
	}
	return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t rsmi_num_monitor_devices(uint32_t *n)
{
	if (initialized <= 0)
		return RSMI_STATUS_INIT_ERROR;
	if (n == NULL)
		return RSMI_STATUS_INVALID_ARGS;
	*n = NUM_GPUS;
	return RSMI_STATUS_SUCCESS;
}

static rsmi_status_t copy_string(const char *s, char *buf, size_t len)
{
	if (buf == NULL || len == 0)
		return RSMI_STATUS_INVALID_ARGS;
	size_t n = strlen(s);
	if (n >= len) {
		memcpy(buf, s, len - 1);
		buf[len - 1] = 0;
		return RSMI_STATUS_INSUFFICIENT_SIZE;
	}
	memcpy(buf, s, n + 1);
	return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t rsmi_dev_name_get(uint32_t dv, char *name, size_t len)
{
	DEVICE(dv);
	return copy_string(g->name, name, len);
}

EXPORT rsmi_status_t rsmi_version_str_get(rsmi_sw_component_t comp, char *buf, uint32_t len)
{
	if (comp != RSMI_SW_COMP_DRIVER)
		return RSMI_STATUS_INVALID_ARGS;
	return copy_string("6.7.0-fake", buf, len);
}

EXPORT rsmi_status_t rsmi_dev_unique_id_get(uint32_t dv, uint64_t *id)
{
	DEVICE(dv);
	if (id == NULL)
		return RSMI_STATUS_INVALID_ARGS;
	if (g->unique_status)
		return g->unique_status;
	*id = g->unique_id;
	return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t rsmi_dev_pci_id_get(uint32_t dv, uint64_t *bdfid)
{
	DEVICE(dv);
	if (bdfid == NULL)
		return RSMI_STATUS_INVALID_ARGS;
	*bdfid = g->bdfid;
	return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t rsmi_dev_busy_percent_get(uint32_t dv, uint32_t *pct)
{
	DEVICE(dv);
	if (pct == NULL)
		return RSMI_STATUS_INVALID_ARGS;
	if (fail[FAIL_BUSY_PERCENT])
		return fail[FAIL_BUSY_PERCENT];
	*pct = g->busy;
	return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t rsmi_dev_memory_busy_percent_get(uint32_t dv, uint32_t *pct)
{
	DEVICE(dv);
	if (pct == NULL)
		return RSMI_STATUS_INVALID_ARGS;
	*pct = g->mem_busy;
	return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t rsmi_dev_memory_total_get(uint32_t dv, rsmi_memory_type_t t, uint64_t *total)
{
	DEVICE(dv);
	if (t != RSMI_MEM_TYPE_VRAM || total == NULL)
		return RSMI_STATUS_INVALID_ARGS;
	*total = g->vram_total;
	return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t rsmi_dev_memory_usage_get(uint32_t dv, rsmi_memory_type_t t, uint64_t *used)
{
	DEVICE(dv);
	if (t != RSMI_MEM_TYPE_VRAM || used == NULL)
		return RSMI_STATUS_INVALID_ARGS;
	*used = g->vram_used;
	return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t rsmi_dev_temp_metric_get(uint32_t dv, uint32_t sensor, rsmi_temperature_metric_t metric, int64_t *t)
{
	DEVICE(dv);
	if (sensor > RSMI_TEMP_TYPE_MEMORY || metric != RSMI_TEMP_CURRENT || t == NULL)
		return RSMI_STATUS_INVALID_ARGS;
	if (g->temp_status[sensor])
		return g->temp_status[sensor];
	*t = g->temp[sensor];
	return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t rsmi_dev_current_socket_power_get(uint32_t dv, uint64_t *uw)
{
	DEVICE(dv);
	if (uw == NULL)
		return RSMI_STATUS_INVALID_ARGS;
	if (g->socket_status)
		return g->socket_status;
	*uw = g->socket_uw;
	return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t rsmi_dev_power_ave_get(uint32_t dv, uint32_t sensor, uint64_t *uw)
{
	DEVICE(dv);
	if (sensor != 0 || uw == NULL)
		return RSMI_STATUS_INVALID_ARGS;
	*uw = g->average_uw;
	return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t rsmi_dev_power_cap_get(uint32_t dv, uint32_t sensor, uint64_t *uw)
{
	DEVICE(dv);
	if (sensor != 0 || uw == NULL)
		return RSMI_STATUS_INVALID_ARGS;
	*uw = g->cap_uw;
	return RSMI_STATUS_SUCCESS;
}

#ifndef OMIT_ENERGY
EXPORT rsmi_status_t rsmi_dev_energy_count_get(uint32_t dv, uint64_t *count, float *resolution, uint64_t *timestamp)
{
	DEVICE(dv);
	if (count == NULL || resolution == NULL || timestamp == NULL)
		return RSMI_STATUS_INVALID_ARGS;
	*count = g->energy;
	*resolution = ENERGY_RESOLUTION;
	*timestamp = 1700000000000000000ull;
	return RSMI_STATUS_SUCCESS;
}
#endif

EXPORT rsmi_status_t rsmi_dev_fan_speed_get(uint32_t dv, uint32_t sensor, int64_t *speed)
{
	DEVICE(dv);
	if (sensor != 0 || speed == NULL)
		return RSMI_STATUS_INVALID_ARGS;
	if (g->fan_status)
		return g->fan_status;
	*speed = g->fan;
	return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t rsmi_dev_fan_speed_max_get(uint32_t dv, uint32_t sensor, uint64_t *max)
{
	DEVICE(dv);
	if (sensor != 0 || max == NULL)
		return RSMI_STATUS_INVALID_ARGS;
	if (g->fan_status)
		return g->fan_status;
	*max = 255;
	return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t rsmi_dev_gpu_clk_freq_get(uint32_t dv, rsmi_clk_type_t clk, rsmi_frequencies_t *f)
{
	DEVICE(dv);
	if (f == NULL)
		return RSMI_STATUS_INVALID_ARGS;
	const struct clock *c;
	switch (clk) {
	case RSMI_CLK_TYPE_SYS:
		c = &g->sclk;
		break;
	case RSMI_CLK_TYPE_MEM:
		c = &g->mclk;
		break;
	default:
		return RSMI_STATUS_INVALID_ARGS;
	}
	if (c->status)
		return c->status;
	memset(f, 0xee, sizeof(*f)); /* the caller must not read past num_supported */
	f->num_supported = c->n;
	f->current = c->current;
	for (uint32_t i = 0; i < c->n; i++)
		f->frequency[i] = c->hz[i];
	return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t rsmi_dev_pci_throughput_get(uint32_t dv, uint64_t *sent, uint64_t *received, uint64_t *max_pkt)
{
	DEVICE(dv);
	if (g->pcie_status)
		return g->pcie_status;
	if (sent)
		*sent = g->sent;
	if (received)
		*received = g->received;
	if (max_pkt)
		*max_pkt = g->max_pkt;
	return RSMI_STATUS_SUCCESS;
}

EXPORT rsmi_status_t rsmi_dev_ecc_count_get(uint32_t dv, rsmi_gpu_block_t block, rsmi_error_count_t *ec)
{
	DEVICE(dv);
	/* Exactly one block bit, UMC … FUSE. */
	if (ec == NULL || block == 0 || (block & (block - 1)) != 0 || block > RSMI_GPU_BLOCK_FUSE)
		return RSMI_STATUS_INVALID_ARGS;
	const rsmi_error_count_t *c = NULL;
	if (block == RSMI_GPU_BLOCK_UMC)
		c = &g->umc;
	else if (block == RSMI_GPU_BLOCK_GFX) {
		if (fail[FAIL_ECC_GFX])
			return fail[FAIL_ECC_GFX];
		c = &g->gfx;
	}
	if (c == NULL || (c->correctable_err == 0 && c->uncorrectable_err == 0))
		return RSMI_STATUS_NOT_SUPPORTED;
	*ec = *c;
	return RSMI_STATUS_SUCCESS;
}

/* --- test hooks, not part of ROCm SMI --- */

/* xpuscope_fake_rsmi_layout writes the layout of the structs the binding
 * reads: sizes and field offsets. */
EXPORT void xpuscope_fake_rsmi_layout(uint64_t out[7])
{
	out[0] = sizeof(rsmi_frequencies_t);
	out[1] = offsetof(rsmi_frequencies_t, num_supported);
	out[2] = offsetof(rsmi_frequencies_t, current);
	out[3] = offsetof(rsmi_frequencies_t, frequency);
	out[4] = sizeof(rsmi_error_count_t);
	out[5] = offsetof(rsmi_error_count_t, correctable_err);
	out[6] = offsetof(rsmi_error_count_t, uncorrectable_err);
}

/* xpuscope_fake_rsmi_fail makes a call fail with st (0: succeed again):
 * which 0 is rsmi_dev_busy_percent_get, 1 rsmi_dev_ecc_count_get for the
 * GFX block (of a GPU that supports it). */
EXPORT void xpuscope_fake_rsmi_fail(int which, rsmi_status_t st)
{
	if (which >= 0 && which < NUM_FAILS)
		fail[which] = st;
}

/* xpuscope_fake_rsmi_initialized is rsmi_init calls minus rsmi_shut_down
 * calls. */
EXPORT int xpuscope_fake_rsmi_initialized(void)
{
	return initialized;
}
