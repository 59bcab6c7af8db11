package uprobe

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/procfs"
)

// Bounds of what is captured of the traced processes.
const (
	maxCapturedProcs    = 4096 // processes at once
	maxCapturedMappings = 4096 // executable mappings per process
	maxKeptFiles        = 4096 // files held open
)

// captured is what the hub learned of the processes that map a traced
// file while they ran: their executable mappings (from the watcher's
// WATCH_MAPPING records, or read while the process was held) and
// executable's name, and the files those mappings map, held open. A
// Source names what such a process ran after it exited, when the
// process's /proc files are gone: a process that launches and exits at
// once still gets its kernels named. A process is forgotten two sweeps
// after it was first seen gone, and a file with the last process that
// mapped it.
type captured struct {
	mu    sync.Mutex
	procs map[int]*capturedProc
	files map[fileID]*keptFile
}

type capturedProc struct {
	exe   string
	maps  procfs.Maps // sorted by Start
	files map[fileID]bool
	gone  int // sweeps that found it gone
}

type keptFile struct {
	f      *os.File
	refs   int  // the processes that map it, and the pin
	pinned bool // held until close (pin)
}

func newCaptured() *captured {
	return &captured{procs: map[int]*capturedProc{}, files: map[fileID]*keptFile{}}
}

// proc returns pid's entry, made anew when fresh (a new address space);
// nil when there is no room. c.mu held.
func (c *captured) proc(pid int, fresh bool) *capturedProc {
	p := c.procs[pid]
	if p != nil && fresh {
		c.dropLocked(pid, p)
		p = nil
	}
	if p == nil {
		if len(c.procs) >= maxCapturedProcs {
			return nil
		}
		p = &capturedProc{files: map[fileID]bool{}}
		c.procs[pid] = p
	}
	return p
}

// add records m, an executable mapping of process pid, and holds its file
// open (open opens it, if no other process's mapping holds it already).
// exe is the executable's base name when m maps it; fresh says the
// process has a new address space since the last record.
func (c *captured) add(pid int, m procfs.Mapping, exe string, fresh bool, open func() (*os.File, error)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.proc(pid, fresh)
	if p == nil {
		return
	}
	if exe != "" {
		p.exe = exe
	}
	i, found := slices.BinarySearchFunc(p.maps, m.Start, func(x procfs.Mapping, start uint64) int {
		return cmp.Compare(x.Start, start)
	})
	switch {
	case found:
		p.maps[i] = m
	case len(p.maps) < maxCapturedMappings:
		p.maps = slices.Insert(p.maps, i, m)
	default:
		return
	}
	c.keepLocked(p, fileID{m.Dev, m.Inode}, open)
}

// set replaces what is known of pid by maps, its executable mappings as
// read while it was held; exe is its executable's base name.
func (c *captured) set(pid int, maps procfs.Maps, exe string, open func(procfs.Mapping) (*os.File, error)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.proc(pid, true)
	if p == nil {
		return
	}
	p.exe = exe
	for _, m := range maps {
		if len(p.maps) == maxCapturedMappings {
			break
		}
		p.maps = append(p.maps, m)
		c.keepLocked(p, fileID{m.Dev, m.Inode}, func() (*os.File, error) { return open(m) })
	}
}

// keepLocked makes p hold the file id open. c.mu held.
func (c *captured) keepLocked(p *capturedProc, id fileID, open func() (*os.File, error)) {
	if p.files[id] {
		return
	}
	k := c.files[id]
	if k == nil {
		if len(c.files) >= maxKeptFiles {
			return
		}
		f, err := open()
		if err != nil {
			return // the process is gone: its names are looked up while others map the file
		}
		k = &keptFile{f: f}
		c.files[id] = k
	}
	k.refs++
	p.files[id] = true
}

// pin holds the file id open, opened by open, until close: a file a
// Tracer with Capture probes, which the processes that map it may leave
// before the watcher's reader can open it through them.
func (c *captured) pin(id fileID, open func() (*os.File, error)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if k := c.files[id]; k != nil {
		if !k.pinned {
			k.pinned = true
			k.refs++
		}
		return
	}
	if len(c.files) >= maxKeptFiles {
		return
	}
	f, err := open()
	if err != nil {
		return
	}
	c.files[id] = &keptFile{f: f, refs: 1, pinned: true}
}

// dropLocked forgets pid, and closes the files only it held. c.mu held.
func (c *captured) dropLocked(pid int, p *capturedProc) {
	for id := range p.files {
		if k := c.files[id]; k != nil {
			if k.refs--; k.refs == 0 {
				k.f.Close()
				delete(c.files, id)
			}
		}
	}
	delete(c.procs, pid)
}

// mappings returns the executable mappings captured of pid.
func (c *captured) mappings(pid int) (procfs.Maps, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.procs[pid]
	if p == nil {
		return nil, false
	}
	return slices.Clone(p.maps), true
}

// executable returns the base name of pid's executable, as captured.
func (c *captured) executable(pid int) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.procs[pid]
	if p == nil || p.exe == "" {
		return "", false
	}
	return p.exe, true
}

// open returns a descriptor of its own of the file m maps, if a captured
// process's mapping holds it open.
func (c *captured) open(m procfs.Mapping) (*os.File, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.files[fileID{m.Dev, m.Inode}]
	if k == nil {
		return nil, fmt.Errorf("uprobe: no captured process maps the file %s at %#x", m.Path, m.Start)
	}
	fd, err := unix.Dup(int(k.f.Fd()))
	if err != nil {
		return nil, fmt.Errorf("uprobe: duplicate the descriptor of %s: %w", k.f.Name(), err)
	}
	return os.NewFile(uintptr(fd), k.f.Name()), nil
}

// retire forgets the processes that alive says were gone at the last
// sweep too.
func (c *captured) retire(alive func(pid int) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for pid, p := range c.procs {
		switch {
		case alive(pid):
			p.gone = 0
		case p.gone > 0:
			c.dropLocked(pid, p)
		default:
			p.gone++
		}
	}
}

// close forgets everything, and closes the files.
func (c *captured) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for pid, p := range c.procs {
		c.dropLocked(pid, p)
	}
	for id, k := range c.files {
		k.f.Close()
		delete(c.files, id)
	}
}
