package httpframe_test

import (
	"fmt"

	"github.com/xpuscope/xpuscope/genai/internal/httpframe"
)

// A capture feeds each connection's reads and writes, in order, with
// their timestamps; the exchanges come out whole, credentials dropped.
func Example() {
	c := httpframe.New(httpframe.Config{
		DropHeaders: []string{"Authorization", "X-Api-Key", "Api-Key", "Cookie"},
		OnExchange: func(ex *httpframe.Exchange) {
			fmt.Println(ex.Role, ex.Method, ex.Target, ex.Status)
			fmt.Printf("authorization %q, content-type %q\n",
				ex.RequestHeader.Get("authorization"), ex.ResponseHeader.Get("content-type"))
			fmt.Printf("body %q\n", ex.ResponseBody)
			for _, p := range ex.Pieces {
				fmt.Printf("  +%dms %q\n", (p.At-ex.RequestEnd)/1e6, p.Data)
			}
		},
	})
	const ms = int64(1e6)
	c.Feed(httpframe.Write, []byte("POST /v1/chat/completions HTTP/1.1\r\n"+
		"Host: api.openai.com\r\n"+
		"Authorization: Bearer sk-secret\r\n"+
		"Content-Length: 15\r\n"+
		"\r\n"+
		`{"stream":true}`), 0)
	c.Feed(httpframe.Read, []byte("HTTP/1.1 200 OK\r\n"+
		"Content-Type: text/event-stream\r\n"+
		"Transfer-Encoding: chunked\r\n"+
		"\r\n"), 250*ms)
	c.Feed(httpframe.Read, []byte("d\r\ndata: Hello\n\n\r\n"), 300*ms)
	c.Feed(httpframe.Read, []byte("e\r\ndata: world!\n\n\r\n0\r\n\r\n"), 340*ms)
	c.Close()
	// Output:
	// client POST /v1/chat/completions 200
	// authorization "", content-type "text/event-stream"
	// body "data: Hello\n\ndata: world!\n\n"
	//   +300ms "data: Hello\n\n"
	//   +340ms "data: world!\n\n"
}
