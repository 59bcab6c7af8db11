package top

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/xpuscope/xpuscope/semconv"
)

// The Training view is data-driven: its columns are semconv metrics, its
// rows the jobs their series name. Package genai/training (training jobs:
// loss, step rate, learning rate) is being built apart, and its names are
// not in semconv yet, so defaultTraining has no column and the view says
// "no training jobs".
//
// THE HOOK: when semconv has genai/training's metrics, list them in
// defaultTraining's Columns (a gauge shows its value, averaged over the
// job's series, e.g. each rank's loss; a counter its rate summed over
// them, e.g. steps a second) and the attributes that tell one job from
// another in Key (after the pod's namespace and name, which every row
// has). Nothing else changes: the builder reads every family listed, and
// the view lays out one column per entry. TestTrainingViewIsDataDriven
// shows it with stand-in columns.
var defaultTraining = newTrainingSpec(nil, nil)

// TrainingColumn is one column of the Training view.
type TrainingColumn struct {
	// Title heads the column (at most 12 characters are shown).
	Title string
	// Metric is a Gauge, UpDownCounter or Counter of semconv.
	Metric semconv.Metric
}

type trainingSpec struct {
	cols   []TrainingColumn
	key    []attribute.Key
	labels []string       // the key's labels, then the pod's namespace and name
	byName map[string]int // column by Prometheus family name
}

func newTrainingSpec(cols []TrainingColumn, key []attribute.Key) trainingSpec {
	t := trainingSpec{cols: cols, key: key, byName: map[string]int{}}
	for _, k := range key {
		t.labels = append(t.labels, promLabel(k))
	}
	t.labels = append(t.labels, lNamespace, lPod)
	for i, c := range cols {
		if c.Metric.Kind == semconv.Histogram {
			panic("top: a training column must not be a histogram: " + c.Metric.Name)
		}
		t.byName[promName(c.Metric)] = i
	}
	return t
}

// KeyTitles are the titles of the row key's columns.
func (t trainingSpec) KeyTitles() []string {
	out := make([]string, 0, len(t.key)+1)
	for _, k := range t.key {
		s := string(k)
		if i := strings.LastIndexByte(s, '.'); i >= 0 {
			s = s[i+1:]
		}
		out = append(out, s)
	}
	return append(out, "pod")
}

type jobAcc struct {
	key   []string
	sums  []float64
	count []int
}

// trainingSeries reads a series of a training column's family.
func (b *builder) trainingSeries(s *series) {
	col := b.trainCol
	t := &b.training
	var k strings.Builder
	for _, l := range t.labels {
		k.WriteString(s.get(l))
		k.WriteByte(0)
	}
	j, ok := b.jobs[k.String()]
	if !ok {
		j = &jobAcc{sums: make([]float64, len(t.cols)), count: make([]int, len(t.cols))}
		for _, l := range t.labels[:len(t.key)] {
			j.key = append(j.key, b.intern(s.get(l)))
		}
		j.key = append(j.key, b.intern(podName(s.get(lNamespace), s.get(lPod))))
		b.jobs[k.String()] = j
	}
	v := s.value
	if t.cols[col].Metric.Kind == semconv.Counter {
		// A series identity of its own: the family's handler may have
		// taken the rate of the same series.
		id := b.famID
		b.famID = -1 - col
		v = b.rate(s)
		b.famID = id
	}
	if !math.IsNaN(v) {
		j.sums[col] += v
		j.count[col]++
	}
}

func (b *builder) finishTraining() []TrainingRow {
	out := make([]TrainingRow, 0, len(b.jobs))
	for _, j := range b.jobs {
		r := TrainingRow{Key: j.key, Values: make([]float64, len(j.sums))}
		for i := range j.sums {
			switch {
			case j.count[i] == 0:
				r.Values[i] = nan
			case b.training.cols[i].Metric.Kind == semconv.Counter:
				r.Values[i] = j.sums[i]
			default:
				r.Values[i] = j.sums[i] / float64(j.count[i])
			}
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(x, y TrainingRow) int { return slices.Compare(x.Key, y.Key) })
	return out
}

// parsePID reads a process.pid label; 0 for none.
func parsePID(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// podName is namespace/pod, or what there is of it.
func podName(namespace, pod string) string {
	if namespace == "" || pod == "" {
		return namespace + pod
	}
	return namespace + "/" + pod
}
