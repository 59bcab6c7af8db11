package cabi

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Param is one parameter of a C prototype.
type Param struct{ Type, Name string }

var protoRE = regexp.MustCompile(`(?m)^[A-Za-z_][\w\s\*]*?\b(\w+)\(([^;]*)\);`)

// Prototypes reads the function prototypes of header, one a line, by
// name.
func Prototypes(header string) map[string][]Param {
	out := map[string][]Param{}
	for _, m := range protoRE.FindAllStringSubmatch(header, -1) {
		var params []Param
		if list := strings.TrimSpace(m[2]); list != "void" && list != "" {
			for _, p := range strings.Split(list, ",") {
				p = strings.TrimSpace(p)
				i := strings.LastIndexAny(p, " *")
				params = append(params, Param{strings.TrimSpace(p[:i+1]), p[i+1:]})
			}
		}
		out[m[1]] = params
	}
	return out
}

// Marker is the constant a Layouts caller passes as argument i (a
// dim3's x; y and z follow).
func Marker(i int) uint64 { return uint64(0x100*(i+1) + 0x11) }

// MarkerAggregate is the first word of an aggregate over 16 bytes a
// Layouts caller passes (its first three bytes 0x11, 0x22, 0x33).
const MarkerAggregate = 0x332211

// ArgLoc is where one argument is at the callee's first instruction:
// its words' places ("x0", "rsi", "stack+8": the word at the callee's
// stack pointer plus 8; a dim3 has two), or, for an aggregate over 16
// bytes, the register holding its copy's address (Ref: arm64 passes it
// by reference) or its first word's place on the stack (Memory: x86-64
// copies it there).
type ArgLoc struct {
	Words  []string
	Ref    string
	Memory bool
}

// StackOff returns the offset of a "stack+N" place, or false.
func StackOff(loc string) (int64, bool) {
	s, ok := strings.CutPrefix(loc, "stack+")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// Layouts compiles, for a, a caller of each function of protos (declared
// in header) that passes Marker(i) as argument i, and returns where each
// argument goes; and the offsets in the probe context (struct pt_regs)
// of the registers ctxRegs names, by the C expression of each
// (offsetof(struct pt_regs, rdi)). Each argument's size is the
// compiler's sizeof: an argument of 4 bytes is found by its word's low
// half, which is all of the word the callee may read.
func Layouts(t testing.TB, a Arch, header string, protos map[string][]Param, ctxRegs map[string]string) (map[string][]ArgLoc, map[string]int64) {
	t.Helper()
	var src strings.Builder
	src.WriteString(header + "\n#include <stddef.h>\n")
	names := make([]string, 0, len(protos))
	for name := range protos {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		params := protos[name]
		var args, sizes []string
		fmt.Fprintf(&src, "void call_%s(void) {\n", name)
		for i, p := range params {
			sizes = append(sizes, "sizeof("+p.Type+")")
			switch p.Type {
			case "dim3":
				args = append(args, fmt.Sprintf("(dim3){%#x, %#x, %#x}", Marker(i), Marker(i)+1, Marker(i)+2))
			case "ncclUniqueId":
				fmt.Fprintf(&src, "\tncclUniqueId id%d = {{0x11, 0x22, 0x33}};\n", i)
				args = append(args, fmt.Sprintf("id%d", i))
			default:
				args = append(args, fmt.Sprintf("(%s)%#x", p.Type, Marker(i)))
			}
		}
		fmt.Fprintf(&src, "\t%s(%s);\n}\n", name, strings.Join(args, ", "))
		if len(sizes) > 0 {
			fmt.Fprintf(&src, "const unsigned long sizes_%s[] = {%s};\n", name, strings.Join(sizes, ", "))
		}
	}
	var regNames, regExprs []string
	for r, e := range ctxRegs {
		regNames, regExprs = append(regNames, r), append(regExprs, e)
	}
	fmt.Fprintf(&src, "#include <asm/ptrace.h>\nconst unsigned long ctx_offsets[] = {%s};\n", strings.Join(regExprs, ", "))

	asm := Compile(t, a, src.String())
	calls, err := Calls(a, asm)
	require.NoError(t, err)
	offs, err := Words(asm, "ctx_offsets")
	require.NoError(t, err)
	ctx := map[string]int64{}
	for i, r := range regNames {
		ctx[r] = int64(offs[i])
	}

	out := map[string][]ArgLoc{}
	for _, name := range names {
		params := protos[name]
		var call *Call
		for _, c := range calls["call_"+name] {
			if c.Callee == name {
				call = &c
			}
		}
		require.NotNil(t, call, "%s: no call of %s in its caller", a.GOARCH, name)
		var sizes []uint64
		if len(params) > 0 {
			sizes, err = Words(asm, "sizes_"+name)
			require.NoError(t, err)
		}
		locs := make([]ArgLoc, len(params))
		for i, p := range params {
			mask := ^uint64(0)
			if sizes[i] == 4 {
				mask = Low32
			}
			where := func(w, mask uint64) string {
				loc := call.Where(a, w, mask)
				require.NotEmpty(t, loc, "%s: %s's argument %d (%s %s): %#x is nowhere at the call\n%+v",
					a.GOARCH, name, i, p.Type, p.Name, w, *call)
				return loc
			}
			switch {
			case p.Type == "dim3":
				m := Marker(i)
				locs[i].Words = []string{where(m|(m+1)<<32, ^uint64(0)), where(m+2, Low32)}
			case sizes[i] > 16:
				// In memory on the stack, its first word the marker's, or
				// by reference.
				if loc := call.Where(a, MarkerAggregate, ^uint64(0)); loc != "" {
					locs[i].Words, locs[i].Memory = []string{loc}, true
					continue
				}
				locs[i].Ref = refRegister(t, a, name, call, params, i)
			default:
				locs[i].Words = []string{where(Marker(i), mask)}
			}
		}
		out[name] = locs
	}
	return out, ctx
}

// refRegister returns the register of call that holds the address of
// argument i's copy, an aggregate passed by reference: the one holding
// an address in the caller's frame after the registers of the arguments
// before it and before those of the arguments after it (the caller's own
// copy of the value may be in another).
func refRegister(t testing.TB, a Arch, name string, call *Call, params []Param, i int) string {
	t.Helper()
	lo, hi := -1, len(a.IntRegs)
	for j := range params {
		if j == i || params[j].Type == "dim3" {
			continue
		}
		k := slices.Index(a.IntRegs, call.Where(a, Marker(j), Low32))
		switch {
		case k < 0:
		case j < i:
			lo = max(lo, k)
		case j > i:
			hi = min(hi, k)
		}
	}
	var found []string
	for r := range call.Frame {
		if k := slices.Index(a.IntRegs, r); k > lo && k < hi {
			found = append(found, r)
		}
	}
	require.Len(t, found, 1, "%s: %s's argument %d: by reference, in which register? frame addresses in %v, arguments in %v",
		a.GOARCH, name, i, call.Frame, call.Regs)
	return found[0]
}
