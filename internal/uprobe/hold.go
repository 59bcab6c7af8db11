package uprobe

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

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
// again only when the last of them is done. The process of a watcher is
// marked in the map while it has one, and never held: two agents that
// held each other would wait for ever.
//
// A watcher that is gone while it holds (its process killed, or ended,
// or its hub closed while a hold was being taken) must not leave the
// process stopped. A holder is live while its hub is open in this
// process, or, in another process, while that process is alive and
// marked; every live hub looks for the holds of holders that are not,
// at its start and once a second (orphanCheck), drops their shares, and
// resumes a process none is left to hold. A hub detaches its hooks
// before it resumes its own holds at close, so that none is taken after.

// holdsMapName is the name of the shared hold map in the kernel.
const holdsMapName = watchMapXpuscopeHolds

// defaultHoldsDir is where the hold map is pinned, where it is a BPF file
// system (a DaemonSet mounts the node's): the map, and the holds in it,
// then outlive every watcher, so that one started after a watcher was
// killed while it held resumes the process it left stopped.
const defaultHoldsDir = "/sys/fs/bpf"

// holdsMaps are the hold maps of the hubs of this process, by watcher
// map: a hub finds the one another process made, or makes its own, and
// the hubs of one process share it (and one mark of the process).
var holdsMaps = struct {
	sync.Mutex
	m    *ebpf.Map
	hubs int
}{}

// sharedHolds returns the host's hold map (the one pinned in dir, or one
// another watcher made; nil: the watcher makes it as it loads), and
// counts a hub more.
func sharedHolds(dir string) (*ebpf.Map, error) {
	holdsMaps.Lock()
	defer holdsMaps.Unlock()
	holdsMaps.hubs++
	if holdsMaps.m != nil {
		return holdsMaps.m.Clone()
	}
	m, err := pinnedHolds(dir)
	if err == nil && m == nil {
		m, err = findHolds()
	}
	if err != nil || m == nil {
		return nil, err
	}
	holdsMaps.m = m
	return m.Clone()
}

// keepHolds makes m, the hold map a hub loaded (its own, or the one it
// shares), the one the next hubs of this process share, and pins it in
// dir where that is a BPF file system (elsewhere it lives while a watcher
// does).
func keepHolds(m *ebpf.Map, dir string) error {
	holdsMaps.Lock()
	defer holdsMaps.Unlock()
	if holdsMaps.m == nil {
		c, err := m.Clone()
		if err != nil {
			return fmt.Errorf("uprobe: keep the hold map: %w", err)
		}
		holdsMaps.m = c
	}
	return pinHolds(m, dir)
}

// holdsLayout says whether m has the layout of this watcher's hold map.
func holdsLayout(info *ebpf.MapInfo) bool {
	spec, err := loadWatch()
	if err != nil {
		return false
	}
	want := spec.Maps[holdsMapName]
	return info.Name == holdsMapName && info.Type == want.Type && info.KeySize == want.KeySize &&
		info.ValueSize == want.ValueSize && info.MaxEntries == want.MaxEntries
}

// pinnedHolds returns the hold map pinned in dir, or nil if there is none
// of this layout.
func pinnedHolds(dir string) (*ebpf.Map, error) {
	m, err := ebpf.LoadPinnedMap(filepath.Join(dir, holdsMapName), nil)
	if err != nil {
		return nil, nil // none, or no BPF file system there
	}
	if info, err := m.Info(); err != nil || !holdsLayout(info) {
		m.Close()
		return nil, nil
	}
	return m, nil
}

// pinHolds pins m in dir, where dir is a BPF file system the watcher may
// write, in place of a map of another layout (an older watcher's).
func pinHolds(m *ebpf.Map, dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil || st.Type != unix.BPF_FS_MAGIC || unix.Access(dir, unix.W_OK) != nil {
		return nil
	}
	path := filepath.Join(dir, holdsMapName)
	if old, err := ebpf.LoadPinnedMap(path, nil); err == nil {
		info, err1 := old.Info()
		mine, err2 := m.Info()
		old.Close()
		if err1 == nil && err2 == nil {
			oldID, _ := info.ID()
			myID, _ := mine.ID()
			if oldID == myID {
				return nil
			}
		}
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("uprobe: replace the hold map pinned at %s: %w", path, err)
		}
	}
	if err := m.Pin(path); err != nil {
		return fmt.Errorf("uprobe: pin the hold map at %s: %w", path, err)
	}
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
		if info, err := m.Info(); err == nil && holdsLayout(info) {
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

// holderSerials numbers the hubs of this process, and keeps the ids of
// those that are open.
var holderSerials struct {
	sync.Mutex
	next uint32
	open map[uint64]bool
}

func newHolderID(self int) uint64 {
	holderSerials.Lock()
	defer holderSerials.Unlock()
	holderSerials.next++
	id := uint64(self)<<32 | uint64(holderSerials.next)
	if holderSerials.open == nil {
		holderSerials.open = map[uint64]bool{}
	}
	holderSerials.open[id] = true
	return id
}

// retireHolderID notes that the hub of id is closed.
func retireHolderID(id uint64) {
	holderSerials.Lock()
	defer holderSerials.Unlock()
	delete(holderSerials.open, id)
}

// openHolderID says whether the hub of id, of this process, is open.
func openHolderID(id uint64) bool {
	holderSerials.Lock()
	defer holderSerials.Unlock()
	return holderSerials.open[id]
}

// live says whether holder who still holds: a hub of this process that
// is open, or one of a process that is alive and marked (marks: the
// processes marked in the map).
func (h *holder) live(who uint64, marks map[uint32]bool) bool {
	pid := int(who >> 32)
	if pid == h.self {
		return openHolderID(who)
	}
	return marks[uint32(pid)] && h.procfs.Proc(pid).Alive()
}

// entries reads the hold map: the holds, and the processes marked.
func (h *holder) entries() (holds map[uint32]watchHold, marks map[uint32]bool, err error) {
	holds, marks = map[uint32]watchHold{}, map[uint32]bool{}
	var (
		pid  uint32
		hold watchHold
	)
	it := h.m.Iterate()
	for it.Next(&pid, &hold) {
		if hold.Agent != 0 {
			marks[pid] = true
		} else {
			holds[pid] = hold
		}
	}
	return holds, marks, it.Err()
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
	holds, _, err := h.entries()
	errs := []error{err}
	for pid, hold := range holds {
		if slices.Contains(hold.Holders[:], h.id) {
			if _, err := h.resume(int(pid)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// resume gives up this hub's hold of pid, the shares of holders that are
// not live too, and sends SIGCONT when no holder is left. It reports
// whether it did.
func (h *holder) resume(pid int) (bool, error) {
	left, err := h.drop(pid, h.id)
	if err != nil {
		return false, err
	}
	if left > 0 {
		return h.dropGone(pid)
	}
	return true, h.cont(pid)
}

// dropGone drops the shares of pid's holders that are not live, and
// sends SIGCONT when no holder is left. It reports whether it did.
func (h *holder) dropGone(pid int) (bool, error) {
	holds, marks, err := h.entries()
	if err != nil {
		return false, err
	}
	hold, ok := holds[uint32(pid)]
	left := 0
	for _, who := range hold.Holders {
		if !ok || who == 0 {
			continue
		}
		if h.live(who, marks) {
			left++
			continue
		}
		if left, err = h.drop(pid, who); err != nil {
			return false, err
		}
		if left == 0 {
			break
		}
	}
	if ok && left > 0 {
		return false, nil
	}
	return true, h.cont(pid)
}

// cont sends pid SIGCONT; a process that is gone needs none.
func (h *holder) cont(pid int) error {
	if err := h.procfs.Proc(pid).Signal(syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) && !errors.Is(err, syscall.ENOENT) {
		return err
	}
	return nil
}

// orphanCheck is how often a hub looks for the holds of holders that are
// not live.
const orphanCheck = time.Second

// resumeOrphans drops, in every hold of the map, the shares of holders
// that are not live, and resumes each process none is left to hold; it
// removes the marks of processes that are gone. It returns the
// processes it resumed.
func (h *holder) resumeOrphans() ([]int, error) {
	holds, marks, err := h.entries()
	errs := []error{err}
	for pid := range marks {
		if !h.procfs.Proc(int(pid)).Alive() {
			if err := h.m.Delete(pid); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
				errs = append(errs, err)
			}
			delete(marks, pid)
		}
	}
	var resumed []int
	for pid, hold := range holds {
		orphaned := false
		for _, who := range hold.Holders {
			orphaned = orphaned || who != 0 && !h.live(who, marks)
		}
		if !orphaned {
			continue
		}
		ok, err := h.dropGone(int(pid))
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			resumed = append(resumed, int(pid))
		}
	}
	return resumed, errors.Join(errs...)
}
