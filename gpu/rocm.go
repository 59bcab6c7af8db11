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
// purego (package internal/rocmsmi), read by the shared smiBackend.
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

// rocmLib is ROCm SMI as an amdLib.
type rocmLib struct {
	s    *Source
	lib  *rocmsmi.Lib
	freq rocmsmi.Frequencies // scratch for the clock reads
}

// rocmOptional maps the optional functions to the metrics lost without
// them. (rsmi_dev_current_socket_power_get is not here: without it
// hw.power is the average; rsmi_dev_fan_speed_max_get neither: the
// maximum is then RSMI_MAX_FAN_SPEED.)
var rocmOptional = []amdOptional{
	{rocmsmi.SymBusyPercent, []semconv.Metric{semconv.HWGPUUtilization}},
	{rocmsmi.SymMemoryBusyPercent, []semconv.Metric{semconv.GPUMemoryControllerUtilization}},
	{rocmsmi.SymMemoryUsage, memoryMetrics},
	{rocmsmi.SymMemoryTotal, memoryMetrics},
	{rocmsmi.SymTempMetric, []semconv.Metric{semconv.HWTemperature}},
	{rocmsmi.SymPowerAve, []semconv.Metric{semconv.GPUPowerAverage}},
	{rocmsmi.SymPowerCap, []semconv.Metric{semconv.GPUPowerLimit}},
	{rocmsmi.SymEnergyCount, []semconv.Metric{semconv.HWEnergy}},
	{rocmsmi.SymFanSpeed, []semconv.Metric{semconv.GPUFanSpeed}},
	{rocmsmi.SymGPUClkFreq, []semconv.Metric{semconv.GPUClockFrequency}},
	{rocmsmi.SymECCCount, []semconv.Metric{semconv.HWErrors}},
}

// memoryMetrics are the metrics of VRAM used and total.
var memoryMetrics = []semconv.Metric{semconv.HWGPUMemoryUsage, semconv.HWGPUMemoryLimit, semconv.HWGPUMemoryUtilization, semconv.GPUMemoryFree}

// maxFanSpeed is RSMI_MAX_FAN_SPEED (and AMDSMI_MAX_FAN_SPEED), the scale
// of a fan speed whose library gives no maximum.
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
	r := &rocmLib{s: s, lib: lib}
	b := &smiBackend{s: s, lib: r}
	if b.devices, err = r.discover(cards); err != nil {
		_ = r.close()
		return nil, err
	}
	s.reportMissing(lib.Has, rocmOptional)
	if !lib.Has(rocmsmi.SymPowerAve) && !lib.Has(rocmsmi.SymCurrentSocketPower) {
		s.missing = append(s.missing, newOpts(semconv.XpuscopeSymbol.String(rocmsmi.SymCurrentSocketPower), semconv.XpuscopeMetricName.String(semconv.HWPower.Name)))
	}
	if s.cfg.amdPCIe && !lib.Has(rocmsmi.SymPCIThroughput) {
		s.missing = append(s.missing, newOpts(semconv.XpuscopeSymbol.String(rocmsmi.SymPCIThroughput), semconv.XpuscopeMetricName.String(semconv.HWGPUIO.Name)))
	}
	return b.finishOpen(), nil
}

// discover enumerates the GPUs ROCm SMI monitors. A GPU whose PCI address
// cannot be read is left out; none at all is unavailable. A GPU without a
// name is named after its card's PCI ids, as the sysfs backend names it.
func (r *rocmLib) discover(cards []amdsysfs.Card) ([]*amdDevice, error) {
	lib := r.lib
	n, st := lib.NumDevices()
	if st != rocmsmi.StatusSuccess {
		return nil, fmt.Errorf("gpu: ROCm SMI %s: %w", lib.Path(), lib.Err("rsmi_num_monitor_devices", st))
	}
	if n == 0 {
		return nil, xpuscope.Unavailablef("gpu: ROCm SMI %s found no AMD GPU", lib.Path())
	}
	driver, st := lib.DriverVersion()
	if st != rocmsmi.StatusSuccess || driver == "" {
		driver = amdDriverVersion(r.s.cfg.sysfs, r.s.cfg.procRoot)
	}
	var devices []*amdDevice
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
		devices = append(devices, d)
	}
	if len(devices) == 0 {
		return nil, xpuscope.Unavailablef("gpu: none of %d AMD GPUs could be identified through ROCm SMI %s: %s",
			n, lib.Path(), strings.Join(failed, "; "))
	}
	return devices, nil
}

func (r *rocmLib) close() error {
	var errs []error
	if st := r.lib.Shutdown(); st != rocmsmi.StatusSuccess {
		errs = append(errs, fmt.Errorf("gpu: %w", r.lib.Err("rsmi_shut_down", st)))
	}
	if err := r.lib.Close(); err != nil {
		errs = append(errs, fmt.Errorf("gpu: %w", err))
	}
	return errors.Join(errs...)
}

// rocmStatus maps a ROCm SMI status: NOT_SUPPORTED (or a function the
// library lacks) retires the read; anything else but success is counted.
func rocmStatus(st rocmsmi.Status) amdStatus {
	switch st {
	case rocmsmi.StatusSuccess:
		return amdOK
	case rocmsmi.StatusNotSupported, rocmsmi.StatusNoSymbol:
		return amdStatus{outcome: amdUnsupported}
	}
	return amdStatus{outcome: amdFailed, name: st.String()}
}

const micro = 1e-6

func (r *rocmLib) busy(d *amdDevice) (uint64, amdStatus) {
	v, st := r.lib.BusyPercent(d.index)
	return uint64(v), rocmStatus(st)
}

func (r *rocmLib) memoryBusy(d *amdDevice) (uint64, amdStatus) {
	v, st := r.lib.MemoryBusyPercent(d.index)
	return uint64(v), rocmStatus(st)
}

func (r *rocmLib) memory(d *amdDevice) (used, total uint64, st amdStatus) {
	used, s := r.lib.MemoryUsage(d.index, rocmsmi.MemVRAM)
	if s != rocmsmi.StatusSuccess {
		return 0, 0, rocmStatus(s)
	}
	total, s = r.lib.MemoryTotal(d.index, rocmsmi.MemVRAM)
	return used, total, rocmStatus(s)
}

var rocmSensors = [len(amdTemps)]rocmsmi.TempSensor{rocmsmi.TempEdge, rocmsmi.TempJunction, rocmsmi.TempMemory}

// temperature converts millidegrees to °C.
func (r *rocmLib) temperature(d *amdDevice, sensor int) (float64, amdStatus) {
	v, st := r.lib.Temperature(d.index, rocmSensors[sensor])
	return float64(v) * milli, rocmStatus(st)
}

// socketPower, averagePower and powerLimit convert µW to W.
func (r *rocmLib) socketPower(d *amdDevice) (float64, amdStatus) {
	v, st := r.lib.CurrentSocketPower(d.index)
	return float64(v) * micro, rocmStatus(st)
}

func (r *rocmLib) averagePower(d *amdDevice) (float64, amdStatus) {
	v, st := r.lib.PowerAverage(d.index)
	return float64(v) * micro, rocmStatus(st)
}

func (r *rocmLib) powerLimit(d *amdDevice) (float64, amdStatus) {
	v, st := r.lib.PowerCap(d.index)
	return float64(v) * micro, rocmStatus(st)
}

// energy is the counter times its resolution, µJ → J.
func (r *rocmLib) energy(d *amdDevice) (float64, amdStatus) {
	count, res, st := r.lib.EnergyCount(d.index)
	return float64(count) * float64(res) * micro, rocmStatus(st)
}

func (r *rocmLib) fan(d *amdDevice) (int64, uint64, amdStatus) {
	v, st := r.lib.FanSpeed(d.index)
	if st != rocmsmi.StatusSuccess {
		return 0, 0, rocmStatus(st)
	}
	top, st := r.lib.FanSpeedMax(d.index)
	if st != rocmsmi.StatusSuccess {
		top = 0
	}
	return v, top, amdOK
}

// clock reads the current level of a clock, Hz. A cycle in which the
// driver marks no level current has no value, and is no error.
func (r *rocmLib) clock(d *amdDevice, which amdRead) (float64, amdStatus) {
	clk := rocmsmi.ClockSystem
	if which == amdClockMemory {
		clk = rocmsmi.ClockMemory
	}
	if st := r.lib.ClockFrequencies(d.index, clk, &r.freq); st != rocmsmi.StatusSuccess {
		return 0, rocmStatus(st)
	}
	hz, ok := r.freq.CurrentHz()
	if !ok {
		return 0, amdStatus{outcome: amdNoValue}
	}
	return float64(hz), amdOK
}

// ecc sums the ECC counts of every block ROCm SMI supports on d. A cycle
// in which one block's read fails has no sum: a partial one would make
// the counters go back. Each failed block is counted.
func (r *rocmLib) ecc(d *amdDevice) (corrected, uncorrected uint64, st amdStatus) {
	read, failed := false, false
	for blk := rocmsmi.BlockFirst; blk <= rocmsmi.BlockLast; blk <<= 1 {
		if d.eccUnsupported&uint64(blk) != 0 {
			continue
		}
		ec, st := r.lib.ECCCount(d.index, blk)
		switch st {
		case rocmsmi.StatusSuccess:
			corrected += ec.Correctable
			uncorrected += ec.Uncorrectable
			read = true
		case rocmsmi.StatusNotSupported:
			d.eccUnsupported |= uint64(blk)
		default:
			r.s.errors.addNamed(d.UUID, amdReadNames[amdECC], st.String())
			failed = true
		}
	}
	switch {
	case d.eccUnsupported == uint64(rocmsmi.BlockLast<<1-1):
		return 0, 0, amdStatus{outcome: amdUnsupported}
	case read && !failed:
		return corrected, uncorrected, amdOK
	}
	return 0, 0, amdStatus{outcome: amdNoValue}
}

// extra reads PCIe traffic, when asked for.
func (r *rocmLib) extra(d *amdDevice, sm *sample) {
	if r.s.cfg.amdPCIe {
		r.readPCIe(d, sm)
	}
}

// readPCIe estimates PCIe traffic: ROCm SMI counts packets over one
// second (the kernel sleeps that second), each at most the maximum payload
// size; the rate is taken to hold for the whole poll interval.
func (r *rocmLib) readPCIe(d *amdDevice, sm *sample) {
	if !d.can(amdPCIe) {
		return
	}
	sent, received, payload, st := r.lib.PCIThroughput(d.index)
	if !r.s.amdOK(d, amdPCIe, rocmStatus(st)) {
		return
	}
	seconds := r.s.cfg.interval.Seconds()
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
