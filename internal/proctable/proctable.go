// Package proctable keeps the table of the host's processes that a Source
// recognising workloads from /proc works from (genai/serving's model
// servers, genai/training's jobs), in every pid and mount namespace the
// procfs shows.
//
// Each Scan lists the processes; a process is known by its pid and start
// time (a pid the kernel reuses comes with another start time), so a
// steady host costs one read of each process's start time (procfs's
// Handle.StartTime, which allocates nothing). A process not seen before
// has its command line, comm, executable and parent read, and is handed
// to the caller's Identify, which says what kind of process it is, if
// any; a process recognised as nothing is read and asked again at the
// ages Ages gives (a command line reads empty until its exec is done; a
// process sets its title, or loads a library, after it starts). Groups
// then joins each recognised process to the farthest ancestor of its
// kind, through ancestors of other kinds (a shell, a launcher's wrapper):
// the processes of one server, or one job, known by that root.
package proctable

import (
	"slices"
	"time"

	"github.com/xpuscope/xpuscope/internal/procfs"
)

// DefaultAges are the ages of a process, since it was first seen, at
// which it is read and asked again while it is recognised as nothing.
var DefaultAges = []time.Duration{0, 2 * time.Second, 10 * time.Second, time.Minute, 5 * time.Minute}

// maxAncestors bounds the walk from a process to its group's root.
const maxAncestors = 32

// Process is what the table knows of one process.
type Process struct {
	PID   int
	Start uint64 // clock ticks after boot: with PID, the process's identity
	PPID  int
	// Exe is the base name of its executable, else its comm.
	Exe  string
	Comm string
	Args []string
	// Kind is what Identify recognised it as; nil for nothing (yet).
	Kind any
	// Role is what Identify said it does in its kind.
	Role string

	firstSeen time.Time
	checks    int    // reads of its identity done, of the ages
	seen      uint64 // the scan that last saw it
}

// Identify says what kind of process p is (nil for none of the caller's
// kinds) and its role, from what the table read of it (its Exe, Comm and
// Args) and what more it reads of proc (its mapped files).
type Identify func(proc procfs.Proc, p *Process) (kind any, role string)

// Table is the host's processes as of the last Scan. It is not safe for
// use by several goroutines.
type Table struct {
	FS     procfs.FS
	Handle *procfs.Handle
	// Self is a pid left out: the caller's own process.
	Self     int
	Identify Identify
	// Ages are the ages at which a process recognised as nothing is asked
	// again; nil for DefaultAges.
	Ages []time.Duration

	procs map[int]*Process
	gen   uint64
}

// Scan lists the processes, forgets those gone, and reads and asks about
// those not seen before, and those of nothing whose age calls for it. An
// error is a listing that failed; the table is then left as it was.
func (t *Table) Scan(now time.Time) error {
	pids, err := t.FS.PIDs()
	if err != nil {
		return err
	}
	if t.procs == nil {
		t.procs = map[int]*Process{}
	}
	ages := t.Ages
	if ages == nil {
		ages = DefaultAges
	}
	t.gen++
	for _, pid := range pids {
		if pid == t.Self {
			continue
		}
		start, err := t.Handle.StartTime(pid)
		if err != nil {
			continue // exited meanwhile
		}
		p := t.procs[pid]
		if p == nil || p.Start != start {
			p = &Process{PID: pid, Start: start, firstSeen: now}
			t.procs[pid] = p
		}
		p.seen = t.gen
		if p.Kind == nil && p.checks < len(ages) && now.Sub(p.firstSeen) >= ages[p.checks] {
			for p.checks < len(ages) && now.Sub(p.firstSeen) >= ages[p.checks] {
				p.checks++
			}
			t.identify(p)
		}
	}
	for pid, p := range t.procs {
		if p.seen != t.gen {
			delete(t.procs, pid)
		}
	}
	return nil
}

// identify reads a process's command line, comm, executable and parent,
// and asks Identify about it.
func (t *Table) identify(p *Process) {
	proc := t.FS.Proc(p.PID)
	args, err := proc.Cmdline()
	if err != nil || len(args) == 0 {
		return // a kernel thread, a zombie, or an exec not done: read again later
	}
	comm, _ := proc.Comm()
	exe, _ := proc.Exe()
	p.Args, p.Comm, p.Exe = args, comm, procfs.ExeBase(exe)
	if p.Exe == "" {
		p.Exe = comm
	}
	if p.PPID == 0 {
		p.PPID, _ = proc.PPID()
	}
	p.Kind, p.Role = t.Identify(proc, p)
}

// Get returns the process of pid, or nil.
func (t *Table) Get(pid int) *Process { return t.procs[pid] }

// Put adds a process to the table as if a Scan had read it: for tests
// of what is built on a table.
func (t *Table) Put(p *Process) {
	if t.procs == nil {
		t.procs = map[int]*Process{}
	}
	p.seen = t.gen
	t.procs[p.PID] = p
}

// Key identifies a group by its root process.
type Key struct {
	PID   int
	Start uint64
}

// Group is a root process and the processes joined to it (itself among
// them), in the order of their pids.
type Group struct {
	Key     Key
	Root    *Process
	Members []*Process
}

// RootOf returns the root of p's group: the farthest ancestor of p's
// kind reached through ancestors of its kind, or through others (a shell
// that started it) when they lead to one; p itself when none does.
func (t *Table) RootOf(p *Process) *Process {
	root, cur := p, p
	for range maxAncestors {
		parent := t.procs[cur.PPID]
		if parent == nil || parent.PID == cur.PID {
			break
		}
		if parent.Kind == p.Kind {
			root = parent
		}
		cur = parent
	}
	return root
}

// Groups joins the recognised processes to their roots, the oldest root
// first (so that, past a cap, the newest wait).
func (t *Table) Groups() []Group {
	byKey := map[Key]*Group{}
	for _, p := range t.procs {
		if p.Kind == nil {
			continue
		}
		r := t.RootOf(p)
		k := Key{r.PID, r.Start}
		g := byKey[k]
		if g == nil {
			g = &Group{Key: k, Root: r}
			byKey[k] = g
		}
		g.Members = append(g.Members, p)
	}
	out := make([]Group, 0, len(byKey))
	for _, g := range byKey {
		slices.SortFunc(g.Members, func(a, b *Process) int { return a.PID - b.PID })
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b Group) int {
		switch {
		case a.Key.Start != b.Key.Start:
			if a.Key.Start < b.Key.Start {
				return -1
			}
			return 1
		}
		return a.Key.PID - b.Key.PID
	})
	return out
}
