package gputrace

import (
	"context"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/meterx"
	"github.com/xpuscope/xpuscope/semconv"
)

// Producer reports the histograms that the Sources given it (WithProducer)
// keep themselves, to the OpenTelemetry SDK readers it is registered on
// (a metric.Producer of go.opentelemetry.io/otel/sdk/metric). It reports
// at each collection what the Sources last published, as cumulative
// histograms in the registry's bounds, under each Source's scope. Create
// it before the readers, which take their producers when they are made,
// and so before the Sources.
type Producer struct {
	sources meterx.Sources[*Source]
}

// NewProducer returns a Producer with no Source yet.
func NewProducer() *Producer { return &Producer{} }

// Produce returns the histograms of every open Source given the Producer.
func (p *Producer) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	sources := p.sources.List()
	now := time.Now()
	out := make([]metricdata.ScopeMetrics, 0, len(sources))
	for _, s := range sources {
		if sm, ok := s.produce(now); ok {
			out = append(out, sm)
		}
	}
	return out, nil
}

// histPoint is one histogram series in a snapshot; its bucket counts are
// buckets[off:off+len(metric.Buckets)+1] of the snapshot.
type histPoint[N number] struct {
	metric        *semconv.Metric
	attrs         attribute.Set
	start         time.Time
	count         uint64
	sum, min, max N
	off           int
}

// snapHist copies h, a series of d, into sn.
func snapHist[N number](sn *snapshot, points *[]histPoint[N], d *semconv.Metric, attrs attribute.Set, h *hist[N]) {
	if h.count == 0 {
		return
	}
	*points = append(*points, histPoint[N]{metric: d, attrs: attrs, start: h.start, count: h.count,
		sum: h.sum, min: h.min, max: h.max, off: len(sn.buckets)})
	sn.buckets = append(sn.buckets, h.counts...)
}

// fillHists copies the histograms the aggregator keeps into sn, metric by
// metric; s.mu held.
func (s *Source) fillHists(sn *snapshot) {
	a := s.agg
	for _, h := range a.hist {
		snapHist(sn, &sn.intHists, &semconv.CUDAKernelGridSize, h.attrs.Set, &h.grid)
	}
	for _, h := range a.hist {
		snapHist(sn, &sn.intHists, &semconv.CUDAKernelBlockSize, h.attrs.Set, &h.block)
	}
	for _, h := range a.hist {
		snapHist(sn, &sn.intHists, &semconv.CUDAKernelSharedMemory, h.attrs.Set, &h.smem)
	}
	for _, h := range a.syncHist {
		snapHist(sn, &sn.floatHists, &semconv.CUDASyncDuration, h.attrs.Set, &h.own)
	}
	for _, h := range a.occ.duration {
		snapHist(sn, &sn.floatHists, &semconv.GPUKernelDuration, h.attrs.Set, &h.own)
	}
}

// produce returns the histograms of the last published snapshot, as of
// now; false when there are none.
func (s *Source) produce(now time.Time) (metricdata.ScopeMetrics, bool) {
	s.snapMu.RLock()
	defer s.snapMu.RUnlock()
	sn := &s.front
	s.markCollected(sn)
	var metrics []metricdata.Metrics
	metrics = appendHists(metrics, sn, sn.intHists, now)
	metrics = appendHists(metrics, sn, sn.floatHists, now)
	if len(metrics) == 0 {
		return metricdata.ScopeMetrics{}, false
	}
	return metricdata.ScopeMetrics{
		Scope:   instrumentation.Scope{Name: s.rt.ScopeName(), Version: xpuscope.Version},
		Metrics: metrics,
	}, true
}

// appendHists appends points, grouped by metric (fillHists wrote them so),
// as cumulative histograms. The data is copied: the snapshot's buffers
// are reused by the next publish, while an exporter may still hold it.
func appendHists[N number](out []metricdata.Metrics, sn *snapshot, points []histPoint[N], now time.Time) []metricdata.Metrics {
	for i := 0; i < len(points); {
		d := points[i].metric
		var dps []metricdata.HistogramDataPoint[N]
		for ; i < len(points) && points[i].metric == d; i++ {
			p := &points[i]
			dps = append(dps, metricdata.HistogramDataPoint[N]{
				Attributes:   p.attrs,
				StartTime:    p.start,
				Time:         now,
				Count:        p.count,
				Bounds:       d.Buckets,
				BucketCounts: slices.Clone(sn.buckets[p.off : p.off+len(d.Buckets)+1]),
				Min:          metricdata.NewExtrema(p.min),
				Max:          metricdata.NewExtrema(p.max),
				Sum:          p.sum,
			})
		}
		out = append(out, metricdata.Metrics{Name: d.Name, Description: d.Description, Unit: d.Unit,
			Data: metricdata.Histogram[N]{DataPoints: dps, Temporality: metricdata.CumulativeTemporality}})
	}
	return out
}
