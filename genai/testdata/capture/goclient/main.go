// Command goclient is the capture tests' Go client: Go's net/http, over
// TLS, as a Go program that calls an LLM API does, with nothing of the
// capture's in it. It makes n streamed chat calls to base, in turn (on one
// keep-alive connection, or a new one each with -fresh), over HTTP/2 as
// negotiated by ALPN or over HTTP/1.1 with -http1, trusting the CA file;
// with -anthropic, to the Anthropic Messages API instead of OpenAI's.
// It prints READY and waits for a line on stdin before the first call, so
// that a test can make sure the probes are on it first.
//
//	goclient [-http1] [-fresh] [-anthropic] base cafile model n
package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
)

func main() {
	http1 := flag.Bool("http1", false, "HTTP/1.1 only")
	fresh := flag.Bool("fresh", false, "a new connection for each call")
	anthropic := flag.Bool("anthropic", false, "the Anthropic Messages API")
	atOnce := flag.Bool("at-once", false, "call at once: no READY line, no wait for a line on stdin")
	flag.Parse()
	if flag.NArg() != 4 {
		fail(fmt.Errorf("usage: goclient [-http1] [-fresh] [-anthropic] [-at-once] base cafile model n"))
	}
	base, caFile, model := flag.Arg(0), flag.Arg(1), flag.Arg(2)
	n, err := strconv.Atoi(flag.Arg(3))
	if err != nil {
		fail(err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		fail(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: !*http1, DisableKeepAlives: *fresh}
	if *http1 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	client := &http.Client{Transport: tr}
	if !*atOnce {
		fmt.Println("READY")
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			fail(err)
		}
	}
	path, body := "/v1/chat/completions",
		fmt.Sprintf(`{"model":%q,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`, model)
	if *anthropic {
		path, body = "/v1/messages", fmt.Sprintf(`{"model":%q,"max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, model)
	}
	for range n {
		req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		if err != nil {
			fail(err)
		}
		if *anthropic {
			req.Header.Set("X-Api-Key", os.Getenv("CAPTURE_SECRET"))
			req.Header.Set("Anthropic-Version", "2023-06-01")
		} else {
			req.Header.Set("Authorization", "Bearer "+os.Getenv("CAPTURE_SECRET"))
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			fail(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			fail(fmt.Errorf("%s %s: %v %q", resp.Proto, resp.Status, err, b))
		}
		fmt.Println(resp.Proto)
	}
	tr.CloseIdleConnections()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "goclient:", err)
	os.Exit(1)
}
