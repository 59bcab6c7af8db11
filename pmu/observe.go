package pmu

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/meterx"
	"github.com/xpuscope/xpuscope/semconv"
)

type instruments struct {
	io, utilization, coverage, running metric.Float64Observable
	events, skipped                    metric.Int64ObservableUpDownCounter
	familyUnknown                      metric.Float64ObservableGauge
	readErrors, reopens                metric.Int64ObservableCounter

	sourceAttrs [2]meterx.Attrs // sysfs, table
	ctrlAttrs   []meterx.Attrs  // by controller index
}

// snapshot is what one poll read, for the callback to report.
type snapshot struct {
	io       []seriesValue
	util     []utilValue
	sockets  []socketValue
	errs     []errValue
	reopens  int64
	sysfs    int64 // events in use, by where their encoding came from
	table    int64
	skipped  int64
	unknown  float64
	hasValue bool
}

type seriesValue struct {
	attrs *meterx.Attrs
	bytes float64
}

type utilValue struct {
	attrs *meterx.Attrs
	ratio float64
}

type socketValue struct {
	attrs             *meterx.Attrs
	coverage, running float64 // running NaN: no counter ran
}

type errValue struct {
	attrs *meterx.Attrs
	n     int64
}

func (s *Source) register() error {
	m := s.cfg.meterProvider.Meter(ScopeName, metric.WithInstrumentationVersion(xpuscope.Version))
	b := meterx.Builder{Meter: m}
	in := &s.inst
	in.io = b.FloatCounter(semconv.HWCPUMemoryIO)
	in.utilization = b.Gauge(semconv.HWCPUMemoryUtilization)
	in.coverage = b.Gauge(semconv.XpuscopePMUCoverage)
	in.running = b.Gauge(semconv.XpuscopePMURunningRatio)
	in.events = b.UpDownCounter(semconv.XpuscopePMUEvents)
	in.skipped = b.UpDownCounter(semconv.XpuscopePMUSysfsSkipped)
	in.familyUnknown = b.Gauge(semconv.XpuscopePMUFamilyUnknown)
	in.readErrors = b.Counter(semconv.XpuscopePMUReadErrors)
	in.reopens = b.Counter(semconv.XpuscopePMUReopens)
	if err := b.Err(); err != nil {
		return fmt.Errorf("pmu: %w", err)
	}
	in.sourceAttrs = [2]meterx.Attrs{
		meterx.NewAttrs(semconv.XpuscopePMUEventSource.String(semconv.PMUEventSysfs)),
		meterx.NewAttrs(semconv.XpuscopePMUEventSource.String(semconv.PMUEventTable)),
	}
	obs := []metric.Observable{in.coverage, in.running, in.events, in.skipped, in.familyUnknown, in.readErrors, in.reopens, in.io}
	if s.cfg.peakSet {
		obs = append(obs, in.utilization)
	}
	var err error
	if s.reg, err = m.RegisterCallback(s.observe, obs...); err != nil {
		return fmt.Errorf("pmu: register callback: %w", err)
	}
	return nil
}

// publish fills the back snapshot from what poll read and swaps it in.
// Its slices are reused: a steady poll allocates nothing.
func (s *Source) publish() {
	sn := s.back
	sn.io = sn.io[:0]
	for _, se := range s.series {
		sn.io = append(sn.io, seriesValue{&se.attrs, se.bytes})
	}
	sn.util = sn.util[:0]
	if s.cfg.peakSet {
		s.publishUtil(sn)
	}
	sn.sockets = sn.sockets[:0]
	for _, st := range s.sockets {
		cov := 0.0
		if st.expected > 0 {
			cov = float64(st.read) / float64(st.expected)
		}
		run := math.NaN()
		if st.enabled > 0 {
			run = float64(st.running) / float64(st.enabled)
		}
		sn.sockets = append(sn.sockets, socketValue{&st.attrs, cov, run})
	}
	sn.errs = sn.errs[:0]
	for name, n := range s.errs {
		a, ok := s.errAttrs[name]
		if !ok {
			na := meterx.NewAttrs(semconv.ErrorType.String(name))
			a = &na
			s.errAttrs[name] = a
		}
		sn.errs = append(sn.errs, errValue{a, n})
	}
	sn.reopens = s.reopens
	sn.sysfs, sn.table = 0, 0
	for _, ev := range s.plan.events {
		if ev.source == semconv.PMUEventTable {
			sn.table++
		} else {
			sn.sysfs++
		}
	}
	sn.skipped = int64(len(s.plan.skipped))
	sn.unknown = 0
	if s.plan.family == nil {
		sn.unknown = 1
	}
	sn.hasValue = true
	s.snapMu.Lock()
	s.front, s.back = sn, s.front
	s.snapMu.Unlock()
}

// publishUtil adds each controller's utilization: both directions' bytes
// of the interval over the peak times the interval's length.
func (s *Source) publishUtil(sn *snapshot) {
	n := 0
	for _, se := range s.series {
		n = max(n, se.ctrl+1)
	}
	for len(s.inst.ctrlAttrs) < n {
		s.inst.ctrlAttrs = append(s.inst.ctrlAttrs, meterx.Attrs{})
	}
	s.utilBytes = append(s.utilBytes[:0], make([]float64, n)...)
	s.utilNs = append(s.utilNs[:0], make([]uint64, n)...)
	bytes, ns := s.utilBytes, s.utilNs
	for _, se := range s.series {
		bytes[se.ctrl] += se.interval
		ns[se.ctrl] = max(ns[se.ctrl], se.enabledNs)
		if len(s.inst.ctrlAttrs[se.ctrl].Observe) == 0 {
			s.inst.ctrlAttrs[se.ctrl] = meterx.NewAttrs(semconv.HWCPUSocket.Int(se.socket), semconv.HWCPUMemoryController.String(se.controller))
		}
	}
	for i := range n {
		if ns[i] == 0 {
			continue
		}
		sn.util = append(sn.util, utilValue{&s.inst.ctrlAttrs[i], bytes[i] / (s.cfg.peak * float64(ns[i]) / 1e9)})
	}
}

// observe reports the last snapshot; it copies nothing and blocks on
// nothing but the swap.
func (s *Source) observe(_ context.Context, o metric.Observer) error {
	s.snapMu.RLock()
	defer s.snapMu.RUnlock()
	sn := s.front
	if !sn.hasValue {
		return nil
	}
	in := &s.inst
	for _, v := range sn.io {
		o.ObserveFloat64(in.io, v.bytes, v.attrs.Observe...)
	}
	for _, v := range sn.util {
		o.ObserveFloat64(in.utilization, v.ratio, v.attrs.Observe...)
	}
	for _, v := range sn.sockets {
		o.ObserveFloat64(in.coverage, v.coverage, v.attrs.Observe...)
		if !math.IsNaN(v.running) {
			o.ObserveFloat64(in.running, v.running, v.attrs.Observe...)
		}
	}
	for _, v := range sn.errs {
		o.ObserveInt64(in.readErrors, v.n, v.attrs.Observe...)
	}
	o.ObserveInt64(in.reopens, sn.reopens)
	o.ObserveInt64(in.events, sn.sysfs, in.sourceAttrs[0].Observe...)
	o.ObserveInt64(in.events, sn.table, in.sourceAttrs[1].Observe...)
	o.ObserveInt64(in.skipped, sn.skipped)
	o.ObserveFloat64(in.familyUnknown, sn.unknown)
	return nil
}

// Describe says in one line what the Source counts: for the agent's
// -check.
func (st Status) Describe() string {
	var b strings.Builder
	sockets := map[int]bool{}
	for _, c := range st.Controllers {
		sockets[c.Socket] = true
	}
	fmt.Fprintf(&b, "%s, %d controllers on %d sockets, %d of %d counters open", st.Kind, len(st.Controllers), len(sockets), st.Counters, st.Expected)
	if st.Family != "" {
		fmt.Fprintf(&b, "; %s (%s)", st.Family, st.CPU)
	} else {
		fmt.Fprintf(&b, "; %s, in no row of the table: sysfs's events only", st.CPU)
	}
	if st.TableEvents > 0 {
		fmt.Fprintf(&b, "; %d events from the table, sysfs describing none", st.TableEvents)
	}
	if st.Partial {
		probs := slices.Clone(st.Problems)
		if len(probs) > 3 {
			probs = append(probs[:3], fmt.Sprintf("and %d more", len(st.Problems)-3))
		}
		fmt.Fprintf(&b, "; PARTIAL: %s", strings.Join(probs, "; "))
	}
	if len(st.Skipped) > 0 {
		fmt.Fprintf(&b, "; %d sysfs entries skipped", len(st.Skipped))
	}
	return b.String()
}
