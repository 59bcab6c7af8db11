package genai

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// esHeaderKV is one string header of a test message.
type esHeaderKV struct{ name, value string }

// appendEventStreamMessage encodes one AWS event-stream message with
// string headers, as the service sends it.
func appendEventStreamMessage(dst []byte, headers []esHeaderKV, payload []byte) []byte {
	var h []byte
	for _, kv := range headers {
		h = append(h, byte(len(kv.name)))
		h = append(h, kv.name...)
		h = append(h, esString)
		h = binary.BigEndian.AppendUint16(h, uint16(len(kv.value)))
		h = append(h, kv.value...)
	}
	total := esPrelude + len(h) + len(payload) + 4
	start := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, uint32(total))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(h)))
	dst = binary.BigEndian.AppendUint32(dst, crc32.ChecksumIEEE(dst[start:start+8]))
	dst = append(dst, h...)
	dst = append(dst, payload...)
	return binary.BigEndian.AppendUint32(dst, crc32.ChecksumIEEE(dst[start:]))
}

// bedrockEvent encodes a ConverseStream event.
func bedrockEvent(typ, payload string) []byte {
	return appendEventStreamMessage(nil, []esHeaderKV{{":event-type", typ}, {":content-type", "application/json"}, {":message-type", "event"}}, []byte(payload))
}

// encodeEventStreamChunk reads a transcript's eventstream chunk (see the
// README in transcript_test.go): pairs of a header line and a payload
// line.
func encodeEventStreamChunk(text []byte) ([]byte, error) {
	var out []byte
	lines := strings.Split(strings.TrimSuffix(string(text), "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) == "" {
			continue
		}
		if !strings.HasPrefix(lines[i], ":") {
			return nil, fmt.Errorf("eventstream: line %d: want a header line, got %q", i+1, lines[i])
		}
		var hs []esHeaderKV
		for _, w := range strings.Fields(lines[i]) {
			k, v, ok := strings.Cut(w, "=")
			if !ok {
				return nil, fmt.Errorf("eventstream: line %d: header %q is not name=value", i+1, w)
			}
			hs = append(hs, esHeaderKV{k, v})
		}
		if i+1 >= len(lines) {
			return nil, fmt.Errorf("eventstream: line %d: no payload line", i+1)
		}
		i++
		payload := lines[i]
		if js, ok := strings.CutPrefix(payload, "bytes "); ok {
			payload = `{"bytes":"` + base64.StdEncoding.EncodeToString([]byte(js)) + `","p":"abcdefghij"}`
		}
		out = appendEventStreamMessage(out, hs, []byte(payload))
	}
	return out, nil
}

func decodeHexChunk(text []byte) ([]byte, error) {
	return hex.DecodeString(strings.Join(strings.Fields(string(text)), ""))
}

// esMessages decodes a stream fed in the given pieces and describes
// every message, then what the decoder says at the end.
func esMessages(d *eventStreamDecoder, pieces [][]byte) []string {
	d.reset()
	var out []string
	for _, p := range pieces {
		d.feed(p)
		for {
			m, ok := d.next()
			if !ok {
				break
			}
			out = append(out, fmt.Sprintf("%q %q %q", m.header(":event-type"), m.header(":message-type"), m.payload))
		}
	}
	return append(out, fmt.Sprintf("broken=%v dropped=%d oversize=%d pending=%v", d.broken, d.dropped, d.oversize, d.pending()))
}

func TestEventStreamDecoder(t *testing.T) {
	var stream []byte
	stream = append(stream, bedrockEvent("messageStart", `{"role":"assistant"}`)...)
	stream = append(stream, bedrockEvent("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Hi"}}`)...)
	// All the header types, an empty payload.
	var h []byte
	h = append(h, 2, 'a', 'b', esTrue, 1, 'c', esFalse, 1, 'd', esByte, 7, 1, 'e', esInt16, 0, 1, 1, 'f', esInt32, 0, 0, 0, 1)
	h = append(h, 1, 'g', esInt64, 0, 0, 0, 0, 0, 0, 0, 1, 1, 'h', esTimestamp, 0, 0, 0, 0, 0, 0, 0, 1, 1, 'i', esUUID)
	h = append(h, make([]byte, 16)...)
	h = append(h, 1, 'j', esBytes, 0, 2, 'x', 'y')
	h = append(h, 11)
	h = append(h, ":event-type"...)
	h = append(h, esString, 0, 4, 'm', 'e', 't', 'a')
	all := binary.BigEndian.AppendUint32(nil, uint32(esPrelude+len(h)+4))
	all = binary.BigEndian.AppendUint32(all, uint32(len(h)))
	all = binary.BigEndian.AppendUint32(all, crc32.ChecksumIEEE(all))
	all = append(all, h...)
	all = binary.BigEndian.AppendUint32(all, crc32.ChecksumIEEE(all))
	stream = append(stream, all...)
	stream = append(stream, bedrockEvent("metadata", `{"usage":{"inputTokens":1,"outputTokens":2}}`)...)

	var d eventStreamDecoder
	want := esMessages(&d, [][]byte{stream})
	require.Len(t, want, 5, "%q", want)
	require.Equal(t, `"meta" "" ""`, want[2], "%q", want)
	require.True(t, strings.HasPrefix(want[4], "broken=false dropped=0 oversize=0 pending=false"), "%q", want)
	// Split anywhere, and byte by byte.
	for k := 0; k <= len(stream); k++ {
		got := esMessages(&d, [][]byte{stream[:k], stream[k:]})
		require.Equal(t, strings.Join(want, "\n"), strings.Join(got, "\n"), "cut at %d: %q", k, got)
	}
	var bytewise [][]byte
	for i := range stream {
		bytewise = append(bytewise, stream[i:i+1])
	}
	got := esMessages(&d, bytewise)
	require.Equal(t, strings.Join(want, "\n"), strings.Join(got, "\n"), "byte by byte: %q", got)
	// Cut short: the messages before the cut, and a pending one unless
	// the cut falls between messages.
	bounds := map[int]bool{0: true}
	for off := 0; off < len(stream); {
		off += int(binary.BigEndian.Uint32(stream[off:]))
		bounds[off] = true
	}
	for k := 1; k < len(stream); k++ {
		got := esMessages(&d, [][]byte{stream[:k]})
		pending := strings.HasSuffix(got[len(got)-1], "pending=true")
		require.Equal(t, !bounds[k], pending, "cut at %d: %q; want pending unless cut between messages", k, got)
	}

	first := len(bedrockEvent("messageStart", `{"role":"assistant"}`))
	flip := func(i int) []byte {
		b := bytes.Clone(stream)
		b[i] ^= 0x20
		return b
	}
	// A payload byte flipped: that message is dropped, the rest read.
	got = esMessages(&d, [][]byte{flip(first - 6)})
	if assert.Len(t, got, 4, "bad message crc: %q", got) {
		assert.Equal(t, "broken=false dropped=1 oversize=0 pending=false", got[3], "bad message crc: %q", got)
	}
	// A length byte flipped: the framing is lost after the first message.
	got = esMessages(&d, [][]byte{flip(first + 2)})
	if assert.Len(t, got, 2, "bad prelude: %q", got) {
		assert.True(t, strings.HasPrefix(got[1], "broken=true"), "bad prelude: %q", got)
	}
	// A bad header block under a good CRC is dropped.
	bad := binary.BigEndian.AppendUint32(nil, uint32(esPrelude+3+4))
	bad = binary.BigEndian.AppendUint32(bad, 3)
	bad = binary.BigEndian.AppendUint32(bad, crc32.ChecksumIEEE(bad))
	bad = append(bad, 1, 'x', 42)
	bad = binary.BigEndian.AppendUint32(bad, crc32.ChecksumIEEE(bad))
	got = esMessages(&d, [][]byte{bad, stream})
	if assert.Len(t, got, 5, "bad header block: %q", got) {
		assert.True(t, strings.HasPrefix(got[4], "broken=false dropped=1"), "bad header block: %q", got)
	}
	// An oversize message is skipped, whole or in pieces.
	d.max = 128
	big := bedrockEvent("contentBlockDelta", `{"delta":{"text":"`+strings.Repeat("x", 100)+`"}}`)
	in := append(bytes.Clone(big), bedrockEvent("metadata", `{}`)...)
	for k := 0; k <= len(in); k++ {
		got := esMessages(&d, [][]byte{in[:k], in[k:]})
		require.Len(t, got, 2, "oversize cut at %d: %q", k, got)
		require.Equal(t, "broken=false dropped=0 oversize=1 pending=false", got[1], "oversize cut at %d: %q", k, got)
		require.True(t, strings.HasPrefix(got[0], `"metadata"`), "oversize cut at %d: %q", k, got)
	}
	d.max = 0
}

// TestEventStreamHostile: garbage and endless messages cost bounded
// memory.
func TestEventStreamHostile(t *testing.T) {
	huge := binary.BigEndian.AppendUint32(nil, 1<<30)
	huge = binary.BigEndian.AppendUint32(huge, 0)
	huge = binary.BigEndian.AppendUint32(huge, crc32.ChecksumIEEE(huge))
	// Just under the limit, never finished.
	long := binary.BigEndian.AppendUint32(nil, esMaxMessage)
	long = binary.BigEndian.AppendUint32(long, 0)
	long = binary.BigEndian.AppendUint32(long, crc32.ChecksumIEEE(long))
	fill := bytes.Repeat([]byte{0}, 64<<10)
	for _, tc := range []struct {
		name   string
		prefix []byte
	}{{"huge message", huge}, {"long message", long}, {"zeros", nil}} {
		var d eventStreamDecoder
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		d.feed(tc.prefix)
		d.next()
		for range hostileFlood / len(fill) {
			d.feed(fill)
			_, ok := d.next()
			require.False(t, ok, "%s: a message", tc.name)
		}
		runtime.ReadMemStats(&after)
		assert.LessOrEqual(t, after.TotalAlloc-before.TotalAlloc, uint64(4<<20), "%s: bytes allocated", tc.name)
		assert.LessOrEqual(t, cap(d.buf), esMaxMessage+1, "%s: buffer", tc.name)
	}
}

// FuzzEventStream decodes arbitrary bytes, whole and in pieces: the same
// messages, no panic, a bounded buffer.
func FuzzEventStream(f *testing.F) {
	var s []byte
	s = append(s, bedrockEvent("messageStart", `{"role":"assistant"}`)...)
	s = append(s, bedrockEvent("contentBlockDelta", `{"delta":{"text":"Hi"}}`)...)
	f.Add(s, []byte{5, 40, 3})
	f.Add(s[:30], []byte{12})
	f.Add(append(bedrockEvent("metadata", `{}`), 0, 0, 0, 16, 0, 0, 0, 0), []byte{1, 1, 1})
	for _, tr := range loadTranscripts(f, "bedrock") {
		f.Add(responseBody(&tr.x), []byte{7, 100, 3})
	}
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		var d eventStreamDecoder
		d.max = 4 << 10
		whole := esMessages(&d, [][]byte{data})
		pieces := ssePieces(data, cuts)
		got := esMessages(&d, pieces)
		require.Equal(t, strings.Join(whole, "\n"), strings.Join(got, "\n"), "pieces %q\nwhole %q", got, whole)
		require.LessOrEqual(t, cap(d.buf), 2*d.max+512, "buffer")
	})
}
