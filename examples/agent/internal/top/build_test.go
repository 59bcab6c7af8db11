package top

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/xpuscope/xpuscope/semconv"
)

// parseText parses a text scrape with expfmt, for the tests' own reading
// of what top should show.
func parseText(t testing.TB, text []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	require.NoError(t, err)
	return fams
}

// sumWhere sums the counter or gauge series of m whose label k is v.
func sumWhere(fams map[string]*dto.MetricFamily, m semconv.Metric, k attribute.Key, v string) float64 {
	var sum float64
	for _, s := range fams[promName(m)].GetMetric() {
		for _, l := range s.GetLabel() {
			if l.GetName() == promLabel(k) && l.GetValue() == v {
				sum += s.GetCounter().GetValue() + s.GetGauge().GetValue() + s.GetUntyped().GetValue()
			}
		}
	}
	return sum
}

// histCountWhere sums the counts of the histogram series of m whose label
// k is v.
func histCountWhere(fams map[string]*dto.MetricFamily, m semconv.Metric, k attribute.Key, v string) float64 {
	var n float64
	for _, s := range fams[promName(m)].GetMetric() {
		for _, l := range s.GetLabel() {
			if l.GetName() == promLabel(k) && l.GetValue() == v {
				n += float64(s.GetHistogram().GetSampleCount())
			}
		}
	}
	return n
}

// The Frame of the recorded agent shows what the agent's scrapes say,
// read here apart from top: each rate is the counters' increase over the
// scrapes' interval.
func TestRecordedFrame(t *testing.T) {
	r := loadRecording(t)
	f1, f := frames(t, r.scrapes(t))
	dt := r.at[1].Sub(r.at[0]).Seconds()
	require.InDelta(t, dt, f.Interval.Seconds(), 1e-9)
	s1, s2 := parseText(t, r.text[0]), parseText(t, r.text[1])

	// The first Frame has no rates.
	for _, p := range f1.Processes {
		assert.True(t, math.IsNaN(p.Launches), "launches/s of %d in the first frame", p.PID)
	}

	pid := fmt.Sprint(r.latePID)
	i := slices.IndexFunc(f.Processes, func(p ProcessRow) bool { return p.PID == r.latePID })
	require.GreaterOrEqual(t, i, 0)
	late := f.Processes[i]
	want := (sumWhere(s2, semconv.CUDAKernelLaunches, semconv.ProcessPID, pid) - sumWhere(s1, semconv.CUDAKernelLaunches, semconv.ProcessPID, pid)) / dt
	require.Positive(t, want)
	assert.InDelta(t, want, late.Launches, 1e-9)
	assert.Equal(t, "late", late.Exe)
	require.Len(t, late.Kernels, 1)
	assert.Equal(t, "saxpy(int, float, float*, float*)", late.Kernels[0].Name)
	assert.InDelta(t, want, late.Kernels[0].Rate, 1e-9)
	assert.Equal(t, sumWhere(s2, semconv.CUDAKernelLaunches, semconv.ProcessPID, pid), late.Kernels[0].Total)
	// Its launches' shape: cudaprog's DlopenLaunch, a grid of 12×34×5 =
	// 2,040 blocks of 64×8×2 = 1,024 threads, each in the bucket ending
	// at its power of two.
	e := f.Executables[late.ExeKey]
	assert.True(t, e.GridP50 > 1024 && e.GridP95 <= 2048, "grid %v %v", e.GridP50, e.GridP95)
	assert.True(t, e.BlockP50 > 512 && e.BlockP95 <= 1024, "block %v %v", e.BlockP50, e.BlockP95)

	// The fake NVML reports the agent's own process on GPU 0.
	i = slices.IndexFunc(f.Processes, func(p ProcessRow) bool { return p.GPUMem > 0 })
	require.GreaterOrEqual(t, i, 0)
	assert.Equal(t, float64(1<<30), f.Processes[i].GPUMem)
	assert.InDelta(t, 0.37, f.Processes[i].SMUtil, 1e-9)
	assert.Equal(t, []string{"0"}, f.Processes[i].GPUs)

	require.Len(t, f.LLM, 1)
	l := f.LLM[0]
	assert.Equal(t, "gpt-4o-mini", l.Model)
	assert.Equal(t, semconv.GenAIProviderOpenAICompatible, l.Provider)
	port := l.Server[strings.LastIndexByte(l.Server, ':')+1:]
	calls := (histCountWhere(s2, semconv.GenAIClientOperationDuration, semconv.ServerPort, port) -
		histCountWhere(s1, semconv.GenAIClientOperationDuration, semconv.ServerPort, port)) / dt
	require.Positive(t, calls)
	assert.InDelta(t, calls, l.Calls, 1e-9)
	assert.Zero(t, l.ErrorRatio)
	// The mock waits 30 ms before its first chunk: the median is in the
	// bucket (0.02, 0.04].
	assert.True(t, l.TTFTP50 > 0.02 && l.TTFTP50 <= 0.04, "TTFT p50 %v", l.TTFTP50)
	// Its p95 is as late as the machine's load made the calls (68 ms in
	// a recording made on a loaded machine, 39 ms in this one).
	assert.True(t, l.TTFTP95 >= l.TTFTP50, "TTFT p95 %v", l.TTFTP95)
	// Each call reports 17 input and 5 output tokens (llmserver).
	assert.InDelta(t, 17*calls, l.TokensIn, 1e-9)
	assert.InDelta(t, 5*calls, l.TokensOut, 1e-9)
	assert.True(t, math.IsNaN(l.CostPerMin), "no rate configured")

	require.Len(t, f.Servers, 1)
	assert.Equal(t, ServerRow{Kind: "vllm", Model: "meta-llama/Llama-3.1-8B-Instruct", Port: f.Servers[0].Port,
		Waiting: 3, Running: 8, KVCache: 0.4375, KVCapacity: f.Servers[0].KVCapacity, TokensIn: 0, TokensOut: 0,
		Requests: 0, Errors: 0, Preemptions: 0}, withoutNaN(f.Servers[0]))
	assert.Len(t, f.Servers[0].PIDs, 1, "the fake server's one process")

	require.Len(t, f.GPUs, 2)
	g := f.GPUs[0]
	assert.Equal(t, GPURow{ID: "GPU-fa4e0000-0000-4000-8000-000000000000", Name: "NVIDIA Fake H100 80GB HBM3", Vendor: "NVIDIA",
		Index: "0", Util: 0.75, MemUsed: 20 << 30, MemTotal: 80 << 30, Power: 312.5, PowerLimit: 700, Temp: 61, SMClock: 1980e6,
		MemClock: 2619e6, Fan: 0.55, Throttle: []string{"hw_thermal_slowdown", "sw_power_cap"}, UtilHistory: []float64{0.75, 0.75}},
		g)
	// The alarms are the self-metrics that moved between the scrapes (on
	// the loaded machine the recording was made on, the occupancy model
	// dropped events), each at its counter's rate.
	for _, a := range f.Alarms {
		i := slices.IndexFunc(alarms, func(d alarmDef) bool { return d.title == a.What })
		require.GreaterOrEqual(t, i, 0, "alarm %q", a.What)
		total := sumAll(s2, alarms[i].metric)
		assert.Equal(t, total, a.Total, a.What)
		assert.InDelta(t, (total-sumAll(s1, alarms[i].metric))/dt, a.Rate, 1e-9, a.What)
		assert.Positive(t, a.Rate, a.What)
	}
	assert.Len(t, f.Features, 9, "the agent's features: podjoin and the Sources")
}

// sumAll is the sum of a counter's series in a scrape.
func sumAll(fams map[string]*dto.MetricFamily, m semconv.Metric) float64 {
	var sum float64
	for _, s := range fams[promName(m)].GetMetric() {
		sum += s.GetCounter().GetValue()
	}
	return sum
}

// With thousands of processes, the screen is one screen (the rest
// scrolls), and what the builder keeps follows the last scrape: after a
// scrape of 10 processes, the state of the 5,000 before is gone.
func TestBoundedWithThousandsOfProcesses(t *testing.T) {
	big1, _ := bigScrape(5000, 3, 1)
	big2, _ := bigScrape(5000, 3, 2)
	small, _ := bigScrape(10, 3, 3)
	text := expfmt.NewFormat(expfmt.TypeTextPlain)
	src := &replay{scrapes: []Scrape{ExpfmtScrape(time.Unix(1, 0), big1, text), ExpfmtScrape(time.Unix(2, 0), big2, text),
		ExpfmtScrape(time.Unix(3, 0), small, text)}}
	ref := NewRefresher(src, time.Second)
	m := New(Options{Refresher: ref, Interval: time.Second, View: ViewProcesses, Now: func() time.Time { return time.Unix(2, 0) }})
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	for range 2 {
		f, err := ref.Refresh(context.Background())
		require.NoError(t, err)
		m.Update(frameMsg{f: f})
	}
	require.Len(t, m.Frame().Processes, 5000)
	big := len(ref.b.st.index)
	m.Update(tea.KeyPressMsg{Code: tea.KeyEnd})
	s := ansi.Strip(m.Render())
	lines := strings.Split(s, "\n")
	assert.Len(t, lines, 30)
	for _, l := range lines {
		assert.LessOrEqual(t, ansi.StringWidth(l), 100)
	}
	assert.Contains(t, s, " 14999 ", "the last row, scrolled to")

	f, err := ref.Refresh(context.Background())
	require.NoError(t, err)
	require.Len(t, f.Processes, 10)
	assert.Less(t, len(ref.b.st.index), big/100, "series state kept after the scrape of 10 processes")
	assert.LessOrEqual(t, len(ref.b.leaks), 10)
	assert.LessOrEqual(t, len(ref.b.strs)+len(ref.b.oldStrs), 2*len(big1)/100, "strings kept")
}

// withoutNaN zeroes a ServerRow's unknown figures and the ones a test
// does not check.
func withoutNaN(r ServerRow) ServerRow {
	r.TTFTP50, r.TTFTP95, r.QueueP95, r.RequestP95, r.GPUMem, r.PIDs = 0, 0, 0, 0, 0, nil
	return r
}

// The two decoders, protowire's of the protobuf exposition and expfmt's of
// the text format, give the same Frames of the recording.
func TestDecodersAgree(t *testing.T) {
	r := loadRecording(t)
	p1, p2 := frames(t, r.scrapes(t))
	t1, t2 := frames(t, r.textScrapes())
	for _, f := range []*Frame{p1, p2, t1, t2} {
		f.Took, f.Bytes = 0, 0
	}
	assert.Equal(t, fmt.Sprintf("%+v", *t1), fmt.Sprintf("%+v", *p1))
	assert.Equal(t, fmt.Sprintf("%+v", *t2), fmt.Sprintf("%+v", *p2))
}

// typedFam is a family's Prometheus type, for its TYPE line.
type typedFam struct {
	m   semconv.Metric
	typ string
}

// scrapeOf is a text scrape of lines, after their families' TYPE lines.
func scrapeOf(at time.Time, types []typedFam, lines ...string) Scrape {
	var b strings.Builder
	for _, ft := range types {
		fmt.Fprintf(&b, "# TYPE %s %s\n", promName(ft.m), ft.typ)
	}
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	return ExpfmtScrape(at, []byte(b.String()), expfmt.NewFormat(expfmt.TypeTextPlain))
}

func refreshAll(t *testing.T, scrapes ...Scrape) []*Frame {
	t.Helper()
	ref := NewRefresher(&replay{scrapes: scrapes}, time.Second)
	var out []*Frame
	for range scrapes {
		f, err := ref.Refresh(context.Background())
		require.NoError(t, err)
		out = append(out, f)
	}
	return out
}

// Rates are each series' increase over the interval: a series new since
// the last scrape counts from 0, one that went down was reset and counts
// from 0 too; a histogram's percentiles are of the observations of the
// interval only.
func TestRatesAndDeltas(t *testing.T) {
	launches := promName(semconv.CUDAKernelLaunches)
	dur := promName(semconv.GenAIClientOperationDuration)
	types := []typedFam{{semconv.CUDAKernelLaunches, "counter"}, {semconv.GenAIClientOperationDuration, "histogram"}}
	k := func(pid, kernel string, v float64) string {
		return fmt.Sprintf(`%s{%s="%s",%s="%s"} %g`, launches, promLabel(semconv.ProcessPID), pid, promLabel(semconv.CUDAKernelName), kernel, v)
	}
	h := func(model string, le01, le1, inf float64) []string {
		l := fmt.Sprintf(`%s="%s"`, promLabel(semconv.GenAIRequestModel), model)
		return []string{
			fmt.Sprintf(`%s_bucket{%s,le="0.1"} %g`, dur, l, le01),
			fmt.Sprintf(`%s_bucket{%s,le="1"} %g`, dur, l, le1),
			fmt.Sprintf(`%s_bucket{%s,le="+Inf"} %g`, dur, l, inf),
			fmt.Sprintf(`%s_sum{%s} 1`, dur, l),
			fmt.Sprintf(`%s_count{%s} %g`, dur, l, inf),
		}
	}
	t0 := time.Unix(1000, 0)
	fs := refreshAll(t,
		scrapeOf(t0, types, append([]string{k("10", "a", 100), k("10", "b", 50)}, h("m", 90, 100, 100)...)...),
		scrapeOf(t0.Add(2*time.Second), types, append([]string{k("10", "a", 120), k("10", "b", 10), k("11", "a", 8)}, h("m", 90, 110, 110)...)...),
		scrapeOf(t0.Add(4*time.Second), types, append([]string{k("10", "a", 130)}, h("m", 100, 120, 121)...)...),
	)
	assert.Zero(t, fs[0].Interval)
	require.Len(t, fs[0].Processes, 1)
	assert.True(t, math.IsNaN(fs[0].Processes[0].Launches))
	require.Len(t, fs[0].Processes[0].Kernels, 2)
	assert.Equal(t, 100.0, fs[0].Processes[0].TopKernels()[0].Total)
	assert.Equal(t, 50.0, fs[0].Processes[0].TopKernels()[1].Total)

	p := fs[1].Processes
	require.Len(t, p, 2)
	// pid 10: a went up 20, b was reset to 10: (20+10)/2 s.
	assert.Equal(t, int64(10), p[0].PID)
	assert.Equal(t, 15.0, p[0].Launches)
	assert.Equal(t, []KernelRow{{"a", 10, 120}, {"b", 5, 10}}, p[0].TopKernels())
	// pid 11 is new: from 0.
	assert.Equal(t, 4.0, p[1].Launches)
	// 10 calls in the interval, all in (0.1, 1]: the median interpolated
	// half-way, 0.55 s; the p95 at 0.955 s.
	l := fs[1].LLM[0]
	assert.Equal(t, 5.0, l.Calls)
	assert.InDelta(t, 0.955, l.DurationP95, 1e-9)

	// pid 11 is gone, b is gone; 10 calls in (0, 0.1], 10 in (0.1, 1], 1
	// above: p95 is the last bound.
	require.Len(t, fs[2].Processes, 1)
	assert.Equal(t, 5.0, fs[2].Processes[0].Launches)
	assert.Equal(t, 5.5, fs[2].LLM[0].Calls)
	assert.InDelta(t, 1.0, fs[2].LLM[0].DurationP95, 1e-9)
}

func TestQuantile(t *testing.T) {
	bounds := []float64{0.1, 1, 10}
	for _, tc := range []struct {
		q      float64
		counts []float64
		want   float64
	}{
		{0.5, []float64{0, 0, 0, 0}, math.NaN()},
		{0.5, []float64{10, 0, 0, 0}, 0.05},
		{0.5, []float64{0, 10, 0, 0}, 0.55},
		{0.95, []float64{0, 10, 0, 0}, 0.955},
		{1, []float64{0, 10, 0, 0}, 1},
		{0, []float64{0, 10, 0, 0}, 0.1},
		{0.5, []float64{5, 0, 5, 0}, 0.1},
		{0.9, []float64{5, 0, 5, 0}, 8.2},
		{0.99, []float64{0, 0, 0, 3}, 10},
		{0.5, []float64{1, 2}, math.NaN()}, // counts do not fit the bounds
	} {
		got := quantile(tc.q, bounds, tc.counts)
		if math.IsNaN(tc.want) {
			assert.True(t, math.IsNaN(got), "%+v: %v", tc, got)
			continue
		}
		assert.InDelta(t, tc.want, got, 1e-9, "%+v", tc)
	}
	// A bucket that starts below zero interpolates from its own bound.
	assert.Equal(t, -1.0, quantile(0.5, []float64{-1, 1}, []float64{4, 0, 0}))
}

// A process whose oldest allocation stays, and whose outstanding memory
// never goes down, for LeakRefreshes refreshes is a leak suspect; once it
// frees that allocation it is not.
func TestLeakSuspect(t *testing.T) {
	types := []typedFam{{semconv.CUDAMemoryOutstanding, "gauge"}, {semconv.CUDAMemoryOldestAge, "gauge"}}
	line := func(outst, age float64) []string {
		l := fmt.Sprintf(`{%s="42",%s="trainer"}`, promLabel(semconv.ProcessPID), promLabel(semconv.ProcessExecutableName))
		return []string{
			fmt.Sprintf("%s%s %g", promName(semconv.CUDAMemoryOutstanding), l, outst),
			fmt.Sprintf("%s%s %g", promName(semconv.CUDAMemoryOldestAge), l, age),
		}
	}
	t0 := time.Unix(1000, 0)
	var scrapes []Scrape
	for i := range LeakRefreshes + 1 {
		scrapes = append(scrapes, scrapeOf(t0.Add(time.Duration(i)*10*time.Second), types, line(float64(1<<30+i<<20), 100+float64(i)*10)...))
	}
	// The oldest allocation freed: a younger one is the oldest now.
	scrapes = append(scrapes, scrapeOf(t0.Add(time.Duration(LeakRefreshes+1)*10*time.Second), types, line(2<<30, 5)...))
	fs := refreshAll(t, scrapes...)
	for i, f := range fs[:LeakRefreshes] {
		assert.Nil(t, f.Processes[0].Leak, "refresh %d", i)
	}
	l := fs[LeakRefreshes].Processes[0].Leak
	require.NotNil(t, l, "after %d refreshes", LeakRefreshes)
	assert.Equal(t, &Leak{Since: time.Duration(LeakRefreshes) * 10 * time.Second, From: 1 << 30, To: 1<<30 + LeakRefreshes<<20,
		OldestAge: 100 + LeakRefreshes*10}, l)
	assert.Nil(t, fs[LeakRefreshes+1].Processes[0].Leak)
	assert.Contains(t, Once(fs[LeakRefreshes], []View{ViewProcesses}, 120, nil), "LEAK SUSPECT: its oldest allocation is 2m10s old, and what it holds went 1.00G → 1.00G over the last 30s")
}

// The Training view takes its columns from a list of semconv metrics
// (genai/training's, TestTrainingColumns): here stand-ins of the three
// kinds, by job attribute, show it reading a gauge (averaged over the
// job's series), a counter (a rate, summed) and an up-down counter.
func TestTrainingViewIsDataDriven(t *testing.T) {
	spec := newTrainingSpec([]TrainingColumn{
		{Title: "util", Metric: semconv.HWGPUUtilization},
		{Title: "launches/s", Metric: semconv.CUDAKernelLaunches},
		{Title: "running", Metric: semconv.XpuscopeGenAIServerRunningRequests},
	}, []attribute.Key{semconv.ProcessExecutableName})
	types := []typedFam{{semconv.HWGPUUtilization, "gauge"}, {semconv.CUDAKernelLaunches, "counter"},
		{semconv.XpuscopeGenAIServerRunningRequests, "gauge"}}
	job := func(exe, pod string) string {
		return fmt.Sprintf(`{%s="%s",%s="ml",%s="%s"}`, promLabel(semconv.ProcessExecutableName), exe,
			promLabel(semconv.K8sNamespaceName), promLabel(semconv.K8sPodName), pod)
	}
	t0 := time.Unix(1000, 0)
	lines := func(launches float64) []string {
		return []string{
			promName(semconv.HWGPUUtilization) + job("train", "a")[:len(job("train", "a"))-1] + `,hw_id="0"} 0.2`,
			promName(semconv.HWGPUUtilization) + job("train", "a")[:len(job("train", "a"))-1] + `,hw_id="1"} 0.4`,
			promName(semconv.CUDAKernelLaunches) + job("train", "a") + fmt.Sprintf(" %g", launches),
			promName(semconv.XpuscopeGenAIServerRunningRequests) + job("eval", "b") + " 3",
		}
	}
	ref := NewRefresher(&replay{scrapes: []Scrape{scrapeOf(t0, types, lines(10)...), scrapeOf(t0.Add(time.Second), types, lines(30)...)}}, time.Second)
	ref.b.training = spec
	_, err := ref.Refresh(context.Background())
	require.NoError(t, err)
	f, err := ref.Refresh(context.Background())
	require.NoError(t, err)
	require.Len(t, f.Training, 2)
	assert.Equal(t, []string{"eval", "ml/b"}, f.Training[0].Key)
	assert.True(t, math.IsNaN(f.Training[0].Values[0]) && math.IsNaN(f.Training[0].Values[1]))
	assert.Equal(t, 3.0, f.Training[0].Values[2])
	assert.Equal(t, []string{"train", "ml/a"}, f.Training[1].Key)
	assert.InDelta(t, 0.3, f.Training[1].Values[0], 1e-9)
	assert.Equal(t, 20.0, f.Training[1].Values[1])

	m := New(Options{Refresher: ref, Interval: time.Second, training: &spec, Now: func() time.Time { return f.At }})
	m.frame = f
	m.width, m.height = 100, 10
	m.switchTo(ViewTraining)
	m.reload()
	screen := ansi.Strip(m.Render())
	assert.Regexp(t, `NAME +POD +UTIL▼ +LAUNCHES/S +RUNNING`, screen)
	assert.Regexp(t, `train +ml/a +0\.3000 +20\.0000 +-`, screen)

	// With genai/training's columns: the builder reads none of those
	// families, and the view has no training jobs.
	ref = NewRefresher(&replay{scrapes: []Scrape{scrapeOf(t0, types, lines(10)...)}}, time.Second)
	f, err = ref.Refresh(context.Background())
	require.NoError(t, err)
	assert.Empty(t, f.Training)
	m = New(Options{Refresher: ref, Interval: time.Second, Now: func() time.Time { return f.At }})
	m.frame = f
	m.switchTo(ViewTraining)
	m.reload()
	assert.Contains(t, ansi.Strip(m.Render()), "no training jobs")
}

// The Training view's columns are genai/training's metrics, under the
// names the exporter gives them (TestNamesMatchTheExporter): a job read
// from TensorBoard and MLflow has its loss averaged over the two series;
// training.throughput goes to steps/s, samples/s or tokens/s by what it
// counts; a job is told from another by its executable, run and pod.
func TestTrainingColumns(t *testing.T) {
	types := []typedFam{{semconv.TrainingLoss, "gauge"}, {semconv.TrainingThroughput, "gauge"},
		{semconv.TrainingLearningRate, "gauge"}, {semconv.TrainingStep, "gauge"}, {semconv.TrainingEpoch, "gauge"}}
	series := func(m semconv.Metric, run, format, extra string, v float64) string {
		return fmt.Sprintf(`%s{%s="python3",%s="%s",%s="%s",%s="ml",%s="job-0"%s} %g`, promName(m),
			promLabel(semconv.ProcessExecutableName), promLabel(semconv.TrainingRun), run,
			promLabel(semconv.TrainingLogFormat), format, promLabel(semconv.K8sNamespaceName), promLabel(semconv.K8sPodName), extra, v)
	}
	item := func(i string) string { return fmt.Sprintf(`,%s="%s"`, promLabel(semconv.TrainingThroughputItem), i) }
	f := refreshAll(t, scrapeOf(time.Unix(1000, 0), types,
		series(semconv.TrainingLoss, "exp1", semconv.TrainingLogTensorBoard, "", 0.5),
		series(semconv.TrainingLoss, "exp1", semconv.TrainingLogMLflow, "", 0.7),
		series(semconv.TrainingThroughput, "exp1", semconv.TrainingLogTensorBoard, item(semconv.TrainingItemStep), 2.5),
		series(semconv.TrainingThroughput, "exp1", semconv.TrainingLogMLflow, item(semconv.TrainingItemSample), 64),
		series(semconv.TrainingLearningRate, "exp1", semconv.TrainingLogTensorBoard, "", 1e-4),
		series(semconv.TrainingStep, "exp1", semconv.TrainingLogTensorBoard, "", 120),
		series(semconv.TrainingThroughput, "exp2", semconv.TrainingLogCSV, item(semconv.TrainingItemToken), 9000),
		series(semconv.TrainingEpoch, "exp2", semconv.TrainingLogCSV, "", 1.5),
	))[0]
	require.Len(t, f.Training, 2)
	col := map[string]int{}
	for i, c := range defaultTraining.cols {
		col[c.Title] = i
	}
	a, b := f.Training[0], f.Training[1]
	assert.Equal(t, []string{"python3", "exp1", "ml/job-0"}, a.Key)
	assert.InDelta(t, 0.6, a.Values[col["loss"]], 1e-9)
	assert.Equal(t, 2.5, a.Values[col["steps/s"]])
	assert.Equal(t, 64.0, a.Values[col["samples/s"]])
	assert.True(t, math.IsNaN(a.Values[col["tokens/s"]]))
	assert.Equal(t, 1e-4, a.Values[col["lr"]])
	assert.Equal(t, 120.0, a.Values[col["step"]])
	assert.Equal(t, []string{"python3", "exp2", "ml/job-0"}, b.Key)
	assert.Equal(t, 9000.0, b.Values[col["tokens/s"]])
	assert.Equal(t, 1.5, b.Values[col["epoch"]])
	assert.True(t, math.IsNaN(b.Values[col["loss"]]) && math.IsNaN(b.Values[col["steps/s"]]))

	screen := Once(f, []View{ViewTraining}, 80, nil)
	assert.Regexp(t, `NAME +RUN +POD +LOSS▼ +STEPS/S +LR +STEP`, screen)
	assert.Regexp(t, `(?m)python3 +exp1 +ml/job-0 +0\.6000 +2\.5000 +0\.0001 +120( |$)`, screen)
}

// A MIG instance is a row of its own under its parent GPU (the gpu
// Source's hw.parent and gpu.mig.profile), with its own utilization and
// memory; the rows go by device index, the GPU before its instances.
func TestMIGRows(t *testing.T) {
	types := []typedFam{{semconv.HWGPUUtilization, "gauge"}, {semconv.HWGPUMemoryUsage, "gauge"}, {semconv.HWGPUMemoryLimit, "gauge"}}
	dev := func(m semconv.Metric, id, index, parent, profile string, v float64) string {
		l := fmt.Sprintf(`%s="%s",%s="NVIDIA H100 80GB HBM3",%s="%s"`, promLabel(semconv.HWID), id, promLabel(semconv.HWName),
			promLabel(semconv.GPUIndex), index)
		if parent != "" {
			l += fmt.Sprintf(`,%s="%s",%s="%s"`, promLabel(semconv.HWParent), parent, promLabel(semconv.GPUMIGProfile), profile)
		}
		return fmt.Sprintf("%s{%s} %g", promName(m), l, v)
	}
	f := refreshAll(t, scrapeOf(time.Unix(1000, 0), types,
		dev(semconv.HWGPUUtilization, "MIG-b", "0", "GPU-a", "3g.40gb", 0.5),
		dev(semconv.HWGPUUtilization, "GPU-c", "1", "", "", 0.1),
		dev(semconv.HWGPUUtilization, "GPU-a", "0", "", "", 0.3),
		dev(semconv.HWGPUMemoryUsage, "MIG-b", "0", "GPU-a", "3g.40gb", 10<<30),
		dev(semconv.HWGPUMemoryLimit, "MIG-b", "0", "GPU-a", "3g.40gb", 40<<30),
	))[0]
	require.Len(t, f.GPUs, 3)
	assert.Equal(t, []string{"GPU-a", "MIG-b", "GPU-c"}, []string{f.GPUs[0].ID, f.GPUs[1].ID, f.GPUs[2].ID})
	assert.Equal(t, "GPU-a", f.GPUs[1].Parent)
	assert.Equal(t, "3g.40gb", f.GPUs[1].Profile)
	assert.Equal(t, 0.5, f.GPUs[1].Util)
	screen := Once(f, []View{ViewGPUs}, 80, nil)
	assert.Regexp(t, `(?m)^ +0 +H100 80GB HBM3 +\S+ +30% `, screen)
	assert.Regexp(t, `(?m)^ +0 +└ MIG 3g\.40gb +\S+ +50% +10\.0/40\.0G`, screen)
	assert.Regexp(t, `(?m)^ +1 +H100 80GB HBM3 +\S* +10% `, screen)
}

// The LLM view's cost a minute is xpuscope.genai.cost's rate (a counter in
// USD, where rates are configured) times 60, and its calls waiting for a
// first chunk the capture's gauge, summed over the row's series.
func TestLLMCostAndWaiting(t *testing.T) {
	types := []typedFam{{semconv.XpuscopeGenAICost, "counter"}, {semconv.XpuscopeGenAIClientWaitingRequests, "gauge"}}
	call := func(m semconv.Metric, op string, v float64) string {
		return fmt.Sprintf(`%s{%s="%s",%s="openai",%s="gpt-4o",%s="api.openai.com",%s="443"} %g`, promName(m),
			promLabel(semconv.GenAIOperationName), op, promLabel(semconv.GenAIProviderName), promLabel(semconv.GenAIRequestModel),
			promLabel(semconv.ServerAddress), promLabel(semconv.ServerPort), v)
	}
	t0 := time.Unix(1000, 0)
	fs := refreshAll(t,
		scrapeOf(t0, types, call(semconv.XpuscopeGenAICost, "chat", 0.01), call(semconv.XpuscopeGenAIClientWaitingRequests, "chat", 1)),
		scrapeOf(t0.Add(2*time.Second), types, call(semconv.XpuscopeGenAICost, "chat", 0.03),
			call(semconv.XpuscopeGenAIClientWaitingRequests, "chat", 2), call(semconv.XpuscopeGenAIClientWaitingRequests, "embeddings", 1)))
	require.Len(t, fs[0].LLM, 1)
	assert.True(t, math.IsNaN(fs[0].LLM[0].CostPerMin), "a rate needs two scrapes")
	l := fs[1].LLM[0]
	assert.Equal(t, "api.openai.com:443", l.Server)
	assert.InDelta(t, 0.02/2*60, l.CostPerMin, 1e-12)
	assert.Equal(t, 3.0, l.Waiting)
	assert.Regexp(t, `(?m)^openai +gpt-4o .* \$0\.6000 +3 +api\.openai\.com:443$`, Once(fs[1], []View{ViewLLM}, 160, nil))
}

// A feature the agent could not start carries its reason in the scrape
// (xpuscope.feature.reason), and top shows it beside the state, where
// -standalone shows the reason it met itself; an active one has none.
func TestFeatureReasonsFromTheAgent(t *testing.T) {
	types := []typedFam{{semconv.XpuscopeAgentFeatureState, "gauge"}}
	state := func(feature, st, reason string, v int) string {
		l := fmt.Sprintf(`%s="%s",%s="%s"`, promLabel(semconv.XpuscopeFeature), feature, promLabel(semconv.XpuscopeFeatureState), st)
		if reason != "" {
			l += fmt.Sprintf(`,%s="%s"`, promLabel(semconv.XpuscopeFeatureReason), reason)
		}
		return fmt.Sprintf("%s{%s} %d", promName(semconv.XpuscopeAgentFeatureState), l, v)
	}
	const why = "gpu: no backend: NVML: libnvidia-ml.so.1: cannot open shared object file"
	f := refreshAll(t, scrapeOf(time.Unix(1000, 0), types,
		state("gpu", "active", why, 0), state("gpu", "unavailable", why, 1), state("gpu", "fault", why, 0),
		state("podjoin", "active", "", 1), state("podjoin", "unavailable", "", 0),
		state("intelpt", "unavailable", "", 1),
	))[0]
	require.Len(t, f.Features, 3)
	lines := featureLines(f, nil)
	assert.Contains(t, lines, fmt.Sprintf("%-10s %-12s %s", "gpu", "unavailable", why))
	assert.Contains(t, lines, "podjoin    active")
	assert.Contains(t, lines, fmt.Sprintf("%-10s %-12s %s", "intelpt", "unavailable", "(run agent -check on the node for why)"),
		"an agent that gives no reason")
	standalone := featureLines(f, map[string]string{"gpu": "what top met itself"})
	assert.Contains(t, standalone, fmt.Sprintf("%-10s %-12s %s", "gpu", "unavailable", "what top met itself"))
}
