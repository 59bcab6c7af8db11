package tlsdecrypt

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// capture is one endpoint's socket bytes with the secrets of its
// connection and what crossed it.
type capture struct {
	name     string
	events   []event
	log      string // NSS key log of the connection
	isClient bool   // the endpoint is the client: Write carries the client's bytes
	wrote    []byte
	read     []byte
	hashLen  int
}

// goCaptures runs a TLS 1.3 session between Go's client and server
// (TLS_AES_128_GCM_SHA256: Go picks it and allows no other choice) and
// returns both endpoints' captures.
func goCaptures(t testing.TB) []capture {
	s := runSession(t, scenario{clientWrites: [][]byte{httpRequest, bigBytes(3000, 1)}, serverWrites: [][]byte{httpResponse, bigBytes(5000, 2)}})
	require.Equal(t, uint16(tls.TLS_AES_128_GCM_SHA256), s.state.CipherSuite)
	return []capture{
		{"go/client", s.client, s.clientLog, true, s.clientSent, s.serverSent, 32},
		{"go/server", s.server, s.serverLog, false, s.serverSent, s.clientSent, 32},
	}
}

// opensslCapture runs Go's client against `openssl s_server` restricted to
// suite, and returns the client's capture with the server's key log, which
// holds every secret OpenSSL derives (EXPORTER_SECRET too, which Go does
// not log). The client writes a line and the server answers one.
func opensslCapture(t *testing.T, suite string, hashLen int) capture {
	t.Helper()
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		testutil.SkipOrFail(t, "no openssl binary (scripts/install-test-deps.sh installs it)")
	}
	testCerts(t)
	dir := t.TempDir()
	certFile, keyFile, keyLogFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "keys")
	require.NoError(t, os.WriteFile(certFile, certPEM, 0o600))
	require.NoError(t, os.WriteFile(keyFile, keyPEM, 0o600))
	cmd := exec.Command(openssl, "s_server", "-accept", "127.0.0.1:0", "-naccept", "1",
		"-cert", certFile, "-key", keyFile, "-tls1_3", "-ciphersuites", suite, "-keylogfile", keyLogFile)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	var out testutil.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	defer func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	accept := regexp.MustCompile(`ACCEPT 127\.0\.0\.1:(\d+)`)
	waitFor(t, "ACCEPT", func() bool { return accept.MatchString(out.String()) }, &out)

	raw, err := net.Dial("tcp", "127.0.0.1:"+accept.FindStringSubmatch(out.String())[1])
	require.NoError(t, err)
	defer raw.Close()
	rec := &recorder{Conn: raw}
	conn := tls.Client(rec, &tls.Config{RootCAs: rootPool, ServerName: "tlsdecrypt.test", MinVersion: tls.VersionTLS13})
	require.NoError(t, conn.SetDeadline(time.Now().Add(30*time.Second)))
	require.NoError(t, conn.Handshake())
	require.Equal(t, suite, tls.CipherSuiteName(conn.ConnectionState().CipherSuite))
	ping, pong := "ping from the Go client\n", "pong from openssl s_server\n"
	_, err = io.WriteString(conn, ping)
	require.NoError(t, err)
	waitFor(t, "the client's line at the server", func() bool { return strings.Contains(out.String(), ping) }, &out)
	_, err = io.WriteString(stdin, pong)
	require.NoError(t, err)
	got, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, pong, got)
	_ = conn.Close()
	log, err := os.ReadFile(keyLogFile)
	require.NoError(t, err)
	return capture{"openssl/" + suite, rec.snapshot(), string(log), true, []byte(ping), []byte(pong), hashLen}
}

// secretsByLabel returns the secrets of a key log by label.
func secretsByLabel(t testing.TB, log string) map[string][]byte {
	m := make(map[string][]byte)
	for _, l := range parseKeyLog(t, log) {
		m[l.label] = l.secret
	}
	return m
}

// Where the test region puts what it holds, as OpenSSL's connection object
// does: each secret at the start of a 64-byte array whose rest is zero,
// the server's application traffic secret right after the client's. The
// decoys come first, where the search meets them before the secrets.
const (
	regionSize      = 4096
	atClientRandom  = 200
	atClientHS      = 1000 // CLIENT_HANDSHAKE_TRAFFIC_SECRET
	atServerHS      = atClientHS + 64
	atExporter      = atServerHS + 64 // EXPORTER_SECRET, where logged
	atClientTraffic = 3001
	atServerTraffic = atClientTraffic + 64
)

// testRegion returns a 4 KiB region, random (seeded) or zero, holding
// the given bytes at the given offsets, each in a zeroed 64-byte array.
func testRegion(random bool, seed uint64, place map[int][]byte) []byte {
	region := make([]byte, regionSize)
	if random {
		_, _ = rand.NewChaCha8([32]byte{byte(seed)}).Read(region)
	}
	for at, v := range place {
		clear(region[at : at+64])
		copy(region[at:], v)
	}
	return region
}

// heldCopy returns a copy of c's held records, per direction.
func heldCopy(c *Conn) [2][]byte {
	return [2][]byte{bytes.Clone(c.dirs[Write].held), bytes.Clone(c.dirs[Read].held)}
}

// TestFindTrafficSecret: real TLS 1.3 captures, fed to a Conn whose Keys
// lacks their secrets; the search over a region holding the secrets behind
// decoys finds each direction's, changing nothing in the Conn, and with
// them the Conn decrypts what crossed.
func TestFindTrafficSecret(t *testing.T) {
	caps := goCaptures(t)
	for _, s := range []struct {
		suite   string
		hashLen int
	}{{"TLS_AES_128_GCM_SHA256", 32}, {"TLS_AES_256_GCM_SHA384", 48}, {"TLS_CHACHA20_POLY1305_SHA256", 32}} {
		t.Run("openssl-session/"+s.suite, func(t *testing.T) { caps = append(caps, opensslCapture(t, s.suite, s.hashLen)) })
	}
	for _, cp := range caps {
		for _, random := range []bool{true, false} {
			fill := map[bool]string{true: "random", false: "zero"}[random]
			t.Run(cp.name+"/"+fill, func(t *testing.T) {
				sec := secretsByLabel(t, cp.log)
				clientTraffic, serverTraffic := sec[LabelClientTraffic], sec[LabelServerTraffic]
				require.Len(t, clientTraffic, cp.hashLen)
				require.Len(t, serverTraffic, cp.hashLen)

				keys := NewKeys(8)
				c := NewConn(keys)
				var k collector
				require.NoError(t, feedEvents(c, cp.events, &k))
				require.True(t, c.Waiting(), "records wait for the secrets")
				require.Equal(t, cp.hashLen, c.SecretLen())
				random32, ok := c.ClientRandom()
				require.True(t, ok)

				place := map[int][]byte{
					atClientRandom:  random32[:],
					atClientHS:      sec["CLIENT_HANDSHAKE_TRAFFIC_SECRET"],
					atServerHS:      sec["SERVER_HANDSHAKE_TRAFFIC_SECRET"],
					atClientTraffic: clientTraffic,
					atServerTraffic: serverTraffic,
				}
				require.Len(t, place[atClientHS], cp.hashLen, "the key log has the handshake secrets")
				require.Len(t, place[atServerHS], cp.hashLen)
				if e := sec["EXPORTER_SECRET"]; e != nil {
					place[atExporter] = e
				}
				region := testRegion(random, 1, place)

				// Which direction carries whose bytes.
				clientDir, serverDir := Write, Read
				if !cp.isClient {
					clientDir, serverDir = Read, Write
				}
				// The handshake secrets decrypt each direction's first
				// encrypted record: decoys the search must pass over.
				for dir, hs := range map[Dir][]byte{clientDir: place[atClientHS], serverDir: place[atServerHS]} {
					require.True(t, opensAsRecord0(t, c, dir, hs), "%s: the handshake secret opens the direction's first record", dir)
				}

				before, held := heldCopy(c), c.held
				for _, w := range []struct {
					dir   Dir
					label string
					at    int
				}{{clientDir, LabelClientTraffic, atClientTraffic}, {serverDir, LabelServerTraffic, atServerTraffic}} {
					off, ok := c.FindTrafficSecret(w.dir, region)
					require.True(t, ok, "%s: found", w.dir)
					require.Equal(t, w.at, off, "%s: offset of the %s", w.dir, w.label)
					// Twice: the search changed nothing that alters it.
					off, ok = c.FindTrafficSecret(w.dir, region)
					require.True(t, ok)
					require.Equal(t, w.at, off)
				}
				require.Equal(t, before, heldCopy(c), "the held records stay held, unchanged")
				require.Equal(t, held, c.held)
				require.True(t, c.Waiting())
				require.Empty(t, k.pieces, "no plaintext went out")

				// Without the secrets in it, the region yields nothing.
				empty := bytes.Clone(region)
				clear(empty[atClientTraffic : atServerTraffic+64])
				for _, dir := range []Dir{Write, Read} {
					_, ok := c.FindTrafficSecret(dir, empty)
					require.False(t, ok, "%s: region without the secrets", dir)
				}

				require.NoError(t, keys.Add(LabelClientTraffic, random32[:], region[atClientTraffic:atClientTraffic+c.SecretLen()]))
				require.NoError(t, keys.Add(LabelServerTraffic, random32[:], region[atServerTraffic:atServerTraffic+c.SecretLen()]))
				require.NoError(t, c.Retry(k.out))
				require.False(t, c.Waiting())
				require.Equal(t, cp.wrote, k.text(Write), "written plaintext")
				require.Equal(t, cp.read, k.text(Read), "read plaintext")

				// The same pieces, with the same ts, as with the key log's
				// secrets known from the start.
				all := NewKeys(8)
				loadKeys(t, all, cp.log)
				requireSamePieces(t, decodeEvents(t, all, cp.events), &k)

				// Keyed, the directions are not searched.
				for _, dir := range []Dir{Write, Read} {
					_, ok := c.FindTrafficSecret(dir, region)
					require.False(t, ok, "%s: keyed", dir)
				}
			})
		}
	}
}

// opensAsRecord0 reports whether secret, as a traffic secret, decrypts the
// first encrypted record c holds in dir as record 0.
func opensAsRecord0(t *testing.T, c *Conn, dir Dir, secret []byte) bool {
	t.Helper()
	held := c.dirs[dir].held
	for off := 0; off < len(held); {
		hdr := held[off+8 : off+heldOverhead]
		n := int(hdr[3])<<8 | int(hdr[4])
		body := held[off+heldOverhead : off+heldOverhead+n]
		off += heldOverhead + n
		if hdr[0] == typeApplicationData {
			key, err := expandLabel(c.suite.hash, secret, "key", c.suite.keyLen)
			require.NoError(t, err)
			iv, err := expandLabel(c.suite.hash, secret, "iv", 12)
			require.NoError(t, err)
			aead, err := newAEAD(c.suite, key)
			require.NoError(t, err)
			_, err = aead.Open(nil, iv, body, hdr)
			return err == nil
		}
	}
	return false
}

// TestFindTrafficSecretNotFound: the cases that return false, and the
// Conn decrypting as before after them.
func TestFindTrafficSecretNotFound(t *testing.T) {
	cp := goCaptures(t)[0] // the client's
	sec := secretsByLabel(t, cp.log)
	ct, st := sec[LabelClientTraffic], sec[LabelServerTraffic]
	region := testRegion(true, 2, map[int][]byte{atClientTraffic: ct, atServerTraffic: st})
	var writes, reads []event
	for _, e := range cp.events {
		if e.dir == Write {
			writes = append(writes, e)
		} else {
			reads = append(reads, e)
		}
	}
	// The ClientHello and ServerHello records alone.
	hellos := []event{{Write, firstRecord(writes)}, {Read, firstRecord(reads)}}
	full := NewKeys(8)
	loadKeys(t, full, cp.log)
	want := decodeEvents(t, full, cp.events)

	for _, tc := range []struct {
		name   string
		setup  func(t testing.TB, c *Conn) // feeds c
		dir    Dir
		region []byte
	}{
		{"no secret in region", feedAll(cp.events), Write, testRegion(true, 2, map[int][]byte{atClientHS: sec["CLIENT_HANDSHAKE_TRAFFIC_SECRET"]})},
		{"the other direction's secret only", feedAll(cp.events), Read, testRegion(true, 2, map[int][]byte{atClientTraffic: ct})},
		{"region shorter than the secret", feedAll(cp.events), Write, ct[:31]},
		{"empty region", feedAll(cp.events), Write, nil},
		{"before the ServerHello", feedAll(writes), Write, region},
		{"nothing held", feedAll(hellos), Read, region},
		{"invalid direction", feedAll(cp.events), Dir(2), region},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewConn(NewKeys(8))
			tc.setup(t, c)
			before := heldCopy(c)
			_, ok := c.FindTrafficSecret(tc.dir, tc.region)
			require.False(t, ok)
			require.Equal(t, before, heldCopy(c))
		})
	}

	// A region of exactly the secret: offset 0; one byte short: none.
	c := NewConn(NewKeys(8))
	feedAll(cp.events)(t, c)
	for _, r := range []struct {
		region []byte
		off    int
		ok     bool
	}{{ct, 0, true}, {ct[:31], 0, false}, {ct[1:], 0, false}, {append(bytes.Clone(ct), 0), 0, true}, {append([]byte{ct[0]}, ct...), 1, true}} {
		off, ok := c.FindTrafficSecret(Write, r.region)
		require.Equal(t, r.ok, ok, "region % x", r.region)
		require.Equal(t, r.off, off, "region % x", r.region)
	}

	// Before the ServerHello, then after it: the same Conn finds the
	// secrets, and decrypts as if never searched.
	keys := NewKeys(8)
	c = NewConn(keys)
	var k collector
	for i, e := range cp.events {
		if e.dir == Write {
			require.NoError(t, c.Feed(e.dir, e.data, evTS(i), k.out))
		}
	}
	require.Zero(t, c.SecretLen())
	_, ok := c.FindTrafficSecret(Write, region)
	require.False(t, ok, "before the ServerHello")
	for i, e := range cp.events {
		if e.dir == Read {
			require.NoError(t, c.Feed(e.dir, e.data, evTS(i), k.out))
		}
	}
	require.Equal(t, 32, c.SecretLen())
	for dir, at := range map[Dir]int{Write: atClientTraffic, Read: atServerTraffic} {
		off, ok := c.FindTrafficSecret(dir, region)
		require.True(t, ok)
		require.Equal(t, at, off)
		_, ok = c.FindTrafficSecret(dir, region[:at+31])
		require.False(t, ok, "the secret cut short")
	}
	loadKeys(t, keys, cp.log)
	require.NoError(t, c.Retry(k.out))
	require.False(t, c.Waiting())
	require.Equal(t, cp.wrote, k.text(Write))
	require.Equal(t, cp.read, k.text(Read))
	requireSamePieces(t, want, &k)

	// One direction keyed from the key log: it is not searched, the other
	// is.
	keys = NewKeys(8)
	require.NoError(t, keys.Add(LabelClientTraffic, parseKeyLog(t, cp.log)[0].random, ct))
	c = NewConn(keys)
	feedAll(cp.events)(t, c)
	_, ok = c.FindTrafficSecret(Write, region)
	require.False(t, ok, "keyed direction")
	off, ok := c.FindTrafficSecret(Read, region)
	require.True(t, ok)
	require.Equal(t, atServerTraffic, off)

	// Failed and closed Conns.
	c = NewConn(NewKeys(8))
	feedAll(cp.events)(t, c)
	c.Close()
	_, ok = c.FindTrafficSecret(Write, region)
	require.False(t, ok, "closed")
	require.Zero(t, c.SecretLen(), "closed")
	c = NewConn(NewKeys(8))
	feedAll(writes)(t, c)
	require.ErrorIs(t, c.Feed(Read, []byte("HTTP/1.1 200 OK\r\n"), 1, nil), ErrNotTLS)
	_, ok = c.FindTrafficSecret(Write, region)
	require.False(t, ok, "failed")
}

// firstRecord returns the first record of the bytes of events.
func firstRecord(events []event) []byte {
	var b []byte
	for _, e := range events {
		b = append(b, e.data...)
	}
	return b[:5+(int(b[3])<<8|int(b[4]))]
}

// feedAll returns a setup that feeds events to a Conn.
func feedAll(events []event) func(testing.TB, *Conn) {
	return func(t testing.TB, c *Conn) {
		t.Helper()
		require.NoError(t, feedEvents(c, events, &collector{}))
	}
}

// requireSamePieces checks that got has want's pieces, with the same ts,
// in the same order within each direction (Retry emits one direction's
// held records before the other's).
func requireSamePieces(t *testing.T, want, got *collector) {
	t.Helper()
	summary := func(k *collector, dir Dir) []string {
		var s []string
		for _, p := range k.pieces {
			if p.dir == dir {
				s = append(s, fmt.Sprintf("%d bytes %x at %d", len(p.data), sha256.Sum256(p.data), p.ts))
			}
		}
		return s
	}
	for _, dir := range []Dir{Write, Read} {
		require.Equal(t, summary(want, dir), summary(got, dir), "%s pieces", dir)
	}
}

// TestFindTrafficSecretTLS12: a TLS 1.2 connection has no traffic secret
// to find, even with its master secret in the region.
func TestFindTrafficSecretTLS12(t *testing.T) {
	id := tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
	s := runSession(t, scenario{clientWrites: [][]byte{httpRequest}, serverWrites: [][]byte{httpResponse}, client: tls12(id), server: tls12(id)})
	require.Equal(t, uint16(tls.VersionTLS12), s.state.Version)
	master := secretsByLabel(t, s.clientLog)[LabelTLS12]
	require.Len(t, master, 48)
	c := NewConn(NewKeys(8))
	feedAll(s.client)(t, c)
	require.True(t, c.Waiting())
	require.Zero(t, c.SecretLen())
	region := testRegion(true, 3, map[int][]byte{atClientTraffic: master, atServerTraffic: master[:32], 100: master[16:]})
	for _, dir := range []Dir{Write, Read} {
		_, ok := c.FindTrafficSecret(dir, region)
		require.False(t, ok, "%s", dir)
	}
}

// TestSecretLen: 0 until the ServerHello, then the suite's hash length.
func TestSecretLen(t *testing.T) {
	random := bigBytes(32, 7)
	for _, tc := range []struct {
		id   uint16
		want int
	}{{0x1301, 32}, {0x1302, 48}, {0x1303, 32}} {
		ch, sh := synthHellos(random, tc.id)
		c := NewConn(nil)
		require.Zero(t, c.SecretLen(), "new")
		require.NoError(t, c.Feed(Write, ch, 1, nil))
		require.Zero(t, c.SecretLen(), "after the ClientHello")
		require.NoError(t, c.Feed(Read, sh, 1, nil))
		require.Equal(t, tc.want, c.SecretLen(), "suite 0x%04x", tc.id)
		c.Close()
		require.Zero(t, c.SecretLen(), "closed")
	}
	cp := goCaptures(t)[0]
	c := NewConn(nil)
	feedAll(cp.events)(t, c)
	require.Equal(t, 32, c.SecretLen(), "Go's TLS 1.3 session")
}

// TestFindTrafficSecretRecordShapes covers first records Go's client and
// server do not make: 0-RTT (early data under the early traffic secret,
// then the Finished under the handshake secret at sequence 0 after it),
// post-handshake authentication and a KeyUpdate as the first
// application-key record. The records are sealed by the test (see
// sealer13), in the client's direction; the region holds the early,
// handshake and application traffic secrets in that order.
func TestFindTrafficSecretRecordShapes(t *testing.T) {
	type rec struct {
		key     int // 0: early, 1: handshake, 2: application
		inner   byte
		content []byte
	}
	finished := append([]byte{20, 0, 0, 32}, bigBytes(32, 5)...)
	eoed := []byte{5, 0, 0, 0}
	hsCert := []byte{11, 0, 0, 4, 0, 0, 0, 0}         // empty context, no certificates
	postCert := []byte{11, 0, 0, 5, 1, 0x42, 0, 0, 0} // context 0x42
	postCertReq := []byte{13, 0, 0, 3, 1, 0x42, 0, 0} // as the server would send it; any direction tries it
	keyUpdate := []byte{24, 0, 0, 1, 0}
	for _, tc := range []struct {
		name string
		recs []rec
		want int // the key whose secret is found, or -1
		pad  int // zeros after each record's content type
	}{
		{"0-RTT", []rec{{0, 23, []byte("early data")}, {0, 22, eoed}, {1, 22, finished}, {2, 23, []byte("request")}}, 2, 0},
		{"0-RTT without early data", []rec{{0, 22, eoed}, {1, 22, finished}, {2, 23, []byte("request")}}, 2, 0},
		{"0-RTT rejected, client certificate", []rec{{0, 23, []byte("early data")}, {1, 22, hsCert}, {1, 22, finished}, {2, 21, []byte{1, 0}}}, 2, 0},
		{"post-handshake certificate", []rec{{1, 22, finished}, {2, 22, postCert}, {2, 23, []byte("request")}}, 2, 0},
		{"post-handshake certificate request", []rec{{1, 22, finished}, {2, 22, postCertReq}}, 2, 0},
		{"key update first", []rec{{1, 22, finished}, {2, 22, keyUpdate}, {2, 23, []byte("request")}}, 2, 0},
		{"padded", []rec{{1, 22, finished}, {2, 23, []byte("request")}}, 2, 40},
		{"handshake only", []rec{{0, 23, []byte("early data")}, {0, 22, eoed}, {1, 22, finished}}, -1, 0},
		{"early data only", []rec{{0, 23, []byte("early data")}}, -1, 0},
	} {
		for _, id := range []uint16{0x1301, 0x1302, 0x1303} {
			t.Run(fmt.Sprintf("%s/0x%04x", tc.name, id), func(t *testing.T) {
				hl := 32
				if id == 0x1302 {
					hl = 48
				}
				random := bigBytes(32, 9)
				ch, sh := synthHellos(random, id)
				secrets := [3][]byte{bigBytes(hl, 1), bigBytes(hl, 2), bigBytes(hl, 3)}
				sealers := [3]*sealer13{}
				for i, s := range secrets {
					sealers[i] = newSealer13(t, id, s)
				}
				c := NewConn(NewKeys(2))
				require.NoError(t, c.Feed(Write, ch, 1, nil))
				require.NoError(t, c.Feed(Read, sh, 1, nil))
				for _, r := range tc.recs {
					require.NoError(t, c.Feed(Write, sealers[r.key].seal(r.inner, r.content, tc.pad), 1, nil))
				}
				at := [3]int{100, 1000, 3001}
				region := testRegion(true, 4, map[int][]byte{at[0]: secrets[0], at[1]: secrets[1], at[2]: secrets[2]})
				off, ok := c.FindTrafficSecret(Write, region)
				if tc.want < 0 {
					require.False(t, ok, "found at %d", off)
					return
				}
				require.True(t, ok)
				require.Equal(t, at[tc.want], off)
			})
		}
	}
}

// TestFindTrafficSecretKeyDerivation: the search's HKDF-Expand-Label is
// the package's.
func TestFindTrafficSecretKeyDerivation(t *testing.T) {
	for _, id := range []uint16{0x1301, 0x1302, 0x1303} {
		s := lookupSuite(id, versionTLS13)
		tr := newKeyTrial(s)
		for seed := range byte(4) {
			secret := bigBytes(s.hashLen, seed)
			for _, l := range []struct {
				label string
				n     int
				info  []byte
			}{{"key", s.keyLen, tr.infoKey}, {"iv", s.ivLen, tr.infoIV}} {
				want, err := expandLabel(s.hash, secret, l.label, l.n)
				require.NoError(t, err)
				got := make([]byte, l.n)
				tr.expand(got, secret, l.info)
				require.Equal(t, want, got, "suite 0x%04x %s", id, l.label)
			}
		}
		tr.zero()
		require.Equal(t, [128]byte{}, tr.pad)
	}
	// RFC 8448 section 3: the client application traffic secret's write
	// key and IV.
	s := lookupSuite(0x1301, versionTLS13)
	tr := newKeyTrial(s)
	secret := unhex(t, rfc8448ClientTrafficSecret)
	tr.expand(tr.key[:16], secret, tr.infoKey)
	tr.expand(tr.iv[:], secret, tr.infoIV)
	require.Equal(t, "17422dda596ed5d9acd890e3c63f5051", hex.EncodeToString(tr.key[:16]))
	require.Equal(t, "5b78923dee08579033e523d9", hex.EncodeToString(tr.iv[:]))
}

// BenchmarkFindTrafficSecret searches a region for each direction's
// secret of the client's capture of a Go TLS 1.3 session
// (TLS_AES_128_GCM_SHA256): a 4 KiB region with the secrets near its end
// (about 4000 candidates), and the 64-byte array of the secret alone (the
// secret at its start, found at the first candidate).
func BenchmarkFindTrafficSecret(b *testing.B) {
	cp := goCaptures(b)[0]
	sec := secretsByLabel(b, cp.log)
	c := NewConn(NewKeys(8))
	feedAll(cp.events)(b, c)
	if !c.Waiting() {
		b.Fatal("nothing held")
	}
	const clientAt, serverAt = regionSize - 128, regionSize - 64
	region := testRegion(true, 5, map[int][]byte{clientAt: sec[LabelClientTraffic], serverAt: sec[LabelServerTraffic]})
	for _, bc := range []struct {
		name   string
		dir    Dir
		region []byte
		want   int
	}{
		{"4KiB/write", Write, region, clientAt},
		{"4KiB/read", Read, region, serverAt},
		{"64B/write", Write, region[clientAt : clientAt+64], 0},
		{"64B/read", Read, region[serverAt:], 0},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				off, ok := c.FindTrafficSecret(bc.dir, bc.region)
				if !ok || off != bc.want {
					b.Fatalf("got %d, %v; want %d", off, ok, bc.want)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(bc.want+1), "ns/candidate")
		})
	}
}

// TestFindTrafficSecretSkipBound: the search tries the records Feed would
// skip to reach the first application-key record, and no further: with
// the secret it finds, Feed decrypts; where it finds none, Feed gives up.
func TestFindTrafficSecretSkipBound(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int // handshake records before the application record
		size  int // content bytes of each
		found bool
	}{
		{"32 records", maxSkipRecords, 100, true},
		{"33 records", maxSkipRecords + 1, 100, false},
		{"64 KiB", 4, 16000, true},  // 4 records of 16022 bytes
		{"78 KiB", 5, 16000, false}, // 5 of them: over 64 KiB
	} {
		t.Run(tc.name, func(t *testing.T) {
			random := bigBytes(32, 11)
			ch, sh := synthHellos(random, 0x1301)
			hsSecret, appSecret := bigBytes(32, 1), bigBytes(32, 2)
			hs, app := newSealer13(t, 0x1301, hsSecret), newSealer13(t, 0x1301, appSecret)
			keys := NewKeys(1)
			c := NewConn(keys)
			require.NoError(t, c.Feed(Write, ch, 1, nil))
			require.NoError(t, c.Feed(Read, sh, 1, nil))
			for i := range tc.n {
				require.NoError(t, c.Feed(Write, hs.seal(22, append([]byte{8, 0, 0, 0}, bigBytes(tc.size-4, byte(i))...), 0), 1, nil))
			}
			require.NoError(t, c.Feed(Write, app.seal(23, []byte("request"), 0), 1, nil))
			region := testRegion(true, 6, map[int][]byte{500: appSecret})
			off, ok := c.FindTrafficSecret(Write, region)
			require.Equal(t, tc.found, ok)
			require.NoError(t, keys.Add(LabelClientTraffic, random, appSecret))
			var k collector
			err := c.Retry(k.out)
			if tc.found {
				require.Equal(t, 500, off)
				require.NoError(t, err)
				require.Equal(t, "request", string(k.text(Write)))
			} else {
				require.ErrorIs(t, err, ErrDecrypt, "Feed does not reach the record either")
			}
		})
	}
}
