package genai

import (
	"encoding/binary"
	"hash/crc32"
)

// AWS event-stream framing (application/vnd.amazon.eventstream), as
// Bedrock's ConverseStream and InvokeModelWithResponseStream send it.
// Each message is
//
//	total length   uint32, big endian, the whole message
//	headers length uint32
//	prelude CRC    uint32, CRC-32 (IEEE) of the 8 bytes above
//	headers        name length (1 byte), name, value type (1 byte), value
//	payload
//	message CRC    uint32, CRC-32 of everything before it
//
// Header value types: 0 true and 1 false (no value), 2 byte, 3 int16,
// 4 int32, 5 int64, 6 bytes and 7 string (uint16 length, then the bytes),
// 8 timestamp (int64), 9 UUID (16 bytes).
const (
	esPrelude    = 12 // total length, headers length, prelude CRC
	esMinMessage = esPrelude + 4
	// esMaxMessage bounds the messages that are held: Bedrock's are a
	// few kilobytes (the framing allows 16 MiB). A longer one is skipped
	// without being buffered, and counted.
	esMaxMessage = 1 << 20
)

// Header value types.
const (
	esTrue = iota
	esFalse
	esByte
	esInt16
	esInt32
	esInt64
	esBytes
	esString
	esTimestamp
	esUUID
)

// esMessage is one decoded message: views of the decoder's input or
// buffer, valid until the decoder's next call.
type esMessage struct {
	headers []byte // the raw header block, checked to be well formed
	payload []byte
}

// header returns the value of the first header called name with the
// string or bytes type, or nil.
func (m *esMessage) header(name string) []byte {
	h := m.headers
	for len(h) > 0 {
		n, typ, value, rest, ok := esHeader(h)
		if !ok {
			return nil
		}
		if string(n) == name && (typ == esString || typ == esBytes) {
			return value
		}
		h = rest
	}
	return nil
}

// esHeader splits the first header off a header block.
func esHeader(h []byte) (name []byte, typ byte, value, rest []byte, ok bool) {
	if len(h) < 1 {
		return nil, 0, nil, nil, false
	}
	nl := int(h[0])
	if nl == 0 || len(h) < 1+nl+1 {
		return nil, 0, nil, nil, false
	}
	name, typ, h = h[1:1+nl], h[1+nl], h[2+nl:]
	var size int
	switch typ {
	case esTrue, esFalse:
		size = 0
	case esByte:
		size = 1
	case esInt16:
		size = 2
	case esInt32:
		size = 4
	case esInt64, esTimestamp:
		size = 8
	case esUUID:
		size = 16
	case esBytes, esString:
		if len(h) < 2 {
			return nil, 0, nil, nil, false
		}
		size, h = int(binary.BigEndian.Uint16(h)), h[2:]
	default:
		return nil, 0, nil, nil, false
	}
	if len(h) < size {
		return nil, 0, nil, nil, false
	}
	return name, typ, h[:size], h[size:], true
}

// eventStreamDecoder decodes AWS event-stream messages as chunks arrive,
// with chunk boundaries at any byte. A message that lies within one
// chunk is handed out as a view of it; one that spans chunks is
// gathered in a buffer of at most esMaxMessage bytes.
//
// Both CRCs are checked. A message whose message CRC or header block is
// wrong is dropped and counted, and decoding goes on after it (its
// length was vouched for by the prelude CRC). A prelude whose CRC or
// lengths are wrong loses the framing: nothing after it is decoded. A
// message longer than the limit is skipped as it arrives, unread.
type eventStreamDecoder struct {
	max int
	in  []byte
	buf []byte // the start of a message cut by the end of a chunk
	// total is the length of the message being gathered in buf, once
	// its prelude has been read; 0 before.
	total int
	skip  int // bytes of an oversize message still to skip
	msg   esMessage

	broken   bool // the framing was lost
	dropped  int  // messages dropped: bad CRC or header block
	oversize int  // messages skipped for their size
}

func (d *eventStreamDecoder) reset() {
	buf := d.buf[:0]
	if cap(buf) > 64<<10 {
		buf = nil
	}
	*d = eventStreamDecoder{max: d.max, buf: buf}
}

func (d *eventStreamDecoder) limit() int {
	if d.max <= 0 {
		return esMaxMessage
	}
	return d.max
}

// feed hands the decoder the next chunk; next reads it.
func (d *eventStreamDecoder) feed(chunk []byte) { d.in = chunk }

// pending reports a message begun and not finished: the stream was cut
// inside it (a broken framing is reported as broken, not pending).
func (d *eventStreamDecoder) pending() bool { return len(d.buf) > 0 || d.skip > 0 }

// prelude checks a message's first 12 bytes and returns its length.
func (d *eventStreamDecoder) prelude(p []byte) (total int, ok bool) {
	total = int(binary.BigEndian.Uint32(p))
	hl := int(binary.BigEndian.Uint32(p[4:]))
	if crc32.ChecksumIEEE(p[:8]) != binary.BigEndian.Uint32(p[8:]) ||
		total < esMinMessage || hl > total-esMinMessage || total > 1<<30 {
		d.broken = true
		return 0, false
	}
	return total, true
}

// next returns the next complete, valid message; ok is false when the
// fed chunk is used up (or the framing was lost). The message is valid
// until the next call.
func (d *eventStreamDecoder) next() (m *esMessage, ok bool) {
	if d.total > 0 && len(d.buf) == d.total {
		// The message handed out last time lay in buf.
		d.buf, d.total = d.buf[:0], 0
	}
	max := d.limit()
	for len(d.in) > 0 && !d.broken {
		if d.skip > 0 {
			n := min(d.skip, len(d.in))
			d.skip -= n
			d.in = d.in[n:]
			continue
		}
		if len(d.buf) == 0 && len(d.in) >= esPrelude {
			// A message starting in this chunk.
			total, ok := d.prelude(d.in)
			if !ok {
				break
			}
			if total > max {
				d.oversize++
				d.skip = total
				continue
			}
			if len(d.in) >= total {
				frame := d.in[:total]
				d.in = d.in[total:]
				if d.decode(frame) {
					return &d.msg, true
				}
				continue
			}
		}
		// Gather the message in buf.
		if d.total == 0 {
			n := min(esPrelude-len(d.buf), len(d.in))
			d.buf = append(d.buf, d.in[:n]...)
			d.in = d.in[n:]
			if len(d.buf) < esPrelude {
				continue
			}
			total, ok := d.prelude(d.buf)
			if !ok {
				break
			}
			if total > max {
				d.oversize++
				d.skip = total - len(d.buf)
				d.buf = d.buf[:0]
				continue
			}
			d.total = total
		}
		n := min(d.total-len(d.buf), len(d.in))
		d.buf = appendCapped(d.buf, d.in[:n], d.total)
		d.in = d.in[n:]
		if len(d.buf) < d.total {
			continue
		}
		if d.decode(d.buf) {
			return &d.msg, true
		}
		d.buf, d.total = d.buf[:0], 0
	}
	if d.broken {
		// Nothing more is read: what was gathered is dropped.
		d.in, d.buf, d.total, d.skip = nil, d.buf[:0], 0, 0
	}
	return nil, false
}

// decode checks a whole message's CRC and header block and sets msg.
func (d *eventStreamDecoder) decode(frame []byte) bool {
	n := len(frame)
	if crc32.ChecksumIEEE(frame[:n-4]) != binary.BigEndian.Uint32(frame[n-4:]) {
		d.dropped++
		return false
	}
	hl := int(binary.BigEndian.Uint32(frame[4:]))
	headers := frame[esPrelude : esPrelude+hl]
	for h := headers; len(h) > 0; {
		_, _, _, rest, ok := esHeader(h)
		if !ok {
			d.dropped++
			return false
		}
		h = rest
	}
	d.msg = esMessage{headers: headers, payload: frame[esPrelude+hl : n-4]}
	return true
}
