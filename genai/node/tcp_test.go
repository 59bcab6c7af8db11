package node

// Kernel-tier tests of the TCP part: real connections between two network
// namespaces the test makes, joined by a veth pair, over a link that
// drops a share of the segments at random (an nftables rule of the
// test's: this kernel has no netem), against the local mock of the LLM
// APIs; the counts held to the kernel's own counters of each namespace
// and of each socket (TCP_INFO).

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/testutil/llmserver"
	"github.com/xpuscope/xpuscope/internal/testutil/netlab"
	"github.com/xpuscope/xpuscope/semconv"
)

type harness struct {
	s      *Source
	reader *sdkmetric.ManualReader
	spans  *tracetest.InMemoryExporter
}

func start(t *testing.T, opts ...Option) *harness {
	t.Helper()
	testutil.Native(t, "the kernel's BPF")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "genai/node's BPF programs need root")
	}
	h := &harness{reader: sdkmetric.NewManualReader(), spans: tracetest.NewInMemoryExporter()}
	s, err := New(append([]Option{
		WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))),
		WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(h.spans))),
		WithPollInterval(10 * time.Millisecond),
	}, opts...)...)
	if err != nil && isUnavailable(err) {
		testutil.SkipOrFail(t, "%v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	h.s = s
	return h
}

func isUnavailable(err error) bool {
	for e := err; e != nil; {
		if e == xpuscope.ErrUnavailable {
			return true
		}
		u, ok := e.(interface{ Unwrap() []error })
		if !ok {
			break
		}
		for _, w := range u.Unwrap() {
			if isUnavailable(w) {
				return true
			}
		}
		return false
	}
	return false
}

// total sums the points of metric name that carry every kv.
func (h *harness) total(t *testing.T, name string, kvs ...attribute.KeyValue) int64 {
	t.Helper()
	var n int64
	for _, p := range testutil.Collect(t, h.reader).Find(name, kvs...) {
		n += int64(p.Value)
	}
	return n
}

// eventually waits (polling, never a fixed sleep) until f holds, and
// fails with what f said last.
func eventually(t *testing.T, d time.Duration, f func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, why := f()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// connect dials ln, a listener of lab's server, from lab's client, and
// returns both ends: the client's, and the one ln accepted.
func connect(t *testing.T, lab *netlab.Lab, ln net.Listener) (net.Conn, *net.TCPConn) {
	t.Helper()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	c, err := lab.Dial(ln.Addr().String())
	require.NoError(t, err)
	return c, (<-accepted).(*net.TCPConn)
}

// serve hands each connection ln accepts to handle, until ln closes.
func serve(ln net.Listener, handle func(net.Conn)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			handle(c)
		}()
	}
}

// tcpInfo reads a connection's TCP_INFO.
func tcpInfo(t *testing.T, c net.Conn) *unix.TCPInfo {
	t.Helper()
	raw, err := c.(syscall.Conn).SyscallConn()
	require.NoError(t, err)
	var info *unix.TCPInfo
	var ierr error
	require.NoError(t, raw.Control(func(fd uintptr) { info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }))
	require.NoError(t, ierr)
	return info
}

// socketInode is the inode number of a connection's socket.
func socketInode(t *testing.T, c net.Conn) uint64 {
	t.Helper()
	raw, err := c.(syscall.Conn).SyscallConn()
	require.NoError(t, err)
	var st unix.Stat_t
	var serr error
	require.NoError(t, raw.Control(func(fd uintptr) { serr = unix.Fstat(int(fd), &st) }))
	require.NoError(t, serr)
	return st.Ino
}

// closing is a client connection that reads its socket's inode and
// TCP_INFO as it closes.
type closing struct {
	net.Conn
	t      *testing.T
	once   sync.Once
	ino    uint64
	info   *unix.TCPInfo
	closed chan struct{}
}

func (c *closing) Close() error {
	c.once.Do(func() {
		c.ino, c.info = socketInode(c.t, c.Conn), tcpInfo(c.t, c.Conn)
		close(c.closed)
	})
	return c.Conn.Close()
}

// LLM calls over a lossy link: the retransmits of the client's end and of
// the server's, counted under the server's address and port (a watched
// server port), by role, are the retransmitted segments the kernel
// counted in each namespace, and each call's are those of its socket in
// its time.
func TestRetransmitsOnLLMCalls(t *testing.T) {
	lab := netlab.New(t)
	ln := lab.Listen(t)
	port := ln.Addr().(*net.TCPAddr).Port
	llmserver.Start(t, llmserver.Options{Listener: ln, Chunks: 4, ChunkSize: 300})
	h := start(t, WithServerPorts(uint16(port)), WithPageCache(false), WithFileSyscalls(false))
	server := []attribute.KeyValue{semconv.ServerAddress.String(lab.ServerAddr.String()), semconv.ServerPort.Int(port)}

	clientBefore, serverBefore := lab.Client.Counters(t), lab.Server.Counters(t)
	// Both ways: the client's requests and ACKs, the server's chunks.
	lossToServer := lab.DropToServer(t, 8)
	lossToClient := lab.DropToClient(t, 8)
	// Each call on a connection of its own (no keep-alive), whose
	// socket's inode and TCP_INFO are read as the client closes it.
	var last *closing
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(_ context.Context, _, addr string) (net.Conn, error) {
			c, err := lab.Dial(addr)
			if err != nil {
				return nil, err
			}
			last = &closing{Conn: c, t: t, closed: make(chan struct{})}
			return last, nil
		}}}
	type call struct {
		from, to time.Time
		c        *closing
	}
	var calls []call
	url := fmt.Sprintf("http://%s/v1/chat/completions", ln.Addr())
	for len(calls) < 12 {
		from := time.Now()
		resp, err := client.Post(url, "application/json", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		require.NoError(t, err)
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		<-last.closed
		calls = append(calls, call{from: from, to: time.Now(), c: last})
	}
	droppedToServer, droppedToClient := lossToServer.Dropped(), lossToClient.Dropped()
	lossToServer.Close()
	lossToClient.Close()
	clientAfter, serverAfter := lab.Client.Counters(t), lab.Server.Counters(t)
	clientSegs := clientAfter["RetransSegs"] - clientBefore["RetransSegs"]
	serverSegs := serverAfter["RetransSegs"] - serverBefore["RetransSegs"]
	t.Logf("dropped %d segments to the server, %d to the client; the kernel retransmitted %d from the client, %d from the server",
		droppedToServer, droppedToClient, clientSegs, serverSegs)
	for _, k := range []string{"TCPLossProbes", "TCPSynRetrans", "TCPRetransFail", "TCPTimeouts", "TCPFastRetrans", "TCPSlowStartRetrans"} {
		t.Logf("%s: client %d server %d", k, clientAfter[k]-clientBefore[k], serverAfter[k]-serverBefore[k])
	}
	require.Positive(t, clientSegs+serverSegs, "no segment retransmitted: the lossy link dropped none?")

	// The counts are the namespaces', which hold nothing but these
	// connections: a retransmitted segment of these requests and chunks
	// (each shorter than the MSS) is one retransmit. The kernel counts a
	// retransmit in RetransSegs (and TCP_INFO) before the device takes
	// it; one the device refused is a failure (the tracepoint's err), so
	// retransmits <= RetransSegs <= retransmits + failures, and equal
	// while none failed.
	var clientFailures int64
	eventually(t, 10*time.Second, func() (bool, string) {
		client := append(slices.Clip(server), semconv.XpuscopeTCPRole.String(semconv.TCPRoleClient))
		srv := append(slices.Clip(server), semconv.XpuscopeTCPRole.String(semconv.TCPRoleServer))
		c, cf := h.total(t, semconv.XpuscopeTCPRetransmits.Name, client...), h.total(t, semconv.XpuscopeTCPRetransmitFailures.Name, client...)
		s, sf := h.total(t, semconv.XpuscopeTCPRetransmits.Name, srv...), h.total(t, semconv.XpuscopeTCPRetransmitFailures.Name, srv...)
		clientFailures = cf
		return c <= clientSegs && clientSegs <= c+cf && s <= serverSegs && serverSegs <= s+sf,
			fmt.Sprintf("retransmits: client %d (%d failed), server %d (%d failed); the kernel's RetransSegs: %d, %d; all %v", c, cf, s, sf, clientSegs, serverSegs,
				testutil.Collect(t, h.reader).Find(semconv.XpuscopeTCPRetransmits.Name))
	})

	// Each call's: its socket's, between its start and end. A
	// connection carries one call (no keep-alive), so the socket's
	// retransmits (TCP_INFO's total, up to the 16 the kernel side keeps)
	// are the call's, less those the device refused.
	withRetransmits, got, want := 0, 0, 0
	for i, c := range calls {
		n := h.s.CallRetransmits(os.Getpid(), c.c.ino, "", c.from, c.to)
		w := min(int(c.c.info.Total_retrans), 16)
		assert.LessOrEqual(t, n, w, "call %d (socket %d): its socket's retransmits (TCP_INFO)", i, c.c.ino)
		got, want = got+n, want+w
		if n > 0 {
			withRetransmits++
		}
		assert.Zero(t, h.s.CallRetransmits(os.Getpid(), c.c.ino, "", c.to.Add(time.Millisecond), c.to.Add(time.Second)),
			"call %d: retransmits after it ended", i)
	}
	assert.LessOrEqual(t, int64(want-got), clientFailures, "the calls' retransmits: %d, their sockets' (TCP_INFO): %d", got, want)
	require.Positive(t, withRetransmits, "no call had a retransmit")
}

// A connection the genai capture named: its retransmits are counted under
// the name its calls gave, from the call on; a port that is no server
// port's, with no name, is counted by pod only.
func TestRetransmitsNamedByCalls(t *testing.T) {
	lab := netlab.New(t)
	ln := lab.Listen(t)
	port := ln.Addr().(*net.TCPAddr).Port
	// A second listener, on a server port: a reset of one of its
	// connections marks a point in the ring buffer (records are read in
	// the order they were made).
	marker := lab.Listen(t)
	markerPort := marker.Addr().(*net.TCPAddr).Port
	h := start(t, WithServerPorts(uint16(markerPort)), WithPageCache(false), WithFileSyscalls(false))
	resets := 0
	mark := func() {
		t.Helper()
		c, sc := connect(t, lab, marker)
		defer c.Close()
		require.NoError(t, sc.SetLinger(0))
		require.NoError(t, sc.Close())
		resets++
		want := []attribute.KeyValue{semconv.ServerAddress.String(lab.ServerAddr.String()), semconv.ServerPort.Int(markerPort),
			semconv.XpuscopeTCPResetDirection.String(semconv.ResetSent)}
		eventually(t, 10*time.Second, func() (bool, string) {
			n := h.total(t, semconv.XpuscopeTCPResets.Name, want...)
			return n == int64(resets), fmt.Sprintf("%d marker resets counted, want %d", n, resets)
		})
	}
	c, sc := connect(t, lab, ln)
	defer c.Close()
	defer sc.Close()
	go func() { _, _ = io.Copy(sc, sc) }()
	echo := func(n int) {
		buf := make([]byte, 200)
		for range n {
			_, err := c.Write(buf)
			require.NoError(t, err)
			_, err = io.ReadFull(c, buf)
			require.NoError(t, err)
		}
	}
	// Only the client's segments to the server are dropped: the marker's
	// reset (a bare segment) goes through.
	loss := lab.DropToServer(t, 4)
	echo(30)
	ino := socketInode(t, c)
	before := int64(tcpInfo(t, c).Total_retrans)
	require.Positive(t, before, "no retransmit")
	// Every retransmit before the name is counted before the marker.
	mark()
	// Unnamed, on no server port: no server attributes.
	for _, p := range testutil.Collect(t, h.reader).Find(semconv.XpuscopeTCPRetransmits.Name) {
		assert.False(t, p.Has(semconv.ServerPort) && p.Get(semconv.ServerPort) == fmt.Sprint(port), "unnamed endpoint labelled: %v", p.Attrs)
	}
	h.s.CallRetransmits(os.Getpid(), ino, "llm.example.test", time.Now().Add(-time.Minute), time.Now())
	// A retransmit the kernel makes after the first count and before the
	// name (a probe of the last segment, say) is counted unnamed: the
	// named ones lie between the counts from before and after the name.
	after := int64(tcpInfo(t, c).Total_retrans)
	echo(30)
	loss.Close()
	total := int64(tcpInfo(t, c).Total_retrans)
	require.Greater(t, total, after, "no retransmit after the name")
	named := []attribute.KeyValue{semconv.ServerAddress.String("llm.example.test"), semconv.ServerPort.Int(port),
		semconv.XpuscopeTCPRole.String(semconv.TCPRoleClient)}
	mark()
	// Retransmits the device refused are failures (see
	// TestRetransmitsOnLLMCalls): equal while none failed.
	n := h.total(t, semconv.XpuscopeTCPRetransmits.Name, named...)
	failed := h.total(t, semconv.XpuscopeTCPRetransmitFailures.Name, named...)
	assert.True(t, n <= total-before && total-after <= n+failed, "retransmits under the name %d (%d failed); TCP_INFO: %d in all, %d before the name, %d at it",
		n, failed, total, before, after)
}

// An abortive close (SO_LINGER 0) sends a reset the peer receives: one
// each, by direction and role, as the server's namespace counted it sent
// (OutRsts).
func TestResets(t *testing.T) {
	lab := netlab.New(t)
	ln := lab.Listen(t)
	port := ln.Addr().(*net.TCPAddr).Port
	h := start(t, WithServerPorts(uint16(port)), WithPageCache(false), WithFileSyscalls(false))
	server := []attribute.KeyValue{semconv.ServerAddress.String(lab.ServerAddr.String()), semconv.ServerPort.Int(port)}
	before := lab.Server.Counters(t)
	const n = 5
	for range n {
		c, sc := connect(t, lab, ln)
		require.NoError(t, sc.SetLinger(0))
		require.NoError(t, sc.Close())
		_, err := c.Read(make([]byte, 1))
		require.ErrorIs(t, err, syscall.ECONNRESET, "the client reads the reset")
		c.Close()
	}
	sent := lab.Server.Counters(t)["OutRsts"] - before["OutRsts"]
	require.Equal(t, int64(n), sent, "the server's namespace sent a reset per connection")
	eventually(t, 10*time.Second, func() (bool, string) {
		s := h.total(t, semconv.XpuscopeTCPResets.Name, append(server, semconv.XpuscopeTCPRole.String(semconv.TCPRoleServer),
			semconv.XpuscopeTCPResetDirection.String(semconv.ResetSent))...)
		r := h.total(t, semconv.XpuscopeTCPResets.Name, append(server, semconv.XpuscopeTCPRole.String(semconv.TCPRoleClient),
			semconv.XpuscopeTCPResetDirection.String(semconv.ResetReceived))...)
		return s == sent && r == n, fmt.Sprintf("resets sent by the server %d (OutRsts %d), received by the client %d (want %d); all: %v", s, sent, r, n,
			testutil.Collect(t, h.reader).Find(semconv.XpuscopeTCPResets.Name))
	})
	// The scope, and each metric's unit, kind and description, as semconv
	// has them.
	names := testutil.CheckScope(t, h.reader, ScopeName)
	assert.Subset(t, names, []string{semconv.XpuscopeTCPResets.Name, semconv.XpuscopeNodeRecordsDropped.Name,
		semconv.XpuscopeNodeOverflow.Name, semconv.XpuscopeNodeWatchedFiles.Name})
}
