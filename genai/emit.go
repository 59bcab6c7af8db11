package genai

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/meterx"
	"github.com/xpuscope/xpuscope/semconv"
)

// ScopeName is the instrumentation scope of the emitter's meter and tracer.
const ScopeName = "github.com/xpuscope/xpuscope/genai"

// DefaultMaxModels caps the distinct model names, and the distinct server
// addresses, on metrics; later ones are reported as semconv.Other. Spans
// carry the real values.
const DefaultMaxModels = 200

type config struct {
	meterProvider  metric.MeterProvider
	tracerProvider trace.TracerProvider
	rates          Rates
	maxModels      int
	maxContent     int
}

func newConfig() config { return config{maxModels: DefaultMaxModels} }

// check says what is wrong with c, and fills in the providers' defaults.
func (c *config) check() error {
	if c.maxModels < 1 {
		return fmt.Errorf("genai: WithMaxModels: the cap must be at least 1, got %d", c.maxModels)
	}
	if c.maxContent < 0 {
		return fmt.Errorf("genai: WithContentCapture: content capture cap must be 0 (off) or a size in bytes, got %d", c.maxContent)
	}
	if c.meterProvider == nil {
		c.meterProvider = otel.GetMeterProvider()
	}
	if c.tracerProvider == nil {
		c.tracerProvider = otel.GetTracerProvider()
	}
	return nil
}

// Option configures an Emitter, or a Capture's emitter: every Option is a
// CaptureOption too. An option given a value out of its range makes the
// constructor fail; one left out keeps its default.
type Option interface {
	CaptureOption
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config)               { f(c) }
func (f optionFunc) applyCapture(c *captureConfig) { f(&c.config) }

// WithMeterProvider sets the MeterProvider; the default is
// otel.GetMeterProvider().
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) { c.meterProvider = mp })
}

// WithTracerProvider sets the TracerProvider; the default is
// otel.GetTracerProvider().
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) { c.tracerProvider = tp })
}

// WithRates sets the prices cost is computed from. Without them no cost is
// reported.
func WithRates(r Rates) Option {
	return optionFunc(func(c *config) { c.rates = r })
}

// WithMaxModels caps the distinct model names, and the distinct server
// addresses, on metrics (default DefaultMaxModels).
func WithMaxModels(n int) Option {
	return optionFunc(func(c *config) { c.maxModels = n })
}

// WithContentCapture turns on content capture: each span gets the
// call's prompt and completion text as gen_ai.system_instructions,
// gen_ai.input.messages and gen_ai.output.messages (see ExtractContent),
// each at most maxBytes of JSON, and xpuscope.genai.content.truncated
// names those that were cut. 0, the default, is off: no text is read or
// kept. Content goes on spans only, never on metrics. A negative cap is
// an error.
func WithContentCapture(maxBytes int) Option {
	return optionFunc(func(c *config) { c.maxContent = maxBytes })
}

// Emitter turns parsed calls into a span and GenAI client metrics. It is
// safe for concurrent use.
type Emitter struct {
	cfg    config
	tracer trace.Tracer

	tokens, duration, firstChunk, perChunk metric.Float64Histogram
	cost                                   metric.Float64Counter
	// The serving end's (emitServer).
	serverDuration, serverFirstToken, serverPerToken metric.Float64Histogram

	// Label values admitted to metric attributes: the models and server
	// addresses (WithMaxModels), and error types, which a provider's
	// error names (maxErrorTypes).
	models, servers, errorTypes capped

	setsMu  sync.Mutex
	sets    map[metricKey]*callSets
	maxSets int // maxMetricSets; a test's own

	// held, when set, keeps the recorded spans until endHeld ends them
	// (the capture's reader); nil ends each at once.
	held *heldSpans
}

// heldSpans are spans recorded in full (attributes, status, times) but not
// yet ended. The SDK's batching span processor hands each ended span to a
// goroutine of its own, which it wakes if it sleeps: a reader that ends
// a span a call pays that wake-up a call: 8 µs of CPU a call alone
// (BenchmarkCaptureReader), 10-20 µs beside the traced workload. Ended
// together, a batch's spans cost one.
// Nothing else changes: a span's end time is its call's, not when it is
// ended, and the metrics are recorded as the call is read.
type heldSpans struct {
	mu    sync.Mutex
	spans []heldSpan
}

type heldSpan struct {
	span trace.Span
	end  time.Time
}

// maxHeldSpans is the most spans held: at it they are ended then, so that
// a batch of records that lasts (a flood keeps a reader's batch going)
// delays none long and memory stays bounded.
const maxHeldSpans = 64

// hold keeps sp, to be ended at end; it ends the held spans when they
// reach maxHeldSpans.
func (h *heldSpans) hold(sp trace.Span, end time.Time) {
	h.mu.Lock()
	h.spans = append(h.spans, heldSpan{sp, end})
	full := len(h.spans) >= maxHeldSpans
	h.mu.Unlock()
	if full {
		h.end()
	}
}

// end ends the held spans, each at its call's end.
func (h *heldSpans) end() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.spans {
		s.span.End(trace.WithTimestamp(s.end))
	}
	clear(h.spans)
	h.spans = h.spans[:0]
}

// holdSpans has e keep its spans until endHeld, instead of ending each as
// it is recorded.
func (e *Emitter) holdSpans() { e.held = &heldSpans{spans: make([]heldSpan, 0, maxHeldSpans)} }

// endHeld ends the spans e holds, if it holds any.
func (e *Emitter) endHeld() {
	if e.held != nil {
		e.held.end()
	}
}

// capped admits up to max distinct values; later ones read semconv.Other.
type capped struct {
	mu   sync.Mutex
	max  int
	seen map[string]bool
}

func (c *capped) value(v string) string {
	if v == "" {
		return v
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen[v] {
		return v
	}
	if len(c.seen) >= c.max {
		return semconv.Other
	}
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	c.seen[v] = true
	return v
}

// NewEmitter creates the instruments. A bad option is an error.
func NewEmitter(opts ...Option) (*Emitter, error) {
	c := newConfig()
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	return newEmitter(c)
}

// newEmitter creates the instruments of c, checked.
func newEmitter(c config) (*Emitter, error) {
	e := &Emitter{cfg: c, tracer: c.tracerProvider.Tracer(ScopeName, trace.WithInstrumentationVersion(xpuscope.Version)),
		models: capped{max: c.maxModels}, servers: capped{max: c.maxModels}, errorTypes: capped{max: maxErrorTypes},
		maxSets: maxMetricSets}
	b := meterx.Builder{Meter: c.meterProvider.Meter(ScopeName, metric.WithInstrumentationVersion(xpuscope.Version))}
	e.tokens = b.Histogram(semconv.GenAIClientTokenUsage)
	e.duration = b.Histogram(semconv.GenAIClientOperationDuration)
	e.firstChunk = b.Histogram(semconv.GenAIClientOperationTimeToFirstChunk)
	e.perChunk = b.Histogram(semconv.GenAIClientOperationTimePerOutputChunk)
	e.serverDuration = b.Histogram(semconv.GenAIServerRequestDuration)
	e.serverFirstToken = b.Histogram(semconv.GenAIServerTimeToFirstToken)
	e.serverPerToken = b.Histogram(semconv.GenAIServerTimePerOutputToken)
	e.cost = b.AddCounter(semconv.XpuscopeGenAICost)
	if err := b.Err(); err != nil {
		return nil, fmt.Errorf("genai: %w", err)
	}
	return e, nil
}

// errorType is the call's error.type: the provider's error, else the HTTP
// status of a failed response; "" on success.
func errorType(x *Exchange, c *Call) string {
	if c.ErrorType != "" {
		return c.ErrorType
	}
	if x.Status >= 400 {
		return strconv.Itoa(x.Status)
	}
	return ""
}

// Emit records one call: a CLIENT span from the exchange's start to its
// end, and the GenAI client metrics, recorded in the span's context so
// that exemplars point at it. It reads nothing of the exchange but its
// host, status and times; with content capture on, the span's content
// attributes come from its bodies too.
func (e *Emitter) Emit(ctx context.Context, x *Exchange, c *Call, ep Endpoint) {
	e.emit(ctx, x, c, ep, nil)
}

// emit is Emit with the attributes of the calling process's container and
// pod, for the span only: on the metrics, each pod would multiply every
// histogram's series.
func (e *Emitter) emit(ctx context.Context, x *Exchange, c *Call, ep Endpoint, pod []attribute.KeyValue) {
	errType := errorType(x, c)
	span := e.spanAttrs(x, c, ep, pod, errType)
	usd, priced := e.cfg.rates.Cost(c.Provider, firstNonEmpty(c.ResponseModel, c.RequestModel), c.Usage)
	if priced {
		span = append(span, semconv.XpuscopeGenAICostUSD.Float64(usd))
	}
	if e.cfg.maxContent > 0 {
		span = append(span, contentAttrs(ExtractContent(x, c, ep, e.cfg.maxContent))...)
	}
	ctx = e.span(ctx, x, c, trace.SpanKindClient, span, errType)

	m := e.metricSets(c, ep, errType)
	e.duration.Record(ctx, x.End.Sub(x.Start).Seconds(), m.duration...)
	if n := c.Usage.InputTokens; n >= 0 {
		e.tokens.Record(ctx, float64(n), m.input...)
	}
	if n := c.Usage.OutputTokens; n >= 0 {
		e.tokens.Record(ctx, float64(n), m.output...)
	}
	if c.Stream && c.TimeToFirstChunk >= 0 {
		e.firstChunk.Record(ctx, c.TimeToFirstChunk.Seconds(), m.base...)
	}
	if c.Stream && c.TimePerChunk >= 0 {
		e.perChunk.Record(ctx, c.TimePerChunk.Seconds(), m.base...)
	}
	if priced {
		e.cost.Add(ctx, usd, m.baseAdd...)
	}
}

// emitServer records one request a process on this node served, x seen
// from the server's end: a SERVER span from its first byte read to the
// last byte written, with the serving process's pod, and the GenAI server
// metrics, but those skip says another Source reports for the process
// (nil skips none). The time to the first token runs from the request
// read in full (x.RequestEnd) to the first chunk with output; the time
// per output token from there to the last byte, over the output tokens
// less one. Both only for a successful streamed response. No content is
// put on it.
func (e *Emitter) emitServer(ctx context.Context, x *Exchange, c *Call, ep Endpoint, pod []attribute.KeyValue, skip func(metric string) bool) {
	errType := errorType(x, c)
	ctx = e.span(ctx, x, c, trace.SpanKindServer, e.spanAttrs(x, c, ep, pod, errType), errType)

	keep := func(d semconv.Metric) bool { return skip == nil || !skip(d.Name) }
	m := e.metricSets(c, ep, errType)
	if keep(semconv.GenAIServerRequestDuration) {
		e.serverDuration.Record(ctx, x.End.Sub(x.Start).Seconds(), m.duration...)
	}
	if errType != "" || !c.Stream || c.TimeToFirstChunk < 0 || x.RequestEnd.IsZero() {
		return
	}
	first := x.Start.Add(c.TimeToFirstChunk)
	if keep(semconv.GenAIServerTimeToFirstToken) {
		e.serverFirstToken.Record(ctx, max(0, first.Sub(x.RequestEnd)).Seconds(), m.base...)
	}
	if n := c.Usage.OutputTokens; n > 1 && keep(semconv.GenAIServerTimePerOutputToken) {
		e.serverPerToken.Record(ctx, max(0, x.End.Sub(first)).Seconds()/float64(n-1), m.base...)
	}
}

// metricKey is what a call's metric attributes are made of, the server
// address and models as capped admits them.
type metricKey struct {
	operation, provider, server, requestModel, responseModel, errType string
	port                                                              int
}

// callSets are the measurement options of the calls of one metricKey:
// base (no error.type), duration (with it when the call failed), and
// the token counts' input and output (with gen_ai.token.type). Each is
// a slice of one, passed on as is: a lone option passed to Record's
// variadic parameter is a slice made at each call.
type callSets struct {
	base, duration, input, output []metric.RecordOption
	baseAdd                       []metric.AddOption // the cost counter's
}

// maxErrorTypes caps the distinct error.type values on metrics; later
// ones read semconv.Other. Spans carry the real value. A provider's error
// type is a word of the wire, so a misbehaving server could otherwise
// make a series of every message.
const maxErrorTypes = 64

// maxErrorTypeLen clips an error.type on metrics: the conventions' values
// and the providers' are short words.
const maxErrorTypeLen = 64

func clipErrorType(s string) string {
	if len(s) > maxErrorTypeLen {
		return s[:maxErrorTypeLen]
	}
	return s
}

// maxMetricSets bounds the Emitter's kept callSets. The caps bound the
// keys' values, not their combinations; past the bound the kept sets
// start over.
const maxMetricSets = 4096

// metricSets returns the call's measurement options. Each attribute set
// is made (sorted, deduplicated) once per distinct metricKey and kept: the
// metrics of one call share four, and a call like the one before makes
// none.
func (e *Emitter) metricSets(c *Call, ep Endpoint, errType string) *callSets {
	k := metricKey{operation: c.Operation, provider: c.Provider, server: e.servers.value(ep.ServerAddress),
		requestModel: e.models.value(c.RequestModel), responseModel: e.models.value(c.ResponseModel),
		errType: e.errorTypes.value(clipErrorType(errType)), port: ep.ServerPort}
	e.setsMu.Lock()
	defer e.setsMu.Unlock()
	if m := e.sets[k]; m != nil {
		return m
	}
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationName.String(k.operation),
		semconv.GenAIProviderName.String(k.provider),
	}
	if k.port != 0 {
		attrs = append(attrs, semconv.ServerPort.Int(k.port))
	}
	for _, a := range [...]struct {
		key   attribute.Key
		value string
	}{{semconv.ServerAddress, k.server}, {semconv.GenAIRequestModel, k.requestModel}, {semconv.GenAIResponseModel, k.responseModel}} {
		if a.value != "" {
			attrs = append(attrs, a.key.String(a.value))
		}
	}
	with := func(kv attribute.KeyValue) []metric.RecordOption {
		return []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(append(attrs[:len(attrs):len(attrs)], kv)...))}
	}
	base := metric.WithAttributeSet(attribute.NewSet(attrs...))
	m := &callSets{base: []metric.RecordOption{base}, baseAdd: []metric.AddOption{base},
		input: with(semconv.GenAITokenType.String(semconv.GenAITokenTypeInput)), output: with(semconv.GenAITokenType.String(semconv.GenAITokenTypeOutput))}
	m.duration = m.base
	if k.errType != "" {
		m.duration = with(semconv.ErrorType.String(k.errType))
	}
	if len(e.sets) >= e.maxSets || e.sets == nil {
		e.sets = make(map[metricKey]*callSets)
	}
	e.sets[k] = m
	return m
}

// span records the call's span, of kind, from x.Start to x.End, and
// returns its context, in which the metrics are recorded so that
// exemplars point at it.
func (e *Emitter) span(ctx context.Context, x *Exchange, c *Call, kind trace.SpanKind, attrs []attribute.KeyValue, errType string) context.Context {
	ctx, sp := e.tracer.Start(ctx, semconv.GenAISpanName(c.Operation, c.RequestModel),
		trace.WithSpanKind(kind), trace.WithTimestamp(x.Start), trace.WithAttributes(attrs...))
	if errType != "" {
		sp.SetStatus(codes.Error, errType)
	}
	if e.held != nil {
		e.held.hold(sp, x.End)
	} else {
		sp.End(trace.WithTimestamp(x.End))
	}
	return ctx
}

// spanAttrs are a call's span attributes, before cost and content: the
// pod's first, so that the call's own win over any they repeat, and the
// server address and models as they are, not capped as on the metrics.
func (e *Emitter) spanAttrs(x *Exchange, c *Call, ep Endpoint, pod []attribute.KeyValue, errType string) []attribute.KeyValue {
	kv := make([]attribute.KeyValue, 0, len(pod)+maxSpanAttrs)
	kv = append(kv, pod...)
	str := func(k attribute.Key, v string) {
		if v != "" {
			kv = append(kv, k.String(v))
		}
	}
	kv = append(kv, semconv.GenAIOperationName.String(c.Operation), semconv.GenAIProviderName.String(c.Provider))
	if ep.ServerPort != 0 {
		kv = append(kv, semconv.ServerPort.Int(ep.ServerPort))
	}
	str(semconv.ServerAddress, ep.ServerAddress)
	str(semconv.ErrorType, errType)
	str(semconv.GenAIRequestModel, c.RequestModel)
	str(semconv.GenAIResponseModel, c.ResponseModel)
	str(semconv.GenAIResponseID, c.ResponseID)
	str(semconv.OpenAIAPIType, ep.OpenAIAPIType())
	if !math.IsNaN(c.Temperature) {
		kv = append(kv, semconv.GenAIRequestTemperature.Float64(c.Temperature))
	}
	if !math.IsNaN(c.TopP) {
		kv = append(kv, semconv.GenAIRequestTopP.Float64(c.TopP))
	}
	if c.MaxTokens >= 0 {
		kv = append(kv, semconv.GenAIRequestMaxTokens.Int64(c.MaxTokens))
	}
	if c.ChoiceCount >= 0 {
		kv = append(kv, semconv.GenAIRequestChoiceCount.Int64(c.ChoiceCount))
	}
	kv = append(kv, semconv.GenAIRequestStream.Bool(c.Stream))
	if len(c.FinishReasons) > 0 {
		kv = append(kv, semconv.GenAIResponseFinishReasons.StringSlice(c.FinishReasons))
	}
	if c.Stream && c.TimeToFirstChunk >= 0 {
		kv = append(kv, semconv.GenAIResponseTimeToFirstChunk.Float64(c.TimeToFirstChunk.Seconds()))
	}
	for _, u := range []struct {
		k attribute.Key
		v int64
	}{
		{semconv.GenAIUsageInputTokens, c.Usage.InputTokens},
		{semconv.GenAIUsageOutputTokens, c.Usage.OutputTokens},
		{semconv.GenAIUsageCacheReadInputTokens, c.Usage.CacheReadTokens},
		{semconv.GenAIUsageCacheCreationInputTokens, c.Usage.CacheCreationTokens},
		{semconv.GenAIUsageReasoningOutputTokens, c.Usage.ReasoningTokens},
	} {
		if u.v >= 0 {
			kv = append(kv, u.k.Int64(u.v))
		}
	}
	return kv
}

// maxSpanAttrs is room for the attributes spanAttrs makes and emit adds
// (cost, three of content and the list of those cut), so that the span's
// slice is made once.
const maxSpanAttrs = 26

// contentAttrs are a call's content attributes: those that are not
// empty, and the list of those that were cut.
func contentAttrs(ct Content) []attribute.KeyValue {
	var kv []attribute.KeyValue
	for _, a := range []struct {
		k attribute.Key
		v string
	}{
		{semconv.GenAISystemInstructions, ct.SystemInstructions},
		{semconv.GenAIInputMessages, ct.InputMessages},
		{semconv.GenAIOutputMessages, ct.OutputMessages},
	} {
		if a.v != "" {
			kv = append(kv, a.k.String(a.v))
		}
	}
	if len(ct.Truncated) > 0 {
		kv = append(kv, semconv.XpuscopeGenAIContentTruncated.StringSlice(ct.Truncated))
	}
	return kv
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
