package node

import (
	"net/netip"
	"slices"
	"strconv"
	"syscall"

	"go.opentelemetry.io/otel/attribute"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/nodebpf"
	"github.com/xpuscope/xpuscope/semconv"
)

// maxSockets bounds what is kept by socket: the server end of the sockets
// that had events, and the names the genai capture gave.
const maxSockets = 4096

// tcpState is what the TCP events were counted into.
type tcpState struct {
	ports []uint16
	max   int // endpoints with series of their own
	// names are the server names of endpoints, learned from the calls on
	// their connections; labeled the endpoints with series of their own,
	// past which they are counted under _OTHER.
	names   map[netip.AddrPort]string
	labeled map[netip.AddrPort]bool
	over    map[netip.AddrPort]bool
	// sockServer is the server end of each socket that had an event;
	// sockName the name a call gave a socket before any event of it.
	sockServer map[uint64]netip.AddrPort
	sockName   map[uint64]string
	series     map[attribute.Distinct]*tcpSeries
	// servers says whether a process is a model server's
	// (WithModelServers); serverEnds the endpoints such a process's
	// listeners accepted connections on.
	servers    func(pid int) bool
	serverEnds map[netip.AddrPort]bool
}

// tcpSeries is one series of the TCP metrics.
type tcpSeries struct {
	attrs         []attribute.KeyValue
	retransmits   int64
	resets        [2]int64 // sent, received
	failures      map[string]int64
	failureAttrs  map[string]attribute.Set
	sent, receive attribute.Set
	base          attribute.Set
}

func (t *tcpState) init(c config) {
	t.ports, t.max = c.serverPorts, c.maxEndpoints
	t.names, t.labeled, t.over = map[netip.AddrPort]string{}, map[netip.AddrPort]bool{}, map[netip.AddrPort]bool{}
	t.sockServer, t.sockName = map[uint64]netip.AddrPort{}, map[uint64]string{}
	t.series = map[attribute.Distinct]*tcpSeries{}
	t.servers, t.serverEnds = c.modelServers, map[netip.AddrPort]bool{}
}

func (t *tcpState) watchedPort(p uint16) bool { return slices.Contains(t.ports, p) }

// serverEnd is the server end of r's connection: the remote end of a
// socket that connected, the local end of one a listener accepted; of a
// socket older than the Source, the end at a server port, else the end
// with the lower port (an ephemeral port is high).
func (t *tcpState) serverEnd(r *nodebpf.TCPRecord) netip.AddrPort {
	switch r.Role {
	case nodebpf.RoleClient:
		return r.Remote
	case nodebpf.RoleServer:
		return r.Local
	}
	switch lp, rp := t.watchedPort(r.Local.Port()), t.watchedPort(r.Remote.Port()); {
	case rp:
		return r.Remote
	case lp:
		return r.Local
	case r.Local.Port() < r.Remote.Port():
		return r.Local
	}
	return r.Remote
}

// bound drops an arbitrary entry of m when it has max.
func bound[K comparable, V any](m map[K]V, max int) {
	if len(m) < max {
		return
	}
	for k := range m {
		delete(m, k)
		return
	}
}

// learn names the server of socket ino, from a call on it.
func (t *tcpState) learn(ino uint64, name string) {
	if ep, ok := t.sockServer[ino]; ok {
		t.name(ep, name)
		return
	}
	bound(t.sockName, maxSockets)
	t.sockName[ino] = name
}

// name names endpoint ep, within the cap of endpoints.
func (t *tcpState) name(ep netip.AddrPort, name string) {
	if t.names[ep] == name {
		return
	}
	if _, ok := t.names[ep]; !ok && len(t.names) >= t.max {
		return
	}
	t.names[ep] = name
}

// endpoint returns the server attributes of ep: its name where a call
// gave it, its address where its port is a server port, none otherwise;
// _OTHER past the cap of endpoints (the new one counted once).
func (s *Source) endpoint(ep netip.AddrPort) []attribute.KeyValue {
	t := &s.tcp
	name, named := t.names[ep]
	if !named && !t.watchedPort(ep.Port()) && !t.serverEnds[ep] {
		return nil
	}
	if !t.labeled[ep] {
		if len(t.labeled) >= t.max {
			if !t.over[ep] && len(t.over) < maxSockets {
				t.over[ep] = true
				s.over[reasonEndpoints]++
			}
			return []attribute.KeyValue{semconv.ServerAddress.String(semconv.Other)}
		}
		t.labeled[ep] = true
	}
	if !named {
		name = ep.Addr().String()
	}
	return []attribute.KeyValue{semconv.ServerAddress.String(name), semconv.ServerPort.Int(int(ep.Port()))}
}

func roleName(r nodebpf.Role) string {
	switch r {
	case nodebpf.RoleClient:
		return semconv.TCPRoleClient
	case nodebpf.RoleServer:
		return semconv.TCPRoleServer
	}
	return semconv.TCPRoleUnknown
}

// tcpEvent counts r into its series.
func (s *Source) tcpEvent(r *nodebpf.TCPRecord) {
	t := &s.tcp
	var kvs []attribute.KeyValue
	if r.Local.IsValid() {
		ep := t.serverEnd(r)
		if r.Role == nodebpf.RoleServer && r.PID != 0 && t.servers != nil && !t.serverEnds[ep] && t.servers(int(r.PID)) {
			bound(t.serverEnds, maxSockets)
			t.serverEnds[ep] = true
		}
		if r.Ino != 0 {
			if name, ok := t.sockName[r.Ino]; ok {
				delete(t.sockName, r.Ino)
				t.name(ep, name)
			}
			bound(t.sockServer, maxSockets)
			t.sockServer[r.Ino] = ep
		}
		kvs = append(kvs, s.endpoint(ep)...)
		kvs = append(kvs, semconv.XpuscopeTCPRole.String(roleName(r.Role)))
		// A socket older than the Source has no owner: its cgroup's
		// processes stand for it (a pod's are all of one pod).
		pid := r.PID
		if pid == 0 && r.Cgroup != 0 && s.cfg.resolver != nil {
			pid = s.cgroupProcess(r.Cgroup)
		}
		if o := s.owner(pid); !o.over {
			kvs = append(kvs, o.attrs...)
		}
	}
	set := attribute.NewSet(kvs...)
	ser := t.series[set.Equivalent()]
	if ser == nil {
		ser = &tcpSeries{attrs: kvs, base: set, failures: map[string]int64{}, failureAttrs: map[string]attribute.Set{},
			sent:    attribute.NewSet(append(slices.Clip(kvs), semconv.XpuscopeTCPResetDirection.String(semconv.ResetSent))...),
			receive: attribute.NewSet(append(slices.Clip(kvs), semconv.XpuscopeTCPResetDirection.String(semconv.ResetReceived))...)}
		t.series[set.Equivalent()] = ser
	}
	switch r.Event {
	case nodebpf.Retransmit:
		if r.Err == 0 {
			ser.retransmits++
			return
		}
		e := errName(r.Err)
		if _, ok := ser.failureAttrs[e]; !ok {
			ser.failureAttrs[e] = attribute.NewSet(append(slices.Clip(kvs), semconv.ErrorType.String(e))...)
		}
		ser.failures[e]++
	case nodebpf.ResetSent:
		ser.resets[0]++
	case nodebpf.ResetReceived:
		ser.resets[1]++
	}
}

// errName names a retransmit's error: an errno's name (the kernel's
// negative error), or the queueing discipline's verdict (NET_XMIT_*).
func errName(err int32) string {
	if err < 0 {
		if n := unix.ErrnoName(syscall.Errno(-err)); n != "" {
			return n
		}
		return "errno_" + strconv.Itoa(int(-err))
	}
	switch err {
	case 1:
		return "NET_XMIT_DROP"
	case 2:
		return "NET_XMIT_CN"
	}
	return "NET_XMIT_" + strconv.Itoa(int(err))
}
