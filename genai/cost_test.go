package genai

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/semconv"
)

func usdPtr(v float64) *float64 { return &v }

// assertCostNear asserts that got is want within 1e-12 + 1e-9 × |want|.
func assertCostNear(t *testing.T, want, got float64, msgAndArgs ...any) bool {
	t.Helper()
	return assert.InDelta(t, want, got, 1e-12+1e-9*math.Abs(want), msgAndArgs...)
}

func TestNewRatesValidates(t *testing.T) {
	tests := []struct {
		name  string
		key   RateKey
		price Price
		want  string // in the error; "" for none
	}{
		{"ok", RateKey{"openai", "gpt-4o"}, Price{Input: 2.5, Output: 10, CachedInput: usdPtr(1.25)}, ""},
		{"free", RateKey{"", "local"}, Price{}, ""},
		{"negative input", RateKey{"openai", "gpt-4o"}, Price{Input: -1, Output: 10}, "openai/gpt-4o: input price -1"},
		{"NaN output", RateKey{"anthropic", "claude"}, Price{Input: 1, Output: math.NaN()}, "anthropic/claude: output price NaN"},
		{"Inf cached", RateKey{"", "m"}, Price{CachedInput: usdPtr(math.Inf(1))}, "*/m: cached input price +Inf"},
		{"negative cache write", RateKey{"x", "m"}, Price{CacheWrite: usdPtr(-0.1)}, "x/m: cache write price -0.1"},
		{"empty model", RateKey{"openai", ""}, Price{}, "openai/: model must be"},
		{"long model", RateKey{"openai", strings.Repeat("m", 300)}, Price{}, "model must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewRates(map[RateKey]Price{tt.key: tt.price})
			if tt.want == "" {
				require.NoError(t, err, "unexpected error")
			} else {
				require.ErrorContains(t, err, tt.want)
			}
		})
	}
	_, err := NewRates(map[RateKey]Price{{"OpenAI", "GPT-4o"}: {}, {"openai", "gpt-4o"}: {}})
	assert.Error(t, err, "keys differing in case only: no error")
}

func TestMatch(t *testing.T) {
	r, err := NewRates(map[RateKey]Price{
		{"openai", "gpt-4o"}:                           {Input: 2.5, Output: 10},
		{"openai", "gpt-4o-2024-05-13"}:                {Input: 5, Output: 15},
		{"openai", "gpt-4"}:                            {Input: 30, Output: 60},
		{"openai", "gpt-3.5-turbo"}:                    {Input: 0.5, Output: 1.5},
		{"openai", "o1"}:                               {Input: 15, Output: 60},
		{"anthropic", "claude-3-5-sonnet"}:             {Input: 3, Output: 15},
		{"anthropic", "claude-sonnet-4-5"}:             {Input: 3, Output: 15},
		{"gcp.vertex_ai", "claude-3-5-sonnet-v2"}:      {Input: 3, Output: 15},
		{"gcp.vertex_ai", "gemini-1.5-pro"}:            {Input: 1.25, Output: 5},
		{"gcp.gemini", "gemini-2.5-pro-preview"}:       {Input: 1.25, Output: 10},
		{"aws.bedrock", "anthropic.claude-3-5-sonnet"}: {Input: 3, Output: 15},
		{"mistral_ai", "mistral-large"}:                {Input: 2, Output: 6},
		{"", "llama3.1"}:                               {Input: 0, Output: 0},
		{"", "gpt-4o-mini"}:                            {Input: 0.15, Output: 0.6},
	})
	require.NoError(t, err)
	tests := []struct {
		provider, model string
		want            RateKey
		ok              bool
	}{
		{"openai", "gpt-4o", RateKey{"openai", "gpt-4o"}, true},
		{"OpenAI", "GPT-4o", RateKey{"openai", "gpt-4o"}, true},
		{"openai", "gpt-4o-2024-08-06", RateKey{"openai", "gpt-4o"}, true},
		{"openai", "gpt-4o-2024-05-13", RateKey{"openai", "gpt-4o-2024-05-13"}, true}, // exact first
		{"openai", "gpt-4o-latest", RateKey{"openai", "gpt-4o"}, true},
		{"openai", "gpt-4-0613", RateKey{"openai", "gpt-4"}, true},
		{"openai", "gpt-3.5-turbo-0125", RateKey{"openai", "gpt-3.5-turbo"}, true},
		{"openai", "o1-2024-12-17", RateKey{"openai", "o1"}, true},
		{"openai", "gpt-4o-mini-2024-07-18", RateKey{"", "gpt-4o-mini"}, true}, // provider has no gpt-4o-mini: wildcard, not gpt-4o
		{"openai", "gpt-4-turbo", RateKey{}, false},                            // words are not stripped
		{"openai", "gpt-4o-realtime-preview", RateKey{}, false},
		{"anthropic", "claude-3-5-sonnet-20241022", RateKey{"anthropic", "claude-3-5-sonnet"}, true},
		{"anthropic", "claude-sonnet-4-5-20250929", RateKey{"anthropic", "claude-sonnet-4-5"}, true},
		{"anthropic", "claude-3-5-sonnet-latest", RateKey{"anthropic", "claude-3-5-sonnet"}, true},
		{"gcp.vertex_ai", "claude-3-5-sonnet-v2@20241022", RateKey{"gcp.vertex_ai", "claude-3-5-sonnet-v2"}, true},
		{"gcp.vertex_ai", "gemini-1.5-pro-002", RateKey{"gcp.vertex_ai", "gemini-1.5-pro"}, true},
		{"gcp.vertex_ai", "gemini-1.5-pro@001", RateKey{"gcp.vertex_ai", "gemini-1.5-pro"}, true},
		{"gcp.gemini", "gemini-2.5-pro-preview-06-05", RateKey{"gcp.gemini", "gemini-2.5-pro-preview"}, true},
		{"aws.bedrock", "anthropic.claude-3-5-sonnet-20241022-v2:0", RateKey{"aws.bedrock", "anthropic.claude-3-5-sonnet"}, true},
		{"aws.bedrock", "us.anthropic.claude-3-5-sonnet-20240620-v1:0", RateKey{"aws.bedrock", "anthropic.claude-3-5-sonnet"}, true},
		{"aws.bedrock", "arn:aws:bedrock:us-east-1:1:inference-profile/x", RateKey{}, false},
		{"mistral_ai", "mistral-large-2411", RateKey{"mistral_ai", "mistral-large"}, true},
		{"ollama", "llama3.1:8b", RateKey{"", "llama3.1"}, true},
		{"vllm", "llama3.1", RateKey{"", "llama3.1"}, true},
		{"", "llama3.1", RateKey{"", "llama3.1"}, true},
		{"anthropic", "gpt-4o", RateKey{}, false}, // another provider's rate never applies
		{"openai", "", RateKey{}, false},
		{"openai", strings.Repeat("x", 1000), RateKey{}, false},
	}
	for _, tt := range tests {
		got, ok := r.Match(tt.provider, tt.model)
		assert.Equal(t, tt.want, got, "Match(%q, %q) = %v, %v", tt.provider, tt.model, got, ok)
		assert.Equal(t, tt.ok, ok, "Match(%q, %q) = %v, %v", tt.provider, tt.model, got, ok)
	}
	_, ok := (Rates{}).Match("openai", "gpt-4o")
	assert.False(t, ok, "zero Rates matched")
}

func TestStripVersion(t *testing.T) {
	for in, want := range map[string]string{
		"gpt-4o-2024-08-06":                         "gpt-4o",
		"claude-3-5-sonnet-20241022":                "claude-3-5-sonnet",
		"claude-3-5-sonnet-20241022-v2":             "claude-3-5-sonnet-20241022",
		"anthropic.claude-3-5-sonnet-20241022-v2:0": "anthropic.claude-3-5-sonnet-20241022-v2",
		"anthropic.claude-v2:1:200k":                "anthropic.claude-v2",
		"eu.amazon.nova-pro-v1:0":                   "amazon.nova-pro-v1:0",
		"claude-3-opus@20240229":                    "claude-3-opus",
		"gemini-1.5-flash-002":                      "gemini-1.5-flash",
		"gpt-4-0613":                                "gpt-4",
		"model-latest":                              "model",
		"deepseek-v3":                               "deepseek-v3",
		"gpt-4":                                     "gpt-4",
		"llama-3-70b":                               "llama-3-70b",
		"text-embedding-3-large":                    "text-embedding-3-large",
		"2024-08-06":                                "2024-08-06",
		"-latest":                                   "-latest",
		"us.":                                       "us.",
	} {
		got, _ := stripVersion(in)
		assert.Equal(t, want, got, "stripVersion(%q)", in)
	}
}

func TestCost(t *testing.T) {
	r, err := NewRates(map[RateKey]Price{
		{"openai", "gpt-4o"}:               {Input: 2.5, Output: 10, CachedInput: usdPtr(1.25)},
		{"anthropic", "claude-3-5-sonnet"}: {Input: 3, Output: 15, CachedInput: usdPtr(0.3), CacheWrite: usdPtr(3.75)},
		{"openai", "text-embedding-3"}:     {Input: 0.02},
		{"x", "nocache"}:                   {Input: 1, Output: 2},
	})
	require.NoError(t, err)
	u := func(in, out, read, write, reasoning int64) Usage { return Usage{in, out, read, write, reasoning} }
	tests := []struct {
		name            string
		provider, model string
		usage           Usage
		want            float64
		ok              bool
	}{
		{"plain", "openai", "gpt-4o-2024-08-06", u(1000, 500, -1, -1, -1), (1000*2.5 + 500*10) / 1e6, true},
		{"cached part of input", "openai", "gpt-4o", u(1000, 500, 400, -1, -1), (600*2.5 + 400*1.25 + 500*10) / 1e6, true},
		{"reasoning is part of output", "openai", "gpt-4o", u(0, 500, -1, -1, 300), 500 * 10 / 1e6, true},
		{"anthropic cache read and write", "anthropic", "claude-3-5-sonnet-20241022", u(10000, 100, 6000, 3000, -1), (1000*3 + 6000*0.3 + 3000*3.75 + 100*15) / 1e6, true},
		{"no cache price: charged as input", "x", "nocache", u(100, 10, 50, 20, -1), (100*1 + 10*2) / 1e6, true},
		{"embeddings: no output reported", "openai", "text-embedding-3", u(1_000_000, -1, -1, -1, -1), 0.02, true},
		{"inconsistent cache > input clamps", "openai", "gpt-4o", u(10, 0, 400, -1, -1), 400 * 1.25 / 1e6, true},
		{"nothing reported", "openai", "gpt-4o", NoUsage, 0, false},
		{"no rate", "openai", "gpt-5", u(1, 1, 1, 1, 1), 0, false},
		{"other provider", "azure.ai.openai", "gpt-4o", u(1, 1, 1, 1, 1), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := r.Cost(tt.provider, tt.model, tt.usage)
			assert.Equal(t, tt.ok, ok, "Cost = %v, %v", got, ok)
			assertCostNear(t, tt.want, got, "Cost = %v, %v", got, ok)
		})
	}
	_, ok := (Rates{}).Cost("openai", "gpt-4o", u(1, 1, 0, 0, 0))
	assert.False(t, ok, "zero Rates priced a call")
}

func TestMerge(t *testing.T) {
	base, _ := NewRates(map[RateKey]Price{{"openai", "gpt-4o"}: {Input: 1}, {"openai", "o1"}: {Input: 1}})
	over, _ := NewRates(map[RateKey]Price{{"openai", "gpt-4o"}: {Input: 2}})
	m := base.Merge(over)
	require.Equal(t, 2, m.Len(), "Len")
	c, _ := m.Cost("openai", "gpt-4o", Usage{1e6, 0, 0, 0, 0})
	assert.Equal(t, 2.0, c, "override lost")
	c, _ = base.Cost("openai", "gpt-4o", Usage{1e6, 0, 0, 0, 0})
	assert.Equal(t, 1.0, c, "Merge changed its receiver")
}

func TestLoadLiteLLMFixture(t *testing.T) {
	f, err := os.Open("testdata/litellm_prices.json")
	require.NoError(t, err)
	defer f.Close()
	r, err := LoadLiteLLM(f)
	require.NoError(t, err)
	// sample_spec and the per-pixel image entry are skipped; Example-Chat
	// repeats example-chat (first wins).
	assert.Equal(t, 10, r.Len(), "Len: %v", r.m)
	mtok := Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000, CacheReadTokens: -1, CacheCreationTokens: -1, ReasoningTokens: -1}
	tests := []struct {
		provider, model string
		usage           Usage
		want            float64
		ok              bool
	}{
		{semconv.GenAIProviderOpenAI, "example-chat", mtok, 1 + 4, true},
		{semconv.GenAIProviderOpenAI, "example-chat-2024-08-06", mtok, 1 + 4, true},
		{semconv.GenAIProviderOpenAI, "example-chat-2024-05-13", mtok, 2 + 8, true},
		{semconv.GenAIProviderOpenAI, "example-chat", Usage{1_000_000, 0, 500_000, -1, -1}, 0.5 + 0.125, true},
		{semconv.GenAIProviderAzureAIOpenAI, "example-chat", mtok, 1.1 + 4.4, true},
		{semconv.GenAIProviderAnthropic, "example-sonnet-20250101", Usage{3_000_000, 0, 1_000_000, 1_000_000, -1}, 3 + 0.3 + 3.75, true},
		{semconv.GenAIProviderGCPVertexAI, "example-sonnet@20240620", mtok, 3.3 + 16.5, true},
		{semconv.GenAIProviderAWSBedrock, "vendor.example-model-v1:0", mtok, 0.5 + 2, true},
		{semconv.GenAIProviderAWSBedrock, "us.vendor.example-model-v1:0", mtok, 0.5 + 2, true},
		{semconv.GenAIProviderGCPGemini, "example-flash", mtok, 0.1 + 0.4, true},
		{semconv.GenAIProviderOpenAI, "example-embed", Usage{1_000_000, -1, -1, -1, -1}, 0.02, true},
		{"hosted_vllm", "example-llama", mtok, 0, true},
		{"vllm", "example-anywhere", mtok, 2, true},
		{semconv.GenAIProviderOpenAI, "example-image", mtok, 0, false},
		{semconv.GenAIProviderOpenAI, "sample_spec", mtok, 0, false},
		{semconv.GenAIProviderAnthropic, "example-chat", mtok, 0, false},
	}
	for _, tt := range tests {
		got, ok := r.Cost(tt.provider, tt.model, tt.usage)
		assert.Equal(t, tt.ok, ok, "Cost(%s, %s) = %v, %v", tt.provider, tt.model, got, ok)
		assertCostNear(t, tt.want, got, "Cost(%s, %s) = %v, %v", tt.provider, tt.model, got, ok)
	}
}

func TestLoadLiteLLMErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"not an object", `[1]`, "not a JSON object"},
		{"empty", ``, "EOF"},
		{"negative", `{"m": {"input_cost_per_token": -1e-6, "output_cost_per_token": 0}}`, `entry "m"`},
		{"string not a number", `{"m": {"input_cost_per_token": "abc"}}`, `entry "m": price "abc" is not a number`},
		{"NaN string", `{"m": {"output_cost_per_token": "NaN"}}`, `entry "m"`},
		{"overflow", `{"m": {"input_cost_per_token": 1e308}}`, `entry "m"`},
		{"bad provider", `{"m": {"input_cost_per_token": 1, "litellm_provider": 5}}`, `entry "m": litellm_provider`},
		{"truncated", `{"m": {"input_cost_per_token": 1}`, "not closed"},
		{"trailing", `{} {}`, "data after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadLiteLLM(strings.NewReader(tt.in))
			require.ErrorContains(t, err, tt.want)
		})
	}
	// Skipped, not errors: non-object members, over-long names, no prices.
	r, err := LoadLiteLLM(strings.NewReader(`{"a": 1, "b": null, "` + strings.Repeat("x", 300) + `": {"input_cost_per_token": 1}, "c": {"mode": "chat"}}`))
	require.NoError(t, err, "got %d rates", r.Len())
	require.Zero(t, r.Len(), "got %d rates, %v", r.Len(), err)
}

// endlessJSON yields '{' and then spaces forever, counting what it gave.
type endlessJSON struct{ n int64 }

func (e *endlessJSON) Read(p []byte) (int, error) {
	for i := range p {
		switch {
		case e.n == 0:
			p[i] = '{'
		default:
			p[i] = ' '
		}
		e.n++
	}
	return len(p), nil
}

func TestLoadLiteLLMBounds(t *testing.T) {
	const maxBytes, maxEntries = 1 << 20, 100
	src := &endlessJSON{}
	_, err := loadLiteLLM(src, maxBytes, maxEntries)
	require.ErrorContains(t, err, "larger than", "endlessJSON input")
	assert.LessOrEqual(t, src.n, int64(maxBytes+64<<10), "read %d bytes, cap is %d", src.n, maxBytes)

	var b bytes.Buffer
	b.WriteString("{")
	for i := range maxEntries + 1 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"m%d":{"input_cost_per_token":1e-6}`, i)
	}
	b.WriteString("}")
	_, err = loadLiteLLM(bytes.NewReader(b.Bytes()), maxBytes, maxEntries)
	require.ErrorContains(t, err, "more than 100 entries", "too many entries")
	// One fewer is fine.
	r, err := loadLiteLLM(bytes.NewReader(b.Bytes()), maxBytes, maxEntries+1)
	require.NoError(t, err, "at the cap: %d rates", r.Len())
	require.Equal(t, maxEntries+1, r.Len(), "at the cap: %d rates, %v", r.Len(), err)
}

func FuzzLoadLiteLLM(f *testing.F) {
	fixture, err := os.ReadFile("testdata/litellm_prices.json")
	require.NoError(f, err)
	f.Add(fixture)
	f.Add([]byte(`{"a/b":{"input_cost_per_token":"1e-6","litellm_provider":"a-x"}}`))
	f.Add([]byte(`{"sample_spec":{},"m":{"output_cost_per_token":0,"cache_read_input_token_cost":null}}`))
	f.Add([]byte(`{"m":{"input_cost_per_token":1e-6}} x`))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Each check is guarded by its condition: the fuzzer runs this
		// for every input, and testify's t.Helper is not free.
		r, err := LoadLiteLLM(io.LimitReader(bytes.NewReader(data), 1<<20))
		if err != nil {
			if r.Len() != 0 {
				require.Zero(t, r.Len(), "error %v with %d rates", err, r.Len())
			}
			return
		}
		if r.Len() > maxLiteLLMEntries {
			require.LessOrEqual(t, r.Len(), maxLiteLLMEntries, "%d rates", r.Len())
		}
		all := Usage{1000, 1000, 100, 100, 10}
		for k := range r.m {
			c, ok := r.Cost(k.Provider, k.Model, all)
			if !ok || c < 0 || math.IsNaN(c) || math.IsInf(c, 0) {
				require.True(t, ok, "Cost(%v) = %v, %v", k, c, ok)
				require.False(t, math.IsNaN(c), "Cost(%v) = %v, %v", k, c, ok)
				require.False(t, math.IsInf(c, 0), "Cost(%v) = %v, %v", k, c, ok)
				require.GreaterOrEqual(t, c, 0.0, "Cost(%v) = %v, %v", k, c, ok)
			}
		}
	})
}
