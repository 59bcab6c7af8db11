package elfsym

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"math"
)

// maxNameHits bounds the places in one string table where the wanted names
// may occur. A real file has one or two per name (a definition, perhaps a
// longer name that ends with it); a crafted one gets an error.
const maxNameHits = 1024

// nameWindow is how many bytes of a string table FuncAddrs reads at once.
const nameWindow = 64 << 10

// FuncAddrs returns the link-time addresses of the wanted function symbols
// that f defines, read through r: from .dynsym and, with symtab, from
// .symtab as well, which wins where both define a name (as does the later
// entry within one table).
//
// It answers the question a tracer asks of every file that every process
// maps, "is this a file I probe?", and the answer is almost always no. So it
// first reads each string table through a fixed window, looking for the
// wanted names, and reads a table's entries only when one is there. Its
// memory does not grow with the file, unlike debug/elf's Symbols, which
// builds every symbol and name of the table.
func FuncAddrs(r io.ReaderAt, f *elf.File, wanted map[string]bool, symtab bool) (map[string]uint64, error) {
	b := &builder{r: r, size: math.MaxUint64, f: f, entsize: entrySize(f)}
	found := map[string]uint64{}
	for _, typ := range [...]elf.SectionType{elf.SHT_DYNSYM, elf.SHT_SYMTAB} {
		sec := f.SectionByType(typ)
		if sec == nil || typ == elf.SHT_SYMTAB && !symtab {
			continue
		}
		st, err := b.strtab(sec)
		if err != nil {
			return nil, err
		}
		at, err := nameOffsets(r, st, wanted)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", st.Name, err)
		}
		if len(at) == 0 {
			continue
		}
		err = b.entries(sec, func(e symEntry) {
			if name, ok := at[e.name]; ok && e.definedFunc() {
				found[name] = e.addr
			}
		})
		if err != nil {
			return nil, err
		}
	}
	return found, nil
}

// nameOffsets returns the offsets in the string table st at which a wanted
// name begins, as a symbol's name field gives them. A hit may also be the
// tail of a longer string (linkers store a name that ends another only
// once); FuncAddrs matches name fields exactly, so such a hit costs only
// the read of the entries.
//
// The table is read forward through a window of nameWindow bytes plus the
// longest name, whose last bytes start the next read: a name that straddles
// two reads is found whole in the second.
func nameOffsets(r io.ReaderAt, st *elf.Section, wanted map[string]bool) (map[uint32]string, error) {
	var names []string
	var pats [][]byte
	longest := 0
	for n := range wanted {
		if n == "" || len(n) > MaxNameLen {
			continue
		}
		names = append(names, n)
		pats = append(pats, append([]byte(n), 0))
		longest = max(longest, len(n))
	}
	if len(pats) == 0 {
		return nil, nil
	}
	// A name field is 32 bits: nothing past 4 GiB can be a name.
	size := min(st.Size, math.MaxUint32+uint64(longest)+1)
	buf := make([]byte, int(min(size, nameWindow+uint64(longest))))
	at := map[uint32]string{}
	var start uint64 // table offset of buf[0]
	keep := 0        // bytes at the head of buf kept from the last read
	for start+uint64(keep) < size {
		n := int(min(uint64(len(buf)-keep), size-start-uint64(keep)))
		if err := readFull(r, buf[keep:keep+n], st.Offset+start+uint64(keep)); err != nil {
			return nil, fmt.Errorf("at file offset %#x: %w", st.Offset+start+uint64(keep), err)
		}
		w := buf[:keep+n]
		for i, p := range pats {
			for j := 0; ; {
				k := bytes.Index(w[j:], p)
				if k < 0 {
					break
				}
				if off := start + uint64(j+k); off <= math.MaxUint32 {
					at[uint32(off)] = names[i]
				}
				if len(at) > maxNameHits {
					return nil, fmt.Errorf("the wanted names occur at more than %d places", maxNameHits)
				}
				j += k + 1
			}
		}
		keep = min(longest, len(w))
		copy(buf, w[len(w)-keep:])
		start += uint64(len(w) - keep)
	}
	return at, nil
}
