package tlsdecrypt

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/chacha20poly1305"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	require.NoError(t, err)
	return b
}

// RFC 8448 section 3, "Simple 1-RTT Handshake": the records on the wire and
// the application traffic secrets.
const (
	rfc8448ClientHello = `
		01 00 00 c0 03 03 cb 34 ec b1 e7 81 63 ba 1c 38 c6 da cb 19 6a 6d ff a2
		1a 8d 99 12 ec 18 a2 ef 62 83 02 4d ec e7 00 00 06 13 01 13 03 13 02 01
		00 00 91 00 00 00 0b 00 09 00 00 06 73 65 72 76 65 72 ff 01 00 01 00 00
		0a 00 14 00 12 00 1d 00 17 00 18 00 19 01 00 01 01 01 02 01 03 01 04 00
		23 00 00 00 33 00 26 00 24 00 1d 00 20 99 38 1d e5 60 e4 bd 43 d2 3d 8e
		43 5a 7d ba fe b3 c0 6e 51 c1 3c ae 4d 54 13 69 1e 52 9a af 2c 00 2b 00
		03 02 03 04 00 0d 00 20 00 1e 04 03 05 03 06 03 02 03 08 04 08 05 08 06
		04 01 05 01 06 01 02 01 04 02 05 02 06 02 02 02 00 2d 00 02 01 01 00 1c
		00 02 40 01`
	rfc8448ServerHelloRecord = `
		16 03 03 00 5a 02 00 00 56 03 03 a6 af 06 a4 12 18 60 dc 5e 6e 60 24 9c
		d3 4c 95 93 0c 8a c5 cb 14 34 da c1 55 77 2e d3 e2 69 28 00 13 01 00 00
		2e 00 33 00 24 00 1d 00 20 c9 82 88 76 11 20 95 fe 66 76 2b db f7 c6 72
		e1 56 d6 cc 25 3b 83 3d f1 dd 69 b1 b0 4e 75 1f 0f 00 2b 00 02 03 04`
	// EncryptedExtensions, Certificate, CertificateVerify, Finished, under
	// the server handshake key.
	rfc8448ServerFlightRecord = `
		17 03 03 02 a2 d1 ff 33 4a 56 f5 bf f6 59 4a 07 cc 87 b5 80 23 3f 50 0f
		45 e4 89 e7 f3 3a f3 5e df 78 69 fc f4 0a a4 0a a2 b8 ea 73 f8 48 a7 ca
		07 61 2e f9 f9 45 cb 96 0b 40 68 90 51 23 ea 78 b1 11 b4 29 ba 91 91 cd
		05 d2 a3 89 28 0f 52 61 34 aa dc 7f c7 8c 4b 72 9d f8 28 b5 ec f7 b1 3b
		d9 ae fb 0e 57 f2 71 58 5b 8e a9 bb 35 5c 7c 79 02 07 16 cf b9 b1 18 3e
		f3 ab 20 e3 7d 57 a6 b9 d7 47 76 09 ae e6 e1 22 a4 cf 51 42 73 25 25 0c
		7d 0e 50 92 89 44 4c 9b 3a 64 8f 1d 71 03 5d 2e d6 5b 0e 3c dd 0c ba e8
		bf 2d 0b 22 78 12 cb b3 60 98 72 55 cc 74 41 10 c4 53 ba a4 fc d6 10 92
		8d 80 98 10 e4 b7 ed 1a 8f d9 91 f0 6a a6 24 82 04 79 7e 36 a6 a7 3b 70
		a2 55 9c 09 ea d6 86 94 5b a2 46 ab 66 e5 ed d8 04 4b 4c 6d e3 fc f2 a8
		94 41 ac 66 27 2f d8 fb 33 0e f8 19 05 79 b3 68 45 96 c9 60 bd 59 6e ea
		52 0a 56 a8 d6 50 f5 63 aa d2 74 09 96 0d ca 63 d3 e6 88 61 1e a5 e2 2f
		44 15 cf 95 38 d5 1a 20 0c 27 03 42 72 96 8a 26 4e d6 54 0c 84 83 8d 89
		f7 2c 24 46 1a ad 6d 26 f5 9e ca ba 9a cb bb 31 7b 66 d9 02 f4 f2 92 a3
		6a c1 b6 39 c6 37 ce 34 31 17 b6 59 62 22 45 31 7b 49 ee da 0c 62 58 f1
		00 d7 d9 61 ff b1 38 64 7e 92 ea 33 0f ae ea 6d fa 31 c7 a8 4d c3 bd 7e
		1b 7a 6c 71 78 af 36 87 90 18 e3 f2 52 10 7f 24 3d 24 3d c7 33 9d 56 84
		c8 b0 37 8b f3 02 44 da 8c 87 c8 43 f5 e5 6e b4 c5 e8 28 0a 2b 48 05 2c
		f9 3b 16 49 9a 66 db 7c ca 71 e4 59 94 26 f7 d4 61 e6 6f 99 88 2b d8 9f
		c5 08 00 be cc a6 2d 6c 74 11 6d bd 29 72 fd a1 fa 80 f8 5d f8 81 ed be
		5a 37 66 89 36 b3 35 58 3b 59 91 86 dc 5c 69 18 a3 96 fa 48 a1 81 d6 b6
		fa 4f 9d 62 d5 13 af bb 99 2f 2b 99 2f 67 f8 af e6 7f 76 91 3f a3 88 cb
		56 30 c8 ca 01 e0 c6 5d 11 c6 6a 1e 2a c4 c8 59 77 b7 c7 a6 99 9b bf 10
		dc 35 ae 69 f5 51 56 14 63 6c 0b 9b 68 c1 9e d2 e3 1c 0b 3b 66 76 30 38
		eb ba 42 f3 b3 8e dc 03 99 f3 a9 f2 3f aa 63 97 8c 31 7f c9 fa 66 a7 3f
		60 f0 50 4d e9 3b 5b 84 5e 27 55 92 c1 23 35 ee 34 0b bc 4f dd d5 02 78
		40 16 e4 b3 be 7e f0 4d da 49 f4 b4 40 a3 0c b5 d2 af 93 98 28 fd 4a e3
		79 4e 44 f9 4d f5 a6 31 ed e4 2c 17 19 bf da bf 02 53 fe 51 75 be 89 8e
		75 0e dc 53 37 0d 2b`
	rfc8448ClientFinishedRecord = `
		17 03 03 00 35 75 ec 4d c2 38 cc e6 0b 29 80 44 a7 1e 21 9c 56 cc 77 b0
		51 7f e9 b9 3c 7a 4b fc 44 d8 7f 38 f8 03 38 ac 98 fc 46 de b3 84 bd 1c
		ae ac ab 68 67 d7 26 c4 05 46`
	rfc8448NewSessionTicketRecord = `
		17 03 03 00 de 3a 6b 8f 90 41 4a 97 d6 95 9c 34 87 68 0d e5 13 4a 2b 24
		0e 6c ff ac 11 6e 95 d4 1d 6a f8 f6 b5 80 dc f3 d1 1d 63 c7 58 db 28 9a
		01 59 40 25 2f 55 71 3e 06 1d c1 3e 07 88 91 a3 8e fb cf 57 53 ad 8e f1
		70 ad 3c 73 53 d1 6d 9d a7 73 b9 ca 7f 2b 9f a1 b6 c0 d4 a3 d0 3f 75 e0
		9c 30 ba 1e 62 97 2a c4 6f 75 f7 b9 81 be 63 43 9b 29 99 ce 13 06 46 15
		13 98 91 d5 e4 c5 b4 06 f1 6e 3f c1 81 a7 7c a4 75 84 00 25 db 2f 0a 77
		f8 1b 5a b0 5b 94 c0 13 46 75 5f 69 23 2c 86 51 9d 86 cb ee ac 87 aa c3
		47 d1 43 f9 60 5d 64 f6 50 db 4d 02 3e 70 e9 52 ca 49 fe 51 37 12 1c 74
		bc 26 97 68 7e 24 87 46 d6 df 35 30 05 f3 bc e1 86 96 12 9c 81 53 55 6b
		3b 6c 67 79 b3 7b f1 59 85 68 4f`
	rfc8448ClientAppRecord = `
		17 03 03 00 43 a2 3f 70 54 b6 2c 94 d0 af fa fe 82 28 ba 55 cb ef ac ea
		42 f9 14 aa 66 bc ab 3f 2b 98 19 a8 a5 b4 6b 39 5b d5 4a 9a 20 44 1e 2b
		62 97 4e 1f 5a 62 92 a2 97 70 14 bd 1e 3d ea e6 3a ee bb 21 69 49 15 e4`
	rfc8448ServerAppRecord = `
		17 03 03 00 43 2e 93 7e 11 ef 4a c7 40 e5 38 ad 36 00 5f c4 a4 69 32 fc
		32 25 d0 5f 82 aa 1b 36 e3 0e fa f9 7d 90 e6 df fc 60 2d cb 50 1a 59 a8
		fc c4 9c 4b f2 e5 f0 a2 1c 00 47 c2 ab f3 32 54 0d d0 32 e1 67 c2 95 5d`
	rfc8448ClientAlertRecord = `17 03 03 00 13 c9 87 27 60 65 56 66 b7 4d 7f f1 15 3e fd 6d b6 d0 b0 e3`
	rfc8448ServerAlertRecord = `17 03 03 00 13 b5 8f d6 71 66 eb f5 99 d2 47 20 cf be 7e fa 7a 88 64 a9`

	rfc8448ClientTrafficSecret = `9e 40 64 6c e7 9a 7f 9d c0 5a f8 88 9b ce 65 52 87 5a fa 0b 06 df 00 87 f7 92 eb b7 c1 75 04 a5`
	rfc8448ServerTrafficSecret = `a1 1a f9 f0 55 31 f8 56 ad 47 11 6b 45 a9 50 32 82 04 b4 f4 4b fb 6b 3a 4b 4f 1f 3f cb 63 16 43`
)

// TestRFC8448 decrypts the published trace of RFC 8448 section 3 from the
// client's side: the server's encrypted handshake and the client's Finished
// (under handshake keys, not given) are skipped, the NewSessionTicket and
// the 50-byte application data (00 01 .. 31) each way decrypt, and the
// close_notify alerts end both directions.
func TestRFC8448(t *testing.T) {
	ch := unhex(t, rfc8448ClientHello)
	write := [][]byte{record(22, 0x0301, ch), unhex(t, rfc8448ClientFinishedRecord), unhex(t, rfc8448ClientAppRecord), unhex(t, rfc8448ClientAlertRecord)}
	read := [][]byte{unhex(t, rfc8448ServerHelloRecord), unhex(t, rfc8448ServerFlightRecord), unhex(t, rfc8448NewSessionTicketRecord), unhex(t, rfc8448ServerAppRecord), unhex(t, rfc8448ServerAlertRecord)}
	payload := make([]byte, 50)
	for i := range payload {
		payload[i] = byte(i)
	}
	random := ch[6:38]

	for _, late := range []bool{false, true} {
		keys := NewKeys(4)
		add := func() {
			require.NoError(t, keys.Add(LabelClientTraffic, random, unhex(t, rfc8448ClientTrafficSecret)))
			require.NoError(t, keys.Add(LabelServerTraffic, random, unhex(t, rfc8448ServerTrafficSecret)))
		}
		if !late {
			add()
		}
		c := NewConn(keys)
		var k collector
		// The order on the wire: CH, SH + flight, client Finished + data,
		// ticket + data, alerts.
		steps := []struct {
			dir Dir
			rec []byte
		}{{Write, write[0]}, {Read, read[0]}, {Read, read[1]}, {Write, write[1]}, {Write, write[2]}, {Read, read[2]}, {Read, read[3]}, {Write, write[3]}, {Read, read[4]}}
		for i, s := range steps {
			require.NoError(t, c.Feed(s.dir, s.rec, int64(i), k.out))
		}
		if late {
			require.True(t, c.Waiting())
			add()
			require.NoError(t, c.Retry(k.out))
		}
		require.False(t, c.Waiting())
		require.Equal(t, []piece{{Write, payload, 4}, {Read, payload, 6}}, k.pieces, "late keys: %v", late)
		got, ok := c.ClientRandom()
		require.True(t, ok)
		require.Equal(t, random, got[:])
		require.True(t, c.dirs[Write].done && c.dirs[Read].done, "the alerts end both directions")
		require.Equal(t, 1, c.dirs[Write].skipRecs, "the client Finished was skipped")
		require.Equal(t, 1, c.dirs[Read].skipRecs, "the server flight was skipped")
	}
}

// testExpandLabel is HKDF-Expand-Label (RFC 8446 section 7.1) written
// apart from the package's: the HkdfLabel struct encoded field by field.
func testExpandLabel(h func() hash.Hash, secret []byte, label string, n int) []byte {
	var info []byte
	info = binary.BigEndian.AppendUint16(info, uint16(n))
	full := []byte("tls13 " + label)
	info = append(info, byte(len(full)))
	info = append(info, full...)
	info = append(info, 0) // Context: empty
	out, err := hkdf.Expand(h, secret, string(info), n)
	if err != nil {
		panic(err)
	}
	return out
}

// TestExpandLabelRFC8448 checks both HKDF-Expand-Label implementations
// against the application write keys and IVs of RFC 8448 section 3.
func TestExpandLabelRFC8448(t *testing.T) {
	for _, v := range []struct{ secret, key, iv string }{
		{rfc8448ServerTrafficSecret, "9f 02 28 3b 6c 9c 07 ef c2 6b b9 f2 ac 92 e3 56", "cf 78 2b 88 dd 83 54 9a ad f1 e9 84"},
		{rfc8448ClientTrafficSecret, "17 42 2d da 59 6e d5 d9 ac d8 90 e3 c6 3f 50 51", "5b 78 92 3d ee 08 57 90 33 e5 23 d9"},
	} {
		secret := unhex(t, v.secret)
		for name, f := range map[string]func(func() hash.Hash, []byte, string, int) []byte{
			"package": func(h func() hash.Hash, s []byte, l string, n int) []byte {
				b, err := expandLabel(h, s, l, n)
				require.NoError(t, err)
				return b
			},
			"test": testExpandLabel,
		} {
			require.Equal(t, unhex(t, v.key), f(sha256.New, secret, "key", 16), name)
			require.Equal(t, unhex(t, v.iv), f(sha256.New, secret, "iv", 12), name)
		}
	}
}

// TestPRF12 checks the TLS 1.2 PRF against the P_SHA256 and P_SHA384 test
// vectors posted to the IETF TLS list (msg03416), which several TLS
// libraries use.
func TestPRF12(t *testing.T) {
	got := prf12(sha256.New, unhex(t, "9bbe436ba940f017b17652849a71db35"), "test label", unhex(t, "a0ba9f936cda311827a6f796ffd5198c"), 100)
	require.Equal(t, unhex(t, `e3f229ba727be17b8d122620557cd453c2aab21d07c3d495329b52d4e61edb5a
		6b301791e90d35c9c9a46b4e14baf9af0fa022f7077def17abfd3797c0564bab
		4fbc91666e9def9b97fce34f796789baa48082d122ee42c5a72e5a5110fff701
		87347b66`), got)
	got = prf12(sha512.New384, unhex(t, "b80b733d6ceefcdc71566ea48e5567df"), "test label", unhex(t, "cd665cf6a8447dd6ff8b27555edb7465"), 148)
	require.Equal(t, unhex(t, `7b0c18e9ced410ed1804f2cfa34a336a1c14dffb4900bb5fd7942107e81c83cd
		e9ca0faa60be9fe34f82b1233c9146a0e534cb400fed2700884f9dc236f80edd
		8bfa961144c9e8d792eca722a7b32fc3d416d473ebc2c5fd4abfdad05d918425
		9b5bf8cd4d90fa0d31e2dec479e4f1a26066f2eea9a69236a3e52655c9e9aee6
		91c8f3a26854308d5eaa3be85e0990703d73e56f`), got)
}

// sealer13 seals TLS 1.3 records for one direction, keyed and re-keyed by
// the test's own derivation.
type sealer13 struct {
	t       testing.TB
	h       func() hash.Hash
	hashLen int
	keyLen  int
	chacha  bool
	secret  []byte
	aead    cipher.AEAD
	iv      []byte
	seq     uint64
}

func newSealer13(t testing.TB, id uint16, secret []byte) *sealer13 {
	s := &sealer13{t: t, secret: secret}
	switch id {
	case 0x1301:
		s.h, s.hashLen, s.keyLen = sha256.New, 32, 16
	case 0x1302:
		s.h, s.hashLen, s.keyLen = sha512.New384, 48, 32
	case 0x1303:
		s.h, s.hashLen, s.keyLen, s.chacha = sha256.New, 32, 32, true
	}
	s.rekey()
	return s
}

func (s *sealer13) rekey() {
	key := testExpandLabel(s.h, s.secret, "key", s.keyLen)
	s.iv = testExpandLabel(s.h, s.secret, "iv", 12)
	var err error
	if s.chacha {
		s.aead, err = chacha20poly1305.New(key)
	} else {
		var b cipher.Block
		b, err = aes.NewCipher(key)
		require.NoError(s.t, err)
		s.aead, err = cipher.NewGCM(b)
	}
	require.NoError(s.t, err)
	s.seq = 0
}

// update moves to the next traffic secret (RFC 8446 section 7.2).
func (s *sealer13) update() {
	s.secret = testExpandLabel(s.h, s.secret, "traffic upd", s.hashLen)
	s.rekey()
}

// seal returns a record carrying content of the inner type, padded with
// pad zeros.
func (s *sealer13) seal(inner byte, content []byte, pad int) []byte {
	pt := append(append([]byte(nil), content...), inner)
	pt = append(pt, make([]byte, pad)...)
	hdr := []byte{23, 3, 3, 0, 0}
	binary.BigEndian.PutUint16(hdr[3:], uint16(len(pt)+s.aead.Overhead()))
	nonce := append([]byte(nil), s.iv...)
	for i := range 8 {
		nonce[4+i] ^= byte(s.seq >> (56 - 8*i))
	}
	s.seq++
	return s.aead.Seal(hdr, nonce, pt, hdr)
}

// synthHellos returns a minimal ClientHello record with random and a
// TLS 1.3 ServerHello record choosing suite id.
func synthHellos(random []byte, id uint16) (ch, sh []byte) {
	chBody := []byte{1, 0, 0, 0, 3, 3}
	chBody = append(chBody, random...)
	chBody = append(chBody, 0, 0, 2, byte(id>>8), byte(id), 1, 0, 0, 0)
	binary.BigEndian.PutUint16(chBody[2:], uint16(len(chBody)-4))
	shBody := []byte{2, 0, 0, 0, 3, 3}
	shBody = append(shBody, make([]byte, 32)...)
	shBody[6] = 0x55
	shBody = append(shBody, 0, byte(id>>8), byte(id), 0, 0, 6, 0, 43, 0, 2, 3, 4)
	binary.BigEndian.PutUint16(shBody[2:], uint16(len(shBody)-4))
	return record(22, 0x0301, chBody), record(22, 0x0303, shBody)
}

// TestKeyUpdate: Go's crypto/tls sends no KeyUpdate on demand, so the
// records here are sealed by the test, with keys from its own
// HKDF-Expand-Label (checked against RFC 8448 in TestExpandLabelRFC8448)
// and the "traffic upd" step of RFC 8446 section 7.2 (no published vector
// for it was found). The peers update twice and once; a NewSessionTicket
// split across records precedes one KeyUpdate in its record; records carry
// padding. TestOpenSSLKeyUpdate covers a real KeyUpdate where openssl is
// installed.
func TestKeyUpdate(t *testing.T) {
	for _, id := range []uint16{0x1301, 0x1302, 0x1303} {
		t.Run(fmt.Sprintf("0x%04x", id), func(t *testing.T) {
			random := bigBytes(32, 0x42)
			hl := 32
			if id == 0x1302 {
				hl = 48
			}
			cSecret, sSecret := bigBytes(hl, 1), bigBytes(hl, 2)
			ch, sh := synthHellos(random, id)
			cs, ss := newSealer13(t, id, cSecret), newSealer13(t, id, sSecret)

			keyUpdate := []byte{24, 0, 0, 1, 1} // update_requested
			ticket := append([]byte{4, 0, 0, 20}, bigBytes(20, 9)...)
			var write, read [][]byte
			write = append(write, ch)
			read = append(read, sh, bigBytes(300, 7)) // an "encrypted handshake" record: never decrypts
			read[1] = record(23, 0x0303, read[1])
			write = append(write, cs.seal(23, []byte("c0 "), 0), cs.seal(22, keyUpdate, 5))
			cs.update()
			write = append(write, cs.seal(23, []byte("c1 "), 100))
			read = append(read, ss.seal(23, []byte("s0 "), 0), ss.seal(22, ticket[:10], 0), ss.seal(22, append(ticket[10:], keyUpdate...), 0))
			ss.update()
			read = append(read, ss.seal(23, []byte("s1 "), 0), ss.seal(22, keyUpdate, 0))
			ss.update()
			read = append(read, ss.seal(23, []byte("s2"), 3), ss.seal(21, []byte{1, 0}, 0), record(23, 0x0303, []byte("ignored after the alert")))

			keys := NewKeys(2)
			require.NoError(t, keys.Add(LabelClientTraffic, random, cSecret))
			require.NoError(t, keys.Add(LabelServerTraffic, random, sSecret))
			c := NewConn(keys)
			var k collector
			for _, r := range write {
				require.NoError(t, c.Feed(Write, r, 1, k.out))
			}
			for _, r := range read {
				require.NoError(t, c.Feed(Read, r, 2, k.out))
			}
			require.Equal(t, "c0 c1 ", string(k.text(Write)))
			require.Equal(t, "s0 s1 s2", string(k.text(Read)))
			require.True(t, c.dirs[Read].done)
			require.Equal(t, ss.secret, c.dirs[Read].secret[:c.dirs[Read].secretLen], "the server secret after two updates")

			// A record sealed under the old key after a KeyUpdate fails.
			c = NewConn(keys)
			stale := newSealer13(t, id, cSecret)
			require.NoError(t, c.Feed(Write, ch, 1, nil))
			require.NoError(t, c.Feed(Read, sh, 1, nil))
			require.NoError(t, c.Feed(Write, stale.seal(22, keyUpdate, 0), 1, nil))
			err := c.Feed(Write, stale.seal(23, []byte("old key"), 0), 1, func(Dir, []byte, int64) {})
			require.ErrorIs(t, err, ErrDecrypt)
		})
	}
}

// TestSecretLengthMismatch: a 32-byte secret for a SHA-384 suite.
func TestSecretLengthMismatch(t *testing.T) {
	random := bigBytes(32, 3)
	ch, sh := synthHellos(random, 0x1302)
	keys := NewKeys(1)
	require.NoError(t, keys.Add(LabelClientTraffic, random, bigBytes(32, 1)))
	c := NewConn(keys)
	require.NoError(t, c.Feed(Write, ch, 1, nil))
	require.NoError(t, c.Feed(Read, sh, 1, nil))
	err := c.Feed(Write, record(23, 0x0303, make([]byte, 40)), 1, nil)
	require.ErrorIs(t, err, ErrDecrypt)
	require.Contains(t, err.Error(), "needs 48")
}
