package uprobe

import (
	"debug/elf"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// buildGo builds testdata/gotls with the machine's Go and ldflags.
func buildGo(t *testing.T, ldflags string) string {
	t.Helper()
	return buildGoWith(t, "local", ldflags)
}

// buildGoWith builds testdata/gotls with the Go toolchain (GOTOOLCHAIN:
// "local" is the machine's) and ldflags.
func buildGoWith(t *testing.T, toolchain, ldflags string) string {
	t.Helper()
	return testutil.BuildGo(t, "testdata/gotls", toolchain, "gotls", ldflags)
}

// buildGoFor builds testdata/gotls for goarch (GOARCH) with the Go
// toolchain and ldflags.
func buildGoFor(t *testing.T, goarch, toolchain, ldflags string) string {
	t.Helper()
	return testutil.BuildGoFor(t, goarch, "testdata/gotls", toolchain, "gotls", ldflags)
}

// A Go program's crypto/tls methods are found by symbol and, stripped of
// its symbols, in its pclntab, at the same places; a probe on Read's
// returns goes on each of its RET instructions, or on its one call of
// runtime.memmove (the copy of the plaintext out), the same in both
// builds; the entry probes go on the stack check's conditional branch.
// For x86-64 and arm64 builds alike, wherever the test runs: the rules
// are the file's instruction set's.
func TestGoFuncs(t *testing.T) {
	for _, goarch := range []string{"amd64", "arm64"} {
		t.Run(goarch, func(t *testing.T) { testGoFuncs(t, goarch) })
	}
}

// goInsns are what TestGoFuncs expects at each kind of probe site, by
// GOARCH: the instruction at code[off:] is a return, a direct call, the
// stack check's branch (JBE, B.LS), which sits that many bytes past the
// function's start.
var goInsns = map[string]struct {
	ret, call, check func(code []byte) bool
	checkAt          []uint64
}{
	"amd64": {
		ret:     func(code []byte) bool { return code[0] == 0xc3 },
		call:    func(code []byte) bool { return code[0] == 0xe8 }, // CALL rel32
		check:   func(code []byte) bool { return code[0] == 0x0f || code[0] == 0x76 },
		checkAt: []uint64{4, 9},
	},
	"arm64": {
		ret:     func(code []byte) bool { w, _ := arm64Word(code); return w == 0xd65f03c0 },
		call:    func(code []byte) bool { w, _ := arm64Word(code); return w>>26 == 0x25 }, // BL
		check:   func(code []byte) bool { w, _ := arm64Word(code); return w&0xff00001f == 0x54000009 },
		checkAt: []uint64{8, 12},
	},
}

func testGoFuncs(t *testing.T, goarch string) {
	full := buildGoFor(t, goarch, "local", "")
	stripped := buildGoFor(t, goarch, "local", "-s -w")
	wanted := map[string]bool{"crypto/tls.(*Conn).Read": true, "crypto/tls.(*Conn).Write": true, "crypto/tls.(*Conn).Close": true}
	insn := goInsns[goarch]

	ef, err := elf.Open(stripped)
	require.NoError(t, err)
	require.Nil(t, ef.Section(".symtab"), "the stripped build has no symbol table")
	require.Equal(t, map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[goarch], ef.Machine)
	ef.Close()

	var rets, calls [][]uint64
	var addrs []map[string]uint64
	for _, exe := range []string{full, stripped} {
		a, err := resolve(exe, wanted, true)
		require.NoError(t, err)
		require.Len(t, a, len(wanted), "%s: %v", exe, a)
		addrs = append(addrs, a)

		ret, err := goSitesOf(exe, Probe{Symbol: "crypto/tls.(*Conn).Read", Cookie: 1, AtReturns: true})
		require.NoError(t, err)
		require.NotEmpty(t, ret.offsets)
		require.Equal(t, goSite{ret.offsets, 1, "crypto/tls.(*Conn).Read" + returnsSuffix}, ret)
		code, err := os.ReadFile(exe)
		require.NoError(t, err)
		for _, off := range ret.offsets {
			require.True(t, insn.ret(code[off:]), "%s: no RET at %#x", exe, off)
			require.Greater(t, off, a["crypto/tls.(*Conn).Read"], "a RET past the function's start")
		}
		rets = append(rets, ret.offsets)

		// The call of runtime.memmove is a direct call inside Read,
		// where the kernel emulates the probe's instruction.
		call, err := goSitesOf(exe, Probe{Symbol: "crypto/tls.(*Conn).Read", Cookie: 1, AtReturns: true,
			AtCallOf: "runtime.memmove", CallCookie: 2})
		require.NoError(t, err)
		require.Len(t, call.offsets, 1, "%s: Read's calls of runtime.memmove", exe)
		require.Equal(t, goSite{call.offsets, 2, "crypto/tls.(*Conn).Read (call of runtime.memmove)"}, call)
		require.True(t, insn.call(code[call.offsets[0]:]), "%s: no direct call at %#x", exe, call.offsets[0])
		require.Greater(t, call.offsets[0], a["crypto/tls.(*Conn).Read"])
		require.Less(t, call.offsets[0], slices.Max(ret.offsets), "the call inside Read")
		calls = append(calls, call.offsets)

		// The call is in the code of bytes.(*Reader).Read, inlined.
		inlined, err := goSitesOf(exe, Probe{Symbol: "crypto/tls.(*Conn).Read", Cookie: 1, AtReturns: true,
			AtCallOf: "runtime.memmove", CallCookie: 2, CallFile: "bytes/reader.go"})
		require.NoError(t, err)
		require.Equal(t, call, inlined, "the call from bytes/reader.go")

		// A function Read does not call, or not from that file: its RETs,
		// as without AtCallOf.
		for _, p := range []Probe{
			{AtCallOf: "crypto/tls.(*Conn).Close"},
			{AtCallOf: "runtime.memmove", CallFile: "bytes/buffer.go"},
		} {
			p.Symbol, p.Cookie, p.AtReturns, p.CallCookie = "crypto/tls.(*Conn).Read", 1, true, 2
			none, err := goSitesOf(exe, p)
			require.NoError(t, err)
			require.Equal(t, ret, none, "no call of %s from %q in Read", p.AtCallOf, p.CallFile)
		}

		// The entry probes sit on the stack check's branch.
		var probes []Probe
		for name := range wanted {
			probes = append(probes, Probe{Symbol: name})
		}
		placed, err := locate(exe, probes, true)
		require.NoError(t, err)
		require.Len(t, placed, len(wanted))
		for name, off := range placed {
			require.Contains(t, insn.checkAt, off-a[name], "%s placed %d bytes past its start", name, off-a[name])
			require.True(t, insn.check(code[off:]), "%s: no stack check's branch where its probe goes", name)
		}
	}
	require.Equal(t, addrs[0], addrs[1], "the symbol table and the pclntab agree")
	require.Equal(t, rets[0], rets[1])
	require.Equal(t, calls[0], calls[1])

	_, err = goSitesOf("/bin/true", Probe{Symbol: "crypto/tls.(*Conn).Read", AtReturns: true, AtCallOf: "runtime.memmove"})
	require.ErrorIs(t, err, errNotGo, "a C program")
}

func TestCallInstructions(t *testing.T) {
	const entry, target = 0x1000, 0x2000
	// call rel32 from +off to target: rel = target - (entry + off + 5).
	callTo := func(off int, to uint64) []byte {
		rel := uint32(int32(int64(to) - int64(entry+off+5)))
		return []byte{0xe8, byte(rel), byte(rel >> 8), byte(rel >> 16), byte(rel >> 24)}
	}
	cat := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	for _, tt := range []struct {
		name string
		code []byte
		want []uint64
		err  bool
	}{
		{"one call", cat([]byte{0x90}, callTo(1, target), []byte{0xc3}), []uint64{1}, false},
		{"two calls, one elsewhere", cat(callTo(0, target), callTo(5, 0x3000), callTo(10, target)), []uint64{0, 10}, false},
		// call rax, and call [rip+0]: indirect, not this function.
		{"indirect calls", []byte{0xff, 0xd0, 0xff, 0x15, 0, 0, 0, 0, 0xc3}, nil, false},
		// The E8 byte inside mov eax, 0x000020e8 is no call.
		{"an E8 byte inside an instruction", []byte{0xb8, 0xe8, 0x20, 0, 0, 0xc3}, nil, false},
		{"none", []byte{0x90, 0xc3}, nil, false},
		{"code that does not decode", cat(callTo(0, target), []byte{0x0f, 0xff}), nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := callInstructions(tt.code, entry, target)
			if tt.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestRetInstructions(t *testing.T) {
	for _, tt := range []struct {
		name string
		code []byte
		want []uint64
		err  bool
	}{
		{"one RET, then INT3 padding", []byte{0x48, 0x89, 0xc3, 0xc3, 0xcc, 0xcc}, []uint64{3}, false},
		// mov rbp, rsp; ret; sub rsp, 8; ret 8 (RET imm16 is a RET too)
		{"two RETs", []byte{0x48, 0x89, 0xe5, 0xc3, 0x48, 0x83, 0xec, 0x08, 0xc2, 0x08, 0x00}, []uint64{3, 8}, false},
		// The 0xc3 byte inside mov ebx, eax is no RET.
		{"a C3 byte inside an instruction", []byte{0x89, 0xc3, 0x90, 0xc3}, []uint64{3}, false},
		{"no RET", []byte{0x90, 0x90}, nil, true},
		{"code that does not decode", []byte{0x0f, 0xff}, nil, true},
		{"an instruction cut at the end", []byte{0xc3, 0x48, 0x8b}, nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := retInstructions(tt.code)
			if tt.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// A Go function's entry probe goes on its stack bound check's JBE, which
// the kernel emulates, in either form of the check; a function that does
// not start with one keeps its start.
func TestPastGoStackCheck(t *testing.T) {
	for _, tt := range []struct {
		name string
		code []byte
		want uint64
	}{
		// CMPQ SP, 0x10(R14); JBE rel32; PUSHQ BP
		{"small frame", []byte{0x49, 0x3b, 0x66, 0x10, 0x0f, 0x86, 0x7a, 0x03, 0x00, 0x00, 0x55}, 4},
		// LEAQ -0x48(SP), R12; CMPQ R12, 0x10(R14); JBE rel32
		{"large frame", []byte{0x4c, 0x8d, 0x64, 0x24, 0xb8, 0x4d, 0x3b, 0x66, 0x10, 0x0f, 0x86, 0x93, 0x07, 0x00, 0x00}, 9},
		// CMPQ SP, 0x10(R14); JBE rel8
		{"a short jump", []byte{0x49, 0x3b, 0x66, 0x10, 0x76, 0x20}, 4},
		// PUSHQ BP; MOVQ SP, BP: no check (a C function, or Go's NOSPLIT)
		{"no check", []byte{0x55, 0x48, 0x89, 0xe5}, 0},
		// CMPQ SP, 0x10(R14) then a JNE: not the check
		{"another jump", []byte{0x49, 0x3b, 0x66, 0x10, 0x75, 0x20}, 0},
		// LEAQ into RAX, an argument register: not the check
		{"a LEA into an argument register", []byte{0x48, 0x8d, 0x44, 0x24, 0xb8, 0x4d, 0x3b, 0x66, 0x10, 0x76, 0x20}, 0},
		{"cut short", []byte{0x49, 0x3b}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, pastGoStackCheck(tt.code))
		})
	}
}

// A probe on a function's returns keeps its own cookie: the entry probe
// on the same function gets its own (one program may take both, told
// apart by the cookie).
func TestCookiesBesideReturns(t *testing.T) {
	probes := []Probe{
		{Symbol: "f", Cookie: 2},
		{Symbol: "f", Cookie: 3, AtReturns: true},
		{Symbol: "g", Cookie: 4},
	}
	cookies, err := cookiesOf("", probes, map[string]uint64{"f": 16, "g": 32})
	require.NoError(t, err)
	require.Equal(t, map[string]uint64{"f": 2, "g": 4}, cookies)
}
