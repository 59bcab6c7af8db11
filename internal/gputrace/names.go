package gputrace

import (
	"github.com/xpuscope/xpuscope/internal/elfsym"
	"github.com/xpuscope/xpuscope/internal/procfs"
)

// demangle turns a mangled C++ name into its readable form.
var demangle = elfsym.Demangle

// symbolizer names launch functions through the process's mappings and
// the ELF symbol tables of the mapped files, with the load bias.
type symbolizer struct {
	procs  procfs.FS
	tables *elfsym.Cache
	maps   map[uint32]procfs.Maps // per process, refreshed on a miss
	// exe knows the executables of processes the tracer scanned, for
	// those that exit before their events are handled.
	exe func(pid int) (string, bool)
}

func newSymbolizer(procs procfs.FS) *symbolizer {
	return &symbolizer{
		procs:  procs,
		tables: elfsym.NewCache(elfsym.CacheConfig{}),
		maps:   map[uint32]procfs.Maps{},
	}
}

func (s *symbolizer) ExecutableName(pid uint32) string {
	if name := s.procs.Proc(int(pid)).ExecutableName(); name != "" {
		return name
	}
	if s.exe != nil {
		if path, ok := s.exe(int(pid)); ok {
			return procfs.ExeBase(path)
		}
	}
	return ""
}

// Symbolize returns the demangled name of the function at addr in pid.
func (s *symbolizer) Symbolize(pid uint32, addr uint64) (string, bool) {
	p := s.procs.Proc(int(pid))
	m, ok := s.maps[pid].Find(addr)
	if !ok {
		// New mappings since the last read (a dlopen): read again.
		ms, err := p.Maps()
		if err != nil {
			return "", false
		}
		s.maps[pid] = ms
		if m, ok = ms.Find(addr); !ok {
			return "", false
		}
	}
	if m.Inode == 0 {
		return "", false
	}
	open := func() (elfsym.File, error) {
		f, err := p.OpenMapped(m)
		if err != nil {
			return nil, err
		}
		return f, nil
	}
	name, ok, err := s.tables.Lookup(elfsym.FileID{Dev: m.Dev, Inode: m.Inode}, m.FileOffset(addr), open)
	return name, ok && err == nil
}

// forget drops the mappings of exited processes.
func (s *symbolizer) forget(alive func(uint32) bool) {
	for pid := range s.maps {
		if !alive(pid) {
			delete(s.maps, pid)
		}
	}
}
