package gpu

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"syscall"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/amdsmi"
	"github.com/xpuscope/xpuscope/internal/amdsysfs"
	"github.com/xpuscope/xpuscope/semconv"
)

// What the AMD backends, AMD SMI, ROCm SMI and amdgpu sysfs, share: the device
// and its retired reads, the driver version and identity, the check that
// the node has an amdgpu card at all, and per-process usage from KFD.

// amdRead names one kind of read of an AMD backend: what can be retired
// for a device, and the xpuscope.read of a failure.
type amdRead uint8

const (
	amdUtilization amdRead = iota
	amdMemoryBusy
	amdMemory
	amdTempEdge
	amdTempJunction
	amdTempMemory
	amdPower
	amdPowerAverage
	amdPowerLimit
	amdEnergy
	amdFan
	amdClockSystem
	amdClockMemory
	amdPCIe
	amdECC
	amdProcesses
	numAMDReads
)

var amdReadNames = [numAMDReads]string{
	amdUtilization:  "utilization",
	amdMemoryBusy:   "memory_busy",
	amdMemory:       "memory",
	amdTempEdge:     "temperature",
	amdTempJunction: "temperature",
	amdTempMemory:   "temperature",
	amdPower:        "power",
	amdPowerAverage: "power_average",
	amdPowerLimit:   "power_limit",
	amdEnergy:       "energy",
	amdFan:          "fan",
	amdClockSystem:  "clocks",
	amdClockMemory:  "clocks",
	amdPCIe:         "pcie",
	amdECC:          "ecc",
	amdProcesses:    "processes",
}

// invalidData is the error.type of a value no GPU can have (a percentage
// above 100, a negative fan speed).
const invalidData = "invalid_data"

// amdDevice is an AMD GPU and what its backend keeps about it.
type amdDevice struct {
	*device
	// unsupported has bit r set once read r is retired for the device:
	// ROCm SMI said RSMI_STATUS_NOT_SUPPORTED, or the sysfs file does not
	// exist.
	unsupported uint32

	index  uint32        // ROCm SMI: the device index
	handle amdsmi.Handle // AMD SMI: the processor handle
	// eccUnsupported has a bit set per ECC block ROCm SMI does not
	// support on the device; the ECC read retires once all are set.
	eccUnsupported uint64
	pcie           [2]float64 // ROCm SMI: estimated bytes, transmit and receive

	files sysfsFiles // sysfs: the files read

}

func (d *amdDevice) can(r amdRead) bool { return d.unsupported&(1<<r) == 0 }
func (d *amdDevice) retire(r amdRead)   { d.unsupported |= 1 << r }

func newAMDDevice(info Device, driver string) *amdDevice {
	// AMD's device plugin names a GPU by its PCI address.
	return &amdDevice{device: newVendorDevice(info, semconv.VendorAMD, driver, info.PCIAddress, true)}
}

// amdID is an AMD GPU's hw.id: its unique id, as ROCm SMI and sysfs give
// it, else its PCI address.
func amdID(uniqueID uint64, ok bool, pciAddress string) string {
	if !ok || uniqueID == 0 {
		return pciAddress
	}
	return fmt.Sprintf("0x%016x", uniqueID)
}

// amdName is the name of a GPU that has no product name: its PCI ids.
func amdName(card amdsysfs.Card) string { return "AMD GPU " + card.PCIID }

// amdDriverVersion is the amdgpu module's version, or, for the in-tree
// driver that has none, the kernel release: what ROCm SMI reports.
func amdDriverVersion(sysfs fs.FS, procRoot string) string {
	r := &amdsysfs.Reader{FS: sysfs}
	if b, err := r.Read("module/amdgpu/version"); err == nil {
		if v := amdsysfs.ParseString(b); v != "" {
			return v
		}
	}
	r.FS = os.DirFS(procRoot)
	b, err := r.Read("sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return amdsysfs.ParseString(b)
}

// amdCards lists the node's amdgpu cards; none is unavailable. Both AMD
// backends start here, so that a node without an AMD GPU never loads ROCm
// SMI (whose rsmi_init writes its complaints to the process's stderr).
func amdCards(s *Source) ([]amdsysfs.Card, error) {
	cards, err := amdsysfs.Cards(s.cfg.sysfs)
	if err != nil {
		return nil, xpuscope.Unavailablef("gpu: no AMD GPU: sysfs at %s: %v", s.cfg.sysfsRoot, err)
	}
	if len(cards) == 0 {
		return nil, xpuscope.Unavailablef("gpu: no AMD GPU: no card of the amdgpu driver in %s/%s", s.cfg.sysfsRoot, amdsysfs.DRMDir)
	}
	return cards, nil
}

// sysfsFailed handles a failed sysfs read: a file that does not exist, or
// a sensor the driver says it does not support, retires the read;
// anything else is counted.
func (s *Source) sysfsFailed(d *amdDevice, r amdRead, err error) {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EOPNOTSUPP) {
		d.retire(r)
		return
	}
	s.errors.addNamed(d.UUID, amdReadNames[r], amdsysfs.ErrorName(err))
}

// percentOK checks a busy percentage, counting one out of range.
func (s *Source) percentOK(d *amdDevice, r amdRead, v uint64) bool {
	if v > 100 {
		s.errors.addNamed(d.UUID, amdReadNames[r], invalidData)
		return false
	}
	return true
}

// setTemperature sets the temperature of one sensor, °C.
func setTemperature(sm *sample, f field, celsius float64) {
	switch f {
	case fTemperature:
		sm.temperature = celsius
	case fTempJunction:
		sm.tempJunction = celsius
	case fTempMemory:
		sm.tempMemory = celsius
	}
	sm.have |= f
}

// setMemory fills the memory values of sm from VRAM used and total.
func setMemory(sm *sample, used, total uint64) {
	sm.used, sm.total = clampInt64(used), clampInt64(total)
	sm.free = max(sm.total-sm.used, 0)
	sm.have |= fMemory
}

// kfd reads per-process GPU usage from KFD, for the GPUs of one AMD
// backend, matched to KFD topology nodes by PCI address.
type kfd struct {
	r     amdsysfs.Reader
	ids   []uint32 // gpu_id of each matched GPU
	byID  map[uint32]*amdDevice
	usage []amdsysfs.Usage // the last read, reused
	off   bool             // the proc directory does not exist
}

// newKFD matches devices to KFD topology nodes, and sets their compute
// units and the threads one holds (Device.SMs and ThreadsPerSM). It returns nil when there is no KFD or no node matches: then
// there are no per-process metrics.
func newKFD(sysfs fs.FS, devices []*amdDevice) *kfd {
	nodes, err := amdsysfs.Topology(sysfs)
	if err != nil {
		return nil
	}
	k := &kfd{r: amdsysfs.Reader{FS: sysfs}, byID: map[uint32]*amdDevice{}}
	for _, n := range nodes {
		for _, d := range devices {
			if d.PCIAddress == n.PCIAddress && k.byID[n.GPUID] == nil {
				k.byID[n.GPUID] = d
				k.ids = append(k.ids, n.GPUID)
				d.SMs, d.ThreadsPerSM = n.CUs, n.ThreadsPerCU
			}
		}
	}
	if len(k.ids) == 0 {
		return nil
	}
	return k
}

// read reads every process's usage of the matched GPUs.
func (k *kfd) read(s *Source) {
	k.usage = k.usage[:0]
	if k.off {
		return
	}
	var err error
	k.usage, err = k.r.Processes(k.ids, k.usage)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		k.off = true
	case err != nil:
		s.errors.addNamed("", amdReadNames[amdProcesses], amdsysfs.ErrorName(err))
	}
}

// attach adds d's processes of the last read to sm and gives them their
// series. A process that holds no memory and runs no wave on d is left
// out: KFD lists every process on every GPU.
func (k *kfd) attach(s *Source, d *amdDevice, sm *sample) {
	for i := range k.usage {
		u := &k.usage[i]
		if k.byID[u.GPUID] != d {
			continue
		}
		if u.Err != nil {
			s.errors.addNamed(d.UUID, amdReadNames[amdProcesses], amdsysfs.ErrorName(u.Err))
		}
		if u.VRAM == 0 && u.CUs == 0 {
			continue
		}
		p := procSample{pid: u.PID, memory: clampInt64(u.VRAM), hasMem: u.HasVRAM}
		if u.HasCUs && d.SMs > 0 {
			p.util, p.hasUtil = min(float64(u.CUs)/float64(d.SMs), 1), true
		}
		sm.procs = append(sm.procs, p)
	}
	s.finishProcesses(d.device, sm)
}

// pollAMD reads each device of an AMD backend with read, then its
// processes.
func (s *Source) pollAMD(sn *snapshot, devices []*amdDevice, k *kfd, read func(*amdDevice, *sample)) {
	if k != nil {
		k.read(s)
	}
	for _, d := range devices {
		sm := s.sample(sn, d.device)
		read(d, sm)
		if k != nil {
			k.attach(s, d, sm)
		}
		s.forget(d.device)
	}
}

// cardUniqueID reads the unique_id of the card at pci from sysfs: what
// ROCm SMI's rsmi_dev_unique_id_get and AMD SMI's asic_serial report.
func cardUniqueID(r *amdsysfs.Reader, cards []amdsysfs.Card, pci string) (uint64, bool) {
	for _, c := range cards {
		if c.PCIAddress != pci {
			continue
		}
		v, err := r.Read(c.Device + "/unique_id")
		if err != nil {
			return 0, false
		}
		uid, err := amdsysfs.ParseHex(v)
		return uid, err == nil
	}
	return 0, false
}

// fallbackName names a GPU that its library gives no name after its
// card's PCI ids.
func fallbackName(cards []amdsysfs.Card, pci string) string {
	for _, c := range cards {
		if c.PCIAddress == pci {
			return amdName(c)
		}
	}
	return "AMD GPU"
}

// What the two AMD libraries, ROCm SMI and AMD SMI, share: one read of
// every metric through amdLib, in the Source's units, with the same
// retirement and error counting.

// amdOutcome is how one library call went.
type amdOutcome uint8

const (
	amdDone        amdOutcome = iota // a value
	amdNoValue                       // no value this time, and no error
	amdUnsupported                   // the GPU or the library has none: retire the read
	amdFailed                        // a counted error
)

// amdStatus is the outcome of one library call, and for a failure the
// library's status name (the error.type).
type amdStatus struct {
	outcome amdOutcome
	name    string
}

var amdOK = amdStatus{}

// amdLib is an AMD GPU library as the shared read sees it: each value in
// the Source's units (W, J, °C, Hz, bytes).
type amdLib interface {
	busy(d *amdDevice) (uint64, amdStatus)       // %
	memoryBusy(d *amdDevice) (uint64, amdStatus) // %
	memory(d *amdDevice) (used, total uint64, st amdStatus)
	temperature(d *amdDevice, sensor int) (float64, amdStatus) // sensor: index into amdTemps
	socketPower(d *amdDevice) (float64, amdStatus)
	averagePower(d *amdDevice) (float64, amdStatus)
	powerLimit(d *amdDevice) (float64, amdStatus)
	energy(d *amdDevice) (float64, amdStatus)
	fan(d *amdDevice) (speed int64, top uint64, st amdStatus)
	clock(d *amdDevice, r amdRead) (float64, amdStatus) // r: amdClockSystem or amdClockMemory
	ecc(d *amdDevice) (corrected, uncorrected uint64, st amdStatus)
	extra(d *amdDevice, sm *sample) // what only this library reads
	close() error
}

// amdTemps are the sensors the libraries read, edge, junction (hotspot)
// and memory (VRAM).
var amdTemps = [...]struct {
	read  amdRead
	field field
}{
	{amdTempEdge, fTemperature},
	{amdTempJunction, fTempJunction},
	{amdTempMemory, fTempMemory},
}

// amdOptional maps an optional library function to the metrics lost
// without it.
type amdOptional struct {
	sym     string
	metrics []semconv.Metric
}

// reportMissing lists, for xpuscope.gpu.symbol.missing, each metric lost
// to a function the library lacks.
func (s *Source) reportMissing(has func(string) bool, opts []amdOptional) {
	for _, o := range opts {
		if !has(o.sym) {
			for _, m := range o.metrics {
				s.missing = append(s.missing, newOpts(semconv.XpuscopeSymbol.String(o.sym), semconv.XpuscopeMetricName.String(m.Name)))
			}
		}
	}
}

// amdOK records the outcome of read r on d: a value is true; an
// unsupported read is retired; a failure is counted.
func (s *Source) amdOK(d *amdDevice, r amdRead, st amdStatus) bool {
	switch st.outcome {
	case amdDone:
		return true
	case amdUnsupported:
		d.retire(r)
	case amdFailed:
		s.errors.addNamed(d.UUID, amdReadNames[r], st.name)
	}
	return false
}

// smiBackend reads AMD GPUs through a library, ROCm SMI or AMD SMI.
type smiBackend struct {
	s       *Source
	lib     amdLib
	devices []*amdDevice
	kfd     *kfd
}

// start starts nothing: the backend reads only when polled.
func (b *smiBackend) start(<-chan struct{}, *sync.WaitGroup) {}

func (b *smiBackend) poll(sn *snapshot) { b.s.pollAMD(sn, b.devices, b.kfd, b.read) }

func (b *smiBackend) close() error { return b.lib.close() }

// finishOpen finishes opening: per-process reads from KFD, and the
// devices handed to the Source.
func (b *smiBackend) finishOpen() *smiBackend {
	b.kfd = newKFD(b.s.cfg.sysfs, b.devices)
	for _, d := range b.devices {
		b.s.devices = append(b.s.devices, d.device)
	}
	return b
}

func (b *smiBackend) read(d *amdDevice, sm *sample) {
	s, lib := b.s, b.lib
	if d.can(amdUtilization) {
		v, st := lib.busy(d)
		if s.amdOK(d, amdUtilization, st) && s.percentOK(d, amdUtilization, v) {
			sm.util, sm.have = float64(v)*percent, sm.have|fUtil
		}
	}
	if d.can(amdMemoryBusy) {
		v, st := lib.memoryBusy(d)
		if s.amdOK(d, amdMemoryBusy, st) && s.percentOK(d, amdMemoryBusy, v) {
			sm.memCtrl, sm.have = float64(v)*percent, sm.have|fMemCtrl
		}
	}
	if d.can(amdMemory) {
		used, total, st := lib.memory(d)
		if s.amdOK(d, amdMemory, st) {
			setMemory(sm, used, total)
		}
	}
	for i, t := range amdTemps {
		if d.can(t.read) {
			v, st := lib.temperature(d, i)
			if s.amdOK(d, t.read, st) {
				setTemperature(sm, t.field, v)
			}
		}
	}
	b.readPower(d, sm)
	if d.can(amdPowerLimit) {
		v, st := lib.powerLimit(d)
		if s.amdOK(d, amdPowerLimit, st) {
			sm.powerLimit, sm.have = v, sm.have|fPowerLimit
		}
	}
	if d.can(amdEnergy) {
		v, st := lib.energy(d)
		if s.amdOK(d, amdEnergy, st) {
			sm.energy, sm.have = v, sm.have|fEnergy
		}
	}
	b.readFan(d, sm)
	if d.can(amdClockSystem) {
		v, st := lib.clock(d, amdClockSystem)
		if s.amdOK(d, amdClockSystem, st) {
			sm.clockSM, sm.have = v, sm.have|fClockSM
		}
	}
	if d.can(amdClockMemory) {
		v, st := lib.clock(d, amdClockMemory)
		if s.amdOK(d, amdClockMemory, st) {
			sm.clockMemory, sm.have = v, sm.have|fClockMemory
		}
	}
	lib.extra(d, sm)
	if d.can(amdECC) {
		corrected, uncorrected, st := lib.ecc(d)
		if s.amdOK(d, amdECC, st) {
			sm.eccCorrected, sm.eccUncorrected = clampInt64(corrected), clampInt64(uncorrected)
			sm.have |= fECCCorrected | fECCUncorrected
		}
	}
}

// readPower reads the socket power and the average. hw.power is the
// socket power; where the library or the GPU has none, the average.
func (b *smiBackend) readPower(d *amdDevice, sm *sample) {
	if d.can(amdPower) {
		v, st := b.lib.socketPower(d)
		if b.s.amdOK(d, amdPower, st) {
			sm.power, sm.have = v, sm.have|fPower
		}
	}
	if d.can(amdPowerAverage) {
		v, st := b.lib.averagePower(d)
		if b.s.amdOK(d, amdPowerAverage, st) {
			sm.powerAverage, sm.have = v, sm.have|fPowerAverage
			if !d.can(amdPower) {
				sm.power, sm.have = sm.powerAverage, sm.have|fPower
			}
		}
	}
}

// readFan reads the fan speed as a share of its maximum.
func (b *smiBackend) readFan(d *amdDevice, sm *sample) {
	if !d.can(amdFan) {
		return
	}
	v, top, st := b.lib.fan(d)
	if !b.s.amdOK(d, amdFan, st) {
		return
	}
	if top == 0 {
		top = maxFanSpeed
	}
	if v < 0 || uint64(v) > top {
		b.s.errors.addNamed(d.UUID, amdReadNames[amdFan], invalidData)
		return
	}
	sm.fan, sm.have = float64(v)/float64(top), sm.have|fFan
}
