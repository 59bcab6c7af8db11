package node

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope/internal/meterx"
	"github.com/xpuscope/xpuscope/internal/nodebpf"
	"github.com/xpuscope/xpuscope/semconv"
)

// Overflow reasons (xpuscope.node.reason).
const (
	reasonEndpoints = iota
	reasonProcesses
	reasonFiles
	reasonFileProcesses
	reasonLongPath
	reasonMappings
	numReasons
)

var reasonNames = [numReasons]string{semconv.NodeReasonEndpoints, semconv.NodeReasonProcesses, semconv.NodeReasonFiles,
	semconv.NodeReasonFileProcesses, semconv.NodeReasonLongPath, semconv.NodeReasonMappings}

type instruments struct {
	retransmits, failures, resets           metric.Int64ObservableCounter
	read, faults, readahead, added, evicted metric.Int64ObservableCounter
	reloads, dropped, overflow, ringErrors  metric.Int64ObservableCounter
	size, watched                           metric.Int64ObservableUpDownCounter
	loadDuration                            metric.Float64Histogram
	reason                                  [numReasons]meterx.Attrs
}

func (in *instruments) create(m metric.Meter) error {
	b := meterx.Builder{Meter: m}
	in.retransmits = b.Counter(semconv.XpuscopeTCPRetransmits)
	in.failures = b.Counter(semconv.XpuscopeTCPRetransmitFailures)
	in.resets = b.Counter(semconv.XpuscopeTCPResets)
	in.read = b.Counter(semconv.XpuscopeModelFileRead)
	in.faults = b.Counter(semconv.XpuscopeModelFileFaults)
	in.readahead = b.Counter(semconv.XpuscopeModelFileReadahead)
	in.added = b.Counter(semconv.XpuscopeModelFilePageCacheAdded)
	in.evicted = b.Counter(semconv.XpuscopeModelFilePageCacheEvicted)
	in.reloads = b.Counter(semconv.XpuscopeModelFileReloads)
	in.dropped = b.Counter(semconv.XpuscopeNodeRecordsDropped)
	in.overflow = b.Counter(semconv.XpuscopeNodeOverflow)
	in.ringErrors = b.Counter(semconv.XpuscopeBPFRingErrors)
	in.size = b.UpDownCounter(semconv.XpuscopeModelFileSize)
	in.watched = b.UpDownCounter(semconv.XpuscopeNodeWatchedFiles)
	in.loadDuration = b.Histogram(semconv.XpuscopeModelFileLoadDuration)
	for i, r := range reasonNames {
		in.reason[i] = meterx.NewAttrs(semconv.XpuscopeNodeReason.String(r))
	}
	return b.Err()
}

func (in *instruments) observables() []metric.Observable {
	return []metric.Observable{in.retransmits, in.failures, in.resets, in.read, in.faults, in.readahead, in.added,
		in.evicted, in.reloads, in.dropped, in.overflow, in.ringErrors, in.size, in.watched}
}

// point is one value of one series.
type point struct {
	set attribute.Set
	v   int64
}

// snapshot is what a collection reports: made by the reader after each
// batch and at housekeeping, swapped in whole.
type snapshot struct {
	retransmits, failures, resets []point
	read, faults                  []point
	readahead, added, evicted     []point
	reloads, size                 []point
	watched, dropped              int64
	overflow                      [numReasons]int64
}

// sum adds v to the point of set in ps (by index in idx).
func sum(ps []point, idx map[attribute.Distinct]int, set attribute.Set, v int64) []point {
	if i, ok := idx[set.Equivalent()]; ok {
		ps[i].v += v
		return ps
	}
	idx[set.Equivalent()] = len(ps)
	return append(ps, point{set, v})
}

// publish makes a snapshot of the counts; the files that fold into one
// series are summed.
func (s *Source) publish() {
	sn := &snapshot{overflow: s.over, dropped: int64(s.kcounters[nodebpf.CounterDrops])}
	sn.overflow[reasonFiles] += int64(s.kcounters[nodebpf.CounterFilesFull])
	sn.overflow[reasonFileProcesses] += int64(s.kcounters[nodebpf.CounterProcsFull])
	sn.overflow[reasonLongPath] += int64(s.kcounters[nodebpf.CounterLongPath])
	sn.overflow[reasonMappings] += int64(s.kcounters[nodebpf.CounterMappingsFull])
	for _, ser := range s.tcp.series {
		if ser.retransmits > 0 {
			sn.retransmits = append(sn.retransmits, point{ser.base, ser.retransmits})
		}
		for e, n := range ser.failures {
			sn.failures = append(sn.failures, point{ser.failureAttrs[e], n})
		}
		if ser.resets[0] > 0 {
			sn.resets = append(sn.resets, point{ser.sent, ser.resets[0]})
		}
		if ser.resets[1] > 0 {
			sn.resets = append(sn.resets, point{ser.receive, ser.resets[1]})
		}
	}
	idx := map[string]map[attribute.Distinct]int{}
	for _, n := range []string{"read", "faults", "sync", "added", "evicted", "reloads", "size"} {
		idx[n] = map[attribute.Distinct]int{}
	}
	for _, f := range s.files.m {
		sn.watched++
		st := &f.stats
		sn.size = sum(sn.size, idx["size"], f.set, f.size)
		sn.added = sum(sn.added, idx["added"], f.set, int64(st.Added))
		sn.evicted = sum(sn.evicted, idx["evicted"], f.set, int64(st.Evicted))
		sn.reloads = sum(sn.reloads, idx["reloads"], f.set, f.reloads)
		if s.cfg.pageCache {
			sn.readahead = sum(sn.readahead, idx["sync"], f.readahead[0], int64(st.SyncRa))
			sn.readahead = sum(sn.readahead, idx["sync"], f.readahead[1], int64(st.AsyncRa))
		}
		for _, p := range f.procs {
			if s.cfg.fileSyscalls {
				sn.read = sum(sn.read, idx["read"], p.set, int64(p.stats.ReadBytes))
			}
			if s.cfg.pageCache {
				sn.faults = sum(sn.faults, idx["faults"], p.set, int64(p.stats.Faults))
			}
		}
	}
	s.snap.Store(sn)
}

// observe reports the last snapshot.
func (s *Source) observe(_ context.Context, o metric.Observer) error {
	s.collections.Add(1)
	sn := s.snap.Load()
	if sn == nil {
		return nil
	}
	in := &s.inst
	for _, m := range []struct {
		inst metric.Int64ObservableCounter
		ps   []point
	}{{in.retransmits, sn.retransmits}, {in.failures, sn.failures}, {in.resets, sn.resets}, {in.read, sn.read},
		{in.faults, sn.faults}, {in.readahead, sn.readahead}, {in.added, sn.added}, {in.evicted, sn.evicted},
		{in.reloads, sn.reloads}} {
		for _, p := range m.ps {
			o.ObserveInt64(m.inst, p.v, metric.WithAttributeSet(p.set))
		}
	}
	for _, p := range sn.size {
		o.ObserveInt64(in.size, p.v, metric.WithAttributeSet(p.set))
	}
	o.ObserveInt64(in.watched, sn.watched)
	o.ObserveInt64(in.dropped, sn.dropped)
	for i, n := range sn.overflow {
		o.ObserveInt64(in.overflow, n, in.reason[i].Observe...)
	}
	if r := s.kernel.Ring; r != nil {
		r.Observe(o, in.ringErrors)
	}
	return nil
}
