// Package elfsym turns an offset in a mapped ELF file into the name of the
// function that contains it, and a function name into the file offset a
// uprobe attaches at.
//
// A uprobe tracer sees a user-space code pointer (the func argument of
// cudaLaunchKernel, say) and a pid. The process's maps (package procfs)
// turn the pointer into a mapped file and a file offset; a Table built
// from that file turns the offset into a name:
//
//	proc := procfs.FS{Root: "/proc"}.Proc(pid)
//	maps, _ := proc.Maps()
//	m, _ := maps.Find(ptr)
//	name, ok, err := cache.Lookup(elfsym.FileID{Dev: m.Dev, Inode: m.Inode},
//		m.FileOffset(ptr), func() (elfsym.File, error) {
//			return proc.OpenMapped(m)
//		})
//
// A Table holds the function symbols (STT_FUNC and STT_GNU_IFUNC) of .symtab
// and, for addresses .symtab lacks, .dynsym, sorted by address, and the
// PT_LOAD segments that convert between file offsets and the link-time
// addresses symbols carry. Symbols with a size match the addresses they
// cover; symbols without one match their own address only.
//
// Memory is bounded: a Table keeps at most Limits.MaxSymbols symbols and
// Limits.MaxNameBytes bytes of names (and counts what it left out), reads
// the symbol and string tables through small windows rather than whole,
// lets debug/elf read at most 16 MiB of headers, and remembers at most
// Limits.MemoSize demangled lookups. A Cache keeps at
// most a fixed number of Tables, keyed by file identity (device, inode),
// and evicts the least recently used by a clock sweep.
//
// FuncAddrs answers a narrower question without a Table: where a few
// named functions are, in a file that almost never has them (a tracer asks
// it of every file every process maps). It looks for the names in the
// string tables through a fixed window first, and reads a symbol table's
// entries only where one is there.
//
// A file that is not ELF, or has no function symbols at all (stripped of
// .symtab and exporting nothing), fails with an error wrapping ErrNoSymbols,
// so that a caller can report "stripped" rather than a fault.
package elfsym
