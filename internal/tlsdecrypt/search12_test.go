package tlsdecrypt

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"hash"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// The TLS 1.2 suites the tests run between Go's client and server.
var suites12 = []struct {
	name string
	id   uint16
}{
	{"ECDHE_ECDSA_AES_128_GCM_SHA256", tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256},
	{"ECDHE_RSA_AES_128_GCM_SHA256", tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256},
	{"ECDHE_RSA_AES_256_GCM_SHA384", tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384},
	{"ECDHE_ECDSA_CHACHA20_POLY1305_SHA256", tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256},
}

// session12 runs a TLS 1.2 session of suite id between Go's client and
// server, each writing a few KiB.
func session12(t testing.TB, id uint16) *session {
	t.Helper()
	s := runSession(t, scenario{
		clientWrites: [][]byte{httpRequest, bigBytes(3000, 1)},
		serverWrites: [][]byte{httpResponse, bigBytes(5000, 2)},
		client:       tls12(id), server: tls12(id),
	})
	require.Equal(t, uint16(tls.VersionTLS12), s.state.Version)
	require.Equal(t, id, s.state.CipherSuite)
	return s
}

// masterOf returns the master secret of an endpoint's key log.
func masterOf(t testing.TB, log string) []byte {
	t.Helper()
	m := secretsByLabel(t, log)[LabelTLS12]
	require.Len(t, m, 48)
	return m
}

// Where the 512-byte test region puts what it holds: the decoys before the
// master secret, which is near the end.
const (
	region12Size     = 512
	at12ClientRandom = 16
	at12ServerRandom = 64
	at12Flipped      = 130 // the master secret with one bit flipped
	at12Other        = 200 // another session's master secret
	at12Master       = 430
)

// region12 returns a 512-byte region, random (seeded) or zero, holding the
// given bytes at the given offsets.
func region12(random bool, seed uint64, place map[int][]byte) []byte {
	region := make([]byte, region12Size)
	if random {
		_, _ = rand.NewChaCha8([32]byte{byte(seed), 12}).Read(region)
	}
	for at, v := range place {
		copy(region[at:], v)
	}
	return region
}

// decoyRegion returns the test region for c's connection: its client and
// server randoms, its master secret with a bit flipped, other (another
// session's master secret) and, where master is not nil, master.
func decoyRegion(c *Conn, random bool, seed uint64, master, other []byte) []byte {
	cr, _ := c.ClientRandom()
	place := map[int][]byte{
		at12ClientRandom: cr[:],
		at12ServerRandom: bytes.Clone(c.serverRandom[:]),
		at12Other:        other,
	}
	if master != nil {
		flipped := bytes.Clone(master)
		flipped[47] ^= 1
		place[at12Flipped] = flipped
		place[at12Master] = master
	}
	return region12(random, seed, place)
}

// TestFindMasterSecret: real TLS 1.2 sessions, each endpoint's capture
// fed to a Conn whose Keys lack the master secret; the search over a region
// holding it behind decoys finds it, changing nothing in the Conn, and with
// it the Conn decrypts what crossed, as with the key log from the start.
func TestFindMasterSecret(t *testing.T) {
	sessions := make([]*session, len(suites12))
	for i, s := range suites12 {
		sessions[i] = session12(t, s.id)
	}
	for i, s := range suites12 {
		other := masterOf(t, sessions[(i+1)%len(sessions)].clientLog)
		for _, ep := range sessions[i].endpoints() {
			for _, random := range []bool{true, false} {
				fill := map[bool]string{true: "random", false: "zero"}[random]
				t.Run(s.name+"/"+ep.name+"/"+fill, func(t *testing.T) {
					master := masterOf(t, ep.log)
					require.NotEqual(t, master, other)
					keys := NewKeys(8)
					c := NewConn(keys)
					var k collector
					require.NoError(t, feedEvents(c, ep.events, &k))
					require.True(t, c.Waiting(), "records wait for the master secret")
					require.Equal(t, VersionTLS12, c.Version())
					require.Equal(t, s.id, c.suite.id)
					for _, dir := range []Dir{Write, Read} {
						_, ok := finishedCandidate(c.suite, &c.dirs[dir])
						require.True(t, ok, "%s holds its Finished", dir)
					}
					random32, ok := c.ClientRandom()
					require.True(t, ok)
					region := decoyRegion(c, random, uint64(i), master, other)
					require.Len(t, region, 512)

					before, held := heldCopy(c), c.held
					for range 2 { // twice: the search changed nothing that alters it
						off, ok := c.FindMasterSecret(region)
						require.True(t, ok)
						require.Equal(t, at12Master, off)
					}
					require.Equal(t, before, heldCopy(c), "the held records stay held, unchanged")
					require.Equal(t, held, c.held)
					require.True(t, c.Waiting())
					require.Empty(t, k.pieces, "no plaintext went out")
					require.Equal(t, 0, keys.Len(), "nothing added to Keys")

					// Without the master secret, the decoys yield nothing.
					_, ok = c.FindMasterSecret(decoyRegion(c, random, uint64(i), nil, other))
					require.False(t, ok, "decoys only")
					// A region of the secret alone: offset 0.
					off, ok := c.FindMasterSecret(master)
					require.True(t, ok)
					require.Zero(t, off)

					require.NoError(t, keys.Add(LabelTLS12, random32[:], region[at12Master:at12Master+48]))
					require.NoError(t, c.Retry(k.out))
					require.False(t, c.Waiting())
					require.Equal(t, ep.wrote, k.text(Write), "written plaintext")
					require.Equal(t, ep.ready, k.text(Read), "read plaintext")
					all := NewKeys(8)
					loadKeys(t, all, ep.log)
					requireSamePieces(t, decodeEvents(t, all, ep.events), &k)

					// Keyed in both directions: not searched.
					_, ok = c.FindMasterSecret(region)
					require.False(t, ok, "keyed")
				})
			}
		}
	}
}

// streamRecord is a record's place in a direction's byte stream.
type streamRecord struct {
	typ      byte
	off, end int // header start, body end
}

// streamRecords returns the records of dir's bytes in events.
func streamRecords(events []event, dir Dir) []streamRecord {
	var b []byte
	for _, e := range events {
		if e.dir == dir {
			b = append(b, e.data...)
		}
	}
	var recs []streamRecord
	for off := 0; off+5 <= len(b); {
		end := off + 5 + int(binary.BigEndian.Uint16(b[off+3:]))
		recs = append(recs, streamRecord{b[off], off, end})
		off = end
	}
	return recs
}

// ccsIndex returns the index of the first ChangeCipherSpec record of recs.
func ccsIndex(t testing.TB, recs []streamRecord) int {
	t.Helper()
	for i, r := range recs {
		if r.typ == typeChangeCipherSpec {
			require.Less(t, i+1, len(recs), "a record follows the ChangeCipherSpec")
			return i
		}
	}
	t.Fatal("no ChangeCipherSpec")
	return -1
}

// editEvents returns events with each direction's stream cut to limit[dir]
// bytes (-1: all) and the byte at flip[dir] (-1: none) inverted, in the
// original order.
func editEvents(events []event, limit, flip [2]int) []event {
	var out []event
	var pos [2]int
	for _, e := range events {
		d := e.dir
		data := bytes.Clone(e.data)
		if f := flip[d] - pos[d]; flip[d] >= 0 && f >= 0 && f < len(data) {
			data[f] ^= 0xff
		}
		if limit[d] >= 0 {
			data = data[:max(0, min(len(data), limit[d]-pos[d]))]
		}
		pos[d] += len(e.data)
		if len(data) > 0 {
			out = append(out, event{d, data})
		}
	}
	return out
}

// TestFindMasterSecretDirections: the search tries the Finished of either
// direction, whichever is held, and a direction whose Finished does not
// open does not stop it finding the secret with the other's; with neither
// held after the ChangeCipherSpec, it finds nothing.
func TestFindMasterSecretDirections(t *testing.T) {
	for _, s := range []struct {
		name string
		id   uint16
	}{suites12[0], suites12[3]} { // explicit nonce and none
		sess := session12(t, s.id)
		other := masterOf(t, session12(t, s.id).clientLog)
		for _, ep := range sess.endpoints() {
			master := masterOf(t, ep.log)
			recs := [2][]streamRecord{streamRecords(ep.events, Write), streamRecords(ep.events, Read)}
			var ccs, fin [2]streamRecord
			for d := range recs {
				i := ccsIndex(t, recs[d])
				ccs[d], fin[d] = recs[d][i], recs[d][i+1]
				require.EqualValues(t, typeHandshake, fin[d].typ)
			}
			finBody := func(d Dir) int { return fin[d].off + 10 } // a byte of the Finished's body
			all := [2]int{-1, -1}
			for _, tc := range []struct {
				name        string
				limit, flip [2]int
				found       bool
			}{
				{"both", all, all, true},
				{"write's Finished only", [2]int{-1, ccs[Read].off}, all, true},
				{"read's Finished only", [2]int{ccs[Write].off, -1}, all, true},
				{"write's Finished only, after read's CCS", [2]int{-1, ccs[Read].end}, all, true},
				{"write's Finished corrupt", all, [2]int{finBody(Write), -1}, true},
				{"read's Finished corrupt", all, [2]int{-1, finBody(Read)}, true},
				{"both corrupt", all, [2]int{finBody(Write), finBody(Read)}, false},
				{"write's Finished only, corrupt", [2]int{-1, ccs[Read].off}, [2]int{finBody(Write), -1}, false},
				{"before the ChangeCipherSpecs", [2]int{ccs[Write].off, ccs[Read].off}, all, false},
				{"nothing held after the ChangeCipherSpecs", [2]int{ccs[Write].end, ccs[Read].end}, all, false},
				{"half a Finished each", [2]int{fin[Write].end - 1, fin[Read].end - 1}, all, false},
			} {
				t.Run(fmt.Sprintf("%s/%s/%s", s.name, ep.name, tc.name), func(t *testing.T) {
					c := NewConn(NewKeys(8))
					feedAll(editEvents(ep.events, tc.limit, tc.flip))(t, c)
					require.Equal(t, VersionTLS12, c.Version())
					region := decoyRegion(c, true, 7, master, other)
					before := heldCopy(c)
					off, ok := c.FindMasterSecret(region)
					require.Equal(t, tc.found, ok, "found at %d", off)
					if ok {
						require.Equal(t, at12Master, off)
					}
					require.Equal(t, before, heldCopy(c))
				})
			}
		}
	}
}

// TestFindMasterSecretNotFound: the cases that return false at once, and
// a Conn searched before it could be decrypting as if never searched.
func TestFindMasterSecretNotFound(t *testing.T) {
	sess := session12(t, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256)
	ep := sess.endpoints()[0] // the client's
	master := masterOf(t, ep.log)
	var writes, reads []event
	for _, e := range ep.events {
		if e.dir == Write {
			writes = append(writes, e)
		} else {
			reads = append(reads, e)
		}
	}
	c := NewConn(NewKeys(8))
	feedAll(ep.events)(t, c)
	region := decoyRegion(c, true, 9, master, bigBytes(48, 3))

	// TLS 1.3: no master secret, whatever the region holds.
	cp := goCaptures(t)[0]
	c13 := NewConn(NewKeys(8))
	feedAll(cp.events)(t, c13)
	require.True(t, c13.Waiting())
	require.Equal(t, VersionTLS13, c13.Version())
	sec := secretsByLabel(t, cp.log)
	region13 := region12(true, 10, map[int][]byte{100: sec[LabelClientTraffic], 200: sec[LabelServerTraffic], 300: master})
	_, ok := c13.FindMasterSecret(region13)
	require.False(t, ok, "TLS 1.3")

	for _, tc := range []struct {
		name   string
		events []event
		region []byte
	}{
		{"region without it", ep.events, decoyRegion(c, true, 9, nil, bigBytes(48, 3))},
		{"region one byte short", ep.events, master[:47]},
		{"region missing the first byte", ep.events, master[1:]},
		{"empty region", ep.events, nil},
		{"before the ServerHello", writes, region},
		{"without the ClientHello", reads, region}, // the server's view with only its own bytes
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewConn(NewKeys(8))
			feedAll(tc.events)(t, c)
			before := heldCopy(c)
			_, ok := c.FindMasterSecret(tc.region)
			require.False(t, ok)
			require.Equal(t, before, heldCopy(c))
		})
	}

	// Region edges: the secret at offset 0, at the end, after a run of its
	// first byte.
	for _, r := range []struct {
		region []byte
		off    int
	}{
		{master, 0},
		{append(bytes.Clone(master), 0), 0},
		{append(bytes.Repeat([]byte{master[0]}, 5), master...), 5},
		{append(make([]byte, 100), master...), 100},
	} {
		off, ok := c.FindMasterSecret(r.region)
		require.True(t, ok)
		require.Equal(t, r.off, off)
	}

	// Before the ServerHello, then after it: the same Conn finds the
	// secret, and decrypts as if never searched.
	keys := NewKeys(8)
	c = NewConn(keys)
	var k collector
	for i, e := range ep.events {
		if e.dir == Write {
			require.NoError(t, c.Feed(e.dir, e.data, evTS(i), k.out))
		}
	}
	require.Zero(t, c.Version())
	_, ok = c.FindMasterSecret(region)
	require.False(t, ok, "before the ServerHello")
	for i, e := range ep.events {
		if e.dir == Read {
			require.NoError(t, c.Feed(e.dir, e.data, evTS(i), k.out))
		}
	}
	require.Equal(t, VersionTLS12, c.Version())
	off, ok := c.FindMasterSecret(region)
	require.True(t, ok)
	require.Equal(t, at12Master, off)
	_, ok = c.FindMasterSecret(region[:at12Master+47])
	require.False(t, ok, "the secret cut short")
	require.Empty(t, k.pieces)
	random, _ := c.ClientRandom()
	require.NoError(t, keys.Add(LabelTLS12, random[:], region[off:off+48]))
	require.NoError(t, c.Retry(k.out))
	require.False(t, c.Waiting())
	full := NewKeys(8)
	loadKeys(t, full, ep.log)
	requireSamePieces(t, decodeEvents(t, full, ep.events), &k)

	// Keyed from the start: nothing held, not searched.
	c = NewConn(full)
	feedAll(ep.events)(t, c)
	_, ok = c.FindMasterSecret(region)
	require.False(t, ok, "keyed")

	// Closed and failed Conns.
	c = NewConn(NewKeys(8))
	feedAll(ep.events)(t, c)
	_, ok = c.FindMasterSecret(region)
	require.True(t, ok, "open")
	c.Close()
	_, ok = c.FindMasterSecret(region)
	require.False(t, ok, "closed")
	c = NewConn(NewKeys(8))
	feedAll(ep.events)(t, c)
	require.ErrorIs(t, c.Feed(Read, []byte{0x17, 0x03, 0x03, 0xff, 0xff}, 1, nil), ErrRecordTooLong)
	_, ok = c.FindMasterSecret(region)
	require.False(t, ok, "failed")
}

// TestVersion: 0 until the ServerHello, then its version; 0 again once
// failed or closed.
func TestVersion(t *testing.T) {
	ch, sh := synthHellos(bigBytes(32, 7), 0x1301)
	c := NewConn(nil)
	require.Zero(t, c.Version(), "new")
	require.NoError(t, c.Feed(Write, ch, 1, nil))
	require.Zero(t, c.Version(), "after the ClientHello")
	require.NoError(t, c.Feed(Read, sh, 1, nil))
	require.Equal(t, uint16(0x0304), c.Version())
	c.Close()
	require.Zero(t, c.Version(), "closed")

	sess := session12(t, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384)
	for _, ep := range sess.endpoints() {
		c := NewConn(nil)
		helloDir := Write // the ClientHello's direction
		if ep.name == "server" {
			helloDir = Read
		}
		for _, e := range ep.events {
			if e.dir == helloDir {
				require.NoError(t, c.Feed(e.dir, e.data, 1, nil))
			}
		}
		require.Zero(t, c.Version(), "%s: the client's bytes only", ep.name)
		for _, e := range ep.events {
			if e.dir != helloDir {
				require.NoError(t, c.Feed(e.dir, e.data, 1, nil))
			}
		}
		require.Equal(t, uint16(0x0303), c.Version(), ep.name)
		require.ErrorIs(t, c.Feed(Write, []byte{0x17, 0x02, 0, 0, 0}, 1, nil), ErrNotTLS)
		require.Zero(t, c.Version(), "%s: failed", ep.name)
	}

	cp := goCaptures(t)[1] // the server's
	c = NewConn(nil)
	feedAll(cp.events)(t, c)
	require.Equal(t, uint16(0x0304), c.Version(), "Go's TLS 1.3 session")
}

// refPRF12 is P_hash written plainly with crypto/hmac, to check pHash.
func refPRF12(h func() hash.Hash, secret, seed []byte, n int) []byte {
	mac := func(parts ...[]byte) []byte {
		m := hmac.New(h, secret)
		for _, p := range parts {
			m.Write(p)
		}
		return m.Sum(nil)
	}
	var out []byte
	for a := mac(seed); len(out) < n; a = mac(a) {
		out = append(out, mac(a, seed)...)
	}
	return out[:n]
}

// TestKeyBlock12: the key block the search and Feed derive is the PRF's,
// split as RFC 5246 section 6.3 says; pHash is HMAC for secrets of any
// length, reused across secrets.
func TestKeyBlock12(t *testing.T) {
	sr, cr := [32]byte(bigBytes(32, 1)), [32]byte(bigBytes(32, 2))
	seed := append(append([]byte("key expansion"), sr[:]...), cr[:]...)
	for _, id := range []uint16{0xc02b, 0xc030, 0xcca9} {
		s := lookupSuite(id, versionTLS12)
		p := newPHash(s.hash)
		for i := range byte(3) {
			master := bigBytes(48, i)
			want := refPRF12(s.hash, master, seed, keyBlockLen12(s))
			kb := make([]byte, keyBlockLen12(s))
			p.keyBlock12(kb, master, &sr, &cr)
			require.Equal(t, want, kb, "suite 0x%04x", id)
			key, iv := keys12(s, kb, roleClient)
			require.Equal(t, want[:s.keyLen], key)
			require.Equal(t, want[2*s.keyLen:2*s.keyLen+s.ivLen], iv)
			key, iv = keys12(s, kb, roleServer)
			require.Equal(t, want[s.keyLen:2*s.keyLen], key)
			require.Equal(t, want[2*s.keyLen+s.ivLen:], iv)
		}
		p.zero()
		require.Equal(t, [128]byte{}, p.ipad)
		require.Equal(t, [128]byte{}, p.opad)
		require.Equal(t, [64]byte{}, p.a)
		require.Equal(t, [64]byte{}, p.sum)
	}
	for _, h := range []func() hash.Hash{sha256.New, sha512.New384} {
		// With the pads' hash states saved, and without (hashing them
		// each time, for hashes that cannot save their state).
		saving, plain := newPHash(h), newPHash(h)
		plain.save = nil
		for _, n := range []int{0, 16, 48, 64, 128, 129, 200} { // over the block: hashed first
			secret := bigBytes(n, byte(n))
			want := refPRF12(h, secret, append([]byte("test label"), seed...), 100)
			for _, p := range []*pHash{saving, plain} {
				got := make([]byte, 100)
				p.expand(got, secret, []byte("test label"), seed[:20], seed[20:])
				require.Equal(t, want, got, "secret of %d bytes, states saved: %v", n, p.saved)
			}
			require.True(t, saving.saved)
			require.False(t, plain.saved)
		}
		saving.zero()
		require.Equal(t, [256]byte{}, saving.istate)
		require.Equal(t, [256]byte{}, saving.ostate)
	}

	// The trial zeroes what it derived.
	s := lookupSuite(0xc02b, versionTLS12)
	tr := newMasterTrial(s, &sr, &cr)
	require.False(t, tr.try(bigBytes(48, 1), []finishedRecord{{[]byte{22, 3, 3, 0, 40}, make([]byte, 40), roleClient}}))
	require.NotEqual(t, [12]byte{}, tr.iv)
	tr.zero()
	require.Equal(t, masterTrial{s: s, prf: tr.prf, serverRandom: &sr, clientRandom: &cr}, *tr)
	require.Equal(t, [128]byte{}, tr.prf.ipad)
}

// BenchmarkFindMasterSecret searches a 512-byte region for the master
// secret of the client's capture of a Go TLS 1.2 session, the secret near
// the region's end (448 candidates), both directions' Finished held.
func BenchmarkFindMasterSecret(b *testing.B) {
	for _, s := range []struct {
		name string
		id   uint16
	}{suites12[0], suites12[2], suites12[3]} {
		b.Run(s.name, func(b *testing.B) {
			ep := session12(b, s.id).endpoints()[0]
			c := NewConn(NewKeys(8))
			feedAll(ep.events)(b, c)
			const at = region12Size - 64
			region := region12(true, 11, map[int][]byte{at: masterOf(b, ep.log)})
			b.ReportAllocs()
			for b.Loop() {
				off, ok := c.FindMasterSecret(region)
				if !ok || off != at {
					b.Fatalf("got %d, %v; want %d", off, ok, at)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(at+1), "ns/candidate")
		})
	}
}
