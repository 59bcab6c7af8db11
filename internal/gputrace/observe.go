package gputrace

import (
	"context"

	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope/internal/meterx"
	"github.com/xpuscope/xpuscope/occupancy"
	"github.com/xpuscope/xpuscope/semconv"
)

type instruments struct {
	gridSize, blockSize, sharedMemory metric.Int64Histogram
	syncDuration, kernelDuration      metric.Float64Histogram
	threadTime                        metric.Float64ObservableCounter
	threadUtilization, smActive       metric.Float64ObservableGauge
	capacity                          metric.Int64ObservableUpDownCounter
	occupancyDropped                  metric.Int64ObservableCounter

	launches, graphs, memcpy, allocated, freed, calls, errors metric.Int64ObservableCounter
	dropped, unresolved, overflow, suppressed, ringErrors     metric.Int64ObservableCounter
	unknownReplays                                            metric.Int64ObservableCounter
	ncclCalls, ncclBytes                                      metric.Int64ObservableCounter
	ncclSequence, ncclAge                                     metric.Float64ObservableGauge
	ncclTimed, inspErrors                                     metric.Int64ObservableCounter
	ncclTime, ncclBusBytes, ncclOpBytes                       metric.Float64ObservableCounter
	inspTime, inspBusBW, inspAlgoBW                           metric.Float64ObservableGauge
	processOverflow, attachedLate                             metric.Int64ObservableCounter
	outstanding, attached                                     metric.Int64ObservableUpDownCounter
	oldestAge                                                 metric.Float64ObservableGauge
}

func (in *instruments) create(m metric.Meter) error {
	b := meterx.Builder{Meter: m}
	in.gridSize = b.IntHistogram(semconv.CUDAKernelGridSize)
	in.blockSize = b.IntHistogram(semconv.CUDAKernelBlockSize)
	in.sharedMemory = b.IntHistogram(semconv.CUDAKernelSharedMemory)
	in.syncDuration = b.Histogram(semconv.CUDASyncDuration)
	in.kernelDuration = b.Histogram(semconv.GPUKernelDuration)
	in.threadTime = b.FloatCounter(semconv.ProcessGPUThreadTime)
	in.threadUtilization = b.Gauge(semconv.ProcessGPUThreadUtilization)
	in.smActive = b.Gauge(semconv.ProcessGPUSMActiveRatio)
	in.capacity = b.UpDownCounter(semconv.GPUCapacityThreads)
	in.occupancyDropped = b.Counter(semconv.XpuscopeOccupancyDropped)
	in.launches = b.Counter(semconv.CUDAKernelLaunches)
	in.graphs = b.Counter(semconv.CUDAGraphLaunches)
	in.memcpy = b.Counter(semconv.CUDAMemcpyTransferred)
	in.allocated = b.Counter(semconv.CUDAMemoryAllocated)
	in.freed = b.Counter(semconv.CUDAMemoryFreed)
	in.calls = b.Counter(semconv.CUDAAPICalls)
	in.errors = b.Counter(semconv.CUDAAPIErrors)
	in.dropped = b.Counter(semconv.XpuscopeCUDAEventsDropped)
	in.unresolved = b.Counter(semconv.XpuscopeCUDAKernelNamesUnresolved)
	in.overflow = b.Counter(semconv.XpuscopeCUDAKernelNamesOverflow)
	in.unknownReplays = b.Counter(semconv.XpuscopeCUDAGraphReplaysUnknown)
	in.suppressed = b.Counter(semconv.XpuscopeCUDASpansSuppressed)
	in.processOverflow = b.Counter(semconv.XpuscopeCUDAProcessOverflow)
	in.ringErrors = b.Counter(semconv.XpuscopeBPFRingErrors)
	in.attachedLate = b.Counter(semconv.XpuscopeUprobeAttachedLate)
	in.outstanding = b.UpDownCounter(semconv.CUDAMemoryOutstanding)
	in.attached = b.UpDownCounter(semconv.XpuscopeCUDAAttachedFiles)
	in.oldestAge = b.Gauge(semconv.CUDAMemoryOldestAge)
	in.ncclCalls = b.Counter(semconv.GPUNCCLCalls)
	in.ncclBytes = b.Counter(semconv.GPUNCCLBytes)
	in.ncclSequence = b.Gauge(semconv.GPUNCCLSequence)
	in.ncclAge = b.Gauge(semconv.GPUNCCLLastCollectiveAge)
	in.ncclTimed = b.Counter(semconv.GPUNCCLOpTimed)
	in.ncclTime = b.FloatCounter(semconv.GPUNCCLOpTime)
	in.ncclBusBytes = b.FloatCounter(semconv.GPUNCCLBusBytes)
	in.ncclOpBytes = b.FloatCounter(semconv.GPUNCCLOpBytes)
	in.inspTime = b.Gauge(semconv.GPUNCCLInspectorOpTime)
	in.inspBusBW = b.Gauge(semconv.GPUNCCLInspectorBusBandwidth)
	in.inspAlgoBW = b.Gauge(semconv.GPUNCCLInspectorAlgoBandwidth)
	in.inspErrors = b.Counter(semconv.XpuscopeNCCLInspectorErrors)
	return b.Err()
}

func (in *instruments) observables() []metric.Observable {
	return []metric.Observable{
		in.launches, in.graphs, in.memcpy, in.allocated, in.freed, in.calls, in.errors,
		in.dropped, in.unresolved, in.overflow, in.unknownReplays, in.suppressed, in.processOverflow, in.ringErrors, in.attachedLate, in.outstanding, in.attached, in.oldestAge,
		in.threadTime, in.threadUtilization, in.smActive, in.capacity, in.occupancyDropped,
		in.ncclCalls, in.ncclBytes, in.ncclSequence, in.ncclAge,
		in.ncclTimed, in.ncclTime, in.ncclBusBytes, in.ncclOpBytes, in.inspErrors,
		in.inspTime, in.inspBusBW, in.inspAlgoBW,
	}
}

// snapshot is what the metric callback (and a Producer) reports: the
// aggregator's values, copied by the reader (publish), so that a
// collection neither waits for the reader nor holds it up. Two alternate:
// the reader fills the back one while collections read the front one,
// and buffers are reused.
type snapshot struct {
	at     uint64 // ktime of the publish
	ints   []intPoint
	floats []floatPoint
	// oldest are the processes' oldest outstanding allocations: their
	// age is taken at collection.
	oldest []allocPoint
	// ncclLast are the NCCL ranks' last collectives: their age too.
	ncclLast []allocPoint
	// The histograms the aggregator keeps (with a Producer), and their
	// bucket counts.
	intHists   []histPoint[int64]
	floatHists []histPoint[float64]
	buckets    []uint64
}

type allocPoint struct {
	at    uint64 // ktime
	attrs []metric.ObserveOption
}

type intPoint struct {
	inst  metric.Int64Observable
	value int64
	attrs []metric.ObserveOption
}

type floatPoint struct {
	inst  metric.Float64Observable
	value float64
	attrs []metric.ObserveOption
}

func (sn *snapshot) int(inst metric.Int64Observable, v int64, attrs ...metric.ObserveOption) {
	sn.ints = append(sn.ints, intPoint{inst, v, attrs})
}

func (sn *snapshot) float(inst metric.Float64Observable, v float64, attrs ...metric.ObserveOption) {
	sn.floats = append(sn.floats, floatPoint{inst, v, attrs})
}

// publish copies the aggregated values into a snapshot and makes it the
// one collections read. The reader calls it after each batch of records
// and at housekeeping.
func (s *Source) publish() {
	sn := &s.back
	sn.ints, sn.floats, sn.oldest, sn.ncclLast = sn.ints[:0], sn.floats[:0], sn.oldest[:0], sn.ncclLast[:0]
	sn.intHists, sn.floatHists, sn.buckets = sn.intHists[:0], sn.floatHists[:0], sn.buckets[:0]
	s.mu.Lock()
	sn.at = s.mono()
	s.fill(sn)
	if s.agg.own {
		s.fillHists(sn)
	}
	s.mu.Unlock()
	s.snapMu.Lock()
	s.front, s.back = s.back, s.front
	s.snapMu.Unlock()
}

// fill copies the aggregated values into sn; s.mu held.
func (s *Source) fill(sn *snapshot) {
	in := &s.inst
	a := s.agg
	for _, c := range a.launches {
		sn.int(in.launches, c.n, c.attrs.Observe...)
	}
	for _, c := range a.graphs {
		sn.int(in.graphs, c.n, c.attrs.Observe...)
	}
	for _, c := range a.memcpy {
		sn.int(in.memcpy, c.n, c.attrs.Observe...)
	}
	for _, c := range a.allocated {
		sn.int(in.allocated, c.n, c.attrs.Observe...)
	}
	for _, c := range a.freed {
		sn.int(in.freed, c.n, c.attrs.Observe...)
	}
	for _, c := range a.errors {
		sn.int(in.errors, c.n, c.attrs.Observe...)
	}
	for _, p := range a.procs {
		sn.proc(in, p)
		if p.nccl != nil {
			sn.fillNCCL(in, p.nccl)
			sn.fillInspector(in, p.nccl)
		}
	}
	if len(a.folded) > 0 || a.other.outstanding != 0 {
		sn.proc(in, a.other)
	}
	for _, c := range a.calls {
		sn.int(in.calls, c.recorded+c.unrecorded, c.attrs.Observe...)
	}
	sn.int(in.dropped, int64(s.bpfCounters[0]))
	sn.int(in.unresolved, a.unresolved)
	sn.int(in.overflow, a.overflow)
	sn.int(in.unknownReplays, a.unknownReplays)
	sn.int(in.suppressed, a.spans.suppressed)
	sn.int(in.processOverflow, a.procOverflow)
	sn.int(in.inspErrors, s.inspReadErrors, inspReadAttrs...)
	sn.int(in.inspErrors, s.inspRecordErrors, inspRecordAttrs...)
	sn.int(in.inspErrors, s.inspUnjoined, inspUnjoinedAttrs...)
	for _, sr := range a.occ.series {
		sn.float(in.threadTime, sr.threadSeconds, sr.attrs.Observe...)
		sn.int(in.capacity, sr.threads, sr.capacity.Observe...)
		if sr.reported {
			sn.float(in.threadUtilization, sr.threadRatio, sr.attrs.Observe...)
			sn.float(in.smActive, sr.smActive, sr.attrs.Observe...)
		}
	}
	for r, at := range a.occ.dropped {
		sn.int(in.occupancyDropped, int64(a.occ.model.Dropped(occupancy.DropReason(r))), at.Observe...)
	}
	for target, n := range s.attachedByTarget {
		sn.int(in.attached, n, s.targetAttrs[target].Observe...)
	}
}

// proc copies p's memory gauges into sn.
func (sn *snapshot) proc(in *instruments, p *proc) {
	sn.int(in.outstanding, p.outstanding, p.attrs.Observe...)
	if at, ok := p.oldest(); ok {
		sn.oldest = append(sn.oldest, allocPoint{at, p.attrs.Observe})
	}
}

// markCollected notes that a collection reported sn: the series of exited
// processes that it holds the last values of may go (forget).
func (s *Source) markCollected(sn *snapshot) {
	for {
		c := s.collected.Load()
		if sn.at <= c || s.collected.CompareAndSwap(c, sn.at) {
			return
		}
	}
}

// observe reports the last published snapshot, and the ring reader's
// errors.
func (s *Source) observe(_ context.Context, o metric.Observer) error {
	now := s.mono()
	s.snapMu.RLock()
	defer s.snapMu.RUnlock()
	sn := &s.front
	s.markCollected(sn)
	for _, p := range sn.ints {
		o.ObserveInt64(p.inst, p.value, p.attrs...)
	}
	for _, p := range sn.floats {
		o.ObserveFloat64(p.inst, p.value, p.attrs...)
	}
	for _, p := range sn.oldest {
		if now > p.at {
			o.ObserveFloat64(s.inst.oldestAge, float64(now-p.at)/1e9, p.attrs...)
		}
	}
	for _, p := range sn.ncclLast {
		o.ObserveFloat64(s.inst.ncclAge, float64(now-min(now, p.at))/1e9, p.attrs...)
	}
	if r := s.kernel.Ring; r != nil {
		r.Observe(o, s.inst.ringErrors)
	}
	s.tracer.ObserveLate(o, s.inst.attachedLate)
	return nil
}
