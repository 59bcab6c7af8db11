package training

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope/internal/meterx"
	"github.com/xpuscope/xpuscope/internal/proctable"
	"github.com/xpuscope/xpuscope/semconv"
)

// instruments are the Source's observable instruments.
type instruments struct {
	loss, lr, gradNorm, step, epoch, throughput, scalar metric.Float64ObservableGauge
	processes, jobs                                     metric.Int64ObservableUpDownCounter
	records, errors, overflow                           metric.Int64ObservableCounter
}

func (in *instruments) create(m metric.Meter) error {
	b := meterx.Builder{Meter: m}
	in.loss = b.Gauge(semconv.TrainingLoss)
	in.lr = b.Gauge(semconv.TrainingLearningRate)
	in.gradNorm = b.Gauge(semconv.TrainingGradientNorm)
	in.step = b.Gauge(semconv.TrainingStep)
	in.epoch = b.Gauge(semconv.TrainingEpoch)
	in.throughput = b.Gauge(semconv.TrainingThroughput)
	in.scalar = b.Gauge(semconv.TrainingScalar)
	in.processes = b.UpDownCounter(semconv.TrainingProcesses)
	in.jobs = b.UpDownCounter(semconv.XpuscopeTrainingJobs)
	in.records = b.Counter(semconv.XpuscopeTrainingRecords)
	in.errors = b.Counter(semconv.XpuscopeTrainingReadErrors)
	in.overflow = b.Counter(semconv.XpuscopeTrainingOverflow)
	return b.Err()
}

func (in *instruments) all() []metric.Observable {
	return []metric.Observable{in.loss, in.lr, in.gradNorm, in.step, in.epoch, in.throughput, in.scalar,
		in.processes, in.jobs, in.records, in.errors, in.overflow}
}

// point is one series' value.
type point struct {
	inst  metric.Float64ObservableGauge
	attrs attribute.Set
	v     float64
}

// count is a counter's or up-down counter's value for one attribute set.
type count struct {
	attrs attribute.Set
	n     int64
}

// snapshot is what the run goroutine last published: all that the metric
// callback and Status read. It is never changed once published.
type snapshot struct {
	at        time.Time
	points    []point
	processes []attribute.Set
	jobs      []count
	records   []count
	errors    []count
	overflow  []count
	status    Status
}

// publish builds the snapshot of what was read, and swaps it in.
func (s *Source) publish(now time.Time) {
	sn := &snapshot{at: now, status: Status{ListError: s.listErr}}
	keys := slices.SortedFunc(maps.Keys(s.jobs), func(a, b proctable.Key) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.PID, b.PID))
	})
	jobCounts := map[[2]string]int64{}
	var overFiles, overTags int64 = s.over.filesRetired, s.over.tagsRetired
	for _, k := range keys {
		j := s.jobs[k]
		overFiles += int64(j.overFiles)
		overTags += j.tags.overflow
		base := j.base()
		if !base.Equals(&j.baseSet) {
			j.baseSet = base
			for _, r := range j.runs {
				r.attrOK = false
			}
			clear(j.procSets)
		}
		formats := map[string]bool{}
		var firstRun string
		for _, r := range sortedRuns(j) {
			if !r.used {
				continue
			}
			formats[r.key.format] = true
			if firstRun == "" {
				firstRun = r.name
			}
			s.publishRun(sn, j, r)
		}
		if len(formats) == 0 {
			jobCounts[[2]string{j.framework, ""}]++
		}
		for f := range formats {
			jobCounts[[2]string{j.framework, f}]++
		}
		if len(formats) > 0 {
			s.publishProcesses(sn, j, firstRun)
		}
		sn.status.Jobs = append(sn.status.Jobs, j.status())
	}
	for _, k := range slices.SortedFunc(maps.Keys(jobCounts), func(a, b [2]string) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	}) {
		kv := []attribute.KeyValue{semconv.TrainingFramework.String(k[0])}
		if k[1] != "" {
			kv = append(kv, semconv.TrainingLogFormat.String(k[1]))
		}
		sn.jobs = append(sn.jobs, count{attribute.NewSet(kv...), jobCounts[k]})
	}
	for f, n := range s.records {
		sn.records = append(sn.records, count{attribute.NewSet(semconv.TrainingLogFormat.String(f)), n})
	}
	for k, n := range s.errors {
		sn.errors = append(sn.errors, count{attribute.NewSet(semconv.TrainingLogFormat.String(k.format), semconv.ErrorType.String(k.why)), n})
	}
	for _, c := range []struct {
		reason string
		n      int64
	}{
		{semconv.TrainingReasonJobs, s.over.jobs}, {semconv.TrainingReasonProcesses, s.over.processes},
		{semconv.TrainingReasonFiles, overFiles}, {semconv.TrainingReasonTags, overTags},
	} {
		if c.n > 0 {
			sn.overflow = append(sn.overflow, count{attribute.NewSet(semconv.XpuscopeTrainingReason.String(c.reason)), c.n})
		}
	}
	s.snap.Store(sn)
}

// base returns the attributes every series of the job carries.
func (j *job) base() attribute.Set {
	kv := []attribute.KeyValue{semconv.ProcessExecutableName.String(j.exe)}
	if j.framework != "" {
		kv = append(kv, semconv.TrainingFramework.String(j.framework))
	}
	if j.launcher != "" {
		kv = append(kv, semconv.TrainingLauncher.String(j.launcher))
	}
	kv = append(kv, j.pod...)
	return attribute.NewSet(kv...)
}

// sortedRuns returns the job's runs in the order of their directories.
func sortedRuns(j *job) []*run {
	rs := slices.Collect(maps.Values(j.runs))
	slices.SortFunc(rs, func(a, b *run) int {
		return cmp.Or(cmp.Compare(a.key.dir, b.key.dir), cmp.Compare(a.key.format, b.key.format))
	})
	return rs
}

// publishRun adds the series of one run.
func (s *Source) publishRun(sn *snapshot, j *job, r *run) {
	if !r.attrOK {
		kv := append(j.baseSet.ToSlice(), semconv.TrainingRun.String(r.name), semconv.TrainingLogFormat.String(r.key.format))
		r.attrs, r.attrOK = attribute.NewSet(kv...), true
		r.throughput, r.scalarSets = [3]attribute.Set{}, nil
	}
	in := &s.inst
	add := func(inst metric.Float64ObservableGauge, v value) {
		if v.set {
			sn.points = append(sn.points, point{inst, r.attrs, v.v})
		}
	}
	st := &r.s
	add(in.loss, st.loss)
	add(in.lr, st.lr)
	add(in.gradNorm, st.gradNorm)
	add(in.epoch, st.epoch)
	if st.stepSet {
		sn.points = append(sn.points, point{in.step, r.attrs, float64(st.step)})
	}
	switch {
	case st.samples.set || st.tokens.set:
		if st.samples.set {
			sn.points = append(sn.points, point{in.throughput, r.itemSet(0, semconv.TrainingItemSample), st.samples.v})
		}
		if st.tokens.set {
			sn.points = append(sn.points, point{in.throughput, r.itemSet(1, semconv.TrainingItemToken), st.tokens.v})
		}
	case st.stepRate.set:
		sn.points = append(sn.points, point{in.throughput, r.itemSet(2, semconv.TrainingItemStep), st.stepRate.v})
	}
	if r.scalarSets == nil {
		r.scalarSets = map[string]attribute.Set{}
	}
	for _, tag := range st.scalarSeq {
		set, ok := r.scalarSets[tag]
		if !ok {
			set = attribute.NewSet(append(r.attrs.ToSlice(), semconv.TrainingTag.String(tag))...)
			r.scalarSets[tag] = set
		}
		sn.points = append(sn.points, point{in.scalar, set, st.scalars[tag]})
	}
}

// itemSet returns the run's attributes with a throughput item.
func (r *run) itemSet(i int, item string) attribute.Set {
	if r.throughput[i].Len() == 0 {
		r.throughput[i] = attribute.NewSet(append(r.attrs.ToSlice(), semconv.TrainingThroughputItem.String(item))...)
	}
	return r.throughput[i]
}

// publishProcesses adds the series of the job's processes.
func (s *Source) publishProcesses(sn *snapshot, j *job, run string) {
	if j.procSets == nil {
		j.procSets = map[int]attribute.Set{}
	}
	for _, m := range j.members {
		set, ok := j.procSets[m.pid]
		if !ok {
			kv := append(j.baseSet.ToSlice(), semconv.TrainingRun.String(run), semconv.ProcessPID.Int(m.pid),
				semconv.TrainingRole.String(roleName(m.role)))
			kv = replaceExe(kv, m.exe)
			set = attribute.NewSet(kv...)
			j.procSets[m.pid] = set
		}
		sn.processes = append(sn.processes, set)
	}
	for pid := range j.procSets {
		if !slices.ContainsFunc(j.members, func(m member) bool { return m.pid == pid }) {
			delete(j.procSets, pid)
		}
	}
}

// roleName is a process's training.role.
func roleName(role string) string {
	if role == semconv.TrainingRoleWorker {
		return role
	}
	return semconv.TrainingRoleLauncher
}

// replaceExe puts a process's own executable in the job's attributes.
func replaceExe(kv []attribute.KeyValue, exe string) []attribute.KeyValue {
	for i := range kv {
		if kv[i].Key == semconv.ProcessExecutableName {
			kv[i] = semconv.ProcessExecutableName.String(exe)
		}
	}
	return kv
}

// observe reports the last snapshot. It only reads.
func (s *Source) observe(_ context.Context, o metric.Observer) error {
	sn := s.snap.Load()
	if sn == nil {
		return nil
	}
	for i := range sn.points {
		p := &sn.points[i]
		o.ObserveFloat64(p.inst, p.v, metric.WithAttributeSet(p.attrs))
	}
	in := &s.inst
	for _, set := range sn.processes {
		o.ObserveInt64(in.processes, 1, metric.WithAttributeSet(set))
	}
	for _, c := range sn.jobs {
		o.ObserveInt64(in.jobs, c.n, metric.WithAttributeSet(c.attrs))
	}
	for _, c := range sn.records {
		o.ObserveInt64(in.records, c.n, metric.WithAttributeSet(c.attrs))
	}
	for _, c := range sn.errors {
		o.ObserveInt64(in.errors, c.n, metric.WithAttributeSet(c.attrs))
	}
	for _, c := range sn.overflow {
		o.ObserveInt64(in.overflow, c.n, metric.WithAttributeSet(c.attrs))
	}
	return nil
}
