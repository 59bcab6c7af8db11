// A fake Level Zero driver for the tests of package levelzero and of the
// gpu Source: no Intel GPU here, and Intel's compute runtime
// (libze_intel_gpu.so.1) needs one.
//
// Built against Level Zero's own headers (Debian's libze-dev, the
// v1.4-r1.4.8 headers of oneapi-src/level-zero v1.8.12), so every struct
// and table has the layout the real loader expects, and
// xpuscope_fake_ze_layout reports offsetof of the structures the Go
// binding lays out for the test to compare.
//
// Two ways to build it:
//
//   - a driver (the default): it exports the DDI-table getters the loader
//     calls (zeGetGlobalProcAddrTable, zesGetDeviceProcAddrTable, … every
//     one of ze_ddi.h, zet_ddi.h and zes_ddi.h: the loader's library
//     initialisation fails unless each core table has a driver), and the
//     real loader (libze_loader.so.1) loads it through
//     ZE_ENABLE_ALT_DRIVERS. Sysman answers only when ZES_ENABLE_SYSMAN
//     was set when zeInit reached the driver, as the specification says
//     of zeInit (zes_api.h, zesInit: "The application must call this
//     function or zeInit with the ZES_ENABLE_SYSMAN environment variable
//     set before calling any other sysman function").
//   - -DFAKE_AS_LOADER: a stand-in for a Level Zero 1.5+ loader, which
//     exports zesInit, zesDriverGet and zesDeviceGet (zes_api.h v1.5) and
//     the API functions themselves; with -DFAKE_NO_ZES_INIT, without the
//     three.
//
// What it reports, per GPU (FAKE_GPUS, default 2; PCI bus FAKE_BUS + i,
// default 0x3a):
//
//   - properties: "Intel(R) Data Center GPU Max 1550 (fake)", vendor
//     0x8086, device 0x0bd5, two sub-devices, driver "1.3.29735 (fake)";
//   - engine groups: on the device ALL, COMPUTE_ALL, RENDER_SINGLE,
//     two MEDIA_DECODE_SINGLE, MEDIA_ENCODE_SINGLE, COPY_SINGLE; on each
//     tile ALL and COMPUTE_ALL. Each read of a group advances its
//     timestamp by 1,000,000 µs and its activeTime by rate[g] × 1000 µs
//     (rates below): a ratio of rate / 1000 from the second read on;
//   - memory: one DEVICE module per tile, 64 GiB, 16 GiB used (GPU i:
//     16 + i GiB), bandwidth counters advancing 1e9 bytes read and 5e8
//     written per 1,000,000 µs;
//   - power: the card domain (zesDeviceGetCardPowerDomain), 300 J per
//     1,000,000 µs (300 W), and one domain per tile;
//   - temperature: GPU 65.5 °C, MEMORY 50 °C (on the device), GPU on each
//     tile 70 °C;
//   - frequency: GPU actual 1600 MHz, MEMORY 3200 MHz;
//   - processes: 4242 (8 GiB) and 5151 (1 GiB);
//   - failures: GPU 1's zesMemoryGetState returns
//     ZE_RESULT_ERROR_DEVICE_LOST (FAKE_FAIL_GPU changes which; -1 none).
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>

#include <level_zero/ze_api.h>
#include <level_zero/ze_ddi.h>
#include <level_zero/zet_ddi.h>
#include <level_zero/zes_api.h>
#include <level_zero/zes_ddi.h>

#ifndef FAKE_GPUS
#define FAKE_GPUS 2
#endif
#ifndef FAKE_BUS
#define FAKE_BUS 0x3a
#endif
#ifndef FAKE_FAIL_GPU
#define FAKE_FAIL_GPU 1
#endif

#define EXPORT __attribute__((visibility("default")))

#define GROUPS 11
#define TILES 2
#define SENSORS 4
#define POWERS (1 + TILES)

struct fake_gpu;
struct fake_engine { struct fake_gpu *gpu; zes_engine_group_t type; int tile; uint64_t active, ts; uint32_t rate; };
struct fake_mem { struct fake_gpu *gpu; int tile; uint64_t rd, wr, ts; };
struct fake_pwr { struct fake_gpu *gpu; int tile; uint64_t energy, ts; };
struct fake_temp { struct fake_gpu *gpu; zes_temp_sensors_t type; int tile; double v; };
struct fake_freq { struct fake_gpu *gpu; zes_freq_domain_t type; double v; };
struct fake_gpu {
	int index;
	struct fake_engine engines[GROUPS];
	struct fake_mem mems[TILES];
	struct fake_pwr pwrs[POWERS];
	struct fake_temp temps[SENSORS];
	struct fake_freq freqs[2];
};

static struct fake_gpu gpus[FAKE_GPUS];
static int driver_token;
static int sysman_on;       // ZES_ENABLE_SYSMAN at zeInit, or zesInit called
static int64_t ze_inits, zes_inits, sysman_calls, sysman_refused;

static const struct { zes_engine_group_t type; int tile; uint32_t rate; } group_table[GROUPS] = {
	{ZES_ENGINE_GROUP_ALL, -1, 800},
	{ZES_ENGINE_GROUP_COMPUTE_ALL, -1, 700},
	{ZES_ENGINE_GROUP_RENDER_SINGLE, -1, 100},
	{ZES_ENGINE_GROUP_MEDIA_DECODE_SINGLE, -1, 200},
	{ZES_ENGINE_GROUP_MEDIA_DECODE_SINGLE, -1, 400},
	{ZES_ENGINE_GROUP_MEDIA_ENCODE_SINGLE, -1, 50},
	{ZES_ENGINE_GROUP_COPY_SINGLE, -1, 250},
	{ZES_ENGINE_GROUP_ALL, 0, 900},
	{ZES_ENGINE_GROUP_COMPUTE_ALL, 0, 600},
	{ZES_ENGINE_GROUP_ALL, 1, 300},
	{ZES_ENGINE_GROUP_COMPUTE_ALL, 1, 200},
};

static void setup(void) {
	static int done;
	if (done)
		return;
	done = 1;
	for (int i = 0; i < FAKE_GPUS; i++) {
		struct fake_gpu *g = &gpus[i];
		g->index = i;
		for (int k = 0; k < GROUPS; k++)
			g->engines[k] = (struct fake_engine){g, group_table[k].type, group_table[k].tile, 5000000, 1000000000, group_table[k].rate};
		for (int t = 0; t < TILES; t++)
			g->mems[t] = (struct fake_mem){g, t, 0, 0, 1000000000};
		for (int p = 0; p < POWERS; p++)
			g->pwrs[p] = (struct fake_pwr){g, p - 1, 123000000, 1000000000};
		g->temps[0] = (struct fake_temp){g, ZES_TEMP_SENSORS_GPU, -1, 65.5};
		g->temps[1] = (struct fake_temp){g, ZES_TEMP_SENSORS_MEMORY, -1, 50};
		g->temps[2] = (struct fake_temp){g, ZES_TEMP_SENSORS_GPU, 0, 70};
		g->temps[3] = (struct fake_temp){g, ZES_TEMP_SENSORS_GPU, 1, 70};
		g->freqs[0] = (struct fake_freq){g, ZES_FREQ_DOMAIN_GPU, 1600};
		g->freqs[1] = (struct fake_freq){g, ZES_FREQ_DOMAIN_MEMORY, 3200};
	}
}

// sysman is the gate every Sysman function passes.
static ze_result_t sysman(void) {
	sysman_calls++;
	if (!sysman_on) {
		sysman_refused++;
		return ZE_RESULT_ERROR_UNINITIALIZED;
	}
	return ZE_RESULT_SUCCESS;
}

// list copies n handles into out per the API's count convention: a zero
// *count asks for the count; a smaller one gets that many.
#define LIST(count, out, n, handle_of)                   \
	do {                                                 \
		if (*(count) == 0 || (out) == NULL) {            \
			*(count) = (n);                              \
			return ZE_RESULT_SUCCESS;                    \
		}                                                \
		if (*(count) > (uint32_t)(n))                    \
			*(count) = (n);                              \
		for (uint32_t i_ = 0; i_ < *(count); i_++)       \
			(out)[i_] = handle_of(i_);                   \
		return ZE_RESULT_SUCCESS;                        \
	} while (0)

// ---- core: init, drivers, devices ----

static ze_result_t ZE_APICALL fake_zeInit(ze_init_flags_t flags) {
	(void)flags;
	setup();
	ze_inits++;
	const char *v = getenv("ZES_ENABLE_SYSMAN");
	if (v && strcmp(v, "1") == 0)
		sysman_on = 1;
	return ZE_RESULT_SUCCESS;
}

#define DRIVER_OF(i) ((ze_driver_handle_t)&driver_token)
static ze_result_t ZE_APICALL fake_zeDriverGet(uint32_t *count, ze_driver_handle_t *out) {
	setup();
	LIST(count, out, 1, DRIVER_OF);
}

#define GPU_OF(i) ((ze_device_handle_t)&gpus[i])
static ze_result_t ZE_APICALL fake_zeDeviceGet(ze_driver_handle_t d, uint32_t *count, ze_device_handle_t *out) {
	if (d != (ze_driver_handle_t)&driver_token)
		return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
	LIST(count, out, FAKE_GPUS, GPU_OF);
}

// ---- sysman: devices ----

static ze_result_t ZE_APICALL fake_zesDeviceGetProperties(zes_device_handle_t h, zes_device_properties_t *p) {
	ze_result_t r = sysman();
	if (r)
		return r;
	struct fake_gpu *g = (struct fake_gpu *)h;
	if (p->stype != ZES_STRUCTURE_TYPE_DEVICE_PROPERTIES)
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	memset(&p->core, 0, sizeof p->core);
	p->core.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
	p->core.type = ZE_DEVICE_TYPE_GPU;
	p->core.vendorId = 0x8086;
	p->core.deviceId = 0x0bd5;
	for (int i = 0; i < ZE_MAX_DEVICE_UUID_SIZE; i++)
		p->core.uuid.id[i] = (uint8_t)(0x10 * g->index + i);
	strcpy(p->core.name, "Intel(R) Data Center GPU Max 1550 (fake)");
	p->numSubdevices = TILES;
	strcpy(p->serialNumber, "unknown");
	strcpy(p->boardNumber, "unknown");
	strcpy(p->brandName, "Intel(R) Corporation");
	strcpy(p->modelName, "Intel(R) Data Center GPU Max 1550 (fake)");
	strcpy(p->vendorName, "Intel(R) Corporation");
	strcpy(p->driverVersion, "1.3.29735 (fake)");
	return ZE_RESULT_SUCCESS;
}

static ze_result_t ZE_APICALL fake_zesDevicePciGetProperties(zes_device_handle_t h, zes_pci_properties_t *p) {
	ze_result_t r = sysman();
	if (r)
		return r;
	struct fake_gpu *g = (struct fake_gpu *)h;
	p->address = (zes_pci_address_t){0, FAKE_BUS + g->index, 0, 0};
	p->maxSpeed = (zes_pci_speed_t){5, 16, 64000000000};
	p->haveBandwidthCounters = 0;
	p->havePacketCounters = 0;
	p->haveReplayCounters = 0;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t ZE_APICALL fake_zesDeviceProcessesGetState(zes_device_handle_t h, uint32_t *count, zes_process_state_t *out) {
	ze_result_t r = sysman();
	if (r)
		return r;
	(void)h;
	static const struct { uint32_t pid; uint64_t mem; } procs[] = {{4242, 8ull << 30}, {5151, 1ull << 30}};
	if (*count == 0 || out == NULL) {
		*count = 2;
		return ZE_RESULT_SUCCESS;
	}
	if (*count > 2)
		*count = 2;
	for (uint32_t i = 0; i < *count; i++) {
		out[i].processId = procs[i].pid;
		out[i].memSize = procs[i].mem;
		out[i].sharedSize = 0;
		out[i].engines = ZES_ENGINE_TYPE_FLAG_COMPUTE;
	}
	return ZE_RESULT_SUCCESS;
}

// ---- sysman: engines ----

static struct fake_gpu *gpu_of(zes_device_handle_t h) { return (struct fake_gpu *)h; }

static ze_result_t ZE_APICALL fake_zesDeviceEnumEngineGroups(zes_device_handle_t h, uint32_t *count, zes_engine_handle_t *out) {
	ze_result_t r = sysman();
	if (r)
		return r;
	struct fake_gpu *g = gpu_of(h);
#define ENGINE_OF(i) ((zes_engine_handle_t)&g->engines[i])
	LIST(count, out, GROUPS, ENGINE_OF);
}

static ze_result_t ZE_APICALL fake_zesEngineGetProperties(zes_engine_handle_t h, zes_engine_properties_t *p) {
	ze_result_t r = sysman();
	if (r)
		return r;
	struct fake_engine *e = (struct fake_engine *)h;
	p->type = e->type;
	p->onSubdevice = e->tile >= 0;
	p->subdeviceId = e->tile >= 0 ? (uint32_t)e->tile : 0;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t ZE_APICALL fake_zesEngineGetActivity(zes_engine_handle_t h, zes_engine_stats_t *s) {
	ze_result_t r = sysman();
	if (r)
		return r;
	struct fake_engine *e = (struct fake_engine *)h;
	e->ts += 1000000;
	e->active += (uint64_t)e->rate * 1000;
	s->activeTime = e->active;
	s->timestamp = e->ts;
	return ZE_RESULT_SUCCESS;
}

// ---- sysman: memory ----

static ze_result_t ZE_APICALL fake_zesDeviceEnumMemoryModules(zes_device_handle_t h, uint32_t *count, zes_mem_handle_t *out) {
	ze_result_t r = sysman();
	if (r)
		return r;
	struct fake_gpu *g = gpu_of(h);
#define MEM_OF(i) ((zes_mem_handle_t)&g->mems[i])
	LIST(count, out, TILES, MEM_OF);
}

static ze_result_t ZE_APICALL fake_zesMemoryGetProperties(zes_mem_handle_t h, zes_mem_properties_t *p) {
	ze_result_t r = sysman();
	if (r)
		return r;
	struct fake_mem *m = (struct fake_mem *)h;
	p->type = ZES_MEM_TYPE_HBM;
	p->onSubdevice = 1;
	p->subdeviceId = (uint32_t)m->tile;
	p->location = ZES_MEM_LOC_DEVICE;
	p->physicalSize = 64ull << 30;
	p->busWidth = -1;
	p->numChannels = -1;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t ZE_APICALL fake_zesMemoryGetState(zes_mem_handle_t h, zes_mem_state_t *s) {
	ze_result_t r = sysman();
	if (r)
		return r;
	struct fake_mem *m = (struct fake_mem *)h;
	if (m->gpu->index == FAKE_FAIL_GPU)
		return ZE_RESULT_ERROR_DEVICE_LOST;
	s->health = ZES_MEM_HEALTH_OK;
	s->size = 64ull << 30;
	s->free = s->size - ((uint64_t)(16 + m->gpu->index) << 30) / TILES;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t ZE_APICALL fake_zesMemoryGetBandwidth(zes_mem_handle_t h, zes_mem_bandwidth_t *b) {
	ze_result_t r = sysman();
	if (r)
		return r;
	struct fake_mem *m = (struct fake_mem *)h;
	m->ts += 1000000;
	m->rd += 1000000000;
	m->wr += 500000000;
	b->readCounter = m->rd;
	b->writeCounter = m->wr;
	b->maxBandwidth = 3276800000000ull;
	b->timestamp = m->ts;
	return ZE_RESULT_SUCCESS;
}

// ---- sysman: power ----

static ze_result_t ZE_APICALL fake_zesDeviceEnumPowerDomains(zes_device_handle_t h, uint32_t *count, zes_pwr_handle_t *out) {
	ze_result_t r = sysman();
	if (r)
		return r;
	struct fake_gpu *g = gpu_of(h);
	// The tiles' domains; the card's comes from zesDeviceGetCardPowerDomain.
#define PWR_OF(i) ((zes_pwr_handle_t)&g->pwrs[1 + i])
	LIST(count, out, TILES, PWR_OF);
}

static ze_result_t ZE_APICALL fake_zesDeviceGetCardPowerDomain(zes_device_handle_t h, zes_pwr_handle_t *out) {
	ze_result_t r = sysman();
	if (r)
		return r;
	*out = (zes_pwr_handle_t)&gpu_of(h)->pwrs[0];
	return ZE_RESULT_SUCCESS;
}

static ze_result_t ZE_APICALL fake_zesPowerGetProperties(zes_pwr_handle_t h, zes_power_properties_t *p) {
	ze_result_t r = sysman();
	if (r)
		return r;
	struct fake_pwr *w = (struct fake_pwr *)h;
	p->onSubdevice = w->tile >= 0;
	p->subdeviceId = w->tile >= 0 ? (uint32_t)w->tile : 0;
	p->canControl = 0;
	p->isEnergyThresholdSupported = 0;
	p->defaultLimit = 600000;
	p->minLimit = -1;
	p->maxLimit = -1;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t ZE_APICALL fake_zesPowerGetEnergyCounter(zes_pwr_handle_t h, zes_power_energy_counter_t *e) {
	ze_result_t r = sysman();
	if (r)
		return r;
	struct fake_pwr *w = (struct fake_pwr *)h;
	w->ts += 1000000;
	w->energy += w->tile < 0 ? 300000000 : 140000000;
	e->energy = w->energy;
	e->timestamp = w->ts;
	return ZE_RESULT_SUCCESS;
}

// ---- sysman: temperature, frequency ----

static ze_result_t ZE_APICALL fake_zesDeviceEnumTemperatureSensors(zes_device_handle_t h, uint32_t *count, zes_temp_handle_t *out) {
	ze_result_t r = sysman();
	if (r)
		return r;
	struct fake_gpu *g = gpu_of(h);
#define TEMP_OF(i) ((zes_temp_handle_t)&g->temps[i])
	LIST(count, out, SENSORS, TEMP_OF);
}

static ze_result_t ZE_APICALL fake_zesTemperatureGetProperties(zes_temp_handle_t h, zes_temp_properties_t *p) {
	ze_result_t r = sysman();
	if (r)
		return r;
	struct fake_temp *t = (struct fake_temp *)h;
	p->type = t->type;
	p->onSubdevice = t->tile >= 0;
	p->subdeviceId = t->tile >= 0 ? (uint32_t)t->tile : 0;
	p->maxTemperature = 105;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t ZE_APICALL fake_zesTemperatureGetState(zes_temp_handle_t h, double *v) {
	ze_result_t r = sysman();
	if (r)
		return r;
	*v = ((struct fake_temp *)h)->v;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t ZE_APICALL fake_zesDeviceEnumFrequencyDomains(zes_device_handle_t h, uint32_t *count, zes_freq_handle_t *out) {
	ze_result_t r = sysman();
	if (r)
		return r;
	struct fake_gpu *g = gpu_of(h);
#define FREQ_OF(i) ((zes_freq_handle_t)&g->freqs[i])
	LIST(count, out, 2, FREQ_OF);
}

static ze_result_t ZE_APICALL fake_zesFrequencyGetProperties(zes_freq_handle_t h, zes_freq_properties_t *p) {
	ze_result_t r = sysman();
	if (r)
		return r;
	struct fake_freq *f = (struct fake_freq *)h;
	p->type = f->type;
	p->onSubdevice = 0;
	p->subdeviceId = 0;
	p->min = 300;
	p->max = f->v;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t ZE_APICALL fake_zesFrequencyGetState(zes_freq_handle_t h, zes_freq_state_t *s) {
	ze_result_t r = sysman();
	if (r)
		return r;
	struct fake_freq *f = (struct fake_freq *)h;
	s->currentVoltage = -1;
	s->request = f->v;
	s->tdp = f->v;
	s->efficient = -1;
	s->actual = f->v;
	s->throttleReasons = 0;
	return ZE_RESULT_SUCCESS;
}

// ---- what the tests read back ----

// xpuscope_fake_ze_state reports zeInit calls (as the driver saw them),
// zesInit calls, whether Sysman is on, Sysman calls and those refused.
EXPORT void xpuscope_fake_ze_state(int64_t out[5]) {
	out[0] = ze_inits;
	out[1] = zes_inits;
	out[2] = sysman_on;
	out[3] = sysman_calls;
	out[4] = sysman_refused;
}

#define OFF(type, member) (uint64_t) offsetof(type, member)

// xpuscope_fake_ze_layout reports sizeof and offsetof of the structures
// the Go binding lays out, from the headers this file includes.
EXPORT void xpuscope_fake_ze_layout(uint64_t out[64]) {
	int i = 0;
	out[i++] = sizeof(zes_device_properties_t);
	out[i++] = OFF(zes_device_properties_t, core);
	out[i++] = OFF(zes_device_properties_t, numSubdevices);
	out[i++] = OFF(zes_device_properties_t, modelName);
	out[i++] = OFF(zes_device_properties_t, driverVersion);
	out[i++] = sizeof(ze_device_properties_t);
	out[i++] = OFF(ze_device_properties_t, vendorId);
	out[i++] = OFF(ze_device_properties_t, deviceId);
	out[i++] = OFF(ze_device_properties_t, uuid);
	out[i++] = OFF(ze_device_properties_t, name);
	out[i++] = sizeof(zes_pci_properties_t);
	out[i++] = OFF(zes_pci_properties_t, address);
	out[i++] = sizeof(zes_engine_properties_t);
	out[i++] = OFF(zes_engine_properties_t, type);
	out[i++] = OFF(zes_engine_properties_t, onSubdevice);
	out[i++] = OFF(zes_engine_properties_t, subdeviceId);
	out[i++] = sizeof(zes_engine_stats_t);
	out[i++] = OFF(zes_engine_stats_t, timestamp);
	out[i++] = sizeof(zes_mem_properties_t);
	out[i++] = OFF(zes_mem_properties_t, onSubdevice);
	out[i++] = OFF(zes_mem_properties_t, subdeviceId);
	out[i++] = OFF(zes_mem_properties_t, location);
	out[i++] = OFF(zes_mem_properties_t, physicalSize);
	out[i++] = sizeof(zes_mem_state_t);
	out[i++] = OFF(zes_mem_state_t, free);
	out[i++] = OFF(zes_mem_state_t, size);
	out[i++] = sizeof(zes_mem_bandwidth_t);
	out[i++] = OFF(zes_mem_bandwidth_t, timestamp);
	out[i++] = sizeof(zes_power_properties_t);
	out[i++] = OFF(zes_power_properties_t, onSubdevice);
	out[i++] = OFF(zes_power_properties_t, subdeviceId);
	out[i++] = sizeof(zes_power_energy_counter_t);
	out[i++] = sizeof(zes_temp_properties_t);
	out[i++] = OFF(zes_temp_properties_t, type);
	out[i++] = OFF(zes_temp_properties_t, onSubdevice);
	out[i++] = OFF(zes_temp_properties_t, subdeviceId);
	out[i++] = sizeof(zes_freq_properties_t);
	out[i++] = OFF(zes_freq_properties_t, type);
	out[i++] = OFF(zes_freq_properties_t, onSubdevice);
	out[i++] = sizeof(zes_freq_state_t);
	out[i++] = OFF(zes_freq_state_t, actual);
	out[i++] = sizeof(zes_process_state_t);
	out[i++] = OFF(zes_process_state_t, processId);
	out[i++] = OFF(zes_process_state_t, memSize);
	out[i++] = OFF(zes_process_state_t, engines);
	out[i++] = ZES_STRUCTURE_TYPE_DEVICE_PROPERTIES;
	out[i++] = ZES_STRUCTURE_TYPE_PCI_PROPERTIES;
	out[i++] = ZES_STRUCTURE_TYPE_ENGINE_PROPERTIES;
	out[i++] = ZES_STRUCTURE_TYPE_MEM_PROPERTIES;
	out[i++] = ZES_STRUCTURE_TYPE_MEM_STATE;
	out[i++] = ZES_STRUCTURE_TYPE_POWER_PROPERTIES;
	out[i++] = ZES_STRUCTURE_TYPE_TEMP_PROPERTIES;
	out[i++] = ZES_STRUCTURE_TYPE_FREQ_PROPERTIES;
	out[i++] = ZES_STRUCTURE_TYPE_FREQ_STATE;
	out[i++] = ZES_STRUCTURE_TYPE_PROCESS_STATE;
	out[i++] = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
	out[i++] = ZE_RESULT_ERROR_UNINITIALIZED;
	out[i++] = ZE_RESULT_ERROR_DEVICE_LOST;
	out[i++] = ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
	out[i++] = ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS;
	out[i] = (uint64_t)i; // how many were written before this one
}

#ifndef FAKE_AS_LOADER

// ---- the driver: DDI tables for the loader ----

// Every table getter of the 1.4 headers: the loader's library
// initialisation asks for each core table and fails without a driver
// that provides it. The tables are zero but for what the fake does.
#define EMPTY_TABLE(fn, type)                                            \
	EXPORT ze_result_t ZE_APICALL fn(ze_api_version_t v, type *t) {      \
		(void)v;                                                         \
		if (t == NULL)                                                   \
			return ZE_RESULT_ERROR_INVALID_NULL_POINTER;                 \
		memset(t, 0, sizeof *t);                                         \
		return ZE_RESULT_SUCCESS;                                        \
	}

EMPTY_TABLE(zeGetDeviceExpProcAddrTable, ze_device_exp_dditable_t)
EMPTY_TABLE(zeGetContextProcAddrTable, ze_context_dditable_t)
EMPTY_TABLE(zeGetCommandQueueProcAddrTable, ze_command_queue_dditable_t)
EMPTY_TABLE(zeGetCommandListProcAddrTable, ze_command_list_dditable_t)
EMPTY_TABLE(zeGetImageProcAddrTable, ze_image_dditable_t)
EMPTY_TABLE(zeGetImageExpProcAddrTable, ze_image_exp_dditable_t)
EMPTY_TABLE(zeGetFenceProcAddrTable, ze_fence_dditable_t)
EMPTY_TABLE(zeGetEventPoolProcAddrTable, ze_event_pool_dditable_t)
EMPTY_TABLE(zeGetEventProcAddrTable, ze_event_dditable_t)
EMPTY_TABLE(zeGetEventExpProcAddrTable, ze_event_exp_dditable_t)
EMPTY_TABLE(zeGetModuleProcAddrTable, ze_module_dditable_t)
EMPTY_TABLE(zeGetModuleBuildLogProcAddrTable, ze_module_build_log_dditable_t)
EMPTY_TABLE(zeGetKernelProcAddrTable, ze_kernel_dditable_t)
EMPTY_TABLE(zeGetKernelExpProcAddrTable, ze_kernel_exp_dditable_t)
EMPTY_TABLE(zeGetSamplerProcAddrTable, ze_sampler_dditable_t)
EMPTY_TABLE(zeGetPhysicalMemProcAddrTable, ze_physical_mem_dditable_t)
EMPTY_TABLE(zeGetMemProcAddrTable, ze_mem_dditable_t)
EMPTY_TABLE(zeGetVirtualMemProcAddrTable, ze_virtual_mem_dditable_t)
EMPTY_TABLE(zeGetFabricVertexExpProcAddrTable, ze_fabric_vertex_exp_dditable_t)
EMPTY_TABLE(zeGetFabricEdgeExpProcAddrTable, ze_fabric_edge_exp_dditable_t)
EMPTY_TABLE(zetGetDeviceProcAddrTable, zet_device_dditable_t)
EMPTY_TABLE(zetGetContextProcAddrTable, zet_context_dditable_t)
EMPTY_TABLE(zetGetCommandListProcAddrTable, zet_command_list_dditable_t)
EMPTY_TABLE(zetGetModuleProcAddrTable, zet_module_dditable_t)
EMPTY_TABLE(zetGetKernelProcAddrTable, zet_kernel_dditable_t)
EMPTY_TABLE(zetGetMetricGroupProcAddrTable, zet_metric_group_dditable_t)
EMPTY_TABLE(zetGetMetricGroupExpProcAddrTable, zet_metric_group_exp_dditable_t)
EMPTY_TABLE(zetGetMetricProcAddrTable, zet_metric_dditable_t)
EMPTY_TABLE(zetGetMetricStreamerProcAddrTable, zet_metric_streamer_dditable_t)
EMPTY_TABLE(zetGetMetricQueryPoolProcAddrTable, zet_metric_query_pool_dditable_t)
EMPTY_TABLE(zetGetMetricQueryProcAddrTable, zet_metric_query_dditable_t)
EMPTY_TABLE(zetGetTracerExpProcAddrTable, zet_tracer_exp_dditable_t)
EMPTY_TABLE(zetGetDebugProcAddrTable, zet_debug_dditable_t)
EMPTY_TABLE(zesGetDriverProcAddrTable, zes_driver_dditable_t)
EMPTY_TABLE(zesGetSchedulerProcAddrTable, zes_scheduler_dditable_t)
EMPTY_TABLE(zesGetPerformanceFactorProcAddrTable, zes_performance_factor_dditable_t)
EMPTY_TABLE(zesGetStandbyProcAddrTable, zes_standby_dditable_t)
EMPTY_TABLE(zesGetFirmwareProcAddrTable, zes_firmware_dditable_t)
EMPTY_TABLE(zesGetFabricPortProcAddrTable, zes_fabric_port_dditable_t)
EMPTY_TABLE(zesGetPsuProcAddrTable, zes_psu_dditable_t)
EMPTY_TABLE(zesGetFanProcAddrTable, zes_fan_dditable_t)
EMPTY_TABLE(zesGetLedProcAddrTable, zes_led_dditable_t)
EMPTY_TABLE(zesGetRasProcAddrTable, zes_ras_dditable_t)
EMPTY_TABLE(zesGetDiagnosticsProcAddrTable, zes_diagnostics_dditable_t)

#define TABLE(fn, type, fill)                                            \
	EXPORT ze_result_t ZE_APICALL fn(ze_api_version_t v, type *t) {      \
		(void)v;                                                         \
		if (t == NULL)                                                   \
			return ZE_RESULT_ERROR_INVALID_NULL_POINTER;                 \
		memset(t, 0, sizeof *t);                                         \
		fill;                                                            \
		return ZE_RESULT_SUCCESS;                                        \
	}

TABLE(zeGetGlobalProcAddrTable, ze_global_dditable_t, t->pfnInit = fake_zeInit)
TABLE(zeGetDriverProcAddrTable, ze_driver_dditable_t, t->pfnGet = fake_zeDriverGet)
TABLE(zeGetDeviceProcAddrTable, ze_device_dditable_t, t->pfnGet = fake_zeDeviceGet)
TABLE(zesGetDeviceProcAddrTable, zes_device_dditable_t,
      t->pfnGetProperties = fake_zesDeviceGetProperties;
      t->pfnProcessesGetState = fake_zesDeviceProcessesGetState;
      t->pfnPciGetProperties = fake_zesDevicePciGetProperties;
      t->pfnEnumEngineGroups = fake_zesDeviceEnumEngineGroups;
      t->pfnEnumFrequencyDomains = fake_zesDeviceEnumFrequencyDomains;
      t->pfnEnumMemoryModules = fake_zesDeviceEnumMemoryModules;
      t->pfnEnumPowerDomains = fake_zesDeviceEnumPowerDomains;
      t->pfnGetCardPowerDomain = fake_zesDeviceGetCardPowerDomain;
      t->pfnEnumTemperatureSensors = fake_zesDeviceEnumTemperatureSensors)
TABLE(zesGetEngineProcAddrTable, zes_engine_dditable_t,
      t->pfnGetProperties = fake_zesEngineGetProperties;
      t->pfnGetActivity = fake_zesEngineGetActivity)
TABLE(zesGetMemoryProcAddrTable, zes_memory_dditable_t,
      t->pfnGetProperties = fake_zesMemoryGetProperties;
      t->pfnGetState = fake_zesMemoryGetState;
      t->pfnGetBandwidth = fake_zesMemoryGetBandwidth)
TABLE(zesGetPowerProcAddrTable, zes_power_dditable_t,
      t->pfnGetProperties = fake_zesPowerGetProperties;
      t->pfnGetEnergyCounter = fake_zesPowerGetEnergyCounter)
TABLE(zesGetTemperatureProcAddrTable, zes_temperature_dditable_t,
      t->pfnGetProperties = fake_zesTemperatureGetProperties;
      t->pfnGetState = fake_zesTemperatureGetState)
TABLE(zesGetFrequencyProcAddrTable, zes_frequency_dditable_t,
      t->pfnGetProperties = fake_zesFrequencyGetProperties;
      t->pfnGetState = fake_zesFrequencyGetState)

#else // FAKE_AS_LOADER

// ---- a Level Zero 1.5+ loader: the API functions themselves ----

EXPORT ze_result_t ZE_APICALL zeInit(ze_init_flags_t flags) { return fake_zeInit(flags); }
EXPORT ze_result_t ZE_APICALL zeDriverGet(uint32_t *c, ze_driver_handle_t *o) { return fake_zeDriverGet(c, o); }
EXPORT ze_result_t ZE_APICALL zeDeviceGet(ze_driver_handle_t d, uint32_t *c, ze_device_handle_t *o) { return fake_zeDeviceGet(d, c, o); }

#ifndef FAKE_NO_ZES_INIT
// zes_api.h v1.5: zesInit(zes_init_flags_t), zesDriverGet(uint32_t*,
// zes_driver_handle_t*), zesDeviceGet(zes_driver_handle_t, uint32_t*,
// zes_device_handle_t*), with zes_init_flags_t a uint32_t.
EXPORT ze_result_t ZE_APICALL zesInit(uint32_t flags) {
	(void)flags;
	setup();
	zes_inits++;
	sysman_on = 1;
	return ZE_RESULT_SUCCESS;
}
EXPORT ze_result_t ZE_APICALL zesDriverGet(uint32_t *c, zes_driver_handle_t *o) {
	return fake_zeDriverGet(c, (ze_driver_handle_t *)o);
}
EXPORT ze_result_t ZE_APICALL zesDeviceGet(zes_driver_handle_t d, uint32_t *c, zes_device_handle_t *o) {
	return fake_zeDeviceGet((ze_driver_handle_t)d, c, (ze_device_handle_t *)o);
}
#endif

#define FORWARD(ret, name, params, args) \
	EXPORT ret ZE_APICALL name params { return fake_##name args; }

FORWARD(ze_result_t, zesDeviceGetProperties, (zes_device_handle_t h, zes_device_properties_t *p), (h, p))
FORWARD(ze_result_t, zesDevicePciGetProperties, (zes_device_handle_t h, zes_pci_properties_t *p), (h, p))
FORWARD(ze_result_t, zesDeviceProcessesGetState, (zes_device_handle_t h, uint32_t *c, zes_process_state_t *o), (h, c, o))
FORWARD(ze_result_t, zesDeviceEnumEngineGroups, (zes_device_handle_t h, uint32_t *c, zes_engine_handle_t *o), (h, c, o))
FORWARD(ze_result_t, zesEngineGetProperties, (zes_engine_handle_t h, zes_engine_properties_t *p), (h, p))
FORWARD(ze_result_t, zesEngineGetActivity, (zes_engine_handle_t h, zes_engine_stats_t *s), (h, s))
FORWARD(ze_result_t, zesDeviceEnumMemoryModules, (zes_device_handle_t h, uint32_t *c, zes_mem_handle_t *o), (h, c, o))
FORWARD(ze_result_t, zesMemoryGetProperties, (zes_mem_handle_t h, zes_mem_properties_t *p), (h, p))
FORWARD(ze_result_t, zesMemoryGetState, (zes_mem_handle_t h, zes_mem_state_t *s), (h, s))
FORWARD(ze_result_t, zesMemoryGetBandwidth, (zes_mem_handle_t h, zes_mem_bandwidth_t *b), (h, b))
FORWARD(ze_result_t, zesDeviceEnumPowerDomains, (zes_device_handle_t h, uint32_t *c, zes_pwr_handle_t *o), (h, c, o))
FORWARD(ze_result_t, zesDeviceGetCardPowerDomain, (zes_device_handle_t h, zes_pwr_handle_t *o), (h, o))
FORWARD(ze_result_t, zesPowerGetProperties, (zes_pwr_handle_t h, zes_power_properties_t *p), (h, p))
FORWARD(ze_result_t, zesPowerGetEnergyCounter, (zes_pwr_handle_t h, zes_power_energy_counter_t *e), (h, e))
FORWARD(ze_result_t, zesDeviceEnumTemperatureSensors, (zes_device_handle_t h, uint32_t *c, zes_temp_handle_t *o), (h, c, o))
FORWARD(ze_result_t, zesTemperatureGetProperties, (zes_temp_handle_t h, zes_temp_properties_t *p), (h, p))
FORWARD(ze_result_t, zesTemperatureGetState, (zes_temp_handle_t h, double *v), (h, v))
FORWARD(ze_result_t, zesDeviceEnumFrequencyDomains, (zes_device_handle_t h, uint32_t *c, zes_freq_handle_t *o), (h, c, o))
FORWARD(ze_result_t, zesFrequencyGetProperties, (zes_freq_handle_t h, zes_freq_properties_t *p), (h, p))
FORWARD(ze_result_t, zesFrequencyGetState, (zes_freq_handle_t h, zes_freq_state_t *s), (h, s))

#endif // FAKE_AS_LOADER
