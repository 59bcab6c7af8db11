package genai

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/xpuscope/xpuscope/internal/testutil/llmserver"
	"github.com/xpuscope/xpuscope/semconv"
)

// h2ChatRequest is the streamed chat call the HTTP/2 clients make.
const h2ChatRequest = `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`

// TestCaptureHTTP2: HTTP/2 through the real capture and kernel. Over TLS,
// curl (nghttp2 on the system OpenSSL) negotiates h2 by ALPN and
// multiplexes three streamed calls on one connection; in plaintext on a
// watched port, curl with prior knowledge makes three calls in turn on
// one connection, and Go's net/http (h2c, unmodified) twenty at once on
// one connection. Every call is a span with exact usage and finish
// reason, and in plaintext every request the mock served a SERVER span;
// the credential appears nowhere.
func TestCaptureHTTP2(t *testing.T) {
	for _, tls := range []bool{true, false} {
		name := map[bool]string{true: "tls", false: "plaintext"}[tls]
		t.Run(name, func(t *testing.T) {
			s := llmserver.Start(t, llmserver.Options{TLS: tls, HTTP2: true, FirstDelay: firstDelay, ChunkDelay: chunkDelay, Chunks: chunks})
			h := captureOver(t, tls, s.Port)
			args := []string{"-sS", "-N", "--fail", "-H", "Authorization: Bearer " + captureSecret,
				"-H", "Content-Type: application/json", "-d", h2ChatRequest}
			url := s.URL + "/v1/chat/completions"
			if tls {
				args = append(args, "--http2", "--parallel", "--parallel-max", "3", "--cacert", s.CAFile,
					"-o", "/dev/null", url, "-o", "/dev/null", url, "-o", "/dev/null", url)
				out, err := exec.Command("curl", args...).CombinedOutput()
				require.NoError(t, err, "curl: %s", out)
			} else {
				// A connection each: curl 7.88 fails to reuse a connection
				// it began with prior knowledge ("Error in the HTTP2
				// framing layer").
				for range 3 {
					out, err := exec.Command("curl", append(args, "--http2-prior-knowledge", "-o", "/dev/null", url)...).CombinedOutput()
					require.NoError(t, err, "curl: %s", out)
				}
			}
			calls := 3
			if !tls {
				goH2CClient(t, s, 20)
				calls += 20
			}
			for _, sp := range h.spansTo(t, s.Port, calls) {
				checkStreamedCall(t, h, sp, semconv.GenAIProviderOpenAICompatible, "gpt-4o-mini", "stop")
			}
			if !tls {
				// The mock's own end of each connection, served over
				// HTTP/2 (in this process, in plaintext: captured too).
				for _, sp := range h.spansOf(t, trace.SpanKindServer, s.Port, calls) {
					a := attrs(sp)
					require.Equal(t, int64(llmserver.InputTokens), a[semconv.GenAIUsageInputTokens].AsInt64())
					require.Equal(t, int64(llmserver.OutputTokens), a[semconv.GenAIUsageOutputTokens].AsInt64())
				}
			}
			h.requireNoSecret(t)
			h.c.mu.Lock()
			f := h.c.conns.frames
			h.c.mu.Unlock()
			assert.Positive(t, f.HTTP2, "connections read as HTTP/2")
			assert.Zero(t, f.BadFrame+f.BadHeaderBlock, "%+v", f)
		})
	}
}

// goH2CClient makes n streamed chat calls at once with Go's net/http over
// HTTP/2 in plaintext (prior knowledge), which puts them on one
// connection.
func goH2CClient(t *testing.T, s *llmserver.Server, n int) {
	t.Helper()
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &p}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, s.URL+"/v1/chat/completions", strings.NewReader(h2ChatRequest))
			if !assert.NoError(t, err) {
				return
			}
			req.Header.Set("Authorization", "Bearer "+captureSecret)
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if !assert.NoError(t, err) {
				return
			}
			defer resp.Body.Close()
			assert.Equal(t, "HTTP/2.0", resp.Proto)
			b, err := io.ReadAll(resp.Body)
			assert.NoError(t, err)
			assert.Contains(t, string(b), `"completion_tokens":5`)
		})
	}
	wg.Wait()
}
