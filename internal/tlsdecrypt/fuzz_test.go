package tlsdecrypt

import (
	"crypto/tls"
	"math/rand/v2"
	"testing"
)

// FuzzConn feeds two directions of arbitrary bytes, in arbitrary pieces
// and interleavings, with secrets of arbitrary content (logged for the
// client random at a ClientHello's place in either direction, some before
// and some after the bytes). It must never panic, must keep its buffers
// under footprintBound, must give out no more plaintext than it was fed,
// and must keep its error once it has one.
func FuzzConn(f *testing.F) {
	for _, sc := range []scenario{
		{clientWrites: [][]byte{httpRequest}, serverWrites: [][]byte{httpResponse}},
		{clientWrites: [][]byte{httpRequest}, serverWrites: [][]byte{httpResponse},
			client: tls12(tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256), server: tls12(tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)},
		{clientWrites: [][]byte{httpRequest}, serverWrites: [][]byte{httpResponse},
			client: tls12(tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256), server: tls12(tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256)},
	} {
		s := runSession(f, sc)
		var w, r []byte
		for _, e := range s.client {
			if e.dir == Write {
				w = append(w, e.data...)
			} else {
				r = append(r, e.data...)
			}
		}
		var secretA, secretB []byte
		for _, l := range parseKeyLog(f, s.clientLog) {
			switch l.label {
			case LabelClientTraffic, LabelTLS12:
				secretA = l.secret
			case LabelServerTraffic:
				secretB = l.secret
			}
		}
		f.Add(w, r, secretA, secretB, uint64(0))
		f.Add(w, r, secretA, secretB, uint64(1))
		f.Add(r, w, secretB, secretA, uint64(2))
	}
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"), []byte{}, []byte{}, []byte{}, uint64(3))
	f.Add([]byte{22, 3, 1, 0, 4, 1, 0, 0, 0}, []byte{22, 3, 3, 0, 4, 2, 0, 0, 0}, []byte{}, []byte{}, uint64(4))

	f.Fuzz(fuzzConnOnce)
}

// fuzzConnOnce is FuzzConn's body.
func fuzzConnOnce(t *testing.T, w, r, secretA, secretB []byte, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed>>32))
	keys := NewKeys(4)
	addKeys := func() {
		for _, b := range [][]byte{w, r} {
			if len(b) < 43 {
				continue
			}
			random := b[11:43] // where a ClientHello record carries it
			_ = keys.Add(LabelClientTraffic, random, fuzzSecret(secretA))
			_ = keys.Add(LabelServerTraffic, random, fuzzSecret(secretB))
			master := make([]byte, 48)
			copy(master, secretA)
			_ = keys.Add(LabelTLS12, random, master)
		}
	}
	lateAt := -1
	if seed%3 == 0 {
		addKeys()
	} else {
		lateAt = rng.IntN(8)
	}
	c := NewConn(keys)
	fed, gotBytes := len(w)+len(r), 0
	out := func(_ Dir, p []byte, _ int64) { gotBytes += len(p) }
	var firstErr error
	check := func(err error) {
		if firstErr == nil {
			firstErr = err
		} else if err != firstErr {
			t.Fatalf("error changed from %v to %v", firstErr, err)
		}
		if n := c.footprint(); n > footprintBound {
			t.Fatalf("footprint %d bytes, over %d", n, footprintBound)
		}
		if gotBytes > fed {
			t.Fatalf("%d bytes of plaintext out of %d fed", gotBytes, fed)
		}
	}
	left := [2][]byte{w, r}
	for step := 0; len(left[0])+len(left[1]) > 0; step++ {
		d := Dir(rng.IntN(2))
		if len(left[d]) == 0 {
			d = 1 - d
		}
		n := 1 + rng.IntN(min(len(left[d]), 1+rng.IntN(4096)))
		err := c.Feed(d, left[d][:n], int64(step), out)
		left[d] = left[d][n:]
		check(err)
		if step == lateAt {
			addKeys()
			check(c.Retry(out))
		}
	}
	if lateAt >= 0 {
		addKeys()
	}
	check(c.Retry(out))
	_ = c.Waiting()
	_, _ = c.ClientRandom()
	c.Close()
	if n := c.footprint(); n != 0 {
		t.Fatalf("footprint %d after Close", n)
	}
}

// fuzzSecret makes a secret of a length Keys.Add accepts from arbitrary
// bytes: 48 bytes from longer input, else 32.
func fuzzSecret(b []byte) []byte {
	n := 32
	if len(b) > 40 {
		n = 48
	}
	s := make([]byte, n)
	copy(s, b)
	return s
}
