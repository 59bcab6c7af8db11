package httpbpf

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/testutil/llmserver"
)

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "BPF programs need root")
	}
}

// TestLoad: the verifier of the running kernel accepts every program, for
// perf-event uprobes and for uprobe_multi links (kernel tier).
func TestLoad(t *testing.T) {
	requireRoot(t)
	for _, multi := range []bool{false, true} {
		objs, err := Load(LoadOptions{UprobeMulti: multi, Plaintext: true})
		if err != nil {
			t.Fatalf("multi=%v: %v", multi, err)
		}
		if err := objs.WatchPorts([]uint16{8000, 11434}); err != nil {
			t.Fatal(err)
		}
		if err := objs.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Without the plaintext capture its programs are left out.
	objs, err := Load(LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer objs.Close()
	for _, name := range []string{SockState, SysEnter, SysExit} {
		if objs.Program(name) != nil {
			t.Errorf("%s loaded without the plaintext capture", name)
		}
	}
	for _, p := range TLSProbes {
		if objs.Program(p.Entry) == nil {
			t.Errorf("%s: entry program %s not loaded", p.Symbol, p.Entry)
		}
	}
}

// capture attaches the programs: the socket state tracepoint (which
// opens the plaintext gate for the connections made from now on), the
// syscall tracepoints, and the OpenSSL probes on the system libssl (the
// one curl loads). It returns a function
// that stops the capture and returns the records of pid by connection
// and direction.
type conn struct {
	src  Source
	conn uint64
}

type captured struct {
	bytes           map[conn]map[Dir]*bytes.Buffer
	closed          map[conn]bool
	seqs            map[conn][]uint32 // of the data records, in order, then the close
	firstTS, lastTS map[conn]map[Dir]uint64
}

func capture(t *testing.T, ports ...uint16) (objs *Objects, stop func(pid int) captured) {
	t.Helper()
	objs, err := Load(LoadOptions{Plaintext: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { objs.Close() })
	if err := objs.WatchPorts(ports); err != nil {
		t.Fatal(err)
	}
	var links []link.Link
	t.Cleanup(func() {
		for _, l := range links {
			l.Close()
		}
	})
	state, err := link.AttachTracing(link.TracingOptions{Program: objs.Program(SockState)})
	if err != nil {
		t.Fatal(err)
	}
	links = append(links, state)
	enter, err := link.AttachTracing(link.TracingOptions{Program: objs.Program(SysEnter)})
	if err != nil {
		t.Fatal(err)
	}
	exit, err := link.AttachTracing(link.TracingOptions{Program: objs.Program(SysExit)})
	if err != nil {
		t.Fatal(err)
	}
	links = append(links, enter, exit)
	ex, err := link.OpenExecutable(SystemLibSSL(t))
	if err != nil {
		t.Fatal(err)
	}
	// The exported functions, by symbol: the probes used where the
	// internal ones are not found. (The Tracer places those; the genai
	// capture's tests cover them.)
	for _, p := range TLSProbes {
		if p.CalledFrom != nil {
			continue
		}
		l, err := ex.Uprobe(p.Symbol, objs.Program(p.Entry), &link.UprobeOptions{Cookie: p.Cookie})
		if err != nil {
			t.Fatal(err)
		}
		links = append(links, l)
		if p.Return != "" {
			l, err := ex.Uretprobe(p.Symbol, objs.Program(p.Return), &link.UprobeOptions{Cookie: p.Cookie})
			if err != nil {
				t.Fatal(err)
			}
			links = append(links, l)
		}
	}
	rd, err := ringbuf.NewReader(objs.Records)
	if err != nil {
		t.Fatal(err)
	}
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
			if err := Decode(rec.RawSample, &r); err != nil {
				t.Errorf("decode: %v", err)
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
		c := captured{bytes: map[conn]map[Dir]*bytes.Buffer{}, closed: map[conn]bool{}, seqs: map[conn][]uint32{},
			firstTS: map[conn]map[Dir]uint64{}, lastTS: map[conn]map[Dir]uint64{}}
		for _, r := range all {
			if int(r.PID) != pid {
				continue
			}
			k := conn{r.Source, r.Conn}
			if n := len(c.seqs[k]); n == 0 || c.seqs[k][n-1] != r.Seq || r.Kind == KindClose {
				c.seqs[k] = append(c.seqs[k], r.Seq)
			}
			if r.Kind == KindClose {
				c.closed[k] = true
				continue
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
	t.Fatal("no libssl.so.3 (Debian's libssl3; make deps installs it with curl)")
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
	if err != nil {
		t.Fatalf("curl: %v: %s", err, out)
	}
	if !bytes.Contains(out, []byte("data: [DONE]")) {
		t.Fatalf("curl got %q", out)
	}
	return cmd.Process.Pid
}

// TestCaptureCurl: curl's request and streamed response, over plaintext
// HTTP to a watched port and over TLS (real libssl), are captured whole
// on one connection each: the request as curl wrote it, the response as
// it read it, each chunk later than the server's first delay.
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
			if err != nil {
				t.Fatal(err)
			}
			// A failed call read as a byte count (its -1 in eax) faults.
			if counters[CounterReadFault] != 0 || counters[CounterShort] != 0 {
				t.Errorf("counters: drops %d, short %d, read faults %d", counters[CounterDrops], counters[CounterShort], counters[CounterReadFault])
			}
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
			if len(conns) != 1 {
				t.Fatalf("%d %v connections captured for curl, want 1 (all: %v)", len(conns), want, keys(c.bytes))
			}
			k := conns[0]
			req, resp := c.bytes[k][Write].String(), c.bytes[k][Read].String()
			for _, w := range []string{"POST /v1/chat/completions HTTP/1.1\r\n", "Authorization: Bearer " + secret, `"model":"gpt-4o-mini"`} {
				if !bytes.Contains([]byte(req), []byte(w)) {
					t.Errorf("request lacks %q:\n%s", w, req)
				}
			}
			for _, w := range []string{"HTTP/1.1 200 OK\r\n", "text/event-stream", "data: [DONE]"} {
				if !bytes.Contains([]byte(resp), []byte(w)) {
					t.Errorf("response lacks %q:\n%s", w, resp)
				}
			}
			if gap := time.Duration(c.lastTS[k][Read] - c.lastTS[k][Write]); gap < delay {
				t.Errorf("last response bytes %v after the request, want at least the server's %v", gap, delay)
			}
			if !c.closed[k] {
				t.Errorf("no close record for %v", k)
			}
			// Calls numbered 1, 2, …, n, and the close carrying n.
			seqs := c.seqs[k]
			for i, q := range seqs[:len(seqs)-1] {
				if q != uint32(i+1) {
					t.Fatalf("call numbers %v, want 1..n then n", seqs)
				}
			}
			if len(seqs) < 3 || seqs[len(seqs)-1] != seqs[len(seqs)-2] {
				t.Errorf("call numbers %v, want 1..n then n", seqs)
			}
		})
	}
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
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	objs, stop := capture(t, uint16(s.Port))
	gate := func() Gate {
		t.Helper()
		g, err := objs.Gate()
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	if g := gate(); g.IsOpen() {
		t.Fatalf("gate %+v: the listener and the old connection predate the program", g)
	}
	fresh, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.Port))
	if err != nil {
		t.Fatal(err)
	}
	if g := gate(); g.Open != 2 || !g.IsOpen() {
		t.Fatalf("gate %+v with a new connection, want 2 sockets open (both ends)", g)
	}
	fresh.Close()
	closed := false
	for range 100 {
		if closed = !gate().IsOpen(); closed {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !closed {
		t.Fatalf("gate %+v after the new connection closed", gate())
	}

	ask := func(path string) {
		t.Helper()
		if _, err := fmt.Fprintf(old, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path); err != nil {
			t.Fatal(err)
		}
		if _, err := old.Read(make([]byte, 4096)); err != nil {
			t.Fatal(err)
		}
	}
	ask("/while-closed")
	if err := objs.SetPreexisting(true); err != nil {
		t.Fatal(err)
	}
	if g := gate(); !g.Preexisting || !g.IsOpen() {
		t.Fatalf("gate %+v after SetPreexisting(true)", g)
	}
	ask("/while-open")
	var sent string
	for k, b := range stop(os.Getpid()).bytes {
		if k.src == SourceSocket {
			sent += b[Write].String()
		}
	}
	if strings.Contains(sent, "/while-closed") || !strings.Contains(sent, "GET /while-open HTTP/1.1") {
		t.Errorf("captured writes %q: want the request made while the gate was open, only", sent)
	}
}
