// Package uprobe is the skeleton every uprobe-based Source shares: it finds
// the files that define the functions a Source probes, in every process on
// the host and in every mount namespace, attaches the probes once per file,
// and keeps finding new copies as processes exec and dlopen.
//
// A uprobe attached to a file fires in every process that maps that file,
// so attaching happens once per file identity (device and inode), never
// per process. Discovery:
//
//   - at start, every process's /proc/<pid>/maps is scanned;
//   - a raw tracepoint on sched_process_exec and a uprobe on the dynamic
//     loader's _dl_debug_state (called after every dlopen and dlclose, and
//     once the startup libraries are mapped) name the processes that may
//     have mapped new code, and only those are rescanned, at once;
//   - a periodic full rescan is the fallback for what both miss.
//
// The Tracers on one procfs root share that discovery (hub.go): one
// watcher, and one read of a process's maps per event and per rescan,
// whatever Sources they serve.
//
// Files are opened through /proc/<pid>/map_files (or /proc/<pid>/root), so
// libraries inside containers and pip-wheel copies are found by identity,
// wherever they live.
package uprobe

import (
	"errors"
	"fmt"
	gomaps "maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/procfs"
)

// Probe attaches Entry (and Return, if set) to Symbol, with Cookie as the
// attach cookie.
type Probe struct {
	Symbol string
	// CalledFrom names exported functions that are thin wrappers of
	// Symbol: each calls it before any other call, passing on the
	// arguments the Entry program reads, so a probe on Symbol sees every
	// call of theirs. Where the symbol tables lack Symbol (an internal
	// function of a stripped library), it is found as the function they
	// all call; where it is found, the probes on the wrappers are left
	// off. See place.go for why.
	CalledFrom []string
	Cookie     uint64
	Entry      *ebpf.Program
	Return     *ebpf.Program
}

// Target is one kind of file to probe.
type Target struct {
	// Name names the target in reports ("libcudart").
	Name string
	// Anchor is the symbol that makes a file a target: a mapped file that
	// defines it is probed for every Probe symbol it defines.
	Anchor string
	// Hint matches the base names of files that should be targets; one
	// that lacks the Anchor is reported as rejected (stripped, say).
	Hint func(base string) bool
	// Probes are attached to every target file.
	Probes []Probe
	// Multi says the programs were loaded for uprobe_multi links
	// (ebpf.AttachTraceUprobeMulti): one link per program and file.
	Multi bool
}

// Config configures a Tracer.
type Config struct {
	// Procfs is the host's procfs (procfs.DefaultRoot when zero).
	Procfs  procfs.FS
	Targets []Target
	// Rescan is the period of the fallback full rescan; 0 means 30s.
	Rescan time.Duration
}

// Attachment is a file the Tracer probes; Rejection a file that looks
// like a target but cannot be probed. They are the public reports of
// every uprobe-based Source.
type (
	Attachment = xpuscope.Attachment
	Rejection  = xpuscope.Rejection
)

type fileID struct{ dev, inode uint64 }

// seenFile is what the Tracer remembers of a classified file.
type seenFile struct {
	attached bool
	// path is where the file was mapped when classified. The inode
	// number of a deleted file is reused at once, so a new file can come
	// with the identity of one classified before: a file attached to
	// cannot (its probes hold the inode), one that was not is classified
	// again when seen at another path.
	path string
}

// Tracer finds and probes target files. Create it with New.
type Tracer struct {
	cfg       Config
	hub       *hub // nil for the hub's own loader Tracer
	closeOnce sync.Once

	// scanMu serialises the looks at processes (the hub's worker's, and
	// New's and Rescan's) and guards seen, links and closed.
	scanMu sync.Mutex
	seen   map[fileID]seenFile // classified files
	links  []link.Link
	closed bool

	// statusMu guards the report, so that reading it never waits for a
	// scan (which can take a while on a busy host), and the executables.
	statusMu    sync.Mutex
	attachments []Attachment
	rejections  []Rejection
	exes        map[int]string // pid → executable path seen by a scan
}

// maxExes bounds the executables remembered; past it the map starts over.
const maxExes = 1 << 14

func (t *Tracer) remember(pid int, exe string) {
	if exe == "" {
		return
	}
	t.statusMu.Lock()
	defer t.statusMu.Unlock()
	if t.exes == nil || len(t.exes) >= maxExes {
		t.exes = map[int]string{}
	}
	t.exes[pid] = exe
}

// Executable returns the executable path of pid as the last scan of it
// saw: a scan runs at exec and at each dlopen, so this knows processes
// that exited before their events were handled.
func (t *Tracer) Executable(pid int) (string, bool) {
	t.statusMu.Lock()
	defer t.statusMu.Unlock()
	exe, ok := t.exes[pid]
	return exe, ok
}

const (
	defaultRescan = 30 * time.Second
	// maxSeen bounds the classified-file cache; past it the files not
	// attached to are forgotten and classified again when seen.
	maxSeen = 1 << 16
	// maxRejections bounds the rejection report.
	maxRejections = 64
)

// loader is the pseudo-target for the dynamic loader's _dl_debug_state.
const loaderTarget = "loader"

func isLoader(base string) bool {
	return strings.HasPrefix(base, "ld-linux") || strings.HasPrefix(base, "ld-musl") || (strings.HasPrefix(base, "ld-") && strings.Contains(base, ".so"))
}

// New scans every process once and attaches to every target file found,
// then keeps watching through the hub of its procfs root (see hub), which
// it starts if it is the first. Missing privilege or kernel support is
// xpuscope.ErrUnavailable.
func New(cfg Config) (*Tracer, error) {
	if cfg.Procfs.Root == "" {
		cfg.Procfs.Root = procfs.DefaultRoot
	}
	if cfg.Rescan <= 0 {
		cfg.Rescan = defaultRescan
	}
	t := &Tracer{cfg: cfg, seen: map[fileID]seenFile{}}
	// Joined first, so that no event between the scan and the joining is
	// lost: the hub's worker and the scan may look at a process twice.
	h, err := join(t)
	if err != nil {
		return nil, err
	}
	t.hub = h
	if err := h.scanAll([]*Tracer{t}); err != nil {
		return nil, errors.Join(err, t.Close())
	}
	return t, nil
}

// Rescan scans every process now and returns when done. It is for tests
// and for callers that know something changed.
func (t *Tracer) Rescan() error { return t.hub.scanAll([]*Tracer{t}) }

// consider classifies the files process pid maps, as the hub read them,
// that t has not classified before, and attaches to those that are
// targets.
func (t *Tracer) consider(pid int, maps procfs.Maps, exe string) {
	t.scanMu.Lock()
	defer t.scanMu.Unlock()
	if t.closed {
		return
	}
	t.remember(pid, exe)
	for _, m := range maps {
		if m.Perms&procfs.PermExec == 0 || m.Inode == 0 || !strings.HasPrefix(m.Path, "/") {
			continue
		}
		id := fileID{m.Dev, m.Inode}
		if s, done := t.seen[id]; done && (s.attached || s.path == m.Path) {
			continue
		}
		if len(t.seen) >= maxSeen {
			// Forget the files not attached to; the attached ones must
			// stay known, or they would be probed twice.
			gomaps.DeleteFunc(t.seen, func(_ fileID, s seenFile) bool { return !s.attached })
		}
		if attached, ok := t.classify(pid, m, m.Path == exe); ok {
			t.seen[id] = seenFile{attached: attached, path: m.Path}
		}
	}
}

// classify decides whether the file m maps is a target, and attaches to it
// if so. It reports whether it attached, and whether it could tell (not
// when the process exited before its file could be opened).
func (t *Tracer) classify(pid int, m procfs.Mapping, isExe bool) (attached, ok bool) {
	f, err := t.cfg.Procfs.Proc(pid).OpenMapped(m)
	if err != nil {
		return false, false
	}
	defer f.Close()
	// The process may exit while its file is classified and probed, and
	// its /proc/<pid> paths with it: work through a descriptor of our own.
	path := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	wanted := map[string]bool{}
	for _, tg := range t.cfg.Targets {
		wanted[tg.Anchor] = true
	}
	offsets, err := resolve(path, wanted, isExe)
	if err != nil {
		return false, true
	}
	base := filepath.Base(m.Path)
	for _, tg := range t.cfg.Targets {
		if _, ok := offsets[tg.Anchor]; !ok {
			if tg.Hint != nil && tg.Hint(base) {
				t.reject(Rejection{Target: tg.Name, Path: m.Path, PID: pid,
					Reason: fmt.Sprintf("defines no %s in its symbol tables (stripped, or not the library it is named after)", tg.Anchor)})
			}
			continue
		}
		if t.attach(tg, pid, m, path, isExe) {
			attached = true
		}
	}
	return attached, true
}

func (t *Tracer) reject(r Rejection) {
	t.statusMu.Lock()
	defer t.statusMu.Unlock()
	if len(t.rejections) < maxRejections {
		t.rejections = append(t.rejections, r)
	}
}

func (t *Tracer) attach(tg Target, pid int, m procfs.Mapping, path string, isExe bool) bool {
	offsets, err := locate(path, tg.Probes, isExe)
	if err != nil {
		t.reject(Rejection{Target: tg.Name, Path: m.Path, PID: pid, Reason: err.Error()})
		return false
	}
	ex, err := link.OpenExecutable(path)
	if err != nil {
		t.reject(Rejection{Target: tg.Name, Path: m.Path, PID: pid, Reason: err.Error()})
		return false
	}
	a := Attachment{Target: tg.Name, Path: m.Path, PID: pid, Dev: m.Dev, Inode: m.Inode, AttachedAt: time.Now()}
	if tg.Multi {
		t.attachMulti(ex, tg, offsets, &a)
	} else {
		t.attachEach(ex, tg, offsets, &a)
	}
	if len(a.Symbols) == 0 {
		t.reject(Rejection{Target: tg.Name, Path: m.Path, PID: pid, Reason: "no probe attached: " + strings.Join(a.AttachErrors, "; ")})
		return false
	}
	t.statusMu.Lock()
	t.attachments = append(t.attachments, a)
	t.statusMu.Unlock()
	return true
}

// attachEach attaches one perf-event uprobe per symbol and program.
func (t *Tracer) attachEach(ex *link.Executable, tg Target, offsets map[string]uint64, a *Attachment) {
	for _, p := range tg.Probes {
		off, ok := offsets[p.Symbol]
		if !ok {
			continue
		}
		opts := &link.UprobeOptions{Address: off, Cookie: p.Cookie}
		l, err := ex.Uprobe(p.Symbol, p.Entry, opts)
		if err != nil {
			a.AttachErrors = append(a.AttachErrors, fmt.Sprintf("uprobe %s: %v", p.Symbol, err))
			continue
		}
		t.links = append(t.links, l)
		if p.Return != nil {
			l, err := ex.Uretprobe(p.Symbol, p.Return, opts)
			if err != nil {
				a.AttachErrors = append(a.AttachErrors, fmt.Sprintf("uretprobe %s: %v", p.Symbol, err))
				continue
			}
			t.links = append(t.links, l)
		}
		a.Symbols = append(a.Symbols, p.Symbol)
	}
}

// multiGroup is the symbols one program is attached to in one file.
type multiGroup struct {
	symbols        []string
	addrs, cookies []uint64
}

// attachMulti attaches one uprobe_multi link per program (entry and
// return apart), with each symbol's cookie.
func (t *Tracer) attachMulti(ex *link.Executable, tg Target, offsets map[string]uint64, a *Attachment) {
	entry, ret := map[*ebpf.Program]*multiGroup{}, map[*ebpf.Program]*multiGroup{}
	add := func(m map[*ebpf.Program]*multiGroup, prog *ebpf.Program, p Probe, off uint64) {
		g := m[prog]
		if g == nil {
			g = &multiGroup{}
			m[prog] = g
		}
		g.symbols, g.addrs, g.cookies = append(g.symbols, p.Symbol), append(g.addrs, off), append(g.cookies, p.Cookie)
	}
	for _, p := range tg.Probes {
		off, ok := offsets[p.Symbol]
		if !ok {
			continue
		}
		add(entry, p.Entry, p, off)
		if p.Return != nil {
			add(ret, p.Return, p, off)
		}
	}
	failed := map[string]bool{}
	for _, side := range []struct {
		groups map[*ebpf.Program]*multiGroup
		attach func([]string, *ebpf.Program, *link.UprobeMultiOptions) (link.Link, error)
		what   string
	}{{entry, ex.UprobeMulti, "uprobe"}, {ret, ex.UretprobeMulti, "uretprobe"}} {
		for prog, g := range side.groups {
			l, err := side.attach(nil, prog, &link.UprobeMultiOptions{Addresses: g.addrs, Cookies: g.cookies})
			if err != nil {
				a.AttachErrors = append(a.AttachErrors, fmt.Sprintf("%s_multi %s: %v", side.what, strings.Join(g.symbols, ","), err))
				for _, s := range g.symbols {
					failed[s] = true
				}
				continue
			}
			t.links = append(t.links, l)
		}
	}
	for _, p := range tg.Probes {
		if _, ok := offsets[p.Symbol]; ok && !failed[p.Symbol] {
			a.Symbols = append(a.Symbols, p.Symbol)
		}
	}
}

// Attachments lists the files probed so far, the hub's dynamic loaders
// included (Target "loader").
func (t *Tracer) Attachments() []Attachment {
	t.statusMu.Lock()
	out := slices.Clone(t.attachments)
	t.statusMu.Unlock()
	if t.hub != nil {
		out = append(out, t.hub.loader.Attachments()...)
	}
	return out
}

// Rejections lists files that looked like targets but could not be
// probed, the hub's dynamic loaders included.
func (t *Tracer) Rejections() []Rejection {
	t.statusMu.Lock()
	out := slices.Clone(t.rejections)
	t.statusMu.Unlock()
	if t.hub != nil {
		out = append(out, t.hub.loader.Rejections()...)
	}
	return out
}

// Status is what a Source reports of t: the files of its own targets it
// probes (not the hub's dynamic loaders), and the files it rejected, the
// loaders' included.
func (t *Tracer) Status() ([]Attachment, []Rejection) {
	t.statusMu.Lock()
	attached := slices.Clone(t.attachments)
	t.statusMu.Unlock()
	return attached, t.Rejections()
}

// Close detaches t's probes and leaves the hub, which stops with its last
// Tracer. Calls after the first return nil.
func (t *Tracer) Close() error {
	var err error
	t.closeOnce.Do(func() {
		var errs []error
		if t.hub != nil {
			errs = append(errs, t.hub.leave(t))
		}
		err = errors.Join(append(errs, t.closeLinks())...)
	})
	return err
}

// closeLinks detaches t's probes; t looks at no process after.
func (t *Tracer) closeLinks() error {
	t.scanMu.Lock()
	defer t.scanMu.Unlock()
	t.closed = true
	var errs []error
	for _, l := range t.links {
		errs = append(errs, l.Close())
	}
	t.links = nil
	return errors.Join(errs...)
}
