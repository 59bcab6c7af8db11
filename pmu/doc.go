// Package pmu reports CPU memory bandwidth, the bytes the memory
// controllers move to and from DRAM, from the uncore PMUs through
// perf_event_open: hw.cpu.memory.io by socket, controller and direction.
// It is the CPU side of data loading, tokenization and CPU offload (a KV
// cache in host memory, ZeRO-offload) that a GPU's own metrics do not
// show.
//
//	src, err := pmu.New(pmu.WithMeterProvider(mp))
//	if errors.Is(err, xpuscope.ErrUnavailable) {
//		// A virtual machine, an uncore driver that does not know the CPU,
//		// or no CAP_PERFMON: err says which.
//	} else if err != nil {
//		// A fault.
//	}
//	defer src.Close()
//
// # What it counts
//
// New reads the PMUs sysfs lists under /sys/bus/event_source/devices and
// takes the first kind it can count, in this order: Intel's free-running
// IMC byte counters (uncore_imc_free_running_N, Ice Lake-SP; by their
// sysfs names read and write, never by encoding, since Sapphire Rapids
// gives cycle counters the same encoding), Intel's IMC channels
// (uncore_imc_N: cas_count_read and cas_count_write), AMD's UMC channels
// (amd_umc_N, Zen 4 and later: umc_cas_cmd.rd and .wr), and AMD's data
// fabric (amd_df: its DRAM channel events). Every configuration bit is
// placed through the PMU's own format/ files; a sysfs event's bytes are
// its count times its .scale times its .unit, once.
//
// Sysfs wins where it describes an event. Where it does not (the AMD
// PMUs have no events/, some kernels do not describe Sapphire Rapids'
// CAS events), a table keyed by the CPU's vendor, family and model fills
// the gap; each row cites the kernel driver or perf event file its
// encodings come from. xpuscope.pmu.events says how many events came
// from each, and xpuscope.pmu.family.unknown when the CPU is in no row.
//
// One counter is opened per event on each CPU of the PMU's cpumask (one
// per socket), for every task (pid -1). Counts are read with their
// enabled and running times, and a multiplexed count is scaled by
// enabled over running (xpuscope.pmu.running.ratio says how much was).
// The cpumasks are read again every few intervals and after a read
// fails, and the counters follow a CPU that went offline. Where not
// every counter opens, New still succeeds: Status().Partial and
// xpuscope.pmu.coverage say the sums are short, never silently low.
//
// WithPeakBandwidth turns on hw.cpu.memory.utilization per controller.
//
// See docs/pmu.md for the names, the table and how to compare with perf.
package pmu
