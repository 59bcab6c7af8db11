package tlsdecrypt

import (
	"bytes"
	"encoding/binary"
	"hash"
)

// SecretLen returns the length of the TLS 1.3 traffic secrets of the
// connection, its suite's hash length (32 for the SHA-256 suites, 48 for
// TLS_AES_256_GCM_SHA384), once a ServerHello or HelloRetryRequest has told
// the suite. It returns 0 before that, for TLS 1.2, once Feed or Retry has
// returned an error, and after Close.
func (c *Conn) SecretLen() int {
	if c.err != nil || c.version != versionTLS13 || c.suite == nil {
		return 0
	}
	return c.suite.hashLen
}

// FindTrafficSecret looks in region for the TLS 1.3 application traffic
// secret of dir's sender (the secret that protects the records c holds in
// direction dir): client_application_traffic_secret_0 where dir carries
// the client's bytes, server_application_traffic_secret_0 where it carries
// the server's. It is meant for a copy of a TLS library's memory that
// holds the secret at an offset not known in advance.
//
// It tries each offset o with o+SecretLen() <= len(region), in increasing
// order, and returns the first whose region[o:o+SecretLen()], taken as the
// secret, decrypts the direction's first application-key record. The
// records it tries are the held application_data records after the
// direction's first (which is under its early or handshake key), within
// Feed's bound on skipped handshake records (32 records or 64 KiB before
// the one tried). A candidate passes when one of them authenticates as
// record 0 under it and its plaintext is what a first application-key
// record carries: application data, an alert, or a post-handshake message
// (NewSessionTicket, KeyUpdate, or a Certificate or CertificateRequest
// with a non-empty certificate_request_context, which the handshake's own
// have not). So the handshake and early traffic secrets, which decrypt a
// record as record 0 too, are not taken for it. A candidate equal to the
// one before it (in a run of one byte value, as zeroed memory is) is not
// tried again.
//
// It returns false at once when the version is not known to be TLS 1.3,
// when dir already has its application key or its sender ended it with an
// alert, when c has failed or is closed, when dir is invalid, and when dir
// holds no encrypted record after its first; and false when no offset
// passes. It changes nothing in c: the held records stay held and no
// plaintext goes out. With the secret found, add it to Keys under
// LabelClientTraffic or LabelServerTraffic (by dir's sender) and call
// Retry.
//
// Each candidate costs a key derivation, an AEAD (its only allocations)
// and an authentication of each record tried: about 3 µs with a few small
// records, so a 4 KiB region takes about 10 ms.
func (c *Conn) FindTrafficSecret(dir Dir, region []byte) (off int, ok bool) {
	if c.err != nil || dir > Read || c.version != versionTLS13 || c.suite == nil {
		return 0, false
	}
	d := &c.dirs[dir]
	if d.aead != nil || d.done {
		return 0, false
	}
	var store [maxSkipRecords]heldRecord
	recs := appRecordCandidates(d.held, store[:0])
	n := c.suite.hashLen
	if len(recs) == 0 || len(region) < n {
		return 0, false
	}
	if c.scratch == nil {
		c.scratch = make([]byte, 0, maxCiphertext2)
	}
	t := newKeyTrial(c.suite)
	defer t.zero()
	used := 0 // bytes of c.scratch that may hold plaintext
	defer func() { clear(c.scratch[:used]) }()
	for o := 0; o+n <= len(region); o++ {
		cand := region[o : o+n]
		if o > 0 && bytes.Equal(cand, region[o-1:o-1+n]) {
			continue // tried (and failed) at o-1
		}
		if t.try(cand, recs, c.scratch, &used) {
			return o, true
		}
	}
	return 0, false
}

// heldRecord is a held record's header and body.
type heldRecord struct{ hdr, body []byte }

// appRecordCandidates appends to recs the held records (ts, header and
// body each) that may be a TLS 1.3 direction's first record under its
// application key: those of outer type application_data after the first
// (a direction's first encrypted record is under its early or handshake
// key), at most maxSkipRecords, each with at most maxSkipBytes of such
// records before it, as Feed skips. An alert record ends the direction,
// and the search.
func appRecordCandidates(held []byte, recs []heldRecord) []heldRecord {
	skipped, before := 0, 0 // records and bytes of type 23 before the next one
	for off := 0; off+heldOverhead <= len(held); {
		hdr := held[off+8 : off+heldOverhead]
		n := int(binary.BigEndian.Uint16(hdr[3:]))
		body := held[off+heldOverhead : off+heldOverhead+n]
		off += heldOverhead + n
		switch hdr[0] {
		case typeAlert:
			return recs
		case typeApplicationData:
		default:
			continue // change_cipher_spec, a plaintext handshake record
		}
		if skipped > 0 && len(body) <= maxCiphertext3 {
			recs = append(recs, heldRecord{hdr, body})
		}
		skipped++
		before += headerLen + n
		if skipped > maxSkipRecords || before > maxSkipBytes || len(recs) == cap(recs) {
			return recs
		}
	}
	return recs
}

// keyTrial derives the record key and IV of candidate TLS 1.3 traffic
// secrets and tries them, allocating nothing per candidate but the AEAD.
type keyTrial struct {
	s            *suite
	inner, outer hash.Hash
	block        int       // the hash's block size
	pad          [128]byte // the HMAC key XOR ipad, then opad
	sum          [64]byte
	key          [32]byte
	iv           [12]byte
	infoKey      []byte // HkdfLabel of "key", with HKDF-Expand's counter 1
	infoIV       []byte // of "iv"
}

func newKeyTrial(s *suite) *keyTrial {
	t := &keyTrial{s: s, inner: s.hash(), outer: s.hash()}
	t.block = t.inner.BlockSize()
	t.infoKey = hkdfLabelInfo("key", s.keyLen)
	t.infoIV = hkdfLabelInfo("iv", s.ivLen)
	return t
}

// hkdfLabelInfo returns the HkdfLabel{n, "tls13 " + label, empty context} of
// RFC 8446 section 7.1 followed by the counter byte 1 of HKDF-Expand's
// first block (RFC 5869 section 2.3).
func hkdfLabelInfo(label string, n int) []byte {
	const prefix = "tls13 "
	info := make([]byte, 0, 5+len(prefix)+len(label))
	info = append(info, byte(n>>8), byte(n), byte(len(prefix)+len(label)))
	info = append(info, prefix...)
	info = append(info, label...)
	return append(info, 0, 1)
}

// expand writes HKDF-Expand-Label(secret, label, "", len(out)) to out, for
// the label whose info is given (see hkdfLabelInfo). The output fits in
// HKDF-Expand's first block, HMAC(secret, info), as len(out) <= Hash.length;
// the secret, no longer than the hash's block, is the HMAC key as is.
func (t *keyTrial) expand(out, secret, info []byte) {
	pad := t.pad[:t.block]
	clear(pad)
	copy(pad, secret)
	for i := range pad {
		pad[i] ^= 0x36
	}
	t.inner.Reset()
	t.inner.Write(pad)
	t.inner.Write(info)
	in := t.inner.Sum(t.sum[:0])
	for i := range pad {
		pad[i] ^= 0x36 ^ 0x5c
	}
	t.outer.Reset()
	t.outer.Write(pad)
	t.outer.Write(in)
	copy(out, t.outer.Sum(t.sum[:0]))
}

// try reports whether secret, as the application traffic secret,
// authenticates one of recs as record 0 with the plaintext a first
// application-key record carries. It opens into scratch's array and raises
// *used to the bytes it may have written there.
func (t *keyTrial) try(secret []byte, recs []heldRecord, scratch []byte, used *int) bool {
	s := t.s
	key, iv := t.key[:s.keyLen], t.iv[:s.ivLen]
	t.expand(key, secret, t.infoKey)
	t.expand(iv, secret, t.infoIV)
	aead, err := newAEAD(s, key)
	clear(key)
	if err != nil {
		return false
	}
	for _, r := range recs {
		*used = max(*used, len(r.body))
		pt, err := aead.Open(scratch[:0], iv, r.body, r.hdr) // the nonce of record 0 is the IV
		if err == nil && firstAppRecord(pt) {
			return true
		}
	}
	return false
}

// Handshake message types that may open a TLS 1.3 direction's first
// record under its application key (RFC 8446 section 4.6).
const (
	msgNewSessionTicket   = 4
	msgCertificate        = 11
	msgCertificateRequest = 13
)

// firstAppRecord reports whether pt, a TLS 1.3 record's inner plaintext
// (content, type, padding), may be a direction's first record under its
// application key rather than one under its handshake key: application
// data, an alert, or a handshake record starting with a post-handshake
// message. A handshake record under the handshake key at sequence 0
// starts with EncryptedExtensions (server), Finished or Certificate
// (client); a Certificate or CertificateRequest in the handshake has an
// empty certificate_request_context, one after it has not (RFC 8446
// section 4.3.2).
func firstAppRecord(pt []byte) bool {
	i := len(pt) - 1
	for i >= 0 && pt[i] == 0 {
		i--
	}
	if i < 0 {
		return false
	}
	switch inner, content := pt[i], pt[:i]; inner {
	case typeApplicationData, typeAlert:
		return true
	case typeHandshake:
		if len(content) < 4 {
			return false
		}
		switch content[0] {
		case msgNewSessionTicket, msgKeyUpdate:
			return true
		case msgCertificate, msgCertificateRequest:
			return len(content) > 4 && content[4] > 0
		}
	}
	return false
}

// zero clears the trial's key material and resets its hash states.
func (t *keyTrial) zero() {
	clear(t.pad[:])
	clear(t.sum[:])
	clear(t.key[:])
	clear(t.iv[:])
	t.inner.Reset()
	t.outer.Reset()
}
