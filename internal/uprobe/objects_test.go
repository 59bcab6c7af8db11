package uprobe

import (
	"testing"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// Loading the arm64 object here would prove nothing: the verifier of
// this x86-64 kernel checks a probe's context reads against x86-64's
// struct pt_regs (168 bytes), so it refuses the loader's probes, which
// read pc, and would take the others, reading x86-64's registers. So it
// is checked structurally, against the x86-64 object, which the kernel
// tier loads: the same ELF sections and relocations, maps, variables,
// programs, and per program the maps, helpers and CO-RE types it uses
// (testutil.SameShape).
func TestObjectsAlike(t *testing.T) {
	x86, arm64 := testutil.SameShape(t, "watch_x86_bpfel.o", "watch_arm64_bpfel.o")
	t.Logf("%d programs, %d maps, %d sections", len(x86.Programs), len(arm64.Maps), len(x86.Sections))
}
