package uprobe

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// pclntab reads a Go binary's function table (.gopclntab) in place: it
// finds functions by name and the source file of a PC in one of them
// without building the whole table. debug/gosym's NewTable decodes every
// function, names and all: tens of megabytes for a large binary, and a
// node runs several (kubelet, containerd), each met by every Tracer that
// probes Go programs. The layout is the runtime's (runtime/symtab.go),
// as Go 1.16 and later write it; earlier releases predate the register
// ABI the probes read arguments by, and are not probed.
type pclntab struct {
	ver       pclnVersion
	quantum   uint64
	textStart uint64
	nfunc     int

	// The offsets of funcnametab and of the function table from the
	// table's start: the runtime's moduledata points at both.
	funcnameOff, functabOff uint64

	// The tables, from their offsets in the header to the section's end.
	funcnametab, cutab, filetab, pctab, funcdata []byte
	functab                                      []byte // the function table's entries, in funcdata
}

type pclnVersion int

const (
	pcln116 pclnVersion = iota + 1 // Go 1.16, 1.17
	pcln118                        // Go 1.18, 1.19
	pcln120                        // Go 1.20 and later
)

// errOldPclntab says a pclntab is of a Go release before 1.16.
var errOldPclntab = errors.New("a pclntab of a Go release before 1.16, or not one")

// parsePclntab reads the header of data, a little-endian 64-bit
// .gopclntab whose functions' entries are relative to textStart, the
// address of .text.
func parsePclntab(data []byte, textStart uint64) (*pclntab, error) {
	if len(data) < 8 || data[4] != 0 || data[5] != 0 || data[7] != 8 {
		return nil, errOldPclntab
	}
	t := &pclntab{quantum: uint64(data[6]), textStart: textStart}
	if t.quantum == 0 {
		return nil, errOldPclntab
	}
	var first int // the header word of the first offset
	switch binary.LittleEndian.Uint32(data) {
	case 0xfffffffa:
		t.ver, first = pcln116, 2
	case 0xfffffff0:
		t.ver, first = pcln118, 3
	case 0xfffffff1:
		t.ver, first = pcln120, 3
	default:
		return nil, errOldPclntab
	}
	word := func(i int) (uint64, bool) {
		at := 8 + 8*i
		if at+8 > len(data) {
			return 0, false
		}
		return binary.LittleEndian.Uint64(data[at:]), true
	}
	n, ok := word(0)
	if !ok || n > uint64(len(data)) {
		return nil, errors.New("pclntab: header cut short")
	}
	t.nfunc = int(n)
	tabs := []*[]byte{&t.funcnametab, &t.cutab, &t.filetab, &t.pctab, &t.funcdata}
	for i, tab := range tabs {
		off, ok := word(first + i)
		if !ok || off > uint64(len(data)) {
			return nil, errors.New("pclntab: header cut short")
		}
		*tab = data[off:]
		switch i {
		case 0:
			t.funcnameOff = off
		case len(tabs) - 1:
			t.functabOff = off
		}
	}
	size := (2*t.nfunc + 1) * t.fieldSize()
	if size > len(t.funcdata) {
		return nil, fmt.Errorf("pclntab: a function table of %d functions past its end", t.nfunc)
	}
	t.functab = t.funcdata[:size]
	return t, nil
}

// The runtime's moduledata (runtime/symtab.go) as 64-bit words, Go 1.16
// to 1.27: pcHeader, then the slices funcnametab, cutab, filetab, pctab,
// pclntable and ftab (pointer, length, capacity each), findfunctab,
// minpc, maxpc, text, etext.
const (
	mdPCHeader  = 0
	mdFuncnames = 1
	mdFtab      = 16
	mdFtabLen   = 17
	mdMinPC     = 20
	mdMaxPC     = 21
	mdText      = 22
	mdEtext     = 23
	moduleWords = 24
)

// moduleText returns runtime.text, the address that a Go 1.18 or later
// pclntab's function entries are offsets from, if md, moduleWords words,
// are the runtime's first moduledata and t is the pclntab at pclnAddr.
// It is not the .text section's address where an external linker (cgo,
// -linkmode=external) put C code first; the pclntab's header has no copy
// (the linker writes 0 there). md is the moduledata if it points at the
// pclntab, its funcnametab and function table point into it, with as
// many entries as t has, and its bounds agree with t's first and last
// entries. t's textStart is not read.
func moduleText(md []uint64, t *pclntab, pclnAddr uint64) (uint64, bool) {
	if t.ver < pcln118 || len(md) < moduleWords {
		return 0, false // entries are addresses
	}
	text := md[mdText]
	ok := md[mdPCHeader] == pclnAddr && md[mdFuncnames] == pclnAddr+t.funcnameOff &&
		md[mdFtab] == pclnAddr+t.functabOff && md[mdFtabLen] == uint64(t.nfunc)+1 &&
		md[mdMinPC] == text+t.field(0) && md[mdMaxPC] == text+t.field(2*t.nfunc) &&
		md[mdMaxPC] <= md[mdEtext]
	return text, ok
}

// fieldSize is the size of a function table entry's fields.
func (t *pclntab) fieldSize() int {
	if t.ver >= pcln118 {
		return 4
	}
	return 8
}

func (t *pclntab) field(i int) uint64 {
	if t.ver >= pcln118 {
		return uint64(binary.LittleEndian.Uint32(t.functab[4*i:]))
	}
	return binary.LittleEndian.Uint64(t.functab[8*i:])
}

// entry is the address of function i (i up to nfunc: the end of the last).
func (t *pclntab) entry(i int) uint64 {
	if t.ver >= pcln118 {
		return t.textStart + t.field(2*i)
	}
	return t.field(2 * i)
}

// funcField returns field n (1 to 9: nameOff, args, deferreturn, pcsp,
// pcfile, pcln, npcdata, cuOffset, startLine) of function i's _func,
// or false past the table.
func (t *pclntab) funcField(i, n int) (uint32, bool) {
	off := t.field(2*i + 1)
	first := 8 // the entry, a uintptr before Go 1.18
	if t.ver >= pcln118 {
		first = 4
	}
	at := off + uint64(first+(n-1)*4)
	if off > uint64(len(t.funcdata)) || at+4 > uint64(len(t.funcdata)) {
		return 0, false
	}
	return binary.LittleEndian.Uint32(t.funcdata[at:]), true
}

// stringAt is the NUL-terminated string at off in tab, or false.
func stringAt(tab []byte, off uint64) ([]byte, bool) {
	if off >= uint64(len(tab)) {
		return nil, false
	}
	s := tab[off:]
	end := bytes.IndexByte(s, 0)
	if end < 0 {
		return nil, false
	}
	return s[:end], true
}

// lookup returns the bounds and the index of each wanted function,
// in one pass over the table, allocating nothing per function.
func (t *pclntab) lookup(wanted map[string]bool) map[string]pclnFunc {
	found := map[string]pclnFunc{}
	for i := 0; i < t.nfunc && len(found) < len(wanted); i++ {
		nameOff, ok := t.funcField(i, 1)
		if !ok {
			break
		}
		name, ok := stringAt(t.funcnametab, uint64(nameOff))
		if !ok || !wanted[string(name)] { // string(name) in a map index does not allocate
			continue
		}
		if entry, end := t.entry(i), t.entry(i+1); end > entry {
			found[string(name)] = pclnFunc{goFunc{entry, end}, i}
		}
	}
	return found
}

// pclnFunc is a function the table holds, and its index there.
type pclnFunc struct {
	goFunc
	index int
}

// fileAt returns the source file of the code at pc in function f (an
// inlined function's, where its code was inlined), or false.
func (t *pclntab) fileAt(f pclnFunc, pc uint64) (string, bool) {
	pcfile, ok1 := t.funcField(f.index, 5)
	cuOff, ok2 := t.funcField(f.index, 8)
	if !ok1 || !ok2 || pc < f.entry || pc >= f.end {
		return "", false
	}
	fno, ok := t.pcvalue(uint64(pcfile), f.entry, pc)
	if !ok || fno < 0 {
		return "", false
	}
	at := (uint64(cuOff) + uint64(fno)) * 4
	if at+4 > uint64(len(t.cutab)) {
		return "", false
	}
	fileOff := binary.LittleEndian.Uint32(t.cutab[at:])
	if fileOff == ^uint32(0) {
		return "", false
	}
	name, ok := stringAt(t.filetab, uint64(fileOff))
	return string(name), ok
}

// spAt returns how far the stack pointer at pc, in function f, is below
// where it was at f's entry (its pc-sp table), or false.
func (t *pclntab) spAt(f pclnFunc, pc uint64) (uint64, bool) {
	pcsp, ok := t.funcField(f.index, 4)
	if !ok || pc < f.entry || pc >= f.end {
		return 0, false
	}
	v, ok := t.pcvalue(uint64(pcsp), f.entry, pc)
	return uint64(v), ok && v >= 0
}

// maxPCValueSteps bounds the walk of one pc-value table.
const maxPCValueSteps = 1 << 20

// pcvalue walks the pc-value table at off of a function starting at
// entry to the value at pc: pairs of varints, a zig-zag value delta and
// a pc delta in quanta, from the value -1 at entry; a zero value delta
// past the first pair ends the table.
func (t *pclntab) pcvalue(off, entry, pc uint64) (int32, bool) {
	if off >= uint64(len(t.pctab)) {
		return 0, false
	}
	p := t.pctab[off:]
	val, at := int32(-1), entry
	for step := 0; step < maxPCValueSteps; step++ {
		uv, n := binary.Uvarint(p)
		if n <= 0 || (uv == 0 && step > 0) {
			return 0, false
		}
		p = p[n:]
		if uv&1 != 0 {
			uv = ^(uv >> 1)
		} else {
			uv >>= 1
		}
		dpc, n := binary.Uvarint(p)
		if n <= 0 {
			return 0, false
		}
		p = p[n:]
		val += int32(uv)
		at += dpc * t.quantum
		if pc < at {
			return val, true
		}
	}
	return 0, false
}
