package genai

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/xpuscope/xpuscope/semconv"
)

// Price is what one model costs, in US dollars per million tokens. No
// price is built into xpuscope: every Price comes from the user, directly
// or through a LiteLLM price file.
type Price struct {
	// Input is charged for input tokens not read from or written to a
	// prompt cache; Output for output tokens, reasoning tokens included.
	Input, Output float64
	// CachedInput is charged for input tokens read from the provider's
	// prompt cache; nil charges them as Input.
	CachedInput *float64
	// CacheWrite is charged for input tokens written to the prompt cache
	// (Anthropic's cache creation); nil charges them as Input.
	CacheWrite *float64
}

// RateKey names the calls a Price applies to: a gen_ai.provider.name value
// (as Detect or a HostMap gives it) and a model name. Both match without
// regard to case. An empty Provider applies to any provider that has no
// rate of its own for the model.
type RateKey struct {
	Provider, Model string
}

func (k RateKey) String() string {
	p := k.Provider
	if p == "" {
		p = "*"
	}
	return p + "/" + k.Model
}

// Rates prices calls. The zero Rates knows no price: Cost always reports
// !ok. A Rates is immutable and safe for concurrent use.
type Rates struct {
	m map[RateKey]rate
}

// rate is a validated Price, in USD per million tokens, cache prices
// resolved.
type rate struct {
	in, out, cacheRead, cacheWrite float64
}

// maxPricePerMillion bounds a price (USD per million tokens), so that no
// token count can make a cost overflow; real prices are below 1,000.
const maxPricePerMillion = 1e9

// NewRates validates prices and returns them as Rates. A price that is
// negative, NaN, infinite or above 1e9 USD per million tokens is an error
// naming its key, as is an empty or over-long model name, and two keys
// that differ only in case.
func NewRates(prices map[RateKey]Price) (Rates, error) {
	m := make(map[RateKey]rate, len(prices))
	for k, p := range prices {
		key, rt, err := validate(k, p)
		if err != nil {
			return Rates{}, err
		}
		if _, dup := m[key]; dup {
			return Rates{}, fmt.Errorf("genai: rate for %s given twice (keys differing only in case)", key)
		}
		m[key] = rt
	}
	return Rates{m: m}, nil
}

func validate(k RateKey, p Price) (RateKey, rate, error) {
	key := RateKey{strings.ToLower(k.Provider), strings.ToLower(k.Model)}
	if key.Model == "" || len(key.Model) > maxModelLen || len(key.Provider) > maxProviderLen {
		return key, rate{}, fmt.Errorf("genai: rate for %s: model must be 1 to %d bytes, provider at most %d", k, maxModelLen, maxProviderLen)
	}
	rt := rate{in: p.Input, out: p.Output, cacheRead: p.Input, cacheWrite: p.Input}
	if p.CachedInput != nil {
		rt.cacheRead = *p.CachedInput
	}
	if p.CacheWrite != nil {
		rt.cacheWrite = *p.CacheWrite
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"input", rt.in}, {"output", rt.out}, {"cached input", rt.cacheRead}, {"cache write", rt.cacheWrite}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return key, rate{}, fmt.Errorf("genai: rate for %s: %s price %v is not a finite non-negative number", k, f.name, f.v)
		}
		if f.v > maxPricePerMillion {
			return key, rate{}, fmt.Errorf("genai: rate for %s: %s price %v USD per million tokens is above %v: wrong unit?", k, f.name, f.v, float64(maxPricePerMillion))
		}
	}
	return key, rt, nil
}

// Len returns the number of rates.
func (r Rates) Len() int { return len(r.m) }

// Merge returns the rates of r and over together; where both have a key,
// over's price wins (user prices over a loaded price file).
func (r Rates) Merge(over Rates) Rates {
	m := make(map[RateKey]rate, len(r.m)+len(over.m))
	for k, v := range r.m {
		m[k] = v
	}
	for k, v := range over.m {
		m[k] = v
	}
	return Rates{m: m}
}

// Match returns the key whose rate prices (provider, model). In order:
//
//  1. the provider's rates, the model name as given, then with version
//     suffixes stripped one at a time (below), re-trying after each;
//  2. the same with the any-provider rates (empty Provider).
//
// Stripped, one per step, the first that applies (and only where a name
// with a letter remains):
//
//   - a Bedrock cross-region inference-profile prefix: "us.", "us-gov.",
//     "eu.", "apac.", "jp.", "au.", "ca.", "global." before a
//     vendor.model id (us.anthropic.claude-… → anthropic.claude-…);
//   - a ":…" suffix from the first colon (Bedrock model versions ":0",
//     ":1:200k"; also Ollama tags ":8b"), not in ARNs;
//   - an "@…" suffix from the last at sign (Vertex AI versions
//     "@20240620", "@001", "@latest");
//   - "-latest";
//   - "-v" and digits, only right after a "-YYYYMMDD" date (Bedrock
//     revisions: claude-3-5-sonnet-20241022-v2);
//   - a date or version number: "-YYYY-MM-DD" (gpt-4o-2024-08-06),
//     "-YYYYMMDD" (claude-3-5-sonnet-20241022), "-MM-DD"
//     (gemini-2.5-pro-preview-06-05), "-NNNN" (gpt-4-0613,
//     mistral-large-2411), "-NNN" (gemini-1.5-pro-002).
//
// So gpt-4o-2024-08-06 matches a gpt-4o rate and
// us.anthropic.claude-3-5-sonnet-20241022-v2:0 matches
// anthropic.claude-3-5-sonnet. Suffixes of one or two digits ("-4") and
// words ("-preview", "-mini") are never stripped.
func (r Rates) Match(provider, model string) (RateKey, bool) {
	if len(r.m) == 0 || model == "" || len(model) > maxModelLen || len(provider) > maxProviderLen {
		return RateKey{}, false
	}
	provider, model = strings.ToLower(provider), strings.ToLower(model)
	providers := []string{provider, ""}
	if provider == "" {
		providers = providers[:1]
	}
	for _, p := range providers {
		m := model
		for range 16 {
			if _, ok := r.m[RateKey{p, m}]; ok {
				return RateKey{p, m}, true
			}
			next, ok := stripVersion(m)
			if !ok {
				break
			}
			m = next
		}
	}
	return RateKey{}, false
}

// Cost estimates what a call cost in US dollars, with the rate Match
// finds for (provider, model). Pass the response model when the response
// named one (it is usually the dated one that ran), else the request model.
//
// Usage is read the OpenTelemetry way: InputTokens includes the cache-read
// and cache-creation tokens, OutputTokens includes reasoning tokens. So
// cost = (input − cache read − cache creation) × Input + cache read ×
// CachedInput + cache creation × CacheWrite + output × Output, per million
// tokens. A count the response did not report (-1) counts as 0; ok is
// false when neither input nor output tokens were reported, or no rate
// matches: then no cost is known and none should be emitted.
func (r Rates) Cost(provider, model string, u Usage) (usd float64, ok bool) {
	if u.InputTokens < 0 && u.OutputTokens < 0 {
		return 0, false
	}
	key, ok := r.Match(provider, model)
	if !ok {
		return 0, false
	}
	rt := r.m[key]
	in, out := float64(max(u.InputTokens, 0)), float64(max(u.OutputTokens, 0))
	read, write := float64(max(u.CacheReadTokens, 0)), float64(max(u.CacheCreationTokens, 0))
	plain := max(in-read-write, 0)
	return (plain*rt.in + read*rt.cacheRead + write*rt.cacheWrite + out*rt.out) / 1e6, true
}

// bedrockGeoPrefixes are the geography prefixes of Bedrock cross-region
// inference profile ids.
var bedrockGeoPrefixes = []string{"us.", "us-gov.", "eu.", "apac.", "jp.", "au.", "ca.", "global."}

// stripVersion removes one version suffix (or Bedrock geography prefix)
// from a lower-case model name, as Match documents.
func stripVersion(m string) (string, bool) {
	for _, p := range bedrockGeoPrefixes {
		if rest, ok := strings.CutPrefix(m, p); ok && strings.Contains(rest, ".") {
			return rest, true
		}
	}
	if !strings.HasPrefix(m, "arn:") {
		if i := strings.IndexByte(m, ':'); i > 0 {
			return m[:i], true
		}
	}
	if i := strings.LastIndexByte(m, '@'); i > 0 {
		return m[:i], true
	}
	if s, ok := strings.CutSuffix(m, "-latest"); ok && s != "" {
		return s, true
	}
	if i := strings.LastIndex(m, "-v"); i > 0 && allDigits(m[i+2:]) && len(m) > i+2 && dateSuffix(m[:i]) == 9 {
		return m[:i], true
	}
	if n := dateSuffix(m); n > 0 && hasLetter(m[:len(m)-n]) {
		return m[:len(m)-n], true
	}
	return m, false
}

// dateSuffix returns the length of a trailing date or version number,
// dash included ("-2024-08-06", "-20241022", "-06-05", "-0613", "-002"),
// or 0.
func dateSuffix(m string) int {
	for _, shape := range []string{"-dddd-dd-dd", "-dddddddd", "-dd-dd", "-dddd", "-ddd"} {
		if len(m) <= len(shape) {
			continue
		}
		tail := m[len(m)-len(shape):]
		ok := true
		for i := range len(shape) {
			if shape[i] == 'd' {
				ok = ok && tail[i] >= '0' && tail[i] <= '9'
			} else {
				ok = ok && tail[i] == shape[i]
			}
		}
		if ok {
			return len(shape)
		}
	}
	return 0
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func hasLetter(s string) bool {
	for i := range len(s) {
		if c := s[i]; c >= 'a' && c <= 'z' {
			return true
		}
	}
	return false
}

func allDigits(s string) bool {
	for i := range len(s) {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// Bounds of LoadLiteLLM. LiteLLM's own file is a few MB with a few
// thousand entries.
const (
	maxLiteLLMBytes   = 32 << 20
	maxLiteLLMEntries = 50000
)

// litellmProviders maps LiteLLM's litellm_provider values (or their
// prefixes, for the vertex_ai-… family) to gen_ai.provider.name values.
// Values not listed are kept as they are.
var litellmProviders = map[string]string{
	"openai":                    semconv.GenAIProviderOpenAI,
	"text-completion-openai":    semconv.GenAIProviderOpenAI,
	"azure":                     semconv.GenAIProviderAzureAIOpenAI,
	"azure_text":                semconv.GenAIProviderAzureAIOpenAI,
	"azure_ai":                  semconv.GenAIProviderAzureAIInference,
	"anthropic":                 semconv.GenAIProviderAnthropic,
	"gemini":                    semconv.GenAIProviderGCPGemini,
	"vertex_ai":                 semconv.GenAIProviderGCPVertexAI,
	"bedrock":                   semconv.GenAIProviderAWSBedrock,
	"bedrock_converse":          semconv.GenAIProviderAWSBedrock,
	"cohere":                    semconv.GenAIProviderCohere,
	"cohere_chat":               semconv.GenAIProviderCohere,
	"mistral":                   semconv.GenAIProviderMistralAI,
	"codestral":                 semconv.GenAIProviderMistralAI,
	"text-completion-codestral": semconv.GenAIProviderMistralAI,
	"groq":                      semconv.GenAIProviderGroq,
	"deepseek":                  semconv.GenAIProviderDeepSeek,
	"xai":                       semconv.GenAIProviderXAI,
	"perplexity":                semconv.GenAIProviderPerplexity,
	"watsonx":                   semconv.GenAIProviderIBMWatsonx,
	"ollama":                    semconv.GenAIProviderOllama,
	"ollama_chat":               semconv.GenAIProviderOllama,
}

func litellmProvider(p string) string {
	if v, ok := litellmProviders[p]; ok {
		return v
	}
	if strings.HasPrefix(p, "vertex_ai-") {
		return semconv.GenAIProviderGCPVertexAI
	}
	return p
}

// litellmEntry holds the fields LoadLiteLLM reads; others are skipped.
type litellmEntry struct {
	Input      json.RawMessage `json:"input_cost_per_token"`
	Output     json.RawMessage `json:"output_cost_per_token"`
	CacheRead  json.RawMessage `json:"cache_read_input_token_cost"`
	CacheWrite json.RawMessage `json:"cache_creation_input_token_cost"`
	Provider   json.RawMessage `json:"litellm_provider"`
}

// LoadLiteLLM reads rates from a price file in the format of LiteLLM's
// model_prices_and_context_window.json: one JSON object whose members are
// keyed "model" or "provider/model", with input_cost_per_token,
// output_cost_per_token, cache_read_input_token_cost,
// cache_creation_input_token_cost (USD per token) and litellm_provider.
//
//   - litellm_provider is mapped to gen_ai.provider.name (openai,
//     azure → azure.ai.openai, azure_ai → azure.ai.inference, gemini →
//     gcp.gemini, vertex_ai-… → gcp.vertex_ai, bedrock and
//     bedrock_converse → aws.bedrock, mistral → mistral_ai, xai → x_ai,
//     …); other values are kept as they are. A "provider/" key prefix that
//     litellm_provider begins with is dropped from the model name
//     ("vertex_ai/claude-3-5-sonnet@20240620" →
//     claude-3-5-sonnet@20240620). Without litellm_provider, the key's
//     prefix is the provider, and a key without one applies to any
//     provider.
//   - The "sample_spec" entry, entries without input and output token
//     prices (images, audio by the second) and non-object members are
//     skipped. Where two entries give the same provider and model, the
//     first in the file wins.
//   - A price that is negative, NaN, not a number or implausibly large
//     (see NewRates) is an error naming the entry.
//
// Memory and work are bounded: at most 32 MiB are read (a larger file is
// an error) and at most 50,000 entries; members are decoded one at a
// time.
func LoadLiteLLM(r io.Reader) (Rates, error) {
	return loadLiteLLM(r, maxLiteLLMBytes, maxLiteLLMEntries)
}

func loadLiteLLM(r io.Reader, maxBytes int64, maxEntries int) (Rates, error) {
	lr := &io.LimitedReader{R: r, N: maxBytes + 1}
	rates, err := decodeLiteLLM(json.NewDecoder(lr), maxEntries)
	if lr.N <= 0 {
		return Rates{}, fmt.Errorf("genai: LiteLLM price file larger than %d bytes", maxBytes)
	}
	return rates, err
}

func decodeLiteLLM(dec *json.Decoder, maxEntries int) (Rates, error) {
	if tok, err := dec.Token(); err != nil {
		return Rates{}, fmt.Errorf("genai: LiteLLM price file: %w", err)
	} else if tok != json.Delim('{') {
		return Rates{}, errors.New("genai: LiteLLM price file is not a JSON object")
	}
	m := map[RateKey]rate{}
	for n := 0; dec.More(); n++ {
		if n >= maxEntries {
			return Rates{}, fmt.Errorf("genai: LiteLLM price file has more than %d entries", maxEntries)
		}
		tok, err := dec.Token()
		if err != nil {
			return Rates{}, fmt.Errorf("genai: LiteLLM price file: %w", err)
		}
		name, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return Rates{}, fmt.Errorf("genai: LiteLLM price file, entry %.100q: %w", name, err)
		}
		if name == "sample_spec" || len(raw) == 0 || raw[0] != '{' {
			continue
		}
		key, p, ok, err := litellmRate(name, raw)
		if err != nil {
			return Rates{}, err
		}
		if !ok {
			continue
		}
		key, rt, err := validate(key, p)
		if err != nil {
			// Over-long names are skipped; bad prices are errors.
			if len(key.Model) == 0 || len(key.Model) > maxModelLen || len(key.Provider) > maxProviderLen {
				continue
			}
			return Rates{}, fmt.Errorf("genai: LiteLLM price file, entry %.100q: %w", name, err)
		}
		if _, dup := m[key]; !dup {
			m[key] = rt
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return Rates{}, fmt.Errorf("genai: LiteLLM price file: object not closed: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Rates{}, errors.New("genai: LiteLLM price file: data after the object")
	}
	return Rates{m: m}, nil
}

// litellmRate reads one entry. ok is false for an entry without token
// prices.
func litellmRate(name string, raw json.RawMessage) (RateKey, Price, bool, error) {
	var e litellmEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		return RateKey{}, Price{}, false, fmt.Errorf("genai: LiteLLM price file, entry %.100q: %w", name, err)
	}
	var (
		vals [4]float64
		has  [4]bool
	)
	for i, f := range []json.RawMessage{e.Input, e.Output, e.CacheRead, e.CacheWrite} {
		v, ok, err := litellmNumber(f)
		if err != nil {
			return RateKey{}, Price{}, false, fmt.Errorf("genai: LiteLLM price file, entry %.100q: %w", name, err)
		}
		vals[i], has[i] = v*1e6, ok
	}
	if !has[0] && !has[1] {
		return RateKey{}, Price{}, false, nil
	}
	var provider string
	if len(e.Provider) > 0 && string(e.Provider) != "null" {
		if err := json.Unmarshal(e.Provider, &provider); err != nil {
			return RateKey{}, Price{}, false, fmt.Errorf("genai: LiteLLM price file, entry %.100q: litellm_provider: %w", name, err)
		}
	}
	model := name
	if prefix, rest, ok := strings.Cut(name, "/"); ok && rest != "" {
		switch {
		case provider == "":
			provider, model = prefix, rest
		case strings.HasPrefix(provider, prefix):
			model = rest
		}
	}
	p := Price{Input: vals[0], Output: vals[1]}
	if has[2] {
		p.CachedInput = &vals[2]
	}
	if has[3] {
		p.CacheWrite = &vals[3]
	}
	return RateKey{Provider: litellmProvider(provider), Model: model}, p, true, nil
}

// litellmNumber reads a price: a JSON number or a string holding one;
// null or absent is not given.
func litellmNumber(raw json.RawMessage) (float64, bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false, nil
	}
	s := string(raw)
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, false, err
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, false, fmt.Errorf("price %.40s is not a number", raw)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, false, fmt.Errorf("price %.40s is not a finite non-negative number", raw)
	}
	return v, true, nil
}
