package uprobe

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"

	"github.com/cilium/ebpf"

	"github.com/xpuscope/xpuscope/internal/procfs"
)

// Holding a process. When a process maps a new file named like a target
// (or a new file while it maps a traced one), the watcher stops it with
// SIGSTOP (bpf_send_signal, delivered before the process runs another
// instruction of its own) and tells the hub, which classifies the files,
// attaches, and sends SIGCONT: the process's first call into a library
// it just loaded is then seen. A hold lasts until the hub is done, or
// holdLimit at most.
//
// Every watcher on the host (in this process or another agent) shares
// one hold map, found by its name: a process several of them hold runs
// again only when the last of them is done. A watcher that died holding
// is noticed by its process being gone, and its share dropped. The
// process of a watcher is marked in the map, and never held: two agents
// that held each other would wait for ever.

// holdsMapName is the name of the shared hold map in the kernel.
const holdsMapName = watchMapXpuscopeHolds

// holdsMaps are the hold maps of the hubs of this process, by watcher
// map: a hub finds the one another process made, or makes its own, and
// the hubs of one process share it (and one mark of the process).
var holdsMaps = struct {
	sync.Mutex
	m    *ebpf.Map
	hubs int
}{}

// sharedHolds returns the host's hold map (made by another watcher, or
// nil: the watcher makes it as it loads), and counts a hub more.
func sharedHolds() (*ebpf.Map, error) {
	holdsMaps.Lock()
	defer holdsMaps.Unlock()
	holdsMaps.hubs++
	if holdsMaps.m != nil {
		return holdsMaps.m.Clone()
	}
	m, err := findHolds()
	if err != nil || m == nil {
		return nil, err
	}
	holdsMaps.m = m
	return m.Clone()
}

// keepHolds makes m, the hold map a hub loaded, the one the next hubs of
// this process share.
func keepHolds(m *ebpf.Map) error {
	holdsMaps.Lock()
	defer holdsMaps.Unlock()
	if holdsMaps.m != nil {
		return nil
	}
	c, err := m.Clone()
	if err != nil {
		return fmt.Errorf("uprobe: keep the hold map: %w", err)
	}
	holdsMaps.m = c
	return nil
}

// dropHolds counts a hub less; the last one closes the process's handle
// of the map, and says so.
func dropHolds() (last bool) {
	holdsMaps.Lock()
	defer holdsMaps.Unlock()
	holdsMaps.hubs--
	if holdsMaps.hubs > 0 {
		return false
	}
	if holdsMaps.m != nil {
		holdsMaps.m.Close()
		holdsMaps.m = nil
	}
	return true
}

// findHolds looks for another watcher's hold map among the host's BPF
// maps: one named holdsMapName with the layout of this one. It returns
// nil when there is none.
func findHolds() (*ebpf.Map, error) {
	spec, err := loadWatch()
	if err != nil {
		return nil, err
	}
	want := spec.Maps[holdsMapName]
	var id ebpf.MapID
	for {
		next, err := ebpf.MapGetNextID(id)
		if errors.Is(err, syscall.ENOENT) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("uprobe: list the BPF maps: %w", err)
		}
		id = next
		m, err := ebpf.NewMapFromID(id)
		if err != nil {
			continue // gone meanwhile
		}
		info, err := m.Info()
		if err == nil && info.Name == holdsMapName && info.Type == want.Type &&
			info.KeySize == want.KeySize && info.ValueSize == want.ValueSize && info.MaxEntries == want.MaxEntries {
			return m, nil
		}
		m.Close()
	}
}

// holder is a hub's share in the hold map.
type holder struct {
	m       *ebpf.Map
	release *ebpf.Program // release_hold
	procfs  procfs.FS
	// self is this process in procfs's pid namespace; id is this hub
	// among the holders: self in the high half, a serial in the low.
	self int
	id   uint64
}

// holderSerials numbers the hubs of this process.
var holderSerials struct {
	sync.Mutex
	next uint32
}

func newHolderID(self int) uint64 {
	holderSerials.Lock()
	defer holderSerials.Unlock()
	holderSerials.next++
	return uint64(self)<<32 | uint64(holderSerials.next)
}

// markAgent marks this process in the hold map: no watcher holds it.
func (h *holder) markAgent() error {
	if err := h.m.Update(uint32(h.self), watchHold{Agent: 1}, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("uprobe: mark this process in the hold map: %w", err)
	}
	return nil
}

// unmarkAgent removes the mark, when the last hub of this process closes.
func (h *holder) unmarkAgent() error {
	if err := h.m.Delete(uint32(h.self)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("uprobe: unmark this process in the hold map: %w", err)
	}
	return nil
}

// drop takes holder who's share of the hold of pid, and returns how many
// holders are left.
func (h *holder) drop(pid int, who uint64) (int, error) {
	left, err := h.release.Run(&ebpf.RunOptions{Context: []uint64{uint64(pid), who}})
	if err != nil {
		return 0, fmt.Errorf("uprobe: release process %d: %w", pid, err)
	}
	return int(left), nil
}

// resumeOwn resumes every process the hold map says this hub holds,
// whether the hub heard of the stop or not: one the watcher made just
// before the hub closed, whose news the hub never read, would otherwise
// stay stopped for ever.
func (h *holder) resumeOwn() error {
	var (
		pid  uint32
		hold watchHold
		pids []int
	)
	it := h.m.Iterate()
	for it.Next(&pid, &hold) {
		if slices.Contains(hold.Holders[:], h.id) {
			pids = append(pids, int(pid))
		}
	}
	errs := []error{it.Err()}
	for _, p := range pids {
		if _, err := h.resume(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// resume gives up this hub's hold of pid, the shares of holders whose
// process is gone too, and sends SIGCONT when no holder is left. It
// reports whether it did.
func (h *holder) resume(pid int) (bool, error) {
	left, err := h.drop(pid, h.id)
	if err != nil {
		return false, err
	}
	if left > 0 {
		var hold watchHold
		if h.m.Lookup(uint32(pid), &hold) != nil {
			left = 0 // dropped meanwhile
		}
		for _, who := range hold.Holders {
			if left > 0 && who != 0 && !h.procfs.Proc(int(who>>32)).Alive() {
				if left, err = h.drop(pid, who); err != nil {
					return false, err
				}
			}
		}
	}
	if left > 0 {
		return false, nil
	}
	if err := h.procfs.Proc(pid).Signal(syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) && !errors.Is(err, syscall.ENOENT) {
		return false, err
	}
	return true, nil
}
