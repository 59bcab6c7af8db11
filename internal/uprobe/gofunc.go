package uprobe

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"golang.org/x/arch/x86/x86asm"
	"golang.org/x/sys/unix"
)

// Go programs. A Go binary's functions are named in its pclntab
// (.gopclntab), which a stripped build (-ldflags=-s -w) keeps: the
// runtime needs it for tracebacks (read in place: pclntab.go). Its
// .symtab, when there is one, names the same functions, and only names
// with a dot, as every Go function's has, are looked for in the pclntab. A Go function's return cannot take a uretprobe: the
// kernel swaps the return address on the goroutine's stack for its
// trampoline's, and Go moves goroutine stacks when they grow and walks
// them in tracebacks and GC, which an unknown return address crashes. So
// a probe on a Go function's return (Probe.AtReturns) goes on each of its
// RET instructions instead, found by decoding the function between the
// bounds the pclntab gives, by the rules of the file's instruction set
// (place.go). On x86-64 a probe on a RET is single-stepped, a second trap
// (arm64 emulates its RETs); where what the function returns is copied
// out by one call that the kernel emulates at a probe (Probe.AtCallOf:
// crypto/tls's Read copies its plaintext with one runtime.memmove, a CALL
// on x86-64, a BL on arm64), the probe goes on that call.

// goFunc is a function's bounds, as link-time addresses: [entry, end),
// found in .symtab or in the pclntab (pclntab.go).
type goFunc struct{ entry, end uint64 }

// maxPclntabBytes bounds the pclntab read, as maxSymtabBytes does the
// symbol table.
const maxPclntabBytes = 64 << 20

// errNotGo says a file has no pclntab.
var errNotGo = errors.New("no .gopclntab: not a Go binary")

// goFuncs returns the bounds of the wanted functions that the pclntab of
// the Go binary ef, read through r, names.
func goFuncs(r io.ReaderAt, ef *elf.File, wanted map[string]bool) (found map[string]goFunc, err error) {
	err = faultSafe(func() error {
		tab, release, err := goTable(r, ef)
		if err != nil {
			return err
		}
		defer release()
		found = map[string]goFunc{}
		for name, f := range tab.lookup(wanted) {
			found[name] = f.goFunc
		}
		return nil
	})
	return found, err
}

// faultSafe runs f, which reads a mapped file, and makes the fault of a
// read past the file's end (a file cut short meanwhile: SIGBUS) its
// error, where it would end the process.
func faultSafe(f func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(runtime.Error)
			if _, fault := r.(interface{ Addr() uintptr }); !ok || !fault { // a memory fault's error has Addr
				panic(r)
			}
			err = fmt.Errorf("the file changed while it was read: %w", e)
		}
	}()
	return f()
}

// goTable maps the pclntab of the Go binary ef, read through r, where r
// is a file (its pages are the page cache's, not the heap's), and reads
// its header; release unmaps it. What reads the mapped table runs under
// faultSafe.
func goTable(r io.ReaderAt, ef *elf.File) (tab *pclntab, release func(), err error) {
	pcln, text := ef.Section(".gopclntab"), ef.Section(".text")
	switch {
	case pcln == nil || text == nil:
		return nil, nil, errNotGo
	case pcln.Size > maxPclntabBytes:
		return nil, nil, fmt.Errorf(".gopclntab of %d bytes, over the %d read", pcln.Size, maxPclntabBytes)
	}
	data, release, err := sectionBytes(r, pcln)
	if err != nil {
		return nil, nil, fmt.Errorf("read .gopclntab: %w", err)
	}
	if tab, err = parsePclntab(data, text.Addr); err != nil {
		release()
		return nil, nil, fmt.Errorf("parse .gopclntab: %w", err)
	}
	return tab, release, nil
}

// sectionBytes returns the bytes of s: mapped from the file r is, or,
// where r is no file or s is compressed, read.
func sectionBytes(r io.ReaderAt, s *elf.Section) ([]byte, func(), error) {
	f, ok := r.(*os.File)
	if !ok || s.Flags&elf.SHF_COMPRESSED != 0 || s.Type == elf.SHT_NOBITS || s.Size == 0 {
		data, err := s.Data()
		return data, func() {}, err
	}
	page := uint64(os.Getpagesize())
	start := s.Offset &^ (page - 1)
	mem, err := unix.Mmap(int(f.Fd()), int64(start), int(s.Offset-start+s.Size), unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		return nil, nil, err
	}
	return mem[s.Offset-start:], func() { _ = unix.Munmap(mem) }, nil
}

// maxGoFuncBytes bounds the code decoded of one function for its RETs.
const maxGoFuncBytes = 64 << 10

// goCode is a Go function's code, read from its ELF file, the rules of
// its instruction set, and the binary's pclntab, which release unmaps.
type goCode struct {
	code    []byte
	arch    *isa
	fn      pclnFunc
	start   uint64 // file offset of code[0]
	tab     *pclntab
	release func()
}

// readGoFunc reads the code of the Go function symbol, and the entries of
// the functions named in also, from the ELF file r. The caller releases
// what it returns.
func readGoFunc(r io.ReaderAt, symbol string, also ...string) (goCode, map[string]pclnFunc, error) {
	ef, err := elf.NewFile(r)
	if err != nil {
		return goCode{}, nil, fmt.Errorf("not an ELF file: %w", err)
	}
	arch := isaOf(ef.Machine)
	if arch == nil {
		return goCode{}, nil, fmt.Errorf("%s: no instruction decoder for a %v file", symbol, ef.Machine)
	}
	tab, release, err := goTable(r, ef)
	if err != nil {
		return goCode{}, nil, err
	}
	wanted := map[string]bool{symbol: true}
	for _, name := range also {
		wanted[name] = true
	}
	funcs := tab.lookup(wanted)
	f, ok := funcs[symbol]
	switch {
	case !ok:
		err = fmt.Errorf("%s: not in .gopclntab", symbol)
	case f.end-f.entry > maxGoFuncBytes:
		err = fmt.Errorf("%s: %d bytes of code, over the %d decoded", symbol, f.end-f.entry, maxGoFuncBytes)
	}
	if err != nil {
		release()
		return goCode{}, nil, err
	}
	start, ok := fileOffset(ef, f.entry)
	if !ok {
		release()
		return goCode{}, nil, fmt.Errorf("%s at %#x: in no executable segment", symbol, f.entry)
	}
	code := make([]byte, f.end-f.entry)
	if _, err := r.ReadAt(code, int64(start)); err != nil {
		release()
		return goCode{}, nil, fmt.Errorf("%s: read its code: %w", symbol, err)
	}
	return goCode{code: code, arch: arch, fn: f, start: start, tab: tab, release: release}, funcs, nil
}

// fileOffsets turns offsets in c's code into file offsets.
func (c goCode) fileOffsets(at []uint64) []uint64 {
	offs := make([]uint64, len(at))
	for i, a := range at {
		offs[i] = c.start + a
	}
	return offs
}

// returnSites returns the file offsets where a probe on the return of
// the Go function symbol in the ELF file r goes: with callee set, its one
// direct CALL of callee (from code of file, where set: a suffix of the
// name the pclntab gives, "bytes/reader.go", the code of a function
// inlined there), atCall then true; else, or where there is not exactly
// one such call, each of its RET instructions. The function is read
// once for either.
func returnSites(r io.ReaderAt, symbol, callee, file string) (offs []uint64, atCall bool, err error) {
	err = faultSafe(func() error {
		var also []string
		if callee != "" {
			also = append(also, callee)
		}
		c, funcs, err := readGoFunc(r, symbol, also...)
		if err != nil {
			return err
		}
		defer c.release()
		if target, ok := funcs[callee]; ok {
			calls, err := c.arch.callInstructions(c.code, c.fn.entry, target.entry)
			if file != "" {
				calls = slices.DeleteFunc(calls, func(at uint64) bool {
					f, _ := c.tab.fileAt(c.fn, c.fn.entry+at)
					return f != file && !strings.HasSuffix(f, "/"+file)
				})
			}
			if err == nil && len(calls) == 1 {
				offs, atCall = c.fileOffsets(calls), true
				return nil
			}
		}
		rets, err := c.arch.retInstructions(c.code)
		if err != nil {
			return fmt.Errorf("%s: %w", symbol, err)
		}
		offs = c.fileOffsets(rets)
		return nil
	})
	return offs, atCall, err
}

// decodeAll calls f with each x86-64 instruction of code, one function's
// whole code, and its offset, in turn. Code that does not decode is an
// error, not a guess, since a probe placed inside an instruction corrupts
// it. Go emits no data among a function's instructions on amd64; the INT3
// padding to the next function decodes. (arm64's instructions are words:
// decodeAllARM64.)
func decodeAll(code []byte, f func(pos int, in x86asm.Inst)) error {
	for pos := 0; pos < len(code); {
		in, err := x86asm.Decode(code[pos:], 64)
		switch {
		case err != nil:
			return fmt.Errorf("no instruction at +%#x: %w", pos, err)
		case in.Op == 0: // a prefix with nothing after it
			return fmt.Errorf("no instruction at +%#x: % x", pos, code[pos:min(pos+4, len(code))])
		}
		f(pos, in)
		pos += in.Len
	}
	return nil
}

// retInstructions returns the offsets in code, one function's whole code,
// of its RET instructions.
func retInstructions(code []byte) ([]uint64, error) {
	var rets []uint64
	err := decodeAll(code, func(pos int, in x86asm.Inst) {
		if in.Op == x86asm.RET {
			rets = append(rets, uint64(pos))
		}
	})
	switch {
	case err != nil:
		return nil, err
	case len(rets) == 0:
		return nil, errors.New("no RET instruction")
	}
	return rets, nil
}

// callInstructions returns the offsets in code, one function's whole code
// at the link-time address entry, of its direct CALLs of the function at
// target; none is not an error.
func callInstructions(code []byte, entry, target uint64) ([]uint64, error) {
	var calls []uint64
	err := decodeAll(code, func(pos int, in x86asm.Inst) {
		if in.Op != x86asm.CALL {
			return
		}
		if rel, ok := in.Args[0].(x86asm.Rel); ok && entry+uint64(pos+in.Len)+uint64(int64(rel)) == target {
			calls = append(calls, uint64(pos))
		}
	})
	if err != nil {
		return nil, err
	}
	return calls, nil
}
