package uprobe

import (
	"debug/elf"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/xpuscope/xpuscope/internal/elfsym"
)

// maxSymtabBytes bounds the .symtab searched for symbols: a huge
// unstripped library must not cost seconds to classify.
const maxSymtabBytes = 64 << 20

// resolve opens the ELF file at path and returns the file offsets of the
// wanted function symbols it defines, from .dynsym and, with symtab, from
// .symtab too (a statically linked runtime need not export its symbols).
// The offsets are what a uprobe attaches to.
func resolve(path string, wanted map[string]bool, symtab bool) (map[string]uint64, error) {
	return onFile(path, func(r io.ReaderAt) (map[string]uint64, error) { return resolveELF(r, wanted, symtab) })
}

// onFile runs f on the file at path, and names the path in its error.
func onFile(path string, f func(io.ReaderAt) (map[string]uint64, error)) (map[string]uint64, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	v, err := f(file)
	if err != nil {
		return v, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// resolveELF is resolve on an open file. It reads only the symbol tables
// and keeps only the wanted names, in memory that does not grow with the
// file (elfsym.FuncAddrs), so classifying a large library stays cheap.
func resolveELF(r io.ReaderAt, wanted map[string]bool, symtab bool) (map[string]uint64, error) {
	ef, err := elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("not an ELF file: %w", err)
	}
	addrs, err := symbolAddrs(r, ef, wanted, symtab)
	if err != nil {
		return nil, err
	}
	found := map[string]uint64{}
	for name, a := range addrs {
		if off, ok := fileOffset(ef, a); ok {
			found[name] = off
		}
	}
	return found, nil
}

// symbolAddrs returns the link-time addresses of the wanted function
// symbols ef defines, from .dynsym and, with symtab, from .symtab unless it
// is larger than maxSymtabBytes, and then from a Go binary's pclntab,
// which a stripped one keeps (see gofunc.go).
func symbolAddrs(r io.ReaderAt, ef *elf.File, wanted map[string]bool, symtab bool) (map[string]uint64, error) {
	if sec := ef.SectionByType(elf.SHT_SYMTAB); sec != nil && sec.Size > maxSymtabBytes {
		symtab = false
	}
	addrs, err := elfsym.FuncAddrs(r, ef, wanted, symtab)
	if err != nil || !symtab || len(addrs) == len(wanted) || ef.Section(".gopclntab") == nil {
		return addrs, err
	}
	missing := map[string]bool{}
	for name := range wanted {
		if _, ok := addrs[name]; !ok && isGoName(name) {
			missing[name] = true
		}
	}
	if len(missing) == 0 {
		return addrs, nil // no Go function is wanted: the pclntab is not read
	}
	funcs, err := goFuncs(r, ef, missing)
	if err != nil {
		return addrs, nil // the symbols found stand
	}
	for name, f := range funcs {
		addrs[name] = f.entry
	}
	return addrs, nil
}

// isGoName says whether name can name a Go function: every Go function's
// name has its package's path before a dot ("main.run",
// "crypto/tls.(*Conn).Read"), and no C function's symbol has a dot. A
// Go binary's pclntab is read only for such names: a large one takes
// megabytes to parse, and every Tracer meets every Go program on the
// host, the capturing process's own among them.
func isGoName(name string) bool { return strings.Contains(name, ".") }

// locate opens the ELF file at path and returns the file offset each
// probe attaches at, by Symbol; a probe it leaves out is not attached.
func locate(path string, probes []Probe, symtab bool) (map[string]uint64, error) {
	return onFile(path, func(r io.ReaderAt) (map[string]uint64, error) { return locateELF(r, probes, symtab) })
}

// locateELF is locate on an open file. A probe with CalledFrom is placed
// on its Symbol, or, where the symbol tables lack it, on the function all
// its wrappers call first; placed, it replaces the wrappers' own probes.
// Every probe then goes past a leading landing pad (endbr64, BTI), and in
// a Go binary past the stack bound check, by the rules of the file's
// instruction set (place.go); one on an instruction the kernel refuses
// to probe is left out.
func locateELF(r io.ReaderAt, probes []Probe, symtab bool) (map[string]uint64, error) {
	ef, err := elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("not an ELF file: %w", err)
	}
	arch := isaOf(ef.Machine)
	wanted := map[string]bool{}
	for _, p := range probes {
		if p.AtReturns {
			continue // returnsOf's
		}
		wanted[p.Symbol] = true
		for _, w := range p.CalledFrom {
			wanted[w] = true
		}
	}
	addrs, err := symbolAddrs(r, ef, wanted, symtab)
	if err != nil {
		return nil, err
	}
	code := func(vaddr uint64, n int) []byte {
		off, ok := fileOffset(ef, vaddr)
		if !ok {
			return nil
		}
		b := make([]byte, n)
		k, _ := r.ReadAt(b, int64(off))
		return b[:k]
	}
	placed, replaced := map[string]uint64{}, map[string]bool{}
	for _, p := range probes {
		if len(p.CalledFrom) == 0 || p.AtReturns {
			continue
		}
		a, ok := addrs[p.Symbol]
		if !ok && arch != nil {
			a, ok = commonCallee(ef, arch, addrs, p.CalledFrom, code)
		}
		if ok {
			placed[p.Symbol] = a
			for _, w := range p.CalledFrom {
				replaced[w] = true
			}
		}
	}
	for _, p := range probes {
		if a, ok := addrs[p.Symbol]; ok && !replaced[p.Symbol] && !p.AtReturns {
			placed[p.Symbol] = a
		}
	}
	goBinary := ef.Section(".gopclntab") != nil
	found := map[string]uint64{}
	for name, a := range placed {
		if arch != nil {
			a += arch.pastLandingPad(code(a, landingPadBytes))
			if goBinary {
				a += arch.pastGoStackCheck(code(a, goCheckBytes))
			}
			if arch.refused(code(a, landingPadBytes)) {
				continue
			}
		}
		if off, ok := fileOffset(ef, a); ok {
			found[name] = off
		}
	}
	return found, nil
}

// goSite is where a probe on a Go function's return (Probe.AtReturns)
// goes in one file.
type goSite struct {
	offsets []uint64
	cookie  uint64
	name    string // the probe's, as Attachment.Symbols lists it
}

// goSitesOf opens the ELF file at path and places p, a probe with
// AtReturns: on its function's one call of AtCallOf, or else on each of
// its RET instructions (see gofunc.go).
func goSitesOf(path string, p Probe) (goSite, error) {
	var site goSite
	_, err := onFile(path, func(r io.ReaderAt) (map[string]uint64, error) {
		offs, atCall, err := returnSites(r, p.Symbol, p.AtCallOf, p.CallFile)
		site = goSite{offs, p.Cookie, p.Symbol + returnsSuffix}
		if atCall {
			site = goSite{offs, p.CallCookie, p.Symbol + callSuffix(p.AtCallOf)}
		}
		return nil, err
	})
	return site, err
}

// commonCallee returns the function that every one of the wrappers calls
// first (by the rules of arch), if they are all defined, all call one
// function, and it is code of the file outside its PLT.
func commonCallee(ef *elf.File, arch *isa, addrs map[string]uint64, wrappers []string, code func(uint64, int) []byte) (uint64, bool) {
	var callee uint64
	for i, w := range wrappers {
		a, ok := addrs[w]
		if !ok {
			return 0, false
		}
		c, ok := arch.firstCall(code(a, wrapperBytes), a)
		if !ok || (i > 0 && c != callee) {
			return 0, false
		}
		callee = c
	}
	for _, s := range ef.Sections {
		if s.Flags&elf.SHF_EXECINSTR != 0 && s.Addr <= callee && callee < s.Addr+s.Size {
			return callee, !strings.HasPrefix(s.Name, ".plt")
		}
	}
	return 0, false
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

// cookiesOf returns the attach cookie of each probe placed at the file
// offsets in offsets: its Cookie, or, with CookieFrom, the distance from
// the probe to that object in the file at path (0 if the file does not
// define it).
func cookiesOf(path string, probes []Probe, offsets map[string]uint64) (map[string]uint64, error) {
	cookies := make(map[string]uint64, len(probes))
	from := false
	for _, p := range probes {
		if p.AtReturns {
			continue // its own Cookie, at every RET: another probe may have its Symbol
		}
		cookies[p.Symbol] = p.Cookie
		from = from || p.CookieFrom != ""
	}
	if !from {
		return cookies, nil
	}
	return onFile(path, func(r io.ReaderAt) (map[string]uint64, error) {
		ef, err := elf.NewFile(r)
		if err != nil {
			return nil, fmt.Errorf("not an ELF file: %w", err)
		}
		syms, err := ef.DynamicSymbols()
		if err != nil {
			return nil, fmt.Errorf("read .dynsym: %w", err)
		}
		for _, p := range probes {
			off, placed := offsets[p.Symbol]
			if p.CookieFrom == "" || !placed {
				continue
			}
			at, ok := vaddrOf(ef, off)
			i := slices.IndexFunc(syms, func(s elf.Symbol) bool {
				return s.Name == p.CookieFrom && elf.ST_TYPE(s.Info) == elf.STT_OBJECT && s.Section != elf.SHN_UNDEF
			})
			if ok && i >= 0 {
				cookies[p.Symbol] = syms[i].Value - at
			}
		}
		return cookies, nil
	})
}

// vaddrOf converts a file offset in the executable PT_LOAD segment that
// holds it to its virtual address (fileOffset's inverse).
func vaddrOf(f *elf.File, off uint64) (uint64, bool) {
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && p.Off <= off && off < p.Off+p.Filesz {
			return off - p.Off + p.Vaddr, true
		}
	}
	return 0, false
}
