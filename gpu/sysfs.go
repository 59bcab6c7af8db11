package gpu

import (
	"sync"

	"github.com/xpuscope/xpuscope/internal/amdsysfs"
)

// The amdgpu sysfs backend: AMD GPUs from the files the amdgpu driver
// publishes under /sys/class/drm/card<N>/device, for nodes without ROCm
// SMI (or whose ROCm SMI cannot start). It reads gpu_busy_percent,
// mem_busy_percent, mem_info_vram_used and _total, and from the card's
// hwmon the temperatures, power (power1_input, power1_average,
// power1_cap) and fan (pwm1 over pwm1_max). It has no energy, clocks,
// PCIe or ECC figures.

type sysfsBackend struct {
	s       *Source
	r       amdsysfs.Reader
	devices []*amdDevice
	kfd     *kfd
}

// sysfsFiles are the files the sysfs backend reads for one GPU; "" for a
// hwmon file of a card without hwmon.
type sysfsFiles struct {
	busy, memBusy, vramUsed, vramTotal string
	temps                              [amdsysfs.NumTempSensors]string
	power, powerAverage, powerCap      string
	pwm, pwmMax                        string
}

// sysfsTemps are the sensors, in amdsysfs.TempSensor order.
var sysfsTemps = [amdsysfs.NumTempSensors]struct {
	read  amdRead
	field field
}{
	amdsysfs.TempEdge:     {amdTempEdge, fTemperature},
	amdsysfs.TempJunction: {amdTempJunction, fTempJunction},
	amdsysfs.TempMemory:   {amdTempMemory, fTempMemory},
}

// openAMDSysfs finds the amdgpu cards in sysfs.
func openAMDSysfs(s *Source) (backend, error) {
	cards, err := amdCards(s)
	if err != nil {
		return nil, err
	}
	b := &sysfsBackend{s: s, r: amdsysfs.Reader{FS: s.cfg.sysfs}}
	driver := amdDriverVersion(s.cfg.sysfs, s.cfg.procRoot)
	for i, c := range cards {
		name := amdName(c)
		if v, err := b.r.Read(c.Device + "/product_name"); err == nil && amdsysfs.ParseString(v) != "" {
			name = amdsysfs.ParseString(v)
		}
		uid, ok := cardUniqueID(&b.r, cards, c.PCIAddress)
		d := newAMDDevice(Device{Index: i, UUID: amdID(uid, ok, c.PCIAddress), Name: name, PCIAddress: c.PCIAddress}, driver)
		d.files = sysfsFiles{
			busy:      c.Device + "/gpu_busy_percent",
			memBusy:   c.Device + "/mem_busy_percent",
			vramUsed:  c.Device + "/mem_info_vram_used",
			vramTotal: c.Device + "/mem_info_vram_total",
			temps:     amdsysfs.TempInputs(s.cfg.sysfs, c.Hwmon),
		}
		if c.Hwmon != "" {
			d.files.power, d.files.powerAverage, d.files.powerCap = c.Hwmon+"/power1_input", c.Hwmon+"/power1_average", c.Hwmon+"/power1_cap"
			d.files.pwm, d.files.pwmMax = c.Hwmon+"/pwm1", c.Hwmon+"/pwm1_max"
		} else {
			for _, r := range [...]amdRead{amdPower, amdPowerAverage, amdPowerLimit, amdFan} {
				d.retire(r)
			}
		}
		for sensor, t := range sysfsTemps {
			if d.files.temps[sensor] == "" {
				d.retire(t.read)
			}
		}
		b.devices = append(b.devices, d)
	}
	for _, d := range b.devices {
		s.devices = append(s.devices, d.device)
	}
	b.kfd = newKFD(s.cfg.sysfs, b.devices)
	return b, nil
}

// start starts nothing: the backend reads only when polled.
func (b *sysfsBackend) start(<-chan struct{}, *sync.WaitGroup) {}

func (b *sysfsBackend) poll(sn *snapshot) { b.s.pollAMD(sn, b.devices, b.kfd, b.read) }

func (b *sysfsBackend) close() error { return nil }

// uint reads an unsigned attribute for read r, unless r is retired.
func (b *sysfsBackend) uint(d *amdDevice, r amdRead, name string) (uint64, bool) {
	if !d.can(r) {
		return 0, false
	}
	v, err := b.r.Uint(name)
	if err != nil {
		b.s.sysfsFailed(d, r, err)
		return 0, false
	}
	return v, true
}

func (b *sysfsBackend) read(d *amdDevice, sm *sample) {
	f := &d.files
	if v, ok := b.uint(d, amdUtilization, f.busy); ok && b.s.percentOK(d, amdUtilization, v) {
		sm.util, sm.have = float64(v)*percent, sm.have|fUtil
	}
	if v, ok := b.uint(d, amdMemoryBusy, f.memBusy); ok && b.s.percentOK(d, amdMemoryBusy, v) {
		sm.memCtrl, sm.have = float64(v)*percent, sm.have|fMemCtrl
	}
	if used, ok := b.uint(d, amdMemory, f.vramUsed); ok {
		if total, ok := b.uint(d, amdMemory, f.vramTotal); ok {
			setMemory(sm, used, total)
		}
	}
	for sensor, t := range sysfsTemps {
		if !d.can(t.read) {
			continue
		}
		v, err := b.r.Int(f.temps[sensor])
		if err != nil {
			b.s.sysfsFailed(d, t.read, err)
			continue
		}
		setTemperature(sm, t.field, float64(v)*milli)
	}
	if v, ok := b.uint(d, amdPower, f.power); ok {
		sm.power, sm.have = float64(v)*micro, sm.have|fPower
	}
	if v, ok := b.uint(d, amdPowerAverage, f.powerAverage); ok {
		sm.powerAverage, sm.have = float64(v)*micro, sm.have|fPowerAverage
		if !d.can(amdPower) {
			sm.power, sm.have = sm.powerAverage, sm.have|fPower
		}
	}
	if v, ok := b.uint(d, amdPowerLimit, f.powerCap); ok {
		sm.powerLimit, sm.have = float64(v)*micro, sm.have|fPowerLimit
	}
	if v, ok := b.uint(d, amdFan, f.pwm); ok {
		top, err := b.r.Uint(f.pwmMax)
		if err != nil || top == 0 {
			top = maxFanSpeed
		}
		if v > top {
			b.s.errors.addNamed(d.UUID, amdReadNames[amdFan], invalidData)
		} else {
			sm.fan, sm.have = float64(v)/float64(top), sm.have|fFan
		}
	}
}
