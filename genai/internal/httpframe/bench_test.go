package httpframe

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// streamedSSE is a streamed chat completion: a request, and a 4 KiB
// response body of SSE events, one chunk each.
func streamedSSE() (req string, resp []string) {
	req = openaiReqHead(openaiStreamReqBody) + openaiStreamReqBody
	var body strings.Builder
	for i := 0; body.Len() < 4<<10; i++ {
		ev := fmt.Sprintf(`data: {"id":"chatcmpl-b","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"token %03d"}}]}`+"\n\n", i)
		body.WriteString(ev)
		resp = append(resp, chunk(ev))
	}
	resp[0] = sseHead + resp[0]
	resp[len(resp)-1] += lastChunk
	return req, resp
}

// BenchmarkStreamedSSE frames one exchange with a 4 KiB streamed response
// per op, on a keep-alive connection, the response read one chunk a read
// or in reads of 16 bytes.
func BenchmarkStreamedSSE(b *testing.B) {
	req, chunks := streamedSSE()
	whole := strings.Join(chunks, "")
	for _, bc := range []struct {
		name  string
		reads []string
	}{
		{"chunk-reads", chunks},
		{"16-byte-reads", splitEvery(whole, 16)},
	} {
		b.Run(fmt.Sprintf("%s/%d", bc.name, len(bc.reads)), func(b *testing.B) {
			reads := make([][]byte, len(bc.reads))
			for i, r := range bc.reads {
				reads[i] = []byte(r)
			}
			reqb := []byte(req)
			n := 0
			c := New(Config{OnExchange: func(*Exchange) { n++ }})
			b.SetBytes(int64(len(req) + len(whole)))
			b.ReportAllocs()
			for b.Loop() {
				c.Feed(Write, reqb, 1)
				for i, r := range reads {
					c.Feed(Read, r, int64(2+i))
				}
			}
			require.NotZero(b, n, "%d exchanges delivered, stats %+v", n, c.Stats())
			require.Equal(b, int64(n), c.Stats().Exchanges, "%d exchanges delivered, stats %+v", n, c.Stats())
		})
	}
}

func splitEvery(s string, n int) []string {
	var out []string
	for len(s) > n {
		out, s = append(out, s[:n]), s[n:]
	}
	return append(out, s)
}
