package genai

// The reassembly of OpenSSL connections read at their sockets: a real
// crypto/tls session in this process stands in for the OpenSSL one (the
// bytes on the wire are TLS's, whoever makes them), its client's socket
// calls handed over as the syscall programs send them, and a copy of an
// "SSL object" as the handshake probe sends it: random bytes with the
// session's client random and traffic secrets where OpenSSL 3.0's libssl
// keeps them. No kernel; the kernel tests run the real libssl.

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/httpbpf"
)

// Where Debian 12's libssl.so.3 (OpenSSL 3.0) keeps them in an SSL, as
// a program of its own found them (SSL_get_client_random and a key log
// callback's secrets, searched for in the object).
const (
	ssl30Random = 352
	ssl30Client = 1860
	ssl30Server = 1924
)

// sslState is a KindState record of process pid: an object of noise
// (seeded) with the session's client random and its TLS 1.3 secrets (of
// keys, the key log records) at the offsets given; a negative offset
// leaves that one out.
func sslState(pid uint32, keys []httpbpf.Record, seed uint64, random, client, server int) *httpbpf.Record {
	state := make([]byte, httpbpf.StateBytes)
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := range state {
		state[i] = byte(rng.Uint32())
	}
	for _, k := range keys {
		label, rnd, secret, _ := k.Key()
		if random >= 0 {
			copy(state[random:], rnd)
		}
		switch {
		case label == httpbpf.KeyClientTraffic && client >= 0:
			copy(state[client:], secret)
		case label == httpbpf.KeyServerTraffic && server >= 0:
			copy(state[server:], secret)
		}
	}
	return &httpbpf.Record{Kind: httpbpf.KindState, Source: httpbpf.SourceTLS, PID: pid, Conn: 0x5000, Total: uint32(len(state)), Data: state}
}

// feedHandshake hands pid's calls over as the kernel side sends them for
// an OpenSSL client: its handshake's (to its Finished, its second write),
// then the copies of its object and its session (states) as
// SSL_do_handshake returns, then the rest.
func (h *tableHarness) feedHandshake(pid uint32, calls []socketCall, states ...*httpbpf.Record) {
	writes, end := 0, len(calls)
	for i, c := range calls {
		if c.dir == httpbpf.Write {
			if writes++; writes == 2 {
				end = i + 1
				break
			}
		}
	}
	h.feedWire(pid, calls[:end])
	for _, r := range states {
		h.t.handle(r)
	}
	h.feedWire(pid, calls[end:])
}

// closeWire ends pid's connection on fd 7.
func (h *tableHarness) closeWire(pid uint32) {
	w := h.seq[dirKey{connKey{pid, httpbpf.SourceTLSWire, 7, 0}, httpbpf.Write}]
	r := h.seq[dirKey{connKey{pid, httpbpf.SourceTLSWire, 7, 0}, httpbpf.Read}]
	h.t.handle(&httpbpf.Record{Kind: httpbpf.KindClose, Source: httpbpf.SourceTLSWire, PID: pid, Conn: 7, Seq: w, Total: r})
	h.seq = map[dirKey]uint32{}
}

// TestConnTableOpenSSL: the first OpenSSL connection of a build is read
// once its object's secrets are found by trial decryption, and the
// layout learned reads every later connection's at once (no second
// scan), wherever its object's noise differs; a second copy of a
// connection's object (SSL_do_handshake called again) is no other
// connection's. A TLS 1.2 connection's master secret is read from its
// session, which the object points to, in the process's memory: where,
// learned likewise; one whose process is gone is given up (counted,
// muted);
// an object that names no connection read is counted; another process's
// object decrypts nothing.
func TestConnTableOpenSSL(t *testing.T) {
	exchangeOK := func(t *testing.T, h *tableHarness, n int) {
		t.Helper()
		require.Len(t, h.got, n)
		x := h.got[n-1]
		require.Equal(t, "/v1/chat/completions", x.Path)
		require.Equal(t, tRequestBody, string(x.RequestBody))
		require.Equal(t, tResponseBody, string(x.Chunks[0].Data))
		require.Zero(t, h.t.undecryptable)
	}
	t.Run("learned, then read", func(t *testing.T) {
		h := newTableHarness(16)
		calls, keys := tlsSession(t, tls.VersionTLS13)
		h.feedHandshake(1, calls, sslState(1, keys, 1, ssl30Random, ssl30Client, ssl30Server))
		exchangeOK(t, h, 1)
		require.Equal(t, []*sslLayout{{ssl30Random, ssl30Client, ssl30Server, -1, -1}}, h.t.layouts)
		require.Equal(t, 1, h.t.calibrations)
		h.closeWire(1)

		for i := range 3 {
			calls, keys := tlsSession(t, tls.VersionTLS13)
			state := sslState(1, keys, uint64(10+i), ssl30Random, ssl30Client, ssl30Server)
			h.feedHandshake(1, calls, state)
			exchangeOK(t, h, 2+i)
			// SSL_do_handshake called again on the connection: its object
			// copied again, of a connection read already.
			h.t.handle(state)
			h.closeWire(1)
		}
		require.Equal(t, 1, h.t.calibrations, "the layout read the later connections: no scan")
		require.Zero(t, h.t.unmatchedStates)
		require.Empty(t, h.t.conns)
	})
	t.Run("another layout", func(t *testing.T) {
		// Another build: the client random elsewhere, the server's secret
		// before the client's.
		h := newTableHarness(16)
		calls, keys := tlsSession(t, tls.VersionTLS13)
		h.feedHandshake(1, calls, sslState(1, keys, 2, 40, 3000, 700))
		exchangeOK(t, h, 1)
		require.Equal(t, []*sslLayout{{40, 3000, 700, -1, -1}}, h.t.layouts)
	})
	t.Run("TLS 1.2", func(t *testing.T) {
		// The session, another object, is read from the process's memory
		// (here a map of it; the kernel tests read a real process's) to
		// learn where it is; the kernel side is then told to copy it
		// with the object, as OpenSSL wipes it when the connection is
		// freed, often before user space reads it.
		h := newTableHarness(16)
		mem := fakeMemory{}
		h.t.readMemory = mem.read
		calls, keys := tlsSession(t, tls.VersionTLS12)
		state, _ := mem.session12(keys, 20, 4000, 120) // not where the hints say
		h.feedHandshake(1, calls, state)
		exchangeOK(t, h, 1)
		h.closeWire(1)
		require.Equal(t, []*sslLayout{{ssl30Random, -1, -1, 4000, 120}}, h.t.layouts)
		require.Equal(t, [2]uint32{2328, 4000}, h.muted.sessions, "the kernel side copies the sessions at the learned pointer too")
		for i := range 2 {
			calls, keys := tlsSession(t, tls.VersionTLS12)
			state, session := mem.session12(keys, uint64(21+i), 4000, 120)
			clear(mem) // the process's memory no more: the copy alone
			h.feedHandshake(1, calls, state, session)
			exchangeOK(t, h, 2+i)
			h.closeWire(1)
		}
		require.Equal(t, 1, h.t.sessionSearches, "the layout read the later connections: no search")
		require.Equal(t, 1, h.muted.setTimes, "the kernel side told once, not at every connection")
		require.Zero(t, h.t.undecryptable)
	})
	t.Run("TLS 1.2, where the hint says", func(t *testing.T) {
		h := newTableHarness(16)
		mem := fakeMemory{}
		calls, keys := tlsSession(t, tls.VersionTLS12)
		state, session := mem.session12(keys, 24, 2328, 80)
		clear(mem)
		h.feedHandshake(1, calls, state, session)
		exchangeOK(t, h, 1)
		require.Equal(t, []*sslLayout{{ssl30Random, -1, -1, 2328, 80}}, h.t.layouts)
	})
	t.Run("TLS 1.2, no session", func(t *testing.T) {
		// Neither in memory nor copied: the connection waits, and its end
		// counts it undecryptable.
		h := newTableHarness(16)
		mem := fakeMemory{}
		h.t.readMemory = mem.read
		calls, keys := tlsSession(t, tls.VersionTLS12)
		state, _ := mem.session12(keys, 25, 4000, 120)
		clear(mem)
		h.feedHandshake(1, calls, state)
		require.Empty(t, h.got)
		require.Len(t, h.t.waiting, 1)
		h.closeWire(1)
		require.Equal(t, int64(1), h.t.undecryptable)
		require.Empty(t, h.t.layouts)
	})
	t.Run("no connection", func(t *testing.T) {
		h := newTableHarness(16)
		_, keys := tlsSession(t, tls.VersionTLS13)
		h.t.handle(sslState(1, keys, 4, ssl30Random, ssl30Client, ssl30Server))
		require.Equal(t, int64(1), h.t.unmatchedStates)
	})
	t.Run("another process's object", func(t *testing.T) {
		h := newTableHarness(16)
		calls, keys := tlsSession(t, tls.VersionTLS13)
		h.feedHandshake(1, calls, sslState(2, keys, 5, ssl30Random, ssl30Client, ssl30Server))
		require.Empty(t, h.got)
		require.Len(t, h.t.waiting, 1, "pid 1's records wait for pid 1's secrets")
		require.Equal(t, int64(1), h.t.unmatchedStates)
	})
	t.Run("secrets not in the object", func(t *testing.T) {
		// A build that keeps them past what is copied: the scans give up
		// (bounded), and the connection with them.
		h := newTableHarness(16)
		calls, keys := tlsSession(t, tls.VersionTLS13)
		h.feedHandshake(1, calls, sslState(1, keys, 6, ssl30Random, -1, -1))
		require.Empty(t, h.got)
		require.Empty(t, h.t.layouts)
		c := h.t.conns[connKey{1, httpbpf.SourceTLSWire, 7, 0}]
		require.NotNil(t, c)
		require.LessOrEqual(t, c.calib.scans, maxScans)
	})
}

// fakeMemory stands in for the memory of process 1: the sessions that
// session12 made, by address.
type fakeMemory map[uint64][]byte

func (m fakeMemory) read(pid uint32, addr uint64, b []byte) error {
	for at, s := range m {
		if pid == 1 && addr >= at && addr+uint64(len(b)) <= at+uint64(len(s)) {
			copy(b, s[addr-at:])
			return nil
		}
	}
	return unix.EFAULT
}

// session12 returns the records the kernel side sends at the end of a
// TLS 1.2 connection's handshake in process 1 (keys, the key log
// records): its object's, which holds the client random where OpenSSL
// 3.0's does and, at pointerOff, the address of a session that m now
// holds, with the master secret at masterOff; and the session's
// (KindSession), which it sends where told to.
func (m fakeMemory) session12(keys []httpbpf.Record, seed uint64, pointerOff, masterOff int) (state, session *httpbpf.Record) {
	state = sslState(1, keys, seed, ssl30Random, -1, -1)
	b := make([]byte, httpbpf.SessionBytes)
	rng := rand.New(rand.NewPCG(seed, 2))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	for _, k := range keys {
		if label, _, secret, _ := k.Key(); label == httpbpf.KeyTLS12 {
			copy(b[masterOff:], secret)
		}
	}
	addr := state.Conn + 0x10000 + seed*0x1000 // beside the SSL, as malloc puts it
	m[addr] = b
	binary.LittleEndian.PutUint64(state.Data[pointerOff:], addr)
	return state, &httpbpf.Record{Kind: httpbpf.KindSession, Source: httpbpf.SourceTLS, PID: 1, Conn: state.Conn,
		Seq: uint32(pointerOff), Total: uint32(len(b)), Data: bytes.Clone(b)}
}
