package tlsdecrypt

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/sha512"
	"encoding"
	"fmt"
	"hash"

	"golang.org/x/crypto/chacha20poly1305"
)

// Protocol versions as ServerHello spells them.
const (
	versionTLS12 uint16 = 0x0303
	versionTLS13 uint16 = 0x0304
)

// aeadKind is the record protection of a suite.
type aeadKind uint8

const (
	aeadAESGCM aeadKind = iota
	aeadChaCha20Poly1305
)

// suite is what the decoder needs to know of a cipher suite.
type suite struct {
	id      uint16
	version uint16 // versionTLS12 or versionTLS13
	aead    aeadKind
	keyLen  int
	// ivLen is the IV taken from the key schedule: 12 in TLS 1.3 and for
	// ChaCha20-Poly1305 in TLS 1.2 (XORed with the sequence number); 4 for
	// AES-GCM in TLS 1.2 (the salt before the 8-byte explicit nonce).
	ivLen int
	// explicitNonce is the length of the nonce carried at the start of
	// each record (8 for AES-GCM in TLS 1.2, else 0).
	explicitNonce int
	hash          func() hash.Hash
	hashLen       int
}

var suites = []suite{
	// TLS 1.3, RFC 8446 appendix B.4.
	{id: 0x1301, version: versionTLS13, aead: aeadAESGCM, keyLen: 16, ivLen: 12, hash: sha256.New, hashLen: 32},
	{id: 0x1302, version: versionTLS13, aead: aeadAESGCM, keyLen: 32, ivLen: 12, hash: sha512.New384, hashLen: 48},
	{id: 0x1303, version: versionTLS13, aead: aeadChaCha20Poly1305, keyLen: 32, ivLen: 12, hash: sha256.New, hashLen: 32},

	// TLS 1.2 AES-GCM, RFC 5288 and RFC 5289.
	{id: 0x009c, version: versionTLS12, aead: aeadAESGCM, keyLen: 16, ivLen: 4, explicitNonce: 8, hash: sha256.New, hashLen: 32},    // RSA_WITH_AES_128_GCM_SHA256
	{id: 0x009d, version: versionTLS12, aead: aeadAESGCM, keyLen: 32, ivLen: 4, explicitNonce: 8, hash: sha512.New384, hashLen: 48}, // RSA_WITH_AES_256_GCM_SHA384
	{id: 0x009e, version: versionTLS12, aead: aeadAESGCM, keyLen: 16, ivLen: 4, explicitNonce: 8, hash: sha256.New, hashLen: 32},    // DHE_RSA_WITH_AES_128_GCM_SHA256
	{id: 0x009f, version: versionTLS12, aead: aeadAESGCM, keyLen: 32, ivLen: 4, explicitNonce: 8, hash: sha512.New384, hashLen: 48}, // DHE_RSA_WITH_AES_256_GCM_SHA384
	{id: 0xc02b, version: versionTLS12, aead: aeadAESGCM, keyLen: 16, ivLen: 4, explicitNonce: 8, hash: sha256.New, hashLen: 32},    // ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
	{id: 0xc02c, version: versionTLS12, aead: aeadAESGCM, keyLen: 32, ivLen: 4, explicitNonce: 8, hash: sha512.New384, hashLen: 48}, // ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
	{id: 0xc02f, version: versionTLS12, aead: aeadAESGCM, keyLen: 16, ivLen: 4, explicitNonce: 8, hash: sha256.New, hashLen: 32},    // ECDHE_RSA_WITH_AES_128_GCM_SHA256
	{id: 0xc030, version: versionTLS12, aead: aeadAESGCM, keyLen: 32, ivLen: 4, explicitNonce: 8, hash: sha512.New384, hashLen: 48}, // ECDHE_RSA_WITH_AES_256_GCM_SHA384

	// TLS 1.2 ChaCha20-Poly1305, RFC 7905.
	{id: 0xcca8, version: versionTLS12, aead: aeadChaCha20Poly1305, keyLen: 32, ivLen: 12, hash: sha256.New, hashLen: 32}, // ECDHE_RSA
	{id: 0xcca9, version: versionTLS12, aead: aeadChaCha20Poly1305, keyLen: 32, ivLen: 12, hash: sha256.New, hashLen: 32}, // ECDHE_ECDSA
	{id: 0xccaa, version: versionTLS12, aead: aeadChaCha20Poly1305, keyLen: 32, ivLen: 12, hash: sha256.New, hashLen: 32}, // DHE_RSA
	{id: 0xccab, version: versionTLS12, aead: aeadChaCha20Poly1305, keyLen: 32, ivLen: 12, hash: sha256.New, hashLen: 32}, // PSK
	{id: 0xccac, version: versionTLS12, aead: aeadChaCha20Poly1305, keyLen: 32, ivLen: 12, hash: sha256.New, hashLen: 32}, // ECDHE_PSK
	{id: 0xccad, version: versionTLS12, aead: aeadChaCha20Poly1305, keyLen: 32, ivLen: 12, hash: sha256.New, hashLen: 32}, // DHE_PSK
	{id: 0xccae, version: versionTLS12, aead: aeadChaCha20Poly1305, keyLen: 32, ivLen: 12, hash: sha256.New, hashLen: 32}, // RSA_PSK
}

// lookupSuite returns the suite id of the given version, or nil when the
// package does not decrypt it.
func lookupSuite(id, version uint16) *suite {
	for i := range suites {
		if suites[i].id == id && suites[i].version == version {
			return &suites[i]
		}
	}
	return nil
}

// newAEAD returns the record protection of s keyed with key.
func newAEAD(s *suite, key []byte) (cipher.AEAD, error) {
	switch s.aead {
	case aeadChaCha20Poly1305:
		return chacha20poly1305.New(key)
	default:
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, err
		}
		return cipher.NewGCM(block)
	}
}

// expandLabel is HKDF-Expand-Label(secret, label, "", n) of RFC 8446
// section 7.1: HKDF-Expand with the info HkdfLabel{n, "tls13 " + label,
// empty context}.
func expandLabel(h func() hash.Hash, secret []byte, label string, n int) ([]byte, error) {
	const prefix = "tls13 "
	info := make([]byte, 0, 4+len(prefix)+len(label))
	info = append(info, byte(n>>8), byte(n), byte(len(prefix)+len(label)))
	info = append(info, prefix...)
	info = append(info, label...)
	info = append(info, 0) // empty context
	out, err := hkdf.Expand(h, secret, string(info), n)
	if err != nil {
		return nil, fmt.Errorf("tlsdecrypt: HKDF-Expand-Label %q: %v", label, err)
	}
	return out, nil
}

// prf12 is the TLS 1.2 PRF of RFC 5246 section 5: P_hash(secret, label +
// seed), n bytes of it.
func prf12(h func() hash.Hash, secret []byte, label string, seed []byte, n int) []byte {
	p := newPHash(h)
	defer p.zero()
	out := make([]byte, n)
	p.expand(out, secret, []byte(label), seed, nil)
	return out
}

// labelKeyExpansion is the PRF label of the TLS 1.2 key block.
var labelKeyExpansion = []byte("key expansion")

// keyBlockLen12 is the length of suite s's TLS 1.2 key block: the client
// and server write keys and IVs (AEAD suites have no MAC keys).
func keyBlockLen12(s *suite) int { return 2*s.keyLen + 2*s.ivLen }

// maxKeyBlock12 bounds keyBlockLen12 over the suites.
const maxKeyBlock12 = 2*32 + 2*12

// keys12 returns the write key and IV of the given role's direction in kb,
// a key block of suite s: client_write_key, server_write_key,
// client_write_IV, server_write_IV in that order (RFC 5246 section 6.3).
func keys12(s *suite, kb []byte, r role) (key, iv []byte) {
	if r == roleServer {
		return kb[s.keyLen : 2*s.keyLen], kb[2*s.keyLen+s.ivLen : 2*s.keyLen+2*s.ivLen]
	}
	return kb[:s.keyLen], kb[2*s.keyLen : 2*s.keyLen+s.ivLen]
}

// pHash computes P_hash of RFC 5246 section 5 with HMAC done by hand on
// reused state, so that keying it with a new secret allocates nothing.
// Where the hash can save and restore its state (encoding.BinaryAppender
// and BinaryUnmarshaler, as SHA-256 and SHA-384 can), the states after the
// HMAC pads are kept, sparing two blocks of hashing per HMAC.
type pHash struct {
	inner, outer hash.Hash
	block        int
	ipad, opad   [128]byte // the HMAC key XOR ipad, XOR opad
	a            [64]byte  // A(i)
	in           [64]byte  // the inner hash
	sum          [64]byte  // an output block

	// The hash states after the pads, where saved.
	save                  encoding.BinaryAppender
	restoreIn, restoreOut encoding.BinaryUnmarshaler
	istate, ostate        [256]byte
	istateLen, ostateLen  int
	saved                 bool
}

func newPHash(h func() hash.Hash) *pHash {
	p := &pHash{inner: h(), outer: h()}
	p.block = p.inner.BlockSize()
	ri, ok1 := p.inner.(encoding.BinaryUnmarshaler)
	ro, ok2 := p.outer.(encoding.BinaryUnmarshaler)
	sv, ok3 := p.inner.(encoding.BinaryAppender)
	if ok1 && ok2 && ok3 {
		p.restoreIn, p.restoreOut, p.save = ri, ro, sv
	}
	return p
}

// setKey keys the HMAC with secret (hashed first when longer than the
// hash's block, RFC 2104).
func (p *pHash) setKey(secret []byte) {
	ipad, opad := p.ipad[:p.block], p.opad[:p.block]
	clear(ipad)
	if len(secret) > p.block {
		p.inner.Reset()
		p.inner.Write(secret)
		p.inner.Sum(ipad[:0])
	} else {
		copy(ipad, secret)
	}
	for i := range ipad {
		opad[i] = ipad[i] ^ 0x5c
		ipad[i] ^= 0x36
	}
	p.saved = false
	if p.save == nil {
		return
	}
	p.inner.Reset()
	p.inner.Write(ipad)
	is, err1 := p.save.AppendBinary(p.istate[:0])
	p.inner.Reset()
	p.inner.Write(opad)
	os, err2 := p.save.AppendBinary(p.ostate[:0])
	// Kept only where the states fit the arrays (no copy elsewhere).
	if err1 == nil && err2 == nil && len(is) <= len(p.istate) && len(os) <= len(p.ostate) && &is[0] == &p.istate[0] && &os[0] == &p.ostate[0] {
		p.istateLen, p.ostateLen, p.saved = len(is), len(os), true
	}
}

// mac appends HMAC(key, m1 || m2 || m3 || m4) to dst; nil parts are empty.
// dst may alias a part.
func (p *pHash) mac(dst, m1, m2, m3, m4 []byte) []byte {
	if !p.saved || p.restoreIn.UnmarshalBinary(p.istate[:p.istateLen]) != nil {
		p.inner.Reset()
		p.inner.Write(p.ipad[:p.block])
	}
	p.inner.Write(m1)
	p.inner.Write(m2)
	p.inner.Write(m3)
	p.inner.Write(m4)
	in := p.inner.Sum(p.in[:0])
	if !p.saved || p.restoreOut.UnmarshalBinary(p.ostate[:p.ostateLen]) != nil {
		p.outer.Reset()
		p.outer.Write(p.opad[:p.block])
	}
	p.outer.Write(in)
	return p.outer.Sum(dst)
}

// expand writes len(out) bytes of P_hash(secret, label + seed1 + seed2) to
// out: HMAC(secret, A(1) + seed) + HMAC(secret, A(2) + seed) + ..., where
// A(0) = seed and A(i) = HMAC(secret, A(i-1)), the seed here being label +
// seed1 + seed2.
func (p *pHash) expand(out, secret, label, seed1, seed2 []byte) {
	p.setKey(secret)
	a := p.mac(p.a[:0], label, seed1, seed2, nil) // A(1)
	for {
		n := copy(out, p.mac(p.sum[:0], a, label, seed1, seed2))
		out = out[n:]
		if len(out) == 0 {
			return
		}
		a = p.mac(p.a[:0], a, nil, nil, nil) // A(i+1)
	}
}

// keyBlock12 writes the TLS 1.2 key block of master to kb: PRF(master,
// "key expansion", server_random + client_random), len(kb) bytes of it
// (RFC 5246 section 6.3).
func (p *pHash) keyBlock12(kb, master []byte, serverRandom, clientRandom *[32]byte) {
	p.expand(kb, master, labelKeyExpansion, serverRandom[:], clientRandom[:])
}

// zero clears the key material and resets the hash states.
func (p *pHash) zero() {
	clear(p.ipad[:])
	clear(p.opad[:])
	clear(p.a[:])
	clear(p.in[:])
	clear(p.sum[:])
	clear(p.istate[:])
	clear(p.ostate[:])
	p.saved = false
	p.inner.Reset()
	p.outer.Reset()
}
