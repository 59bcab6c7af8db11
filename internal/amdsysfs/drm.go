package amdsysfs

import (
	"bytes"
	"io/fs"
	"slices"
	"strings"
)

// DRMDir lists the DRM cards, relative to the sysfs root.
const DRMDir = "class/drm"

// Card is a DRM card that the amdgpu driver drives.
type Card struct {
	Name string // card0
	// Device is the card's PCI device directory, class/drm/card0/device,
	// where amdgpu publishes gpu_busy_percent, mem_info_vram_used, ….
	Device     string
	PCIAddress string // from uevent's PCI_SLOT_NAME: 0000:03:00.0
	PCIID      string // from uevent's PCI_ID: 1002:740F
	// Hwmon is the card's hwmon directory,
	// class/drm/card0/device/hwmon/hwmon2; "" when it has none.
	Hwmon string
}

// Cards lists the amdgpu cards, in PCI-address order. Connectors
// (card0-DP-1), render nodes and cards of other drivers are left out, as
// is a card whose uevent cannot be read. The error is that of listing
// class/drm itself.
func Cards(fsys fs.FS) ([]Card, error) {
	ents, err := fs.ReadDir(fsys, DRMDir)
	if err != nil {
		return nil, err
	}
	r := &Reader{FS: fsys}
	var cards []Card
	for _, e := range ents {
		if !isNumbered(e.Name(), "card") {
			continue
		}
		dev := DRMDir + "/" + e.Name() + "/device"
		b, err := r.Read(dev + "/uevent")
		if err != nil {
			continue
		}
		u := ParseUevent(b)
		if u.Driver != "amdgpu" || !ValidPCIAddress(u.PCISlot) {
			continue
		}
		cards = append(cards, Card{Name: e.Name(), Device: dev, PCIAddress: u.PCISlot, PCIID: u.PCIID, Hwmon: hwmonDir(fsys, dev)})
	}
	slices.SortFunc(cards, func(a, b Card) int { return strings.Compare(a.PCIAddress, b.PCIAddress) })
	// Two cards of one PCI function would be one GPU counted twice.
	return slices.CompactFunc(cards, func(a, b Card) bool { return a.PCIAddress == b.PCIAddress }), nil
}

// isNumbered reports whether name is prefix followed by decimal digits.
func isNumbered(name, prefix string) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok || rest == "" {
		return false
	}
	for _, c := range []byte(rest) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// hwmonDir returns the first hwmonN directory of a device, or "".
func hwmonDir(fsys fs.FS, dev string) string {
	ents, err := fs.ReadDir(fsys, dev+"/hwmon")
	if err != nil {
		return ""
	}
	for _, e := range ents {
		if isNumbered(e.Name(), "hwmon") {
			return dev + "/hwmon/" + e.Name()
		}
	}
	return ""
}

// Uevent is what amdsysfs uses of a PCI device's uevent file.
type Uevent struct {
	Driver  string // DRIVER
	PCIID   string // PCI_ID
	PCISlot string // PCI_SLOT_NAME
}

// ParseUevent parses KEY=VALUE lines. Unknown keys and lines without "="
// are ignored; values are cut as ParseString cuts them.
func ParseUevent(b []byte) Uevent {
	var u Uevent
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		k, v, ok := bytes.Cut(line, []byte{'='})
		if !ok {
			continue
		}
		switch string(k) {
		case "DRIVER":
			u.Driver = ParseString(v)
		case "PCI_ID":
			u.PCIID = ParseString(v)
		case "PCI_SLOT_NAME":
			u.PCISlot = ParseString(v)
		}
	}
	return u
}

// TempSensor is one of amdgpu's temperature sensors.
type TempSensor int

// The sensors, by their hwmon labels.
const (
	TempEdge     TempSensor = iota // "edge"
	TempJunction                   // "junction": the hotspot
	TempMemory                     // "mem": VRAM
	NumTempSensors
)

// ParseTempLabel maps a tempN_label's content to its sensor.
func ParseTempLabel(b []byte) (TempSensor, bool) {
	switch ParseString(b) {
	case "edge":
		return TempEdge, true
	case "junction":
		return TempJunction, true
	case "mem":
		return TempMemory, true
	}
	return 0, false
}

// maxTempInputs is how many tempN_input files of a hwmon are looked at;
// amdgpu has at most three.
const maxTempInputs = 8

// TempInputs returns the tempN_input file of each sensor of the hwmon
// directory, as its tempN_label names it; "" for a sensor it lacks. When
// there are no labels at all (kernels before 4.20), temp1 is the edge
// sensor.
func TempInputs(fsys fs.FS, hwmon string) [NumTempSensors]string {
	var in [NumTempSensors]string
	if hwmon == "" {
		return in
	}
	r := &Reader{FS: fsys}
	labelled := false
	for n := 1; n <= maxTempInputs; n++ {
		prefix := hwmon + "/temp" + string(rune('0'+n))
		b, err := r.Read(prefix + "_label")
		if err != nil {
			continue
		}
		labelled = true
		if s, ok := ParseTempLabel(b); ok && in[s] == "" {
			in[s] = prefix + "_input"
		}
	}
	if !labelled {
		if f, err := fsys.Open(hwmon + "/temp1_input"); err == nil {
			f.Close()
			in[TempEdge] = hwmon + "/temp1_input"
		}
	}
	return in
}
