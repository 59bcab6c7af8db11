package semconv

import "go.opentelemetry.io/otel/attribute"

// deviceAttrs are carried by every GPU device series.
var deviceAttrs = []attribute.Key{
	HWID, HWName, HWVendor, HWType, HWDriverVersion, GPUIndex, GPUPCIAddress,
	HWParent, GPUMIGGPUInstanceID, GPUMIGComputeInstance, GPUMIGProfile,
}

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
		Note:        "NVML: general from nvmlDeviceGetUtilizationRates (any kernel running, not how much of the GPU it used), encoder and decoder from their own reads. " + migOmitted,
	}
	HWGPUMemoryUsage = Metric{
		Name: "hw.gpu.memory.usage", Kind: UpDownCounter, Unit: "By", Origin: OTel,
		Description: "GPU memory in use.",
		Attributes:  deviceAttrs,
		Note:        "Reported for GPUs and MIG instances.",
	}
	HWGPUMemoryLimit = Metric{
		Name: "hw.gpu.memory.limit", Kind: UpDownCounter, Unit: "By", Origin: OTel,
		Description: "Size of the GPU memory.",
		Attributes:  deviceAttrs,
		Note:        "Reported for GPUs and MIG instances.",
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
		Note:        "NVML field values PCIE_COUNT_TX_BYTES / RX_BYTES; omitted where the GPU does not support them. " + migOmitted,
	}
	HWPower = Metric{
		Name: "hw.power", Kind: Gauge, Unit: "W", Origin: OTel,
		Description: "Instantaneous power drawn by the GPU.",
		Attributes:  deviceAttrs,
		Note:        migOmitted,
	}
	HWEnergy = Metric{
		Name: "hw.energy", Kind: Counter, Unit: "J", Origin: OTel,
		Description: "Energy consumed by the GPU since the driver was loaded.",
		Attributes:  deviceAttrs,
		Note:        "NVML nvmlDeviceGetTotalEnergyConsumption (Volta and later). " + migOmitted,
	}
	HWTemperature = Metric{
		Name: "hw.temperature", Kind: Gauge, Unit: "Cel", Origin: OTel,
		Description: "GPU die temperature.",
		Attributes:  deviceAttrs,
		Note:        migOmitted,
	}
	HWErrors = Metric{
		Name: "hw.errors", Kind: Counter, Unit: "{error}", Origin: OTel,
		Description: "Errors reported by the GPU: ECC memory errors (corrected, uncorrected) since the driver was loaded, and XID errors seen since the Source started.",
		Attributes:  with(deviceAttrs, ErrorType, GPUXIDCode),
		Note:        "ECC only where ECC is enabled. XID through an NVML event set (nvmlEventSetWait); XIDs that happened before the Source started are not seen. " + migOmitted,
	}
)

// GPU device metrics that OpenTelemetry does not define.
var (
	GPUMemoryFree = Metric{
		Name: "gpu.memory.free", Kind: UpDownCounter, Unit: "By", Origin: Extension,
		Description: "GPU memory free for allocation.",
		Attributes:  deviceAttrs,
	}
	GPUMemoryReserved = Metric{
		Name: "gpu.memory.reserved", Kind: UpDownCounter, Unit: "By", Origin: Extension,
		Description: "GPU memory reserved by the driver and firmware, counted in neither usage nor free.",
		Attributes:  deviceAttrs,
		Note:        "Needs nvmlDeviceGetMemoryInfo_v2 (driver 510 and later); omitted otherwise.",
	}
	GPUMemoryControllerUtilization = Metric{
		Name: "gpu.memory.controller.utilization", Kind: Gauge, Unit: "1", Origin: Extension,
		Description: "Fraction of the sample period during which device memory was being read or written.",
		Attributes:  deviceAttrs,
		Note:        migOmitted,
	}
	GPUPowerLimit = Metric{
		Name: "gpu.power.limit", Kind: Gauge, Unit: "W", Origin: Extension,
		Description: "Power limit the driver enforces.",
		Attributes:  deviceAttrs,
		Note:        migOmitted,
	}
	GPUClockFrequency = Metric{
		Name: "gpu.clock.frequency", Kind: Gauge, Unit: "Hz", Origin: Extension,
		Description: "Current clock frequency.",
		Attributes:  with(deviceAttrs, GPUClockDomain),
		Note:        migOmitted,
	}
	GPUClockThrottle = Metric{
		Name: "gpu.clock.throttle", Kind: Gauge, Unit: "1", Origin: Extension,
		Description: "1 while the reason holds clocks below their maximum, else 0. One series per known reason.",
		Attributes:  with(deviceAttrs, GPUClockThrottleReason),
		Note:        "nvmlDeviceGetCurrentClocksEventReasons, or the older nvmlDeviceGetCurrentClocksThrottleReasons. " + migOmitted,
	}
	GPUFanSpeed = Metric{
		Name: "gpu.fan.speed", Kind: Gauge, Unit: "1", Origin: Extension,
		Description: "Fan speed as a fraction of its maximum.",
		Attributes:  deviceAttrs,
		Note:        "Omitted on passively cooled GPUs, where NVML reports it unsupported. " + migOmitted,
	}
)

// Per-process GPU metrics (extensions).
var (
	ProcessGPUMemoryUsage = Metric{
		Name: "process.gpu.memory.usage", Kind: UpDownCounter, Unit: "By", Origin: Extension,
		Description: "GPU memory used by the process on the device.",
		Attributes:  with(deviceAttrs, ProcessPID, ProcessExecutableName),
		Note:        "Compute and graphics processes; a process in both lists counts once. Under MIG, reported on the MIG instance. Past the per-device process cap, the rest fold into one series with process.executable.name=" + Other + " and no process.pid.",
	}
	ProcessGPUUtilization = Metric{
		Name: "process.gpu.utilization", Kind: Gauge, Unit: "1", Origin: Extension,
		Description: "Fraction of the last sample period during which a kernel of the process was running on the SMs (NVML per-process utilization samples).",
		Attributes:  with(deviceAttrs, ProcessPID, ProcessExecutableName),
		Note:        "NVML does not sample per-process utilization on MIG instances; omitted there.",
	}
)

// Self-metrics of the gpu Source.
var (
	XpuscopeGPUReadErrors = Metric{
		Name: "xpuscope.gpu.read.errors", Kind: Counter, Unit: "{error}", Origin: Self,
		Description: "Vendor-library reads that failed. A failed read loses that value for that cycle and device; other reads and devices go on.",
		Attributes:  []attribute.Key{HWID, XpuscopeRead, ErrorType},
		Note:        "A read the device reports as unsupported is not an error: it is dropped for that device, once. Errors of the XID event set itself carry no hw.id.",
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

var metrics = []Metric{
	HWGPUUtilization, HWGPUMemoryUsage, HWGPUMemoryLimit, HWGPUMemoryUtilization,
	HWGPUIO, HWPower, HWEnergy, HWTemperature, HWErrors,
	GPUMemoryFree, GPUMemoryReserved, GPUMemoryControllerUtilization,
	GPUPowerLimit, GPUClockFrequency, GPUClockThrottle, GPUFanSpeed,
	ProcessGPUMemoryUsage, ProcessGPUUtilization,
	XpuscopeGPUReadErrors, XpuscopeGPUSymbolMissing, XpuscopeGPUProcessOverflow,
}

// Metrics returns every registered metric, in registry order.
func Metrics() []Metric {
	return append([]Metric(nil), metrics...)
}
