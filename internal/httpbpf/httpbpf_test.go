package httpbpf

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/testutil/llmserver"
)

func requireRoot(t *testing.T) {
	t.Helper()
	testutil.Native(t, "the kernel's BPF and uprobes")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "BPF programs need root")
	}
}

// TestLoad: the verifier of the running kernel accepts every program, for
// perf-event uprobes and for uprobe_multi links, telling sockets or not
// (kernel tier).
func TestLoad(t *testing.T) {
	requireRoot(t)
	for _, multi := range []bool{false, true} {
		for _, sockets := range []bool{false, true} {
			objs, err := Load(LoadOptions{UprobeMulti: multi, Plaintext: true, Sockets: sockets})
			require.NoError(t, err, "multi=%v sockets=%v", multi, sockets)
			require.NoError(t, objs.WatchPorts([]uint16{8000, 11434}))
			assert.Equal(t, sockets, objs.Program(ThreadExit) != nil, "%s loaded with sockets=%v", ThreadExit, sockets)
			require.NoError(t, objs.Close())
		}
	}
	// Without the plaintext capture its programs are left out, and
	// OpenSSL's sockets, which they find, with them.
	objs, err := Load(LoadOptions{Sockets: true})
	require.NoError(t, err)
	defer objs.Close()
	for _, name := range []string{SockState, SysEnter, SysExit, ThreadExit} {
		assert.Nil(t, objs.Program(name), "%s loaded without the plaintext capture", name)
	}
	for _, p := range TLSProbes {
		assert.NotNil(t, objs.Program(p.Entry), "%s: entry program %s not loaded", p.Symbol, p.Entry)
	}
}

// capture attaches the programs, which tell TLS connections' sockets:
// the socket state tracepoint (which opens the plaintext gate for the
// connections made from now on), the syscall tracepoints, the thread
// exit's, and the OpenSSL probes on the system libssl (the one curl and
// Python load). It returns a
// function that stops the capture and returns the records of pid by
// connection and direction.
type conn struct {
	src  Source
	conn uint64
}

type captured struct {
	bytes           map[conn]map[Dir]*bytes.Buffer
	closed          map[conn]bool
	seqs            map[conn]map[Dir][]uint32 // of the data records, by direction, in order
	lastCalls       map[conn][2]uint32        // what the close said of them: the last write's and read's numbers
	firstTS, lastTS map[conn]map[Dir]uint64
	sockets         map[conn][]uint64 // the inode numbers the socket records told, in order
	// socketAfter is, of each connection whose socket was told, the
	// number of its data records that came before the socket record;
	// records the number of them all.
	socketAfter, records map[conn]int
}

func capture(t *testing.T, ports ...uint16) (objs *Objects, stop func(pid int) captured) {
	t.Helper()
	objs, err := Load(LoadOptions{Plaintext: true, Sockets: true})
	require.NoError(t, err)
	t.Cleanup(func() { objs.Close() })
	require.NoError(t, objs.WatchPorts(ports))
	var links []link.Link
	t.Cleanup(func() {
		for _, l := range links {
			l.Close()
		}
	})
	state, err := link.AttachTracing(link.TracingOptions{Program: objs.Program(SockState)})
	require.NoError(t, err)
	links = append(links, state)
	enter, err := link.AttachTracing(link.TracingOptions{Program: objs.Program(SysEnter)})
	require.NoError(t, err)
	exit, err := link.AttachTracing(link.TracingOptions{Program: objs.Program(SysExit)})
	require.NoError(t, err)
	threadExit, err := link.AttachTracing(link.TracingOptions{Program: objs.Program(ThreadExit)})
	require.NoError(t, err)
	links = append(links, enter, exit, threadExit)
	ex, err := link.OpenExecutable(SystemLibSSL(t))
	require.NoError(t, err)
	// The exported functions, by symbol: the probes used where the
	// internal ones are not found. (The Tracer places those; the genai
	// capture's tests cover them.)
	for _, p := range TLSProbes {
		if p.CalledFrom != nil {
			continue
		}
		l, err := ex.Uprobe(p.Symbol, objs.Program(p.Entry), &link.UprobeOptions{Cookie: p.Cookie})
		require.NoError(t, err)
		links = append(links, l)
		if p.Return != "" {
			l, err := ex.Uretprobe(p.Symbol, objs.Program(p.Return), &link.UprobeOptions{Cookie: p.Cookie})
			require.NoError(t, err)
			links = append(links, l)
		}
	}
	rd, err := ringbuf.NewReader(objs.Records)
	require.NoError(t, err)
	var (
		mu  sync.Mutex
		all []Record
		wg  sync.WaitGroup
	)
	wg.Go(func() {
		var rec ringbuf.Record
		for {
			rd.SetDeadline(time.Now().Add(50 * time.Millisecond))
			err := rd.ReadInto(&rec)
			if errors.Is(err, ringbuf.ErrClosed) {
				return
			}
			if err != nil {
				continue
			}
			var r Record
			if err := Decode(rec.RawSample, &r); !assert.NoError(t, err, "decode") {
				continue
			}
			r.Data = bytes.Clone(r.Data)
			mu.Lock()
			all = append(all, r)
			mu.Unlock()
		}
	})
	return objs, func(pid int) captured {
		time.Sleep(200 * time.Millisecond) // a few polls
		rd.Close()
		wg.Wait()
		c := captured{bytes: map[conn]map[Dir]*bytes.Buffer{}, closed: map[conn]bool{}, seqs: map[conn]map[Dir][]uint32{},
			lastCalls: map[conn][2]uint32{},
			firstTS:   map[conn]map[Dir]uint64{}, lastTS: map[conn]map[Dir]uint64{},
			sockets: map[conn][]uint64{}, socketAfter: map[conn]int{}, records: map[conn]int{}}
		for _, r := range all {
			if int(r.PID) != pid {
				continue
			}
			k := conn{r.Source, r.Conn}
			if r.Kind == KindSocket {
				c.sockets[k] = append(c.sockets[k], r.Inode())
				c.socketAfter[k] = c.records[k]
				continue
			}
			if r.Kind == KindData {
				c.records[k]++
			}
			if r.Kind == KindClose {
				c.closed[k] = true
				w, rd := r.LastCalls()
				c.lastCalls[k] = [2]uint32{w, rd}
				continue
			}
			if c.seqs[k] == nil {
				c.seqs[k] = map[Dir][]uint32{}
			}
			if s := c.seqs[k][r.Dir]; len(s) == 0 || s[len(s)-1] != r.Seq {
				c.seqs[k][r.Dir] = append(s, r.Seq)
			}
			if c.bytes[k] == nil {
				c.bytes[k] = map[Dir]*bytes.Buffer{Write: {}, Read: {}}
				c.firstTS[k], c.lastTS[k] = map[Dir]uint64{}, map[Dir]uint64{}
			}
			c.bytes[k][r.Dir].Write(r.Data)
			if c.firstTS[k][r.Dir] == 0 {
				c.firstTS[k][r.Dir] = r.TS
			}
			c.lastTS[k][r.Dir] = r.TS
		}
		return c
	}
}

// SystemLibSSL is the libssl.so.3 curl and Python load.
func SystemLibSSL(t testing.TB) string {
	for _, p := range []string{"/usr/lib/x86_64-linux-gnu/libssl.so.3", "/lib/x86_64-linux-gnu/libssl.so.3"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	require.Fail(t, "no libssl.so.3 (Debian's libssl3; make deps installs it with curl)")
	return ""
}

const secret = "sk-test-4f1c2e9a-never-export"

// curl posts a streaming chat completion to s and returns curl's pid.
func curl(t *testing.T, s *llmserver.Server) int {
	t.Helper()
	args := []string{"-sS", "--http1.1", "-N", "-H", "Authorization: Bearer " + secret, "-H", "Content-Type: application/json",
		"-d", `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`}
	if s.CAFile != "" {
		args = append(args, "--cacert", s.CAFile)
	}
	cmd := exec.Command("curl", append(args, s.URL+"/v1/chat/completions")...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "curl: %s", out)
	require.Contains(t, string(out), "data: [DONE]", "curl's output")
	return cmd.Process.Pid
}

// TestCaptureCurl: curl's request and streamed response, over plaintext
// HTTP to a watched port and over TLS (real libssl), are captured whole
// on one connection each: the request as curl wrote it, the response as
// it read it, each chunk later than the server's first delay. The TLS
// connection's socket is told once, by a system call that an SSL_write
// or SSL_read made after the connection's first bytes told it speaks
// HTTP, before its last bytes; and no thread waits for a socket after.
// The plaintext connection's is told once too, before its first bytes.
func TestCaptureCurl(t *testing.T) {
	requireRoot(t)
	for _, tls := range []bool{false, true} {
		t.Run("tls="+strconv.FormatBool(tls), func(t *testing.T) {
			const delay = 150 * time.Millisecond
			s := llmserver.Start(t, llmserver.Options{TLS: tls, FirstDelay: delay, ChunkDelay: 20 * time.Millisecond})
			var ports []uint16
			if !tls {
				ports = []uint16{uint16(s.Port)}
			}
			objs, stop := capture(t, ports...)
			pid := curl(t, s)
			c := stop(pid)
			counters, err := objs.Counters()
			require.NoError(t, err)
			// A failed call read as a byte count (its -1 in eax) faults.
			assert.Zero(t, counters[CounterReadFault], "counters: drops %d, short %d, read faults %d", counters[CounterDrops], counters[CounterShort], counters[CounterReadFault])
			assert.Zero(t, counters[CounterShort], "counters: drops %d, short %d, read faults %d", counters[CounterDrops], counters[CounterShort], counters[CounterReadFault])
			want := Source(SourceSocket)
			if tls {
				want = SourceTLS
			}
			var conns []conn
			for k := range c.bytes {
				if k.src == want {
					conns = append(conns, k)
				}
			}
			require.Len(t, conns, 1, "%v connections captured for curl (all: %v)", want, keys(c.bytes))
			k := conns[0]
			req, resp := c.bytes[k][Write].String(), c.bytes[k][Read].String()
			for _, w := range []string{"POST /v1/chat/completions HTTP/1.1\r\n", "Authorization: Bearer " + secret, `"model":"gpt-4o-mini"`} {
				assert.Contains(t, req, w, "the request")
			}
			for _, w := range []string{"HTTP/1.1 200 OK\r\n", "text/event-stream", "data: [DONE]"} {
				assert.Contains(t, resp, w, "the response")
			}
			gap := time.Duration(c.lastTS[k][Read] - c.lastTS[k][Write])
			assert.GreaterOrEqual(t, gap, delay, "the last response bytes after the request, want at least the server's delay")
			assert.True(t, c.closed[k], "no close record for %v", k)
			require.Len(t, c.sockets[k], 1, "socket records of %v", k)
			assert.NotZero(t, c.sockets[k][0], "the socket's inode number")
			if tls {
				assert.Positive(t, c.socketAfter[k], "the socket told before the bytes that told the connection speaks HTTP")
				assert.Less(t, c.socketAfter[k], c.records[k], "the socket told after the connection's last bytes")
			} else {
				assert.Zero(t, c.socketAfter[k], "the plaintext socket told after the connection's first bytes")
			}
			assert.Len(t, c.sockets, 1, "socket records of other connections")
			var waiters uint64
			require.NoError(t, objs.captureVariables.SocketWaiters.Get(&waiters))
			assert.Zero(t, waiters, "threads waiting for a socket after curl exited")
			// Each direction's calls numbered 1, 2, …, n, and the close
			// carrying each n.
			for i, d := range []Dir{Write, Read} {
				seqs := c.seqs[k][d]
				require.NotEmpty(t, seqs, "%v calls", d)
				for j, q := range seqs {
					require.Equal(t, uint32(j+1), q, "%v call numbers %v, want 1..n", d, seqs)
				}
				assert.Equal(t, uint32(len(seqs)), c.lastCalls[k][i], "the close's last %v number", d)
			}
		})
	}
}

// waitClient is a Python program whose client thread speaks HTTP over
// TLS (the system OpenSSL) to a server thread of its own on a Unix
// socket pair, then blocks in SSL_read, which the server never answers:
// a call of an HTTP connection whose socket is unknown, and whose only
// system calls are on no TCP socket, so it waits for its socket
// throughout. It prints READY just before that read.
const waitClient = `
import socket, ssl, sys, threading, time
cert, key = sys.argv[1], sys.argv[2]
a, b = socket.socketpair()
server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
server.load_cert_chain(cert, key)
client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
client.load_verify_locations(cert)
client.check_hostname = False
def serve():
    s = server.wrap_socket(a, server_side=True)
    s.recv(4096)
    time.sleep(3600)
threading.Thread(target=serve, daemon=True).start()
c = client.wrap_socket(b)
c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
print("READY", flush=True)
c.recv(4096)
`

// TestSocketWaitThreadExit: a thread that waits for its OpenSSL call's
// socket is counted while it waits, and no more once it is killed there
// (the call never returns: the thread exit's program ends the wait).
func TestSocketWaitThreadExit(t *testing.T) {
	requireRoot(t)
	s := llmserver.Start(t, llmserver.Options{TLS: true}) // for its certificate and key
	objs, _ := capture(t)
	waiters := func() uint64 {
		t.Helper()
		var n uint64
		require.NoError(t, objs.captureVariables.SocketWaiters.Get(&n))
		return n
	}
	cmd := exec.Command("/usr/bin/python3", "-c", waitClient, s.CAFile, s.KeyFile)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.Equal(t, "READY\n", line, "%v", err)
	waited := false
	for range 100 {
		if waited = waiters() == 1; waited {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.True(t, waited, "threads waiting for a socket: %d, want the client's", waiters())
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	assert.Zero(t, waiters(), "threads waiting for a socket after the client was killed in its call")
}

func keys[K comparable, V any](m map[K]V) []K {
	var out []K
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestPlaintextGate: the gate counts the sockets with a watched port made
// after the socket state program attached (a client's and the server's
// end of it), not those made before (the listener, an old connection),
// and closes once they are gone. While it is closed, the old connection's
// bytes are not captured; SetPreexisting opens it for them.
func TestPlaintextGate(t *testing.T) {
	requireRoot(t)
	s := llmserver.Start(t, llmserver.Options{})
	old, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.Port))
	require.NoError(t, err)
	defer old.Close()
	objs, stop := capture(t, uint16(s.Port))
	gate := func() Gate {
		t.Helper()
		g, err := objs.Gate()
		require.NoError(t, err)
		return g
	}
	g := gate()
	require.False(t, g.IsOpen(), "gate %+v: the listener and the old connection predate the program", g)
	fresh, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.Port))
	require.NoError(t, err)
	g = gate()
	require.Equal(t, uint64(2), g.Open, "gate %+v with a new connection, want 2 sockets open (both ends)", g)
	require.True(t, g.IsOpen(), "gate %+v with a new connection, want 2 sockets open (both ends)", g)
	fresh.Close()
	closed := false
	for range 100 {
		if g = gate(); !g.IsOpen() {
			closed = true
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.True(t, closed, "gate %+v after the new connection closed", g)

	ask := func(path string) {
		t.Helper()
		_, err := fmt.Fprintf(old, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path)
		require.NoError(t, err)
		_, err = old.Read(make([]byte, 4096))
		require.NoError(t, err)
	}
	ask("/while-closed")
	require.NoError(t, objs.SetPreexisting(true))
	g = gate()
	require.True(t, g.Preexisting, "gate %+v after SetPreexisting(true)", g)
	require.True(t, g.IsOpen(), "gate %+v after SetPreexisting(true)", g)
	ask("/while-open")
	var sent string
	for k, b := range stop(os.Getpid()).bytes {
		if k.src == SourceSocket {
			sent += b[Write].String()
		}
	}
	assert.NotContains(t, sent, "/while-closed", "captured writes: want the request made while the gate was open, only")
	assert.Contains(t, sent, "GET /while-open HTTP/1.1", "captured writes: want the request made while the gate was open, only")
}
