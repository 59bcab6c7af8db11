// Package tpu finds Google TPUs and reads their runtime's metrics: the
// chips from sysfs (PCI vendor 0x1ae0), the processes holding them from
// /proc, and the figures of the TPU runtime's metrics service (libtpu's
// tpu.monitoring.runtime.RuntimeMetricService, package runtimepb), which
// exists only while a workload runs.
//
// The PCI device ids, the TensorCores per chip, the metric names and the
// ways libtpu numbers devices are those Google's tpu-info tool reads
// (cloud-accelerator-diagnostics, tpu_info/device.py and metrics.py).
package tpu

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// VendorID is Google's PCI vendor id.
const VendorID = "0x1ae0"

// PCIDevicesDir is where sysfs lists PCI functions, relative to its root.
const PCIDevicesDir = "bus/pci/devices"

// Chip is a TPU generation.
type Chip struct {
	Name string // v2, v3, v4, v5e, v5p, v6e, 7x
	// Cores is how many devices the runtime numbers on one chip: the
	// chip itself, or each of its TensorCores (v2, v3 and 7x, each a PCI
	// function of its own).
	Cores int
}

// ChipOf returns the generation of a PCI function of Google's, by its
// device id and, for v2 and v3 (which share one), its subsystem device
// id.
func ChipOf(device, subsystem string) (Chip, bool) {
	switch strings.ToLower(device) {
	case "0x0027":
		switch strings.ToLower(subsystem) {
		case "0x004e":
			return Chip{"v2", 2}, true
		case "0x004f":
			return Chip{"v3", 2}, true
		}
	case "0x005e":
		return Chip{"v4", 1}, true
	case "0x0063":
		return Chip{"v5e", 1}, true
	case "0x0062":
		return Chip{"v5p", 1}, true
	case "0x006f":
		return Chip{"v6e", 1}, true
	case "0x0076":
		return Chip{"7x", 2}, true
	}
	return Chip{}, false
}

// Device is one device the TPU runtime numbers: a chip, or one TensorCore
// of a chip of two.
type Device struct {
	// Ordinal is the device's number in the runtime's order: chips by the
	// number of their device file (/dev/accelN, or /dev/vfio/G for the
	// IOMMU group G), else by PCI address; the cores of a chip by PCI
	// function.
	Ordinal int
	// PCIAddress is the device's PCI function, in sysfs form.
	PCIAddress string
	Chip       Chip
	DeviceID   string // the PCI device id, 0x005e
	// File is the device file a process opens to use it, /dev/accelN or
	// /dev/vfio/G; "" when sysfs names none.
	File string
	key  int // the number of File, or -1
}

// Name is the device's product name: "TPU v5e", "TPU7x".
func (d Device) Name() string {
	if d.Chip.Name == "7x" {
		return "TPU7x"
	}
	return "TPU " + d.Chip.Name
}

// readTrim reads a small sysfs file.
func readTrim(fsys fs.FS, name string) (string, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// Discover lists the TPU devices in sysfs (fsys rooted where sysfs is
// mounted), in the runtime's order. No TPU is no error: the list is
// empty. A function whose identity cannot be read is skipped.
func Discover(fsys fs.FS) ([]Device, error) {
	entries, err := fs.ReadDir(fsys, PCIDevicesDir)
	if err != nil {
		return nil, fmt.Errorf("tpu: %w", err)
	}
	var out []Device
	for _, e := range entries {
		dir := path.Join(PCIDevicesDir, e.Name())
		vendor, err := readTrim(fsys, path.Join(dir, "vendor"))
		if err != nil || !strings.EqualFold(vendor, VendorID) {
			continue
		}
		device, err := readTrim(fsys, path.Join(dir, "device"))
		if err != nil {
			continue
		}
		sub, _ := readTrim(fsys, path.Join(dir, "subsystem_device"))
		chip, ok := ChipOf(device, sub)
		if !ok {
			continue
		}
		d := Device{PCIAddress: strings.ToLower(e.Name()), Chip: chip, DeviceID: strings.ToLower(device), key: -1}
		d.File, d.key = deviceFile(fsys, dir)
		out = append(out, d)
	}
	order(out)
	return out, nil
}

// deviceFile finds the device file of the function at dir: the accel
// class's accelN, else the IOMMU group the function is in (VFIO).
func deviceFile(fsys fs.FS, dir string) (string, int) {
	if entries, err := fs.ReadDir(fsys, path.Join(dir, "accel")); err == nil {
		for _, e := range entries {
			if n, ok := strings.CutPrefix(e.Name(), "accel"); ok {
				if i, err := strconv.Atoi(n); err == nil {
					return "/dev/" + e.Name(), i
				}
			}
		}
	}
	if target, err := fs.ReadLink(fsys, path.Join(dir, "iommu_group")); err == nil {
		g := path.Base(target)
		if i, err := strconv.Atoi(g); err == nil {
			return "/dev/vfio/" + g, i
		}
	}
	return "", -1
}

// chipAddress is a PCI function's chip: its address without the function
// (domain:bus:device).
func chipAddress(pci string) string {
	if i := strings.LastIndexByte(pci, '.'); i >= 0 {
		return pci[:i]
	}
	return pci
}

// order sorts devices as the runtime numbers them and sets their
// ordinals: chips by their first core's device file number (PCI address
// where there is none), cores within a chip by PCI address.
func order(ds []Device) {
	first := map[string]Device{} // a chip's core of lowest address
	for _, d := range ds {
		c := chipAddress(d.PCIAddress)
		if f, ok := first[c]; !ok || d.PCIAddress < f.PCIAddress {
			first[c] = d
		}
	}
	slices.SortFunc(ds, func(a, b Device) int {
		fa, fb := first[chipAddress(a.PCIAddress)], first[chipAddress(b.PCIAddress)]
		if fa.PCIAddress != fb.PCIAddress {
			if fa.key >= 0 && fb.key >= 0 && fa.key != fb.key {
				return cmp.Compare(fa.key, fb.key)
			}
			return strings.Compare(fa.PCIAddress, fb.PCIAddress)
		}
		return strings.Compare(a.PCIAddress, b.PCIAddress)
	})
	for i := range ds {
		ds[i].Ordinal = i
	}
}

// ErrNoTPU says sysfs lists no TPU.
var ErrNoTPU = errors.New("no PCI function of vendor " + VendorID + " with a TPU device id")
