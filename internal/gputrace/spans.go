package gputrace

import (
	"context"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/xpuscope/xpuscope/internal/gputracebpf"
	"github.com/xpuscope/xpuscope/semconv"
)

// tokenBucket caps a process's span rate.
type tokenBucket struct {
	perNs, burst float64 // tokens a nanosecond, at most
	tokens       float64
	last         uint64 // ktime of the last refill
}

// newTokenBucket returns a bucket of rate tokens a second, burst at most.
func newTokenBucket(rate, burst float64) tokenBucket {
	return tokenBucket{perNs: rate / 1e9, burst: burst}
}

// take reports whether a span may be emitted at ktime now. It runs for
// every launch: the rate is kept per nanosecond, so that a refill is a
// multiplication, not a division.
func (b *tokenBucket) take(now uint64) bool {
	if b.perNs <= 0 {
		return false
	}
	if b.last == 0 {
		b.tokens, b.last = b.burst, now
	} else if now > b.last {
		b.tokens = min(b.burst, b.tokens+float64(now-b.last)*b.perNs)
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// spanner emits the sampled spans.
type spanner struct {
	tracer trace.Tracer
	// wall converts a ktime (CLOCK_MONOTONIC ns) to wall-clock time.
	wall       func(ktime uint64) time.Time
	suppressed int64
}

func (s *spanner) allow(p *proc, e *gputracebpf.Event) bool {
	if p.spans.take(e.TS) {
		return true
	}
	s.suppressed++
	return false
}

// emit emits one span of p's, a child of p's parent span where the
// resolver gave one. It names the event's process: the fold's spans are
// its processes'.
func (s *spanner) emit(ctx context.Context, p *proc, e *gputracebpf.Event, name string, start uint64, kvs ...attribute.KeyValue) {
	// The resolver's attributes first: the Source's own win over any they
	// repeat.
	base := append(slices.Clip(p.pod),
		semconv.ProcessPID.Int(int(e.PID)),
		semconv.ProcessExecutableName.String(p.exe),
		semconv.CUDADevice.Int(int(e.Device)),
		semconv.CUDAAPIName.String(e.API.String()),
	)
	if p.parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, p.parent)
	}
	_, sp := s.tracer.Start(ctx, name,
		trace.WithTimestamp(s.wall(start)),
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(append(base, kvs...)...))
	sp.End(trace.WithTimestamp(s.wall(e.TS)))
}

func (s *spanner) launch(ctx context.Context, p *proc, e *gputracebpf.Event, kernel string) {
	if !s.allow(p, e) {
		return
	}
	g, b := e.Grid(), e.Block()
	s.emit(ctx, p, e, semconv.SpanCUDAKernelLaunch, e.TS,
		semconv.CUDAKernelName.String(kernel),
		semconv.CUDAGridX.Int64(int64(g[0])), semconv.CUDAGridY.Int64(int64(g[1])), semconv.CUDAGridZ.Int64(int64(g[2])),
		semconv.CUDABlockX.Int64(int64(b[0])), semconv.CUDABlockY.Int64(int64(b[1])), semconv.CUDABlockZ.Int64(int64(b[2])),
		semconv.CUDASharedMemory.Int64(int64(e.SharedMem())),
		semconv.CUDAStream.String(hex(e.Stream())))
}

// graph emits a graph launch's span, with the number of kernels it
// replays (kernels < 0: not known, and left off).
func (s *spanner) graph(ctx context.Context, p *proc, e *gputracebpf.Event, kernels int) {
	if !s.allow(p, e) {
		return
	}
	if kernels < 0 {
		s.emit(ctx, p, e, semconv.SpanCUDAGraphLaunch, e.TS, semconv.CUDAStream.String(hex(e.Stream())))
		return
	}
	s.emit(ctx, p, e, semconv.SpanCUDAGraphLaunch, e.TS, semconv.CUDAStream.String(hex(e.Stream())),
		semconv.CUDAGraphKernels.Int(kernels))
}

func (s *spanner) memcpy(ctx context.Context, p *proc, e *gputracebpf.Event, kind string) {
	if s.allow(p, e) {
		s.emit(ctx, p, e, semconv.SpanCUDAMemcpy, e.TS,
			semconv.CUDAMemcpyKind.String(kind), semconv.CUDAMemcpyBytes.Int64(int64(e.Bytes())), semconv.CUDAStream.String(hex(e.Stream())))
	}
}

func (s *spanner) memset(ctx context.Context, p *proc, e *gputracebpf.Event) {
	if s.allow(p, e) {
		s.emit(ctx, p, e, semconv.SpanCUDAMemset, e.TS,
			semconv.CUDAMemcpyBytes.Int64(int64(e.Bytes())), semconv.CUDAStream.String(hex(e.Stream())))
	}
}

func (s *spanner) malloc(ctx context.Context, p *proc, e *gputracebpf.Event) {
	if s.allow(p, e) {
		s.emit(ctx, p, e, semconv.SpanCUDAMalloc, e.TS-min(e.TS, e.Duration()),
			semconv.CUDAMemoryBytes.Int64(int64(e.Bytes())), semconv.CUDAMemoryAddr.String(hex(e.Pointer())), semconv.CUDAErrorCode.Int(int(e.Ret)))
	}
}

func (s *spanner) free(ctx context.Context, p *proc, e *gputracebpf.Event) {
	if s.allow(p, e) {
		s.emit(ctx, p, e, semconv.SpanCUDAFree, e.TS, semconv.CUDAMemoryAddr.String(hex(e.Pointer())))
	}
}

func (s *spanner) sync(ctx context.Context, p *proc, e *gputracebpf.Event) {
	if s.allow(p, e) {
		start := e.TS - min(e.TS, e.Duration())
		s.emit(ctx, p, e, semconv.SpanCUDASync, start,
			semconv.CUDAStream.String(hex(e.Waited())), semconv.CUDAErrorCode.Int(int(e.Ret)))
	}
}
