package genai

import (
	"bytes"
	"encoding/binary"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/httpbpf"
	"github.com/xpuscope/xpuscope/internal/tlsdecrypt"
)

// OpenSSL read by connection. OpenSSL logs no secrets unless the program
// asks it to, and keeps them in its connection object (the SSL) at
// offsets each build chooses: nothing exported says where. The kernel
// side copies the object as the handshake ends (httpbpf.KindState); the
// capture finds, in the first such copy of a connection of a build, the
// client random (by the one its ClientHello carried) and the secrets, by
// trial decryption of the connection's first records: the build's
// layout, from which every later connection's secrets are read at once.
// TLS 1.3's application traffic secrets are in the object
// (tlsdecrypt.Conn.FindTrafficSecret); TLS 1.2's master secret is in its
// session, another object the SSL points to, read from the process's
// memory while it runs (tlsdecrypt.Conn.FindMasterSecret).

// sslLayout is where a libssl build keeps, in a connection's object, the
// client random and the two TLS 1.3 application traffic secrets, and the
// pointer to its session, in whose object the TLS 1.2 master secret is,
// as offsets; -1: not learned yet (a layout learned from a TLS 1.3
// connection knows nothing of the session until a TLS 1.2 one).
type sslLayout struct {
	random, client, server int
	session, master        int
}

// sslCalibration is a connection whose TLS 1.3 secrets are being looked
// for in its object: the copy of the object (zeroed once done), and the
// layout being filled in.
type sslCalibration struct {
	state  []byte
	layout *sslLayout
	known  bool // layout is among the connTable's already
	// scanned are, by direction, the calls of the connection seen at
	// the last scan (or at the handshake's end): a direction is scanned
	// again only once more of its records came.
	scanned [2]uint32
	scans   int
}

// Bounds on learning layouts.
const (
	// maxLayouts bounds the libssl builds whose layouts are kept; a
	// layout whose secrets decrypted nothing (another build's, with the
	// client random at the same offset) is dropped.
	maxLayouts = 8
	// maxScans bounds the scans of one connection's object: each tries
	// every offset of it (~25 ms), against the records come since the
	// last.
	maxScans = 8
	// maxCalibrations bounds the connections whose objects are scanned
	// over the capture's life, for TLS 1.3's secrets and apart for TLS
	// 1.2's: where no layout is found (a build that keeps its secrets
	// past httpbpf.StateBytes, a TLS 1.2 suite not decrypted), each
	// connection would cost a scan.
	maxCalibrations = 32
	// maxSessionPointers bounds the pointers of an object tried as its
	// session's, in the process's memory, when no layout says which it
	// is.
	maxSessionPointers = 256
)

// Hints: offsets where libssl builds are known to keep what a layout
// says, tried before every offset is. A hint is only an order: what it
// finds is tried by decryption like any offset. Debian 12's OpenSSL 3.0
// (x86-64): the TLS 1.3 client and server secrets, the session pointer,
// and the master secret in the session (at the same offset in 1.1.1).
var (
	sslSecretHints  = []int{1860, 1924}
	sslSessionHints = []int{2328}
	sslMasterHints  = []int{80}
)

// state takes a copy of an OpenSSL connection's object, made as its
// handshake ended: it gives the secrets to the process's connection of
// the same client random, read at its socket, which waits for them (its
// handshake's records are held). A copy that names no such connection
// (one over no socket the capture reads: a handshake whose first bytes
// came outside the kernel side's window) is counted.
func (t *connTable) state(r *httpbpf.Record) {
	if p := t.procs[r.PID]; p != nil && p.keys != nil {
		for _, l := range t.layouts {
			if rnd, ok := l.randomIn(r.Data); ok && p.keys.Has(rnd) {
				return // SSL_do_handshake called again on a connection read
			}
		}
	}
	var match *capConn
	for cc := range t.waiting {
		if cc.key.pid != r.PID || cc.calib != nil || cc.ssl != 0 {
			continue
		}
		rnd, ok := cc.tls.ClientRandom()
		if !ok {
			continue
		}
		if l := t.layoutOf(r.Data, &rnd); l != nil {
			t.readSecrets(cc, l, r)
			return
		}
		if match == nil && bytes.Contains(r.Data, rnd[:]) {
			match = cc
		}
	}
	if match == nil {
		t.unmatchedStates++
		return
	}
	rnd, _ := match.tls.ClientRandom()
	l := &sslLayout{random: bytes.Index(r.Data, rnd[:]), client: -1, server: -1, session: -1, master: -1}
	t.learn(match, l, false, r)
}

// learn learns from cc's object (r's data) what its TLS version needs of
// l (known: among the layouts already), and decrypts cc with it.
func (t *connTable) learn(cc *capConn, l *sslLayout, known bool, r *httpbpf.Record) {
	if cc.tls.Version() == tlsdecrypt.VersionTLS12 {
		t.awaitSession(cc, l, known, r)
		return
	}
	if t.calibrations >= maxCalibrations {
		t.undecrypted(cc)
		return
	}
	t.calibrations++
	// Scanned from the next records on: those held now are the
	// handshake's, under its keys, which no application secret opens.
	cc.calib = &sslCalibration{state: bytes.Clone(r.Data), layout: l, known: known, scanned: cc.seq}
}

// addLayout keeps l, dropping the oldest past maxLayouts, and has the
// kernel side copy the sessions where the layouts say.
func (t *connTable) addLayout(l *sslLayout) {
	t.layouts = append(t.layouts, l)
	if len(t.layouts) > maxLayouts {
		t.layouts = slices.Delete(t.layouts, 0, 1)
	}
	if l.session >= 0 {
		t.setSessionOffsets()
	}
}

// sessionOffsets are where the kernel side finds a session's pointer in a
// connection's object: the hint's, and the last layout's learned where
// another is.
func (t *connTable) sessionOffsets() [2]uint32 {
	offs := [2]uint32{uint32(sslSessionHints[0])}
	for _, l := range slices.Backward(t.layouts) {
		if l.session >= 0 && l.session != sslSessionHints[0] {
			offs[1] = uint32(l.session)
			break
		}
	}
	return offs
}

// setSessionOffsets tells the kernel side sessionOffsets, where they
// changed since it was last told.
func (t *connTable) setSessionOffsets() {
	offs := t.sessionOffsets()
	if t.kernel == nil || offs == t.sessionOffs {
		return
	}
	if t.kernel.SetSessionOffsets(offs) == nil {
		t.sessionOffs = offs
	}
}

// randomIn returns the client random that state holds where l says.
func (l *sslLayout) randomIn(state []byte) (rnd [32]byte, ok bool) {
	if l.random < 0 || l.random+len(rnd) > len(state) {
		return rnd, false
	}
	return [32]byte(state[l.random:]), true
}

// layoutOf returns the known layout whose client random, in state, is
// rnd; nil if none.
func (t *connTable) layoutOf(state []byte, rnd *[32]byte) *sslLayout {
	for _, l := range t.layouts {
		if in, ok := l.randomIn(state); ok && in == *rnd {
			return l
		}
	}
	return nil
}

// readSecrets gives cc the secrets its object (r's data) holds where l
// says, or learns what l does not say yet, and decrypts what waited for
// them. A TLS 1.2 connection's come with its session (session).
func (t *connTable) readSecrets(cc *capConn, l *sslLayout, r *httpbpf.Record) {
	n := cc.tls.SecretLen()
	if n == 0 || l.client < 0 || l.server < 0 {
		t.learn(cc, l, true, r)
		return
	}
	rnd, _ := cc.tls.ClientRandom()
	keys, state := cc.proc.keys, r.Data
	if l.client+n > len(state) || l.server+n > len(state) ||
		keys.Add(tlsdecrypt.LabelClientTraffic, rnd[:], state[l.client:l.client+n]) != nil ||
		keys.Add(tlsdecrypt.LabelServerTraffic, rnd[:], state[l.server:l.server+n]) != nil {
		t.undecrypted(cc)
		return
	}
	cc.layout = l
	t.decrypted(cc, cc.tls.Retry(cc.plaintext))
}

// awaitSession has cc's TLS 1.2 connection, whose object is r's data,
// wait for the copy of its session (session), where its master secret
// is. Where l does not say where the session is yet, it is looked for in
// the process's memory at once (learnSession): the kernel side copies
// the sessions only where it is told to.
func (t *connTable) awaitSession(cc *capConn, l *sslLayout, known bool, r *httpbpf.Record) {
	cc.ssl, cc.layout, cc.layoutKnown = r.Conn, l, known
	if l.session < 0 && t.sessionSearches < maxCalibrations {
		t.sessionSearches++
		t.learnSession(cc, r)
	}
}

// session takes the copy of a TLS 1.2 connection's session, which the
// kernel side sends after its object's: its master secret decrypts the
// connection that waits for it.
func (t *connTable) session(r *httpbpf.Record) {
	for cc := range t.waiting {
		if cc.key.pid != r.PID || cc.ssl != r.Conn {
			continue
		}
		l := cc.layout
		if l.session >= 0 && uint32(l.session) != r.Seq {
			return // the copy where another build keeps its session
		}
		var (
			off int
			ok  bool
		)
		if l.master >= 0 {
			_, ok = cc.tls.FindMasterSecret(r.Data[l.master:min(l.master+48, len(r.Data))])
			off = l.master
		} else {
			off, ok = findMaster(cc.tls, r.Data)
		}
		if ok {
			t.gotMaster(cc, r.Data[off:off+48], int(r.Seq), off)
		}
		return
	}
}

// gotMaster gives cc its master secret, found in its session, which its
// object points to at sessionOff, at masterOff; and keeps the layout.
func (t *connTable) gotMaster(cc *capConn, master []byte, sessionOff, masterOff int) {
	l := cc.layout
	l.session, l.master = sessionOff, masterOff
	if !cc.layoutKnown {
		t.addLayout(l)
		cc.layoutKnown = true
	} else {
		t.setSessionOffsets() // a known layout's session, learned now
	}
	cc.ssl = 0
	rnd, _ := cc.tls.ClientRandom()
	if cc.proc.keys.Add(tlsdecrypt.LabelTLS12, rnd[:], master) != nil {
		t.undecrypted(cc)
		return
	}
	t.decrypted(cc, cc.tls.Retry(cc.plaintext))
}

// sessionPointer returns the pointer state holds at off, 8 bytes little
// endian (the architectures the capture runs on).
func sessionPointer(state []byte, off int) (uint64, bool) {
	if off < 0 || off+8 > len(state) {
		return 0, false
	}
	p := binary.LittleEndian.Uint64(state[off:])
	return p, p != 0
}

// readProcessMemory reads len(b) bytes at addr in process pid.
func readProcessMemory(pid uint32, addr uint64, b []byte) error {
	local := []unix.Iovec{{Base: &b[0]}}
	local[0].SetLen(len(b))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(b)}}
	n, err := unix.ProcessVMReadv(int(pid), local, remote, 0)
	if err == nil && n != len(b) {
		err = unix.EFAULT
	}
	return err
}

// learnSession looks, for cc's TLS 1.2 connection, for its session among
// what the pointers of its object (r's data) point to in the process
// (those that point near it, as a session allocated beside it does), and
// for the master secret in it, by decryption. It works while the
// connection is open: OpenSSL wipes the session as it frees it.
func (t *connTable) learnSession(cc *capConn, r *httpbpf.Record) {
	state := r.Data
	var session [httpbpf.SessionBytes]byte
	defer clear(session[:])
	tried := 0
	for off := 0; off+8 <= len(state) && tried < maxSessionPointers; off += 8 {
		ptr, ok := sessionPointer(state, off)
		if !ok || ptr%8 != 0 || !near(ptr, r.Conn) {
			continue
		}
		tried++
		if t.readMemory(r.PID, ptr, session[:]) != nil {
			continue
		}
		if master, ok := findMaster(cc.tls, session[:]); ok {
			t.gotMaster(cc, session[master:master+48], off, master)
			return
		}
	}
}

// findMaster finds the TLS 1.2 master secret of c in session: at the
// hints first, then at every offset.
func findMaster(c *tlsdecrypt.Conn, session []byte) (int, bool) {
	for _, off := range sslMasterHints {
		if off+48 <= len(session) {
			if at, ok := c.FindMasterSecret(session[off : off+48]); ok && at == 0 {
				return off, true
			}
		}
	}
	return c.FindMasterSecret(session)
}

// near says whether pointer p is within 1 GiB of the object at obj: a
// heap pointer of the same process's, plausibly.
func near(p, obj uint64) bool {
	const span = 1 << 30
	return p+span > obj && p < obj+span
}

// calibrate scans cc's object for the TLS 1.3 secrets of the directions
// whose records came since its last scan, and, once it has both, keeps
// the build's layout.
func (t *connTable) calibrate(cc *capConn) {
	c := cc.calib
	rnd, _ := cc.tls.ClientRandom()
	// The client's records are the ones cc's process wrote, where it is
	// the client.
	clientDir, serverDir := tlsdecrypt.Write, tlsdecrypt.Read
	if !cc.wroteHello {
		clientDir, serverDir = serverDir, clientDir
	}
	for _, s := range []struct {
		dir   tlsdecrypt.Dir
		off   *int
		label string
	}{{clientDir, &c.layout.client, tlsdecrypt.LabelClientTraffic}, {serverDir, &c.layout.server, tlsdecrypt.LabelServerTraffic}} {
		d := 0
		if s.dir == tlsdecrypt.Read {
			d = 1
		}
		if *s.off >= 0 || cc.seq[d] == c.scanned[d] {
			continue
		}
		c.scanned[d] = cc.seq[d]
		c.scans++
		off, ok := t.findSecret(cc, s.dir, c.state)
		if !ok {
			continue
		}
		*s.off = off
		if cc.proc.keys.Add(s.label, rnd[:], c.state[off:off+cc.tls.SecretLen()]) != nil {
			break
		}
		t.decrypted(cc, cc.tls.Retry(cc.plaintext))
	}
	switch {
	case cc.muted: // given up while its records were decrypted
	case c.layout.client >= 0 && c.layout.server >= 0:
		if !c.known {
			t.addLayout(c.layout)
		}
		cc.layout = c.layout
	case c.scans < maxScans:
		return
	default:
		defer t.undecrypted(cc)
	}
	clear(c.state)
	cc.calib = nil
}

// findSecret finds in state the application traffic secret of dir's
// sender on cc: at the offsets of the layouts learned and of
// sslSecretHints first (a trial each), then at every offset.
func (t *connTable) findSecret(cc *capConn, dir tlsdecrypt.Dir, state []byte) (int, bool) {
	n := cc.tls.SecretLen()
	try := func(off int) bool {
		if off < 0 || off+n > len(state) {
			return false
		}
		at, ok := cc.tls.FindTrafficSecret(dir, state[off:off+n])
		return ok && at == 0
	}
	for _, l := range t.layouts {
		for _, off := range []int{l.client, l.server} {
			if try(off) {
				return off, true
			}
		}
	}
	for _, off := range sslSecretHints {
		if try(off) {
			return off, true
		}
	}
	return cc.tls.FindTrafficSecret(dir, state)
}

// forgetLayout drops cc's layout, which its secrets came by, when they
// did not decrypt it: another build's, which keeps its client random
// where this one does.
func (t *connTable) forgetLayout(cc *capConn) {
	if cc.layout != nil {
		t.layouts = slices.DeleteFunc(t.layouts, func(l *sslLayout) bool { return l == cc.layout })
		cc.layout = nil
	}
}
