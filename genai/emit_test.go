package genai

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

type emitHarness struct {
	e      *Emitter
	reader *sdkmetric.ManualReader
	spans  *tracetest.InMemoryExporter
}

func newEmitHarness(t *testing.T, opts ...Option) *emitHarness {
	t.Helper()
	h := &emitHarness{reader: sdkmetric.NewManualReader(), spans: tracetest.NewInMemoryExporter()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(h.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))
	e, err := NewEmitter(append([]Option{WithMeterProvider(mp), WithTracerProvider(tp)}, opts...)...)
	require.NoError(t, err)
	h.e = e
	return h
}

func spanAttrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func streamedChat() (*Exchange, *Call, Endpoint) {
	x := &Exchange{Method: "POST", Host: "api.openai.com", Path: "/v1/chat/completions",
		Start: t0, End: t0.Add(2 * time.Second), Status: 200}
	c := &Call{
		Provider: semconv.GenAIProviderOpenAI, Operation: semconv.GenAIOperationChat,
		RequestModel: "gpt-4o", Temperature: 0.2, TopP: math.NaN(), MaxTokens: 256, ChoiceCount: -1, Stream: true,
		ResponseID: "chatcmpl-1", ResponseModel: "gpt-4o-2024-08-06", FinishReasons: []string{"stop"},
		Usage:            Usage{InputTokens: 1000, OutputTokens: 200, CacheReadTokens: 400, CacheCreationTokens: -1, ReasoningTokens: -1},
		TimeToFirstChunk: 300 * time.Millisecond, TimePerChunk: 20 * time.Millisecond, OutputChunks: 50,
		Duration: 2 * time.Second,
	}
	return x, c, Endpoint{Provider: c.Provider, Operation: c.Operation, API: APIOpenAIChatCompletions, ServerAddress: "api.openai.com", ServerPort: 443}
}

func TestEmitSpanAndMetrics(t *testing.T) {
	rates, err := NewRates(map[RateKey]Price{{Provider: semconv.GenAIProviderOpenAI, Model: "gpt-4o"}: {Input: 2.5, Output: 10}})
	require.NoError(t, err)
	h := newEmitHarness(t, WithRates(rates))
	x, c, ep := streamedChat()
	h.e.Emit(context.Background(), x, c, ep)

	spans := h.spans.GetSpans()
	require.Len(t, spans, 1)
	sp := spans[0]
	assert.Equal(t, "chat gpt-4o", sp.Name)
	assert.Equal(t, trace.SpanKindClient, sp.SpanKind)
	assert.Equal(t, t0, sp.StartTime)
	assert.Equal(t, t0.Add(2*time.Second), sp.EndTime)
	assert.Equal(t, codes.Unset, sp.Status.Code)
	a := spanAttrs(sp.Snapshot())
	assert.Equal(t, "openai", a[semconv.GenAIProviderName].AsString())
	assert.Equal(t, "gpt-4o-2024-08-06", a[semconv.GenAIResponseModel].AsString())
	assert.Equal(t, int64(1000), a[semconv.GenAIUsageInputTokens].AsInt64())
	assert.Equal(t, int64(400), a[semconv.GenAIUsageCacheReadInputTokens].AsInt64())
	assert.NotContains(t, a, semconv.GenAIUsageReasoningOutputTokens, "unreported usage is not an attribute")
	assert.NotContains(t, a, semconv.GenAIRequestTopP, "an absent parameter is not an attribute")
	assert.Equal(t, []string{"stop"}, a[semconv.GenAIResponseFinishReasons].AsStringSlice())
	assert.Equal(t, "chat_completions", a[semconv.OpenAIAPIType].AsString())
	assert.InDelta(t, 0.3, a[semconv.GenAIResponseTimeToFirstChunk].AsFloat64(), 1e-9)
	// 1000 input at 2.5/M and 200 output at 10/M (the dated response model
	// matches the gpt-4o rate).
	assert.InDelta(t, 1000*2.5/1e6+200*10/1e6, a[semconv.XpuscopeGenAICostUSD].AsFloat64(), 1e-12)

	var rm metricdata.ResourceMetrics
	require.NoError(t, h.reader.Collect(context.Background(), &rm))
	pts, err := testutil.Flatten(rm)
	require.NoError(t, err)
	in := pts.One(t, semconv.GenAIClientTokenUsage.Name, semconv.GenAITokenType.String(semconv.GenAITokenTypeInput))
	assert.Equal(t, 1000.0, in.Value)
	assert.Equal(t, "gpt-4o", in.Get(semconv.GenAIRequestModel))
	assert.Equal(t, "443", in.Get(semconv.ServerPort))
	assert.Equal(t, 200.0, pts.One(t, semconv.GenAIClientTokenUsage.Name, semconv.GenAITokenType.String(semconv.GenAITokenTypeOutput)).Value)
	assert.Equal(t, 2.0, pts.One(t, semconv.GenAIClientOperationDuration.Name).Value)
	assert.InDelta(t, 0.3, pts.One(t, semconv.GenAIClientOperationTimeToFirstChunk.Name).Value, 1e-9)
	assert.InDelta(t, 0.02, pts.One(t, semconv.GenAIClientOperationTimePerOutputChunk.Name).Value, 1e-9)
	assert.InDelta(t, 0.0045, pts.One(t, semconv.XpuscopeGenAICost.Name).Value, 1e-12)

	// Exemplars point at the span.
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name != semconv.GenAIClientOperationDuration.Name {
			continue
		}
		ex := m.Data.(metricdata.Histogram[float64]).DataPoints[0].Exemplars
		require.NotEmpty(t, ex)
		assert.Equal(t, sp.SpanContext.TraceID(), trace.TraceID(ex[0].TraceID))
	}
}

func TestEmitFailureAndNoRates(t *testing.T) {
	h := newEmitHarness(t)
	x, c, ep := streamedChat()
	x.Status = 429
	c.Stream, c.Usage = false, NoUsage
	h.e.Emit(context.Background(), x, c, ep)
	sp := h.spans.GetSpans()[0]
	assert.Equal(t, codes.Error, sp.Status.Code)
	a := spanAttrs(sp.Snapshot())
	assert.Equal(t, "429", a[semconv.ErrorType].AsString())
	assert.NotContains(t, a, semconv.XpuscopeGenAICostUSD, "no rate, no cost")

	c.ErrorType = "rate_limit_exceeded"
	h.e.Emit(context.Background(), x, c, ep)
	assert.Equal(t, "rate_limit_exceeded", spanAttrs(h.spans.GetSpans()[1].Snapshot())[semconv.ErrorType].AsString())

	pts := testutil.Collect(t, h.reader)
	assert.Empty(t, pts.Find(semconv.XpuscopeGenAICost.Name))
	assert.Empty(t, pts.Find(semconv.GenAIClientTokenUsage.Name), "unreported usage records nothing")
	assert.Empty(t, pts.Find(semconv.GenAIClientOperationTimeToFirstChunk.Name), "not streamed")
	assert.Equal(t, uint64(1), pts.One(t, semconv.GenAIClientOperationDuration.Name, semconv.ErrorType.String("429")).Count)
}

func TestEmitModelCap(t *testing.T) {
	h := newEmitHarness(t, WithMaxModels(2))
	x, c, ep := streamedChat()
	for _, m := range []string{"a", "b", "c", "d"} {
		c.RequestModel, c.ResponseModel = m, ""
		h.e.Emit(context.Background(), x, c, ep)
	}
	pts := testutil.Collect(t, h.reader)
	models := map[string]uint64{}
	for _, p := range pts.Find(semconv.GenAIClientOperationDuration.Name) {
		models[p.Get(semconv.GenAIRequestModel)] += p.Count
	}
	assert.Equal(t, map[string]uint64{"a": 1, "b": 1, semconv.Other: 2}, models)
	assert.Equal(t, "chat d", h.spans.GetSpans()[3].Name, "spans keep the real name")

	// Server addresses are capped the same way.
	for _, host := range []string{"h1", "h2", "h3"} {
		ep.ServerAddress = host
		h.e.Emit(context.Background(), x, c, ep)
	}
	servers := map[string]bool{}
	for _, p := range testutil.Collect(t, h.reader).Find(semconv.GenAIClientOperationDuration.Name) {
		servers[p.Get(semconv.ServerAddress)] = true
	}
	assert.Equal(t, map[string]bool{"api.openai.com": true, "h1": true, semconv.Other: true}, servers)

	_, err := NewEmitter(WithMaxModels(0))
	assert.Error(t, err)
}

// TestEmitMetricSetsKeptAndBounded: a call like the one before makes no
// attribute set (its options are the kept ones), the kept sets stay under
// their bound, the figures after the kept sets started over still carry
// each call's own attributes, and error types a provider names are capped
// on metrics (spans keep them) as model names are.
func TestEmitMetricSetsKeptAndBounded(t *testing.T) {
	h := newEmitHarness(t)
	x, c, ep := streamedChat()
	first := h.e.metricSets(c, ep, "")
	assert.Same(t, first, h.e.metricSets(c, ep, ""), "the same key keeps its sets")
	assert.Zero(t, testing.AllocsPerRun(100, func() { h.e.metricSets(c, ep, "") }), "a kept key allocates nothing")
	assert.NotSame(t, first, h.e.metricSets(c, ep, "429"), "error.type is part of the key")

	h.e.maxSets = 8
	calls := maxErrorTypes + 20
	x.Status = 500
	for i := range calls {
		c.ErrorType = fmt.Sprintf("provider_error_%d", i)
		if i == 1 {
			c.ErrorType = strings.Repeat("x", 10_000) // a message where a word should be
		}
		h.e.Emit(context.Background(), x, c, ep)
		require.LessOrEqual(t, len(h.e.sets), h.e.maxSets)
	}
	pts := testutil.Collect(t, h.reader)
	types := map[string]uint64{}
	for _, p := range pts.Find(semconv.GenAIClientOperationDuration.Name, semconv.GenAIRequestModel.String(c.RequestModel),
		semconv.ServerAddress.String(ep.ServerAddress)) {
		types[p.Get(semconv.ErrorType)] += p.Count
	}
	// "429" above took one of the cap's places, with no call recorded:
	// the calls' own took the other maxErrorTypes-1, and _OTHER the rest.
	assert.Len(t, types, maxErrorTypes, "the cap's values less 429, and the fold")
	assert.Equal(t, uint64(1), types["provider_error_0"])
	assert.Equal(t, uint64(1), types[strings.Repeat("x", maxErrorTypeLen)], "clipped")
	assert.Equal(t, uint64(calls-(maxErrorTypes-1)), types[semconv.Other], "the later error types folded")
	assert.Equal(t, c.ErrorType, spanAttrs(h.spans.GetSpans()[calls-1].Snapshot())[semconv.ErrorType].AsString(), "spans keep the real value")
	in := pts.One(t, semconv.GenAIClientTokenUsage.Name, semconv.GenAITokenType.String(semconv.GenAITokenTypeInput))
	assert.Equal(t, float64(calls)*float64(c.Usage.InputTokens), in.Value, "the token counts carry no error.type")
}

// TestEmitContent: with capture on, the span carries what
// ExtractContent reads, cut to the cap and named as cut; metrics and
// their exemplars carry none of it.
func TestEmitContent(t *testing.T) {
	tr := transcriptNamed(t, "anthropic", "messages_basic")
	x := &tr.x
	ep, ok := Detect(x, nil)
	require.True(t, ok)
	c, err := Parse(x, ep)
	require.NoError(t, err)
	for _, limit := range []int{1 << 10, 120} {
		h := newEmitHarness(t, WithContentCapture(limit))
		h.e.Emit(context.Background(), x, &c, ep)
		want := ExtractContent(x, &c, ep, limit)
		a := spanAttrs(h.spans.GetSpans()[0].Snapshot())
		assert.Equal(t, want.SystemInstructions, a[semconv.GenAISystemInstructions].AsString())
		assert.Equal(t, want.InputMessages, a[semconv.GenAIInputMessages].AsString())
		assert.Equal(t, want.OutputMessages, a[semconv.GenAIOutputMessages].AsString())
		assert.Contains(t, want.OutputMessages, "Hi! My name is Claude.", "the call has output text")
		if limit == 120 {
			// The system prompt is 138 bytes of JSON, the output 110.
			assert.Equal(t, []string{string(semconv.GenAISystemInstructions)}, a[semconv.XpuscopeGenAIContentTruncated].AsStringSlice())
		} else {
			assert.NotContains(t, a, semconv.XpuscopeGenAIContentTruncated, "nothing was cut")
		}

		var rm metricdata.ResourceMetrics
		require.NoError(t, h.reader.Collect(context.Background(), &rm))
		dump := fmt.Sprintf("%+v", rm)
		require.Contains(t, dump, "claude-sonnet-4-20250514", "the metrics hold the call")
		for _, s := range []string{"Claude", "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions", "xpuscope.genai.content"} {
			assert.NotContains(t, dump, s, "metrics carry no content")
		}
	}
}

func TestContentCaptureOption(t *testing.T) {
	_, err := NewEmitter(WithContentCapture(-1))
	require.ErrorContains(t, err, "content capture cap must be 0 (off) or a size in bytes, got -1")

	// Off by default.
	tr := transcriptNamed(t, "openai", "chat_basic")
	ep, _ := Detect(&tr.x, nil)
	c, err := Parse(&tr.x, ep)
	require.NoError(t, err)
	h := newEmitHarness(t)
	h.e.Emit(context.Background(), &tr.x, &c, ep)
	a := spanAttrs(h.spans.GetSpans()[0].Snapshot())
	for _, k := range []attribute.Key{semconv.GenAISystemInstructions, semconv.GenAIInputMessages, semconv.GenAIOutputMessages, semconv.XpuscopeGenAIContentTruncated} {
		assert.NotContains(t, a, k)
	}
}

// TestEmitContentOffReadsNoBody: with capture off, what Emit allocates
// does not depend on the bodies: it does not read them.
func TestEmitContentOffReadsNoBody(t *testing.T) {
	e, err := NewEmitter(WithTracerProvider(tracenoop.NewTracerProvider()), WithMeterProvider(metricnoop.NewMeterProvider()))
	require.NoError(t, err)
	large := streamOf(5000)
	large.RequestBody = []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"` + strings.Repeat("long prompt ", 1<<14) + `"}],"stream":true}`)
	small := *large
	small.RequestBody, small.Chunks = []byte(`{}`), large.Chunks[len(large.Chunks)-1:]
	ep, _ := Detect(large, nil)
	c := parseOpenAI(large)
	allocs := func(e *Emitter, x *Exchange) float64 {
		return testing.AllocsPerRun(50, func() { e.Emit(context.Background(), x, c, ep) })
	}
	assert.Equal(t, allocs(e, &small), allocs(e, large))

	on, err := NewEmitter(WithTracerProvider(tracenoop.NewTracerProvider()), WithMeterProvider(metricnoop.NewMeterProvider()), WithContentCapture(1<<10))
	require.NoError(t, err)
	assert.Greater(t, allocs(on, large), allocs(e, large), "with capture on, Emit reads the bodies")
}

// TestCaptureOptionsDoNotCompileForEmitter: NewEmitter takes the options
// it shares with NewCapture, and the compiler refuses it a capture-only
// one (testdata/options: the same program with and without one).
func TestCaptureOptionsDoNotCompileForEmitter(t *testing.T) {
	build := func(dir string) (string, error) {
		cmd := exec.Command("go", "build", "-o", os.DevNull, "./testdata/options/"+dir)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := build("shared")
	require.NoError(t, err, "%s", out)
	out, err = build("captureonly")
	require.Error(t, err, "a capture-only option compiled for NewEmitter")
	require.Contains(t, out, "genai.CaptureOption does not implement genai.Option")
}

// emitServer: a SERVER span over the request, and the server metrics from
// the exchange's times: the request read in full 50 ms after its start,
// the first output chunk 300 ms after the start, the last byte 2 s after
// it, 200 output tokens; a failed request records its duration only, with
// error.type.
func TestEmitServer(t *testing.T) {
	h := newEmitHarness(t)
	x, c, ep := streamedChat()
	x.RequestEnd = t0.Add(50 * time.Millisecond)
	h.e.emitServer(context.Background(), x, c, ep, nil, nil)
	failed, fc, _ := streamedChat()
	failed.Status, failed.RequestEnd = 503, t0
	h.e.emitServer(context.Background(), failed, fc, ep, nil, nil)

	spans := h.spans.GetSpans()
	require.Len(t, spans, 2)
	assert.Equal(t, trace.SpanKindServer, spans[0].SpanKind)
	assert.Equal(t, t0, spans[0].StartTime)
	assert.Equal(t, t0.Add(2*time.Second), spans[0].EndTime)
	assert.Equal(t, codes.Error, spans[1].Status.Code)

	pts := testutil.Collect(t, h.reader)
	dur := pts.Find(semconv.GenAIServerRequestDuration.Name)
	require.Len(t, dur, 2)
	failedDur := pts.One(t, semconv.GenAIServerRequestDuration.Name, semconv.ErrorType.String("503"))
	assert.Equal(t, uint64(1), failedDur.Count)
	first := pts.One(t, semconv.GenAIServerTimeToFirstToken.Name)
	assert.Equal(t, uint64(1), first.Count, "only the successful request")
	assert.InDelta(t, 0.250, first.Value, 1e-9, "300 ms after the start, less the 50 ms the request took")
	perToken := pts.One(t, semconv.GenAIServerTimePerOutputToken.Name)
	assert.InDelta(t, 1.7/199, perToken.Value, 1e-9, "from the first chunk to the end, over 199 tokens")
	assert.Empty(t, pts.Find(semconv.GenAIClientOperationDuration.Name), "no client metric for a served request")
}

// A served request whose server reports its own figures elsewhere
// (genai/serving, through WithServedElsewhere) keeps its span; the
// metrics reported elsewhere are left out, the others recorded.
func TestEmitServerServedElsewhere(t *testing.T) {
	h := newEmitHarness(t)
	x, c, ep := streamedChat()
	x.RequestEnd = t0.Add(50 * time.Millisecond)
	var asked []string
	h.e.emitServer(context.Background(), x, c, ep, nil, func(metric string) bool {
		asked = append(asked, metric)
		return metric != semconv.GenAIServerRequestDuration.Name
	})
	require.Len(t, h.spans.GetSpans(), 1, "the SERVER span")
	pts := testutil.Collect(t, h.reader)
	assert.Len(t, pts.Find(semconv.GenAIServerRequestDuration.Name), 1, "not reported elsewhere: recorded")
	assert.Empty(t, pts.Find(semconv.GenAIServerTimeToFirstToken.Name), "reported elsewhere")
	assert.Empty(t, pts.Find(semconv.GenAIServerTimePerOutputToken.Name), "reported elsewhere")
	assert.ElementsMatch(t, []string{semconv.GenAIServerRequestDuration.Name, semconv.GenAIServerTimeToFirstToken.Name, semconv.GenAIServerTimePerOutputToken.Name}, asked)
}

// The capture's reader has its Emitter hold spans and end them together:
// a held span is exported only when ended, with its call's own times, and
// the metrics, recorded at once, point at it; at maxHeldSpans they are
// ended without being asked.
func TestEmitHeldSpans(t *testing.T) {
	h := newEmitHarness(t)
	h.e.holdSpans()
	x, c, ep := streamedChat()
	for i := range 3 {
		y := *x
		y.End = x.End.Add(time.Duration(i) * time.Second)
		h.e.Emit(context.Background(), &y, c, ep)
	}
	require.Empty(t, h.spans.GetSpans(), "held spans are not exported")
	var rm metricdata.ResourceMetrics
	require.NoError(t, h.reader.Collect(context.Background(), &rm))
	pts, err := testutil.Flatten(rm)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), pts.One(t, semconv.GenAIClientOperationDuration.Name).Count, "metrics are recorded as calls are read")

	h.e.endHeld()
	spans := h.spans.GetSpans()
	require.Len(t, spans, 3)
	for i, sp := range spans {
		assert.Equal(t, t0, sp.StartTime)
		assert.Equal(t, x.End.Add(time.Duration(i)*time.Second), sp.EndTime, "a span ends at its call's end, not when ended")
	}
	var ids []trace.TraceID
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name == semconv.GenAIClientOperationDuration.Name {
			for _, ex := range m.Data.(metricdata.Histogram[float64]).DataPoints[0].Exemplars {
				ids = append(ids, trace.TraceID(ex.TraceID))
			}
		}
	}
	require.NotEmpty(t, ids)
	assert.Contains(t, []trace.TraceID{spans[0].SpanContext.TraceID(), spans[1].SpanContext.TraceID(), spans[2].SpanContext.TraceID()}, ids[0],
		"an exemplar recorded while its span was held points at it")

	h.spans.Reset()
	for range maxHeldSpans - 1 {
		h.e.Emit(context.Background(), x, c, ep)
	}
	assert.Empty(t, h.spans.GetSpans())
	h.e.Emit(context.Background(), x, c, ep)
	assert.Len(t, h.spans.GetSpans(), maxHeldSpans, "at maxHeldSpans the held spans are ended")
	h.e.endHeld()
	assert.Len(t, h.spans.GetSpans(), maxHeldSpans, "none is ended twice")
}
