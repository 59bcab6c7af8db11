package serving

import (
	"os"
	"slices"
	"time"

	"github.com/xpuscope/xpuscope/internal/procfs"
	"github.com/xpuscope/xpuscope/semconv"
)

// Discovery: each interval the Source lists the processes, reads the
// command line, comm, executable and parent of those it has not seen
// (pid and start time), recognises the model servers' processes, and
// joins each to its server: the nearest ancestor of the same kind, up to
// the one with none, which the server is known by (its root).

// The ages of a process, since the Source first saw it, at which it is
// read again while it is recognised as nothing: a process's command line
// reads empty until its exec is done, and vLLM's engine core sets its
// title after it starts. Its mapped files are read at the same ages, for
// ONNX Runtime, which a program loads when it starts, or soon after.
var recheckAges = []time.Duration{0, 2 * time.Second, 10 * time.Second, time.Minute, 5 * time.Minute}

// maxAncestors bounds the walk from a process to its server's root.
const maxAncestors = 32

// procEntry is what the Source knows of one process.
type procEntry struct {
	pid       int
	start     uint64 // clock ticks after boot: with pid, the process's identity
	firstSeen time.Time
	checks    int // reads of its identity done, of recheckAges
	ppid      int
	exe       string
	args      []string
	spec      *spec // nil: no model server's
	role      string
	seen      uint64 // the discovery that last saw it
}

// discover brings the processes and servers up to date, and reports
// whether the processes could be listed.
func (s *Source) discover(now time.Time) bool {
	pids, err := s.procs.PIDs()
	if err != nil {
		s.listErr = err.Error()
		return false
	}
	s.listErr = ""
	s.generation++
	for _, pid := range pids {
		if pid == s.self {
			continue
		}
		start, err := s.handle.StartTime(pid)
		if err != nil {
			continue // exited meanwhile
		}
		e := s.entries[pid]
		if e == nil || e.start != start {
			e = &procEntry{pid: pid, start: start, firstSeen: now}
			s.entries[pid] = e
		}
		e.seen = s.generation
		if e.spec == nil && e.checks < len(recheckAges) && now.Sub(e.firstSeen) >= recheckAges[e.checks] {
			for e.checks < len(recheckAges) && now.Sub(e.firstSeen) >= recheckAges[e.checks] {
				e.checks++
			}
			s.identify(e)
		}
	}
	for pid, e := range s.entries {
		if e.seen != s.generation {
			delete(s.entries, pid)
		}
	}
	s.group(now)
	return true
}

// identify reads a process's command line, comm, executable and parent,
// and recognises it; failing that, it looks for ONNX Runtime among its
// mapped files.
func (s *Source) identify(e *procEntry) {
	p := s.procs.Proc(e.pid)
	args, err := p.Cmdline()
	if err != nil || len(args) == 0 {
		return // a kernel thread, a zombie, or an exec not done: read again later
	}
	comm, _ := p.Comm()
	exe, _ := p.Exe()
	pr := proc{exe: procfs.ExeBase(exe), comm: comm, args: args}
	e.args, e.exe = args, pr.exe
	if e.exe == "" {
		e.exe = comm
	}
	if e.ppid == 0 {
		e.ppid, _ = p.PPID()
	}
	if sp, role, ok := recognise(&pr); ok {
		e.spec, e.role = sp, role
		return
	}
	if mapsONNXRuntime(p) {
		e.spec, e.role = &onnxSpec, semconv.ServerRoleProcess
	}
}

// mapsONNXRuntime reports whether the process maps ONNX Runtime.
func mapsONNXRuntime(p procfs.Proc) bool {
	ms, err := p.Maps()
	if err != nil {
		return false
	}
	for _, m := range ms.Files() {
		if isONNXRuntime(m.Path) {
			return true
		}
	}
	return false
}

// rootOf returns the entry of e's server: the farthest ancestor of e's
// kind reached through ancestors of its kind, or through others (a shell
// that started it) when they lead to one; e itself when none does.
func (s *Source) rootOf(e *procEntry) *procEntry {
	root := e
	cur := e
	for range maxAncestors {
		parent := s.entries[cur.ppid]
		if parent == nil || parent.pid == cur.pid {
			break
		}
		if parent.spec == e.spec {
			root = parent
		}
		cur = parent
	}
	return root
}

// serverKey identifies a server by its root process.
type serverKey struct {
	pid   int
	start uint64
}

// group joins the recognised processes to their servers: new servers
// are made (up to the cap), the members of each brought up to date, and
// the servers whose root is gone forgotten.
func (s *Source) group(now time.Time) {
	members := map[serverKey][]*procEntry{}
	for _, e := range s.entries {
		if e.spec == nil {
			continue
		}
		r := s.rootOf(e)
		k := serverKey{r.pid, r.start}
		members[k] = append(members[k], e)
	}
	for k, srv := range s.servers {
		if _, ok := members[k]; !ok {
			s.forget(srv)
			delete(s.servers, k)
		}
	}
	keys := make([]serverKey, 0, len(members))
	for k := range members {
		keys = append(keys, k)
	}
	// The oldest servers first: past the cap, the newest wait.
	slices.SortFunc(keys, func(a, b serverKey) int {
		switch {
		case a.start != b.start:
			if a.start < b.start {
				return -1
			}
			return 1
		case a.pid < b.pid:
			return -1
		case a.pid > b.pid:
			return 1
		}
		return 0
	})
	over := 0
	for _, k := range keys {
		ms := members[k]
		slices.SortFunc(ms, func(a, b *procEntry) int { return a.pid - b.pid })
		srv := s.servers[k]
		if srv == nil {
			if len(s.servers) >= s.cfg.maxServers {
				over++
				continue
			}
			root := s.entries[k.pid]
			srv = s.newServer(root, now)
			s.servers[k] = srv
		}
		srv.setMembers(ms, s.cfg.maxProcesses())
	}
	s.over.servers += over
}

// forget drops a server that is gone: its connections, its series, and
// its processes' pods.
func (s *Source) forget(srv *server) {
	srv.close()
	if r := s.cfg.resolver; r != nil {
		for _, pid := range srv.asked {
			r.Forget(pid)
		}
	}
}

// selfNetNS returns the network namespace of the Source's own process,
// to tell a server in another from one in its own.
func selfNetNS() string {
	ns, _ := os.Readlink("/proc/self/ns/net")
	return ns
}
