package gpu

import (
	"context"

	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope/internal/meterx"
	"github.com/xpuscope/xpuscope/semconv"
)

type instruments struct {
	utilization, memoryUtilization, memoryController     metric.Float64ObservableGauge
	temperature, power, powerLimit, clock, throttle      metric.Float64ObservableGauge
	fan, processUtilization, powerAverage                metric.Float64ObservableGauge
	engineUtilization, processEngineUtilization          metric.Float64ObservableGauge
	memoryUsage, memoryLimit, memoryFree, memoryReserved metric.Int64ObservableUpDownCounter
	processMemory, symbolMissing                         metric.Int64ObservableUpDownCounter
	io, errors, readErrors, overflow                     metric.Int64ObservableCounter
	energy                                               metric.Float64ObservableCounter
	accel                                                accelInstruments
}

func (in *instruments) create(m metric.Meter) error {
	b := meterx.Builder{Meter: m}
	in.utilization = b.Gauge(semconv.HWGPUUtilization)
	in.memoryUtilization = b.Gauge(semconv.HWGPUMemoryUtilization)
	in.memoryController = b.Gauge(semconv.GPUMemoryControllerUtilization)
	in.temperature = b.Gauge(semconv.HWTemperature)
	in.power = b.Gauge(semconv.HWPower)
	in.powerLimit = b.Gauge(semconv.GPUPowerLimit)
	in.powerAverage = b.Gauge(semconv.GPUPowerAverage)
	in.clock = b.Gauge(semconv.GPUClockFrequency)
	in.throttle = b.Gauge(semconv.GPUClockThrottle)
	in.fan = b.Gauge(semconv.GPUFanSpeed)
	in.processUtilization = b.Gauge(semconv.ProcessGPUUtilization)
	in.engineUtilization = b.Gauge(semconv.GPUEngineUtilization)
	in.processEngineUtilization = b.Gauge(semconv.ProcessGPUEngineUtilization)
	in.memoryUsage = b.UpDownCounter(semconv.HWGPUMemoryUsage)
	in.memoryLimit = b.UpDownCounter(semconv.HWGPUMemoryLimit)
	in.memoryFree = b.UpDownCounter(semconv.GPUMemoryFree)
	in.memoryReserved = b.UpDownCounter(semconv.GPUMemoryReserved)
	in.processMemory = b.UpDownCounter(semconv.ProcessGPUMemoryUsage)
	in.symbolMissing = b.UpDownCounter(semconv.XpuscopeGPUSymbolMissing)
	in.io = b.Counter(semconv.HWGPUIO)
	in.errors = b.Counter(semconv.HWErrors)
	in.readErrors = b.Counter(semconv.XpuscopeGPUReadErrors)
	in.overflow = b.Counter(semconv.XpuscopeGPUProcessOverflow)
	in.energy = b.FloatCounter(semconv.HWEnergy)
	in.accel.create(&b)
	return b.Err()
}

func (in *instruments) all() []metric.Observable {
	return append([]metric.Observable{
		in.utilization, in.memoryUtilization, in.memoryController, in.temperature,
		in.power, in.powerLimit, in.powerAverage, in.clock, in.throttle, in.fan, in.processUtilization,
		in.engineUtilization, in.processEngineUtilization,
		in.memoryUsage, in.memoryLimit, in.memoryFree, in.memoryReserved,
		in.processMemory, in.symbolMissing, in.io, in.errors, in.readErrors,
		in.overflow, in.energy,
	}, in.accel.all...)
}

// observe reports the front snapshot and the counters. It only reads.
func (s *Source) observe(_ context.Context, o metric.Observer) error {
	in := &s.inst
	s.mu.RLock()
	for i := range s.front.samples {
		observeSample(o, in, &s.front.samples[i])
	}
	s.mu.RUnlock()
	for _, d := range s.devices {
		d.xid.observe(o, in.errors)
	}
	s.errors.observe(o, in.readErrors)
	s.scrape.observe(o, &in.accel)
	for _, m := range s.missing {
		o.ObserveInt64(in.symbolMissing, 1, m...)
	}
	return nil
}

func observeSample(o metric.Observer, in *instruments, sm *sample) {
	d, has := sm.s, sm.have
	if has&fUtil != 0 {
		o.ObserveFloat64(in.utilization, sm.util, d.taskGeneral...)
	}
	if has&fEncoder != 0 {
		o.ObserveFloat64(in.utilization, sm.encoder, d.taskEncoder...)
	}
	if has&fDecoder != 0 {
		o.ObserveFloat64(in.utilization, sm.decoder, d.taskDecoder...)
	}
	if has&fMemCtrl != 0 {
		o.ObserveFloat64(in.memoryController, sm.memCtrl, d.base...)
	}
	if has&fMemory != 0 {
		o.ObserveInt64(in.memoryUsage, sm.used, d.base...)
		o.ObserveInt64(in.memoryLimit, sm.total, d.base...)
		o.ObserveInt64(in.memoryFree, sm.free, d.base...)
		if sm.total > 0 {
			o.ObserveFloat64(in.memoryUtilization, float64(sm.used)/float64(sm.total), d.base...)
		}
	}
	if has&fMemLimit != 0 {
		o.ObserveInt64(in.memoryLimit, sm.total, d.base...)
	}
	if has&fReserved != 0 {
		o.ObserveInt64(in.memoryReserved, sm.reserved, d.base...)
	}
	if has&fTemperature != 0 {
		o.ObserveFloat64(in.temperature, sm.temperature, d.temperature...)
	}
	if has&fTempJunction != 0 {
		o.ObserveFloat64(in.temperature, sm.tempJunction, d.tempJunction...)
	}
	if has&fTempMemory != 0 {
		o.ObserveFloat64(in.temperature, sm.tempMemory, d.tempMemory...)
	}
	if has&fPower != 0 {
		o.ObserveFloat64(in.power, sm.power, d.base...)
	}
	if has&fPowerLimit != 0 {
		o.ObserveFloat64(in.powerLimit, sm.powerLimit, d.base...)
	}
	if has&fPowerAverage != 0 {
		o.ObserveFloat64(in.powerAverage, sm.powerAverage, d.base...)
	}
	if has&fEnergy != 0 {
		o.ObserveFloat64(in.energy, sm.energy, d.base...)
	}
	if has&fClockSM != 0 {
		o.ObserveFloat64(in.clock, sm.clockSM, d.clockSM...)
	}
	if has&fClockMemory != 0 {
		o.ObserveFloat64(in.clock, sm.clockMemory, d.clockMemory...)
	}
	if has&fPCIeTx != 0 {
		o.ObserveInt64(in.io, sm.pcieTx, d.ioTransmit...)
	}
	if has&fPCIeRx != 0 {
		o.ObserveInt64(in.io, sm.pcieRx, d.ioReceive...)
	}
	if has&fFan != 0 {
		o.ObserveFloat64(in.fan, sm.fan, d.base...)
	}
	if has&fECCCorrected != 0 {
		o.ObserveInt64(in.errors, sm.eccCorrected, d.errCorrected...)
	}
	if has&fECCUncorrected != 0 {
		o.ObserveInt64(in.errors, sm.eccUncorrected, d.errUncorrected...)
	}
	if has&fThrottle != 0 {
		for i, opts := range d.throttle {
			o.ObserveFloat64(in.throttle, float64(sm.throttle>>uint(i)&1), opts...)
		}
	}
	observeAccel(o, &in.accel, sm)
	for i := range sm.engines {
		e := &sm.engines[i]
		if t := int(e.tile) + 1; t < len(d.engine) {
			o.ObserveFloat64(in.engineUtilization, e.v, d.engine[t][e.class]...)
		}
	}
	for i := range sm.procs {
		p := &sm.procs[i]
		if p.hasMem {
			o.ObserveInt64(in.processMemory, p.memory, p.p.opts...)
		}
		if p.hasUtil {
			o.ObserveFloat64(in.processUtilization, p.util, p.p.opts...)
		}
		if p.engHave != 0 && p.p.engine != nil {
			for c := range numEngineClasses {
				if p.engHave&(1<<c) != 0 {
					o.ObserveFloat64(in.processEngineUtilization, p.eng[c], p.p.engine[c]...)
				}
			}
		}
	}
	if sm.folded > 0 {
		o.ObserveInt64(in.processMemory, sm.otherMemory, d.other...)
	}
	if sm.overflow > 0 {
		o.ObserveInt64(in.overflow, sm.overflow, sm.d.hwID...)
	}
}
