package semconv

import (
	"slices"

	"go.opentelemetry.io/otel/attribute"
)

// gpuAttrs identify a GPU or a MIG instance.
var gpuAttrs = []attribute.Key{
	HWID, HWName, HWVendor, HWType, HWDriverVersion, GPUIndex, GPUPCIAddress,
	HWParent, GPUMIGGPUInstanceID, GPUMIGComputeInstance, GPUMIGProfile,
}

// deviceAttrs are carried by every GPU device series: the device's, and
// the pod's while exactly one pod holds the device; the series of the
// runtime backends (DCGM, RDC, the TPU runtime) carry
// gpu.measurement.source too.
var deviceAttrs = with(with(gpuAttrs, podAttrs...), GPUMeasurementSource)

// gpuProcAttrs are carried by a per-process GPU series: the device's, and
// the process's.
var gpuProcAttrs = slices.Concat(gpuAttrs, []attribute.Key{ProcessPID, ProcessExecutableName}, processAttrs)

func with(base []attribute.Key, extra ...attribute.Key) []attribute.Key {
	return append(append([]attribute.Key(nil), base...), extra...)
}

const migOmitted = "On MIG instances NVML does not report it, so the instance series omits it (the parent GPU keeps its own)."

// GPU device metrics defined by OpenTelemetry.
var (
	HWGPUUtilization = Metric{
		Name: "hw.gpu.utilization", Kind: Gauge, Unit: "1", Origin: OTel,
		Description: "Fraction of the sample period during which the GPU was busy with the task.",
		Attributes:  with(deviceAttrs, HWGPUTask),
		Note:        "NVML: general from nvmlDeviceGetUtilizationRates (any kernel running, not how much of the GPU it used), encoder and decoder from their own reads. " + migOmitted + " AMD: general only, from rsmi_dev_busy_percent_get or gpu_busy_percent. RDC (gpu.measurement.source=rdc): RDC_FI_GPU_UTIL (500), percent → ratio, a series of its own beside AMD SMI's or ROCm SMI's. Intel (gpu.measurement.source=level_zero, pmu or fdinfo): general is the busiest engine class, or Level Zero's ALL engine group; encoder and decoder from Level Zero's media encode and decode groups; every class on gpu.engine.utilization.",
	}
	HWGPUMemoryUsage = Metric{
		Name: "hw.gpu.memory.usage", Kind: UpDownCounter, Unit: "By", Origin: OTel,
		Description: "GPU memory in use.",
		Attributes:  deviceAttrs,
		Note:        "Reported for GPUs and MIG instances. AMD: VRAM, from rsmi_dev_memory_usage_get or mem_info_vram_used. RDC (gpu.measurement.source=rdc): RDC_FI_GPU_MEMORY_USAGE (501).",
	}
	HWGPUMemoryLimit = Metric{
		Name: "hw.gpu.memory.limit", Kind: UpDownCounter, Unit: "By", Origin: OTel,
		Description: "Size of the GPU memory.",
		Attributes:  deviceAttrs,
		Note:        "Reported for GPUs and MIG instances. AMD: VRAM, from rsmi_dev_memory_total_get or mem_info_vram_total. RDC (gpu.measurement.source=rdc): RDC_FI_GPU_MEMORY_TOTAL (502). Intel: Level Zero's device memory modules, or the sum of xe's tile<T>/physical_vram_size_bytes (the kernel files say nothing of what is in use).",
	}
	HWGPUMemoryUtilization = Metric{
		Name: "hw.gpu.memory.utilization", Kind: Gauge, Unit: "1", Origin: OTel,
		Description: "Fraction of GPU memory in use (usage / limit).",
		Attributes:  deviceAttrs,
		Note:        "The memory controller's busy time is gpu.memory.controller.utilization.",
	}
	HWGPUIO = Metric{
		Name: "hw.gpu.io", Kind: Counter, Unit: "By", Origin: OTel,
		Description: "Bytes received and transmitted by the GPU over PCIe.",
		Attributes:  with(deviceAttrs, NetworkIODir),
		Note:        "NVML field values PCIE_COUNT_TX_BYTES / RX_BYTES; omitted where the GPU does not support them. " + migOmitted + " AMD, only with gpu.WithAMDPCIeThroughput: an estimate, rsmi_dev_pci_throughput_get's packet counts over one second times the maximum payload size, times the poll interval, accumulated.",
	}
	HWPower = Metric{
		Name: "hw.power", Kind: Gauge, Unit: "W", Origin: OTel,
		Description: "Instantaneous power drawn by the GPU.",
		Attributes:  deviceAttrs,
		Note:        migOmitted + " AMD: the socket power (rsmi_dev_current_socket_power_get, which ROCm 5.2 lacks, or hwmon power1_input); where the library or GPU has none, the firmware's average, as gpu.power.average. RDC (gpu.measurement.source=rdc): RDC_FI_POWER_USAGE (300), µW → W (RDC's average socket power, else the current one). Intel: the rate of hw.energy (ΔJ / Δs between two polls; none on the first, nor after the counter went backwards).",
	}
	HWEnergy = Metric{
		Name: "hw.energy", Kind: Counter, Unit: "J", Origin: OTel,
		Description: "Energy consumed by the GPU since the driver was loaded.",
		Attributes:  deviceAttrs,
		Note:        "NVML nvmlDeviceGetTotalEnergyConsumption (Volta and later). " + migOmitted + " AMD: rsmi_dev_energy_count_get's counter times its resolution; not read from sysfs. Intel: Level Zero's card power domain (zesPowerGetEnergyCounter), or the i915 or xe hwmon's energy input of the card (xe's channel labelled card, else pkg; an unlabelled energy1_input), µJ → J.",
	}
	HWTemperature = Metric{
		Name: "hw.temperature", Kind: Gauge, Unit: "Cel", Origin: OTel,
		Description: "GPU temperature: the die's, or each sensor's where the GPU has several.",
		Attributes:  with(deviceAttrs, HWSensorLocation),
		Note:        migOmitted + " AMD: one series per sensor (hw.sensor_location edge, junction, memory), from rsmi_dev_temp_metric_get or hwmon tempN_input, millidegrees converted. Intel: the GPU (Level Zero's GPU sensor, xe's temp labelled pkg) without a location, and memory (Level Zero's MEMORY sensor, xe's vram); i915's hwmon has none.",
	}
	HWErrors = Metric{
		Name: "hw.errors", Kind: Counter, Unit: "{error}", Origin: OTel,
		Description: "Errors reported by the GPU: ECC memory errors (corrected, uncorrected) since the driver was loaded, and XID errors seen since the Source started.",
		Attributes:  with(deviceAttrs, ErrorType, GPUXIDCode),
		Note:        "ECC only where ECC is enabled. XID through an NVML event set (nvmlEventSetWait); XIDs that happened before the Source started are not seen. " + migOmitted + " AMD: ECC counts summed over the GPU blocks (rsmi_dev_ecc_count_get); no XID; not read from sysfs. RDC (gpu.measurement.source=rdc): RDC_FI_ECC_CORRECT_TOTAL and _UNCORRECT_TOTAL (600, 601).",
	}
)

// GPU device metrics that OpenTelemetry does not define.
var (
	GPUMemoryFree = Metric{
		Name: "gpu.memory.free", Kind: UpDownCounter, Unit: "By", Origin: Extension,
		Description: "GPU memory free for allocation.",
		Attributes:  deviceAttrs,
		Note:        "AMD: VRAM total minus used.",
	}
	GPUMemoryReserved = Metric{
		Name: "gpu.memory.reserved", Kind: UpDownCounter, Unit: "By", Origin: Extension,
		Description: "GPU memory reserved by the driver and firmware, counted in neither usage nor free.",
		Attributes:  deviceAttrs,
		Note:        "Needs nvmlDeviceGetMemoryInfo_v2 (driver 510 and later); omitted otherwise, and on AMD.",
	}
	GPUMemoryControllerUtilization = Metric{
		Name: "gpu.memory.controller.utilization", Kind: Gauge, Unit: "1", Origin: Extension,
		Description: "Fraction of the sample period during which device memory was being read or written.",
		Attributes:  deviceAttrs,
		Note:        migOmitted + " AMD: rsmi_dev_memory_busy_percent_get or mem_busy_percent.",
	}
	GPUPowerLimit = Metric{
		Name: "gpu.power.limit", Kind: Gauge, Unit: "W", Origin: Extension,
		Description: "Power limit the driver enforces.",
		Attributes:  deviceAttrs,
		Note:        migOmitted + " AMD: rsmi_dev_power_cap_get or hwmon power1_cap. Intel: the i915 or xe hwmon's power1_max (or the labelled channel of the energy read), µW → W; 0 there means no limit, and no value.",
	}
	GPUClockFrequency = Metric{
		Name: "gpu.clock.frequency", Kind: Gauge, Unit: "Hz", Origin: Extension,
		Description: "Current clock frequency.",
		Attributes:  with(deviceAttrs, GPUClockDomain),
		Note:        migOmitted + " AMD: SCLK as sm and MCLK as memory, the current level of rsmi_dev_gpu_clk_freq_get (omitted for a cycle in which the driver marks no level current); not read from sysfs. Intel: sm is the GPU's actual frequency, Level Zero's GPU frequency domain (actual), or the fastest GT's in sysfs (i915's cardN/gt_act_freq_mhz, else gt/gtM/rps_act_freq_mhz; xe's tile<T>/gt<G>/freq0/act_freq), MHz → Hz; memory from Level Zero's MEMORY domain.",
	}
	GPUClockThrottle = Metric{
		Name: "gpu.clock.throttle", Kind: Gauge, Unit: "1", Origin: Extension,
		Description: "1 while the reason holds clocks below their maximum, else 0. One series per known reason.",
		Attributes:  with(deviceAttrs, GPUClockThrottleReason),
		Note:        "nvmlDeviceGetCurrentClocksEventReasons, or the older nvmlDeviceGetCurrentClocksThrottleReasons. " + migOmitted + " NVIDIA only.",
	}
	GPUFanSpeed = Metric{
		Name: "gpu.fan.speed", Kind: Gauge, Unit: "1", Origin: Extension,
		Description: "Fan speed as a fraction of its maximum.",
		Attributes:  deviceAttrs,
		Note:        "Omitted on passively cooled GPUs, where NVML reports it unsupported. " + migOmitted + " AMD: rsmi_dev_fan_speed_get over rsmi_dev_fan_speed_max_get, or hwmon pwm1 over pwm1_max.",
	}
)

// Per-process GPU metrics (extensions).
var (
	ProcessGPUMemoryUsage = Metric{
		Name: "process.gpu.memory.usage", Kind: UpDownCounter, Unit: "By", Origin: Extension,
		Description: "GPU memory used by the process on the device.",
		Attributes:  gpuProcAttrs,
		Note:        "Compute and graphics processes; a process in both lists counts once. Under MIG, reported on the MIG instance. Past the per-device process cap, the rest fold into one series with process.executable.name=" + Other + ", no process.pid and the pod attributes of the device's series. AMD: KFD's /sys/class/kfd/kfd/proc/<pid>/vram_<gpu_id>, for each GPU on which the process holds memory or runs waves. Intel: zesDeviceProcessesGetState's memSize, or the DRM clients' fdinfo: drm-resident-<region> summed over the device's own regions (local*, vram*), over every region on an integrated GPU; a client held by several descriptors or processes counted once, under the first process in /proc's order.",
	}
	ProcessGPUUtilization = Metric{
		Name: "process.gpu.utilization", Kind: Gauge, Unit: "1", Origin: Extension,
		Description: "Fraction of the last sample period during which a kernel of the process was running on the SMs (NVML per-process utilization samples).",
		Attributes:  gpuProcAttrs,
		Note:        "NVML does not sample per-process utilization on MIG instances; omitted there. AMD: a different measure, KFD's stats_<gpu_id>/cu_occupancy (the process's waves, in compute units' worth) over the GPU's compute units (KFD topology simd_count / simd_per_cu), capped at 1: the share of the GPU the process occupies at the instant of the read, not a share of time. Older kernels have no cu_occupancy.",
	}
)

// Self-metrics of the gpu Source.
var (
	XpuscopeGPUReadErrors = Metric{
		Name: "xpuscope.gpu.read.errors", Kind: Counter, Unit: "{error}", Origin: Self,
		Description: "Reads of a vendor library or driver file that failed. A failed read loses that value for that cycle and device; other reads and devices go on.",
		Attributes:  []attribute.Key{HWID, XpuscopeRead, ErrorType},
		Note:        "A read the device reports as unsupported (or, in sysfs, a file that does not exist) is not an error: it is dropped for that device, once. Errors of the XID event set itself, and of listing KFD's processes, carry no hw.id.",
	}
	XpuscopeGPUSymbolMissing = Metric{
		Name: "xpuscope.gpu.symbol.missing", Kind: UpDownCounter, Unit: "{symbol}", Origin: Self,
		Description: "1 for each optional vendor-library symbol that the loaded library lacks, with the metric that is absent because of it.",
		Attributes:  []attribute.Key{XpuscopeSymbol, XpuscopeMetricName},
	}
	XpuscopeGPUProcessOverflow = Metric{
		Name: "xpuscope.gpu.process.overflow", Kind: Counter, Unit: "{process}", Origin: Self,
		Description: "Process observations folded into the " + Other + " series because the device had more processes than the cap.",
		Attributes:  []attribute.Key{HWID},
	}
)

// procAttrs identify the process a CUDA series belongs to, and its
// container and pod.
var procAttrs = with([]attribute.Key{ProcessPID, ProcessExecutableName}, processAttrs...)

// groupAttrs identify the processes a CUDA histogram gathers: those of one
// executable in one container, whatever their pids.
var groupAttrs = with([]attribute.Key{ProcessExecutableName}, processAttrs...)

// groupNote says why the histograms carry no process.pid.
const groupNote = "No process.pid: the processes of one executable in one container share the series, so that processes coming and going add no series (a histogram is some twenty in Prometheus)."

// Bucket boundaries of the CUDA histograms.
var (
	// Threads in a grid (blocks) or a block: powers of two.
	countBuckets = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576}
	// Dynamic shared memory per launch, bytes.
	sharedMemoryBuckets = []float64{0, 1024, 4096, 8192, 16384, 32768, 49152, 65536, 98304, 131072, 196608, 232448}
	// Synchronisation wait, seconds: 1µs to 10s.
	syncBuckets = []float64{1e-6, 5e-6, 1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 0.01, 0.05, 0.1, 0.5, 1, 5, 10}
)

// CUDA runtime and driver activity (extensions), from uprobes.
var (
	CUDAKernelLaunches = Metric{
		Name: "cuda.kernel.launches", Kind: Counter, Unit: "{launch}", Origin: Extension,
		Description: "Kernel launches (runtime and driver API, a runtime launch that goes on to the driver counted once).",
		Attributes:  with(procAttrs, CUDAKernelName, CUDADevice, CUDAAPIName),
		Note:        "cuda.kernel.name is capped per process; past the cap launches count under " + Other + ".",
	}
	CUDAKernelGridSize = Metric{
		Name: "cuda.kernel.grid.size", Kind: Histogram, Unit: "{block}", Origin: Extension,
		Description: "Blocks per launch (grid x·y·z).",
		Attributes:  with(groupAttrs, CUDADevice), Buckets: countBuckets, Note: groupNote,
	}
	CUDAKernelBlockSize = Metric{
		Name: "cuda.kernel.block.size", Kind: Histogram, Unit: "{thread}", Origin: Extension,
		Description: "Threads per block of a launch (block x·y·z).",
		Attributes:  with(groupAttrs, CUDADevice), Buckets: countBuckets, Note: groupNote,
	}
	CUDAKernelSharedMemory = Metric{
		Name: "cuda.kernel.shared_memory", Kind: Histogram, Unit: "By", Origin: Extension,
		Description: "Dynamic shared memory requested per launch.",
		Attributes:  with(groupAttrs, CUDADevice), Buckets: sharedMemoryBuckets, Note: groupNote,
	}
	CUDAGraphLaunches = Metric{
		Name: "cuda.graph.launches", Kind: Counter, Unit: "{launch}", Origin: Extension,
		Description: "CUDA graph launches.",
		Attributes:  with(procAttrs, CUDADevice, CUDAAPIName),
	}
	CUDAMemcpyTransferred = Metric{
		Name: "cuda.memcpy.bytes", Kind: Counter, Unit: "By", Origin: Extension,
		Description: "Bytes copied by cudaMemcpy*, cuMemcpy* and set by cudaMemset*.",
		Attributes:  with(procAttrs, CUDADevice, CUDAMemcpyKind, CUDAAPIName),
	}
	CUDAMemoryAllocated = Metric{
		Name: "cuda.memory.allocated", Kind: Counter, Unit: "By", Origin: Extension,
		Description: "Device memory allocated (successful cudaMalloc, cudaMallocAsync, cuMemAlloc).",
		Attributes:  with(procAttrs, CUDADevice),
	}
	CUDAMemoryFreed = Metric{
		Name: "cuda.memory.freed", Kind: Counter, Unit: "By", Origin: Extension,
		Description: "Device memory freed, for frees of allocations seen while tracing.",
		Attributes:  with(procAttrs, CUDADevice),
	}
	CUDAMemoryOutstanding = Metric{
		Name: "cuda.memory.outstanding", Kind: UpDownCounter, Unit: "By", Origin: Extension,
		Description: "Device memory allocated and not yet freed, of allocations seen while tracing.",
		Attributes:  procAttrs,
		Note:        "Allocations made before the Source started are not known.",
	}
	CUDAMemoryOldestAge = Metric{
		Name: "cuda.memory.oldest_allocation.age", Kind: Gauge, Unit: "s", Origin: Extension,
		Description: "Age of the process's oldest outstanding device allocation: a leak suspect when it only grows.",
		Attributes:  procAttrs,
	}
	CUDASyncDuration = Metric{
		Name: "cuda.sync.duration", Kind: Histogram, Unit: "s", Origin: Extension,
		Description: "Time a thread waited in a synchronisation call (stream, event, device, context).",
		Attributes:  with(groupAttrs, CUDADevice, CUDAAPIName), Buckets: syncBuckets, Note: groupNote,
	}
	CUDAAPICalls = Metric{
		Name: "cuda.api.calls", Kind: Counter, Unit: "{call}", Origin: Extension,
		Description: "Calls of each probed function: the records received plus the calls the kernel side counted as making none (dropped for want of room, failed name lookups), so exact even when records are dropped.",
		Attributes:  with(procAttrs, CUDAAPIName),
	}
	CUDAAPIErrors = Metric{
		Name: "cuda.api.errors", Kind: Counter, Unit: "{error}", Origin: Extension,
		Description: "Calls that returned an error, by function and code.",
		Attributes:  with(procAttrs, CUDAAPIName, CUDAErrorCode),
		Note:        "Only functions with a return probe report errors: allocations, synchronisations, synchronous copies and event queries (launch errors surface at the next sync).",
	}
	XpuscopeCUDAEventsDropped = Metric{
		Name: "xpuscope.cuda.events.dropped", Kind: Counter, Unit: "{event}", Origin: Self,
		Description: "Records the ring buffer had no room for (counted in BPF). Calls still count in cuda.api.calls.",
	}
	XpuscopeCUDAKernelNamesUnresolved = Metric{
		Name: "xpuscope.cuda.kernel_names.unresolved", Kind: Counter, Unit: "{launch}", Origin: Self,
		Description: "Launches whose kernel name could not be resolved (reported as " + Unknown + ").",
	}
	XpuscopeCUDAKernelNamesOverflow = Metric{
		Name: "xpuscope.cuda.kernel_names.overflow", Kind: Counter, Unit: "{launch}", Origin: Self,
		Description: "Launches counted under " + Other + " because the process had more kernel names than the cap.",
	}
	XpuscopeCUDAGraphReplaysUnknown = Metric{
		Name: "xpuscope.cuda.graph.replays.unknown", Kind: Counter, Unit: "{launch}", Origin: Self,
		Description: "Graph launches whose kernels are not known, so not counted in cuda.kernel.launches: graphs captured before the agent attached, built node by node, or past the per-process bounds.",
	}
	XpuscopeCUDASpansSuppressed = Metric{
		Name: "xpuscope.cuda.spans.suppressed", Kind: Counter, Unit: "{span}", Origin: Self,
		Description: "Spans not emitted because the process was over its span rate cap.",
	}
	XpuscopeCUDAProcessOverflow = Metric{
		Name: "xpuscope.cuda.process.overflow", Kind: Counter, Unit: "{process}", Origin: Self,
		Description: "Processes folded into the series with process.executable.name=" + Other + " (no process.pid) because the Source already had its cap of processes with series of their own.",
	}
	XpuscopeCUDAAttachedFiles = Metric{
		Name: "xpuscope.cuda.attached_files", Kind: UpDownCounter, Unit: "{file}", Origin: Self,
		Description: "Files (by device and inode) the CUDA probes are attached to.",
		Attributes:  []attribute.Key{XpuscopeTarget},
	}
)

var gpuMetrics = []Metric{
	HWGPUUtilization, HWGPUMemoryUsage, HWGPUMemoryLimit, HWGPUMemoryUtilization,
	HWGPUIO, HWPower, HWEnergy, HWTemperature, HWErrors,
	GPUMemoryFree, GPUMemoryReserved, GPUMemoryControllerUtilization,
	GPUPowerLimit, GPUClockFrequency, GPUClockThrottle, GPUFanSpeed,
	ProcessGPUMemoryUsage, ProcessGPUUtilization,
	XpuscopeGPUReadErrors, XpuscopeGPUSymbolMissing, XpuscopeGPUProcessOverflow,
}

var cudaMetrics = []Metric{
	CUDAKernelLaunches, CUDAKernelGridSize, CUDAKernelBlockSize, CUDAKernelSharedMemory,
	CUDAGraphLaunches, CUDAMemcpyTransferred, CUDAMemoryAllocated, CUDAMemoryFreed,
	CUDAMemoryOutstanding, CUDAMemoryOldestAge, CUDASyncDuration, CUDAAPICalls, CUDAAPIErrors,
	XpuscopeCUDAEventsDropped, XpuscopeCUDAKernelNamesUnresolved, XpuscopeCUDAKernelNamesOverflow,
	XpuscopeCUDAGraphReplaysUnknown, XpuscopeCUDASpansSuppressed, XpuscopeCUDAProcessOverflow, XpuscopeCUDAAttachedFiles,
}

// metrics is the registry: each area's list, in order. An area defined in
// a file of its own adds its list here.
var metrics = slices.Concat(gpuMetrics, amdMetrics, acceleratorMetrics, intelMetrics, cudaMetrics, ncclMetrics, occupancyMetrics, genaiMetrics, servingMetrics, trainingMetrics, captureMetrics, pmuMetrics, intelptMetrics, nodeMetrics, bpfMetrics, uprobeMetrics, agentMetrics, podjoinMetrics)

// Metrics returns every registered metric, in registry order.
func Metrics() []Metric {
	return append([]Metric(nil), metrics...)
}

// Span names of the CUDA Source.
const (
	SpanCUDAKernelLaunch = "cuda.kernel.launch"
	SpanCUDAGraphLaunch  = "cuda.graph.launch"
	SpanCUDAMemcpy       = "cuda.memcpy"
	SpanCUDAMemset       = "cuda.memset"
	SpanCUDAMalloc       = "cuda.malloc"
	SpanCUDAFree         = "cuda.free"
	SpanCUDASync         = "cuda.sync"
)

var spanProc = with(procAttrs, CUDADevice, CUDAAPIName)

var cudaSpans = []Span{
	{SpanCUDAKernelLaunch, "A kernel launch, at the instant of the call (the kernel's run time is not measured).", with(spanProc, CUDAKernelName, CUDAGridX, CUDAGridY, CUDAGridZ, CUDABlockX, CUDABlockY, CUDABlockZ, CUDASharedMemory, CUDAStream)},
	{SpanCUDAGraphLaunch, "A CUDA graph launch, at the instant of the call.", with(spanProc, CUDAStream, CUDAGraphKernels)},
	{SpanCUDAMemcpy, "A copy call, at the instant of the call.", with(spanProc, CUDAMemcpyKind, CUDAMemcpyBytes, CUDAStream)},
	{SpanCUDAMemset, "A memset call, at the instant of the call.", with(spanProc, CUDAMemcpyBytes, CUDAStream)},
	{SpanCUDAMalloc, "An allocation, from call to return.", with(spanProc, CUDAMemoryBytes, CUDAMemoryAddr, CUDAErrorCode)},
	{SpanCUDAFree, "A free, at the instant of the call.", with(spanProc, CUDAMemoryAddr)},
	{SpanCUDASync, "A synchronisation, from call to return.", with(spanProc, CUDAStream, CUDAErrorCode)},
}

// spans is the span registry: each area's list, in order.
var spans = slices.Concat(cudaSpans, ncclSpans, []Span{SpanGenAIClient, SpanGenAIServer, SpanModelFileReload})

// Spans returns every registered span, in registry order.
func Spans() []Span {
	return append([]Span(nil), spans...)
}
