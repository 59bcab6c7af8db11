package gpu

import (
	"encoding/binary"
	"math"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// can says whether read r is worth trying on d: the library has it and
// d has not answered it with ERROR_NOT_SUPPORTED.
func (b *nvmlBackend) can(d *device, r readID) bool {
	return b.syms.available[r] && !d.isUnsupported(r)
}

// ok records the outcome of read r on d: SUCCESS is true; NOT_SUPPORTED
// retires the read for the device; anything else is a counted error.
func (b *nvmlBackend) ok(d *device, r readID, ret nvml.Return) bool {
	switch ret {
	case nvml.SUCCESS:
		return true
	case nvml.ERROR_NOT_SUPPORTED:
		d.unsupported |= 1 << r
	default:
		b.s.errors.add(d.UUID, r, ret)
	}
	return false
}

// readDevice reads GPU d into sn: a sample of d, and one of each of its
// MIG instances when MIG is enabled.
func (b *nvmlBackend) readDevice(sn *snapshot, d *device) {
	if b.can(d, readMIG) {
		mode, _, ret := d.h.GetMigMode()
		if b.ok(d, readMIG, ret) {
			if enabled := mode == nvml.DEVICE_MIG_ENABLE; enabled != d.migEnabled {
				// What a GPU supports changes with MIG mode: retry all.
				d.migEnabled, d.unsupported, d.pcieUnsupported = enabled, 0, [2]bool{}
			}
		}
	}
	sm := b.s.sample(sn, d)
	if b.can(d, readUtilization) {
		u, ret := d.h.GetUtilizationRates()
		if b.ok(d, readUtilization, ret) {
			sm.util, sm.memCtrl = float64(u.Gpu)*percent, float64(u.Memory)*percent
			sm.have |= fUtil | fMemCtrl
		}
	}
	if b.can(d, readEncoder) {
		u, _, ret := d.h.GetEncoderUtilization()
		if b.ok(d, readEncoder, ret) {
			sm.encoder, sm.have = float64(u)*percent, sm.have|fEncoder
		}
	}
	if b.can(d, readDecoder) {
		u, _, ret := d.h.GetDecoderUtilization()
		if b.ok(d, readDecoder, ret) {
			sm.decoder, sm.have = float64(u)*percent, sm.have|fDecoder
		}
	}
	b.readMemory(d, sm)
	if b.can(d, readTemperature) {
		t, ret := d.h.GetTemperature(nvml.TEMPERATURE_GPU)
		if b.ok(d, readTemperature, ret) {
			sm.temperature, sm.have = float64(t), sm.have|fTemperature
		}
	}
	if b.can(d, readPower) {
		p, ret := d.h.GetPowerUsage()
		if b.ok(d, readPower, ret) {
			sm.power, sm.have = float64(p)*milli, sm.have|fPower
		}
	}
	if b.can(d, readPowerLimit) {
		p, ret := d.h.GetEnforcedPowerLimit()
		if b.ok(d, readPowerLimit, ret) {
			sm.powerLimit, sm.have = float64(p)*milli, sm.have|fPowerLimit
		}
	}
	if b.can(d, readEnergy) {
		e, ret := d.h.GetTotalEnergyConsumption()
		if b.ok(d, readEnergy, ret) {
			sm.energy, sm.have = float64(e)*milli, sm.have|fEnergy
		}
	}
	if b.can(d, readClocks) {
		c, ret := d.h.GetClockInfo(nvml.CLOCK_SM)
		if b.ok(d, readClocks, ret) {
			sm.clockSM, sm.have = float64(c)*mega, sm.have|fClockSM
		}
	}
	if b.can(d, readClocks) {
		c, ret := d.h.GetClockInfo(nvml.CLOCK_MEM)
		if b.ok(d, readClocks, ret) {
			sm.clockMemory, sm.have = float64(c)*mega, sm.have|fClockMemory
		}
	}
	b.readPCIe(d, sm)
	if b.can(d, readFan) {
		f, ret := d.h.GetFanSpeed()
		if b.ok(d, readFan, ret) {
			sm.fan, sm.have = float64(f)*percent, sm.have|fFan
		}
	}
	if b.can(d, readECC) {
		n, ret := d.h.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_CORRECTED, nvml.VOLATILE_ECC)
		if b.ok(d, readECC, ret) {
			sm.eccCorrected, sm.have = clampInt64(n), sm.have|fECCCorrected
		}
	}
	if b.can(d, readECC) {
		n, ret := d.h.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC)
		if b.ok(d, readECC, ret) {
			sm.eccUncorrected, sm.have = clampInt64(n), sm.have|fECCUncorrected
		}
	}
	if b.can(d, readThrottle) {
		var mask uint64
		var ret nvml.Return
		if b.syms.eventReasons {
			mask, ret = d.h.GetCurrentClocksEventReasons()
		} else {
			mask, ret = d.h.GetCurrentClocksThrottleReasons()
		}
		if b.ok(d, readThrottle, ret) {
			sm.throttle, sm.have = mask, sm.have|fThrottle
		}
	}
	if !d.migEnabled {
		// Under MIG, processes are read per instance.
		b.readProcesses(d, sm)
	}
	if d.migEnabled && b.can(d, readMIG) {
		b.readInstances(sn, d) // sm is invalid from here on
	}
	b.s.forget(d)
}

// readMemory reads d's memory into sm, with the reserved figure where
// the library has nvmlDeviceGetMemoryInfo_v2.
func (b *nvmlBackend) readMemory(d *device, sm *sample) {
	if !b.can(d, readMemory) {
		return
	}
	if b.syms.memoryV2 {
		m, ret := d.h.GetMemoryInfo_v2()
		if b.ok(d, readMemory, ret) {
			sm.used, sm.total, sm.free, sm.reserved = clampInt64(m.Used), clampInt64(m.Total), clampInt64(m.Free), clampInt64(m.Reserved)
			sm.have |= fMemory | fReserved
		}
		return
	}
	m, ret := d.h.GetMemoryInfo()
	if b.ok(d, readMemory, ret) {
		sm.used, sm.total, sm.free = clampInt64(m.Used), clampInt64(m.Total), clampInt64(m.Free)
		sm.have |= fMemory
	}
}

// readPCIe reads d's PCIe byte counters into sm, retiring each
// direction the device does not count.
func (b *nvmlBackend) readPCIe(d *device, sm *sample) {
	if !b.can(d, readPCIe) {
		return
	}
	for i := range d.fields {
		d.fields[i] = nvml.FieldValue{FieldId: d.fields[i].FieldId}
	}
	if !b.ok(d, readPCIe, d.h.GetFieldValues(d.fields[:])) {
		return
	}
	for i, f := range [...]field{fPCIeTx, fPCIeRx} {
		if d.pcieUnsupported[i] {
			continue
		}
		fv := &d.fields[i]
		switch ret := nvml.Return(fv.NvmlReturn); ret {
		case nvml.SUCCESS:
		case nvml.ERROR_NOT_SUPPORTED:
			// Retire one direction; the read goes when both have.
			d.pcieUnsupported[i] = true
			if d.pcieUnsupported[0] && d.pcieUnsupported[1] {
				d.unsupported |= 1 << readPCIe
			}
			continue
		default:
			b.s.errors.add(d.UUID, readPCIe, ret)
			continue
		}
		v, ok := fieldUint64(fv)
		if !ok {
			b.s.errors.add(d.UUID, readPCIe, nvml.ERROR_UNKNOWN)
			continue
		}
		if f == fPCIeTx {
			sm.pcieTx = clampInt64(v)
		} else {
			sm.pcieRx = clampInt64(v)
		}
		sm.have |= f
	}
}

// fieldUint64 decodes an unsigned NVML field value.
func fieldUint64(fv *nvml.FieldValue) (uint64, bool) {
	switch nvml.ValueType(fv.ValueType) {
	case nvml.VALUE_TYPE_UNSIGNED_INT:
		return uint64(binary.NativeEndian.Uint32(fv.Value[:4])), true
	case nvml.VALUE_TYPE_UNSIGNED_LONG, nvml.VALUE_TYPE_UNSIGNED_LONG_LONG:
		return binary.NativeEndian.Uint64(fv.Value[:]), true
	}
	return 0, false
}

// notAvailable is NVML_VALUE_NOT_AVAILABLE as an unsigned long long: the
// driver could not attribute memory to the process (no privilege, WDDM).
const notAvailable = math.MaxUint64

// readProcesses reads the compute and graphics processes on d into sm,
// with their SM utilization where d is a GPU.
func (b *nvmlBackend) readProcesses(d *device, sm *sample) {
	for _, r := range [...]readID{readComputeProcesses, readGraphicsProcesses} {
		if !b.can(d, r) {
			continue
		}
		var infos []nvml.ProcessInfo
		var ret nvml.Return
		if r == readComputeProcesses {
			infos, ret = d.h.GetComputeRunningProcesses()
		} else {
			infos, ret = d.h.GetGraphicsRunningProcesses()
		}
		if !b.ok(d, r, ret) {
			continue
		}
		for _, pi := range infos {
			sm.mergeProcess(pi)
		}
	}
	if !d.mig && b.can(d, readProcessUtilization) {
		samples, ret := d.h.GetProcessUtilization(d.lastUtilSample)
		// NOT_FOUND: no process ran a kernel since the last read.
		if ret == nvml.ERROR_NOT_FOUND || b.ok(d, readProcessUtilization, ret) {
			for i := range sm.procs {
				sm.procs[i].hasUtil = true
			}
			// Samples come in no particular order; keep each process's newest.
			for _, u := range samples {
				d.lastUtilSample = max(d.lastUtilSample, u.TimeStamp)
				for i := range sm.procs {
					if p := &sm.procs[i]; p.pid == u.Pid && u.TimeStamp >= p.utilTS {
						p.util, p.utilTS = float64(u.SmUtil)*percent, u.TimeStamp
					}
				}
			}
		}
	}
	b.s.finishProcesses(d, sm)
}

// mergeProcess adds pi to the sample; a process in both the compute and
// the graphics list counts once, with the larger memory figure.
func (sm *sample) mergeProcess(pi nvml.ProcessInfo) {
	mem, hasMem := clampInt64(pi.UsedGpuMemory), pi.UsedGpuMemory != notAvailable
	for i := range sm.procs {
		if p := &sm.procs[i]; p.pid == pi.Pid {
			if hasMem && (!p.hasMem || mem > p.memory) {
				p.memory, p.hasMem = mem, true
			}
			return
		}
	}
	if !hasMem {
		mem = 0
	}
	sm.procs = append(sm.procs, procSample{pid: pi.Pid, memory: mem, hasMem: hasMem})
}

// readInstances reads the MIG instances of parent into sn.
func (b *nvmlBackend) readInstances(sn *snapshot, parent *device) {
	n, ret := parent.h.GetMaxMigDeviceCount()
	if !b.ok(parent, readMIG, ret) {
		return
	}
	for i := range n {
		h, ret := parent.h.GetMigDeviceHandleByIndex(i)
		if ret == nvml.ERROR_NOT_FOUND {
			continue // an empty slot
		}
		if !b.ok(parent, readMIG, ret) {
			continue
		}
		uuid, ret := h.GetUUID()
		if !b.ok(parent, readMIG, ret) {
			continue
		}
		in := parent.instances[uuid]
		if in == nil {
			if in = b.newInstance(parent, h, uuid); in == nil {
				continue
			}
			parent.instances[uuid] = in
		}
		in.h, in.seen = h, b.s.cycle
		sm := b.s.sample(sn, in)
		b.readMemory(in, sm)
		b.readProcesses(in, sm)
		b.s.forget(in)
	}
}

// newInstance is the MIG instance of parent with handle h and uuid, or
// nil when its identity cannot be read.
func (b *nvmlBackend) newInstance(parent *device, h nvml.Device, uuid string) *device {
	name, ret := h.GetName()
	if !b.ok(parent, readMIG, ret) {
		return nil
	}
	gi, ret := h.GetGpuInstanceId()
	if !b.ok(parent, readMIG, ret) {
		return nil
	}
	ci, ret := h.GetComputeInstanceId()
	if !b.ok(parent, readMIG, ret) {
		return nil
	}
	return newDevice(h, Device{
		Index:             parent.Index,
		UUID:              uuid,
		Name:              name,
		PCIAddress:        parent.PCIAddress,
		Parent:            parent.UUID,
		GPUInstanceID:     gi,
		ComputeInstanceID: ci,
		Profile:           migProfile(name),
	}, b.driver)
}
