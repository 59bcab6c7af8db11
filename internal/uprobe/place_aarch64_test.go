package uprobe

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/elfsym"
	"github.com/xpuscope/xpuscope/internal/testutil"
)

// assembleARM64 assembles lines, one instruction (or directive) each,
// with the arm64 cross compiler's assembler (ARMv8.5: PAC, BTI and the
// atomics), and returns the object's .text: the encodings are the
// assembler's, never typed by hand.
func assembleARM64(t *testing.T, lines ...string) []byte {
	t.Helper()
	cc := testutil.CC(t, "arm64")
	dir := t.TempDir()
	src := filepath.Join(dir, "x.S")
	require.NoError(t, os.WriteFile(src, []byte(".text\n"+strings.Join(lines, "\n")+"\n"), 0o644))
	obj := filepath.Join(dir, "x.o")
	out, err := exec.Command(cc, "-march=armv8.5-a", "-c", "-o", obj, src).CombinedOutput()
	require.NoError(t, err, "%s", out)
	ef, err := elf.Open(obj)
	require.NoError(t, err)
	defer ef.Close()
	text, err := ef.Section(".text").Data()
	require.NoError(t, err)
	return text
}

// TestArm64KernelStep: what the arm64 kernel does at a uprobe on each
// instruction (arch/arm64/kernel/probes/decode-insn.c), for instructions
// as the assembler encodes them.
func TestArm64KernelStep(t *testing.T) {
	cases := []struct {
		insn string
		want kernelStep
	}{
		// Emulated: the branches, ADR and ADRP.
		{"b.ls 1f", stepEmulated}, {"b.ne 1f", stepEmulated}, {"cbz x0, 1f", stepEmulated},
		{"cbnz w1, 1f", stepEmulated}, {"tbnz w2, #31, 1f", stepEmulated}, {"tbz x3, #3, 1f", stepEmulated},
		{"b 1f", stepEmulated}, {"bl 1f", stepEmulated}, {"br x16", stepEmulated}, {"blr x16", stepEmulated},
		{"ret", stepEmulated}, {"ret x3", stepEmulated}, {"adr x0, 1f", stepEmulated}, {"adrp x0, 1f", stepEmulated},
		// Out of line: most instructions, the listed hints (the landing
		// pads and the signing of the return address among them),
		// barriers, MRS of any register but DAIF, load-acquire (not
		// exclusive), and the ARMv8.1 atomics.
		{"nop", stepOutOfLine}, {"bti c", stepOutOfLine}, {"bti jc", stepOutOfLine}, {"paciasp", stepOutOfLine},
		{"pacibsp", stepOutOfLine}, {"xpaclri", stepOutOfLine},
		{"stp x29, x30, [sp, #-16]!", stepOutOfLine}, {"mov x29, sp", stepOutOfLine},
		{"ldr x16, [x28, #16]", stepOutOfLine}, {"sub x17, sp, #0x50", stepOutOfLine}, {"cmp sp, x16", stepOutOfLine},
		{"dmb ish", stepOutOfLine}, {"mrs x0, nzcv", stepOutOfLine}, {"ldar x0, [x1]", stepOutOfLine},
		{"casal x0, x1, [x2]", stepOutOfLine}, {"ldaddal x0, x1, [x2]", stepOutOfLine},
		// Refused: literal loads, exclusives, exceptions, MSR, MRS of
		// DAIF, the authenticated branches and the other hints.
		{"ldr x0, 1f", stepRefused}, {"ldr w0, 1f", stepRefused}, {"ldrsw x0, 1f", stepRefused},
		{"prfm pldl1keep, 1f", stepRefused}, {"ldr q0, 1f", stepRefused}, {"ldr d0, 1f", stepRefused},
		{"ldxr x0, [x1]", stepRefused}, {"stxr w2, x0, [x1]", stepRefused}, {"ldaxr w0, [x1]", stepRefused},
		{"stlxr w2, w0, [x1]", stepRefused}, {"ldxp x0, x1, [x2]", stepRefused},
		{"svc #0", stepRefused}, {"brk #0", stepRefused}, {"hlt #0", stepRefused},
		{"msr nzcv, x0", stepRefused}, {"msr daifset, #2", stepRefused}, {"mrs x0, daif", stepRefused},
		{"retaa", stepRefused}, {"braa x0, x1", stepRefused}, {"blraaz x0", stepRefused},
		{"autiasp", stepRefused}, {"yield", stepRefused}, {"wfe", stepRefused}, {"csdb", stepRefused},
	}
	var lines []string
	for _, c := range cases {
		lines = append(lines, c.insn)
	}
	text := assembleARM64(t, append(lines, "1: .quad 0")...)
	words := map[string]uint32{}
	for i, c := range cases {
		w := binary.LittleEndian.Uint32(text[4*i:])
		words[c.insn] = w
		assert.Equal(t, c.want, arm64KernelStep(w), "%s (%08x)", c.insn, w)
	}
	for insn, bti := range map[string]bool{"bti c": true, "bti jc": true, "paciasp": false, "nop": false, "autiasp": false} {
		assert.Equal(t, bti, isBTI(words[insn]), insn)
	}
}

func TestPastBTI(t *testing.T) {
	code := assembleARM64(t, "bti c", "cbz x0, 1f", "paciasp", "bti j", "1: nop")
	assert.Equal(t, uint64(4), pastBTI(code))
	assert.Equal(t, uint64(0), pastBTI(code[4:]), "cbz")
	assert.Equal(t, uint64(0), pastBTI(code[8:]), "paciasp signs the return address: the probe stays before it")
	assert.Equal(t, uint64(4), pastBTI(code[12:]), "bti j")
	assert.Equal(t, uint64(0), pastBTI(code[:3]), "cut short")
}

func TestFirstCallARM64(t *testing.T) {
	const vaddr = 0x10000
	for _, tc := range []struct {
		name  string
		code  []string
		at    int // the callee's word, -1 when none is found
		found bool
	}{
		// OpenSSL's shape, as gcc -mbranch-protection=standard builds a
		// wrapper: a landing pad, a check of the count, the frame, the
		// call.
		{"past a conditional branch", []string{"bti c", "tbnz w2, #31, 2f", "paciasp", "stp x29, x30, [sp, #-32]!",
			"sxtw x2, w2", "mov x29, sp", "bl 1f", "2: ret", "1: ret"}, 8, true},
		{"cbz falls through", []string{"cbz x0, 2f", "bl 1f", "2: ret", "1: ret"}, 3, true},
		{"b.cond falls through", []string{"cmp x0, #0", "b.eq 2f", "bl 1f", "2: ret", "1: ret"}, 4, true},
		{"backwards", []string{"1: bl 1b"}, 0, true},
		{"return first", []string{"ret", "bl 1f", "1: ret"}, -1, false},
		{"branch first", []string{"b 2f", "bl 1f", "2: nop", "1: ret"}, -1, false},
		{"tail call through a register", []string{"br x1", "bl 1f", "1: ret"}, -1, false},
		{"indirect call", []string{"blr x1", "bl 1f", "1: ret"}, -1, false},
		{"an undecoded word", []string{".inst 0", "bl 1f", "1: ret"}, -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code := assembleARM64(t, tc.code...)
			got, ok := firstCallARM64(code, vaddr)
			assert.Equal(t, tc.found, ok)
			if tc.found {
				assert.Equal(t, uint64(vaddr+4*tc.at), got)
			}
		})
	}
	long := assembleARM64(t, append(strings.Split(strings.Repeat("nop,", wrapperInsns), ","), "bl .")...)
	_, ok := firstCallARM64(long, vaddr)
	assert.False(t, ok, "no call in reach")
	_, ok = firstCallARM64(nil, vaddr)
	assert.False(t, ok, "empty")
}

// A Go function's entry probe goes on its stack bound check's B.LS, as
// the Go compiler lays the check out for a small and a large frame (and
// TestGoFuncs finds it in a real build); anything else keeps the start.
func TestPastGoStackCheckARM64(t *testing.T) {
	for _, tt := range []struct {
		name string
		code []string
		want uint64
	}{
		{"small frame", []string{"ldr x16, [x28, #16]", "cmp sp, x16", "b.ls 1f", "1: nop"}, 8},
		{"large frame", []string{"ldr x16, [x28, #16]", "sub x17, sp, #0x50", "cmp x17, x16", "b.ls 1f", "1: nop"}, 12},
		{"the system stack's guard", []string{"ldr x16, [x28, #24]", "cmp sp, x16", "b.ls 1f", "1: nop"}, 8},
		{"a C function", []string{"paciasp", "stp x29, x30, [sp, #-16]!", "mov x29, sp"}, 0},
		{"into an argument register", []string{"ldr x0, [x28, #16]", "cmp sp, x0", "b.ls 1f", "1: nop"}, 0},
		{"a bound in an argument register", []string{"ldr x16, [x28, #16]", "sub x1, sp, #0x50", "cmp x1, x16", "b.ls 1f", "1: nop"}, 0},
		{"another condition", []string{"ldr x16, [x28, #16]", "cmp sp, x16", "b.ne 1f", "1: nop"}, 0},
		{"not g", []string{"ldr x16, [x27, #16]", "cmp sp, x16", "b.ls 1f", "1: nop"}, 0},
		{"another field of g", []string{"ldr x16, [x28, #8]", "cmp sp, x16", "b.ls 1f", "1: nop"}, 0},
		{"compared with another register", []string{"ldr x16, [x28, #16]", "cmp sp, x17", "b.ls 1f", "1: nop"}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code := assembleARM64(t, tt.code...)
			require.Equal(t, tt.want, pastGoStackCheckARM64(code))
			require.Equal(t, uint64(0), pastGoStackCheckARM64(code[:len(code)-8]), "cut short")
		})
	}
}

func TestRetInstructionsARM64(t *testing.T) {
	for _, tt := range []struct {
		name string
		code []string
		want []uint64
		err  string
	}{
		{"one RET, then zero padding", []string{"mov x0, x1", "ret", ".word 0", ".word 0"}, []uint64{4}, ""},
		{"two RETs", []string{"cbz x0, 1f", "ret", "1: mov x0, #1", "ret"}, []uint64{4, 12}, ""},
		// A constant pool among the instructions: its words are data,
		// even those that read as a RET.
		{"a literal that reads as a RET", []string{"ldr x0, 1f", "ret", ".p2align 3", "1: .inst 0xd65f03c0", ".inst 0xd65f03c0", "ret"},
			[]uint64{4, 16}, ""},
		{"a word the decoder does not know", []string{".inst 0x88fbfc86", "ret"}, []uint64{4}, ""},
		{"RET through another register", []string{"ret x3"}, []uint64{0}, ""},
		{"an authenticated return", []string{"ret", "retaa"}, nil, "RETAA or RETAB"},
		{"no RET", []string{"nop", "b ."}, nil, "no RET"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := retInstructionsARM64(assembleARM64(t, tt.code...))
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
	_, err := retInstructionsARM64([]byte{0xc0, 0x03, 0x5f})
	require.Error(t, err, "code cut inside a word")
}

func TestCallInstructionsARM64(t *testing.T) {
	const entry = 0x1000
	code := assembleARM64(t, "bl 1f", "bl 2f", "blr x1", "b 1f", "bl 1f", "ret", "1: ret", "2: ret")
	got, err := callInstructionsARM64(code, entry, entry+6*4)
	require.NoError(t, err)
	require.Equal(t, []uint64{0, 16}, got, "the BLs of the function at +0x18, not its B or the other calls")
	got, err = callInstructionsARM64(code, entry, 0x9000)
	require.NoError(t, err)
	require.Empty(t, got)
}

// TestLocateCalleeARM64 is TestLocateCallee for a library built by the
// arm64 cross compiler, with and without BTI landing pads and return
// address signing (Debian builds arm64 with -mbranch-protection=standard).
func TestLocateCalleeARM64(t *testing.T) {
	cc := testutil.CC(t, "arm64")
	for _, bp := range []string{"none", "standard"} {
		t.Run(bp, func(t *testing.T) {
			lib := buildELFWith(t, cc, wrapperSrc, "-shared", "-fPIC", "-O2", "-mbranch-protection="+bp)
			table, err := elfsym.Open(lib, elfsym.Limits{})
			require.NoError(t, err)
			code, err := os.ReadFile(lib)
			require.NoError(t, err)
			at := func(name string) uint64 {
				off, ok := table.Address(name)
				require.True(t, ok, name)
				return off
			}
			word := func(off uint64) uint32 { return binary.LittleEndian.Uint32(code[off:]) }
			inner := at("inner")
			require.Equal(t, bp == "standard", isBTI(word(inner)), "gcc -mbranch-protection=%s: inner's landing pad", bp)
			want := inner + pastBTI(code[inner:])
			// inner is a leaf: past its landing pad is a CBZ, which the
			// kernel emulates, where the pad it would step out of line.
			require.Equal(t, stepEmulated, arm64KernelStep(word(want)), "%08x", word(want))

			probes := []Probe{{Symbol: "inner", CalledFrom: []string{"wrap_int", "wrap_ex"}}, {Symbol: "wrap_int"},
				{Symbol: "wrap_ex"}, {Symbol: "wrap_other"}}
			got, err := locate(lib, probes, false)
			require.NoError(t, err)
			assert.Equal(t, want, got["inner"], "inner, through its wrappers' BLs")
			assert.NotContains(t, got, "wrap_int", "replaced by inner")
			assert.NotContains(t, got, "wrap_ex", "replaced by inner")
			other := at("wrap_other")
			assert.Equal(t, other+pastBTI(code[other:]), got["wrap_other"])
			if bp == "standard" {
				// wrap_other signs its return address first: its probe
				// stays on the PACIASP, where a return probe still
				// works.
				assert.Equal(t, uint32(0xd503233f), word(got["wrap_other"]), "paciasp")
			}

			got, err = locate(lib, probes, true)
			require.NoError(t, err)
			assert.Equal(t, want, got["inner"], ".symtab has inner: the same place")
		})
	}
}

// A probe on an instruction the kernel refuses is left out, the others
// in the file placed: attached, it would fail the file's uprobe_multi
// link whole.
func TestLocateLeavesOutRefused(t *testing.T) {
	cc := testutil.CC(t, "arm64")
	src := `
__asm__(".globl exclusive\n.type exclusive, %function\nexclusive:\n\tldaxr x0, [x0]\n\tret\n.size exclusive, .-exclusive\n");
__asm__(".globl literal\n.type literal, %function\nliteral:\n\tbti c\n\tldr x0, 1f\n\tret\n1: .quad 7\n.size literal, .-literal\n");
int plain(int x) { return x + 1; }
`
	lib := buildELFWith(t, cc, src, "-shared", "-fPIC", "-O2")
	got, err := locate(lib, []Probe{{Symbol: "exclusive"}, {Symbol: "literal"}, {Symbol: "plain"}}, false)
	require.NoError(t, err)
	assert.Equal(t, []string{"plain"}, keys(got), "%v", got)
}

// keys lists m's keys, in order.
func keys(m map[string]uint64) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The x86-64 rules never apply to an arm64 file, nor arm64's to an
// x86-64 one: the bytes of endbr64 at an arm64 function's start are no
// landing pad (they are one instruction, an arm64 one), and an unknown
// machine's probes go on their symbols as found.
func TestPlacementByMachine(t *testing.T) {
	require.Same(t, &isaX86, isaOf(elf.EM_X86_64))
	require.Same(t, &isaARM64, isaOf(elf.EM_AARCH64))
	require.Nil(t, isaOf(elf.EM_RISCV))
	cc := testutil.CC(t, "arm64")
	src := `
__asm__(".globl f\n.type f, %function\nf:\n\t.inst 0xfa1e0ff3\n\tret\n.size f, .-f\n");
`
	lib := buildELFWith(t, cc, src, "-shared", "-fPIC")
	table, err := elfsym.Open(lib, elfsym.Limits{})
	require.NoError(t, err)
	f, ok := table.Address("f")
	require.True(t, ok)
	code, err := os.ReadFile(lib)
	require.NoError(t, err)
	require.Equal(t, uint64(4), pastEndbr(code[f:]), "the x86-64 rule would take these bytes for endbr64")
	got, err := locate(lib, []Probe{{Symbol: "f"}}, false)
	require.NoError(t, err)
	require.Equal(t, map[string]uint64{"f": f}, got, "%s", fmt.Sprintf("%08x", binary.LittleEndian.Uint32(code[f:])))
}
