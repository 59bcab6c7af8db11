package semconv

import "go.opentelemetry.io/otel/attribute"

// Names of the gpu Source's runtime backends: DCGM's and RDC's profiling
// fields, and the TPU runtime's metrics service. OpenTelemetry names none
// of these figures, so they are extensions; where one is what an OpenTelemetry hardware metric means
// (RDC's GPU utilization, memory, power and ECC counts), the backend
// reports under that name, its series told apart by
// gpu.measurement.source. Every series of these backends carries
// gpu.measurement.source and the same hw.id as the NVML, AMD SMI or ROCm
// SMI series of the device, so that dashboards put them side by side.

// Attributes of the runtime backends' metrics (extensions) and
// self-metrics.
const (
	GPUPipe            = attribute.Key("gpu.pipe")
	GPULinkType        = attribute.Key("gpu.link.type")
	GPUMemoryOperation = attribute.Key("gpu.memory.operation")
	TPUHLOStatistic    = attribute.Key("tpu.hlo.statistic")
	XpuscopeGPUBackend = attribute.Key("xpuscope.gpu.backend")
	XpuscopeGPUField   = attribute.Key("xpuscope.gpu.field")
	XpuscopeGPUReason  = attribute.Key("xpuscope.gpu.reason")
)

// Values of GPUMeasurementSource set by the runtime backends.
const (
	MeasurementSourceDCGM   = "dcgm"
	MeasurementSourceRDC    = "rdc"
	MeasurementSourceLibTPU = "libtpu"
)

// HWTypeTPU is hw.type of a TPU device: a chip, or, on chips of two
// TensorCores that the runtime reports apart, each core's PCI function.
const HWTypeTPU = "tpu"

// VendorGoogle is hw.vendor of a TPU.
const VendorGoogle = "Google"

// Values of GPUPipe.
const (
	PipeTensor = "tensor"
	PipeFP64   = "fp64"
	PipeFP32   = "fp32"
	PipeFP16   = "fp16"
)

// Values of GPULinkType.
const (
	LinkPCIe   = "pcie"
	LinkNVLink = "nvlink"
	LinkXGMI   = "xgmi"
)

// Values of GPUMemoryOperation.
const (
	MemoryRead  = "read"
	MemoryWrite = "write"
)

// Values of TPUHLOStatistic.
const (
	HLOStatisticMean = "mean"
	HLOStatisticP50  = "p50"
	HLOStatisticP90  = "p90"
	HLOStatisticP95  = "p95"
	HLOStatisticP999 = "p999"
)

// Values of XpuscopeGPUReason that are not a vendor status name.
const (
	// GPUReasonBlank … GPUReasonNotPermissioned: DCGM's blank sentinels
	// (DCGM_FP64_BLANK, _NOT_FOUND, _NOT_SUPPORTED, _NOT_PERMISSIONED and
	// their INT64 and string forms).
	GPUReasonBlank           = "blank"
	GPUReasonNotFound        = "not_found"
	GPUReasonNotSupported    = "not_supported"
	GPUReasonNotPermissioned = "not_permissioned"
	// GPUReasonNaN: a double that is NaN or infinite.
	GPUReasonNaN = "nan"
	// GPUReasonStale: the newest value is older than three poll
	// intervals: the host engine stopped sampling the field.
	GPUReasonStale = "stale"
	// GPUReasonInvalid: a value no device can have (a percentage above
	// 100, a negative byte count, a sentinel of the vendor's own).
	GPUReasonInvalid = "invalid"
	// GPUReasonType: the value is not of the type the field has.
	GPUReasonType = "type"
	// GPUReasonProfilingBusy: another profiler (Nsight Compute, Nsight
	// Systems, CUPTI, another host engine) holds the GPU's performance
	// counters: DCGM's watch failed with DCGM_ST_IN_USE. Retried every
	// poll.
	GPUReasonProfilingBusy = "profiling_busy"
	// GPUReasonCapacity: the hardware cannot count the field together
	// with those added before it (DCGM_ST_PROFILING_MULTI_PASS, or RDC
	// refusing the watch).
	GPUReasonCapacity = "capacity"
	// GPUReasonNoListener: nothing listens at the TPU runtime's metrics
	// port: no workload runs (normal, and silent).
	GPUReasonNoListener = "no_listener"
	// GPUReasonTimeout: the call did not finish within its deadline.
	GPUReasonTimeout = "timeout"
	// GPUReasonNoDevice: the TPU runtime reported a device ordinal that
	// matches no TPU found in sysfs.
	GPUReasonNoDevice = "no_device"
)

// acceleratorAttrs are the attributes of a runtime backend's device
// series: the device's, its pod's and gpu.measurement.source.
var acceleratorAttrs = deviceAttrs

const dcgmNote = "DCGM (gpu.measurement.source=" + MeasurementSourceDCGM + "): "
const rdcNote = "RDC (gpu.measurement.source=" + MeasurementSourceRDC + "): "

// Runtime-backend metrics (extensions).
var (
	GPUGraphicsUtilization = Metric{
		Name: "gpu.graphics.utilization", Kind: Gauge, Unit: "1", Origin: Extension,
		Description: "Fraction of time the graphics or compute engine was active (a context bound and its graphics or compute pipe busy).",
		Attributes:  acceleratorAttrs,
		Note:        dcgmNote + "DCGM_FI_PROF_GR_ENGINE_ACTIVE (1001), per GPU and per MIG compute instance.",
	}
	GPUSMUtilization = Metric{
		Name: "gpu.sm.utilization", Kind: Gauge, Unit: "1", Origin: Extension,
		Description: "Fraction of cycles a streaming multiprocessor (compute unit) had at least one warp (wave) assigned, averaged over them: whether the GPU's compute is in use, unlike hw.gpu.utilization, which any one kernel fills.",
		Attributes:  acceleratorAttrs,
		Note:        dcgmNote + "DCGM_FI_PROF_SM_ACTIVE (1002), per GPU and MIG compute instance. " + rdcNote + "RDC_FI_PROF_SM_ACTIVE (812, rocprofiler's VALUBusy), percent → ratio.",
	}
	GPUSMOccupancy = Metric{
		Name: "gpu.sm.occupancy", Kind: Gauge, Unit: "1", Origin: Extension,
		Description: "Warps (waves) resident on the streaming multiprocessors (compute units), as a fraction of the most they can hold.",
		Attributes:  acceleratorAttrs,
		Note:        dcgmNote + "DCGM_FI_PROF_SM_OCCUPANCY (1003). " + rdcNote + "RDC_FI_PROF_OCCUPANCY_PERCENT (800), percent → ratio.",
	}
	GPUPipeUtilization = Metric{
		Name: "gpu.pipe.utilization", Kind: Gauge, Unit: "1", Origin: Extension,
		Description: "Fraction of cycles the pipe (tensor cores, FP64, FP32, FP16 units) was active.",
		Attributes:  with(acceleratorAttrs, GPUPipe),
		Note:        dcgmNote + "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE (1004), _FP64_ACTIVE (1006), _FP32_ACTIVE (1007), _FP16_ACTIVE (1008; HMMA not included). " + rdcNote + "tensor only, RDC_FI_PROF_TENSOR_ACTIVE_PERCENT (804, rocprofiler's MfmaUtil), percent → ratio.",
	}
	GPUDRAMUtilization = Metric{
		Name: "gpu.dram.utilization", Kind: Gauge, Unit: "1", Origin: Extension,
		Description: "Fraction of cycles the device-memory interface was sending or receiving data.",
		Attributes:  acceleratorAttrs,
		Note:        dcgmNote + "DCGM_FI_PROF_DRAM_ACTIVE (1005). Unlike gpu.memory.controller.utilization (NVML), a ratio of cycles, not of the sample period in which memory was touched at all.",
	}
	GPULinkThroughput = Metric{
		Name: "gpu.link.throughput", Kind: Gauge, Unit: "By/s", Origin: Extension,
		Description: "Bytes a second sent (transmit) and received over the GPU's PCIe or NVLink links, headers included, averaged over DCGM's sample period.",
		Attributes:  with(acceleratorAttrs, GPULinkType, NetworkIODir),
		Note:        dcgmNote + "DCGM_FI_PROF_PCIE_TX_BYTES / _RX_BYTES (1009, 1010) and DCGM_FI_PROF_NVLINK_TX_BYTES / _RX_BYTES (1011, 1012), all links summed; a rate, not a counter. Per GPU only.",
	}
	GPULinkIO = Metric{
		Name: "gpu.link.io", Kind: Counter, Unit: "By", Origin: Extension,
		Description: "Bytes the GPU read (receive) and wrote (transmit) over its XGMI links since the driver loaded.",
		Attributes:  with(acceleratorAttrs, GPULinkType, NetworkIODir),
		Note:        rdcNote + "RDC_FI_XGMI_TOTAL_READ_KB / _WRITE_KB (716, 717; amd-smi's xgmi_read_data_acc / xgmi_write_data_acc summed over the links), KB × 1024.",
	}
	GPUMemoryThroughput = Metric{
		Name: "gpu.memory.throughput", Kind: Gauge, Unit: "By/s", Origin: Extension,
		Description: "Bytes a second the GPU's kernels read from and wrote to device memory, over the last sample period.",
		Attributes:  with(acceleratorAttrs, GPUMemoryOperation),
		Note:        rdcNote + "RDC_FI_PROF_EVAL_MEM_R_BW / _W_BW (806, 807): rocprofiler's FETCH_SIZE and WRITE_SIZE (KiB) over the sample's milliseconds, × 1,024,000. Intel, Level Zero: Δ of zesMemoryGetBandwidth's read and write counters over Δ its timestamp, summed over the device-memory modules (no gpu.measurement.source: the device's own series).",
	}
	GPUWaves = Metric{
		Name: "gpu.waves", Kind: Gauge, Unit: "{wave}", Origin: Extension,
		Description: "Wavefronts the GPU's sequencers received over RDC's profiler sample.",
		Attributes:  acceleratorAttrs,
		Note:        rdcNote + "RDC_FI_PROF_ACTIVE_WAVES (802, rocprofiler's SQ_WAVES): a count over the sample (about 10 ms), not a rate.",
	}
)

const tpuNote = "The TPU runtime (gpu.measurement.source=" + MeasurementSourceLibTPU + ", hw.type=" + HWTypeTPU + "): libtpu's RuntimeMetricService, "

// TPU metrics (extensions), from the TPU runtime's metrics service while a
// workload runs. A TPU has no GPU names: its series are under tpu.* with
// hw.type=tpu.
var (
	TPUMemoryUsage = Metric{
		Name: "tpu.memory.usage", Kind: UpDownCounter, Unit: "By", Origin: Extension,
		Description: "High-bandwidth memory of the TPU in use.",
		Attributes:  acceleratorAttrs,
		Note:        tpuNote + "tpu.runtime.hbm.memory.usage.bytes. Only while a workload runs: the service is the workload's.",
	}
	TPUMemoryLimit = Metric{
		Name: "tpu.memory.limit", Kind: UpDownCounter, Unit: "By", Origin: Extension,
		Description: "Size of the TPU's high-bandwidth memory.",
		Attributes:  acceleratorAttrs,
		Note:        tpuNote + "tpu.runtime.hbm.memory.total.bytes.",
	}
	TPUTensorCoreUtilization = Metric{
		Name: "tpu.tensorcore.utilization", Kind: Gauge, Unit: "1", Origin: Extension,
		Description: "Fraction of time the TPU's TensorCores were busy (the runtime's duty cycle).",
		Attributes:  acceleratorAttrs,
		Note:        tpuNote + "tpu.runtime.tensorcore.dutycycle.percent, percent → ratio.",
	}
	TPUHLOQueueSize = Metric{
		Name: "tpu.hlo.queue.size", Kind: Gauge, Unit: "{execution}", Origin: Extension,
		Description: "HLO programs queued for execution on the TPU.",
		Attributes:  acceleratorAttrs,
		Note:        tpuNote + "hlo.queue.size.gauge.",
	}
	TPUHLOExecutionDuration = Metric{
		Name: "tpu.hlo.execution.duration", Kind: Gauge, Unit: "s", Origin: Extension,
		Description: "Execution time of the TPU's HLO programs: the mean and percentiles of the runtime's distribution.",
		Attributes:  with(acceleratorAttrs, TPUHLOStatistic),
		Note:        tpuNote + "hlo.execution.timing.distribution.microseconds, µs → s. A percentile is the upper bound of the distribution's bucket that holds it; omitted while the distribution has no sample.",
	}
)

// Self-metrics of the runtime backends.
var (
	XpuscopeGPUScrapeMisses = Metric{
		Name: "xpuscope.gpu.scrape.misses", Kind: Counter, Unit: "{scrape}", Origin: Self,
		Description: "Reads of a runtime backend that brought nothing: a call that failed, a profiler holding the counters, a TPU metrics port with no listener. The backend goes on at the next poll.",
		Attributes:  []attribute.Key{HWID, XpuscopeGPUBackend, XpuscopeGPUReason},
		Note:        "xpuscope.gpu.reason is the vendor's status name (DCGM_ST_CONNECTION_NOT_VALID, RDC_ST_NO_DATA, a gRPC code such as Unimplemented) or " + GPUReasonProfilingBusy + ", " + GPUReasonNoListener + ", " + GPUReasonTimeout + ". A miss of no one device (a lost host engine, a TPU endpoint) carries no hw.id; " + GPUReasonNoListener + " is the normal state of a TPU node between workloads.",
	}
	XpuscopeGPUSamplesBlank = Metric{
		Name: "xpuscope.gpu.samples.blank", Kind: Counter, Unit: "{sample}", Origin: Self,
		Description: "Field values a runtime backend read and dropped: blank sentinels, NaN, stale or invalid values, a status other than success.",
		Attributes:  []attribute.Key{HWID, XpuscopeGPUBackend, XpuscopeGPUField, XpuscopeGPUReason},
		Note:        "xpuscope.gpu.field is the vendor's field name (DCGM_FI_PROF_SM_ACTIVE, RDC_FI_PROF_OCCUPANCY_PERCENT, tpu.runtime.hbm.memory.usage.bytes); xpuscope.gpu.reason " + GPUReasonBlank + ", " + GPUReasonNotFound + ", " + GPUReasonNotSupported + ", " + GPUReasonNotPermissioned + ", " + GPUReasonNaN + ", " + GPUReasonStale + ", " + GPUReasonInvalid + ", " + GPUReasonType + ", " + GPUReasonNoDevice + ", or the value's status name.",
	}
	XpuscopeGPUFieldUnavailable = Metric{
		Name: "xpuscope.gpu.field.unavailable", Kind: UpDownCounter, Unit: "{field}", Origin: Self,
		Description: "1 for each field a runtime backend could not watch on a device, with why: the device's counters cannot hold it beside those added before it, or the device does not support it.",
		Attributes:  []attribute.Key{HWID, XpuscopeGPUBackend, XpuscopeGPUField, XpuscopeGPUReason},
		Note:        "xpuscope.gpu.reason is " + GPUReasonCapacity + " or the vendor's status name (DCGM_ST_PROFILING_NOT_SUPPORTED, RDC_ST_NOT_SUPPORTED, …).",
	}
)

var acceleratorMetrics = []Metric{
	GPUGraphicsUtilization, GPUSMUtilization, GPUSMOccupancy, GPUPipeUtilization, GPUDRAMUtilization,
	GPULinkThroughput, GPULinkIO, GPUMemoryThroughput, GPUWaves,
	TPUMemoryUsage, TPUMemoryLimit, TPUTensorCoreUtilization, TPUHLOQueueSize, TPUHLOExecutionDuration,
	XpuscopeGPUScrapeMisses, XpuscopeGPUSamplesBlank, XpuscopeGPUFieldUnavailable,
}

var acceleratorAttributes = []Attribute{
	{GPUPipe, "string", "The GPU pipe: tensor cores, or the FP64, FP32, FP16 units.", Extension, []string{PipeTensor, PipeFP64, PipeFP32, PipeFP16}},
	{GPULinkType, "string", "The kind of link the bytes crossed.", Extension, []string{LinkPCIe, LinkNVLink, LinkXGMI}},
	{GPUMemoryOperation, "string", "Whether device memory was read or written.", Extension, []string{MemoryRead, MemoryWrite}},
	{TPUHLOStatistic, "string", "Which statistic of the HLO execution-time distribution: the mean, or a percentile.", Extension, []string{HLOStatisticMean, HLOStatisticP50, HLOStatisticP90, HLOStatisticP95, HLOStatisticP999}},
	{XpuscopeGPUBackend, "string", "The gpu backend: nvml, amd_smi, rocm_smi, amdgpu_sysfs, dcgm, rdc, level_zero, intel_sysfs, tpu.", Self, []string{"nvml", "amd_smi", "rocm_smi", "amdgpu_sysfs", "dcgm", "rdc", "level_zero", "intel_sysfs", "tpu"}},
	{XpuscopeGPUField, "string", "The vendor's name of the field or metric (DCGM_FI_PROF_SM_ACTIVE, RDC_FI_GPU_UTIL, tpu.runtime.hbm.memory.usage.bytes).", Self, nil},
	{XpuscopeGPUReason, "string", "Why a read brought nothing, or a field was dropped: a vendor status name, a gRPC code, or one of the values listed.", Self,
		[]string{GPUReasonBlank, GPUReasonNotFound, GPUReasonNotSupported, GPUReasonNotPermissioned, GPUReasonNaN, GPUReasonStale, GPUReasonInvalid, GPUReasonType,
			GPUReasonProfilingBusy, GPUReasonCapacity, GPUReasonNoListener, GPUReasonTimeout, GPUReasonNoDevice, "a vendor status name"}},
}
