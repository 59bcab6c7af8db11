package tlsdecrypt

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// event is one read(2) or write(2) on the captured socket: the bytes an
// eBPF probe would see.
type event struct {
	dir  Dir
	data []byte
}

// recorder wraps a net.Conn and records, in order, the raw bytes written
// and read through it.
type recorder struct {
	net.Conn
	mu     sync.Mutex
	events []event
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	r.add(Read, p[:n])
	return n, err
}

func (r *recorder) Write(p []byte) (int, error) {
	n, err := r.Conn.Write(p)
	r.add(Write, p[:n])
	return n, err
}

func (r *recorder) add(dir Dir, p []byte) {
	if len(p) == 0 {
		return
	}
	r.mu.Lock()
	r.events = append(r.events, event{dir: dir, data: bytes.Clone(p)})
	r.mu.Unlock()
}

func (r *recorder) snapshot() []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event(nil), r.events...)
}

// keyLogLine is one parsed NSS key log line.
type keyLogLine struct {
	label          string
	random, secret []byte
}

// parseKeyLog parses an NSS key log: "LABEL <client random hex> <secret
// hex>" per line, '#' comments.
func parseKeyLog(t testing.TB, text string) []keyLogLine {
	t.Helper()
	var lines []keyLogLine
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		require.Len(t, f, 3, "key log line %q", line)
		random, err := hex.DecodeString(f[1])
		require.NoError(t, err, "client random of %q", line)
		secret, err := hex.DecodeString(f[2])
		require.NoError(t, err, "secret of %q", line)
		lines = append(lines, keyLogLine{f[0], random, secret})
	}
	require.NoError(t, sc.Err())
	return lines
}

// loadKeys adds every line of an NSS key log to keys.
func loadKeys(t testing.TB, keys *Keys, text string) {
	t.Helper()
	for _, l := range parseKeyLog(t, text) {
		require.NoError(t, keys.Add(l.label, l.random, l.secret), "Add %s", l.label)
	}
}

// Test certificates, made once.
var (
	certOnce  sync.Once
	ecdsaCert tls.Certificate
	rsaCert   tls.Certificate
	rootPool  *x509.CertPool
	certPEM   []byte // the ECDSA certificate and key, PEM, for openssl
	keyPEM    []byte
)

func testCerts(t testing.TB) {
	t.Helper()
	certOnce.Do(func() {
		rootPool = x509.NewCertPool()
		ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		ecdsaCert = selfSigned(ek, &ek.PublicKey, 1)
		rk, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		rsaCert = selfSigned(rk, &rk.PublicKey, 2)
		certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ecdsaCert.Certificate[0]})
		der, err := x509.MarshalPKCS8PrivateKey(ek)
		if err != nil {
			panic(err)
		}
		keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	})
}

func selfSigned(priv any, pub any, serial int64) tls.Certificate {
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial),
		Subject:               pkix.Name{CommonName: "tlsdecrypt.test"},
		DNSNames:              []string{"tlsdecrypt.test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
	if err != nil {
		panic(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		panic(err)
	}
	rootPool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: priv, Leaf: leaf}
}

// scenario is one TLS connection between Go's client and server.
type scenario struct {
	name         string
	client       func(*tls.Config) // adjusts the client's config
	server       func(*tls.Config) // adjusts the server's config
	clientWrites [][]byte          // application writes of the client, in order
	serverWrites [][]byte          // of the server
	serverFirst  bool              // the server writes before reading
	session      tls.ClientSessionCache
}

// session is what a scenario recorded.
type session struct {
	client, server       []event // raw bytes at each endpoint
	clientLog, serverLog string  // NSS key logs of each endpoint
	state                tls.ConnectionState
	clientSent           []byte // the client's application bytes
	serverSent           []byte
}

// endpoint is one end of a session as its capture sees it: its socket's
// bytes, its key log, what its application wrote and what it read.
type endpoint struct {
	name         string
	events       []event
	log          string
	wrote, ready []byte
}

// endpoints returns the session's client and server ends.
func (s *session) endpoints() []endpoint {
	return []endpoint{
		{"client", s.client, s.clientLog, s.clientSent, s.serverSent},
		{"server", s.server, s.serverLog, s.serverSent, s.clientSent},
	}
}

// runSession runs sc over loopback TCP, recording both endpoints. Each side
// reads exactly what the other wrote, so every application byte crosses.
func runSession(t testing.TB, sc scenario) *session {
	t.Helper()
	testCerts(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()

	var clientLog, serverLog testutil.SyncBuffer // each a Config.KeyLogWriter
	scfg := &tls.Config{
		Certificates: []tls.Certificate{ecdsaCert, rsaCert},
		KeyLogWriter: &serverLog,
	}
	if sc.server != nil {
		sc.server(scfg)
	}
	ccfg := &tls.Config{
		RootCAs:            rootPool,
		ServerName:         "tlsdecrypt.test",
		KeyLogWriter:       &clientLog,
		ClientSessionCache: sc.session,
	}
	if sc.client != nil {
		sc.client(ccfg)
	}
	cSent, sSent := bytes.Join(sc.clientWrites, nil), bytes.Join(sc.serverWrites, nil)

	type result struct {
		rec *recorder
		err error
	}
	serverDone := make(chan result, 1)
	go func() {
		raw, err := ln.Accept()
		if err != nil {
			serverDone <- result{nil, err}
			return
		}
		rec := &recorder{Conn: raw}
		defer raw.Close()
		conn := tls.Server(rec, scfg)
		serverDone <- result{rec, exchange(conn, sc.serverWrites, len(cSent), sc.serverFirst)}
	}()

	raw, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	rec := &recorder{Conn: raw}
	conn := tls.Client(rec, ccfg)
	cerr := exchange(conn, sc.clientWrites, len(sSent), !sc.serverFirst)
	state := conn.ConnectionState()
	raw.Close()
	sr := <-serverDone
	require.NoError(t, cerr, "client")
	require.NoError(t, sr.err, "server")
	return &session{
		client: rec.snapshot(), server: sr.rec.snapshot(),
		clientLog: clientLog.String(), serverLog: serverLog.String(),
		state: state, clientSent: cSent, serverSent: sSent,
	}
}

// exchange writes then reads (or reads then writes), checks nothing but
// errors, and closes the TLS connection (sending close_notify).
func exchange(conn *tls.Conn, writes [][]byte, readLen int, writeFirst bool) error {
	if err := conn.Handshake(); err != nil {
		return err
	}
	write := func() error {
		for _, w := range writes {
			if _, err := conn.Write(w); err != nil {
				return err
			}
		}
		return nil
	}
	read := func() error {
		_, err := io.ReadFull(conn, make([]byte, readLen))
		return err
	}
	first, second := read, write
	if writeFirst {
		first, second = write, read
	}
	if err := first(); err != nil {
		return err
	}
	if err := second(); err != nil {
		return err
	}
	// close_notify; the peer may have closed already, which is no failure
	// of the exchange.
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	_ = conn.Close()
	return nil
}

// piece is one call of Feed's out.
type piece struct {
	dir  Dir
	data []byte
	ts   int64
}

// collector gathers out's calls.
type collector struct{ pieces []piece }

func (k *collector) out(dir Dir, p []byte, ts int64) {
	k.pieces = append(k.pieces, piece{dir, bytes.Clone(p), ts})
}

func (k *collector) text(dir Dir) []byte {
	var b []byte
	for _, p := range k.pieces {
		if p.dir == dir {
			b = append(b, p.data...)
		}
	}
	return b
}

// evTS is the timestamp the tests give event i.
func evTS(i int) int64 { return int64(i+1) * 1000 }

// feedEvents feeds events in order, each in one Feed, and returns the
// first error.
func feedEvents(c *Conn, events []event, k *collector) error {
	for i, e := range events {
		if err := c.Feed(e.dir, e.data, evTS(i), k.out); err != nil {
			return err
		}
	}
	return nil
}

// decodeEvents feeds events to a new Conn with keys and returns what came
// out.
func decodeEvents(t testing.TB, keys *Keys, events []event) *collector {
	t.Helper()
	c := NewConn(keys)
	var k collector
	require.NoError(t, feedEvents(c, events, &k))
	require.False(t, c.Waiting(), "records still held after all bytes and keys")
	return &k
}

// bigBytes returns n bytes of a recognisable pattern.
func bigBytes(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) + seed
	}
	return b
}
