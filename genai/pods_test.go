package genai

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/xpuscope/xpuscope/internal/httpbpf"
	"github.com/xpuscope/xpuscope/internal/procfs/procfstest"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

// fakeResolver places processes in pods as the test says, and counts what
// the capture asks.
type fakeResolver struct {
	attrs  map[int][]attribute.KeyValue
	parent map[int]trace.SpanContext
	asked  map[int]int
	forgot []int
}

func (f *fakeResolver) ProcessAttributes(pid int) ([]attribute.KeyValue, trace.SpanContext) {
	f.asked[pid]++
	return f.attrs[pid], f.parent[pid]
}

func (f *fakeResolver) Forget(pid int) { f.forgot = append(f.forgot, pid) }

// The capture's table fed synthetic records, delivering to a real
// Capture's exchange and emitter: a call's span carries its process's pod
// and is a child of its TRACEPARENT; the metrics carry no pod; the
// resolver is asked once per process and hears of the ones that exit.
func TestCapturePodsAndParent(t *testing.T) {
	tid, err := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	require.NoError(t, err)
	sid, err := trace.SpanIDFromHex("00f067aa0ba902b7")
	require.NoError(t, err)
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
	r := &fakeResolver{
		attrs: map[int][]attribute.KeyValue{1: {
			semconv.K8sNamespaceName.String("ml"), semconv.K8sPodName.String("agent-0"),
			semconv.ContainerID.String("c0ffee"), semconv.ServiceName.String("planner"),
			semconv.GenAIProviderName.String("claimed"), // a claim the call's own attribute overrides
		}},
		parent: map[int]trace.SpanContext{1: parent},
		asked:  map[int]int{},
	}
	procs := procfstest.New(t, procfstest.Process{PID: 1}) // pid 1 lives on; pid 2 exits

	spans := tracetest.NewInMemoryExporter()
	reader := sdkmetric.NewManualReader()
	c := userSpaceCapture(t, WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))),
		WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))),
		WithProcRoot(procs), WithResolver(r))

	seq := map[dirKey]uint32{}
	call := func(pid uint32, fd uint64, dir httpbpf.Dir, data string, ts uint64) {
		k := dirKey{connKey{pid, httpbpf.SourceSocket, fd, 0}, dir}
		seq[k]++
		c.conns.handle(&httpbpf.Record{TS: ts, Conn: fd, PID: pid, Kind: httpbpf.KindData, Source: httpbpf.SourceSocket,
			Dir: dir, Total: uint32(len(data)), Seq: seq[k], Data: []byte(data)})
	}
	exchange := func(pid uint32, fd uint64, ts uint64) {
		call(pid, fd, httpbpf.Write, tRequest, ts)
		call(pid, fd, httpbpf.Read, tResponse, ts+10)
	}
	closeConn := func(pid uint32, fd uint64) {
		k := connKey{pid, httpbpf.SourceSocket, fd, 0}
		c.conns.handle(&httpbpf.Record{Kind: httpbpf.KindClose, Source: httpbpf.SourceSocket, PID: pid, Conn: fd,
			Seq: seq[dirKey{k, httpbpf.Write}], Total: seq[dirKey{k, httpbpf.Read}]})
	}
	exchange(1, 7, 100)
	exchange(1, 7, 200)
	exchange(1, 8, 300) // a second connection of the same process
	exchange(2, 7, 400)
	assert.Equal(t, map[int]int{1: 1, 2: 1}, r.asked, "asked once per process, not per call or connection")

	got := spans.GetSpans()
	require.Len(t, got, 4)
	for i, sp := range got {
		at := attrs(sp)
		assert.Equal(t, "openai", at[semconv.GenAIProviderName].AsString(), "span %d: the call's own attribute wins", i)
		if i < 3 {
			assert.Equal(t, parent, sp.Parent, "span %d", i)
			assert.Equal(t, tid, sp.SpanContext.TraceID(), "span %d", i)
			assert.Equal(t, "agent-0", at[semconv.K8sPodName].AsString(), "span %d", i)
			assert.Equal(t, "ml", at[semconv.K8sNamespaceName].AsString(), "span %d", i)
			assert.Equal(t, "c0ffee", at[semconv.ContainerID].AsString(), "span %d", i)
			assert.Equal(t, "planner", at[semconv.ServiceName].AsString(), "span %d", i)
		} else {
			assert.False(t, sp.Parent.IsValid(), "pid 2 has no TRACEPARENT: a root span")
			assert.NotContains(t, at, semconv.K8sPodName)
		}
	}
	pts := testutil.Collect(t, reader)
	require.NotEmpty(t, pts.Find(semconv.GenAIClientOperationDuration.Name))
	for _, p := range pts {
		for _, k := range []attribute.Key{semconv.K8sPodName, semconv.K8sNamespaceName, semconv.ContainerID, semconv.ServiceName} {
			assert.False(t, p.Has(k), "%s carries %s: pods stay off the GenAI metrics", p.Name, k)
		}
	}

	closeConn(1, 7)
	closeConn(2, 7)
	assert.Equal(t, []int{2}, r.forgot, "pid 2 exited with its last connection")
	closeConn(1, 8)
	assert.Equal(t, []int{2}, r.forgot, "pid 1 closed its connections but lives on")
	assert.Empty(t, c.conns.procs)
}
