package semconv

import "go.opentelemetry.io/otel/attribute"

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

// Self-observability attributes.
const (
	XpuscopeRead       = attribute.Key("xpuscope.read")
	XpuscopeSymbol     = attribute.Key("xpuscope.symbol")
	XpuscopeMetricName = attribute.Key("xpuscope.metric.name")
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

var attributes = []Attribute{
	{HWID, "string", "Unique identifier of the device on the host: the vendor UUID (NVIDIA GPU-…, MIG-…).", OTel, nil},
	{HWName, "string", "Product name as the vendor library reports it.", OTel, nil},
	{HWVendor, "string", "Vendor name.", OTel, []string{"NVIDIA"}},
	{HWType, "string", "Component type.", OTel, []string{HWTypeGPU}},
	{HWParent, "string", "hw.id of the parent GPU; set on MIG instances.", OTel, nil},
	{HWDriverVersion, "string", "Kernel driver version.", OTel, nil},
	{HWGPUTask, "string", "Task the utilization refers to.", OTel, []string{GPUTaskGeneral, GPUTaskEncoder, GPUTaskDecoder}},
	{ErrorType, "string", "Error class.", OTel, []string{ErrorCorrected, ErrorUncorrected, ErrorXID, "NVML return names (ERROR_UNKNOWN, ERROR_GPU_IS_LOST, …) on self-metrics"}},
	{NetworkIODir, "string", "Direction of the transfer, seen from the GPU.", OTel, []string{DirectionReceive, DirectionTransmit}},
	{ServiceName, "string", "Resource attribute: the reporting service; the reference agent sets xpuscope-agent unless OTEL_SERVICE_NAME says otherwise.", OTel, nil},
	{ProcessPID, "int", "Process id in the host's pid namespace.", OTel, nil},
	{ProcessExecutableName, "string", "Base name of /proc/<pid>/exe (falling back to /proc/<pid>/comm); " + Other + " on the series that folds processes past the cap.", OTel, nil},
	{GPUIndex, "int", "Vendor library index of the device (NVML index). On MIG instances, the parent's index.", Extension, nil},
	{GPUPCIAddress, "string", "PCI address in sysfs form, domain:bus:device.function, lower case (0000:3b:00.0).", Extension, nil},
	{GPUMIGGPUInstanceID, "int", "MIG GPU-instance id.", Extension, nil},
	{GPUMIGComputeInstance, "int", "MIG compute-instance id.", Extension, nil},
	{GPUMIGProfile, "string", "MIG profile name (1g.10gb, 3g.40gb, …).", Extension, nil},
	{GPUClockDomain, "string", "Clock domain.", Extension, []string{ClockDomainSM, ClockDomainMemory}},
	{GPUClockThrottleReason, "string", "Why clocks are held below their maximum (NVML clocks-event reasons).", Extension, ThrottleReasons},
	{GPUXIDCode, "string", "NVIDIA XID error code, as a decimal string; " + Other + " past 64 distinct codes per device.", Extension, nil},
	{XpuscopeRead, "string", "Name of the vendor-library read that failed or is missing (power, memory, processes, …).", Self, nil},
	{XpuscopeSymbol, "string", "Vendor-library symbol that the loaded library lacks.", Self, nil},
	{XpuscopeMetricName, "string", "Metric that is absent because of it.", Self, nil},
}

// Attributes returns every registered attribute, in registry order.
func Attributes() []Attribute {
	return append([]Attribute(nil), attributes...)
}
