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
	in.suppressed = b.Counter(semconv.XpuscopeCUDASpansSuppressed)
	in.ringErrors = b.Counter(semconv.XpuscopeBPFRingErrors)
	in.outstanding = b.UpDownCounter(semconv.CUDAMemoryOutstanding)
	in.attached = b.UpDownCounter(semconv.XpuscopeCUDAAttachedFiles)
	in.oldestAge = b.Gauge(semconv.CUDAMemoryOldestAge)
	return b.Err()
}

func (in *instruments) observables() []metric.Observable {
	return []metric.Observable{
		in.launches, in.graphs, in.memcpy, in.allocated, in.freed, in.calls, in.errors,
		in.dropped, in.unresolved, in.overflow, in.suppressed, in.ringErrors, in.outstanding, in.attached, in.oldestAge,
		in.threadTime, in.threadUtilization, in.smActive, in.capacity, in.occupancyDropped,
	}
}

// observe reports the aggregated counters. It holds the aggregator's lock
// only while reading.
func (s *Source) observe(_ context.Context, o metric.Observer) error {
	in := &s.inst
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.agg
	for _, c := range a.launches {
		o.ObserveInt64(in.launches, c.n, c.attrs.Observe...)
	}
	for _, c := range a.graphs {
		o.ObserveInt64(in.graphs, c.n, c.attrs.Observe...)
	}
	for _, c := range a.memcpy {
		o.ObserveInt64(in.memcpy, c.n, c.attrs.Observe...)
	}
	for _, c := range a.allocated {
		o.ObserveInt64(in.allocated, c.n, c.attrs.Observe...)
	}
	for _, c := range a.freed {
		o.ObserveInt64(in.freed, c.n, c.attrs.Observe...)
	}
	for _, c := range a.errors {
		o.ObserveInt64(in.errors, c.n, c.attrs.Observe...)
	}
	now := s.mono()
	for _, p := range a.procs {
		o.ObserveInt64(in.outstanding, p.outstanding, p.attrs.Observe...)
		if at, ok := p.oldest(); ok && now > at {
			o.ObserveFloat64(in.oldestAge, float64(now-at)/1e9, p.attrs.Observe...)
		}
	}
	for _, c := range a.calls {
		o.ObserveInt64(in.calls, c.recorded+c.unrecorded, c.attrs.Observe...)
	}
	o.ObserveInt64(in.dropped, int64(s.bpfCounters[0]))
	o.ObserveInt64(in.unresolved, a.unresolved)
	o.ObserveInt64(in.overflow, a.overflow)
	o.ObserveInt64(in.suppressed, a.spans.suppressed)
	if s.ring != nil {
		s.ring.Observe(o, in.ringErrors)
	}
	for _, sr := range a.occ.series {
		o.ObserveFloat64(in.threadTime, sr.threadSeconds, sr.attrs.Observe...)
		o.ObserveInt64(in.capacity, sr.threads, sr.capacity.Observe...)
		if sr.reported {
			o.ObserveFloat64(in.threadUtilization, sr.threadRatio, sr.attrs.Observe...)
			o.ObserveFloat64(in.smActive, sr.smActive, sr.attrs.Observe...)
		}
	}
	for r, at := range a.occ.dropped {
		o.ObserveInt64(in.occupancyDropped, int64(a.occ.model.Dropped(occupancy.DropReason(r))), at.Observe...)
	}
	for target, n := range s.attachedByTarget {
		o.ObserveInt64(in.attached, n, s.targetAttrs[target].Observe...)
	}
	return nil
}
