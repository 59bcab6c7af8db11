package gputrace

import (
	"os"

	"github.com/xpuscope/xpuscope/internal/elfsym"
	"github.com/xpuscope/xpuscope/internal/procfs"
)

// demangle turns a mangled C++ name into its readable form.
var demangle = elfsym.Demangle

// capturedProcs is what the discovery (*uprobe.Tracer) captured of the
// processes that map a traced library while they ran: what names the code
// of a process that exited before its records were read.
type capturedProcs interface {
	// Mappings returns pid's executable mappings, sorted by Start.
	Mappings(pid int) (procfs.Maps, bool)
	// OpenMapped opens the file a mapping Mappings returned maps.
	OpenMapped(m procfs.Mapping) (*os.File, error)
	// Executable returns the base name of pid's executable.
	Executable(pid int) (string, bool)
	// Sync returns once what the discovery was told before the call is
	// captured.
	Sync()
}

// symbolizer names launch functions through the process's mappings and
// the ELF symbol tables of the mapped files, with the load bias.
type symbolizer struct {
	procs  procfs.FS
	tables *elfsym.Cache
	maps   map[uint32]procfs.Maps // per process, refreshed on a miss
	// synced are the processes a miss waited for the discovery for (once
	// each: a miss after it is a miss).
	synced map[uint32]bool
	// captured knows the processes that exited before their records
	// were read; nil for none.
	captured capturedProcs
}

func newSymbolizer(procs procfs.FS) *symbolizer {
	return &symbolizer{
		procs:  procs,
		tables: elfsym.NewCache(elfsym.CacheConfig{}),
		maps:   map[uint32]procfs.Maps{},
		synced: map[uint32]bool{},
	}
}

func (s *symbolizer) ExecutableName(pid uint32) string {
	if name := s.procs.Proc(int(pid)).ExecutableName(); name != "" {
		return name
	}
	if s.captured != nil {
		if name, ok := s.captured.Executable(int(pid)); ok {
			return name
		}
	}
	return ""
}

// Symbolize returns the demangled name of the function at addr in pid.
func (s *symbolizer) Symbolize(pid uint32, addr uint64) (string, bool) {
	m, ok := s.maps[pid].Find(addr)
	if !ok {
		// New mappings since the last look (a dlopen): look again.
		if m, ok = s.mapping(pid, addr); !ok {
			return "", false
		}
	}
	if m.Inode == 0 {
		return "", false
	}
	p := s.procs.Proc(int(pid))
	open := func() (elfsym.File, error) {
		f, err := p.OpenMapped(m)
		if err != nil && s.captured != nil {
			f, err = s.captured.OpenMapped(m)
		}
		if err != nil {
			return nil, err
		}
		return f, nil
	}
	name, ok, err := s.tables.Lookup(elfsym.FileID{Dev: m.Dev, Inode: m.Inode}, m.FileOffset(addr), open)
	return name, ok && err == nil
}

// mapping finds the mapping of addr in pid and keeps pid's mappings: those
// the discovery captured, else those the process shows now; for a process
// known to neither (it exited, and the discovery has not read what the
// kernel told of it yet), those it captured once it has.
func (s *symbolizer) mapping(pid uint32, addr uint64) (procfs.Mapping, bool) {
	if s.captured != nil {
		if ms, ok := s.captured.Mappings(int(pid)); ok {
			if m, ok := ms.Find(addr); ok {
				s.maps[pid] = ms
				return m, true
			}
		}
	}
	if ms, err := s.procs.Proc(int(pid)).Maps(); err == nil {
		s.maps[pid] = ms
		return ms.Find(addr)
	}
	if s.captured == nil || s.synced[pid] {
		return procfs.Mapping{}, false
	}
	s.synced[pid] = true
	s.captured.Sync()
	ms, ok := s.captured.Mappings(int(pid))
	if !ok {
		return procfs.Mapping{}, false
	}
	s.maps[pid] = ms
	return ms.Find(addr)
}

// forget drops the mappings of exited processes.
func (s *symbolizer) forget(alive func(uint32) bool) {
	for pid := range s.maps {
		if !alive(pid) {
			delete(s.maps, pid)
		}
	}
	for pid := range s.synced {
		if !alive(pid) {
			delete(s.synced, pid)
		}
	}
}
