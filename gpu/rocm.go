package gpu

import (
	"errors"
	"fmt"
	"strings"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/amdsysfs"
	"github.com/xpuscope/xpuscope/internal/rocmsmi"
	"github.com/xpuscope/xpuscope/semconv"
)

// The ROCm SMI backend: AMD GPUs through librocm_smi64.so.1, bound with
// purego (package internal/rocmsmi).
//
// ROCm SMI writes to the process's stderr itself (std::cerr, perror): on
// a node without /sys/class/drm, rsmi_init prints "Failed to open drm
// root directory /sys/class/drm.: No such file or directory" and
// "Exception caught: rsmi_init.". The Source does not redirect file
// descriptor 2 around the call: fd 2 belongs to the whole process, and
// every other goroutine's (and C thread's) output would be lost or
// misdirected meanwhile. Instead it loads ROCm SMI only when sysfs shows an
// amdgpu card (amdCards), so that nodes without an AMD GPU, NVIDIA nodes
// among them, never load the library and print nothing.

type rocmBackend struct {
	s       *Source
	lib     *rocmsmi.Lib
	devices []*amdDevice
	kfd     *kfd
	freq    rocmsmi.Frequencies // scratch for the clock reads
}

// rocmOptional maps the optional functions to the metrics lost without
// them. (rsmi_dev_current_socket_power_get is not here: without it
// hw.power is the average; rsmi_dev_fan_speed_max_get neither: the
// maximum is then RSMI_MAX_FAN_SPEED.)
var rocmOptional = []struct {
	sym     string
	metrics []semconv.Metric
}{
	{rocmsmi.SymBusyPercent, []semconv.Metric{semconv.HWGPUUtilization}},
	{rocmsmi.SymMemoryBusyPercent, []semconv.Metric{semconv.GPUMemoryControllerUtilization}},
	{rocmsmi.SymMemoryUsage, []semconv.Metric{semconv.HWGPUMemoryUsage, semconv.HWGPUMemoryLimit, semconv.HWGPUMemoryUtilization, semconv.GPUMemoryFree}},
	{rocmsmi.SymMemoryTotal, []semconv.Metric{semconv.HWGPUMemoryUsage, semconv.HWGPUMemoryLimit, semconv.HWGPUMemoryUtilization, semconv.GPUMemoryFree}},
	{rocmsmi.SymTempMetric, []semconv.Metric{semconv.HWTemperature}},
	{rocmsmi.SymPowerAve, []semconv.Metric{semconv.GPUPowerAverage}},
	{rocmsmi.SymPowerCap, []semconv.Metric{semconv.GPUPowerLimit}},
	{rocmsmi.SymEnergyCount, []semconv.Metric{semconv.HWEnergy}},
	{rocmsmi.SymFanSpeed, []semconv.Metric{semconv.GPUFanSpeed}},
	{rocmsmi.SymGPUClkFreq, []semconv.Metric{semconv.GPUClockFrequency}},
	{rocmsmi.SymECCCount, []semconv.Metric{semconv.HWErrors}},
}

// maxFanSpeed is RSMI_MAX_FAN_SPEED, the scale of rsmi_dev_fan_speed_get.
const maxFanSpeed = 255

// openROCmSMI loads ROCm SMI, initialises it and finds the AMD GPUs.
func openROCmSMI(s *Source) (backend, error) {
	cards, err := amdCards(s)
	if err != nil {
		return nil, err
	}
	path := s.cfg.rocmPath
	lib, err := rocmsmi.Open(path)
	if err != nil {
		return nil, xpuscope.Unavailablef("gpu: %v", err)
	}
	if st := lib.Init(); st != rocmsmi.StatusSuccess {
		err := lib.Err("rsmi_init", st)
		_ = lib.Close()
		return nil, xpuscope.Unavailablef("gpu: ROCm SMI %s: %v", path, err)
	}
	b := &rocmBackend{s: s, lib: lib}
	if err := b.discover(cards); err != nil {
		_ = b.close()
		return nil, err
	}
	for _, o := range rocmOptional {
		if !lib.Has(o.sym) {
			for _, m := range o.metrics {
				s.missing = append(s.missing, newOpts(semconv.XpuscopeSymbol.String(o.sym), semconv.XpuscopeMetricName.String(m.Name)))
			}
		}
	}
	if !lib.Has(rocmsmi.SymPowerAve) && !lib.Has(rocmsmi.SymCurrentSocketPower) {
		s.missing = append(s.missing, newOpts(semconv.XpuscopeSymbol.String(rocmsmi.SymCurrentSocketPower), semconv.XpuscopeMetricName.String(semconv.HWPower.Name)))
	}
	if s.cfg.amdPCIe && !lib.Has(rocmsmi.SymPCIThroughput) {
		s.missing = append(s.missing, newOpts(semconv.XpuscopeSymbol.String(rocmsmi.SymPCIThroughput), semconv.XpuscopeMetricName.String(semconv.HWGPUIO.Name)))
	}
	b.kfd = newKFD(s.cfg.sysfs, b.devices)
	for _, d := range b.devices {
		s.devices = append(s.devices, d.device)
	}
	return b, nil
}

// discover enumerates the GPUs ROCm SMI monitors. A GPU whose PCI address
// cannot be read is left out; none at all is unavailable. A GPU without a
// name is named after its card's PCI ids, as the sysfs backend names it.
func (b *rocmBackend) discover(cards []amdsysfs.Card) error {
	lib := b.lib
	n, st := lib.NumDevices()
	if st != rocmsmi.StatusSuccess {
		return fmt.Errorf("gpu: ROCm SMI %s: %w", lib.Path(), lib.Err("rsmi_num_monitor_devices", st))
	}
	if n == 0 {
		return xpuscope.Unavailablef("gpu: ROCm SMI %s found no AMD GPU", lib.Path())
	}
	driver, st := lib.DriverVersion()
	if st != rocmsmi.StatusSuccess || driver == "" {
		driver = amdDriverVersion(b.s.cfg.sysfs, b.s.cfg.procRoot)
	}
	var failed []string
	for i := range n {
		bdf, st := lib.PCIID(i)
		if st != rocmsmi.StatusSuccess {
			failed = append(failed, fmt.Sprintf("GPU %d: %v", i, lib.Err("rsmi_dev_pci_id_get", st)))
			continue
		}
		pci := rocmsmi.PCIAddress(bdf)
		name, st := lib.Name(i)
		if st != rocmsmi.StatusSuccess || name == "" {
			name = fallbackName(cards, pci)
		}
		uid, st := lib.UniqueID(i)
		info := Device{Index: int(i), UUID: amdID(uid, st == rocmsmi.StatusSuccess, pci), Name: name, PCIAddress: pci}
		d := newAMDDevice(info, driver)
		d.index = i
		b.devices = append(b.devices, d)
	}
	if len(b.devices) == 0 {
		return xpuscope.Unavailablef("gpu: none of %d AMD GPUs could be identified through ROCm SMI %s: %s",
			n, lib.Path(), strings.Join(failed, "; "))
	}
	return nil
}

// fallbackName names a GPU that ROCm SMI gives no name after its card's
// PCI ids.
func fallbackName(cards []amdsysfs.Card, pci string) string {
	for _, c := range cards {
		if c.PCIAddress == pci {
			return amdName(c)
		}
	}
	return "AMD GPU"
}

func (b *rocmBackend) poll(sn *snapshot) { b.s.pollAMD(sn, b.devices, b.kfd, b.read) }

func (b *rocmBackend) close() error {
	var errs []error
	if st := b.lib.Shutdown(); st != rocmsmi.StatusSuccess {
		errs = append(errs, fmt.Errorf("gpu: %w", b.lib.Err("rsmi_shut_down", st)))
	}
	if err := b.lib.Close(); err != nil {
		errs = append(errs, fmt.Errorf("gpu: %w", err))
	}
	return errors.Join(errs...)
}

// ok records the outcome of read r on d: success is true; NOT_SUPPORTED
// (or a function the library lacks) retires the read; anything else is a
// counted error.
func (b *rocmBackend) ok(d *amdDevice, r amdRead, st rocmsmi.Status) bool {
	switch st {
	case rocmsmi.StatusSuccess:
		return true
	case rocmsmi.StatusNotSupported, rocmsmi.StatusNoSymbol:
		d.retire(r)
	default:
		b.s.errors.addNamed(d.UUID, amdReadNames[r], st.String())
	}
	return false
}

var rocmTemps = [...]struct {
	read   amdRead
	sensor rocmsmi.TempSensor
	field  field
}{
	{amdTempEdge, rocmsmi.TempEdge, fTemperature},
	{amdTempJunction, rocmsmi.TempJunction, fTempJunction},
	{amdTempMemory, rocmsmi.TempMemory, fTempMemory},
}

const micro = 1e-6

func (b *rocmBackend) read(d *amdDevice, sm *sample) {
	lib, i := b.lib, d.index
	if d.can(amdUtilization) {
		v, st := lib.BusyPercent(i)
		if b.ok(d, amdUtilization, st) && b.s.percentOK(d, amdUtilization, uint64(v)) {
			sm.util, sm.have = float64(v)*percent, sm.have|fUtil
		}
	}
	if d.can(amdMemoryBusy) {
		v, st := lib.MemoryBusyPercent(i)
		if b.ok(d, amdMemoryBusy, st) && b.s.percentOK(d, amdMemoryBusy, uint64(v)) {
			sm.memCtrl, sm.have = float64(v)*percent, sm.have|fMemCtrl
		}
	}
	if d.can(amdMemory) {
		used, st := lib.MemoryUsage(i, rocmsmi.MemVRAM)
		if b.ok(d, amdMemory, st) {
			total, st := lib.MemoryTotal(i, rocmsmi.MemVRAM)
			if b.ok(d, amdMemory, st) {
				setMemory(sm, used, total)
			}
		}
	}
	for _, t := range rocmTemps {
		if d.can(t.read) {
			v, st := lib.Temperature(i, t.sensor)
			if b.ok(d, t.read, st) {
				setTemperature(sm, t.field, float64(v)*milli)
			}
		}
	}
	b.readPower(d, sm)
	if d.can(amdPowerLimit) {
		v, st := lib.PowerCap(i)
		if b.ok(d, amdPowerLimit, st) {
			sm.powerLimit, sm.have = float64(v)*micro, sm.have|fPowerLimit
		}
	}
	if d.can(amdEnergy) {
		count, res, st := lib.EnergyCount(i)
		if b.ok(d, amdEnergy, st) {
			sm.energy, sm.have = float64(count)*float64(res)*micro, sm.have|fEnergy
		}
	}
	b.readFan(d, sm)
	b.readClock(d, sm, amdClockSystem, rocmsmi.ClockSystem)
	b.readClock(d, sm, amdClockMemory, rocmsmi.ClockMemory)
	if b.s.cfg.amdPCIe {
		b.readPCIe(d, sm)
	}
	b.readECC(d, sm)
}

// readPower reads the socket power and the average. hw.power is the
// socket power; where the library or the GPU has none, the average.
func (b *rocmBackend) readPower(d *amdDevice, sm *sample) {
	if d.can(amdPower) {
		v, st := b.lib.CurrentSocketPower(d.index)
		if b.ok(d, amdPower, st) {
			sm.power, sm.have = float64(v)*micro, sm.have|fPower
		}
	}
	if d.can(amdPowerAverage) {
		v, st := b.lib.PowerAverage(d.index)
		if b.ok(d, amdPowerAverage, st) {
			sm.powerAverage, sm.have = float64(v)*micro, sm.have|fPowerAverage
			if !d.can(amdPower) {
				sm.power, sm.have = sm.powerAverage, sm.have|fPower
			}
		}
	}
}

func (b *rocmBackend) readFan(d *amdDevice, sm *sample) {
	if !d.can(amdFan) {
		return
	}
	v, st := b.lib.FanSpeed(d.index)
	if !b.ok(d, amdFan, st) {
		return
	}
	top, st := b.lib.FanSpeedMax(d.index)
	if st != rocmsmi.StatusSuccess || top == 0 {
		top = maxFanSpeed
	}
	if v < 0 || uint64(v) > top {
		b.s.errors.addNamed(d.UUID, amdReadNames[amdFan], invalidData)
		return
	}
	sm.fan, sm.have = float64(v)/float64(top), sm.have|fFan
}

// readClock reads the current level of a clock. A cycle in which the
// driver marks no level current has no value, and is no error.
func (b *rocmBackend) readClock(d *amdDevice, sm *sample, r amdRead, clk rocmsmi.ClockType) {
	if !d.can(r) {
		return
	}
	if !b.ok(d, r, b.lib.ClockFrequencies(d.index, clk, &b.freq)) {
		return
	}
	hz, ok := b.freq.CurrentHz()
	if !ok {
		return
	}
	if r == amdClockSystem {
		sm.clockSM, sm.have = float64(hz), sm.have|fClockSM
	} else {
		sm.clockMemory, sm.have = float64(hz), sm.have|fClockMemory
	}
}

// readPCIe estimates PCIe traffic: ROCm SMI counts packets over one
// second (the kernel sleeps that second), each at most the maximum payload
// size; the rate is taken to hold for the whole poll interval.
func (b *rocmBackend) readPCIe(d *amdDevice, sm *sample) {
	if !d.can(amdPCIe) {
		return
	}
	sent, received, payload, st := b.lib.PCIThroughput(d.index)
	if !b.ok(d, amdPCIe, st) {
		return
	}
	seconds := b.s.cfg.interval.Seconds()
	d.pcie[0] += float64(sent) * float64(payload) * seconds
	d.pcie[1] += float64(received) * float64(payload) * seconds
	sm.pcieTx, sm.pcieRx = clampFloat(d.pcie[0]), clampFloat(d.pcie[1])
	sm.have |= fPCIeTx | fPCIeRx
}

// clampFloat converts a non-negative byte estimate to int64.
func clampFloat(v float64) int64 {
	if v >= 1<<63 {
		return 1<<63 - 1
	}
	return int64(v)
}

// readECC sums the ECC counts of every block ROCm SMI supports on d. A
// cycle in which one block's read fails has no sum: a partial one would
// make the counters go back.
func (b *rocmBackend) readECC(d *amdDevice, sm *sample) {
	if !d.can(amdECC) {
		return
	}
	var corrected, uncorrected uint64
	read, failed := false, false
	for blk := rocmsmi.BlockFirst; blk <= rocmsmi.BlockLast; blk <<= 1 {
		if d.eccUnsupported&uint64(blk) != 0 {
			continue
		}
		ec, st := b.lib.ECCCount(d.index, blk)
		switch st {
		case rocmsmi.StatusSuccess:
			corrected += ec.Correctable
			uncorrected += ec.Uncorrectable
			read = true
		case rocmsmi.StatusNotSupported:
			d.eccUnsupported |= uint64(blk)
		default:
			b.s.errors.addNamed(d.UUID, amdReadNames[amdECC], st.String())
			failed = true
		}
	}
	if d.eccUnsupported == uint64(rocmsmi.BlockLast<<1-1) {
		d.retire(amdECC)
	}
	if read && !failed {
		sm.eccCorrected, sm.eccUncorrected = clampInt64(corrected), clampInt64(uncorrected)
		sm.have |= fECCCorrected | fECCUncorrected
	}
}
