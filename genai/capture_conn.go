package genai

import (
	"container/list"
	"errors"
	"net/textproto"
	"slices"
	"strings"
	"time"

	"github.com/xpuscope/xpuscope/genai/internal/httpframe"
	"github.com/xpuscope/xpuscope/internal/httpbpf"
	"github.com/xpuscope/xpuscope/internal/tlsdecrypt"
	"github.com/xpuscope/xpuscope/semconv"
)

// connKey names a captured connection: the process, its SSL pointer or
// socket descriptor, and its number on the host, which tells it from the
// earlier connections that had the same pointer or descriptor.
type connKey struct {
	pid  uint32
	src  httpbpf.Source
	conn uint64
	gen  uint32
}

// capConn is a connection being reassembled.
type capConn struct {
	key   connKey
	frame *httpframe.Conn
	// seq is, by direction, the number of the call whose bytes came
	// last; next the offset its next record starts at, 0 when the call
	// is complete.
	seq, next [2]uint32
	seen      time.Time // when bytes last came
	elem      *list.Element
	proc      *capProc
	// muted: not an LLM API's; the kernel side was told to send no more
	// of its bytes. Those already sent are skipped; its close ends it.
	muted bool
	// notLLM counts the exchanges in a row that were no LLM API call;
	// carriedLLM is set once one was (its connection is never muted).
	notLLM     int
	carriedLLM bool
	// lives are the responses being parsed as they arrive: one at a
	// time over HTTP/1.x, one per stream over HTTP/2.
	lives []*liveCall
	// closing: the connection is ending; what its framing abandons now
	// was cut by the close.
	closing bool
	// peerClosed: the other end closed first: a read returned the end of
	// the stream, or, read at the socket, a TLS alert came from the peer
	// before any went to it.
	peerClosed bool
	// ino is the connection's socket's inode number, for WithRetransmits,
	// from its socket record; 0 when not known.
	ino uint64
	// tls decrypts a TLS connection read at its socket
	// (httpbpf.SourceTLSWire); nil for another.
	tls *tlsdecrypt.Conn
	// wroteHello: the connection's first bytes were written (its
	// ClientHello: the process is its client).
	wroteHello bool
	// An OpenSSL connection's: the layout its secrets were read by, or
	// the learning of one from it (capture_openssl.go).
	layout *sslLayout
	calib  *sslCalibration
	// A TLS 1.2 OpenSSL connection's that waits for the copy of its
	// session: its SSL pointer, and whether layout is among the
	// connTable's already.
	ssl         uint64
	layoutKnown bool
}

// liveCall is an LLM API call whose response is parsed as it arrives, so
// that a stream of any length is read whole while only the body limit of
// it is kept (for content capture, and bodies that are not streams).
type liveCall struct {
	fx     *httpframe.Exchange // the framed exchange it is of
	head   [2]Header           // its header blocks, request and response, made once
	ep     Endpoint
	parser responseParser
	call   Call
	last   int64 // the kernel time of the last piece read, 0 before
	// failed, when set, is the error.type of a call whose connection
	// ended before its response was complete.
	failed string
}

// kernelSide is what the connTable tells the kernel side: to stop the
// capture of a connection, by its number; where to find an OpenSSL
// connection's session.
type kernelSide interface {
	Mute(gen uint32) error
	SetSessionOffsets(offsets [2]uint32) error
}

// connTable reassembles the capture's records into exchanges, one
// httpframe.Conn per connection, bounded in number: the least recently
// used goes first. It is not safe for concurrent use.
type connTable struct {
	cfg     *captureConfig
	kernel  kernelSide // nil: nothing to tell
	wall    func(ktime uint64) time.Time
	deliver func(*Exchange, *httpframe.Exchange, *capProc, *liveCall) outcome
	// serve, when set, takes the exchanges a traced process served, and
	// says what they were (emitted: an LLM API call).
	serve func(*Exchange, *capProc, *liveCall) outcome
	now   func() time.Time

	conns map[connKey]*capConn
	lru   list.List // of *capConn, least recently used first
	procs map[uint32]*capProc
	// waiting are the connections read at their sockets whose records
	// wait for their secrets, which may come after the bytes they
	// decrypt.
	waiting map[*capConn]struct{}
	// undecryptable counts the connections read at their sockets that
	// could not be followed (tlsdecrypt's errors, or bytes lost).
	undecryptable int64
	// OpenSSL's connections read by connection (capture_openssl.go):
	// the layouts learned, by libssl build; the connections scanned to
	// learn them; the copies of connection objects that named no
	// connection read at its socket.
	layouts         []*sslLayout
	calibrations    int
	sessionSearches int
	unmatchedStates int64
	// sessionOffs are the session pointer offsets the kernel side was
	// told last (setSessionOffsets).
	sessionOffs [2]uint32
	// readMemory reads a process's memory (readProcessMemory): a TLS
	// 1.2 connection's session.
	readMemory func(pid uint32, addr uint64, b []byte) error

	frames   httpframe.Stats // all connections'
	bodies   httpframe.Bodies
	outcomes [numOutcomes]int64
	evicted  int64
}

// outcome is what became of a framed exchange.
type outcome int

const (
	outcomeEmitted outcome = iota
	outcomeNotLLM
	outcomeServerSide
	outcomeParseError
	outcomeGRPC
	numOutcomes
)

func newConnTable(cfg *captureConfig, k kernelSide, wall func(uint64) time.Time,
	deliver func(*Exchange, *httpframe.Exchange, *capProc, *liveCall) outcome) *connTable {
	return &connTable{cfg: cfg, kernel: k, wall: wall, deliver: deliver, now: time.Now, readMemory: readProcessMemory,
		conns: map[connKey]*capConn{}, procs: map[uint32]*capProc{},
		waiting: map[*capConn]struct{}{}}
}

// handle takes one record.
func (t *connTable) handle(r *httpbpf.Record) {
	switch r.Kind {
	case httpbpf.KindKey:
		t.key(r)
		return
	case httpbpf.KindState:
		t.state(r)
		return
	case httpbpf.KindSession:
		t.session(r)
		return
	}
	k := connKey{r.PID, r.Source, r.Conn, r.Gen}
	cc := t.conns[k]
	if r.Kind == httpbpf.KindClose {
		switch {
		case cc == nil:
		case cc.muted:
			t.remove(cc)
		default:
			if w, rd := r.LastCalls(); w != cc.seq[httpbpf.Write] || rd != cc.seq[httpbpf.Read] || cc.next != [2]uint32{} {
				t.gap(cc) // calls lost before the close
			}
			unanswered := t.unanswered(cc, r.TS)
			cc.closing = true
			cc.frame.Close() // delivers what the close cut (abandoned)
			for _, u := range unanswered {
				t.outcomes[t.deliver(&u.x, u.live.fx, cc.proc, u.live)]++
			}
			t.remove(cc)
		}
		return
	}
	if r.Kind == httpbpf.KindEOF {
		if cc != nil {
			cc.peerClosed = true
		}
		return
	}
	if r.Kind == httpbpf.KindSocket {
		// Told before the connection's first bytes that follow it.
		if cc == nil {
			cc = t.add(k)
		}
		cc.ino = r.Inode()
		return
	}
	if cc != nil && cc.muted {
		// Sent before the kernel side heard.
		t.lru.MoveToBack(cc.elem)
		cc.seen = t.now()
		return
	}
	dir, d := httpframe.Write, r.Dir&1
	if r.Dir == httpbpf.Read {
		dir = httpframe.Read
	}
	if cc == nil {
		cc = t.add(k)
	}
	switch {
	case r.Seq == cc.seq[d] && r.Offset == cc.next[d] && cc.next[d] != 0: // the call's next piece
	case r.Seq == cc.seq[d]+1 && r.Offset == 0 && cc.next[d] == 0: // the next call
	case cc.tls != nil:
		// A TLS stream does not resync: the connection is not followed
		// further.
		t.undecrypted(cc)
		return
	default:
		// A call of this direction, or part of one, was lost; or the
		// capture began mid-connection. It resyncs at the next message
		// start.
		cc.frame.Gap(dir)
	}
	t.lru.MoveToBack(cc.elem)
	cc.seen = t.now()
	if cc.tls != nil && cc.seq == [2]uint32{} {
		cc.wroteHello = r.Dir == httpbpf.Write
	}
	cc.seq[d] = r.Seq
	if end := r.Offset + uint32(len(r.Data)); end < r.Total {
		cc.next[d] = end
	} else {
		cc.next[d] = 0
	}
	if cc.tls == nil {
		cc.frame.Feed(dir, r.Data, int64(r.TS))
	} else {
		tdir := tlsdecrypt.Write
		if dir == httpframe.Read {
			tdir = tlsdecrypt.Read
		}
		t.decrypted(cc, cc.tls.Feed(tdir, r.Data, int64(r.TS), cc.plaintext))
		if !cc.peerClosed && cc.tls.Ended(tlsdecrypt.Read) && !cc.tls.Ended(tlsdecrypt.Write) {
			// The peer's alert, before any of ours: it closed first.
			cc.peerClosed = true
		}
		if cc.calib != nil {
			t.calibrate(cc)
		}
	}
	if cc.frame.Ignored() && !cc.muted {
		// Not HTTP, or switched to another protocol: over TLS read at
		// its socket only user space can tell, and over plaintext a
		// switched connection would carry on.
		t.stopReading(cc)
	}
}

// plaintext takes what cc's TLS decrypted.
func (cc *capConn) plaintext(d tlsdecrypt.Dir, b []byte, ts int64) {
	if cc.muted {
		return // the rest of a batch decrypted when the connection was given up
	}
	dir := httpframe.Write
	if d == tlsdecrypt.Read {
		dir = httpframe.Read
	}
	cc.frame.Feed(dir, b, ts)
}

// decrypted follows a decryption of cc's records that returned err: it
// gives the connection up on an error, and keeps it among those waiting
// for secrets while records wait.
func (t *connTable) decrypted(cc *capConn, err error) {
	switch {
	case cc.muted:
		delete(t.waiting, cc)
	case err != nil:
		if errors.Is(err, tlsdecrypt.ErrDecrypt) {
			t.forgetLayout(cc) // the secrets it gave were not this connection's
		}
		t.undecrypted(cc)
	case cc.tls.Waiting():
		t.waiting[cc] = struct{}{}
	default:
		delete(t.waiting, cc)
	}
}

// undecrypted gives up on a connection read at its socket that cannot be
// followed: what it was reading is abandoned, as after lost bytes.
func (t *connTable) undecrypted(cc *capConn) {
	t.undecryptable++
	t.gap(cc)
	t.stopReading(cc)
}

// stopReading has the kernel side send no more of cc's bytes (those
// already sent are skipped): the capture has no use for them. Its close
// still ends it.
func (t *connTable) stopReading(cc *capConn) {
	cc.muted = true
	delete(t.waiting, cc)
	if t.kernel != nil {
		_ = t.kernel.Mute(cc.key.gen)
	}
}

// key takes a secret a Go program logged, and decrypts what waited for
// it. The process's connection is known by then: the first bytes of
// the connection (its ClientHello, sent or read) come before the
// secrets the handshake derives from them.
func (t *connTable) key(r *httpbpf.Record) {
	label, random, secret, ok := r.Key()
	p := t.procs[r.PID]
	if !ok || p == nil || p.keys == nil {
		return
	}
	name := tlsdecrypt.LabelTLS12
	switch label {
	case httpbpf.KeyClientTraffic:
		name = tlsdecrypt.LabelClientTraffic
	case httpbpf.KeyServerTraffic:
		name = tlsdecrypt.LabelServerTraffic
	}
	if p.keys.Add(name, random, secret) != nil {
		return
	}
	for cc := range t.waiting {
		if cc.key.pid == r.PID {
			t.decrypted(cc, cc.tls.Retry(cc.plaintext))
		}
	}
}

// gap says bytes were lost, in a direction not known. The calls whose
// bytes were lost were lost to the capture: they are no failed calls.
func (t *connTable) gap(cc *capConn) {
	cc.frame.Gap(httpframe.Write)
	cc.frame.Gap(httpframe.Read)
}

func (t *connTable) add(k connKey) *capConn {
	if len(t.conns) >= t.cfg.maxConns {
		if oldest := t.lru.Front(); oldest != nil {
			t.evict(oldest.Value.(*capConn))
		}
	}
	p := t.procs[k.pid]
	if p == nil {
		p = &capProc{pid: k.pid}
		t.procs[k.pid] = p
	}
	p.conns++
	cc := &capConn{key: k, proc: p}
	if k.src == httpbpf.SourceTLSWire {
		if p.keys == nil {
			p.keys = tlsdecrypt.NewKeys(maxHandshakes)
		}
		cc.tls = tlsdecrypt.NewConn(p.keys)
	}
	cc.frame = httpframe.New(httpframe.Config{
		OnExchange:  func(x *httpframe.Exchange) { t.exchange(cc, x) },
		OnResponse:  func(x *httpframe.Exchange) func(httpframe.Piece) { return t.response(cc, x) },
		OnAbandon:   func(x *httpframe.Exchange) { t.abandoned(cc, x) },
		DropHeaders: credentialHeaders,
		Redact:      redactCredential,
		MaxBody:     t.cfg.bodyLimit,
		Stats:       &t.frames,
		Bodies:      &t.bodies,
	})
	cc.elem = t.lru.PushBack(cc)
	t.conns[k] = cc
	return cc
}

// remove drops a connection, and its process with its last connection:
// the resolver hears of the process when it has exited.
func (t *connTable) remove(cc *capConn) {
	cc.dropLives()
	if cc.tls != nil {
		if cc.tls.Waiting() && !cc.muted {
			t.undecryptable++ // its secrets never came
		}
		if rnd, ok := cc.tls.ClientRandom(); ok {
			cc.proc.keys.Forget(rnd) // its secrets are of no more use
		}
		cc.tls.Close()
		delete(t.waiting, cc)
		if cc.calib != nil {
			clear(cc.calib.state)
		}
	}
	t.lru.Remove(cc.elem)
	delete(t.conns, cc.key)
	p := cc.proc
	if p.conns--; p.conns == 0 {
		delete(t.procs, p.pid)
		if r := t.cfg.resolver; r != nil && p.resolved && !t.cfg.alive(p.pid) {
			r.Forget(int(p.pid))
		}
	}
}

// evict gives up on a connection: what it was reading is abandoned.
func (t *connTable) evict(cc *capConn) {
	t.evicted++
	before := t.frames.AbandonedClose
	cc.frame.Close()
	// Counted as evicted, not as closed.
	t.frames.AbandonedClose = before
	t.remove(cc)
}

// evictIdle evicts the connections that moved no bytes for the idle
// timeout.
func (t *connTable) evictIdle(now time.Time) {
	for e := t.lru.Front(); e != nil; {
		cc := e.Value.(*capConn)
		if now.Sub(cc.seen) < t.cfg.idleTimeout {
			return // the rest are more recent
		}
		e = e.Next()
		t.evict(cc)
	}
}

// exchange turns a framed exchange into an Exchange and delivers it (or
// serves it, seen from the server's end). A connection whose last
// muteAfter exchanges were no LLM API call, and that never carried one,
// is not read further: the kernel side stops sending its bytes. (Without
// serve, a server's end is never muted.)
func (t *connTable) exchange(cc *capConn, fx *httpframe.Exchange) {
	var x Exchange
	live := cc.takeLive(fx)
	if live != nil {
		x.RequestHeader, x.ResponseHeader = live.head[0], live.head[1]
	}
	toExchange(fx, t.wall, &x)
	x.sock = cc.ino
	if fx.ResetBy != 0 {
		live = t.reset(fx, &x, live)
	}
	// o is what the exchange counts as; call what it was, which mutes a
	// connection of no LLM API.
	o, call := outcomeServerSide, outcomeServerSide
	switch {
	case isGRPC(&x):
		o, call = outcomeGRPC, outcomeNotLLM
		if live != nil {
			live.parser.release()
		}
	case fx.Role == httpframe.Client:
		o = t.deliver(&x, fx, cc.proc, live)
		call = o
	case t.serve != nil:
		call = t.serve(&x, cc.proc, live)
	case live != nil:
		live.parser.release()
	}
	t.outcomes[o]++
	switch call {
	case outcomeNotLLM:
		cc.notLLM++
		if cc.notLLM >= muteAfter && !cc.carriedLLM && !cc.muted {
			t.stopReading(cc)
		}
	case outcomeEmitted, outcomeParseError:
		cc.notLLM, cc.carriedLLM = 0, true
	}
}

// maxHandshakes bounds the secrets a process's Keys hold: those of the
// connections whose handshakes it has under way, or whose secrets came
// and bytes did not (a connection the capture does not read).
const maxHandshakes = 256

// muteAfter is how many exchanges in a row that are no LLM API call mute
// a connection that never carried one. A client that shares a keep-alive
// connection to a gateway between the gateway's other endpoints and its
// LLM API (a model list, a health check, then chat calls) keeps its
// calls; a connection of a web application on a watched port costs a
// few exchanges' bytes before it is muted.
const muteAfter = 3

// response starts parsing, as it arrives, the response of an exchange
// that is an LLM API call, at either end: it returns what takes the
// body's pieces, or nil when the exchange is not one.
func (t *connTable) response(cc *capConn, fx *httpframe.Exchange) func(httpframe.Piece) {
	if fx.Role == httpframe.Server && t.serve == nil {
		return nil
	}
	var x Exchange
	toExchange(fx, t.wall, &x)
	ep, ok := Detect(&x, t.cfg.hosts)
	if !ok {
		return nil
	}
	newParser := readerOf(ep.API).parser
	if newParser == nil {
		return nil
	}
	l := &liveCall{fx: fx, head: [2]Header{x.RequestHeader, x.ResponseHeader}, ep: ep, parser: newParser(),
		call: Call{Provider: ep.Provider, Operation: ep.Operation}}
	l.parser.begin(&x, &l.call)
	cc.lives = append(cc.lives, l)
	return func(p httpframe.Piece) {
		l.last = p.At
		l.parser.chunk(Chunk{At: t.wall(uint64(p.At)), Data: p.Data})
	}
}

// abandoned takes an exchange whose response had begun and that the
// framing gave up on. When the end of cc cut it, and it is a client's
// LLM API call, it is delivered as a failed call; one that the capture
// lost bytes of, or gave up on, is dropped (it need not have failed).
func (t *connTable) abandoned(cc *capConn, fx *httpframe.Exchange) {
	l := cc.takeLive(fx)
	switch {
	case l == nil:
		return
	case !cc.closing:
		l.parser.release()
		return
	}
	var x Exchange
	x.RequestHeader, x.ResponseHeader = l.head[0], l.head[1]
	toExchange(l.fx, t.wall, &x)
	x.sock = cc.ino
	x.End = t.wall(uint64(max(l.last, l.fx.ResponseStart)))
	l.failed = cc.endedBy(l.fx.Role, semconv.GenAIErrorStreamTruncated)
	if l.fx.Role == httpframe.Server {
		_ = t.serve(&x, cc.proc, l)
		return
	}
	t.outcomes[t.deliver(&x, l.fx, cc.proc, l)]++
}

// reset reads an HTTP/2 exchange that an end reset before it was
// complete, x made of it, as a failed call: cancelled when the client
// reset it, else stream_truncated once the response had begun and _OTHER
// before. live is the call's response parsed so far, if any; reset
// returns it, or, for a request that got no response, the call the
// request is (nil when it is no LLM API call's).
func (t *connTable) reset(fx *httpframe.Exchange, x *Exchange, live *liveCall) *liveCall {
	errType := semconv.GenAIErrorStreamTruncated
	switch {
	case fx.ResetBy == httpframe.Client:
		errType = semconv.GenAIErrorCancelled
	case fx.Status == 0:
		errType = semconv.Other
	}
	if live == nil && fx.Status == 0 {
		live = t.failedCall(fx, x, errType)
	}
	if live != nil {
		live.failed = errType
	}
	return live
}

// endedBy is the error.type of a call the end of cc cut short, of the
// traced process in role: cancelled when the client ended the connection
// first, which only a connection read at its socket tells (a read that
// returned the end of the stream, or the peer's TLS alert, says the other
// end closed first); otherwise other.
func (cc *capConn) endedBy(role httpframe.Role, other string) string {
	if cc.key.src != httpbpf.SourceSocket && cc.key.src != httpbpf.SourceTLSWire {
		return other
	}
	if clientFirst := cc.peerClosed == (role == httpframe.Server); clientFirst {
		return semconv.GenAIErrorCancelled
	}
	return other
}

// unansweredCall is a client's LLM API call sent in full whose connection
// ended before any of its response came.
type unansweredCall struct {
	x    Exchange
	live *liveCall
}

// unanswered returns cc's LLM API calls sent in full with no response
// yet, as calls that failed when the connection ended at ts: error.type
// cancelled when the client gave up (as far as endedBy tells), else
// _OTHER. Call it before cc's framing is closed.
func (t *connTable) unanswered(cc *capConn, ts uint64) []unansweredCall {
	var out []unansweredCall
	cc.frame.Waiting(func(fx *httpframe.Exchange) {
		if fx.Role != httpframe.Client || fx.Status != 0 { // a response begun is abandoned's
			return
		}
		var x Exchange
		toExchange(fx, t.wall, &x)
		if l := t.failedCall(fx, &x, cc.endedBy(fx.Role, semconv.Other)); l != nil {
			x.End = t.wall(ts)
			out = append(out, unansweredCall{x: x, live: l})
		}
	})
	return out
}

// failedCall returns the LLM API call x (made of fx) is, which failed
// with errType before any of its response came; nil when x is no LLM API
// call the parsers read.
func (t *connTable) failedCall(fx *httpframe.Exchange, x *Exchange, errType string) *liveCall {
	ep, ok := Detect(x, t.cfg.hosts)
	newParser := readerOf(ep.API).parser
	if !ok || newParser == nil {
		return nil
	}
	l := &liveCall{fx: fx, ep: ep, parser: newParser(), call: Call{Provider: ep.Provider, Operation: ep.Operation}, failed: errType}
	l.parser.begin(x, &l.call)
	return l
}

// readCall reads the LLM API call x is (from live, when its response was
// parsed as it arrived), or says with the outcome why there is none.
func readCall(x *Exchange, hosts HostMap, live *liveCall) (Endpoint, Call, outcome) {
	if live != nil {
		live.parser.end(x, &live.call) // the parser holds &live.call
		live.parser.release()
		finishCall(&live.call, live.ep)
		if live.failed != "" {
			live.call.Incomplete = true
			if live.call.ErrorType == "" {
				live.call.ErrorType = live.failed
			}
		}
		return live.ep, live.call, outcomeEmitted
	}
	ep, ok := Detect(x, hosts)
	if !ok {
		return ep, Call{}, outcomeNotLLM
	}
	call, err := Parse(x, ep)
	if err != nil {
		return ep, call, outcomeParseError
	}
	return ep, call, outcomeEmitted
}

// takeLive returns, and forgets, the response of fx being parsed, if
// any.
func (cc *capConn) takeLive(fx *httpframe.Exchange) *liveCall {
	for i, l := range cc.lives {
		if l.fx == fx {
			cc.lives = slices.Delete(cc.lives, i, i+1)
			return l
		}
	}
	return nil
}

// dropLives gives up the responses being parsed.
func (cc *capConn) dropLives() {
	for _, l := range cc.lives {
		l.parser.release()
	}
	clear(cc.lives)
	cc.lives = cc.lives[:0]
}

// isGRPC says whether x is a gRPC call (which the parsers do not read:
// counted, not parsed).
func isGRPC(x *Exchange) bool {
	return strings.HasPrefix(x.RequestHeader.Get("Content-Type"), "application/grpc")
}

// toExchange fills x from a framed exchange, whose header fields are
// already free of credentials; header blocks x has already are kept.
func toExchange(fx *httpframe.Exchange, wall func(uint64) time.Time, x *Exchange) {
	reqHeader, respHeader := x.RequestHeader, x.ResponseHeader
	if reqHeader == nil {
		reqHeader = header(fx.RequestHeader)
	}
	if respHeader == nil {
		respHeader = header(fx.ResponseHeader)
	}
	*x = Exchange{
		Method:            fx.Method,
		Host:              fx.RequestHeader.Get("Host"),
		Path:              fx.Target,
		RequestHeader:     reqHeader,
		RequestBody:       fx.RequestBody,
		RequestTruncated:  fx.RequestTruncated,
		Start:             wall(uint64(fx.RequestStart)),
		End:               wall(uint64(max(fx.ResponseEnd, fx.RequestEnd))),
		Status:            fx.Status,
		ResponseHeader:    respHeader,
		ResponseTruncated: fx.ResponseTruncated,
	}
	if fx.RequestEnd != 0 {
		x.RequestEnd = wall(uint64(fx.RequestEnd))
	}
	x.Chunks = make([]Chunk, len(fx.Pieces))
	for i, p := range fx.Pieces {
		x.Chunks[i] = Chunk{At: wall(uint64(p.At)), Data: p.Data}
	}
}

// header makes a Header of h. The values share one backing array, each
// key's slice capped at its length, so that a block costs two
// allocations whatever its fields (a name that repeats appends to a copy).
func header(h httpframe.Headers) Header {
	out := make(Header, len(h))
	vals := make([]string, len(h))
	for i, f := range h {
		k := textproto.CanonicalMIMEHeaderKey(f.Name)
		if v, ok := out[k]; ok {
			out[k] = append(v, f.Value)
			continue
		}
		vals[i] = f.Value
		out[k] = vals[i : i+1 : i+1]
	}
	return out
}
