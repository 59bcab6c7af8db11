package genai

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

// TestEmitterScope: an emitted call's span and metrics, in the SDK's own
// data, are of the scope ScopeName at xpuscope.Version, each metric with
// the unit, kind and buckets the registry gives it (the GenAI histograms'
// boundaries are the semantic conventions').
func TestEmitterScope(t *testing.T) {
	rates, err := NewRates(map[RateKey]Price{{Provider: semconv.GenAIProviderOpenAI, Model: "gpt-4o"}: {Input: 2.5, Output: 10}})
	assert.NoError(t, err)
	h := newEmitHarness(t, WithRates(rates))
	x, c, ep := streamedChat()
	h.e.Emit(context.Background(), x, c, ep)
	testutil.CheckSpanScope(t, h.spans.GetSpans(), ScopeName)
	names := testutil.CheckScope(t, h.reader, ScopeName)
	assert.Subset(t, names, []string{
		semconv.GenAIClientTokenUsage.Name, semconv.GenAIClientOperationDuration.Name,
		semconv.GenAIClientOperationTimeToFirstChunk.Name, semconv.GenAIClientOperationTimePerOutputChunk.Name,
		semconv.XpuscopeGenAICost.Name,
	})
}

// TestCaptureScope: the capture's self-metrics, read from the kernel and
// its reader, are of the same scope, each as the registry has it.
func TestCaptureScope(t *testing.T) {
	h := startCapture(t)
	names := testutil.CheckScope(t, h.reader, ScopeName)
	assert.Subset(t, names, []string{
		semconv.XpuscopeGenAICaptureExchanges.Name, semconv.XpuscopeGenAICaptureDropped.Name,
		semconv.XpuscopeGenAICaptureConnections.Name, semconv.XpuscopeBPFRingErrors.Name,
	})
}
