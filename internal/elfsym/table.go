package elfsym

import (
	"bytes"
	"cmp"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync/atomic"
)

// ErrNoSymbols is wrapped by the error for a file that is not ELF, or that
// has no function symbols at all: stripped of .symtab and exporting no
// function in .dynsym.
var ErrNoSymbols = errors.New("no function symbols")

// Defaults of Limits.
const (
	DefaultMaxSymbols   = 1 << 18
	DefaultMaxNameBytes = 32 << 20
	DefaultMemoSize     = 4096
)

// MaxNameLen is the longest symbol name a Table keeps; a longer one is
// truncated (and so no longer demangles).
const MaxNameLen = 1<<16 - 1

// Limits bound the memory of one Table. A zero or negative field takes its
// default.
type Limits struct {
	// MaxSymbols is the most function symbols kept (default 1<<18). A
	// symbol costs 28 bytes plus its name.
	MaxSymbols int
	// MaxNameBytes is the most bytes of symbol names kept (default 32 MiB,
	// at most 4 GiB).
	MaxNameBytes int
	// MemoSize is the number of demangled lookups Resolve remembers
	// (default 4096, rounded up to a power of two).
	MemoSize int
}

func (l Limits) withDefaults() Limits {
	if l.MaxSymbols <= 0 {
		l.MaxSymbols = DefaultMaxSymbols
	}
	if l.MaxNameBytes <= 0 {
		l.MaxNameBytes = DefaultMaxNameBytes
	}
	l.MaxNameBytes = int(min(uint64(l.MaxNameBytes), 1<<32-1))
	if l.MemoSize <= 0 {
		l.MemoSize = DefaultMemoSize
	}
	l.MemoSize = min(l.MemoSize, 1<<24)
	return l
}

// Table is the function symbols of one ELF file. It is safe for concurrent
// use.
type Table struct {
	names    string // every kept name, back to back
	syms     []sym  // sized symbols by (addr, rank), then unsized ones
	nsized   int
	byName   []uint32 // indices of syms by (name, rank)
	segs     []segment
	dropped  int
	stripped bool

	memo      []atomic.Pointer[memoEntry]
	memoShift uint8
}

// sym is one function symbol. name and nameLen locate its name in
// Table.names; while the table is built, name is the offset in the ELF
// string table instead.
type sym struct {
	addr, size uint64
	name       uint32
	nameLen    uint16
	rank       uint8 // lower is preferred among symbols at one address
	src        uint8 // srcSymtab or srcDynsym
}

// Sizes of sym and segment in memory (the tests check them).
const (
	symSize     = 24
	segmentSize = 24
)

const (
	srcSymtab = iota
	srcDynsym
)

// segment is a PT_LOAD program header with file contents.
type segment struct {
	off, vaddr, filesz uint64
}

type memoEntry struct {
	off  uint64
	name string
	ok   bool
}

// Open builds the Table of the ELF file at path.
func Open(path string, lim Limits) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("elfsym: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("elfsym: %w", err)
	}
	t, err := newTable(f, fi.Size(), lim)
	if err != nil {
		return nil, fmt.Errorf("elfsym: %s: %w", path, err)
	}
	return t, nil
}

// NewTable builds the Table of the ELF file of size bytes that r reads.
func NewTable(r io.ReaderAt, size int64, lim Limits) (*Table, error) {
	t, err := newTable(r, size, lim)
	if err != nil {
		return nil, fmt.Errorf("elfsym: %w", err)
	}
	return t, nil
}

// Len returns the number of function symbols kept.
func (t *Table) Len() int { return len(t.syms) }

// Dropped returns the number of function symbols left out: over
// Limits.MaxSymbols or Limits.MaxNameBytes, or without a name in their
// string table.
func (t *Table) Dropped() int { return t.dropped }

// Stripped reports that the file has no .symtab: only the exported
// functions of .dynsym are known.
func (t *Table) Stripped() bool { return t.stripped }

// bytes is roughly the memory t holds: its symbols, names, indexes and
// memo slots (not the memoized names).
func (t *Table) bytes() int64 {
	return int64(len(t.syms))*symSize + int64(len(t.names)) +
		int64(len(t.byName))*4 + int64(len(t.segs))*segmentSize + int64(len(t.memo))*8
}

// LookupOffset returns the raw (mangled) name of the function that
// contains file offset off. A symbol with a size contains the offsets it
// covers; one without a size only its own offset, and only where no sized
// symbol contains it.
func (t *Table) LookupOffset(off uint64) (string, bool) {
	v, ok := t.vaddr(off)
	if !ok {
		return "", false
	}
	sized := t.syms[:t.nsized]
	// The last address group at or before v, best rank first.
	hi := upper(sized, v)
	if hi > 0 {
		lo := hi - 1
		for lo > 0 && sized[lo-1].addr == sized[hi-1].addr {
			lo--
		}
		for _, s := range sized[lo:hi] {
			if v-s.addr < s.size {
				return t.name(s), true
			}
		}
	}
	unsized := t.syms[t.nsized:]
	if i := upper(unsized, v-1); i < len(unsized) && unsized[i].addr == v && v > 0 {
		return t.name(unsized[i]), true
	}
	return "", false
}

// Resolve is LookupOffset with the name demangled (Demangle), and the
// result remembered for the next lookup of off.
func (t *Table) Resolve(off uint64) (string, bool) {
	slot := &t.memo[(off*0x9e3779b97f4a7c15)>>t.memoShift]
	if e := slot.Load(); e != nil && e.off == off {
		return e.name, e.ok
	}
	name, ok := t.LookupOffset(off)
	if ok {
		name = Demangle(name)
	}
	slot.Store(&memoEntry{off: off, name: name, ok: ok})
	return name, ok
}

// Has reports whether the file has a function symbol named name (raw,
// as in the symbol table).
func (t *Table) Has(name string) bool {
	_, ok := t.find(name)
	return ok
}

// Address returns the file offset of the function symbol named name: what
// a uprobe attaches at. Where several symbols have the name (local
// functions of different files), a global one wins. ok is false when there
// is no such function, or its address lies in no PT_LOAD segment.
func (t *Table) Address(name string) (uint64, bool) {
	s, ok := t.find(name)
	if !ok {
		return 0, false
	}
	return t.offset(s.addr)
}

func (t *Table) find(name string) (sym, bool) {
	lo, hi := 0, len(t.byName)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if t.name(t.syms[t.byName[mid]]) < name {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(t.byName) {
		if s := t.syms[t.byName[lo]]; t.name(s) == name {
			return s, true
		}
	}
	return sym{}, false
}

func (t *Table) name(s sym) string {
	return t.names[s.name : s.name+uint32(s.nameLen)]
}

// vaddr converts a file offset to a link-time address.
func (t *Table) vaddr(off uint64) (uint64, bool) {
	for _, s := range t.segs {
		if off >= s.off && off-s.off < s.filesz {
			return off - s.off + s.vaddr, true
		}
	}
	return 0, false
}

// offset converts a link-time address to a file offset.
func (t *Table) offset(vaddr uint64) (uint64, bool) {
	for _, s := range t.segs {
		if vaddr >= s.vaddr && vaddr-s.vaddr < s.filesz {
			return vaddr - s.vaddr + s.off, true
		}
	}
	return 0, false
}

// upper returns the index of the first symbol of ss whose address is
// above v.
func upper(ss []sym, v uint64) int {
	lo, hi := 0, len(ss)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if ss[mid].addr <= v {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// builder holds what building one Table needs.
type builder struct {
	r       io.ReaderAt
	size    uint64
	f       *elf.File
	lim     Limits
	entsize uint64 // of a symbol table entry
	syms    []sym
	dropped int
	nameBuf []byte
}

func newTable(r io.ReaderAt, size int64, lim Limits) (*Table, error) {
	lim = lim.withDefaults()
	if size < 0 {
		return nil, fmt.Errorf("negative file size %d", size)
	}
	var magic [len(elf.ELFMAG)]byte
	if size < int64(len(magic)) {
		return nil, fmt.Errorf("not an ELF file: %d bytes: %w", size, ErrNoSymbols)
	}
	if n, err := r.ReadAt(magic[:], 0); n < len(magic) {
		if err == nil || errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("not an ELF file: %d bytes: %w", size, ErrNoSymbols)
		}
		return nil, fmt.Errorf("read ELF magic: %w", err)
	}
	if string(magic[:]) != elf.ELFMAG {
		return nil, fmt.Errorf("not an ELF file (starts with %q): %w", magic[:], ErrNoSymbols)
	}
	// debug/elf reads the headers and the section names whole: bound what
	// a crafted file can make it read.
	f, err := elf.NewFile(io.NewSectionReader(&budgetReader{r: r, left: maxHeaderBytes}, 0, size))
	if err != nil {
		return nil, fmt.Errorf("read ELF headers: %w", err)
	}
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return nil, fmt.Errorf("ELF type %s: want an executable or a shared object", f.Type)
	}
	b := &builder{r: r, size: uint64(size), f: f, lim: lim, entsize: entrySize(f)}

	var symtab, dynsym *elf.Section
	for _, s := range f.Sections {
		switch {
		case s.Type == elf.SHT_SYMTAB && symtab == nil:
			symtab = s
		case s.Type == elf.SHT_DYNSYM && dynsym == nil:
			dynsym = s
		}
	}
	// Room for every entry of both tables, up to the limit, so that
	// collecting does not reallocate; finish trims what is unused.
	var entries, strBytes uint64
	for _, s := range []*elf.Section{symtab, dynsym} {
		if s != nil && s.Size <= b.size {
			entries += s.Size / b.entsize
			if st, err := b.strtab(s); err == nil {
				strBytes += st.Size
			}
		}
	}
	b.syms = make([]sym, 0, min(entries, uint64(lim.MaxSymbols)))
	b.nameBuf = make([]byte, 0, min(strBytes, uint64(lim.MaxNameBytes)))
	if symtab != nil {
		if err := b.read(symtab, srcSymtab); err != nil {
			return nil, err
		}
	}
	if dynsym != nil {
		// .dynsym adds what .symtab lacks: all of it in a stripped file,
		// little or nothing in another.
		slices.SortFunc(b.syms, func(a, b sym) int { return cmp.Compare(a.addr, b.addr) })
		if err := b.read(dynsym, srcDynsym); err != nil {
			return nil, err
		}
	}
	if err := b.names(symtab, dynsym); err != nil {
		return nil, err
	}
	if len(b.syms) == 0 {
		what := "neither .symtab nor .dynsym"
		switch {
		case symtab != nil && dynsym != nil:
			what = ".symtab and .dynsym without defined functions"
		case symtab != nil:
			what = ".symtab without defined functions and no .dynsym"
		case dynsym != nil:
			what = "no .symtab and .dynsym without defined functions"
		}
		if b.dropped > 0 {
			what += fmt.Sprintf(", %d left out by limits", b.dropped)
		}
		return nil, fmt.Errorf("%s: %w", what, ErrNoSymbols)
	}

	t := &Table{dropped: b.dropped, stripped: symtab == nil}
	t.segs = loads(f)
	if len(t.segs) == 0 {
		return nil, fmt.Errorf("no PT_LOAD segment with file contents to map offsets to addresses")
	}
	t.finish(b.syms, string(b.nameBuf), lim.MemoSize)
	return t, nil
}

// read collects the defined function symbols of sec, up to MaxSymbols.
// Symbols of .dynsym at an address .symtab already has are skipped.
func (b *builder) read(sec *elf.Section, src uint8) error {
	if _, err := b.strtab(sec); err != nil {
		return err
	}
	nsymtab := len(b.syms)
	return b.entries(sec, func(e symEntry) {
		if !e.definedFunc() {
			return
		}
		if src == srcDynsym && nsymtab > 0 {
			if _, found := slices.BinarySearchFunc(b.syms[:nsymtab], e.addr,
				func(a sym, v uint64) int { return cmp.Compare(a.addr, v) }); found {
				return
			}
		}
		if len(b.syms) >= b.lim.MaxSymbols {
			b.dropped++
			return
		}
		b.syms = append(b.syms, sym{
			addr: e.addr, size: e.size, name: e.name, src: src,
			rank: bindRank(elf.SymBind(e.info>>4))<<1 | src,
		})
	})
}

// symEntry is one entry of a symbol table.
type symEntry struct {
	name       uint32 // offset in the linked string table
	info       byte
	shndx      uint16
	addr, size uint64
}

// definedFunc reports whether e is a named function (or ifunc) that its
// file defines at a non-zero address.
func (e symEntry) definedFunc() bool {
	typ := elf.SymType(e.info & 0xf)
	return (typ == elf.STT_FUNC || typ == elf.STT_GNU_IFUNC) &&
		e.shndx != uint16(elf.SHN_UNDEF) && e.addr != 0 && e.name != 0
}

// entries calls fn with every entry of the symbol table sec after the null
// one, in order, reading through a fixed buffer.
func (b *builder) entries(sec *elf.Section, fn func(symEntry)) error {
	entsize := b.entsize
	if err := b.check(sec, entsize); err != nil {
		return err
	}
	bo := b.f.ByteOrder
	var buf [256 * elf.Sym64Size]byte
	chunk := uint64(len(buf)) / entsize * entsize
	for pos := entsize; pos+entsize <= sec.Size; {
		n := min(chunk, (sec.Size-pos)/entsize*entsize)
		if err := readFull(b.r, buf[:n], sec.Offset+pos); err != nil {
			return fmt.Errorf("read %s at file offset %#x: %w", sec.Name, sec.Offset+pos, err)
		}
		pos += n
		for e := buf[:n]; len(e) > 0; e = e[entsize:] {
			if entsize == elf.Sym64Size {
				fn(symEntry{name: bo.Uint32(e[0:4]), info: e[4], shndx: bo.Uint16(e[6:8]),
					addr: bo.Uint64(e[8:16]), size: bo.Uint64(e[16:24])})
			} else {
				fn(symEntry{name: bo.Uint32(e[0:4]), addr: uint64(bo.Uint32(e[4:8])),
					size: uint64(bo.Uint32(e[8:12])), info: e[12], shndx: bo.Uint16(e[14:16])})
			}
		}
	}
	return nil
}

// bindRank orders the bindings of symbols at one address: a global name
// before a weak one before a local one.
func bindRank(b elf.SymBind) uint8 {
	switch b {
	case elf.STB_GLOBAL:
		return 0
	case elf.STB_WEAK:
		return 1
	case elf.STB_LOCAL:
		return 2
	}
	return 3
}

// check verifies that sec lies in the file, uncompressed, with entries of
// entsize bytes (entsize 0: any).
func (b *builder) check(sec *elf.Section, entsize uint64) error {
	if sec.Flags&elf.SHF_COMPRESSED != 0 {
		return fmt.Errorf("section %s is compressed", sec.Name)
	}
	if sec.Offset > b.size || sec.Size > b.size-sec.Offset {
		return fmt.Errorf("section %s [%#x, +%#x) lies outside the file of %#x bytes",
			sec.Name, sec.Offset, sec.Size, b.size)
	}
	if entsize != 0 && sec.Entsize != 0 && sec.Entsize != entsize {
		return fmt.Errorf("section %s has entries of %d bytes, want %d", sec.Name, sec.Entsize, entsize)
	}
	return nil
}

// entrySize is the size of a symbol table symEntry of f's class.
func entrySize(f *elf.File) uint64 {
	if f.Class == elf.ELFCLASS32 {
		return elf.Sym32Size
	}
	return elf.Sym64Size
}

// strtab returns the string table section that sec links to.
func (b *builder) strtab(sec *elf.Section) (*elf.Section, error) {
	if sec.Link == 0 || int(sec.Link) >= len(b.f.Sections) {
		return nil, fmt.Errorf("section %s links to string table %d of %d sections",
			sec.Name, sec.Link, len(b.f.Sections))
	}
	st := b.f.Sections[sec.Link]
	if st.Type != elf.SHT_STRTAB {
		return nil, fmt.Errorf("section %s links to section %d (%s), of type %s, not a string table",
			sec.Name, sec.Link, st.Name, st.Type)
	}
	if err := b.check(st, 0); err != nil {
		return nil, err
	}
	return st, nil
}

// names reads the name of every collected symbol into one buffer, reading
// each string table forward through a bounded window. A symbol whose name
// lies outside its table, or that does not fit MaxNameBytes, is dropped.
func (b *builder) names(symtab, dynsym *elf.Section) error {
	var w window
	for src, sec := range [...]*elf.Section{srcSymtab: symtab, srcDynsym: dynsym} {
		if sec == nil {
			continue
		}
		st, err := b.strtab(sec)
		if err != nil {
			return err
		}
		idx := make([]uint32, 0, len(b.syms))
		for i, s := range b.syms {
			if s.src == uint8(src) {
				idx = append(idx, uint32(i))
			}
		}
		slices.SortFunc(idx, func(i, j uint32) int { return cmp.Compare(b.syms[i].name, b.syms[j].name) })
		w.reset(b.r, st)
		var prevOff, prevPos uint32
		var prevLen uint16
		prevOK := false
		for _, i := range idx {
			s := &b.syms[i]
			off := s.name
			if prevOK && off == prevOff {
				s.name, s.nameLen = prevPos, prevLen
				continue
			}
			prevOK = false
			name, err := w.name(uint64(off))
			if err != nil {
				return fmt.Errorf("read %s: %w", st.Name, err)
			}
			if len(name) == 0 || len(b.nameBuf)+len(name) > b.lim.MaxNameBytes {
				s.nameLen, s.size, s.addr = 0, 0, 0 // dropped below
				continue
			}
			pos := uint32(len(b.nameBuf))
			b.nameBuf = append(b.nameBuf, name...)
			s.name, s.nameLen = pos, uint16(len(name))
			prevOff, prevPos, prevLen, prevOK = off, pos, s.nameLen, true
		}
	}
	n := len(b.syms)
	b.syms = slices.DeleteFunc(b.syms, func(s sym) bool { return s.nameLen == 0 })
	b.dropped += n - len(b.syms)
	return nil
}

// finish sorts syms into t and sets up the memo.
func (t *Table) finish(syms []sym, names string, memoSize int) {
	t.names = names
	if cap(syms) > len(syms)+len(syms)/4 {
		syms = slices.Clone(syms)
	}
	slices.SortFunc(syms, func(a, b sym) int {
		if c := cmp.Compare(boolInt(a.size == 0), boolInt(b.size == 0)); c != 0 {
			return c
		}
		if c := cmp.Compare(a.addr, b.addr); c != 0 {
			return c
		}
		if c := cmp.Compare(a.rank, b.rank); c != 0 {
			return c
		}
		return strings.Compare(t.name(a), t.name(b))
	})
	t.syms = syms
	for t.nsized < len(syms) && syms[t.nsized].size != 0 {
		t.nsized++
	}
	t.byName = make([]uint32, len(syms))
	for i := range t.byName {
		t.byName[i] = uint32(i)
	}
	slices.SortFunc(t.byName, func(i, j uint32) int {
		a, b := syms[i], syms[j]
		if c := strings.Compare(t.name(a), t.name(b)); c != 0 {
			return c
		}
		if c := cmp.Compare(a.rank, b.rank); c != 0 {
			return c
		}
		return cmp.Compare(i, j)
	})
	bits := uint8(0)
	for 1<<bits < memoSize {
		bits++
	}
	t.memo = make([]atomic.Pointer[memoEntry], 1<<bits)
	t.memoShift = 64 - bits
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// loads returns the PT_LOAD segments of f that have file contents,
// executable ones first: they are where code offsets are looked up.
func loads(f *elf.File) []segment {
	var exec, other []segment
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD || p.Filesz == 0 ||
			p.Off+p.Filesz < p.Off || p.Vaddr+p.Filesz < p.Vaddr {
			continue
		}
		s := segment{off: p.Off, vaddr: p.Vaddr, filesz: p.Filesz}
		if p.Flags&elf.PF_X != 0 {
			exec = append(exec, s)
		} else {
			other = append(other, s)
		}
	}
	return append(exec, other...)
}

// window reads a string table forward through a buffer that holds at least
// one name of MaxNameLen bytes.
type window struct {
	r          io.ReaderAt
	base, size uint64 // the table's file offset and size
	buf        []byte
	start      uint64 // table offset of buf[0]
	n          int    // valid bytes of buf
}

const windowSize = 2 * (MaxNameLen + 1)

func (w *window) reset(r io.ReaderAt, st *elf.Section) {
	// A table smaller than the window is read whole.
	if need := int(min(windowSize, st.Size)); len(w.buf) < need {
		w.buf = make([]byte, need)
	}
	w.r, w.base, w.size, w.start, w.n = r, st.Offset, st.Size, 0, 0
}

// name returns the NUL-terminated string at table offset off, at most
// MaxNameLen bytes of it, or nil when off is outside the table. It is
// valid until the next call.
func (w *window) name(off uint64) ([]byte, error) {
	if off >= w.size {
		return nil, nil
	}
	for {
		if off >= w.start && off-w.start < uint64(w.n) {
			s := w.buf[off-w.start : w.n]
			if i := bytes.IndexByte(s, 0); i >= 0 {
				return s[:min(i, MaxNameLen)], nil
			}
			if w.start+uint64(w.n) == w.size || len(s) >= MaxNameLen {
				return s[:min(len(s), MaxNameLen)], nil // unterminated, or too long
			}
		}
		n := int(min(uint64(len(w.buf)), w.size-off))
		if err := readFull(w.r, w.buf[:n], w.base+off); err != nil {
			return nil, fmt.Errorf("at file offset %#x: %w", w.base+off, err)
		}
		w.start, w.n = off, n
	}
}

// maxHeaderBytes bounds what debug/elf may read of one file: program and
// section headers (at most 65535 of each) and section names.
const maxHeaderBytes = 16 << 20

// budgetReader fails reads once left bytes were read.
type budgetReader struct {
	r    io.ReaderAt
	left int64
}

func (b *budgetReader) ReadAt(p []byte, off int64) (int, error) {
	if int64(len(p)) > b.left {
		return 0, fmt.Errorf("headers of more than %d bytes", maxHeaderBytes)
	}
	b.left -= int64(len(p))
	return b.r.ReadAt(p, off)
}

// readFull reads len(p) bytes at off; a short read is an error.
func readFull(r io.ReaderAt, p []byte, off uint64) error {
	if off > 1<<63-1 {
		return fmt.Errorf("offset %#x out of range", off)
	}
	n, err := r.ReadAt(p, int64(off))
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return err
}
