package genai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Secrets never leave: credentials in every sensitive header, and marked
// prompt and completion text in the bodies, must appear nowhere in what
// the emitter exports, for every transcript. (Content capture is not
// offered yet, so there is no opt-in to test.)
func TestSecretsNeverExported(t *testing.T) {
	const secret = "S3CRET-7f1c"
	headers := []string{"Authorization", "X-Api-Key", "Api-Key", "X-Goog-Api-Key", "Cookie", "Proxy-Authorization", "X-Amz-Security-Token"}
	marked := 0
	mark := func(b []byte) []byte {
		// Every string value that holds text gets the marker in front.
		marked += bytes.Count(b, []byte(`"content":"`)) + bytes.Count(b, []byte(`"text":"`))
		for _, k := range []string{`"content":"`, `"text":"`, `"input":"`, `"arguments":"`, `"prompt":"`, `"delta":"`, `"response":"`, `"thinking":"`, `"generation":"`} {
			b = bytes.ReplaceAll(b, []byte(k), []byte(k+secret+" "))
		}
		return b
	}
	spans := tracetest.NewInMemoryExporter()
	reader := sdkmetric.NewManualReader()
	e, err := NewEmitter(
		WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))),
		WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	require.NoError(t, err)

	emitted := 0
	var trs []*transcript
	for _, dir := range []string{"openai", "anthropic", "gemini", "ollama", "bedrock"} {
		trs = append(trs, loadTranscripts(t, dir)...)
	}
	for _, tr := range trs {
		x := tr.x
		x.RequestHeader = Header{}
		for k, v := range tr.x.RequestHeader {
			x.RequestHeader[k] = v
		}
		for _, h := range headers {
			x.RequestHeader[h] = []string{"Bearer " + secret}
		}
		x.ResponseHeader = Header{"Set-Cookie": {"session=" + secret}}
		for k, v := range tr.x.ResponseHeader {
			x.ResponseHeader[k] = v
		}
		// Marked before the chunks are decoded: inside binary event
		// streams too.
		mx, err := tr.withMarkedBodies(mark)
		require.NoError(t, err, tr.name)
		x.RequestBody, x.Chunks = mx.RequestBody, mx.Chunks
		ep, ok := Detect(&x, nil)
		require.True(t, ok, "%s: not detected", tr.name)
		c, err := Parse(&x, ep)
		if errors.Is(err, ErrUnsupportedAPI) {
			continue
		}
		require.NoError(t, err, tr.name)
		require.NotContains(t, fmt.Sprintf("%+v", c), secret, "%s: the Call holds a secret", tr.name)
		e.Emit(context.Background(), &x, &c, ep)
		emitted++
	}
	require.Positive(t, emitted)
	require.Greater(t, marked, 20, "the bodies carry marked text")

	var out strings.Builder
	for _, s := range spans.GetSpans() {
		fmt.Fprintf(&out, "%s %v %v %v\n", s.Name, s.Attributes, s.Events, s.Status)
	}
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	fmt.Fprintf(&out, "%+v", rm)
	require.Contains(t, out.String(), "gpt-4o", "the export holds the calls")
	require.NotContains(t, out.String(), secret)
}
