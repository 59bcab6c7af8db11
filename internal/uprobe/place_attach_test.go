package uprobe

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// placedSrc calls wrap_int and wrap_ex (wrapperSrc) n times each once a
// line arrives on stdin, and prints the sum of what they return.
const placedSrc = wrapperSrc + `
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
	int n = atoi(argv[1]);
	char buf[4] = {41};
	size_t done = 0;
	long sum = 0;
	puts("READY");
	fflush(stdout);
	if (getchar() == EOF) return 1;
	for (int i = 0; i < n; i++) {
		sum += wrap_int(buf, buf, 7);
		sum += wrap_ex(buf, buf, 9, &done) + (long)done;
	}
	printf("%ld\n", sum);
	return 0;
}
`

// runReady runs cmd, a program that prints READY and waits for a line on
// stdin, calls attach with its pid once it is READY, lets it go, and
// returns the line it prints then.
func runReady(t *testing.T, cmd *exec.Cmd, attach func(pid int)) string {
	t.Helper()
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(out)
	require.True(t, sc.Scan())
	require.Equal(t, "READY", sc.Text())
	attach(cmd.Process.Pid)
	_, err = in.Write([]byte("\n"))
	require.NoError(t, err)
	require.True(t, sc.Scan())
	require.NoError(t, cmd.Wait())
	return strings.TrimSpace(sc.Text())
}

// attachMode is a way a Tracer attaches (Target.Multi), with the attach
// type its programs are loaded for.
type attachMode struct {
	multi  bool
	attach ebpf.AttachType
}

// attachModes are the ways this kernel has: perf-event uprobes, and
// uprobe_multi links (Linux 6.6+).
func attachModes() []attachMode {
	modes := []attachMode{{false, ebpf.AttachNone}}
	if features.HaveBPFLinkUprobeMulti() == nil {
		modes = append(modes, attachMode{true, ebpf.AttachTraceUprobeMulti})
	}
	return modes
}

// newHits is an array map of n counters for hitCounter, closed when the
// test ends.
func newHits(t *testing.T, n uint32) *ebpf.Map {
	t.Helper()
	hits, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: n})
	require.NoError(t, err)
	t.Cleanup(func() { hits.Close() })
	return hits
}

// hitCounter is a program that adds one to slot of an array map.
func hitCounter(t testing.TB, m *ebpf.Map, slot int32, attach ebpf.AttachType) *ebpf.Program {
	t.Helper()
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type: ebpf.Kprobe, AttachType: attach, License: "GPL",
		Instructions: asm.Instructions{
			asm.StoreImm(asm.RFP, -4, int64(slot), asm.Word),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -4),
			asm.LoadMapPtr(asm.R1, m.FD()),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.Mov.Imm(asm.R1, 1),
			asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
			asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
			asm.Return(),
		},
	})
	if err != nil {
		testutil.SkipOrFail(t, "load a uprobe program: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestTracerPlacedProbesFire: in a program built with CET landing pads,
// the Tracer's probes on the internal function its wrappers call, placed
// past endbr64, fire at every call on entry and on return, and the program
// computes what it does unprobed (a return probe in the wrong place would
// corrupt its stack).
func TestTracerPlacedProbesFire(t *testing.T) {
	testutil.Native(t, "the kernel's BPF and uprobes")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "attaching uprobes needs root")
	}
	exe := buildELF(t, placedSrc, "-O2", "-fcf-protection=full", "-s", "-rdynamic") // inner only through its exported wrappers
	const n = 1000
	run := func(attach func(pid int)) string { return runReady(t, exec.Command(exe, "1000"), attach) }
	want := run(func(int) {})

	for _, mode := range attachModes() {
		multi, attachType := mode.multi, mode.attach
		hits := newHits(t, 2)
		probes := []Probe{
			{Symbol: "inner", CalledFrom: []string{"wrap_int", "wrap_ex"},
				Entry: hitCounter(t, hits, 0, attachType), Return: hitCounter(t, hits, 1, attachType)},
			{Symbol: "wrap_int", Entry: hitCounter(t, hits, 0, attachType)}, // replaced: must not count
		}
		got := run(func(pid int) {
			tr, err := New(Config{Targets: []Target{{Name: "placed", Anchor: "wrap_ex", Probes: probes, Multi: multi}}})
			if err != nil {
				testutil.SkipOrFail(t, "uprobe.New: %v", err)
			}
			t.Cleanup(func() { tr.Close() })
			ok := slices.ContainsFunc(tr.Attachments(), func(a Attachment) bool { return a.PID == pid && a.Target == "placed" })
			require.True(t, ok, "not attached: %+v %+v", tr.Attachments(), tr.Rejections())
			i := slices.IndexFunc(tr.Attachments(), func(a Attachment) bool { return a.PID == pid && a.Target == "placed" })
			assert.Equal(t, []string{"inner"}, tr.Attachments()[i].Symbols)
		})
		assert.Equal(t, want, got, "multi=%v: the probed program computed something else", multi)
		for slot, what := range []string{"entry", "return"} {
			var v uint64
			require.NoError(t, hits.Lookup(int32(slot), &v))
			assert.Equal(t, uint64(2*n), v, "multi=%v: %s hits of inner", multi, what)
		}
	}
}

// TestTracerGoProbesFire: in a Go program (testdata/gotls, built by the
// test, stripped), the probes on crypto/tls.(*Conn).Write and Read's
// entries, placed on their stack checks' JBE, and on Read's returns fire,
// as perf-event uprobes and as one uprobe_multi link. Read's returns are
// probed on each of its RET instructions (every Read that entered
// returned through one), or, with AtCallOf, on its one call of
// runtime.memmove (every Read but one that brought nothing, at the end of
// the stream, copied something out); and the program does what it does
// unprobed (a probe in the middle of an instruction, or a uretprobe, would
// break it). The TLS server is OpenSSL's s_server, so that no other Go
// program's TLS calls count.
func TestTracerGoProbesFire(t *testing.T) {
	testutil.Native(t, "the kernel's BPF and uprobes")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "attaching uprobes needs root")
	}
	exe := buildGo(t, "-s -w")
	addr := startSServer(t)
	run := func(attach func(pid int)) string { return runReady(t, exec.Command(exe, addr), attach) }
	want := run(func(int) {})
	require.Equal(t, "HTTP/1.0 200 ok", want)

	for _, mode := range attachModes() {
		for _, atCall := range []bool{false, true} {
			testGoProbesFire(t, run, want, mode.multi, mode.attach, atCall)
		}
	}
}

// testGoProbesFire runs TestTracerGoProbesFire once: attached as
// uprobe_multi links or not, Read's returns probed on its call of
// runtime.memmove or on its RETs.
func testGoProbesFire(t *testing.T, run func(func(int)) string, want string, multi bool, attachType ebpf.AttachType, atCall bool) {
	label := fmt.Sprintf("multi=%v atCall=%v", multi, atCall)
	hits := newHits(t, 3)
	probes := []Probe{
		{Symbol: "crypto/tls.(*Conn).Write", Entry: hitCounter(t, hits, 0, attachType)},
		{Symbol: "crypto/tls.(*Conn).Read", Entry: hitCounter(t, hits, 1, attachType)},
		{Symbol: "crypto/tls.(*Conn).Read", Entry: hitCounter(t, hits, 2, attachType), AtReturns: true},
	}
	returns := "crypto/tls.(*Conn).Read" + returnsSuffix
	if atCall {
		probes[2].AtCallOf = "runtime.memmove"
		returns = "crypto/tls.(*Conn).Read (call of runtime.memmove)"
	}
	got := run(func(pid int) {
		tr, err := New(Config{Targets: []Target{{Name: "gotls", Anchor: "crypto/tls.(*Conn).Read", Probes: probes, Multi: multi}}})
		if err != nil {
			testutil.SkipOrFail(t, "uprobe.New: %v", err)
		}
		t.Cleanup(func() { tr.Close() })
		i := slices.IndexFunc(tr.Attachments(), func(a Attachment) bool { return a.PID == pid && a.Target == "gotls" })
		require.GreaterOrEqual(t, i, 0, "not attached: %+v %+v", tr.Attachments(), tr.Rejections())
		assert.ElementsMatch(t, []string{"crypto/tls.(*Conn).Write", "crypto/tls.(*Conn).Read", returns},
			tr.Attachments()[i].Symbols)
	})
	assert.Equal(t, want, got, "%s: the probed program did something else", label)
	var v [3]uint64
	for slot := range v {
		require.NoError(t, hits.Lookup(int32(slot), &v[slot]))
	}
	assert.Equal(t, uint64(1), v[0], "%s: Write's entry hits", label)
	assert.Positive(t, v[1], "%s: Read's entry hits", label)
	if !atCall {
		assert.Equal(t, v[1], v[2], "%s: Read's returns, one per entry", label)
		return
	}
	// io.ReadAll reads until EOF: its last Read copies nothing out,
	// unless the close-notify alert came with the last bytes and that
	// Read returned them with EOF.
	assert.Positive(t, v[2], "%s: Read's copies out", label)
	assert.Contains(t, []uint64{v[1] - 1, v[1]}, v[2], "%s: Read's copies out, one per Read that brought bytes", label)
}

// startSServer runs OpenSSL's s_server with a certificate of its own on a
// loopback port until the test ends, answering each request with a page.
func startSServer(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	key, cert := dir+"/key.pem", dir+"/cert.pem"
	out, err := exec.Command("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
		"-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=localhost").CombinedOutput()
	require.NoError(t, err, "openssl req: %s", out)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command("openssl", "s_server", "-accept", addr, "-cert", cert, "-key", key, "-www", "-quiet")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ok := false
	for range 100 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			ok = true
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.True(t, ok, "s_server never listened on %s", addr)
	return addr
}
