package config

import (
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/genai"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(c *Config)
		want   []want // key and message words; no positions
	}{
		{"log level", func(c *Config) { c.LogLevel = slog.LevelInfo + 1 },
			[]want{{key: "log_level", msg: "want debug, info, warn or error, got level 1"}}},
		{"empty service name", func(c *Config) { c.ServiceName = "" },
			[]want{{key: "service_name", msg: "empty service name"}}},
		{"service.name in Resource", func(c *Config) { c.Resource["service.name"] = "x" },
			[]want{{key: `resource."service.name"`, msg: "service.name belongs in ServiceName"}}},
		{"bad attribute", func(c *Config) { c.Resource["a"] = "x\x00" },
			[]want{{key: `resource."a"`, msg: "holds a control character"}}},
		{"interval", func(c *Config) { c.Export.Interval = 0 },
			[]want{{key: "export.interval", msg: "interval 0s is outside"}}},
		{"listen", func(c *Config) { c.Export.Prometheus.Listen = "nope" },
			[]want{{key: "export.prometheus.listen", msg: "want host:port"}}},
		{"listen unchecked when off", func(c *Config) { c.Export.Prometheus = Prometheus{Listen: "nope"} }, nil},
		{"protocol", func(c *Config) { c.Export.OTLP.Traces.Protocol = "" },
			[]want{{key: "export.otlp.traces.protocol", msg: `want grpc or http/protobuf, got ""`}}},
		{"endpoint for protocol", func(c *Config) { c.Export.OTLP.Metrics.Endpoint = "c:4318" },
			[]want{{key: "export.otlp.metrics.endpoint", msg: "which protocol http/protobuf needs"}}},
		{"endpoint", func(c *Config) { c.Export.OTLP.Traces.Endpoint = "ftp://c" },
			[]want{{key: "export.otlp.traces.endpoint", msg: `want scheme http or https, got "ftp"`}}},
		{"header", func(c *Config) { c.Export.OTLP.Metrics.Headers["a:b"] = "v" },
			[]want{{key: `export.otlp.metrics.headers."a:b"`, msg: "is not allowed in an HTTP field name"}}},
		{"cost rate key", func(c *Config) { c.AIML.LLM.CostRates["gpt-4"] = Rate{Input: 1, Output: 1} },
			[]want{{key: `aiml.llm.cost_rates."gpt-4"`, msg: `is not "provider/model"`}}},
		{"cost rate price", func(c *Config) { c.AIML.LLM.CostRates["a/b"] = Rate{Input: -1} },
			[]want{{key: `aiml.llm.cost_rates."a/b"`, msg: "input price -1 is not a finite non-negative number"}}},
		{"cost rate cached price", func(c *Config) { c.AIML.LLM.CostRates["a/b"] = Rate{Cached: ptr(-2)} },
			[]want{{key: `aiml.llm.cost_rates."a/b"`, msg: "cached input price -2"}}},
		{"cost rates differing in case", func(c *Config) {
			c.AIML.LLM.CostRates["a/B"] = Rate{}
			c.AIML.LLM.CostRates["a/b"] = Rate{}
		}, []want{{key: `aiml.llm.cost_rates."a/b"`, msg: `same key as "a/B" but for case`}}},
		{"provider host", func(c *Config) { c.AIML.LLM.Providers["h:0"] = "openai" },
			[]want{{key: `aiml.llm.providers."h:0"`, msg: "is not host or host:port"}}},
		{"provider hosts the same", func(c *Config) {
			c.AIML.LLM.Providers["H"] = "openai"
			c.AIML.LLM.Providers["h"] = "openai"
		}, []want{{key: `aiml.llm.providers."h"`, msg: `same host as "H"`}}},
		{"body limit", func(c *Config) { c.AIML.LLM.CaptureBodyLimit = 0 },
			[]want{{key: "aiml.llm.capture_body_limit", msg: "body limit 0 bytes"}}},
		{"content cap when capturing", func(c *Config) { c.AIML.LLM.Content = Content{Capture: true} },
			[]want{{key: "aiml.llm.content.max_bytes", msg: "content cap 0 bytes is outside 1 to 1048576"}}},
		{"no content cap needed when off", func(c *Config) { c.AIML.LLM.Content = Content{} }, nil},
		{"content cap too large", func(c *Config) { c.AIML.LLM.Content.MaxBytes = MaxContentMaxBytes + 1 },
			[]want{{key: "aiml.llm.content.max_bytes", msg: "content cap 1048577 bytes is outside 0 to 1048576"}}},
		{"several", func(c *Config) {
			c.ServiceName = ""
			c.AIML.LLM.CaptureBodyLimit = -1
		}, []want{{key: "service_name"}, {key: "aiml.llm.capture_body_limit"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := defaults()
			tc.change(&c)
			err := c.Validate()
			if tc.want == nil {
				assert.NoError(t, err)
				return
			}
			got := problems(t, err)
			require.Len(t, got, len(tc.want), "%v", err)
			for i, w := range tc.want {
				assert.Equal(t, w.key, got[i].Key)
				assert.Contains(t, got[i].Msg, w.msg)
				assert.Zero(t, got[i].Line)
				assert.Empty(t, got[i].File)
			}
		})
	}
}

func TestRates(t *testing.T) {
	c, err := Load("testdata/full.yaml", nil)
	require.NoError(t, err)
	rates, err := c.AIML.LLM.Rates()
	require.NoError(t, err)
	assert.Equal(t, 4, rates.Len(), "3 of the file's, 2 of the price file's, gpt-4o in both")

	million := genai.Usage{InputTokens: 1e6, OutputTokens: 1e6, CacheReadTokens: -1, CacheCreationTokens: -1}
	for _, tc := range []struct {
		provider, model string
		u               genai.Usage
		usd             float64
	}{
		// cost_rates win over the price file (which says 5 + 20), and a
		// dated name matches its base.
		{"openai", "gpt-4o-2024-08-06", million, 2.5 + 10},
		// Half the input read from the cache, at the cached price.
		{"openai", "gpt-4o", genai.Usage{InputTokens: 1e6, OutputTokens: 0, CacheReadTokens: 5e5, CacheCreationTokens: 0}, 0.5*2.5 + 0.5*1.25},
		{"anthropic", "claude-sonnet-4", genai.Usage{InputTokens: 1e6, OutputTokens: 0, CacheReadTokens: 0, CacheCreationTokens: 1e6}, 3.75},
		// "*/…" is any provider.
		{"openai", "llama-3.1-70b", million, 1.2},
		{"x_ai", "llama-3.1-70b", million, 1.2},
		// Only in the price file (mistral → mistral_ai).
		{"mistral_ai", "mistral-large-2411", million, 2 + 6},
	} {
		usd, ok := rates.Cost(tc.provider, tc.model, tc.u)
		require.True(t, ok, "%s/%s", tc.provider, tc.model)
		assert.InDelta(t, tc.usd, usd, 1e-9, "%s/%s", tc.provider, tc.model)
	}
	_, ok := rates.Cost("anthropic", "claude-opus-4", million)
	assert.False(t, ok, "no price, no cost")

	noFile := c.AIML.LLM
	noFile.PriceFile = ""
	own, err := noFile.Rates()
	require.NoError(t, err)
	assert.Equal(t, 3, own.Len())

	missing := c.AIML.LLM
	missing.PriceFile = filepath.Join(t.TempDir(), "prices.json")
	_, err = missing.Rates()
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.ErrorContains(t, err, "aiml.llm.price_file")

	bad := c.AIML.LLM
	bad.PriceFile = filepath.Join(t.TempDir(), "prices.json")
	require.NoError(t, os.WriteFile(bad.PriceFile, []byte(`{"m": {"input_cost_per_token": -1, "output_cost_per_token": 1}}`), 0o600))
	_, err = bad.Rates()
	assert.ErrorContains(t, err, "aiml.llm.price_file "+bad.PriceFile+`: genai: LiteLLM price file, entry "m"`)

	badKey := LLM{CostRates: map[string]Rate{"gpt-4": {Input: 1, Output: 1}}}
	_, err = badKey.Rates()
	assert.ErrorContains(t, err, `cost rate "gpt-4": cost rate key "gpt-4" is not "provider/model"`)

	badPrice := LLM{CostRates: map[string]Rate{"a/b": {Input: 1, Output: -1}}}
	_, err = badPrice.Rates()
	assert.ErrorContains(t, err, "output price -1 is not a finite non-negative number")
}

func TestHostMapAndContent(t *testing.T) {
	c, err := Load("testdata/full.yaml", nil)
	require.NoError(t, err)
	hm, err := c.AIML.LLM.HostMap()
	require.NoError(t, err)
	assert.Equal(t, genai.HostMap{"vllm.internal:8000": "openai", "litellm.internal": "openai"}, hm)

	_, err = LLM{Providers: map[string]string{"h:0": "x"}}.HostMap()
	assert.ErrorContains(t, err, `host map key "h:0" is not host or host:port`)

	assert.Equal(t, 8192, c.AIML.LLM.Content.CaptureBytes())
	assert.Equal(t, 0, Content{MaxBytes: 8192}.CaptureBytes())
}
