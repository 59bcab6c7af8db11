package serving

import (
	"os"
	"time"

	"github.com/xpuscope/xpuscope/internal/procfs"
	"github.com/xpuscope/xpuscope/internal/proctable"
	"github.com/xpuscope/xpuscope/semconv"
)

// Discovery: each interval the Source lists the processes, reads the
// command line, comm, executable and parent of those it has not seen
// (pid and start time), recognises the model servers' processes, and
// joins each to its server: the farthest ancestor of the same kind, which
// the server is known by (its root).

// discover brings the processes and servers up to date, and reports
// whether the processes could be listed: the process table
// (internal/proctable) reads each process it has not seen (pid and start
// time), and again at 2 s, 10 s, 1 min and 5 min of age while it is
// recognised as nothing (a process's command line reads empty until its
// exec is done, vLLM's engine core sets its title after it starts, and
// ONNX Runtime is loaded when a program starts or soon after).
func (s *Source) discover(now time.Time) bool {
	if err := s.table.Scan(now); err != nil {
		s.listErr = err.Error()
		return false
	}
	s.listErr = ""
	s.group(now)
	return true
}

// identify recognises a process from its executable, comm and command
// line; failing that, it looks for ONNX Runtime among its mapped files.
func (s *Source) identify(p procfs.Proc, e *proctable.Process) (any, string) {
	pr := proc{exe: e.Exe, comm: e.Comm, args: e.Args}
	if sp, role, ok := recognise(&pr); ok {
		return sp, role
	}
	if mapsONNXRuntime(p) {
		return &onnxSpec, semconv.ServerRoleProcess
	}
	return nil, ""
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

// group joins the recognised processes to their servers (each to the
// farthest ancestor of its kind: internal/proctable's Groups): new
// servers are made (up to the cap, the oldest first), the members of each
// brought up to date, and the servers whose root is gone forgotten.
func (s *Source) group(now time.Time) {
	groups := s.table.Groups()
	live := make(map[serverKey]bool, len(groups))
	for _, g := range groups {
		live[serverKey(g.Key)] = true
	}
	for k, srv := range s.servers {
		if !live[k] {
			s.forget(srv)
			delete(s.servers, k)
		}
	}
	over := 0
	for _, g := range groups {
		k := serverKey(g.Key)
		srv := s.servers[k]
		if srv == nil {
			if len(s.servers) >= s.cfg.maxServers {
				over++
				continue
			}
			srv = s.newServer(g.Root, now)
			s.servers[k] = srv
		}
		srv.setMembers(g.Members, s.cfg.maxProcesses())
	}
	s.over.servers += over
}

// serverKey identifies a server by its root process.
type serverKey proctable.Key

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

// selfNetNS returns the network namespace the Source's dials are made
// in, to tell a server in another from one in its own: the calling
// thread's, not the process's (/proc/self is the thread-group leader's,
// and a goroutine that entered a server's namespace locked to the
// leader, which Go cannot end, leaves it there for good).
func selfNetNS() string {
	ns, _ := os.Readlink("/proc/thread-self/ns/net")
	return ns
}
