package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.yaml.in/yaml/v3"

	"github.com/xpuscope/xpuscope/semconv"
)

// family is one metric family as Prometheus scrapes it from the agent.
type family struct {
	otelName string // the registry's name
	kind     dto.MetricType
	labels   map[string]bool
}

// exportedFamilies builds every metric of the semconv registry, with every
// attribute it can carry, through the OpenTelemetry Prometheus exporter
// configured as examples/agent configures it, and returns the families a
// scrape would see, by Prometheus name. The names are the exporter's own
// translation (dots to underscores, unit suffixes, _total, _ratio), not a
// copy of its rules.
func exportedFamilies(t *testing.T) map[string]family {
	t.Helper()
	out := map[string]family{}
	for _, m := range semconv.Metrics() {
		reg := prometheus.NewRegistry()
		exp, err := otelprom.New(otelprom.WithRegisterer(reg))
		require.NoError(t, err)
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
		record(t, mp.Meter("github.com/xpuscope/xpuscope/deploy"), m)
		got, err := reg.Gather()
		require.NoError(t, err, "%s: gather", m.Name)
		require.NoError(t, mp.Shutdown(context.Background()))
		var fams []*dto.MetricFamily
		for _, f := range got {
			if f.GetName() != "target_info" { // the resource, not a registry metric
				fams = append(fams, f)
			}
		}
		require.Len(t, fams, 1, "%s: the families the exporter made", m.Name)
		f := fams[0]
		fam := family{otelName: m.Name, kind: f.GetType(), labels: map[string]bool{}}
		for _, metric := range f.GetMetric() {
			for _, l := range metric.GetLabel() {
				fam.labels[l.GetName()] = true
			}
		}
		prev, dup := out[f.GetName()]
		require.False(t, dup, "%s and %s are both exported as %s", prev.otelName, m.Name, f.GetName())
		out[f.GetName()] = fam
	}
	return out
}

// record creates m's instrument and records one value with every
// attribute m can carry.
func record(t *testing.T, meter metric.Meter, m semconv.Metric) {
	t.Helper()
	attrs := make([]attribute.KeyValue, len(m.Attributes))
	for i, k := range m.Attributes {
		attrs[i] = k.String("x")
	}
	ctx, set := context.Background(), metric.WithAttributes(attrs...)
	var err error
	switch m.Kind {
	case semconv.Counter:
		var c metric.Float64Counter
		if c, err = meter.Float64Counter(m.Name, metric.WithUnit(m.Unit)); err == nil {
			c.Add(ctx, 1, set)
		}
	case semconv.UpDownCounter:
		var c metric.Float64UpDownCounter
		if c, err = meter.Float64UpDownCounter(m.Name, metric.WithUnit(m.Unit)); err == nil {
			c.Add(ctx, 1, set)
		}
	case semconv.Gauge:
		var g metric.Float64Gauge
		if g, err = meter.Float64Gauge(m.Name, metric.WithUnit(m.Unit)); err == nil {
			g.Record(ctx, 1, set)
		}
	case semconv.Histogram:
		var h metric.Float64Histogram
		if h, err = meter.Float64Histogram(m.Name, metric.WithUnit(m.Unit),
			metric.WithExplicitBucketBoundaries(m.Buckets...)); err == nil {
			h.Record(ctx, 1, set)
		}
	default:
		require.Failf(t, "unknown kind", "%s: unknown kind %v", m.Name, m.Kind)
	}
	require.NoError(t, err, m.Name)
}

// operatorLabels are the target labels the Prometheus Operator puts on
// every series a ServiceMonitor scrapes.
var operatorLabels = []string{"job", "instance", "namespace", "pod", "service", "container", "endpoint"}

// vocabulary is what queries may name: the exported families and the
// labels the scrape adds.
type vocabulary struct {
	families     map[string]family
	targetLabels map[string]bool
	anyLabel     map[string]bool // every label of any family, and the target labels
}

func newVocabulary(t *testing.T) vocabulary {
	t.Helper()
	v := vocabulary{families: exportedFamilies(t), targetLabels: setOf(operatorLabels...), anyLabel: map[string]bool{}}
	var sm struct {
		Spec struct {
			Endpoints []struct {
				Relabelings []struct {
					TargetLabel string `yaml:"targetLabel"`
				} `yaml:"relabelings"`
			} `yaml:"endpoints"`
		} `yaml:"spec"`
	}
	readYAML(t, "kubernetes/servicemonitor.yaml", &sm)
	for _, e := range sm.Spec.Endpoints {
		for _, r := range e.Relabelings {
			v.targetLabels[r.TargetLabel] = true
		}
	}
	maps.Copy(v.anyLabel, v.targetLabels)
	for _, f := range v.families {
		maps.Copy(v.anyLabel, f.labels)
	}
	v.anyLabel["le"] = true
	return v
}

// series finds the family a series name belongs to; bucket says it is a
// histogram's _bucket series.
func (v vocabulary) series(name string) (f family, bucket, ok bool) {
	if f, ok := v.families[name]; ok && f.kind != dto.MetricType_HISTOGRAM {
		return f, false, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, cut := strings.CutSuffix(name, suffix); cut {
			if f, ok := v.families[base]; ok && f.kind == dto.MetricType_HISTOGRAM {
				return f, suffix == "_bucket", true
			}
		}
	}
	return family{}, false, false
}

// check returns what q names that a scrape of the agent never has.
func (v vocabulary) check(q query) []error {
	var errs []error
	for _, s := range q.selectors {
		f, bucket, ok := v.series(s.metric)
		if !ok {
			errs = append(errs, fmt.Errorf("metric %s is not exported: no semconv registry metric translates to it", s.metric))
			continue
		}
		for _, l := range s.labels {
			if !f.labels[l] && !v.targetLabels[l] && !(bucket && l == "le") {
				errs = append(errs, fmt.Errorf("%s (%s) has no label %s", s.metric, f.otelName, l))
			}
		}
	}
	for _, l := range q.grouping {
		if !v.anyLabel[l] {
			errs = append(errs, fmt.Errorf("no exported series has the label %s", l))
		}
	}
	return errs
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, v), path)
}

// ruleFile is the part of a Prometheus rule file the tests read.
type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// templateLabel finds the labels an alert's templates read.
var templateLabel = regexp.MustCompile(`\$labels\.([A-Za-z_][A-Za-z0-9_]*)`)

func TestRulesUseExportedMetrics(t *testing.T) {
	v := newVocabulary(t)
	var rf ruleFile
	readYAML(t, "prometheus/rules.yml", &rf)
	n := 0
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			n++
			name := g.Name + "/" + r.Alert + r.Record
			q, err := parseQuery(r.Expr)
			if !assert.NoError(t, err, name) {
				continue
			}
			assert.NotEmpty(t, q.selectors, "%s: the expression selects no metric", name)
			assert.Empty(t, v.check(q), name)
			for _, text := range slices.Concat(slices.Collect(maps.Values(r.Annotations)), slices.Collect(maps.Values(r.Labels))) {
				for _, m := range templateLabel.FindAllStringSubmatch(text, -1) {
					assert.True(t, v.anyLabel[m[1]], "%s: a template reads $labels.%s, which no exported series has", name, m[1])
				}
			}
		}
	}
	require.NotZero(t, n, "no rules in prometheus/rules.yml")
}

var dashboards = []string{"grafana/gpu-overview.json", "grafana/cuda-activity.json", "grafana/llm-performance.json", "grafana/training.json"}

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"` // a string, or {query: …} in newer schemas
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int                      `json:"id"`
	Type       string                   `json:"type"`
	Title      string                   `json:"title"`
	Datasource *datasourceRef           `json:"datasource"`
	GridPos    struct{ X, Y, W, H int } `json:"gridPos"`
	Panels     []panel                  `json:"panels"` // a collapsed row's
	Targets    []struct {
		RefID      string         `json:"refId"`
		Expr       string         `json:"expr"`
		Datasource *datasourceRef `json:"datasource"`
	} `json:"targets"`
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

func readDashboard(t *testing.T, path string) dashboard {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(data, &d), path)
	return d
}

// allPanels flattens rows.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// variableQuery is a query variable's query text.
func variableQuery(q any) string {
	switch q := q.(type) {
	case string:
		return q
	case map[string]any:
		s, _ := q["query"].(string)
		return s
	}
	return ""
}

func TestDashboardsUseExportedMetrics(t *testing.T) {
	v := newVocabulary(t)
	for _, path := range dashboards {
		d := readDashboard(t, path)
		exprs := 0
		for _, p := range allPanels(d.Panels) {
			for _, tg := range p.Targets {
				exprs++
				q, err := parseQuery(tg.Expr)
				if !assert.NoError(t, err, "%s: panel %q %s", path, p.Title, tg.RefID) {
					continue
				}
				assert.NotEmpty(t, q.selectors, "%s: panel %q %s selects no metric", path, p.Title, tg.RefID)
				assert.Empty(t, v.check(q), "%s: panel %q %s", path, p.Title, tg.RefID)
			}
		}
		for _, tv := range d.Templating.List {
			if tv.Type != "query" {
				continue
			}
			q, err := parseVariableQuery(variableQuery(tv.Query))
			if !assert.NoError(t, err, "%s: variable %s", path, tv.Name) {
				continue
			}
			assert.Empty(t, v.check(q), "%s: variable %s", path, tv.Name)
		}
		assert.NotZero(t, exprs, "%s: no queries", path)
	}
}

// TestVocabularyRefuses shows that the check finds what a rule or panel
// could get wrong.
func TestVocabularyRefuses(t *testing.T) {
	v := newVocabulary(t)
	for _, tc := range []struct {
		expr string
		want string
	}{
		{`hw_temperature{hw_type="gpu"} > 85`, "metric hw_temperature is not exported"},        // the OTel name, untranslated
		{`hw_gpu_utilization > 0`, "metric hw_gpu_utilization is not exported"},                // no _ratio suffix
		{`rate(cuda_api_calls[5m])`, "metric cuda_api_calls is not exported"},                  // no _total
		{`gen_ai_client_operation_duration_seconds > 1`, "not exported"},                       // a histogram has no plain series
		{`hw_power_watts_bucket`, "metric hw_power_watts_bucket is not exported"},              // a gauge has no buckets
		{`vllm:num_requests_waiting > 10`, "metric vllm:num_requests_waiting is not exported"}, // not ours
		{`hw_gpu_utilization_ratio{cuda_kernel_name="x"}`, "has no label cuda_kernel_name"},    // another metric's label
		{`gen_ai_client_operation_duration_seconds_count{le="1"}`, "has no label le"},          // le is the buckets' only
		{`sum by (hw.id) (hw_power_watts)`, "unexpected"},                                      // the OTel attribute name, untranslated
		{`sum by (gpu_uuid) (hw_power_watts)`, "no exported series has the label gpu_uuid"},    // not an attribute
		{`xpuscope_cuda_events_dropped_total{node="n", hw_id="GPU-0"}`, "has no label hw_id"},  // node is a target label, hw_id is not its
	} {
		q, err := parseQuery(tc.expr)
		var errs []error
		if err == nil {
			errs = v.check(q)
		} else {
			errs = []error{err}
		}
		assert.NotEmpty(t, errs, "%s: want an error containing %q", tc.expr, tc.want)
		assert.Contains(t, fmt.Sprint(errs), tc.want, "%s: the errors", tc.expr)
	}
	// And accepts the forms in use.
	for _, expr := range []string{
		`hw_temperature_celsius{hw_type="gpu", node="n", job="j"}`,
		`histogram_quantile(0.95, sum by (le) (rate(gen_ai_client_operation_duration_seconds_bucket{le="+Inf"}[5m])))`,
		`rate(gen_ai_client_operation_time_to_first_chunk_seconds_sum[5m]) / rate(gen_ai_client_operation_time_to_first_chunk_seconds_count[5m])`,
		`xpuscope_genai_cost_total{otel_scope_name="x"}`,
	} {
		q, err := parseQuery(expr)
		if !assert.NoError(t, err, expr) {
			continue
		}
		assert.Empty(t, v.check(q), expr)
	}
}

// TestDashboardsAreWellFormed checks what Grafana needs to load the
// dashboards and bind them to a Prometheus data source.
func TestDashboardsAreWellFormed(t *testing.T) {
	uids := map[string]string{}
	for _, path := range dashboards {
		d := readDashboard(t, path)
		assert.NotEmpty(t, d.UID, "%s: uid and title are required", path)
		assert.NotEmpty(t, d.Title, "%s: uid and title are required", path)
		other, dup := uids[d.UID]
		assert.False(t, dup, "%s and %s share uid %s", path, other, d.UID)
		uids[d.UID] = path
		assert.GreaterOrEqual(t, d.SchemaVersion, 36, "%s: schemaVersion %d predates data source references by uid (36)", path, d.SchemaVersion)
		hasDatasource := false
		for _, tv := range d.Templating.List {
			if tv.Name == "datasource" && tv.Type == "datasource" && variableQuery(tv.Query) == "prometheus" {
				hasDatasource = true
			}
		}
		assert.True(t, hasDatasource, "%s: no datasource variable of type prometheus", path)
		ids := map[int]bool{}
		for _, p := range allPanels(d.Panels) {
			assert.False(t, ids[p.ID], "%s: panel id %d is used twice", path, p.ID)
			ids[p.ID] = true
			assert.True(t, p.GridPos.W > 0 && p.GridPos.H > 0 && p.GridPos.X+p.GridPos.W <= 24,
				"%s: panel %q: gridPos %+v does not fit the 24-column grid", path, p.Title, p.GridPos)
			if p.Type == "row" {
				continue
			}
			assert.Contains(t, []string{"timeseries", "stat"}, p.Type, "%s: panel %q's type", path, p.Title)
			assert.NotEmpty(t, p.Title, "%s: panel %d needs a title and queries", path, p.ID)
			assert.NotEmpty(t, p.Targets, "%s: panel %d needs a title and queries", path, p.ID)
			sources := []*datasourceRef{p.Datasource}
			for _, tg := range p.Targets {
				sources = append(sources, tg.Datasource)
			}
			for _, ds := range sources {
				assert.Equal(t, &datasourceRef{Type: "prometheus", UID: "${datasource}"}, ds,
					"%s: panel %q: want the prometheus ${datasource} variable as data source", path, p.Title)
			}
			refs := map[string]bool{}
			for _, tg := range p.Targets {
				assert.True(t, tg.RefID != "" && !refs[tg.RefID] && tg.Expr != "",
					"%s: panel %q: each query needs an expr and a refId of its own", path, p.Title)
				refs[tg.RefID] = true
			}
		}
	}
	got, err := filepath.Glob("grafana/*.json")
	require.NoError(t, err)
	assert.Equal(t, slices.Sorted(slices.Values(dashboards)), got, "what grafana/ holds, against the dashboards the tests check")
}

// grafanaVariable matches the Grafana variables in a query: interval
// variables ($__rate_interval, $__range) stand in for durations, the others
// for regular expressions inside label matchers.
var grafanaVariable = regexp.MustCompile(`\$\{?[A-Za-z0-9_]+\}?`)

// TestDashboardQueriesArePromQL has promtool parse every panel query (as a
// recording rule, with the Grafana variables filled in): the lexer above
// reads names, not PromQL's grammar.
func TestDashboardQueriesArePromQL(t *testing.T) {
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []rule
	for _, path := range dashboards {
		name := strings.ReplaceAll(strings.TrimSuffix(filepath.Base(path), ".json"), "-", "_")
		for _, p := range allPanels(readDashboard(t, path).Panels) {
			for _, tg := range p.Targets {
				expr := grafanaVariable.ReplaceAllStringFunc(tg.Expr, func(v string) string {
					if strings.HasPrefix(strings.TrimLeft(v, "${"), "__") {
						return "5m"
					}
					return ".*"
				})
				rules = append(rules, rule{fmt.Sprintf("%s:panel%d_%s", name, p.ID, tg.RefID), expr})
			}
		}
	}
	data, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboards", "rules": rules}}})
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "dashboards.yml")
	require.NoError(t, os.WriteFile(file, data, 0o644))
	promtool(t, "check", "rules", file)
}
