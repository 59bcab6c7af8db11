package gpu

import (
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope/internal/meterx"
	"github.com/xpuscope/xpuscope/semconv"
)

// What the runtime backends (DCGM, RDC, the TPU runtime) share: the
// values they add to a sample, the series those values go to, and the
// self-metrics of their scrapes.

// accelValue is one value a runtime backend adds to a sample: a metric and
// the attributes that tell its series apart.
type accelValue uint8

const (
	avGraphics    accelValue = iota // gpu.graphics.utilization
	avSM                            // gpu.sm.utilization
	avOccupancy                     // gpu.sm.occupancy
	avTensor                        // gpu.pipe.utilization{tensor}
	avFP64                          // gpu.pipe.utilization{fp64}
	avFP32                          // gpu.pipe.utilization{fp32}
	avFP16                          // gpu.pipe.utilization{fp16}
	avDRAM                          // gpu.dram.utilization
	avPCIeTx                        // gpu.link.throughput{pcie, transmit}
	avPCIeRx                        // gpu.link.throughput{pcie, receive}
	avNVLinkTx                      // gpu.link.throughput{nvlink, transmit}
	avNVLinkRx                      // gpu.link.throughput{nvlink, receive}
	avXGMIRead                      // gpu.link.io{xgmi, receive}
	avXGMIWrite                     // gpu.link.io{xgmi, transmit}
	avMemRead                       // gpu.memory.throughput{read}
	avMemWrite                      // gpu.memory.throughput{write}
	avWaves                         // gpu.waves
	avTPUMemUsage                   // tpu.memory.usage
	avTPUMemLimit                   // tpu.memory.limit
	avTPUDuty                       // tpu.tensorcore.utilization
	avTPUQueue                      // tpu.hlo.queue.size
	avHLOMean                       // tpu.hlo.execution.duration{mean}
	avHLOP50                        // tpu.hlo.execution.duration{p50}
	avHLOP90                        // tpu.hlo.execution.duration{p90}
	avHLOP95                        // tpu.hlo.execution.duration{p95}
	avHLOP999                       // tpu.hlo.execution.duration{p999}
	numAccel
)

func kv(k attribute.Key, v string) []attribute.KeyValue { return []attribute.KeyValue{k.String(v)} }

func link(typ, dir string) []attribute.KeyValue {
	return []attribute.KeyValue{semconv.GPULinkType.String(typ), semconv.NetworkIODir.String(dir)}
}

// accelValues describes each value: its metric and its series' own
// attributes.
var accelValues = [numAccel]struct {
	metric semconv.Metric
	attrs  []attribute.KeyValue
}{
	avGraphics:    {semconv.GPUGraphicsUtilization, nil},
	avSM:          {semconv.GPUSMUtilization, nil},
	avOccupancy:   {semconv.GPUSMOccupancy, nil},
	avTensor:      {semconv.GPUPipeUtilization, kv(semconv.GPUPipe, semconv.PipeTensor)},
	avFP64:        {semconv.GPUPipeUtilization, kv(semconv.GPUPipe, semconv.PipeFP64)},
	avFP32:        {semconv.GPUPipeUtilization, kv(semconv.GPUPipe, semconv.PipeFP32)},
	avFP16:        {semconv.GPUPipeUtilization, kv(semconv.GPUPipe, semconv.PipeFP16)},
	avDRAM:        {semconv.GPUDRAMUtilization, nil},
	avPCIeTx:      {semconv.GPULinkThroughput, link(semconv.LinkPCIe, semconv.DirectionTransmit)},
	avPCIeRx:      {semconv.GPULinkThroughput, link(semconv.LinkPCIe, semconv.DirectionReceive)},
	avNVLinkTx:    {semconv.GPULinkThroughput, link(semconv.LinkNVLink, semconv.DirectionTransmit)},
	avNVLinkRx:    {semconv.GPULinkThroughput, link(semconv.LinkNVLink, semconv.DirectionReceive)},
	avXGMIRead:    {semconv.GPULinkIO, link(semconv.LinkXGMI, semconv.DirectionReceive)},
	avXGMIWrite:   {semconv.GPULinkIO, link(semconv.LinkXGMI, semconv.DirectionTransmit)},
	avMemRead:     {semconv.GPUMemoryThroughput, kv(semconv.GPUMemoryOperation, semconv.MemoryRead)},
	avMemWrite:    {semconv.GPUMemoryThroughput, kv(semconv.GPUMemoryOperation, semconv.MemoryWrite)},
	avWaves:       {semconv.GPUWaves, nil},
	avTPUMemUsage: {semconv.TPUMemoryUsage, nil},
	avTPUMemLimit: {semconv.TPUMemoryLimit, nil},
	avTPUDuty:     {semconv.TPUTensorCoreUtilization, nil},
	avTPUQueue:    {semconv.TPUHLOQueueSize, nil},
	avHLOMean:     {semconv.TPUHLOExecutionDuration, kv(semconv.TPUHLOStatistic, semconv.HLOStatisticMean)},
	avHLOP50:      {semconv.TPUHLOExecutionDuration, kv(semconv.TPUHLOStatistic, semconv.HLOStatisticP50)},
	avHLOP90:      {semconv.TPUHLOExecutionDuration, kv(semconv.TPUHLOStatistic, semconv.HLOStatisticP90)},
	avHLOP95:      {semconv.TPUHLOExecutionDuration, kv(semconv.TPUHLOStatistic, semconv.HLOStatisticP95)},
	avHLOP999:     {semconv.TPUHLOExecutionDuration, kv(semconv.TPUHLOStatistic, semconv.HLOStatisticP999)},
}

// setAccel sets value av of sm.
func (sm *sample) setAccel(av accelValue, v float64) {
	sm.acc[av] = v
	sm.accHave |= 1 << av
}

// accelInstruments are the runtime backends' instruments: one per metric,
// and for each value the one it is observed with.
type accelInstruments struct {
	float [numAccel]metric.Float64Observable // gauges
	int   [numAccel]metric.Int64Observable   // counters and up-down counters
	all   []metric.Observable

	misses, blanks metric.Int64ObservableCounter
	unavailable    metric.Int64ObservableUpDownCounter
}

func (in *accelInstruments) create(b *meterx.Builder) {
	byName := map[string]metric.Observable{}
	for av := range numAccel {
		m := accelValues[av].metric
		o, ok := byName[m.Name]
		if !ok {
			switch m.Kind {
			case semconv.Gauge:
				o = b.Gauge(m)
			case semconv.Counter:
				o = b.Counter(m)
			case semconv.UpDownCounter:
				o = b.UpDownCounter(m)
			}
			byName[m.Name] = o
			in.all = append(in.all, o)
		}
		switch o := o.(type) {
		case metric.Float64Observable:
			in.float[av] = o
		case metric.Int64Observable:
			in.int[av] = o
		}
	}
	in.misses = b.Counter(semconv.XpuscopeGPUScrapeMisses)
	in.blanks = b.Counter(semconv.XpuscopeGPUSamplesBlank)
	in.unavailable = b.UpDownCounter(semconv.XpuscopeGPUFieldUnavailable)
	in.all = append(in.all, in.misses, in.blanks, in.unavailable)
}

// observeAccel reports the runtime backends' values of sm.
func observeAccel(o metric.Observer, in *accelInstruments, sm *sample) {
	if sm.accHave == 0 {
		return
	}
	for av := range numAccel {
		if sm.accHave&(1<<av) == 0 {
			continue
		}
		if f := in.float[av]; f != nil {
			o.ObserveFloat64(f, sm.acc[av], sm.s.accel[av]...)
		} else {
			o.ObserveInt64(in.int[av], int64(sm.acc[av]), sm.s.accel[av]...)
		}
	}
}

// accelSeries builds the attribute sets of each value of a runtime
// backend's device, over all.
func accelSeries(all []attribute.KeyValue) []opts {
	out := make([]opts, numAccel)
	for av := range numAccel {
		out[av] = newOpts(append(all[:len(all):len(all)], accelValues[av].attrs...)...)
	}
	return out
}

// scrapeKey is one series of the runtime backends' self-metrics.
type scrapeKey struct {
	device, backend, field, reason string
}

// scrapeCounts counts by scrapeKey, each key's attribute set made once.
// Its size is bounded by devices × fields × reasons.
type scrapeCounts struct {
	mu     sync.Mutex
	counts map[scrapeKey]*readErrorCount
}

func (c *scrapeCounts) add(device string, b Backend, field, reason string, n int64) {
	k := scrapeKey{device, string(b), field, reason}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.counts[k]
	if e == nil {
		if c.counts == nil {
			c.counts = map[scrapeKey]*readErrorCount{}
		}
		kvs := []attribute.KeyValue{semconv.XpuscopeGPUBackend.String(string(b)), semconv.XpuscopeGPUReason.String(reason)}
		if field != "" {
			kvs = append(kvs, semconv.XpuscopeGPUField.String(field))
		}
		if device != "" {
			kvs = append(kvs, semconv.HWID.String(device))
		}
		e = &readErrorCount{opts: newOpts(kvs...)}
		c.counts[k] = e
	}
	e.n += n
}

// count returns the count of one key: for tests.
func (c *scrapeCounts) count(device string, b Backend, field, reason string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.counts[scrapeKey{device, string(b), field, reason}]; e != nil {
		return e.n
	}
	return 0
}

func (c *scrapeCounts) observe(o metric.Observer, inst metric.Int64Observable) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.counts {
		o.ObserveInt64(inst, e.n, e.opts...)
	}
}

// scrapeStats are the runtime backends' self-metrics.
type scrapeStats struct {
	misses, blanks scrapeCounts
	// unavailable holds 1 per field a backend could not watch on a device.
	unavailable scrapeCounts
}

func (st *scrapeStats) observe(o metric.Observer, in *accelInstruments) {
	st.misses.observe(o, in.misses)
	st.blanks.observe(o, in.blanks)
	st.unavailable.observe(o, in.unavailable)
}

// newAccelDevice is a runtime backend's device: info's identity, with
// gpu.measurement.source, known to the kubelet as podID. Its own series
// are apart from those of the backend that found the same device (NVML,
// AMD SMI, ROCm SMI), and carry the same hw.id.
func newAccelDevice(info Device, vendor, typ, driver, podID, source string) *device {
	info.Vendor = vendor
	d := &device{Device: info, mig: info.Parent != "", procs: map[uint32]*process{}, podID: podID, source: source, driver: driver}
	d.attrs = []attribute.KeyValue{
		semconv.HWID.String(info.UUID),
		semconv.HWName.String(info.Name),
		semconv.HWVendor.String(vendor),
		semconv.HWType.String(typ),
		semconv.GPUIndex.Int(info.Index),
		semconv.GPUPCIAddress.String(info.PCIAddress),
	}
	if driver != "" { // a TPU's is not known
		d.attrs = append(d.attrs, semconv.HWDriverVersion.String(driver))
	}
	if d.mig {
		d.attrs = append(d.attrs,
			semconv.HWParent.String(info.Parent),
			semconv.GPUMIGGPUInstanceID.Int(info.GPUInstanceID),
			semconv.GPUMIGComputeInstance.Int(info.ComputeInstanceID),
		)
		if info.Profile != "" {
			d.attrs = append(d.attrs, semconv.GPUMIGProfile.String(info.Profile))
		}
	}
	d.attrs = append(d.attrs, semconv.GPUMeasurementSource.String(source))
	d.series = d.newSeries(nil)
	d.xid.attrs = d.attrs
	d.hwID = newOpts(semconv.HWID.String(info.UUID))
	return d
}
