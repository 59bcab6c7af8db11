// Package llmserver is a local mock of LLM HTTP APIs for the capture
// tests: the OpenAI chat completions API and the Anthropic Messages API,
// streaming Server-Sent Events with known delays, over TLS (a self-signed
// certificate made at start) or plaintext, HTTP/1.1, or HTTP/2 as well
// when asked (by ALPN over TLS, by prior knowledge in plaintext). It
// stands in for the providers, which a test cannot reach.
package llmserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Options shape the responses.
type Options struct {
	// TLS serves HTTPS with a certificate for 127.0.0.1 and localhost.
	TLS bool
	// FirstDelay is the wait before the first streamed chunk; ChunkDelay
	// the wait before each later one.
	FirstDelay, ChunkDelay time.Duration
	// Chunks is the number of content chunks a stream carries (default 3).
	Chunks int
	// ChunkSize pads each chunk's content to this many bytes (default:
	// a short word).
	ChunkSize int
	// Listener, if set, is served instead of a new loopback listener.
	Listener net.Listener
	// HTTP2 serves HTTP/2 too: over TLS to a client that asks for it by
	// ALPN, in plaintext to one that starts with the HTTP/2 preface.
	HTTP2 bool
}

// Usage the mock reports for every call.
const (
	InputTokens  = 17
	OutputTokens = 5
)

// Server is a running mock.
type Server struct {
	// URL is the base URL ("https://127.0.0.1:PORT").
	URL  string
	Port int
	// CAFile is the PEM certificate clients must trust (TLS only);
	// KeyFile its PEM private key, for a server of the test's own.
	CAFile, KeyFile string

	opts Options
	srv  *http.Server
	mu   sync.Mutex
	auth []string
}

// Start serves the mock until the test ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	s, err := Serve(o, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Serve serves the mock until Close, outside a test (a benchmark's server
// process); a TLS mock writes its CA file into dir.
func Serve(o Options, dir string) (*Server, error) {
	if o.Chunks == 0 {
		o.Chunks = 3
	}
	ln := o.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, err
		}
	}
	s := &Server{opts: o, Port: ln.Addr().(*net.TCPAddr).Port}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.openAI)
	mux.HandleFunc("POST /v1/messages", s.anthropic)
	// A REST call that is no LLM call, as a client of both would make.
	mux.HandleFunc("POST /v1/files", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"file-1","object":"file","purpose":"batch"}`)
	})
	s.srv = &http.Server{Handler: mux}
	protos := []string{"http/1.1"}
	if o.HTTP2 {
		var p http.Protocols
		p.SetHTTP1(true)
		p.SetHTTP2(true)
		p.SetUnencryptedHTTP2(true)
		s.srv.Protocols = &p
		protos = []string{"h2", "http/1.1"}
	} else {
		// No HTTP/2: an empty TLSNextProto map turns it off.
		s.srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	scheme := "http"
	if o.TLS {
		scheme = "https"
		cert, caFile, keyFile, err := selfSigned(dir)
		if err != nil {
			ln.Close()
			return nil, err
		}
		s.CAFile, s.KeyFile = caFile, keyFile
		s.srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: protos}
		ln = tls.NewListener(ln, s.srv.TLSConfig)
	}
	s.URL = scheme + "://127.0.0.1:" + strconv.Itoa(s.Port)
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the mock.
func (s *Server) Close() error { return s.srv.Close() }

// Authorizations returns the Authorization and x-api-key header values the
// server received, in order.
func (s *Server) Authorizations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auth...)
}

type request struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
}

func (s *Server) read(w http.ResponseWriter, r *http.Request) (request, bool) {
	s.mu.Lock()
	for _, h := range []string{"Authorization", "X-Api-Key"} {
		if v := r.Header.Get(h); v != "" {
			s.auth = append(s.auth, v)
		}
	}
	s.mu.Unlock()
	var req request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return req, false
	}
	return req, true
}

// stream writes events as SSE, waiting FirstDelay before the first and
// ChunkDelay before each later one.
func (s *Server) stream(w http.ResponseWriter, events []string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f := w.(http.Flusher)
	f.Flush()
	for i, e := range events {
		if i == 0 {
			time.Sleep(s.opts.FirstDelay)
		} else {
			time.Sleep(s.opts.ChunkDelay)
		}
		fmt.Fprint(w, e)
		f.Flush()
	}
}

// word is the content of chunk i.
func (s *Server) word(i int) string {
	w := "w" + strconv.Itoa(i) + " "
	if pad := s.opts.ChunkSize - len(w); pad > 0 {
		w += strings.Repeat("x", pad)
	}
	return w
}

func (s *Server) openAI(w http.ResponseWriter, r *http.Request) {
	req, ok := s.read(w, r)
	if !ok {
		return
	}
	const id = "chatcmpl-mock1"
	if !req.Stream {
		content := ""
		for i := range s.opts.Chunks {
			content += s.word(i)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":%q,"object":"chat.completion","model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`,
			id, req.Model, content, InputTokens, OutputTokens, InputTokens+OutputTokens)
		return
	}
	var events []string
	for i := range s.opts.Chunks {
		events = append(events, fmt.Sprintf("data: {\"id\":%q,\"object\":\"chat.completion.chunk\",\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", id, req.Model, s.word(i)))
	}
	// ?cut=N: the server fails after N chunks, closing the connection
	// mid-stream.
	if n, err := strconv.Atoi(r.URL.Query().Get("cut")); err == nil && n >= 0 && n <= len(events) {
		s.stream(w, events[:n])
		panic(http.ErrAbortHandler)
	}
	events = append(events,
		fmt.Sprintf("data: {\"id\":%q,\"object\":\"chat.completion.chunk\",\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n", id, req.Model),
		fmt.Sprintf("data: {\"id\":%q,\"object\":\"chat.completion.chunk\",\"model\":%q,\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n", id, req.Model, InputTokens, OutputTokens, InputTokens+OutputTokens))
	s.stream(w, events)
}

func (s *Server) anthropic(w http.ResponseWriter, r *http.Request) {
	req, ok := s.read(w, r)
	if !ok {
		return
	}
	const id = "msg_mock1"
	if !req.Stream {
		content := ""
		for i := range s.opts.Chunks {
			content += s.word(i)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":%q,"type":"message","role":"assistant","model":%q,"content":[{"type":"text","text":%q}],"stop_reason":"end_turn","usage":{"input_tokens":%d,"output_tokens":%d}}`,
			id, req.Model, content, InputTokens, OutputTokens)
		return
	}
	events := []string{
		fmt.Sprintf("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":%q,\"type\":\"message\",\"role\":\"assistant\",\"model\":%q,\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":%d,\"output_tokens\":1}}}\n\n"+
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n", id, req.Model, InputTokens),
	}
	// The first event carries no content: the first chunk with content
	// is the first delta, after ChunkDelay.
	for i := range s.opts.Chunks {
		events = append(events, fmt.Sprintf("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%q}}\n\n", s.word(i)))
	}
	events = append(events, fmt.Sprintf("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"+
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":%d}}\n\n"+
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", OutputTokens))
	s.stream(w, events)
}

// selfSigned makes a certificate for 127.0.0.1 and localhost, and writes
// it as PEM to a file for clients to trust.
func selfSigned(dir string) (cert tls.Certificate, caFile, keyFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return cert, "", "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "llmserver"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return cert, "", "", err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return cert, "", "", err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	if cert, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return cert, "", "", err
	}
	caFile, keyFile = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(caFile, certPEM, 0o644); err != nil {
		return cert, "", "", err
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return cert, "", "", err
	}
	return cert, caFile, keyFile, nil
}

// TLSConfig is a client's TLS configuration that trusts the mock's
// certificate (a TLS mock only).
func (s *Server) TLSConfig(t testing.TB) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(s.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &tls.Config{RootCAs: pool}
}
