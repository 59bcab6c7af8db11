package procfs

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func TestExeBase(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/usr/bin/python3.11", "python3.11"},
		{"/opt/app/train (deleted)", "train"},
		{"/", ""},
		{"", ""},
		{" (deleted)", " (deleted)"},
	} {
		if got := ExeBase(tc.in); got != tc.want {
			t.Errorf("ExeBase(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseComm(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"python\n", "python"},
		{"pt_main_thread", "pt_main_thread"},
		{"a\nb\n", "a"},
		{"", ""},
	} {
		if got := ParseComm([]byte(tc.in)); got != tc.want {
			t.Errorf("ParseComm(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestExecutableName(t *testing.T) {
	root := t.TempDir()
	mk := func(pid int) string {
		d := filepath.Join(root, strconv.Itoa(pid))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	// exe link wins.
	d := mk(10)
	if err := os.Symlink("/usr/local/bin/vllm", filepath.Join(d, "exe")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(d, "comm"), []byte("ignored\n"), 0o644)
	// comm fallback.
	d = mk(11)
	os.WriteFile(filepath.Join(d, "comm"), []byte("kworker\n"), 0o644)

	fs := FS{Root: root}
	for pid, want := range map[int]string{10: "vllm", 11: "kworker", 12: ""} {
		if got := fs.ExecutableName(pid); got != want {
			t.Errorf("ExecutableName(%d) = %q, want %q", pid, got, want)
		}
	}
	// The real procfs: this test binary.
	real := FS{Root: DefaultRoot}
	self, _ := os.Executable()
	if got, want := real.ExecutableName(os.Getpid()), filepath.Base(self); got != want {
		t.Errorf("ExecutableName(self) = %q, want %q", got, want)
	}
}

func FuzzParseComm(f *testing.F) {
	f.Add([]byte("python\n"))
	f.Add([]byte{})
	f.Add(make([]byte, 4096))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := ParseComm(b)
		if len(s) > maxComm {
			t.Fatalf("len %d > %d", len(s), maxComm)
		}
	})
}

func FuzzExeBase(f *testing.F) {
	f.Add("/usr/bin/python3 (deleted)")
	f.Fuzz(func(t *testing.T, s string) {
		if len(ExeBase(s)) > len(s) {
			t.Fatal("grew")
		}
	})
}

func TestParseNetTCPLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		want TCPSocket
		ok   bool
	}{
		{"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode", TCPSocket{}, false},
		{"   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 24467 1 0000000000000000 100 0 0 10 0",
			TCPSocket{LocalPort: 8000, State: TCPListen}, true},
		{"   7: 0100007F:D3A2 0100007F:2CAB 01 00000000:00000000 00:00000000 00000000  1000        0 99 1",
			TCPSocket{LocalPort: 0xd3a2, RemotePort: 11435, State: TCPEstablished}, true},
		// tcp6: 32 hex digits of address.
		{"   1: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0 0 1",
			TCPSocket{LocalPort: 8080, State: TCPListen}, true},
		{"   0: 0100007F:1F40 00000000:0000 A 0", TCPSocket{}, false},  // one-digit state
		{"   0: 0100007F:1F4 00000000:0000 0A 0", TCPSocket{}, false},  // three-digit port
		{"   0: 0100007F:XYZW 00000000:0000 0A 0", TCPSocket{}, false}, // not hex
		{"   0: 0100007F1F40 00000000:0000 0A 0", TCPSocket{}, false},  // no colon
		{"0100007F:1F40 00000000:0000 0A 0 0", TCPSocket{}, false},     // no slot
		{"", TCPSocket{}, false},
	} {
		got, ok := ParseNetTCPLine([]byte(tc.line))
		if ok != tc.ok || got != tc.want {
			t.Errorf("ParseNetTCPLine(%q) = %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

// Bytes pass with no change of state only through an established or half
// closed socket.
func TestCarriesData(t *testing.T) {
	carries := map[uint8]bool{TCPEstablished: true, TCPFinWait1: true, TCPFinWait2: true, TCPCloseWait: true}
	for st := range uint8(0x10) {
		if got := (TCPSocket{State: st}).CarriesData(); got != carries[st] {
			t.Errorf("state %#02x: CarriesData %v, want %v", st, got, carries[st])
		}
	}
}

// TestTCPSockets: a listener this test opens is found through the real
// procfs, and each namespace is read once.
func TestTCPSockets(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := uint16(l.Addr().(*net.TCPAddr).Port)
	found := 0
	if err := (FS{Root: DefaultRoot}).TCPSockets(func(s TCPSocket) bool {
		if s.LocalPort == port && s.State == TCPListen {
			found++
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if found != 1 {
		t.Errorf("the listener on port %d was found %d times, want once", port, found)
	}
	// Stopping early stops.
	calls := 0
	_ = FS{Root: DefaultRoot}.TCPSockets(func(TCPSocket) bool { calls++; return false })
	if calls != 1 {
		t.Errorf("%d calls after f returned false", calls)
	}
	if err := (FS{Root: filepath.Join(t.TempDir(), "none")}).TCPSockets(func(TCPSocket) bool { return true }); err == nil {
		t.Error("a missing root is no error")
	}
}

func FuzzParseNetTCPLine(f *testing.F) {
	f.Add([]byte("   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 24467 1"))
	f.Add([]byte("   1: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, ok := ParseNetTCPLine(b); !ok && s != (TCPSocket{}) {
			t.Fatalf("not a socket line, yet %+v", s)
		}
	})
}

// TestTCPSocketsUnreadable: a namespace whose sockets no process gives
// is an error, so that a caller can fail open; one read through any of
// its processes is not.
func TestTCPSocketsUnreadable(t *testing.T) {
	root := t.TempDir()
	proc := func(pid, ns string, tcp bool) {
		dir := filepath.Join(root, pid)
		for _, d := range []string{"ns", "net"} {
			if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink("net:["+ns+"]", filepath.Join(dir, "ns", "net")); err != nil {
			t.Fatal(err)
		}
		if tcp {
			line := "   0: 0100007F:1F40 00000000:0000 0A 0\n"
			for _, f := range []string{"tcp", "tcp6"} {
				if err := os.WriteFile(filepath.Join(dir, "net", f), []byte("  sl  local_address\n"+line), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	proc("10", "1", false) // exited before its files were read...
	proc("11", "1", true)  // ...but this one is in the same namespace
	n := 0
	count := func(TCPSocket) bool { n++; return true }
	if err := (FS{Root: root}).TCPSockets(count); err != nil || n != 2 {
		t.Fatalf("TCPSockets: %v, %d sockets; want no error, 2", err, n)
	}
	proc("12", "2", false) // a namespace nothing gives
	if err := (FS{Root: root}).TCPSockets(count); err == nil {
		t.Error("an unreadable namespace is no error")
	}
}
