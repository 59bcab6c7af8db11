package genai

import (
	"bytes"
	"slices"

	"github.com/xpuscope/xpuscope/internal/httpbpf"
	"github.com/xpuscope/xpuscope/internal/tlsdecrypt"
)

// OpenSSL read by connection. OpenSSL logs no secrets unless the program
// asks it to, and keeps them in its connection object (the SSL) at
// offsets each build chooses: nothing exported says where. The kernel
// side copies the object as the handshake ends (httpbpf.KindState); the
// capture finds, in the first such copy of a connection of a build, the
// client random (by the one its ClientHello carried) and the TLS 1.3
// application traffic secrets, by trial decryption of the connection's
// first records (tlsdecrypt.Conn.FindTrafficSecret): the build's layout,
// from which every later connection's secrets are read at once.

// sslLayout is where a libssl build keeps, in a connection's object, the
// client random and the two application traffic secrets, as offsets.
type sslLayout struct {
	random, client, server int
}

// sslCalibration is a connection whose object's layout is being learned:
// the copy of its object (zeroed once done), and the offsets found so
// far (-1: not yet).
type sslCalibration struct {
	state  []byte
	layout sslLayout
	// scanned are, by direction, the calls of the connection seen at
	// the last scan: a direction is scanned again only once more of its
	// records came.
	scanned [2]uint32
	scans   int
}

// Bounds on learning layouts.
const (
	// maxLayouts bounds the libssl builds whose layouts are kept; a
	// layout that decrypted nothing (another build's, with the client
	// random at the same offset) is dropped.
	maxLayouts = 8
	// maxScans bounds the scans of one connection's object: each tries
	// every offset of it (a few ms), against the records come since the
	// last.
	maxScans = 8
	// maxCalibrations bounds the connections whose objects are scanned
	// over the capture's life: where no layout is found (a build that
	// keeps its secrets past httpbpf.StateBytes), each connection would
	// cost a scan.
	maxCalibrations = 32
)

// state takes a copy of an OpenSSL connection's object, made as its
// handshake ended: it gives the secrets to the process's connection of
// the same client random, read at its socket, which waits for them (its
// handshake's records are held). A copy that names no such connection
// (one over no socket the capture reads: a handshake whose first bytes
// came outside the kernel side's window) is counted.
func (t *connTable) state(r *httpbpf.Record) {
	var match *capConn
	for cc := range t.waiting {
		if cc.key.pid != r.PID || cc.calib != nil {
			continue
		}
		rnd, ok := cc.tls.ClientRandom()
		if !ok {
			continue
		}
		if l := t.layoutOf(r.Data, &rnd); l != nil {
			t.readSecrets(cc, l, r.Data, &rnd)
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
	switch {
	case match.tls.SecretLen() == 0:
		t.undecrypted(match) // TLS 1.2, whose master secret OpenSSL keeps elsewhere
	case t.calibrations >= maxCalibrations:
		t.undecrypted(match)
	default:
		t.calibrations++
		match.calib = &sslCalibration{state: bytes.Clone(r.Data),
			layout: sslLayout{random: bytes.Index(r.Data, rnd[:]), client: -1, server: -1}}
		t.calibrate(match)
	}
}

// layoutOf returns the known layout whose client random, in state, is
// rnd; nil if none.
func (t *connTable) layoutOf(state []byte, rnd *[32]byte) *sslLayout {
	for _, l := range t.layouts {
		if l.random+len(rnd) <= len(state) && bytes.Equal(state[l.random:l.random+len(rnd)], rnd[:]) {
			return l
		}
	}
	return nil
}

// readSecrets gives cc the secrets state holds where l says, and
// decrypts what waited for them.
func (t *connTable) readSecrets(cc *capConn, l *sslLayout, state []byte, rnd *[32]byte) {
	n := cc.tls.SecretLen()
	if n == 0 || l.client+n > len(state) || l.server+n > len(state) {
		t.undecrypted(cc) // TLS 1.2 (or no ServerHello seen): not in the object
		return
	}
	keys := cc.proc.keys
	if keys.Add(tlsdecrypt.LabelClientTraffic, rnd[:], state[l.client:l.client+n]) != nil ||
		keys.Add(tlsdecrypt.LabelServerTraffic, rnd[:], state[l.server:l.server+n]) != nil {
		t.undecrypted(cc)
		return
	}
	cc.layout = l
	t.decrypted(cc, cc.tls.Retry(cc.plaintext))
}

// calibrate scans cc's object for the secrets of the directions whose
// records came since its last scan, and, once it has both, learns the
// build's layout.
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
		l := c.layout
		t.layouts = append(t.layouts, &l)
		if len(t.layouts) > maxLayouts {
			t.layouts = slices.Delete(t.layouts, 0, 1)
		}
		cc.layout = &l
	case c.scans < maxScans:
		return
	default:
		defer t.undecrypted(cc)
	}
	clear(c.state)
	cc.calib = nil
}

// sslSecretHints are offsets where libssl builds are known to keep an
// application traffic secret in a connection's object, tried before the
// whole object is: Debian 12's OpenSSL 3.0 (x86-64), the client's and
// the server's. A hint is only an order: what it finds is tried by
// decryption like any offset.
var sslSecretHints = []int{1860, 1924}

// findSecret finds in state the application traffic secret of dir's
// sender on cc: at the offsets of the layouts learned and of
// sslSecretHints first (a trial each), then at every offset (a few ms).
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
