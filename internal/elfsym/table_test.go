package elfsym

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The text segment of the fake shared object: file offset 0x1000 maps to
// link-time address 0x201000, as lld lays out a shared object.
const (
	textOff   = 0x1000
	textVaddr = 0x201000
)

func off(vaddr uint64) uint64 { return vaddr - textVaddr + textOff }

var fakeSegs = []fakeSeg{
	{off: 0, vaddr: 0, filesz: 0x1000, flags: elf.PF_R},
	{off: textOff, vaddr: textVaddr, filesz: 0x4000, flags: elf.PF_R | elf.PF_X},
	{off: 0x5000, vaddr: 0x206000, filesz: 0x100, flags: elf.PF_R | elf.PF_W},
}

func fakeLib() fakeELF {
	return fakeELF{
		segs: fakeSegs,
		symtab: []fakeSym{
			{name: "f1_local_alias", value: 0x201000, size: 0x100, local: true},
			{name: "f1", value: 0x201000, size: 0x100},
			{name: "label", value: 0x201080},
			{name: "lonely", value: 0x202000},
			{name: "f2", value: 0x202100, size: 0x10, weak: true},
			{name: "fast", value: 0x202200, size: 0x20, typ: elf.STT_GNU_IFUNC},
			{name: "_Z9vectorAddPfS_S_i", value: 0x202400, size: 0x40},
			{name: "_Z10vectorAddPfS_S_i", value: 0x202500, size: 0x40},
			{name: "helper", value: 0x202600, size: 0x10, local: true},
			{name: "helper", value: 0x202700, size: 0x10},
			{name: "data", value: 0x206010, size: 8, typ: elf.STT_OBJECT},
			{name: "imported", undef: true},
			{name: "at_zero", value: 0, size: 0x10},
		},
		dynsym: []fakeSym{
			{name: "f1", value: 0x201000, size: 0x100},
			{name: "exported_only", value: 0x204000, size: 0x10},
			{name: "imported", undef: true},
		},
	}
}

func mustTable(t testing.TB, b []byte, lim Limits) *Table {
	t.Helper()
	tab, err := NewTable(bytes.NewReader(b), int64(len(b)), lim)
	require.NoError(t, err)
	return tab
}

func TestLookupOffset(t *testing.T) {
	tab := mustTable(t, fakeLib().bytes(), Limits{})
	require.False(t, tab.Stripped(), "Stripped")
	require.Zero(t, tab.Dropped(), "Dropped")
	require.Equal(t, 11, tab.Len(), "Len")
	for _, tc := range []struct {
		off       uint64
		raw, name string // raw "" for no symbol
	}{
		{off(0x201000), "f1", "f1"}, // the global alias wins
		{off(0x2010ff), "f1", "f1"},
		{off(0x201080), "f1", "f1"}, // a sized symbol wins over a label
		{off(0x201100), "", ""},
		{off(0x202000), "lonely", "lonely"}, // no size: its own address only
		{off(0x202001), "", ""},
		{off(0x202105), "f2", "f2"},
		{off(0x202210), "fast", "fast"},
		{off(0x202420), "_Z9vectorAddPfS_S_i", "vectorAdd(float*, float*, float*, int)"},
		{off(0x202500), "_Z10vectorAddPfS_S_i", "_Z10vectorAddPfS_S_i"}, // does not demangle
		{off(0x202605), "helper", "helper"},
		{off(0x204008), "exported_only", "exported_only"}, // only in .dynsym
		{0x5010, "", ""},      // data
		{0x10, "", ""},        // headers
		{0x100000, "", ""},    // outside every segment
		{1<<64 - 1, "", ""},   // ditto
		{textOff - 1, "", ""}, // just before the text
	} {
		raw, ok := tab.LookupOffset(tc.off)
		assert.Equal(t, tc.raw, raw, "LookupOffset(%#x) = %q, %v; want %q", tc.off, raw, ok, tc.raw)
		assert.Equal(t, tc.raw != "", ok, "LookupOffset(%#x) = %q, %v; want %q", tc.off, raw, ok, tc.raw)
		for range 2 { // the second comes from the memo
			name, ok := tab.Resolve(tc.off)
			assert.Equal(t, tc.name, name, "Resolve(%#x) = %q, %v; want %q", tc.off, name, ok, tc.name)
			assert.Equal(t, tc.raw != "", ok, "Resolve(%#x) = %q, %v; want %q", tc.off, name, ok, tc.name)
		}
	}
}

func TestAddress(t *testing.T) {
	tab := mustTable(t, fakeLib().bytes(), Limits{})
	for _, tc := range []struct {
		name string
		off  uint64
		ok   bool
	}{
		{"f1", off(0x201000), true},
		{"f1_local_alias", off(0x201000), true},
		{"label", off(0x201080), true},
		{"helper", off(0x202700), true}, // the global one
		{"fast", off(0x202200), true},
		{"exported_only", off(0x204000), true},
		{"_Z9vectorAddPfS_S_i", off(0x202400), true},
		{"vectorAdd(float*, float*, float*, int)", 0, false}, // raw names only
		{"data", 0, false},
		{"imported", 0, false},
		{"at_zero", 0, false},
		{"", 0, false},
		{"zzz", 0, false},
	} {
		got, ok := tab.Address(tc.name)
		assert.Equal(t, tc.off, got, "Address(%q) = %#x, %v; want %#x, %v", tc.name, got, ok, tc.off, tc.ok)
		assert.Equal(t, tc.ok, ok, "Address(%q) = %#x, %v; want %#x, %v", tc.name, got, ok, tc.off, tc.ok)
		assert.Equal(t, tc.ok, tab.Has(tc.name), "Has(%q)", tc.name)
	}
}

func TestStrippedAnd32BitBigEndian(t *testing.T) {
	e := fakeLib()
	e.symtab = nil
	tab := mustTable(t, e.bytes(), Limits{})
	require.True(t, tab.Stripped(), "Stripped")
	require.Equal(t, 2, tab.Len(), "Len")
	name, _ := tab.LookupOffset(off(0x201010))
	assert.Equal(t, "f1", name, "LookupOffset in f1")

	e32 := fakeELF{
		class: elf.ELFCLASS32, order: binary.BigEndian, typ: elf.ET_EXEC,
		segs:   []fakeSeg{{off: 0, vaddr: 0x10000, filesz: 0x2000, flags: elf.PF_R | elf.PF_X}},
		symtab: []fakeSym{{name: "main", value: 0x10100, size: 0x20}, {name: "_start", value: 0x10000}},
	}
	tab = mustTable(t, e32.bytes(), Limits{})
	name, ok := tab.LookupOffset(0x11f)
	assert.Equal(t, "main", name, "ELF32 LookupOffset(0x11f) = %q, %v", name, ok)
	assert.True(t, ok, "ELF32 LookupOffset(0x11f) = %q, %v", name, ok)
	name, _ = tab.LookupOffset(0x120)
	assert.Empty(t, name, "ELF32 LookupOffset(0x120), want none")
	o, ok := tab.Address("_start")
	assert.Zero(t, o, "ELF32 Address(_start) = %#x, %v", o, ok)
	assert.True(t, ok, "ELF32 Address(_start) = %#x, %v", o, ok)
}

// patchSection rewrites one field of section header i of a 64-bit
// little-endian ELF file.
func patchSection(b []byte, i int, field int, v uint64, size int) []byte {
	b = bytes.Clone(b)
	shoff := binary.LittleEndian.Uint64(b[0x28:])
	p := b[int(shoff)+64*i+field:]
	if size == 4 {
		binary.LittleEndian.PutUint32(p, uint32(v))
	} else {
		binary.LittleEndian.PutUint64(p, v)
	}
	return b
}

func TestErrors(t *testing.T) {
	lib := fakeLib().bytes()
	// Offsets of fields in elf.Section64.
	const shType, shOff, shLink = 4, 0x18, 0x28
	for _, tc := range []struct {
		name    string
		b       []byte
		noSyms  bool
		message string
	}{
		{"empty", nil, true, "not an ELF file: 0 bytes"},
		{"script", []byte("#!/bin/sh\necho hi\n"), true, `not an ELF file (starts with "#!/b")`},
		{"no symbol tables", fakeELF{segs: fakeSegs}.bytes(), true, "neither .symtab nor .dynsym"},
		{"objects only", fakeELF{segs: fakeSegs, symtab: []fakeSym{{name: "x", value: 0x206000, typ: elf.STT_OBJECT}}}.bytes(),
			true, ".symtab without defined functions and no .dynsym"},
		{"imports only", fakeELF{segs: fakeSegs, dynsym: []fakeSym{{name: "printf", undef: true}}}.bytes(),
			true, "no .symtab and .dynsym without defined functions"},
		{"empty tables", fakeELF{segs: fakeSegs, hasSymtab: true, hasDynsym: true}.bytes(),
			true, ".symtab and .dynsym without defined functions"},
		{"object file", fakeELF{typ: elf.ET_REL, symtab: []fakeSym{{name: "f", value: 0x10, size: 1}}}.bytes(),
			false, "ELF type ET_REL: want an executable or a shared object"},
		{"core file", fakeELF{typ: elf.ET_CORE}.bytes(), false, "ELF type ET_CORE"},
		{"no PT_LOAD", fakeELF{symtab: []fakeSym{{name: "f", value: 0x10, size: 1}}}.bytes(),
			false, "no PT_LOAD segment"},
		{"bad magic after ELF", append([]byte("\x7fELF"), make([]byte, 60)...), false, "read ELF headers"},
		{"truncated headers", lib[:40], false, "read ELF headers"},
		{"truncated sections", lib[:len(lib)-200], false, "read ELF headers"},
		{"symtab outside the file", patchSection(lib, 1, shOff, 1<<40, 8), false,
			"section .symtab [0x10000000000, +0x"},
		{"no string table link", patchSection(lib, 1, shLink, 0, 4), false,
			"section .symtab links to string table 0 of 6 sections"},
		{"link to a non-string table", patchSection(lib, 1, shLink, 3, 4), false,
			"links to section 3 (.dynsym), of type SHT_DYNSYM, not a string table"},
		{"bad entry size", patchSection(lib, 1, 0x38, 16, 8), false,
			"section .symtab has entries of 16 bytes, want 24"},
		{"string table outside the file", patchSection(lib, 2, shOff, 1<<40, 8), false,
			"section .strtab [0x10000000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewTable(bytes.NewReader(tc.b), int64(len(tc.b)), Limits{})
			require.Error(t, err, "no error")
			assert.Equal(t, tc.noSyms, errors.Is(err, ErrNoSymbols), "errors.Is(%v, ErrNoSymbols)", err)
			assert.Contains(t, err.Error(), tc.message)
			assert.True(t, strings.HasPrefix(err.Error(), "elfsym: "), "error %q, want it to start with %q", err, "elfsym: ")
		})
	}
	_, err := NewTable(bytes.NewReader(lib), -1, Limits{})
	assert.Error(t, err, "negative size: no error")
}

func TestOpen(t *testing.T) {
	_, err := Open("/nonexistent/libx.so", Limits{})
	assert.ErrorContains(t, err, "/nonexistent/libx.so", "Open of a missing file")
	path := t.TempDir() + "/script.sh"
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"), 0o644))
	_, err = Open(path, Limits{})
	assert.ErrorIs(t, err, ErrNoSymbols, "Open of a script")
	assert.ErrorContains(t, err, path+": not an ELF file", "Open of a script")
}

func manySyms(n, nameLen int) []fakeSym {
	syms := make([]fakeSym, n)
	for i := range syms {
		name := fmt.Sprintf("f%0*d", nameLen-1, i)
		syms[i] = fakeSym{name: name, value: textVaddr + uint64(i)*0x10, size: 0x10}
	}
	return syms
}

func TestLimits(t *testing.T) {
	e := fakeELF{segs: fakeSegs, symtab: manySyms(100, 10)}
	tab := mustTable(t, e.bytes(), Limits{MaxSymbols: 10})
	assert.Equal(t, 10, tab.Len(), "MaxSymbols 10: Len")
	assert.Equal(t, 90, tab.Dropped(), "MaxSymbols 10: Dropped")
	tab = mustTable(t, e.bytes(), Limits{MaxNameBytes: 55})
	assert.Equal(t, 5, tab.Len(), "MaxNameBytes 55: Len")
	assert.Equal(t, 95, tab.Dropped(), "MaxNameBytes 55: Dropped")
	assert.LessOrEqual(t, len(tab.names), 55, "MaxNameBytes 55: name bytes")
	// Every symbol dropped: not "stripped", but the error says why.
	e.symtab = manySyms(3, 100)
	_, err := NewTable(bytes.NewReader(e.bytes()), int64(len(e.bytes())), Limits{MaxNameBytes: 50})
	assert.ErrorIs(t, err, ErrNoSymbols, "all dropped")
	assert.ErrorContains(t, err, "3 left out by limits", "all dropped")

	// A name longer than MaxNameLen is cut.
	long := strings.Repeat("x", MaxNameLen+100)
	e = fakeELF{segs: fakeSegs, symtab: []fakeSym{
		{name: "before", value: textVaddr, size: 0x10},
		{name: long, value: textVaddr + 0x10, size: 0x10},
		{name: "after", value: textVaddr + 0x20, size: 0x10},
	}}
	tab = mustTable(t, e.bytes(), Limits{})
	for i, want := range []string{"before", long[:MaxNameLen], "after"} {
		got, _ := tab.LookupOffset(textOff + uint64(i)*0x10)
		assert.Equal(t, want, got, "symbol %d: %d bytes %.10q…, want %d bytes", i, len(got), got, len(want))
	}
}

func TestMemoCollisions(t *testing.T) {
	e := fakeELF{segs: fakeSegs, symtab: manySyms(64, 8)}
	tab := mustTable(t, e.bytes(), Limits{MemoSize: 2})
	require.Len(t, tab.memo, 2, "memo slots")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 64 * 20 {
				k := (i + g) % 64
				want := fmt.Sprintf("f%07d", k)
				if got, ok := tab.Resolve(textOff + uint64(k)*0x10 + uint64(g)); got != want || !ok {
					assert.Equal(t, want, got, "Resolve symbol %d = %q, %v", k, got, ok)
					assert.True(t, ok, "Resolve symbol %d = %q, %v", k, got, ok)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestDemangle(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"_Z9vectorAddPfS_S_i", "vectorAdd(float*, float*, float*, int)"},
		{"_Z10vectorAddPfS_S_i", "_Z10vectorAddPfS_S_i"}, // "vectorAdd" has 9 letters: not a valid mangling
		{"_Z6kernelIfEvPT_i", "void kernel<float>(float*, int)"},
		{"_ZN2at6native12_GLOBAL__N_117vectorized_kernelILi4EEEvv",
			"void at::native::(anonymous namespace)::vectorized_kernel<4>()"},
		{"_Z3foov.cold", "foo() [clone .cold]"},
		{"_RNvCs15kBYyAo9fc_7mycrate4main", "mycrate::main"},
		{"_ZN5tokio7runtime4task3raw7RawTask4poll17h0123456789abcdefE", "tokio::runtime::task::raw::RawTask::poll"},
		{"cudaLaunchKernel", "cudaLaunchKernel"},
		{"github.com/xpuscope/xpuscope/internal/elfsym.Demangle", "github.com/xpuscope/xpuscope/internal/elfsym.Demangle"},
		{"_GLOBAL__sub_I_main.cpp", "_GLOBAL__sub_I_main.cpp"},
		{"_Z", "_Z"},
		{"_R", "_R"},
		{"", ""},
	} {
		assert.Equal(t, tc.want, Demangle(tc.in), "Demangle(%q)", tc.in)
	}
}

func FuzzDemangle(f *testing.F) {
	for _, s := range []string{"_Z9vectorAddPfS_S_i", "_ZN2at6native12_GLOBAL__N_117vectorized_kernelILi4EEEvv",
		"_RNvCs15kBYyAo9fc_7mycrate4main", "_GLOBAL__sub_I__Z1fv", "_Z3foov.cold"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Demangle(s)
		require.LessOrEqual(t, len(out), 1<<maxDemangled+len(s), "Demangle(%q) returned %d bytes", s, len(out))
	})
}

// FuzzTable reads arbitrary bytes as an ELF file, under small limits: it
// must not panic, must keep to its limits, and whatever symbols it keeps
// must be found again by name and offset.
func FuzzTable(f *testing.F) {
	f.Add(fakeLib().bytes())
	e := fakeLib()
	e.symtab = nil
	f.Add(e.bytes())
	f.Add(fakeELF{class: elf.ELFCLASS32, order: binary.BigEndian, typ: elf.ET_EXEC,
		segs:   []fakeSeg{{off: 0, vaddr: 0x10000, filesz: 0x2000, flags: elf.PF_R | elf.PF_X}},
		symtab: []fakeSym{{name: "main", value: 0x10100, size: 0x20}, {name: "_start", value: 0x10000}}}.bytes())
	f.Add(fakeELF{segs: fakeSegs, symtab: manySyms(40, 12)}.bytes())
	f.Add([]byte("\x7fELF"))
	lim := Limits{MaxSymbols: 32, MaxNameBytes: 512, MemoSize: 8}
	f.Fuzz(func(t *testing.T, b []byte) {
		tab, err := NewTable(bytes.NewReader(b), int64(len(b)), lim)
		if err != nil {
			return
		}
		require.LessOrEqual(t, tab.Len(), lim.MaxSymbols, "limits exceeded: %d symbols, %d name bytes, %d memo slots", tab.Len(), len(tab.names), len(tab.memo))
		require.LessOrEqual(t, len(tab.names), lim.MaxNameBytes, "limits exceeded: %d symbols, %d name bytes, %d memo slots", tab.Len(), len(tab.names), len(tab.memo))
		require.Len(t, tab.memo, lim.MemoSize, "limits exceeded: %d symbols, %d name bytes, %d memo slots", tab.Len(), len(tab.names), len(tab.memo))
		for _, s := range tab.syms {
			name := tab.name(s)
			require.NotEmpty(t, name, "symbol %q not found by name", name)
			require.True(t, tab.Has(name), "symbol %q not found by name", name)
			o, ok := tab.offset(s.addr)
			if !ok {
				continue
			}
			_, ok = tab.LookupOffset(o)
			require.True(t, ok, "symbol %q at offset %#x not found by offset", name, o)
			tab.Resolve(o)
			tab.Address(name)
		}
		for o := uint64(0); o < uint64(len(b))+64; o += 7 {
			tab.Resolve(o)
		}
	})
}

// TestHeaderBudget gives debug/elf a section-name table of 20 MiB: it must
// not read it whole.
func TestHeaderBudget(t *testing.T) {
	b := fakeLib().bytes()
	shoff := binary.LittleEndian.Uint64(b[0x28:])
	shstrndx := int(binary.LittleEndian.Uint16(b[0x3e:]))
	b = append(b, make([]byte, 20<<20)...)
	b = patchSection(b, shstrndx, 0x20, uint64(len(b))-shoff, 8) // its size: to the end of the file
	_, err := NewTable(bytes.NewReader(b), int64(len(b)), Limits{})
	require.ErrorContains(t, err, "read ELF headers", "want the header budget exceeded")
	require.ErrorContains(t, err, "headers of more than", "want the header budget exceeded")
}

func TestSizes(t *testing.T) {
	assert.Equal(t, uintptr(symSize), unsafe.Sizeof(sym{}), "the size of sym, against symSize")
	assert.Equal(t, uintptr(segmentSize), unsafe.Sizeof(segment{}), "the size of segment, against segmentSize")
}
