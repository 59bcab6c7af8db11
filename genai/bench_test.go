package genai

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// naiveChunk is what the naive design decodes each event into.
type naiveChunk struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Delta struct {
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
			ToolCalls        []struct {
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails *struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
	Error *struct {
		Type string `json:"type"`
	} `json:"error"`
}

// naiveParse is the obvious design: bufio.Scanner over the lines of the
// whole body, json.Unmarshal of each data line into a struct. It reads
// the same response fields as openAICall but is handed the body already
// joined and does no timing, multi-line data, limits or truncation.
func naiveParse(body []byte, c *Call) {
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	c.Usage = NoUsage
	c.FinishReasons, c.ToolCalls = nil, nil
	for sc.Scan() {
		line := sc.Bytes()
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		data = bytes.TrimSpace(data)
		if string(data) == "[DONE]" {
			break
		}
		var ch naiveChunk
		if json.Unmarshal(data, &ch) != nil {
			c.Incomplete = true
			continue
		}
		if c.ResponseID == "" {
			c.ResponseID = ch.ID
		}
		if c.ResponseModel == "" {
			c.ResponseModel = ch.Model
		}
		for _, choice := range ch.Choices {
			if d := choice.Delta.Content; d != nil && *d != "" {
				c.OutputChunks++
			}
			for _, tc := range choice.Delta.ToolCalls {
				if tc.Function.Name != "" {
					c.ToolCalls = append(c.ToolCalls, tc.Function.Name)
				}
			}
			if choice.FinishReason != nil {
				c.FinishReasons = append(c.FinishReasons, *choice.FinishReason)
			}
		}
		if u := ch.Usage; u != nil {
			c.Usage.InputTokens, c.Usage.OutputTokens = u.PromptTokens, u.CompletionTokens
			if u.PromptTokensDetails != nil {
				c.Usage.CacheReadTokens = u.PromptTokensDetails.CachedTokens
			}
			if u.CompletionTokensDetails != nil {
				c.Usage.ReasoningTokens = u.CompletionTokensDetails.ReasoningTokens
			}
		}
		if ch.Error != nil && c.ErrorType == "" {
			c.ErrorType = ch.Error.Type
		}
	}
}

const benchChunks = 1000

func TestNaiveAgrees(t *testing.T) {
	x := streamOf(benchChunks)
	var ours, naive Call
	openAICall(x, &ours)
	naiveParse(responseBody(x), &naive)
	where := fmt.Sprintf("ours:\n%s\nnaive:\n%s", callDump(&ours), callDump(&naive))
	assert.Equal(t, naive.ResponseID, ours.ResponseID, where)
	assert.Equal(t, naive.ResponseModel, ours.ResponseModel, where)
	assert.Equal(t, naive.Usage, ours.Usage, where)
	assert.Equal(t, naive.OutputChunks, ours.OutputChunks, where)
	if assert.Len(t, ours.FinishReasons, len(naive.FinishReasons), where) {
		assert.Equal(t, naive.FinishReasons[0], ours.FinishReasons[0], where)
	}
}

// BenchmarkOpenAIStream parses a 1,000-chunk chat stream (one event per
// chunk, a finish chunk, a usage chunk, [DONE]): ours, and the naive
// design, separately.
func BenchmarkOpenAIStream(b *testing.B) {
	x := streamOf(benchChunks)
	body := responseBody(x)
	b.Run("ours", func(b *testing.B) {
		var c Call
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			openAICall(x, &c)
		}
	})
	b.Run("naive", func(b *testing.B) {
		var c Call
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			naiveParse(body, &c)
		}
	})
}

// BenchmarkOpenAIStreamVsNaive runs both designs in one run, b.N times
// each, and reports their ns per stream, the ratio naive/ours
// (x-faster), and our allocations per chunk.
func BenchmarkOpenAIStreamVsNaive(b *testing.B) {
	x := streamOf(benchChunks)
	body := responseBody(x)
	var c Call
	openAICall(x, &c) // warm the pool
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	t0 := time.Now()
	for range b.N {
		openAICall(x, &c)
	}
	ours := time.Since(t0)
	runtime.ReadMemStats(&m1)
	t1 := time.Now()
	for range b.N {
		naiveParse(body, &c)
	}
	naive := time.Since(t1)
	n := float64(b.N)
	b.ReportMetric(float64(ours.Nanoseconds())/n, "ours-ns/op")
	b.ReportMetric(float64(naive.Nanoseconds())/n, "naive-ns/op")
	b.ReportMetric(float64(naive)/float64(ours), "x-faster")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/n/benchChunks, "allocs/chunk")
}

// benchProviders are the transcript folders of the providers that
// Detect, Parse and ExtractContent dispatch to.
var benchProviders = []string{"openai", "anthropic", "gemini", "ollama", "bedrock"}

// benchExchanges loads the transcripts of dir and detects their
// endpoints.
func benchExchanges(b *testing.B, dir string) ([]*Exchange, []Endpoint) {
	b.Helper()
	var xs []*Exchange
	var eps []Endpoint
	for _, tr := range loadTranscripts(b, dir) {
		ep, ok := Detect(&tr.x, nil)
		require.True(b, ok, "%s/%s: not detected", dir, tr.name)
		xs, eps = append(xs, &tr.x), append(eps, ep)
	}
	return xs, eps
}

// BenchmarkDetect detects every transcript of each provider (one op is
// the whole folder) on its own host, on a host of a HostMap, and on a
// host Detect does not know.
func BenchmarkDetect(b *testing.B) {
	const gateway = "gateway.internal:4000"
	hosts := HostMap{gateway: "litellm"}
	for _, dir := range benchProviders {
		xs, _ := benchExchanges(b, dir)
		for _, on := range []struct{ name, host string }{{"own", ""}, {"mapped", gateway}, {"unknown", "10.0.0.7:8000"}} {
			ys := make([]*Exchange, len(xs))
			for i, x := range xs {
				y := *x
				if on.host != "" {
					y.Host = on.host
				}
				ys[i] = &y
			}
			b.Run(dir+"/"+on.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					for _, y := range ys {
						Detect(y, hosts)
					}
				}
			})
		}
	}
}

// BenchmarkParse parses every transcript of each provider (one op is
// the whole folder) through Parse.
func BenchmarkParse(b *testing.B) {
	for _, dir := range benchProviders {
		xs, eps := benchExchanges(b, dir)
		b.Run(dir, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for i, x := range xs {
					if _, err := Parse(x, eps[i]); err != nil { // guarded: the timed loop pays nothing on success
						require.NoError(b, err)
					}
				}
			}
		})
	}
}

// BenchmarkExtractContent reads the content of every transcript of each
// provider (one op is the whole folder), 4 KiB per attribute.
func BenchmarkExtractContent(b *testing.B) {
	for _, dir := range benchProviders {
		xs, eps := benchExchanges(b, dir)
		calls := make([]Call, len(xs))
		for i, x := range xs {
			calls[i], _ = Parse(x, eps[i])
		}
		b.Run(dir, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for i, x := range xs {
					ExtractContent(x, &calls[i], eps[i], 4<<10)
				}
			}
		})
	}
}
