package genai

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/xpuscope/xpuscope/internal/testutil"
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
			var s *llmserver.Server
			if tls {
				s = llmserver.Start(t, llmserver.Options{TLS: tls, HTTP2: true, FirstDelay: firstDelay, ChunkDelay: chunkDelay, Chunks: chunks})
			} else {
				// In a process of its own, as the Go client: the capture
				// leaves its own process's calls out.
				s = startMockProcess(t, mockH2CEnv+"=1", mockTestEnv+"=1")
			}
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
				// HTTP/2 in plaintext: captured too.
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
// connection, from a process of its own (runParallelH2CClient).
func goH2CClient(t *testing.T, s *llmserver.Server, n int) {
	t.Helper()
	testutil.Native(t, "the test binary run again as a program")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), h2cClientEnv+"="+s.URL, h2cParallelEnv+"="+strconv.Itoa(n))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the Go client: %s", out)
}

// runParallelH2CClient is goH2CClient's process: n calls at once to url.
func runParallelH2CClient(url string, n int) error {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &p}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	call := func() error {
		var body strings.Builder
		if _, err := chatOverH2(client, url, &body); err != nil {
			return err
		}
		if !strings.Contains(body.String(), `"completion_tokens":5`) {
			return fmt.Errorf("no usage in the response: %q", body.String())
		}
		return nil
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = call() })
	}
	wg.Wait()
	return errors.Join(errs...)
}
