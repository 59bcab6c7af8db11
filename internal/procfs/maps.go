package procfs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
)

// The maps reader is our own, not prometheus/procfs's Proc.ProcMaps. It is
// on the uprobe hub's path (every exec and dlopen, and every process at
// each rescan), where BenchmarkMaps has it read a 3000-mapping PyTorch
// process's maps in 0.4 of the time (1.6 ms against 4.0 ms) with 519
// allocations against 12 020, and a small process's (the test binary's)
// in 0.6 of the time; and it reads what Proc.ProcMaps does not: a path
// with a run of spaces (that joins the fields again with one), the
// " (deleted)" mark (kept in the path), an offset past 63 bits (an
// error).

const (
	// pathMax is Linux's PATH_MAX: the kernel prints no longer path.
	pathMax = 4096

	// MaxMapsLine is the longest maps line ParseMaps accepts. The kernel
	// escapes a newline in a file name as the four bytes \012, so a
	// PATH_MAX path can take up to four times PATH_MAX bytes; the fields
	// before it and a " (deleted)" suffix fit in the rest.
	MaxMapsLine = 4*pathMax + 512

	// MaxMappings is the most mappings ParseMaps returns. The kernel's
	// default vm.max_map_count is 65530; tuned hosts raise it, rarely past
	// 1<<20.
	MaxMappings = 1 << 20
)

// Perms is the permission column of a mapping, as a bitset.
type Perms uint8

// The bits of Perms. A mapping without PermPrivate is shared ('s').
const (
	PermRead Perms = 1 << iota
	PermWrite
	PermExec
	PermPrivate
)

// String returns the permissions the way the maps file prints them,
// "r-xp" for example.
func (p Perms) String() string {
	b := [4]byte{'-', '-', '-', 's'}
	if p&PermRead != 0 {
		b[0] = 'r'
	}
	if p&PermWrite != 0 {
		b[1] = 'w'
	}
	if p&PermExec != 0 {
		b[2] = 'x'
	}
	if p&PermPrivate != 0 {
		b[3] = 'p'
	}
	return string(b[:])
}

// Mapping is one line of /proc/<pid>/maps: the addresses [Start, End) map
// Path from file offset Offset. The Dev field uses the encoding of
// unix.Mkdev (and of glibc's makedev), so Dev and Inode together identify
// a file the same way stat(2) does.
type Mapping struct {
	Start, End uint64
	Perms      Perms
	Offset     uint64
	// Dev is the device of the mapped file in unix.Mkdev's encoding;
	// 0 for an anonymous mapping.
	Dev uint64
	// Inode is the inode of the mapped file; 0 for an anonymous mapping.
	Inode uint64
	// Path is the mapped file, or a pseudo-path such as [heap], [stack],
	// [vdso] or [anon:name], or "" for an anonymous mapping. It is as the
	// kernel prints it, so a newline in a file name reads \012. A trailing
	// " (deleted)" is stripped and reported in Deleted.
	Path string
	// Deleted reports that the kernel marked Path " (deleted)": the file was
	// removed or replaced after it was mapped. Its contents are still
	// readable through Proc.OpenMapped.
	Deleted bool
}

// FileOffset returns the offset in the mapped file of addr, an address
// inside m.
func (m Mapping) FileOffset(addr uint64) uint64 {
	return addr - m.Start + m.Offset
}

// Maps are the mappings of a process, sorted by Start as the kernel
// prints them.
type Maps []Mapping

// ParseMaps parses the text of a /proc/<pid>/maps file. The mappings come
// back sorted by Start, as the kernel prints them (ParseMaps sorts input
// that is not). Empty lines are skipped; a malformed line, a line longer
// than MaxMapsLine or more than MaxMappings mappings is an error naming
// the line. A last line without its newline (a truncated read) is parsed
// like any other.
func ParseMaps(r io.Reader) (Maps, error) {
	ms, err := parseMaps(r, MaxMappings)
	if err != nil {
		return nil, fmt.Errorf("procfs: maps: %w", err)
	}
	return ms, nil
}

// Maps reads and parses the process's maps file. When the process is gone
// the error wraps fs.ErrNotExist (or, for a zombie, there are no
// mappings).
func (p Proc) Maps() (Maps, error) {
	f, err := os.Open(p.path("maps"))
	if err != nil {
		return nil, fmt.Errorf("procfs: %w", err)
	}
	defer f.Close()
	ms, err := parseMaps(f, MaxMappings)
	if err != nil {
		return nil, fmt.Errorf("procfs: read %s: %w", f.Name(), err)
	}
	return ms, nil
}

// Find returns the mapping that contains addr.
func (ms Maps) Find(addr uint64) (Mapping, bool) {
	// The first mapping that starts after addr; the one before it is the
	// only candidate.
	lo, hi := 0, len(ms)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if ms[mid].Start <= addr {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == 0 {
		return Mapping{}, false
	}
	m := ms[lo-1]
	if addr >= m.End {
		return Mapping{}, false
	}
	return m, true
}

// Files returns one mapping per distinct file that ms map, identified by
// Dev and Inode: the first mapping of each, in the order of ms. Anonymous
// mappings and pseudo-files ([heap], [vdso], …) have no inode and are left
// out. A tracer attaches once per file, however many mappings and
// processes share it.
func (ms Maps) Files() Maps {
	type key struct{ dev, ino uint64 }
	var (
		out  Maps
		seen = map[key]bool{}
	)
	for _, m := range ms {
		k := key{m.Dev, m.Inode}
		if m.Inode == 0 || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, m)
	}
	return out
}

// OpenMapped opens the file that m, a mapping of the process, maps:
// through map_files, which works across mount namespaces and for deleted
// files, and needs CAP_SYS_ADMIN (CAP_CHECKPOINT_RESTORE on recent
// kernels) in the reader's user namespace; else at m's path under the
// process's root directory, where an absolute symbolic link inside the
// process's tree still resolves against the reader's root. The error names
// both tries.
func (p Proc) OpenMapped(m Mapping) (*os.File, error) {
	f, err := os.Open(p.mapFilesPath(m))
	if err == nil {
		return f, nil
	}
	f, rerr := os.Open(p.rootPath(m.Path))
	if rerr != nil {
		return nil, fmt.Errorf("procfs: open the file mapped at %#x: %w", m.Start, errors.Join(err, rerr))
	}
	return f, nil
}

// mapFilesPath returns <root>/<pid>/map_files/<start>-<end>, a link to the
// file m maps.
func (p Proc) mapFilesPath(m Mapping) string {
	var b [2*16 + 1]byte
	n := strconv.AppendUint(b[:0], m.Start, 16)
	n = append(n, '-')
	n = strconv.AppendUint(n, m.End, 16)
	return p.path("map_files", string(n))
}

// rootPath returns path as seen from the process's root directory:
// <root>/<pid>/root/<path>. path is cleaned as an absolute path first, so
// it cannot climb out of the process's root.
func (p Proc) rootPath(path string) string {
	return p.path("root", filepath.Clean("/"+path))
}

// mapsReaders keeps the line buffers of parseMaps: a scan of every
// process's maps would otherwise allocate one of MaxMapsLine bytes per
// process.
var mapsReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, MaxMapsLine) }}

// parseMaps is ParseMaps with the mapping cap as a parameter, for tests.
func parseMaps(r io.Reader, maxMappings int) (Maps, error) {
	br := mapsReaders.Get().(*bufio.Reader)
	br.Reset(r)
	defer func() {
		br.Reset(nil)
		mapsReaders.Put(br)
	}()
	var (
		ms     Maps
		sorted = true
		prev   string // the previous path, shared by consecutive mappings
	)
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("line %d is longer than %d bytes", n, MaxMapsLine)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		line = bytes.TrimSuffix(line, []byte{'\n'})
		if len(line) > 0 {
			if len(ms) >= maxMappings {
				return nil, fmt.Errorf("line %d: more than %d mappings", n, maxMappings)
			}
			var m Mapping
			if msg := parseMapsLine(line, &m, prev); msg != "" {
				return nil, fmt.Errorf("line %d: %s: %q", n, msg, excerpt(line))
			}
			prev = m.Path
			if len(ms) > 0 && m.Start < ms[len(ms)-1].Start {
				sorted = false
			}
			ms = append(ms, m)
		}
		if err != nil { // io.EOF
			break
		}
	}
	if !sorted {
		slices.SortStableFunc(ms, func(a, b Mapping) int {
			switch {
			case a.Start < b.Start:
				return -1
			case a.Start > b.Start:
				return 1
			}
			return 0
		})
	}
	return ms, nil
}

// excerpt bounds the part of a bad line quoted in an error.
func excerpt(line []byte) []byte {
	const n = 80
	if len(line) > n {
		return line[:n]
	}
	return line
}

// parseMapsLine parses one line, without its newline, into m:
//
//	7f2c1a400000-7f2c1a421000 r-xp 00002000 fd:01 1312   /usr/lib/libx.so
//
// It returns what is wrong with the line, or "". prev is the previous
// line's path, reused when equal so that the mappings of one file share
// one string.
func parseMapsLine(line []byte, m *Mapping, prev string) string {
	var ok bool
	i := 0
	if m.Start, i, ok = hexField(line, i, '-'); !ok {
		return "bad start address"
	}
	if m.End, i, ok = hexField(line, i, ' '); !ok {
		return "bad end address"
	}
	if m.End < m.Start {
		return "end address before start address"
	}
	if m.Perms, i, ok = permsField(line, i); !ok {
		return "bad permissions"
	}
	if m.Offset, i, ok = hexField(line, i, ' '); !ok {
		return "bad offset"
	}
	var major, minor uint64
	if major, i, ok = hexField(line, i, ':'); !ok || major > 1<<32-1 {
		return "bad device major"
	}
	if minor, i, ok = hexField(line, i, ' '); !ok || minor > 1<<32-1 {
		return "bad device minor"
	}
	m.Dev = mkdev(uint32(major), uint32(minor))
	// The inode is the last fixed field: a space or the end of the line
	// follows it.
	j := i
	for ; j < len(line) && line[j] != ' '; j++ {
		c := line[j]
		if c < '0' || c > '9' {
			return "bad inode"
		}
		d := uint64(c - '0')
		if m.Inode > (1<<64-1-d)/10 {
			return "bad inode"
		}
		m.Inode = m.Inode*10 + d
	}
	if j == i {
		return "bad inode"
	}
	// The kernel pads with spaces up to the path column. A path never
	// starts with a space (it is absolute or a [pseudo] name), so every
	// space up to the first other byte is padding.
	for j < len(line) && line[j] == ' ' {
		j++
	}
	path := line[j:]
	if bytes.HasSuffix(path, []byte(deletedSuffix)) {
		path = path[:len(path)-len(deletedSuffix)]
		m.Deleted = true
	}
	if string(path) == prev {
		m.Path = prev
	} else {
		m.Path = string(path)
	}
	return ""
}

// hexField parses lowercase or uppercase hex digits at line[i:] up to sep,
// and returns the value and the index after sep.
func hexField(line []byte, i int, sep byte) (uint64, int, bool) {
	var v uint64
	start := i
	for ; i < len(line) && line[i] != sep; i++ {
		c := line[i]
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, i, false
		}
		if i-start >= 16 { // a 17th digit overflows 64 bits
			return 0, i, false
		}
		v = v<<4 | uint64(d)
	}
	if i == start || i == len(line) {
		return 0, i, false
	}
	return v, i + 1, true
}

// permsField parses the four permission characters and the space after
// them.
func permsField(line []byte, i int) (Perms, int, bool) {
	if len(line)-i < 5 || line[i+4] != ' ' {
		return 0, i, false
	}
	var p Perms
	for k, want := range [3]byte{'r', 'w', 'x'} {
		switch line[i+k] {
		case want:
			p |= PermRead << k
		case '-':
		default:
			return 0, i, false
		}
	}
	switch line[i+3] {
	case 'p':
		p |= PermPrivate
	case 's':
	default:
		return 0, i, false
	}
	return p, i + 5, true
}

// mkdev encodes a device number the way unix.Mkdev and glibc's makedev do.
func mkdev(major, minor uint32) uint64 {
	return uint64(major&0x00000fff)<<8 |
		uint64(major&0xfffff000)<<32 |
		uint64(minor&0x000000ff) |
		uint64(minor&0xffffff00)<<12
}
