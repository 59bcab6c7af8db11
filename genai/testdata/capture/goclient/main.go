// Command goclient is the capture tests' Go client: Go's net/http, over
// TLS, as a Go program that calls an LLM API does, with nothing of the
// capture's in it. It makes n streamed chat calls to base, in turn (on one
// keep-alive connection, or a new one each with -fresh), over HTTP/2 as
// negotiated by ALPN or over HTTP/1.1 with -http1, trusting the CA file;
// with -anthropic, to the Anthropic Messages API instead of OpenAI's;
// with -servername, taking the server for that name (the mock's
// certificate names localhost and 127.0.0.1, not another address of it);
// with -wrap, over a tls.Conn whose net.Conn is a wrapper of the
// *net.TCPConn, as a program that counts or limits its connections has.
// It prints READY and waits for a line on stdin before the first call, so
// that a test can make sure the probes are on it first.
//
// With -bytewise, it speaks HTTP/1.1 on one TLS connection of its own and
// writes each request a byte at a time with (*tls.Conn).Write, byte k
// from k calls deep on a goroutine of its own: some of those calls find
// too little stack at Write's bound check, grow it, and start Write over;
// and the connection's first bytes come fewer than it takes to tell its
// protocol.
//
//	goclient [-http1] [-fresh] [-anthropic] [-at-once] [-bytewise] [-servername name] [-wrap] base cafile model n
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net"
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
	bytewise := flag.Bool("bytewise", false, "HTTP/1.1, each request written a byte at a time from ever deeper calls")
	serverName := flag.String("servername", "", "the name the server's certificate must have; default: base's host")
	wrap := flag.Bool("wrap", false, "TLS over a wrapper of the TCP connection")
	flag.Parse()
	if flag.NArg() != 4 {
		fail(fmt.Errorf("usage: goclient [-http1] [-fresh] [-anthropic] [-at-once] [-bytewise] [-servername name] [-wrap] base cafile model n"))
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
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: *serverName}, ForceAttemptHTTP2: !*http1, DisableKeepAlives: *fresh}
	if *http1 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	if *wrap {
		tr.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := new(net.Dialer).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			config := tr.TLSClientConfig.Clone()
			if config.ServerName == "" {
				config.ServerName, _, _ = net.SplitHostPort(addr)
			}
			tc := tls.Client(wrapped{c}, config)
			if err := tc.HandshakeContext(ctx); err != nil {
				c.Close()
				return nil, err
			}
			return tc, nil
		}
	}
	var client interface {
		Do(*http.Request) (*http.Response, error)
	} = &http.Client{Transport: tr}
	if *bytewise {
		client = &bytewiseClient{config: &tls.Config{RootCAs: pool, ServerName: *serverName, NextProtos: []string{"http/1.1"}}}
	}
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
	if c, ok := client.(*bytewiseClient); ok && c.conn != nil {
		c.conn.Close()
	}
}

// bytewiseClient sends each request on its one TLS connection a byte at
// a time, byte k written from k calls deep on a goroutine of its own.
type bytewiseClient struct {
	config *tls.Config
	conn   *tls.Conn
	r      *bufio.Reader
}

func (c *bytewiseClient) Do(req *http.Request) (*http.Response, error) {
	if c.conn == nil {
		conn, err := tls.Dial("tcp", req.URL.Host, c.config)
		if err != nil {
			return nil, err
		}
		c.conn, c.r = conn, bufio.NewReader(conn)
	}
	var wire bytes.Buffer
	if err := req.Write(&wire); err != nil {
		return nil, err
	}
	for depth, b := range wire.Bytes() {
		errc := make(chan error)
		go func() { errc <- writeFrom(depth, c.conn, []byte{b}) }()
		if err := <-errc; err != nil {
			return nil, err
		}
	}
	return http.ReadResponse(c.r, req)
}

// wrapped is a net.Conn that wraps another (-wrap).
type wrapped struct{ net.Conn }

// writeFrom writes b to c from depth calls deep.
//
//go:noinline
func writeFrom(depth int, c *tls.Conn, b []byte) error {
	if depth == 0 {
		_, err := c.Write(b)
		return err
	}
	return writeFrom(depth-1, c, b)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "goclient:", err)
	os.Exit(1)
}
