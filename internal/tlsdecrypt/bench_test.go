package tlsdecrypt

import (
	"testing"
)

// benchResponse returns a Conn keyed for a TLS 1.3 AES-128-GCM connection
// (hellos and secrets made up, records sealed by the test's sealer) and a
// 4 KiB response in 10 records of the server, to be fed to it as Read.
func benchResponse(b *testing.B) (hellos [2][]byte, keys *Keys, addKeys func(), response []byte, payload int) {
	random := bigBytes(32, 0x42)
	cSecret, sSecret := bigBytes(32, 1), bigBytes(32, 2)
	ch, sh := synthHellos(random, 0x1301)
	ss := newSealer13(b, 0x1301, sSecret)
	for i := range 10 {
		n := 410
		if i == 9 {
			n = 4096 - 9*410
		}
		response = append(response, ss.seal(23, bigBytes(n, byte(i)), 0)...)
		payload += n
	}
	keys = NewKeys(4)
	addKeys = func() {
		if err := keys.Add(LabelClientTraffic, random, cSecret); err != nil {
			b.Fatal(err)
		}
		if err := keys.Add(LabelServerTraffic, random, sSecret); err != nil {
			b.Fatal(err)
		}
	}
	addKeys()
	return [2][]byte{ch, sh}, keys, addKeys, response, payload
}

// BenchmarkFeed measures decrypting a 4 KiB response streamed in 10 TLS 1.3
// AES-128-GCM records: fed whole, in 1448-byte pieces (TCP segments), and
// as a whole connection (Keys.Add of its two secrets, new Conn, hellos,
// key derivation, response, Close). aead-only is the floor: the same 10 AES-GCM opens, nothing else.
func BenchmarkFeed(b *testing.B) {
	hellos, keys, addKeys, response, payload := benchResponse(b)
	got := 0
	out := func(_ Dir, p []byte, _ int64) { got += len(p) }
	keyed := func(b *testing.B) *Conn {
		c := NewConn(keys)
		for i, h := range hellos {
			if err := c.Feed(Dir(i), h, 0, out); err != nil {
				b.Fatal(err)
			}
		}
		return c
	}
	check := func(b *testing.B) {
		if got != b.N*payload {
			b.Fatalf("decrypted %d bytes, want %d", got, b.N*payload)
		}
	}

	b.Run("whole", func(b *testing.B) {
		c := keyed(b)
		got = 0
		b.SetBytes(int64(payload))
		b.ReportAllocs()
		for b.Loop() {
			c.dirs[Read].seq = 0 // the same records again
			if err := c.Feed(Read, response, 1, out); err != nil {
				b.Fatal(err)
			}
		}
		check(b)
	})
	b.Run("segments", func(b *testing.B) {
		c := keyed(b)
		got = 0
		b.SetBytes(int64(payload))
		b.ReportAllocs()
		for b.Loop() {
			c.dirs[Read].seq = 0
			for p := response; len(p) > 0; {
				n := min(len(p), 1448)
				if err := c.Feed(Read, p[:n], 1, out); err != nil {
					b.Fatal(err)
				}
				p = p[n:]
			}
		}
		check(b)
	})
	b.Run("connection", func(b *testing.B) {
		got = 0
		b.SetBytes(int64(payload))
		b.ReportAllocs()
		for b.Loop() {
			c := keyed(b)
			if err := c.Feed(Read, response, 1, out); err != nil {
				b.Fatal(err)
			}
			c.Close() // forgets the secrets: log them again, as the next connection would
			addKeys()
		}
		check(b)
	})
	b.Run("aead-only", func(b *testing.B) {
		c := keyed(b)
		if err := c.Feed(Read, response, 1, out); err != nil { // keys the direction
			b.Fatal(err)
		}
		d := &c.dirs[Read]
		buf := make([]byte, 0, maxCiphertext2)
		nonce := new([12]byte)
		b.SetBytes(int64(payload))
		b.ReportAllocs()
		for b.Loop() {
			var seq uint64
			for p := response; len(p) > 0; seq++ {
				n := 5 + (int(p[3])<<8 | int(p[4]))
				*nonce = d.iv
				for i := range 8 {
					nonce[4+i] ^= byte(seq >> (56 - 8*i))
				}
				if _, err := d.aead.Open(buf[:0], nonce[:], p[5:n], p[:5]); err != nil {
					b.Fatal(err)
				}
				p = p[n:]
			}
		}
	})
}
