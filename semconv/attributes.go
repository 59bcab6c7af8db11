package semconv

import (
	"slices"

	"go.opentelemetry.io/otel/attribute"
)

// Hardware attributes (OpenTelemetry).
const (
	HWID            = attribute.Key("hw.id")
	HWName          = attribute.Key("hw.name")
	HWVendor        = attribute.Key("hw.vendor")
	HWType          = attribute.Key("hw.type")
	HWParent        = attribute.Key("hw.parent")
	HWDriverVersion = attribute.Key("hw.driver_version")
	HWGPUTask       = attribute.Key("hw.gpu.task")
	ErrorType       = attribute.Key("error.type")
	NetworkIODir    = attribute.Key("network.io.direction")
)

// Resource attributes (OpenTelemetry).
const (
	ServiceName = attribute.Key("service.name")
	K8sNodeName = attribute.Key("k8s.node.name")
)

// Process attributes (OpenTelemetry).
const (
	ProcessPID            = attribute.Key("process.pid")
	ProcessExecutableName = attribute.Key("process.executable.name")
)

// GPU attributes (extensions).
const (
	GPUIndex               = attribute.Key("gpu.index")
	GPUPCIAddress          = attribute.Key("gpu.pci_address")
	GPUMIGGPUInstanceID    = attribute.Key("gpu.mig.gpu_instance_id")
	GPUMIGComputeInstance  = attribute.Key("gpu.mig.compute_instance_id")
	GPUMIGProfile          = attribute.Key("gpu.mig.profile")
	GPUClockDomain         = attribute.Key("gpu.clock.domain")
	GPUClockThrottleReason = attribute.Key("gpu.clock.throttle.reason")
	GPUXIDCode             = attribute.Key("gpu.xid.code")
)

// CUDA attributes (extensions).
const (
	CUDAKernelName   = attribute.Key("cuda.kernel.name")
	CUDADevice       = attribute.Key("cuda.device")
	CUDAAPIName      = attribute.Key("cuda.api.name")
	CUDAErrorCode    = attribute.Key("cuda.error.code")
	CUDAMemcpyKind   = attribute.Key("cuda.memcpy.kind")
	CUDAStream       = attribute.Key("cuda.stream")
	CUDAGridX        = attribute.Key("cuda.kernel.grid.x")
	CUDAGridY        = attribute.Key("cuda.kernel.grid.y")
	CUDAGridZ        = attribute.Key("cuda.kernel.grid.z")
	CUDABlockX       = attribute.Key("cuda.kernel.block.x")
	CUDABlockY       = attribute.Key("cuda.kernel.block.y")
	CUDABlockZ       = attribute.Key("cuda.kernel.block.z")
	CUDASharedMemory = attribute.Key("cuda.kernel.shared_memory")
	CUDAGraphKernels = attribute.Key("cuda.graph.kernels")
	CUDAMemcpyBytes  = attribute.Key("cuda.memcpy.bytes")
	CUDAMemoryBytes  = attribute.Key("cuda.memory.bytes")
	CUDAMemoryAddr   = attribute.Key("cuda.memory.address")
)

// Self-observability attributes.
const (
	XpuscopeRead       = attribute.Key("xpuscope.read")
	XpuscopeSymbol     = attribute.Key("xpuscope.symbol")
	XpuscopeMetricName = attribute.Key("xpuscope.metric.name")
	XpuscopeTarget     = attribute.Key("xpuscope.target")
)

// Well-known attribute values.
const (
	HWTypeGPU = "gpu"

	GPUTaskGeneral = "general"
	GPUTaskEncoder = "encoder"
	GPUTaskDecoder = "decoder"

	DirectionReceive  = "receive"
	DirectionTransmit = "transmit"

	ErrorCorrected   = "corrected"
	ErrorUncorrected = "uncorrected"
	ErrorXID         = "xid"

	ClockDomainSM     = "sm"
	ClockDomainMemory = "memory"

	MemcpyHostToHost     = "host_to_host"
	MemcpyHostToDevice   = "host_to_device"
	MemcpyDeviceToHost   = "device_to_host"
	MemcpyDeviceToDevice = "device_to_device"
	MemcpyDefault        = "default" // cudaMemcpyDefault: the runtime infers the direction from the pointers

	// Unknown is a kernel name that could not be resolved.
	Unknown = "unknown"

	// Other is the value that collects everything past a cardinality cap.
	Other = "_OTHER"
)

// Throttle (NVML "clocks event") reasons, in the order of their NVML bits.
var ThrottleReasons = []string{
	"gpu_idle",
	"applications_clocks_setting",
	"sw_power_cap",
	"hw_slowdown",
	"sync_boost",
	"sw_thermal_slowdown",
	"hw_thermal_slowdown",
	"hw_power_brake_slowdown",
	"display_clock_setting",
}

var coreAttributes = []Attribute{
	{HWID, "string", "Unique identifier of the device on the host: the vendor UUID (NVIDIA GPU-…, MIG-…); for an AMD GPU its unique id as 0x and 16 hexadecimal digits (ROCm SMI, sysfs unique_id, which AMD SMI reads too), or its PCI address where it has none; for an Intel GPU its PCI address (the same whether Level Zero or the kernel's files read it).", OTel, nil},
	{HWName, "string", "Product name as the vendor library reports it.", OTel, nil},
	{HWVendor, "string", "Vendor name.", OTel, []string{VendorNVIDIA, VendorAMD, VendorIntel, VendorGoogle}},
	{HWType, "string", "Component type: " + HWTypeGPU + ", or " + HWTypeTPU + " for a TPU (a documented value beside OpenTelemetry's).", OTel, []string{HWTypeGPU, HWTypeTPU}},
	{HWParent, "string", "hw.id of the parent GPU; set on MIG instances.", OTel, nil},
	{HWDriverVersion, "string", "Kernel driver version. AMD: the amdgpu module's version, or the kernel release for the in-tree driver. Intel: Level Zero's driverVersion, or the kernel release (i915 and xe are in-tree).", OTel, nil},
	{HWGPUTask, "string", "Task the utilization refers to.", OTel, []string{GPUTaskGeneral, GPUTaskEncoder, GPUTaskDecoder}},
	{ErrorType, "string", "Error class.", OTel, []string{ErrorCorrected, ErrorUncorrected, ErrorXID, "on self-metrics: NVML return names (ERROR_UNKNOWN, ERROR_GPU_IS_LOST, …), AMD SMI and ROCm SMI status names (AMDSMI_STATUS_BUSY, RSMI_STATUS_BUSY, …), and for sysfs reads errno names (EAGAIN, EIO, …) or invalid_data; on xpuscope.bpf.ring.errors: " + RingErrorRead + ", " + RingErrorDecode + "; on GenAI calls: the provider's error type, the HTTP status, " + GenAIErrorStreamTruncated + ", " + GenAIErrorCancelled + " or _OTHER; on xpuscope.genai.server.requests: the model server's word for the failure (vLLM abort or error, TGI's err, Triton's reason, TF Serving's status); on xpuscope.genai.serving.scrapes: " + ScrapeErrorTimeout + ", " + ScrapeErrorConnect + ", " + ScrapeErrorNetNS + ", " + ScrapeErrorStatus + ", " + ScrapeErrorTooLarge + ", " + ScrapeErrorParse + ", " + ScrapeErrorUnrecognised + "; on xpuscope.training.read.errors: " + TrainingErrorBadCRC + ", " + TrainingErrorCorrupt + ", " + TrainingErrorTooLarge + ", " + TrainingErrorDecode + ", " + TrainingErrorParse + ", " + TrainingErrorRead + ", " + TrainingErrorOpen}},
	{NetworkIODir, "string", "Direction of the transfer, seen from the GPU.", OTel, []string{DirectionReceive, DirectionTransmit}},
	{ServiceName, "string", "Resource attribute: the reporting service; the reference agent sets xpuscope-agent unless its configuration or OTEL_SERVICE_NAME says otherwise. On the series and spans of a process that package podjoin places: the process's own service, from its OTEL_SERVICE_NAME, else the service.name of its OTEL_RESOURCE_ATTRIBUTES.", OTel, nil},
	{K8sNodeName, "string", "Resource attribute: the Kubernetes node the reference agent runs on, from the downward API (K8S_NODE_NAME).", OTel, nil},
	{ProcessPID, "int", "Process id in the host's pid namespace.", OTel, nil},
	{ProcessExecutableName, "string", "Base name of /proc/<pid>/exe (falling back to /proc/<pid>/comm); " + Other + " on the series that folds processes past the cap.", OTel, nil},
	{GPUIndex, "int", "Vendor library index of the device (NVML index, position in AMD SMI's socket order, ROCm SMI index; from amdgpu sysfs, the position in PCI-address order; Intel: the position in Level Zero's device order, or in PCI-address order among the i915 and xe cards). On MIG instances, the parent's index.", Extension, nil},
	{GPUPCIAddress, "string", "PCI address in sysfs form, domain:bus:device.function, lower case (0000:3b:00.0).", Extension, nil},
	{GPUMIGGPUInstanceID, "int", "MIG GPU-instance id.", Extension, nil},
	{GPUMIGComputeInstance, "int", "MIG compute-instance id.", Extension, nil},
	{GPUMIGProfile, "string", "MIG profile name (1g.10gb, 3g.40gb, …).", Extension, nil},
	{GPUClockDomain, "string", "Clock domain.", Extension, []string{ClockDomainSM, ClockDomainMemory}},
	{GPUClockThrottleReason, "string", "Why clocks are held below their maximum (NVML clocks-event reasons).", Extension, ThrottleReasons},
	{GPUXIDCode, "string", "NVIDIA XID error code, as a decimal string; " + Other + " past 64 distinct codes per device.", Extension, nil},
	{CUDAKernelName, "string", "Kernel name, C++-demangled: from __cudaRegisterFunction or cuModuleGetFunction, else the host stub's ELF symbol. " + Unknown + " when unresolved; " + Other + " past the per-process cap.", Extension, nil},
	{CUDADevice, "int", "CUDA device ordinal the calling thread selected with cudaSetDevice (0 until it does).", Extension, nil},
	{CUDAAPIName, "string", "The CUDA runtime or driver function (cudaMalloc, cuLaunchKernel, …).", Extension, nil},
	{CUDAErrorCode, "int", "The function's return code (cudaError_t or CUresult).", Extension, nil},
	{CUDAMemcpyKind, "string", "Copy direction.", Extension, []string{MemcpyHostToHost, MemcpyHostToDevice, MemcpyDeviceToHost, MemcpyDeviceToDevice, MemcpyDefault}},
	{CUDAStream, "string", "Stream handle, hexadecimal (0x0 is the default stream). Span attribute only.", Extension, nil},
	{CUDAGridX, "int", "Grid dimension x. Span attribute only.", Extension, nil},
	{CUDAGridY, "int", "Grid dimension y. Span attribute only.", Extension, nil},
	{CUDAGridZ, "int", "Grid dimension z. Span attribute only.", Extension, nil},
	{CUDABlockX, "int", "Block dimension x. Span attribute only.", Extension, nil},
	{CUDABlockY, "int", "Block dimension y. Span attribute only.", Extension, nil},
	{CUDABlockZ, "int", "Block dimension z. Span attribute only.", Extension, nil},
	{CUDAGraphKernels, "int", "Kernels a graph launch replays, as its capture made them; absent when the graph's kernels are not known. Span attribute only.", Extension, nil},
	{CUDASharedMemory, "int", "Dynamic shared memory of a launch, bytes. Span attribute only.", Extension, nil},
	{CUDAMemcpyBytes, "int", "Bytes of a copy or memset. Span attribute only.", Extension, nil},
	{CUDAMemoryBytes, "int", "Bytes of an allocation. Span attribute only.", Extension, nil},
	{CUDAMemoryAddr, "string", "Device address of an allocation or free, hexadecimal. Span attribute only.", Extension, nil},
	{XpuscopeRead, "string", "Name of the vendor-library read that failed or is missing (power, memory, processes, …).", Self, nil},
	{XpuscopeSymbol, "string", "Vendor-library symbol that the loaded library lacks.", Self, nil},
	{XpuscopeMetricName, "string", "Metric that is absent because of it.", Self, nil},
	{XpuscopeTarget, "string", "Kind of file a uprobe Source attaches to (libcudart, libcuda, loader).", Self, nil},
}

// attributes is the registry: each area's list, in order. An area defined
// in a file of its own adds its list here.
var attributes = slices.Concat(coreAttributes, amdAttributes, acceleratorAttributes, intelAttributes, occupancyAttributes, genaiAttributes, servingAttributes, trainingAttributes, captureAttributes, pmuAttributes, intelptAttributes, nodeAttributes, ncclAttributes, uprobeAttributes, agentAttributes, podjoinAttributes)

// Attributes returns every registered attribute, in registry order.
func Attributes() []Attribute {
	return append([]Attribute(nil), attributes...)
}
