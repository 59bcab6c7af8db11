package gpu

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/amdsysfs"
	"github.com/xpuscope/xpuscope/semconv"
)

// What the two AMD backends, ROCm SMI and amdgpu sysfs, share: the device
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

	index uint32 // ROCm SMI: the device index
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
