package uprobe

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/arch/arm64/arm64asm"
)

// arm64's rules for placing probes (the file's name is not a GOARCH
// suffix: these rules apply to arm64 files wherever the code runs, as
// place.go's apply to x86-64 files).
//
// Every arm64 instruction is one 4-byte word, so a function decodes from
// any word without losing its way, and a word the decoder does not know
// (an ARMv8.1 atomic Go guards behind a CPU check) is skipped, not an
// error. At a uprobe the kernel (arch/arm64/kernel/probes/decode-insn.c,
// whose rules arm64KernelStep follows) emulates the branches (B, BL,
// B.cond, CBZ/CBNZ, TBZ/TBNZ, BR, BLR, RET) and ADR/ADRP, refuses a
// literal load, an exclusive load or store, an exception, MSR, the
// pointer-authenticated branches and the hints outside a short list, and
// executes any other out of line, single-stepped: a second trap. (Linux
// 6.13 emulates NOP too.) So:
//
//   - a probe goes past a leading BTI landing pad (bti c: what endbr64
//     is on x86-64, which Debian's arm64 builds put at the start of
//     functions called indirectly), which changes no register. It never
//     goes past PACIASP, which signs the return address the kernel
//     swaps for a return probe's trampoline, nor past the STP that saves
//     it: the probe would see the arguments, but the return probe would
//     never fire, or the function's return would fail its
//     authentication;
//   - in a Go function, it goes on the B.LS of the stack bound check
//     (MOVD 16(g), R16; SUB $n, RSP, R17 for a large frame; CMP R16,
//     RSP or CMP R16, R17; BLS morestack): g is R28, the instructions
//     before it change only the flags, R16 and R17, which carry no
//     argument in Go's register ABI (R0 to R15), and the kernel emulates
//     the branch;
//   - a Go function's returns are its RET instructions, which the kernel
//     emulates (one trap each, where x86-64 single-steps its RETs), and
//     its copy-out call a BL;
//   - a probe placed on an instruction the kernel refuses is left out:
//     attached, it would fail its file's uprobe_multi link whole.

// arm64Word is the instruction word at the start of code; false when
// code is shorter than a word.
func arm64Word(code []byte) (uint32, bool) {
	if len(code) < 4 {
		return 0, false
	}
	return binary.LittleEndian.Uint32(code), true
}

// kernelStep is what the kernel does with the instruction a uprobe
// replaces, when the probe fires.
type kernelStep uint8

const (
	// stepRefused: the kernel refuses the probe (the attach fails with
	// EINVAL).
	stepRefused kernelStep = iota
	// stepOutOfLine: the instruction is executed out of line,
	// single-stepped: a second trap.
	stepOutOfLine
	// stepEmulated: the kernel emulates it in the probe's trap.
	stepEmulated
)

func (k kernelStep) String() string {
	return [...]string{"refused", "out of line", "emulated"}[k]
}

// matches reports whether w has the value val under mask, as the
// kernel's aarch64_insn_is_* (arch/arm64/include/asm/insn.h) test it.
func matches(w, mask, val uint32) bool { return w&mask == val }

// The hints the kernel single-steps (aarch64_insn_is_steppable_hint):
// NOP, XPACLRI, PACIA1716, PACIB1716, PACIAZ, PACIASP, PACIBZ, PACIBSP
// and the BTIs, by their number (the hint's CRm:op2). The others (YIELD,
// WFE, AUTIASP, …) it refuses.
var steppableHints = map[uint32]bool{0x00: true, 0x07: true, 0x08: true, 0x0a: true, 0x18: true, 0x19: true,
	0x1a: true, 0x1b: true, 0x20: true, 0x22: true, 0x24: true, 0x26: true}

// hintNumber is the number of the HINT w, or false when w is no hint.
func hintNumber(w uint32) (uint32, bool) {
	if !matches(w, 0xfffff01f, 0xd503201f) {
		return 0, false
	}
	return (w >> 5) & 0x7f, true
}

// arm64KernelStep says what the arm64 kernel does with the instruction
// word w at a uprobe: its arm_probe_decode_insn, whose tests are the
// encoding masks of asm/insn.h. A NOP is stepped out of line; Linux 6.13
// emulates it.
func arm64KernelStep(w uint32) kernelStep {
	branch := matches(w, 0xfc000000, 0x14000000) || // B
		matches(w, 0xfc000000, 0x94000000) || // BL
		matches(w, 0x7f000000, 0x34000000) || matches(w, 0x7f000000, 0x35000000) || // CBZ, CBNZ
		matches(w, 0x7f000000, 0x36000000) || matches(w, 0x7f000000, 0x37000000) || // TBZ, TBNZ
		matches(w, 0xff000010, 0x54000000) // B.cond
	register := matches(w, 0xfffffc1f, 0xd61f0000) || // BR
		matches(w, 0xfffffc1f, 0xd63f0000) || // BLR
		matches(w, 0xfffffc1f, 0xd65f0000) // RET
	adr := matches(w, 0x9f000000, 0x10000000) || matches(w, 0x9f000000, 0x90000000) // ADR, ADRP
	switch {
	case branch || register || adr:
		return stepEmulated
	case (w>>26)&7 == 5: // branches, exceptions and system instructions
		switch {
		case matches(w, 0xfefff800, 0xd61f0800), matches(w, 0xfefff800, 0xd63f0800), // BRAA…, BLRAA…
			matches(w, 0xfffffbff, 0xd65f0bff),                                     // RETAA, RETAB
			matches(w, 0xffffffff, 0xd69f03e0), matches(w, 0xfffffbff, 0xd69f0bff), // ERET, ERETAA, ERETAB
			matches(w, 0xff000000, 0xd4000000),                                     // exceptions: SVC, BRK, HLT, …
			matches(w, 0xfff8f01f, 0xd500401f), matches(w, 0xfff00000, 0xd5100000): // MSR
			return stepRefused
		case matches(w, 0xfff00000, 0xd5300000): // MRS: any register but DAIF
			if (w>>5)&0xffff == 0xda11 {
				return stepRefused
			}
			return stepOutOfLine
		}
		if n, ok := hintNumber(w); ok && !steppableHints[n] {
			return stepRefused
		}
		return stepOutOfLine
	case matches(w, 0xbf000000, 0x18000000), matches(w, 0xff000000, 0x98000000), // LDR, LDRSW (literal)
		matches(w, 0xff000000, 0xd8000000), // PRFM (literal)
		matches(w, 0x3f800000, 0x08000000): // exclusive loads and stores
		return stepRefused
	case matches(w, 0x3f000000, 0x1c000000):
		// LDR St, Dt or Qt (literal): the kernel's literal test does
		// not cover it and would step it out of line, where the address
		// it loads from is wrong. Refused here.
		return stepRefused
	}
	return stepOutOfLine
}

// isBTI reports whether w is a BTI landing pad (bti, bti c, bti j, bti
// jc).
func isBTI(w uint32) bool {
	n, ok := hintNumber(w)
	return ok && n&^0x6 == 0x20
}

// pastBTI returns how far past a function's start, whose first bytes are
// code, a probe goes: past a leading BTI, else 0.
func pastBTI(code []byte) uint64 {
	if w, ok := arm64Word(code); ok && isBTI(w) {
		return 4
	}
	return 0
}

// decodeARM64 decodes the instruction word at code; false where the
// decoder does not know it (or code is short).
func decodeARM64(code []byte) (arm64asm.Inst, bool) {
	if len(code) < 4 {
		return arm64asm.Inst{}, false
	}
	in, err := arm64asm.Decode(code[:4])
	return in, err == nil
}

// branchTarget is the target of the PC-relative branch or literal in,
// at pc.
func branchTarget(in arm64asm.Inst, pc uint64) (uint64, bool) {
	for _, a := range in.Args {
		if rel, ok := a.(arm64asm.PCRel); ok {
			return pc + uint64(int64(rel)), true
		}
	}
	return 0, false
}

// firstCallARM64 is firstCall's arm64 form: the target of the first BL in
// code, the first bytes of a function at vaddr, followed on the straight
// line (conditional branches fall through); an unconditional branch, a
// return, an indirect call, an exception or an instruction it cannot
// decode ends the search with nothing found.
func firstCallARM64(code []byte, vaddr uint64) (uint64, bool) {
	for pos := 0; pos+4 <= len(code) && pos < 4*wrapperInsns; pos += 4 {
		in, ok := decodeARM64(code[pos:])
		if !ok {
			return 0, false
		}
		switch in.Op {
		case arm64asm.BL:
			return branchTarget(in, vaddr+uint64(pos))
		case arm64asm.B:
			if _, cond := in.Args[0].(arm64asm.Cond); cond {
				continue // B.cond falls through
			}
			return 0, false
		case arm64asm.BR, arm64asm.BLR, arm64asm.RET, arm64asm.BRK, arm64asm.HLT, arm64asm.SVC,
			arm64asm.HVC, arm64asm.SMC, arm64asm.ERET:
			return 0, false
		}
	}
	return 0, false
}

// Registers in arm64 encodings.
const (
	regSP   = 31 // SP as a base or first operand, or XZR
	regG    = 28 // Go's g
	goArgs  = 16 // Go's ABIInternal passes integers in R0 to R15
	lsCond  = 9  // the LS condition: unsigned lower or same
	wordLen = 4
)

// pastGoStackCheckARM64 is pastGoStackCheck's arm64 form: how far past a
// Go function's start, whose first bytes are code, its stack bound
// check's B.LS is; 0 when the function does not start with one.
func pastGoStackCheckARM64(code []byte) uint64 {
	word := func(i int) uint32 {
		w, _ := arm64Word(code[min(len(code), i*wordLen):])
		return w
	}
	// MOVD 16(g), Rt (LDR Xt, [X28, #16]; #24, stackguard1, in a
	// function the runtime calls on the system stack): Rt no argument.
	w := word(0)
	guard := w & 31
	if !matches(w, 0xffc00000, 0xf9400000) || (w>>5)&31 != regG || ((w>>10)&0xfff)*8 != 16 && ((w>>10)&0xfff)*8 != 24 ||
		guard < goArgs {
		return 0
	}
	i, against := 1, uint32(regSP)
	// SUB $n, RSP, Rd (SUB Xd, SP, #n): a large frame's bound.
	if w = word(1); matches(w, 0xff800000, 0xd1000000) && (w>>5)&31 == regSP && w&31 >= goArgs && w&31 != regSP {
		i, against = 2, w&31
	}
	// CMP Rt, RSP or CMP Rt, Rd (SUBS XZR, SP or Rd, Xt: shifted or
	// extended register).
	w = word(i)
	if !(matches(w, 0xff200000, 0xeb000000) || matches(w, 0xffe00000, 0xeb200000)) || w&31 != 31 ||
		(w>>5)&31 != against || (w>>16)&31 != guard {
		return 0
	}
	// BLS morestack.
	if w = word(i + 1); !matches(w, 0xff000010, 0x54000000) || w&0xf != lsCond {
		return 0
	}
	return uint64((i + 1) * wordLen)
}

// decodeAllARM64 calls f with each instruction of code, one function's
// whole code at the link-time address entry, and its offset, skipping
// the words the function loads as literals (a Go function's constant
// pool, among its instructions) and the words the decoder does not know
// (ok false: an instruction of a later architecture version, or the zero
// words that pad the function).
func decodeAllARM64(code []byte, entry uint64, f func(pos int, w uint32, in arm64asm.Inst, ok bool)) error {
	if len(code)%wordLen != 0 {
		return fmt.Errorf("%d bytes of code: not whole instruction words", len(code))
	}
	data := make([]bool, len(code)/wordLen)
	for pos := 0; pos < len(code); pos += wordLen {
		w := binary.LittleEndian.Uint32(code[pos:])
		var size uint64
		switch {
		case matches(w, 0xbf000000, 0x18000000): // LDR Wt or Xt (literal)
			size = 4 << (w >> 30 & 1)
		case matches(w, 0xff000000, 0x98000000): // LDRSW (literal)
			size = 4
		case matches(w, 0x3f000000, 0x1c000000): // LDR St, Dt or Qt (literal)
			size = 4 << (w >> 30 & 3)
		default:
			continue
		}
		imm19 := int64(int32(w<<8) >> 13) // bits 23:5, sign-extended
		at := int64(pos) + imm19*wordLen
		for b := at; b < at+int64(size); b += wordLen {
			if b >= 0 && b < int64(len(code)) {
				data[b/wordLen] = true
			}
		}
	}
	for pos := 0; pos < len(code); pos += wordLen {
		if data[pos/wordLen] {
			continue
		}
		in, ok := decodeARM64(code[pos:])
		f(pos, binary.LittleEndian.Uint32(code[pos:]), in, ok)
	}
	return nil
}

// retInstructionsARM64 is retInstructions' arm64 form: the offsets of the
// RET instructions of code, one function's whole code. A return the
// kernel cannot probe (RETAA, RETAB: pointer authentication, which Go
// does not use) is an error.
func retInstructionsARM64(code []byte) ([]uint64, error) {
	var rets []uint64
	var authed error
	err := decodeAllARM64(code, 0, func(pos int, w uint32, _ arm64asm.Inst, _ bool) {
		switch {
		case matches(w, 0xfffffc1f, 0xd65f0000):
			rets = append(rets, uint64(pos))
		case matches(w, 0xfffffbff, 0xd65f0bff):
			authed = fmt.Errorf("a return the kernel cannot probe at +%#x (RETAA or RETAB)", pos)
		}
	})
	switch {
	case err != nil:
		return nil, err
	case authed != nil:
		return nil, authed
	case len(rets) == 0:
		return nil, errors.New("no RET instruction")
	}
	return rets, nil
}

// callInstructionsARM64 is callInstructions' arm64 form: the offsets in
// code, one function's whole code at the link-time address entry, of its
// BLs of the function at target; none is not an error.
func callInstructionsARM64(code []byte, entry, target uint64) ([]uint64, error) {
	var calls []uint64
	err := decodeAllARM64(code, entry, func(pos int, _ uint32, in arm64asm.Inst, ok bool) {
		if !ok || in.Op != arm64asm.BL {
			return
		}
		if to, ok := branchTarget(in, entry+uint64(pos)); ok && to == target {
			calls = append(calls, uint64(pos))
		}
	})
	if err != nil {
		return nil, err
	}
	return calls, nil
}
