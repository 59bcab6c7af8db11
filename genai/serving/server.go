package serving

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/xpuscope/xpuscope/internal/procfs"
	"github.com/xpuscope/xpuscope/internal/proctable"
	"github.com/xpuscope/xpuscope/semconv"
)

// Scraping: each server is scraped by a goroutine of its own each
// interval, side by side with the others, within the timeout. A server
// with no endpoint yet is looked at first: the listening sockets of its
// processes (their socket inodes matched to the TCP sockets of their
// network namespace), in the order its flags and defaults make likely,
// each tried until one serves metrics of the server's kind.

// maxProcesses caps the processes of one server listed.
const maxProcesses = 64

func (c config) maxProcesses() int { return maxProcesses }

// maxCandidates bounds the endpoints tried for one server in one
// interval: each may take the timeout.
const maxCandidates = 4

// failuresToForget is how many failed scrapes in a row make the Source
// look for a server's endpoint again.
const failuresToForget = 3

// maxBackoff bounds the backoff of a failing server, in intervals.
const maxBackoff = 16

// keptBuffer is the largest answer buffer a server keeps between
// scrapes: a vLLM server's answer is ~60 KB, and the buffers of servers
// that answered near the body cap are let go.
const keptBuffer = 1 << 20

// maxInfo caps the body of TGI's /info.
const maxInfo = 64 << 10

// member is a process of a server.
type member struct {
	pid  int
	role string
	exe  string
	args []string
}

// seriesState is what is kept of a server's series between scrapes: its
// attributes, and for a histogram its start (reset when its count goes
// down: the server restarted it).
type seriesState struct {
	attrs     attribute.Set
	start     time.Time
	lastCount uint64
	seen      bool
}

// server is one model server found.
type server struct {
	spec     *spec
	key      serverKey
	proc     procfs.Proc // the root
	procs    procfs.FS
	found    time.Time
	members  []member
	overProc int

	// The endpoint, once confirmed.
	endpoint string
	port     uint16
	holder   int // the process holding it
	netns    string
	selfNS   string // the Source's namespace
	client   *http.Client
	why      string   // why there is no endpoint to look for ("" when there may be one)
	problems []string // what the last look or scrape could not read, and why

	model string // where the metrics name none (TGI's /info)

	failures   int
	next       time.Time
	lastScrape time.Time
	attempted  bool         // whether this interval tried it
	lastErr    *scrapeError // the last scrape's, nil when it was read

	buf    bytes.Buffer
	vals   values
	m      mapping
	read   bool // m holds the last scrape's points
	series map[pointKey]*seriesState

	pod      []attribute.KeyValue
	asked    []int
	base     []attribute.KeyValue // provider, port, pod
	procSets map[int]attribute.Set
}

func (s *Source) newServer(root *proctable.Process, now time.Time) *server {
	srv := &server{
		spec:   root.Kind.(*spec),
		key:    serverKey{root.PID, root.Start},
		proc:   s.procs.Proc(root.PID),
		procs:  s.procs,
		found:  now,
		next:   now,
		selfNS: s.selfNS,
		series: map[pointKey]*seriesState{},
	}
	if srv.spec.profile == nil {
		_, srv.why = srv.spec.endpoint(nil) // a kind with no endpoint says why
	}
	srv.vals.lim = limits{models: s.cfg.maxModels, series: s.cfg.maxSeries, values: maxWords}
	if r := s.cfg.resolver; r != nil {
		srv.pod, _ = r.ProcessAttributes(root.PID)
		srv.asked = append(srv.asked, root.PID)
	}
	srv.rebase()
	return srv
}

// maxWords caps the distinct outcome words (error.type, finish reasons)
// of one server.
const maxWords = 64

// setMembers brings the server's processes up to date, at most max.
func (srv *server) setMembers(es []*proctable.Process, max int) {
	srv.members = srv.members[:0]
	srv.overProc = 0
	for _, e := range es {
		if len(srv.members) >= max {
			srv.overProc++
			continue
		}
		srv.members = append(srv.members, member{pid: e.PID, role: e.Role, exe: e.Exe, args: e.Args})
	}
}

// rebase makes the attributes every series of the server carries, and
// drops the series' kept attributes, made with the old ones.
func (srv *server) rebase() {
	srv.base = append(srv.base[:0], semconv.GenAIProviderName.String(string(srv.spec.kind)))
	if srv.port != 0 {
		srv.base = append(srv.base, semconv.ServerPort.Int(int(srv.port)))
	}
	srv.base = append(srv.base, srv.pod...)
	clear(srv.series)
	clear(srv.procSets)
}

// close lets go of the server's connections.
func (srv *server) close() {
	if srv.client != nil {
		srv.client.CloseIdleConnections()
	}
}

// args returns the command lines of the server's processes.
func (srv *server) args() [][]string {
	out := make([][]string, 0, len(srv.members))
	for _, m := range srv.members {
		out = append(out, m.args)
	}
	return out
}

// due reports whether the server is to be scraped (or its endpoint
// looked for) now.
func (srv *server) due(now time.Time) bool {
	return srv.spec.profile != nil && srv.why == "" && !now.Before(srv.next)
}

// scrape scrapes the server, or looks for its endpoint; it runs in a
// goroutine of its own, and touches nothing but the server.
func (s *Source) scrape(ctx context.Context, srv *server, now time.Time) {
	srv.attempted = true
	srv.problems = srv.problems[:0]
	var err *scrapeError
	if srv.endpoint == "" {
		err = s.findEndpoint(ctx, srv)
	} else {
		err = s.fetch(ctx, srv, srv.client, srv.endpoint)
	}
	srv.lastErr = err
	if srv.buf.Cap() > keptBuffer {
		srv.buf = bytes.Buffer{} // a large answer's buffer is not kept
	}
	if err == nil {
		srv.failures, srv.next, srv.lastScrape = 0, now, now
		return
	}
	srv.read = false
	srv.failures++
	srv.next = now.Add(s.cfg.interval * time.Duration(min(1<<(srv.failures-1), maxBackoff)))
	if srv.failures >= failuresToForget && srv.endpoint != "" {
		srv.problems = append(srv.problems, fmt.Sprintf("%s: %d scrapes failed in a row: looking for its endpoint again", srv.endpoint, srv.failures))
		srv.endpoint = ""
	}
}

// fetch scrapes url and maps what it serves into the server's mapping.
func (s *Source) fetch(ctx context.Context, srv *server, client *http.Client, url string) *scrapeError {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.timeout)
	defer cancel()
	header, err := get(ctx, client, url, accept, s.cfg.bodyLimit, &srv.buf)
	if err != nil {
		return err
	}
	fams, err := parse(header, srv.buf.Bytes())
	if err != nil {
		return err
	}
	mapFamilies(srv.spec.profile, fams, srv.model, &srv.vals, &srv.m)
	if srv.m.own == 0 {
		return fail(semconv.ScrapeErrorUnrecognised, "GET %s: no metric of %s among its %d families", url, srv.spec.kind, len(fams))
	}
	srv.read = true
	return nil
}

// listener is a listening TCP socket of a server's process.
type listener struct {
	addr netip.Addr
	port uint16
	pid  int
}

// candidate is an endpoint to try.
type candidate struct {
	host string // host:port
	pid  int    // the process whose network namespace it is in
}

// findEndpoint looks for the server's endpoint, and scrapes it once
// found.
func (s *Source) findEndpoint(ctx context.Context, srv *server) *scrapeError {
	args := srv.args()
	ports, why := srv.spec.endpoint(args)
	if why != "" {
		srv.why = why
		return nil
	}
	path := "/metrics"
	if srv.spec.path != nil {
		p, why := srv.spec.path(args, func(name string) ([]byte, error) { return readFile(srv.proc, name) })
		if why != "" {
			srv.why = why
			return nil
		}
		path = p
	}
	listeners, known := s.listeners(srv)
	cands := candidates(ports, listeners, known, srv.key.PID)
	if len(cands) == 0 {
		return fail(semconv.ScrapeErrorConnect, "no listening TCP socket among its %d processes", len(srv.members))
	}
	if srv.spec.info != nil && srv.model == "" {
		srv.model = s.info(ctx, srv, cands)
	}
	if srv.model == "" {
		if v, ok := firstFlag(args, "--model-id"); ok {
			srv.model = v
		}
	}
	var last *scrapeError
	for i, c := range cands {
		if i == maxCandidates {
			break
		}
		client := s.client(c.pid)
		url := "http://" + c.host + path
		err := s.fetch(ctx, srv, client, url)
		if err == nil {
			if srv.client != nil {
				srv.client.CloseIdleConnections()
			}
			srv.endpoint, srv.holder, srv.client = url, c.pid, client
			_, p, _ := net.SplitHostPort(c.host)
			port, _ := strconv.ParseUint(p, 10, 16)
			if srv.port != uint16(port) {
				srv.port = uint16(port)
				srv.rebase()
			}
			srv.netns, _ = s.procs.Proc(c.pid).NetNS()
			return nil
		}
		client.CloseIdleConnections()
		srv.problems = append(srv.problems, err.Error())
		last = err
	}
	return last
}

// firstFlag returns a flag's value in the first command line that gives
// it.
func firstFlag(args [][]string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := flag(a, name); ok {
			return v, true
		}
	}
	return "", false
}

// readFile reads a file as process p names it, at most
// maxMonitoringConfig bytes.
func readFile(p procfs.Proc, name string) ([]byte, error) {
	f, err := p.OpenFile(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, maxMonitoringConfig)
	n, err := f.Read(b)
	if err != nil && n == 0 {
		return nil, err
	}
	return b[:n], nil
}

// listeners returns the listening TCP sockets of the server's processes,
// and whether their sockets could be read at all.
func (s *Source) listeners(srv *server) ([]listener, bool) {
	var out []listener
	known := false
	byNS := map[string]map[uint64]int{} // per namespace, socket inode → pid
	nsPID := map[string]int{}
	for _, m := range srv.members {
		p := s.procs.Proc(m.pid)
		inodes, err := p.SocketInodes()
		if err != nil {
			srv.problems = append(srv.problems, fmt.Sprintf("the sockets of pid %d: %v", m.pid, err))
			continue
		}
		ns, err := p.NetNS()
		if err != nil {
			continue
		}
		known = true
		if byNS[ns] == nil {
			byNS[ns], nsPID[ns] = map[uint64]int{}, m.pid
		}
		for _, ino := range inodes {
			byNS[ns][ino] = m.pid
		}
	}
	for ns, inodes := range byNS {
		if len(inodes) == 0 {
			continue
		}
		err := s.procs.Proc(nsPID[ns]).NetTCP(func(t procfs.TCPSocket) bool {
			if pid, ok := inodes[t.Inode]; ok && t.State == procfs.TCPListen {
				out = append(out, listener{addr: t.LocalAddr, port: t.LocalPort, pid: pid})
			}
			return true
		})
		if err != nil {
			srv.problems = append(srv.problems, fmt.Sprintf("the TCP sockets of pid %d: %v", nsPID[ns], err))
		}
	}
	slices.SortFunc(out, func(a, b listener) int { return int(a.port) - int(b.port) })
	return out, known
}

// candidates orders the endpoints to try: the ports the flags and
// defaults give, where a process of the server listens on them (or, when
// its sockets cannot be read, on the loopback address of the root's
// namespace), then its other listening ports.
func candidates(ports []uint16, ls []listener, known bool, root int) []candidate {
	var out []candidate
	add := func(c candidate) {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	for _, p := range ports {
		if !known {
			add(candidate{host: net.JoinHostPort("127.0.0.1", strconv.Itoa(int(p))), pid: root})
			continue
		}
		for _, l := range ls {
			if l.port == p {
				add(candidate{host: hostOf(l), pid: l.pid})
			}
		}
	}
	for _, l := range ls {
		add(candidate{host: hostOf(l), pid: l.pid})
	}
	return out
}

// hostOf is the host:port a listening socket is reached at from its own
// namespace: its address, or the loopback one for a wildcard.
func hostOf(l listener) string {
	a := l.addr.Unmap()
	switch {
	case !a.IsValid() || a == netip.IPv4Unspecified():
		a = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	case a == netip.IPv6Unspecified():
		a = netip.IPv6Loopback()
	}
	return netip.AddrPortFrom(a, l.port).String()
}

// client returns an HTTP client whose connections are made in the
// network namespace of process pid (directly where that is the
// Source's). It keeps one connection alive between scrapes, and takes no
// proxy from the environment.
func (s *Source) client(pid int) *http.Client {
	d := dialer{}
	if ns, err := s.procs.Proc(pid).NetNS(); err == nil && ns != s.selfNS {
		p := s.procs.Proc(pid)
		d.openNS = func() (*os.File, error) { return p.OpenNetNS() }
	}
	return &http.Client{
		Transport: &http.Transport{
			DialContext:         d.DialContext,
			MaxIdleConnsPerHost: 1,
			IdleConnTimeout:     3 * s.cfg.interval,
			DisableCompression:  true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// info asks each candidate's /info for the server's model (TGI), and
// returns the first answer's.
func (s *Source) info(ctx context.Context, srv *server, cands []candidate) string {
	for i, c := range cands {
		if i == maxCandidates {
			break
		}
		client := s.client(c.pid)
		ictx, cancel := context.WithTimeout(ctx, s.cfg.timeout)
		_, err := get(ictx, client, "http://"+c.host+"/info", "application/json", maxInfo, &srv.buf)
		cancel()
		client.CloseIdleConnections()
		if err != nil {
			continue
		}
		if model, ok := srv.spec.info(srv.buf.Bytes()); ok {
			return model
		}
	}
	return ""
}
