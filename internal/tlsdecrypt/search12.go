package tlsdecrypt

import (
	"bytes"
	"encoding/binary"
)

// Protocol versions, as Version returns them.
const (
	VersionTLS12 = versionTLS12 // 0x0303
	VersionTLS13 = versionTLS13 // 0x0304
)

// Version returns the connection's TLS version, VersionTLS12 or
// VersionTLS13, once a ServerHello (or HelloRetryRequest) has told it. It
// returns 0 before that, once Feed or Retry has returned an error, and
// after Close.
func (c *Conn) Version() uint16 {
	if c.err != nil {
		return 0
	}
	return c.version
}

// masterLen is the length of the TLS 1.2 master secret.
const masterLen = 48

// msgFinished is the Finished handshake message type.
const msgFinished = 20

// finishedRecordLen12 is the body length of a TLS 1.2 record that holds a
// Finished alone: the explicit nonce, if any, the message (type, 3-byte
// length, 12 bytes of verify_data) and the tag.
func finishedRecordLen12(s *suite) int { return s.explicitNonce + 4 + 12 + tagLen12 }

// FindMasterSecret looks in region for the TLS 1.2 master secret of c's
// connection. It is meant for a copy of a TLS library's memory (such as
// its session object) that holds the secret at an offset not known in
// advance.
//
// It tries each offset o with o+48 <= len(region), in increasing order,
// and returns the first whose region[o:o+48], taken as the master secret,
// yields keys (the key block of RFC 5246 section 6.3, derived as Feed
// derives it) under which a held record authenticates as its direction's
// record 0 after its ChangeCipherSpec and holds a Finished message (type
// 20, 12 bytes of verify_data). The records tried are the first held
// record after the ChangeCipherSpec of each direction, at most two per
// candidate. A candidate equal to the one before it (in a run of one byte
// value, as zeroed memory is) is not tried again.
//
// It returns false at once when the version is not known to be TLS 1.2,
// when either random is not known yet (the ClientHello's and the
// ServerHello's), when c has failed or is closed, and when no direction
// holds such a record (the directions that have their keys hold none);
// and false when no offset passes. It changes nothing in c: the held
// records stay held and no plaintext goes out. With the secret found, add
// it to Keys under LabelTLS12 for the client random and call Retry.
//
// Each candidate costs a PRF key expansion, and per record tried an AEAD
// (its only allocations) and the authentication of a 16-byte message:
// about 2 to 4 µs with both directions' Finished held, so a 512-byte region
// takes 1 to 2 ms.
func (c *Conn) FindMasterSecret(region []byte) (off int, ok bool) {
	if c.err != nil || c.version != versionTLS12 || c.suite == nil || !c.helloDone || !c.haveRandom || len(region) < masterLen {
		return 0, false
	}
	var recs [2]finishedRecord
	n := 0
	for i := range c.dirs {
		if r, ok := finishedCandidate(c.suite, &c.dirs[i]); ok {
			recs[n] = r
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	t := newMasterTrial(c.suite, &c.serverRandom, &c.clientRandom)
	defer t.zero()
	for o := 0; o+masterLen <= len(region); o++ {
		cand := region[o : o+masterLen]
		if o > 0 && bytes.Equal(cand, region[o-1:o-1+masterLen]) {
			continue // tried (and failed) at o-1
		}
		if t.try(cand, recs[:n]) {
			return o, true
		}
	}
	return 0, false
}

// finishedRecord is a held record that may be a direction's Finished,
// with the role of its sender.
type finishedRecord struct {
	hdr, body []byte
	role      role
}

// finishedCandidate returns d's first held record when d has passed its
// ChangeCipherSpec without keys (the record is then at sequence number 0
// under the keys it waits for) and the record is a handshake record of a
// Finished's length. (A ChangeCipherSpec is held only until the
// ServerHello is parsed, so with the version known none is held.)
func finishedCandidate(s *suite, d *direction) (finishedRecord, bool) {
	if !d.encrypted || d.aead != nil || d.done || d.role == roleUnknown || len(d.held) < heldOverhead {
		return finishedRecord{}, false
	}
	hdr := d.held[8:heldOverhead]
	n := int(binary.BigEndian.Uint16(hdr[3:]))
	if hdr[0] != typeHandshake || n != finishedRecordLen12(s) {
		return finishedRecord{}, false
	}
	return finishedRecord{hdr, d.held[heldOverhead : heldOverhead+n], d.role}, true
}

// masterTrial derives the TLS 1.2 record keys of candidate master secrets
// and tries them on Finished records, allocating nothing per candidate
// but the AEADs.
type masterTrial struct {
	s            *suite
	prf          *pHash
	serverRandom *[32]byte
	clientRandom *[32]byte
	kb           [maxKeyBlock12]byte
	iv           [12]byte
	nonce        [12]byte
	aad          [13]byte
	pt           [16]byte
}

func newMasterTrial(s *suite, serverRandom, clientRandom *[32]byte) *masterTrial {
	return &masterTrial{s: s, prf: newPHash(s.hash), serverRandom: serverRandom, clientRandom: clientRandom}
}

// try reports whether master yields keys that open one of recs as record 0
// with a Finished message as its plaintext.
func (t *masterTrial) try(master []byte, recs []finishedRecord) bool {
	s := t.s
	kb := t.kb[:keyBlockLen12(s)]
	t.prf.keyBlock12(kb, master, t.serverRandom, t.clientRandom)
	defer clear(kb)
	for _, r := range recs {
		key, iv := keys12(s, kb, r.role)
		aead, err := newAEAD(s, key)
		if err != nil {
			return false
		}
		clear(t.iv[:])
		copy(t.iv[:], iv)
		pt, err := open12(s, aead, &t.iv, 0, r.hdr, r.body, &t.nonce, &t.aad, t.pt[:0])
		if err == nil && len(pt) == 16 && pt[0] == msgFinished && pt[1] == 0 && pt[2] == 0 && pt[3] == 12 {
			return true
		}
	}
	return false
}

// zero clears the trial's key material.
func (t *masterTrial) zero() {
	t.prf.zero()
	clear(t.kb[:])
	clear(t.iv[:])
	clear(t.nonce[:])
	clear(t.aad[:])
	clear(t.pt[:])
}
