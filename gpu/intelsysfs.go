package gpu

import (
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"syscall"
	"time"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/amdsysfs"
	"github.com/xpuscope/xpuscope/internal/intelsysfs"
	"github.com/xpuscope/xpuscope/semconv"
)

// The Intel sysfs backend: Intel GPUs from what the i915 and xe kernel
// drivers publish, for the GPUs Level Zero does not read (no compute
// runtime installed, the common case, or no driver for the GPU in it). It
// reads the hwmon energy (hw.energy, and hw.power from its rate), the
// power limit and the temperatures by label, the actual GPU frequency
// (package intelsysfs says which files), xe's VRAM size, the engines'
// busyness from the driver's PMU where the agent may open it, else from
// the DRM clients' fdinfo summed per device, and per process from
// fdinfo. The kernel files give no device memory in use.

type intelSysfsBackend struct {
	s       *Source
	r       amdsysfs.Reader
	devices []*intelSysfsDevice
	start0  time.Time
}

// intelSysfsDevice is an Intel GPU read from sysfs.
type intelSysfsDevice struct {
	*intelDevice
	c     intelsysfs.Card
	hw    intelsysfs.Hwmon
	freq  []intelsysfs.FreqFile
	vram  uint64 // the tiles' physical VRAM; 0: none or not said
	pmu   *intelPMU
	clock float64
}

// openIntelSysfs finds the i915 and xe cards Level Zero does not read.
func openIntelSysfs(s *Source) (backend, error) {
	cards, err := intelCards(s)
	if err != nil {
		return nil, err
	}
	b := &intelSysfsBackend{s: s, r: amdsysfs.Reader{FS: s.cfg.sysfs}, start0: s.cfg.now()}
	driver := kernelRelease(s.cfg.procRoot)
	skipped := 0
	for i, c := range cards {
		if s.intelRead[c.PCIAddress] {
			skipped++
			continue
		}
		d := &intelSysfsDevice{c: c, hw: intelsysfs.FindHwmon(s.cfg.sysfs, c), freq: intelsysfs.ActFreqFiles(s.cfg.sysfs, c)}
		for _, t := range intelsysfs.Tiles(s.cfg.sysfs, c) {
			if v, err := b.r.Uint(fmt.Sprintf("%s/tile%d/physical_vram_size_bytes", c.Device, t)); err == nil {
				d.vram += v
			}
		}
		d.pmu, err = openIntelPMU(s, c)
		source, path, why := semconv.MeasurementSourceFdinfo, "the DRM clients' fdinfo", ""
		if err != nil {
			why = err.Error()
		} else {
			source, path = semconv.MeasurementSourcePMU, d.pmu.describe()
		}
		d.intelDevice = newIntelDevice(Device{Index: i, UUID: c.PCIAddress, Name: intelName(c.PCIID), PCIAddress: c.PCIAddress}, driver, c.Name, source, 0)
		if len(s.intelRead) > 0 {
			// Level Zero reads the node's other Intel GPUs.
			why = join("Level Zero has no driver for it", why)
		}
		d.path, d.why = path, why
		b.retireMissing(d)
		b.devices = append(b.devices, d)
		s.devices = append(s.devices, d.device)
	}
	if len(b.devices) == 0 {
		return nil, xpuscope.Unavailablef("gpu: Level Zero reads every Intel GPU (%d)", skipped)
	}
	return b, nil
}

// retireMissing retires the reads whose files the card lacks.
func (b *intelSysfsBackend) retireMissing(d *intelSysfsDevice) {
	for _, f := range []struct {
		r    intelRead
		file string
	}{
		{irPower, d.hw.Energy}, {irPowerLimit, d.hw.PowerMax},
		{irTempGPU, d.hw.TempGPU}, {irTempMemory, d.hw.TempMemory},
	} {
		if f.file == "" {
			d.retire(f.r)
		}
	}
	if len(d.freq) == 0 {
		d.retire(irClock)
	}
}

// start starts nothing: the backend reads only when polled.
func (b *intelSysfsBackend) start(<-chan struct{}, *sync.WaitGroup) {}

func (b *intelSysfsBackend) poll(sn *snapshot) {
	s := b.s
	clients := s.intelClients()
	now := s.cfg.now().Sub(b.start0)
	for _, d := range b.devices {
		sm := s.sample(sn, d.device)
		b.read(d, sm, now)
		if d.pmu != nil {
			d.pmu.read(s, d, sm)
		} else {
			clients.deviceEngines(d.PCIAddress, sm)
		}
		clients.processes(d.PCIAddress, sm, true)
		s.finishProcesses(d.device, sm)
		s.forget(d.device)
	}
}

func (b *intelSysfsBackend) close() error {
	var errs []error
	for _, d := range b.devices {
		if d.pmu != nil {
			errs = append(errs, d.pmu.close())
		}
	}
	return errors.Join(errs...)
}

func (b *intelSysfsBackend) describe() (int, string) {
	devs := make([]*intelDevice, len(b.devices))
	for i, d := range b.devices {
		devs[i] = d.intelDevice
	}
	return len(b.devices), describeIntel(devs)
}

// failed handles a failed sysfs read: a file gone, or a sensor the
// driver does not support, retires the read; anything else (EAGAIN, EIO,
// a value that does not parse) is counted.
func (b *intelSysfsBackend) failed(d *intelSysfsDevice, r intelRead, err error) {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENODEV) {
		d.retire(r)
		return
	}
	b.s.errors.addNamed(d.UUID, intelReadNames[r], amdsysfs.ErrorName(err))
}

func (b *intelSysfsBackend) read(d *intelSysfsDevice, sm *sample, now time.Duration) {
	if d.vram > 0 {
		sm.total, sm.have = clampInt64(d.vram), sm.have|fMemLimit
	}
	if d.can(irPower) {
		if v, err := b.r.Uint(d.hw.Energy); err != nil {
			b.failed(d, irPower, err)
		} else {
			j := float64(v) * micro // µJ
			sm.energy, sm.have = j, sm.have|fEnergy
			if w, ok := d.power.add(j, now); ok {
				sm.power, sm.have = w, sm.have|fPower
			}
		}
	}
	if d.can(irPowerLimit) {
		if v, err := b.r.Uint(d.hw.PowerMax); err != nil {
			b.failed(d, irPowerLimit, err)
		} else if v > 0 { // 0: the PL1 limit is disabled
			sm.powerLimit, sm.have = float64(v)*micro, sm.have|fPowerLimit
		}
	}
	for _, t := range []struct {
		r    intelRead
		file string
		f    field
	}{{irTempGPU, d.hw.TempGPU, fTemperature}, {irTempMemory, d.hw.TempMemory, fTempMemory}} {
		if !d.can(t.r) {
			continue
		}
		v, err := b.r.Int(t.file)
		if err != nil {
			b.failed(d, t.r, err)
			continue
		}
		setTemperature(sm, t.f, float64(v)*milli)
	}
	if d.can(irClock) {
		// The GPU's clock: the fastest GT's (what i915's card-level
		// gt_act_freq_mhz gives). A GT whose file fails is counted;
		// the others still make the figure.
		best, ok := 0.0, false
		for _, f := range d.freq {
			v, err := b.r.Uint(f.Path)
			if err != nil {
				b.failed(d, irClock, err)
				continue
			}
			best, ok = max(best, float64(v)*mega), true
		}
		if ok {
			sm.clockSM, sm.have = best, sm.have|fClockSM
		}
	}
}

// join joins two reasons with "; ", either of which may be empty.
func join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}
