package gputrace

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/xpuscope/xpuscope/internal/gputracebpf"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/testutil/cudaprog"
	"github.com/xpuscope/xpuscope/podjoin"
	"github.com/xpuscope/xpuscope/semconv"
)

// fakeResolver places processes in pods as the test says, and counts what
// the Source asks.
type fakeResolver struct {
	mu     sync.Mutex
	attrs  map[int][]attribute.KeyValue
	parent map[int]trace.SpanContext
	asked  map[int]int
	forgot []int
}

func (f *fakeResolver) ProcessAttributes(pid int) ([]attribute.KeyValue, trace.SpanContext) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked[pid]++
	return f.attrs[pid], f.parent[pid]
}

func (f *fakeResolver) Forget(pid int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forgot = append(f.forgot, pid)
}

// remoteParent is the span context a TRACEPARENT of
// 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 gives.
func remoteParent(t testing.TB) trace.SpanContext {
	t.Helper()
	tid, err := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	require.NoError(t, err)
	sid, err := trace.SpanIDFromHex("00f067aa0ba902b7")
	require.NoError(t, err)
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
}

// A process's series and spans carry its container and pod, asked for
// once; its spans are children of its parent span; the Source's own
// attributes win over the resolver's; the resolver hears of the exit once.
func TestPodLabelsAndParent(t *testing.T) {
	parent := remoteParent(t)
	r := &fakeResolver{
		attrs: map[int][]attribute.KeyValue{100: {
			semconv.K8sNamespaceName.String("ml"), semconv.K8sPodName.String("train-0"),
			semconv.K8sPodUID.String("e6ad2b47-524d-5472-b6fd-cd5deeb0e561"), semconv.K8sContainerName.String("trainer"),
			semconv.ContainerID.String("c0ffee"), semconv.ServiceName.String("trainer"),
			semconv.ProcessPID.Int(1), // a claim the Source's own attribute overrides
		}},
		parent: map[int]trace.SpanContext{100: parent},
		asked:  map[int]int{},
	}
	h := newHarness(t, WithResolver(r))
	for _, pid := range []uint32{100, 200} {
		h.feed(
			launch(pid, 0x1000, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 0, 1),
			launch(pid, 0x1000, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 0, 2),
			gputracebpf.Event{TS: 3, PID: pid, TID: pid, Kind: gputracebpf.KindMemcpy, API: apiOf("cudaMemcpy"), A: [6]uint64{1, 2, 64, 1}},
			gputracebpf.Event{TS: 9, PID: pid, TID: pid, Kind: gputracebpf.KindSync, API: apiOf("cudaDeviceSynchronize"), A: [6]uint64{0, 5}},
		)
	}
	assert.Equal(t, map[int]int{100: 1, 200: 1}, r.asked, "asked once per process, not per event")

	pts := h.collect(t)
	n := 0
	for _, p := range pts {
		// The histograms carry no pid: they are the executable's in its
		// container.
		switch {
		case p.Get(semconv.ProcessPID) == "100" || !p.Has(semconv.ProcessPID) && p.Get(semconv.ProcessExecutableName) == "train":
			n++
			assert.Equal(t, "train-0", p.Get(semconv.K8sPodName), p.Name)
			assert.Equal(t, "ml", p.Get(semconv.K8sNamespaceName), p.Name)
			assert.Equal(t, "trainer", p.Get(semconv.K8sContainerName), p.Name)
			assert.Equal(t, "c0ffee", p.Get(semconv.ContainerID), p.Name)
			assert.Equal(t, "trainer", p.Get(semconv.ServiceName), p.Name)
		case p.Get(semconv.ProcessPID) == "200" || p.Get(semconv.ProcessExecutableName) == "serve":
			assert.False(t, p.Has(semconv.K8sPodName), "%s: a process the resolver cannot place", p.Name)
		}
	}
	assert.GreaterOrEqual(t, n, 6, "launches, grid, block, shared memory, memcpy, sync, calls")
	assert.Equal(t, 2.0, pts.One(t, semconv.CUDAKernelLaunches.Name, semconv.ProcessPID.Int(100), semconv.K8sPodName.String("train-0")).Value)

	spans := h.spans.GetSpans()
	require.Len(t, spans, 8)
	for _, sp := range spans {
		at := map[attribute.Key]string{}
		for _, kv := range sp.Attributes {
			at[kv.Key] = kv.Value.Emit()
		}
		if at[semconv.ProcessPID] == "100" {
			assert.Equal(t, parent.TraceID(), sp.SpanContext.TraceID(), sp.Name)
			assert.Equal(t, parent, sp.Parent, sp.Name)
			assert.Equal(t, "train-0", at[semconv.K8sPodName], sp.Name)
			assert.Equal(t, "c0ffee", at[semconv.ContainerID], sp.Name)
		} else {
			assert.Equal(t, "200", at[semconv.ProcessPID])
			assert.False(t, sp.Parent.IsValid(), "%s: no TRACEPARENT, a root span", sp.Name)
			assert.NotContains(t, at, semconv.K8sPodName)
		}
	}

	dead := func(uint32) bool { return false }
	h.s.agg.forget(dead, 10, 0)
	assert.ElementsMatch(t, []int{100, 200}, r.forgot, "told at the exit")
	h.s.agg.forget(dead, 10+uint64(maxExitKeep), 0)
	assert.Len(t, r.forgot, 2, "told once")
	assert.Empty(t, h.s.agg.procs)
}

// TestTraceparentEndToEnd: a process started with TRACEPARENT calls the
// real libcudart, and its spans, placed by a real podjoin.Resolver reading
// /proc, are children of that context and carry its OTEL_SERVICE_NAME and
// its own OTEL_RESOURCE_ATTRIBUTES (whose claim to a pod name loses), as
// do its metric series.
func TestTraceparentEndToEnd(t *testing.T) {
	requireRoot(t)
	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	parent := remoteParent(t)
	r, err := podjoin.New(podjoin.WithKubeletSocket(""), podjoin.WithLogRoot(""))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	tr := startTracing(t, WithRescanInterval(time.Hour), WithResolver(r))

	s := cudaprog.RuntimeLaunch
	cmd := exec.Command(cudaprog.Build(t, s.Program), s.Name)
	// The linger library keeps the program alive until the test is done:
	// the resolver reads its /proc/<pid>/environ when the Source first
	// sees it, up to a poll interval after its first call.
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "TRACE") || strings.HasPrefix(kv, "OTEL_")
	}), "LD_PRELOAD="+buildLinger(t), podjoin.EnvTraceparent+"="+traceparent, podjoin.EnvServiceName+"=trainer",
		podjoin.EnvResourceAttributes+"=deployment.environment.name=staging,k8s.pod.name=claimed")
	p := cudaprog.StartCmd(t, cmd)
	tr.waitAttached(t, TargetRuntime, cudaprog.RealCudart(t))
	p.Go()
	waitPrinted(t, p, "DONE")

	want := 0
	for _, n := range expect(t, s.Threads, demangled).spans {
		want += int(n)
	}
	require.Positive(t, want)
	var mine []sdktrace.ReadOnlySpan
	ofProgram := func() bool {
		mine = mine[:0]
		for _, sp := range tr.spans.GetSpans().Snapshots() {
			for _, kv := range sp.Attributes() {
				if kv.Key == semconv.ProcessPID && kv.Value.AsInt64() == int64(p.Pid) {
					mine = append(mine, sp)
				}
			}
		}
		return len(mine) >= want
	}
	require.True(t, poll(10*time.Second, ofProgram), "pid %d: %d spans, want %d", p.Pid, len(mine), want)
	p.Wait()
	for _, sp := range mine {
		assert.Equal(t, parent.TraceID(), sp.SpanContext().TraceID(), sp.Name())
		assert.Equal(t, parent.SpanID(), sp.Parent().SpanID(), sp.Name())
		assert.True(t, sp.Parent().IsRemote(), sp.Name())
		attrs := map[attribute.Key]string{}
		for _, kv := range sp.Attributes() {
			attrs[kv.Key] = kv.Value.Emit()
		}
		assert.Equal(t, "trainer", attrs[semconv.ServiceName], sp.Name())
		assert.Equal(t, "staging", attrs["deployment.environment.name"], sp.Name())
		assert.NotContains(t, attrs, semconv.K8sPodName, "%s: the workload cannot name its pod", sp.Name())
	}
	// The metric callback reads what the reader published after the
	// batch that brought the launches.
	launches := ofPid(tr.waitPoints(t, func(pts testutil.Points) bool {
		return len(ofPid(pts, p.Pid).Find(semconv.CUDAKernelLaunches.Name)) > 0
	}), p.Pid).Find(semconv.CUDAKernelLaunches.Name)
	require.NotEmpty(t, launches)
	for _, pt := range launches {
		assert.Equal(t, "staging", pt.Attrs["deployment.environment.name"])
		assert.Equal(t, "trainer", pt.Get(semconv.ServiceName))
	}
}
