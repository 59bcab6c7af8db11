package serving

import (
	"strings"

	"github.com/xpuscope/xpuscope/semconv"
)

// TorchServe: its Java frontend (org.pytorch.serve.ModelServer) holds the
// ports, the metrics API's 8082 by default (metrics_address in its
// config.properties); its Python backend workers (model_service_worker.py)
// hold the GPUs. Read in part: the requests and the cumulative inference
// and queue times of its metrics API (metrics_mode prometheus).
var torchServeSpec = spec{
	kind:     TorchServe,
	role:     torchServeRole,
	endpoint: func([][]string) ([]uint16, string) { return []uint16{torchServeMetricsPort}, "" },
	profile:  &torchServeProfile,
}

const torchServeMetricsPort = 8082

func torchServeRole(p *proc) string {
	for _, a := range p.args {
		switch {
		case a == "org.pytorch.serve.ModelServer":
			return semconv.ServerRoleServer
		case strings.HasSuffix(a, "ts/model_service_worker.py"):
			return semconv.ServerRoleWorker
		}
	}
	return ""
}

var torchServeProfile = profile{
	model: []string{"model_name", "ModelName"},
	own:   func(name string) bool { return strings.HasPrefix(name, "ts_") },
	rules: []rule{
		{names: []string{"ts_inference_requests_total"}, metric: &semconv.XpuscopeGenAIServerRequests},
		{names: []string{"ts_inference_latency_microseconds"}, metric: &semconv.XpuscopeGenAIServerRequestTime, div: 1e6, fixed: phase(semconv.ServerPhaseRequest)},
		{names: []string{"ts_queue_latency_microseconds"}, metric: &semconv.XpuscopeGenAIServerRequestTime, div: 1e6, fixed: phase(semconv.ServerPhaseQueue)},
	},
}
