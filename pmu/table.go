package pmu

import (
	"fmt"

	"github.com/xpuscope/xpuscope/internal/perfevent"
	"github.com/xpuscope/xpuscope/semconv"
)

// kind is a kind of memory-controller PMU, in the order New prefers them.
type kind int

const (
	// kindIMCFree is Intel's free-running IMC counters (Ice Lake-SP
	// and later servers): bytes read and written per memory controller,
	// on counters of their own, never multiplexed.
	kindIMCFree kind = iota
	// kindIMC is Intel's IMC channel PMUs: CAS commands per channel.
	kindIMC
	// kindUMC is AMD's UMC PMUs (Zen 4 and later, with PerfMonV2): CAS
	// commands per memory channel.
	kindUMC
	// kindDF is AMD's data fabric PMU: one per system, counting on one
	// CPU of each socket, with an event per DRAM channel.
	kindDF
	numKinds
)

var kindNames = [numKinds]string{
	kindIMCFree: "Intel IMC free-running counters",
	kindIMC:     "Intel IMC channel counters",
	kindUMC:     "AMD UMC counters",
	kindDF:      "AMD data fabric counters",
}

func (k kind) String() string { return kindNames[k] }

// sysfsEvent is an event name sysfs gives a kind of PMU, with the
// direction it counts.
type sysfsEvent struct {
	name, dir string
}

// sysfsEvents are the byte-counting events each kind's sysfs describes,
// by name. The free-running counters are looked for by name, never by
// encoding: Sapphire Rapids' free-running rpq_cycles has Ice Lake's
// encoding of read bytes (event=0xff,umask=0x20).
var sysfsEvents = [numKinds][]sysfsEvent{
	// arch/x86/events/intel/uncore_snbep.c, icx_uncore_imc_freerunning_events.
	kindIMCFree: {{"read", semconv.HWDirectionRead}, {"write", semconv.HWDirectionWrite}},
	// hswep_uncore_imc_events, snr_uncore_imc_events, spr_uncore_imc_events.
	kindIMC: {{"cas_count_read", semconv.HWDirectionRead}, {"cas_count_write", semconv.HWDirectionWrite}},
}

// tableEvent is one event of the per-family table: field values placed
// through the PMU's own format files, and the bytes one count is.
type tableEvent struct {
	// name is the event's name in the source it comes from.
	name string
	// channel names the DRAM channel for a PMU that counts several (the
	// data fabric); "" for a PMU per channel or controller.
	channel string
	dir     string
	terms   []perfevent.Term
	bytes   float64
}

// family is one row of the per-family table: a processor generation, by
// CPUID, and the events that fill what its sysfs does not describe.
type family struct {
	name   string
	vendor string
	family int
	models func(model int) bool
	events [numKinds][]tableEvent
}

func modelIn(ms ...int) func(int) bool {
	return func(m int) bool {
		for _, x := range ms {
			if m == x {
				return true
			}
		}
		return false
	}
}

func term(name string, v uint64) perfevent.Term { return perfevent.Term{Name: name, Value: v} }

// bytesPerCAS is what one CAS command (or one data beat) of these
// controllers moves: a 64-byte cache line. The kernel's IMC events say so
// with their scale (6.103515625e-5 MiB), perf's AMD metrics with their
// "* 64".
const bytesPerCAS = 64

// families is the table. Sysfs wins where it describes an event; a row
// fills the gaps for its CPUs. Every encoding cites its source.
var families = []family{
	{
		// Skylake-SP, Cascade Lake-SP, Cooper Lake: model 0x55 (the
		// kernel's INTEL_SKYLAKE_X; perf's mapfile.csv skylakex and
		// cascadelakex). arch/x86/events/intel/uncore_snbep.c:
		// skx_uncore_imc uses hswep_uncore_imc_events, cas_count_read
		// "event=0x04,umask=0x03", cas_count_write "event=0x04,umask=0x0c".
		name: "Skylake-SP", vendor: perfevent.VendorIntel, family: 6, models: modelIn(0x55),
		events: [numKinds][]tableEvent{
			kindIMC: {
				{name: "cas_count_read", dir: semconv.HWDirectionRead, terms: []perfevent.Term{term("event", 0x04), term("umask", 0x03)}, bytes: bytesPerCAS},
				{name: "cas_count_write", dir: semconv.HWDirectionWrite, terms: []perfevent.Term{term("event", 0x04), term("umask", 0x0c)}, bytes: bytesPerCAS},
			},
		},
	},
	{
		// Ice Lake-SP and -D: models 0x6a, 0x6c (perf's mapfile.csv
		// GenuineIntel-6-6[AC],icelakex). uncore_snbep.c: icx_uncore_imc
		// uses snr_uncore_imc_events, cas_count_read
		// "event=0x04,umask=0x0f", cas_count_write "event=0x04,umask=0x30";
		// icx_uncore_imc_freerunning_events read "event=0xff,umask=0x20",
		// write "event=0xff,umask=0x21", scale 6.103515625e-5 MiB.
		name: "Ice Lake-SP", vendor: perfevent.VendorIntel, family: 6, models: modelIn(0x6a, 0x6c),
		events: [numKinds][]tableEvent{
			kindIMCFree: {
				{name: "read", dir: semconv.HWDirectionRead, terms: []perfevent.Term{term("event", 0xff), term("umask", 0x20)}, bytes: bytesPerCAS},
				{name: "write", dir: semconv.HWDirectionWrite, terms: []perfevent.Term{term("event", 0xff), term("umask", 0x21)}, bytes: bytesPerCAS},
			},
			kindIMC: {
				{name: "cas_count_read", dir: semconv.HWDirectionRead, terms: []perfevent.Term{term("event", 0x04), term("umask", 0x0f)}, bytes: bytesPerCAS},
				{name: "cas_count_write", dir: semconv.HWDirectionWrite, terms: []perfevent.Term{term("event", 0x04), term("umask", 0x30)}, bytes: bytesPerCAS},
			},
		},
	},
	{
		// Sapphire Rapids 0x8f and Emerald Rapids 0xcf (perf's
		// mapfile.csv once mapped GenuineIntel-6-(8F|CF) to
		// sapphirerapids). uncore_snbep.c: spr_uncore_imc_events
		// cas_count_read "event=0x05,umask=0xcf", cas_count_write
		// "event=0x05,umask=0xf0", which kernels before them did not
		// describe for the discovery-table IMC PMUs. Their free-running
		// IMC counters count queue cycles, not bytes: no row.
		name: "Sapphire Rapids", vendor: perfevent.VendorIntel, family: 6, models: modelIn(0x8f, 0xcf),
		events: [numKinds][]tableEvent{
			kindIMC: {
				{name: "cas_count_read", dir: semconv.HWDirectionRead, terms: []perfevent.Term{term("event", 0x05), term("umask", 0xcf)}, bytes: bytesPerCAS},
				{name: "cas_count_write", dir: semconv.HWDirectionWrite, terms: []perfevent.Term{term("event", 0x05), term("umask", 0xf0)}, bytes: bytesPerCAS},
			},
		},
	},
	{
		// Zen 3: family 0x19, models 0x00-0x0f, 0x20-0x2f and
		// 0x40-0x5f (perf's mapfile.csv
		// AuthenticAMD-25-([245][[:xdigit:]]|[[:xdigit:]]),amdzen3). tools/perf/pmu-events/arch/x86/amdzen3/
		// data-fabric.json: dram_channel_data_controller_0..7, EventCode
		// 0x07 + 0x40 × channel, UMask 0x38, "Requests with Data (64B)":
		// reads and writes together.
		name: "Zen 3", vendor: perfevent.VendorAMD, family: 0x19,
		models: zen3Model,
		events: [numKinds][]tableEvent{kindDF: zen3DF()},
	},
	{
		// Zen 4: family 0x19, the other models (mapfile.csv
		// AuthenticAMD-25-[[:xdigit:]]+,amdzen4). amdzen4/
		// memory-controller.json: umc_cas_cmd.rd EventCode 0x0a RdWrMask
		// 0x1, umc_cas_cmd.wr RdWrMask 0x2; recommended.json's
		// umc_mem_read_bandwidth is umc_cas_cmd.rd * 64. Without UMC
		// PMUs, the data fabric's amdzen4/data-fabric.json
		// local_processor_read_data_beats_cs0..11 (EventCode 0x1f + 0x40
		// × CS, UMask 0x7fe) and _write_ (UMask 0x7ff), 64-byte beats.
		name: "Zen 4", vendor: perfevent.VendorAMD, family: 0x19,
		models: func(m int) bool { return !zen3Model(m) },
		events: [numKinds][]tableEvent{kindUMC: amdUMC(), kindDF: zen4DF()},
	},
	{
		// Zen 5: family 0x1a (mapfile.csv AuthenticAMD-26-[[:xdigit:]]+,
		// amdzen5). amdzen5/memory-controller.json: umc_cas_cmd.rd and
		// .wr as Zen 4's; recommended.json's umc_mem_read_bandwidth is
		// umc_cas_cmd.rd * 64.
		name: "Zen 5", vendor: perfevent.VendorAMD, family: 0x1a, models: func(int) bool { return true },
		events: [numKinds][]tableEvent{kindUMC: amdUMC()},
	},
}

// zen3Model is perf's mapfile.csv pattern for amdzen3 in family 0x19:
// a model of one hexadecimal digit, or of two whose first is 2, 4 or 5.
func zen3Model(m int) bool {
	switch m >> 4 {
	case 0, 2, 4, 5:
		return true
	}
	return false
}

func amdUMC() []tableEvent {
	return []tableEvent{
		{name: "umc_cas_cmd.rd", dir: semconv.HWDirectionRead, terms: []perfevent.Term{term("event", 0x0a), term("rdwrmask", 0x1)}, bytes: bytesPerCAS},
		{name: "umc_cas_cmd.wr", dir: semconv.HWDirectionWrite, terms: []perfevent.Term{term("event", 0x0a), term("rdwrmask", 0x2)}, bytes: bytesPerCAS},
	}
}

func zen3DF() []tableEvent {
	var evs []tableEvent
	for ch := range 8 {
		evs = append(evs, tableEvent{
			name: fmt.Sprintf("dram_channel_data_controller_%d", ch), channel: fmt.Sprintf("channel%d", ch),
			dir: semconv.HWDirectionTotal, terms: []perfevent.Term{term("event", 0x07+0x40*uint64(ch)), term("umask", 0x38)}, bytes: bytesPerCAS,
		})
	}
	return evs
}

func zen4DF() []tableEvent {
	var evs []tableEvent
	for cs := range 12 {
		code := 0x1f + 0x40*uint64(cs)
		evs = append(evs,
			tableEvent{
				name: fmt.Sprintf("local_processor_read_data_beats_cs%d", cs), channel: fmt.Sprintf("cs%d", cs),
				dir: semconv.HWDirectionRead, terms: []perfevent.Term{term("event", code), term("umask", 0x7fe)}, bytes: bytesPerCAS,
			},
			tableEvent{
				name: fmt.Sprintf("local_processor_write_data_beats_cs%d", cs), channel: fmt.Sprintf("cs%d", cs),
				dir: semconv.HWDirectionWrite, terms: []perfevent.Term{term("event", code), term("umask", 0x7ff)}, bytes: bytesPerCAS,
			})
	}
	return evs
}

// lookup returns the table's row for c, or nil.
func lookup(c perfevent.CPUID) *family {
	for i := range families {
		f := &families[i]
		vendor := c.Vendor
		if vendor == perfevent.VendorHygon {
			vendor = "" // Hygon's fabric is AMD's Zen 1: not in the table
		}
		if f.vendor == vendor && f.family == c.Family && f.models(c.Model) {
			return f
		}
	}
	return nil
}
