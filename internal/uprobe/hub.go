package uprobe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cilium/ebpf/link"

	"github.com/xpuscope/xpuscope/internal/bpfsource"
	"github.com/xpuscope/xpuscope/internal/procfs"
)

// hub is the discovery that every Tracer on one procfs root shares: one
// watcher (the exec raw tracepoint, and a uprobe on each dynamic loader,
// itself a Tracer of the loader), and one worker that reads a process's
// maps once, at each event and in the periodic full rescan, and hands them
// to every Tracer. Without it each Source traced its own: an agent with
// three paid three traps in a process at each dlopen, and three reads of
// its maps at each exec. A hub lives while a Tracer holds it.
type hub struct {
	procfs  procfs.FS
	maps    watchMaps
	progs   bpfsource.Programs
	execRT  link.Link
	watcher *bpfsource.Ring
	loader  *Tracer

	scans chan int // pids to rescan
	stop  chan struct{}
	wg    sync.WaitGroup
	tick  *time.Ticker

	mu      sync.Mutex                // guards tracers
	tracers map[*Tracer]time.Duration // each one's rescan period
}

// hubs are the live hubs by procfs.
var hubs = struct {
	sync.Mutex
	byRoot map[procfs.FS]*hub
}{byRoot: map[procfs.FS]*hub{}}

// join registers t with the hub of its procfs root, starting one if there
// is none: its events reach t from then on.
func join(t *Tracer) (*hub, error) {
	hubs.Lock()
	defer hubs.Unlock()
	h := hubs.byRoot[t.cfg.Procfs]
	if h == nil {
		var err error
		if h, err = newHub(t.cfg.Procfs); err != nil {
			return nil, err
		}
		hubs.byRoot[t.cfg.Procfs] = h
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tracers[t] = t.cfg.Rescan
	h.tick.Reset(h.period())
	return h, nil
}

// leave unregisters t, and closes the hub when t was the last.
func (h *hub) leave(t *Tracer) error {
	hubs.Lock()
	defer hubs.Unlock()
	h.mu.Lock()
	delete(h.tracers, t)
	left := len(h.tracers)
	if left > 0 {
		h.tick.Reset(h.period())
	}
	h.mu.Unlock()
	if left > 0 {
		return nil
	}
	delete(hubs.byRoot, h.procfs)
	return h.close()
}

// period is the shortest rescan period the Tracers ask for; h.mu held.
func (h *hub) period() time.Duration {
	d := defaultRescan
	for _, r := range h.tracers {
		d = min(d, r)
	}
	return d
}

// newHub loads the watcher, probes every dynamic loader on the host, and
// starts the worker. Missing privilege or kernel support is
// xpuscope.ErrUnavailable.
func newHub(fs procfs.FS) (*hub, error) {
	h := &hub{
		procfs:  fs,
		scans:   make(chan int, 4096),
		stop:    make(chan struct{}),
		tracers: map[*Tracer]time.Duration{},
	}
	spec, err := loadWatch()
	if err != nil {
		return nil, fmt.Errorf("uprobe: parse the embedded watcher object: %w", err)
	}
	h.progs, err = bpfsource.Load(spec, bpfsource.LoadOptions{Programs: []string{watchProgOnExec, watchProgOnLoaderChange}}, &h.maps)
	if err != nil {
		return nil, bpfsource.Classify("uprobe: load the exec/dlopen watcher", err)
	}
	h.execRT, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sched_process_exec", Program: h.progs.Program(watchProgOnExec)})
	if err != nil {
		h.closeObjects()
		return nil, bpfsource.Classify("uprobe: attach raw tracepoint sched_process_exec", err)
	}
	h.loader = &Tracer{
		cfg: Config{Procfs: fs, Targets: []Target{{
			Name: loaderTarget, Anchor: "_dl_debug_state", Hint: isLoader,
			Probes: []Probe{{Symbol: "_dl_debug_state", Entry: h.progs.Program(watchProgOnLoaderChange)}},
		}}},
		seen: map[fileID]seenFile{},
	}
	if err := h.scanAll(nil); err != nil {
		h.execRT.Close()
		h.loader.closeLinks()
		h.closeObjects()
		return nil, err
	}
	// The watcher wakes its reader at every record: exec and dlopen are
	// rare, and each must be seen at once. The poll only bounds the wait
	// between records.
	h.watcher, err = bpfsource.NewRing(h.maps.WatchEvents, bpfsource.RingConfig{Poll: time.Second, Decode: h.decode})
	if err != nil {
		h.execRT.Close()
		h.loader.closeLinks()
		h.closeObjects()
		return nil, fmt.Errorf("uprobe: watcher: %w", err)
	}
	h.tick = time.NewTicker(defaultRescan)
	h.wg.Add(1)
	go h.work()
	return h, nil
}

// decode forwards the pid a watcher record names to the worker; an exec
// also to the rescans after it.
func (h *hub) decode(raw []byte) error {
	pid, exec, err := decodeWatch(raw)
	if err != nil {
		return err
	}
	h.request(pid)
	if exec {
		// At exec the new image has not mapped its libraries yet; the
		// loader hook catches them, these catch a loader not yet probed
		// (a container's own ld.so).
		for _, d := range [...]time.Duration{20 * time.Millisecond, 100 * time.Millisecond, 500 * time.Millisecond} {
			time.AfterFunc(d, func() { h.request(pid) })
		}
	}
	return nil
}

// decodeWatch reads a watcher record (struct watch_event): the process,
// and whether it exec'd (else it called the dynamic loader's hook).
func decodeWatch(raw []byte) (pid int, exec bool, err error) {
	if len(raw) < 8 {
		return 0, false, fmt.Errorf("uprobe: watcher record of %d bytes, want 8", len(raw))
	}
	what := watchWatchWhat(binary.LittleEndian.Uint32(raw[4:]))
	return int(binary.LittleEndian.Uint32(raw)), what == watchWatchWhatWATCH_EXEC, nil
}

// closeObjects frees the watcher's programs and maps.
func (h *hub) closeObjects() error { return errors.Join(h.progs.Close(), h.maps.Close()) }

func (h *hub) request(pid int) {
	select {
	case <-h.stop:
	case h.scans <- pid:
	default:
		// Full queue: the periodic rescan catches up.
	}
}

func (h *hub) work() {
	defer h.wg.Done()
	for {
		select {
		case <-h.stop:
			return
		case <-h.tick.C:
			_ = h.scanAll(h.members()) // procfs was listed at start; a passing failure waits for the next tick
		case pid := <-h.scans:
			pids := map[int]bool{pid: true}
		drain:
			for {
				select {
				case p := <-h.scans:
					pids[p] = true
				default:
					break drain
				}
			}
			ts := h.members()
			for p := range pids {
				h.scanPID(p, ts)
			}
		}
	}
}

// members returns the Tracers registered now.
func (h *hub) members() []*Tracer {
	h.mu.Lock()
	defer h.mu.Unlock()
	ts := make([]*Tracer, 0, len(h.tracers))
	for t := range h.tracers {
		ts = append(ts, t)
	}
	return ts
}

// scanAll scans every process for the loader and ts; it fails only when
// procfs cannot be listed.
func (h *hub) scanAll(ts []*Tracer) error {
	pids, err := h.procfs.PIDs()
	if err != nil {
		return fmt.Errorf("uprobe: %w", err)
	}
	for _, pid := range pids {
		h.scanPID(pid, ts)
	}
	return nil
}

// scanPID reads pid's maps and executable once, and has the loader, then
// each of ts, look at them.
func (h *hub) scanPID(pid int, ts []*Tracer) {
	p := h.procfs.Proc(pid)
	maps, err := p.Maps()
	if err != nil {
		return // the process is gone, or a kernel thread
	}
	exe, _ := p.Exe()
	h.loader.consider(pid, maps, exe)
	for _, t := range ts {
		t.consider(pid, maps, exe)
	}
}

// close stops the worker and detaches the watcher.
func (h *hub) close() error {
	close(h.stop)
	errs := []error{h.watcher.Close()}
	h.wg.Wait()
	h.tick.Stop()
	errs = append(errs, h.loader.closeLinks(), h.execRT.Close(), h.closeObjects())
	return errors.Join(errs...)
}
