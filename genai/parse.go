package genai

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/xpuscope/xpuscope/genai/internal/jsonscan"
)

// ErrUnsupportedAPI is returned by Parse for an API that has no parser
// yet (Gemini embedContent).
var ErrUnsupportedAPI = errors.New("genai: no parser for this API yet")

// Parse reads a detected exchange into a Call: the endpoint's provider
// and operation, and what the API's parser finds in the bodies.
func Parse(x *Exchange, ep Endpoint) (Call, error) {
	c := Call{Provider: ep.Provider, Operation: ep.Operation}
	parser := readerOf(ep.API).parser
	if parser == nil {
		return c, fmt.Errorf("%w: %s", ErrUnsupportedAPI, ep.API)
	}
	parseWith(parser(), x, &c)
	finishCall(&c, ep)
	return c, nil
}

// finishCall fills in what the endpoint says and the exchange did not.
func finishCall(c *Call, ep Endpoint) {
	if c.RequestModel == "" {
		c.RequestModel = ep.Model
	}
}

// Bounds on what a Call holds, whatever the traffic says.
const (
	maxCallString = 256 // bytes of one string (model, id, names), cut at a rune
	maxCallList   = 128 // entries of FinishReasons, ToolCalls, ToolDefinitions
)

// resetCall sets every parsed field to "absent", keeping Provider and
// Operation.
func resetCall(c *Call) {
	*c = Call{
		Provider: c.Provider, Operation: c.Operation,
		Temperature: math.NaN(), TopP: math.NaN(), MaxTokens: -1, ChoiceCount: -1,
		Usage: NoUsage, TimeToFirstChunk: -1, TimePerChunk: -1,
	}
}

// encoded reports a compressed body, which the parsers cannot read.
func encoded(h Header) bool {
	e := h.Get("Content-Encoding")
	return e != "" && !strings.EqualFold(e, "identity")
}

// isEventStream says whether the response is a text/event-stream
// (eventStreamStart, with its first body byte).
func isEventStream(x *Exchange) bool {
	first, ok := firstBodyByte(x.Chunks)
	return eventStreamStart(x.ResponseHeader, first, ok)
}

// eventStreamStart says whether a response with header h whose body
// starts with first (ok: the first byte that is not JSON white space; !ok:
// a blank body) is a text/event-stream. A body that starts with '{' or
// '[' is JSON whatever the Content-Type says (servers send JSON errors to
// streaming requests); otherwise the Content-Type decides, and without a
// telling one, the first byte.
func eventStreamStart(h Header, first byte, ok bool) bool {
	ct := strings.ToLower(h.Get("Content-Type"))
	sse := strings.Contains(ct, "text/event-stream")
	if !ok {
		return sse
	}
	switch first {
	case '{', '[':
		return false
	}
	return sse || !strings.Contains(ct, "json")
}

// isJSONSpace reports the white space of JSON.
func isJSONSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\r' || r == '\n' }

// usable: a type worth reporting (LiteLLM sends "None").
func usable(b []byte) bool { return len(b) > 0 && string(b) != "None" }

// strView returns raw if it is a string, else nil.
func strView(kind jsonscan.Kind, raw []byte) []byte {
	if kind != jsonscan.String {
		return nil
	}
	return raw
}

// scalarView returns a string's or a number's raw bytes (error codes
// come as both), else nil.
func scalarView(kind jsonscan.Kind, raw []byte) []byte {
	if kind != jsonscan.String && kind != jsonscan.Number {
		return nil
	}
	return raw
}

// setInt sets *dst to a number that is a non-negative integer; any
// other value leaves it.
func setInt(dst *int64, kind jsonscan.Kind, raw []byte) {
	if kind != jsonscan.Number {
		return
	}
	if n, ok := jsonscan.Int(raw); ok && n >= 0 {
		*dst = n
	}
}

// setFloat sets *dst to a number; any other value leaves it.
func setFloat(dst *float64, kind jsonscan.Kind, raw []byte) {
	if kind != jsonscan.Number {
		return
	}
	if f, ok := jsonscan.Float(raw); ok {
		*dst = f
	}
}

// setOnce sets *dst to the string raw holds, unless *dst is already set
// or raw is empty.
func setOnce(dst *string, raw []byte) {
	if *dst == "" && len(raw) > 0 {
		*dst = stringOf(raw)
	}
}

// appendName appends the string raw holds to *dst, unless raw is empty
// or *dst holds maxCallList names already.
func appendName(dst *[]string, raw []byte) {
	if len(*dst) < maxCallList && len(raw) > 0 {
		*dst = append(*dst, stringOf(raw))
	}
}

// stringOf decodes a raw JSON string (or takes a number's literal) into
// a string of at most maxCallString bytes. Common values are interned.
func stringOf(raw []byte) string {
	switch string(raw) {
	case "stop":
		return "stop"
	case "length":
		return "length"
	case "tool_calls":
		return "tool_calls"
	case "content_filter":
		return "content_filter"
	case "function_call":
		return "function_call"
	}
	if bytes.IndexByte(raw, '\\') < 0 && len(raw) <= maxCallString {
		return string(raw)
	}
	var buf [maxCallString + 8]byte
	if len(raw) > maxCallString+8 {
		raw = raw[:maxCallString+8]
	}
	b, _ := jsonscan.AppendString(buf[:0], raw)
	return clampString(string(b))
}

// clampString cuts s to maxCallString bytes at a rune boundary.
func clampString(s string) string {
	if len(s) <= maxCallString {
		return s
	}
	i := maxCallString
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i]
}
