package bpfregs

import (
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jump sets a jump's raw offset, as a program read from an ELF file has
// it.
func jump(ins asm.Instruction, off int16) asm.Instruction {
	ins.Offset = off
	return ins
}

func TestAnalyze(t *testing.T) {
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),                  // 0: r6 = ctx
		asm.LoadMem(asm.R2, asm.R6, 112, asm.DWord),  // 1: a field
		asm.StoreMem(asm.RFP, -8, asm.R6, asm.DWord), // 2: ctx spilled
		asm.Mov.Imm(asm.R6, 0),                       // 3: r6 no longer ctx
		asm.LoadMem(asm.R7, asm.RFP, -8, asm.DWord),  // 4: ctx filled
		asm.LoadMem(asm.R3, asm.R7, 152, asm.DWord),  // 5: the stack pointer
		asm.Add.Imm(asm.R3, 8),                       // 6: past the return address
		asm.Mov.Imm(asm.R2, 16),                      // 7: two words
		asm.Mov.Reg(asm.R1, asm.RFP),                 // 8
		asm.Add.Imm(asm.R1, -24),                     // 9
		asm.FnProbeReadUser.Call(),                   // 10: read [sp+8, sp+24)
		jump(asm.JEq.Imm(asm.R0, 0, ""), 2),          // 11: to 14
		asm.LoadMem(asm.R4, asm.R7, 104, asm.Word),   // 12: a narrower field, on one path
		asm.Mov.Imm(asm.R7, 0),                       // 13: r7 is ctx on one path only
		asm.LoadMem(asm.R5, asm.R7, 96, asm.DWord),   // 14: through a register the paths disagree on
		asm.LoadMem(asm.R5, asm.R6, 88, asm.DWord),   // 15: through a constant
		asm.Mov.Imm(asm.R0, 0),                       // 16
		asm.Return(),                                 // 17
	}
	r, err := Analyze(insns)
	require.NoError(t, err)
	assert.Equal(t, map[int64]int{112: 8, 152: 8, 104: 4}, r.Ctx, "96 is read through a register that is ctx on one path only, 88 through none")
	assert.Equal(t, map[int64][]Range{152: {{8, 16}}}, r.User)

	_, err = Analyze(asm.Instructions{jump(asm.Ja.Label(""), 5), asm.Return()})
	assert.Error(t, err, "a jump out of the program")
}
