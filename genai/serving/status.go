package serving

import (
	"slices"
	"time"
)

// Status is what the Source found and read, as of its last interval.
type Status struct {
	// Servers are the model servers found, in the order of their root
	// processes' pids.
	Servers []Server
	// Histograms says whether the servers' histograms are reported: only
	// a Producer can (WithProducer).
	Histograms bool
	// ListError is why the processes could not be listed at the last
	// interval ("" when they were).
	ListError string
}

// Server is a model server found.
type Server struct {
	Kind Kind
	// PID is the process the server is known by: the first of its kind
	// among its processes' ancestors (vLLM's API server, TGI's launcher).
	PID int
	// Processes are the server's processes (at most 64).
	Processes []Process
	// Endpoint is the URL of the metrics it is read at, as seen in its
	// own network namespace ("http://127.0.0.1:8000/metrics"); "" while
	// none is known.
	Endpoint string
	// NetNS is the network namespace the endpoint is reached in, when it
	// is not the Source's own ("net:[4026532301]").
	NetNS string
	// Models are the models its last scrape named.
	Models []string
	// Read says whether its last scrape was read.
	Read bool
	// LastRead is when it was last read; zero if never.
	LastRead time.Time
	// Problems say what could not be read, and why: that it has no
	// endpoint to look for (TF Serving without monitoring, ONNX Runtime),
	// the endpoints tried and how each failed, sockets that could not be
	// read.
	Problems []string
}

// Process is a process of a model server.
type Process struct {
	PID        int
	Role       string // a semconv.ServerRole* value
	Executable string
}

// status is the server's Status entry.
func (srv *server) status(state string) Server {
	st := Server{
		Kind:     srv.spec.kind,
		PID:      srv.key.PID,
		Endpoint: srv.endpoint,
		Read:     srv.read,
		LastRead: srv.lastScrape,
	}
	if srv.endpoint != "" && srv.netns != "" && srv.netns != srv.selfNS {
		st.NetNS = srv.netns
	}
	for _, m := range srv.members {
		st.Processes = append(st.Processes, Process{PID: m.pid, Role: m.role, Executable: m.exe})
	}
	if srv.read {
		for i := range srv.m.points {
			if mdl := srv.m.points[i].model; mdl != "" && !slices.Contains(st.Models, mdl) {
				st.Models = append(st.Models, mdl)
			}
		}
	}
	if srv.why != "" {
		st.Problems = append(st.Problems, srv.why)
	}
	st.Problems = append(st.Problems, srv.problems...)
	if srv.lastErr != nil && !slices.Contains(st.Problems, srv.lastErr.Error()) {
		st.Problems = append(st.Problems, srv.lastErr.Error())
	}
	return st
}

// Status returns what the Source found and read as of its last interval:
// a copy the caller may keep.
func (s *Source) Status() Status {
	sn := s.snap.Load()
	if sn == nil {
		return Status{}
	}
	st := sn.status
	st.Servers = slices.Clone(st.Servers)
	for i := range st.Servers {
		sv := &st.Servers[i]
		sv.Processes = slices.Clone(sv.Processes)
		sv.Models = slices.Clone(sv.Models)
		sv.Problems = slices.Clone(sv.Problems)
	}
	return st
}

// Serves reports whether process pid is one of a model server's, as of
// the Source's last interval: package genai/node's WithModelServers takes
// it, to count the server's connections by its address and port. It only
// reads the last snapshot.
func (s *Source) Serves(pid int) bool {
	sn := s.snap.Load()
	if sn == nil {
		return false
	}
	for _, srv := range sn.status.Servers {
		for _, p := range srv.Processes {
			if p.PID == pid {
				return true
			}
		}
	}
	return false
}

// Reports reports whether the Source reports gen_ai.server.* metric
// name for the server process pid belongs to, from the server's own
// endpoint (its last scrape had it, and a Producer reports it): the
// genai capture, given this through genai.WithServedElsewhere, then
// leaves that metric of the process's requests to the Source, so that
// no request is counted twice. It only reads the last snapshot.
func (s *Source) Reports(pid int, name string) bool {
	sn := s.snap.Load()
	return sn != nil && slices.Contains(sn.served[pid], name)
}
