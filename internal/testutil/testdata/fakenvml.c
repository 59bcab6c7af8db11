/*
 * fakenvml.c: a fake libnvidia-ml.so.1 for the gpu package's tests.
 *
 * The machines the tests run on have no NVIDIA GPU. The real NVML library
 * (Debian's libnvidia-ml1) installs there but only answers
 * NVML_ERROR_DRIVER_NOT_LOADED, so the values a GPU would report cannot be
 * read from it. This library stands in for that hardware: it exports the
 * NVML entry points the gpu package calls and reports two GPUs with the
 * fixed, distinct values in the table below. gpu/fakelib_test.go builds it
 * and asserts each value after the Source's unit conversions.
 *
 * Build (the test does this):
 *
 *   gcc -shared -fPIC -DNVML_NO_UNVERSIONED_FUNC_DEFS=1 \
 *       -I$(go list -m -f '{{.Dir}}' github.com/NVIDIA/go-nvml)/pkg/nvml \
 *       -o libnvidia-ml.so.1 fakenvml.c
 *
 * With -DOMIT_ENERGY the library lacks nvmlDeviceGetTotalEnergyConsumption,
 * like a driver older than Volta support: the Source must report the
 * missing symbol instead of calling it (which would kill the process).
 *
 * With -DFAKE_GPUS=N (1..128; default 2) it reports N GPUs, for load and
 * footprint measurements: GPU i repeats the values of GPU (i % 2) below,
 * except for its UUID, GPU-fa4eXXXX-0000-4000-8000-00000000XXXX with XXXX
 * the index in hex, and its PCI bus, the template's plus i / 2. GPUs 0 and
 * 1 are exactly those of the table.
 *
 * Values (GPU 0 | GPU 1), as NVML reports them:
 *
 *   UUID              GPU-fa4e0000-0000-4000-8000-000000000000 | GPU-fa4e0001-0000-4000-8000-000000000001
 *   name              NVIDIA Fake H100 80GB HBM3 | NVIDIA Fake A100-SXM4-40GB
 *   PCI bus id        00000000:3B:00.0 | 00000000:AF:00.0
 *   driver version    535.999.01 (system-wide)
 *   utilization       gpu 75 %, memory 40 % | gpu 20 %, memory 10 %
 *   encoder/decoder   12 % / 7 % | 3 % / 4 %
 *   memory v2 (B)     total 85899345920 (80 GiB), reserved 536870912 (512 MiB),
 *                     used 21474836480 (20 GiB), free 63887638528
 *                   | total 42949672960 (40 GiB), reserved 268435456 (256 MiB),
 *                     used 4294967296 (4 GiB), free 38386270208
 *   memory v1 (B)     total and free as v2; used = v2 used + reserved
 *   temperature       61 C | 44 C
 *   power usage       312500 mW | 98765 mW
 *   enforced limit    700000 mW | 400000 mW
 *   total energy      123456789 mJ | 987654321 mJ
 *   clocks SM / MEM   1980 / 2619 MHz | 1410 / 1215 MHz
 *   PCIe TX / RX      1111111111 / 2222222222 B | 333333333 / 444444444 B
 *                     (field values 197 / 198, NVML_VALUE_TYPE_UNSIGNED_LONG_LONG)
 *   fan speed         55 % | 30 %
 *   ECC volatile      corrected 3, uncorrected 1 | corrected 5, uncorrected 2
 *   ECC aggregate     corrected 1003, uncorrected 1001 | 1005, 1002 (must not be read)
 *   clocks events     0x44 (sw_power_cap, hw_thermal_slowdown)
 *                   | 0x101 (gpu_idle, display_clock_setting)
 *   compute procs     pid getpid(), 1073741824 B (1 GiB) | none
 *   graphics procs    pid getpid(), 268435456 B (the same process, smaller) | none
 *   process util      one sample: pid getpid(), SM 37 % | NVML_ERROR_NOT_FOUND
 *   MIG               NVML_ERROR_NOT_SUPPORTED (neither GPU is MIG-capable)
 *   events            registration succeeds; a wait sleeps for its timeout
 *                     and returns NVML_ERROR_TIMEOUT (no XID ever happens)
 *
 * getpid() is the process that loaded the library (the test's child), so
 * the Source can resolve the process's executable name from /proc.
 */

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nvml.h"

#define EXPORT __attribute__((visibility("default")))

struct nvmlDevice_st {
	char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE]; /* set by makeDevices */
	const char *name;
	unsigned int bus;
	unsigned int pciDeviceId;
	unsigned int utilGpu, utilMemory;
	unsigned int encoder, decoder;
	unsigned long long memTotal, memReserved, memUsed;
	unsigned int temperature;
	unsigned int powerMilliwatts, powerLimitMilliwatts;
	unsigned long long energyMillijoules;
	unsigned int clockSM, clockMem;
	unsigned long long pcieTx, pcieRx;
	unsigned int fan;
	unsigned long long eccCorrected, eccUncorrected;
	unsigned long long clocksEventReasons;
	unsigned long long computeProcMem, graphicsProcMem; /* 0: no process */
	unsigned int procSMUtil;                            /* 0: no sample */
};

#ifndef FAKE_GPUS
#define FAKE_GPUS 2
#endif
#if FAKE_GPUS < 1 || FAKE_GPUS > 128
#error "FAKE_GPUS must be 1..128 (PCI bus numbers must stay distinct and below 0x100)"
#endif

/* The two GPUs of the table; devices[i] is a copy of templates[i % 2]. */
static const struct nvmlDevice_st templates[2] = {
	{
		.name = "NVIDIA Fake H100 80GB HBM3",
		.bus = 0x3b,
		.pciDeviceId = 0x233010de,
		.utilGpu = 75, .utilMemory = 40,
		.encoder = 12, .decoder = 7,
		.memTotal = 85899345920ULL, .memReserved = 536870912ULL, .memUsed = 21474836480ULL,
		.temperature = 61,
		.powerMilliwatts = 312500, .powerLimitMilliwatts = 700000,
		.energyMillijoules = 123456789ULL,
		.clockSM = 1980, .clockMem = 2619,
		.pcieTx = 1111111111ULL, .pcieRx = 2222222222ULL,
		.fan = 55,
		.eccCorrected = 3, .eccUncorrected = 1,
		.clocksEventReasons = nvmlClocksEventReasonSwPowerCap | 0x40ULL /* hw thermal slowdown */,
		.computeProcMem = 1073741824ULL, .graphicsProcMem = 268435456ULL,
		.procSMUtil = 37,
	},
	{
		.name = "NVIDIA Fake A100-SXM4-40GB",
		.bus = 0xaf,
		.pciDeviceId = 0x20b010de,
		.utilGpu = 20, .utilMemory = 10,
		.encoder = 3, .decoder = 4,
		.memTotal = 42949672960ULL, .memReserved = 268435456ULL, .memUsed = 4294967296ULL,
		.temperature = 44,
		.powerMilliwatts = 98765, .powerLimitMilliwatts = 400000,
		.energyMillijoules = 987654321ULL,
		.clockSM = 1410, .clockMem = 1215,
		.pcieTx = 333333333ULL, .pcieRx = 444444444ULL,
		.fan = 30,
		.eccCorrected = 5, .eccUncorrected = 2,
		.clocksEventReasons = nvmlClocksEventReasonGpuIdle | nvmlClocksEventReasonDisplayClockSetting,
		.computeProcMem = 0, .graphicsProcMem = 0,
		.procSMUtil = 0,
	},
};

#define NUM_DEVICES ((unsigned int)FAKE_GPUS)

/* The device handles NVML hands out point into this array, which never
 * moves. */
static struct nvmlDevice_st devices[FAKE_GPUS];

/* makeDevices fills devices from the templates when the library is loaded,
 * before any NVML call. */
__attribute__((constructor)) static void makeDevices(void)
{
	for (unsigned int i = 0; i < NUM_DEVICES; i++) {
		devices[i] = templates[i % 2];
		devices[i].bus += i / 2;
		snprintf(devices[i].uuid, sizeof(devices[i].uuid), "GPU-fa4e%04x-0000-4000-8000-%012x", i, i);
	}
}

#define DRIVER_VERSION "535.999.01"

/* nvmlInit_v2 reference count: NVML counts inits and shutdowns. */
static atomic_int initCount;

struct nvmlEventSet_st {
	unsigned long long registered;
};

/* dev checks that NVML is initialised and that h is one of ours. */
static struct nvmlDevice_st *dev(nvmlDevice_t h)
{
	if (atomic_load(&initCount) <= 0)
		return NULL;
	for (unsigned int i = 0; i < NUM_DEVICES; i++)
		if (h.handle == &devices[i])
			return &devices[i];
	return NULL;
}

/* CHECK resolves the handle or returns the error NVML would. */
#define CHECK(d, h)                                                   \
	struct nvmlDevice_st *d = dev(h);                             \
	do {                                                          \
		if (atomic_load(&initCount) <= 0)                     \
			return NVML_ERROR_UNINITIALIZED;              \
		if (d == NULL)                                        \
			return NVML_ERROR_INVALID_ARGUMENT;           \
	} while (0)

static nvmlReturn_t copyString(char *dst, unsigned int length, const char *src)
{
	if (dst == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (strlen(src) + 1 > length)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(dst, src, strlen(src) + 1);
	return NVML_SUCCESS;
}

static unsigned long long nowMicros(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000ULL;
}

/* ---- init, errors, system ---------------------------------------------- */

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
	atomic_fetch_add(&initCount, 1);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlShutdown(void)
{
	int n = atomic_load(&initCount);
	while (n > 0 && !atomic_compare_exchange_weak(&initCount, &n, n - 1))
		;
	return n > 0 ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t result)
{
	switch (result) {
	case NVML_SUCCESS:                  return "Success";
	case NVML_ERROR_UNINITIALIZED:      return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT:   return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED:      return "Not Supported";
	case NVML_ERROR_NOT_FOUND:          return "Not Found";
	case NVML_ERROR_INSUFFICIENT_SIZE:  return "Insufficient Size";
	case NVML_ERROR_TIMEOUT:            return "Timeout";
	case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument Version Mismatch";
	default:                            return "Unknown Error";
	}
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
	if (atomic_load(&initCount) <= 0)
		return NVML_ERROR_UNINITIALIZED;
	return copyString(version, length, DRIVER_VERSION);
}

/* ---- enumeration and identity ------------------------------------------ */

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
	if (atomic_load(&initCount) <= 0)
		return NVML_ERROR_UNINITIALIZED;
	if (deviceCount == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	*deviceCount = NUM_DEVICES;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	if (atomic_load(&initCount) <= 0)
		return NVML_ERROR_UNINITIALIZED;
	if (device == NULL || index >= NUM_DEVICES)
		return NVML_ERROR_INVALID_ARGUMENT;
	device->handle = &devices[index];
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
	CHECK(d, device);
	return copyString(uuid, length, d->uuid);
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
	CHECK(d, device);
	return copyString(name, length, d->name);
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	CHECK(d, device);
	if (pci == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	memset(pci, 0, sizeof(*pci));
	pci->domain = 0;
	pci->bus = d->bus;
	pci->device = 0;
	pci->pciDeviceId = d->pciDeviceId;
	pci->pciSubSystemId = 0x16c110de;
	/* Upper-case hex, 8-digit domain: the form NVML really uses. */
	snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT,
		 pci->domain, pci->bus, pci->device);
	snprintf(pci->busId, sizeof(pci->busId), NVML_DEVICE_PCI_BUS_ID_FMT,
		 pci->domain, pci->bus, pci->device);
	return NVML_SUCCESS;
}

/* ---- utilization ------------------------------------------------------- */

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
	CHECK(d, device);
	if (utilization == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	utilization->gpu = d->utilGpu;
	utilization->memory = d->utilMemory;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t device, unsigned int *utilization,
						    unsigned int *samplingPeriodUs)
{
	CHECK(d, device);
	if (utilization == NULL || samplingPeriodUs == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	*utilization = d->encoder;
	*samplingPeriodUs = 167000;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t device, unsigned int *utilization,
						    unsigned int *samplingPeriodUs)
{
	CHECK(d, device);
	if (utilization == NULL || samplingPeriodUs == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	*utilization = d->decoder;
	*samplingPeriodUs = 167000;
	return NVML_SUCCESS;
}

/* ---- memory ------------------------------------------------------------ */

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
	CHECK(d, device);
	if (memory == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (memory->version != nvmlMemory_v2)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	memory->total = d->memTotal;
	memory->reserved = d->memReserved;
	memory->used = d->memUsed;
	memory->free = d->memTotal - d->memReserved - d->memUsed;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
	CHECK(d, device);
	if (memory == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	/* v1 counts the reserved memory as used. */
	memory->total = d->memTotal;
	memory->used = d->memUsed + d->memReserved;
	memory->free = d->memTotal - memory->used;
	return NVML_SUCCESS;
}

/* ---- thermal, power, energy, clocks, fan ------------------------------- */

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
					     unsigned int *temp)
{
	CHECK(d, device);
	if (temp == NULL || sensorType != NVML_TEMPERATURE_GPU)
		return NVML_ERROR_INVALID_ARGUMENT;
	*temp = d->temperature;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
	CHECK(d, device);
	if (power == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	*power = d->powerMilliwatts;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int *limit)
{
	CHECK(d, device);
	if (limit == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	*limit = d->powerLimitMilliwatts;
	return NVML_SUCCESS;
}

#ifndef OMIT_ENERGY
EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long *energy)
{
	CHECK(d, device);
	if (energy == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	*energy = d->energyMillijoules;
	return NVML_SUCCESS;
}
#endif

EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock)
{
	CHECK(d, device);
	if (clock == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	switch (type) {
	case NVML_CLOCK_SM:
		*clock = d->clockSM;
		return NVML_SUCCESS;
	case NVML_CLOCK_MEM:
		*clock = d->clockMem;
		return NVML_SUCCESS;
	default:
		return NVML_ERROR_INVALID_ARGUMENT;
	}
}

EXPORT nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t device, unsigned int *speed)
{
	CHECK(d, device);
	if (speed == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	*speed = d->fan;
	return NVML_SUCCESS;
}

/* Both GPUs: compute capability 9.0 with 16896 FP32 cores (132 SMs). */
EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor)
{
	CHECK(d, device);
	(void)d;
	if (major == NULL || minor == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	*major = 9;
	*minor = 0;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetNumGpuCores(nvmlDevice_t device, unsigned int *numCores)
{
	CHECK(d, device);
	(void)d;
	if (numCores == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	*numCores = 16896;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
							   unsigned long long *clocksEventReasons)
{
	CHECK(d, device);
	if (clocksEventReasons == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	*clocksEventReasons = d->clocksEventReasons;
	return NVML_SUCCESS;
}

/* The older name of the same call (deprecated in NVML 12.x). */
EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
							      unsigned long long *clocksThrottleReasons)
{
	return nvmlDeviceGetCurrentClocksEventReasons(device, clocksThrottleReasons);
}

/* ---- PCIe field values, ECC -------------------------------------------- */

EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount, nvmlFieldValue_t *values)
{
	CHECK(d, device);
	if (valuesCount < 0 || (valuesCount > 0 && values == NULL))
		return NVML_ERROR_INVALID_ARGUMENT;
	long long now = (long long)nowMicros();
	for (int i = 0; i < valuesCount; i++) {
		nvmlFieldValue_t *v = &values[i];
		v->timestamp = now;
		v->latencyUsec = 0;
		memset(&v->value, 0, sizeof(v->value));
		switch (v->fieldId) {
		case NVML_FI_DEV_PCIE_COUNT_TX_BYTES:
			v->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
			v->value.ullVal = d->pcieTx;
			v->nvmlReturn = NVML_SUCCESS;
			break;
		case NVML_FI_DEV_PCIE_COUNT_RX_BYTES:
			v->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
			v->value.ullVal = d->pcieRx;
			v->nvmlReturn = NVML_SUCCESS;
			break;
		default:
			v->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
		}
	}
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
						nvmlEccCounterType_t counterType, unsigned long long *eccCounts)
{
	CHECK(d, device);
	if (eccCounts == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	unsigned long long n;
	switch (errorType) {
	case NVML_MEMORY_ERROR_TYPE_CORRECTED:
		n = d->eccCorrected;
		break;
	case NVML_MEMORY_ERROR_TYPE_UNCORRECTED:
		n = d->eccUncorrected;
		break;
	default:
		return NVML_ERROR_INVALID_ARGUMENT;
	}
	switch (counterType) {
	case NVML_VOLATILE_ECC:
		break;
	case NVML_AGGREGATE_ECC:
		n += 1000; /* distinct, so that reading the wrong counter shows */
		break;
	default:
		return NVML_ERROR_INVALID_ARGUMENT;
	}
	*eccCounts = n;
	return NVML_SUCCESS;
}

/* ---- processes --------------------------------------------------------- */

/* listProcess answers a running-processes query with at most one process:
 * getpid() using mem bytes, or none when mem is 0. */
static nvmlReturn_t listProcess(unsigned long long mem, unsigned int *infoCount, nvmlProcessInfo_t *infos)
{
	if (infoCount == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	unsigned int n = mem != 0 ? 1 : 0;
	if (*infoCount < n) {
		*infoCount = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	*infoCount = n;
	if (n == 0)
		return NVML_SUCCESS;
	if (infos == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	infos[0].pid = (unsigned int)getpid();
	infos[0].usedGpuMemory = mem;
	infos[0].gpuInstanceId = 0xFFFFFFFFu;
	infos[0].computeInstanceId = 0xFFFFFFFFu;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
							    nvmlProcessInfo_t *infos)
{
	CHECK(d, device);
	return listProcess(d->computeProcMem, infoCount, infos);
}

EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
							     nvmlProcessInfo_t *infos)
{
	CHECK(d, device);
	return listProcess(d->graphicsProcMem, infoCount, infos);
}

EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device, nvmlProcessUtilizationSample_t *utilization,
						    unsigned int *processSamplesCount,
						    unsigned long long lastSeenTimeStamp)
{
	CHECK(d, device);
	if (processSamplesCount == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	/* The sample is always "now", so every poll sees a fresh one. */
	unsigned long long ts = nowMicros();
	if (d->procSMUtil == 0 || ts <= lastSeenTimeStamp)
		return NVML_ERROR_NOT_FOUND;
	if (utilization == NULL || *processSamplesCount < 1) {
		*processSamplesCount = 1;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	memset(&utilization[0], 0, sizeof(utilization[0]));
	utilization[0].pid = (unsigned int)getpid();
	utilization[0].timeStamp = ts;
	utilization[0].smUtil = d->procSMUtil;
	*processSamplesCount = 1;
	return NVML_SUCCESS;
}

/* ---- MIG: neither GPU supports it -------------------------------------- */

EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode)
{
	CHECK(d, device);
	(void)currentMode;
	(void)pendingMode;
	return NVML_ERROR_NOT_SUPPORTED;
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
	CHECK(d, device);
	(void)count;
	return NVML_ERROR_NOT_SUPPORTED;
}

EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
							nvmlDevice_t *migDevice)
{
	CHECK(d, device);
	(void)index;
	(void)migDevice;
	return NVML_ERROR_NOT_SUPPORTED;
}

/* Both are only valid on MIG device handles, which this library never
 * hands out. */
EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id)
{
	CHECK(d, device);
	(void)id;
	return NVML_ERROR_INVALID_ARGUMENT;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id)
{
	CHECK(d, device);
	(void)id;
	return NVML_ERROR_INVALID_ARGUMENT;
}

/* ---- events: registration works, no event ever arrives ----------------- */

EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
	if (atomic_load(&initCount) <= 0)
		return NVML_ERROR_UNINITIALIZED;
	if (set == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	set->handle = calloc(1, sizeof(struct nvmlEventSet_st));
	return set->handle != NULL ? NVML_SUCCESS : NVML_ERROR_MEMORY;
}

EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set)
{
	CHECK(d, device);
	if (set.handle == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	if ((eventTypes & ~(unsigned long long)nvmlEventTypeXidCriticalError) != 0)
		return NVML_ERROR_NOT_SUPPORTED;
	set.handle->registered |= eventTypes;
	return NVML_SUCCESS;
}

/* Sleeps for the whole timeout, as NVML does when nothing happens, so that
 * a caller's wait loop does not spin. */
EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
	if (atomic_load(&initCount) <= 0)
		return NVML_ERROR_UNINITIALIZED;
	if (set.handle == NULL || data == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	struct timespec ts = {.tv_sec = timeoutms / 1000, .tv_nsec = (long)(timeoutms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
	return NVML_ERROR_TIMEOUT;
}

EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
	if (set.handle == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	free(set.handle);
	return NVML_SUCCESS;
}
