package pmu

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xpuscope/xpuscope/internal/perfevent"
)

// TestLookup: CPUID to the table's row, by perf's mapfile.csv patterns.
func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		vendor        string
		family, model int
		want          string
	}{
		{perfevent.VendorIntel, 6, 0x55, "Skylake-SP"},
		{perfevent.VendorIntel, 6, 0x6a, "Ice Lake-SP"},
		{perfevent.VendorIntel, 6, 0x6c, "Ice Lake-SP"},
		{perfevent.VendorIntel, 6, 0x8f, "Sapphire Rapids"},
		{perfevent.VendorIntel, 6, 0xcf, "Sapphire Rapids"},
		{perfevent.VendorIntel, 6, 0xad, ""}, // Granite Rapids: not in the table
		{perfevent.VendorIntel, 6, 0x9e, ""}, // a client part
		{perfevent.VendorAMD, 0x19, 0x01, "Zen 3"},
		{perfevent.VendorAMD, 0x19, 0x21, "Zen 3"},
		{perfevent.VendorAMD, 0x19, 0x44, "Zen 3"},
		{perfevent.VendorAMD, 0x19, 0x5f, "Zen 3"},
		{perfevent.VendorAMD, 0x19, 0x11, "Zen 4"},
		{perfevent.VendorAMD, 0x19, 0x30, "Zen 4"}, // [245] leaves 0x3x to amdzen4
		{perfevent.VendorAMD, 0x19, 0x61, "Zen 4"},
		{perfevent.VendorAMD, 0x19, 0xa0, "Zen 4"},
		{perfevent.VendorAMD, 0x1a, 0x02, "Zen 5"},
		{perfevent.VendorAMD, 0x17, 0x31, ""}, // Zen 2: not in the table
		{perfevent.VendorHygon, 0x18, 0x01, ""},
	} {
		f := lookup(perfevent.CPUID{Vendor: tc.vendor, Family: tc.family, Model: tc.model})
		got := ""
		if f != nil {
			got = f.name
		}
		assert.Equal(t, tc.want, got, "%s family %#x model %#x", tc.vendor, tc.family, tc.model)
	}
}

// TestTablePinned pins every encoding of the table to its source's
// value, so that none changes unnoticed.
func TestTablePinned(t *testing.T) {
	pin := map[string][]string{
		"Skylake-SP": {
			"Intel IMC channel counters cas_count_read read event=0x4,umask=0x3 64",
			"Intel IMC channel counters cas_count_write write event=0x4,umask=0xc 64",
		},
		"Ice Lake-SP": {
			"Intel IMC free-running counters read read event=0xff,umask=0x20 64",
			"Intel IMC free-running counters write write event=0xff,umask=0x21 64",
			"Intel IMC channel counters cas_count_read read event=0x4,umask=0xf 64",
			"Intel IMC channel counters cas_count_write write event=0x4,umask=0x30 64",
		},
		"Sapphire Rapids": {
			"Intel IMC channel counters cas_count_read read event=0x5,umask=0xcf 64",
			"Intel IMC channel counters cas_count_write write event=0x5,umask=0xf0 64",
		},
		"Zen 5": {
			"AMD UMC counters umc_cas_cmd.rd read event=0xa,rdwrmask=0x1 64",
			"AMD UMC counters umc_cas_cmd.wr write event=0xa,rdwrmask=0x2 64",
		},
	}
	for ch, code := range []uint64{0x07, 0x47, 0x87, 0xc7, 0x107, 0x147, 0x187, 0x1c7} {
		pin["Zen 3"] = append(pin["Zen 3"], fmt.Sprintf("AMD data fabric counters dram_channel_data_controller_%d total event=%#x,umask=0x38 64", ch, code))
	}
	pin["Zen 4"] = append(pin["Zen 4"], pin["Zen 5"]...)
	for cs, code := range []uint64{0x1f, 0x5f, 0x9f, 0xdf, 0x11f, 0x15f, 0x19f, 0x1df, 0x21f, 0x25f, 0x29f, 0x2df} {
		pin["Zen 4"] = append(pin["Zen 4"],
			fmt.Sprintf("AMD data fabric counters local_processor_read_data_beats_cs%d read event=%#x,umask=0x7fe 64", cs, code),
			fmt.Sprintf("AMD data fabric counters local_processor_write_data_beats_cs%d write event=%#x,umask=0x7ff 64", cs, code))
	}
	got := map[string][]string{}
	for _, f := range families {
		for k := range numKinds {
			for _, e := range f.events[k] {
				got[f.name] = append(got[f.name], fmt.Sprintf("%s %s %s %s %v", k, e.name, e.dir, perfevent.FormatTerms(e.terms), e.bytes))
			}
		}
	}
	for name := range pin {
		assert.ElementsMatch(t, pin[name], got[name], name)
	}
	assert.Len(t, got, len(pin), "every row is pinned")
}
