package httpframe

import (
	"bytes"
	"strconv"
	"unsafe"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// HTTP/2 (RFC 9113). A connection whose first bytes are the client's
// preface, or a server's SETTINGS frame, is read as HTTP/2 from there on:
// frame headers and the frames other than DATA through the x/net/http2
// Framer, header blocks through an hpack.Decoder per direction, DATA
// payloads as they come (never buffered whole), each stream an exchange.

const (
	// DefaultMaxStreams caps the HTTP/2 streams in progress on a
	// connection: 100 is the concurrency most servers allow.
	DefaultMaxStreams = 100
	// maxFrameKept caps the payload of a frame other than DATA, which is
	// buffered whole to be parsed: the default SETTINGS_MAX_FRAME_SIZE.
	// A header block is read in frames of at most this (or MaxHeader)
	// size; a larger frame is skipped, and the header state with it.
	maxFrameKept = 16 << 10
	// headerTableSize is the HPACK dynamic table size at the start of a
	// connection (SETTINGS_HEADER_TABLE_SIZE's initial value).
	headerTableSize = 4096
	// maxLegalFrame is the largest frame length a frame header can say.
	maxLegalFrame = 1<<24 - 1
)

// clientPreface is the client's connection preface, whole.
const clientPreface = http2.ClientPreface

// h2conn is the HTTP/2 state of a connection.
type h2conn struct {
	sides   [2]h2side
	client  Dir // the direction that carries requests
	streams map[uint32]*h2stream
	// lastStream is the highest stream a request opened: a HEADERS
	// frame for a lower one that is not in progress is no new request.
	lastStream uint32
}

// h2stream is a stream in progress: an exchange, its two bodies.
type h2stream struct {
	e     *entry
	req   body
	resp  body
	final bool // the final response's head came (not an informational one)
}

// frameReader hands the Framer one frame header or payload at a time.
type frameReader struct{ bytes.Reader }

// h2side is one direction of an HTTP/2 connection.
type h2side struct {
	dir     Dir
	seq     uint64 // Feeds so far
	preface int    // bytes of the client's preface still to come

	fr *http2.Framer
	rd frameReader

	// The frame in progress: its header (nhdr bytes of it so far), the
	// bytes of its payload still to come, and the timestamp of its first
	// byte.
	hdr    [frameHeader]byte
	nhdr   int
	fh     http2.FrameHeader
	remain uint32
	at     int64
	// A frame other than DATA: its payload so far, or skip when it is
	// too large to keep.
	payload []byte
	skip    bool
	// A DATA frame: whether its pad length is still to come, and how
	// many of its last bytes are padding.
	padPending bool
	pad        uint32

	// The header block in progress: its stream (0: none, or not an
	// exchange's), whether END_STREAM came with it, its fields so far,
	// and whether they went over MaxHeader or MaxFields.
	dec        *hpack.Decoder
	inBlock    bool
	block      uint32
	blockEnd   bool
	blockAt    int64
	fields     Headers
	pseudo     [4]string // :method, :path, :authority, :status
	fieldBytes int
	over       bool

	// lost: bytes were lost; the direction waits for a Feed that starts
	// with a plausible frame header.
	lost bool
}

const (
	pseudoMethod = iota
	pseudoPath
	pseudoAuthority
	pseudoStatus
)

// startHTTP2 switches c to HTTP/2. from carried the first bytes, which
// are the client's preface, or a server's SETTINGS frame when preface is
// false.
func (c *Conn) startHTTP2(from Dir, preface bool) {
	c.stats.HTTP2++
	h := &h2conn{streams: map[uint32]*h2stream{}, client: from}
	if !preface {
		h.client = 1 - from
	}
	c.role = Client
	if h.client == Read {
		c.role = Server
	}
	for d := range h.sides {
		s := &h.sides[d]
		s.dir = Dir(d)
		s.reset(c)
	}
	h.sides[h.client].preface = len(clientPreface)
	c.h2 = h
	// Release what HTTP/1.x reading held.
	for i := range c.sides {
		c.sides[i].hdr, c.sides[i].cur = nil, nil
	}
}

// reset gives s a new Framer and HPACK decoder: at the start, and after a
// loss, when the header state the peer's encoder holds is not known.
func (s *h2side) reset(c *Conn) {
	s.fr = http2.NewFramer(nil, &s.rd)
	s.fr.SetMaxReadFrameSize(maxLegalFrame) // DATA is not buffered; others are capped by maxFrameKept
	s.dec = hpack.NewDecoder(headerTableSize, func(f hpack.HeaderField) { s.field(c, f) })
	s.dec.SetMaxStringLength(c.cfg.MaxHeader)
	s.nhdr, s.remain, s.payload, s.skip = 0, 0, s.payload[:0], false
	s.inBlock, s.block = false, 0
	s.clearBlock()
}

// freshTable empties the decoder's dynamic table and drops what it
// held of a field cut between two fragments, as a new decoder would
// start (without its allocations: a peer that sends bad blocks one after
// another costs no memory).
func (s *h2side) freshTable() {
	_ = s.dec.Close()
	s.dec.SetMaxDynamicTableSize(0)
	s.dec.SetMaxDynamicTableSize(headerTableSize)
}

func (s *h2side) clearBlock() {
	clear(s.fields)
	s.fields, s.fieldBytes, s.over = s.fields[:0], 0, false
	s.pseudo = [4]string{}
}

// feed2 takes a Feed of an HTTP/2 connection.
func (c *Conn) feed2(dir Dir, data []byte, ts int64) {
	h := c.h2
	s := &h.sides[dir]
	s.seq++
	if s.lost {
		if !h.plausibleFrame(dir, data) {
			c.stats.SkippedBytes += int64(len(data))
			return
		}
		s.lost = false
	}
	c.run2(s, data, ts)
}

// run2 reads data on s.
func (c *Conn) run2(s *h2side, data []byte, ts int64) {
	for len(data) > 0 && c.h2 != nil && !s.lost {
		data = data[c.step2(s, data, ts):]
	}
	switch {
	case c.h2 == nil: // not HTTP/2 after all
		c.stats.IgnoredBytes += int64(len(data))
	case s.lost: // out of sync: the rest of the Feed is passed over
		c.stats.SkippedBytes += int64(len(data))
	}
}

// step2 consumes the start of data and returns how many bytes it took.
func (c *Conn) step2(s *h2side, data []byte, ts int64) int {
	if s.preface > 0 {
		want := clientPreface[len(clientPreface)-s.preface:]
		n := min(len(want), len(data))
		if string(data[:n]) != want[:n] {
			c.stats.IgnoredBytes += int64(len(clientPreface) - s.preface) // what matched
			c.endHTTP2(&c.stats.NonHTTP)
			return 0
		}
		s.preface -= n
		return n
	}
	if s.nhdr < frameHeader {
		if s.nhdr == 0 {
			s.at = ts
		}
		n := copy(s.hdr[s.nhdr:], data)
		s.nhdr += n
		if s.nhdr == frameHeader {
			c.frameStart(s, ts)
		}
		return n
	}
	n := int(min(uint32(len(data)), s.remain))
	p := data[:n]
	s.remain -= uint32(n)
	if s.fh.Type == http2.FrameData {
		c.dataPayload(s, p, ts)
	} else if !s.skip {
		s.payload = appendCapped(s.payload, p, maxFrameKept)
	}
	if s.remain == 0 {
		c.frameEnd(s, ts)
	}
	return n
}

// frameStart reads a complete frame header.
func (c *Conn) frameStart(s *h2side, ts int64) {
	s.rd.Reset(s.hdr[:])
	fh, err := s.fr.ReadFrameHeader()
	if err != nil {
		c.badFrame(s)
		return
	}
	s.fh, s.remain = fh, fh.Length
	s.payload, s.skip = s.payload[:0], false
	switch {
	case fh.Type == http2.FrameData:
		if s.inBlock {
			c.badFrame(s) // the Framer checks this only for the frames it reads
			return
		}
		s.padPending, s.pad = fh.Flags.Has(http2.FlagDataPadded), 0
	case fh.Length > maxFrameKept:
		s.skip = true
		if isHeaderBlock(fh.Type) {
			// Its fields cannot be decoded, nor, after it, the next
			// blocks' references to them.
			c.stats.HeaderTooLarge++
			c.lostHeaders(s)
		}
	}
	if s.remain == 0 {
		c.frameEnd(s, ts)
	}
}

func isHeaderBlock(t http2.FrameType) bool {
	return t == http2.FrameHeaders || t == http2.FrameContinuation || t == http2.FramePushPromise
}

// dataPayload takes bytes of a DATA frame's payload: the pad length, the
// data, the padding.
func (c *Conn) dataPayload(s *h2side, p []byte, ts int64) {
	if s.padPending && len(p) > 0 {
		s.padPending = false
		s.pad = uint32(p[0])
		if s.pad >= s.fh.Length {
			c.badFrame(s)
			return
		}
		p = p[1:]
	}
	// Of what is left of the frame (s.remain after p), the last s.pad
	// bytes are padding.
	if dataLeft := int64(len(p)) + int64(s.remain) - int64(s.pad); dataLeft < int64(len(p)) {
		p = p[:max(dataLeft, 0)]
	}
	st := c.h2.streams[s.fh.StreamID]
	if st == nil || len(p) == 0 {
		return
	}
	if s.dir == c.h2.client {
		if !st.e.reqDone {
			st.req.keep(&c.cfg, p, ts, s.seq, false)
		}
	} else if st.final && !st.e.respDone {
		st.resp.keep(&c.cfg, p, ts, s.seq, true)
	}
}

// frameEnd acts on a complete frame.
func (c *Conn) frameEnd(s *h2side, ts int64) {
	s.nhdr = 0
	fh := s.fh
	if fh.Type == http2.FrameData {
		if s.padPending { // an empty padded frame
			c.badFrame(s)
			return
		}
		if fh.Flags.Has(http2.FlagDataEndStream) {
			c.endOfStream(s.dir, fh.StreamID, ts)
		}
		return
	}
	if s.skip {
		return
	}
	s.rd.Reset(s.payload)
	f, err := s.fr.ReadFrameForHeader(fh)
	if err != nil {
		c.badFrame(s)
		return
	}
	h := c.h2
	switch f := f.(type) {
	case *http2.HeadersFrame:
		s.inBlock, s.block, s.blockEnd, s.blockAt = true, f.StreamID, f.StreamEnded(), s.at
		s.clearBlock()
		c.blockFragment(s, f.HeaderBlockFragment(), f.HeadersEnded(), ts)
	case *http2.PushPromiseFrame:
		// Its block is decoded, to keep the table, and dropped: pushed
		// streams are no LLM API's.
		s.inBlock, s.block, s.blockEnd = true, 0, false
		s.clearBlock()
		c.blockFragment(s, f.HeaderBlockFragment(), f.HeadersEnded(), ts)
	case *http2.ContinuationFrame:
		c.blockFragment(s, f.HeaderBlockFragment(), f.HeadersEnded(), ts)
	case *http2.RSTStreamFrame:
		c.resetStream(s.dir, f.StreamID, f.ErrCode, ts)
	case *http2.GoAwayFrame:
		if s.dir != h.client {
			// The streams above the last one the server processed were
			// not: their clients retry them.
			for id, st := range h.streams {
				if id > f.LastStreamID {
					c.abandon(st.e, &c.stats.AbandonedRefused)
					c.dropStream(id)
				}
			}
		}
	case *http2.SettingsFrame:
		if !f.IsAck() {
			if v, ok := f.Value(http2.SettingHeaderTableSize); ok {
				// The other end's encoder may use a table up to v.
				h.sides[1-s.dir].dec.SetAllowedMaxDynamicTableSize(v)
			}
		}
	}
}

// blockFragment decodes a fragment of a header block; end says it is the
// last.
func (c *Conn) blockFragment(s *h2side, frag []byte, end bool, ts int64) {
	if _, err := s.dec.Write(frag); err != nil {
		c.lostHeaders(s)
		return
	}
	if !end {
		return
	}
	s.inBlock = false
	if err := s.dec.Close(); err != nil {
		c.lostHeaders(s)
		return
	}
	if s.block != 0 {
		c.headerBlock(s, ts)
	}
}

// field takes a decoded header field of the block in progress.
func (s *h2side) field(c *Conn, f hpack.HeaderField) {
	if s.block == 0 || s.over {
		return
	}
	if f.IsPseudo() {
		i := -1
		switch f.Name {
		case ":method":
			i = pseudoMethod
		case ":path":
			i = pseudoPath
		case ":authority":
			i = pseudoAuthority
		case ":status":
			i = pseudoStatus
		}
		if i >= 0 {
			s.pseudo[i] = f.Value
		}
		return
	}
	value := f.Value
	if dropped(unsafe.Slice(unsafe.StringData(f.Name), len(f.Name)), c.cfg.DropHeaders) {
		if c.cfg.Redact == nil {
			return
		}
		value = c.cfg.Redact([]byte(f.Name), []byte(f.Value))
	}
	s.fieldBytes += len(f.Name) + len(value)
	if len(s.fields) == MaxFields || s.fieldBytes > c.cfg.MaxHeader {
		s.over = true
		return
	}
	s.fields = append(s.fields, Header{Name: f.Name, Value: value})
}

// headerBlock acts on a complete header block of a stream.
func (c *Conn) headerBlock(s *h2side, ts int64) {
	h := c.h2
	id, st := s.block, h.streams[s.block]
	bad := s.over
	if s.over {
		c.stats.HeaderTooLarge++
	}
	if s.dir == h.client {
		switch {
		case st != nil: // the request's trailers
			if bad {
				c.abandonStream(id, &c.stats.AbandonedMalformed)
				return
			}
		case id <= h.lastStream || id%2 == 0:
			return // a stream ended or abandoned, or not a client's
		default:
			h.lastStream = id
			st = c.openStream(s, id, bad)
			if st == nil {
				return
			}
		}
		if s.blockEnd {
			c.endOfStream(s.dir, id, ts)
		}
		return
	}
	if st == nil {
		return // a response to a request not read
	}
	if bad {
		c.abandonStream(id, &c.stats.AbandonedMalformed)
		return
	}
	if !st.final {
		status, err := strconv.Atoi(s.pseudo[pseudoStatus])
		if err != nil || status < 100 || status > 999 {
			c.stats.BadStartLine++
			c.abandonStream(id, &c.stats.AbandonedMalformed)
			return
		}
		if status < 200 {
			return // informational: the final head follows
		}
		st.final = true
		e := st.e
		e.ex.Status = status
		e.ex.ResponseHeader = cloneHeaders(s.fields)
		e.ex.ResponseStart = s.blockAt
		if c.cfg.OnResponse != nil {
			st.resp.sink = c.cfg.OnResponse(&e.ex)
		}
	}
	if s.blockEnd {
		c.endOfStream(s.dir, id, ts)
	}
}

// cloneHeaders returns a copy of h, nil when it is empty.
func cloneHeaders(h Headers) Headers {
	if len(h) == 0 {
		return nil
	}
	return append(Headers(nil), h...)
}

// openStream starts the exchange of a request whose head s has just
// decoded, or counts it when it cannot be kept.
func (c *Conn) openStream(s *h2side, id uint32, bad bool) *h2stream {
	h := c.h2
	method, path := s.pseudo[pseudoMethod], s.pseudo[pseudoPath]
	switch {
	case bad: // counted by what was wrong
		c.stats.AbandonedMalformed++
		return nil
	case method == "" || path == "" && method != "CONNECT":
		c.stats.BadStartLine++
		c.stats.AbandonedMalformed++
		return nil
	case len(h.streams) == c.cfg.MaxStreams:
		c.stats.AbandonedOverflow++
		return nil
	}
	fields := s.fields
	if a := s.pseudo[pseudoAuthority]; a != "" && fields.Get("Host") == "" {
		fields = append(Headers{{Name: "Host", Value: a}}, fields...)
	} else {
		fields = cloneHeaders(fields)
	}
	st := &h2stream{e: &entry{ex: Exchange{
		Role: c.role, Method: method, Target: path, Proto: "HTTP/2",
		RequestHeader: fields, RequestStart: s.blockAt,
	}}}
	h.streams[id] = st
	return st
}

// endOfStream ends the message of a stream that direction d carries.
func (c *Conn) endOfStream(d Dir, id uint32, ts int64) {
	h := c.h2
	st := h.streams[id]
	if st == nil {
		return
	}
	if d == h.client {
		if !st.e.reqDone {
			c.complete(st.e, &st.req, true, ts)
		}
	} else if st.final && !st.e.respDone {
		c.complete(st.e, &st.resp, false, ts)
	} else if !st.final {
		c.stats.BadStartLine++ // a response that ended before its final head
		c.abandonStream(id, &c.stats.AbandonedMalformed)
		return
	}
	if st.e.reqDone && st.e.respDone {
		c.dropStream(id)
	}
}

// resetStream ends a stream that direction d reset. The exchange is
// delivered as it stands, with ResetBy and ResetCode, unless the server
// refused it (REFUSED_STREAM: it was not processed, and its client
// retries): that one is abandoned.
func (c *Conn) resetStream(d Dir, id uint32, code http2.ErrCode, ts int64) {
	h := c.h2
	st := h.streams[id]
	if st == nil {
		return
	}
	if code == http2.ErrCodeRefusedStream && d != h.client {
		c.abandonStream(id, &c.stats.AbandonedRefused)
		return
	}
	e := st.e
	e.ex.ResetBy, e.ex.ResetCode = Server, uint32(code)
	if d == h.client {
		e.ex.ResetBy = Client
	}
	c.stats.Reset++
	if !e.reqDone {
		c.complete(e, &st.req, true, ts)
	}
	if !e.respDone {
		c.complete(e, &st.resp, false, max(ts, e.ex.ResponseStart))
	}
	c.dropStream(id)
}

// abandonStream abandons a stream's exchange and forgets the stream.
func (c *Conn) abandonStream(id uint32, cause *int64) {
	if st := c.h2.streams[id]; st != nil {
		c.abandon(st.e, cause)
		c.dropStream(id)
	}
}

// dropStream forgets a stream, its bodies with it.
func (c *Conn) dropStream(id uint32) {
	st := c.h2.streams[id]
	if st == nil {
		return
	}
	if st.e.abandoned {
		c.cfg.Bodies.put(st.req.data)
		c.cfg.Bodies.put(st.resp.data)
	}
	delete(c.h2.streams, id)
}

// lostHeaders handles a header block that could not be decoded: the
// decoder starts afresh, so that no later block is decoded against a
// table that differs from the encoder's (a fresh table holds only what
// the encoder added since, at the same places, so a reference to an
// entry lost fails instead of naming another), and the block's stream is
// abandoned.
func (c *Conn) lostHeaders(s *h2side) {
	c.stats.BadHeaderBlock++
	if s.block != 0 {
		c.abandonStream(s.block, &c.stats.AbandonedMalformed)
	}
	s.freshTable()
	s.inBlock, s.block = false, 0
	s.clearBlock()
}

// badFrame handles a frame that breaks the framing: the direction is out
// of sync, as after a loss.
func (c *Conn) badFrame(s *h2side) {
	c.stats.BadFrame++
	c.lose2(s, &c.stats.AbandonedMalformed)
}

// lose2 puts direction s out of sync: its header state is reset, every
// stream in progress abandoned, and it waits for a Feed that starts with
// a plausible frame header.
func (c *Conn) lose2(s *h2side, cause *int64) {
	for id, st := range c.h2.streams {
		c.abandon(st.e, cause)
		c.dropStream(id)
	}
	s.reset(c)
	s.lost, s.preface = true, 0
}

// plausibleFrame says whether data, the start of a Feed on direction d
// after a loss, starts with a frame header that could be the next frame:
// a known type other than CONTINUATION (which cannot start after a loss),
// no flag the type does not define, the reserved bit clear, a length the
// type allows, and a stream fit for the type.
func (h *h2conn) plausibleFrame(d Dir, data []byte) bool {
	if len(data) < frameHeader || data[5]&0x80 != 0 {
		return false
	}
	length := uint32(data[0])<<16 | uint32(data[1])<<8 | uint32(data[2])
	t, flags := http2.FrameType(data[3]), data[4]
	stream := uint32(data[5])<<24 | uint32(data[6])<<16 | uint32(data[7])<<8 | uint32(data[8])
	var allowed byte
	onStream := true
	switch t {
	case http2.FrameData:
		allowed = 0x1 | 0x8
	case http2.FrameHeaders:
		allowed = 0x1 | 0x4 | 0x8 | 0x20
	case http2.FramePriority:
		onStream = length == 5
	case http2.FrameRSTStream:
		onStream = length == 4
	case http2.FrameSettings:
		allowed, onStream = 0x1, false
		if length%6 != 0 {
			return false
		}
	case http2.FramePushPromise:
		allowed = 0x4 | 0x8
	case http2.FramePing:
		allowed, onStream = 0x1, false
		if length != 8 {
			return false
		}
	case http2.FrameGoAway:
		onStream = false
		if length < 8 {
			return false
		}
	case http2.FrameWindowUpdate:
		if length != 4 {
			return false
		}
		return true // on a stream or the connection
	default:
		return false
	}
	if flags&^allowed != 0 || length > maxFrameKept && t != http2.FrameData {
		return false
	}
	if t == http2.FramePriority || t == http2.FrameRSTStream {
		return onStream && stream != 0
	}
	return onStream == (stream != 0)
}

// endHTTP2 stops reading c, which is not HTTP/2 after all.
func (c *Conn) endHTTP2(counter *int64) {
	c.stats.HTTP2--
	*counter++
	c.abandonAll2(&c.stats.AbandonedClose)
	c.h2 = nil
	c.state = ignored
	c.release()
}

// abandonAll2 abandons every stream in progress.
func (c *Conn) abandonAll2(cause *int64) {
	for id, st := range c.h2.streams {
		c.abandon(st.e, cause)
		c.dropStream(id)
	}
}

// waiting calls f with each stream's exchange whose request is complete
// and whose response has brought no body byte.
func (h *h2conn) waiting(f func(*Exchange)) {
	for _, st := range h.streams {
		if st.e.reqDone && !st.e.abandoned && len(st.resp.marks) == 0 {
			f(&st.e.ex)
		}
	}
}

// retained returns the bytes the HTTP/2 state holds.
func (h *h2conn) retained() int {
	n := 0
	for i := range h.sides {
		s := &h.sides[i]
		n += cap(s.payload) + cap(s.fields)*int(unsafe.Sizeof(Header{})) + s.fieldBytes
	}
	for _, st := range h.streams {
		n += st.e.retained() + cap(st.req.data) + cap(st.resp.data) + cap(st.resp.marks)*int(unsafe.Sizeof(mark{}))
	}
	return n
}
