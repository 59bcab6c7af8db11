package serving

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/genai/node"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

// Package genai/node names a model server's connections through the
// Source (node.WithModelServers(src.Serves)): a fake vLLM on a port that
// is no server port of genai/node's has the resets of its connections
// counted under its address and port once the Source found it; a
// process the Source did not find is no model server's.
func TestNodeNamesModelServerConnections(t *testing.T) {
	testutil.Native(t, "the kernel's BPF")
	// genai/node first: it learns the listener's owner as it listens.
	reader := sdkmetric.NewManualReader()
	var found atomic.Pointer[Source] // set once the Source runs
	n, err := node.New(node.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))),
		node.WithServerPorts(), node.WithPageCache(false), node.WithFileSyscalls(false), node.WithPollInterval(10*time.Millisecond),
		node.WithModelServers(func(pid int) bool { src := found.Load(); return src != nil && src.Serves(pid) }))
	if errors.Is(err, xpuscope.ErrUnavailable) {
		testutil.SkipOrFail(t, "%v", err)
	}
	require.NoError(t, err)
	defer n.Close()
	// In a network namespace of its own, where the fake listens itself
	// (in the test's, the test would make its listener).
	f := startFake(t, fakeOpts{args: vllmArgs(), payload: "vllm-v1.prom", netns: true, port: 8000})
	api := f.cmd.Process.Pid
	h := newHarness(t, []int{api})
	h.server(t, api, "read", read)
	found.Store(h.src)
	require.True(t, h.src.Serves(api))
	require.False(t, h.src.Serves(api+1e6), "a process of no server")

	// Abortive closes, from inside the server's namespace: each sends a
	// reset the server's socket receives.
	const conns = 3
	for range conns {
		c, err := dialIn(t, api, fmt.Sprintf("127.0.0.1:%d", f.port))
		require.NoError(t, err)
		_, err = c.Write([]byte("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"))
		require.NoError(t, err)
		buf := make([]byte, 1)
		_, err = c.Read(buf) // the server accepted and answered
		require.NoError(t, err)
		require.NoError(t, c.(*net.TCPConn).SetLinger(0))
		require.NoError(t, c.Close())
	}
	server := []attribute.KeyValue{semconv.ServerAddress.String("127.0.0.1"), semconv.ServerPort.Int(f.port),
		semconv.XpuscopeTCPRole.String(semconv.TCPRoleServer), semconv.XpuscopeTCPResetDirection.String(semconv.ResetReceived)}
	require.Eventually(t, func() bool {
		var got float64
		for _, p := range testutil.Collect(t, reader).Find(semconv.XpuscopeTCPResets.Name, server...) {
			got += p.Value
		}
		return got == conns
	}, 10*time.Second, 20*time.Millisecond, "%d resets received by the server's sockets, counted under its address and port: %v",
		conns, testutil.Collect(t, reader))
}

// dialIn connects to addr from the network namespace of process pid (on
// a thread of its own, which goes back to the test's namespace).
func dialIn(t *testing.T, pid int, addr string) (net.Conn, error) {
	t.Helper()
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	require.NoError(t, err)
	defer ns.Close()
	self, err := os.Open("/proc/thread-self/ns/net")
	require.NoError(t, err)
	defer self.Close()
	type result struct {
		c   net.Conn
		err error
	}
	done := make(chan result)
	go func() {
		runtime.LockOSThread()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- result{nil, err}
			return // the thread, locked, exits with the goroutine
		}
		c, err := net.Dial("tcp", addr)
		if unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		done <- result{c, err}
	}()
	r := <-done
	return r.c, r.err
}
