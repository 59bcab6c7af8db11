// Package cabi reads where a C call puts its arguments from the assembly
// the compiler writes for the caller (gcc -O2 -S), for x86-64 and arm64:
// the constants each argument register and each stack slot holds at the
// call, seen from the callee's first instruction, and the registers that
// hold an address in the caller's frame (an aggregate passed by
// reference). The calling-convention tests of the BPF objects compile a
// caller of every probed function with marker constants for arguments
// and read here where each marker went, so that no layout is typed from
// memory.
//
// It is an interpreter of the straight-line code gcc writes to set up a
// call of constants, not a general one: an instruction it does not know
// makes what it writes unknown.
package cabi

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// Call is what one call passed, as its callee finds it at its first
// instruction.
type Call struct {
	// Callee is the function called.
	Callee string
	// Regs are the 64-bit argument registers holding a known constant
	// ("rdi", "x0").
	Regs map[string]uint64
	// Stack are the 8-byte words on the stack with a known byte, by
	// their offset from the callee's stack pointer (x86-64: 8 is the
	// first word past the return address; arm64: 0 is the first), and
	// Known the mask of their known bytes (an int argument on arm64's
	// stack fills the low half of its word only).
	Stack, Known map[int64]uint64
	// Frame are the registers holding an address in the caller's frame,
	// as an offset from the callee's stack pointer (negative: below it,
	// where a caller keeps its locals... or above, in its own frame).
	Frame map[string]int64
}

// Arch is one architecture's C calling convention, as far as the tests
// need it.
type Arch struct {
	GOARCH string
	// IntRegs are the integer argument registers, in order.
	IntRegs []string
}

// The two architectures.
var (
	AMD64 = Arch{"amd64", []string{"rdi", "rsi", "rdx", "rcx", "r8", "r9"}}
	ARM64 = Arch{"arm64", []string{"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7"}}
)

// Compile compiles the C source src for a with gcc -O2 -S (and flags) and
// returns the assembly. Sibling calls are kept calls
// (-fno-optimize-sibling-calls), so that each call is a CALL or a BL.
func Compile(t testing.TB, a Arch, src string, flags ...string) string {
	t.Helper()
	cc := testutil.CC(t, a.GOARCH)
	dir := t.TempDir()
	c, s := filepath.Join(dir, "x.c"), filepath.Join(dir, "x.s")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-O2", "-S", "-fno-optimize-sibling-calls", "-o", s}, flags...)
	if out, err := exec.Command(cc, append(args, c)...).CombinedOutput(); err != nil {
		t.Fatalf("cabi: %s %v: %v\n%s", cc, args, err, out)
	}
	b, err := os.ReadFile(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Calls reads the calls in asm, gcc's assembly for a, by the function
// that makes them (its label).
func Calls(a Arch, asm string) (map[string][]Call, error) {
	out := map[string][]Call{}
	var m *machine
	var fn string
	sc := bufio.NewScanner(strings.NewReader(asm))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		comment := map[string]string{"amd64": "#", "arm64": "//"}[a.GOARCH]
		if i := strings.Index(line, comment); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "."):
			continue
		case strings.HasSuffix(line, ":"):
			label := strings.TrimSuffix(line, ":")
			if !strings.HasPrefix(label, ".") {
				fn, m = label, newMachine()
			}
			continue
		}
		if m == nil {
			continue
		}
		op, args := splitInsn(line)
		var call *Call
		var err error
		if a.GOARCH == "arm64" {
			call, err = m.arm64(op, args)
		} else {
			call, err = m.amd64(op, args)
		}
		if err != nil {
			return nil, fmt.Errorf("line %d %q: %w", n, line, err)
		}
		if call != nil {
			out[fn] = append(out[fn], *call)
		}
	}
	return out, sc.Err()
}

// splitInsn splits an instruction into its mnemonic and its operands.
func splitInsn(line string) (string, []string) {
	op, rest, _ := strings.Cut(line, "\t")
	if rest == "" {
		op, rest, _ = strings.Cut(line, " ")
	}
	var args []string
	depth := 0
	start := 0
	for i, c := range rest {
		switch c {
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case ',':
			if depth == 0 {
				args = append(args, strings.TrimSpace(rest[start:i]))
				start = i + 1
			}
		}
	}
	if s := strings.TrimSpace(rest[start:]); s != "" {
		args = append(args, s)
	}
	return strings.TrimSpace(op), args
}

// value is what a register or a memory byte holds: a constant, an
// address in the caller's frame (sp-relative to the function's entry), or
// nothing known.
type value struct {
	known bool
	frame bool // v is an offset from the entry's stack pointer
	v     uint64
}

func constant(v uint64) value { return value{known: true, v: v} }
func frameAt(off int64) value { return value{known: true, frame: true, v: uint64(off)} }

// machine is the interpreter's state in one function: the registers by
// their 64-bit name, the bytes of the frame by their offset from the
// entry's stack pointer, and the stack pointer's.
type machine struct {
	regs map[string]value
	mem  map[int64]value // one byte each: v is the byte
	sp   int64
}

func newMachine() *machine { return &machine{regs: map[string]value{}, mem: map[int64]value{}} }

// store writes the n bytes of v at off.
func (m *machine) store(off int64, n int, v value) {
	for i := range n {
		if v.known && !v.frame {
			m.mem[off+int64(i)] = constant(v.v >> (8 * i) & 0xff)
		} else {
			m.mem[off+int64(i)] = value{}
		}
	}
}

// word reads the 8 bytes at off, and the mask of those known.
func (m *machine) word(off int64) (w, known uint64) {
	for i := range 8 {
		if b := m.mem[off+int64(i)]; b.known {
			w |= b.v << (8 * i)
			known |= 0xff << (8 * i)
		}
	}
	return w, known
}

// call records a call, whose callee's stack pointer at entry is entry.
func (m *machine) call(callee string, entry int64, regs []string) *Call {
	c := &Call{Callee: callee, Regs: map[string]uint64{}, Stack: map[int64]uint64{}, Known: map[int64]uint64{},
		Frame: map[string]int64{}}
	for _, r := range regs {
		v := m.regs[r]
		switch {
		case v.known && v.frame:
			c.Frame[r] = int64(v.v) - entry
		case v.known:
			c.Regs[r] = v.v
		}
	}
	for off := entry; off < entry+256; off += 8 {
		if w, known := m.word(off); known != 0 {
			c.Stack[off-entry], c.Known[off-entry] = w, known
		}
	}
	return c
}

// parseImm reads an immediate: "$515", "#0x20", "515", "-16".
func parseImm(s string) (int64, bool) {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "$"), "#")
	v, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		u, err := strconv.ParseUint(s, 0, 64)
		return int64(u), err == nil
	}
	return v, true
}

// ---- x86-64 (AT&T syntax) ----

// amd64Reg returns the 64-bit name of an integer register operand and
// its width in bytes: "%edx" is ("rdx", 4), "%r9d" ("r9", 4).
func amd64Reg(s string) (string, int, bool) {
	if !strings.HasPrefix(s, "%") {
		return "", 0, false
	}
	r := s[1:]
	switch {
	case len(r) == 3 && r[0] == 'r' && strings.Contains("abcdsb", r[1:2]) && (r[2] == 'x' || r[2] == 'i' || r[2] == 'p'):
		return r, 8, true // rax…rdx, rsi, rdi, rsp, rbp
	case len(r) == 3 && r[0] == 'e':
		return "r" + r[1:], 4, true
	case strings.HasPrefix(r, "r") && len(r) >= 2 && r[1] >= '0' && r[1] <= '9':
		switch {
		case strings.HasSuffix(r, "d"):
			return strings.TrimSuffix(r, "d"), 4, true
		case strings.HasSuffix(r, "w"), strings.HasSuffix(r, "b"):
			return r[:len(r)-1], 0, true
		}
		return r, 8, true
	}
	return "", 0, false
}

// amd64Mem reads an operand "off(%rsp)": the offset from the stack
// pointer.
func amd64Mem(s string) (int64, bool) {
	off, base, ok := strings.Cut(s, "(")
	if !ok || base != "%rsp)" {
		return 0, false
	}
	if off == "" {
		return 0, true
	}
	v, err := strconv.ParseInt(off, 0, 64)
	return v, err == nil
}

func (m *machine) amd64(op string, args []string) (*Call, error) {
	src, dst := "", ""
	if len(args) == 2 {
		src, dst = args[0], args[1]
	}
	imm, isImm := int64(0), strings.HasPrefix(src, "$")
	if isImm {
		imm, isImm = parseImm(src)
	}
	switch op {
	case "ret":
		return m.call("", m.sp, amd64All), nil
	case "call", "jmp":
		if len(args) != 1 || strings.HasPrefix(args[0], "*") || strings.HasPrefix(args[0], ".") {
			return nil, nil
		}
		callee := strings.TrimSuffix(args[0], "@PLT")
		entry := m.sp - 8 // the return address the CALL pushes
		if op == "jmp" {
			entry = m.sp
		}
		return m.call(callee, entry, AMD64.IntRegs), nil
	case "subq", "addq":
		if dst == "%rsp" && isImm {
			if op == "subq" {
				m.sp -= imm
			} else {
				m.sp += imm
			}
			return nil, nil
		}
	case "pushq":
		m.sp -= 8
		v := value{}
		if len(args) == 1 {
			if i, ok := parseImm(args[0]); ok && strings.HasPrefix(args[0], "$") {
				v = constant(uint64(i))
			} else if r, n, ok := amd64Reg(args[0]); ok && n == 8 {
				v = m.regs[r]
			}
		}
		m.store(m.sp, 8, v)
		return nil, nil
	case "movl", "movq", "movabsq":
		if r, n, ok := amd64Reg(dst); ok {
			switch {
			case isImm && n == 4:
				m.regs[r] = constant(uint64(uint32(imm)))
			case isImm:
				m.regs[r] = constant(uint64(imm))
			default:
				if s, sn, ok := amd64Reg(src); ok && sn == n {
					v := m.regs[s]
					if n == 4 && v.known && !v.frame {
						v = constant(uint64(uint32(v.v)))
					} else if n == 4 {
						v = value{}
					}
					m.regs[r] = v
				} else {
					m.regs[r] = value{}
				}
			}
			return nil, nil
		}
		if off, ok := amd64Mem(dst); ok {
			n := map[string]int{"movl": 4, "movq": 8}[op]
			v := value{}
			if isImm {
				v = constant(uint64(imm))
			} else if s, _, ok := amd64Reg(src); ok {
				v = m.regs[s]
			}
			m.store(m.sp+off, n, v)
			return nil, nil
		}
	case "xorl", "xorq":
		if r, _, ok := amd64Reg(dst); ok && src == dst {
			m.regs[r] = constant(0)
			return nil, nil
		}
	case "leaq":
		if r, _, ok := amd64Reg(dst); ok {
			if off, ok := amd64Mem(src); ok {
				m.regs[r] = frameAt(m.sp + off)
			} else {
				m.regs[r] = value{}
			}
			return nil, nil
		}
	}
	// Anything else: what it writes (the last operand) is unknown.
	if len(args) > 0 {
		last := args[len(args)-1]
		if r, _, ok := amd64Reg(last); ok {
			m.regs[r] = value{}
		} else if off, ok := amd64Mem(last); ok {
			m.store(m.sp+off, 16, value{})
		}
	}
	return nil, nil
}

// ---- arm64 (GNU syntax, as gcc writes it) ----

// arm64Reg returns the 64-bit name of an integer register operand and
// its width in bytes: "w3" is ("x3", 4); "sp" is ("sp", 8).
func arm64Reg(s string) (string, int, bool) {
	switch {
	case s == "sp":
		return "sp", 8, true
	case s == "xzr":
		return "xzr", 8, true
	case s == "wzr":
		return "xzr", 4, true
	case len(s) >= 2 && (s[0] == 'x' || s[0] == 'w'):
		if _, err := strconv.Atoi(s[1:]); err != nil {
			return "", 0, false
		}
		n := 8
		if s[0] == 'w' {
			n = 4
		}
		return "x" + s[1:], n, true
	}
	return "", 0, false
}

// arm64Mem reads "[sp]", "[sp, 16]" or "[sp, -48]!": the offset and
// whether it writes the base back first.
func arm64Mem(s string) (off int64, pre, ok bool) {
	pre = strings.HasSuffix(s, "!")
	s = strings.TrimSuffix(s, "!")
	if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
		return 0, false, false
	}
	base, o, _ := strings.Cut(s[1:len(s)-1], ",")
	if strings.TrimSpace(base) != "sp" {
		return 0, false, false
	}
	if o = strings.TrimSpace(o); o == "" {
		return 0, pre, true
	}
	v, ok := parseImm(o)
	return v, pre, ok
}

func (m *machine) get(r string) value {
	if r == "xzr" {
		return constant(0)
	}
	return m.regs[r]
}

func (m *machine) set(r string, n int, v value) {
	if r == "xzr" || r == "sp" {
		return
	}
	if n == 4 && v.known && !v.frame {
		v = constant(uint64(uint32(v.v)))
	} else if n == 4 {
		v = value{}
	}
	m.regs[r] = v
}

func (m *machine) arm64(op string, args []string) (*Call, error) {
	reg := func(i int) (string, int, bool) {
		if i >= len(args) {
			return "", 0, false
		}
		return arm64Reg(args[i])
	}
	switch op {
	case "ret":
		return m.call("", m.sp, arm64All), nil
	case "bl", "b":
		if len(args) != 1 || strings.HasPrefix(args[0], ".") {
			return nil, nil
		}
		return m.call(args[0], m.sp, ARM64.IntRegs), nil
	case "mov", "movz":
		d, n, ok := reg(0)
		if !ok || len(args) != 2 {
			break
		}
		if s, sn, ok := arm64Reg(args[1]); ok {
			if s == "sp" {
				m.set(d, n, frameAt(m.sp))
			} else if sn == n {
				m.set(d, n, m.get(s))
			} else {
				m.set(d, n, value{})
			}
		} else if v, ok := parseImm(args[1]); ok {
			m.set(d, n, constant(uint64(v)))
		} else {
			m.set(d, n, value{})
		}
		return nil, nil
	case "movk":
		d, n, ok := reg(0)
		if !ok || len(args) < 2 {
			break
		}
		v, ok1 := parseImm(args[1])
		shift := int64(0)
		if len(args) == 3 {
			s, found := strings.CutPrefix(args[2], "lsl ")
			var ok2 bool
			shift, ok2 = parseImm(strings.TrimSpace(s))
			ok1 = ok1 && found && ok2
		}
		old := m.get(d)
		if ok1 && old.known && !old.frame {
			mask := uint64(0xffff) << shift
			m.set(d, n, constant(old.v&^mask|uint64(v)<<shift&mask))
		} else {
			m.set(d, n, value{})
		}
		return nil, nil
	case "add", "sub":
		d, n, ok := reg(0)
		if !ok || len(args) != 3 {
			break
		}
		s, _, _ := reg(1)
		v, isImm := parseImm(args[2])
		if op == "sub" {
			v = -v
		}
		switch {
		case d == "sp" && s == "sp" && isImm:
			m.sp += v
			return nil, nil
		case s == "sp" && isImm:
			m.set(d, n, frameAt(m.sp+v))
			return nil, nil
		}
	case "str", "stp", "strb", "strh":
		regs, at := args[:len(args)-1], args[len(args)-1]
		post := int64(0)
		if op == "stp" && len(args) == 4 || op != "stp" && len(args) == 3 {
			// Post-index: [sp], imm.
			p, ok := parseImm(args[len(args)-1])
			if !ok {
				return nil, nil
			}
			regs, at, post = args[:len(args)-2], args[len(args)-2], p
		}
		off, pre, ok := arm64Mem(at)
		if !ok {
			return nil, nil // a store elsewhere than the frame
		}
		if pre {
			m.sp += off
			off = 0
		}
		addr := m.sp + off
		for _, r := range regs {
			name, n, ok := arm64Reg(r)
			size := map[string]int{"strb": 1, "strh": 2}[op]
			if size == 0 {
				size = n
			}
			if !ok { // a vector or floating-point register: q0, d1, s2
				size = map[byte]int{'q': 16, 'd': 8, 's': 4, 'h': 2, 'b': 1}[r[0]]
				m.store(addr, size, value{})
			} else {
				m.store(addr, size, m.get(name))
			}
			addr += int64(size)
		}
		m.sp += post
		return nil, nil
	case "ldp", "ldr":
		// A load into registers: unknown; one with writeback moves sp.
		for _, r := range args[:len(args)-1] {
			if name, n, ok := arm64Reg(r); ok {
				m.set(name, n, value{})
			}
		}
		if off, pre, ok := arm64Mem(args[len(args)-1]); ok && pre {
			m.sp += off
		}
		return nil, nil
	}
	// Anything else: what it writes (the first operand) is unknown.
	if d, n, ok := reg(0); ok {
		m.set(d, n, value{})
	}
	return nil, nil
}

// Every integer register, for the returns.
var (
	amd64All = []string{"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"}
	arm64All = func() []string {
		var r []string
		for i := range 31 {
			r = append(r, "x"+strconv.Itoa(i))
		}
		return r
	}()
)

// Returns reads, from asm, gcc's assembly for a, the registers the
// function named fn holds at its returns (a Call of no callee for each
// RET).
func Returns(a Arch, asm, fn string) ([]Call, error) {
	all, err := Calls(a, asm)
	if err != nil {
		return nil, err
	}
	var rets []Call
	for _, c := range all[fn] {
		if c.Callee == "" {
			rets = append(rets, c)
		}
	}
	return rets, nil
}

// Holding lists the registers of c that hold w.
func (c Call) Holding(w uint64) []string {
	var out []string
	for r, v := range c.Regs {
		if v == w {
			out = append(out, r)
		}
	}
	return out
}

// Words reads the 8-byte data words gcc emitted for the array at label
// (.quad on x86-64, .xword on arm64) in asm.
func Words(asm, label string) ([]uint64, error) {
	var out []uint64
	in := false
	for _, line := range strings.Split(asm, "\n") {
		line = strings.TrimSpace(line)
		if line == label+":" {
			in = true
			continue
		}
		if !in {
			continue
		}
		op, args := splitInsn(line)
		if op != ".quad" && op != ".xword" && op != ".8byte" || len(args) != 1 {
			break
		}
		v, ok := parseImm(args[0])
		if !ok {
			return nil, fmt.Errorf("%s: %q is no number", label, line)
		}
		out = append(out, uint64(v))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no words at %s", label)
	}
	return out, nil
}

// Where returns the location of the word w in c: an argument register
// whose constant is w, or the stack offset of a word that is; "" when
// none holds it. With mask, only the bits under it are compared (an int
// argument's upper half is not the callee's).
func (c Call) Where(a Arch, w, mask uint64) string {
	for _, r := range a.IntRegs {
		if v, ok := c.Regs[r]; ok && v&mask == w&mask {
			return r
		}
	}
	best := int64(-1)
	for off, v := range c.Stack {
		if c.Known[off]&mask == mask && v&mask == w&mask && (best < 0 || off < best) {
			best = off
		}
	}
	if best >= 0 {
		return "stack+" + strconv.FormatInt(best, 10)
	}
	return ""
}

// Low32 is the mask of a word's low half.
const Low32 = uint64(1)<<32 - 1
