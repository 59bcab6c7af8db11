package genai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/xpuscope/xpuscope/semconv"
)

// Secret values planted in every transcript: in every sensitive header,
// in body fields that are not content (an API key and user metadata in
// the request, error messages and signatures in the response), and in
// front of every prompt and completion text.
const (
	headerSecret = "S3CRET-hdr-7f1c"
	bodySecret   = "S3CRET-body-9a2e"
	promptSecret = "S3CRET-prompt-5b3d"
)

var sensitiveHeaders = []string{"Authorization", "X-Api-Key", "Api-Key", "X-Goog-Api-Key", "Cookie", "Proxy-Authorization", "X-Amz-Security-Token"}

// markText puts promptSecret in front of every string value that holds
// prompt or completion text, and bodySecret in front of error messages
// and signatures. It returns how many text values it marked.
func markText(b []byte, marked *int) []byte {
	*marked += bytes.Count(b, []byte(`"content":"`)) + bytes.Count(b, []byte(`"text":"`))
	for _, k := range []string{`"content":"`, `"text":"`, `"input":"`, `"arguments":"`, `"prompt":"`, `"delta":"`, `"response":"`, `"thinking":"`, `"generation":"`, `"partial_json":"`} {
		b = bytes.ReplaceAll(b, []byte(k), []byte(k+promptSecret+" "))
	}
	for _, k := range []string{`"message":"`, `"message": "`, `"error":"`, `"signature":"`, `"signature": "`} {
		b = bytes.ReplaceAll(b, []byte(k), []byte(k+bodySecret+" "))
	}
	return b
}

// withBodySecret adds fields that are not content, holding bodySecret,
// to a JSON object body.
func withBodySecret(body []byte) []byte {
	rest, ok := bytes.CutPrefix(bytes.TrimSpace(body), []byte("{"))
	if !ok {
		return body
	}
	out := []byte(`{"api_key":"` + bodySecret + `","metadata":{"user_id":"` + bodySecret + `"}`)
	if r := bytes.TrimSpace(rest); len(r) > 0 && r[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}

// secretExchanges returns every transcript's exchange with the secrets
// planted, and how many text values were marked.
func secretExchanges(t *testing.T) ([]*Exchange, int) {
	marked := 0
	var xs []*Exchange
	for _, tr := range allTranscripts(t) {
		// Marked before the chunks are decoded: inside binary event
		// streams too.
		x, err := tr.withMarkedBodies(func(b []byte) []byte { return markText(b, &marked) })
		require.NoError(t, err, tr.name)
		x.RequestBody = withBodySecret(x.RequestBody)
		x.RequestHeader = Header{}
		for k, v := range tr.x.RequestHeader {
			x.RequestHeader[k] = v
		}
		for _, h := range sensitiveHeaders {
			x.RequestHeader[h] = []string{"Bearer " + headerSecret}
		}
		x.ResponseHeader = Header{"Set-Cookie": {"session=" + headerSecret}}
		for k, v := range tr.x.ResponseHeader {
			x.ResponseHeader[k] = v
		}
		xs = append(xs, &x)
	}
	return xs, marked
}

// export emits every exchange with content capture at maxContent and
// returns the spans, and the metrics (exemplars included) as text.
func export(t *testing.T, xs []*Exchange, maxContent int) (tracetest.SpanStubs, string) {
	spans := tracetest.NewInMemoryExporter()
	reader := sdkmetric.NewManualReader()
	e, err := NewEmitter(
		WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))),
		WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))),
		WithContentCapture(maxContent))
	require.NoError(t, err)
	emitted := 0
	for _, x := range xs {
		ep, ok := Detect(x, nil)
		require.True(t, ok, "%s: not detected", x.Path)
		c, err := Parse(x, ep)
		if errors.Is(err, ErrUnsupportedAPI) {
			continue
		}
		require.NoError(t, err, x.Path)
		dump := fmt.Sprintf("%+v", c)
		for _, s := range []string{headerSecret, bodySecret, promptSecret} {
			require.NotContains(t, dump, s, "%s: the Call holds a secret", x.Path)
		}
		e.Emit(context.Background(), x, &c, ep)
		emitted++
	}
	require.Greater(t, emitted, 40)
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	return spans.GetSpans(), fmt.Sprintf("%+v", rm)
}

var contentKeys = []attribute.Key{semconv.GenAISystemInstructions, semconv.GenAIInputMessages, semconv.GenAIOutputMessages}

// Secrets never leave: credentials in headers and secrets in body fields
// that are not content appear nowhere in what the emitter exports, with
// content capture off or on. Prompt and completion text is exported
// only with capture on, on spans only, each attribute within the cap.
func TestSecretsNeverExported(t *testing.T) {
	xs, marked := secretExchanges(t)
	require.Greater(t, marked, 20, "the bodies carry marked text")

	for _, maxContent := range []int{0, 256, 1 << 16} {
		t.Run(fmt.Sprintf("capture %d", maxContent), func(t *testing.T) {
			spans, metrics := export(t, xs, maxContent)
			require.Contains(t, metrics, "gpt-4o", "the export holds the calls")
			for _, s := range []string{headerSecret, bodySecret, promptSecret} {
				require.NotContains(t, metrics, s, "metrics never hold text")
			}
			withPrompt := 0
			for _, sp := range spans {
				a := spanAttrs(sp.Snapshot())
				dump := fmt.Sprintf("%s %v %v %v", sp.Name, sp.Attributes, sp.Events, sp.Status)
				require.NotContains(t, dump, headerSecret, sp.Name)
				require.NotContains(t, dump, bodySecret, sp.Name)
				if maxContent == 0 {
					require.NotContains(t, dump, promptSecret, "%s: content capture is off", sp.Name)
					for _, k := range append(contentKeys, semconv.XpuscopeGenAIContentTruncated) {
						require.NotContains(t, a, k, "%s: content capture is off", sp.Name)
					}
					continue
				}
				for _, k := range contentKeys {
					require.LessOrEqual(t, len(a[k].AsString()), maxContent, "%s: %s over the cap", sp.Name, k)
				}
				if strings.Contains(a[semconv.GenAIOutputMessages].AsString(), promptSecret) {
					withPrompt++
				}
				if in, ok := a[semconv.GenAIInputMessages]; ok && maxContent > 1<<10 {
					require.Contains(t, in.AsString(), promptSecret, "%s: the input's marked text", sp.Name)
				}
			}
			if maxContent > 1<<10 {
				require.Greater(t, withPrompt, 20, "outputs with the marked text")
			}
		})
	}
}

// The lists that decide what the capture drops and reads are the
// package's: an importer that changes the copies it is given changes
// nothing.
func TestSensitiveHeadersAndPortsAreCopies(t *testing.T) {
	h := SensitiveHeaders()
	require.Subset(t, h, sensitiveHeaders)
	for i := range h {
		h[i] = "X-Harmless"
	}
	require.Subset(t, SensitiveHeaders(), sensitiveHeaders)
	p := DefaultPlaintextPorts()
	require.Equal(t, []uint16{8000, 8080, 4000, 3000, 30000, 11434}, p)
	p[0] = 1
	require.Equal(t, uint16(8000), DefaultPlaintextPorts()[0])
}

// redactCredential keeps no part of a credential: of an AWS Signature
// Version 4, only that it is one and whether it is Bedrock's.
func TestRedactCredential(t *testing.T) {
	for _, tt := range []struct{ name, value, want string }{
		{"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20250101/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=" + captureSecret,
			sigV4Bedrock},
		{"authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20250101/us-east-1/s3/aws4_request,SignedHeaders=host", sigV4},
		{"Authorization", "Bearer " + captureSecret, ""},
		{"Authorization", "AWS4-HMAC-SHA256 Credential=" + captureSecret, sigV4},
		{"Authorization", "AWS4-HMAC-SHA256 Credential=a/b/c/" + captureSecret + "/aws4_request", sigV4},
		{"Authorization", "AWS4-HMAC-SHA256 Credential=a/b/c/BEDROCK/aws4_request", sigV4},
		{"X-Api-Key", "AWS4-HMAC-SHA256 Credential=a/b/c/bedrock/aws4_request", ""},
		{"Api-Key", captureSecret, ""},
	} {
		got := redactCredential([]byte(tt.name), []byte(tt.value))
		require.Equal(t, tt.want, got, "%s: %s", tt.name, tt.value)
	}
}

func FuzzRedactCredential(f *testing.F) {
	f.Add([]byte("Authorization"), []byte("AWS4-HMAC-SHA256 Credential=AKID/20250101/us-east-1/bedrock/aws4_request, Signature=x"))
	f.Add([]byte("Authorization"), []byte("Bearer sk-1"))
	f.Fuzz(func(t *testing.T, name, value []byte) {
		switch got := redactCredential(name, value); got {
		case "", sigV4, sigV4Bedrock:
		default:
			t.Fatalf("redactCredential(%q, %q) = %q: more than the kind of credential", name, value, got)
		}
	})
}
