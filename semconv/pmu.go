package semconv

import "go.opentelemetry.io/otel/attribute"

// Attributes of package pmu: CPU memory bandwidth from the memory
// controllers' PMUs.
const (
	// HWDirection is the direction of a transfer through a memory
	// controller.
	HWDirection = attribute.Key("hw.direction")
	// HWCPUSocket is the CPU package (socket) a memory controller belongs
	// to.
	HWCPUSocket = attribute.Key("hw.cpu.socket")
	// HWCPUMemoryController names a memory controller or channel by the
	// PMU that counts it.
	HWCPUMemoryController = attribute.Key("hw.cpu.memory.controller")
	// XpuscopePMUEventSource says where an event's encoding came from.
	XpuscopePMUEventSource = attribute.Key("xpuscope.pmu.event.source")
)

// Values of HWDirection.
const (
	HWDirectionRead  = "read"
	HWDirectionWrite = "write"
	// HWDirectionTotal is both directions in one count, where the
	// controller's counter does not tell them apart (AMD Zen 2 and 3
	// data fabric).
	HWDirectionTotal = "total"
)

// Values of XpuscopePMUEventSource.
const (
	PMUEventSysfs = "sysfs" // the PMU's own events/ file, scaled by its .scale and .unit
	PMUEventTable = "table" // the per-family table of package pmu, where sysfs describes no event
)

// pmuSeries identify one memory controller's series.
var pmuSeries = []attribute.Key{HWCPUSocket, HWCPUMemoryController}

var (
	HWCPUMemoryIO = Metric{
		Name: "hw.cpu.memory.io", Kind: Counter, Unit: "By", Origin: Extension,
		Description: "Bytes the CPU's memory controllers moved to and from DRAM, by socket, controller and direction.",
		Attributes:  with(pmuSeries, HWDirection),
		Note: "OpenTelemetry has no name for it; this project's name, fixed by its design. From the uncore PMUs through perf_event_open: Intel's free-running IMC byte counters (read, write) where sysfs has them, else the IMC channels' CAS counts (cas_count_read, cas_count_write: 64 bytes each); AMD's UMC CAS commands (umc_cas_cmd.rd, .wr) from Zen 4, else the data fabric's DRAM channel beats. " +
			"A count multiplexed with other events is scaled (count × enabled / running): see xpuscope.pmu.running.ratio. Where not every controller of a socket could be opened, the socket's sum is partial: see xpuscope.pmu.coverage. " +
			"To compare with perf: perf stat's uncore_imc/cas_count_read/ in MiB, and its metrics umc_mem_read_bandwidth and umc_mem_write_bandwidth in MB/s (the rate of this counter over 1e6).",
	}
	HWCPUMemoryUtilization = Metric{
		Name: "hw.cpu.memory.utilization", Kind: Gauge, Unit: "1", Origin: Extension,
		Description: "Bytes a memory controller moved in the last interval over the most it could move in that time, both directions together.",
		Attributes:  pmuSeries,
		Note:        "Reported only when the peak is known: pmu.WithPeakBandwidth gives it per controller (the DIMMs' transfer rate times 8 bytes a transfer, times the channels the controller has), since the CPU's family does not fix its DIMMs' speed.",
	}
	XpuscopePMUCoverage = Metric{
		Name: "xpuscope.pmu.coverage", Kind: Gauge, Unit: "1", Origin: Self,
		Description: "Fraction of a socket's memory-controller counters that are open and were read in the last interval; below 1, the socket's hw.cpu.memory.io is partial.",
		Attributes:  []attribute.Key{HWCPUSocket},
	}
	XpuscopePMURunningRatio = Metric{
		Name: "xpuscope.pmu.running.ratio", Kind: Gauge, Unit: "1", Origin: Self,
		Description: "Time a socket's memory counters were counting over the time they were enabled, in the last interval; below 1 the kernel multiplexed them, and the bytes are scaled estimates.",
		Attributes:  []attribute.Key{HWCPUSocket},
	}
	XpuscopePMUEvents = Metric{
		Name: "xpuscope.pmu.events", Kind: UpDownCounter, Unit: "{event}", Origin: Self,
		Description: "Memory-bandwidth events in use, by where their encoding came from: the PMU's own sysfs description, or the per-family table where sysfs describes none.",
		Attributes:  []attribute.Key{XpuscopePMUEventSource},
	}
	XpuscopePMUFamilyUnknown = Metric{
		Name: "xpuscope.pmu.family.unknown", Kind: Gauge, Unit: "1", Origin: Self,
		Description: "1 when the CPU's vendor, family and model are in no row of the per-family table, so that only events sysfs describes are used; else 0.",
	}
	XpuscopePMUReadErrors = Metric{
		Name: "xpuscope.pmu.read.errors", Kind: Counter, Unit: "{error}", Origin: Self,
		Description: "Counter reads that failed, by error; the counter is opened again on the next interval.",
		Attributes:  []attribute.Key{ErrorType},
	}
	XpuscopePMUReopens = Metric{
		Name: "xpuscope.pmu.reopens", Kind: Counter, Unit: "{counter}", Origin: Self,
		Description: "Counters closed and opened again: their PMU's cpumask changed (a CPU went offline or came back), or a read failed.",
	}
	XpuscopePMUSysfsSkipped = Metric{
		Name: "xpuscope.pmu.sysfs.skipped", Kind: UpDownCounter, Unit: "{entry}", Origin: Self,
		Description: "Entries of the memory controllers' sysfs descriptions skipped because they did not parse (a format, an event string, a scale or unit), as read at start-up.",
	}
)

var pmuMetrics = []Metric{
	HWCPUMemoryIO, HWCPUMemoryUtilization,
	XpuscopePMUCoverage, XpuscopePMURunningRatio, XpuscopePMUEvents, XpuscopePMUFamilyUnknown,
	XpuscopePMUReadErrors, XpuscopePMUReopens, XpuscopePMUSysfsSkipped,
}

var pmuAttributes = []Attribute{
	{HWDirection, "string", "Direction of a transfer through a memory controller: read from DRAM, written to DRAM, or total where the counter does not tell them apart. An extension: OpenTelemetry's hardware conventions have no direction for memory.", Extension,
		[]string{HWDirectionRead, HWDirectionWrite, HWDirectionTotal}},
	{HWCPUSocket, "int", "The CPU package a memory controller belongs to: the physical_package_id of the CPU its PMU counts on.", Extension, nil},
	{HWCPUMemoryController, "string", "The memory controller or channel, named by the PMU that counts it (uncore_imc_3, uncore_imc_free_running_1, amd_umc_5), or for the data fabric by the PMU and the channel (amd_df/channel3, amd_df/cs3). The same name on two sockets is two controllers.", Extension, nil},
	{XpuscopePMUEventSource, "string", "Where a memory-bandwidth event's encoding came from.", Self, []string{PMUEventSysfs, PMUEventTable}},
}
