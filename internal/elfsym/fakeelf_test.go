package elfsym

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
)

// fakeSym is a symbol of a fakeELF.
type fakeSym struct {
	name        string
	value, size uint64
	typ         elf.SymType // default STT_FUNC
	local, weak bool        // default STB_GLOBAL
	undef       bool
}

// fakeSeg is a PT_LOAD segment of a fakeELF.
type fakeSeg struct {
	off, vaddr, filesz uint64
	flags              elf.ProgFlag
}

// fakeELF describes a small ELF file, written by bytes without a
// toolchain: headers, PT_LOAD program headers, and .symtab/.dynsym with
// their string tables. No code is written; the segments only describe
// the offset-to-address mapping.
type fakeELF struct {
	class  elf.Class        // default ELFCLASS64
	order  binary.ByteOrder // default little-endian
	typ    elf.Type         // default ET_DYN
	segs   []fakeSeg
	symtab []fakeSym // nil: no .symtab
	dynsym []fakeSym // nil: no .dynsym
	// hasSymtab/hasDynsym write the section even when its list is empty.
	hasSymtab, hasDynsym bool
}

func (e fakeELF) bytes() []byte {
	if e.class == 0 {
		e.class = elf.ELFCLASS64
	}
	if e.order == nil {
		e.order = binary.LittleEndian
	}
	if e.typ == 0 {
		e.typ = elf.ET_DYN
	}
	is64 := e.class == elf.ELFCLASS64
	ehsize, phentsize, shentsize, symsize := 52, 32, 40, elf.Sym32Size
	if is64 {
		ehsize, phentsize, shentsize, symsize = 64, 56, 64, elf.Sym64Size
	}

	type section struct {
		name              string
		typ               elf.SectionType
		data              []byte
		link, info        uint32
		entsize, addalign uint64
	}
	secs := []section{{}} // the null section
	shstr := []byte{0}
	nameOff := func(n string) uint32 {
		off := uint32(len(shstr))
		shstr = append(append(shstr, n...), 0)
		return off
	}
	addSyms := func(name, strName string, typ elf.SectionType, syms []fakeSym) {
		str := []byte{0}
		var tab bytes.Buffer
		tab.Write(make([]byte, symsize)) // the null symbol
		for _, s := range syms {
			n := uint32(len(str))
			str = append(append(str, s.name...), 0)
			t, b := s.typ, elf.STB_GLOBAL
			if t == 0 {
				t = elf.STT_FUNC
			}
			switch {
			case s.local:
				b = elf.STB_LOCAL
			case s.weak:
				b = elf.STB_WEAK
			}
			shndx := uint16(1)
			if s.undef {
				shndx = 0
			}
			info := elf.ST_INFO(b, t)
			if is64 {
				binary.Write(&tab, e.order, elf.Sym64{Name: n, Info: info, Shndx: shndx, Value: s.value, Size: s.size})
			} else {
				binary.Write(&tab, e.order, elf.Sym32{Name: n, Info: info, Shndx: shndx, Value: uint32(s.value), Size: uint32(s.size)})
			}
		}
		strIdx := uint32(len(secs) + 1)
		secs = append(secs,
			section{name: name, typ: typ, data: tab.Bytes(), link: strIdx, info: 1, entsize: uint64(symsize), addalign: 8},
			section{name: strName, typ: elf.SHT_STRTAB, data: str, addalign: 1})
	}
	if e.symtab != nil || e.hasSymtab {
		addSyms(".symtab", ".strtab", elf.SHT_SYMTAB, e.symtab)
	}
	if e.dynsym != nil || e.hasDynsym {
		addSyms(".dynsym", ".dynstr", elf.SHT_DYNSYM, e.dynsym)
	}
	secs = append(secs, section{name: ".shstrtab", typ: elf.SHT_STRTAB, addalign: 1})
	names := make([]uint32, len(secs))
	for i := 1; i < len(secs); i++ {
		names[i] = nameOff(secs[i].name)
	}
	secs[len(secs)-1].data = shstr

	// Layout: header, program headers, section data, section headers.
	phoff := uint64(ehsize)
	pos := phoff + uint64(len(e.segs)*phentsize)
	offs := make([]uint64, len(secs))
	for i := 1; i < len(secs); i++ {
		pos = (pos + 7) &^ 7
		offs[i] = pos
		pos += uint64(len(secs[i].data))
	}
	shoff := (pos + 7) &^ 7

	var out bytes.Buffer
	ident := [elf.EI_NIDENT]byte{0x7f, 'E', 'L', 'F', byte(e.class), 0, byte(elf.EV_CURRENT)}
	if e.order == binary.LittleEndian {
		ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	} else {
		ident[elf.EI_DATA] = byte(elf.ELFDATA2MSB)
	}
	if is64 {
		binary.Write(&out, e.order, elf.Header64{Ident: ident, Type: uint16(e.typ), Machine: uint16(elf.EM_X86_64),
			Version: uint32(elf.EV_CURRENT), Phoff: phoff, Shoff: shoff, Ehsize: uint16(ehsize),
			Phentsize: uint16(phentsize), Phnum: uint16(len(e.segs)), Shentsize: uint16(shentsize),
			Shnum: uint16(len(secs)), Shstrndx: uint16(len(secs) - 1)})
		for _, s := range e.segs {
			binary.Write(&out, e.order, elf.Prog64{Type: uint32(elf.PT_LOAD), Flags: uint32(s.flags),
				Off: s.off, Vaddr: s.vaddr, Paddr: s.vaddr, Filesz: s.filesz, Memsz: s.filesz, Align: 0x1000})
		}
	} else {
		binary.Write(&out, e.order, elf.Header32{Ident: ident, Type: uint16(e.typ), Machine: uint16(elf.EM_386),
			Version: uint32(elf.EV_CURRENT), Phoff: uint32(phoff), Shoff: uint32(shoff), Ehsize: uint16(ehsize),
			Phentsize: uint16(phentsize), Phnum: uint16(len(e.segs)), Shentsize: uint16(shentsize),
			Shnum: uint16(len(secs)), Shstrndx: uint16(len(secs) - 1)})
		for _, s := range e.segs {
			binary.Write(&out, e.order, elf.Prog32{Type: uint32(elf.PT_LOAD), Flags: uint32(s.flags),
				Off: uint32(s.off), Vaddr: uint32(s.vaddr), Paddr: uint32(s.vaddr), Filesz: uint32(s.filesz),
				Memsz: uint32(s.filesz), Align: 0x1000})
		}
	}
	for i := 1; i < len(secs); i++ {
		out.Write(make([]byte, int(offs[i])-out.Len()))
		out.Write(secs[i].data)
	}
	out.Write(make([]byte, int(shoff)-out.Len()))
	for i, s := range secs {
		var off, size uint64
		if i > 0 {
			off, size = offs[i], uint64(len(s.data))
		}
		if is64 {
			binary.Write(&out, e.order, elf.Section64{Name: names[i], Type: uint32(s.typ), Off: off, Size: size,
				Link: s.link, Info: s.info, Addralign: s.addalign, Entsize: s.entsize})
		} else {
			binary.Write(&out, e.order, elf.Section32{Name: names[i], Type: uint32(s.typ), Off: uint32(off),
				Size: uint32(size), Link: s.link, Info: s.info, Addralign: uint32(s.addalign), Entsize: uint32(s.entsize)})
		}
	}
	return out.Bytes()
}
