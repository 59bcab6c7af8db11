// Package intelsysfs reads what Intel's two GPU kernel drivers, i915 and
// xe, publish in sysfs: their DRM cards, the frequency files, the hwmon
// sensors by label, and the names of their perf PMUs.
//
// Every read goes through an fs.FS rooted where sysfs is mounted (as in
// package amdsysfs, whose bounded Reader it uses), so that a test serves
// any content and any error a driver's show callback can return. The
// parsers are pure functions over the bytes of one file.
//
// Where the files are, from the kernel's sources:
//
//   - i915 (drivers/gpu/drm/i915/gt/intel_gt_sysfs_pm.c): the card's
//     own directory, class/drm/cardN (not cardN/device), holds
//     gt_act_freq_mhz, the actual frequency (the largest over the GTs:
//     INTEL_GT_SYSFS_SHOW_MAX); cardN/gt/gtM/rps_act_freq_mhz holds each
//     GT's.
//   - xe (xe_tile_sysfs.c, xe_gt_sysfs.c, xe_gt_freq.c): the PCI
//     device's directory holds tile<T>/gt<G>/freq0/act_freq, in MHz.
//   - hwmon: i915_hwmon.c registers a device-wide hwmon named "i915"
//     (in0_input, power1_max, power1_rated_max, power1_crit, energy1_input,
//     curr1_crit; no temperature) and one per GT named "i915_gtN"
//     (energy1_input); xe_hwmon.c one named "xe" whose channels carry
//     labels: "card" (channel 1), "pkg" (channel 2) for power, energy,
//     current and voltage, and "pkg" (temp2) and "vram" (temp3) for
//     temperature (Documentation/ABI/testing/sysfs-driver-intel-xe-hwmon;
//     older xe releases had no labels and only energy1_input and
//     power1_max).
//   - PMUs (i915_pmu.c, xe_pmu.c): "i915" for an integrated i915 GPU,
//     "i915_<PCI address>" for a discrete one, "xe_<PCI address>", each
//     with the address's colons replaced by underscores (perf reserves
//     colons).
package intelsysfs

import (
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/xpuscope/xpuscope/internal/amdsysfs"
)

// DRMDir lists the DRM cards, relative to the sysfs root.
const DRMDir = amdsysfs.DRMDir

// The kernel drivers, as a card's uevent names them.
const (
	DriverI915 = "i915"
	DriverXe   = "xe"
)

// Card is a DRM card that i915 or xe drives.
type Card struct {
	Name string // card0
	// Dir is the card's own directory, class/drm/card0: i915's
	// frequency files.
	Dir string
	// Device is the card's PCI device directory, class/drm/card0/device:
	// xe's tiles and the hwmon directories.
	Device     string
	Driver     string // DriverI915 or DriverXe
	PCIAddress string // from uevent's PCI_SLOT_NAME: 0000:03:00.0
	PCIID      string // from uevent's PCI_ID: 8086:56A0
}

// Cards lists the i915 and xe cards, in PCI-address order. Connectors
// (card0-DP-1), render nodes and cards of other drivers are left out, as
// is a card whose uevent cannot be read. The error is that of listing
// class/drm itself.
func Cards(fsys fs.FS) ([]Card, error) {
	ents, err := fs.ReadDir(fsys, DRMDir)
	if err != nil {
		return nil, err
	}
	r := &amdsysfs.Reader{FS: fsys}
	var cards []Card
	for _, e := range ents {
		if !numbered(e.Name(), "card") {
			continue
		}
		dir := DRMDir + "/" + e.Name()
		b, err := r.Read(dir + "/device/uevent")
		if err != nil {
			continue
		}
		u := amdsysfs.ParseUevent(b)
		if (u.Driver != DriverI915 && u.Driver != DriverXe) || !amdsysfs.ValidPCIAddress(u.PCISlot) {
			continue
		}
		cards = append(cards, Card{Name: e.Name(), Dir: dir, Device: dir + "/device", Driver: u.Driver, PCIAddress: u.PCISlot, PCIID: u.PCIID})
	}
	slices.SortFunc(cards, func(a, b Card) int { return strings.Compare(a.PCIAddress, b.PCIAddress) })
	return slices.CompactFunc(cards, func(a, b Card) bool { return a.PCIAddress == b.PCIAddress }), nil
}

// numbered reports whether name is prefix followed by decimal digits.
func numbered(name, prefix string) bool {
	_, ok := number(name, prefix)
	return ok
}

// number returns the decimal number after prefix in name.
func number(name, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok || rest == "" || len(rest) > 6 {
		return 0, false
	}
	n := 0
	for _, c := range []byte(rest) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// numberedDirs lists the entries of dir named prefix<N>, in N order.
func numberedDirs(fsys fs.FS, dir, prefix string) []string {
	ents, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil
	}
	type entry struct {
		n    int
		name string
	}
	var out []entry
	for _, e := range ents {
		if n, ok := number(e.Name(), prefix); ok {
			out = append(out, entry{n, e.Name()})
		}
	}
	slices.SortFunc(out, func(a, b entry) int { return a.n - b.n })
	names := make([]string, len(out))
	for i, e := range out {
		names[i] = e.name
	}
	return names
}

// FreqFile is one GT's actual-frequency file.
type FreqFile struct {
	Tile, GT int // tile and GT numbers (i915: tile 0)
	Path     string
}

// ActFreqFiles returns the files that hold a card's actual GPU frequency in
// MHz. For i915 the card's gt_act_freq_mhz (the largest over its GTs,
// Tile and GT -1) where it exists, else each cardN/gt/gtM/rps_act_freq_mhz;
// for xe each tile<T>/gt<G>/freq0/act_freq of the PCI device.
func ActFreqFiles(fsys fs.FS, c Card) []FreqFile {
	var out []FreqFile
	switch c.Driver {
	case DriverI915:
		if exists(fsys, c.Dir+"/gt_act_freq_mhz") {
			return []FreqFile{{Tile: -1, GT: -1, Path: c.Dir + "/gt_act_freq_mhz"}}
		}
		for _, gt := range numberedDirs(fsys, c.Dir+"/gt", "gt") {
			n, _ := number(gt, "gt")
			p := c.Dir + "/gt/" + gt + "/rps_act_freq_mhz"
			if exists(fsys, p) {
				out = append(out, FreqFile{Tile: 0, GT: n, Path: p})
			}
		}
	case DriverXe:
		for _, tile := range numberedDirs(fsys, c.Device, "tile") {
			t, _ := number(tile, "tile")
			for _, gt := range numberedDirs(fsys, c.Device+"/"+tile, "gt") {
				g, _ := number(gt, "gt")
				p := c.Device + "/" + tile + "/" + gt + "/freq0/act_freq"
				if exists(fsys, p) {
					out = append(out, FreqFile{Tile: t, GT: g, Path: p})
				}
			}
		}
	}
	return out
}

// Tiles returns the tile numbers of an xe card (tile<T> directories); an
// i915 card is one tile as far as its files say.
func Tiles(fsys fs.FS, c Card) []int {
	if c.Driver != DriverXe {
		return []int{0}
	}
	var out []int
	for _, t := range numberedDirs(fsys, c.Device, "tile") {
		n, _ := number(t, "tile")
		out = append(out, n)
	}
	return out
}

// GTs returns the GT ids of a card: xe's tile<T>/gt<G> (G is the GT's id
// across tiles, as the PMU's gt field takes it), i915's gt/gt<M>.
func GTs(fsys fs.FS, c Card) []int {
	var out []int
	switch c.Driver {
	case DriverXe:
		for _, tile := range numberedDirs(fsys, c.Device, "tile") {
			for _, gt := range numberedDirs(fsys, c.Device+"/"+tile, "gt") {
				n, _ := number(gt, "gt")
				out = append(out, n)
			}
		}
	case DriverI915:
		for _, gt := range numberedDirs(fsys, c.Dir+"/gt", "gt") {
			n, _ := number(gt, "gt")
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func exists(fsys fs.FS, name string) bool {
	_, err := fs.Stat(fsys, name)
	return err == nil
}

// PMUName is the name of the perf PMU the card's driver registers: i915
// names an integrated GPU's "i915", a discrete one's i915_<address>; xe
// always xe_<address>; the address's colons replaced by underscores. An
// i915 GPU is discrete when sysfs has a PMU of that name, so both are
// returned for i915, the discrete form first.
func PMUName(c Card) []string {
	addr := strings.ReplaceAll(c.PCIAddress, ":", "_")
	switch c.Driver {
	case DriverI915:
		return []string{"i915_" + addr, "i915"}
	case DriverXe:
		return []string{"xe_" + addr}
	}
	return nil
}

// Hwmon is what a card's hwmon directories hold: the files of each
// reading, "" for one the card lacks.
type Hwmon struct {
	Dir string // the device-wide hwmon directory (name i915 or xe); ""
	// Energy is the card's cumulative energy in µJ: xe's channel labelled
	// "card", else "pkg"; an unlabelled energy1_input (i915, older xe).
	Energy string
	// PowerMax is the sustained power limit (PL1) in µW of the same
	// channel as Energy; 0 in it means the limit is disabled.
	PowerMax string
	// TempGPU and TempMemory are the package and VRAM temperatures in
	// m°C (xe's "pkg" and "vram" labels; i915 has none).
	TempGPU, TempMemory string
}

// maxChannels is how many channels of one sensor type are looked at; the
// drivers have at most three.
const maxChannels = 8

// FindHwmon finds the card's device-wide hwmon directory, named after its
// driver, and its files by label. Each label file is read once, here.
func FindHwmon(fsys fs.FS, c Card) Hwmon {
	var h Hwmon
	r := &amdsysfs.Reader{FS: fsys}
	for _, name := range numberedDirs(fsys, c.Device+"/hwmon", "hwmon") {
		dir := c.Device + "/hwmon/" + name
		b, err := r.Read(dir + "/name")
		if err != nil || amdsysfs.ParseString(b) != c.Driver {
			continue // i915_gtN: a GT's energy alone
		}
		h.Dir = dir
		break
	}
	if h.Dir == "" {
		return h
	}
	labels := func(kind string) map[string]int {
		out := map[string]int{}
		for n := 1; n <= maxChannels; n++ {
			b, err := r.Read(h.Dir + "/" + kind + strconv.Itoa(n) + "_label")
			if err != nil {
				continue
			}
			if l := ParseLabel(b); l != "" {
				if _, dup := out[l]; !dup {
					out[l] = n
				}
			}
		}
		return out
	}
	file := func(kind string, n int, attr string) string {
		p := h.Dir + "/" + kind + strconv.Itoa(n) + "_" + attr
		if exists(fsys, p) {
			return p
		}
		return ""
	}
	energy, power := labels("energy"), labels("power")
	for _, l := range []string{"card", "pkg"} {
		if n, ok := energy[l]; ok && h.Energy == "" {
			if h.Energy = file("energy", n, "input"); h.Energy != "" {
				if pn, ok := power[l]; ok {
					h.PowerMax = file("power", pn, "max")
				}
			}
		}
	}
	if h.Energy == "" && len(energy) == 0 {
		h.Energy = file("energy", 1, "input")
	}
	if h.PowerMax == "" && len(power) == 0 {
		h.PowerMax = file("power", 1, "max")
	}
	temps := labels("temp")
	if n, ok := temps["pkg"]; ok {
		h.TempGPU = file("temp", n, "input")
	}
	if n, ok := temps["vram"]; ok {
		h.TempMemory = file("temp", n, "input")
	}
	if len(temps) == 0 {
		h.TempGPU = file("temp", 1, "input")
	}
	return h
}

// ParseLabel returns a hwmon label's value ("card\n" → "card"): the first
// line, trimmed, at most a short word.
func ParseLabel(b []byte) string {
	s := amdsysfs.ParseString(b)
	if len(s) > 32 {
		return ""
	}
	return s
}

// EngineClass is an engine class of one of xe's GTs, as its sysfs names
// it: tile<T>/gt<G>/engines/<class> (xe_hw_engine_class_sysfs.c, whose
// names are xe_hw_engine_class_to_str's: rcs, bcs, vcs, vecs, ccs).
type EngineClass struct {
	GT    int
	Class string
}

// XeEngineClasses lists the engine classes of each GT of an xe card; nil
// for i915, whose PMU names its engines itself.
func XeEngineClasses(fsys fs.FS, c Card) []EngineClass {
	if c.Driver != DriverXe {
		return nil
	}
	var out []EngineClass
	for _, tile := range numberedDirs(fsys, c.Device, "tile") {
		for _, gt := range numberedDirs(fsys, c.Device+"/"+tile, "gt") {
			n, _ := number(gt, "gt")
			ents, err := fs.ReadDir(fsys, c.Device+"/"+tile+"/"+gt+"/engines")
			if err != nil {
				continue
			}
			for _, e := range ents {
				if e.IsDir() && len(e.Name()) <= 8 {
					out = append(out, EngineClass{GT: n, Class: e.Name()})
				}
			}
		}
	}
	return out
}
