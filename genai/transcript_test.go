package genai

// README: transcripts.
//
// testdata/<provider>/*.txtar each hold one captured HTTP exchange and
// the Call a parser must read from it. The archive's comment (before the
// first file) says what the exchange shows and where it comes from. The
// files, in this order:
//
//	-- request --
//	POST /v1/chat/completions [truncated]
//	Host: api.openai.com
//	Content-Type: application/json
//
//	{"model":"gpt-4o",…}
//
// The first line is the method and the path (with the query), then
// header lines up to a blank line, then the body, whose final newline is
// not part of it. "truncated" sets RequestTruncated.
//
//	-- response --
//	200 [truncated] [end=900ms]
//	Content-Type: text/event-stream
//
// The status, then header lines. "truncated" sets ResponseTruncated;
// end= sets End (default: the last chunk's arrival, or Start).
//
//	-- chunk 250ms [noeol] [crlf|cr] --
//	data: {…}
//
// One file per response chunk, in order, with its arrival time after
// Start (Start is a fixed instant). The chunk is the file's bytes;
// noeol drops the final newline (a chunk that ends mid-line), crlf and
// cr then turn every LF into CR LF or CR (txtar files keep only LF).
//
//	-- chunk 250ms hex --
//	00 00 00 10 …
//
// hex: the chunk is the bytes the file spells in hexadecimal (white
// space between digits is ignored), for binary bodies.
//
//	-- chunk 250ms eventstream [drop=N] --
//	:event-type=contentBlockDelta :content-type=application/json :message-type=event
//	{"contentBlockIndex":0,"delta":{"text":"Hi"}}
//
// eventstream: the chunk is AWS event-stream messages (Bedrock's
// application/vnd.amazon.eventstream), encoded with their CRCs when the
// transcript is loaded. Each message is two lines: its string headers as
// name=value words, then its payload. A payload line "bytes {…}" stands
// for {"bytes":"<the JSON, base64-encoded>"}, the chunk event of
// InvokeModelWithResponseStream. drop=N drops the encoding's last N
// bytes (a stream cut inside a message).
//
//	-- want --
//	operation: chat
//	…
//
// The expected Call, as callDump prints it. go test -run Transcripts
// -update-transcripts rewrites the want files from what the parser
// reads (review the diff!).

import (
	"bytes"
	"flag"
	"fmt"
	"net/textproto"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var updateTranscripts = flag.Bool("update-transcripts", false, "rewrite the want files of testdata/*/*.txtar")

// transcriptStart is Start in every transcript.
var transcriptStart = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

type transcript struct {
	name    string
	file    string
	comment string
	x       Exchange
	want    string
	raw     []archiveFile
}

type archiveFile struct {
	name string
	data []byte
}

// parseArchive splits a txtar archive.
func parseArchive(data []byte) (comment string, files []archiveFile) {
	isMarker := func(line []byte) (string, bool) {
		if bytes.HasPrefix(line, []byte("-- ")) && bytes.HasSuffix(line, []byte(" --")) && len(line) >= 6 {
			return strings.TrimSpace(string(line[3 : len(line)-3])), true
		}
		return "", false
	}
	var cur *archiveFile
	var com []byte
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		full := data[:len(data)-len(rest)]
		data = rest
		if name, ok := isMarker(line); ok {
			files = append(files, archiveFile{name: name})
			cur = &files[len(files)-1]
			continue
		}
		if cur == nil {
			com = append(com, full...)
		} else {
			cur.data = append(cur.data, full...)
		}
	}
	return string(com), files
}

func loadTranscripts(t testing.TB, dir string) []*transcript {
	paths, err := filepath.Glob(filepath.Join("testdata", dir, "*.txtar"))
	require.NoError(t, err, "no transcripts in testdata/%s", dir)
	require.NotEmpty(t, paths, "no transcripts in testdata/%s", dir)
	var out []*transcript
	for _, p := range paths {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		tr, err := parseTranscript(data)
		require.NoError(t, err, p)
		tr.file = p
		tr.name = strings.TrimSuffix(filepath.Base(p), ".txtar")
		out = append(out, tr)
	}
	return out
}

func parseTranscript(data []byte) (*transcript, error) {
	tr := &transcript{}
	tr.comment, tr.raw = parseArchive(data)
	x := &tr.x
	x.Start = transcriptStart
	var end time.Duration = -1
	for _, f := range tr.raw {
		words := strings.Fields(f.name)
		switch words[0] {
		case "request":
			first, hdr, body, err := parseHead(f.data)
			if err != nil {
				return nil, fmt.Errorf("request: %v", err)
			}
			if len(first) < 2 {
				return nil, fmt.Errorf("request line %q", first)
			}
			x.Method, x.Path = first[0], first[1]
			x.RequestTruncated = hasWord(first[2:], "truncated")
			x.RequestHeader = hdr
			x.Host = hdr.Get("Host")
			x.RequestBody = bytes.TrimSuffix(body, []byte("\n"))
		case "response":
			first, hdr, body, err := parseHead(f.data)
			if err != nil {
				return nil, fmt.Errorf("response: %v", err)
			}
			if len(bytes.TrimSpace(body)) > 0 {
				return nil, fmt.Errorf("response: the body goes in chunk files")
			}
			if len(first) < 1 {
				return nil, fmt.Errorf("no status")
			}
			if x.Status, err = strconv.Atoi(first[0]); err != nil {
				return nil, fmt.Errorf("status: %v", err)
			}
			for _, w := range first[1:] {
				switch {
				case w == "truncated":
					x.ResponseTruncated = true
				case strings.HasPrefix(w, "end="):
					if end, err = time.ParseDuration(w[4:]); err != nil {
						return nil, err
					}
				default:
					return nil, fmt.Errorf("response: unknown %q", w)
				}
			}
			x.ResponseHeader = hdr
		case "chunk":
			if len(words) < 2 {
				return nil, fmt.Errorf("chunk without a time")
			}
			at, err := time.ParseDuration(words[1])
			if err != nil {
				return nil, err
			}
			d := f.data
			for _, w := range words[2:] {
				switch {
				case w == "hex":
					if d, err = decodeHexChunk(d); err != nil {
						return nil, fmt.Errorf("chunk: %v", err)
					}
					continue
				case w == "eventstream":
					if d, err = encodeEventStreamChunk(d); err != nil {
						return nil, fmt.Errorf("chunk: %v", err)
					}
					continue
				case strings.HasPrefix(w, "drop="):
					n, err := strconv.Atoi(w[5:])
					if err != nil || n < 0 || n > len(d) {
						return nil, fmt.Errorf("chunk: bad %q", w)
					}
					d = d[:len(d)-n]
					continue
				}
				switch w {
				case "noeol":
					d = bytes.TrimSuffix(d, []byte("\n"))
				case "crlf":
					d = bytes.ReplaceAll(d, []byte("\n"), []byte("\r\n"))
				case "cr":
					d = bytes.ReplaceAll(d, []byte("\n"), []byte("\r"))
				default:
					return nil, fmt.Errorf("chunk: unknown %q", w)
				}
			}
			x.Chunks = append(x.Chunks, Chunk{At: transcriptStart.Add(at), Data: d})
		case "want":
			tr.want = string(f.data)
		default:
			return nil, fmt.Errorf("unknown file %q", f.name)
		}
	}
	switch {
	case end >= 0:
		x.End = transcriptStart.Add(end)
	case len(x.Chunks) > 0:
		x.End = x.Chunks[len(x.Chunks)-1].At
	default:
		x.End = transcriptStart
	}
	return tr, nil
}

func hasWord(ws []string, w string) bool {
	for _, x := range ws {
		if x == w {
			return true
		}
	}
	return false
}

// parseHead reads a first line, header lines and the rest.
func parseHead(data []byte) (first []string, h Header, body []byte, err error) {
	line, rest, _ := bytes.Cut(data, []byte("\n"))
	first = strings.Fields(string(line))
	h = Header{}
	for {
		if len(rest) == 0 {
			return first, h, nil, nil
		}
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		if len(line) == 0 {
			return first, h, rest, nil
		}
		k, v, ok := strings.Cut(string(line), ":")
		if !ok {
			return nil, nil, nil, fmt.Errorf("header line %q", line)
		}
		k = textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(k))
		h[k] = append(h[k], strings.TrimSpace(v))
	}
}

// callDump prints every field of a Call, one per line.
func callDump(c *Call) string {
	var b strings.Builder
	p := func(k string, v any) { fmt.Fprintf(&b, "%s: %v\n", k, v) }
	list := func(l []string) string {
		q := make([]string, len(l))
		for i, s := range l {
			q[i] = strconv.Quote(s)
		}
		return "[" + strings.Join(q, " ") + "]"
	}
	p("provider", c.Provider)
	p("operation", c.Operation)
	p("request_model", c.RequestModel)
	p("temperature", c.Temperature)
	p("top_p", c.TopP)
	p("max_tokens", c.MaxTokens)
	p("choice_count", c.ChoiceCount)
	p("stream", c.Stream)
	p("tool_definitions", list(c.ToolDefinitions))
	p("response_id", c.ResponseID)
	p("response_model", c.ResponseModel)
	p("finish_reasons", list(c.FinishReasons))
	u := c.Usage
	p("usage", fmt.Sprintf("input=%d output=%d cache_read=%d cache_creation=%d reasoning=%d",
		u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheCreationTokens, u.ReasoningTokens))
	p("tool_calls", list(c.ToolCalls))
	p("error_type", c.ErrorType)
	p("time_to_first_chunk", c.TimeToFirstChunk)
	p("time_per_chunk", c.TimePerChunk)
	p("output_chunks", c.OutputChunks)
	p("duration", c.Duration)
	p("incomplete", c.Incomplete)
	return strings.ReplaceAll(b.String(), ": \n", ":\n")
}

// writeWant replaces the transcript's want file.
func (tr *transcript) writeWant(t testing.TB, want string) {
	var b bytes.Buffer
	b.WriteString(tr.comment)
	for _, f := range tr.raw {
		if f.name == "want" {
			continue
		}
		fmt.Fprintf(&b, "-- %s --\n", f.name)
		b.Write(f.data)
	}
	fmt.Fprintf(&b, "-- want --\n%s", want)
	require.NoError(t, os.WriteFile(tr.file, b.Bytes(), 0o644))
}

// responseBody is the response body, all chunks together.
func responseBody(x *Exchange) []byte {
	var b []byte
	for _, c := range x.Chunks {
		b = append(b, c.Data...)
	}
	return b
}

// withMarkedBodies returns the transcript's exchange with mark applied
// to the request body and to every chunk file before it is decoded, so
// that text inside encoded chunks (eventstream payloads) is marked too.
func (tr *transcript) withMarkedBodies(mark func([]byte) []byte) (Exchange, error) {
	var b bytes.Buffer
	b.WriteString(tr.comment)
	for _, f := range tr.raw {
		fmt.Fprintf(&b, "-- %s --\n", f.name)
		data := f.data
		if name := strings.Fields(f.name); name[0] == "chunk" && !hasWord(name, "hex") {
			data = mark(bytes.Clone(data))
		} else if head, body, ok := bytes.Cut(data, []byte("\n\n")); ok && name[0] == "request" {
			data = append(append(bytes.Clone(head), "\n\n"...), mark(bytes.Clone(body))...)
		}
		b.Write(data)
	}
	mt, err := parseTranscript(b.Bytes())
	if err != nil {
		return Exchange{}, err
	}
	return mt.x, nil
}
