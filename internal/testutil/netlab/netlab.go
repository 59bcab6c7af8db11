// Package netlab gives tests two network namespaces of their own joined by
// a veth pair, and a lossy link between them: an nftables rule that drops
// a share of the TCP segments that carry data at random (this kernel has
// no netem qdisc, so the loss is not made by one). Nothing
// is named on the host (no /run/netns entry): each namespace lives in a
// thread of the test process, and goes when the test ends.
package netlab

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// NS is a network namespace held by a thread of the test process.
type NS struct {
	tid int
	do  chan func()
}

// newNS makes a network namespace in a thread of its own, which runs what
// Do gives it until t ends; the thread then exits, and the namespace goes
// with its last socket.
func newNS(t testing.TB) *NS {
	t.Helper()
	n := &NS{do: make(chan func())}
	ready := make(chan error)
	stop := make(chan struct{})
	go func() {
		// Never unlocked: the thread exits with the goroutine, and no
		// other goroutine ever runs in the namespace.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			ready <- fmt.Errorf("unshare a network namespace: %w", err)
			return
		}
		n.tid = unix.Gettid()
		ready <- nil
		for {
			select {
			case f := <-n.do:
				f()
			case <-stop:
				return
			}
		}
	}()
	if err := <-ready; err != nil {
		testutil.SkipOrFail(t, "%v (needs root)", err)
	}
	t.Cleanup(func() { close(stop) })
	return n
}

// Do runs f in the namespace: sockets f makes belong to it.
func (n *NS) Do(f func()) {
	done := make(chan struct{})
	n.do <- func() { defer close(done); f() }
	<-done
}

// Path is the namespace's file, for nsenter --net.
func (n *NS) Path() string { return fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), n.tid) }

// Command returns a command that runs name with args in the namespace.
func (n *NS) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=" + n.Path(), "--", name}, args...)...)
}

// Run runs name with args in the namespace, failing t if it fails.
func (n *NS) Run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := n.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

// Lab is two namespaces, Client and Server, joined by a veth pair.
type Lab struct {
	Client, Server         *NS
	ClientAddr, ServerAddr netip.Addr
	// ClientIf and ServerIf are the veth ends' names, each in its
	// namespace.
	ClientIf, ServerIf string
}

var labs atomic.Int32

// New makes a lab: the client's end 10.77.N.1, the server's 10.77.N.2.
// It needs root and iproute2 (ip, nsenter).
func New(t testing.TB) *Lab {
	t.Helper()
	for _, tool := range []string{"ip", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			testutil.SkipOrFail(t, "%s (iproute2, util-linux) is needed: %v", tool, err)
		}
	}
	n := labs.Add(1)
	l := &Lab{
		Client: newNS(t), Server: newNS(t),
		ClientAddr: netip.AddrFrom4([4]byte{10, 77, byte(n), 1}),
		ServerAddr: netip.AddrFrom4([4]byte{10, 77, byte(n), 2}),
		ClientIf:   fmt.Sprintf("xpc%d-%d", os.Getpid()%100000, n),
		ServerIf:   fmt.Sprintf("xps%d-%d", os.Getpid()%100000, n),
	}
	// Made on the host, each end moved into its namespace by the thread
	// that holds it.
	if out, err := exec.Command("ip", "link", "add", l.ClientIf, "netns", fmt.Sprint(l.Client.tid), "type", "veth",
		"peer", "name", l.ServerIf, "netns", fmt.Sprint(l.Server.tid)).CombinedOutput(); err != nil {
		testutil.SkipOrFail(t, "make a veth pair: %v: %s", err, out)
	}
	for _, end := range []struct {
		ns   *NS
		dev  string
		addr netip.Addr
	}{{l.Client, l.ClientIf, l.ClientAddr}, {l.Server, l.ServerIf, l.ServerAddr}} {
		end.ns.Run(t, "ip", "link", "set", "lo", "up")
		end.ns.Run(t, "ip", "addr", "add", end.addr.String()+"/24", "dev", end.dev)
		end.ns.Run(t, "ip", "link", "set", end.dev, "up")
	}
	return l
}

// Listen listens on the server's address, port 0.
func (l *Lab) Listen(t testing.TB) net.Listener {
	t.Helper()
	var (
		ln  net.Listener
		err error
	)
	l.Server.Do(func() { ln, err = net.Listen("tcp", netip.AddrPortFrom(l.ServerAddr, 0).String()) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// Dial connects from the client's namespace to addr.
func (l *Lab) Dial(addr string) (net.Conn, error) {
	var (
		c   net.Conn
		err error
	)
	l.Client.Do(func() { c, err = net.Dial("tcp", addr) })
	return c, err
}

// Loss is a lossy direction of the link: an nftables rule in the
// receiving namespace's input hook that drops, at random, a share of the
// segments arriving there (numgen random). The drop is made at the
// receiver: a drop on the sender's egress would not be a loss, since the
// sender's TCP sees the device refuse the segment and sends it again as
// new, not as a retransmit. (This kernel has no netem qdisc; nftables'
// numgen expression is built in.)
type Loss struct {
	ns    *NS
	table string
	t     testing.TB
}

// DropToServer drops, at random, one in every of the TCP segments the
// client sends that are longer than a bare ACK (IPv4 with TCP options):
// the SYN and the segments that carry data, which the client must
// retransmit. Close, or the end of t, stops it.
func (l *Lab) DropToServer(t testing.TB, every uint32) *Loss {
	return l.drop(t, every, l.Server, "netlab_to_server", "")
}

// DropDataToServer drops one in every of the client's segments that
// carry data, as DropToServer does, but lets its SYNs through: at one in
// two, a connect whose first six SYNs were dropped waits 63 s, one
// connection in 64.
func (l *Lab) DropDataToServer(t testing.TB, every uint32) *Loss {
	return l.drop(t, every, l.Server, "netlab_to_server", "tcp flags & syn == 0")
}

// DropToClient drops one in every of the server's segments longer than a
// bare ACK, as DropToServer does the client's.
func (l *Lab) DropToClient(t testing.TB, every uint32) *Loss {
	return l.drop(t, every, l.Client, "netlab_to_client", "")
}

// bareACK is the length of a bare ACK of IPv4 with timestamps: 20 + 32
// bytes.
const bareACK = 52

// drop adds the drop rule to ns, with match (nft's syntax) as a further
// condition when it is set.
func (l *Lab) drop(t testing.TB, every uint32, ns *NS, table, match string) *Loss {
	t.Helper()
	if every < 2 {
		t.Fatalf("netlab: drop one in %d: every must be at least 2", every)
	}
	if _, err := exec.LookPath("nft"); err != nil {
		testutil.SkipOrFail(t, "nft (Debian's nftables) is needed for the lossy link: %v", err)
	}
	ruleset := fmt.Sprintf(`table inet %[1]s {
	counter dropped {}
	chain in {
		type filter hook input priority 0; policy accept;
		ip protocol tcp ip length > %[2]d %[4]s numgen random mod %[3]d == 0 counter name "dropped" drop
	}
}
`, table, bareACK, every, match)
	cmd := ns.Command("nft", "-f", "-")
	cmd.Stdin = strings.NewReader(ruleset)
	if out, err := cmd.CombinedOutput(); err != nil {
		testutil.SkipOrFail(t, "netlab: add the nftables drop rule (nf_tables, numgen): %v: %s", err, out)
	}
	loss := &Loss{ns: ns, table: table, t: t}
	t.Cleanup(loss.Close)
	return loss
}

// Dropped returns how many segments were dropped.
func (s *Loss) Dropped() uint64 {
	s.t.Helper()
	out, err := s.ns.Command("nft", "-j", "list", "counter", "inet", s.table, "dropped").Output()
	if err != nil {
		s.t.Fatalf("netlab: read the drop counter of %s: %v", s.table, err)
	}
	var doc struct {
		Nftables []struct {
			Counter *struct {
				Packets uint64 `json:"packets"`
			} `json:"counter"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		s.t.Fatalf("netlab: read the drop counter of %s: %v: %s", s.table, err, out)
	}
	for _, o := range doc.Nftables {
		if o.Counter != nil {
			return o.Counter.Packets
		}
	}
	s.t.Fatalf("netlab: no counter in nft's answer: %s", out)
	return 0
}

// Close stops dropping; calls after the first do nothing.
func (s *Loss) Close() {
	if s.table == "" {
		return
	}
	// The namespace may be gone already at the end of the test: its table
	// went with it.
	_ = s.ns.Command("nft", "delete", "table", "inet", s.table).Run()
	s.table = ""
}

// Counters reads the namespace's TCP counters: /proc/net/snmp's Tcp and
// /proc/net/netstat's TcpExt lines, by name ("RetransSegs",
// "TCPLossProbes").
func (n *NS) Counters(t testing.TB) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	var err error
	n.Do(func() {
		for _, f := range []string{"snmp", "netstat"} {
			var b []byte
			if b, err = os.ReadFile("/proc/thread-self/net/" + f); err != nil {
				return
			}
			lines := strings.Split(string(b), "\n")
			for i := 0; i+1 < len(lines); i += 2 {
				names, values := strings.Fields(lines[i]), strings.Fields(lines[i+1])
				if len(names) != len(values) || len(names) == 0 || (names[0] != "Tcp:" && names[0] != "TcpExt:") {
					continue
				}
				for j := 1; j < len(names); j++ {
					var v int64
					fmt.Sscan(values[j], &v)
					out[names[j]] = v
				}
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
