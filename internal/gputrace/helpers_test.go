package gputrace

// Helpers of the kernel-tier tests (trace_test.go): a Source wired to an
// SDK reader, an in-memory span exporter and an event recorder, and the
// expectations derived from the cudaprog scenario tables.

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/elfsym"
	"github.com/xpuscope/xpuscope/internal/gputracebpf"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/testutil/cudaprog"
	"github.com/xpuscope/xpuscope/internal/uprobe"
	"github.com/xpuscope/xpuscope/semconv"
)

// requireRoot skips t (fails it in CI) unless it can load BPF programs.
func requireRoot(t testing.TB) {
	t.Helper()
	testutil.Native(t, "the kernel's BPF and uprobes")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "the CUDA tracer needs root (CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN)")
	}
}

// recorder keeps copies of the decoded events of the processes it
// watches, and counts every process's events.
type recorder struct {
	mu     sync.Mutex
	watch  map[uint32]bool
	events map[uint32][]gputracebpf.Event
	counts map[uint32]int
}

func newRecorder() *recorder {
	return &recorder{watch: map[uint32]bool{}, events: map[uint32][]gputracebpf.Event{}, counts: map[uint32]int{}}
}

// hook is the Source's event hook. e.Name points into a reused buffer:
// it is copied.
func (r *recorder) hook(e *gputracebpf.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts[e.PID]++
	if !r.watch[e.PID] {
		return
	}
	c := *e
	c.Name = slices.Clone(e.Name)
	r.events[e.PID] = append(r.events[e.PID], c)
}

// Watch starts keeping the events of pid. Call it before the process
// makes its first traced call (before Proc.Go).
func (r *recorder) Watch(pid int) {
	r.mu.Lock()
	r.watch[uint32(pid)] = true
	r.mu.Unlock()
}

// Events returns the events of pid so far.
func (r *recorder) Events(pid int) []gputracebpf.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events[uint32(pid)])
}

// Counts returns how many events each process produced.
func (r *recorder) Counts() map[uint32]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.counts)
}

// traced is a Source wired to test exporters.
type traced struct {
	*Source
	reader *sdkmetric.ManualReader
	spans  *tracetest.InMemoryExporter
	rec    *recorder
}

// startTracing creates a CUDA Source with a manual metric reader, an
// in-memory span exporter, an event recorder, the ownContainers resolver
// and a process cap of testMaxProcesses (unless opts say otherwise),
// closed with the test.
func startTracing(t *testing.T, opts ...Option) *traced {
	t.Helper()
	return startTracingRuntime(t, CUDA, opts...)
}

// startTracingRuntime is startTracing for the runtime rt.
func startTracingRuntime(t *testing.T, rt Runtime, opts ...Option) *traced {
	t.Helper()
	requireRoot(t)
	tr := &traced{reader: sdkmetric.NewManualReader(), spans: tracetest.NewInMemoryExporter(), rec: newRecorder()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(tr.reader))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tr.spans))
	all := append([]Option{WithMeterProvider(mp), WithTracerProvider(tp), withEventHook(tr.rec.hook),
		WithResolver(ownContainers{}), WithMaxProcesses(testMaxProcesses)}, opts...)
	s, err := New(rt, all...)
	if errors.Is(err, xpuscope.ErrUnavailable) {
		testutil.SkipOrFail(t, "%s unavailable: %v", rt.Name, err)
	}
	require.NoError(t, err)
	tr.Source = s
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return tr
}

func (tr *traced) collect(t testing.TB) testutil.Points { return testutil.Collect(t, tr.reader) }

// poll calls cond every 10ms until it holds or timeout passes, and
// reports whether it held. A plain loop: no goroutines.
func poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sameFile reports whether a is the attachment of target for the file
// at path: by path as the process saw it, or by device and inode.
func sameFile(a uprobe.Attachment, target, path string) bool {
	if a.Target != target {
		return false
	}
	if a.Path == path {
		return true
	}
	var st syscall.Stat_t
	return syscall.Stat(path, &st) == nil && a.Dev == st.Dev && a.Inode == st.Ino
}

// attachment returns the attachment of target to path, if any.
func (tr *traced) attachment(target, path string) (uprobe.Attachment, bool) {
	for _, a := range tr.Status().Attachments {
		if sameFile(a, target, path) {
			return a, true
		}
	}
	return uprobe.Attachment{}, false
}

// waitAttached makes sure the Source probes path as target: the exec and
// loader hooks normally got there already; otherwise a full rescan.
func (tr *traced) waitAttached(t testing.TB, target, path string) uprobe.Attachment {
	t.Helper()
	var a uprobe.Attachment
	found := func() bool {
		var ok bool
		a, ok = tr.attachment(target, path)
		return ok
	}
	if !poll(time.Second, found) {
		require.NoError(t, tr.tracer.Rescan())
		require.True(t, found(), "not attached to %s (%s) after a rescan; status: %+v", path, target, tr.Status())
	}
	require.Empty(t, a.AttachErrors, "attach errors on %s", path)
	return a
}

// waitEvents waits until pid produced n events, then a little longer
// to make sure no more come, and returns them.
func (tr *traced) waitEvents(t testing.TB, pid, n int) []gputracebpf.Event {
	t.Helper()
	if !poll(10*time.Second, func() bool { return len(tr.rec.Events(pid)) >= n }) {
		evs := tr.rec.Events(pid)
		require.Failf(t, "too few events", "pid %d: %d events after 10s, want %d; %s:\n%s", pid, len(evs), n, tr.losses(), dumpEvents(evs))
	}
	time.Sleep(3 * tr.cfg.pollInterval)
	evs := tr.rec.Events(pid)
	require.Len(t, evs, n, "pid %d: %d events, want %d:\n%s", pid, len(evs), n, dumpEvents(evs))
	return evs
}

// waitPoints collects until ok holds on pid's points (the call counts
// come from the kernel once a second), or 5s pass, and returns the last
// collection.
func (tr *traced) waitPoints(t testing.TB, ok func(testutil.Points) bool) testutil.Points {
	t.Helper()
	var pts testutil.Points
	poll(5*time.Second, func() bool {
		pts = tr.collect(t)
		return ok(pts)
	})
	return pts
}

// losses says what the Source counted as lost so far: the BPF counters
// and the ring reader's errors, for a test that misses records.
func (tr *traced) losses() string {
	c, err := tr.objs.Counters()
	if err != nil {
		return fmt.Sprintf("BPF counters: %v", err)
	}
	return fmt.Sprintf("BPF counted %d dropped, %d lost returns; ring %+v", c[gputracebpf.CounterDrops], c[gputracebpf.CounterLostReturns], tr.kernel.Ring.Errors())
}

func dumpEvents(evs []gputracebpf.Event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "  %s\n", fmtEvent(e))
	}
	return b.String()
}

func fmtEvent(e gputracebpf.Event) string {
	s := fmt.Sprintf("tid=%d kind=%d api=%s dev=%d ret=%d a=%#x", e.TID, e.Kind, e.API, e.Device, e.Ret, e.A)
	if e.Name != nil {
		s += fmt.Sprintf(" name=%q", e.Name)
	}
	return s
}

// probeOf returns the probe of the exported function symbol.
func probeOf(symbol string) (gputracebpf.Probe, bool) {
	symbol = strings.TrimSuffix(strings.TrimSuffix(symbol, copyDone), nodeMade)
	for _, p := range gputracebpf.Probes {
		if p.Symbol == symbol {
			return p, true
		}
	}
	return gputracebpf.Probe{}, false
}

// copyDone marks, in an expected sequence, the second record of a
// synchronous copy: the one its return probe makes; nodeMade the record
// of a graph node's making's return.
const (
	copyDone = "#done"
	nodeMade = "#node"
)

// callKind is the kind of record c makes at entry (0: none): kindOf's,
// but for a generic node's making, which makes a child graph node's
// record or none.
func callKind(c cudaprog.Call) gputracebpf.Kind {
	if strings.Contains(c.API, "GraphAddNode") && !strings.HasSuffix(c.API, nodeMade) {
		switch c.NodeType {
		case cudaprog.NodeKernel:
		case cudaprog.NodeGraph:
			return gputracebpf.KindGraphChildNode
		default:
			return 0
		}
	}
	return kindOf(c.API)
}

// kindOf is the kind of record a call of api makes.
func kindOf(api string) gputracebpf.Kind {
	switch {
	case strings.HasSuffix(api, copyDone):
		return gputracebpf.KindCopyDone
	case strings.HasSuffix(api, nodeMade):
		return gputracebpf.KindGraphNode
	case strings.Contains(api, "GraphExecKernelNodeSetParams"), strings.Contains(api, "GraphExecNodeSetParams"):
		return gputracebpf.KindGraphExecNodeParams
	case strings.Contains(api, "GraphKernelNodeSetParams"), strings.Contains(api, "GraphNodeSetParams"):
		return gputracebpf.KindGraphNodeParams
	case strings.Contains(api, "GraphExecUpdate"):
		return gputracebpf.KindGraphExecUpdate
	case strings.Contains(api, "StreamBeginCapture"):
		return gputracebpf.KindCaptureBegin
	case strings.Contains(api, "StreamEndCapture"):
		return gputracebpf.KindCaptureEnd
	case strings.Contains(api, "GraphInstantiate"):
		return gputracebpf.KindGraphInstantiate
	case strings.Contains(api, "GraphExecDestroy"):
		return gputracebpf.KindGraphExecDestroy
	case strings.Contains(api, "GraphDestroy"):
		return gputracebpf.KindGraphDestroy
	case strings.Contains(api, "GraphCreate"):
		return gputracebpf.KindGraphCreate
	case strings.Contains(api, "GraphClone"):
		return gputracebpf.KindGraphClone
	case strings.Contains(api, "GraphAddKernelNode"), strings.Contains(api, "GraphAddNode"):
		return gputracebpf.KindGraphKernelNode
	case strings.Contains(api, "GraphAddChildGraphNode"):
		return gputracebpf.KindGraphChildNode
	case strings.Contains(api, "GraphLaunch"):
		return gputracebpf.KindGraphLaunch
	case strings.Contains(api, "Launch"):
		return gputracebpf.KindLaunch
	case strings.HasPrefix(api, "cudaMemcpy"), strings.HasPrefix(api, "cuMemcpy"):
		return gputracebpf.KindMemcpy
	case strings.HasPrefix(api, "cudaMemset"):
		return gputracebpf.KindMemset
	case strings.HasPrefix(api, "cudaMalloc"), strings.HasPrefix(api, "cuMemAlloc"):
		return gputracebpf.KindMalloc
	case strings.HasPrefix(api, "cudaFree"), strings.HasPrefix(api, "cuMemFree"):
		return gputracebpf.KindFree
	case strings.Contains(api, "Synchronize"):
		return gputracebpf.KindSync
	case strings.HasPrefix(api, "cudaEventRecord"):
		return gputracebpf.KindEventRecord
	case api == "cudaEventQuery":
		return gputracebpf.KindEventQuery
	case strings.HasPrefix(api, "cudaStreamWaitEvent"):
		return gputracebpf.KindStreamWait
	case api == "cudaSetDevice":
		return gputracebpf.KindSetDevice
	case api == "__cudaRegisterFunction", api == "cuModuleGetFunction":
		return gputracebpf.KindFuncName
	}
	panic("no record kind for " + api)
}

// hasReturnValue reports whether the records of api carry its return
// code (made by a return probe).
func hasReturnValue(api string) bool {
	k := kindOf(api)
	return k == gputracebpf.KindMalloc || k == gputracebpf.KindSync || k == gputracebpf.KindEventQuery || k == gputracebpf.KindCopyDone ||
		k == gputracebpf.KindCaptureEnd || k == gputracebpf.KindGraphInstantiate || k == gputracebpf.KindGraphCreate ||
		k == gputracebpf.KindGraphClone || k == gputracebpf.KindGraphNode || k == gputracebpf.KindGraphExecUpdate
}

// traceable lists the records the probes make for the calls of seq, in
// order, as calls: a synchronous copy makes two, the second marked
// copyDone; a graph node's making its entry's (none for a generic node of
// neither a kernel nor a graph) and its return's, marked nodeMade.
func traceable(seq []cudaprog.Call) []cudaprog.Call {
	var out []cudaprog.Call
	for _, c := range seq {
		p, ok := probeOf(c.API)
		if !ok {
			continue
		}
		if callKind(c) != 0 {
			out = append(out, c)
		}
		if p.SyncCopy {
			done := c
			done.API += copyDone
			out = append(out, done)
		}
		if strings.Contains(c.API, "GraphAddKernelNode") || strings.Contains(c.API, "GraphAddNode") {
			made := c
			made.API += nodeMade
			out = append(out, made)
		}
	}
	return out
}

// devices returns, for each call of seq, the device its thread selected
// with cudaSetDevice before it (or with it), 0 before any.
func devices(seq []cudaprog.Call) []int32 {
	out := make([]int32, len(seq))
	dev := int32(0)
	for i, c := range seq {
		if c.API == "cudaSetDevice" {
			dev = int32(c.Value)
		}
		out[i] = dev
	}
	return out
}

// checkEvent compares a decoded record with the call that made it, on
// device dev, in the process whose kernel stubs are at stubs.
func checkEvent(e gputracebpf.Event, c cudaprog.Call, dev int32, stubs map[string]uint64) error {
	p, _ := probeOf(c.API)
	var errs []string
	eq := func(what string, got, want any) {
		if got != want {
			errs = append(errs, fmt.Sprintf("%s %v, want %v", what, got, want))
		}
	}
	nonzero := func(what string, got uint64) {
		if got == 0 {
			errs = append(errs, what+" is 0, want a host buffer")
		}
	}
	ptr := func(what string, got, want uint64) {
		if want == 0 {
			nonzero(what, got)
		} else {
			eq(what, got, want)
		}
	}
	kind := callKind(c)
	eq("api", e.API, p.API)
	eq("kind", e.Kind, kind)
	eq("device", e.Device, dev)
	if hasReturnValue(c.API) {
		eq("ret", e.Ret, int32(c.Ret))
	} else {
		eq("ret", e.Ret, int32(0))
	}
	switch kind {
	case gputracebpf.KindLaunch:
		fn := c.Handle
		if c.Func != "" {
			fn = stubs[c.Func]
		}
		eq("func", e.Func(), fn)
		eq("grid", e.Grid(), [3]uint32(c.Grid))
		eq("block", e.Block(), [3]uint32(c.Block))
		eq("shared memory", e.SharedMem(), uint64(c.SharedMem))
		eq("stream", e.Stream(), c.Stream)
	case gputracebpf.KindMemcpy:
		ptr("dst", e.A[0], c.Dst)
		ptr("src", e.A[1], c.Src)
		eq("bytes", e.Bytes(), c.Size)
		eq("copy kind", e.CopyKind(), uint64(c.Kind))
		eq("stream", e.Stream(), c.Stream)
	case gputracebpf.KindMemset:
		eq("ptr", e.A[0], c.Ptr)
		eq("value", e.A[1], uint64(c.Value))
		eq("bytes", e.Bytes(), c.Size)
		eq("stream", e.Stream(), c.Stream)
	case gputracebpf.KindMalloc:
		if c.Ret == 0 {
			nonzero("pointer", e.Pointer())
		} else {
			eq("pointer", e.Pointer(), uint64(0))
		}
		eq("bytes", e.Bytes(), c.Size)
		eq("stream", e.Stream(), c.Stream)
	case gputracebpf.KindFree:
		eq("ptr", e.Pointer(), c.Ptr)
		eq("stream", e.Stream(), c.Stream)
	case gputracebpf.KindSync:
		on := c.Stream // the stream, or cudaEventSynchronize's event
		if c.Handle != 0 {
			on = c.Handle
		}
		eq("stream/event", e.Waited(), on)
		if e.TS < e.Duration() {
			errs = append(errs, fmt.Sprintf("duration %d ns longer than the clock", e.Duration()))
		}
	case gputracebpf.KindEventRecord:
		eq("event", e.EventHandle(), c.Handle)
		eq("stream", e.Stream(), c.Stream)
	case gputracebpf.KindStreamWait:
		eq("stream", e.Stream(), c.Stream)
		eq("event", e.EventHandle(), c.Handle)
	case gputracebpf.KindEventQuery:
		eq("event", e.EventHandle(), c.Handle)
	case gputracebpf.KindSetDevice:
		eq("device arg", e.A[0], uint64(int64(c.Value)))
	case gputracebpf.KindGraphLaunch:
		eq("graph exec", e.GraphExec(), c.Handle)
		eq("stream", e.Stream(), c.Stream)
	case gputracebpf.KindCaptureBegin:
		eq("stream", e.Stream(), c.Stream)
		eq("graph", e.Graph(), uint64(0))
	case gputracebpf.KindCaptureEnd:
		eq("stream", e.Stream(), c.Stream)
		if c.OutNull {
			eq("graph", e.Graph(), uint64(0))
		} else {
			eq("graph", e.Graph(), c.Out)
		}
	case gputracebpf.KindGraphInstantiate:
		eq("graph", e.Graph(), c.Handle)
		eq("graph exec", e.GraphExec(), c.Out)
	case gputracebpf.KindGraphDestroy:
		eq("graph", e.Graph(), c.Handle)
	case gputracebpf.KindGraphExecDestroy:
		eq("graph exec", e.GraphExec(), c.Handle)
	case gputracebpf.KindGraphCreate:
		eq("graph", e.Graph(), c.Out)
		eq("flags", e.A[0], uint64(c.Value))
	case gputracebpf.KindGraphClone:
		eq("graph", e.Graph(), c.Out)
		eq("original", e.SourceGraph(), c.Handle)
	case gputracebpf.KindGraphKernelNode:
		fn := c.Function // a driver node's CUfunction
		if c.Func != "" {
			fn = stubs[c.Func]
		}
		eq("graph", e.Graph(), c.Handle)
		eq("func", e.Func(), fn)
		eq("grid", e.Grid(), [3]uint32(c.Grid))
		eq("block", e.Block(), [3]uint32(c.Block))
		eq("shared memory", e.SharedMem(), uint64(c.SharedMem))
	case gputracebpf.KindGraphChildNode:
		eq("graph", e.Graph(), c.Handle)
		eq("child", e.SourceGraph(), c.Child)
	case gputracebpf.KindGraphNode:
		eq("graph", e.Graph(), c.Handle)
		eq("node", e.GraphNode(), c.Out)
	case gputracebpf.KindGraphNodeParams, gputracebpf.KindGraphExecNodeParams:
		fn := c.Function // a driver node's CUfunction
		if c.Func != "" {
			fn = stubs[c.Func]
		}
		if kind == gputracebpf.KindGraphExecNodeParams {
			eq("graph exec", e.GraphExec(), c.Handle)
		}
		eq("node", e.GraphNode(), c.Node)
		eq("func", e.Func(), fn)
		eq("grid", e.Grid(), [3]uint32(c.Grid))
		eq("block", e.Block(), [3]uint32(c.Block))
		eq("shared memory", e.SharedMem(), uint64(c.SharedMem))
	case gputracebpf.KindGraphExecUpdate:
		eq("graph exec", e.GraphExec(), c.Handle)
		eq("graph", e.Graph(), c.Graph)
	case gputracebpf.KindFuncName:
		fn, driver := e.NamedFunc()
		eq("host function", fn, stubs[c.Func])
		eq("driver flag", driver, false)
		eq("name", string(e.Name), c.Func)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %s", c.API, strings.Join(errs, "; "))
	}
	return nil
}

// checkThreads checks that the events of each thread are exactly the
// traceable calls of its sequence, in order, with their arguments.
// tids[i] is the thread running threads[i].
func checkThreads(t *testing.T, evs []gputracebpf.Event, pid int, threads [][]cudaprog.Call, tids map[int]int, stubs map[string]uint64) {
	t.Helper()
	byTid := map[uint32][]gputracebpf.Event{}
	for _, e := range evs {
		require.Equal(t, uint32(pid), e.PID)
		byTid[e.TID] = append(byTid[e.TID], e)
	}
	require.Len(t, byTid, len(threads), "threads with events")
	for i, seq := range threads {
		want := traceable(seq)
		devs := devices(want)
		got := byTid[uint32(tids[i])]
		if !assert.Len(t, got, len(want), "thread %d (tid %d): %d events, want %d:\n%s", i, tids[i], len(got), len(want), dumpEvents(got)) {
			continue
		}
		for j, c := range want {
			assert.NoError(t, checkEvent(got[j], c, devs[j], stubs), "thread %d call %d\n  got %s", i, j, fmtEvent(got[j]))
		}
	}
}

// memcpyKindName is the cuda.memcpy.kind value of a cudaMemcpyKind: the
// registry lists them in cudaMemcpyKind order.
func memcpyKindName(t testing.TB, k cudaprog.MemcpyKind) string {
	t.Helper()
	for _, a := range semconv.Attributes() {
		if a.Key == semconv.CUDAMemcpyKind {
			require.Less(t, int(k), len(a.Values))
			return a.Values[k]
		}
	}
	require.Fail(t, "cuda.memcpy.kind is not registered")
	return ""
}

// series is one expected counter series: its attributes (besides the
// process's) as attribute value strings, and its value.
type series map[string]float64

func key(kv ...string) string { return strings.Join(kv, "|") }

// expected are a scenario's metric values for one process.
type expected struct {
	launches  series // kernel name|device|api -> launches
	gridCount series // device -> launches
	gridSum   series // device -> sum of grid sizes
	blockSum  series // device -> sum of block sizes
	smemSum   series // device -> sum of shared memory
	memcpy    series // kind|device|api -> bytes
	graphs    series // device|api -> graph launches
	syncs     series // device|api -> count
	errors    series // api|code -> count
	calls     series // api -> calls
	spans     series // span name -> spans
	allocated float64
}

// expect computes what the Source must report for the calls of threads.
func expect(t testing.TB, threads [][]cudaprog.Call, kernelName func(cudaprog.Call) string) expected {
	t.Helper()
	x := expected{
		launches: series{}, gridCount: series{}, gridSum: series{}, blockSum: series{}, smemSum: series{},
		memcpy: series{}, graphs: series{}, syncs: series{}, errors: series{}, calls: series{}, spans: series{},
	}
	dim := func(d cudaprog.Dim3) float64 { return float64(d[0]) * float64(d[1]) * float64(d[2]) }
	for _, seq := range threads {
		for _, c := range seq {
			if _, ok := probeOf(c.API); ok {
				x.calls[c.API]++ // a return's record is not a call of its own
			}
		}
		calls := traceable(seq)
		devs := devices(calls)
		for i, c := range calls {
			dev := strconv.Itoa(int(devs[i]))
			api := strings.TrimSuffix(strings.TrimSuffix(c.API, copyDone), nodeMade)
			if hasReturnValue(c.API) && c.Ret != 0 {
				x.errors[key(api, strconv.Itoa(c.Ret))]++
			}
			switch callKind(c) {
			case gputracebpf.KindLaunch:
				x.launches[key(kernelName(c), dev, c.API)]++
				x.gridCount[dev]++
				x.gridSum[dev] += dim(c.Grid)
				x.blockSum[dev] += dim(c.Block)
				x.smemSum[dev] += float64(c.SharedMem)
				x.spans[semconv.SpanCUDAKernelLaunch]++
			case gputracebpf.KindMemcpy:
				x.memcpy[key(memcpyKindName(t, c.Kind), dev, c.API)] += float64(c.Size)
				x.spans[semconv.SpanCUDAMemcpy]++
			case gputracebpf.KindMemset:
				x.spans[semconv.SpanCUDAMemset]++
			case gputracebpf.KindGraphLaunch:
				x.graphs[key(dev, c.API)]++
				x.spans[semconv.SpanCUDAGraphLaunch]++
			case gputracebpf.KindSync:
				x.syncs[key(dev, c.API)]++
				x.spans[semconv.SpanCUDASync]++
			case gputracebpf.KindMalloc:
				if c.Ret == 0 {
					x.allocated += float64(c.Size)
				}
				x.spans[semconv.SpanCUDAMalloc]++
			case gputracebpf.KindFree:
				x.spans[semconv.SpanCUDAFree]++
			}
		}
	}
	return x
}

// gather turns the points of metric name into a series keyed by the
// values of keys.
func gather(pts testutil.Points, name string, value func(testutil.Point) float64, keys ...string) series {
	out := series{}
	for _, p := range pts.Find(name) {
		var kv []string
		for _, k := range keys {
			kv = append(kv, p.Attrs[k])
		}
		out[key(kv...)] += value(p)
	}
	return out
}

func sum(p testutil.Point) float64       { return p.Value }
func histCount(p testutil.Point) float64 { return float64(p.Count) }

// ofPid keeps the points of process pid: its series, and its
// histograms, which carry no pid but the container that ownContainers
// gives the process alone.
func ofPid(pts testutil.Points, pid int) testutil.Points {
	var out testutil.Points
	for _, p := range pts {
		if p.Get(semconv.ProcessPID) == strconv.Itoa(pid) ||
			!p.Has(semconv.ProcessPID) && p.Get(semconv.ContainerID) == containerOf(pid) {
			out = append(out, p)
		}
	}
	return out
}

// testMaxProcesses is the kernel tests' process cap: the Source traces
// every process on the host, and other packages' tests may run many CUDA
// programs at once, which must not fold the test's own past the default
// cap.
const testMaxProcesses = 1 << 14

// ownContainers is the kernel tests' resolver: it puts every process in
// a container of its own, named by its pid (containerOf). The histograms
// carry no pid, and the probes fire in other test binaries' programs too,
// of the same executables: the container tells the test program's apart.
type ownContainers struct{}

func (ownContainers) ProcessAttributes(pid int) ([]attribute.KeyValue, trace.SpanContext) {
	return []attribute.KeyValue{semconv.ContainerID.String(containerOf(pid))}, trace.SpanContext{}
}

func (ownContainers) Forget(int) {}

// containerOf is the container ownContainers puts process pid in.
func containerOf(pid int) string { return "pid-" + strconv.Itoa(pid) }

func (x expected) callsMatch(pts testutil.Points) bool {
	return maps.Equal(gather(pts, semconv.CUDAAPICalls.Name, sum, string(semconv.CUDAAPIName)), x.calls)
}

// checkMetrics compares pid's series with x, exactly: every series the
// scenario implies, and no other.
func (tr *traced) checkMetrics(t *testing.T, pid int, exe string, x expected) testutil.Points {
	t.Helper()
	pts := ofPid(tr.waitPoints(t, func(pts testutil.Points) bool { return x.callsMatch(ofPid(pts, pid)) }), pid)
	for _, p := range pts {
		require.Equal(t, exe, p.Get(semconv.ProcessExecutableName), "%s", p.Name)
	}
	name, dev, api := string(semconv.CUDAKernelName), string(semconv.CUDADevice), string(semconv.CUDAAPIName)
	eq := func(want series, metric string, value func(testutil.Point) float64, keys ...string) {
		t.Helper()
		if want == nil {
			want = series{}
		}
		require.Equal(t, want, gather(pts, metric, value, keys...), "%s by %v", metric, keys)
	}
	eq(x.launches, semconv.CUDAKernelLaunches.Name, sum, name, dev, api)
	eq(x.gridCount, semconv.CUDAKernelGridSize.Name, histCount, dev)
	eq(x.gridSum, semconv.CUDAKernelGridSize.Name, sum, dev)
	eq(x.gridCount, semconv.CUDAKernelBlockSize.Name, histCount, dev)
	eq(x.blockSum, semconv.CUDAKernelBlockSize.Name, sum, dev)
	eq(x.gridCount, semconv.CUDAKernelSharedMemory.Name, histCount, dev)
	eq(x.smemSum, semconv.CUDAKernelSharedMemory.Name, sum, dev)
	eq(x.memcpy, semconv.CUDAMemcpyTransferred.Name, sum, string(semconv.CUDAMemcpyKind), dev, api)
	eq(x.graphs, semconv.CUDAGraphLaunches.Name, sum, dev, api)
	eq(x.syncs, semconv.CUDASyncDuration.Name, histCount, dev, api)
	eq(x.errors, semconv.CUDAAPIErrors.Name, sum, api, string(semconv.CUDAErrorCode))
	eq(x.calls, semconv.CUDAAPICalls.Name, sum, api)
	// Every allocation failed (no GPU): nothing allocated, freed or
	// outstanding.
	require.Zero(t, x.allocated)
	require.Empty(t, pts.Find(semconv.CUDAMemoryAllocated.Name))
	require.Empty(t, pts.Find(semconv.CUDAMemoryFreed.Name))
	require.Empty(t, pts.Find(semconv.CUDAMemoryOldestAge.Name))
	require.Equal(t, 0.0, pts.One(t, semconv.CUDAMemoryOutstanding.Name).Value)

	// Spans: well under the rate cap, so one per call that makes one.
	spans := series{}
	for _, s := range tr.spans.GetSpans() {
		for _, kv := range s.Attributes {
			if kv.Key == semconv.ProcessPID && kv.Value.AsInt64() == int64(pid) {
				spans[s.Name]++
			}
		}
	}
	require.Equal(t, x.spans, spans, "spans by name")
	return pts
}

// buildLinger builds cudaprog's linger library: preloaded, it keeps a
// program alive at exit until its stdin is closed (Proc.Wait closes it
// after DONE). The Source looks kernel names and the executable name up
// in /proc/<pid> when its reader handles an event, up to a poll interval
// after the call; the scenario programs exit right after their last call,
// before that, and a process that is gone gets "unknown" kernel names and
// an empty executable name.
func buildLinger(t testing.TB) string {
	t.Helper()
	return cudaprog.Build(t, "linger")
}

// buildSharedLib compiles src into a shared library named name in a new
// temporary directory.
func buildSharedLib(t testing.TB, name, src string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		testutil.SkipOrFail(t, "gcc is needed (Debian package gcc): %v", err)
	}
	dir := t.TempDir()
	c := filepath.Join(dir, "src.c")
	require.NoError(t, os.WriteFile(c, []byte(src), 0o644))
	out := filepath.Join(dir, name)
	msg, err := exec.Command(gcc, "-shared", "-fPIC", "-O2", "-Wall", "-Wl,-soname,"+name, "-o", out, c).CombinedOutput()
	require.NoError(t, err, "gcc: %s", msg)
	return out
}

// startLingering starts exe with args and the linger library preloaded.
func startLingering(t testing.TB, exe string, args ...string) *cudaprog.Proc {
	t.Helper()
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+buildLinger(t))
	return cudaprog.StartCmd(t, cmd)
}

// waitPrinted waits until p printed a line starting with prefix, without
// consuming it (Proc.Wait still finds DONE).
func waitPrinted(t testing.TB, p *cudaprog.Proc, prefix string) {
	t.Helper()
	printed := poll(cudaprog.DefaultTimeout, func() bool {
		return slices.ContainsFunc(p.Lines(), func(l string) bool { return strings.HasPrefix(l, prefix) })
	})
	require.True(t, printed, "pid %d printed no %q line: %q\n%s", p.Pid, prefix, p.Lines(), p.Stderr())
}

// demangled names a runtime launch's kernel by its host stub's symbol.
func demangled(c cudaprog.Call) string { return elfsym.Demangle(c.Func) }
