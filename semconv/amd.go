package semconv

import "go.opentelemetry.io/otel/attribute"

// Names the AMD backends of package gpu (AMD SMI, ROCm SMI, amdgpu sysfs, KFD) add
// to the GPU set. Everything else an AMD GPU reports uses the GPU names
// of metrics.go, the same as NVIDIA's, with hw.vendor=AMD.

// HWSensorLocation is OpenTelemetry's hw.sensor_location: which sensor of
// the GPU a temperature comes from.
const HWSensorLocation = attribute.Key("hw.sensor_location")

// Values of HWVendor.
const (
	VendorNVIDIA = "NVIDIA"
	VendorAMD    = "AMD"
)

// Values of HWSensorLocation: AMD's temperature sensors.
const (
	SensorEdge     = "edge"
	SensorJunction = "junction"
	SensorMemory   = "memory"
)

// GPUPowerAverage is the power the GPU's firmware averages itself.
var GPUPowerAverage = Metric{
	Name: "gpu.power.average", Kind: Gauge, Unit: "W", Origin: Extension,
	Description: "Power drawn by the GPU, averaged by its firmware over a short window (about a second).",
	Attributes:  deviceAttrs,
	Note:        "AMD only: rsmi_dev_power_ave_get, or hwmon power1_average; omitted where the GPU has no average (some report only the current socket power). NVML has no such figure.",
}

var amdMetrics = []Metric{GPUPowerAverage}

var amdAttributes = []Attribute{
	{HWSensorLocation, "string", "Temperature sensor of an AMD GPU: " + SensorEdge + " (the die's edge), " + SensorJunction + " (the hotspot), " + SensorMemory + " (VRAM). NVIDIA's one sensor carries none.", OTel, []string{SensorEdge, SensorJunction, SensorMemory}},
}
