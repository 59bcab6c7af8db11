package httpframe

import (
	"bytes"
	"math"
	"slices"
	"unsafe"
)

// Defaults for the limits of a Config.
const (
	DefaultMaxHeader  = 16 << 10
	DefaultMaxBody    = 64 << 10
	DefaultMaxPieces  = 1024
	DefaultMaxPending = 8
)

// Config configures a Conn. The zero value is usable: exchanges are
// framed and counted, and go nowhere.
type Config struct {
	// OnExchange receives each completed exchange, which it then owns
	// (but see Bodies). It is called from within Feed and Close, and must
	// not call the Conn.
	OnExchange func(*Exchange)

	// OnResponse, when set, is called as each response's header block is
	// complete, with its exchange: the request, and of the response the
	// status, header block and ResponseStart. A func it returns gets the
	// response's body as it is read, chunked framing removed, a Piece per
	// Feed that carried body bytes (Data valid for the call only), all of
	// it, also past MaxBody; nothing once the exchange is abandoned. It is
	// called from within Feed, and must not call the Conn; OnExchange
	// gets the same *Exchange later, if the exchange completes.
	OnResponse func(*Exchange) func(Piece)

	// DropHeaders names header fields (in any case) to leave out of the
	// exchanges. The package keeps every field it is not told to drop: a
	// caller that passes exchanges on must name the credentials here
	// (Authorization, Proxy-Authorization, Cookie, Set-Cookie,
	// X-Api-Key, Api-Key, X-Goog-Api-Key, …). A dropped Content-Length or
	// Transfer-Encoding still frames the body.
	DropHeaders []string
	// Redact, when set, keeps each field DropHeaders names, with the value
	// Redact returns for it instead of its own: what the caller may know
	// of a credential without it (its kind, the service it is for). It
	// must not return the secret, nor any part of it.
	Redact func(name, value []byte) string

	// MaxHeader caps a start line and header block together, and a
	// chunked body's trailer block; a message over it is malformed.
	// <= 0 means DefaultMaxHeader.
	MaxHeader int
	// MaxBody caps the body bytes kept of one message; the rest is
	// framed and not kept. <= 0 means DefaultMaxBody.
	MaxBody int
	// MaxPieces caps the pieces of a response body; later reads extend
	// the last one. <= 0 means DefaultMaxPieces.
	MaxPieces int
	// MaxPending caps the requests awaiting their responses (pipelining);
	// when another one comes, those waiting are abandoned. <= 0 means
	// DefaultMaxPending.
	MaxPending int
	// MaxStreams caps the HTTP/2 streams in progress on a connection; a
	// request past it is abandoned (AbandonedOverflow). <= 0 means
	// DefaultMaxStreams.
	MaxStreams int

	// OnAbandon, when set, is called with each exchange that OnResponse
	// was called for, when it is abandoned, whatever the cause (Close
	// included): its response will not complete, and OnExchange will
	// not get it. It is called from within Feed, Gap and Close, and must
	// not call the Conn.
	OnAbandon func(*Exchange)

	// Stats is where the Conn counts; Conns may share one (they are not
	// safe for concurrent use, and neither is it). nil: the Conn counts
	// in a Stats of its own.
	Stats *Stats

	// Bodies, when set, lends the Conn its body buffers and takes back
	// those of each exchange once OnExchange returns, which then must not
	// keep the exchange's bodies or pieces. Conns may share one, under
	// the rule for Stats. nil: each body is allocated anew and OnExchange
	// owns it.
	Bodies *Bodies
}

// Bodies is a free list of body buffers, shared by Conns so that a body
// after the first costs no allocation. It keeps at most MaxBodies
// buffers, which no Conn's Retained counts. The zero value is ready to
// use; it is not safe for concurrent use.
type Bodies struct {
	free [][]byte
}

// MaxBodies bounds the buffers a Bodies keeps: with the default MaxBody,
// 1 MiB at most.
const MaxBodies = 16

// get returns an empty buffer, nil when none is free.
func (b *Bodies) get() []byte {
	if b == nil || len(b.free) == 0 {
		return nil
	}
	buf := b.free[len(b.free)-1]
	b.free[len(b.free)-1] = nil
	b.free = b.free[:len(b.free)-1]
	return buf
}

// put keeps buf for reuse, unless the list is full.
func (b *Bodies) put(buf []byte) {
	if b != nil && cap(buf) > 0 && len(b.free) < MaxBodies {
		b.free = append(b.free, buf[:0])
	}
}

// Stats counts what Conns saw. The counters only grow.
type Stats struct {
	// Exchanges counts the exchanges delivered to Config.OnExchange.
	Exchanges int64

	// Exchanges abandoned, by cause: bytes lost (Gap); the connection
	// closed, or switched protocols, before the exchange was complete; a
	// malformed message (or HTTP/2 frame, or header block); more
	// requests awaiting their responses than Config.MaxPending, or
	// HTTP/2 streams in progress than Config.MaxStreams; an HTTP/2
	// stream the server refused (REFUSED_STREAM, or above the last
	// stream of its GOAWAY: it was not processed, and the client may
	// retry it).
	AbandonedGap, AbandonedClose, AbandonedMalformed, AbandonedOverflow, AbandonedRefused int64
	// Reset counts the HTTP/2 exchanges an end reset (RST_STREAM) before
	// they were complete: they are delivered as they stood, with
	// Exchange.ResetBy.
	Reset int64
	// Unpaired counts responses that came with no request to answer: its
	// request was not seen (capture began mid-connection, or it was
	// lost). They are framed and dropped.
	Unpaired int64

	// Malformed messages, by what was wrong.
	BadStartLine        int64 // not an HTTP/1.x request or status line where one was due
	BadHeader           int64 // a field line with no colon or a bad name (obs-fold included)
	HeaderTooLarge      int64 // start line and header block, or trailer block, over MaxHeader or MaxFields
	BadContentLength    int64 // not a decimal of at most 18 digits, or values that disagree
	BadTransferEncoding int64 // a request whose last transfer coding is not chunked
	BadChunk            int64 // a chunk-size line or chunk end breaking the chunked grammar
	BadFrame            int64 // an HTTP/2 frame breaking the framing: the direction resyncs, its streams abandoned
	BadHeaderBlock      int64 // an HTTP/2 header block HPACK could not decode: its decoder starts afresh

	// TruncatedBodies counts the bodies of delivered messages that were
	// longer than MaxBody and kept in part.
	TruncatedBodies int64
	// SkippedBytes counts the bytes of malformed heads, and the bytes
	// passed over while looking for the start of a message after a gap
	// or a malformed message.
	SkippedBytes int64

	// HTTP2 counts the connections read as HTTP/2.
	HTTP2 int64
	// Connections ignored from some point on, by why: their first bytes
	// were not HTTP/1.x or HTTP/2 (TLS ciphertext, another protocol);
	// they switched protocols (101 Switching Protocols, or a tunnel
	// opened by CONNECT).
	NonHTTP, Switched int64
	// IgnoredBytes counts the bytes of connections once ignored or closed.
	IgnoredBytes int64
}

// Abandoned returns the exchanges abandoned, whatever the cause.
func (s Stats) Abandoned() int64 {
	return s.AbandonedGap + s.AbandonedClose + s.AbandonedMalformed + s.AbandonedOverflow + s.AbandonedRefused
}

// connState is the state of a whole connection.
type connState uint8

const (
	live    connState = iota
	ignored           // not HTTP/1.x, or not any more: bytes are only counted
	closed
)

// phase is where a direction is in its stream of messages. The phases
// after phaseHead are in a body: the message's head has been read.
type phase uint8

const (
	phaseStart      phase = iota // at a message boundary
	phaseResync                  // out of sync: looking for a message start
	phaseHead                    // reading a start line and header block
	phaseBody                    // in a body of known length
	phaseChunkSize               // reading a chunk-size line
	phaseChunkData               // in a chunk's data
	phaseChunkEnd                // at the CRLF after a chunk's data
	phaseTrailer                 // reading the trailer block after the last chunk
	phaseUntilClose              // in a body that ends when the connection closes
)

const (
	// maxChunkLine caps a chunk-size line, extensions included.
	maxChunkLine = 4096
	// maxChunkDigits is the most hex digits of a chunk size: 2^60 - 1
	// fits an int64, and no chunk is that long.
	maxChunkDigits = 15
	// keepBuffer is the most a direction keeps of its buffers between
	// messages; larger ones go back to the garbage collector, so that an
	// idle connection holds little.
	keepBuffer = 4 << 10
)

// entry is an exchange in progress, shared by the two directions.
type entry struct {
	ex        Exchange
	noBody    bool // the request was HEAD: its response has no body
	connect   bool // the request was CONNECT: a 2xx response opens a tunnel
	reqDone   bool
	respDone  bool
	abandoned bool // counted as abandoned: never delivered
}

// cand is a place where a request line could start, in a resync: an
// offset in hdr, and the timestamp of the Feed it came in.
type cand struct {
	off int // -1: none
	at  int64
}

// noWords is the request resync state with no candidate.
var noWords = [3]cand{{off: -1}, {off: -1}, {off: -1}}

// mark is where a response body piece starts.
type mark struct {
	off int    // offset in the body
	at  int64  // timestamp of the read
	seq uint64 // the Feed that delivered it
}

// side is one direction of a connection.
type side struct {
	dir   Dir
	kind  kind
	phase phase
	seq   uint64 // Feeds so far

	// The message in progress.
	cur         *entry // its exchange; nil when it has none
	first, last int64  // timestamps of its first byte and of the latest Feed

	// Head.
	hdr       []byte // start line and header block so far
	lineStart int    // offset in hdr of the line being read
	plausible bool   // the start of hdr passed the quick check
	guess     bool   // the status line is a resync candidate: failing skips it
	lineHead  bool   // resync: the next byte starts a line or a Feed

	// Request resync: where a request line could start in the last
	// three words of the line (see seekRequest); hdr holds the line from
	// the first of them.
	words [3]cand

	// Body.
	remain  int64 // bytes left in the body or the chunk
	digits  int   // hex digits read of a chunk size
	inExt   bool  // past the chunk size, in extensions
	lineLen int   // bytes of the chunk-size or trailer line so far
	sawCR   bool  // the last byte was CR
	trailer int   // bytes of the trailer block so far
	body
}

// body is what is kept of a message body being read: its bytes up to
// MaxBody, and for a response the marks of its pieces and the sink that
// takes them as they come.
type body struct {
	data      []byte
	truncated bool
	marks     []mark
	sink      func(Piece) // Config.OnResponse's for the body in progress
}

// Conn reassembles the HTTP/1.x exchanges of one connection from the
// data its traced process wrote and read. It is not safe for concurrent
// use.
type Conn struct {
	cfg   Config
	stats *Stats
	own   Stats
	state connState
	role  Role
	sides [2]side

	queue   []*entry // requests awaiting their responses, oldest first
	discard int      // responses to drop before the queue's: their requests were abandoned on overflow

	h2 *h2conn // the connection is HTTP/2: the above is unused
}

// New returns a Conn for a new connection.
func New(cfg Config) *Conn {
	c := &Conn{cfg: withDefaults(cfg)}
	c.stats = cfg.Stats
	if c.stats == nil {
		c.stats = &c.own
	}
	c.sides[Read].dir = Read
	return c
}

func withDefaults(cfg Config) Config {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&cfg.MaxHeader, DefaultMaxHeader)
	def(&cfg.MaxBody, DefaultMaxBody)
	def(&cfg.MaxPieces, DefaultMaxPieces)
	def(&cfg.MaxPending, DefaultMaxPending)
	def(&cfg.MaxStreams, DefaultMaxStreams)
	return cfg
}

// Stats returns the counts of the Stats the Conn counts in.
func (c *Conn) Stats() Stats { return *c.stats }

// Ignored reports whether the connection is no longer read: not HTTP, or
// switched to another protocol. Feed counts the bytes it is given then
// (Stats.IgnoredBytes) and drops them.
func (c *Conn) Ignored() bool { return c.state == ignored }

// Feed hands the Conn data the traced process wrote or read (dir, Write
// or Read) at time ts, in the order it happened. Timestamps of both
// directions come from one clock: a response is paired only with a
// request that began no later. The Conn keeps no reference to data.
func (c *Conn) Feed(dir Dir, data []byte, ts int64) {
	if len(data) == 0 {
		return
	}
	if c.state != live {
		c.stats.IgnoredBytes += int64(len(data))
		return
	}
	if c.h2 != nil {
		c.feed2(dir, data, ts)
		return
	}
	s := &c.sides[dir]
	s.seq++
	s.last = ts
	s.lineHead = true // a read or write may start a message: a resync tries there
	for len(data) > 0 {
		switch {
		case c.h2 != nil: // it turned out HTTP/2
			s2 := &c.h2.sides[dir]
			s2.seq = 1
			c.run2(s2, data, ts)
			return
		case c.state != live:
			c.stats.IgnoredBytes += int64(len(data))
			return
		}
		data = data[c.step(s, data, ts):]
	}
}

// Gap says that bytes were lost in direction dir. The exchange whose
// message was in progress in that direction is abandoned (for responses,
// also when the loss fell between two: it took the start of the next),
// and the direction resyncs at the next plausible message start. When
// the direction of a loss is not known, Gap both: a Gap in a direction
// that lost nothing abandons at most what was in progress there.
func (c *Conn) Gap(dir Dir) {
	switch {
	case c.state != live:
	case c.h2 != nil:
		c.lose2(&c.h2.sides[dir], &c.stats.AbandonedGap)
	default:
		s := &c.sides[dir]
		c.lose(s, &c.stats.AbandonedGap)
		c.toResync(s)
	}
}

// Close says that the connection closed. A response delimited by the
// close is complete; the exchanges still in progress are abandoned.
// Later calls only count bytes as ignored.
func (c *Conn) Close() {
	if c.state == live && c.h2 != nil {
		c.abandonAll2(&c.stats.AbandonedClose)
	} else if c.state == live {
		for i := range c.sides {
			if s := &c.sides[i]; s.phase == phaseUntilClose {
				c.endMessage(s, s.last)
			}
		}
		c.abandonAll(&c.stats.AbandonedClose)
	}
	c.state = closed
	c.h2 = nil
	c.release()
}

// Waiting calls f with the exchange of each request sent in full whose
// response has not brought a body byte yet: not begun, or only its head.
// For a streamed LLM response that is the time the server queued the call
// and read its prompt, before the first token. The exchange holds the
// request's fields and body only; f must not keep it or call the Conn.
func (c *Conn) Waiting(f func(*Exchange)) {
	if c.state != live {
		return
	}
	if c.h2 != nil {
		c.h2.waiting(f)
		return
	}
	for _, e := range c.queue {
		if e.reqDone && !e.abandoned {
			f(&e.ex)
		}
	}
	for i := range c.sides {
		s := &c.sides[i]
		if e := s.cur; s.kind == kindResponse && e != nil && e.reqDone && !e.abandoned && len(s.marks) == 0 {
			f(&e.ex)
		}
	}
}

// Retained returns the bytes the Conn holds for messages in progress:
// its buffers, and the exchanges waiting for their other half. Each
// direction holds at most MaxHeader + MaxBody bytes and MaxPieces piece
// marks; each of at most MaxPending + 2 exchanges a request body of
// MaxBody bytes and two header blocks of MaxHeader bytes and MaxFields
// fields.
func (c *Conn) Retained() int {
	if c.h2 != nil {
		return c.h2.retained()
	}
	n := 0
	for i := range c.sides {
		s := &c.sides[i]
		n += cap(s.hdr) + cap(s.data) + cap(s.marks)*int(unsafe.Sizeof(mark{}))
	}
	for _, e := range c.queue {
		n += e.retained()
	}
	// The exchanges that left the queue when their response began (a
	// request still being read is the same exchange, or in the queue).
	w, r := c.sides[Write].cur, c.sides[Read].cur
	if w == r {
		w = nil
	}
	for _, e := range [2]*entry{w, r} {
		if e != nil && !slices.Contains(c.queue, e) {
			n += e.retained()
		}
	}
	return n
}

// retained returns the bytes an exchange holds.
func (e *entry) retained() int {
	n := cap(e.ex.RequestBody) + len(e.ex.Method) + len(e.ex.Target) + len(e.ex.Proto)
	for _, h := range [2]Headers{e.ex.RequestHeader, e.ex.ResponseHeader} {
		for _, f := range h {
			n += len(f.Name) + len(f.Value)
		}
		n += cap(h) * int(unsafe.Sizeof(Header{}))
	}
	return n
}

// step consumes the start of data and returns how many bytes it took.
// It makes progress: when it takes none, it has moved s to a phase that
// will.
func (c *Conn) step(s *side, data []byte, ts int64) int {
	switch s.phase {
	case phaseStart:
		return c.start(s, data, ts)
	case phaseResync:
		return c.seek(s, data, ts)
	case phaseHead:
		return c.readHead(s, data, ts)
	case phaseBody, phaseChunkData:
		return c.readBody(s, data, ts)
	case phaseChunkSize:
		return c.readChunkSize(s, data)
	case phaseChunkEnd:
		return c.readChunkEnd(s, data)
	case phaseTrailer:
		return c.readTrailer(s, data, ts)
	}
	c.keep(s, data, ts) // phaseUntilClose
	return len(data)
}

// start begins a message. Empty lines before one are skipped (RFC 9112,
// 2.2).
func (c *Conn) start(s *side, data []byte, ts int64) int {
	if b := data[0]; b == '\r' || b == '\n' {
		return 1
	}
	c.begin(s, ts, false)
	return 0
}

// begin starts reading a message head; guess says it is a resync
// candidate.
func (c *Conn) begin(s *side, ts int64, guess bool) {
	s.phase, s.guess, s.plausible = phaseHead, guess, false
	s.first = ts
	s.hdr, s.lineStart = s.hdr[:0], 0
}

// seek looks for a message start after a loss of sync.
func (c *Conn) seek(s *side, data []byte, ts int64) int {
	if s.kind == kindResponse {
		return c.seekStatus(s, data, ts)
	}
	return c.seekRequest(s, data, ts)
}

// seekStatus looks for "HTTP/1." anywhere, and tries a status line there.
func (c *Conn) seekStatus(s *side, data []byte, ts int64) int {
	i := indexStatus(data)
	if i < 0 {
		c.stats.SkippedBytes += int64(len(data))
		return len(data)
	}
	c.stats.SkippedBytes += int64(i)
	c.begin(s, ts, true)
	return i
}

// seekRequest looks for a request line. One starts at the start of a
// line or of a Feed (a write that begins a message, after a body with no
// line ending), and ends its line with two more words: method SP target
// SP version. So a line is scanned word by word, keeping for each of the
// last three words the first candidate start after which the word is a
// token; at the end of the line, the candidate two words back is tried.
// Whatever the Feed boundaries, the request line found is the longest
// one that starts at a candidate.
func (c *Conn) seekRequest(s *side, data []byte, ts int64) int {
	for n := 0; n < len(data); {
		if s.lineHead {
			s.lineHead = false
			if s.words[2].off < 0 && isTchar(data[n]) {
				s.words[2] = cand{off: len(s.hdr), at: ts}
			}
		}
		if s.words == noWords {
			// No candidate before the next line.
			i := bytes.IndexByte(data[n:], '\n')
			if i < 0 {
				c.stats.SkippedBytes += int64(len(data) - n)
				return len(data)
			}
			c.stats.SkippedBytes += int64(i + 1)
			s.lineHead = true
			n += i + 1
			continue
		}
		if len(s.hdr) == c.cfg.MaxHeader {
			s.words = noWords // too long for a request line
			c.trimWords(s)
			continue
		}
		b := data[n]
		s.hdr = appendCapped(s.hdr, data[n:n+1], c.cfg.MaxHeader)
		n++
		switch {
		case b == '\n':
			c.requestLineEnd(s)
			return n
		case b == ' ':
			s.words = [3]cand{s.words[1], s.words[2], {off: -1}}
			c.trimWords(s)
		case !isTchar(b):
			s.words[2].off = -1
			c.trimWords(s)
		}
	}
	return len(data)
}

// trimWords drops the bytes of hdr before the first candidate left, as
// skipped.
func (c *Conn) trimWords(s *side) {
	first := len(s.hdr)
	for _, w := range s.words {
		if w.off >= 0 {
			first = min(first, w.off)
		}
	}
	if first == 0 {
		return
	}
	c.stats.SkippedBytes += int64(first)
	s.hdr = s.hdr[:copy(s.hdr, s.hdr[first:])]
	for i := range s.words {
		if s.words[i].off >= 0 {
			s.words[i].off -= first
		}
	}
}

// requestLineEnd tries the line in hdr, ended by its LF, as a request
// line from the candidate two words back: on success the head goes on
// from there.
func (c *Conn) requestLineEnd(s *side) {
	start := s.words[0]
	s.words, s.lineHead = noWords, true
	if start.off == 0 {
		if _, _, _, ok := parseRequestLine(trimCR(s.hdr[:len(s.hdr)-1])); ok {
			if s.kind == kindAny {
				c.setRole(s.dir, kindRequest)
			}
			s.phase, s.plausible, s.guess = phaseHead, true, false
			s.first, s.lineStart = start.at, len(s.hdr)
			return
		}
	}
	c.stats.SkippedBytes += int64(len(s.hdr))
	s.hdr = s.hdr[:0]
}

// readHead reads the start line and header block, line by line. It
// looks no further ahead than the quick check needs, while the start is
// in doubt, or than MaxHeader allows: a Feed that holds many candidate
// starts, or one endless line, costs time in proportion to its length.
func (c *Conn) readHead(s *side, data []byte, ts int64) int {
	n := 0
	for n < len(data) {
		line := data[n:]
		if !s.plausible {
			line = line[:min(len(line), quickCheck)]
		}
		room := c.cfg.MaxHeader - len(s.hdr)
		over := len(line) > room
		if over {
			line = line[:room]
		}
		eol := bytes.IndexByte(line, '\n')
		if eol >= 0 {
			line, over = line[:eol+1], false
		}
		old := len(s.hdr)
		s.hdr = appendCapped(s.hdr, line, c.cfg.MaxHeader)
		if !s.plausible {
			switch v, at := classify(s.hdr, s.kind); v {
			case plausible:
				s.plausible = true
			case isHTTP2:
				head, first := s.hdr, s.first
				c.startHTTP2(s.dir, bytes.HasPrefix(head, []byte(preface)))
				s2 := &c.h2.sides[s.dir]
				s2.seq = 1
				c.run2(s2, head, first)
				return n + len(line)
			case notHTTP:
				at = max(at, old)
				s.hdr = s.hdr[:at]
				c.reject(s, probStartLine)
				return n + at - old
			}
		}
		n += len(line)
		switch {
		case over:
			c.reject(s, probTooLarge)
			return n
		case eol < 0:
			continue
		case s.lineStart == 0 && !c.startLine(s),
			s.lineStart > 0 && isBlank(s.hdr[s.lineStart:]) && !c.headDone(s, ts):
			s.lineHead = true // rejected at the end of a line
			return n
		case s.phase != phaseHead:
			return n // the head is done
		}
		s.lineStart = len(s.hdr)
	}
	return n
}

// startLine checks the first line of a head, which sets the role when it
// is not known yet.
func (c *Conn) startLine(s *side) bool {
	k, ok := lineKind(trimCR(s.hdr[:len(s.hdr)-1]))
	if !ok || s.kind != kindAny && k != s.kind {
		c.reject(s, probStartLine)
		return false
	}
	if s.kind == kindAny {
		c.setRole(s.dir, k)
	}
	s.guess = false
	return true
}

// setRole records that direction d carries messages of kind k, and so
// the other direction the other kind.
func (c *Conn) setRole(d Dir, k kind) {
	req := d
	if k == kindResponse {
		req = 1 - d
	}
	c.role = Client
	if req == Read {
		c.role = Server
	}
	c.sides[req].kind = kindRequest
	c.sides[1-req].kind = kindResponse
}

// headDone parses a complete head and starts the body. It reports false
// when the head was rejected.
func (c *Conn) headDone(s *side, ts int64) bool {
	h, p := parseHead(s.hdr, s.kind, c.cfg.DropHeaders, c.cfg.Redact)
	if p == probNone {
		if s.kind == kindRequest {
			p = c.requestHead(s, &h, ts)
		} else {
			p = c.responseHead(s, &h, ts)
		}
	}
	if p != probNone {
		c.reject(s, p)
		return false
	}
	s.hdr = s.hdr[:0]
	if cap(s.hdr) > keepBuffer {
		s.hdr = nil
	}
	return true
}

// framing is how a message's body is delimited.
type framing uint8

const (
	noBody     framing = iota
	sized              // by Content-Length
	chunked            // by chunked transfer coding
	untilClose         // by the close of the connection
	tunnel             // none: the connection switches protocols after the head
)

// requestHead starts a request's exchange (RFC 9112, 6.3).
func (c *Conn) requestHead(s *side, h *head, ts int64) problem {
	f := noBody
	switch {
	case h.encoded && !h.chunked:
		return probEncoding
	case h.encoded:
		f = chunked
	case h.badLength:
		return probLength
	case h.length > 0:
		f = sized
	}
	e := &entry{noBody: h.method == "HEAD", connect: h.method == "CONNECT"}
	e.ex = Exchange{
		Role:   c.role,
		Method: h.method, Target: h.target, Proto: h.proto,
		RequestHeader: h.fields,
		RequestStart:  s.first,
	}
	c.push(e)
	s.cur = e
	c.startBody(s, f, h.length, ts)
	return probNone
}

// responseHead pairs a response with the oldest request awaiting one
// and starts its body (RFC 9112, 6.3). Informational responses, but
// 101, are skipped: the final response follows.
func (c *Conn) responseHead(s *side, h *head, ts int64) problem {
	if h.status < 200 && h.status != 101 {
		s.phase = phaseStart
		return probNone
	}
	var f framing
	answers := c.peek(s.first)
	switch {
	case h.status == 101 || answers != nil && answers.connect && h.status < 300:
		f = tunnel
	case answers != nil && answers.noBody || h.status == 204 || h.status == 304:
		f = noBody
	case h.chunked:
		f = chunked
	case h.encoded:
		f = untilClose
	case h.badLength:
		return probLength
	case h.length >= 0:
		f = sized
	default:
		f = untilClose
	}
	e, paired := c.next(s.first)
	if !paired {
		c.stats.Unpaired++
	}
	s.cur = e
	if e != nil && !e.abandoned {
		e.ex.Status = h.status
		e.ex.ResponseHeader = h.fields
		e.ex.ResponseStart = s.first
		if c.cfg.OnResponse != nil {
			s.sink = c.cfg.OnResponse(&e.ex)
		}
	}
	if f == tunnel {
		c.endMessage(s, ts)
		c.ignore(&c.stats.Switched)
		return probNone
	}
	c.startBody(s, f, h.length, ts)
	return probNone
}

// startBody moves s into the body of its message.
func (c *Conn) startBody(s *side, f framing, length int64, ts int64) {
	switch {
	case f == chunked:
		s.chunkLine()
	case f == untilClose:
		s.phase = phaseUntilClose
	case f == sized && length > 0:
		s.phase, s.remain = phaseBody, length
		if s.storing() {
			s.data = c.cfg.Bodies.get()
			if want := int(min(length, int64(c.cfg.MaxBody))); cap(s.data) < want {
				c.cfg.Bodies.put(s.data)
				s.data = make([]byte, 0, want)
			}
		}
	default:
		c.endMessage(s, ts)
	}
}

// chunkLine starts reading a chunk-size line.
func (s *side) chunkLine() {
	s.phase = phaseChunkSize
	s.remain, s.digits, s.inExt, s.lineLen = 0, 0, false, 0
}

// storing reports whether the body of the message in progress is kept.
func (s *side) storing() bool { return s.cur != nil && !s.cur.abandoned }

// readBody reads a body of known length, or a chunk's data.
func (c *Conn) readBody(s *side, data []byte, ts int64) int {
	n := int(min(int64(len(data)), s.remain))
	c.keep(s, data[:n], ts)
	s.remain -= int64(n)
	switch {
	case s.remain > 0:
	case s.phase == phaseChunkData:
		s.phase, s.sawCR = phaseChunkEnd, false
	default:
		c.endMessage(s, ts)
	}
	return n
}

// readChunkSize reads chunk-size [chunk-ext] CRLF (RFC 9112, 7.1).
// Extensions are skipped; a bare LF ends the line too.
func (c *Conn) readChunkSize(s *side, data []byte) int {
	for i, b := range data {
		s.lineLen++
		switch {
		case s.lineLen > maxChunkLine:
			c.reject(s, probChunk)
			return i
		case b == '\n':
			if s.digits == 0 {
				c.reject(s, probChunk)
				return i
			}
			if s.remain > 0 {
				s.phase = phaseChunkData
			} else {
				s.phase, s.lineLen, s.trailer, s.sawCR = phaseTrailer, 0, 0, false
			}
			return i + 1
		case s.inExt:
		case isHex(b):
			if s.digits == maxChunkDigits {
				c.reject(s, probChunk)
				return i
			}
			s.remain = s.remain<<4 | int64(unhex(b))
			s.digits++
		case b == ';' || b == ' ' || b == '\t' || b == '\r':
			s.inExt = true
		default:
			c.reject(s, probChunk)
			return i
		}
	}
	return len(data)
}

// readChunkEnd reads the CRLF (or LF) after a chunk's data.
func (c *Conn) readChunkEnd(s *side, data []byte) int {
	switch b := data[0]; {
	case b == '\r' && !s.sawCR:
		s.sawCR = true
		return 1
	case b == '\n':
		s.chunkLine()
		return 1
	}
	c.reject(s, probChunk)
	return 0
}

// readTrailer skips the trailer block up to its empty line.
func (c *Conn) readTrailer(s *side, data []byte, ts int64) int {
	for i, b := range data {
		if b == '\n' {
			if s.lineLen == 0 || s.lineLen == 1 && s.sawCR {
				c.endMessage(s, ts)
				return i + 1
			}
			s.lineLen = 0
			continue
		}
		s.lineLen++
		s.sawCR = b == '\r'
		if s.trailer++; s.trailer > c.cfg.MaxHeader {
			c.reject(s, probTooLarge)
			return i
		}
	}
	return len(data)
}

// keep stores body bytes of the message in progress on s.
func (c *Conn) keep(s *side, p []byte, ts int64) {
	if s.storing() {
		s.keep(&c.cfg, p, ts, s.seq, s.kind == kindResponse)
	}
}

// keep stores body bytes, up to MaxBody, hands a response's to its sink,
// and marks its pieces; seq is the Feed that delivered them.
func (b *body) keep(cfg *Config, p []byte, ts int64, seq uint64, response bool) {
	if b.sink != nil && len(p) > 0 {
		b.sink(Piece{At: ts, Data: p})
	}
	if room := cfg.MaxBody - len(b.data); len(p) > room {
		p, b.truncated = p[:room], true
	}
	if len(p) == 0 {
		return
	}
	if response {
		b.mark(len(b.data), ts, seq, cfg.MaxPieces)
	}
	if b.data == nil {
		b.data = cfg.Bodies.get()
	}
	b.data = appendCapped(b.data, p, cfg.MaxBody)
}

// mark starts a response piece at offset off, unless the same Feed
// started the last one or there are MaxPieces already: the last piece
// grows instead.
func (b *body) mark(off int, ts int64, seq uint64, maxPieces int) {
	if n := len(b.marks); n > 0 && (b.marks[n-1].seq == seq || n == maxPieces) {
		return
	}
	b.marks = append(b.marks, mark{off: off, at: ts, seq: seq})
}

// endMessage completes the message in progress, whose last byte came at
// end, and delivers its exchange if the other half is complete too.
func (c *Conn) endMessage(s *side, end int64) {
	if s.storing() {
		c.complete(s.cur, &s.body, s.kind == kindRequest, end)
	}
	s.phase, s.cur = phaseStart, nil
	s.drop()
}

// complete gives e the body of its request or response, whose last byte
// came at end, and delivers e if its other half is complete too.
func (c *Conn) complete(e *entry, b *body, request bool, end int64) {
	if b.truncated {
		c.stats.TruncatedBodies++
	}
	if request {
		e.ex.RequestBody, e.ex.RequestTruncated, e.ex.RequestEnd = b.data, b.truncated, end
		e.reqDone = true
	} else {
		e.ex.ResponseBody, e.ex.ResponseTruncated, e.ex.ResponseEnd = b.data, b.truncated, end
		e.ex.Pieces = b.pieces()
		e.respDone = true
	}
	b.data = nil // e's now
	if !e.reqDone || !e.respDone {
		return
	}
	c.stats.Exchanges++
	if c.cfg.OnExchange != nil {
		c.cfg.OnExchange(&e.ex)
	}
	if bs := c.cfg.Bodies; bs != nil {
		bs.put(e.ex.RequestBody)
		bs.put(e.ex.ResponseBody)
		e.ex.RequestBody, e.ex.ResponseBody, e.ex.Pieces = nil, nil, nil
	}
}

// pieces returns the response pieces over b.data.
func (b *body) pieces() []Piece {
	if len(b.marks) == 0 {
		return nil
	}
	ps := make([]Piece, len(b.marks))
	for i, m := range b.marks {
		end := len(b.data)
		if i+1 < len(b.marks) {
			end = b.marks[i+1].off
		}
		ps[i] = Piece{At: m.at, Data: b.data[m.off:end:end]}
	}
	return ps
}

// drop forgets the body of the message in progress (an exchange that
// took it owns it now).
func (b *body) drop() {
	b.data, b.truncated, b.sink = nil, false, nil
	b.marks = b.marks[:0]
	if cap(b.marks)*int(unsafe.Sizeof(mark{})) > keepBuffer {
		b.marks = nil
	}
}

// reject handles a malformed message: a resync candidate is skipped; the
// first bytes of a connection make it ignored as not HTTP/1.x; any other
// message is counted and its exchange abandoned. The direction then
// resyncs, from the rest of the current line.
func (c *Conn) reject(s *side, p problem) {
	if !s.guess && s.kind == kindAny {
		c.stats.IgnoredBytes += int64(len(s.hdr))
		c.ignore(&c.stats.NonHTTP)
		return
	}
	if !s.guess {
		c.count(p)
		c.lose(s, &c.stats.AbandonedMalformed)
	}
	c.stats.SkippedBytes += int64(len(s.hdr))
	c.toResync(s)
}

// count counts a malformed message.
func (c *Conn) count(p problem) {
	switch p {
	case probStartLine:
		c.stats.BadStartLine++
	case probHeader:
		c.stats.BadHeader++
	case probTooLarge:
		c.stats.HeaderTooLarge++
	case probLength:
		c.stats.BadContentLength++
	case probEncoding:
		c.stats.BadTransferEncoding++
	case probChunk:
		c.stats.BadChunk++
	}
}

// lose abandons the exchange of the message in progress on s, which was
// lost. A request lost after its first bytes still gets a response: a
// placeholder takes its place in the queue, so that the response is
// dropped. A request lost whole needs none: its response begins before
// any later request does, and so pairs with none (see next). A response
// lost before its head was read answered the oldest request awaiting one.
func (c *Conn) lose(s *side, cause *int64) {
	if s.phase == phaseResync || s.guess {
		return // out of sync already
	}
	e := s.cur
	switch {
	case s.kind == kindRequest && s.phase == phaseHead:
		e = &entry{}
		c.push(e)
	case s.kind == kindResponse && s.phase <= phaseHead:
		e, _ = c.next(math.MaxInt64)
	}
	c.abandon(e, cause)
}

// abandon counts e as abandoned, once.
func (c *Conn) abandon(e *entry, cause *int64) {
	if e == nil || e.abandoned {
		return
	}
	e.abandoned = true
	*cause++
	if c.cfg.OnAbandon != nil && e.ex.Status != 0 && c.cfg.OnResponse != nil {
		c.cfg.OnAbandon(&e.ex)
	}
}

// abandonAll abandons every exchange in progress.
func (c *Conn) abandonAll(cause *int64) {
	for i := range c.sides {
		s := &c.sides[i]
		if s.kind == kindRequest && s.phase == phaseHead {
			*cause++ // a request cut in its head
		}
		c.abandon(s.cur, cause)
	}
	for _, e := range c.queue {
		c.abandon(e, cause)
	}
}

// toResync makes s look for the next message start, from the rest of
// the current line.
func (c *Conn) toResync(s *side) {
	s.phase = phaseResync
	s.guess, s.plausible, s.lineHead = false, false, false
	s.hdr, s.cur, s.words = s.hdr[:0], nil, noWords
	s.drop()
}

// ignore stops looking at the connection, for the reason counter counts.
func (c *Conn) ignore(counter *int64) {
	*counter++
	c.abandonAll(&c.stats.AbandonedClose)
	c.state = ignored
	c.release()
}

// release lets go of every buffer.
func (c *Conn) release() {
	for i := range c.sides {
		s := &c.sides[i]
		s.hdr, s.data, s.marks, s.cur = nil, nil, nil, nil
	}
	c.queue, c.discard = nil, 0
}

// push queues a request for its response. When MaxPending requests wait
// already, they are abandoned, and their responses will be dropped.
func (c *Conn) push(e *entry) {
	if len(c.queue) == c.cfg.MaxPending {
		for _, old := range c.queue {
			c.abandon(old, &c.stats.AbandonedOverflow)
		}
		c.discard += len(c.queue)
		clear(c.queue)
		c.queue = c.queue[:0]
	}
	c.queue = append(c.queue, e)
}

// peek returns the request that a response beginning at time at
// answers (see next), or nil when it is to be dropped.
func (c *Conn) peek(at int64) *entry {
	if c.discard > 0 || len(c.queue) == 0 || c.queue[0].ex.RequestStart > at {
		return nil
	}
	return c.queue[0]
}

// next takes off the queue the request that a response beginning at
// time at answers: the oldest, if it began no later. A response cannot
// begin before its request: one that does answers a request that was
// lost. next returns nil for a response to drop; paired is false when
// no request seen can be answered.
func (c *Conn) next(at int64) (e *entry, paired bool) {
	switch {
	case c.discard > 0:
		c.discard--
		return nil, true
	case len(c.queue) == 0 || c.queue[0].ex.RequestStart > at:
		return nil, false
	}
	e = c.queue[0]
	copy(c.queue, c.queue[1:])
	c.queue[len(c.queue)-1] = nil
	c.queue = c.queue[:len(c.queue)-1]
	return e, true
}

// appendCapped appends p to b, growing b by doubling from 512 bytes but
// never past limit bytes; len(b)+len(p) must not exceed limit.
func appendCapped(b, p []byte, limit int) []byte {
	if need := len(b) + len(p); need > cap(b) {
		b = append(make([]byte, 0, min(max(2*cap(b), need, 512), limit)), b...)
	}
	return append(b, p...)
}

func isHex(b byte) bool { return isDigit(b) || 'a' <= lower(b) && lower(b) <= 'f' }

func unhex(b byte) byte {
	if isDigit(b) {
		return b - '0'
	}
	return lower(b) - 'a' + 10
}
