package procfs

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	prometheus "github.com/prometheus/procfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/procfs/procfstest"
)

func TestParseNetTCPLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		want TCPSocket
		ok   bool
	}{
		{"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode", TCPSocket{}, false},
		{"   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 24467 1 0000000000000000 100 0 0 10 0",
			TCPSocket{LocalAddr: netip.MustParseAddr("127.0.0.1"), LocalPort: 8000, State: TCPListen, Inode: 24467}, true},
		{"   7: 0100007F:D3A2 0100007F:2CAB 01 00000000:00000000 00:00000000 00000000  1000        0 99 1",
			TCPSocket{LocalAddr: netip.MustParseAddr("127.0.0.1"), LocalPort: 0xd3a2, RemotePort: 11435, State: TCPEstablished, Inode: 99}, true},
		{"   2: 0A00A8C0:0050 00000000:0000 0A 0", // no inode field
			TCPSocket{LocalAddr: netip.MustParseAddr("192.168.0.10"), LocalPort: 80, State: TCPListen}, true},
		// tcp6: 32 hex digits of address, each 32-bit word little endian.
		{"   1: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0 0 1",
			TCPSocket{LocalAddr: netip.IPv6Loopback(), LocalPort: 8080, State: TCPListen, Inode: 1}, true},
		{"   3: 0000000000000000FFFF00000100007F:1F90 00000000000000000000000000000000:0000 0A 0 0 0 0 0 77",
			TCPSocket{LocalAddr: netip.MustParseAddr("::ffff:127.0.0.1"), LocalPort: 8080, State: TCPListen, Inode: 77}, true},
		{"   0: 0100007F:1F40 00000000:0000 0A 0 0 0 0 0 x", TCPSocket{}, false}, // inode not a number
		{"   0: 0100007F00:1F40 00000000:0000 0A 0", TCPSocket{}, false},         // ten hex digits of address
		{"   0: 0100007G:1F40 00000000:0000 0A 0", TCPSocket{}, false},           // address not hex
		{"   0: 0100007F:1F40 00000000:0000 A 0", TCPSocket{}, false},            // one-digit state
		{"   0: 0100007F:1F4 00000000:0000 0A 0", TCPSocket{}, false},            // three-digit port
		{"   0: 0100007F:XYZW 00000000:0000 0A 0", TCPSocket{}, false},           // not hex
		{"   0: 0100007F1F40 00000000:0000 0A 0", TCPSocket{}, false},            // no colon
		{"0100007F:1F40 00000000:0000 0A 0 0", TCPSocket{}, false},               // no slot
		{"", TCPSocket{}, false},
	} {
		got, ok := ParseNetTCPLine([]byte(tc.line))
		assert.Equal(t, tc.ok, ok, "ParseNetTCPLine(%q) ok", tc.line)
		assert.Equal(t, tc.want, got, "ParseNetTCPLine(%q)", tc.line)
	}
}

// Bytes pass with no change of state only through an established or half
// closed socket.
func TestCarriesData(t *testing.T) {
	carries := map[uint8]bool{TCPEstablished: true, TCPFinWait1: true, TCPFinWait2: true, TCPCloseWait: true}
	for st := range uint8(0x10) {
		assert.Equal(t, carries[st], (TCPSocket{State: st}).CarriesData(), "state %#02x: CarriesData", st)
	}
}

// TestTCPSockets: a listener this test opens is found through the real
// procfs, and each namespace is read once.
func TestTCPSockets(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	port := uint16(l.Addr().(*net.TCPAddr).Port)
	found := 0
	require.NoError(t, (FS{Root: DefaultRoot}).TCPSockets(func(s TCPSocket) bool {
		if s.LocalPort == port && s.State == TCPListen {
			found++
		}
		return true
	}))
	assert.Equal(t, 1, found, "times the listener on port %d was found", port)
	// The process's own namespace, with the listener's inode among its
	// socket descriptors.
	self := FS{Root: DefaultRoot}.Proc(os.Getpid())
	inodes, err := self.SocketInodes()
	require.NoError(t, err, "SocketInodes")
	var listener TCPSocket
	require.NoError(t, self.NetTCP(func(s TCPSocket) bool {
		if s.LocalPort == port && s.State == TCPListen {
			listener = s
			return false
		}
		return true
	}))
	assert.Equal(t, netip.MustParseAddr("127.0.0.1"), listener.LocalAddr, "the listener's address")
	assert.Contains(t, inodes, listener.Inode, "the listener's inode among the process's sockets")
	// Stopping early stops.
	calls := 0
	_ = FS{Root: DefaultRoot}.TCPSockets(func(TCPSocket) bool { calls++; return false })
	assert.Equal(t, 1, calls, "calls after f returned false")
	assert.Error(t, (FS{Root: filepath.Join(t.TempDir(), "none")}).TCPSockets(func(TCPSocket) bool { return true }), "a missing root is no error")
}

func FuzzParseNetTCPLine(f *testing.F) {
	f.Add([]byte("   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 24467 1"))
	f.Add([]byte("   1: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, ok := ParseNetTCPLine(b); !ok && s != (TCPSocket{}) {
			require.Zero(t, s, "not a socket line, yet %+v", s)
		}
	})
}

// TestTCPSocketsUnreadable: a namespace whose sockets no process gives
// is an error, so that a caller can fail open; one read through any of
// its processes is not.
func TestTCPSocketsUnreadable(t *testing.T) {
	root := t.TempDir()
	proc := func(pid int, ns string, tcp bool) {
		p := procfstest.Process{PID: pid, NetNS: "net:[" + ns + "]"}
		if tcp {
			lines := "  sl  local_address\n   0: 0100007F:1F40 00000000:0000 0A 0\n"
			p.Files = map[string]string{"net/tcp": lines, "net/tcp6": lines}
		}
		procfstest.Write(t, root, p)
	}
	proc(10, "1", false) // exited before its files were read...
	proc(11, "1", true)  // ...but this one is in the same namespace
	n := 0
	count := func(TCPSocket) bool { n++; return true }
	require.NoError(t, (FS{Root: root}).TCPSockets(count), "TCPSockets")
	require.Equal(t, 2, n, "TCPSockets: sockets")
	proc(12, "2", false) // a namespace nothing gives
	assert.Error(t, (FS{Root: root}).TCPSockets(count), "an unreadable namespace is no error")
}

// BenchmarkTCPSockets reads the sockets of one network namespace, 1000
// IPv4 and 1000 IPv6 ones, as the genai capture does at start for each
// namespace, against prometheus/procfs's NetTCP and NetTCP6 on the same
// files.
func BenchmarkTCPSockets(b *testing.B) {
	var tcp, tcp6 strings.Builder
	tcp.WriteString("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n")
	tcp6.WriteString(tcp.String())
	for i := range 1000 {
		fmt.Fprintf(&tcp, "%4d: 0100007F:%04X 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 %d 1 0000000000000000 20 4 30 10 -1\n", i, 30000+i, 100000+i)
		fmt.Fprintf(&tcp6, "%4d: 00000000000000000000000001000000:%04X 00000000000000000000000001000000:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 %d 1 0000000000000000 20 4 30 10 -1\n", i, 30000+i, 200000+i)
	}
	root := procfstest.New(b, procfstest.Process{PID: 1, NetNS: "net:[1]",
		Files: map[string]string{"net/tcp": tcp.String(), "net/tcp6": tcp6.String()}})
	fs := FS{Root: root}
	procfstest.Versus(b, root, 1,
		func() error {
			n := 0
			err := fs.TCPSockets(func(TCPSocket) bool { n++; return true })
			if err == nil && n != 2000 {
				err = fmt.Errorf("%d sockets", n)
			}
			return err
		},
		func(p prometheus.Proc) error {
			// An FS rooted at the process's directory reads its net/tcp.
			fs, err := prometheus.NewFS(filepath.Join(root, strconv.Itoa(p.PID)))
			if err != nil {
				return err
			}
			v4, err := fs.NetTCP()
			if err != nil {
				return err
			}
			v6, err := fs.NetTCP6()
			if err == nil && len(v4)+len(v6) != 2000 {
				err = fmt.Errorf("%d sockets", len(v4)+len(v6))
			}
			return err
		})
}
