package top

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/xpuscope/xpuscope/semconv"
)

// The Training view is data-driven: its columns are semconv metrics
// (genai/training's), its rows the jobs their series name. A gauge shows
// its value, averaged over the job's series (a job read from TensorBoard
// and MLflow has a series of each); a counter its rate, summed over them.
// A column may take only the series with one attribute's value
// (training.throughput by what it counts). A new column is one entry
// here: the builder reads every family listed, and the view lays out one
// column per entry (TestTrainingViewIsDataDriven, TestTrainingColumns).
var defaultTraining = newTrainingSpec([]TrainingColumn{
	{Title: "loss", Metric: semconv.TrainingLoss},
	{Title: "steps/s", Metric: semconv.TrainingThroughput, Where: semconv.TrainingThroughputItem.String(semconv.TrainingItemStep)},
	{Title: "lr", Metric: semconv.TrainingLearningRate},
	{Title: "step", Metric: semconv.TrainingStep},
	{Title: "samples/s", Metric: semconv.TrainingThroughput, Where: semconv.TrainingThroughputItem.String(semconv.TrainingItemSample)},
	{Title: "tokens/s", Metric: semconv.TrainingThroughput, Where: semconv.TrainingThroughputItem.String(semconv.TrainingItemToken)},
	{Title: "epoch", Metric: semconv.TrainingEpoch},
	{Title: "grad norm", Metric: semconv.TrainingGradientNorm},
}, []attribute.Key{semconv.ProcessExecutableName, semconv.TrainingRun})

// TrainingColumns are the Training view's columns, in the order of a
// TrainingRow's Values.
func TrainingColumns() []TrainingColumn { return slices.Clone(defaultTraining.cols) }

// TrainingColumn is one column of the Training view.
type TrainingColumn struct {
	// Title heads the column (at most 12 characters are shown).
	Title string
	// Metric is a Gauge, UpDownCounter or Counter of semconv.
	Metric semconv.Metric
	// Where, if its key is set, takes only the series whose attribute
	// has this value.
	Where attribute.KeyValue
}

type trainingSpec struct {
	cols   []TrainingColumn
	key    []attribute.Key
	labels []string         // the key's labels, then the pod's namespace and name
	byName map[string][]int // columns by Prometheus family name
	where  []string         // each column's Where label, or ""
}

func newTrainingSpec(cols []TrainingColumn, key []attribute.Key) trainingSpec {
	t := trainingSpec{cols: cols, key: key, byName: map[string][]int{}, where: make([]string, len(cols))}
	for _, k := range key {
		t.labels = append(t.labels, promLabel(k))
	}
	t.labels = append(t.labels, lNamespace, lPod)
	for i, c := range cols {
		if c.Metric.Kind == semconv.Histogram {
			panic("top: a training column must not be a histogram: " + c.Metric.Name)
		}
		n := promName(c.Metric)
		if len(t.byName[n]) > 0 && c.Metric.Kind != cols[t.byName[n][0]].Metric.Kind {
			panic("top: two training columns of " + c.Metric.Name + " of different kinds")
		}
		t.byName[n] = append(t.byName[n], i)
		if c.Where.Key != "" {
			t.where[i] = promLabel(c.Where.Key)
		}
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

// trainingSeries reads a series of a training family: each of its
// columns whose Where it meets.
func (b *builder) trainingSeries(s *series) {
	t := &b.training
	var j *jobAcc
	for _, col := range b.trainCols {
		if l := t.where[col]; l != "" && s.get(l) != t.cols[col].Where.Value.Emit() {
			continue
		}
		if j == nil {
			j = b.job(s)
		}
		b.trainingValue(s, j, col)
	}
}

// job is the accumulator of the job s names.
func (b *builder) job(s *series) *jobAcc {
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
	return j
}

// trainingValue adds s's value to column col of job j.
func (b *builder) trainingValue(s *series, j *jobAcc, col int) {
	t := &b.training
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
