package serving

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/xpuscope/xpuscope/semconv"
)

const llama = "meta-llama/Llama-3.1-8B-Instruct"

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

func parseText(t testing.TB, b []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	require.NoError(t, err)
	return fams
}

func testLimits() limits { return limits{models: 16, series: 512, values: 64} }

// mapFixture maps a fixture with a fresh server's caps.
func mapFixture(t testing.TB, p *profile, name, model string) *mapping {
	t.Helper()
	var m mapping
	v := values{lim: testLimits()}
	mapFamilies(p, parseText(t, fixture(t, name)), model, &v, &m)
	return &m
}

// find returns the point of metric d, model and extra attributes.
func find(t testing.TB, m *mapping, d *semconv.Metric, model string, extra ...attribute.KeyValue) *point {
	t.Helper()
	for i := range m.points {
		p := &m.points[i]
		if p.metric == d && p.model == model && p.key == attrKey(nil, extra) {
			return p
		}
	}
	var have []string
	for _, p := range m.points {
		have = append(have, p.metric.Name+"{"+p.model+","+strings.ReplaceAll(p.key, "\x00", ";")+"}")
	}
	sort.Strings(have)
	require.Failf(t, "no point", "%s model %q %v; have:\n%s", d.Name, model, extra, strings.Join(have, "\n"))
	return nil
}

func assertValue(t testing.TB, m *mapping, d *semconv.Metric, model string, want float64, extra ...attribute.KeyValue) {
	t.Helper()
	assert.InDelta(t, want, find(t, m, d, model, extra...).value, 1e-9, "%s %v", d.Name, extra)
}

// assertHist checks a histogram against the server's bounds and its
// per-bucket counts (the last one past the last bound).
func assertHist(t testing.TB, m *mapping, d *semconv.Metric, model string, bounds []float64, counts []uint64, sum float64) {
	t.Helper()
	p := find(t, m, d, model)
	assert.Equal(t, bounds, p.hist.bounds, "%s: the server's bounds, kept", d.Name)
	assert.Equal(t, counts, p.hist.counts, "%s: counts per bucket", d.Name)
	var n uint64
	for _, c := range counts {
		n += c
	}
	assert.Equal(t, n, p.hist.count, "%s: count", d.Name)
	assert.InDelta(t, sum, p.hist.sum, 1e-9, "%s: sum", d.Name)
}

func zeros(n int) []uint64 { return make([]uint64, n) }

func cat(parts ...[]uint64) []uint64 {
	var out []uint64
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

var (
	input  = semconv.GenAITokenType.String(semconv.GenAITokenTypeInput)
	output = semconv.GenAITokenType.String(semconv.GenAITokenTypeOutput)
)

func finish(r string) attribute.KeyValue  { return semconv.XpuscopeGenAIServerFinishReason.String(r) }
func errType(r string) attribute.KeyValue { return semconv.ErrorType.String(r) }
func phaseOf(p string) attribute.KeyValue { return semconv.XpuscopeGenAIServerPhase.String(p) }

// vLLM's figures that both generations of names carry, read from either.
func assertVLLMCommon(t *testing.T, m *mapping) {
	assertValue(t, m, &semconv.XpuscopeGenAIServerWaitingRequests, llama, 3)
	assertValue(t, m, &semconv.XpuscopeGenAIServerRunningRequests, llama, 8)
	assertValue(t, m, &semconv.XpuscopeGenAIServerKVCacheUtilization, llama, 0.4375)
	// 27600 blocks of 16 tokens; cache_config_info names no model: the
	// server's only one.
	assertValue(t, m, &semconv.XpuscopeGenAIServerKVCacheCapacity, llama, 27600*16)
	assertValue(t, m, &semconv.XpuscopeGenAIServerTokens, llama, 18210, input)
	assertValue(t, m, &semconv.XpuscopeGenAIServerTokens, llama, 27453, output)
	assertValue(t, m, &semconv.XpuscopeGenAIServerPreemptions, llama, 2)
	assertValue(t, m, &semconv.XpuscopeGenAIServerRequests, llama, 1, finish("stop"))
	assertValue(t, m, &semconv.XpuscopeGenAIServerRequests, llama, 131, finish("length"))
	assert.Zero(t, m.over, "nothing left out")
}

func TestMapVLLMCurrentNames(t *testing.T) {
	m := mapFixture(t, &vllmProfile, "vllm-v1.prom", "")
	assertVLLMCommon(t, m)
	assertValue(t, m, &semconv.XpuscopeGenAIServerRequests, llama, 0, errType("abort"))
	// vLLM's own bounds (vllm/v1/metrics/loggers.py), not the
	// conventions'.
	assertHist(t, m, &semconv.GenAIServerTimeToFirstToken, llama,
		[]float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0},
		cat([]uint64{0, 0, 0, 13, 84, 26, 15, 2}, zeros(15)), 6.318)
	tpot := []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	assertHist(t, m, &semconv.GenAIServerTimePerOutputToken, llama, tpot,
		cat([]uint64{20000, 6000, 1000, 200, 100, 10}, zeros(14)), 231.52)
	latency := []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	assertHist(t, m, &semconv.GenAIServerRequestDuration, llama, latency,
		cat([]uint64{0, 0, 0, 2, 10, 40, 50, 28, 2}, zeros(13)), 278.4)
	assertHist(t, m, &semconv.XpuscopeGenAIServerQueueDuration, llama, latency,
		cat([]uint64{120, 10, 2}, zeros(19)), 12.7)
	assert.Equal(t, 16, m.own, "vllm: families")
}

func TestMapVLLMNamesBeforeTheRename(t *testing.T) {
	m := mapFixture(t, &vllmProfile, "vllm-v0.prom", "")
	assertVLLMCommon(t, m)
	// The same semconv names, with the bounds of that release.
	assertHist(t, m, &semconv.GenAIServerTimeToFirstToken, llama,
		[]float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0},
		cat([]uint64{0, 0, 0, 13, 84, 26, 15, 2}, zeros(9)), 6.318)
	assertHist(t, m, &semconv.GenAIServerTimePerOutputToken, llama,
		[]float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5},
		cat([]uint64{20000, 6000, 1000, 200, 100, 10}, zeros(8)), 231.52)
	assertHist(t, m, &semconv.GenAIServerRequestDuration, llama,
		[]float64{1.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0},
		cat([]uint64{2, 100, 28, 2}, zeros(7)), 278.4)
}

// A release between the two exports both names of a renamed metric: the
// new one is read, the figure counted once.
func TestMapVLLMBothNames(t *testing.T) {
	both := append(fixture(t, "vllm-v1.prom"), []byte(`# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{engine="0",model_name="`+llama+`"} 0.9
# TYPE vllm:time_per_output_token_seconds histogram
vllm:time_per_output_token_seconds_bucket{engine="0",le="1.0",model_name="`+llama+`"} 5.0
vllm:time_per_output_token_seconds_bucket{engine="0",le="+Inf",model_name="`+llama+`"} 5.0
vllm:time_per_output_token_seconds_count{engine="0",model_name="`+llama+`"} 5.0
vllm:time_per_output_token_seconds_sum{engine="0",model_name="`+llama+`"} 1.0
`)...)
	var m mapping
	v := values{lim: testLimits()}
	mapFamilies(&vllmProfile, parseText(t, both), "", &v, &m)
	assertValue(t, &m, &semconv.XpuscopeGenAIServerKVCacheUtilization, llama, 0.4375)
	assert.Equal(t, uint64(27310), find(t, &m, &semconv.GenAIServerTimePerOutputToken, llama).hist.count, "inter-token latency")
	n := 0
	for _, p := range m.points {
		if p.metric == &semconv.GenAIServerTimePerOutputToken {
			n++
		}
	}
	assert.Equal(t, 1, n, "series of the time per output token")
}

// vLLM's data-parallel engines: summed, the KV cache's fill the fullest
// engine's, histograms of the same bounds added.
func TestMapVLLMEngines(t *testing.T) {
	text := `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3
vllm:num_requests_running{engine="1",model_name="m"} 4
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.9
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="m"} 1
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} 2
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 2
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 0.3
vllm:time_to_first_token_seconds_bucket{engine="1",le="0.1",model_name="m"} 4
vllm:time_to_first_token_seconds_bucket{engine="1",le="+Inf",model_name="m"} 4
vllm:time_to_first_token_seconds_count{engine="1",model_name="m"} 4
vllm:time_to_first_token_seconds_sum{engine="1",model_name="m"} 0.2
`
	var m mapping
	v := values{lim: testLimits()}
	mapFamilies(&vllmProfile, parseText(t, []byte(text)), "", &v, &m)
	assertValue(t, &m, &semconv.XpuscopeGenAIServerRunningRequests, "m", 7)
	assertValue(t, &m, &semconv.XpuscopeGenAIServerKVCacheUtilization, "m", 0.9)
	assertHist(t, &m, &semconv.GenAIServerTimeToFirstToken, "m", []float64{0.1}, []uint64{5, 1}, 0.5)
}

// TGI's metrics name no model: the model is the server's (its /info).
func TestMapTGI(t *testing.T) {
	const bloom = "bigscience/bloom-560m"
	m := mapFixture(t, &tgiProfile, "tgi.prom", bloom)
	assertValue(t, m, &semconv.XpuscopeGenAIServerWaitingRequests, bloom, 3)
	assertValue(t, m, &semconv.XpuscopeGenAIServerRunningRequests, bloom, 8)
	assertValue(t, m, &semconv.XpuscopeGenAIServerTokens, bloom, 18210, input)
	assertValue(t, m, &semconv.XpuscopeGenAIServerTokens, bloom, 27453, output)
	assertValue(t, m, &semconv.XpuscopeGenAIServerRequests, bloom, 132)
	assertValue(t, m, &semconv.XpuscopeGenAIServerRequests, bloom, 5, errType("validation"))
	assertValue(t, m, &semconv.XpuscopeGenAIServerRequests, bloom, 3, errType("overloaded"))
	// The router's 35 bounds, a geometric sequence from 0.0001 times
	// 1.5 (router/src/server.rs), computed here as it computes them.
	bounds := make([]float64, 35)
	v := 0.0001
	for i := range bounds {
		v *= 1.5
		bounds[i] = v
	}
	at := func(n int, at map[int]uint64) []uint64 {
		c := zeros(n)
		for i, k := range at {
			c[i] = k
		}
		return c
	}
	assertHist(t, m, &semconv.GenAIServerRequestDuration, bloom, bounds, at(36, map[int]uint64{22: 40, 23: 60, 24: 30, 25: 2}), 278.4)
	assertHist(t, m, &semconv.GenAIServerTimePerOutputToken, bloom, bounds, at(36, map[int]uint64{11: 100, 12: 32}), 1.12)
	assertHist(t, m, &semconv.XpuscopeGenAIServerQueueDuration, bloom, bounds, at(36, map[int]uint64{8: 100, 12: 30, 18: 2}), 0.91)
	assert.Zero(t, m.over)
}

func TestMapTriton(t *testing.T) {
	m := mapFixture(t, &tritonProfile, "triton.prom", "")
	const mine, ens = "my_model", "ensemble_llm"
	assertValue(t, m, &semconv.XpuscopeGenAIServerWaitingRequests, mine, 5)
	assertValue(t, m, &semconv.XpuscopeGenAIServerWaitingRequests, ens, 0)
	assertValue(t, m, &semconv.XpuscopeGenAIServerRequests, mine, 161)
	assertValue(t, m, &semconv.XpuscopeGenAIServerRequests, mine, 2, errType("REJECTED"))
	assertValue(t, m, &semconv.XpuscopeGenAIServerRequests, mine, 1, errType("BACKEND"))
	assertValue(t, m, &semconv.XpuscopeGenAIServerRequests, ens, 3, errType("OTHER"))
	assertValue(t, m, &semconv.XpuscopeGenAIServerInferences, mine, 1288)
	assertValue(t, m, &semconv.XpuscopeGenAIServerExecutions, mine, 161)
	// Cumulative microseconds, as counters of seconds.
	assertValue(t, m, &semconv.XpuscopeGenAIServerRequestTime, mine, 2.415, phaseOf(semconv.ServerPhaseRequest))
	assertValue(t, m, &semconv.XpuscopeGenAIServerRequestTime, mine, 0.01111, phaseOf(semconv.ServerPhaseQueue))
	assertValue(t, m, &semconv.XpuscopeGenAIServerRequestTime, mine, 0.0322, phaseOf(semconv.ServerPhaseComputeInput))
	assertValue(t, m, &semconv.XpuscopeGenAIServerRequestTime, mine, 2.35, phaseOf(semconv.ServerPhaseComputeInfer))
	assertValue(t, m, &semconv.XpuscopeGenAIServerRequestTime, mine, 0.0161, phaseOf(semconv.ServerPhaseComputeOutput))
	assertValue(t, m, &semconv.XpuscopeGenAIServerRequestTime, ens, 9.1, phaseOf(semconv.ServerPhaseRequest))
	// The guide's histogram, in milliseconds: its edges, in seconds.
	assertHist(t, m, &semconv.GenAIServerTimeToFirstToken, mine, []float64{0.1, 0.5, 2, 5}, []uint64{8, 22, 6, 1, 0}, 10.771)
	assert.Zero(t, m.over)
}

func TestMapTorchServe(t *testing.T) {
	m := mapFixture(t, &torchServeProfile, "torchserve.prom", "")
	assertValue(t, m, &semconv.XpuscopeGenAIServerRequests, "resnet18", 3)
	assertValue(t, m, &semconv.XpuscopeGenAIServerRequestTime, "resnet18", 0.290371129, phaseOf(semconv.ServerPhaseRequest))
	assertValue(t, m, &semconv.XpuscopeGenAIServerRequestTime, "resnet18", 0.00036521, phaseOf(semconv.ServerPhaseQueue))
	assert.Len(t, m.points, 3, "points")
}

func TestMapTFServing(t *testing.T) {
	m := mapFixture(t, &tfServingProfile, "tfserving.prom", "")
	assertValue(t, m, &semconv.XpuscopeGenAIServerRequests, "half_plus_two", 1450)
	assertValue(t, m, &semconv.XpuscopeGenAIServerRequests, "half_plus_two", 12, errType("INVALID_ARGUMENT"))
	h := find(t, m, &semconv.GenAIServerRequestDuration, "half_plus_two").hist
	require.Len(t, h.bounds, 33, "TF Serving's 33 bounds")
	assert.InDelta(t, 10e-6, h.bounds[0], 1e-15, "the first bound, 10 us, in seconds")
	assert.Equal(t, uint64(1462), h.count)
	assert.InDelta(t, 2.891, h.sum, 1e-9, "sum, in seconds")
}

// Past a server's cap of models, the others' series fold into _OTHER,
// summed, and are counted.
func TestMapModelCap(t *testing.T) {
	var m mapping
	v := values{lim: limits{models: 1, series: 512, values: 64}}
	mapFamilies(&tritonProfile, parseText(t, fixture(t, "triton.prom")), "", &v, &m)
	assertValue(t, &m, &semconv.XpuscopeGenAIServerRequests, "my_model", 161)
	assertValue(t, &m, &semconv.XpuscopeGenAIServerRequests, semconv.Other, 40)
	assertValue(t, &m, &semconv.XpuscopeGenAIServerRequestTime, semconv.Other, 9.1, phaseOf(semconv.ServerPhaseRequest))
	assert.Equal(t, 10, m.over.models, "ensemble_llm's samples folded")
	// The model admitted keeps its series at the next scrape.
	mapFamilies(&tritonProfile, parseText(t, fixture(t, "triton.prom")), "", &v, &m)
	assertValue(t, &m, &semconv.XpuscopeGenAIServerRequests, "my_model", 161)
}

func TestMapSeriesCap(t *testing.T) {
	var m mapping
	v := values{lim: limits{models: 16, series: 4, values: 64}}
	mapFamilies(&vllmProfile, parseText(t, fixture(t, "vllm-v1.prom")), "", &v, &m)
	assert.Len(t, m.points, 4)
	assert.Equal(t, 14-4, m.over.series, "points past the cap")
}

// Outcome words past a server's cap read _OTHER; long ones are clipped.
func TestMapWordCap(t *testing.T) {
	long := strings.Repeat("y", 100)
	var b strings.Builder
	b.WriteString("# TYPE tgi_request_failure counter\n")
	b.WriteString(`tgi_request_failure{err="` + long + `"} 1` + "\n")
	for i := range 69 {
		fmt.Fprintf(&b, "tgi_request_failure{err=\"w%02d\"} 1\n", i)
	}
	var m mapping
	v := values{lim: limits{models: 16, series: 512, values: 64}}
	mapFamilies(&tgiProfile, parseText(t, []byte(b.String())), "", &v, &m)
	require.Len(t, m.points, 64+1, "64 words, then _OTHER")
	assertValue(t, &m, &semconv.XpuscopeGenAIServerRequests, "", 1, errType(long[:maxValueLen]))
	assertValue(t, &m, &semconv.XpuscopeGenAIServerRequests, "", 69-63, errType(semconv.Other))
}

// Samples the mapping refuses: they are counted, and leave the others.
func TestMapInvalid(t *testing.T) {
	for name, text := range map[string]string{
		"counts that decrease": `# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 5
vllm:time_to_first_token_seconds_bucket{le="0.2",model_name="m"} 3
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 5
vllm:time_to_first_token_seconds_count{model_name="m"} 5
vllm:time_to_first_token_seconds_sum{model_name="m"} 1
`,
		"a bucket over the count": `# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 9
vllm:time_to_first_token_seconds_count{model_name="m"} 5
vllm:time_to_first_token_seconds_sum{model_name="m"} 1
`,
		"bounds unlike the engine's they fold with": `# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="m"} 1
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 1
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 0.05
vllm:time_to_first_token_seconds_bucket{engine="1",le="0.2",model_name="m"} 1
vllm:time_to_first_token_seconds_count{engine="1",model_name="m"} 1
vllm:time_to_first_token_seconds_sum{engine="1",model_name="m"} 0.05
`,
		"a value not finite":   "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} NaN\n",
		"a counter below zero": "# TYPE vllm:num_preemptions_total counter\nvllm:num_preemptions_total{model_name=\"m\"} -1\n",
		"no number of blocks":  "# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"None\"} 1\n",
	} {
		t.Run(name, func(t *testing.T) {
			var m mapping
			v := values{lim: testLimits()}
			mapFamilies(&vllmProfile, parseText(t, []byte(text+"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"m\"} 2\n")), "", &v, &m)
			assert.Equal(t, 1, m.over.invalid, "refused")
			assertValue(t, &m, &semconv.XpuscopeGenAIServerWaitingRequests, "m", 2)
			for _, p := range m.points {
				if p.metric.Kind == semconv.Histogram {
					// Only engine 0's is whole; engine 1's, folded into it,
					// was refused without touching it.
					assert.Equal(t, []uint64{1, 0}, p.hist.counts, "the histogram kept")
					assert.Equal(t, uint64(1), p.hist.count, "the histogram kept")
				}
			}
		})
	}
}

// FuzzMapping maps arbitrary metric families, as expfmt parses them from
// arbitrary text, with every kind's profile: the mapping never panics,
// never makes more points than its cap, and every histogram it makes is
// whole (increasing finite bounds, a count per bucket and one past them,
// adding to its count).
func FuzzMapping(f *testing.F) {
	// The fixtures' first lines: whole fixtures, tens of kilobytes, slow
	// the fuzzing engine down to a few inputs a second.
	for _, name := range []string{"vllm-v0.prom", "vllm-v1.prom", "tgi.prom", "triton.prom", "torchserve.prom", "tfserving.prom"} {
		b := fixture(f, name)
		if len(b) > 3000 {
			b = b[:bytes.LastIndexByte(b[:3000], '\n')+1]
		}
		f.Add(b)
	}
	f.Add([]byte("# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{model_name=\"\"} 1e308\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
		if err != nil {
			return
		}
		lim := limits{models: 3, series: 40, values: 5}
		for _, sp := range specs {
			var m mapping
			v := values{lim: lim}
			for range 2 { // twice: the buffers reused
				mapFamilies(sp.profile, fams, "", &v, &m)
				require.LessOrEqual(t, len(m.points), lim.series)
				require.LessOrEqual(t, len(v.models), lim.models)
				require.LessOrEqual(t, len(v.words), lim.values)
				for _, pt := range m.points {
					if pt.metric.Kind != semconv.Histogram {
						require.False(t, math.IsNaN(pt.value) || math.IsInf(pt.value, 0), "%s: %v", pt.metric.Name, pt.value)
						continue
					}
					h := pt.hist
					require.Len(t, h.counts, len(h.bounds)+1)
					require.LessOrEqual(t, len(h.bounds), maxBuckets)
					var n uint64
					for i, c := range h.counts {
						n += c
						if i < len(h.bounds) {
							require.False(t, math.IsNaN(h.bounds[i]) || math.IsInf(h.bounds[i], 0))
							if i > 0 {
								require.Less(t, h.bounds[i-1], h.bounds[i])
							}
						}
					}
					require.Equal(t, h.count, n, "%s: counts add to the count", pt.metric.Name)
				}
			}
		}
	})
}
