package gpu

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope/semconv"
)

// Device describes a GPU or a MIG instance the Source reports on.
type Device struct {
	// Index is the NVML index (the parent's, for a MIG instance); for an
	// AMD GPU, its ROCm SMI index, or its position in PCI-address order
	// among the amdgpu cards when read from sysfs.
	Index int
	// UUID is the device's hw.id: GPU-… for a GPU, MIG-… for an instance;
	// for an AMD GPU, its unique id (0x followed by 16 hexadecimal
	// digits), or its PCI address when it has none.
	UUID string
	Name string
	// Vendor is hw.vendor: "NVIDIA" or "AMD".
	Vendor string
	// PCIAddress is in sysfs form, 0000:3b:00.0 (the parent's, for MIG).
	PCIAddress string
	// Parent is the parent GPU's UUID; empty unless this is a MIG instance.
	Parent string
	// GPUInstanceID, ComputeInstanceID and Profile identify a MIG instance.
	GPUInstanceID, ComputeInstanceID int
	Profile                          string
	// SMs and ThreadsPerSM are the GPU's streaming multiprocessors and
	// the most threads resident on one, from NVML's core count and
	// compute capability; 0 when unknown (and on MIG instances).
	SMs, ThreadsPerSM int
}

// opts is an attribute set turned into observe options once, so that
// observing a value allocates nothing.
type opts []metric.ObserveOption

func newOpts(kvs ...attribute.KeyValue) opts {
	return opts{metric.WithAttributeSet(attribute.NewSet(kvs...))}
}

// device is a GPU or MIG instance and everything precomputed for it.
type device struct {
	Device
	h   nvml.Device
	mig bool
	// unsupported has bit r set once the device answered read r with
	// ERROR_NOT_SUPPORTED; the read is not tried again (until MIG mode
	// changes, which changes what a device supports).
	unsupported uint32
	migEnabled  bool

	attrs []attribute.KeyValue
	base  opts
	// Per-value variants of the device's attribute set.
	taskGeneral, taskEncoder, taskDecoder opts
	ioReceive, ioTransmit                 opts
	clockSM, clockMemory                  opts
	errCorrected, errUncorrected          opts
	// temperature is the series of sample.temperature: the device's
	// attributes for NVML's one sensor; hw.sensor_location=edge for AMD,
	// whose junction and memory sensors have series of their own.
	temperature, tempJunction, tempMemory opts
	throttle                              []opts
	other                                 opts // the process overflow series
	hwID                                  opts // hw.id alone, for self-metrics

	xid             xidCounts
	procs           map[uint32]*process
	overflow        int64 // process observations folded past the cap
	lastUtilSample  uint64
	fields          [2]nvml.FieldValue // PCIe TX, RX counters
	pcieUnsupported [2]bool

	// MIG instances of a GPU, by UUID, and the cycle each was last seen.
	instances map[string]*device
	seen      uint64
}

// process is a GPU process's precomputed series identity.
type process struct {
	opts opts
	seen uint64
}

func (d *device) isUnsupported(r readID) bool { return d.unsupported&(1<<r) != 0 }

func newDevice(h nvml.Device, info Device, driver string) *device {
	d := newVendorDevice(info, semconv.VendorNVIDIA, driver)
	d.h = h
	d.temperature = d.base // NVML's one GPU sensor
	d.fields[0].FieldId = nvml.FI_DEV_PCIE_COUNT_TX_BYTES
	d.fields[1].FieldId = nvml.FI_DEV_PCIE_COUNT_RX_BYTES
	return d
}

// newVendorDevice is a device of any vendor with its attribute sets.
func newVendorDevice(info Device, vendor, driver string) *device {
	info.Vendor = vendor
	d := &device{Device: info, mig: info.Parent != "", procs: map[uint32]*process{}}
	d.attrs = []attribute.KeyValue{
		semconv.HWID.String(info.UUID),
		semconv.HWName.String(info.Name),
		semconv.HWVendor.String(vendor),
		semconv.HWType.String(semconv.HWTypeGPU),
		semconv.HWDriverVersion.String(driver),
		semconv.GPUIndex.Int(info.Index),
		semconv.GPUPCIAddress.String(info.PCIAddress),
	}
	if d.mig {
		d.attrs = append(d.attrs,
			semconv.HWParent.String(info.Parent),
			semconv.GPUMIGGPUInstanceID.Int(info.GPUInstanceID),
			semconv.GPUMIGComputeInstance.Int(info.ComputeInstanceID),
			semconv.GPUMIGProfile.String(info.Profile),
		)
	} else {
		d.instances = map[string]*device{}
	}
	d.base = d.with()
	d.taskGeneral = d.with(semconv.HWGPUTask.String(semconv.GPUTaskGeneral))
	d.taskEncoder = d.with(semconv.HWGPUTask.String(semconv.GPUTaskEncoder))
	d.taskDecoder = d.with(semconv.HWGPUTask.String(semconv.GPUTaskDecoder))
	d.ioReceive = d.with(semconv.NetworkIODir.String(semconv.DirectionReceive))
	d.ioTransmit = d.with(semconv.NetworkIODir.String(semconv.DirectionTransmit))
	d.clockSM = d.with(semconv.GPUClockDomain.String(semconv.ClockDomainSM))
	d.clockMemory = d.with(semconv.GPUClockDomain.String(semconv.ClockDomainMemory))
	d.errCorrected = d.with(semconv.ErrorType.String(semconv.ErrorCorrected))
	d.errUncorrected = d.with(semconv.ErrorType.String(semconv.ErrorUncorrected))
	d.throttle = make([]opts, len(semconv.ThrottleReasons))
	for i, r := range semconv.ThrottleReasons {
		d.throttle[i] = d.with(semconv.GPUClockThrottleReason.String(r))
	}
	d.other = d.with(semconv.ProcessExecutableName.String(semconv.Other))
	d.hwID = newOpts(semconv.HWID.String(info.UUID))
	return d
}

// with is the device's attribute set plus kv.
func (d *device) with(kv ...attribute.KeyValue) opts {
	return newOpts(append(append([]attribute.KeyValue(nil), d.attrs...), kv...)...)
}

// processOpts returns the series identity of pid on d, creating it (and
// reading the executable name) the first time pid is seen.
func (d *device) process(pid uint32, cycle uint64, name func(int) string) *process {
	p, ok := d.procs[pid]
	if !ok {
		kv := append(append([]attribute.KeyValue(nil), d.attrs...),
			semconv.ProcessPID.Int(int(pid)),
			semconv.ProcessExecutableName.String(name(int(pid))))
		p = &process{opts: newOpts(kv...)}
		d.procs[pid] = p
	}
	p.seen = cycle
	return p
}

// forget drops the processes and MIG instances not seen in cycle.
func (d *device) forget(cycle uint64) {
	for pid, p := range d.procs {
		if p.seen != cycle {
			delete(d.procs, pid)
		}
	}
	for id, in := range d.instances {
		if in.seen != cycle {
			delete(d.instances, id)
		}
	}
}
