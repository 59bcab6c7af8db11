package uprobe

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"

	"github.com/xpuscope/xpuscope/internal/bpfsource"
	"github.com/xpuscope/xpuscope/internal/ktime"
	"github.com/xpuscope/xpuscope/internal/procfs"
)

// hub is the discovery that every Tracer on one procfs root shares: one
// watcher (watch.bpf.c: the exec raw tracepoint, a uprobe on each dynamic
// loader, itself a Tracer of the loaders, and the sweep iterator) and one
// worker that classifies each file the watcher tells of once, for every
// Tracer, and tells the watcher what became of it. The watcher filters in
// the kernel: a process whose files are all known costs the hub nothing,
// so the hub's work grows with the new files on the host, not with its
// process starts. A hub lives while a Tracer holds it.
type hub struct {
	procfs  procfs.FS
	maps    watchMaps
	progs   bpfsource.Programs
	execRT  link.Link
	sweeper *link.Iter
	watcher *bpfsource.Ring
	loader  *Tracer
	holder  *holder // nil where processes are not held (a procfs root without a self link)
	// holderID is this hub among the holders, open until closeObjects.
	holderID uint64
	procs    *captured

	records chan record // for the worker: WATCH_FILE, WATCH_HOLD, WATCH_RESCAN
	sweeps  chan sweepRequest
	stop    chan struct{}
	wg      sync.WaitGroup
	tick    *time.Ticker
	orphans *time.Ticker // resumeOrphans, where this hub holds

	mu      sync.Mutex                // guards tracers
	tracers map[*Tracer]time.Duration // each one's sweep period

	heldMu sync.Mutex
	held   map[int]*hold // the processes this hub holds now
	// filling is, by process, the hold whose WATCH_HOLD record the
	// worker handled last: the WATCH_FILE records of the process that
	// follow it, held, are that hold's (an older hold's come before it,
	// and may still be coming once a new one began at decode). The
	// worker's own.
	filling map[int]*hold

	markSeq atomic.Uint64
	marksMu sync.Mutex
	marks   map[uint64]chan struct{} // Sync's waits, by mark

	// closeMu orders close after the mark programs Sync runs: a Source's
	// reader may Sync while the Source closes its Tracer (and this hub
	// with it) before the reader.
	closeMu sync.RWMutex
	closed  bool
}

// holdLimit bounds a hold: past it the process runs on, and what is
// attached for it after counts as late (lateTimeout).
const holdLimit = 500 * time.Millisecond

// hold is a process the hub holds: it waits for the WATCH_FILE records
// that came with the hold, then for the hub to look at them.
type hold struct {
	pid      int
	files    int         // WATCH_FILE records still to come; hub.heldMu
	captured bool        // the process maps a captured file; hub.heldMu
	timer    *time.Timer // set with hub.heldMu held, before the hub knows the hold
	once     sync.Once
	expired  atomic.Bool // the limit passed first
	ended    atomic.Bool
}

// sweepRequest asks the worker to sweep: after clearing what the watcher
// knows (a Tracer joined, or Rescan), or not (the periodic sweep).
type sweepRequest struct {
	clear bool
	how   notice
	done  chan error
}

// hubs are the live hubs by procfs.
var hubs = struct {
	sync.Mutex
	byRoot map[procfs.FS]*hub
}{byRoot: map[procfs.FS]*hub{}}

// join registers t with the hub of its procfs root, starting one if there
// is none, and has it sweep every process for t: its events reach t from
// then on.
func join(t *Tracer) (*hub, error) {
	hubs.Lock()
	defer hubs.Unlock()
	h := hubs.byRoot[t.cfg.Procfs]
	if h == nil {
		var err error
		if h, err = newHub(t.cfg.Procfs, !t.cfg.noWalks && kernelWalks(), cmp.Or(t.cfg.holdsDir, defaultHoldsDir)); err != nil {
			return nil, err
		}
		hubs.byRoot[t.cfg.Procfs] = h
	}
	h.mu.Lock()
	h.tracers[t] = t.cfg.Rescan
	h.tick.Reset(h.period())
	err := h.writePatterns()
	h.mu.Unlock()
	if err == nil {
		// What the watcher knows was classified for the others: it
		// forgets it, and the sweep tells the new Tracer of every file.
		err = h.sweep(true, notice{running: true})
	}
	if err != nil {
		return nil, errors.Join(err, h.leaveLocked(t))
	}
	return h, nil
}

// leave unregisters t, and closes the hub when t was the last.
func (h *hub) leave(t *Tracer) error {
	hubs.Lock()
	defer hubs.Unlock()
	return h.leaveLocked(t)
}

// leaveLocked is leave with hubs locked.
func (h *hub) leaveLocked(t *Tracer) error {
	h.mu.Lock()
	delete(h.tracers, t)
	left := len(h.tracers)
	var err error
	if left > 0 {
		h.tick.Reset(h.period())
		err = h.writePatterns()
	}
	h.mu.Unlock()
	if left > 0 {
		return err
	}
	delete(hubs.byRoot, h.procfs)
	return h.close()
}

// period is the shortest sweep period the Tracers ask for; h.mu held.
func (h *hub) period() time.Duration {
	d := defaultRescan
	for _, r := range h.tracers {
		d = min(d, r)
	}
	return d
}

// kernelWalks says whether the kernel has the VMA iterator (Linux 6.7+):
// without it, the watcher asks user space to read a process's maps at
// exec and at each load (WATCH_RESCAN), and holds no process.
func kernelWalks() bool {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return false
	}
	_, err = spec.AnyTypesByName("bpf_iter_task_vma_new")
	return err == nil
}

// newHub loads the watcher, probes every dynamic loader on the host, and
// starts the worker; walks says the kernel walks the processes' mappings
// (else user space reads them at each exec and load). Missing privilege
// or kernel support is xpuscope.ErrUnavailable.
func newHub(fs procfs.FS, walks bool, holdsDir string) (*hub, error) {
	h := &hub{
		procfs:  fs,
		procs:   newCaptured(),
		records: make(chan record, 4096),
		sweeps:  make(chan sweepRequest),
		stop:    make(chan struct{}),
		tracers: map[*Tracer]time.Duration{},
		held:    map[int]*hold{},
		filling: map[int]*hold{},
		marks:   map[uint64]chan struct{}{},
	}
	onExec, onLoader := watchProgOnExec, watchProgOnLoaderChange
	if !walks {
		onExec, onLoader = watchProgOnExecRescan, watchProgOnLoaderRescan
	}
	if err := h.load(onExec, onLoader, walks, holdsDir); err != nil {
		retireHolderID(h.holderID)
		return nil, err
	}
	var err error
	h.execRT, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sched_process_exec", Program: h.progs.Program(onExec)})
	if err != nil {
		return nil, errors.Join(bpfsource.Classify("uprobe: attach raw tracepoint sched_process_exec", err), h.closeObjects())
	}
	h.sweeper, err = link.AttachIter(link.IterOptions{Program: h.progs.Program(watchProgSweep)})
	if err != nil {
		return nil, errors.Join(bpfsource.Classify("uprobe: attach the task_vma iterator", err), h.execRT.Close(), h.closeObjects())
	}
	h.loader = newTracer(Config{Procfs: fs, Targets: []Target{{
		Name: loaderTarget, Anchor: "_dl_debug_state", Names: []string{loaderName},
		Probes: []Probe{{Symbol: "_dl_debug_state", CookieFrom: "_r_debug", Entry: h.progs.Program(onLoader)}},
	}}})
	// The watcher wakes its reader at every record: they are few, and a
	// held process waits for them. The poll only bounds the wait between
	// records.
	h.watcher, err = bpfsource.NewRing(h.maps.WatchEvents, bpfsource.RingConfig{Poll: time.Second, Decode: h.decode})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("uprobe: watcher: %w", err), h.sweeper.Close(), h.execRT.Close(), h.closeObjects())
	}
	h.tick = time.NewTicker(defaultRescan)
	h.orphans = time.NewTicker(orphanCheck)
	if h.holder != nil {
		// Processes that watchers which are gone left stopped: now,
		// and once a second.
		_, _ = h.holder.resumeOrphans()
	}
	h.wg.Add(1)
	go h.work()
	return h, nil
}

// load loads the watcher's programs (onExec and onLoader its hooks), with
// the host's shared hold map where there is one (pinned in holdsDir, or
// another watcher's), and marks this process in it; it holds processes
// where walks and the procfs has a self link.
func (h *hub) load(onExec, onLoader string, walks bool, holdsDir string) error {
	spec, err := loadWatch()
	if err != nil {
		return fmt.Errorf("uprobe: parse the embedded watcher object: %w", err)
	}
	self, err := h.procfs.Self()
	canHold := err == nil && walks
	if !canHold {
		// A fixture tree: its processes are a few of the host's, and
		// the hub does not hold any.
		self = os.Getpid()
	}
	id := newHolderID(self)
	h.holderID = id
	shared, err := sharedHolds(holdsDir)
	if err != nil {
		dropHolds()
		return err
	}
	if err := spec.Variables[watchVarAgentTgid].Set(uint32(self)); err != nil {
		return err
	}
	if err := spec.Variables[watchVarHolderId].Set(id); err != nil {
		return err
	}
	o := bpfsource.LoadOptions{Programs: []string{onExec, onLoader, watchProgSweep, watchProgReleaseHold, watchProgMark}}
	if shared != nil {
		o.Replace = map[string]*ebpf.Map{holdsMapName: shared}
		defer shared.Close()
	}
	h.progs, err = bpfsource.Load(spec, o, &h.maps)
	if err != nil {
		dropHolds()
		return bpfsource.Classify("uprobe: load the process watcher", err)
	}
	hd := &holder{m: h.maps.XpuscopeHolds, release: h.progs.Program(watchProgReleaseHold), procfs: h.procfs, self: self, id: id}
	if err := errors.Join(keepHolds(h.maps.XpuscopeHolds, holdsDir), hd.markAgent()); err != nil {
		return errors.Join(err, h.closeObjects())
	}
	if canHold {
		h.holder = hd
	}
	return nil
}

// closeObjects frees the watcher's programs and maps, and, with the last
// hub of this process, its mark in the hold map.
func (h *hub) closeObjects() error {
	// From here a hold of this hub's (one a hook still running took
	// after close's look at the map) is an orphan, which other hubs
	// resume.
	retireHolderID(h.holderID)
	var errs []error
	if dropHolds() {
		hd := holder{m: h.maps.XpuscopeHolds, self: os.Getpid()}
		if self, err := h.procfs.Self(); err == nil {
			hd.self = self
		}
		errs = append(errs, hd.unmarkAgent())
	}
	return errors.Join(append(errs, h.progs.Close(), h.maps.Close())...)
}

// decode handles a watcher record on the ring's goroutine: a mapping of a
// captured process is captured at once, while the process may still run;
// files, holds and rescans go to the worker.
func (h *hub) decode(raw []byte) error {
	r, err := decodeRecord(raw)
	if err != nil {
		return err
	}

	switch r.what {
	case watchWatchWhatWATCH_MAPPING:
		m := r.mapping()
		p := h.procfs.Proc(r.pid)
		exe := ""
		if r.flags&watchWatchFlagFLAG_EXE != 0 {
			exe = r.name
		}
		h.procs.add(r.pid, m, exe, r.flags&watchWatchFlagFLAG_FRESH != 0, func() (*os.File, error) { return p.OpenMapped(m) })
		return nil
	case watchWatchWhatWATCH_MARK:
		h.marked(r.ktime)
		return nil
	case watchWatchWhatWATCH_HOLD:
		r.hold = h.startHold(r)
	}
	select {
	case h.records <- r:
	default:
		h.dropped(r)
	}
	return nil
}

// dropped undoes what a record the worker had no room for left: a file
// the watcher takes as told of is forgotten, to be told of again; a hold
// ends.
func (h *hub) dropped(r record) {
	switch r.what {
	case watchWatchWhatWATCH_FILE:
		_ = h.maps.WatchFiles.Delete(r.file)
	case watchWatchWhatWATCH_HOLD:
		h.endHold(r.hold)
	}
}

// startHold notes the hold r tells of, and makes sure it ends within
// holdLimit of the stop (r.ktime), whatever the worker is doing. It
// returns the hold the files of r's walk count towards.
func (h *hub) startHold(r record) *hold {
	hd := &hold{pid: r.pid, files: int(r.start), captured: r.flags&watchWatchFlagFLAG_CAPTURED != 0}
	h.heldMu.Lock()
	defer h.heldMu.Unlock()
	if old := h.held[r.pid]; old != nil {
		// This hub held it already: one share of the hold, and the
		// files of both walks to wait for.
		old.files += hd.files
		old.captured = old.captured || hd.captured
		return old
	}
	// The timer is set before the hold is known to anyone who could
	// end it (a reader late by the limit fires it at once).
	left := holdLimit - time.Duration(ktime.Now()-min(r.ktime, ktime.Now()))
	hd.timer = time.AfterFunc(max(left, 0), func() {
		hd.expired.Store(true)
		h.endHold(hd)
	})
	h.held[r.pid] = hd
	return hd
}

// endHold lets the held process go, once.
func (h *hub) endHold(hd *hold) {
	hd.once.Do(func() {
		h.heldMu.Lock()
		hd.timer.Stop()
		if h.held[hd.pid] == hd {
			delete(h.held, hd.pid)
		}
		h.heldMu.Unlock()
		hd.ended.Store(true)
		if h.holder != nil {
			_, _ = h.holder.resume(hd.pid) // a process that is gone needs no resuming
		}
	})
}

func (h *hub) work() {
	defer h.wg.Done()
	for {
		select {
		case <-h.stop:
			return
		case req := <-h.sweeps:
			req.done <- h.sweepNow(req.clear, req.how)
		case <-h.orphans.C:
			if h.holder != nil {
				_, _ = h.holder.resumeOrphans() // a failure waits for the next tick
			}
		case <-h.tick.C:
			_ = h.sweepNow(false, notice{late: lateSweep}) // a failed sweep waits for the next tick
			h.procs.retire(func(pid int) bool { return h.procfs.Proc(pid).Alive() })
			for pid, hd := range h.filling {
				if hd.ended.Load() {
					delete(h.filling, pid) // its records were dropped, or its process went
				}
			}
		case r := <-h.records:
			h.handle(r)
		}
	}
}

// handle handles a record on the worker.
func (h *hub) handle(r record) {
	switch r.what {
	case watchWatchWhatWATCH_FILE:
		hd := (*hold)(nil)
		if r.flags&watchWatchFlagFLAG_HELD != 0 {
			hd = h.filling[r.pid]
		}
		how := noticeOf(r, hd)
		captured := h.file(r, how)
		if hd != nil {
			h.heldMu.Lock()
			hd.files--
			hd.captured = hd.captured || captured
			last := hd.files <= 0
			h.heldMu.Unlock()
			if last {
				delete(h.filling, r.pid)
				h.finishHold(hd)
			}
		}
	case watchWatchWhatWATCH_HOLD:
		hd := r.hold
		h.heldMu.Lock()
		last := hd.files <= 0
		h.heldMu.Unlock()
		if last {
			h.finishHold(hd)
		} else {
			h.filling[r.pid] = hd
		}
	case watchWatchWhatWATCH_RESCAN:
		h.rescan(r.pid)
	}
}

// noticeOf says how the file of r was noticed: held (on time, unless the
// hold expired), or why not.
func noticeOf(r record, hd *hold) notice {
	switch {
	case hd != nil && !hd.expired.Load():
		return notice{}
	case hd != nil:
		return notice{late: lateTimeout}
	}
	switch r.reason {
	case watchWatchReasonREASON_TRACED:
		return notice{late: lateTraced}
	case watchWatchReasonREASON_TERMINAL:
		return notice{late: lateTerminal}
	case watchWatchReasonREASON_STOPPED:
		return notice{late: lateStopped}
	case watchWatchReasonREASON_AGENT:
		return notice{late: lateAgent}
	case watchWatchReasonREASON_FULL:
		return notice{late: lateFull}
	}
	if r.flags&watchWatchFlagFLAG_MATCHED != 0 {
		return notice{late: lateNotHeld}
	}
	return notice{late: lateUnmatched}
}

// finishHold captures the mappings of a held process that maps a captured
// file, while it cannot exit, and lets it go.
func (h *hub) finishHold(hd *hold) {
	h.heldMu.Lock()
	captured := hd.captured
	h.heldMu.Unlock()
	if captured {
		h.captureMaps(hd.pid)
	}
	h.endHold(hd)
}

// captureMaps reads pid's executable mappings into what is captured of
// it.
func (h *hub) captureMaps(pid int) {
	p := h.procfs.Proc(pid)
	maps, err := p.Maps()
	if err != nil {
		return
	}
	exe, _ := p.Exe()
	h.procs.set(pid, execFiles(maps), procfs.ExeBase(exe), p.OpenMapped)
}

// execFiles returns the mappings of maps that map a file executable.
func execFiles(maps procfs.Maps) procfs.Maps {
	var out procfs.Maps
	for _, m := range maps {
		if isExecFile(m) {
			out = append(out, m)
		}
	}
	return out
}

// isExecFile says whether m maps a file executable: what can hold code
// to probe or name.
func isExecFile(m procfs.Mapping) bool {
	return m.Perms&procfs.PermExec != 0 && m.Inode != 0 && strings.HasPrefix(m.Path, "/")
}

// file classifies the file of a WATCH_FILE record for the loader and each
// Tracer, and tells the watcher what became of it. It reports whether its
// processes are captured.
func (h *hub) file(r record, how notice) bool {
	p := h.procfs.Proc(r.pid)
	m := r.mapping()
	path, err := p.MappedPath(m)
	if err != nil {
		// Gone: told of again when another process maps it.
		_ = h.maps.WatchFiles.Delete(r.file)
		return false
	}
	m.Path = path
	state, ok := h.consider(r.pid, m, r.flags&watchWatchFlagFLAG_EXE != 0, how)
	if !ok {
		_ = h.maps.WatchFiles.Delete(r.file)
		return false
	}
	if err := h.maps.WatchFiles.Update(r.file, uint32(state), ebpf.UpdateAny); err != nil {
		// Full: the watcher forgets the plain files, which it tells of
		// again, and the Tracers classify from their own memory.
		h.forgetFiles(false)
		_ = h.maps.WatchFiles.Update(r.file, uint32(state), ebpf.UpdateAny)
	}
	return state&watchFileStateFILE_CAPTURED != 0
}

// forgetFiles removes from what the watcher knows the plain files, or,
// with all, every file.
func (h *hub) forgetFiles(all bool) {
	var (
		k     watchFileKey
		state uint32
		keys  []watchFileKey
	)
	for it := h.maps.WatchFiles.Iterate(); it.Next(&k, &state); {
		if all || watchFileState(state) == watchFileStateFILE_PLAIN {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		_ = h.maps.WatchFiles.Delete(k)
	}
}

// consider has the loader and each Tracer look at the file m maps, opened
// once for all of them, and returns what the watcher is to know of it:
// plain, or captured when a Tracer with Capture probes it (and holding its
// processes when that Tracer holds). ok is false when one could not tell.
func (h *hub) consider(pid int, m procfs.Mapping, isExe bool, how notice) (state watchFileState, ok bool) {
	f, err := h.procfs.Proc(pid).OpenMapped(m)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	// The process may exit while its file is classified and probed, and
	// its /proc/<pid> paths with it: work through a descriptor of our own.
	file := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	ok = h.loader.consider(pid, m, isExe, file, how) != verdictUnknown
	state = watchFileStateFILE_PLAIN
	for _, t := range h.members() {
		switch t.consider(pid, m, isExe, file, how) {
		case verdictUnknown:
			ok = false
		case verdictProbed:
			if t.cfg.Capture {
				h.procs.pin(fileID{m.Dev, m.Inode}, func() (*os.File, error) { return os.Open(file) })
				state = watchFileStateFILE_CAPTURED | state&watchFileStateFILE_HOLDS
				if t.cfg.Hold && h.holder != nil {
					state |= watchFileStateFILE_HOLDS
				}
			}
		}
	}
	return state, ok
}

// rescan reads the mappings of pid, whose walk the watcher could not make
// (its address space was busy, or the kernel has no VMA iterator), and has
// every Tracer look at them. It tells the watcher nothing: the next walk
// tells of these files again.
func (h *hub) rescan(pid int) {
	maps, err := h.procfs.Proc(pid).Maps()
	if err != nil {
		return
	}
	exe, _ := h.procfs.Proc(pid).Exe()
	captured := false
	for _, m := range execFiles(maps).Files() {
		state, _ := h.consider(pid, m, m.Path == exe, notice{late: lateRescan})
		captured = captured || state&watchFileStateFILE_CAPTURED != 0
	}
	if captured {
		h.captureMaps(pid)
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

// writePatterns gives the watcher the base-name prefixes of every
// Tracer's targets, and of the loaders, and whether a new program is held
// (a holding Tracer has a target linked into programs); h.mu held.
func (h *hub) writePatterns() error {
	holds, holdPrograms := false, false
	var ps []watchPattern
	add := func(names []string, hold bool) error {
		for _, n := range names {
			p, err := pattern(n, hold)
			if err != nil {
				return err
			}
			ps = append(ps, p)
		}
		return nil
	}
	for t := range h.tracers {
		hold := t.cfg.Hold && h.holder != nil
		holds = holds || hold
		for _, tg := range t.cfg.Targets {
			if err := add(tg.Names, hold); err != nil {
				return err
			}
			holdPrograms = holdPrograms || hold && tg.InPrograms
		}
	}
	settings := watchSettings{}
	if holdPrograms {
		settings.HoldNewExe = 1
	}
	if err := h.maps.WatchSettings.Update(uint32(0), settings, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("uprobe: write the watcher's settings: %w", err)
	}
	// A new loader is held for whoever holds: its first process maps
	// its libraries before the loader is probed otherwise.
	if err := add([]string{loaderName}, holds); err != nil {
		return err
	}
	if len(ps) > int(spec_maxPatterns) {
		return fmt.Errorf("uprobe: %d file name patterns, the watcher takes %d", len(ps), spec_maxPatterns)
	}
	for i := range spec_maxPatterns {
		var p watchPattern
		if int(i) < len(ps) {
			p = ps[i]
		}
		if err := h.maps.WatchPatterns.Update(i, p, ebpf.UpdateAny); err != nil {
			return fmt.Errorf("uprobe: write the file name patterns: %w", err)
		}
	}
	return nil
}

// spec_maxPatterns is MAX_PATTERNS of watch.bpf.c.
const spec_maxPatterns uint32 = 16

// pattern encodes a base-name prefix for the watcher: the name's bytes
// and the mask of those that count, in words.
func pattern(prefix string, hold bool) (watchPattern, error) {
	var p watchPattern
	if prefix == "" || len(prefix) > 8*len(p.Word) {
		return p, fmt.Errorf("uprobe: file name prefix %q: want 1 to %d bytes", prefix, 8*len(p.Word))
	}
	for i := range len(prefix) {
		p.Word[i/8] |= uint64(prefix[i]) << (8 * (i % 8))
		p.Mask[i/8] |= 0xff << (8 * (i % 8))
	}
	p.Len = uint32(len(prefix))
	if hold {
		p.Hold = 1
	}
	return p, nil
}

// sweep has the worker sweep every process and waits for it.
func (h *hub) sweep(clear bool, how notice) error {
	req := sweepRequest{clear: clear, how: how, done: make(chan error, 1)}
	select {
	case h.sweeps <- req:
	case <-h.stop:
		return errors.New("uprobe: the hub is closed")
	}
	return <-req.done
}

// sweepNow runs the watcher's task_vma iterator over every process, which
// tells of the files it does not know (after forgetting all it knows,
// with clear), and classifies them; on the worker.
func (h *hub) sweepNow(clear bool, how notice) error {
	if clear {
		h.forgetFiles(true)
	}
	rd, err := h.sweeper.Open()
	if err != nil {
		return fmt.Errorf("uprobe: sweep the processes: %w", err)
	}
	out, err := io.ReadAll(rd)
	rd.Close()
	if err != nil {
		return fmt.Errorf("uprobe: sweep the processes: %w", err)
	}
	for len(out) >= recordSize {
		r, err := decodeRecord(out[:recordSize])
		out = out[recordSize:]
		if err == nil {
			h.file(r, how)
		}
	}
	return nil
}

// Sync waits until every watcher record made before it was handled (a
// second at most): the mappings a captured process's watcher records told
// of are captured.
func (h *hub) Sync() {
	seq := h.markSeq.Add(1)
	done := make(chan struct{})
	h.marksMu.Lock()
	h.marks[seq] = done
	h.marksMu.Unlock()
	defer func() {
		h.marksMu.Lock()
		delete(h.marks, seq)
		h.marksMu.Unlock()
	}()
	if !h.mark(seq) {
		return // closed, or no room in the ring: nothing to wait for that would come sooner
	}
	select {
	case <-done:
	case <-h.stop:
	case <-time.After(time.Second):
	}
}

// mark has the watcher put mark seq in its ring, unless the hub is
// closed; it reports whether it did.
func (h *hub) mark(seq uint64) bool {
	h.closeMu.RLock()
	defer h.closeMu.RUnlock()
	if h.closed {
		return false
	}
	ret, err := h.progs.Program(watchProgMark).Run(&ebpf.RunOptions{Context: []uint64{seq}})
	return err == nil && ret == 0
}

// marked ends the Syncs waiting for marks up to seq.
func (h *hub) marked(seq uint64) {
	h.marksMu.Lock()
	defer h.marksMu.Unlock()
	for s, done := range h.marks {
		if s <= seq {
			close(done)
			delete(h.marks, s)
		}
	}
}

// close stops the worker, lets every held process go, and detaches the
// watcher.
func (h *hub) close() error {
	h.closeMu.Lock()
	h.closed = true
	h.closeMu.Unlock()
	// The hooks first: a hold taken after resumeOwn's look at the map
	// would be no one's to end.
	errs := []error{h.execRT.Close(), h.loader.closeLinks()}
	close(h.stop)
	errs = append(errs, h.watcher.Close())
	h.wg.Wait()
	h.tick.Stop()
	h.orphans.Stop()
	h.heldMu.Lock()
	held := make([]*hold, 0, len(h.held))
	for _, hd := range h.held {
		held = append(held, hd)
	}
	h.heldMu.Unlock()
	for _, hd := range held {
		h.endHold(hd)
	}
	if h.holder != nil {
		errs = append(errs, h.holder.resumeOwn()) // stops it never heard of
	}
	h.procs.close()
	errs = append(errs, h.sweeper.Close(), h.closeObjects())
	return errors.Join(errs...)
}
