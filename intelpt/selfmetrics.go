package intelpt

import (
	"context"
	"fmt"
	"sync/atomic"

	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/meterx"
	"github.com/xpuscope/xpuscope/semconv"
)

type stats struct {
	done            [len(stops)]atomic.Int64
	refused, failed atomic.Int64
	bytes           atomic.Int64
	truncated, lost atomic.Int64
}

type instruments struct {
	captures metric.Int64ObservableCounter
	active   metric.Int64ObservableUpDownCounter
	bytes    metric.Int64ObservableCounter
	lost     metric.Int64ObservableCounter

	doneAttrs            [len(stops)]meterx.Attrs
	refusedAttrs         meterx.Attrs
	failedAttrs          meterx.Attrs
	truncAttrs, recAttrs meterx.Attrs
}

func (s *Source) register() error {
	m := s.cfg.meterProvider.Meter(ScopeName, metric.WithInstrumentationVersion(xpuscope.Version))
	b := meterx.Builder{Meter: m}
	in := &s.inst
	in.captures = b.Counter(semconv.XpuscopeIntelPTCaptures)
	in.active = b.UpDownCounter(semconv.XpuscopeIntelPTActive)
	in.bytes = b.Counter(semconv.XpuscopeIntelPTBytes)
	in.lost = b.Counter(semconv.XpuscopeIntelPTLost)
	if err := b.Err(); err != nil {
		return fmt.Errorf("intelpt: %w", err)
	}
	for i, stop := range stops {
		in.doneAttrs[i] = meterx.NewAttrs(semconv.XpuscopeIntelPTOutcome.String(semconv.IntelPTDone), semconv.XpuscopeIntelPTStop.String(stop))
	}
	in.refusedAttrs = meterx.NewAttrs(semconv.XpuscopeIntelPTOutcome.String(semconv.IntelPTRefused))
	in.failedAttrs = meterx.NewAttrs(semconv.XpuscopeIntelPTOutcome.String(semconv.IntelPTFailed))
	in.truncAttrs = meterx.NewAttrs(semconv.XpuscopeIntelPTLoss.String(semconv.IntelPTLossTruncated))
	in.recAttrs = meterx.NewAttrs(semconv.XpuscopeIntelPTLoss.String(semconv.IntelPTLossRecords))
	var err error
	if s.reg, err = m.RegisterCallback(s.observe, in.captures, in.active, in.bytes, in.lost); err != nil {
		return fmt.Errorf("intelpt: register callback: %w", err)
	}
	return nil
}

// observe reports the counters; it reads atomics and the running count.
func (s *Source) observe(_ context.Context, o metric.Observer) error {
	in := &s.inst
	for i := range stops {
		o.ObserveInt64(in.captures, s.stats.done[i].Load(), in.doneAttrs[i].Observe...)
	}
	o.ObserveInt64(in.captures, s.stats.refused.Load(), in.refusedAttrs.Observe...)
	o.ObserveInt64(in.captures, s.stats.failed.Load(), in.failedAttrs.Observe...)
	s.mu.Lock()
	running := len(s.cancels)
	s.mu.Unlock()
	o.ObserveInt64(in.active, int64(running))
	o.ObserveInt64(in.bytes, s.stats.bytes.Load())
	o.ObserveInt64(in.lost, s.stats.truncated.Load(), in.truncAttrs.Observe...)
	o.ObserveInt64(in.lost, s.stats.lost.Load(), in.recAttrs.Observe...)
	return nil
}
