package tlsdecrypt

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
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
	labelSeed := make([]byte, 0, len(label)+len(seed))
	labelSeed = append(labelSeed, label...)
	labelSeed = append(labelSeed, seed...)
	mac := hmac.New(h, secret)
	mac.Write(labelSeed)
	a := mac.Sum(nil) // A(1)
	out := make([]byte, 0, n+mac.Size())
	for len(out) < n {
		mac.Reset()
		mac.Write(a)
		mac.Write(labelSeed)
		out = mac.Sum(out) // HMAC(secret, A(i) + seed)
		mac.Reset()
		mac.Write(a)
		a = mac.Sum(a[:0]) // A(i+1)
	}
	clear(out[n:])
	return out[:n]
}
