// Package bpfregs finds, in a compiled BPF program of a probe, what it
// reads of the probed function's registers and stack: the offsets of its
// loads from the context (the probe's struct pt_regs), and the user
// memory it reads (bpf_probe_read_user) at an address a context field
// plus a constant gives (the stack pointer's: the arguments passed on
// the stack). It works on the object files bpf2go writes for any
// architecture, so the arm64 objects, which cannot be loaded on an
// x86-64 kernel, are checked here too (the calling-convention tests).
//
// It is a forward dataflow over the program's instructions, with a
// value per register and per 8-byte slot of the BPF stack: the context
// pointer, a field of the context plus a constant, a constant, or
// nothing known. A function call (BPF to BPF) is not followed: what it
// returns and the registers it may change are unknown after it.
package bpfregs

import (
	"fmt"

	"github.com/cilium/ebpf/asm"
)

// Reads is what a program reads of the probed function's state.
type Reads struct {
	// Ctx are the offsets in the context loaded from it, with their
	// sizes in bytes.
	Ctx map[int64]int
	// User are the user memory reads whose address is a context field
	// plus a constant: by the field's offset, the ranges [Off, Off+Size)
	// relative to the field's value.
	User map[int64][]Range
}

// Range is a byte range.
type Range struct{ Off, Size int64 }

type kind uint8

const (
	unknown kind = iota
	ctxPtr       // the context pointer
	field        // a context field (at off) plus add
	konst        // the constant add
)

type val struct {
	k        kind
	off, add int64
}

// state is the registers R0 to R10 and the BPF stack's 8-byte slots by
// their offset from R10.
type state struct {
	regs  [11]val
	stack map[int16]val
}

func (s state) clone() state {
	c := state{regs: s.regs, stack: make(map[int16]val, len(s.stack))}
	for k, v := range s.stack {
		c.stack[k] = v
	}
	return c
}

// join merges o into s; it reports whether s changed.
func (s *state) join(o state) bool {
	changed := false
	for i := range s.regs {
		if s.regs[i] != o.regs[i] && s.regs[i].k != unknown {
			s.regs[i] = val{}
			changed = true
		}
	}
	for k, v := range s.stack {
		if ov, ok := o.stack[k]; (!ok || ov != v) && v.k != unknown {
			s.stack[k] = val{}
			changed = true
		}
	}
	return changed
}

// Analyze returns what insns, one program's instructions (as
// ebpf.LoadCollectionSpec gives them: its BPF-to-BPF callees appended),
// read of the probed function's state.
func Analyze(insns asm.Instructions) (Reads, error) {
	r := Reads{Ctx: map[int64]int{}, User: map[int64][]Range{}}
	// Instruction indexes by raw offset, for the jumps.
	index := map[asm.RawInstructionOffset]int{}
	offsets := make([]asm.RawInstructionOffset, len(insns))
	for it := insns.Iterate(); it.Next(); {
		index[it.Offset] = it.Index
		offsets[it.Index] = it.Offset
	}
	states := make([]*state, len(insns))
	entry := state{stack: map[int16]val{}}
	entry.regs[asm.R1] = val{k: ctxPtr}
	states[0] = &entry
	work := []int{0}
	seenUser := map[[3]int64]bool{}
	push := func(i int, s state) error {
		if i < 0 || i >= len(insns) {
			return fmt.Errorf("a jump out of the program, to %d", i)
		}
		if states[i] == nil {
			c := s.clone()
			states[i] = &c
			work = append(work, i)
		} else if states[i].join(s) {
			work = append(work, i)
		}
		return nil
	}
	for steps := 0; len(work) > 0; steps++ {
		if steps > 1_000_000 {
			return r, fmt.Errorf("no fixed point after %d steps", steps)
		}
		i := work[len(work)-1]
		work = work[:len(work)-1]
		s := states[i].clone()
		ins := insns[i]
		op := ins.OpCode
		next := true
		switch cls := op.Class(); {
		case cls.IsALU():
			dst := &s.regs[ins.Dst]
			if cls != asm.ALU64Class {
				// 32-bit: constants are followed (a size moved into
				// w2, with -mcpu=v3), zero-extended; the rest is lost.
				v := val{}
				switch {
				case op.ALUOp() == asm.Mov && op.Source() == asm.ImmSource:
					v = val{k: konst, add: int64(uint32(ins.Constant))}
				case op.ALUOp() == asm.Mov && s.regs[ins.Src].k == konst:
					v = val{k: konst, add: int64(uint32(s.regs[ins.Src].add))}
				case op.ALUOp() == asm.Add && op.Source() == asm.ImmSource && dst.k == konst:
					v = val{k: konst, add: int64(uint32(dst.add + ins.Constant))}
				}
				*dst = v
				break
			}
			switch {
			case op.ALUOp() == asm.Mov && op.Source() == asm.RegSource:
				*dst = s.regs[ins.Src]
			case op.ALUOp() == asm.Mov:
				*dst = val{k: konst, add: ins.Constant}
			case op.ALUOp() == asm.Add && op.Source() == asm.ImmSource && (dst.k == field || dst.k == konst):
				dst.add += ins.Constant
			case op.ALUOp() == asm.Sub && op.Source() == asm.ImmSource && (dst.k == field || dst.k == konst):
				dst.add -= ins.Constant
			default:
				*dst = val{}
			}
		case cls == asm.LdClass:
			s.regs[ins.Dst] = val{}
			if ins.IsConstantLoad(asm.DWord) {
				s.regs[ins.Dst] = val{k: konst, add: ins.Constant}
			}
		case cls == asm.LdXClass:
			src := s.regs[ins.Src]
			switch {
			case src.k == ctxPtr:
				r.Ctx[int64(ins.Offset)] = max(r.Ctx[int64(ins.Offset)], int(op.Size().Sizeof()))
				s.regs[ins.Dst] = val{}
				if op.Size() == asm.DWord {
					s.regs[ins.Dst] = val{k: field, off: int64(ins.Offset)}
				}
			case ins.Src == asm.R10 && op.Size() == asm.DWord:
				s.regs[ins.Dst] = s.stack[ins.Offset]
			default:
				s.regs[ins.Dst] = val{}
			}
		case cls == asm.StXClass || cls == asm.StClass:
			if cls == asm.StXClass && op.Mode() == asm.AtomicMode {
				// A fetching atomic leaves the old value in its source
				// register (R0 for a compare-and-exchange).
				s.regs[ins.Src], s.regs[asm.R0] = val{}, val{}
			}
			if ins.Dst != asm.R10 {
				break
			}
			v := val{}
			if cls == asm.StXClass && op.Size() == asm.DWord && op.Mode() == asm.MemMode {
				v = s.regs[ins.Src]
			} else if cls == asm.StClass && op.Size() == asm.DWord {
				v = val{k: konst, add: ins.Constant}
			}
			// A narrower store spoils the slot it falls in.
			s.stack[ins.Offset&^7] = v
			if v.k != unknown && ins.Offset&7 != 0 {
				s.stack[ins.Offset&^7] = val{}
			}
		case cls.IsJump():
			switch jop := op.JumpOp(); {
			case jop == asm.Exit:
				next = false
			case jop == asm.Call && ins.IsBuiltinCall():
				if fn := asm.BuiltinFunc(ins.Constant); fn == asm.FnProbeReadUser || fn == asm.FnProbeRead {
					size, addr := s.regs[asm.R2], s.regs[asm.R3]
					if addr.k == field && size.k == konst {
						key := [3]int64{addr.off, addr.add, size.add}
						if !seenUser[key] {
							seenUser[key] = true
							r.User[addr.off] = append(r.User[addr.off], Range{addr.add, size.add})
						}
					}
				}
				for reg := asm.R0; reg <= asm.R5; reg++ {
					s.regs[reg] = val{}
				}
			case jop == asm.Call:
				for reg := asm.R0; reg <= asm.R5; reg++ {
					s.regs[reg] = val{}
				}
			default:
				target, ok := index[offsets[i]+asm.RawInstructionOffset(int64(ins.Offset)+1)]
				if jop == asm.Ja && cls == asm.Jump32Class {
					target, ok = index[offsets[i]+asm.RawInstructionOffset(int64(ins.Constant)+1)]
				}
				if !ok {
					return r, fmt.Errorf("instruction %d: a jump to no instruction", i)
				}
				if err := push(target, s); err != nil {
					return r, err
				}
				next = jop != asm.Ja
			}
		}
		if next {
			if err := push(i+1, s); err != nil {
				return r, err
			}
		}
	}
	return r, nil
}
