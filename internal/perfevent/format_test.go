package perfevent

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseFormat: the format strings the kernel's uncore drivers write,
// and the ways one can be wrong.
func TestParseFormat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Format
		err  string
	}{
		{in: "config:0-7\n", want: Format{Config, 0xff}},
		{in: "config:18", want: Format{Config, 1 << 18}},
		{in: "config1:0-63", want: Format{Config1, ^uint64(0)}},
		{in: "config2:5", want: Format{Config2, 1 << 5}},
		// AMD DF before PerfMonV2: arch/x86/events/amd/uncore.c event14.
		{in: "config:0-7,32-35,59-60", want: Format{Config, 0xff | 0xf<<32 | 3<<59}},
		// Sapphire Rapids' umask_ext4.
		{in: "config:8-15,32-55", want: Format{Config, 0xff00 | 0xffffff<<32}},
		// The ranges in any order: the bits decide.
		{in: "config:32-35,0-7", want: Format{Config, 0xff | 0xf<<32}},
		{in: "config:0-7,4", err: "overlaps"},
		{in: "config:7-0", err: "backwards"},
		{in: "config:0-64", err: "not 0 to 63"},
		{in: "config:-1", err: "not 0 to 63"},
		{in: "config4:0", err: "names no configuration word"},
		{in: "config", err: "no ':'"},
		{in: "config:", err: "no bits"},
		{in: "config:0,,1", err: "not 0 to 63"},
		{in: "config:a-b", err: "not 0 to 63"},
	} {
		got, err := ParseFormat(tc.in)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, "%q", tc.in)
			continue
		}
		require.NoError(t, err, "%q", tc.in)
		assert.Equal(t, tc.want, got, "%q", tc.in)
	}
}

// TestPlace: a value's bits go to the field's bits from the lowest up,
// across ranges, and a value too wide for its field is refused.
func TestPlace(t *testing.T) {
	must := func(s string) Format {
		f, err := ParseFormat(s)
		require.NoError(t, err)
		return f
	}
	for _, tc := range []struct {
		format string
		v      uint64
		want   uint64
	}{
		{"config:0-7", 0x04, 0x04},
		{"config:8-15", 0x03, 0x0300},
		{"config:18", 1, 1 << 18},
		// Zen 3's dram_channel_data_controller_4, event 0x107: the low
		// eight bits in 0-7, the ninth in 32.
		{"config:0-7,32-35,59-60", 0x107, 0x07 | 1<<32},
		// Twelve bits fill 0-7 and 32-35; bit 12 lands in 59.
		{"config:0-7,32-35,59-60", 0x1fff, 0xff | 0xf<<32 | 1<<59},
		// Zen 4's local_processor_read_data_beats_cs11, event 0x2df.
		{"config:0-7,32-37", 0x2df, 0xdf | 2<<32},
		// Zen 4's data-beat umask 0x7fe through umask12.
		{"config:8-15,24-27", 0x7fe, 0xfe00 | 0x7<<24},
		{"config:0-63", ^uint64(0), ^uint64(0)},
	} {
		f := must(tc.format)
		got, err := f.Place(tc.v)
		require.NoError(t, err, "%s %#x", tc.format, tc.v)
		assert.Equal(t, tc.want, got, "%s %#x: got %#x", tc.format, tc.v, got)
		assert.Equal(t, tc.v, f.Extract(got), "%s: Extract undoes Place", tc.format)
	}
	_, err := must("config:0-7").Place(0x100)
	assert.True(t, errors.Is(err, ErrTooWide), "0x100 in 8 bits: %v", err)
	_, err = must("config:18").Place(2)
	assert.True(t, errors.Is(err, ErrTooWide), "2 in one bit: %v", err)
}

// TestFormatString: what ParseFormat reads, String writes back.
func TestFormatString(t *testing.T) {
	for _, s := range []string{"config:0-7", "config:18", "config1:0-63", "config:0-7,32-35,59-60", "config2:1,3,5-6"} {
		f, err := ParseFormat(s)
		require.NoError(t, err)
		assert.Equal(t, s, f.String())
	}
}
