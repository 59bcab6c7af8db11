package perfevent_test

import (
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/perfevent"
	"github.com/xpuscope/xpuscope/internal/perfevent/perfeventtest"
	"github.com/xpuscope/xpuscope/internal/testutil"
)

// TestFixturePMUs: each machine's PMU descriptions, read from its sysfs
// tree, give the configs and scales the kernel's drivers define.
func TestFixturePMUs(t *testing.T) {
	type want struct {
		pmu, event string
		cpus       []int
		config     uint64
		bytes      float64 // 0: not a byte counter
	}
	for _, tc := range []struct {
		fixture string
		want    []want
	}{
		{"skx", []want{
			{"uncore_imc_0", "cas_count_read", []int{0, 28}, 0x0304, 64},
			{"uncore_imc_5", "cas_count_write", []int{0, 28}, 0x0c04, 64},
			{"uncore_imc_3", "clockticks", []int{0, 28}, 0x0000, 0},
		}},
		{"icx", []want{
			{"uncore_imc_11", "cas_count_read", []int{0, 40}, 0x0f04, 64},
			{"uncore_imc_0", "cas_count_write", []int{0, 40}, 0x3004, 64},
			{"uncore_imc_free_running_0", "read", []int{0, 40}, 0x20ff, 64},
			{"uncore_imc_free_running_3", "write", []int{0, 40}, 0x21ff, 64},
			{"uncore_imc_free_running_1", "dclk", []int{0, 40}, 0x10ff, 0},
		}},
		{"spr", []want{
			{"uncore_imc_7", "cas_count_read", []int{0, 56}, 0xcf05, 64},
			{"uncore_imc_0", "cas_count_write", []int{0, 56}, 0xf005, 64},
			// The same encoding as Ice Lake's read bytes, counting
			// cycles here: no unit, not bytes.
			{"uncore_imc_free_running_0", "rpq_cycles", []int{0, 56}, 0x20ff, 0},
		}},
		{"vm", []want{
			{"msr", "tsc", nil, 0, 0},
		}},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			tree := perfeventtest.Write(t, tc.fixture)
			fsys := os.DirFS(tree.Sys)
			for _, w := range tc.want {
				p, err := perfevent.ReadPMU(fsys, w.pmu)
				require.NoError(t, err, w.pmu)
				assert.Empty(t, p.Skipped, "%s: the kernel's own tree has nothing to skip", w.pmu)
				assert.Equal(t, w.cpus, p.CPUs, "%s cpumask", w.pmu)
				ev, ok := p.Events[w.event]
				require.True(t, ok, "%s has %s", w.pmu, w.event)
				c, err := p.Encode(ev.Terms)
				require.NoError(t, err)
				assert.Equal(t, w.config, c[perfevent.Config], "%s/%s: got %#x", w.pmu, w.event, c[perfevent.Config])
				b, err := ev.BytesPerCount()
				if w.bytes == 0 {
					assert.Error(t, err, "%s/%s is not a byte counter", w.pmu, w.event)
				} else {
					require.NoError(t, err)
					assert.Equal(t, w.bytes, b, "%s/%s bytes a count", w.pmu, w.event)
				}
			}
		})
	}
}

// TestFixtureFormatsOnly: the AMD PMUs have formats and no events; their
// formats place the events perf's JSON gives.
func TestFixtureFormatsOnly(t *testing.T) {
	tree := perfeventtest.Write(t, "zen4")
	fsys := os.DirFS(tree.Sys)
	umc, err := perfevent.ReadPMU(fsys, "amd_umc_13")
	require.NoError(t, err)
	assert.Empty(t, umc.Events)
	assert.Equal(t, []int{96}, umc.CPUs)
	assert.Equal(t, uint32(26), umc.Type)
	c, err := umc.Encode([]perfevent.Term{{Name: "event", Value: 0x0a}, {Name: "rdwrmask", Value: 2}})
	require.NoError(t, err)
	assert.Equal(t, uint64(0x20a), c[perfevent.Config], "umc_cas_cmd.wr")

	df, err := perfevent.ReadPMU(fsys, "amd_df")
	require.NoError(t, err)
	c, err = df.Encode([]perfevent.Term{{Name: "event", Value: 0x2df}, {Name: "umask", Value: 0x7fe}})
	require.NoError(t, err)
	assert.Equal(t, uint64(0xdf|0xfe00|0x7<<24|2<<32), c[perfevent.Config], "local_processor_read_data_beats_cs11: got %#x", c[perfevent.Config])

	zen3 := perfeventtest.Write(t, "zen3")
	df, err = perfevent.ReadPMU(os.DirFS(zen3.Sys), "amd_df")
	require.NoError(t, err)
	c, err = df.Encode([]perfevent.Term{{Name: "event", Value: 0x1c7}, {Name: "umask", Value: 0x38}})
	require.NoError(t, err)
	assert.Equal(t, uint64(0xc7|0x3800|1<<32), c[perfevent.Config], "dram_channel_data_controller_7: got %#x", c[perfevent.Config])
}

// TestMalformed: every broken entry is skipped and listed, the rest read.
func TestMalformed(t *testing.T) {
	tree := perfeventtest.Write(t, "malformed")
	fsys := os.DirFS(tree.Sys)
	names, err := perfevent.ListPMUs(fsys)
	require.NoError(t, err)
	assert.Equal(t, []string{"uncore_imc_0", "uncore_imc_1", "uncore_imc_2", "uncore_imc_3", "uncore_imc_4", "uncore_imc_5"}, names)

	skipped := map[string][]string{}
	for _, n := range names {
		p, err := perfevent.ReadPMU(fsys, n)
		if n == "uncore_imc_5" {
			assert.ErrorContains(t, err, "type", "a PMU without a type cannot be opened")
			continue
		}
		require.NoError(t, err, n)
		for _, s := range p.Skipped {
			skipped[n] = append(skipped[n], s.Path)
		}
		switch n {
		case "uncore_imc_1":
			_, ok := p.Formats["event"]
			assert.False(t, ok, "a format past bit 63 is not kept")
			_, err := p.Encode(p.Events["cas_count_read"].Terms)
			assert.ErrorContains(t, err, "no format field", "so its events cannot be encoded")
		case "uncore_imc_2":
			assert.NotContains(t, p.Events, "cas_count_read")
			assert.Contains(t, p.Events, "cas_count_write")
		case "uncore_imc_3":
			assert.NotContains(t, p.Events, "cas_count_write", "an unreadable scale drops its event")
		case "uncore_imc_4":
			_, err := p.Events["cas_count_write"].BytesPerCount()
			assert.ErrorContains(t, err, "not a unit of bytes")
		}
	}
	assert.Equal(t, map[string][]string{
		"uncore_imc_0": {"bus/event_source/devices/uncore_imc_0/events/cas_count_all.unit"},
		"uncore_imc_1": {"bus/event_source/devices/uncore_imc_1/format/event"},
		"uncore_imc_2": {"bus/event_source/devices/uncore_imc_2/events/cas_count_read", "bus/event_source/devices/uncore_imc_2/events/cas_count_read.scale", "bus/event_source/devices/uncore_imc_2/events/cas_count_read.unit"},
		"uncore_imc_3": {"bus/event_source/devices/uncore_imc_3/events/cas_count_write.scale", "bus/event_source/devices/uncore_imc_3/events/cas_count_write.unit"},
	}, skipped)
}

func TestReadCPUInfo(t *testing.T) {
	for fixture, want := range map[string]perfevent.CPUID{
		"skx":  {Vendor: perfevent.VendorIntel, Family: 6, Model: 0x55, Stepping: 4},
		"spr":  {Vendor: perfevent.VendorIntel, Family: 6, Model: 0x8f, Stepping: 8},
		"zen4": {Vendor: perfevent.VendorAMD, Family: 0x19, Model: 0x11, Stepping: 1},
		"vm":   {Vendor: perfevent.VendorAMD, Family: 0x1a, Model: 2, Stepping: 1, Hypervisor: true},
	} {
		tree := perfeventtest.Write(t, fixture)
		got, err := perfevent.ReadCPUInfo(os.DirFS(tree.Proc))
		require.NoError(t, err, fixture)
		assert.Equal(t, want, got, fixture)
	}
	_, err := perfevent.ReadCPUInfo(os.DirFS(t.TempDir()))
	assert.Error(t, err)
}

func TestSocket(t *testing.T) {
	tree := perfeventtest.Write(t, "zen4")
	fsys := os.DirFS(tree.Sys)
	s, err := perfevent.Socket(fsys, 96)
	require.NoError(t, err)
	assert.Equal(t, 1, s)
	_, err = perfevent.Socket(fsys, 5)
	assert.Error(t, err, "no topology for CPU 5 in the tree")
}

// TestHostSysfs reads this machine's own PMUs: whatever it has, each has
// a type, and ListPMUs is sorted.
func TestHostSysfs(t *testing.T) {
	fsys := os.DirFS("/sys")
	names, err := perfevent.ListPMUs(fsys)
	if err != nil {
		testutil.SkipOrFail(t, "no perf event sources here (a kernel without CONFIG_PERF_EVENTS): %v", err)
	}
	require.Contains(t, names, "software", "every kernel with perf events has the software PMU")
	assert.True(t, slices.IsSorted(names))
	for _, n := range names {
		p, err := perfevent.ReadPMU(fsys, n)
		require.NoError(t, err, n)
		assert.Empty(t, p.Skipped, "%s: the host's own tree has nothing to skip", n)
	}
}
