package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// TestTrainingDashboardEvaluates runs the training dashboard's queries in
// Prometheus's own engine (promtool test rules) over series shaped as the
// agent exports them, and checks what they give: the join of the jobs'
// processes to package gpu's per-process GPU series by node and pid (the
// same pid on two nodes is two processes; a GPU process of no job is left
// out), the step rate from training_step, the counts of jobs and
// processes. The lexer of TestDashboardsUseExportedMetrics checks names;
// this checks meaning.
func TestTrainingDashboardEvaluates(t *testing.T) {
	d := readDashboard(t, "grafana/training.json")
	exprs := map[string]string{} // panel title and refId → query, its variables filled in as "All"
	for _, p := range allPanels(d.Panels) {
		for _, tg := range p.Targets {
			exprs[p.Title+"/"+tg.RefID] = grafanaVariable.ReplaceAllStringFunc(tg.Expr, func(v string) string {
				if strings.HasPrefix(strings.TrimLeft(v, "${"), "__") {
					return "5m"
				}
				return ".*"
			})
		}
	}
	type sample struct {
		Labels string  `yaml:"labels"`
		Value  float64 `yaml:"value"`
	}
	type exprTest struct {
		Expr       string   `yaml:"expr"`
		EvalTime   string   `yaml:"eval_time"`
		ExpSamples []sample `yaml:"exp_samples"`
	}
	want := map[string][]sample{
		"GPU utilization per job/A": {
			{`{node="gpu-1", training_run="exp1"}`, 0.625},
			{`{node="gpu-2", training_run="exp2"}`, 0.25},
		},
		"GPU memory per job/A": {
			{`{node="gpu-1", training_run="exp1"}`, 3e9},
			{`{node="gpu-2", training_run="exp2"}`, 5e9},
		},
		"Training jobs/A":                    {{`{}`, 2}},
		"Processes/A":                        {{`{}`, 3}},
		"Mean GPU utilization of the jobs/A": {{`{}`, 0.5}}, // of 0.5, 0.75 and 0.25: exact in binary
		"Step rate/A": {
			{`{node="gpu-1", training_run="exp1", training_log_format="tensorboard", training_framework="pytorch", process_executable_name="python3"}`, 1},
		},
		"Lowest loss/A": {{`{}`, 0.75}},
	}
	var tests []exprTest
	for key, samples := range want {
		expr, ok := exprs[key]
		require.True(t, ok, "the dashboard has no query %s", key)
		tests = append(tests, exprTest{Expr: expr, EvalTime: "9m", ExpSamples: samples})
	}
	proc := func(node, run, pid string) string {
		return `training_processes{node="` + node + `", training_run="` + run + `", process_pid="` + pid +
			`", training_framework="pytorch", training_role="worker", process_executable_name="python3"}`
	}
	gpu := func(metric, node, pid, hwID string) string {
		return metric + `{node="` + node + `", process_pid="` + pid + `", hw_id="` + hwID + `", process_executable_name="python3"}`
	}
	run := `{node="gpu-1", training_run="exp1", training_log_format="tensorboard", training_framework="pytorch", process_executable_name="python3"}`
	file := map[string]any{
		"rule_files":          []string{},
		"evaluation_interval": "1m",
		"tests": []any{map[string]any{
			"interval": "1m",
			"input_series": []map[string]string{
				{"series": proc("gpu-1", "exp1", "100"), "values": "1x10"},
				{"series": proc("gpu-1", "exp1", "101"), "values": "1x10"},
				{"series": proc("gpu-2", "exp2", "100"), "values": "1x10"}, // the same pid, on another node
				{"series": gpu("process_gpu_utilization_ratio", "gpu-1", "100", "GPU-a"), "values": "0.5x10"},
				{"series": gpu("process_gpu_utilization_ratio", "gpu-1", "101", "GPU-b"), "values": "0.75x10"},
				{"series": gpu("process_gpu_utilization_ratio", "gpu-2", "100", "GPU-c"), "values": "0.25x10"},
				{"series": gpu("process_gpu_utilization_ratio", "gpu-1", "999", "GPU-d"), "values": "0.9x10"}, // no job's
				{"series": gpu("process_gpu_memory_usage_bytes", "gpu-1", "100", "GPU-a"), "values": "1e9x10"},
				{"series": gpu("process_gpu_memory_usage_bytes", "gpu-1", "101", "GPU-b"), "values": "2e9x10"},
				{"series": gpu("process_gpu_memory_usage_bytes", "gpu-2", "100", "GPU-c"), "values": "5e9x10"},
				{"series": gpu("process_gpu_memory_usage_bytes", "gpu-1", "999", "GPU-d"), "values": "7e9x10"},
				{"series": "training_step" + run, "values": "0+60x10"}, // a step a second
				{"series": "training_loss" + run, "values": "2 1.5 1 0.75x7"},
				{"series": `training_loss{node="gpu-2", training_run="exp2", training_log_format="mlflow", training_framework="pytorch", process_executable_name="python3"}`, "values": "3x10"},
			},
			"promql_expr_test": tests,
		}},
	}
	data, err := yaml.Marshal(file)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "training_dashboard_test.yml")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	promtool(t, "test", "rules", path)
}
