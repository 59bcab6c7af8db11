package tlsdecrypt

import (
	"crypto/cipher"
	"encoding/binary"
	"fmt"
)

// Dir is a direction of a connection's bytes, seen from the captured
// endpoint.
type Dir uint8

const (
	Write Dir = 0 // bytes the endpoint sent
	Read  Dir = 1 // bytes the endpoint received
)

// String returns "write" or "read".
func (d Dir) String() string {
	switch d {
	case Write:
		return "write"
	case Read:
		return "read"
	}
	return fmt.Sprintf("Dir(%d)", uint8(d))
}

// MaxHeld bounds the bytes a Conn holds while it waits for secrets (or for
// the peer's ServerHello): the held records plus 8 bytes of timestamp each,
// both directions together. More is ErrHeldFull.
const MaxHeld = 256 << 10

// Record layer bounds (RFC 8446 section 5.2, RFC 5246 section 6.2.3).
const (
	headerLen      = 5
	maxPlaintext   = 1 << 14
	maxCiphertext3 = maxPlaintext + 256  // TLS 1.3
	maxCiphertext2 = maxPlaintext + 2048 // TLS 1.2, and before the version is known
	heldOverhead   = 8 + headerLen       // per held record: ts and header
)

// Bounds on the TLS 1.3 records skipped as encrypted handshake before the
// first that decrypts under a direction's application traffic secret.
const (
	maxSkipBytes   = 64 << 10
	maxSkipRecords = 32
)

// maxServerHello bounds the ServerHello the decoder buffers to parse.
const maxServerHello = 16 << 10

// Content types (RFC 8446 section 5.1).
const (
	typeChangeCipherSpec = 20
	typeAlert            = 21
	typeHandshake        = 22
	typeApplicationData  = 23
	typeHeartbeat        = 24
)

// Handshake message types used.
const (
	msgClientHello = 1
	msgServerHello = 2
	msgKeyUpdate   = 24
)

// helloRetryRandom is the ServerHello.random of a HelloRetryRequest,
// SHA-256("HelloRetryRequest") (RFC 8446 section 4.1.3).
var helloRetryRandom = [32]byte{
	0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C, 0x02, 0x1E, 0x65, 0xB8, 0x91,
	0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB, 0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C,
}

// role of a direction: who sends its bytes.
type role uint8

const (
	roleUnknown role = iota
	roleClient
	roleServer
)

func (r role) String() string {
	switch r {
	case roleClient:
		return "client"
	case roleServer:
		return "server"
	}
	return "unknown"
}

// waitReason says why a direction holds records.
type waitReason uint8

const (
	waitNone         waitReason = iota
	waitServerHello             // the version is not known yet
	waitClientRandom            // the client's ClientHello has not been seen
	waitSecret                  // Keys has no secret for the direction
)

// hsScanner follows the handshake messages of one direction across
// records, keeping only the bytes the decoder parses.
type hsScanner struct {
	hdr     [4]byte
	hdrN    int
	msgType byte
	bodyLen int
	remain  int
	want    int
	buf     []byte
}

func (s *hsScanner) reset() {
	clear(s.buf)
	*s = hsScanner{}
}

// direction is the state of one direction of a Conn.
type direction struct {
	// Framing.
	hdr     [headerLen]byte
	hdrN    int
	bodyLen int
	bodyN   int
	rec     []byte // a partial record's body, across Feed calls
	started bool   // the first record header was checked

	role      role
	hs        hsScanner
	encrypted bool // TLS 1.3: an encrypted record was seen; TLS 1.2: after CCS
	done      bool // an alert ended the direction

	// Record protection.
	aead      cipher.AEAD
	secret    [48]byte // TLS 1.3: the current traffic secret
	secretLen int
	iv        [12]byte
	nonce     [12]byte
	aad       [13]byte
	seq       uint64
	synced    bool // TLS 1.3: a record decrypted under the application key
	keyUpdate bool // TLS 1.3: a KeyUpdate ended the last record
	skipBytes int
	skipRecs  int

	// Records held, each as ts (8 bytes, big endian), header, body.
	held []byte
	wait waitReason
}

// Conn decrypts one TCP connection's TLS records. Not safe for concurrent
// use.
//
// A Conn's memory is bounded: a partial record per direction (at most
// 2^14+2048 bytes each), one record's plaintext, a ServerHello (at most
// 16 KiB, released once parsed), and MaxHeld held bytes (in buffers of at
// most MaxHeld per direction, released once drained).
type Conn struct {
	keys *Keys
	err  error
	dirs [2]direction

	clientRandom [32]byte
	haveRandom   bool
	serverRandom [32]byte
	version      uint16 // 0 until a ServerHello (or HelloRetryRequest) says
	suite        *suite
	helloDone    bool // the final ServerHello was parsed

	held    int    // bytes held, both directions, with overhead
	scratch []byte // one record's plaintext
}

// NewConn returns a Conn that looks secrets up in keys (a nil keys never
// has any).
func NewConn(keys *Keys) *Conn {
	return &Conn{keys: keys}
}

// Feed takes the next bytes the endpoint moved in direction dir, observed
// at ts (ns, opaque to the package), in order within that direction (the
// two directions may interleave arbitrarily, e.g. the server's whole
// response read before the client's next write is fed). It calls out with
// each application-data plaintext it decrypts, in order within the
// direction, with the ts of the Feed that completed that record; out's
// slice is valid only during the call.
//
// Records that cannot be decrypted yet because their secrets are not in
// Keys yet are held (the secrets may arrive after the bytes they decrypt),
// up to MaxHeld bytes per connection; so are records of a direction that
// need the peer's ServerHello, until it is fed.
//
// Once the connection cannot be followed, Feed returns an error (sticky:
// every later Feed and Retry returns it and does nothing): the bytes are
// not TLS (ErrNotTLS), a record is too long (ErrRecordTooLong), a
// decryption failed where it must succeed (ErrDecrypt), an unsupported
// version or cipher suite (ErrUnsupported, naming the suite in hex), held
// bytes over MaxHeld (ErrHeldFull).
//
// Where decryption must succeed: in TLS 1.2 every record after a
// direction's ChangeCipherSpec. In TLS 1.3 only the application traffic
// secrets are logged, so the records of a direction that do not decrypt
// under its application key before the first that does are taken as the
// encrypted handshake and skipped; every record after that one must
// decrypt. The skip is bounded: a direction that skips more than 32
// records or 64 KiB of records (header included) is ErrDecrypt (the secret
// is wrong). A wrong TLS 1.3 secret on a connection shorter than that bound
// yields no plaintext and no error.
//
// A nil out discards the plaintext. An invalid dir is an error that is not
// sticky.
func (c *Conn) Feed(dir Dir, data []byte, ts int64, out func(dir Dir, plaintext []byte, ts int64)) error {
	if c.err != nil {
		return c.err
	}
	if dir > Read {
		return fmt.Errorf("tlsdecrypt: Feed: invalid direction %d", dir)
	}
	if out == nil {
		out = discard
	}
	if c.held > 0 {
		c.drain(out)
	}
	d := &c.dirs[dir]
	for len(data) > 0 && c.err == nil {
		if d.hdrN < headerLen {
			n := copy(d.hdr[d.hdrN:], data)
			d.hdrN += n
			data = data[n:]
			if d.hdrN < headerLen {
				break
			}
			if !c.checkHeader(dir, d) {
				break
			}
			d.bodyLen = int(binary.BigEndian.Uint16(d.hdr[3:]))
			d.bodyN = 0
		}
		if d.bodyN == 0 && len(data) >= d.bodyLen {
			// The whole body is in data: use it where it is.
			body := data[:d.bodyLen]
			data = data[d.bodyLen:]
			d.hdrN = 0
			c.complete(dir, d.hdr[:], body, ts, out)
			continue
		}
		if d.rec == nil {
			d.rec = make([]byte, maxCiphertext2)
		}
		n := copy(d.rec[d.bodyN:d.bodyLen], data)
		d.bodyN += n
		data = data[n:]
		if d.bodyN == d.bodyLen {
			d.hdrN = 0
			c.complete(dir, d.hdr[:], d.rec[:d.bodyLen], ts, out)
		}
	}
	if c.held > 0 && c.err == nil {
		c.drain(out)
	}
	return c.err
}

// Waiting reports whether records are held for secrets not yet in Keys (or
// for the peer's ServerHello, not yet fed).
func (c *Conn) Waiting() bool {
	return c.err == nil && c.held > 0
}

// Ended reports whether dir's sender has ended its direction with an
// alert that c read: a close_notify, or a fatal alert (TLS 1.3 alerts are
// encrypted: read once decrypted).
func (c *Conn) Ended(dir Dir) bool {
	return dir <= Read && c.dirs[dir].done
}

// Retry decrypts the held records whose secrets Keys now has, calling out
// as Feed does. It returns Feed's sticky error, if any.
func (c *Conn) Retry(out func(dir Dir, plaintext []byte, ts int64)) error {
	if c.err != nil {
		return c.err
	}
	if out == nil {
		out = discard
	}
	c.drain(out)
	return c.err
}

// discard stands in for a nil out.
func discard(Dir, []byte, int64) {}

// ClientRandom returns the client random of the connection's ClientHello,
// once seen.
func (c *Conn) ClientRandom() ([32]byte, bool) {
	return c.clientRandom, c.haveRandom
}

// Close forgets the connection: zeroes its secrets, IVs, held bytes and
// buffers, drops its AEADs, and calls Keys.Forget for its client random.
// Feed and Retry then return ErrClosed.
func (c *Conn) Close() {
	if c.haveRandom && c.keys != nil {
		c.keys.Forget(c.clientRandom)
	}
	for i := range c.dirs {
		d := &c.dirs[i]
		clear(d.rec)
		clear(d.held)
		d.hs.reset()
		clear(d.secret[:])
		clear(d.iv[:])
		clear(d.nonce[:])
		*d = direction{}
	}
	clear(c.scratch)
	clear(c.serverRandom[:])
	clear(c.clientRandom[:])
	*c = Conn{err: ErrClosed}
}

// footprint returns the bytes of the buffers the Conn owns (for tests).
func (c *Conn) footprint() int {
	n := cap(c.scratch)
	for i := range c.dirs {
		d := &c.dirs[i]
		n += cap(d.rec) + cap(d.held) + cap(d.hs.buf)
	}
	return n
}

func (c *Conn) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// checkHeader validates the record header in d.hdr and reports whether
// framing may go on.
func (c *Conn) checkHeader(dir Dir, d *direction) bool {
	typ := d.hdr[0]
	ver := binary.BigEndian.Uint16(d.hdr[1:])
	n := int(binary.BigEndian.Uint16(d.hdr[3:]))
	if !d.started {
		if typ != typeHandshake || ver < 0x0301 || ver > 0x0304 {
			c.fail(fmt.Errorf("%w: the %s direction starts with % x, not a TLS handshake record (type 22, version 0x0301-0x0304)", ErrNotTLS, dir, d.hdr[:]))
			return false
		}
		d.started = true
	}
	if typ < typeChangeCipherSpec || typ > typeHeartbeat || d.hdr[1] != 3 {
		c.fail(fmt.Errorf("%w: %s record header % x: content type %d, version 0x%04x", ErrNotTLS, dir, d.hdr[:], typ, ver))
		return false
	}
	limit, name := maxCiphertext2, "TLS 1.2"
	if c.version == versionTLS13 {
		limit, name = maxCiphertext3, "TLS 1.3"
	}
	if n > limit {
		c.fail(fmt.Errorf("%w: %s record of %d bytes, %s allows %d", ErrRecordTooLong, dir, n, name, limit))
		return false
	}
	return true
}

// complete handles a whole record: it is processed unless records of its
// direction are held already or it must wait itself, in which case it is
// held.
func (c *Conn) complete(dir Dir, hdr, body []byte, ts int64, out func(Dir, []byte, int64)) {
	d := &c.dirs[dir]
	if len(d.held) == 0 && !c.process(dir, hdr, body, ts, out) {
		return
	}
	if c.err != nil {
		return
	}
	need := heldOverhead + len(body)
	if c.held+need > MaxHeld {
		c.fail(fmt.Errorf("%w: holding a %d-byte %s record would make %d bytes held, waiting for %s; MaxHeld is %d",
			ErrHeldFull, len(body)+headerLen, dir, c.held+need, c.waitingFor(d), MaxHeld))
		return
	}
	if cap(d.held)-len(d.held) < need {
		// Grow by doubling, never past MaxHeld (len+need fits, as the
		// check above shows).
		nc := max(2*cap(d.held), len(d.held)+need, 4<<10)
		nc = min(nc, MaxHeld)
		grown := make([]byte, len(d.held), nc)
		copy(grown, d.held)
		clear(d.held)
		d.held = grown
	}
	d.held = binary.BigEndian.AppendUint64(d.held, uint64(ts))
	d.held = append(d.held, hdr[:headerLen]...)
	d.held = append(d.held, body...)
	c.held += need
}

// waitingFor describes what d's held records wait for.
func (c *Conn) waitingFor(d *direction) string {
	switch d.wait {
	case waitServerHello:
		return "the ServerHello (the other direction)"
	case waitClientRandom:
		return "the ClientHello's client random (the other direction)"
	case waitSecret:
		label := LabelTLS12
		if c.version == versionTLS13 {
			label = LabelClientTraffic
			if d.role == roleServer {
				label = LabelServerTraffic
			}
		}
		return fmt.Sprintf("%s of client random %x in Keys", label, c.clientRandom)
	}
	return "nothing"
}

// drain processes held records, in order within each direction, until
// every direction is empty or waits.
func (c *Conn) drain(out func(Dir, []byte, int64)) {
	for progress := true; progress && c.err == nil && c.held > 0; {
		progress = false
		for i := range c.dirs {
			if c.drainDir(Dir(i), out) {
				progress = true
			}
		}
	}
}

func (c *Conn) drainDir(dir Dir, out func(Dir, []byte, int64)) bool {
	d := &c.dirs[dir]
	off := 0
	for off < len(d.held) && c.err == nil {
		ts := int64(binary.BigEndian.Uint64(d.held[off:]))
		hdr := d.held[off+8 : off+heldOverhead]
		n := int(binary.BigEndian.Uint16(hdr[3:]))
		body := d.held[off+heldOverhead : off+heldOverhead+n]
		if c.process(dir, hdr, body, ts, out) {
			break
		}
		off += heldOverhead + n
		c.held -= heldOverhead + n
	}
	if c.err != nil || off == 0 {
		return false
	}
	rest := copy(d.held, d.held[off:])
	clear(d.held[rest:])
	d.held = d.held[:rest]
	if rest == 0 {
		d.held = nil
		d.wait = waitNone
	}
	return true
}

// process handles one whole record of dir. It reports true when the record
// must wait (it is then unchanged, and nothing was done); otherwise it has
// been consumed, or c.err is set.
func (c *Conn) process(dir Dir, hdr, body []byte, ts int64, out func(Dir, []byte, int64)) bool {
	d := &c.dirs[dir]
	if d.done {
		return false
	}
	typ := hdr[0]
	if !d.encrypted {
		switch typ {
		case typeHandshake:
			c.scanHandshake(dir, d, body, false)
			return false
		case typeAlert:
			d.done = true // a plaintext alert: the handshake failed
			return false
		case typeChangeCipherSpec:
			switch c.version {
			case 0:
				d.wait = waitServerHello
				return true
			case versionTLS13:
				return false // middlebox compatibility, ignored
			}
			d.encrypted = true
			d.seq = 0
			d.hs.reset()
			return false
		case typeApplicationData:
			switch c.version {
			case 0:
				d.wait = waitServerHello
				return true
			case versionTLS12:
				c.fail(fmt.Errorf("%w: TLS 1.2 %s application data before ChangeCipherSpec", ErrNotTLS, dir))
				return false
			}
			d.encrypted = true
			d.hs.reset()
		default:
			return false // heartbeat
		}
	}
	if c.version == versionTLS13 {
		return c.record13(dir, d, hdr, body, ts, out)
	}
	return c.record12(dir, d, hdr, body, ts, out)
}

// record13 handles a TLS 1.3 record after the direction's first encrypted
// one.
func (c *Conn) record13(dir Dir, d *direction, hdr, body []byte, ts int64, out func(Dir, []byte, int64)) bool {
	switch hdr[0] {
	case typeChangeCipherSpec, typeHeartbeat:
		return false
	case typeAlert:
		d.done = true
		return false
	case typeHandshake:
		if !d.synced {
			// A second ClientHello after a HelloRetryRequest may follow
			// rejected early data.
			c.scanHandshake(dir, d, body, false)
			return false
		}
		c.fail(fmt.Errorf("%w: TLS 1.3 %s plaintext handshake record after application data", ErrNotTLS, dir))
		return false
	}
	if len(body) > maxCiphertext3 {
		c.fail(fmt.Errorf("%w: %s record of %d bytes, TLS 1.3 allows %d", ErrRecordTooLong, dir, len(body), maxCiphertext3))
		return false
	}
	if d.aead == nil {
		if !c.haveRandom {
			d.wait = waitClientRandom
			return true
		}
		which := secretClient
		if d.role == roleServer {
			which = secretServer
		}
		secret := c.keys.secret(&c.clientRandom, which)
		if secret == nil {
			d.wait = waitSecret
			return true
		}
		if err := c.setup13(dir, d, secret); err != nil {
			c.fail(err)
			return false
		}
	}
	d.nonce = d.iv
	for i := 0; i < 8; i++ {
		d.nonce[4+i] ^= byte(d.seq >> (56 - 8*i))
	}
	if c.scratch == nil {
		c.scratch = make([]byte, 0, maxCiphertext2)
	}
	pt, err := d.aead.Open(c.scratch[:0], d.nonce[:], body, hdr)
	if err != nil {
		if d.synced {
			c.fail(fmt.Errorf("%w: TLS 1.3 %s record %d (%d bytes) failed authentication under the %s application traffic secret (suite 0x%04x)",
				ErrDecrypt, dir, d.seq, len(body), d.role, c.suite.id))
			return false
		}
		d.skipBytes += headerLen + len(body)
		d.skipRecs++
		if d.skipBytes > maxSkipBytes || d.skipRecs > maxSkipRecords {
			c.fail(fmt.Errorf("%w: none of the first %d TLS 1.3 %s records (%d bytes) decrypted under the logged %s application traffic secret (suite 0x%04x); skipping at most %d records or %d bytes of encrypted handshake",
				ErrDecrypt, d.skipRecs, dir, d.skipBytes, d.role, c.suite.id, maxSkipRecords, maxSkipBytes))
		}
		return false
	}
	if !d.synced {
		d.synced = true
		d.hs.reset() // post-handshake messages start on a record boundary
	}
	d.seq++
	i := len(pt) - 1
	for i >= 0 && pt[i] == 0 {
		i--
	}
	if i < 0 {
		c.fail(fmt.Errorf("%w: TLS 1.3 %s record %d has no content type (all padding)", ErrDecrypt, dir, d.seq-1))
		return false
	}
	inner, content := pt[i], pt[:i]
	switch inner {
	case typeApplicationData:
		if len(content) > 0 {
			out(dir, content, ts)
		}
	case typeHandshake:
		c.scanHandshake(dir, d, content, true)
		if d.keyUpdate && c.err == nil {
			d.keyUpdate = false
			if err := c.updateKey13(dir, d); err != nil {
				c.fail(err)
			}
		}
	case typeAlert:
		d.done = true
	default:
		c.fail(fmt.Errorf("%w: TLS 1.3 %s record %d has inner content type %d", ErrNotTLS, dir, d.seq-1, inner))
	}
	return false
}

// setup13 keys d from a TLS 1.3 application traffic secret.
func (c *Conn) setup13(dir Dir, d *direction, secret []byte) error {
	s := c.suite
	if len(secret) != s.hashLen {
		return fmt.Errorf("%w: the logged %s traffic secret for the %s direction is %d bytes, suite 0x%04x needs %d",
			ErrDecrypt, d.role, dir, len(secret), s.id, s.hashLen)
	}
	key, err := expandLabel(s.hash, secret, "key", s.keyLen)
	if err != nil {
		return err
	}
	defer clear(key)
	iv, err := expandLabel(s.hash, secret, "iv", s.ivLen)
	if err != nil {
		return err
	}
	defer clear(iv)
	aead, err := newAEAD(s, key)
	if err != nil {
		return fmt.Errorf("%w: suite 0x%04x: %v", ErrUnsupported, s.id, err)
	}
	d.aead = aead
	clear(d.secret[:])
	d.secretLen = copy(d.secret[:], secret)
	copy(d.iv[:], iv)
	d.seq = 0
	return nil
}

// updateKey13 applies a KeyUpdate: the next traffic secret is
// HKDF-Expand-Label(secret, "traffic upd", "", Hash.length) (RFC 8446
// section 7.2).
func (c *Conn) updateKey13(dir Dir, d *direction) error {
	next, err := expandLabel(c.suite.hash, d.secret[:d.secretLen], "traffic upd", c.suite.hashLen)
	if err != nil {
		return err
	}
	defer clear(next)
	return c.setup13(dir, d, next)
}

// record12 handles a TLS 1.2 record after the direction's ChangeCipherSpec.
func (c *Conn) record12(dir Dir, d *direction, hdr, body []byte, ts int64, out func(Dir, []byte, int64)) bool {
	s := c.suite
	switch hdr[0] {
	case typeChangeCipherSpec:
		c.fail(fmt.Errorf("%w: TLS 1.2 renegotiation (a second ChangeCipherSpec in the %s direction)", ErrUnsupported, dir))
		return false
	case typeAlert:
		d.done = true
		return false
	}
	if d.aead == nil {
		if !c.haveRandom {
			d.wait = waitClientRandom
			return true
		}
		master := c.keys.secret(&c.clientRandom, secretMaster)
		if master == nil {
			d.wait = waitSecret
			return true
		}
		if err := c.setup12(d, master); err != nil {
			c.fail(err)
			return false
		}
	}
	if len(body) < s.explicitNonce+tagLen12 {
		what := "the tag"
		if s.explicitNonce > 0 {
			what = "nonce and tag"
		}
		c.fail(fmt.Errorf("%w: TLS 1.2 %s record %d of %d bytes is shorter than %s", ErrDecrypt, dir, d.seq, len(body), what))
		return false
	}
	if c.scratch == nil {
		c.scratch = make([]byte, 0, maxCiphertext2)
	}
	pt, err := open12(s, d.aead, &d.iv, d.seq, hdr, body, &d.nonce, &d.aad, c.scratch[:0])
	if err != nil {
		c.fail(fmt.Errorf("%w: TLS 1.2 %s record %d (type %d, %d bytes) failed authentication under the keys from the logged master secret (suite 0x%04x)",
			ErrDecrypt, dir, d.seq, hdr[0], len(body), s.id))
		return false
	}
	d.seq++
	if hdr[0] == typeApplicationData && len(pt) > 0 {
		out(dir, pt, ts)
	}
	// Handshake (the Finished first) and heartbeat records are skipped.
	return false
}

// setup12 keys d from the TLS 1.2 master secret: key_block = PRF(master,
// "key expansion", server_random + client_random) split into the MAC keys
// (none for AEAD suites), client and server write keys, client and server
// IVs (RFC 5246 section 6.3).
func (c *Conn) setup12(d *direction, master []byte) error {
	s := c.suite
	var kbuf [maxKeyBlock12]byte
	kb := kbuf[:keyBlockLen12(s)]
	defer clear(kb)
	p := newPHash(s.hash)
	defer p.zero()
	p.keyBlock12(kb, master, &c.serverRandom, &c.clientRandom)
	key, iv := keys12(s, kb, d.role)
	aead, err := newAEAD(s, key)
	if err != nil {
		return fmt.Errorf("%w: suite 0x%04x: %v", ErrUnsupported, s.id, err)
	}
	d.aead = aead
	clear(d.iv[:])
	copy(d.iv[:], iv)
	return nil
}

// tagLen12 is the AEAD tag length of the TLS 1.2 suites.
const tagLen12 = 16

// open12 opens body, a TLS 1.2 record of suite s with header hdr and
// sequence number seq, protected by aead with the direction's write IV iv,
// appending the plaintext to dst; nonce and aad are the caller's scratch.
// body holds at least s.explicitNonce+tagLen12 bytes. The nonce is the
// IV's 4 bytes and the record's explicit 8 (AES-GCM, RFC 5288) or the IV
// XOR the sequence number (ChaCha20-Poly1305, RFC 7905); the additional
// data is seq_num + type + version + length (RFC 5246 section 6.2.3.3).
func open12(s *suite, aead cipher.AEAD, iv *[12]byte, seq uint64, hdr, body []byte, nonce *[12]byte, aad *[13]byte, dst []byte) ([]byte, error) {
	ct := body
	if s.explicitNonce > 0 {
		copy(nonce[:4], iv[:4])
		copy(nonce[4:], body[:8])
		ct = body[8:]
	} else {
		*nonce = *iv
		for i := 0; i < 8; i++ {
			nonce[4+i] ^= byte(seq >> (56 - 8*i))
		}
	}
	binary.BigEndian.PutUint64(aad[:8], seq)
	aad[8] = hdr[0]
	aad[9], aad[10] = hdr[1], hdr[2]
	binary.BigEndian.PutUint16(aad[11:], uint16(len(ct)-tagLen12))
	return aead.Open(dst, nonce[:], ct, aad[:])
}

// scanHandshake follows the handshake messages in p, a record's handshake
// bytes (post: decrypted TLS 1.3 post-handshake messages).
func (c *Conn) scanHandshake(dir Dir, d *direction, p []byte, post bool) {
	s := &d.hs
	for len(p) > 0 && c.err == nil {
		if s.hdrN < 4 {
			n := copy(s.hdr[s.hdrN:], p)
			s.hdrN += n
			p = p[n:]
			if s.hdrN < 4 {
				return
			}
			s.msgType = s.hdr[0]
			s.bodyLen = int(s.hdr[1])<<16 | int(s.hdr[2])<<8 | int(s.hdr[3])
			s.remain = s.bodyLen
			s.want = c.captureWant(dir, d, post)
			if c.err != nil {
				return
			}
			if s.want > cap(s.buf) {
				s.buf = make([]byte, 0, s.want)
			}
			s.buf = s.buf[:0]
		}
		n := min(len(p), s.remain)
		if k := min(n, s.want-len(s.buf)); k > 0 {
			s.buf = append(s.buf, p[:k]...)
		}
		s.remain -= n
		p = p[n:]
		if s.remain == 0 {
			c.handshakeMessage(dir, d, post)
			s.hdrN = 0
		}
	}
}

// captureWant decides, at the header of a handshake message, how many of
// its body bytes to keep; it also assigns the direction's role from its
// first message.
func (c *Conn) captureWant(dir Dir, d *direction, post bool) int {
	s := &d.hs
	if post {
		if s.msgType == msgKeyUpdate {
			return 1
		}
		return 0
	}
	if d.role == roleUnknown {
		switch s.msgType {
		case msgClientHello:
			d.role = roleClient
		case msgServerHello:
			d.role = roleServer
		default:
			c.fail(fmt.Errorf("%w: the first handshake message of the %s direction is type %d, neither ClientHello nor ServerHello", ErrNotTLS, dir, s.msgType))
			return 0
		}
		if c.dirs[1-dir].role == d.role {
			c.fail(fmt.Errorf("%w: both directions start with a %s hello", ErrNotTLS, d.role))
			return 0
		}
	}
	switch {
	case d.role == roleClient && s.msgType == msgClientHello && !c.haveRandom:
		return 2 + 32 // legacy_version, random
	case d.role == roleServer && s.msgType == msgServerHello && !c.helloDone:
		return min(s.bodyLen, maxServerHello)
	}
	return 0
}

// handshakeMessage acts on a whole handshake message whose kept bytes are
// in d.hs.buf.
func (c *Conn) handshakeMessage(dir Dir, d *direction, post bool) {
	s := &d.hs
	if post {
		if s.msgType == msgKeyUpdate {
			if s.bodyLen != 1 || s.buf[0] > 1 {
				c.fail(fmt.Errorf("%w: TLS 1.3 %s KeyUpdate of %d bytes", ErrNotTLS, dir, s.bodyLen))
				return
			}
			d.keyUpdate = true
		}
		return
	}
	switch {
	case s.want == 0:
	case s.msgType == msgClientHello:
		if len(s.buf) < 34 {
			c.fail(fmt.Errorf("%w: ClientHello of %d bytes, too short for a client random", ErrNotTLS, s.bodyLen))
			return
		}
		copy(c.clientRandom[:], s.buf[2:34])
		c.haveRandom = true
	case s.msgType == msgServerHello:
		c.serverHello(s.buf, s.bodyLen)
	}
	clear(s.buf)
	s.buf = nil
	s.want = 0
}

// serverHello parses a ServerHello body (b, the first bytes of bodyLen)
// for the version and cipher suite.
func (c *Conn) serverHello(b []byte, bodyLen int) {
	if len(b) < 35 {
		c.fail(fmt.Errorf("%w: ServerHello of %d bytes", ErrNotTLS, bodyLen))
		return
	}
	version := binary.BigEndian.Uint16(b)
	random := [32]byte(b[2:34])
	hrr := random == helloRetryRandom
	if !hrr && len(b) < bodyLen {
		c.fail(fmt.Errorf("%w: ServerHello of %d bytes, over the %d bytes parsed", ErrUnsupported, bodyLen, maxServerHello))
		return
	}
	p := 35 + int(b[34]) // session id
	if len(b) < p+3 {
		c.fail(fmt.Errorf("%w: ServerHello of %d bytes ends before its cipher suite", ErrNotTLS, bodyLen))
		return
	}
	id := binary.BigEndian.Uint16(b[p:])
	p += 3 // cipher suite, compression method
	if len(b) >= p+2 {
		exts := b[p+2:]
		if n := int(binary.BigEndian.Uint16(b[p:])); n < len(exts) {
			exts = exts[:n]
		}
		for len(exts) >= 4 {
			typ := binary.BigEndian.Uint16(exts)
			n := int(binary.BigEndian.Uint16(exts[2:]))
			exts = exts[4:]
			if n > len(exts) {
				break
			}
			if typ == 43 && n == 2 { // supported_versions
				version = binary.BigEndian.Uint16(exts)
			}
			exts = exts[n:]
		}
	}
	if hrr {
		version = versionTLS13 // a HelloRetryRequest exists only in TLS 1.3
	}
	if version != versionTLS12 && version != versionTLS13 {
		c.fail(fmt.Errorf("%w: TLS version 0x%04x (cipher suite 0x%04x); only TLS 1.2 (0x0303) and 1.3 (0x0304) are decrypted", ErrUnsupported, version, id))
		return
	}
	s := lookupSuite(id, version)
	if s == nil {
		name := "TLS 1.2"
		if version == versionTLS13 {
			name = "TLS 1.3"
		}
		c.fail(fmt.Errorf("%w: cipher suite 0x%04x in %s; decrypted are the AEAD suites (TLS 1.3: 0x1301-0x1303; TLS 1.2: AES-GCM and ChaCha20-Poly1305)", ErrUnsupported, id, name))
		return
	}
	if c.version != 0 && (c.version != version || c.suite.id != id) {
		c.fail(fmt.Errorf("%w: ServerHello (version 0x%04x, suite 0x%04x) disagrees with the HelloRetryRequest (0x%04x, 0x%04x)",
			ErrNotTLS, version, id, c.version, c.suite.id))
		return
	}
	c.version, c.suite = version, s
	if !hrr {
		c.serverRandom = random
		c.helloDone = true
	}
}
