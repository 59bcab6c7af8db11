package serving

import (
	"path/filepath"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/attribute"

	"github.com/xpuscope/xpuscope/semconv"
)

// vLLM: the API server (vllm serve, or python -m
// vllm.entrypoints.openai.api_server) holds the port and exports the
// metrics, gathered from its engine core, a child process that holds the
// GPU and titles itself VLLM::EngineCore (setproctitle: "VLLM::EngineCor"
// in comm, which keeps 15 bytes), with its own children, the GPU workers
// (VLLM::Worker…). With --api-server-count above 1, the API servers are
// children titled VLLM::APIServer… of the vllm serve that started them.
var vllmSpec = spec{
	kind:     VLLM,
	role:     vllmRole,
	endpoint: vllmEndpoint,
	profile:  &vllmProfile,
}

// vllmDefaultPort is vllm serve's default --port.
const vllmDefaultPort = 8000

func vllmRole(p *proc) string {
	title := p.comm
	if len(p.args) > 0 {
		title = p.args[0]
	}
	switch {
	case strings.HasPrefix(p.comm, "VLLM::EngineCor") || strings.HasPrefix(title, "VLLM::EngineCore"):
		return semconv.ServerRoleEngineCore
	case strings.HasPrefix(p.comm, "VLLM::Worker") || strings.HasPrefix(title, "VLLM::Worker"):
		return semconv.ServerRoleWorker
	case strings.HasPrefix(p.comm, "VLLM::APIServer") || strings.HasPrefix(title, "VLLM::APIServer"):
		return semconv.ServerRoleAPIServer
	case isVLLMServe(p.args):
		return semconv.ServerRoleAPIServer
	}
	return ""
}

// isVLLMServe tells vLLM's OpenAI server from its command line: "vllm
// serve" (the console script, run directly or by its Python), or the
// module vllm.entrypoints.openai.api_server (python -m, or its file).
func isVLLMServe(args []string) bool {
	for i := 0; i < 2 && i+1 < len(args); i++ {
		if filepath.Base(args[i]) == "vllm" && args[i+1] == "serve" {
			return true
		}
	}
	for i, a := range args {
		if i > 0 && args[i-1] == "-m" && a == "vllm.entrypoints.openai.api_server" {
			return true
		}
		if strings.HasSuffix(a, "vllm/entrypoints/openai/api_server.py") {
			return true
		}
	}
	return false
}

func vllmEndpoint(args [][]string) ([]uint16, string) {
	return ports(portFlag(args, "--port"), vllmDefaultPort), ""
}

// vllmFinish reads vllm:request_success_total's finished_reason: stop and
// length (and any other word of a request that ended well) are its
// finish reason; abort and error are its error.type.
func vllmFinish(labels []*dto.LabelPair, v *values) ([]attribute.KeyValue, bool) {
	switch r := labelOf(labels, []string{"finished_reason"}); r {
	case "abort", "error":
		return []attribute.KeyValue{semconv.ErrorType.String(r)}, true
	case "":
		return nil, true
	default:
		return []attribute.KeyValue{semconv.XpuscopeGenAIServerFinishReason.String(v.word(r))}, true
	}
}

// vllmProfile reads both generations of vLLM's names: the names after
// the 0.9 renames first (kv_cache_usage_perc, inter_token_latency_seconds),
// then those before (gpu_cache_usage_perc, time_per_output_token_seconds),
// which releases in between export too, deprecated: the first present is
// read. The engine label (data-parallel engines) is folded: summed, or
// the largest for the KV cache's fill.
var vllmProfile = profile{
	model: []string{"model_name"},
	own:   func(name string) bool { return strings.HasPrefix(name, "vllm:") },
	rules: []rule{
		{names: []string{"vllm:num_requests_waiting"}, metric: &semconv.XpuscopeGenAIServerWaitingRequests},
		{names: []string{"vllm:num_requests_running"}, metric: &semconv.XpuscopeGenAIServerRunningRequests},
		{names: []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}, metric: &semconv.XpuscopeGenAIServerKVCacheUtilization, max: true},
		{names: []string{"vllm:cache_config_info"}, metric: &semconv.XpuscopeGenAIServerKVCacheCapacity, read: readBlocksTimesSize},
		{names: []string{"vllm:prompt_tokens_total", "vllm:prompt_tokens"}, metric: &semconv.XpuscopeGenAIServerTokens, fixed: tokenType(semconv.GenAITokenTypeInput)},
		{names: []string{"vllm:generation_tokens_total", "vllm:generation_tokens"}, metric: &semconv.XpuscopeGenAIServerTokens, fixed: tokenType(semconv.GenAITokenTypeOutput)},
		{names: []string{"vllm:num_preemptions_total", "vllm:num_preemptions"}, metric: &semconv.XpuscopeGenAIServerPreemptions},
		{names: []string{"vllm:request_success_total", "vllm:request_success"}, metric: &semconv.XpuscopeGenAIServerRequests, outcome: vllmFinish},
		{names: []string{"vllm:e2e_request_latency_seconds"}, metric: &semconv.GenAIServerRequestDuration, read: readHistogram},
		{names: []string{"vllm:time_to_first_token_seconds"}, metric: &semconv.GenAIServerTimeToFirstToken, read: readHistogram},
		{names: []string{"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"}, metric: &semconv.GenAIServerTimePerOutputToken, read: readHistogram},
		{names: []string{"vllm:request_queue_time_seconds"}, metric: &semconv.XpuscopeGenAIServerQueueDuration, read: readHistogram},
	},
}
