package gpu

import (
	"errors"
	"fmt"
	"strings"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/amdsmi"
	"github.com/xpuscope/xpuscope/internal/amdsysfs"
	"github.com/xpuscope/xpuscope/semconv"
)

// The AMD SMI backend: AMD GPUs through ROCm 6's libamd_smi.so, bound
// with purego (package internal/amdsmi), read by the shared smiBackend.
// New tries it before ROCm SMI; where AMD SMI cannot be loaded, fails to
// initialise, or is a version whose struct layouts the binding does not
// know, ROCm SMI is tried next. Like ROCm SMI, it is loaded only when
// sysfs shows an amdgpu card.

// amdsmiLib is AMD SMI as an amdLib.
type amdsmiLib struct {
	lib *amdsmi.Lib
}

// amdsmiOptional maps the optional functions to the metrics lost without
// them. (amdsmi_get_gpu_fan_speed_max is not here: without it the
// maximum is AMDSMI_MAX_FAN_SPEED; amdsmi_get_gpu_asic_info and
// amdsmi_get_gpu_driver_info neither: the name and driver version then
// come from sysfs.)
var amdsmiOptional = []amdOptional{
	{amdsmi.SymGPUActivity, []semconv.Metric{semconv.HWGPUUtilization, semconv.GPUMemoryControllerUtilization}},
	{amdsmi.SymGPUMemoryUsage, memoryMetrics},
	{amdsmi.SymGPUMemoryTotal, memoryMetrics},
	{amdsmi.SymTempMetric, []semconv.Metric{semconv.HWTemperature}},
	{amdsmi.SymPowerInfo, []semconv.Metric{semconv.HWPower, semconv.GPUPowerAverage}},
	{amdsmi.SymPowerCapInfo, []semconv.Metric{semconv.GPUPowerLimit}},
	{amdsmi.SymEnergyCount, []semconv.Metric{semconv.HWEnergy}},
	{amdsmi.SymGPUFanSpeed, []semconv.Metric{semconv.GPUFanSpeed}},
	{amdsmi.SymClockInfo, []semconv.Metric{semconv.GPUClockFrequency}},
	{amdsmi.SymGPUTotalECCCount, []semconv.Metric{semconv.HWErrors}},
}

// openAMDSMILib loads the library at the configured path, or the first of
// amdsmi.DefaultLibraries that loads.
func openAMDSMILib(path string) (*amdsmi.Lib, error) {
	if path != "" {
		return amdsmi.Open(path)
	}
	var first error
	for _, p := range amdsmi.DefaultLibraries {
		lib, err := amdsmi.Open(p)
		if err == nil {
			return lib, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, fmt.Errorf("%w (nor any of %s)", first, strings.Join(amdsmi.DefaultLibraries[1:], ", "))
}

// openAMDSMI loads AMD SMI, checks that its version's layouts are known,
// initialises it and finds the AMD GPUs.
func openAMDSMI(s *Source) (backend, error) {
	cards, err := amdCards(s)
	if err != nil {
		return nil, err
	}
	lib, err := openAMDSMILib(s.cfg.amdsmiPath)
	if err != nil {
		return nil, xpuscope.Unavailablef("gpu: %v", err)
	}
	v, st := lib.Version()
	if st != amdsmi.StatusSuccess {
		err := lib.Err(amdsmi.SymGetLibVersion, st)
		_ = lib.Close()
		return nil, xpuscope.Unavailablef("gpu: AMD SMI %s: %v", lib.Path(), err)
	}
	if !lib.Layout().Known {
		_ = lib.Close()
		return nil, xpuscope.Unavailablef("gpu: AMD SMI %s is version %s, whose struct layouts this binding does not know", lib.Path(), v)
	}
	if st := lib.Init(); st != amdsmi.StatusSuccess {
		err := lib.Err(amdsmi.SymInit, st)
		_ = lib.Close()
		return nil, xpuscope.Unavailablef("gpu: AMD SMI %s: %v", lib.Path(), err)
	}
	a := &amdsmiLib{lib: lib}
	b := &smiBackend{s: s, lib: a}
	if b.devices, err = a.discover(s, cards); err != nil {
		_ = a.close()
		return nil, err
	}
	s.reportMissing(lib.Has, amdsmiOptional)
	return b.finishOpen(), nil
}

// discover enumerates the GPUs of every socket. A GPU whose PCI address
// cannot be read is left out; none at all is unavailable. hw.id is the
// card's unique_id in sysfs (what AMD SMI's asic_serial shows, and ROCm
// SMI's unique id), else the PCI address; a GPU without a market name is
// named after its card's PCI ids.
func (a *amdsmiLib) discover(s *Source, cards []amdsysfs.Card) ([]*amdDevice, error) {
	lib := a.lib
	gpus, fn, st := lib.GPUs()
	if st != amdsmi.StatusSuccess {
		return nil, fmt.Errorf("gpu: AMD SMI %s: %w", lib.Path(), lib.Err(fn, st))
	}
	if len(gpus) == 0 {
		return nil, xpuscope.Unavailablef("gpu: AMD SMI %s found no AMD GPU", lib.Path())
	}
	driver := ""
	r := &amdsysfs.Reader{FS: s.cfg.sysfs}
	var infos []Device
	var handles []amdsmi.Handle
	var failed []string
	for i, h := range gpus {
		bdf, st := lib.BDF(h)
		if st != amdsmi.StatusSuccess {
			failed = append(failed, fmt.Sprintf("GPU %d: %v", i, lib.Err(amdsmi.SymGPUDeviceBDF, st)))
			continue
		}
		pci := amdsmi.PCIAddress(bdf)
		name, st := lib.MarketName(h)
		if st != amdsmi.StatusSuccess || name == "" {
			name = fallbackName(cards, pci)
		}
		if driver == "" {
			if v, st := lib.DriverVersion(h); st == amdsmi.StatusSuccess {
				driver = v
			}
		}
		uid, ok := cardUniqueID(r, cards, pci)
		infos = append(infos, Device{Index: i, UUID: amdID(uid, ok, pci), Name: name, PCIAddress: pci})
		handles = append(handles, h)
	}
	if len(infos) == 0 {
		return nil, xpuscope.Unavailablef("gpu: none of %d AMD GPUs could be identified through AMD SMI %s: %s",
			len(gpus), lib.Path(), strings.Join(failed, "; "))
	}
	if driver == "" {
		driver = amdDriverVersion(s.cfg.sysfs, s.cfg.procRoot)
	}
	devices := make([]*amdDevice, len(infos))
	for i, info := range infos {
		devices[i] = newAMDDevice(info, driver)
		devices[i].handle = handles[i]
	}
	return devices, nil
}

func (a *amdsmiLib) close() error {
	var errs []error
	if st := a.lib.Shutdown(); st != amdsmi.StatusSuccess {
		errs = append(errs, fmt.Errorf("gpu: %w", a.lib.Err("amdsmi_shut_down", st)))
	}
	if err := a.lib.Close(); err != nil {
		errs = append(errs, fmt.Errorf("gpu: %w", err))
	}
	return errors.Join(errs...)
}

// smiStatus maps an AMD SMI status: NOT_SUPPORTED, NOT_YET_IMPLEMENTED
// (or a function the library lacks) retires the read; anything else but
// success is counted.
func smiStatus(st amdsmi.Status) amdStatus {
	switch st {
	case amdsmi.StatusSuccess:
		return amdOK
	case amdsmi.StatusNotSupported, amdsmi.StatusNotYetImplemented, amdsmi.StatusNoSymbol:
		return amdStatus{outcome: amdUnsupported}
	}
	return amdStatus{outcome: amdFailed, name: st.String()}
}

var amdsmiUnsupported = amdStatus{outcome: amdUnsupported}

// activity is a percentage of amdsmi_get_gpu_activity; AMD SMI marks one
// the GPU does not report with UINT16_MAX (or UINT32_MAX).
func activity(v uint32, st amdsmi.Status) (uint64, amdStatus) {
	if st == amdsmi.StatusSuccess && (v == amdsmi.Unsupported16 || v == amdsmi.Unsupported32) {
		return 0, amdsmiUnsupported
	}
	return uint64(v), smiStatus(st)
}

func (a *amdsmiLib) busy(d *amdDevice) (uint64, amdStatus) {
	u, st := a.lib.Activity(d.handle)
	return activity(u.GfxActivity, st)
}

func (a *amdsmiLib) memoryBusy(d *amdDevice) (uint64, amdStatus) {
	u, st := a.lib.Activity(d.handle)
	return activity(u.UmcActivity, st)
}

func (a *amdsmiLib) memory(d *amdDevice) (used, total uint64, st amdStatus) {
	used, s := a.lib.MemoryUsage(d.handle)
	if s != amdsmi.StatusSuccess {
		return 0, 0, smiStatus(s)
	}
	total, s = a.lib.MemoryTotal(d.handle)
	return used, total, smiStatus(s)
}

var amdsmiSensors = [len(amdTemps)]amdsmi.TempSensor{amdsmi.TempEdge, amdsmi.TempHotspot, amdsmi.TempVRAM}

// temperature is already °C in AMD SMI.
func (a *amdsmiLib) temperature(d *amdDevice, sensor int) (float64, amdStatus) {
	v, st := a.lib.Temperature(d.handle, amdsmiSensors[sensor])
	return float64(v), smiStatus(st)
}

// watts is a socket power of amdsmi_power_info_t, already W; UINT32_MAX
// marks one the GPU does not report.
func watts(v uint32, st amdsmi.Status) (float64, amdStatus) {
	if st == amdsmi.StatusSuccess && v == amdsmi.Unsupported32 {
		return 0, amdsmiUnsupported
	}
	return float64(v), smiStatus(st)
}

func (a *amdsmiLib) socketPower(d *amdDevice) (float64, amdStatus) {
	current, _, st := a.lib.Power(d.handle)
	return watts(current, st)
}

func (a *amdsmiLib) averagePower(d *amdDevice) (float64, amdStatus) {
	_, average, st := a.lib.Power(d.handle)
	return watts(average, st)
}

// powerLimit converts the power cap's µW to W.
func (a *amdsmiLib) powerLimit(d *amdDevice) (float64, amdStatus) {
	v, st := a.lib.PowerCap(d.handle)
	return float64(v) * micro, smiStatus(st)
}

// energy is the counter times its resolution, µJ → J.
func (a *amdsmiLib) energy(d *amdDevice) (float64, amdStatus) {
	count, res, st := a.lib.EnergyCount(d.handle)
	return float64(count) * float64(res) * micro, smiStatus(st)
}

func (a *amdsmiLib) fan(d *amdDevice) (int64, uint64, amdStatus) {
	v, st := a.lib.FanSpeed(d.handle)
	if st != amdsmi.StatusSuccess {
		return 0, 0, smiStatus(st)
	}
	top, st := a.lib.FanSpeedMax(d.handle)
	if st != amdsmi.StatusSuccess {
		top = 0
	}
	return v, top, amdOK
}

// clock is the current clock of amdsmi_get_clock_info, MHz → Hz.
func (a *amdsmiLib) clock(d *amdDevice, which amdRead) (float64, amdStatus) {
	clk := amdsmi.ClockSystem
	if which == amdClockMemory {
		clk = amdsmi.ClockMemory
	}
	mhz, st := a.lib.ClockMHz(d.handle, clk)
	if st == amdsmi.StatusSuccess && mhz == amdsmi.Unsupported32 {
		return 0, amdsmiUnsupported
	}
	return float64(mhz) * mega, smiStatus(st)
}

// ecc is AMD SMI's own sum over the GPU's blocks.
func (a *amdsmiLib) ecc(d *amdDevice) (corrected, uncorrected uint64, st amdStatus) {
	ec, s := a.lib.TotalECCCount(d.handle)
	return ec.Correctable, ec.Uncorrectable, smiStatus(s)
}

func (a *amdsmiLib) extra(*amdDevice, *sample) {}
