package httpframe

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
)

// tap records what a connection's end wrote and read, in the order the
// calls returned, as the capture's probes see a traced process's calls.
type tap struct {
	net.Conn
	mu  *sync.Mutex
	evs *[]event
}

func (c tap) record(d Dir, p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	*c.evs = append(*c.evs, event{op: opFeed, dir: d, data: string(p), at: int64(len(*c.evs) + 1)})
}

func (c tap) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.record(Write, p[:n])
	}
	return n, err
}

func (c tap) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.record(Read, p[:n])
	}
	return n, err
}

// realH2 serves handler over HTTP/2 without TLS (prior knowledge) with
// Go's own net/http server, and returns a client of Go's HTTP/2 on one
// tapped connection, and the events the tap recorded so far. The client
// is that connection's http2.ClientConn, not a pooling Transport: one
// connection carries every stream, whatever the load. (Given net/http's
// Transport, a loaded CI run once saw it dial 12 connections for 21
// streams at once, and the tap of the first had only its share.)
func realH2(t *testing.T, handler http.HandlerFunc) (*http.Client, func() []event) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: handler, Protocols: &protos}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	var (
		mu  sync.Mutex
		evs []event
	)
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	cc, err := (&http2.Transport{AllowHTTP: true}).NewClientConn(tap{Conn: c, mu: &mu, evs: &evs})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	client := &http.Client{Transport: roundTripBase{cc, "http://" + ln.Addr().String()}}
	return client, func() []event {
		mu.Lock()
		defer mu.Unlock()
		return append([]event(nil), evs...)
	}
}

// roundTripBase sends requests with a path only to base.
type roundTripBase struct {
	rt   http.RoundTripper
	base string
}

func (b roundTripBase) RoundTrip(r *http.Request) (*http.Response, error) {
	u, err := r.URL.Parse(b.base + r.URL.String())
	if err != nil {
		return nil, err
	}
	r.URL, r.Host = u, ""
	return b.rt.RoundTrip(r)
}

// streamHandler answers POST /stream?n=N&id=ID with N Server-Sent
// Events, each sent in a DATA frame of its own; with abort=K the handler
// aborts the stream after K events (the server resets it).
func streamHandler(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	q := r.URL.Query()
	n, _ := strconv.Atoi(q.Get("n"))
	abort, _ := strconv.Atoi(q.Get("abort"))
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	for i := range n {
		if abort > 0 && i == abort {
			panic(http.ErrAbortHandler)
		}
		fmt.Fprintf(w, "data: {\"id\":%q,\"i\":%d}\n\n", q.Get("id"), i)
		fl.Flush()
		if r.Context().Err() != nil {
			return
		}
	}
}

// events returns what streamHandler sends for id, n events.
func events(id string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "data: {\"id\":%q,\"i\":%d}\n\n", id, i)
	}
	return b.String()
}

// TestHTTP2RealGo: Go's net/http client and server speak HTTP/2 on one
// connection, the client's calls tapped: many streams at once, a long
// one, one the client cancels and one the server resets, each read
// whole and matched to its request, the credential nowhere, nothing
// abandoned.
func TestHTTP2RealGo(t *testing.T) {
	client, recorded := realH2(t, streamHandler)
	post := func(ctx context.Context, path string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, path, strings.NewReader(`{"model":"m","stream":true}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer sk-real-h2-secret")
		req.Header.Set("Content-Type", "application/json")
		return client.Do(req)
	}
	// The connection first, then 20 streams at once, and a long one.
	resp, err := post(context.Background(), "/stream?n=1&id=first")
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	const parallel, long = 20, 10000
	var wg sync.WaitGroup
	for i := range parallel + 1 {
		wg.Go(func() {
			n, id := 50, "p"+strconv.Itoa(i)
			if i == parallel {
				n, id = long, "long"
			}
			resp, err := post(context.Background(), fmt.Sprintf("/stream?n=%d&id=%s", n, id))
			if assert.NoError(t, err) {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				assert.Equal(t, events(id, n), string(b))
			}
		})
	}
	wg.Wait()
	// The client gives up after the first event.
	ctx, cancel := context.WithCancel(context.Background())
	resp, err = post(ctx, "/stream?n=100000&id=cancelled")
	require.NoError(t, err)
	_, err = resp.Body.Read(make([]byte, 10))
	require.NoError(t, err)
	cancel()
	resp.Body.Close()
	// The server resets a stream after two events.
	resp, err = post(context.Background(), "/stream?n=10&abort=2&id=aborted")
	require.NoError(t, err)
	_, err = io.ReadAll(resp.Body)
	require.Error(t, err)
	resp.Body.Close()

	// Both resets must have crossed the connection before it is read.
	var evs []event
	require.Eventually(t, func() bool {
		evs = recorded()
		return strings.Count(eventsText(evs), "\x00\x00\x04\x03") >= 2 // two RST_STREAM frame headers
	}, 10*time.Second, 10*time.Millisecond)

	streamed := map[string]int{}
	var exchanges []*Exchange
	cfg := Config{DropHeaders: credentials, MaxBody: 4096,
		OnResponse: func(x *Exchange) func(Piece) {
			return func(p Piece) { streamed[x.Target] += len(p.Data) }
		},
		OnExchange: func(x *Exchange) { exchanges = append(exchanges, x) },
	}
	c := New(cfg)
	apply(c, evs, whole)
	st := c.Stats()
	assert.Zero(t, st.Abandoned(), "abandoned: %+v", st)
	assert.Zero(t, st.BadFrame+st.BadHeaderBlock+st.SkippedBytes, "%+v", st)
	assert.Equal(t, int64(2), st.Reset)
	require.Len(t, exchanges, parallel+4)

	byID := map[string]*Exchange{}
	for _, x := range exchanges {
		require.Equal(t, "HTTP/2", x.Proto)
		require.Equal(t, Client, x.Role)
		require.Equal(t, `{"model":"m","stream":true}`, string(x.RequestBody))
		for _, f := range append(x.RequestHeader, x.ResponseHeader...) {
			require.NotContains(t, f.Value, "sk-real-h2-secret")
			require.NotEqual(t, "authorization", strings.ToLower(f.Name))
		}
		require.Equal(t, "text/event-stream", x.ResponseHeader.Get("Content-Type"))
		id := x.Target[strings.LastIndex(x.Target, "=")+1:]
		byID[id] = x
	}
	for i := range parallel {
		id := "p" + strconv.Itoa(i)
		x := byID[id]
		require.NotNil(t, x, id)
		assert.Equal(t, events(id, 50), string(x.ResponseBody), id)
		assert.Zero(t, x.ResetBy)
	}
	x := byID["long"]
	assert.True(t, x.ResponseTruncated)
	assert.Equal(t, events("long", long)[:4096], string(x.ResponseBody))
	assert.Equal(t, len(events("long", long)), streamed[x.Target], "the sink gets the whole stream")

	x = byID["cancelled"]
	assert.Equal(t, Client, x.ResetBy)
	assert.Equal(t, uint32(http2.ErrCodeCancel), x.ResetCode)
	assert.True(t, strings.HasPrefix(string(x.ResponseBody), events("cancelled", 1)))

	x = byID["aborted"]
	assert.Equal(t, Server, x.ResetBy)
	assert.NotEqual(t, uint32(http2.ErrCodeCancel), x.ResetCode)
	assert.Equal(t, events("aborted", 2), string(x.ResponseBody))
}

func eventsText(evs []event) string {
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString(ev.data)
	}
	return b.String()
}
