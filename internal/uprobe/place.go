package uprobe

import (
	"bytes"
	"debug/elf"
	"encoding/binary"

	"golang.org/x/arch/x86/x86asm"
)

// Where in a function a probe sits decides much of what it costs, and
// the rules are the instruction set's: a file's are chosen by its ELF
// machine (isaOf), x86-64's here, arm64's in place_aarch64.go, whatever
// the machine the code runs on. On x86-64, at a probe the kernel
// emulates a few instructions (push, nop, call, jmp, jcc) and executes
// any other out of line with the trap flag set, which takes a second
// trap. Where a hypervisor intercepts debug exceptions (KVM
// on AMD does, always) that second trap is a VM exit: ~10 µs a probe hit
// instead of ~0.7 µs, measured on the CI machines. So the Tracer places
// probes on instructions the kernel emulates where it safely can:
//
//   - past a leading endbr64, which every function built with
//     -fcf-protection starts with and the kernel does not emulate; the
//     instruction changes neither registers nor stack, so both entry and
//     return probes keep their meaning there;
//   - on the function a thin exported wrapper calls (Probe.CalledFrom),
//     when the wrapper starts with a stack adjustment and its callee with
//     pushes, as OpenSSL's SSL_read and ssl_read_internal do;
//   - in a Go function, on the conditional jump of its stack bound check
//     (CMPQ SP, 16(R14) or LEAQ -n(SP), R12; CMPQ R12, 16(R14); then
//     JBE to morestack), which the kernel emulates: the instructions
//     before it change only the flags and R12, which carries no argument
//     in Go's register ABI, so the probe sees the arguments the function
//     was called with.

// endbr64 is the CET landing pad instruction.
var endbr64 = []byte{0xf3, 0x0f, 0x1e, 0xfa}

// pastEndbr returns how far past a function's start, whose first bytes
// are code, a probe goes: past a leading endbr64, else 0.
func pastEndbr(code []byte) uint64 {
	if bytes.HasPrefix(code, endbr64) {
		return uint64(len(endbr64))
	}
	return 0
}

// Bounds of the search for a wrapper's call: the bytes read, and the
// instructions decoded.
const (
	wrapperBytes = 96
	wrapperInsns = 24
)

// firstCall returns the target of the first direct call in code, the first
// bytes of a function at vaddr. It follows the straight line: conditional
// jumps fall through (a wrapper's error path is a jump away), and an
// unconditional jump, a return, or an instruction it cannot decode ends
// the search with nothing found.
func firstCall(code []byte, vaddr uint64) (uint64, bool) {
	pos := int(pastEndbr(code))
	for range wrapperInsns {
		if pos >= len(code) {
			return 0, false
		}
		in, err := x86asm.Decode(code[pos:], 64)
		if err != nil {
			return 0, false
		}
		pos += in.Len
		switch in.Op {
		case x86asm.CALL:
			// Only the 5-byte call rel32: an indirect call has no target
			// to read.
			if in.Len != 5 || code[pos-5] != 0xe8 {
				return 0, false
			}
			rel := int32(binary.LittleEndian.Uint32(code[pos-4 : pos]))
			return uint64(int64(vaddr) + int64(pos) + int64(rel)), true
		case x86asm.JMP, x86asm.RET, x86asm.LJMP, x86asm.LRET, x86asm.UD2, x86asm.HLT, x86asm.INT:
			return 0, false
		}
	}
	return 0, false
}

// Bounds of the look at a Go function's start for its stack bound check.
const goCheckBytes = 32

// pastGoStackCheck returns how far past a Go function's start, whose
// first bytes are code, its stack bound check's JBE is; 0 when the
// function does not start with one.
func pastGoStackCheck(code []byte) uint64 {
	pos := 0
	next := func() (x86asm.Inst, bool) {
		if pos >= len(code) {
			return x86asm.Inst{}, false
		}
		in, err := x86asm.Decode(code[pos:], 64)
		if err != nil {
			return x86asm.Inst{}, false
		}
		return in, true
	}
	in, ok := next()
	if ok && in.Op == x86asm.LEA && in.Args[0] == x86asm.R12 && memBase(in.Args[1]) == x86asm.RSP {
		pos += in.Len
		in, ok = next()
	}
	if !ok || in.Op != x86asm.CMP || (in.Args[0] != x86asm.RSP && in.Args[0] != x86asm.R12) || memBase(in.Args[1]) != x86asm.R14 {
		return 0
	}
	pos += in.Len
	if in, ok = next(); !ok || in.Op != x86asm.JBE {
		return 0
	}
	return uint64(pos)
}

// memBase returns the base register of a memory operand, 0 for any
// other operand.
func memBase(a x86asm.Arg) x86asm.Reg {
	if m, ok := a.(x86asm.Mem); ok {
		return m.Base
	}
	return 0
}

// isa is one instruction set's rules for placing probes.
type isa struct {
	// pastLandingPad is how far past a function's start, whose first
	// landingPadBytes are code, a probe goes for its landing pad.
	pastLandingPad func(code []byte) uint64
	// firstCall is the target of a wrapper's first direct call.
	firstCall func(code []byte, vaddr uint64) (uint64, bool)
	// pastGoStackCheck is how far past a Go function's start, whose
	// first goCheckBytes are code, its probe goes.
	pastGoStackCheck func(code []byte) uint64
	// retInstructions and callInstructions find a Go function's returns
	// and its calls of a function.
	retInstructions  func(code []byte) ([]uint64, error)
	callInstructions func(code []byte, entry, target uint64) ([]uint64, error)
	// refused reports whether the kernel refuses a probe on the
	// instruction code starts with.
	refused func(code []byte) bool
}

// landingPadBytes are the bytes read for a landing pad: endbr64's, a
// BTI's.
const landingPadBytes = 4

var (
	isaX86 = isa{pastEndbr, firstCall, pastGoStackCheck, retInstructions, callInstructions,
		func([]byte) bool { return false }}
	isaARM64 = isa{pastBTI, firstCallARM64, pastGoStackCheckARM64, retInstructionsARM64, callInstructionsARM64,
		func(code []byte) bool {
			w, ok := arm64Word(code)
			return ok && arm64KernelStep(w) == stepRefused
		}}
)

// isaOf returns the rules for the files of machine m, nil for a machine
// without them (a probe then goes on its symbol, as found).
func isaOf(m elf.Machine) *isa {
	switch m {
	case elf.EM_X86_64:
		return &isaX86
	case elf.EM_AARCH64:
		return &isaARM64
	}
	return nil
}
