package nodebpf

import (
	"slices"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// The arm64 object is checked structurally against the x86-64 one, which
// the kernel tier loads (this x86-64 kernel's BTF has no arm64 struct
// pt_regs for sys_enter's CO-RE reads): the same ELF sections and
// relocations, maps, variables, programs, and per program the maps,
// helpers and CO-RE types it uses (testutil.SameShape).
func TestObjectsAlike(t *testing.T) {
	x86, arm64 := testutil.SameShape(t, "node_x86_bpfel.o", "node_arm64_bpfel.o")
	t.Logf("%d programs, %d maps, %d sections", len(x86.Programs), len(arm64.Maps), len(x86.Sections))
}

// sys_enter compares the syscall number with its architecture's table.
// The compiler turns runs of small numbers into range checks, so only the
// numbers it compares with one by one are looked for: x86-64's openat
// (257), preadv (295) and preadv2 (327); arm64's preadv2 (286). openat2
// is 437 on both.
func TestSyscallNumbers(t *testing.T) {
	for obj, want := range map[string]struct{ has, hasNot []int64 }{
		"node_x86_bpfel.o":   {has: []int64{257, 295, 327, 437}, hasNot: []int64{286}},
		"node_arm64_bpfel.o": {has: []int64{286, 437}, hasNot: []int64{257, 295, 327}},
	} {
		spec, err := ebpf.LoadCollectionSpec(obj)
		require.NoError(t, err)
		p := spec.Programs[nodeProgSysEnter]
		require.NotNil(t, p, obj)
		var compared []int64
		for _, ins := range p.Instructions {
			if ins.OpCode.Class().IsJump() && ins.OpCode.Source() == asm.ImmSource {
				compared = append(compared, ins.Constant)
			}
		}
		for _, n := range want.has {
			assert.True(t, slices.Contains(compared, n), "%s: sys_enter never compares with %d (%v)", obj, n, compared)
		}
		for _, n := range want.hasNot {
			assert.False(t, slices.Contains(compared, n), "%s: sys_enter compares with %d (%v)", obj, n, compared)
		}
	}
}
