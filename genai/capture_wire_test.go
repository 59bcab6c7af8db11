package genai

// The reassembly of Go TLS connections read at their sockets
// (httpbpf.SourceTLSWire): a real crypto/tls session in this process,
// its client's socket calls handed over as the syscall programs send
// them, and its secrets as the key log probe does. No kernel.

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/hex"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/httpbpf"
	"github.com/xpuscope/xpuscope/internal/testutil/llmserver"
)

// socketCall is one read or write the client made on its socket.
type socketCall struct {
	dir  httpbpf.Dir
	data []byte
}

// tapConn records the calls made on a net.Conn, in order.
type tapConn struct {
	net.Conn
	mu    sync.Mutex
	calls []socketCall
}

func (c *tapConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.add(httpbpf.Write, p[:n])
	return n, err
}

func (c *tapConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.add(httpbpf.Read, p[:n])
	return n, err
}

func (c *tapConn) add(dir httpbpf.Dir, p []byte) {
	if len(p) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, socketCall{dir, bytes.Clone(p)})
}

// tlsSession runs one HTTP/1.1 exchange (tRequest, answered with
// tResponse) over a real TLS connection of maxVersion, and returns the
// client's socket calls and the records of the secrets its key log got,
// as the capture's probe sends them.
func tlsSession(t *testing.T, maxVersion uint16) ([]socketCall, []httpbpf.Record) {
	t.Helper()
	files := llmserver.Start(t, llmserver.Options{TLS: true}) // for its certificate and key
	cert, err := tls.LoadX509KeyPair(files.CAFile, files.KeyFile)
	require.NoError(t, err)
	a, b := net.Pipe()
	tap := &tapConn{Conn: a}
	var keylog bytes.Buffer
	client := tls.Client(tap, &tls.Config{InsecureSkipVerify: true, MaxVersion: maxVersion, KeyLogWriter: &keylog})
	server := tls.Server(b, &tls.Config{Certificates: []tls.Certificate{cert}})
	done := make(chan error, 1)
	go func() {
		defer server.Close()
		req := make([]byte, len(tRequest))
		if _, err := io.ReadFull(server, req); err != nil {
			done <- err
			return
		}
		_, err := server.Write([]byte(tResponse))
		done <- err
	}()
	_, err = client.Write([]byte(tRequest))
	require.NoError(t, err)
	resp := make([]byte, len(tResponse))
	_, err = io.ReadFull(client, resp)
	require.NoError(t, err)
	require.NoError(t, <-done)
	require.Equal(t, tResponse, string(resp))
	a.Close() // not client.Close: its close_notify would wait on the pipe for a reader

	var keys []httpbpf.Record
	labels := map[string]uint8{"CLIENT_TRAFFIC_SECRET_0": httpbpf.KeyClientTraffic,
		"SERVER_TRAFFIC_SECRET_0": httpbpf.KeyServerTraffic, "CLIENT_RANDOM": httpbpf.KeyTLS12}
	sc := bufio.NewScanner(&keylog)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		label, ok := labels[f[0]]
		if !ok {
			continue // the handshake secrets, which the probe does not send
		}
		random, err := hex.DecodeString(f[1])
		require.NoError(t, err)
		secret, err := hex.DecodeString(f[2])
		require.NoError(t, err)
		data := make([]byte, 88) // struct key_record past its header
		data[0], data[1] = label, byte(len(secret))
		copy(data[8:40], random)
		copy(data[40:], secret)
		keys = append(keys, httpbpf.Record{Kind: httpbpf.KindKey, Source: httpbpf.SourceTLSWire, Data: data})
	}
	require.NotEmpty(t, keys)
	tap.mu.Lock()
	defer tap.mu.Unlock()
	return tap.calls, keys
}

// feedWire hands pid's calls over as fd 7's, numbered by direction, at ts
// 100, 110, ...
func (h *tableHarness) feedWire(pid uint32, calls []socketCall) {
	for i, c := range calls {
		k := dirKey{connKey{pid, httpbpf.SourceTLSWire, 7, 0}, c.dir}
		h.seq[k]++
		h.t.handle(&httpbpf.Record{TS: uint64(100 + 10*i), Conn: 7, PID: pid, Kind: httpbpf.KindData,
			Source: httpbpf.SourceTLSWire, Dir: c.dir, Total: uint32(len(c.data)), Seq: h.seq[k], Data: c.data})
	}
}

// feedKeys hands pid's secrets over.
func (h *tableHarness) feedKeys(pid uint32, keys []httpbpf.Record) {
	for _, k := range keys {
		k.PID = pid
		h.t.handle(&k)
	}
}

// A connection that switches to another protocol is left by the kernel
// side at once (muted): its bytes are of no use, and a connection read
// at its socket would have them decrypted too.
func TestConnTableSwitchedIsMuted(t *testing.T) {
	h := newTableHarness(16)
	h.call(1, httpbpf.Write, "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", 100)
	h.call(1, httpbpf.Read, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", 110)
	require.Equal(t, []uint32{0}, h.muted.gens, "muted at the switch")
	require.Equal(t, int64(1), h.t.frames.Switched)
	h.call(1, httpbpf.Read, "\x81\x05hello", 120) // sent before the kernel side heard: skipped
	require.Equal(t, []uint32{0}, h.muted.gens, "muted once")
}

// TestConnTableWire: a Go TLS connection read at its socket becomes the
// same exchange as one read in plaintext, in TLS 1.3 and 1.2, with its
// secrets sent before the bytes they decrypt or after them (as when a
// read brings the server's handshake and its first records together).
// The secrets of another process decrypt nothing; a lost call gives the
// connection up (counted, muted), as a lost record cannot be skipped.
func TestConnTableWire(t *testing.T) {
	for _, v := range []struct {
		name    string
		version uint16
	}{{"TLS 1.3", tls.VersionTLS13}, {"TLS 1.2", tls.VersionTLS12}} {
		calls, keys := tlsSession(t, v.version)
		t.Run(v.name+", secrets after the bytes", func(t *testing.T) {
			h := newTableHarness(16)
			h.feedWire(1, calls)
			require.Empty(t, h.got)
			require.Len(t, h.t.waiting, 1)
			h.feedKeys(1, keys)
			require.Len(t, h.got, 1)
			x := h.got[0]
			require.Equal(t, "/v1/chat/completions", x.Path)
			require.Equal(t, tRequestBody, string(x.RequestBody))
			require.Equal(t, []string{""}, x.RequestHeader["Authorization"])
			require.Equal(t, tResponseBody, string(x.Chunks[0].Data))
			require.Empty(t, h.t.waiting)
			require.Zero(t, h.t.undecryptable)
		})
		t.Run(v.name+", secrets first", func(t *testing.T) {
			h := newTableHarness(16)
			h.feedWire(1, calls[:1]) // the ClientHello: the connection is known
			h.feedKeys(1, keys)
			h.feedWire(1, calls[1:])
			require.Len(t, h.got, 1)
			require.Equal(t, tResponseBody, string(h.got[0].Chunks[0].Data))
		})
		t.Run(v.name+", another process's secrets", func(t *testing.T) {
			h := newTableHarness(16)
			h.feedWire(2, calls[:1])
			h.feedWire(1, calls)
			h.feedKeys(2, keys)
			require.Empty(t, h.got)
			require.Len(t, h.t.waiting, 1, "pid 1's records wait for pid 1's secrets")
		})
		t.Run(v.name+", a lost call", func(t *testing.T) {
			h := newTableHarness(16)
			h.feedWire(1, calls[:1])
			h.feedKeys(1, keys)
			h.seq[dirKey{connKey{1, httpbpf.SourceTLSWire, 7, 0}, httpbpf.Read}]++
			h.feedWire(1, calls[1:])
			require.Empty(t, h.got)
			require.Equal(t, int64(1), h.t.undecryptable)
			require.Equal(t, []uint32{0}, h.muted.gens, "the kernel side told to send no more")
			h.t.handle(&httpbpf.Record{Kind: httpbpf.KindClose, Source: httpbpf.SourceTLSWire, PID: 1, Conn: 7})
			require.Empty(t, h.t.conns)
		})
	}
}
