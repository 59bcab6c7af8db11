package uprobe

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/arch/x86/x86asm"

	"github.com/xpuscope/xpuscope/internal/elfsym"
)

// The wrappers' first bytes, from objdump of Debian 12's libssl.so.3
// (OpenSSL 3.0), at their addresses there.
var (
	// SSL_read at 0x35430: sub $0x18,%rsp; the stack protector; test
	// %edx,%edx; js (the error path, after the return); mov; movslq;
	// call 0x35290 (ssl_read_internal).
	sslRead = []byte{
		0x48, 0x83, 0xec, 0x18,
		0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0x00, 0x00, 0x00,
		0x48, 0x89, 0x44, 0x24, 0x08,
		0x31, 0xc0,
		0x85, 0xd2,
		0x78, 0x2f,
		0x48, 0x89, 0xe1,
		0x48, 0x63, 0xd2,
		0xe8, 0x3d, 0xfe, 0xff, 0xff,
		0x85, 0xc0,
	}
	// SSL_read_ex at 0x354c0: sub $0x8,%rsp; call 0x35290.
	sslReadEx = []byte{0x48, 0x83, 0xec, 0x08, 0xe8, 0xc7, 0xfd, 0xff, 0xff, 0x31, 0xd2}
)

func TestFirstCall(t *testing.T) {
	withEndbr := func(b []byte) []byte { return append(bytes.Clone(endbr64), b...) }
	for _, tc := range []struct {
		name   string
		code   []byte
		vaddr  uint64
		target uint64
		found  bool
	}{
		{"SSL_read: past a conditional jump", sslRead, 0x35430, 0x35290, true},
		{"SSL_read_ex", sslReadEx, 0x354c0, 0x35290, true},
		{"after endbr64", withEndbr([]byte{0xe8, 0x00, 0x00, 0x00, 0x00}), 0x1000, 0x1009, true},
		{"backwards", []byte{0xe8, 0xfb, 0xff, 0xff, 0xff}, 0x1000, 0x1000, true},
		{"return first", []byte{0x31, 0xc0, 0xc3, 0xe8, 0, 0, 0, 0}, 0x1000, 0, false},
		{"jump first", []byte{0xeb, 0x05, 0xe8, 0, 0, 0, 0}, 0x1000, 0, false},
		{"tail call through a register", []byte{0xff, 0xe0}, 0x1000, 0, false},
		{"indirect call", []byte{0xff, 0xd0, 0xe8, 0, 0, 0, 0}, 0x1000, 0, false},
		{"cut short in the call", sslReadEx[:7], 0x354c0, 0, false},
		{"no call in reach", bytes.Repeat([]byte{0x90}, wrapperBytes), 0x1000, 0, false},
		{"empty", nil, 0x1000, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := firstCall(tc.code, tc.vaddr)
			assert.Equal(t, tc.found, ok)
			assert.Equal(t, tc.target, got)
		})
	}
}

func TestPastEndbr(t *testing.T) {
	assert.Equal(t, uint64(4), pastEndbr([]byte{0xf3, 0x0f, 0x1e, 0xfa, 0x55}))
	assert.Equal(t, uint64(0), pastEndbr([]byte{0x55}))
	assert.Equal(t, uint64(0), pastEndbr([]byte{0xf3, 0x0f, 0x1e}), "cut short")
	assert.Equal(t, uint64(0), pastEndbr([]byte{0xf3, 0x0f, 0x1e, 0xfb}), "endbr32")
}

// wrapperSrc has OpenSSL's shape: an internal function that two exported
// wrappers call first, and one exported function that calls something
// else first.
const wrapperSrc = `
#include <stddef.h>
__attribute__((visibility("hidden"), noinline)) int inner(void *s, void *buf, size_t n, size_t *done) {
	if (!s) return -1;
	*done = n;
	return ((char *)buf)[0] + 1;
}
__attribute__((visibility("hidden"), noinline)) int other(void *s) { return s != 0; }
int wrap_int(void *s, void *buf, int n) {
	size_t done;
	if (n < 0) return -1;
	int r = inner(s, buf, (size_t)n, &done);
	return r > 0 ? (int)done : r;
}
int wrap_ex(void *s, void *buf, size_t n, size_t *done) {
	int r = inner(s, buf, n, done);
	return r < 0 ? 0 : r;
}
int wrap_other(void *s, void *buf, size_t n, size_t *done) {
	int r = other(s);
	return r + inner(s, buf, n, done);
}
`

// TestLocateCallee: the internal function of a library built with gcc
// (with and without CET landing pads) is found through its wrappers when
// the symbol tables lack it, and takes their place.
func TestLocateCallee(t *testing.T) {
	for _, cet := range []bool{false, true} {
		flags := []string{"-shared", "-fPIC", "-O2", "-fcf-protection=none"}
		if cet {
			flags[3] = "-fcf-protection=full"
		}
		lib := buildELF(t, wrapperSrc, flags...)
		table, err := elfsym.Open(lib, elfsym.Limits{})
		require.NoError(t, err)
		innerOff, ok := table.Address("inner")
		require.True(t, ok)
		code, err := os.ReadFile(lib)
		require.NoError(t, err)
		hasEndbr := bytes.HasPrefix(code[innerOff:], endbr64)
		require.Equal(t, cet, hasEndbr, "gcc -fcf-protection")
		want := innerOff + pastEndbr(code[innerOff:])

		probe := func(calledFrom ...string) []Probe {
			return []Probe{{Symbol: "inner", CalledFrom: calledFrom}, {Symbol: "wrap_int"}, {Symbol: "wrap_ex"}, {Symbol: "wrap_other"}}
		}
		// .dynsym only: inner is hidden, so it is found through the calls.
		got, err := locateOffsets(lib, probe("wrap_int", "wrap_ex"), false)
		require.NoError(t, err)
		assert.Equal(t, want, got["inner"], "cet=%v", cet)
		assert.NotContains(t, got, "wrap_int", "replaced by inner")
		assert.NotContains(t, got, "wrap_ex", "replaced by inner")
		assert.Contains(t, got, "wrap_other")

		// The wrappers disagree: inner is not placed, they keep their own.
		got, err = locateOffsets(lib, probe("wrap_int", "wrap_other"), false)
		require.NoError(t, err)
		assert.NotContains(t, got, "inner")
		assert.Contains(t, got, "wrap_int")
		assert.Contains(t, got, "wrap_other")

		// A wrapper the file lacks: nothing is guessed from the others.
		got, err = locateOffsets(lib, probe("wrap_int", "wrap_missing"), false)
		require.NoError(t, err)
		assert.NotContains(t, got, "inner")

		// .symtab has inner: found by name, at the same place.
		got, err = locateOffsets(lib, probe("wrap_int", "wrap_ex"), true)
		require.NoError(t, err)
		assert.Equal(t, want, got["inner"])

		// Every probe goes past endbr64, the plain ones too.
		wrapOff, ok := table.Address("wrap_other")
		require.True(t, ok)
		assert.Equal(t, wrapOff+pastEndbr(code[wrapOff:]), got["wrap_other"])
	}
}

// TestLocateLibssl: in the real OpenSSL of the test machine (Debian's
// libssl3), ssl_read_internal and ssl_write_internal are found through
// their exported wrappers, and start with instructions the kernel emulates
// at a probe, where the wrappers do not.
func TestLocateLibssl(t *testing.T) {
	const lib = "/usr/lib/x86_64-linux-gnu/libssl.so.3"
	probes := []Probe{
		{Symbol: "ssl_write_internal", CalledFrom: []string{"SSL_write", "SSL_write_ex"}},
		{Symbol: "ssl_read_internal", CalledFrom: []string{"SSL_read", "SSL_read_ex"}},
		{Symbol: "SSL_write"}, {Symbol: "SSL_write_ex"}, {Symbol: "SSL_read"}, {Symbol: "SSL_read_ex"},
	}
	got, err := locateOffsets(lib, probes, false)
	require.NoError(t, err, "libssl3 is installed by make test")
	require.Len(t, got, 2, "%v", got)
	code, err := os.ReadFile(lib)
	require.NoError(t, err)
	emulated := func(off uint64) bool {
		in, err := x86asm.Decode(code[off:], 64)
		require.NoError(t, err)
		return in.Op == x86asm.PUSH || in.Op == x86asm.NOP || in.Op == x86asm.CALL || in.Op == x86asm.JMP
	}
	for _, name := range []string{"ssl_write_internal", "ssl_read_internal"} {
		assert.True(t, emulated(got[name]), name)
	}
	wrappers, err := resolve(lib, map[string]bool{"SSL_write": true, "SSL_write_ex": true, "SSL_read": true, "SSL_read_ex": true}, false)
	require.NoError(t, err)
	require.Len(t, wrappers, 4)
	for name, off := range wrappers {
		assert.False(t, emulated(off), "%s: if the wrappers' first instruction is emulated, the detour buys nothing", name)
	}
}

// FuzzFirstCall: any bytes at any address decode without a panic, in
// bounded steps.
func FuzzFirstCall(f *testing.F) {
	f.Add(sslRead, uint64(0x35430))
	f.Add(sslReadEx, uint64(0x354c0))
	f.Add(append(bytes.Clone(endbr64), 0xe8, 0xff, 0xff, 0xff, 0x7f), uint64(1<<63))
	f.Fuzz(func(t *testing.T, code []byte, vaddr uint64) {
		firstCall(code, vaddr)
	})
}

// FuzzLocateELF: arbitrary files never panic, and nothing but the probes
// asked for is located.
func FuzzLocateELF(f *testing.F) {
	if b, err := os.ReadFile("/usr/lib/x86_64-linux-gnu/libssl.so.3"); err == nil {
		f.Add(b[:min(len(b), 1<<16)])
	}
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	probes := []Probe{{Symbol: "ssl_read_internal", CalledFrom: []string{"SSL_read", "SSL_read_ex"}}, {Symbol: "SSL_free"}}
	f.Fuzz(func(t *testing.T, b []byte) {
		placed, err := locateELF(bytes.NewReader(b), probes, true)
		if got := placed.offsets; err == nil && len(got) > len(probes) {
			require.LessOrEqual(t, len(got), len(probes), "located %d probes, asked for %d", len(got), len(probes))
		}
	})
}

// locateOffsets is the file offsets locate places probes at.
func locateOffsets(path string, probes []Probe, symtab bool) (map[string]uint64, error) {
	p, err := locate(path, probes, symtab)
	return p.offsets, err
}
