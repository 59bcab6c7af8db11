package serving

import (
	"context"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope/internal/meterx"
	"github.com/xpuscope/xpuscope/semconv"
)

// instruments are the Source's observable instruments: one per metric
// that is not a histogram (those go through the Producer).
type instruments struct {
	ints   map[*semconv.Metric]metric.Int64Observable
	floats map[*semconv.Metric]metric.Float64Observable

	scrapes, overflow metric.Int64ObservableCounter
	servers           metric.Int64ObservableUpDownCounter
	processes         metric.Int64ObservableUpDownCounter
}

func (in *instruments) create(m metric.Meter) error {
	b := meterx.Builder{Meter: m}
	in.ints = map[*semconv.Metric]metric.Int64Observable{}
	in.floats = map[*semconv.Metric]metric.Float64Observable{}
	for _, d := range []*semconv.Metric{
		&semconv.XpuscopeGenAIServerWaitingRequests, &semconv.XpuscopeGenAIServerRunningRequests,
		&semconv.XpuscopeGenAIServerKVCacheCapacity,
	} {
		in.ints[d] = b.UpDownCounter(*d)
	}
	for _, d := range []*semconv.Metric{
		&semconv.XpuscopeGenAIServerTokens, &semconv.XpuscopeGenAIServerPreemptions,
		&semconv.XpuscopeGenAIServerRequests, &semconv.XpuscopeGenAIServerInferences,
		&semconv.XpuscopeGenAIServerExecutions,
	} {
		in.ints[d] = b.Counter(*d)
	}
	in.floats[&semconv.XpuscopeGenAIServerKVCacheUtilization] = b.Gauge(semconv.XpuscopeGenAIServerKVCacheUtilization)
	in.floats[&semconv.XpuscopeGenAIServerRequestTime] = b.FloatCounter(semconv.XpuscopeGenAIServerRequestTime)
	in.processes = b.UpDownCounter(semconv.XpuscopeGenAIServerProcesses)
	in.scrapes = b.Counter(semconv.XpuscopeGenAIServingScrapes)
	in.servers = b.UpDownCounter(semconv.XpuscopeGenAIServingServers)
	in.overflow = b.Counter(semconv.XpuscopeGenAIServingOverflow)
	return b.Err()
}

func (in *instruments) all() []metric.Observable {
	out := []metric.Observable{in.scrapes, in.overflow, in.servers, in.processes}
	for _, i := range in.ints {
		out = append(out, i)
	}
	for _, f := range in.floats {
		out = append(out, f)
	}
	return out
}

// scalarPoint is a series with one value.
type scalarPoint struct {
	metric *semconv.Metric
	attrs  attribute.Set
	value  float64
}

// histPoint is a histogram series, its buckets the snapshot's own.
type histPoint struct {
	metric *semconv.Metric
	attrs  attribute.Set
	start  time.Time
	h      hist
}

// count is a self-metric's value for one attribute set.
type count struct {
	attrs attribute.Set
	n     int64
}

// snapshot is what the run goroutine last published: all that the
// metric callback, the Producer and Status read. It is never changed
// once published.
type snapshot struct {
	at        time.Time
	scalars   []scalarPoint
	hists     []histPoint
	processes []attribute.Set
	scrapes   []count
	servers   []count
	overflow  []count
	status    Status
	// served holds, by pid, the gen_ai.server.* metrics that the
	// server of the process reported at its last scrape.
	served map[int][]string
}

// publish builds the snapshot of the servers' last scrapes and swaps it
// in.
func (s *Source) publish(now time.Time) {
	sn := &snapshot{at: now, served: map[int][]string{}}
	keys := make([]serverKey, 0, len(s.servers))
	for k := range s.servers {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b serverKey) int { return a.PID - b.PID })
	states := map[string]int64{} // kind NUL state
	for _, k := range keys {
		srv := s.servers[k]
		state := semconv.ServingStateNoEndpoint
		switch {
		case srv.read:
			state = semconv.ServingStateReading
		case srv.endpoint != "":
			state = semconv.ServingStateFailing
		}
		states[string(srv.spec.kind)+"\x00"+state]++
		s.publishProcesses(sn, srv)
		if srv.read {
			s.publishPoints(sn, srv, now)
		}
		sn.status.Servers = append(sn.status.Servers, srv.status(state))
	}
	for _, k := range slices.Sorted(maps.Keys(states)) {
		kind, state, _ := strings.Cut(k, "\x00")
		sn.servers = append(sn.servers, count{attribute.NewSet(
			semconv.GenAIProviderName.String(kind), semconv.XpuscopeGenAIServingState.String(state)), states[k]})
	}
	for k, n := range s.scrapes {
		kv := []attribute.KeyValue{semconv.GenAIProviderName.String(string(k.kind))}
		if k.reason != "" {
			kv = append(kv, semconv.ErrorType.String(k.reason))
		}
		sn.scrapes = append(sn.scrapes, count{attribute.NewSet(kv...), n})
	}
	for _, c := range []struct {
		reason string
		n      int
	}{
		{semconv.ServingReasonServers, s.over.servers}, {semconv.ServingReasonModels, s.over.models},
		{semconv.ServingReasonSeries, s.over.series}, {semconv.ServingReasonProcesses, s.over.processes},
		{semconv.ServingReasonInvalid, s.over.invalid},
	} {
		if c.n > 0 {
			sn.overflow = append(sn.overflow, count{attribute.NewSet(semconv.XpuscopeGenAIServingReason.String(c.reason)), int64(c.n)})
		}
	}
	sn.status.Histograms = s.cfg.producer != nil
	sn.status.ListError = s.listErr
	s.snap.Store(sn)
}

// publishProcesses adds the series of the server's processes.
func (s *Source) publishProcesses(sn *snapshot, srv *server) {
	if srv.procSets == nil {
		srv.procSets = map[int]attribute.Set{}
	}
	for _, m := range srv.members {
		set, ok := srv.procSets[m.pid]
		if !ok {
			kv := append(slices.Clip(srv.base),
				semconv.ProcessPID.Int(m.pid), semconv.ProcessExecutableName.String(m.exe),
				semconv.XpuscopeGenAIServerRole.String(m.role))
			set = attribute.NewSet(kv...)
			srv.procSets[m.pid] = set
		}
		sn.processes = append(sn.processes, set)
	}
	for pid := range srv.procSets {
		if !slices.ContainsFunc(srv.members, func(m member) bool { return m.pid == pid }) {
			delete(srv.procSets, pid)
		}
	}
}

// publishPoints adds the series of the server's last scrape, and forgets
// those it no longer serves (a metric renamed, a model gone).
func (s *Source) publishPoints(sn *snapshot, srv *server, now time.Time) {
	for _, st := range srv.series {
		st.seen = false
	}
	var served []string
	for i := range srv.m.points {
		p := &srv.m.points[i]
		k := pointKey{p.metric, p.model, p.key}
		st := srv.series[k]
		if st == nil {
			kv := slices.Clip(srv.base)
			if p.model != "" {
				kv = append(kv, semconv.GenAIRequestModel.String(p.model), semconv.GenAIResponseModel.String(p.model))
			}
			kv = append(kv, p.extra...)
			st = &seriesState{attrs: attribute.NewSet(kv...), start: now}
			srv.series[k] = st
		}
		st.seen = true
		if p.metric.Kind != semconv.Histogram {
			sn.scalars = append(sn.scalars, scalarPoint{p.metric, st.attrs, p.value})
			continue
		}
		if p.hist.count < st.lastCount {
			st.start = now // the server's histogram started over
		}
		st.lastCount = p.hist.count
		sn.hists = append(sn.hists, histPoint{metric: p.metric, attrs: st.attrs, start: st.start, h: hist{
			bounds: slices.Clone(p.hist.bounds), counts: slices.Clone(p.hist.counts),
			count: p.hist.count, sum: p.hist.sum,
		}})
		if strings.HasPrefix(p.metric.Name, "gen_ai.server.") && !slices.Contains(served, p.metric.Name) {
			served = append(served, p.metric.Name)
		}
	}
	for k, st := range srv.series {
		if !st.seen {
			delete(srv.series, k)
		}
	}
	if len(served) > 0 && s.cfg.producer != nil {
		for _, m := range srv.members {
			sn.served[m.pid] = served
		}
	}
}

// observe reports the last snapshot. It only reads.
func (s *Source) observe(_ context.Context, o metric.Observer) error {
	sn := s.snap.Load()
	if sn == nil {
		return nil
	}
	in := &s.inst
	for i := range sn.scalars {
		p := &sn.scalars[i]
		opt := metric.WithAttributeSet(p.attrs)
		if inst, ok := in.ints[p.metric]; ok {
			o.ObserveInt64(inst, int64(math.Round(p.value)), opt)
		} else if inst, ok := in.floats[p.metric]; ok {
			o.ObserveFloat64(inst, p.value, opt)
		}
	}
	for _, set := range sn.processes {
		o.ObserveInt64(in.processes, 1, metric.WithAttributeSet(set))
	}
	for _, c := range sn.scrapes {
		o.ObserveInt64(in.scrapes, c.n, metric.WithAttributeSet(c.attrs))
	}
	for _, c := range sn.servers {
		o.ObserveInt64(in.servers, c.n, metric.WithAttributeSet(c.attrs))
	}
	for _, c := range sn.overflow {
		o.ObserveInt64(in.overflow, c.n, metric.WithAttributeSet(c.attrs))
	}
	return nil
}
