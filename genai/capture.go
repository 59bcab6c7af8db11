package genai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/bpfsource"
	"github.com/xpuscope/xpuscope/internal/httpbpf"
	"github.com/xpuscope/xpuscope/internal/ktime"
	"github.com/xpuscope/xpuscope/internal/procfs"
	"github.com/xpuscope/xpuscope/internal/uprobe"
)

// Defaults of the capture's options.
const (
	DefaultBodyLimit      = 64 << 10
	DefaultMaxConnections = 4096
	DefaultIdleTimeout    = 2 * time.Minute
	DefaultPollInterval   = 50 * time.Millisecond
	DefaultRingBytes      = 2 << 20
)

// DefaultPlaintextPorts returns the TCP ports whose plaintext HTTP is
// captured by default, the default ports of the common OpenAI-compatible
// servers: vLLM (8000), llama.cpp's server and TGI as its docs run it
// (8080), LiteLLM's proxy (4000), TGI's launcher (3000), SGLang (30000)
// and Ollama (11434). TGI's container listens on 80, which is left out:
// on most nodes some connection to port 80 is always open, which would
// keep the plaintext programs busy on every process's socket calls. The
// slice is the caller's.
func DefaultPlaintextPorts() []uint16 { return []uint16{8000, 8080, 4000, 3000, 30000, 11434} }

// SensitiveHeaders returns the request and response header fields whose
// values the capture drops as it frames each message, before anything
// else sees them: the fields stay, with an empty value (an AWS Signature
// Version 4 Authorization becomes "AWS4-HMAC-SHA256", or
// "AWS4-HMAC-SHA256 bedrock"). The slice is the caller's: changing it
// changes nothing the capture does.
func SensitiveHeaders() []string { return slices.Clone(credentialHeaders) }

var credentialHeaders = []string{
	"Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie",
	"X-Api-Key", "Api-Key", "X-Goog-Api-Key", "X-Amz-Security-Token",
}

// What redactCredential keeps of an AWS Signature Version 4
// Authorization: that it is one, and whether its scope names Bedrock.
const (
	sigV4        = "AWS4-HMAC-SHA256"
	sigV4Bedrock = sigV4 + " bedrock"
)

// redactCredential is what the capture keeps of a credential field (one
// of credentialHeaders), so that detection can tell what kind of
// credential a request carries: nothing of it (an empty value; the field
// is there), except of an AWS Signature Version 4 Authorization, which
// becomes sigV4, or sigV4Bedrock when the service of its credential
// scope (access-key-id/date/region/service/aws4_request) is Bedrock's.
// Whatever the value, the result is one of those three constants.
func redactCredential(name, value []byte) string {
	if !bytes.EqualFold(name, []byte("Authorization")) || !bytes.HasPrefix(value, []byte(sigV4+" ")) {
		return ""
	}
	_, scope, ok := bytes.Cut(value, []byte("Credential="))
	if !ok {
		return sigV4
	}
	if i := bytes.IndexAny(scope, ", "); i >= 0 {
		scope = scope[:i]
	}
	if parts := bytes.Split(scope, []byte("/")); len(parts) == 5 && string(parts[3]) == "bedrock" && string(parts[4]) == "aws4_request" {
		return sigV4Bedrock
	}
	return sigV4
}

// CaptureOption configures a Capture. Every Option is one too; the
// options below are the capture's alone, and NewEmitter takes none of
// them.
type CaptureOption interface{ applyCapture(*captureConfig) }

type captureOptionFunc func(*captureConfig)

func (f captureOptionFunc) applyCapture(c *captureConfig) { f(c) }

// captureConfig is NewCapture's: its emitter's and its own.
type captureConfig struct {
	config
	ports        []uint16
	bodyLimit    int
	hosts        HostMap
	onExchange   func(*Exchange, *Call, Endpoint)
	retransmits  func(pid int, ino uint64, server string, from, to time.Time) int
	procfs       procfs.FS
	pollInterval time.Duration
	ringBytes    uint32
	maxConns     int
	idleTimeout  time.Duration
	resolver     xpuscope.ProcessResolver
	loadHold     bool
	goTLS        bool
	elsewhere    func(pid int, metric string) bool
	goReadAtRETs bool // tests: crypto/tls's Read probed at its RETs, as in a build without its one call of runtime.memmove
	tlsByCall    bool // tests: TLS (Go's crypto/tls, OpenSSL) probed at every call, even in programs seen from their exec
	leftOut      int  // tests: the process left out in place of the capture's own
	rawSyscalls  bool // tests: the system-call programs at the raw tracepoints, as without tracefs
}

// maxBodyLimit bounds WithBodyLimit.
const maxBodyLimit = 16 << 20

func newCaptureConfig(opts []CaptureOption) (captureConfig, error) {
	c := captureConfig{
		config:       newConfig(),
		ports:        DefaultPlaintextPorts(),
		bodyLimit:    DefaultBodyLimit,
		procfs:       procfs.FS{Root: procfs.DefaultRoot},
		pollInterval: DefaultPollInterval,
		ringBytes:    DefaultRingBytes,
		maxConns:     DefaultMaxConnections,
		idleTimeout:  DefaultIdleTimeout,
		loadHold:     true,
		goTLS:        true,
	}
	for _, o := range opts {
		if o != nil {
			o.applyCapture(&c)
		}
	}
	if err := c.config.check(); err != nil {
		return c, err
	}
	for _, p := range c.ports {
		if p == 0 {
			return c, errors.New("genai: WithPlaintextPorts: port 0")
		}
	}
	switch {
	case c.bodyLimit < 1 || c.bodyLimit > maxBodyLimit:
		return c, fmt.Errorf("genai: WithBodyLimit: the limit must be 1 to %d bytes, got %d", maxBodyLimit, c.bodyLimit)
	case c.procfs.Root == "":
		return c, errors.New("genai: WithProcRoot: the procfs root is empty")
	case c.pollInterval <= 0:
		return c, fmt.Errorf("genai: WithPollInterval: the interval must be positive, got %v", c.pollInterval)
	case c.maxConns < 1:
		return c, fmt.Errorf("genai: WithMaxConnections: the cap must be at least 1, got %d", c.maxConns)
	case c.idleTimeout <= 0:
		return c, fmt.Errorf("genai: WithIdleTimeout: the timeout must be positive, got %v", c.idleTimeout)
	}
	if err := bpfsource.CheckRingBytes(c.ringBytes); err != nil {
		return c, fmt.Errorf("genai: WithRingBufferSize: %w", err)
	}
	return c, nil
}

// WithPlaintextPorts sets the TCP ports whose plaintext HTTP the capture
// reads, at either end of a connection (default DefaultPlaintextPorts());
// none turns the plaintext capture off (the system-call programs still
// read the sockets of TLS connections read by connection). TLS is
// captured on every port.
func WithPlaintextPorts(ports ...uint16) CaptureOption {
	ports = slices.Clone(ports)
	return captureOptionFunc(func(c *captureConfig) { c.ports = ports })
}

// WithBodyLimit caps the bytes of each request and response body the
// capture keeps: 1 byte to 16 MiB (default DefaultBodyLimit). A streamed
// response of an LLM API call is parsed as it arrives, all of it, however
// long; the limit caps what is kept of it for content capture. A longer
// body that is not a stream is flagged truncated and parsed as far as it
// goes.
func WithBodyLimit(n int) CaptureOption {
	return captureOptionFunc(func(c *captureConfig) { c.bodyLimit = n })
}

// WithHostMap names the provider behind OpenAI-compatible servers and
// gateways (see NewHostMap); Detect falls back to openai_compatible
// without it.
func WithHostMap(m HostMap) CaptureOption {
	return captureOptionFunc(func(c *captureConfig) { c.hosts = m })
}

// WithExchangeHandler hands every LLM API call the capture sees to f as
// well, after it is emitted: the exchange (without the credential headers
// of SensitiveHeaders), the parsed call and the endpoint. f runs on the
// capture's reader and must not keep the exchange's byte slices past its
// return, nor block.
func WithExchangeHandler(f func(*Exchange, *Call, Endpoint)) CaptureOption {
	return captureOptionFunc(func(c *captureConfig) { c.onExchange = f })
}

// WithProcRoot sets where the host's procfs is mounted (default "/proc").
func WithProcRoot(path string) CaptureOption {
	return captureOptionFunc(func(c *captureConfig) { c.procfs = procfs.FS{Root: path} })
}

// WithPollInterval sets how often the reader drains the ring buffer when
// it is not woken sooner (default DefaultPollInterval). After a poll that
// finds nothing the wait doubles, up to a second, until records come
// again.
func WithPollInterval(d time.Duration) CaptureOption {
	return captureOptionFunc(func(c *captureConfig) { c.pollInterval = d })
}

// WithRingBufferSize sets the kernel ring buffer's size in bytes, a power
// of two of at least 4096 (default DefaultRingBytes).
func WithRingBufferSize(n uint32) CaptureOption {
	return captureOptionFunc(func(c *captureConfig) { c.ringBytes = n })
}

// WithMaxConnections caps the connections reassembled at once, at least 1
// (default DefaultMaxConnections); past it the least recently used is
// evicted and counted.
func WithMaxConnections(n int) CaptureOption {
	return captureOptionFunc(func(c *captureConfig) { c.maxConns = n })
}

// WithIdleTimeout evicts a connection that moved no bytes for d (default
// DefaultIdleTimeout), and counts it.
func WithIdleTimeout(d time.Duration) CaptureOption {
	return captureOptionFunc(func(c *captureConfig) { c.idleTimeout = d })
}

// WithResolver places the processes making LLM API calls in their
// containers and pods through r (a *podjoin.Resolver), asked once per
// process, at its first call: the calls' spans get the attributes r gives,
// and are children of the span context r gives, when valid (a workload
// started with TRACEPARENT). The GenAI metrics get none of them: see the
// package documentation. The default is none.
func WithResolver(r xpuscope.ProcessResolver) CaptureOption {
	return captureOptionFunc(func(c *captureConfig) { c.resolver = r })
}

// WithRetransmits has each call over a TCP connection, plaintext or TLS,
// carry, on its span, the segments its connection retransmitted during
// the call (xpuscope.tcp.call.retransmits, where there were any):
// count(pid, ino, server, from, to) says how many times the socket of
// inode ino of process pid retransmitted between from and to (give it
// (*node.Source).CallRetransmits, of package genai/node, which also
// names the retransmit series of the connection's server end by server,
// the call's server.address). A connection's socket is told by the
// kernel side, once, as the connection starts to speak HTTP, so that a
// connection closed before the capture reads its calls carries its
// count too: a plaintext connection's by its descriptor; a Go
// crypto/tls connection's through the
// *tls.Conn, where it is over a *net.TCPConn (one over another net.Conn
// carries none); an OpenSSL connection's read by connection as its
// socket is marked, one read by call at a system call on a TCP socket
// that SSL_read or SSL_write makes for it (none where its calls make no
// system call: memory BIOs, as Python's asyncio uses). It is asked at
// each call, from the capture's reader, and must not block. The
// default, nil, asks nothing.
func WithRetransmits(count func(pid int, ino uint64, server string, from, to time.Time) int) CaptureOption {
	return captureOptionFunc(func(c *captureConfig) { c.retransmits = count })
}

// WithServedElsewhere names the gen_ai.server.* metrics that another
// Source reports for a serving process from the server's own figures:
// reports(pid, name) says whether the metric of that name, of the
// requests process pid serves, is reported elsewhere (give it
// (*serving.Source).Reports, of package genai/serving, which reads the
// server's metrics endpoint). The capture then leaves that metric of the
// process's requests out, so that no request is counted twice; their
// SERVER spans stay. It is asked at each request served, from the
// capture's reader, and must only read. The default, nil, reports every
// served request.
func WithServedElsewhere(reports func(pid int, metric string) bool) CaptureOption {
	return captureOptionFunc(func(c *captureConfig) { c.elsewhere = reports })
}

// WithLoadHold says whether a process that maps an OpenSSL the capture has
// not probed yet (or a new file while it uses a probed one), or runs a
// program the capture has not classified yet (a Go program, one with
// OpenSSL linked in), is stopped until the probes are live (default
// true), so that its first TLS calls are captured. Off, they are lost, and the file counted in
// xpuscope.uprobe.attached_late. A hold lasts 500 ms at most, comes once
// per new file on the host, and never stops a process under ptrace, one
// with a controlling terminal, or one stopped already.
func WithLoadHold(on bool) CaptureOption {
	return captureOptionFunc(func(c *captureConfig) { c.loadHold = on })
}

// withGoReadAtRETs probes crypto/tls's Read at its RET instructions even
// where it makes its one call of runtime.memmove: the way a Go build
// without that call is read.
func withGoReadAtRETs() CaptureOption {
	return captureOptionFunc(func(c *captureConfig) { c.goReadAtRETs = true })
}

// withTLSByCall has Go programs' crypto/tls and OpenSSL probed at every
// call, as a program found running when the capture began is, even where
// the program is seen from its exec (tests: that way's own).
func withTLSByCall() CaptureOption {
	return captureOptionFunc(func(c *captureConfig) { c.tlsByCall = true })
}

// byConnection says whether programs seen from their exec have their
// TLS connections read by connection.
func (c *captureConfig) byConnection() bool { return !c.tlsByCall }

// withRawSyscalls attaches the plaintext capture's system-call programs
// to the raw tracepoints, as where tracefs is not mounted.
func withRawSyscalls() CaptureOption {
	return captureOptionFunc(func(c *captureConfig) { c.rawSyscalls = true })
}

// uncaptured is the process whose calls are left out: the capture's own
// (an agent's exports and endpoints), or withLeftOut's. Its files are not
// probed on its account, its hits in a file probed for another are
// dropped in the kernel, and so are its plaintext system calls.
func (cc *captureConfig) uncaptured() int {
	if cc.leftOut != 0 {
		return cc.leftOut
	}
	return os.Getpid()
}

// withLeftOut leaves out the process pid, in place of the capture's own
// (which then makes no calls to capture): a benchmark's mock, in a
// process of its own, standing in for a provider off the node.
func withLeftOut(pid int) CaptureOption {
	return captureOptionFunc(func(c *captureConfig) { c.leftOut = pid })
}

// WithGoTLS says whether Go programs' crypto/tls is captured (default
// true). Every Go executable on the host that links crypto/tls is then
// probed, and each of its TLS reads and writes costs a uprobe's trap
// (see docs/genai.md); a node that runs no
// Go LLM client or server may turn it off.
func WithGoTLS(on bool) CaptureOption {
	return captureOptionFunc(func(c *captureConfig) { c.goTLS = on })
}

// Target names, in CaptureStatus and metrics: the OpenSSL files, and the
// Go programs whose crypto/tls is probed.
const (
	TargetOpenSSL = "libssl"
	TargetGoTLS   = "go-crypto-tls"
)

// Capture captures the LLM API calls of every process on the host from
// outside them, and emits each through an Emitter: HTTPS through
// OpenSSL (uprobes on its read and write functions in every libssl and
// every executable that links OpenSSL statically; on crypto/tls's read
// and write methods in every Go executable that has them), and plaintext
// HTTP to the ports of local model servers (syscall tracepoints). Create
// it with NewCapture.
type Capture struct {
	cfg     captureConfig
	emitter *Emitter
	objs    *httpbpf.Objects
	tracer  *uprobe.Tracer
	kernel  bpfsource.Kernel // objs, the probes, ring and callback, to close
	// rawSyscalls is why the system-call programs are at the raw
	// tracepoints (Status); nil when at the data syscalls' own.
	rawSyscalls error
	record      httpbpf.Record // the record being handled; guarded by mu

	mu      sync.Mutex // guards record, conns, goProcs and waitKeys
	conns   *connTable
	goProcs int64
	// waitKeys are the attribute sets of waiting calls seen so far: each
	// is reported, 0 when no call waits, so that its series does not
	// vanish between calls (see waiting).
	waitKeys map[waitingKey]bool
	goes     *goCounter // used by the reader only
	// scanMu serialises the scans for sockets older than the capture,
	// whose finding lives in the BPF side's gate.
	scanMu sync.Mutex
}

// NewCapture loads the probes, attaches them, and starts reading. Missing
// privilege (CAP_BPF, CAP_PERFMON, or root) or kernel support (BTF, task
// storage, uprobes) is xpuscope.ErrUnavailable; finding no OpenSSL yet is
// not an error, since a process can load it later. A bad option is an
// error.
func NewCapture(opts ...CaptureOption) (*Capture, error) {
	cfg, err := newCaptureConfig(opts)
	if err != nil {
		return nil, err
	}
	e, err := newEmitter(cfg.config)
	if err != nil {
		return nil, err
	}
	c := &Capture{cfg: cfg, emitter: e, waitKeys: map[waitingKey]bool{}}
	cc := &c.cfg
	multi := features.HaveBPFLinkUprobeMulti() == nil
	c.objs, err = httpbpf.Load(httpbpf.LoadOptions{RingBytes: cc.ringBytes, WakeupBytes: uint64(cc.ringBytes / 4), SelfPID: uint32(cc.uncaptured()),
		UprobeMulti: multi, Plaintext: len(cc.ports) > 0 || cc.byConnection(), Sockets: cc.retransmits != nil})
	if err != nil {
		return nil, bpfsource.Classify("genai capture: load BPF object", err)
	}
	c.kernel.Objects = c.objs
	if err := c.start(multi); err != nil {
		return nil, errors.Join(err, c.kernel.Close())
	}
	return c, nil
}

// probes are the uprobes of ps, with the loaded programs.
func (c *Capture) probes(ps []httpbpf.TLSProbe) []uprobe.Probe {
	out := make([]uprobe.Probe, 0, len(ps))
	for _, p := range ps {
		up := uprobe.Probe{Symbol: p.Symbol, CalledFrom: p.CalledFrom, Cookie: p.Cookie, Entry: c.objs.Program(p.Entry),
			AtReturns: p.AtReturns, AtCallOf: p.AtCallOf, CallCookie: p.CallCookie, CallFile: p.CallFile, OnlyForReturns: p.OnlyForReturns}
		if c.cfg.goReadAtRETs {
			up.AtCallOf = ""
		}
		if p.Return != "" {
			up.Return = c.objs.Program(p.Return)
		}
		out = append(out, up)
	}
	return out
}

func (c *Capture) start(multi bool) error {
	cc := &c.cfg
	// A program seen from its exec (or from its load of libssl) has its
	// TLS connections read at their sockets, through the system-call
	// programs.
	if len(cc.ports) > 0 || cc.byConnection() {
		if err := c.startPlaintext(); err != nil {
			return err
		}
	}
	wall := ktime.WallClock(ktime.Now)
	c.conns = newConnTable(cc, c.objs, wall, c.exchange)
	c.conns.sessionOffs = c.conns.sessionOffsets()
	if err := c.objs.SetSessionOffsets(c.conns.sessionOffs); err != nil {
		return fmt.Errorf("genai capture: %w", err)
	}
	c.conns.serve = c.serve
	c.goes = newGoCounter(cc.procfs)
	var err error
	// OpenSSL is linked into programs too (Node's), and a Go program's
	// crypto/tls always is.
	openssl := uprobe.Target{Name: TargetOpenSSL, Anchor: httpbpf.TLSAnchor, Probes: c.probes(httpbpf.TLSProbes), Multi: multi,
		Names: []string{"libssl.so"}, InPrograms: true}
	if cc.byConnection() {
		openssl.FromExec, openssl.FromExecNeeds = c.probes(httpbpf.TLSConnProbes), []string{httpbpf.TLSHandshake}
	}
	targets := []uprobe.Target{openssl}
	if cc.goTLS {
		tg := uprobe.Target{Name: TargetGoTLS, Anchor: httpbpf.GoTLSAnchor, Probes: c.probes(httpbpf.GoTLSProbes), Multi: multi,
			InPrograms: true}
		if !cc.goReadAtRETs && cc.byConnection() {
			tg.FromExec, tg.FromExecNeeds = c.probes(httpbpf.GoTLSConnProbes), []string{httpbpf.GoTLSKeyLog}
		}
		targets = append(targets, tg)
	}
	c.tracer, err = uprobe.New(uprobe.Config{Procfs: cc.procfs, Targets: targets, Hold: cc.loadHold, Skip: cc.uncaptured()})
	if err != nil {
		return fmt.Errorf("genai capture: %w", err)
	}
	c.kernel.Probes = append(c.kernel.Probes, c.tracer)
	c.housekeep(time.Now())
	m := c.cfg.meterProvider.Meter(ScopeName, metric.WithInstrumentationVersion(xpuscope.Version))
	var in captureInstruments
	if err := in.create(m); err != nil {
		return fmt.Errorf("genai capture: %w", err)
	}
	// The reader ends a batch's spans together (heldSpans), after the
	// batch and after housekeeping, which ends calls too.
	c.emitter.holdSpans()
	c.kernel.Ring, err = bpfsource.NewRing(c.objs.Records, bpfsource.RingConfig{
		Poll: cc.pollInterval, Decode: c.decode, Flush: c.emitter.endHeld, Housekeep: c.housekeep, Housekeeping: housekeeping})
	if err != nil {
		return fmt.Errorf("genai capture: %w", err)
	}
	if c.kernel.Callback, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		return c.observe(&in, o)
	}, in.observables()...); err != nil {
		return fmt.Errorf("genai capture: register callback: %w", err)
	}
	return nil
}

// startPlaintext attaches the plaintext capture: the socket state
// program that opens its gate, then, once the gate knows of the sockets
// with a watched port that are already open, the syscall programs.
func (c *Capture) startPlaintext() error {
	if err := c.objs.WatchPorts(c.cfg.ports); err != nil {
		return fmt.Errorf("genai capture: %w", err)
	}
	attach := func(tracepoint, program string) error {
		l, err := link.AttachTracing(link.TracingOptions{Program: c.objs.Program(program)})
		if err != nil {
			what := "genai capture: attach tp_btf/" + tracepoint
			if bpfsource.Denied(err) {
				return bpfsource.Classify(what, err)
			}
			return xpuscope.Unavailablef("%s: %w (needs BTF raw tracepoints)", what, err)
		}
		c.kernel.Probes = append(c.kernel.Probes, l)
		return nil
	}
	if err := attach("inet_sock_set_state", httpbpf.SockState); err != nil {
		return err
	}
	if c.cfg.retransmits != nil {
		// A thread that exits inside an OpenSSL call waiting for its
		// socket (which the system-call programs find) waits no more.
		if err := attach("sched_process_exit", httpbpf.ThreadExit); err != nil {
			return err
		}
	}
	if err := c.checkPreexisting(); err != nil {
		return err
	}
	if c.cfg.rawSyscalls {
		c.rawSyscalls = errors.New("asked for")
	} else if c.rawSyscalls = c.attachSyscalls(); c.rawSyscalls == nil {
		return nil
	} else if errors.Is(c.rawSyscalls, os.ErrPermission) {
		return bpfsource.Classify("genai capture", c.rawSyscalls)
	}
	if err := attach("sys_enter", httpbpf.SysEnter); err != nil {
		return err
	}
	return attach("sys_exit", httpbpf.SysExit)
}

// attachSyscalls attaches the system-call programs to the tracepoints of
// close and the data syscalls, close's first: a descriptor closed while
// they attach is never read as its next holder's.
func (c *Capture) attachSyscalls() error {
	links, err := bpfsource.AttachSyscalls(
		bpfsource.Syscalls{Program: c.objs.Program(httpbpf.SyscallClose), Calls: []string{"close"}},
		bpfsource.Syscalls{Program: c.objs.Program(httpbpf.SyscallEnter), Calls: httpbpf.DataSyscalls},
		bpfsource.Syscalls{Program: c.objs.Program(httpbpf.SyscallExit), Exit: true, Calls: httpbpf.DataSyscalls})
	for _, l := range links {
		c.kernel.Probes = append(c.kernel.Probes, l)
	}
	return err
}

// checkPreexisting opens the plaintext gate while a TCP socket with a
// watched port that the socket state program may not have seen carries
// data, in any network namespace, and closes it once none does. A socket
// that listens, or is still connecting, changes state before a byte
// passes, and that program sees the change: so a model server listening
// from before the capture holds the gate open only through its
// connections of then. Unable to tell, it leaves the gate open: the
// capture fails open.
func (c *Capture) checkPreexisting() error {
	c.scanMu.Lock()
	defer c.scanMu.Unlock()
	watched := map[uint16]bool{}
	for _, p := range c.cfg.ports {
		watched[p] = true
	}
	found := false
	err := c.cfg.procfs.TCPSockets(func(s procfs.TCPSocket) bool {
		found = s.CarriesData() && (watched[s.LocalPort] || watched[s.RemotePort])
		return !found
	})
	if err := c.objs.SetPreexisting(found || err != nil); err != nil {
		return fmt.Errorf("genai capture: %w", err)
	}
	return nil
}

// decode decodes one ring buffer record and hands it to its connection.
func (c *Capture) decode(raw []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := httpbpf.Decode(raw, &c.record); err != nil {
		return err
	}
	c.conns.handle(&c.record)
	return nil
}

// housekeeping is how often idle connections are evicted and Go programs
// counted.
const housekeeping = 5 * time.Second

func (c *Capture) housekeep(now time.Time) {
	if g, err := c.objs.Gate(); err != nil || g.Preexisting {
		_ = c.checkPreexisting() // a failure leaves the gate open
	}
	goes := c.goes.count() // reads /proc: outside the lock
	c.mu.Lock()
	c.conns.evictIdle(now)
	c.goProcs = goes
	c.mu.Unlock()
	c.emitter.endHeld()
}

// CaptureStatus says what the capture is attached to.
type CaptureStatus struct {
	Attachments []xpuscope.Attachment
	Rejections  []xpuscope.Rejection
	// PlaintextPorts are the TCP ports whose plaintext HTTP is read.
	PlaintextPorts []uint16
	// RawSyscalls, when not nil, says why the plaintext capture's
	// programs run at every system call of every process (the raw
	// tracepoints), not at the data syscalls' own: tracefs, which names
	// those, not mounted, say.
	RawSyscalls error
}

// Status lists the OpenSSL files and Go programs the probes are attached
// to (by Target), the files that looked like OpenSSL but could not be
// probed, with why, and the plaintext ports.
func (c *Capture) Status() CaptureStatus {
	a, r := c.tracer.Status()
	return CaptureStatus{Attachments: a, Rejections: r, PlaintextPorts: c.cfg.ports, RawSyscalls: c.rawSyscalls}
}

// Close detaches the probes, stops the reader, ends the spans it holds
// and frees the kernel objects. Calls after the first return nil.
func (c *Capture) Close() error {
	err := c.kernel.Close()
	c.emitter.endHeld()
	return err
}
