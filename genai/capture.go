package genai

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/httpbpf"
	"github.com/xpuscope/xpuscope/internal/ktime"
	"github.com/xpuscope/xpuscope/internal/procfs"
	"github.com/xpuscope/xpuscope/internal/ringpoll"
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

// DefaultPlaintextPorts are the TCP ports whose plaintext HTTP is captured
// by default: vLLM (8000), TGI and llama.cpp (8080), LiteLLM's proxy
// (4000) and Ollama (11434).
var DefaultPlaintextPorts = []uint16{8000, 8080, 4000, 11434}

// SensitiveHeaders are the request and response header fields the capture
// drops as it frames each message, before anything else sees them.
var SensitiveHeaders = []string{
	"Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie",
	"X-Api-Key", "Api-Key", "X-Goog-Api-Key", "X-Amz-Security-Token",
}

type captureConfig struct {
	ports        []uint16
	portsSet     bool
	bodyLimit    int
	hosts        HostMap
	onExchange   func(*Exchange, *Call, Endpoint)
	procfs       procfs.FS
	pollInterval time.Duration
	ringBytes    uint32
	maxConns     int
	idleTimeout  time.Duration
	resolver     Resolver
}

// WithPlaintextPorts sets the TCP ports whose plaintext HTTP the capture
// reads, at either end of a connection (default DefaultPlaintextPorts);
// none turns the plaintext capture off. TLS through OpenSSL is captured
// on every port.
func WithPlaintextPorts(ports ...uint16) Option {
	return optionFunc(func(c *config) { c.capture.ports, c.capture.portsSet = ports, true })
}

// WithBodyLimit caps the bytes of each request and response body the
// capture keeps for parsing (default DefaultBodyLimit). A longer body is
// flagged truncated and still parsed, as far as it goes.
func WithBodyLimit(n int) Option {
	return optionFunc(func(c *config) { c.capture.bodyLimit = n })
}

// WithHostMap names the provider behind OpenAI-compatible servers and
// gateways (see NewHostMap); Detect falls back to openai_compatible
// without it.
func WithHostMap(m HostMap) Option {
	return optionFunc(func(c *config) { c.capture.hosts = m })
}

// WithExchangeHandler hands every LLM API call the capture sees to f as
// well, after it is emitted: the exchange (without the credential headers
// of SensitiveHeaders), the parsed call and the endpoint. f runs on the
// capture's reader and must not keep the exchange's byte slices past its
// return, nor block.
func WithExchangeHandler(f func(*Exchange, *Call, Endpoint)) Option {
	return optionFunc(func(c *config) { c.capture.onExchange = f })
}

// WithProcRoot sets where the host's procfs is mounted (default "/proc").
func WithProcRoot(path string) Option {
	return optionFunc(func(c *config) { c.capture.procfs = procfs.FS{Root: path} })
}

// WithPollInterval sets how often the reader drains the ring buffer when
// it is not woken sooner (default DefaultPollInterval). After a poll that
// finds nothing the wait doubles, up to a second, until records come
// again.
func WithPollInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.capture.pollInterval = d })
}

// WithRingBufferSize sets the kernel ring buffer's size in bytes, a power
// of two multiple of the page size (default DefaultRingBytes).
func WithRingBufferSize(n uint32) Option {
	return optionFunc(func(c *config) { c.capture.ringBytes = n })
}

// WithMaxConnections caps the connections reassembled at once (default
// DefaultMaxConnections); past it the least recently used is evicted and
// counted.
func WithMaxConnections(n int) Option {
	return optionFunc(func(c *config) { c.capture.maxConns = n })
}

// WithIdleTimeout evicts a connection that moved no bytes for d (default
// DefaultIdleTimeout), and counts it.
func WithIdleTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.capture.idleTimeout = d })
}

// WithResolver places the processes making LLM API calls in their
// containers and pods through r (a *podjoin.Resolver), asked once per
// process, at its first call: the calls' spans get the attributes r gives,
// and are children of the span context r gives, when valid (a workload
// started with TRACEPARENT). The GenAI metrics get none of them: see the
// package documentation. The default is none; NewEmitter ignores it.
func WithResolver(r Resolver) Option {
	return optionFunc(func(c *config) { c.capture.resolver = r })
}

func (c *captureConfig) check() error {
	if !c.portsSet {
		c.ports = DefaultPlaintextPorts
	}
	for _, p := range c.ports {
		if p == 0 {
			return errors.New("genai: plaintext port 0")
		}
	}
	if c.bodyLimit == 0 {
		c.bodyLimit = DefaultBodyLimit
	}
	if c.bodyLimit < 0 || c.bodyLimit > 16<<20 {
		return fmt.Errorf("genai: body limit must be 1 to %d bytes, got %d", 16<<20, c.bodyLimit)
	}
	if c.procfs.Root == "" {
		c.procfs.Root = procfs.DefaultRoot
	}
	if c.pollInterval == 0 {
		c.pollInterval = DefaultPollInterval
	}
	if c.pollInterval < 0 {
		return fmt.Errorf("genai: negative poll interval %v", c.pollInterval)
	}
	if c.ringBytes == 0 {
		c.ringBytes = DefaultRingBytes
	}
	if c.maxConns == 0 {
		c.maxConns = DefaultMaxConnections
	}
	if c.maxConns < 0 {
		return fmt.Errorf("genai: negative connection cap %d", c.maxConns)
	}
	if c.idleTimeout == 0 {
		c.idleTimeout = DefaultIdleTimeout
	}
	if c.idleTimeout < 0 {
		return fmt.Errorf("genai: negative idle timeout %v", c.idleTimeout)
	}
	return nil
}

// Target name of the OpenSSL files, in CaptureStatus and metrics.
const TargetOpenSSL = "libssl"

// Capture captures the LLM API calls of every process on the host from
// outside them, and emits each through an Emitter: HTTPS through
// OpenSSL (uprobes on its read and write functions in every libssl and
// every executable that links OpenSSL statically), and plaintext HTTP to
// the ports of local model servers (syscall tracepoints). Go programs'
// crypto/tls is not captured; they are counted. Create it with
// NewCapture.
type Capture struct {
	cfg     config
	emitter *Emitter
	objs    *httpbpf.Objects
	sys     []link.Link
	tracer  *uprobe.Tracer
	rb      *ringbuf.Reader
	reg     metric.Registration

	mu      sync.Mutex // guards conns, goProcs and waitKeys
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

	wg        sync.WaitGroup
	closeOnce sync.Once
}

// NewCapture loads the probes, attaches them, and starts reading. Missing
// privilege (CAP_BPF, CAP_PERFMON, or root) or kernel support (BTF, task
// storage, uprobes) is xpuscope.ErrUnavailable; finding no OpenSSL yet is
// not an error, since a process can load it later. A bad option is an
// error.
func NewCapture(opts ...Option) (*Capture, error) {
	e, err := NewEmitter(opts...)
	if err != nil {
		return nil, err
	}
	c := &Capture{cfg: e.cfg, emitter: e, waitKeys: map[waitingKey]bool{}}
	if err := c.cfg.capture.check(); err != nil {
		return nil, err
	}
	cc := &c.cfg.capture
	multi := features.HaveBPFLinkUprobeMulti() == nil
	c.objs, err = httpbpf.Load(httpbpf.LoadOptions{RingBytes: cc.ringBytes, WakeupBytes: uint64(cc.ringBytes / 4), UprobeMulti: multi})
	if err != nil {
		if uprobe.Denied(err) {
			return nil, xpuscope.Unavailablef("genai capture: %w (needs CAP_BPF and CAP_PERFMON, or root)", err)
		}
		return nil, fmt.Errorf("genai capture: %w", err)
	}
	if err := c.start(multi); err != nil {
		c.closeKernel()
		return nil, err
	}
	return c, nil
}

func (c *Capture) start(multi bool) error {
	cc := &c.cfg.capture
	if len(cc.ports) > 0 {
		if err := c.startPlaintext(); err != nil {
			return err
		}
	}
	var err error
	if c.rb, err = ringbuf.NewReader(c.objs.Records); err != nil {
		return fmt.Errorf("genai capture: ring buffer reader: %w", err)
	}
	wall := ktime.WallClock(ktime.Now)
	c.conns = newConnTable(cc, c.objs, wall, c.exchange)
	c.goes = newGoCounter(cc.procfs)
	probes := make([]uprobe.Probe, 0, len(httpbpf.TLSProbes))
	for _, p := range httpbpf.TLSProbes {
		up := uprobe.Probe{Symbol: p.Symbol, CalledFrom: p.CalledFrom, Cookie: p.Cookie, Entry: p.Entry(c.objs)}
		if p.Return != nil {
			up.Return = p.Return(c.objs)
		}
		probes = append(probes, up)
	}
	c.tracer, err = uprobe.New(uprobe.Config{
		Procfs: cc.procfs,
		Targets: []uprobe.Target{{Name: TargetOpenSSL, Anchor: httpbpf.TLSAnchor, Probes: probes, Multi: multi,
			Hint: func(b string) bool { return strings.HasPrefix(b, "libssl.so") }}},
	})
	if err != nil {
		return fmt.Errorf("genai capture: %w", err)
	}
	m := c.cfg.meterProvider.Meter(ScopeName)
	var in captureInstruments
	if err := in.create(m); err != nil {
		return fmt.Errorf("genai capture: %w", err)
	}
	if c.reg, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		return c.observe(&in, o)
	}, in.observables()...); err != nil {
		return fmt.Errorf("genai capture: register callback: %w", err)
	}
	c.wg.Add(1)
	go c.read()
	return nil
}

// startPlaintext attaches the plaintext capture: the socket state
// program that opens its gate, then, once the gate knows of the sockets
// with a watched port that are already open, the syscall programs.
func (c *Capture) startPlaintext() error {
	if err := c.objs.WatchPorts(c.cfg.capture.ports); err != nil {
		return fmt.Errorf("genai capture: %w", err)
	}
	attach := func(name string, prog *ebpf.Program) error {
		l, err := link.AttachTracing(link.TracingOptions{Program: prog})
		if err != nil {
			if uprobe.Denied(err) {
				return xpuscope.Unavailablef("genai capture: attach tp_btf/%s: %w (needs CAP_BPF and CAP_PERFMON, or root)", name, err)
			}
			return xpuscope.Unavailablef("genai capture: attach tp_btf/%s: %w (needs BTF raw tracepoints)", name, err)
		}
		c.sys = append(c.sys, l)
		return nil
	}
	if err := attach("inet_sock_set_state", c.objs.SockState); err != nil {
		return err
	}
	if err := c.checkPreexisting(); err != nil {
		return err
	}
	if err := attach("sys_enter", c.objs.SysEnter); err != nil {
		return err
	}
	return attach("sys_exit", c.objs.SysExit)
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
	for _, p := range c.cfg.capture.ports {
		watched[p] = true
	}
	found := false
	err := c.cfg.capture.procfs.TCPSockets(func(s procfs.TCPSocket) bool {
		found = s.CarriesData() && (watched[s.LocalPort] || watched[s.RemotePort])
		return !found
	})
	if err := c.objs.SetPreexisting(found || err != nil); err != nil {
		return fmt.Errorf("genai capture: %w", err)
	}
	return nil
}

// read drains the ring buffer: it wakes every poll interval (backing off
// to a second while nothing comes, see ringpoll), or sooner when the BPF
// side finds the buffer a quarter full, and evicts idle connections and
// recounts Go programs on the way.
func (c *Capture) read() {
	defer c.wg.Done()
	var (
		rec  ringbuf.Record
		r    httpbpf.Record
		next time.Time
		pace = ringpoll.New(c.cfg.capture.pollInterval)
	)
	for {
		c.rb.SetDeadline(time.Now().Add(pace.Wait()))
		n := 0
		for ; ; n++ {
			err := c.rb.ReadInto(&rec)
			if errors.Is(err, ringbuf.ErrClosed) {
				return
			}
			if err != nil {
				break // the deadline: this batch is done
			}
			c.mu.Lock()
			if httpbpf.Decode(rec.RawSample, &r) == nil {
				c.conns.handle(&r)
			} else {
				c.conns.malformedRecords++
			}
			c.mu.Unlock()
		}
		pace.Next(n)
		if now := time.Now(); now.After(next) {
			c.housekeep(now)
			next = now.Add(housekeeping)
		}
	}
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
	defer c.mu.Unlock()
	c.conns.evictIdle(now)
	c.goProcs = goes
}

// CaptureStatus says what the capture is attached to.
type CaptureStatus struct {
	Attachments []uprobe.Attachment
	Rejections  []uprobe.Rejection
	// PlaintextPorts are the TCP ports whose plaintext HTTP is read.
	PlaintextPorts []uint16
}

// Status lists the OpenSSL files the probes are attached to, the files
// that looked like OpenSSL but could not be probed, with why, and the
// plaintext ports.
func (c *Capture) Status() CaptureStatus {
	st := CaptureStatus{Rejections: c.tracer.Rejections(), PlaintextPorts: c.cfg.capture.ports}
	for _, a := range c.tracer.Attachments() {
		if a.Target == TargetOpenSSL { // not the skeleton's own probe on the loader
			st.Attachments = append(st.Attachments, a)
		}
	}
	return st
}

// Close detaches the probes, stops the reader and frees the kernel
// objects. Calls after the first return nil.
func (c *Capture) Close() error {
	var err error
	c.closeOnce.Do(func() {
		errs := []error{c.reg.Unregister(), c.tracer.Close()}
		for _, l := range c.sys {
			errs = append(errs, l.Close())
		}
		errs = append(errs, c.rb.Close())
		c.wg.Wait()
		errs = append(errs, c.objs.Close())
		err = errors.Join(errs...)
	})
	return err
}

// closeKernel undoes a start that failed part way.
func (c *Capture) closeKernel() {
	if c.tracer != nil {
		c.tracer.Close()
	}
	for _, l := range c.sys {
		l.Close()
	}
	if c.rb != nil {
		c.rb.Close()
	}
	c.objs.Close()
}
