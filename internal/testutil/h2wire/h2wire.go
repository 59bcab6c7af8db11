// Package h2wire writes one end's side of an HTTP/2 connection for tests
// of the readers of HTTP/2 traffic: frames written by the x/net/http2
// Framer, header blocks by an hpack.Encoder whose dynamic table lives as
// long as the End, as a real peer's does.
package h2wire

import (
	"bytes"
	"strings"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// End is one end of a connection. Its methods write frames and return
// them as a string (what the end sends, for a test to feed a reader);
// they panic on a Framer error, which only a test's own mistake causes.
type End struct {
	// Framer writes frames into the End; Take returns them.
	Framer *http2.Framer
	// Encoder encodes header blocks; its table is the End's.
	Encoder *hpack.Encoder

	out bytes.Buffer
	blk bytes.Buffer
}

// New returns an End with empty tables.
func New() *End {
	e := &End{}
	e.Framer = http2.NewFramer(&e.out, nil)
	e.Encoder = hpack.NewEncoder(&e.blk)
	return e
}

// Take returns what was written since the last Take.
func (e *End) Take() string {
	s := e.out.String()
	e.out.Reset()
	return s
}

// Block encodes a header block from name, value pairs; a name that
// starts with "!" is sent as never indexed (RFC 7541, 6.2.3).
func (e *End) Block(kv ...string) []byte {
	e.blk.Reset()
	for i := 0; i+1 < len(kv); i += 2 {
		name, sensitive := strings.CutPrefix(kv[i], "!")
		must(e.Encoder.WriteField(hpack.HeaderField{Name: name, Value: kv[i+1], Sensitive: sensitive}))
	}
	return bytes.Clone(e.blk.Bytes())
}

// Headers writes a HEADERS frame holding the whole block of kv.
func (e *End) Headers(stream uint32, endStream bool, kv ...string) string {
	must(e.Framer.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: e.Block(kv...), EndStream: endStream, EndHeaders: true}))
	return e.Take()
}

// Data writes a DATA frame.
func (e *End) Data(stream uint32, endStream bool, s string) string {
	must(e.Framer.WriteData(stream, endStream, []byte(s)))
	return e.Take()
}

// Settings writes a SETTINGS frame.
func (e *End) Settings(s ...http2.Setting) string {
	must(e.Framer.WriteSettings(s...))
	return e.Take()
}

// Reset writes a RST_STREAM frame.
func (e *End) Reset(stream uint32, code http2.ErrCode) string {
	must(e.Framer.WriteRSTStream(stream, code))
	return e.Take()
}

// Must panics on err: for the Framer's other writers.
func Must(err error) { must(err) }

func must(err error) {
	if err != nil {
		panic(err)
	}
}
