// Package uprobe is the skeleton every uprobe-based Source shares: it finds
// the files that define the functions a Source probes, in every process on
// the host and in every mount namespace, attaches the probes once per file,
// and keeps finding new copies as processes exec and dlopen.
//
// A uprobe attached to a file fires in every process that maps that file,
// so attaching happens once per file identity (device and inode), never
// per process. Discovery happens in the kernel (watch.bpf.c), shared by
// the Tracers of a procfs root (hub.go):
//
//   - a raw tracepoint on sched_process_exec and a uprobe on the dynamic
//     loader's _dl_debug_state (called once the objects of a dlopen, or
//     of the start-up, are mapped, before they are relocated or run) walk
//     the process's executable mappings, and tell user space only of the
//     files it has not classified yet, once per file: a process whose
//     files are all known costs user space nothing;
//   - a process that maps a new file named like a target, or a new file
//     while it maps a captured one (a file a Tracer with Config.Capture
//     probes), or runs a new program where a target can be linked into
//     programs (Target.InPrograms), is held (SIGSTOP) until its files are
//     classified and probed (hold.go), so that its first calls into a
//     library it just loaded, or into a program it just ran, are seen;
//   - the executable mappings of a process that maps a captured file are
//     captured as it maps them (captured.go), so that a Source names its
//     code after it exited;
//   - a sweep of every process (a task_vma iterator) at start and every
//     Rescan period is the fallback for what the hooks miss.
//
// Files are opened through /proc/<pid>/map_files (or /proc/<pid>/root), so
// libraries inside containers and pip-wheel copies are found by identity,
// wherever they live.
//
// Go programs are probed too (gofunc.go): their functions are found in
// .symtab or, stripped, in the pclntab, and a Go function's return is
// probed on each of its RET instructions (Probe.AtReturns), or on the one
// call that copies out what it returns (Probe.AtCallOf), since a
// uretprobe would break goroutine stacks.
package uprobe

import (
	"cmp"
	"errors"
	"fmt"
	gomaps "maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/procfs"
	"github.com/xpuscope/xpuscope/semconv"
)

// GoStackCheck is set in the attach cookie of a probe the Tracer placed
// on a Go function's stack bound check, the conditional branch to
// runtime.morestack after its first instruction or two (x86-64's JBE,
// arm64's B.LS), where the kernel emulates the probe. Where that branch
// is taken (the goroutine's stack is too small for the function, or the
// runtime asks the goroutine to stop, as it does for every garbage
// collection), the function grows the stack and starts over, and the
// probe fires again: a program on such a probe ignores the hit where the
// flags take the branch (args.bpf.h's GO_STACK_GROWS) and masks the bit
// out of its cookie.
const GoStackCheck uint64 = 1 << 63

// GoReceiverShift is where, in the cookie of a probe on a Go function's
// one call of AtCallOf (CallCookie in the bits below it), 16 bits start
// that say how far past the stack pointer at the call the spill slot of
// the function's first argument (a method's receiver) is: Go's register
// ABI reserves it in the caller's frame, and the function's code stores
// the argument there before the call; 0 where the Tracer found no such
// store. A program at the call reads the receiver there, and needs no
// state from the function's entry: the Tracer leaves out the entry
// probes marked OnlyForReturns.
const GoReceiverShift = 32

// Probe attaches Entry (and Return, if set) to Symbol, with Cookie as the
// attach cookie (with GoStackCheck set where it applies).
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
	// CookieFrom, if set, names an object the file defines (in .dynsym):
	// the cookie is then the distance from the probe to it, so that the
	// program finds it from the address the probe fired at; 0 in a file
	// that does not define it.
	CookieFrom string
	Entry      *ebpf.Program
	Return     *ebpf.Program
	// AtReturns puts Entry on each RET instruction of Symbol, a Go
	// function, instead of at its start, and takes no Return: how a Go
	// function's return is probed (see gofunc.go). Its Cookie is the
	// probe's; CalledFrom and CookieFrom do not apply.
	AtReturns bool
	// AtCallOf, with AtReturns, names a function that Symbol calls to
	// copy out what it returns (runtime.memmove, for a copy the compiler
	// inlined into it): where Symbol's code makes exactly one direct
	// CALL of it, Entry goes on that CALL, with CallCookie, instead of
	// on the RETs, and reads the callee's arguments from their
	// registers. The kernel emulates a CALL (arm64: a BL) at a probe,
	// where on x86-64 it single-steps a RET, a second trap each time.
	// Where the call is not there once, the probe goes on the RETs, with
	// Cookie.
	AtCallOf   string
	CallCookie uint64
	// OnlyForReturns marks an entry probe that only serves the probe on
	// Symbol's returns (its program keeps what the return's needs): it is
	// left off where that probe sits on the AtCallOf call and its cookie
	// carries the receiver's slot (GoReceiverShift), one trap a call
	// fewer.
	OnlyForReturns bool
	// CallFile, with AtCallOf, keeps to the calls in code from that
	// source file, a suffix of the name the pclntab gives
	// ("bytes/reader.go"): the code of the function inlined into Symbol
	// that makes the copy, so that another copy in a later release is no
	// match.
	CallFile string
}

// Target is one kind of file to probe.
type Target struct {
	// Name names the target in reports ("libcudart").
	Name string
	// Anchor is the symbol that makes a file a target: a mapped file that
	// defines it is probed for every Probe symbol it defines.
	Anchor string
	// Names are the prefixes of the base names of files that should be
	// targets (at most 24 bytes each): one that lacks the Anchor is
	// reported as rejected (stripped, say), and a process that maps a new
	// file so named is held until it is probed (Config.Hold).
	Names []string
	// InPrograms says the target's code may be linked into any program,
	// whatever its name (a Go program's crypto/tls, a statically linked
	// runtime): with Config.Hold, a process that runs a program no Tracer
	// has classified yet is held until the program is classified and
	// probed, as one that maps a new file named like a target, so that
	// its first calls are seen too.
	InPrograms bool
	// Probes are attached to every target file, but where FromExec
	// replaces them.
	Probes []Probe
	// FromExec, when set, are attached instead of Probes to a file first
	// classified in a process held at its exec (every process of the file
	// is then seen from its start; Config.Hold), where the file defines
	// every symbol of FromExecNeeds: probes that take once, at its start,
	// what the Source would otherwise take at every call (a TLS
	// connection's keys at its handshake). A file found in a process that
	// ran before the Tracer, or late, gets Probes: its state from before
	// is not in what FromExec would see.
	FromExec      []Probe
	FromExecNeeds []string
	// Multi says the programs were loaded for uprobe_multi links
	// (ebpf.AttachTraceUprobeMulti): one link per program and file.
	Multi bool
}

// Config configures a Tracer.
type Config struct {
	// Procfs is the host's procfs (procfs.DefaultRoot when zero).
	Procfs  procfs.FS
	Targets []Target
	// Rescan is the period of the fallback sweep of every process; 0
	// means 30s.
	Rescan time.Duration
	// Capture captures the executable mappings of the processes that map
	// a file the Tracer probes, as they map them (Mappings, OpenMapped,
	// Executable): their code can be named after they exit.
	Capture bool
	// Hold stops a process that maps a new file named like a target,
	// or runs a new program where a target is InPrograms (and, with
	// Capture, a process that maps a new file while it maps a file the
	// Tracer probes) until the files are classified and probed,
	// 500 ms at most: its first calls into them are seen, and, with
	// Capture, its mappings captured before it can exit. Without it such
	// a process runs on, and what is attached for it counts as late
	// (Late). A process under ptrace, one with a controlling terminal, one
	// stopped already, and any on a procfs root without a self link (a
	// fixture tree) are never held.
	Hold bool
	// Skip is a process whose mappings the Tracer leaves alone (a
	// capturing process, whose own calls are not wanted): a file that
	// only it maps is never probed, and its calls there cost it nothing.
	// A file another process maps too is probed for that one, and then
	// traps in this one as well: a probe is the file's. 0: none.
	Skip int

	// noWalks has a hub this Tracer starts read the processes' maps at
	// exec and load instead of walking them in the kernel, as on kernels
	// without the VMA iterator (tests).
	noWalks bool
	// holdsDir is the BPF file system a hub this Tracer starts pins the
	// hold map in (defaultHoldsDir when empty; tests mount their own).
	holdsDir string
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
	// scan (which can take a while on a busy host).
	statusMu    sync.Mutex
	attachments []Attachment
	rejections  []Rejection
	late        map[lateKey]int64
	lateAttrs   map[lateKey]metric.MeasurementOption // built once each
}

// lateKey is a count of Late.
type lateKey struct{ target, reason string }

// Late is a count of files of a target attached to after a process had
// mapped them and run on, by why (a semconv.LateReason* value): the calls
// the process made into them before were not seen.
type Late struct {
	Target, Reason string
	Files          int64
}

// notice says how a file came to be classified: late is "" when its
// process was held until it was (or it was found at start), else the
// semconv.LateReason* of why not; running, that it was found at start,
// in a process that had run before the Tracer.
type notice struct {
	late    string
	running bool
}

// atExec says the file's process was held at its exec until the file
// was probed: nothing ran in it unprobed.
func (n notice) atExec() bool { return n.late == "" && !n.running }

// Late kinds, as semconv names them.
const (
	lateNotHeld   = semconv.LateReasonNotHeld
	lateUnmatched = semconv.LateReasonUnmatched
	lateTraced    = semconv.LateReasonTraced
	lateTerminal  = semconv.LateReasonTerminal
	lateStopped   = semconv.LateReasonStopped
	lateAgent     = semconv.LateReasonAgent
	lateFull      = semconv.LateReasonFull
	lateTimeout   = semconv.LateReasonTimeout
	lateSweep     = semconv.LateReasonSweep
	lateRescan    = semconv.LateReasonRescan
)

// verdict is what a file is to a Tracer: not known yet (its process went
// before it could be opened), nothing to it, or probed.
type verdict int

const (
	verdictUnknown verdict = iota
	verdictPlain
	verdictProbed
)

// Executable returns the base name of pid's executable as captured while
// it ran (Config.Capture): this knows processes that map a probed file
// and exited before their events were handled.
func (t *Tracer) Executable(pid int) (string, bool) { return t.hub.procs.executable(pid) }

// Mappings returns the executable mappings of pid as captured while it
// ran (sorted by Start), for a process that maps a file a Tracer with
// Capture probes: they place its code after it exited.
func (t *Tracer) Mappings(pid int) (procfs.Maps, bool) { return t.hub.procs.mappings(pid) }

// OpenMapped opens the file m, a mapping Mappings returned, maps, from the
// descriptor held since it was captured: it works after every process
// that mapped the file exited.
func (t *Tracer) OpenMapped(m procfs.Mapping) (*os.File, error) { return t.hub.procs.open(m) }

// Sync returns once every watcher record made before it was handled (a
// second at most): what Mappings knows of a process is then all the
// watcher told as it mapped its files.
func (t *Tracer) Sync() { t.hub.Sync() }

// ObserveLate reports Late on inst, an instrument of
// semconv.XpuscopeUprobeAttachedLate, from a Source's metric callback; a
// nil Tracer (a Source that did not start one) reports nothing.
func (t *Tracer) ObserveLate(o metric.Observer, inst metric.Int64Observable) {
	if t == nil {
		return
	}
	t.statusMu.Lock()
	defer t.statusMu.Unlock()
	for k, n := range t.late {
		a, ok := t.lateAttrs[k]
		if !ok {
			a = metric.WithAttributeSet(attribute.NewSet(semconv.XpuscopeTarget.String(k.target), semconv.XpuscopeUprobeLateReason.String(k.reason)))
			t.lateAttrs[k] = a
		}
		o.ObserveInt64(inst, n, a)
	}
}

// Late returns the counts of files attached to late, by target and why.
func (t *Tracer) Late() []Late {
	t.statusMu.Lock()
	defer t.statusMu.Unlock()
	out := make([]Late, 0, len(t.late))
	for k, n := range t.late {
		out = append(out, Late{Target: k.target, Reason: k.reason, Files: n})
	}
	slices.SortFunc(out, func(a, b Late) int {
		return cmp.Or(strings.Compare(a.Target, b.Target), strings.Compare(a.Reason, b.Reason))
	})
	return out
}

const (
	defaultRescan = 30 * time.Second
	// maxSeen bounds the classified-file cache; past it the files not
	// attached to are forgotten and classified again when seen.
	maxSeen = 1 << 16
	// maxRejections bounds the rejection report.
	maxRejections = 64
)

// loaderTarget is the pseudo-target for the dynamic loader's
// _dl_debug_state; loaderName the prefix of the loaders' base names
// (ld-linux-x86-64.so.2, ld-musl-x86_64.so.1, ld-2.31.so).
const (
	loaderTarget = "loader"
	loaderName   = "ld-"
)

// named says whether base starts with one of names.
func named(base string, names []string) bool {
	return slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(base, n) })
}

// newTracer is a Tracer of cfg, with its maps, not yet joined to a hub.
func newTracer(cfg Config) *Tracer {
	return &Tracer{cfg: cfg, seen: map[fileID]seenFile{}, late: map[lateKey]int64{}, lateAttrs: map[lateKey]metric.MeasurementOption{}}
}

// New sweeps every process once and attaches to every target file found,
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
	t := newTracer(cfg)
	h, err := join(t)
	if err != nil {
		return nil, err
	}
	t.hub = h
	return t, nil
}

// Rescan sweeps every process now, as if no file were known yet, and
// returns when done. It is for tests and for callers that know something
// changed; what it attaches to counts as late (semconv.LateReasonSweep).
func (t *Tracer) Rescan() error { return t.hub.sweep(true, notice{late: lateSweep}) }

// consider classifies the file m maps in process pid, read through file,
// if t has not before, and attaches to it if it is a target. isExe says
// m maps the process's executable; how, how the file was noticed.
func (t *Tracer) consider(pid int, m procfs.Mapping, isExe bool, file string, how notice) verdict {
	t.scanMu.Lock()
	defer t.scanMu.Unlock()
	if t.closed {
		return verdictPlain
	}
	if pid == t.cfg.Skip && pid != 0 {
		return verdictUnknown // not plain: another process may map it
	}
	id := fileID{m.Dev, m.Inode}
	if s, done := t.seen[id]; done && (s.attached || s.path == m.Path) {
		if s.attached {
			return verdictProbed
		}
		return verdictPlain
	}
	if len(t.seen) >= maxSeen {
		// Forget the files not attached to; the attached ones must
		// stay known, or they would be probed twice.
		gomaps.DeleteFunc(t.seen, func(_ fileID, s seenFile) bool { return !s.attached })
	}
	attached := t.classify(pid, m, isExe, file, how)
	t.seen[id] = seenFile{attached: attached, path: m.Path}
	if attached {
		return verdictProbed
	}
	return verdictPlain
}

// classify decides whether the file m maps, read through path, is a
// target, and attaches to it if so. It reports whether it attached.
func (t *Tracer) classify(pid int, m procfs.Mapping, isExe bool, path string, how notice) (attached bool) {
	wanted := map[string]bool{}
	for _, tg := range t.cfg.Targets {
		wanted[tg.Anchor] = true
	}
	offsets, err := resolve(path, wanted, isExe)
	if err != nil {
		return false
	}
	base := filepath.Base(m.Path)
	for _, tg := range t.cfg.Targets {
		if _, ok := offsets[tg.Anchor]; !ok {
			if named(base, tg.Names) {
				t.reject(Rejection{Target: tg.Name, Path: m.Path, PID: pid,
					Reason: fmt.Sprintf("defines no %s in its symbol tables (stripped, or not the library it is named after)", tg.Anchor)})
			}
			continue
		}
		if t.attach(tg, pid, m, path, isExe, how) {
			attached = true
		}
	}
	return attached
}

func (t *Tracer) reject(r Rejection) {
	t.statusMu.Lock()
	defer t.statusMu.Unlock()
	if len(t.rejections) < maxRejections {
		t.rejections = append(t.rejections, r)
	}
}

func (t *Tracer) attach(tg Target, pid int, m procfs.Mapping, path string, isExe bool, how notice) bool {
	var placed placement
	if how.atExec() && len(tg.FromExec) > 0 {
		if p, err := locate(path, tg.FromExec, isExe); err == nil && definesAll(p.offsets, tg.FromExecNeeds) {
			tg.Probes, placed = tg.FromExec, p
		}
	}
	if placed.offsets == nil {
		var err error
		if placed, err = locate(path, tg.Probes, isExe); err != nil {
			t.reject(Rejection{Target: tg.Name, Path: m.Path, PID: pid, Reason: err.Error()})
			return false
		}
	}
	offsets := placed.offsets
	cookies, err := cookiesOf(path, tg.Probes, offsets)
	if err != nil {
		t.reject(Rejection{Target: tg.Name, Path: m.Path, PID: pid, Reason: err.Error()})
		return false
	}
	for name := range placed.stackChecks {
		cookies[name] |= GoStackCheck
	}
	ex, err := link.OpenExecutable(path)
	if err != nil {
		t.reject(Rejection{Target: tg.Name, Path: m.Path, PID: pid, Reason: err.Error()})
		return false
	}
	a := Attachment{Target: tg.Name, Path: m.Path, PID: pid, Dev: m.Dev, Inode: m.Inode, AttachedAt: time.Now(), Late: how.late}
	returns := goReturns(tg, path, &a)
	for _, p := range tg.Probes {
		if entryLeftOff(tg, returns, p) {
			delete(offsets, p.Symbol)
		}
	}
	if tg.Multi {
		t.attachMulti(ex, tg, offsets, cookies, returns, &a)
	} else {
		t.attachEach(ex, tg, offsets, cookies, &a)
		t.attachReturns(ex, tg, returns, &a)
	}
	if len(a.Symbols) == 0 {
		t.reject(Rejection{Target: tg.Name, Path: m.Path, PID: pid, Reason: "no probe attached: " + strings.Join(a.AttachErrors, "; ")})
		return false
	}
	t.statusMu.Lock()
	t.attachments = append(t.attachments, a)
	if how.late != "" {
		t.late[lateKey{tg.Name, how.late}]++
	}
	t.statusMu.Unlock()
	return true
}

// definesAll says every name has an offset.
func definesAll(offsets map[string]uint64, names []string) bool {
	for _, n := range names {
		if _, ok := offsets[n]; !ok {
			return false
		}
	}
	return true
}

// attachReturns attaches the probes on Go functions' returns (their RET
// instructions or their one copy-out call, goSitesOf), as perf-event
// uprobes, one each (attachMulti adds them to its links). A function
// whose RETs are not all probed has none probed (a return missed would
// leave its entry's state behind).
func (t *Tracer) attachReturns(ex *link.Executable, tg Target, returns map[int]goSite, a *Attachment) {
	for i, p := range tg.Probes {
		site, ok := returns[i]
		if !ok {
			continue
		}
		links := make([]link.Link, 0, len(site.offsets))
		for _, off := range site.offsets {
			l, err := ex.Uprobe(p.Symbol, p.Entry, &link.UprobeOptions{Address: off, Cookie: site.cookie})
			if err != nil {
				a.AttachErrors = append(a.AttachErrors, fmt.Sprintf("uprobe %s at %#x: %v", p.Symbol, off, err))
				break
			}
			links = append(links, l)
		}
		if len(links) < len(site.offsets) {
			for _, l := range links {
				_ = l.Close()
			}
			continue
		}
		t.links = append(t.links, links...)
		a.Symbols = append(a.Symbols, site.name)
	}
}

// goReturns places the probes of tg on Go functions' returns in the file
// at path, by their index in tg.Probes; one it cannot place is an attach
// error of a.
func goReturns(tg Target, path string, a *Attachment) map[int]goSite {
	sites := map[int]goSite{}
	for i, p := range tg.Probes {
		if !p.AtReturns {
			continue
		}
		site, err := goSitesOf(path, p)
		if err != nil {
			a.AttachErrors = append(a.AttachErrors, fmt.Sprintf("returns of %s: %v", p.Symbol, err))
			continue
		}
		sites[i] = site
	}
	return sites
}

// entryLeftOff says whether p is an entry probe left off: one only for
// the probe on its function's returns, which, placed at the call, reads
// the receiver there.
func entryLeftOff(tg Target, returns map[int]goSite, p Probe) bool {
	if !p.OnlyForReturns || p.AtReturns {
		return false
	}
	for i, site := range returns {
		if site.receiver && tg.Probes[i].Symbol == p.Symbol {
			return true
		}
	}
	return false
}

// attachEach attaches one perf-event uprobe per symbol and program.
func (t *Tracer) attachEach(ex *link.Executable, tg Target, offsets, cookies map[string]uint64, a *Attachment) {
	for _, p := range tg.Probes {
		off, ok := offsets[p.Symbol]
		if !ok || p.AtReturns {
			continue
		}
		opts := &link.UprobeOptions{Address: off, Cookie: cookies[p.Symbol]}
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
func (t *Tracer) attachMulti(ex *link.Executable, tg Target, offsets, cookies map[string]uint64, returns map[int]goSite, a *Attachment) {
	entry, ret := map[*ebpf.Program]*multiGroup{}, map[*ebpf.Program]*multiGroup{}
	add := func(m map[*ebpf.Program]*multiGroup, prog *ebpf.Program, symbol string, off, cookie uint64) {
		g := m[prog]
		if g == nil {
			g = &multiGroup{}
			m[prog] = g
		}
		g.symbols, g.addrs, g.cookies = append(g.symbols, symbol), append(g.addrs, off), append(g.cookies, cookie)
	}
	var placed []string // the probes' names, as Attachment.Symbols lists them
	for i, p := range tg.Probes {
		if p.AtReturns {
			site, ok := returns[i]
			if !ok {
				continue
			}
			for _, off := range site.offsets {
				add(entry, p.Entry, site.name, off, site.cookie)
			}
			placed = append(placed, site.name)
			continue
		}
		off, ok := offsets[p.Symbol]
		if !ok {
			continue
		}
		add(entry, p.Entry, p.Symbol, off, cookies[p.Symbol])
		if p.Return != nil {
			add(ret, p.Return, p.Symbol, off, cookies[p.Symbol])
		}
		placed = append(placed, p.Symbol)
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
	for _, s := range placed {
		if !failed[s] {
			a.Symbols = append(a.Symbols, s)
		}
	}
}

// returnsSuffix names the probes on a function's RET instructions in
// Attachment.Symbols.
const returnsSuffix = " (returns)"

// callSuffix names a probe on a function's one call of callee in
// Attachment.Symbols (Probe.AtCallOf).
func callSuffix(callee string) string { return " (call of " + callee + ")" }

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
