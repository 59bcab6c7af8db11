package uprobe

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
)

// maxSymtabBytes bounds the .symtab read when looking for symbols: a huge
// unstripped library must not cost hundreds of megabytes to classify.
const maxSymtabBytes = 64 << 20

// resolve opens the ELF file at path and returns the file offsets of the
// wanted function symbols it defines, from .dynsym and, with symtab, from
// .symtab too (a statically linked runtime need not export its symbols).
// The offsets are what a uprobe attaches to.
func resolve(path string, wanted map[string]bool, symtab bool) (map[string]uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	found, err := resolveELF(f, wanted, symtab)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return found, nil
}

// resolveELF is resolve on an open file. It reads only the symbol tables
// and keeps only the wanted names, so classifying a large library stays
// cheap (internal/elfsym builds the full table symbolization needs).
func resolveELF(r io.ReaderAt, wanted map[string]bool, symtab bool) (map[string]uint64, error) {
	ef, err := elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("not an ELF file: %w", err)
	}
	found := map[string]uint64{}
	add := func(syms []elf.Symbol) {
		for _, s := range syms {
			t := elf.ST_TYPE(s.Info)
			if !wanted[s.Name] || s.Section == elf.SHN_UNDEF || (t != elf.STT_FUNC && t != elf.STT_GNU_IFUNC) {
				continue
			}
			if off, ok := fileOffset(ef, s.Value); ok {
				found[s.Name] = off
			}
		}
	}
	dyn, err := ef.DynamicSymbols()
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return nil, fmt.Errorf("read .dynsym: %w", err)
	}
	add(dyn)
	if symtab {
		if sec := ef.Section(".symtab"); sec != nil && sec.Size <= maxSymtabBytes {
			syms, err := ef.Symbols()
			if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
				return nil, fmt.Errorf("read .symtab: %w", err)
			}
			add(syms)
		}
	}
	return found, nil
}

// fileOffset converts a symbol's virtual address to its file offset through
// the executable PT_LOAD segment that holds it.
func fileOffset(f *elf.File, vaddr uint64) (uint64, bool) {
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && p.Vaddr <= vaddr && vaddr < p.Vaddr+p.Memsz {
			return vaddr - p.Vaddr + p.Off, true
		}
	}
	return 0, false
}
