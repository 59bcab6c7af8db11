package intelsysfs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/amdsysfs"
	"github.com/xpuscope/xpuscope/internal/amdsysfs/amdsysfstest"
	"github.com/xpuscope/xpuscope/internal/intelsysfs"
	"github.com/xpuscope/xpuscope/internal/intelsysfs/intelsysfstest"
)

func TestI915OneGPU(t *testing.T) {
	fsys := intelsysfstest.Load(t, "i915-one-gpu")
	cards, err := intelsysfs.Cards(fsys)
	require.NoError(t, err)
	require.Equal(t, []intelsysfs.Card{{
		Name: "card1", Dir: "class/drm/card1", Device: "class/drm/card1/device", Driver: "i915",
		PCIAddress: "0000:03:00.0", PCIID: "8086:56A0",
	}}, cards, "the BMC's ast card, the connector and the render node are left out")
	c := cards[0]

	assert.Equal(t, []intelsysfs.FreqFile{{Tile: -1, GT: -1, Path: "class/drm/card1/gt_act_freq_mhz"}}, intelsysfs.ActFreqFiles(fsys, c),
		"the card's own gt_act_freq_mhz, in cardN and not cardN/device")
	delete(fsys, "class/drm/card1/gt_act_freq_mhz")
	assert.Equal(t, []intelsysfs.FreqFile{{Tile: 0, GT: 0, Path: "class/drm/card1/gt/gt0/rps_act_freq_mhz"}}, intelsysfs.ActFreqFiles(fsys, c),
		"without it, each GT's rps_act_freq_mhz")
	assert.Equal(t, []int{0}, intelsysfs.GTs(fsys, c))
	assert.Equal(t, []int{0}, intelsysfs.Tiles(fsys, c))

	assert.Equal(t, intelsysfs.Hwmon{
		Dir:      "class/drm/card1/device/hwmon/hwmon3",
		Energy:   "class/drm/card1/device/hwmon/hwmon3/energy1_input",
		PowerMax: "class/drm/card1/device/hwmon/hwmon3/power1_max",
	}, intelsysfs.FindHwmon(fsys, c), "the device's hwmon (name i915), not the GT's (i915_gt0); i915 has no temperature")
	assert.Equal(t, []string{"i915_0000_03_00.0", "i915"}, intelsysfs.PMUName(c))
}

func TestXeOneGPU(t *testing.T) {
	fsys := intelsysfstest.Load(t, "xe-one-gpu")
	cards, err := intelsysfs.Cards(fsys)
	require.NoError(t, err)
	require.Len(t, cards, 1)
	c := cards[0]
	assert.Equal(t, "xe", c.Driver)
	assert.Equal(t, "8086:E20B", c.PCIID)
	assert.Equal(t, []intelsysfs.FreqFile{
		{Tile: 0, GT: 0, Path: "class/drm/card0/device/tile0/gt0/freq0/act_freq"},
		{Tile: 0, GT: 1, Path: "class/drm/card0/device/tile0/gt1/freq0/act_freq"},
	}, intelsysfs.ActFreqFiles(fsys, c))
	assert.Equal(t, []int{0, 1}, intelsysfs.GTs(fsys, c))
	assert.Equal(t, []int{0}, intelsysfs.Tiles(fsys, c))
	dir := "class/drm/card0/device/hwmon/hwmon2"
	assert.Equal(t, intelsysfs.Hwmon{
		Dir: dir, Energy: dir + "/energy1_input", PowerMax: dir + "/power1_max",
		TempGPU: dir + "/temp2_input", TempMemory: dir + "/temp3_input",
	}, intelsysfs.FindHwmon(fsys, c), "the card channel's energy and limit; temperatures by label")
	assert.Equal(t, []string{"xe_0000_03_00.0"}, intelsysfs.PMUName(c))
}

func TestEightGPUs(t *testing.T) {
	fsys := intelsysfstest.Load(t, "eight-gpus")
	cards, err := intelsysfs.Cards(fsys)
	require.NoError(t, err)
	var got []string
	for _, c := range cards {
		got = append(got, c.PCIAddress+"="+c.Name)
	}
	assert.Equal(t, []string{
		"0000:1b:00.0=card4", "0000:29:00.0=card0", "0000:3a:00.0=card1", "0000:4d:00.0=card5",
		"0000:8c:00.0=card6", "0000:9a:00.0=card2", "0000:ab:00.0=card3", "0000:cc:00.0=card7",
	}, got, "cards in PCI order, whatever their numbers")
	for _, c := range cards {
		h := intelsysfs.FindHwmon(fsys, c)
		assert.Equal(t, []int{0, 1}, intelsysfs.Tiles(fsys, c), c.Name)
		assert.Len(t, intelsysfs.ActFreqFiles(fsys, c), 2, c.Name)
		assert.Empty(t, h.TempGPU+h.TempMemory, "Ponte Vecchio's xe hwmon has no temperature")
		switch c.Name {
		case "card7":
			assert.Equal(t, intelsysfs.Hwmon{}, h, "no hwmon")
		case "card2":
			assert.Equal(t, h.Dir+"/energy1_input", h.Energy, "an older xe without labels: channel 1")
			assert.Equal(t, h.Dir+"/power1_max", h.PowerMax)
		default:
			assert.Equal(t, h.Dir+"/energy2_input", h.Energy, "the pkg channel, the only one")
			assert.Equal(t, h.Dir+"/power2_max", h.PowerMax)
		}
	}
}

// A real directory read through os.DirFS, as the Source does, with
// sysfs's symbolic links: class/drm/card0 points into /sys/devices.
func TestCardsThroughSymlinks(t *testing.T) {
	root := t.TempDir()
	dev := filepath.Join(root, "devices/pci0000:00/0000:00:02.0")
	require.NoError(t, os.MkdirAll(filepath.Join(dev, "drm/card0"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dev, "tile0/gt0/freq0"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dev, "tile0/gt0/freq0/act_freq"), []byte("1100\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dev, "uevent"), []byte("DRIVER=xe\nPCI_ID=8086:7D55\nPCI_SLOT_NAME=0000:00:02.0\n"), 0o644))
	require.NoError(t, os.Symlink("../../../0000:00:02.0", filepath.Join(dev, "drm/card0/device")))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "class/drm"), 0o755))
	require.NoError(t, os.Symlink("../../devices/pci0000:00/0000:00:02.0/drm/card0", filepath.Join(root, "class/drm/card0")))

	fsys := os.DirFS(root)
	cards, err := intelsysfs.Cards(fsys)
	require.NoError(t, err)
	require.Len(t, cards, 1)
	assert.Equal(t, "0000:00:02.0", cards[0].PCIAddress)
	assert.Equal(t, []intelsysfs.FreqFile{{Tile: 0, GT: 0, Path: "class/drm/card0/device/tile0/gt0/freq0/act_freq"}}, intelsysfs.ActFreqFiles(fsys, cards[0]))
}

func TestNoDRM(t *testing.T) {
	_, err := intelsysfs.Cards(fstest.MapFS{})
	assert.ErrorIs(t, err, fs.ErrNotExist)
	cards, err := intelsysfs.Cards(fstest.MapFS{"class/drm/card0/device/uevent": {Data: []byte("DRIVER=amdgpu\nPCI_SLOT_NAME=0000:03:00.0\n")}})
	assert.NoError(t, err)
	assert.Empty(t, cards, "an amdgpu card is not Intel's")
}

func TestParseLabel(t *testing.T) {
	assert.Equal(t, "pkg", intelsysfs.ParseLabel([]byte("pkg\n")))
	assert.Equal(t, "vram", intelsysfs.ParseLabel([]byte("  vram \nsecond line")))
	assert.Empty(t, intelsysfs.ParseLabel([]byte(strings.Repeat("x", 40))), "no label is that long")
}

// FuzzTree reads a whole sysfs tree, given as a txtar archive: whatever
// the files hold, discovery must return sane, bounded results, each path
// inside the card it belongs to.
func FuzzTree(f *testing.F) {
	for _, name := range []string{"i915-one-gpu", "xe-one-gpu", "eight-gpus"} {
		b, err := os.ReadFile(filepath.Join("testdata", name+".txtar"))
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte("-- class/drm/card0/device/uevent --\nDRIVER=xe\nPCI_SLOT_NAME=0000:03:00.0\n-- class/drm/card0/device/tile99999999/gt0/freq0/act_freq --\n1\n"))
	f.Fuzz(func(t *testing.T, archive []byte) {
		fsys := amdsysfstest.Parse(archive)
		cards, err := intelsysfs.Cards(fsys)
		if err != nil && cards != nil {
			require.Nil(t, cards, "Cards: %v", err)
		}
		for i, c := range cards {
			if !amdsysfs.ValidPCIAddress(c.PCIAddress) || (i > 0 && cards[i-1].PCIAddress >= c.PCIAddress) || (c.Driver != "i915" && c.Driver != "xe") {
				require.Fail(t, "cards not valid, sorted and unique", "%+v", cards)
			}
			for _, ff := range intelsysfs.ActFreqFiles(fsys, c) {
				if !strings.HasPrefix(ff.Path, c.Dir+"/") {
					require.Fail(t, "frequency file outside its card", "%q not in %q", ff.Path, c.Dir)
				}
			}
			h := intelsysfs.FindHwmon(fsys, c)
			for _, p := range []string{h.Energy, h.PowerMax, h.TempGPU, h.TempMemory} {
				if p != "" && !strings.HasPrefix(p, h.Dir+"/") {
					require.Fail(t, "hwmon file outside its directory", "%q not in %q", p, h.Dir)
				}
			}
			if len(intelsysfs.GTs(fsys, c)) > 1<<10 || len(intelsysfs.Tiles(fsys, c)) > 1<<10 {
				require.Fail(t, "too many GTs or tiles")
			}
			for _, ec := range intelsysfs.XeEngineClasses(fsys, c) {
				if c.Driver != intelsysfs.DriverXe || ec.Class == "" || len(ec.Class) > 8 || ec.GT < 0 {
					require.Fail(t, "engine class not of an xe card's GT", "%+v of %+v", ec, c)
				}
			}
		}
	})
}

func TestXeEngineClasses(t *testing.T) {
	fsys := intelsysfstest.Load(t, "xe-one-gpu")
	cards, err := intelsysfs.Cards(fsys)
	require.NoError(t, err)
	assert.Equal(t, []intelsysfs.EngineClass{{0, "bcs"}, {0, "ccs"}, {0, "rcs"}, {1, "vcs"}, {1, "vecs"}}, intelsysfs.XeEngineClasses(fsys, cards[0]),
		"the primary GT's render, copy and compute; the media GT's video engines")
	i915 := intelsysfstest.Load(t, "i915-one-gpu")
	cards, err = intelsysfs.Cards(i915)
	require.NoError(t, err)
	assert.Nil(t, intelsysfs.XeEngineClasses(i915, cards[0]))
}
