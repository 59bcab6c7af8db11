package httpframe

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// frameCase is a connection's traffic and what a Conn makes of it.
type frameCase struct {
	name  string
	cfg   Config
	evs   []event
	want  []Exchange
	stats Stats
}

// The RFC 9110 (section 6 and 3.9) example exchange.
const (
	helloReq = "GET /hello.txt HTTP/1.1\r\n" +
		"User-Agent: curl/7.64.1\r\n" +
		"Host: www.example.com\r\n" +
		"Accept-Language: en, mi\r\n" +
		"\r\n"
	helloBody = "Hello World! My content includes a trailing CRLF.\r\n"
	helloResp = "HTTP/1.1 200 OK\r\n" +
		"Date: Mon, 27 Jul 2009 12:28:53 GMT\r\n" +
		"Server: Apache\r\n" +
		"Last-Modified: Wed, 22 Jul 2009 19:15:56 GMT\r\n" +
		"ETag: \"34aa387-d-1568eb00\"\r\n" +
		"Accept-Ranges: bytes\r\n" +
		"Content-Length: 51\r\n" +
		"Vary: Accept-Encoding\r\n" +
		"Content-Type: text/plain\r\n" +
		"\r\n" + helloBody
)

var helloReqHeader = hdr("User-Agent", "curl/7.64.1", "Host", "www.example.com", "Accept-Language", "en, mi")

var helloRespHeader = hdr(
	"Date", "Mon, 27 Jul 2009 12:28:53 GMT",
	"Server", "Apache",
	"Last-Modified", "Wed, 22 Jul 2009 19:15:56 GMT",
	"ETag", `"34aa387-d-1568eb00"`,
	"Accept-Ranges", "bytes",
	"Content-Length", "51",
	"Vary", "Accept-Encoding",
	"Content-Type", "text/plain",
)

// get is a minimal GET request; ok a minimal response with body body.
func get(path string) string { return "GET " + path + " HTTP/1.1\r\nHost: h\r\n\r\n" }

func ok(body string) string {
	return "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

// getOK is the exchange of get(path) answered by ok(body), the request
// written at req and the response read at resp.
func getOK(path, body string, req, resp int64) Exchange {
	ex := Exchange{
		Role: Client, Method: "GET", Target: path, Proto: "HTTP/1.1",
		RequestHeader: hdr("Host", "h"),
		Status:        200, ResponseHeader: hdr("Content-Length", strconv.Itoa(len(body))),
		ResponseBody: []byte(body),
		RequestStart: req, RequestEnd: req, ResponseStart: resp, ResponseEnd: resp,
	}
	if body != "" {
		ex.Pieces = pieces(int(resp), body)
	}
	return ex
}

// LLM API traffic.
const (
	openaiReqBody  = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hi"}]}`
	openaiRespBody = `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-mini-2024-07-18",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"Hi!"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}`
	openaiStreamReqBody = `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Say hello"}]}`
)

func openaiReqHead(body string) string {
	return "POST /v1/chat/completions HTTP/1.1\r\n" +
		"Host: api.openai.com\r\n" +
		"Authorization: Bearer sk-test-0000\r\n" +
		"Content-Type: application/json\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n" +
		"\r\n"
}

func openaiReqHeader(body string) Headers {
	return hdr("Host", "api.openai.com", "Content-Type", "application/json", "Content-Length", strconv.Itoa(len(body)))
}

// openaiChunks are the events of a streamed chat completion.
var openaiChunks = []string{
	`data: {"id":"chatcmpl-2","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}` + "\n\n",
	`data: {"id":"chatcmpl-2","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hel"}}]}` + "\n\n",
	`data: {"id":"chatcmpl-2","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"lo"}}]}` + "\n\n",
	`data: {"id":"chatcmpl-2","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}` + "\n\n",
	"data: [DONE]\n\n",
}

const sseHead = "HTTP/1.1 200 OK\r\n" +
	"Content-Type: text/event-stream; charset=utf-8\r\n" +
	"Transfer-Encoding: chunked\r\n" +
	"Connection: keep-alive\r\n" +
	"\r\n"

var sseHeader = hdr("Content-Type", "text/event-stream; charset=utf-8", "Transfer-Encoding", "chunked", "Connection", "keep-alive")

// anthropicEvents are the events of a streamed Anthropic message.
var anthropicEvents = []string{
	"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01\",\"type\":\"message\",\"role\":\"assistant\"," +
		"\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n",
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
	"event: ping\ndata: {\"type\": \"ping\"}\n\n",
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n",
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"!\"}}\n\n",
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":6}}\n\n",
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
}

const anthropicReqBody = `{"model":"claude-sonnet-4-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"Hi"}]}`

// anthropicEvs is a streamed Anthropic message: the request in one
// write at 100, the response head with the first event read at 300, then
// one event a read, 10 apart, the last with the end of the body.
func anthropicEvs() []event {
	evs := []event{w(100, "POST /v1/messages HTTP/1.1\r\n"+
		"Host: api.anthropic.com\r\n"+
		"x-api-key: sk-ant-test\r\n"+
		"anthropic-version: 2023-06-01\r\n"+
		"content-type: application/json\r\n"+
		"content-length: "+strconv.Itoa(len(anthropicReqBody))+"\r\n"+
		"\r\n"+anthropicReqBody)}
	for i, ev := range anthropicEvents {
		data := chunk(ev)
		if i == 0 {
			data = sseHead + data
		}
		if i == len(anthropicEvents)-1 {
			data += lastChunk
		}
		evs = append(evs, r(int64(300+10*i), data))
	}
	return evs
}

func anthropicWant() Exchange {
	ex := Exchange{
		Role: Client, Method: "POST", Target: "/v1/messages", Proto: "HTTP/1.1",
		RequestHeader: hdr("Host", "api.anthropic.com", "anthropic-version", "2023-06-01",
			"content-type", "application/json", "content-length", strconv.Itoa(len(anthropicReqBody))),
		RequestBody:    []byte(anthropicReqBody),
		Status:         200,
		ResponseHeader: sseHeader,
		ResponseBody:   []byte(strings.Join(anthropicEvents, "")),
		RequestStart:   100, RequestEnd: 100,
		ResponseStart: 300, ResponseEnd: int64(300 + 10*(len(anthropicEvents)-1)),
	}
	for i, ev := range anthropicEvents {
		ex.Pieces = append(ex.Pieces, Piece{At: int64(300 + 10*i), Data: []byte(ev)})
	}
	return ex
}

// credentials are the header fields the tests drop.
var credentials = []string{"authorization", "X-API-KEY"}

// gapBody is a request body cut by a gap in the tests.
const gapBody = `{"input":"abcdefghij"}`

var frameCases = []frameCase{
	{
		name:  "RFC 9110 example: GET with Content-Length",
		evs:   []event{w(100, helloReq), r(200, helloResp)},
		stats: Stats{Exchanges: 1},
		want: []Exchange{{
			Role: Client, Method: "GET", Target: "/hello.txt", Proto: "HTTP/1.1",
			RequestHeader: helloReqHeader,
			Status:        200, ResponseHeader: helloRespHeader,
			ResponseBody: []byte(helloBody), Pieces: pieces(200, helloBody),
			RequestStart: 100, RequestEnd: 100, ResponseStart: 200, ResponseEnd: 200,
		}},
	},
	{
		name: "RFC 9112 chunked body with extensions and a trailer, over three reads",
		evs: []event{
			w(100, "GET /mdn HTTP/1.1\r\nHost: developer.example\r\n\r\n"),
			r(200, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\nTrailer: Expires\r\n\r\n"+
				"7;lang=en\r\nMozil"),
			r(300, "la\r\n11 ; note=\"space before\"\r\nDeveloper Network\r\n"),
			r(400, "0\r\nExpires: Wed, 21 Oct 2015 07:28:00 GMT\r\n\r\n"),
		},
		stats: Stats{Exchanges: 1},
		want: []Exchange{{
			Role: Client, Method: "GET", Target: "/mdn", Proto: "HTTP/1.1",
			RequestHeader: hdr("Host", "developer.example"),
			Status:        200,
			ResponseHeader: hdr("Content-Type", "text/plain", "Transfer-Encoding", "chunked",
				"Trailer", "Expires"),
			ResponseBody: []byte("MozillaDeveloper Network"),
			Pieces:       pieces(200, "Mozil", 300, "laDeveloper Network"),
			RequestStart: 100, RequestEnd: 100, ResponseStart: 200, ResponseEnd: 400,
		}},
	},
	{
		name: "OpenAI chat completion with Content-Length, credentials dropped",
		cfg:  Config{DropHeaders: credentials},
		evs: []event{
			w(100, openaiReqHead(openaiReqBody)),
			w(110, openaiReqBody),
			r(500, "HTTP/1.1 200 OK\r\n"+
				"Content-Type: application/json\r\n"+
				"Content-Length: "+strconv.Itoa(len(openaiRespBody))+"\r\n"+
				"openai-processing-ms: 412\r\n"+
				"x-request-id: req_abc\r\n"+
				"\r\n"+openaiRespBody[:40]),
			r(520, openaiRespBody[40:]),
		},
		stats: Stats{Exchanges: 1},
		want: []Exchange{{
			Role: Client, Method: "POST", Target: "/v1/chat/completions", Proto: "HTTP/1.1",
			RequestHeader: openaiReqHeader(openaiReqBody),
			RequestBody:   []byte(openaiReqBody),
			Status:        200,
			ResponseHeader: hdr("Content-Type", "application/json",
				"Content-Length", strconv.Itoa(len(openaiRespBody)),
				"openai-processing-ms", "412", "x-request-id", "req_abc"),
			ResponseBody: []byte(openaiRespBody),
			Pieces:       pieces(500, openaiRespBody[:40], 520, openaiRespBody[40:]),
			RequestStart: 100, RequestEnd: 110, ResponseStart: 500, ResponseEnd: 520,
		}},
	},
	{
		name: "OpenAI streamed chat completion: chunked SSE over many reads",
		cfg:  Config{DropHeaders: credentials},
		evs: []event{
			w(100, openaiReqHead(openaiStreamReqBody)+openaiStreamReqBody),
			r(300, sseHead),
			r(350, chunk(openaiChunks[0])),
			r(400, chunk(openaiChunks[1])+chunk(openaiChunks[2])),
			// A chunk cut by the end of a read.
			r(450, strconv.FormatInt(int64(len(openaiChunks[3])), 16)+"\r\n"+openaiChunks[3][:20]),
			r(460, openaiChunks[3][20:]+"\r\n"+chunk(openaiChunks[4])+lastChunk),
		},
		stats: Stats{Exchanges: 1},
		want: []Exchange{{
			Role: Client, Method: "POST", Target: "/v1/chat/completions", Proto: "HTTP/1.1",
			RequestHeader: openaiReqHeader(openaiStreamReqBody),
			RequestBody:   []byte(openaiStreamReqBody),
			Status:        200, ResponseHeader: sseHeader,
			ResponseBody: []byte(strings.Join(openaiChunks, "")),
			Pieces: pieces(
				350, openaiChunks[0],
				400, openaiChunks[1]+openaiChunks[2],
				450, openaiChunks[3][:20],
				460, openaiChunks[3][20:]+openaiChunks[4]),
			RequestStart: 100, RequestEnd: 100, ResponseStart: 300, ResponseEnd: 460,
		}},
	},
	{
		name:  "Anthropic streamed message, one event a read",
		cfg:   Config{DropHeaders: credentials},
		evs:   anthropicEvs(),
		stats: Stats{Exchanges: 1},
		want:  []Exchange{anthropicWant()},
	},
	{
		name: "server: an OpenAI-compatible server reads the request and writes the response",
		evs: []event{
			r(100, "POST /v1/completions HTTP/1.1\r\nHost: localhost:8000\r\nContent-Length: 2\r\n\r\n{}"),
			w(200, "HTTP/1.1 200 OK\r\nserver: uvicorn\r\ncontent-length: 4\r\n\r\n{\"\"}"),
		},
		stats: Stats{Exchanges: 1},
		want: []Exchange{{
			Role: Server, Method: "POST", Target: "/v1/completions", Proto: "HTTP/1.1",
			RequestHeader: hdr("Host", "localhost:8000", "Content-Length", "2"),
			RequestBody:   []byte("{}"),
			Status:        200, ResponseHeader: hdr("server", "uvicorn", "content-length", "4"),
			ResponseBody: []byte(`{""}`), Pieces: pieces(200, `{""}`),
			RequestStart: 100, RequestEnd: 100, ResponseStart: 200, ResponseEnd: 200,
		}},
	},
	{
		name: "keep-alive: three exchanges in sequence",
		evs: []event{
			w(100, get("/v1/models")), r(200, ok(`{"data":[]}`)),
			w(300, get("/v1/models/gpt-4o")), r(400, ok(`{"id":"gpt-4o"}`)),
			w(500, get("/health")), r(600, ok("")),
		},
		stats: Stats{Exchanges: 3},
		want: []Exchange{
			getOK("/v1/models", `{"data":[]}`, 100, 200),
			getOK("/v1/models/gpt-4o", `{"id":"gpt-4o"}`, 300, 400),
			getOK("/health", "", 500, 600),
		},
	},
	{
		name: "pipelined requests paired in order, HEAD among them",
		evs: []event{
			w(100, get("/a")+"HEAD /b HTTP/1.1\r\nHost: h\r\n\r\n"+get("/c")),
			r(200, ok("aaa")+"HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n"+ok("c")),
		},
		stats: Stats{Exchanges: 3},
		want: []Exchange{
			getOK("/a", "aaa", 100, 200),
			{
				Role: Client, Method: "HEAD", Target: "/b", Proto: "HTTP/1.1",
				RequestHeader: hdr("Host", "h"),
				Status:        200, ResponseHeader: hdr("Content-Length", "1234"),
				RequestStart: 100, RequestEnd: 100, ResponseStart: 200, ResponseEnd: 200,
			},
			getOK("/c", "c", 100, 200),
		},
	},
	{
		name: "100 Continue is skipped",
		evs: []event{
			w(100, "PUT /v1/files/f HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"),
			r(200, "HTTP/1.1 100 Continue\r\n\r\n"),
			w(300, "12345"),
			r(400, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"),
		},
		stats: Stats{Exchanges: 1},
		want: []Exchange{{
			Role: Client, Method: "PUT", Target: "/v1/files/f", Proto: "HTTP/1.1",
			RequestHeader: hdr("Host", "h", "Expect", "100-continue", "Content-Length", "5"),
			RequestBody:   []byte("12345"),
			Status:        201, ResponseHeader: hdr("Content-Length", "0"),
			RequestStart: 100, RequestEnd: 300, ResponseStart: 400, ResponseEnd: 400,
		}},
	},
	{
		name: "HEAD, 204 and 304 have no body, whatever their Content-Length",
		evs: []event{
			w(100, "HEAD /v1/files/f HTTP/1.1\r\nHost: h\r\n\r\n"),
			r(200, "HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n"),
			w(300, "DELETE /v1/files/f HTTP/1.1\r\nHost: h\r\n\r\n"),
			r(400, "HTTP/1.1 204 No Content\r\n\r\n"),
			w(500, "GET /v1/files/g HTTP/1.1\r\nHost: h\r\nIf-None-Match: \"v1\"\r\n\r\n"),
			r(600, "HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nContent-Length: 120\r\n\r\n"),
			w(700, get("/after")), r(800, ok("next")),
		},
		stats: Stats{Exchanges: 4},
		want: []Exchange{
			{
				Role: Client, Method: "HEAD", Target: "/v1/files/f", Proto: "HTTP/1.1",
				RequestHeader: hdr("Host", "h"),
				Status:        200, ResponseHeader: hdr("Content-Length", "5000"),
				RequestStart: 100, RequestEnd: 100, ResponseStart: 200, ResponseEnd: 200,
			},
			{
				Role: Client, Method: "DELETE", Target: "/v1/files/f", Proto: "HTTP/1.1",
				RequestHeader: hdr("Host", "h"), Status: 204,
				RequestStart: 300, RequestEnd: 300, ResponseStart: 400, ResponseEnd: 400,
			},
			{
				Role: Client, Method: "GET", Target: "/v1/files/g", Proto: "HTTP/1.1",
				RequestHeader: hdr("Host", "h", "If-None-Match", `"v1"`),
				Status:        304, ResponseHeader: hdr("ETag", `"v1"`, "Content-Length", "120"),
				RequestStart: 500, RequestEnd: 500, ResponseStart: 600, ResponseEnd: 600,
			},
			getOK("/after", "next", 700, 800),
		},
	},
	{
		name: "a response delimited by the close: HTTP/1.0 event stream",
		evs: []event{
			w(100, "GET /events HTTP/1.0\r\nAccept: text/event-stream\r\n\r\n"),
			r(200, "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: a\n\n"),
			r(300, "data: b\n\n"),
			hangUp(),
		},
		stats: Stats{Exchanges: 1},
		want: []Exchange{{
			Role: Client, Method: "GET", Target: "/events", Proto: "HTTP/1.0",
			RequestHeader: hdr("Accept", "text/event-stream"),
			Status:        200, ResponseHeader: hdr("Content-Type", "text/event-stream"),
			ResponseBody: []byte("data: a\n\ndata: b\n\n"),
			Pieces:       pieces(200, "data: a\n\n", 300, "data: b\n\n"),
			RequestStart: 100, RequestEnd: 100, ResponseStart: 200, ResponseEnd: 300,
		}},
	},
	{
		name: "a response Transfer-Encoding not ending in chunked is delimited by the close",
		evs: []event{
			w(100, get("/z")),
			r(200, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n\x1f\x8b\x08\x00"),
			hangUp(),
		},
		stats: Stats{Exchanges: 1},
		want: []Exchange{{
			Role: Client, Method: "GET", Target: "/z", Proto: "HTTP/1.1",
			RequestHeader: hdr("Host", "h"),
			Status:        200, ResponseHeader: hdr("Transfer-Encoding", "gzip"),
			ResponseBody: []byte("\x1f\x8b\x08\x00"), Pieces: pieces(200, "\x1f\x8b\x08\x00"),
			RequestStart: 100, RequestEnd: 100, ResponseStart: 200, ResponseEnd: 200,
		}},
	},
	{
		name: "Transfer-Encoding chunked overrides Content-Length",
		evs: []event{
			w(100, get("/te")),
			r(200, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nTransfer-Encoding: chunked\r\n\r\n"+chunk("hi")+lastChunk),
			w(300, get("/next")), r(400, ok("x")),
		},
		stats: Stats{Exchanges: 2},
		want: []Exchange{
			{
				Role: Client, Method: "GET", Target: "/te", Proto: "HTTP/1.1",
				RequestHeader: hdr("Host", "h"),
				Status:        200, ResponseHeader: hdr("Content-Length", "1000", "Transfer-Encoding", "chunked"),
				ResponseBody: []byte("hi"), Pieces: pieces(200, "hi"),
				RequestStart: 100, RequestEnd: 100, ResponseStart: 200, ResponseEnd: 200,
			},
			getOK("/next", "x", 300, 400),
		},
	},
	{
		name: "a chunked request body with a trailer; repeated equal Content-Length is one length",
		evs: []event{
			w(100, "POST /v1/uploads HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"+
				chunk("abc")+chunk("de")+"0\r\nX-Checksum: 1\r\n\r\n"),
			r(200, "HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\nContent-Length: 2\r\n\r\nok"),
		},
		stats: Stats{Exchanges: 1},
		want: []Exchange{{
			Role: Client, Method: "POST", Target: "/v1/uploads", Proto: "HTTP/1.1",
			RequestHeader: hdr("Host", "h", "Transfer-Encoding", "chunked"),
			RequestBody:   []byte("abcde"),
			Status:        200, ResponseHeader: hdr("Content-Length", "2, 2", "Content-Length", "2"),
			ResponseBody: []byte("ok"), Pieces: pieces(200, "ok"),
			RequestStart: 100, RequestEnd: 100, ResponseStart: 200, ResponseEnd: 200,
		}},
	},
	{
		name: "empty lines before a request and bare LF line endings",
		evs: []event{
			w(100, "\r\n\nGET /lf HTTP/1.1\nHost: h\n\n"),
			r(200, "HTTP/1.1 200 OK\nContent-Length: 2\n\nok"),
		},
		stats: Stats{Exchanges: 1},
		want: []Exchange{{
			Role: Client, Method: "GET", Target: "/lf", Proto: "HTTP/1.1",
			RequestHeader: hdr("Host", "h"),
			Status:        200, ResponseHeader: hdr("Content-Length", "2"),
			ResponseBody: []byte("ok"), Pieces: pieces(200, "ok"),
			RequestStart: 100, RequestEnd: 100, ResponseStart: 200, ResponseEnd: 200,
		}},
	},
	{
		name: "a gap in a response body, then a clean exchange",
		evs: []event{
			w(100, get("/1")),
			r(200, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"+strings.Repeat("a", 40)),
			gap(Read),
			r(300, strings.Repeat("a", 30)), // the end of the body; 30 bytes were lost
			w(400, get("/2")),
			r(500, ok("second")),
		},
		stats: Stats{Exchanges: 1, AbandonedGap: 1, SkippedBytes: 30},
		want:  []Exchange{getOK("/2", "second", 400, 500)},
	},
	{
		name: "a gap in a request body: its response is dropped, the next pairs right",
		evs: []event{
			w(100, "POST /v1/embeddings HTTP/1.1\r\nHost: h\r\nContent-Length: "+strconv.Itoa(len(gapBody))+"\r\n\r\n"+gapBody[:5]),
			gap(Write),
			w(200, gapBody[len(gapBody)-5:]),
			r(300, ok("lost")),
			w(400, get("/2")),
			r(500, ok("second")),
		},
		stats: Stats{Exchanges: 1, AbandonedGap: 1, SkippedBytes: 5},
		want:  []Exchange{getOK("/2", "second", 400, 500)},
	},
	{
		name: "a gap that takes a whole request: its response is unpaired",
		evs: []event{
			w(100, get("/1")), r(200, ok("first")),
			gap(Write), // the write of GET /2 was lost
			r(300, ok("second")),
			w(400, get("/3")), r(500, ok("third")),
		},
		stats: Stats{Exchanges: 2, Unpaired: 1},
		want:  []Exchange{getOK("/1", "first", 100, 200), getOK("/3", "third", 400, 500)},
	},
	{
		name: "a response that began before the oldest request awaiting one answers a lost request",
		evs: []event{
			w(100, get("/1")), r(200, ok("first")),
			gap(Write), // the write of GET /2 was lost
			r(300, "HTTP/1.1 200 OK\r\nContent-"),
			w(400, get("/3")), // pipelined while the response to /2 comes in
			r(410, "Length: 6\r\n\r\nsecond"),
			r(500, ok("third")),
		},
		stats: Stats{Exchanges: 2, Unpaired: 1},
		want:  []Exchange{getOK("/1", "first", 100, 200), getOK("/3", "third", 400, 500)},
	},
	{
		name: "a loss in a direction not known, in a response body: Gap both",
		evs: []event{
			w(100, get("/1")),
			r(200, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"+strings.Repeat("a", 40)),
			gap(Write), gap(Read),
			r(300, strings.Repeat("a", 30)),
			w(400, get("/2")),
			r(500, ok("second")),
		},
		stats: Stats{Exchanges: 1, AbandonedGap: 1, SkippedBytes: 30},
		want:  []Exchange{getOK("/2", "second", 400, 500)},
	},
	{
		name: "a loss in a direction not known, between exchanges: Gap both abandons nothing",
		evs: []event{
			w(100, get("/1")), r(200, ok("first")),
			gap(Write), gap(Read),
			w(300, get("/2")), r(400, ok("second")),
		},
		stats: Stats{Exchanges: 2},
		want:  []Exchange{getOK("/1", "first", 100, 200), getOK("/2", "second", 300, 400)},
	},
	{
		name: "server: a gap in a request head, its response dropped",
		evs: []event{
			r(100, "POST /v1/completions HTTP/1.1\r\nHost: h\r\n"),
			gap(Read),
			w(200, ok("lost")),
			r(300, get("/2")),
			w(400, ok("second")),
		},
		stats: Stats{Exchanges: 1, AbandonedGap: 1},
		want: []Exchange{{
			Role: Server, Method: "GET", Target: "/2", Proto: "HTTP/1.1",
			RequestHeader: hdr("Host", "h"),
			Status:        200, ResponseHeader: hdr("Content-Length", "6"),
			ResponseBody: []byte("second"), Pieces: pieces(400, "second"),
			RequestStart: 300, RequestEnd: 300, ResponseStart: 400, ResponseEnd: 400,
		}},
	},
	{
		name: "capture began mid-connection: a response before any request",
		evs: []event{
			r(100, ok("orphan")),
			w(200, get("/2")), r(300, ok("second")),
		},
		stats: Stats{Exchanges: 1, Unpaired: 1},
		want:  []Exchange{getOK("/2", "second", 200, 300)},
	},
	{
		name: "TLS ciphertext is not HTTP: the connection is ignored",
		evs: []event{
			w(100, "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03"),
			r(200, "\x16\x03\x03\x00\x7a\x02"),
			w(300, "\x17\x03\x03\x00\x20"),
		},
		stats: Stats{NonHTTP: 1, IgnoredBytes: 11 + 6 + 5},
	},
	{
		name:  "another text protocol (Redis) is not HTTP",
		evs:   []event{w(100, "*1\r\n$4\r\nPING\r\n"), r(200, "+PONG\r\n")},
		stats: Stats{NonHTTP: 1, IgnoredBytes: 14 + 7},
	},
	{
		name: "the HTTP/2 connection preface",
		evs: []event{
			w(100, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00"),
			r(200, "\x00\x00\x00\x04\x01\x00\x00\x00\x00"),
		},
		stats: Stats{HTTP2: 1},
	},
	{
		name:  "an HTTP/2 server's SETTINGS frame before the preface",
		evs:   []event{w(100, "\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x64")},
		stats: Stats{HTTP2: 1},
	},
	{
		name: "101 Switching Protocols to WebSocket: delivered, then ignored",
		evs: []event{
			w(100, "GET /v1/realtime HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"),
			r(200, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\x81\x05hello"),
			w(300, "\x81\x85abcd\x00\x00\x00\x00\x00"),
		},
		stats: Stats{Exchanges: 1, Switched: 1, IgnoredBytes: 7 + 11},
		want: []Exchange{{
			Role: Client, Method: "GET", Target: "/v1/realtime", Proto: "HTTP/1.1",
			RequestHeader: hdr("Host", "h", "Upgrade", "websocket", "Connection", "Upgrade"),
			Status:        101, ResponseHeader: hdr("Upgrade", "websocket", "Connection", "Upgrade"),
			RequestStart: 100, RequestEnd: 100, ResponseStart: 200, ResponseEnd: 200,
		}},
	},
	{
		name: "a CONNECT tunnel: delivered, then the TLS inside ignored",
		evs: []event{
			w(100, "CONNECT api.openai.com:443 HTTP/1.1\r\nHost: api.openai.com:443\r\n\r\n"),
			r(200, "HTTP/1.1 200 Connection established\r\n\r\n"),
			w(300, "\x16\x03\x01\x00\xa5\x01"),
		},
		stats: Stats{Exchanges: 1, Switched: 1, IgnoredBytes: 6},
		want: []Exchange{{
			Role: Client, Method: "CONNECT", Target: "api.openai.com:443", Proto: "HTTP/1.1",
			RequestHeader: hdr("Host", "api.openai.com:443"), Status: 200,
			RequestStart: 100, RequestEnd: 100, ResponseStart: 200, ResponseEnd: 200,
		}},
	},
	{
		name: "the close in the middle of a response abandons it",
		evs: []event{
			w(100, get("/1")),
			r(200, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n12345"),
			hangUp(),
			r(300, "67890"),
		},
		stats: Stats{AbandonedClose: 1, IgnoredBytes: 5},
	},
	{
		name: "the close with pipelined requests unanswered",
		evs: []event{
			w(100, get("/1")+get("/2")+"GET /3 HTTP/1.1\r\n"),
			r(200, ok("one")),
			hangUp(),
		},
		stats: Stats{Exchanges: 1, AbandonedClose: 2},
		want:  []Exchange{getOK("/1", "one", 100, 200)},
	},
	{
		name: "more requests awaiting responses than MaxPending",
		cfg:  Config{MaxPending: 2},
		evs: []event{
			w(100, get("/a")+get("/b")+get("/c")),
			r(200, ok("a")+ok("b")+ok("c")),
		},
		stats: Stats{Exchanges: 1, AbandonedOverflow: 2},
		want:  []Exchange{getOK("/c", "c", 100, 200)},
	},
	{
		name: "more reads than MaxPieces: the last piece takes the rest",
		cfg:  Config{MaxPieces: 2},
		evs: []event{
			w(100, get("/p")),
			r(200, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\naa"),
			r(300, "bb"),
			r(400, "cc"),
		},
		stats: Stats{Exchanges: 1},
		want: []Exchange{{
			Role: Client, Method: "GET", Target: "/p", Proto: "HTTP/1.1",
			RequestHeader: hdr("Host", "h"),
			Status:        200, ResponseHeader: hdr("Content-Length", "6"),
			ResponseBody: []byte("aabbcc"), Pieces: pieces(200, "aa", 300, "bbcc"),
			RequestStart: 100, RequestEnd: 100, ResponseStart: 200, ResponseEnd: 400,
		}},
	},
}

// malformedCases are hostile or broken messages, each followed by a clean
// exchange that must come through.
var malformedCases = []frameCase{
	{
		name: "a Content-Length too large for any body",
		evs: []event{
			w(100, get("/1")),
			r(200, "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\nabc"),
			w(300, get("/2")), r(400, ok("second")),
		},
		stats: Stats{Exchanges: 1, BadContentLength: 1, AbandonedMalformed: 1,
			SkippedBytes: int64(len("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\nabc"))},
		want: []Exchange{getOK("/2", "second", 300, 400)},
	},
	{
		name: "conflicting Content-Length fields",
		evs: []event{
			w(100, get("/1")),
			r(200, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"),
			w(300, get("/2")), r(400, ok("second")),
		},
		stats: Stats{Exchanges: 1, BadContentLength: 1, AbandonedMalformed: 1,
			SkippedBytes: int64(len("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"))},
		want: []Exchange{getOK("/2", "second", 300, 400)},
	},
	{
		name: "a negative Content-Length in a request: its 400 is dropped",
		evs: []event{
			w(100, "POST /1 HTTP/1.1\r\nContent-Length: -1\r\n\r\n"),
			r(200, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"),
			w(300, get("/2")), r(400, ok("second")),
		},
		stats: Stats{Exchanges: 1, BadContentLength: 1, AbandonedMalformed: 1,
			SkippedBytes: int64(len("POST /1 HTTP/1.1\r\nContent-Length: -1\r\n\r\n"))},
		want: []Exchange{getOK("/2", "second", 300, 400)},
	},
	{
		name: "a request whose last transfer coding is not chunked",
		evs: []event{
			w(100, "POST /1 HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n"),
			r(200, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"),
			w(300, get("/2")), r(400, ok("second")),
		},
		stats: Stats{Exchanges: 1, BadTransferEncoding: 1, AbandonedMalformed: 1,
			SkippedBytes: int64(len("POST /1 HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n"))},
		want: []Exchange{getOK("/2", "second", 300, 400)},
	},
	{
		name: "endless header lines over MaxHeader",
		cfg:  Config{MaxHeader: 64},
		evs: []event{
			w(100, "GET /1 HTTP/1.1\r\n"+strings.Repeat("X-Pad: 1234567\r\n", 10)+"\r\n"),
			r(200, "HTTP/1.1 431 Too Large\r\nContent-Length: 0\r\n\r\n"),
			w(300, get("/2")), r(400, ok("second")),
		},
		stats: Stats{Exchanges: 1, HeaderTooLarge: 1, AbandonedMalformed: 1,
			SkippedBytes: int64(len("GET /1 HTTP/1.1\r\n" + strings.Repeat("X-Pad: 1234567\r\n", 10) + "\r\n"))},
		want: []Exchange{getOK("/2", "second", 300, 400)},
	},
	{
		name: "more fields than MaxFields",
		evs: []event{
			w(100, get("/1")),
			r(200, "HTTP/1.1 200 OK\r\n"+strings.Repeat("A: 1\r\n", MaxFields+1)+"\r\n"),
			w(300, get("/2")), r(400, ok("second")),
		},
		stats: Stats{Exchanges: 1, HeaderTooLarge: 1, AbandonedMalformed: 1,
			SkippedBytes: int64(len("HTTP/1.1 200 OK\r\n" + strings.Repeat("A: 1\r\n", MaxFields+1) + "\r\n"))},
		want: []Exchange{getOK("/2", "second", 300, 400)},
	},
	{
		name: "a chunk size too large for any chunk",
		evs: []event{
			w(100, get("/1")),
			r(200, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n"),
			w(300, get("/2")), r(400, ok("second")),
		},
		stats: Stats{Exchanges: 1, BadChunk: 1, AbandonedMalformed: 1,
			SkippedBytes: int64(len("ffffffffffffffffff\r\n") - maxChunkDigits)},
		want: []Exchange{getOK("/2", "second", 300, 400)},
	},
	{
		name: "chunk data not followed by CRLF",
		evs: []event{
			w(100, get("/1")),
			r(200, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n"),
			w(300, get("/2")), r(400, ok("second")),
		},
		stats: Stats{Exchanges: 1, BadChunk: 1, AbandonedMalformed: 1, SkippedBytes: 3},
		want:  []Exchange{getOK("/2", "second", 300, 400)},
	},
	{
		name: "a folded header line (obs-fold)",
		evs: []event{
			w(100, "GET /1 HTTP/1.1\r\nX-Folded: a\r\n b\r\n\r\n"),
			r(200, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"),
			w(300, get("/2")), r(400, ok("second")),
		},
		stats: Stats{Exchanges: 1, BadHeader: 1, AbandonedMalformed: 1,
			SkippedBytes: int64(len("GET /1 HTTP/1.1\r\nX-Folded: a\r\n b\r\n\r\n"))},
		want: []Exchange{getOK("/2", "second", 300, 400)},
	},
	{
		name: "whitespace between a field name and its colon",
		evs: []event{
			w(100, get("/1")),
			r(200, "HTTP/1.1 200 OK\r\nContent-Length : 3\r\n\r\nabc"),
			w(300, get("/2")), r(400, ok("second")),
		},
		stats: Stats{Exchanges: 1, BadHeader: 1, AbandonedMalformed: 1,
			SkippedBytes: int64(len("HTTP/1.1 200 OK\r\nContent-Length : 3\r\n\r\nabc"))},
		want: []Exchange{getOK("/2", "second", 300, 400)},
	},
	{
		name: "a broken status code where a response is due",
		evs: []event{
			w(100, get("/1")),
			r(200, "HTTP/1.1 2OO OK\r\n\r\n"),
			w(300, get("/2")), r(400, ok("second")),
		},
		stats: Stats{Exchanges: 1, BadStartLine: 1, AbandonedMalformed: 1,
			SkippedBytes: int64(len("HTTP/1.1 2OO OK\r\n\r\n"))},
		want: []Exchange{getOK("/2", "second", 300, 400)},
	},
}

func TestConn(t *testing.T) {
	for _, tc := range append(frameCases, malformedCases...) {
		t.Run(tc.name, func(t *testing.T) {
			res := play(tc.cfg, tc.evs, whole)
			assert.Empty(t, checkExchanges(res.exchanges, tc.want))
			assert.Equal(t, tc.stats, res.stats, "stats")
		})
	}
}

func TestHeadersGet(t *testing.T) {
	h := hdr("Content-Type", "text/plain", "x-request-id", "req_1", "X-Request-Id", "req_2")
	for _, tc := range []struct{ name, want string }{
		{"content-type", "text/plain"},
		{"CONTENT-TYPE", "text/plain"},
		{"X-Request-ID", "req_1"}, // the first of two
		{"Authorization", ""},
	} {
		assert.Equal(t, tc.want, h.Get(tc.name), "Get(%q)", tc.name)
	}
}

func TestSharedStats(t *testing.T) {
	var stats Stats
	for range 2 {
		c := New(Config{Stats: &stats})
		c.Feed(Write, []byte(get("/")), 1)
		c.Feed(Read, []byte(ok("x")), 2)
		c.Close()
		assert.Equal(t, stats, c.Stats(), "Conn.Stats(), want the shared Stats")
	}
	assert.Equal(t, int64(2), stats.Exchanges, "shared Stats counted exchanges")
}

func TestFeedAfterClose(t *testing.T) {
	var n int
	c := New(Config{OnExchange: func(*Exchange) { n++ }})
	c.Close()
	c.Feed(Write, []byte(get("/")), 1)
	c.Feed(Read, []byte(ok("x")), 2)
	c.Gap(Read)
	c.Close()
	assert.Zero(t, n, "exchanges after Close")
	assert.Equal(t, Stats{IgnoredBytes: int64(len(get("/")) + len(ok("x")))}, c.Stats(), "stats")
	assert.Zero(t, c.Retained(), "a closed Conn retains bytes")
}

// TestConnSharedBodies: every framing case, its Conns sharing one Bodies,
// gives the same exchanges, copied in OnExchange as the contract asks.
func TestConnSharedBodies(t *testing.T) {
	var bodies Bodies
	for _, tc := range append(frameCases, malformedCases...) {
		t.Run(tc.name, func(t *testing.T) {
			var got []*Exchange
			cfg := tc.cfg
			cfg.Bodies = &bodies
			cfg.OnExchange = func(e *Exchange) { got = append(got, deepCopy(e)) }
			c := New(cfg)
			apply(c, tc.evs, whole)
			assert.Empty(t, checkExchanges(got, tc.want))
		})
	}
}

// deepCopy copies an exchange's bodies and pieces out of the Conn's
// buffers.
func deepCopy(e *Exchange) *Exchange {
	x := *e
	x.RequestBody = bytes.Clone(e.RequestBody)
	x.ResponseBody = bytes.Clone(e.ResponseBody)
	x.Pieces = nil
	for _, p := range e.Pieces {
		x.Pieces = append(x.Pieces, Piece{At: p.At, Data: bytes.Clone(p.Data)})
	}
	return &x
}

// TestBodiesReused: a keep-alive connection's second exchange reads into
// the buffers of its first, and a Bodies keeps at most MaxBodies.
func TestBodiesReused(t *testing.T) {
	var (
		bodies Bodies
		seen   []*byte
	)
	c := New(Config{Bodies: &bodies, OnExchange: func(e *Exchange) {
		seen = append(seen, unsafe.SliceData(e.ResponseBody))
	}})
	for i := range 3 {
		c.Feed(Write, []byte(get("/")), int64(4*i))
		c.Feed(Read, []byte(ok(strings.Repeat("x", 600))), int64(4*i+1))
	}
	if assert.Len(t, seen, 3, "response bodies at %v: want one buffer reused", seen) {
		assert.NotNil(t, seen[0], "response bodies at %v: want one buffer reused", seen)
		assert.Same(t, seen[0], seen[1], "response bodies at %v: want one buffer reused", seen)
		assert.Same(t, seen[0], seen[2], "response bodies at %v: want one buffer reused", seen)
	}
	for range 2 * MaxBodies {
		bodies.put(make([]byte, 1))
	}
	assert.Len(t, bodies.free, MaxBodies, "Bodies keeps %d buffers, want at most %d", len(bodies.free), MaxBodies)
}

// TestWaiting: a request counts as waiting from its last byte until the
// first byte of its response body, in either role, pipelined or not.
func TestWaiting(t *testing.T) {
	const (
		post       = "POST /v1/chat/completions HTTP/1.1\r\nHost: h\r\nContent-Length: 13\r\n\r\n"
		postBody   = `{"stream":1}` + "\n"
		streamHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
		chunk      = "6\r\ndata: \r\n"
	)
	for _, tc := range []struct {
		name string
		evs  []event
		want []string // the waiting requests' bodies
	}{
		{"nothing sent", nil, nil},
		{"request head only", []event{w(1, post)}, nil},
		{"request sent", []event{w(1, post+postBody)}, []string{postBody}},
		{"response head only", []event{w(1, post+postBody), r(2, streamHead)}, []string{postBody}},
		{"first body byte", []event{w(1, post+postBody), r(2, streamHead), r(3, chunk)}, nil},
		{"complete", []event{w(1, post+postBody), r(2, ok("x"))}, nil},
		{"pipelined, the first answered", []event{w(1, post+postBody+get("/b")), r(2, streamHead+chunk)}, []string{""}},
		{"pipelined, none answered", []event{w(1, post+postBody+get("/b"))}, []string{postBody, ""}},
		{"server side: read, not yet answered", []event{r(1, post+postBody)}, []string{postBody}},
		{"server side: head written", []event{r(1, post+postBody), w(2, streamHead)}, []string{postBody}},
		{"server side: streaming", []event{r(1, post+postBody), w(2, streamHead+chunk)}, nil},
		{"not HTTP", []event{w(1, "\x16\x03\x01 tls hello"), r(2, "x")}, nil},
		{"closed", []event{w(1, post+postBody), hangUp()}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Config{})
			for _, ev := range tc.evs {
				switch ev.op {
				case opFeed:
					c.Feed(ev.dir, []byte(ev.data), ev.at)
				case opClose:
					c.Close()
				}
			}
			var got []string
			c.Waiting(func(x *Exchange) { got = append(got, string(x.RequestBody)) })
			assert.Equal(t, tc.want, got, "waiting request bodies")
		})
	}
}

// OnResponse: a response's body goes to the func it returns as it is
// read, all of it, past MaxBody too, one piece per Feed with its time,
// chunked framing removed; an abandoned exchange's stops; a response
// with no body gives the func nothing; the exchange OnExchange gets is
// the one OnResponse got.
func TestOnResponse(t *testing.T) {
	type got struct {
		ex     *Exchange
		pieces []Piece
	}
	run := func(evs ...event) (streams []*got, delivered []*Exchange) {
		c := New(Config{MaxBody: 8,
			OnExchange: func(e *Exchange) { delivered = append(delivered, e) },
			OnResponse: func(e *Exchange) func(Piece) {
				g := &got{ex: e}
				streams = append(streams, g)
				return func(p Piece) { g.pieces = append(g.pieces, Piece{At: p.At, Data: []byte(string(p.Data))}) }
			}})
		apply(c, evs, whole)
		return streams, delivered
	}
	req := "POST /v1/chat/completions HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}"

	streams, delivered := run(w(1, req),
		r(2, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\ndata: "),
		r(3, "a\r\n\r\n10\r\n0123456789abcdef\r\n"),
		r(4, "0\r\n\r\n"))
	require.Len(t, streams, 1)
	require.Equal(t, []Piece{{At: 2, Data: []byte("data: ")}, {At: 3, Data: []byte("a\r\n")}, {At: 3, Data: []byte("0123456789abcdef")}},
		streams[0].pieces)
	require.Len(t, delivered, 1)
	require.Same(t, streams[0].ex, delivered[0])
	require.Equal(t, 200, streams[0].ex.Status)
	require.True(t, delivered[0].ResponseTruncated, "only MaxBody is kept")
	require.Len(t, delivered[0].ResponseBody, 8)

	streams, delivered = run(w(1, req), r(2, "HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n0123456789"), gap(Read), r(3, "abcdefghij"))
	require.Len(t, streams, 1)
	require.Equal(t, []Piece{{At: 2, Data: []byte("0123456789")}}, streams[0].pieces, "nothing after the gap")
	require.Empty(t, delivered)

	streams, delivered = run(w(1, req), r(2, "HTTP/1.1 204 No Content\r\n\r\n"))
	require.Len(t, streams, 1)
	require.Empty(t, streams[0].pieces)
	require.Len(t, delivered, 1)
}
