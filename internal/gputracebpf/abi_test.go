package gputracebpf

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil/bpfregs"
	"github.com/xpuscope/xpuscope/internal/testutil/cabi"
	"github.com/xpuscope/xpuscope/internal/testutil/cudaprog"
)

// The calling-convention test. For every probed function, a caller
// passing a marker constant for each argument is compiled by each
// architecture's gcc (-O2 -S), and the assembly says where each argument
// goes (cabi): that is the layout, never typed by hand. Then, for each
// architecture's BPF object, each probe's entry program must read every
// register and stack word where the arguments it records are (bpfregs
// finds its context loads and its user reads at the stack pointer plus a
// constant), and nothing on the stack that is not an argument. The x86-64
// programs are also checked against real libraries in the kernel tier;
// the arm64 ones, which this x86-64 kernel cannot load, only here.

// abiArch is one architecture of the test: its calling convention, its
// object, and the C that gives its struct pt_regs offsets.
type abiArch struct {
	abi    cabi.Arch
	object string
	// regs are the probe context's registers, by cabi's names, and the
	// C expressions of their offsets in it.
	regs map[string]string
}

var abiArchs = []abiArch{
	{cabi.AMD64, "gputrace_x86_bpfel.o", map[string]string{
		"rdi": "offsetof(struct pt_regs, rdi)", "rsi": "offsetof(struct pt_regs, rsi)",
		"rdx": "offsetof(struct pt_regs, rdx)", "rcx": "offsetof(struct pt_regs, rcx)",
		"r8": "offsetof(struct pt_regs, r8)", "r9": "offsetof(struct pt_regs, r9)",
		"sp": "offsetof(struct pt_regs, rsp)", "ret": "offsetof(struct pt_regs, rax)",
	}},
	{cabi.ARM64, "gputrace_arm64_bpfel.o", map[string]string{
		"x0": "offsetof(struct user_pt_regs, regs[0])", "x1": "offsetof(struct user_pt_regs, regs[1])",
		"x2": "offsetof(struct user_pt_regs, regs[2])", "x3": "offsetof(struct user_pt_regs, regs[3])",
		"x4": "offsetof(struct user_pt_regs, regs[4])", "x5": "offsetof(struct user_pt_regs, regs[5])",
		"x6": "offsetof(struct user_pt_regs, regs[6])", "x7": "offsetof(struct user_pt_regs, regs[7])",
		"sp": "offsetof(struct user_pt_regs, sp)", "ret": "offsetof(struct user_pt_regs, regs[0])",
	}},
}

// records lists the arguments (0-based) each entry program records of
// the call it probes, as gputrace.bpf.c reads them; the stream argument
// of the programs that find it by the cookie comes from the probe table.
var records = map[string]func(p Probe) []int{
	launch: fixed(0, 1, 2, 4, 5), launchPtsz: fixed(0, 1, 2, 4, 5), launchCoop: fixed(0, 1, 2, 4, 5),
	hipLaunch: fixed(0, 1, 2, 4, 5), hipExtLaunch: fixed(0, 1, 2, 4, 5),
	launchExC:      fixed(0, 1),
	driverLaunch:   fixed(0, 1, 2, 3, 4, 5, 6, 7, 8),
	driverLaunchEx: fixed(0, 1),
	graph:          withStream(0),
	memcpy:         withStream(0, 1, 2, 3),
	driverMemcpy:   withStream(0, 1, 2),
	memset:         withStream(0, 1, 2),
	mallocEnter:    withStream(0, 1),
	free:           withStream(0),
	syncEnter:      withStream(),
	eventRecord:    fixed(0, 1), streamWait: fixed(0, 1),
	setDevice:      fixed(0),
	register:       fixed(1, 3),
	getKernelEnter: fixed(0, 1), getFuncEnter: fixed(0, 2),
	queryEnter:   fixed(0),
	captureBegin: fixed(0), captureEnd: fixed(0, 1), instantiate: fixed(0, 1),
	graphCreate: fixed(0, 1), graphClone: fixed(0, 1), graphDestroy: fixed(0), execDestroy: fixed(0),
	kernelNode: func(p Probe) []int {
		if strings.HasSuffix(p.Symbol, "AddNode_v2") {
			return []int{0, 1, 5} // (node *, graph, deps, depData, ndeps, params *)
		}
		return []int{0, 1, 4}
	},
	childNode: fixed(1, 4), nodeParams: fixed(0, 1), execNodeParams: fixed(0, 1, 2),
	execUpdate: fixed(0, 1), captureTo: fixed(0, 1),
	ncclReduction: fixed(2, 3, 4, 5, 6), ncclRooted: fixed(2, 3, 4, 5, 6), ncclReduce: fixed(2, 3, 4, 5, 6, 7),
	ncclAll: fixed(2, 3, 4, 5), ncclPeer: fixed(1, 2, 3, 4, 5), ncclGroup: fixed(),
	ncclCommEnd: fixed(0), ncclInitRank: fixed(0, 1, 2, 3), ncclScalable: fixed(0, 1, 2, 4),
	ncclSplit: fixed(0, 1, 2, 3), ncclQuery: fixed(0, 1), ncclInitAll: fixed(0, 1),
}

func fixed(args ...int) func(Probe) []int { return func(Probe) []int { return args } }

func withStream(args ...int) func(Probe) []int {
	return func(p Probe) []int {
		if p.StreamArg == 0 {
			return args
		}
		return append(slices.Clone(args), int(p.StreamArg)-1)
	}
}

// TestCallingConvention: see above.
func TestCallingConvention(t *testing.T) {
	b, err := os.ReadFile("testdata/abi/cuda.h")
	require.NoError(t, err)
	header := string(b) + "\n" + cudaprog.NCCLHeader()
	all := cabi.Prototypes(header)
	protos := map[string][]cabi.Param{}
	for _, p := range Probes {
		params, ok := all[p.Symbol]
		require.True(t, ok, "%s: no prototype in testdata/abi/cuda.h or cudaprog's nccl.h", p.Symbol)
		protos[p.Symbol] = params
		require.Contains(t, records, p.Entry, "%s: which arguments its program %s records", p.Symbol, p.Entry)
	}

	placed := map[string]map[string][]cabi.ArgLoc{}
	for _, a := range abiArchs {
		t.Run(a.abi.GOARCH, func(t *testing.T) {
			locs, ctx := cabi.Layouts(t, a.abi, header, protos, a.regs)
			placed[a.abi.GOARCH] = locs
			spec, err := ebpf.LoadCollectionSpec(a.object)
			require.NoError(t, err)
			reads := map[string]bpfregs.Reads{}
			for _, p := range Probes {
				for _, prog := range []string{p.Entry, p.Return} {
					if _, ok := reads[prog]; ok || prog == "" {
						continue
					}
					ps := spec.Programs[prog]
					require.NotNil(t, ps, "%s: no program %s", a.object, prog)
					reads[prog], err = bpfregs.Analyze(ps.Instructions)
					require.NoError(t, err, prog)
				}
			}
			for _, p := range Probes {
				checkProbe(t, a, p, locs[p.Symbol], ctx, reads[p.Entry])
				if p.Return != "" {
					_, ok := reads[p.Return].Ctx[ctx["ret"]]
					assert.True(t, ok, "%s: its return program %s reads no return register (%#x)", p.Symbol, p.Return, ctx["ret"])
				}
			}
		})
	}

	// The example the design names: cudaLaunchKernel(func, dim3 grid,
	// dim3 block, args, smem, stream) on arm64 takes every argument in
	// registers, each dim3 in two, and nothing on the stack.
	want := []cabi.ArgLoc{{Words: []string{"x0"}}, {Words: []string{"x1", "x2"}}, {Words: []string{"x3", "x4"}},
		{Words: []string{"x5"}}, {Words: []string{"x6"}}, {Words: []string{"x7"}}}
	assert.Equal(t, want, placed["arm64"]["cudaLaunchKernel"], "cudaLaunchKernel on arm64")
	assert.Equal(t, []cabi.ArgLoc{{Words: []string{"rdi"}}, {Words: []string{"rsi", "rdx"}}, {Words: []string{"rcx", "r8"}},
		{Words: []string{"r9"}}, {Words: []string{"stack+8"}}, {Words: []string{"stack+16"}}},
		placed["amd64"]["cudaLaunchKernel"], "cudaLaunchKernel on x86-64")

	// The argument words (args.bpf.h): an argument takes the same word
	// on both, x86-64's six registers then the stack from [rsp+8],
	// arm64's eight then the stack from [sp], except that arm64 passes
	// an aggregate over 16 bytes by reference in a word of its own where
	// x86-64 copies it onto the stack.
	for name, x86 := range placed["amd64"] {
		arm := placed["arm64"][name]
		refs := 0
		for i := range x86 {
			if arm[i].Ref != "" {
				assert.True(t, x86[i].Memory, "%s's argument %d: by reference on arm64, not in memory on x86-64", name, i)
				refs++
				continue
			}
			for j, loc := range x86[i].Words {
				word := slices.Index(cabi.AMD64.IntRegs, loc) + 1
				if off, ok := cabi.StackOff(loc); ok {
					word = 6 + int(off/8)
				}
				want := fmt.Sprintf("stack+%d", 8*(word+refs-9))
				if word+refs <= 8 {
					want = cabi.ARM64.IntRegs[word+refs-1]
				}
				assert.Equal(t, want, arm[i].Words[j], "%s's argument %d, word %d (x86-64: %s)", name, i, j, loc)
			}
		}
	}
	t.Logf("ncclCommInitRank: x86-64 %+v, arm64 %+v", placed["amd64"]["ncclCommInitRank"], placed["arm64"]["ncclCommInitRank"])
}

// checkProbe checks that the entry program of p reads, on a, every place
// of the arguments it records, and reads nothing on the stack that is no
// argument of p's function.
func checkProbe(t *testing.T, a abiArch, p Probe, locs []cabi.ArgLoc, ctx map[string]int64, r bpfregs.Reads) {
	t.Helper()
	sp := ctx["sp"]
	stackRead := func(off int64) bool {
		for _, rg := range r.User[sp] {
			if rg.Off <= off && off+8 <= rg.Off+rg.Size {
				return true
			}
		}
		return false
	}
	for _, i := range records[p.Entry](p) {
		require.Less(t, i, len(locs), "%s has no argument %d", p.Symbol, i)
		l := locs[i]
		if l.Ref != "" {
			_, ok := r.Ctx[ctx[l.Ref]]
			assert.True(t, ok && len(r.User[ctx[l.Ref]]) > 0,
				"%s %s: %s records argument %d, passed by reference in %s: it reads %v, and through %v",
				a.abi.GOARCH, p.Symbol, p.Entry, i, l.Ref, r.Ctx, r.User)
			continue
		}
		for _, loc := range l.Words {
			if off, ok := cabi.StackOff(loc); ok {
				assert.True(t, stackRead(off), "%s %s: %s records argument %d at [sp+%d]: its stack reads are %v",
					a.abi.GOARCH, p.Symbol, p.Entry, i, off, r.User[sp])
				continue
			}
			_, ok := r.Ctx[ctx[loc]]
			assert.True(t, ok, "%s %s: %s records argument %d in %s (context offset %d): it reads %v",
				a.abi.GOARCH, p.Symbol, p.Entry, i, loc, ctx[loc], r.Ctx)
		}
	}
	// Each read of the stack starts at an argument's word: a function
	// that passes nothing on the stack (every one on arm64 but the
	// driver's launches) has nothing read there. (A read may run on past
	// the last argument, into the caller's frame, which is mapped:
	// args_7_8 reads two words where ncclAllReduce passes one, and the
	// program does not use the second.)
	args := map[int64]bool{}
	for _, l := range locs {
		for _, loc := range l.Words {
			if off, ok := cabi.StackOff(loc); ok {
				args[off] = true
			}
		}
	}
	for _, rg := range r.User[sp] {
		assert.True(t, args[rg.Off], "%s %s: %s reads %d bytes at [sp+%d], where %s passes no argument (its stack arguments: %v)",
			a.abi.GOARCH, p.Symbol, p.Entry, rg.Size, rg.Off, p.Symbol, args)
	}
}
