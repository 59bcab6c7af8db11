package semconv

import "go.opentelemetry.io/otel/attribute"

// Occupancy-model attributes. Every value the occupancy model estimates
// carries GPUMeasurementSource=MeasurementSourceEBPFModel, so that no
// modelled figure can be taken for a hardware measurement.
const (
	GPUMeasurementSource = attribute.Key("gpu.measurement.source")
	GPUKernelCompletion  = attribute.Key("gpu.kernel.completion")
	GPUCapacitySource    = attribute.Key("gpu.capacity.source")
	XpuscopeDropReason   = attribute.Key("xpuscope.drop.reason")
)

// Values of GPUMeasurementSource.
const (
	// MeasurementSourceEBPFModel marks a value estimated by package
	// occupancy from CUDA API calls seen by eBPF probes.
	MeasurementSourceEBPFModel = "ebpf_model"
)

// Values of GPUKernelCompletion: which edge ended a kernel's estimate.
const (
	// KernelCompletionEvent: an event recorded after the kernel on its
	// stream was observed complete (cudaEventSynchronize returned, or
	// cudaEventQuery succeeded).
	KernelCompletionEvent = "event"
	// KernelCompletionSyncFallback: no such event; the return of the
	// stream, device or synchronous-copy wait that covered the kernel.
	KernelCompletionSyncFallback = "sync_fallback"
	// KernelCompletionExit: the process exited with the kernel pending.
	KernelCompletionExit = "exit"
)

// Values of GPUCapacitySource.
const (
	CapacitySourceNVML       = "nvml"
	CapacitySourceKFD        = "kfd"
	CapacitySourceConfigured = "configured"
	CapacitySourceDefault    = "default"
)

// Values of XpuscopeDropReason on XpuscopeOccupancyDropped.
const (
	DropReasonPendingCap = "pending_cap"
	DropReasonStreamCap  = "stream_cap"
	DropReasonProcessCap = "process_cap"
	DropReasonEventCap   = "event_cap"
)

var occupancyAttributes = []Attribute{
	{GPUMeasurementSource, "string", "How a value was obtained. " + MeasurementSourceEBPFModel + ": estimated by the occupancy model from the CUDA API calls eBPF probes see (launch, sync, event, wait), not read from hardware counters. " + MeasurementSourceDCGM + ", " + MeasurementSourceRDC + ", " + MeasurementSourceLibTPU + ": read by the gpu Source from NVIDIA DCGM, AMD RDC, or the TPU runtime's metrics service; the series of NVML, AMD SMI, ROCm SMI and amdgpu sysfs carry none. " + MeasurementSourceLevelZero + ", " + MeasurementSourcePMU + ", " + MeasurementSourceFdinfo + ": on an Intel GPU's utilization series, whether Level Zero Sysman, the i915 or xe driver's PMU, or the DRM clients' fdinfo gave the figure; its other series carry none.", Extension, []string{MeasurementSourceEBPFModel, MeasurementSourceDCGM, MeasurementSourceRDC, MeasurementSourceLibTPU, MeasurementSourceLevelZero, MeasurementSourcePMU, MeasurementSourceFdinfo}},
	{GPUKernelCompletion, "string", "Which observed edge bounds a kernel's end: " + KernelCompletionEvent + " (an event recorded after it on its stream was seen complete), " + KernelCompletionSyncFallback + " (the return of the stream, device or synchronous-copy wait that covered it), " + KernelCompletionExit + " (the process exited with it pending).", Extension, []string{KernelCompletionEvent, KernelCompletionSyncFallback, KernelCompletionExit}},
	{GPUCapacitySource, "string", "Where a device capacity came from: NVML, the AMD KFD topology (compute units, and simd_per_cu × max_waves_per_simd × wave_front_size work-items each), configuration, or the model's default (a reference GPU, so ratios are relative to it).", Extension, []string{CapacitySourceNVML, CapacitySourceKFD, CapacitySourceConfigured, CapacitySourceDefault}},
	{XpuscopeDropReason, "string", "Which bound made the occupancy model drop state: pending launches per stream (or in total), streams per process, processes, tracked events.", Self, []string{DropReasonPendingCap, DropReasonStreamCap, DropReasonProcessCap, DropReasonEventCap}},
}

// occAttrs identify a modelled per-process, per-device series.
var occAttrs = with(procAttrs, CUDADevice, GPUMeasurementSource)

// occGroupAttrs identify a modelled histogram: per executable, container
// and device.
var occGroupAttrs = with(groupAttrs, CUDADevice, GPUMeasurementSource)

// kernelDurationBuckets: 1µs to 10s, 1-2-5 steps.
var kernelDurationBuckets = []float64{
	1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4,
	1e-3, 2e-3, 5e-3, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10,
}

const occupancyNote = "Modelled, not measured: estimated by package occupancy from launch, sync, event and wait calls (see docs/occupancy.md); always carries gpu.measurement.source=" + MeasurementSourceEBPFModel + "."

// Occupancy-model metrics (extensions) and its self-metric.
var (
	GPUKernelDuration = Metric{
		Name: "gpu.kernel.duration", Kind: Histogram, Unit: "s", Origin: Extension,
		Description: "Estimated run time of a kernel on the device, from its start (launch, or the end of the stream's previous work) to the completion edge gpu.kernel.completion names.",
		Attributes:  with(occGroupAttrs, GPUKernelCompletion),
		Buckets:     kernelDurationBuckets,
		Note:        occupancyNote + " " + groupNote + " Kernels covered by one edge share the time between them evenly: only the edge is observed, so per-kernel values are tight only where each kernel has an edge of its own (completion=" + KernelCompletionEvent + ").",
	}
	ProcessGPUThreadTime = Metric{
		Name: "process.gpu.thread.time", Kind: Counter, Unit: "s", Origin: Extension,
		Description: "Estimated busy thread-seconds of the process's kernels on the device: for each kernel, min(grid × block threads, device capacity) × estimated duration, summed over kernels, like process.cpu.time summed over CPUs.",
		Attributes:  occAttrs,
		Note:        occupancyNote + " Clamped so that it never exceeds gpu.capacity.threads × wall time. Counted when a kernel's completion edge is seen, so it lags a process that syncs rarely.",
	}
	ProcessGPUThreadUtilization = Metric{
		Name: "process.gpu.thread.utilization", Kind: Gauge, Unit: "1", Origin: Extension,
		Description: "Estimated fraction of the device's resident-thread capacity the process's kernels filled over the last reporting interval (process.gpu.thread.time of the interval / (gpu.capacity.threads × interval)).",
		Attributes:  occAttrs,
		Note:        occupancyNote + " Only kernels whose completion edge was seen by the end of the interval count.",
	}
	ProcessGPUSMActiveRatio = Metric{
		Name: "process.gpu.sm.active_ratio", Kind: Gauge, Unit: "1", Origin: Extension,
		Description: "Estimated fraction of the device's streaming multiprocessors that had a block of the process's kernels resident, averaged over the last reporting interval (each kernel counts min(blocks, SMs) SMs for its estimated duration).",
		Attributes:  occAttrs,
		Note:        occupancyNote + " An estimate from grid sizes and modelled durations, not the hardware SM-active counter (DCGM_FI_PROF_SM_ACTIVE); it ignores tail effects and other processes.",
	}
	GPUCapacityThreads = Metric{
		Name: "gpu.capacity.threads", Kind: UpDownCounter, Unit: "{thread}", Origin: Extension,
		Description: "Resident-thread capacity of the device the occupancy model divides by: SM count × maximum resident threads per SM.",
		Attributes:  with(procAttrs, CUDADevice, GPUCapacitySource),
		Note:        "cuda.device is the process's device ordinal (CUDA_VISIBLE_DEVICES renumbers devices), so the series may carry the process.",
	}
	XpuscopeOccupancyDropped = Metric{
		Name: "xpuscope.occupancy.dropped", Kind: Counter, Unit: "{item}", Origin: Self,
		Description: "State the occupancy model dropped to stay within its bounds: kernels never estimated (" + DropReasonPendingCap + ", " + DropReasonStreamCap + ", " + DropReasonProcessCap + ") and events whose completion can no longer be used (" + DropReasonEventCap + ").",
		Attributes:  []attribute.Key{XpuscopeDropReason},
	}
)

var occupancyMetrics = []Metric{
	GPUKernelDuration, ProcessGPUThreadTime, ProcessGPUThreadUtilization,
	ProcessGPUSMActiveRatio, GPUCapacityThreads, XpuscopeOccupancyDropped,
}
