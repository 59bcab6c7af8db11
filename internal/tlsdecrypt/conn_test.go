package tlsdecrypt

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Application payloads of the scenarios.
var (
	httpRequest  = []byte("GET /v1/models HTTP/1.1\r\nHost: tlsdecrypt.test\r\nUser-Agent: test\r\n\r\n")
	httpResponse = []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 17\r\n\r\n{\"data\":\"models\"}")
)

// payloads returns the data scenarios every version runs.
func payloads() []scenario {
	var smallC, smallS [][]byte
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		smallC = append(smallC, bigBytes(1+r.IntN(64), byte(i)))
		smallS = append(smallS, bigBytes(1+r.IntN(64), byte(i+100)))
	}
	h2 := func(n int, seed byte) [][]byte { // HTTP/2 DATA frames: 9-byte header, 16 KiB payload
		var w [][]byte
		for i := range n {
			w = append(w, bigBytes(9+16384, seed+byte(i)))
		}
		return w
	}
	return []scenario{
		{name: "http", clientWrites: [][]byte{httpRequest}, serverWrites: [][]byte{httpResponse}},
		{name: "many-small", clientWrites: smallC, serverWrites: smallS},
		{name: "h2-frames", clientWrites: h2(3, 1), serverWrites: h2(5, 2)},
		{name: "1MiB", clientWrites: [][]byte{bigBytes(1<<20, 3)}, serverWrites: [][]byte{bigBytes(1<<20, 4)}},
		{name: "server-first", serverFirst: true, serverWrites: [][]byte{[]byte("220 banner\r\n"), bigBytes(5000, 5)}, clientWrites: [][]byte{[]byte("EHLO x\r\n")}},
	}
}

// checkSession decodes both endpoints' captures with their own key logs
// and compares the plaintext with what the applications wrote.
func checkSession(t *testing.T, s *session) {
	t.Helper()
	for _, ep := range s.endpoints() {
		keys := NewKeys(8)
		loadKeys(t, keys, ep.log)
		c := NewConn(keys)
		var k collector
		require.NoError(t, feedEvents(c, ep.events, &k), "%s capture", ep.name)
		require.False(t, c.Waiting(), "%s capture: records still held", ep.name)
		require.True(t, bytes.Equal(ep.wrote, k.text(Write)), "%s capture: written plaintext: got %d bytes, want %d", ep.name, len(k.text(Write)), len(ep.wrote))
		require.True(t, bytes.Equal(ep.ready, k.text(Read)), "%s capture: read plaintext: got %d bytes, want %d", ep.name, len(k.text(Read)), len(ep.ready))
		random, ok := c.ClientRandom()
		require.True(t, ok, "%s capture: client random", ep.name)
		require.Contains(t, strings.ToLower(ep.log), fmt.Sprintf("%x", random[:]), "%s capture: client random is the key log's", ep.name)
		c.Close()
		require.Zero(t, keys.Len(), "Close forgets the connection's secrets")
	}
}

func tls12(suite uint16) func(*tls.Config) {
	return func(c *tls.Config) {
		c.MaxVersion = tls.VersionTLS12
		c.CipherSuites = []uint16{suite}
	}
}

func TestTLS13RealHandshakes(t *testing.T) {
	for _, sc := range payloads() {
		t.Run(sc.name, func(t *testing.T) {
			s := runSession(t, sc)
			require.Equal(t, uint16(tls.VersionTLS13), s.state.Version)
			checkSession(t, s)
		})
	}
}

func TestTLS12RealHandshakes(t *testing.T) {
	suites := []uint16{
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
		tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
		tls.TLS_RSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_RSA_WITH_AES_256_GCM_SHA384,
	}
	for _, id := range suites {
		for _, sc := range payloads() {
			if sc.name == "1MiB" && id != tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 && id != tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 {
				continue // two suites carry the large transfer
			}
			t.Run(fmt.Sprintf("%s/%s", tls.CipherSuiteName(id), sc.name), func(t *testing.T) {
				sc.client, sc.server = tls12(id), tls12(id)
				s := runSession(t, sc)
				require.Equal(t, uint16(tls.VersionTLS12), s.state.Version)
				require.Equal(t, id, s.state.CipherSuite)
				checkSession(t, s)
			})
		}
	}
}

// TestHelloRetryRequest: a server that accepts only P-256 makes Go's client
// (which sends X25519 shares first) retry; the decoder waits for the
// second ServerHello.
func TestHelloRetryRequest(t *testing.T) {
	sc := scenario{
		clientWrites: [][]byte{httpRequest}, serverWrites: [][]byte{httpResponse},
		client: func(c *tls.Config) { c.CurvePreferences = []tls.CurveID{tls.X25519, tls.CurveP256} },
		server: func(c *tls.Config) { c.CurvePreferences = []tls.CurveID{tls.CurveP256} },
	}
	s := runSession(t, sc)
	require.Equal(t, tls.CurveP256, s.state.CurveID)
	// The capture must hold a HelloRetryRequest, or this test tests nothing.
	var serverBytes []byte
	for _, e := range s.client {
		if e.dir == Read {
			serverBytes = append(serverBytes, e.data...)
		}
	}
	require.True(t, bytes.Contains(serverBytes, helloRetryRandom[:]), "the server sent a HelloRetryRequest")
	checkSession(t, s)
}

// TestTLS13Resumption: a resumed (PSK) TLS 1.3 connection logs its traffic
// secrets too.
func TestTLS13Resumption(t *testing.T) {
	cache := tls.NewLRUClientSessionCache(4)
	sc := scenario{clientWrites: [][]byte{httpRequest}, serverWrites: [][]byte{httpResponse}, session: cache,
		// Both servers must share the ticket key.
		server: func(c *tls.Config) { c.SetSessionTicketKeys([][32]byte{{1, 2, 3}}) }}
	first := runSession(t, sc)
	require.False(t, first.state.DidResume)
	second := runSession(t, sc)
	require.True(t, second.state.DidResume, "second connection resumed")
	checkSession(t, second)
}

// splitFeed feeds the events to a Conn in pieces chosen by next (given the
// bytes left of the event, it returns how many to feed), keeping each
// event's ts, and interleaving directions as order says.
func splitFeed(t *testing.T, keys *Keys, events []event, next func(left int) int) *collector {
	t.Helper()
	c := NewConn(keys)
	var k collector
	for i, e := range events {
		for p := e.data; len(p) > 0; {
			n := next(len(p))
			require.NoError(t, c.Feed(e.dir, p[:n], evTS(i), k.out))
			p = p[n:]
		}
	}
	require.False(t, c.Waiting())
	return &k
}

func TestSplits(t *testing.T) {
	for _, sc := range []scenario{
		{name: "tls13", clientWrites: [][]byte{httpRequest, bigBytes(40000, 1)}, serverWrites: [][]byte{httpResponse, bigBytes(30000, 2)}},
		{name: "tls12-chacha", clientWrites: [][]byte{httpRequest, bigBytes(40000, 1)}, serverWrites: [][]byte{httpResponse},
			client: tls12(tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256), server: tls12(tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256)},
		{name: "tls12-gcm", clientWrites: [][]byte{httpRequest}, serverWrites: [][]byte{httpResponse, bigBytes(30000, 2)},
			client: tls12(tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256), server: tls12(tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256)},
	} {
		t.Run(sc.name, func(t *testing.T) {
			s := runSession(t, sc)
			keys := NewKeys(8)
			loadKeys(t, keys, s.clientLog)
			whole := decodeEvents(t, keys, s.client)
			require.Equal(t, s.clientSent, whole.text(Write))
			require.Equal(t, s.serverSent, whole.text(Read))

			oneByte := splitFeed(t, keys, s.client, func(int) int { return 1 })
			require.Equal(t, s.clientSent, oneByte.text(Write), "one byte at a time")
			require.Equal(t, s.serverSent, oneByte.text(Read), "one byte at a time")
			require.Equal(t, whole.pieces, oneByte.pieces, "the same pieces with the same ts")

			for seed := range uint64(20) {
				r := rand.New(rand.NewPCG(seed, 7))
				got := splitFeed(t, keys, s.client, func(left int) int { return 1 + r.IntN(min(left, 1+r.IntN(20000))) })
				require.Equal(t, s.clientSent, got.text(Write), "seed %d", seed)
				require.Equal(t, s.serverSent, got.text(Read), "seed %d", seed)
			}
		})
	}
}

// TestInterleavings feeds one direction's bytes wholly before the other's,
// both ways, and in a random merge that keeps each direction's order.
func TestInterleavings(t *testing.T) {
	for _, sc := range []scenario{
		{name: "tls13", clientWrites: [][]byte{httpRequest, []byte("second request")}, serverWrites: [][]byte{httpResponse, bigBytes(20000, 9)}},
		{name: "tls12", clientWrites: [][]byte{httpRequest, []byte("second request")}, serverWrites: [][]byte{httpResponse, bigBytes(20000, 9)},
			client: tls12(tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384), server: tls12(tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384)},
	} {
		t.Run(sc.name, func(t *testing.T) {
			s := runSession(t, sc)
			for _, ep := range s.endpoints() {
				keys := NewKeys(8)
				loadKeys(t, keys, ep.log)
				var w, r []event
				for _, e := range ep.events {
					if e.dir == Write {
						w = append(w, e)
					} else {
						r = append(r, e)
					}
				}
				rng := rand.New(rand.NewPCG(3, 4))
				var merged []event
				for wi, ri := 0, 0; wi < len(w) || ri < len(r); {
					if ri == len(r) || (wi < len(w) && rng.IntN(2) == 0) {
						merged = append(merged, w[wi])
						wi++
					} else {
						merged = append(merged, r[ri])
						ri++
					}
				}
				for name, order := range map[string][]event{
					"writes first": append(append([]event(nil), w...), r...),
					"reads first":  append(append([]event(nil), r...), w...),
					"random merge": merged,
				} {
					k := decodeEvents(t, keys, order)
					require.Equal(t, ep.wrote, k.text(Write), "%s capture, %s", ep.name, name)
					require.Equal(t, ep.ready, k.text(Read), "%s capture, %s", ep.name, name)
				}
			}
		})
	}
}

// TestLateKeys feeds every byte before any secret is known, then adds the
// key log and retries: the same pieces, with the same ts, come out.
func TestLateKeys(t *testing.T) {
	for _, sc := range []scenario{
		{name: "tls13", clientWrites: [][]byte{httpRequest, bigBytes(30000, 1)}, serverWrites: [][]byte{httpResponse, bigBytes(50000, 2)}},
		{name: "tls12", clientWrites: [][]byte{httpRequest, bigBytes(30000, 1)}, serverWrites: [][]byte{httpResponse, bigBytes(50000, 2)},
			client: tls12(tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384), server: tls12(tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384)},
	} {
		t.Run(sc.name, func(t *testing.T) {
			s := runSession(t, sc)
			early := NewKeys(8)
			loadKeys(t, early, s.clientLog)
			want := decodeEvents(t, early, s.client)

			late := NewKeys(8)
			c := NewConn(late)
			var k collector
			require.NoError(t, feedEvents(c, s.client, &k))
			require.True(t, c.Waiting(), "records wait for their secrets")
			require.Empty(t, k.pieces, "nothing decrypts without secrets")
			require.NoError(t, c.Retry(k.out), "a retry with no new secret")
			require.True(t, c.Waiting())
			loadKeys(t, late, s.clientLog)
			require.NoError(t, c.Retry(k.out))
			require.False(t, c.Waiting())
			require.Equal(t, want.pieces, k.pieces, "the same pieces and ts as with the keys known from the start")
			require.Equal(t, s.clientSent, k.text(Write))
			require.Equal(t, s.serverSent, k.text(Read))
			// The ts of each piece is one of the events' and never decreases
			// within a direction.
			var last [2]int64
			for _, p := range k.pieces {
				require.GreaterOrEqual(t, p.ts, last[p.dir])
				require.LessOrEqual(t, p.ts, evTS(len(s.client)-1))
				last[p.dir] = p.ts
			}

			// Secrets arriving between Feeds: the held records go out at the
			// next Feed, before its own.
			mid := NewKeys(8)
			c = NewConn(mid)
			k = collector{}
			half := len(s.client) / 2
			require.NoError(t, feedEvents(c, s.client[:half], &k))
			loadKeys(t, mid, s.clientLog)
			for i := half; i < len(s.client); i++ {
				require.NoError(t, c.Feed(s.client[i].dir, s.client[i].data, evTS(i), k.out))
			}
			require.False(t, c.Waiting())
			require.Equal(t, want.pieces, k.pieces)
		})
	}
}

// TestErrors: the conditions that end a Conn, each with its sentinel, and
// stickiness.
func TestErrors(t *testing.T) {
	tls13 := runSession(t, scenario{clientWrites: [][]byte{httpRequest, bigBytes(1<<20, 1)}, serverWrites: [][]byte{httpResponse}})
	small13 := runSession(t, scenario{clientWrites: [][]byte{httpRequest}, serverWrites: [][]byte{httpResponse}})
	gcm12 := runSession(t, scenario{clientWrites: [][]byte{httpRequest}, serverWrites: [][]byte{httpResponse},
		client: tls12(tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256), server: tls12(tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)})

	feedAll := func(keys *Keys, events []event) (*Conn, *collector, error) {
		c := NewConn(keys)
		var k collector
		return c, &k, feedEvents(c, events, &k)
	}
	// corrupt returns the key log with every secret's first byte flipped.
	corrupt := func(log string) *Keys {
		keys := NewKeys(8)
		for _, l := range parseKeyLog(t, log) {
			l.secret[0] ^= 0xff
			require.NoError(t, keys.Add(l.label, l.random, l.secret))
		}
		return keys
	}
	sticky := func(t *testing.T, c *Conn, want error) {
		t.Helper()
		called := false
		out := func(Dir, []byte, int64) { called = true }
		for _, d := range []Dir{Write, Read} {
			err := c.Feed(d, []byte{22, 3, 3, 0, 0}, 1, out)
			require.ErrorIs(t, err, want, "later Feed")
		}
		require.ErrorIs(t, c.Retry(out), want, "Retry")
		require.False(t, called, "nothing comes out after the error")
		require.False(t, c.Waiting())
	}

	t.Run("not TLS", func(t *testing.T) {
		c := NewConn(NewKeys(1))
		err := c.Feed(Write, []byte("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"), 1, nil)
		require.ErrorIs(t, err, ErrNotTLS)
		require.Contains(t, err.Error(), "47 45 54 20 2f", "the error shows the bytes")
		sticky(t, c, ErrNotTLS)

		// A handshake record whose first message is neither hello.
		c = NewConn(nil)
		require.ErrorIs(t, c.Feed(Read, []byte{22, 3, 1, 0, 4, 11, 0, 0, 0}, 1, nil), ErrNotTLS)
		// Both directions claiming to be the client.
		c = NewConn(nil)
		ch := tls13.client[0].data
		require.NoError(t, c.Feed(Write, ch, 1, nil))
		require.ErrorIs(t, c.Feed(Read, ch, 2, nil), ErrNotTLS)
	})

	t.Run("wrong TLS 1.3 secret", func(t *testing.T) {
		c, k, err := feedAll(corrupt(tls13.clientLog), tls13.client)
		require.ErrorIs(t, err, ErrDecrypt)
		require.Contains(t, err.Error(), "write", "the 1 MiB direction trips the bound")
		require.Empty(t, k.pieces)
		sticky(t, c, ErrDecrypt)

		// A short connection stays under the skip bound: no plaintext, no
		// error (documented).
		c, k, err = feedAll(corrupt(small13.clientLog), small13.client)
		require.NoError(t, err)
		require.Empty(t, k.pieces)
		require.False(t, c.Waiting())
	})

	t.Run("TLS 1.3 failure after the first success", func(t *testing.T) {
		events := append([]event(nil), tls13.client...)
		// Flip a byte in the middle of a record of the big upload (crypto/tls
		// writes each record with its own write(2)).
		var writes []int
		for i, e := range events {
			if e.dir == Write && len(e.data) > 1000 {
				writes = append(writes, i)
			}
		}
		require.Greater(t, len(writes), 10)
		i := writes[len(writes)/2]
		d := bytes.Clone(events[i].data)
		d[len(d)/2] ^= 1
		events[i].data = d
		keys := NewKeys(8)
		loadKeys(t, keys, tls13.clientLog)
		_, k, err := feedAll(keys, events)
		require.ErrorIs(t, err, ErrDecrypt)
		require.Contains(t, err.Error(), "failed authentication")
		require.Equal(t, httpRequest, k.text(Write)[:len(httpRequest)], "what came before the damage came out")
	})

	t.Run("wrong TLS 1.2 secret", func(t *testing.T) {
		c, k, err := feedAll(corrupt(gcm12.clientLog), gcm12.client)
		require.ErrorIs(t, err, ErrDecrypt)
		require.Contains(t, err.Error(), "0xc02f")
		require.Empty(t, k.pieces)
		sticky(t, c, ErrDecrypt)
	})

	t.Run("TLS 1.2 CBC suite", func(t *testing.T) {
		cbc := tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA
		s := runSession(t, scenario{clientWrites: [][]byte{httpRequest}, serverWrites: [][]byte{httpResponse}, client: tls12(cbc), server: tls12(cbc)})
		keys := NewKeys(8)
		loadKeys(t, keys, s.clientLog)
		c, _, err := feedAll(keys, s.client)
		require.ErrorIs(t, err, ErrUnsupported)
		require.Contains(t, err.Error(), "0xc013", "the error names the suite")
		sticky(t, c, ErrUnsupported)
	})

	t.Run("record too long", func(t *testing.T) {
		// Before the version is known, the TLS 1.2 bound applies from the
		// first header on.
		c := NewConn(nil)
		require.NoError(t, c.Feed(Write, []byte{22, 3, 1, 0x48, 0x00}, 1, nil), "2^14+2048 is allowed")
		c = NewConn(nil)
		err := c.Feed(Write, []byte{22, 3, 1, 0x48, 0x01}, 1, nil)
		require.ErrorIs(t, err, ErrRecordTooLong)
		sticky(t, c, ErrRecordTooLong)

		// Once TLS 1.3 is known, 2^14+256.
		keys := NewKeys(8)
		loadKeys(t, keys, small13.clientLog)
		c, _, err = feedAll(keys, small13.client)
		require.NoError(t, err)
		c = NewConn(keys)
		require.NoError(t, feedEvents(c, small13.client[:len(small13.client)-1], &collector{}))
		require.NoError(t, c.Feed(Write, []byte{23, 3, 3, 0x41, 0x00}, 9, nil), "2^14+256 is allowed")
		c = NewConn(keys)
		require.NoError(t, feedEvents(c, small13.client[:len(small13.client)-1], &collector{}))
		err = c.Feed(Write, []byte{23, 3, 3, 0x41, 0x01}, 9, nil)
		require.ErrorIs(t, err, ErrRecordTooLong)
		require.Contains(t, err.Error(), "TLS 1.3")
	})

	t.Run("held over MaxHeld", func(t *testing.T) {
		c, k, err := feedAll(NewKeys(8), tls13.client)
		require.ErrorIs(t, err, ErrHeldFull)
		require.Contains(t, err.Error(), LabelClientTraffic, "the error says which secret is missing")
		require.Empty(t, k.pieces)
		require.LessOrEqual(t, c.footprint(), footprintBound)
		sticky(t, c, ErrHeldFull)
	})

	t.Run("unsupported version", func(t *testing.T) {
		// A ServerHello for TLS 1.1 (no supported_versions).
		sh := []byte{2, 0, 0, 38, 3, 2}
		sh = append(sh, make([]byte, 32)...)
		sh = append(sh, 0, 0xc0, 0x13, 0)
		c := NewConn(nil)
		err := c.Feed(Read, record(22, 0x0301, sh), 1, nil)
		require.ErrorIs(t, err, ErrUnsupported)
		require.Contains(t, err.Error(), "0x0302")
	})

	t.Run("Feed after Close", func(t *testing.T) {
		c := NewConn(nil)
		c.Close()
		require.ErrorIs(t, c.Feed(Write, []byte{22}, 1, nil), ErrClosed)
	})

	t.Run("invalid direction", func(t *testing.T) {
		c := NewConn(nil)
		err := c.Feed(Dir(2), []byte{22}, 1, nil)
		require.Error(t, err)
		require.NoError(t, c.Feed(Write, tls13.client[0].data, 1, nil), "an invalid direction is not sticky")
	})
}

// record frames body as one TLS record.
func record(typ byte, version uint16, body []byte) []byte {
	b := []byte{typ, byte(version >> 8), byte(version), byte(len(body) >> 8), byte(len(body))}
	return append(b, body...)
}

func TestKeys(t *testing.T) {
	k := NewKeys(2)
	r := func(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }
	s32, s48 := bytes.Repeat([]byte{7}, 32), bytes.Repeat([]byte{9}, 48)

	require.NoError(t, k.Add("CLIENT_HANDSHAKE_TRAFFIC_SECRET", r(1), s32), "unknown labels are ignored")
	require.NoError(t, k.Add("EXPORTER_SECRET", []byte{1}, nil), "even malformed")
	require.Zero(t, k.Len())

	err := k.Add(LabelClientTraffic, r(1)[:31], s32)
	require.ErrorContains(t, err, "client random is 31 bytes")
	err = k.Add(LabelServerTraffic, r(1), s32[:20])
	require.ErrorContains(t, err, "traffic secret is 20 bytes")
	err = k.Add(LabelTLS12, r(1), s32)
	require.ErrorContains(t, err, "master secret is 32 bytes")
	require.Zero(t, k.Len())

	require.NoError(t, k.Add(LabelClientTraffic, r(1), s32))
	require.NoError(t, k.Add(LabelServerTraffic, r(1), s48))
	require.NoError(t, k.Add(LabelTLS12, r(2), s48))
	require.Equal(t, 2, k.Len())
	var r1 [32]byte
	copy(r1[:], r(1))
	require.Equal(t, s48, k.secret(&r1, secretServer))
	e1 := k.entries[r1]

	require.NoError(t, k.Add(LabelTLS12, r(3), s48), "a third random drops the oldest")
	require.Equal(t, 2, k.Len())
	require.EqualValues(t, 1, k.Dropped())
	require.Nil(t, k.secret(&r1, secretClient))
	require.Equal(t, [48]byte{}, e1.secrets[secretServer], "the dropped secrets are zeroed")

	var r3 [32]byte
	copy(r3[:], r(3))
	e3 := k.entries[r3]
	require.True(t, k.Has(r3))
	require.False(t, k.Has(r1), "dropped")
	k.Forget(r3)
	require.False(t, k.Has(r3))
	require.Equal(t, 1, k.Len())
	require.Equal(t, [48]byte{}, e3.secrets[secretMaster], "forgotten secrets are zeroed")
	require.EqualValues(t, 1, k.Dropped(), "Forget is not a drop")
	k.Forget(r3) // twice is fine

	require.Equal(t, 1, NewKeys(0).max)
}

// footprintBound is the most a Conn's buffers may hold: two partial
// records, a plaintext buffer, two ServerHello buffers, and held bytes
// (whose buffers may be up to twice what they hold).
const footprintBound = 3*maxCiphertext2 + 2*maxServerHello + 2*MaxHeld + 8<<10

// TestNoAllocsSteadyState: once keyed, a record costs no allocation.
func TestNoAllocsSteadyState(t *testing.T) {
	for _, sc := range []scenario{
		{name: "tls13"},
		{name: "tls12-gcm", client: tls12(tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256), server: tls12(tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)},
		{name: "tls12-chacha", client: tls12(tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256), server: tls12(tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256)},
	} {
		t.Run(sc.name, func(t *testing.T) {
			const runs = 100
			for i := range runs + 20 {
				sc.serverWrites = append(sc.serverWrites, bigBytes(1000, byte(i)))
			}
			sc.clientWrites = [][]byte{httpRequest}
			s := runSession(t, sc)
			keys := NewKeys(8)
			loadKeys(t, keys, s.clientLog)

			// Split the client's reads into records; feed the handshake and
			// the first records, then one record per run, some whole and
			// some in two pieces.
			var in []byte
			for _, e := range s.client {
				if e.dir == Read {
					in = append(in, e.data...)
				}
			}
			var recs [][]byte
			for len(in) >= 5 {
				n := 5 + (int(in[3])<<8 | int(in[4]))
				if n > len(in) {
					break
				}
				recs = append(recs, in[:n])
				in = in[n:]
			}
			require.Greater(t, len(recs), runs+10)
			c := NewConn(keys)
			var k collector
			for _, e := range s.client {
				if e.dir == Write {
					require.NoError(t, c.Feed(Write, e.data, 1, k.out))
				}
			}
			first := len(recs) - runs - 3
			for _, r := range recs[:first] {
				require.NoError(t, c.Feed(Read, r, 1, k.out))
			}
			n, got := first, 0
			out := func(_ Dir, p []byte, _ int64) { got += len(p) }
			allocs := testing.AllocsPerRun(runs, func() {
				r := recs[n]
				n++
				if n%2 == 0 {
					_ = c.Feed(Read, r, 2, out)
					return
				}
				_ = c.Feed(Read, r[:len(r)/2], 2, out)
				_ = c.Feed(Read, r[len(r)/2:], 2, out)
			})
			require.NoError(t, c.Feed(Read, nil, 3, out))
			require.Equal(t, (runs+1)*1000, got, "each run decrypted a 1000-byte record")
			require.Zero(t, allocs, "allocations per record")
		})
	}
}

func TestDirString(t *testing.T) {
	require.Equal(t, "write", Write.String())
	require.Equal(t, "read", Read.String())
	require.Equal(t, "Dir(7)", Dir(7).String())
	require.True(t, errors.Is(fmt.Errorf("%w: x", ErrHeldFull), ErrHeldFull))
}
