package serving

import (
	"strings"

	"github.com/xpuscope/xpuscope/semconv"
)

// Triton: one process, tritonserver, whose metrics are on their own port
// (--metrics-port, 8002 by default), unless --allow-metrics=false.
var tritonSpec = spec{
	kind:     Triton,
	role:     tritonRole,
	endpoint: tritonEndpoint,
	profile:  &tritonProfile,
}

const tritonDefaultMetricsPort = 8002

func tritonRole(p *proc) string {
	if p.isProgram("tritonserver") {
		return semconv.ServerRoleServer
	}
	return ""
}

func tritonEndpoint(args [][]string) ([]uint16, string) {
	for _, a := range args {
		if v, ok := flag(a, "--allow-metrics"); ok && (v == "false" || v == "0") {
			return nil, "started with --allow-metrics=" + v + ": it serves no metrics"
		}
	}
	return ports(portFlag(args, "--metrics-port"), tritonDefaultMetricsPort), ""
}

// tritonProfile: Triton's inference metrics (docs/user_guide/metrics.md),
// per model; the version label is folded. Its cumulative microsecond
// counters are exported as counters of seconds; its time-to-first-
// response histogram, in milliseconds, keeps its edges in seconds. Its GPU
// and CPU metrics are left to package gpu.
var tritonProfile = profile{
	model: []string{"model"},
	own:   func(name string) bool { return strings.HasPrefix(name, "nv_inference_") },
	rules: []rule{
		{names: []string{"nv_inference_pending_request_count"}, metric: &semconv.XpuscopeGenAIServerWaitingRequests},
		{names: []string{"nv_inference_request_success"}, metric: &semconv.XpuscopeGenAIServerRequests},
		{names: []string{"nv_inference_request_failure"}, metric: &semconv.XpuscopeGenAIServerRequests, outcome: failed("reason")},
		{names: []string{"nv_inference_count"}, metric: &semconv.XpuscopeGenAIServerInferences},
		{names: []string{"nv_inference_exec_count"}, metric: &semconv.XpuscopeGenAIServerExecutions},
		{names: []string{"nv_inference_request_duration_us"}, metric: &semconv.XpuscopeGenAIServerRequestTime, div: 1e6, fixed: phase(semconv.ServerPhaseRequest)},
		{names: []string{"nv_inference_queue_duration_us"}, metric: &semconv.XpuscopeGenAIServerRequestTime, div: 1e6, fixed: phase(semconv.ServerPhaseQueue)},
		{names: []string{"nv_inference_compute_input_duration_us"}, metric: &semconv.XpuscopeGenAIServerRequestTime, div: 1e6, fixed: phase(semconv.ServerPhaseComputeInput)},
		{names: []string{"nv_inference_compute_infer_duration_us"}, metric: &semconv.XpuscopeGenAIServerRequestTime, div: 1e6, fixed: phase(semconv.ServerPhaseComputeInfer)},
		{names: []string{"nv_inference_compute_output_duration_us"}, metric: &semconv.XpuscopeGenAIServerRequestTime, div: 1e6, fixed: phase(semconv.ServerPhaseComputeOutput)},
		{names: []string{"nv_inference_first_response_histogram_ms"}, metric: &semconv.GenAIServerTimeToFirstToken, read: readHistogram, div: 1e3},
	},
}
