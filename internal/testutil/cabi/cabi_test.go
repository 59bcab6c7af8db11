package cabi

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The interpreter on gcc 12's output for testdata/calls.c (committed,
// calls_*.s), and on the machine's gcc's output for it: each caller's
// constants where the assembly puts them, as read by hand from the
// committed files (cuLaunchKernel's stack arguments pushed on x86-64,
// stored by STP and STR on arm64; dim3s packed in two registers;
// ncclCommInitRank's 128-byte id on x86-64's stack and its copy's
// address in x2 on arm64).
func TestCalls(t *testing.T) {
	src, err := os.ReadFile("testdata/calls.c")
	require.NoError(t, err)
	for _, a := range []Arch{AMD64, ARM64} {
		committed, err := os.ReadFile("testdata/calls_" + a.GOARCH + ".s")
		require.NoError(t, err)
		for name, asm := range map[string]string{"committed": string(committed), "compiled": Compile(t, a, string(src))} {
			t.Run(a.GOARCH+"/"+name, func(t *testing.T) {
				calls, err := Calls(a, asm)
				require.NoError(t, err)
				one := func(fn string) Call {
					var cs []Call
					for _, c := range calls[fn] {
						if c.Callee != "" {
							cs = append(cs, c)
						}
					}
					require.Len(t, cs, 1, fn)
					return cs[0]
				}
				launch, driver, reduce, init := one("call_cudaLaunchKernel"), one("call_cuLaunchKernel"),
					one("call_ncclReduce"), one("call_ncclCommInitRank")
				assert.Equal(t, "cudaLaunchKernel", launch.Callee)
				if a.GOARCH == "amd64" {
					assert.Equal(t, map[string]uint64{"rdi": 0x101, "rsi": 0x202_00000201, "rdx": 0x203, "rcx": 0x302_00000301,
						"r8": 0x303, "r9": 0x401}, launch.Regs)
					assert.Equal(t, map[int64]uint64{8: 0x501, 16: 0x601}, launch.Stack)
					assert.Equal(t, "stack+16", launch.Where(a, 0x601, ^uint64(0)))
					assert.Equal(t, map[int64]uint64{8: 0x701, 16: 0x801, 24: 0x901, 32: 0xa01, 40: 0xb01}, driver.Stack)
					assert.Equal(t, map[int64]uint64{8: 0x701, 16: 0x801}, reduce.Stack)
					assert.Equal(t, "rdx", init.Where(a, 0x401, Low32))
					assert.Equal(t, "stack+8", init.Where(a, 0x131211, ^uint64(0)), "the id's first word")
					assert.Empty(t, init.Frame)
				} else {
					assert.Equal(t, map[string]uint64{"x0": 0x101, "x1": 0x202_00000201, "x2": 0x203, "x3": 0x302_00000301,
						"x4": 0x303, "x5": 0x401, "x6": 0x501, "x7": 0x601}, launch.Regs)
					assert.Empty(t, launch.Stack)
					assert.Equal(t, map[int64]uint64{0: 0x901, 8: 0xa01, 16: 0xb01}, driver.Stack)
					assert.Equal(t, "x7", driver.Where(a, 0x801, Low32))
					assert.Empty(t, reduce.Stack)
					assert.Equal(t, "x7", reduce.Where(a, 0x801, ^uint64(0)))
					assert.Equal(t, "x3", init.Where(a, 0x401, Low32))
					assert.Contains(t, init.Frame, "x2", "the id's copy")
				}
			})
		}
	}
}

func TestWords(t *testing.T) {
	asm := "\t.globl\tsizes\nsizes:\n\t.quad\t8\n\t.quad\t0x4\n\t.size\tsizes, 16\nother:\n\t.xword\t12\n"
	w, err := Words(asm, "sizes")
	require.NoError(t, err)
	assert.Equal(t, []uint64{8, 4}, w)
	w, err = Words(asm, "other")
	require.NoError(t, err)
	assert.Equal(t, []uint64{12}, w)
	_, err = Words(asm, "none")
	assert.Error(t, err)
}

func TestPrototypes(t *testing.T) {
	p := Prototypes("typedef int x;\nint f(const void *a, dim3 g, unsigned long long n);\nvoid h(void);\nint *k(char **s);\n")
	assert.Equal(t, map[string][]Param{
		"f": {{"const void *", "a"}, {"dim3", "g"}, {"unsigned long long", "n"}},
		"h": nil,
		"k": {{"char **", "s"}},
	}, p)
}
