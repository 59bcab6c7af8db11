// Package perfevent is the mechanism behind packages pmu and intelpt: the
// kernel's perf_event interface as sysfs describes it, and the
// perf_event_open calls that count and trace with it.
//
// # What sysfs says
//
// Every PMU the kernel registers has a directory under
// <sysfs>/bus/event_source/devices (ReadPMU, ListPMUs): its type (the
// perf_event_attr.type to open it with), its cpumask (the CPUs an uncore
// PMU counts on: one open per listed CPU, with pid -1), its format/ files
// (where each named field goes in config, config1 and config2: ParseFormat,
// Format.Place) and its events/ files (named event strings such as
// "event=0x04,umask=0x03" with their .scale and .unit: ParseTerms,
// PMU.Encode, Event.BytesPerCount). Nothing here hard-codes a bit position:
// a value is placed through the PMU's own format, and a multi-range field
// ("config:0-7,32-35") takes its value's low bits in its first range.
// Entries that do not parse are skipped and listed (PMU.Skipped), never
// fatal.
//
// The parsers are plain functions over bytes, bounded, with fuzz targets.
//
// # Counting
//
// Opener is the seam between the counting logic and the kernel:
// KernelOpener calls unix.PerfEventOpen with read_format
// TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING, and a test gives its own. A
// Value holds one read: Value.Scaled undoes multiplexing (count ×
// enabled / running). OpenError says what an open's errno means here
// (privilege, a PMU the kernel does not have, a per-task open of a
// system-wide PMU), and Unavailable whether it is a missing feature or
// privilege rather than a fault; Paranoid and HasPerfmon read what the
// privilege depends on.
//
// # Tracing
//
// Ring maps an event's ring buffer and, for an AUX-capable PMU such as
// intel_pt, its AUX area (aux_offset and aux_size in the mmap page): read
// and write for a full trace, read-only for snapshot mode. It hands out
// the ring's records and the AUX bytes they point at, and advances the
// tails.
//
// CPUInfo reads the vendor, family and model the kernel reports from
// CPUID in /proc/cpuinfo, and Socket a CPU's package.
package perfevent
