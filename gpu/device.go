package gpu

import (
	"slices"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope/semconv"
)

// Device describes a GPU or a MIG instance the Source reports on.
type Device struct {
	// Index is the NVML index (the parent's, for a MIG instance); for an
	// AMD GPU, its position in AMD SMI's socket order, its ROCm SMI index,
	// or its position in PCI-address order among the amdgpu cards when
	// read from sysfs; for an Intel GPU, its position in Level Zero's
	// device order, or in PCI-address order among the i915 and xe cards.
	Index int
	// UUID is the device's hw.id: GPU-… for a GPU, MIG-… for an instance;
	// for an AMD GPU, its unique id (0x followed by 16 hexadecimal
	// digits), or its PCI address when it has none; for an Intel GPU,
	// its PCI address.
	UUID string
	Name string
	// Vendor is hw.vendor: "NVIDIA", "AMD", "Intel" or "Google".
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
	// compute capability; for an AMD GPU, its compute units and the
	// work-items one holds, from the KFD topology; 0 when unknown (and on
	// MIG instances).
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
	// source is the gpu.measurement.source of a runtime backend's device
	// (DCGM, RDC, the TPU runtime); "" for the others.
	source string
	// utilSource is the gpu.measurement.source of an Intel device's
	// utilization series (level_zero, pmu, fdinfo), and tiles how many
	// tiles have engine series of their own; "" and 0 for the others.
	utilSource string
	tiles      int
	// memSensor: the device has a memory temperature sensor besides its
	// one GPU sensor (Intel), a series with hw.sensor_location=memory.
	memSensor bool
	driver    string // hw.driver_version
	// unsupported has bit r set once the device answered read r with
	// ERROR_NOT_SUPPORTED; the read is not tried again (until MIG mode
	// changes, which changes what a device supports).
	unsupported uint32
	migEnabled  bool

	// attrs identify the device; series adds the pod holding it.
	attrs []attribute.KeyValue
	// podID is the device's id in the kubelet's allocations: an NVIDIA
	// GPU's or MIG instance's UUID, an AMD GPU's PCI address.
	podID string
	// sensors: the device has several temperature sensors, each a series
	// with its hw.sensor_location (AMD); NVML's one sensor has none.
	sensors bool
	series  *series
	hwID    opts // hw.id alone, for self-metrics

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

// series are the attribute sets of a device's series: the device's
// attributes and those of the pod holding it, if one does, with each
// value's variants. They are immutable: when the pod changes, the poller
// builds new ones, and a snapshot's samples keep the ones they were read
// with.
type series struct {
	owner []attribute.KeyValue // the pod's attributes; nil when no one pod holds the device
	base  opts
	// Per-value variants of the device's attribute set.
	taskGeneral, taskEncoder, taskDecoder opts
	ioReceive, ioTransmit                 opts
	clockSM, clockMemory                  opts
	errCorrected, errUncorrected          opts
	// temperature is the series of sample.temperature: the base set for
	// NVML's one sensor; hw.sensor_location=edge for AMD, whose junction
	// and memory sensors have series of their own.
	temperature, tempJunction, tempMemory opts
	throttle                              []opts
	other                                 opts // the process overflow series
	// accel are the series of a runtime backend's values, by accelValue;
	// nil for the other backends' devices.
	accel []opts
	// engine are an Intel device's gpu.engine.utilization series: [0]
	// the whole device's, [t+1] tile t's, by class; nil for the others.
	engine [][numEngineClasses]opts
}

// process is a GPU process's precomputed series identity.
type process struct {
	opts opts
	// engine are its process.gpu.engine.utilization series by class, on
	// an Intel device; nil elsewhere.
	engine []opts
	seen   uint64
}

func (d *device) isUnsupported(r readID) bool { return d.unsupported&(1<<r) != 0 }

func newDevice(h nvml.Device, info Device, driver string) *device {
	d := newVendorDevice(info, semconv.VendorNVIDIA, driver, info.UUID, false)
	d.h = h
	d.fields[0].FieldId = nvml.FI_DEV_PCIE_COUNT_TX_BYTES
	d.fields[1].FieldId = nvml.FI_DEV_PCIE_COUNT_RX_BYTES
	return d
}

// newVendorDevice is a device of any vendor with its attribute sets,
// known to the kubelet as podID, with one temperature series per sensor
// if sensors is set.
func newVendorDevice(info Device, vendor, driver, podID string, sensors bool) *device {
	info.Vendor = vendor
	d := &device{Device: info, mig: info.Parent != "", procs: map[uint32]*process{}, podID: podID, sensors: sensors, driver: driver}
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
	d.series = d.newSeries(nil)
	d.xid.attrs = d.attrs
	d.hwID = newOpts(semconv.HWID.String(info.UUID))
	return d
}

// newSeries builds the device's attribute sets with the pod attributes
// owner.
func (d *device) newSeries(owner []attribute.KeyValue) *series {
	// The pod's attributes first: the device's own win over any they
	// repeat.
	all := append(slices.Clip(owner), d.attrs...)
	with := func(kv ...attribute.KeyValue) opts { return newOpts(append(slices.Clip(all), kv...)...) }
	task := func(t string) opts {
		if d.utilSource != "" {
			return with(semconv.HWGPUTask.String(t), semconv.GPUMeasurementSource.String(d.utilSource))
		}
		return with(semconv.HWGPUTask.String(t))
	}
	s := &series{
		owner:          owner,
		base:           with(),
		taskGeneral:    task(semconv.GPUTaskGeneral),
		taskEncoder:    task(semconv.GPUTaskEncoder),
		taskDecoder:    task(semconv.GPUTaskDecoder),
		ioReceive:      with(semconv.NetworkIODir.String(semconv.DirectionReceive)),
		ioTransmit:     with(semconv.NetworkIODir.String(semconv.DirectionTransmit)),
		clockSM:        with(semconv.GPUClockDomain.String(semconv.ClockDomainSM)),
		clockMemory:    with(semconv.GPUClockDomain.String(semconv.ClockDomainMemory)),
		errCorrected:   with(semconv.ErrorType.String(semconv.ErrorCorrected)),
		errUncorrected: with(semconv.ErrorType.String(semconv.ErrorUncorrected)),
		throttle:       make([]opts, len(semconv.ThrottleReasons)),
		other:          with(semconv.ProcessExecutableName.String(semconv.Other)),
	}
	for i, r := range semconv.ThrottleReasons {
		s.throttle[i] = with(semconv.GPUClockThrottleReason.String(r))
	}
	if d.source != "" || d.utilSource != "" {
		s.accel = accelSeries(all)
	}
	if d.utilSource != "" {
		s.engine = intelSeries(all, d.tiles, d.utilSource)
	}
	s.temperature = s.base
	if d.memSensor {
		s.tempMemory = with(semconv.HWSensorLocation.String(semconv.SensorMemory))
	}
	if d.sensors {
		s.temperature = with(semconv.HWSensorLocation.String(semconv.SensorEdge))
		s.tempJunction = with(semconv.HWSensorLocation.String(semconv.SensorJunction))
		s.tempMemory = with(semconv.HWSensorLocation.String(semconv.SensorMemory))
	}
	return s
}
