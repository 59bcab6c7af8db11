package serving

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/meterx"
	"github.com/xpuscope/xpuscope/semconv"
)

// Producer reports the model servers' histograms as the servers keep
// them, to the OpenTelemetry SDK readers it is registered on: it is a
// go.opentelemetry.io/otel/sdk/metric Producer, for
// sdkmetric.WithProducer and the Prometheus exporter's WithProducer.
//
// A server exports its histograms aggregated: cumulative bucket counts
// over its own bucket bounds (vLLM's time to first token has 22, from 1
// ms to 2560 s; TGI's durations 35 of a geometric sequence). An SDK
// histogram instrument records one value at a time into bounds fixed
// when it is made, the same for every series: re-recording a server's
// buckets into it would move every count to another bucket's bounds, and
// lose what the server measured. The Producer hands the readers each
// server's histogram as it is: its bounds, each bucket's count, the
// count and the sum, as a cumulative histogram whose start is when the
// Source first read it (or when the server's count went down: it
// restarted).
//
// Readers take their producers when they are made: create the Producer
// first, then the readers, the MeterProvider and the Source. One
// Producer serves several Sources.
type Producer struct {
	sources meterx.Sources[*Source]
}

// NewProducer returns a Producer for WithProducer.
func NewProducer() *Producer { return &Producer{} }

// Produce returns the histograms of the last scrape of every open Source
// given p, under ScopeName.
func (p *Producer) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	sources := p.sources.List()
	var out []metricdata.ScopeMetrics
	now := time.Now()
	for _, s := range sources {
		sn := s.snap.Load()
		if sn == nil || len(sn.hists) == 0 {
			continue
		}
		out = append(out, metricdata.ScopeMetrics{
			Scope:   instrumentation.Scope{Name: ScopeName, Version: xpuscope.Version},
			Metrics: histograms(sn.hists, now),
		})
	}
	return out, nil
}

// histograms groups the points by metric, as cumulative histograms. The
// buckets are the snapshot's, which is never changed: they are shared,
// not copied.
func histograms(points []histPoint, now time.Time) []metricdata.Metrics {
	var out []metricdata.Metrics
	for _, d := range []*semconv.Metric{
		&semconv.GenAIServerRequestDuration, &semconv.GenAIServerTimeToFirstToken,
		&semconv.GenAIServerTimePerOutputToken, &semconv.XpuscopeGenAIServerQueueDuration,
	} {
		var dps []metricdata.HistogramDataPoint[float64]
		for i := range points {
			p := &points[i]
			if p.metric != d {
				continue
			}
			dps = append(dps, metricdata.HistogramDataPoint[float64]{
				Attributes:   p.attrs,
				StartTime:    p.start,
				Time:         now,
				Count:        p.h.count,
				Bounds:       p.h.bounds,
				BucketCounts: p.h.counts,
				Sum:          p.h.sum,
			})
		}
		if len(dps) > 0 {
			out = append(out, metricdata.Metrics{Name: d.Name, Description: d.Description, Unit: d.Unit,
				Data: metricdata.Histogram[float64]{DataPoints: dps, Temporality: metricdata.CumulativeTemporality}})
		}
	}
	return out
}
