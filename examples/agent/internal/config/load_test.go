package config

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// problems splits a joined error into its *Errors, failing on any other.
func problems(t *testing.T, err error) []*Error {
	t.Helper()
	var out []*Error
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		ce, ok := e.(*Error)
		require.Truef(t, ok, "%T %v is not an *Error", e, e)
		out = append(out, ce)
	}
	walk(err)
	return out
}

func ptr(v float64) *float64 { return &v }

// defaults is what Load gives with no file and no environment.
func defaults() Config {
	return Config{
		LogLevel:    slog.LevelInfo,
		ServiceName: DefaultServiceName,
		Resource:    map[string]string{},
		Export: Export{
			Interval:   DefaultInterval,
			Prometheus: Prometheus{Enabled: true, Listen: DefaultListen},
			OTLP: OTLP{
				Metrics: OTLPSignal{Protocol: ProtocolHTTPProtobuf, Headers: map[string]string{}},
				Traces:  OTLPSignal{Protocol: ProtocolHTTPProtobuf, Headers: map[string]string{}},
			},
		},
		AIML: AIML{LLM: LLM{
			CostRates:        map[string]Rate{},
			Providers:        map[string]string{},
			CaptureBodyLimit: DefaultCaptureBodyLimit,
			CaptureGoTLS:     true,
			Content:          Content{MaxBytes: DefaultContentMaxBytes},
		}, Serving: Serving{Enabled: true}, Training: Training{Enabled: true}, Node: Node{Enabled: true}},
	}
}

func TestLoadFull(t *testing.T) {
	c, err := Load("testdata/full.yaml", nil)
	require.NoError(t, err)
	want := Config{
		LogLevel:    slog.LevelDebug,
		ServiceName: "gpu-node-agent",
		Resource: map[string]string{
			"deployment.environment.name": "production",
			"k8s.cluster.name":            "training-east",
		},
		Export: Export{
			Interval:   15 * time.Second,
			Prometheus: Prometheus{Enabled: true, Listen: ":9464"},
			OTLP: OTLP{
				Metrics: OTLPSignal{
					Endpoint: "https://collector.observability:4318/v1/metrics",
					Protocol: ProtocolHTTPProtobuf,
					Headers:  map[string]string{"x-tenant": "ml-platform", "x-signal": "metrics"},
				},
				Traces: OTLPSignal{
					Endpoint: "collector.observability:4317",
					Protocol: ProtocolGRPC,
					Headers:  map[string]string{"x-tenant": "ml-platform"},
					Insecure: true,
				},
			},
		},
		AIML: AIML{LLM: LLM{
			CostRates: map[string]Rate{
				"openai/gpt-4o":             {Input: 2.5, Output: 10, Cached: ptr(1.25)},
				"anthropic/claude-sonnet-4": {Input: 3, Output: 15, Cached: ptr(0.3), Write: ptr(3.75)},
				"*/llama-3.1-70b":           {Input: 0.6, Output: 0.6},
			},
			PriceFile:        filepath.Join("testdata", "litellm_prices.json"),
			Providers:        map[string]string{"vllm.internal:8000": "openai", "litellm.internal": "openai"},
			CaptureBodyLimit: 131072,
			CaptureGoTLS:     false,
			Content:          Content{Capture: true, MaxBytes: 8192},
		}, Serving: Serving{Enabled: false}, Training: Training{Enabled: false}, Node: Node{Enabled: false}},
	}
	assert.Equal(t, want, c)
	assert.NoError(t, c.Validate())
}

func TestLoadDefaults(t *testing.T) {
	c, err := Load("", nil)
	require.NoError(t, err)
	assert.Equal(t, defaults(), c)
	assert.NoError(t, c.Validate())

	for name, text := range map[string]string{
		"empty":            "",
		"comments only":    "# nothing set\n",
		"document marker":  "---\n",
		"null document":    "~\n",
		"null sections":    "export:\naiml:\n  llm:\nresource:\n",
		"null leaf values": "log_level:\nexport:\n  interval:\n  prometheus: {listen: }\n",
		"empty mappings":   "export: {}\naiml: {llm: {content: {}}}\n",
	} {
		t.Run(name, func(t *testing.T) {
			c, err := load("agent.yaml", []byte(text), nil)
			require.NoError(t, err)
			assert.Equal(t, defaults(), c)
		})
	}
}

func TestLoadValid(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		check      func(t *testing.T, c Config)
	}{
		{"prometheus off", "export:\n  prometheus:\n    enabled: false\n", func(t *testing.T, c Config) {
			assert.False(t, c.Export.Prometheus.Enabled)
			assert.Equal(t, DefaultListen, c.Export.Prometheus.Listen)
		}},
		{"listen on all addresses, any port", "export: {prometheus: {listen: \"0.0.0.0:0\"}}\n", func(t *testing.T, c Config) {
			assert.Equal(t, "0.0.0.0:0", c.Export.Prometheus.Listen)
		}},
		{"log level in capitals", "log_level: WARN\n", func(t *testing.T, c Config) {
			assert.Equal(t, slog.LevelWarn, c.LogLevel)
		}},
		{"resource values of any scalar type, as written", "resource:\n  service.version: 1.10\n  replicas: 3\n  canary: true\n", func(t *testing.T, c Config) {
			assert.Equal(t, map[string]string{"service.version": "1.10", "replicas": "3", "canary": "true"}, c.Resource)
		}},
		{"integers in YAML forms", "aiml:\n  llm:\n    capture_body_limit: 0x10000\n    content: {max_bytes: 4_096}\n", func(t *testing.T, c Config) {
			assert.Equal(t, 65536, c.AIML.LLM.CaptureBodyLimit)
			assert.Equal(t, 4096, c.AIML.LLM.Content.MaxBytes)
		}},
		{"integer prices, zero prices, model with slashes", "aiml:\n  llm:\n    cost_rates:\n      \"openai/meta-llama/Llama-3-70b\": {input_cost_per_1m: 0, output_cost_per_1m: 1}\n", func(t *testing.T, c Config) {
			assert.Equal(t, map[string]Rate{"openai/meta-llama/Llama-3-70b": {Input: 0, Output: 1}}, c.AIML.LLM.CostRates)
		}},
		{"null optional price", "aiml: {llm: {cost_rates: {\"x/y\": {input_cost_per_1m: 1, output_cost_per_1m: 2, cached_input_cost_per_1m: null}}}}\n", func(t *testing.T, c Config) {
			assert.Equal(t, map[string]Rate{"x/y": {Input: 1, Output: 2}}, c.AIML.LLM.CostRates)
		}},
		{"absolute price file kept", "aiml: {llm: {price_file: /etc/prices.json}}\n", func(t *testing.T, c Config) {
			assert.Equal(t, "/etc/prices.json", c.AIML.LLM.PriceFile)
		}},
		{"relative price file from the file's directory", "aiml: {llm: {price_file: ../p.json}}\n", func(t *testing.T, c Config) {
			assert.Equal(t, filepath.Join("..", "p.json"), c.AIML.LLM.PriceFile) // agent.yaml is in "."
		}},
		{"providers by host and by IPv6 host:port", "aiml:\n  llm:\n    providers:\n      \"[fd00::7]:8000\": openai\n      gateway: azure.ai.openai\n", func(t *testing.T, c Config) {
			assert.Equal(t, map[string]string{"[fd00::7]:8000": "openai", "gateway": "azure.ai.openai"}, c.AIML.LLM.Providers)
		}},
		{"grpc to host:port without TLS", "export:\n  otlp: {endpoint: \"collector:4317\", protocol: grpc, insecure: true}\n", func(t *testing.T, c Config) {
			for _, s := range []OTLPSignal{c.Export.OTLP.Metrics, c.Export.OTLP.Traces} {
				assert.Equal(t, OTLPSignal{Endpoint: "collector:4317", Protocol: ProtocolGRPC, Insecure: true, Headers: map[string]string{}}, s)
			}
		}},
		{"grpc to an https URL: insecure does not turn TLS off", "export:\n  otlp: {endpoint: \"https://collector:4317\", protocol: grpc, insecure: true}\n", func(t *testing.T, c Config) {
			assert.Equal(t, "https://collector:4317", c.Export.OTLP.Metrics.Endpoint)
			assert.False(t, c.Export.OTLP.Metrics.Insecure)
		}},
		{"http/protobuf base URL with a path gets the signal path", "export:\n  otlp: {endpoint: \"http://gw:4318/otlp/\"}\n", func(t *testing.T, c Config) {
			assert.Equal(t, "http://gw:4318/otlp/v1/metrics", c.Export.OTLP.Metrics.Endpoint)
			assert.Equal(t, "http://gw:4318/otlp/v1/traces", c.Export.OTLP.Traces.Endpoint)
			assert.True(t, c.Export.OTLP.Metrics.Insecure, "http:// is plain text")
		}},
		{"only one signal over OTLP", "export:\n  otlp:\n    traces: {endpoint: \"https://t:4318/custom\"}\n", func(t *testing.T, c Config) {
			assert.Empty(t, c.Export.OTLP.Metrics.Endpoint)
			assert.Equal(t, "https://t:4318/custom", c.Export.OTLP.Traces.Endpoint)
		}},
		{"content off keeps its cap", "aiml: {llm: {content: {capture: false, max_bytes: 100}}}\n", func(t *testing.T, c Config) {
			assert.Equal(t, 0, c.AIML.LLM.Content.CaptureBytes())
			assert.Equal(t, 100, c.AIML.LLM.Content.MaxBytes)
		}},
		{"document end marker", "log_level: error\n...\n", func(t *testing.T, c Config) {
			assert.Equal(t, slog.LevelError, c.LogLevel)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := load("agent.yaml", []byte(tc.text), nil)
			require.NoError(t, err)
			tc.check(t, c)
			assert.NoError(t, c.Validate())
		})
	}
}

// want is one expected problem: where, which key, and words of the
// message.
type want struct {
	line, col int
	key, msg  string
}

func TestLoadErrors(t *testing.T) {
	const rates = "aiml:\n  llm:\n    cost_rates:\n"
	for _, tc := range []struct {
		name, text string
		want       []want
	}{
		// Unknown keys.
		{"unknown top-level key", "log_level: info\nexprot: {}\n",
			[]want{{2, 1, "", `unknown key "exprot" (want one of: log_level, service_name, resource, export, aiml)`}}},
		{"unknown nested key", "export:\n  otlp:\n    endpont: http://x:4318\n",
			[]want{{3, 5, "export.otlp", `unknown key "endpont" (want one of: endpoint, protocol, headers, insecure, metrics, traces)`}}},
		{"unknown per-signal key", "export:\n  otlp:\n    metrics:\n      traces: {}\n",
			[]want{{4, 7, "export.otlp.metrics", `unknown key "traces" (want one of: endpoint, protocol, headers, insecure)`}}},
		{"unknown cost rate field", rates + "      \"a/b\": {input: 1, output_cost_per_1m: 2}\n",
			[]want{{4, 15, `aiml.llm.cost_rates."a/b"`, `unknown key "input" (want one of: input_cost_per_1m, output_cost_per_1m, cached_input_cost_per_1m, cache_write_cost_per_1m)`}}},
		{"gpu section", "export: {}\ngpu:\n  nvml: true\n",
			[]want{{2, 1, "", `unknown key "gpu" (GPU detection is automatic; there are no per-feature GPU keys)`}}},
		{"gpu key nested", "aiml:\n  gpu: {enabled: false}\n",
			[]want{{2, 3, "aiml", `unknown key "gpu" (GPU detection is automatic`}}},

		// Wrong types.
		{"string for a boolean", "export:\n  prometheus:\n    enabled: yes\n",
			[]want{{3, 14, "export.prometheus.enabled", `want true or false, got "yes"`}}},
		{"string for serving's boolean", "aiml:\n  serving:\n    enabled: off\n",
			[]want{{3, 14, "aiml.serving.enabled", `want true or false, got "off"`}}},
		{"unknown serving key", "aiml:\n  serving:\n    port: 8000\n",
			[]want{{3, 5, "aiml.serving", `unknown key "port" (want one of: enabled)`}}},
		{"string for training's boolean", "aiml:\n  training:\n    enabled: no\n",
			[]want{{3, 14, "aiml.training.enabled", `want true or false, got "no"`}}},
		{"unknown training key", "aiml:\n  training:\n    logdir: /runs\n",
			[]want{{3, 5, "aiml.training", `unknown key "logdir" (want one of: enabled)`}}},
		{"number for a string", "service_name: 42\n",
			[]want{{1, 15, "service_name", "want a string, got 42"}}},
		{"mapping for a string", "log_level: {a: b}\n",
			[]want{{1, 12, "log_level", "want a string, got a mapping"}}},
		{"list for a mapping", "export: [1, 2]\n",
			[]want{{1, 9, "export", "want a mapping, got a list"}}},
		{"scalar for a mapping", "aiml: llm\n",
			[]want{{1, 7, "aiml", `want a mapping, got "llm"`}}},
		{"top level not a mapping", "- a\n- b\n",
			[]want{{1, 1, "", "want a mapping, got a list"}}},
		{"word for a price", rates + "      \"openai/gpt-4\": {input_cost_per_1m: cheap, output_cost_per_1m: 60}\n",
			[]want{{4, 43, `aiml.llm.cost_rates."openai/gpt-4".input_cost_per_1m`, `want a number, got "cheap"`}}},
		{"quoted number for a price", rates + "      \"openai/gpt-4\": {input_cost_per_1m: \"30\", output_cost_per_1m: 60}\n",
			[]want{{4, 43, `aiml.llm.cost_rates."openai/gpt-4".input_cost_per_1m`, `want a number, got "30"`}}},
		{"size with a unit", "aiml: {llm: {capture_body_limit: 64k}}\n",
			[]want{{1, 34, "aiml.llm.capture_body_limit", `want an integer, got "64k"`}}},
		{"float for an integer", "aiml: {llm: {capture_body_limit: 1.5}}\n",
			[]want{{1, 34, "aiml.llm.capture_body_limit", "want an integer, got 1.5"}}},
		{"integer too large for int", "aiml: {llm: {capture_body_limit: 0xffffffffffffffff}}\n",
			[]want{{1, 34, "aiml.llm.capture_body_limit", "want an integer, got 0xffffffffffffffff, which is not one in range"}}},
		{"number for a duration", "export:\n  interval: 15\n",
			[]want{{2, 13, "export.interval", `want a duration such as "15s", got 15`}}},
		{"string for a provider", "aiml:\n  llm:\n    providers:\n      \"vllm:8000\": 5\n",
			[]want{{4, 20, `aiml.llm.providers."vllm:8000"`, "want a string, got 5"}}},
		{"null resource value", "resource:\n  team:\n",
			[]want{{2, 8, `resource."team"`, "want a string, number or boolean, got null"}}},
		{"boolean tag on a word", "export: {prometheus: {enabled: !!bool maybe}}\n",
			[]want{{1, 32, "export.prometheus.enabled", "want true or false, got maybe"}}},
		{"float tag on a word", "aiml: {llm: {cost_rates: {\"a/b\": {input_cost_per_1m: !!float x, output_cost_per_1m: 1}}}}\n",
			[]want{{1, 54, `aiml.llm.cost_rates."a/b".input_cost_per_1m`, "want a number, got x"}}},
		{"custom tag", "log_level: !lvl info\n",
			[]want{{1, 12, "log_level", `want a string, got !lvl "info"`}}},

		// Values out of range.
		{"bad log level", "log_level: verbose\n",
			[]want{{1, 12, "log_level", `want debug, info, warn or error, got "verbose"`}}},
		{"bad duration", "export:\n  interval: fast\n",
			[]want{{2, 13, "export.interval", `want a duration such as "15s", got "fast"`}}},
		{"interval too short", "export:\n  interval: 10ms\n",
			[]want{{2, 13, "export.interval", "interval 10ms is outside 100ms to 24h0m0s"}}},
		{"interval too long", "export:\n  interval: 48h\n",
			[]want{{2, 13, "export.interval", "interval 48h0m0s is outside"}}},
		{"listen without a port", "export: {prometheus: {listen: \"9464\"}}\n",
			[]want{{1, 31, "export.prometheus.listen", `want host:port (such as ":9464"), got "9464"`}}},
		{"listen port too large", "export: {prometheus: {listen: \":70000\"}}\n",
			[]want{{1, 31, "export.prometheus.listen", "port number 0 to 65535"}}},
		{"protocol http/json", "export:\n  otlp:\n    protocol: http/json\n",
			[]want{{3, 15, "export.otlp.protocol", `protocol "http/json" is not supported (want grpc or http/protobuf)`}}},
		{"protocol unknown", "export:\n  otlp:\n    traces:\n      protocol: thrift\n",
			[]want{{4, 17, "export.otlp.traces.protocol", `want grpc or http/protobuf, got "thrift"`}}},
		{"endpoint scheme", "export:\n  otlp:\n    endpoint: ftp://c:21\n",
			[]want{{3, 15, "export.otlp.endpoint", `want scheme http or https, got "ftp"`}}},
		{"endpoint without host", "export:\n  otlp:\n    endpoint: \"http://:4318\"\n",
			[]want{{3, 15, "export.otlp.endpoint", "has no host"}}},
		{"endpoint neither URL nor host:port", "export:\n  otlp:\n    endpoint: collector\n",
			[]want{{3, 15, "export.otlp.endpoint", `want an http:// or https:// URL or host:port, got "collector"`}}},
		{"endpoint port zero", "export:\n  otlp:\n    endpoint: \"http://c:0\"\n",
			[]want{{3, 15, "export.otlp.endpoint", `endpoint "http://c:0": port "0" is not 1 to 65535`}}},
		{"endpoint with a space", "export:\n  otlp:\n    endpoint: \"http://c:4318/a b\"\n",
			[]want{{3, 15, "export.otlp.endpoint", "holds a space, control character or invalid UTF-8"}}},
		{"endpoint not a URL", "export:\n  otlp:\n    endpoint: \"http://[::1\"\n",
			[]want{{3, 15, "export.otlp.endpoint", "endpoint is not a URL: "}}},
		{"host:port endpoint with the default protocol", "export:\n  otlp:\n    endpoint: collector:4317\n",
			// One problem, not one per signal.
			[]want{{3, 15, "export.otlp.endpoint", `endpoint "collector:4317" has no http:// or https:// scheme, which protocol http/protobuf needs (the default protocol; set protocol grpc`}}},
		{"host:port per-signal endpoint with http/protobuf", "export:\n  otlp:\n    protocol: http/protobuf\n    metrics: {endpoint: \"c:4318\"}\n",
			[]want{{4, 25, "export.otlp.metrics.endpoint", "which protocol http/protobuf needs"}}},
		{"bad header name", "export:\n  otlp:\n    headers:\n      \"x y\": v\n",
			[]want{{4, 7, `export.otlp.headers."x y"`, `header name "x y": byte ' ' is not allowed`}}},
		{"empty header name", "export:\n  otlp:\n    headers: {\"\": v}\n",
			[]want{{3, 15, `export.otlp.headers.""`, "empty header name"}}},
		{"control character in a header value", "export:\n  otlp:\n    headers: {auth: \"a\\nb\"}\n",
			[]want{{3, 15, `export.otlp.headers."auth"`, `value holds control character '\n'`}}},
		{"service.name as a resource attribute", "resource:\n  service.name: x\n",
			[]want{{2, 3, `resource."service.name"`, "set the service name with the top-level service_name key"}}},
		{"empty service name", "service_name: \"\"\n",
			[]want{{1, 15, "service_name", "empty service name"}}},
		{"body limit zero", "aiml: {llm: {capture_body_limit: 0}}\n",
			[]want{{1, 34, "aiml.llm.capture_body_limit", "body limit 0 bytes is outside 1 to 16777216"}}},
		{"body limit negative", "aiml: {llm: {capture_body_limit: -1}}\n",
			[]want{{1, 34, "aiml.llm.capture_body_limit", "body limit -1 bytes is outside"}}},
		{"body limit absurd", "aiml: {llm: {capture_body_limit: 16777217}}\n",
			[]want{{1, 34, "aiml.llm.capture_body_limit", "body limit 16777217 bytes is outside 1 to 16777216"}}},
		{"content cap zero", "aiml: {llm: {content: {capture: true, max_bytes: 0}}}\n",
			[]want{{1, 50, "aiml.llm.content.max_bytes", "content cap 0 bytes is outside 1 to 1048576"}}},

		// Cost rates.
		{"negative price", rates + "      \"openai/gpt-4\": {input_cost_per_1m: -1, output_cost_per_1m: 60}\n",
			[]want{{4, 43, `aiml.llm.cost_rates."openai/gpt-4".input_cost_per_1m`, "price -1 is not a finite non-negative number"}}},
		{"NaN price", rates + "      \"openai/gpt-4\": {input_cost_per_1m: 1, output_cost_per_1m: .nan}\n",
			[]want{{4, 66, `aiml.llm.cost_rates."openai/gpt-4".output_cost_per_1m`, "price NaN is not a finite non-negative number"}}},
		{"infinite price", rates + "      \"a/b\":\n        input_cost_per_1m: 1\n        output_cost_per_1m: 1\n        cached_input_cost_per_1m: .inf\n",
			[]want{{7, 35, `aiml.llm.cost_rates."a/b".cached_input_cost_per_1m`, "price +Inf is not a finite non-negative number"}}},
		{"implausible price", rates + "      \"a/b\": {input_cost_per_1m: 2e9, output_cost_per_1m: 1}\n",
			[]want{{4, 7, `aiml.llm.cost_rates."a/b"`, "input price 2e+09 USD per million tokens is above 1e+09: wrong unit?"}}},
		{"key without provider", rates + "      gpt-4: {input_cost_per_1m: 1, output_cost_per_1m: 2}\n",
			[]want{{4, 7, `aiml.llm.cost_rates."gpt-4"`, `cost rate key "gpt-4" is not "provider/model" (provider "*" for any)`}}},
		{"key with empty provider", rates + "      \"/gpt-4\": {input_cost_per_1m: 1, output_cost_per_1m: 2}\n",
			[]want{{4, 7, `aiml.llm.cost_rates."/gpt-4"`, `is not "provider/model"`}}},
		{"key with empty model", rates + "      \"openai/\": {input_cost_per_1m: 1, output_cost_per_1m: 2}\n",
			[]want{{4, 7, `aiml.llm.cost_rates."openai/"`, `is not "provider/model"`}}},
		{"missing output price", rates + "      \"openai/gpt-4\": {input_cost_per_1m: 1}\n",
			[]want{{4, 23, `aiml.llm.cost_rates."openai/gpt-4"`, "want both input_cost_per_1m and output_cost_per_1m"}}},
		{"no prices at all", rates + "      \"openai/gpt-4\":\n",
			[]want{{4, 22, `aiml.llm.cost_rates."openai/gpt-4"`, "want both input_cost_per_1m and output_cost_per_1m"}}},
		{"keys differing in case", rates + "      \"openai/GPT-4\": {input_cost_per_1m: 1, output_cost_per_1m: 2}\n      \"openai/gpt-4\": {input_cost_per_1m: 3, output_cost_per_1m: 4}\n",
			[]want{{5, 7, `aiml.llm.cost_rates."openai/gpt-4"`, `same key as "openai/GPT-4" but for case`}}},
		{"price list for a rate", rates + "      \"a/b\": [1, 2]\n",
			[]want{{4, 14, `aiml.llm.cost_rates."a/b"`, "want a mapping, got a list"}}},

		// Provider map.
		{"port out of range", "aiml:\n  llm:\n    providers:\n      \"vllm:99999\": openai\n",
			[]want{{4, 7, `aiml.llm.providers."vllm:99999"`, `host map key "vllm:99999" is not host or host:port`}}},
		{"URL as a host", "aiml:\n  llm:\n    providers:\n      \"http://vllm:8000\": openai\n",
			[]want{{4, 7, `aiml.llm.providers."http://vllm:8000"`, "is not host or host:port"}}},
		{"empty provider name", "aiml:\n  llm:\n    providers:\n      \"vllm:8000\": \"\"\n",
			[]want{{4, 7, `aiml.llm.providers."vllm:8000"`, `provider "" is empty, too long or not printable`}}},
		{"same host twice but for case", "aiml:\n  llm:\n    providers:\n      \"VLLM:8000\": openai\n      \"vllm:8000\": openai\n",
			[]want{{5, 7, `aiml.llm.providers."vllm:8000"`, `same host as "VLLM:8000" (both are vllm:8000)`}}},

		// Document structure.
		{"two documents", "log_level: info\n---\nlog_level: debug\n",
			[]want{{2, 1, "", "a second YAML document: the configuration is one document"}}},
		{"syntax error in a second document", "log_level: info\n---\n[\n",
			[]want{{0, 0, "", "not valid YAML: "}}},
		{"key given twice", "log_level: info\nlog_level: debug\n",
			[]want{{2, 1, "", `key "log_level" given twice (first on line 1)`}}},
		{"map key given twice", "resource:\n  a: 1\n  a: 2\n",
			[]want{{3, 3, "resource", `key "a" given twice (first on line 2)`}}},
		{"alias for a mapping", "resource: &r {a: b}\nexport: *r\n",
			[]want{{2, 9, "export", "aliases (*r) are not supported"}}},
		{"alias for a scalar", "service_name: &n x\nlog_level: *n\n",
			[]want{{2, 12, "log_level", "aliases (*n) are not supported"}}},
		{"alias as a key", "resource:\n  &k a: 1\n  *k : 2\n",
			[]want{{3, 3, "resource", "aliases (*k) are not supported"}}},
		{"merge key", "export:\n  <<: {interval: 1s}\n",
			[]want{{2, 3, "export", "merge keys (<<) are not supported"}}},
		{"list as a key", "resource:\n  ? [a]\n  : b\n",
			[]want{{2, 5, "resource", "want a key, got a list"}}},
		{"null as a key", "resource:\n  ~: b\n",
			[]want{{2, 3, "resource", "want a key, got null"}}},
		{"syntax error", "export:\n\tinterval: 1s\n",
			[]want{{0, 0, "", "not valid YAML: line 2: found character that cannot start any token"}}},

		// Several problems: all of them, in file order.
		{"every problem reported", "log_level: loud\ngpu: {}\nexport:\n  interval: 1\n  otlp: {protocol: x}\naiml: {llm: {capture_body_limit: 0}}\n",
			[]want{
				{1, 12, "log_level", "want debug, info, warn or error"},
				{2, 1, "", `unknown key "gpu"`},
				{4, 13, "export.interval", "want a duration"},
				{5, 20, "export.otlp.protocol", `want grpc or http/protobuf, got "x"`},
				{6, 34, "aiml.llm.capture_body_limit", "body limit 0 bytes"},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load("agent.yaml", []byte(tc.text), nil)
			require.Error(t, err)
			got := problems(t, err)
			require.Len(t, got, len(tc.want), "%v", err)
			for i, w := range tc.want {
				g := got[i]
				assert.Equal(t, "agent.yaml", g.File)
				assert.Equal(t, w.line, g.Line, "line of %v", g)
				assert.Equal(t, w.col, g.Column, "column of %v", g)
				assert.Equal(t, w.key, g.Key, "key of %v", g)
				assert.Contains(t, g.Msg, w.msg)
				assert.Empty(t, g.Env)
			}
		})
	}
}

func TestErrorText(t *testing.T) {
	_, err := load("agent.yaml", []byte("export: {}\ngpu:\n  nvml: true\n"), nil)
	assert.EqualError(t, err, `agent.yaml:2:1: unknown key "gpu" (GPU detection is automatic; there are no per-feature GPU keys)`)

	_, err = load("conf/agent.yaml", []byte("aiml:\n  llm:\n    cost_rates:\n      \"openai/gpt-4\": {input_cost_per_1m: cheap, output_cost_per_1m: 60}\n"), nil)
	assert.EqualError(t, err, `conf/agent.yaml:4:43: aiml.llm.cost_rates."openai/gpt-4".input_cost_per_1m: want a number, got "cheap"`)

	_, err = load("agent.yaml", []byte("log_level: x\nservice_name: 1\n"), nil)
	assert.EqualError(t, err, "agent.yaml:1:12: log_level: want debug, info, warn or error, got \"x\"\n"+
		"agent.yaml:2:15: service_name: want a string, got 1")

	_, err = load("agent.yaml", []byte("a: [\n"), nil)
	assert.ErrorContains(t, err, "agent.yaml: not valid YAML: ")

	_, err = Load("", env(map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}))
	assert.EqualError(t, err, `OTEL_EXPORTER_OTLP_PROTOCOL: protocol "http/json" is not supported (want grpc or http/protobuf)`)

	assert.Equal(t, "agent.yaml:3: x", (&Error{File: "agent.yaml", Line: 3, Msg: "x"}).Error())
	assert.Equal(t, `resource."a": x`, (&Error{Key: `resource."a"`, Msg: "x"}).Error())
}

func TestLoadFileErrors(t *testing.T) {
	dir := t.TempDir()

	_, err := Load(filepath.Join(dir, "missing.yaml"), nil)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.ErrorContains(t, err, "missing.yaml")

	_, err = Load(dir, nil)
	assert.ErrorContains(t, err, "read configuration "+dir, "a directory is not a file")

	big := filepath.Join(dir, "big.yaml")
	require.NoError(t, os.WriteFile(big, []byte("# "+strings.Repeat("x", MaxFileSize)+"\n"), 0o600))
	_, err = Load(big, nil)
	got := problems(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, &Error{File: big, Msg: "file is larger than 1048576 bytes"}, got[0])

	// Exactly MaxFileSize is read whole.
	exact := filepath.Join(dir, "exact.yaml")
	text := "log_level: warn\n#"
	require.NoError(t, os.WriteFile(exact, []byte(text+strings.Repeat("x", MaxFileSize-len(text))), 0o600))
	c, err := Load(exact, nil)
	require.NoError(t, err)
	assert.Equal(t, slog.LevelWarn, c.LogLevel)
}

// TestYAMLBombs: aliases are refused, not expanded, and deep nesting is
// refused by the parser, so hostile files cost little.
func TestYAMLBombs(t *testing.T) {
	var b strings.Builder
	b.WriteString("bomb:\n  a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "  a%d: &a%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	// Expanded, *a9 is 10^10 scalars.
	b.WriteString("resource:\n  k: *a9\nexport: *a9\n")
	_, err := load("bomb.yaml", []byte(b.String()), nil)
	got := problems(t, err)
	require.Len(t, got, 3, "%v", err)
	assert.Equal(t, &Error{File: "bomb.yaml", Line: 1, Column: 1, Msg: `unknown key "bomb" (want one of: log_level, service_name, resource, export, aiml)`}, got[0])
	assert.Equal(t, &Error{File: "bomb.yaml", Line: 13, Column: 6, Key: `resource."k"`, Msg: "aliases (*a9) are not supported"}, got[1])
	assert.Equal(t, &Error{File: "bomb.yaml", Line: 14, Column: 9, Key: "export", Msg: "aliases (*a9) are not supported"}, got[2])

	// Many problems: the first 100, then a count.
	_, err = load("many.yaml", []byte(strings.Repeat("x: 1\n", 250)), nil)
	got = problems(t, err)
	require.Len(t, got, 101)
	assert.Equal(t, &Error{File: "many.yaml", Line: 100, Column: 1, Msg: `key "x" given twice (first on line 1)`}, got[99])
	assert.Equal(t, &Error{File: "many.yaml", Msg: "150 more problems not shown"}, got[100])

	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	_, err = load("deep.yaml", []byte("resource: "+deep+"\n"), nil)
	assert.ErrorContains(t, err, "deep.yaml: not valid YAML: exceeded max depth")
}
