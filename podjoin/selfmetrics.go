package podjoin

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/meterx"
	"github.com/xpuscope/xpuscope/semconv"
)

type instruments struct {
	resolves    metric.Int64ObservableCounter
	kubeletUp   metric.Float64ObservableGauge
	kubeletErrs metric.Int64ObservableCounter
	shared      metric.Int64ObservableUpDownCounter

	resultAttrs [numResults]meterx.Attrs
	callAttrs   [numCalls]meterx.Attrs
}

var callNames = [numCalls]string{semconv.PodjoinCallList, semconv.PodjoinCallAllocatable}

// register creates the self-metrics and the callback that reports them.
func (r *Resolver) register() error {
	m := r.cfg.meterProvider.Meter(ScopeName, metric.WithInstrumentationVersion(xpuscope.Version))
	in := &r.inst
	var err error
	if in.resolves, err = meterx.Int64ObservableCounter(m, semconv.XpuscopePodjoinResolves); err != nil {
		return fmt.Errorf("podjoin: %w", err)
	}
	if in.kubeletUp, err = meterx.Float64ObservableGauge(m, semconv.XpuscopePodjoinKubeletUp); err != nil {
		return fmt.Errorf("podjoin: %w", err)
	}
	if in.kubeletErrs, err = meterx.Int64ObservableCounter(m, semconv.XpuscopePodjoinKubeletErrors); err != nil {
		return fmt.Errorf("podjoin: %w", err)
	}
	if in.shared, err = meterx.Int64ObservableUpDownCounter(m, semconv.XpuscopePodjoinDevicesShared); err != nil {
		return fmt.Errorf("podjoin: %w", err)
	}
	for i, name := range resultNames {
		in.resultAttrs[i] = meterx.NewAttrs(semconv.XpuscopePodjoinResult.String(name))
	}
	for i, name := range callNames {
		in.callAttrs[i] = meterx.NewAttrs(semconv.XpuscopePodjoinKubeletCall.String(name))
	}
	r.reg, err = m.RegisterCallback(r.observe, in.resolves, in.kubeletUp, in.kubeletErrs, in.shared)
	if err != nil {
		return fmt.Errorf("podjoin: register callback: %w", err)
	}
	return nil
}

// observe reports counters and the last kubelet state; it reads only
// atomics.
func (r *Resolver) observe(_ context.Context, o metric.Observer) error {
	in := &r.inst
	for i := range r.resolves {
		o.ObserveInt64(in.resolves, r.resolves[i].Load(), in.resultAttrs[i].Observe...)
	}
	if r.client == nil {
		return nil
	}
	st := r.Status()
	up := 0.0
	if st.KubeletUp {
		up = 1
	}
	o.ObserveFloat64(in.kubeletUp, up)
	for i := range r.kubeErrs {
		o.ObserveInt64(in.kubeletErrs, r.kubeErrs[i].Load(), in.callAttrs[i].Observe...)
	}
	o.ObserveInt64(in.shared, int64(st.Shared))
	return nil
}
