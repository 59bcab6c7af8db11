package genai

import (
	"context"
	"debug/elf"
	"io"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/xpuscope/xpuscope/genai/internal/httpframe"
	"github.com/xpuscope/xpuscope/internal/httpbpf"
	"github.com/xpuscope/xpuscope/internal/meterx"
	"github.com/xpuscope/xpuscope/internal/procfs"
	"github.com/xpuscope/xpuscope/semconv"
)

// exchange delivers a client's framed exchange, made by process p: an LLM
// API call is parsed (its response was, as it arrived, when live is set),
// emitted (with p's pod, and as a child of p's parent span, where the
// resolver gives them) and handed to the exchange handler.
func (c *Capture) exchange(x *Exchange, _ *httpframe.Exchange, p *capProc, live *liveCall) outcome {
	ep, call, o := readCall(x, c.cfg.hosts, live)
	if o != outcomeEmitted {
		return o
	}
	ctx, pod := c.process(context.Background(), p)
	pod = c.retransmitted(pod, x, ep, p)
	c.emitter.emit(ctx, x, &call, ep, pod)
	if h := c.cfg.onExchange; h != nil {
		h(x, &call, ep)
	}
	return outcomeEmitted
}

// serve records a request that process p served, seen from its end, if it
// is an LLM API call: its SERVER span is a child of the request's
// traceparent when it carries one, else of p's parent span.
func (c *Capture) serve(x *Exchange, p *capProc, live *liveCall) outcome {
	ep, call, o := readCall(x, c.cfg.hosts, live)
	if o != outcomeEmitted {
		return o
	}
	ctx, pod := c.process(context.Background(), p)
	pod = c.retransmitted(pod, x, ep, p)
	if sc := trace.SpanContextFromContext(traceContext.Extract(context.Background(), propagation.HeaderCarrier(x.RequestHeader))); sc.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	var skip func(metric string) bool
	if f := c.cfg.elsewhere; f != nil {
		skip = func(metric string) bool { return f(int(p.pid), metric) }
	}
	c.emitter.emitServer(ctx, x, &call, ep, pod, skip)
	return outcomeEmitted
}

// retransmitted returns the span-only attributes attrs with the count of
// the segments x's connection retransmitted during x, where it did
// (WithRetransmits).
func (c *Capture) retransmitted(attrs []attribute.KeyValue, x *Exchange, ep Endpoint, p *capProc) []attribute.KeyValue {
	f := c.cfg.retransmits
	if f == nil || x.sock == 0 {
		return attrs
	}
	n := f(int(p.pid), x.sock, ep.ServerAddress, x.Start, x.End)
	if n <= 0 {
		return attrs
	}
	return append(attrs[:len(attrs):len(attrs)], semconv.XpuscopeTCPCallRetransmits.Int(n))
}

// traceContext reads a request's W3C traceparent.
var traceContext = propagation.TraceContext{}

// process returns ctx with p's parent span, and p's pod, where the
// resolver gives them.
func (c *Capture) process(ctx context.Context, p *capProc) (context.Context, []attribute.KeyValue) {
	r := c.cfg.resolver
	if r == nil {
		return ctx, nil
	}
	p.resolve(r)
	if p.parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, p.parent)
	}
	return ctx, p.attrs
}

// captureInstruments are the capture's self-metrics.
type captureInstruments struct {
	exchanges, abandoned, dropped, skipped metric.Int64ObservableCounter
	ringErrors, attachedLate               metric.Int64ObservableCounter
	connections, goProcs, attached         metric.Int64ObservableUpDownCounter
	waiting                                metric.Int64ObservableUpDownCounter

	outcome [numOutcomes]meterx.Attrs
	reason  map[string]meterx.Attrs
}

func (in *captureInstruments) create(m metric.Meter) error {
	b := meterx.Builder{Meter: m}
	in.exchanges = b.Counter(semconv.XpuscopeGenAICaptureExchanges)
	in.abandoned = b.Counter(semconv.XpuscopeGenAICaptureAbandoned)
	in.dropped = b.Counter(semconv.XpuscopeGenAICaptureDropped)
	in.skipped = b.Counter(semconv.XpuscopeGenAICaptureSkippedConnections)
	in.ringErrors = b.Counter(semconv.XpuscopeBPFRingErrors)
	in.connections = b.UpDownCounter(semconv.XpuscopeGenAICaptureConnections)
	in.goProcs = b.UpDownCounter(semconv.XpuscopeGenAICaptureGoProcesses)
	in.attached = b.UpDownCounter(semconv.XpuscopeGenAICaptureAttachedFiles)
	in.attachedLate = b.Counter(semconv.XpuscopeUprobeAttachedLate)
	in.waiting = b.UpDownCounter(semconv.XpuscopeGenAIClientWaitingRequests)
	for o, v := range [numOutcomes]string{
		outcomeEmitted: semconv.CaptureOutcomeEmitted, outcomeNotLLM: semconv.CaptureOutcomeNotLLM,
		outcomeServerSide: semconv.CaptureOutcomeServerSide, outcomeParseError: semconv.CaptureOutcomeParseError,
		outcomeGRPC: semconv.CaptureOutcomeGRPC,
	} {
		in.outcome[o] = meterx.NewAttrs(semconv.XpuscopeGenAIOutcome.String(v))
	}
	in.reason = map[string]meterx.Attrs{}
	for _, r := range []string{semconv.CaptureReasonGap, semconv.CaptureReasonClose, semconv.CaptureReasonMalformed,
		semconv.CaptureReasonOverflow, semconv.CaptureReasonRefused, semconv.CaptureReasonIdle, semconv.CaptureSkipNotHTTP,
		semconv.CaptureSkipSwitched, semconv.CaptureSkipUndecryptable, semconv.CaptureSkipNotSocket} {
		in.reason[r] = meterx.NewAttrs(semconv.XpuscopeGenAIReason.String(r))
	}
	return b.Err()
}

func (in *captureInstruments) observables() []metric.Observable {
	return []metric.Observable{in.exchanges, in.abandoned, in.dropped, in.skipped, in.ringErrors, in.attachedLate, in.connections,
		in.goProcs, in.attached, in.waiting}
}

// observe reports the self-metrics; it reads the kernel's counters, then
// holds the lock only to copy.
func (c *Capture) observe(in *captureInstruments, o metric.Observer) error {
	counters, cerr := c.objs.Counters()
	attached := int64(len(c.Status().Attachments))
	c.mu.Lock()
	t := c.conns
	outcomes, f := t.outcomes, t.frames
	conns, evicted, undecryptable, goProcs := int64(len(t.conns)), t.evicted, t.undecryptable, c.goProcs
	unmatched := t.unmatchedStates
	waiting := c.waiting()
	c.mu.Unlock()

	for i, n := range outcomes {
		o.ObserveInt64(in.exchanges, n, in.outcome[i].Observe...)
	}
	for r, n := range map[string]int64{
		semconv.CaptureReasonGap: f.AbandonedGap, semconv.CaptureReasonClose: f.AbandonedClose,
		semconv.CaptureReasonMalformed: f.AbandonedMalformed, semconv.CaptureReasonOverflow: f.AbandonedOverflow,
		semconv.CaptureReasonRefused: f.AbandonedRefused, semconv.CaptureReasonIdle: evicted,
	} {
		o.ObserveInt64(in.abandoned, n, in.reason[r].Observe...)
	}
	for r, n := range map[string]int64{
		semconv.CaptureSkipNotHTTP: f.NonHTTP, semconv.CaptureSkipSwitched: f.Switched,
		semconv.CaptureSkipUndecryptable: undecryptable,
	} {
		o.ObserveInt64(in.skipped, n, in.reason[r].Observe...)
	}
	if cerr == nil {
		o.ObserveInt64(in.dropped, int64(counters[httpbpf.CounterDrops]))
		o.ObserveInt64(in.skipped, int64(counters[httpbpf.CounterNotSocket])+unmatched, in.reason[semconv.CaptureSkipNotSocket].Observe...)
	}
	c.kernel.Ring.Observe(o, in.ringErrors)
	c.tracer.ObserveLate(o, in.attachedLate)
	o.ObserveInt64(in.connections, conns)
	o.ObserveInt64(in.goProcs, goProcs)
	o.ObserveInt64(in.attached, attached)
	for k, n := range waiting {
		o.ObserveInt64(in.waiting, n, metric.WithAttributes(k.attrs()...))
	}
	return nil
}

// waitingKey is the attributes of a waiting call.
type waitingKey struct {
	operation, provider, model, server string
	port                               int
}

func (k waitingKey) attrs() []attribute.KeyValue {
	kv := []attribute.KeyValue{semconv.GenAIOperationName.String(k.operation), semconv.GenAIProviderName.String(k.provider)}
	if k.model != "" {
		kv = append(kv, semconv.GenAIRequestModel.String(k.model))
	}
	if k.server != "" {
		kv = append(kv, semconv.ServerAddress.String(k.server))
	}
	if k.port != 0 {
		kv = append(kv, semconv.ServerPort.Int(k.port))
	}
	return kv
}

// maxWaitKeys bounds the attribute sets of waiting calls reported at 0
// when no call waits.
const maxWaitKeys = 256

// waiting counts the streaming LLM API calls whose request the traced
// clients sent in full and whose response has not brought a body byte
// yet, by the attributes of the GenAI metrics (request model and server
// under the same caps). It reads each such request anew, as the exchange
// path would. The first maxWaitKeys attribute sets seen are reported
// from then on, at 0 when no call waits: a series that vanished instead
// would leave an average over time (the queue alert's) to the moments
// calls waited. The caller holds c.mu.
func (c *Capture) waiting() map[waitingKey]int64 {
	out := map[waitingKey]int64{}
	var x Exchange
	for _, cc := range c.conns.conns {
		cc.frame.Waiting(func(fx *httpframe.Exchange) {
			if fx.Role != httpframe.Client {
				return // the server's end: its clients' capture counts it
			}
			toExchange(fx, c.conns.wall, &x)
			ep, ok := Detect(&x, c.cfg.hosts)
			if !ok {
				return
			}
			call, err := Parse(&x, ep)
			if err != nil || !call.Stream {
				return
			}
			out[waitingKey{operation: ep.Operation, provider: ep.Provider,
				model: c.emitter.models.value(call.RequestModel), server: c.emitter.servers.value(ep.ServerAddress),
				port: ep.ServerPort}]++
		})
	}
	for k := range out {
		if len(c.waitKeys) < maxWaitKeys {
			c.waitKeys[k] = true
		}
	}
	for k := range c.waitKeys {
		if _, ok := out[k]; !ok {
			out[k] = 0
		}
	}
	return out
}

// goCounter counts the running Go programs. It remembers what it found
// per pid, and forgets exited ones, so that each executable is read once
// per process.
type goCounter struct {
	procfs procfs.FS
	seen   map[int]bool // pid → a Go program
}

// maxGoPIDs bounds the pids remembered.
const maxGoPIDs = 1 << 16

func newGoCounter(fs procfs.FS) *goCounter {
	return &goCounter{procfs: fs, seen: map[int]bool{}}
}

// count rescans the processes and returns how many run a Go program.
func (g *goCounter) count() int64 {
	pids, err := g.procfs.PIDs()
	if err != nil {
		return 0
	}
	alive := make(map[int]bool, len(pids))
	var n int64
	for _, pid := range pids {
		isGo, known := g.seen[pid]
		if !known {
			isGo = goExecutable(g.procfs.Proc(pid))
			if len(g.seen) < maxGoPIDs {
				g.seen[pid] = isGo
			}
		}
		alive[pid] = true
		if isGo {
			n++
		}
	}
	for pid := range g.seen {
		if !alive[pid] {
			delete(g.seen, pid)
		}
	}
	return n
}

// goExecutable reports whether p's executable is an ELF built by Go: it
// has the .go.buildinfo section the Go linker writes (stripped binaries
// keep it).
func goExecutable(p procfs.Proc) bool {
	f, err := p.OpenExe()
	if err != nil {
		return false
	}
	defer f.Close()
	return isGoELF(f)
}

// isGoELF reports whether r is an ELF file with a .go.buildinfo section.
func isGoELF(r io.ReaderAt) bool {
	f, err := elf.NewFile(r)
	if err != nil {
		return false
	}
	return f.Section(".go.buildinfo") != nil
}
