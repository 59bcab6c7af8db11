package gputracebpf

import (
	"os"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// Loading the arm64 object here would prove nothing: the verifier of
// this x86-64 kernel checks a probe's context reads against x86-64's
// struct pt_regs (168 bytes), so it refuses those that read sp (the
// driver's launches, the stack's arguments) and would take the others,
// reading x86-64's registers. So it is checked structurally, against the
// x86-64 object, which the kernel tier loads: the same ELF sections and
// relocations, maps, variables, programs, and per program the maps,
// helpers and CO-RE types it uses (testutil.SameShape); its argument
// reading is the calling-convention test's (abi_test.go).
// bpf_probe_read_user is left out of the helpers compared: the launches
// read their 7th and 8th arguments off the stack on x86-64, out of x6
// and x7 on arm64.
func TestObjectsAlike(t *testing.T) {
	x86, arm64 := testutil.SameShape(t, "gputrace_x86_bpfel.o", "gputrace_arm64_bpfel.o", asm.FnProbeReadUser)
	t.Logf("%d programs, %d maps, %d ELF sections", len(x86.Programs), len(arm64.Maps), len(x86.Sections))
}

// What the kernel does with the arm64 object, as said above: it refuses
// a program that reads sp, beyond x86-64's struct pt_regs, and takes one
// that reads x0 to x7 only, whose offsets are x86-64 registers' too
// (kernel tier).
func TestArm64ObjectOnThisKernel(t *testing.T) {
	testutil.Native(t, "the kernel's BPF verifier")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "loading BPF programs needs root")
	}
	load := func(prog string) error {
		spec, err := ebpf.LoadCollectionSpec("gputrace_arm64_bpfel.o")
		require.NoError(t, err)
		spec.Programs = map[string]*ebpf.ProgramSpec{prog: spec.Programs[prog]}
		coll, err := ebpf.NewCollection(spec)
		if err == nil {
			coll.Close()
		}
		return err
	}
	require.ErrorContains(t, load(driverLaunch), "invalid bpf_context access off=248", "the driver launch reads sp")
	require.NoError(t, load(launch), "the runtime launch reads x0 to x7 only")
}

// The arm64 object publishes lane records (and lets stages go) with an
// atomic exchange, which its JIT makes fully ordered, where the x86-64
// object's plain stores are enough (lanes.bpf.h, LANE_PUBLISH): every
// program of the arm64 object that uses the lanes has one, and the
// x86-64 object has none.
func TestLanePublishOrder(t *testing.T) {
	for obj, want := range map[string]bool{"gputrace_x86_bpfel.o": false, "gputrace_arm64_bpfel.o": true} {
		spec, err := ebpf.LoadCollectionSpec(obj)
		require.NoError(t, err)
		lanePrograms := 0
		for name, p := range spec.Programs {
			lanes, xchg := false, false
			for _, ins := range p.Instructions {
				lanes = lanes || ins.Reference() == "lanes"
				xchg = xchg || ins.OpCode.Class() == asm.StXClass && ins.OpCode.Mode() == asm.AtomicMode &&
					ins.OpCode.AtomicOp() == asm.Xchg
			}
			if lanes {
				lanePrograms++
				assert.Equal(t, want, xchg, "%s %s: an atomic exchange", obj, name)
			} else if !want {
				assert.False(t, xchg, "%s %s: an atomic exchange", obj, name)
			}
		}
		assert.Greater(t, lanePrograms, 40, "%s: the programs that use the lanes", obj)
	}
}
