package serving

import (
	"encoding/json"
	"strings"

	"github.com/xpuscope/xpuscope/semconv"
)

// TGI: text-generation-launcher starts the router (text-generation-router,
// which holds the API port and, since TGI 3.2, a Prometheus port of its
// own, 9000 by default; /metrics is on both) and the Python shards
// (text-generation-server serve), which hold the GPUs. The router's /info
// names it ("router": "text-generation-router") and the model (model_id):
// its metrics carry no model label.
var tgiSpec = spec{
	kind:     TGI,
	role:     tgiRole,
	endpoint: tgiEndpoint,
	info:     tgiInfo,
	profile:  &tgiProfile,
}

// TGI's default ports: the router's Prometheus port, the launcher's API
// port, and the port its container image sets.
const (
	tgiDefaultPrometheusPort = 9000
	tgiDefaultPort           = 3000
	tgiImagePort             = 80
)

func tgiRole(p *proc) string {
	argv0, script := program(p.args)
	switch {
	case p.isProgram("text-generation-launcher"):
		return semconv.ServerRoleLauncher
	case strings.HasPrefix(p.exe, "text-generation-router") || strings.HasPrefix(argv0, "text-generation-router"):
		return semconv.ServerRoleRouter
	case (argv0 == "text-generation-server" || script == "text-generation-server") && containsArg(p.args, "serve"):
		return semconv.ServerRoleShard
	}
	return ""
}

func containsArg(args []string, a string) bool {
	for _, x := range args {
		if x == a {
			return true
		}
	}
	return false
}

func tgiEndpoint(args [][]string) ([]uint16, string) {
	return ports(portFlag(args, "--prometheus-port"), portFlag(args, "--port"),
		tgiDefaultPrometheusPort, tgiDefaultPort, tgiImagePort), ""
}

// tgiInfo reads TGI's /info: the router's name says it is TGI, model_id
// is the model.
func tgiInfo(body []byte) (string, bool) {
	var info struct {
		ModelID string `json:"model_id"`
		Router  string `json:"router"`
	}
	if json.Unmarshal(body, &info) != nil || !strings.HasPrefix(info.Router, "text-generation-router") {
		return "", false
	}
	return info.ModelID, true
}

// tgiProfile: TGI's router metrics (docs/source/reference/metrics.md).
// Tokens come from the sums of its per-request token histograms.
var tgiProfile = profile{
	own: func(name string) bool { return strings.HasPrefix(name, "tgi_") },
	rules: []rule{
		{names: []string{"tgi_queue_size"}, metric: &semconv.XpuscopeGenAIServerWaitingRequests},
		{names: []string{"tgi_batch_current_size"}, metric: &semconv.XpuscopeGenAIServerRunningRequests},
		{names: []string{"tgi_request_input_length"}, metric: &semconv.XpuscopeGenAIServerTokens, read: readHistogramSum, fixed: tokenType(semconv.GenAITokenTypeInput)},
		{names: []string{"tgi_request_generated_tokens"}, metric: &semconv.XpuscopeGenAIServerTokens, read: readHistogramSum, fixed: tokenType(semconv.GenAITokenTypeOutput)},
		{names: []string{"tgi_request_success"}, metric: &semconv.XpuscopeGenAIServerRequests},
		{names: []string{"tgi_request_failure"}, metric: &semconv.XpuscopeGenAIServerRequests, outcome: failed("err")},
		{names: []string{"tgi_request_duration"}, metric: &semconv.GenAIServerRequestDuration, read: readHistogram},
		{names: []string{"tgi_request_mean_time_per_token_duration"}, metric: &semconv.GenAIServerTimePerOutputToken, read: readHistogram},
		{names: []string{"tgi_request_queue_duration"}, metric: &semconv.XpuscopeGenAIServerQueueDuration, read: readHistogram},
	},
}
