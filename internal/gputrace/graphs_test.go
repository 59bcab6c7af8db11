package gputrace

// Graph tests on synthetic events, as aggregate_test.go's: what the probes
// record of a process that captures, instantiates and replays graphs.

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/gputracebpf"
	"github.com/xpuscope/xpuscope/semconv"
)

// graphRecords builds the records of one process (pid 100) at increasing
// times.
type graphRecords struct {
	ts  uint64
	out []gputracebpf.Event
}

func (r *graphRecords) add(e gputracebpf.Event) *graphRecords {
	r.ts++
	e.TS, e.PID, e.TID = r.ts, 100, 100
	r.out = append(r.out, e)
	return r
}

func (r *graphRecords) launchOn(api string, fn uint64, grid, block [3]uint32, smem, stream uint64) *graphRecords {
	e := gputracebpf.Event{API: apiOf(api)}
	e.SetLaunch(fn, grid, block, smem, stream)
	return r.add(e)
}

func (r *graphRecords) call(kind gputracebpf.Kind, api string, a0, a1 uint64) *graphRecords {
	return r.add(gputracebpf.Event{Kind: kind, API: apiOf(api), A: [6]uint64{a0, a1}})
}

const (
	streamS, streamJoin, streamRun = 0x5100, 0x5200, 0x5300
	graphG, graphG2                = 0x6100, 0x6200
	execE                          = 0x7100
	eventJ                         = 0x8100
)

func graphLaunches(t *testing.T, h *harness, api string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, p := range h.collect(t).Find(semconv.CUDAKernelLaunches.Name, semconv.CUDAAPIName.String(api)) {
		out[p.Get(semconv.CUDAKernelName)] += p.Value
	}
	return out
}

// TestGraphCaptureAndReplay: the launches on a capturing stream, and on a
// stream that joined the capture through an event, are the graph's
// kernels and not runs; each replay of the executable graph counts them
// all, by name (a runtime stub's and a driver handle's), under the graph
// launch's API, and hands them to the occupancy model.
func TestGraphCaptureAndReplay(t *testing.T) {
	h := newHarness(t)
	h.names.symbols[0x1000] = "vectorAdd()"
	h.names.symbols[0x2000] = "gemm()"
	one, wide := [3]uint32{1, 1, 1}, [3]uint32{128, 1, 1}
	r := &graphRecords{}
	r.add(gputracebpf.Event{Kind: gputracebpf.KindFuncName, API: apiOf("cuModuleGetFunction"), A: [6]uint64{0xa, 1}, Name: []byte("_Z7softmaxv")})
	r.call(gputracebpf.KindCaptureBegin, "cudaStreamBeginCapture", streamS, 0)
	r.launchOn("cudaLaunchKernel", 0x1000, [3]uint32{4, 1, 1}, wide, 0, streamS)
	r.launchOn("cudaLaunchKernel", 0x1000, [3]uint32{8, 1, 1}, wide, 0, streamS)
	r.call(gputracebpf.KindEventRecord, "cudaEventRecord", eventJ, streamS)
	r.call(gputracebpf.KindStreamWait, "cudaStreamWaitEvent", streamJoin, eventJ)
	r.launchOn("cudaLaunchKernel", 0x2000, one, wide, 4096, streamJoin)
	r.launchOn("cuLaunchKernel", 0xa, one, one, 0, streamS)
	r.launchOn("cudaLaunchKernel", 0x1000, one, one, 0, streamRun) // not capturing: a run
	r.call(gputracebpf.KindCaptureEnd, "cudaStreamEndCapture", streamS, graphG)
	r.launchOn("cudaLaunchKernel", 0x2000, one, one, 0, streamJoin) // the capture is over
	r.call(gputracebpf.KindGraphInstantiate, "cudaGraphInstantiate", graphG, execE)
	for range 5 {
		r.call(gputracebpf.KindGraphLaunch, "cudaGraphLaunch", execE, streamRun)
	}
	r.add(gputracebpf.Event{Kind: gputracebpf.KindSync, API: apiOf("cudaStreamSynchronize"), A: [6]uint64{streamRun, 1}})
	h.feed(r.out...)

	assert.Equal(t, map[string]float64{"vectorAdd()": 10, "gemm()": 5, "softmax()": 5}, graphLaunches(t, h, "cudaGraphLaunch"))
	assert.Equal(t, map[string]float64{"vectorAdd()": 1, "gemm()": 1}, graphLaunches(t, h, "cudaLaunchKernel"),
		"the captured launches are not runs; those before and after the capture are")
	pts := h.collect(t)
	assert.Equal(t, 5.0, pts.One(t, semconv.CUDAAPICalls.Name, semconv.CUDAAPIName.String("cudaLaunchKernel")).Value,
		"a captured launch is still a call")
	assert.Equal(t, 5.0, pts.One(t, semconv.CUDAGraphLaunches.Name).Value)
	assert.Equal(t, 0.0, pts.One(t, semconv.XpuscopeCUDAGraphReplaysUnknown.Name).Value)
	// The grid sizes of every replayed kernel: 5 × (4 + 8 + 1 + 1), and
	// the two runs' 1 each.
	assert.Equal(t, float64(5*14+2), pts.One(t, semconv.CUDAKernelGridSize.Name).Value)
	// The sync on the replays' stream completes the 20 replayed kernels
	// (and the run before them) in the model.
	assert.Equal(t, uint64(21), pts.One(t, semconv.GPUKernelDuration.Name).Count)

	var spans, withKernels int
	for _, s := range h.spans.GetSpans() {
		if s.Name != semconv.SpanCUDAGraphLaunch {
			continue
		}
		spans++
		for _, kv := range s.Attributes {
			if kv.Key == semconv.CUDAGraphKernels && kv.Value.AsInt64() == 4 {
				withKernels++
			}
		}
	}
	assert.Positive(t, spans, "graph launch spans")
	assert.Equal(t, spans, withKernels, "each graph launch span says it replays 4 kernels")
}

// TestGraphUnknownAndReleased: a replay of an executable graph whose
// kernels are not known (made before the agent attached, destroyed, made
// of a graph that was destroyed first, or of a capture that failed)
// counts no kernel and counts as unknown; a handle made anew names its
// new graph; and once every graph and executable graph is destroyed the
// process holds no kernel.
func TestGraphUnknownAndReleased(t *testing.T) {
	h := newHarness(t)
	h.names.symbols[0x1000] = "vectorAdd()"
	h.names.symbols[0x2000] = "gemm()"
	one := [3]uint32{1, 1, 1}
	r := &graphRecords{}
	replay := func() { r.call(gputracebpf.KindGraphLaunch, "cudaGraphLaunch", execE, streamRun) }
	replay() // built before the agent attached
	r.call(gputracebpf.KindCaptureBegin, "cudaStreamBeginCapture", streamS, 0)
	r.launchOn("cudaLaunchKernel", 0x1000, one, one, 0, streamS)
	r.call(gputracebpf.KindCaptureEnd, "cudaStreamEndCapture", streamS, graphG)
	r.call(gputracebpf.KindGraphInstantiate, "cudaGraphInstantiate", graphG, execE)
	replay() // vectorAdd
	r.call(gputracebpf.KindCaptureBegin, "cudaStreamBeginCapture", streamS, 0)
	r.launchOn("cudaLaunchKernel", 0x2000, one, one, 0, streamS)
	r.launchOn("cudaLaunchKernel", 0x2000, one, one, 0, streamS)
	r.call(gputracebpf.KindCaptureEnd, "cudaStreamEndCapture", streamS, graphG2)
	r.call(gputracebpf.KindGraphInstantiate, "cudaGraphInstantiate", graphG2, execE) // the handle reused
	replay()                                                                         // gemm twice
	r.call(gputracebpf.KindGraphExecDestroy, "cudaGraphExecDestroy", execE, 0)
	replay() // destroyed
	r.call(gputracebpf.KindGraphDestroy, "cudaGraphDestroy", graphG, 0)
	r.call(gputracebpf.KindGraphInstantiate, "cudaGraphInstantiate", graphG, execE)
	replay() // of a graph destroyed first
	r.call(gputracebpf.KindCaptureBegin, "cudaStreamBeginCapture", streamS, 0)
	r.launchOn("cudaLaunchKernel", 0x1000, one, one, 0, streamS)
	r.call(gputracebpf.KindCaptureEnd, "cudaStreamEndCapture", streamS, 0) // invalidated: NULL
	r.launchOn("cudaLaunchKernel", 0x1000, one, one, 0, streamS)           // a run again
	h.feed(r.out...)

	assert.Equal(t, map[string]float64{"vectorAdd()": 1, "gemm()": 2}, graphLaunches(t, h, "cudaGraphLaunch"))
	assert.Equal(t, map[string]float64{"vectorAdd()": 1}, graphLaunches(t, h, "cudaLaunchKernel"))
	pts := h.collect(t)
	assert.Equal(t, 3.0, pts.One(t, semconv.XpuscopeCUDAGraphReplaysUnknown.Name).Value)

	g := h.s.agg.procs[100].graphs
	require.NotNil(t, g)
	assert.Equal(t, 2, g.kernels, "graph G2's two kernels, still held by G2")
	h.feed(gputracebpf.Event{PID: 100, TS: 1000, Kind: gputracebpf.KindGraphDestroy, API: apiOf("cudaGraphDestroy"), A: [6]uint64{graphG2}})
	assert.Zero(t, g.kernels, "nothing left holds a kernel")
	assert.Empty(t, g.graphs)
	assert.Empty(t, g.execs)
	assert.Empty(t, g.capturing)
}

// TestGraphBuiltNodeByNode: a graph made by cudaGraphCreate and its
// kernel and child graph nodes replays them all; a clone that takes one
// more node leaves the original as it was; a node added to a graph created
// before the agent attached, or a child graph not known, leaves the graph
// not known, so that its replays are counted unknown, never short.
func TestGraphBuiltNodeByNode(t *testing.T) {
	h := newHarness(t)
	h.names.symbols[0x1000] = "vectorAdd()"
	h.names.symbols[0x2000] = "gemm()"
	h.names.symbols[0x3000] = "reduce()"
	one := [3]uint32{1, 1, 1}
	const (
		graphB, graphC, graphOld, graphP = 0x6300, 0x6400, 0x6500, 0x6600
		execB, execC, execOld, execP     = 0x7200, 0x7300, 0x7400, 0x7500
	)
	r := &graphRecords{}
	node := func(graph, fn uint64, smem uint64) {
		e := gputracebpf.Event{API: apiOf("cudaGraphAddKernelNode")}
		e.SetLaunch(fn, [3]uint32{2, 1, 1}, [3]uint32{64, 1, 1}, smem, 0)
		e.Kind, e.A[5] = gputracebpf.KindGraphKernelNode, graph
		r.add(e)
	}
	// A captured graph G with one reduce, to embed.
	r.call(gputracebpf.KindCaptureBegin, "cudaStreamBeginCapture", streamS, 0)
	r.launchOn("cudaLaunchKernel", 0x3000, one, one, 0, streamS)
	r.call(gputracebpf.KindCaptureEnd, "cudaStreamEndCapture", streamS, graphG)
	r.call(gputracebpf.KindGraphCreate, "cudaGraphCreate", 0, graphB)
	node(graphB, 0x1000, 256)
	r.call(gputracebpf.KindGraphChildNode, "cudaGraphAddChildGraphNode", graphB, graphG)
	r.call(gputracebpf.KindGraphClone, "cudaGraphClone", graphB, graphC)
	node(graphC, 0x2000, 0)
	node(graphOld, 0x2000, 0) // created before the agent attached
	r.call(gputracebpf.KindGraphCreate, "cudaGraphCreate", 0, graphP)
	node(graphP, 0x1000, 0)
	r.call(gputracebpf.KindGraphChildNode, "cudaGraphAddChildGraphNode", graphP, graphOld)
	for _, gx := range [][2]uint64{{graphB, execB}, {graphC, execC}, {graphOld, execOld}, {graphP, execP}} {
		r.call(gputracebpf.KindGraphInstantiate, "cudaGraphInstantiate", gx[0], gx[1])
	}
	for _, x := range []uint64{execB, execB, execC, execOld, execP} {
		r.call(gputracebpf.KindGraphLaunch, "cudaGraphLaunch", x, streamRun)
	}
	h.feed(r.out...)

	// B = {vectorAdd, reduce} twice; C = B + gemm once.
	assert.Equal(t, map[string]float64{"vectorAdd()": 3, "reduce()": 3, "gemm()": 1}, graphLaunches(t, h, "cudaGraphLaunch"))
	pts := h.collect(t)
	assert.Equal(t, 2.0, pts.One(t, semconv.XpuscopeCUDAGraphReplaysUnknown.Name).Value, "the graph not known and the one embedding it")
	assert.Equal(t, float64(3*256), pts.One(t, semconv.CUDAKernelSharedMemory.Name).Value, "the node's own shared memory, at each replay")
}

// TestGraphBounds: a capture past the kernels a process may hold makes no
// graph (its replays are unknown, not short), and frees what it held.
func TestGraphBounds(t *testing.T) {
	h := newHarness(t)
	one := [3]uint32{1, 1, 1}
	r := &graphRecords{}
	r.call(gputracebpf.KindCaptureBegin, "cudaStreamBeginCapture", streamS, 0)
	for range maxGraphKernels + 1 {
		r.launchOn("cudaLaunchKernel", 0x1000, one, one, 0, streamS)
	}
	r.call(gputracebpf.KindCaptureEnd, "cudaStreamEndCapture", streamS, graphG)
	r.call(gputracebpf.KindGraphInstantiate, "cudaGraphInstantiate", graphG, execE)
	r.call(gputracebpf.KindGraphLaunch, "cudaGraphLaunch", execE, streamRun)
	h.feed(r.out...)
	assert.Empty(t, graphLaunches(t, h, "cudaGraphLaunch"))
	assert.Equal(t, 1.0, h.collect(t).One(t, semconv.XpuscopeCUDAGraphReplaysUnknown.Name).Value)
	assert.Zero(t, h.s.agg.procs[100].graphs.kernels)
}

// FuzzGraphs feeds the engine any sequence of graph calls and launches
// over a few streams, events and handles: it never panics, its count of
// the kernels it holds is what its captures and graphs hold (so the
// bound holds), and nothing it keeps passes its bounds.
func FuzzGraphs(f *testing.F) {
	f.Add([]byte{0, 1, 1, 1, 2, 0, 3, 0, 4, 0})
	f.Add([]byte{0, 0, 5, 0, 6, 1, 1, 1, 2, 0, 3, 0, 4, 0, 8, 0, 7, 0})
	f.Add([]byte{9, 0, 11, 0, 12, 16, 10, 20, 11, 16, 3, 0, 4, 0})
	kinds := []struct {
		kind gputracebpf.Kind
		api  string
	}{
		{gputracebpf.KindCaptureBegin, "cudaStreamBeginCapture"},
		{gputracebpf.KindLaunch, "cudaLaunchKernel"},
		{gputracebpf.KindCaptureEnd, "cudaStreamEndCapture"},
		{gputracebpf.KindGraphInstantiate, "cudaGraphInstantiate"},
		{gputracebpf.KindGraphLaunch, "cudaGraphLaunch"},
		{gputracebpf.KindEventRecord, "cudaEventRecord"},
		{gputracebpf.KindStreamWait, "cudaStreamWaitEvent"},
		{gputracebpf.KindGraphDestroy, "cudaGraphDestroy"},
		{gputracebpf.KindGraphExecDestroy, "cudaGraphExecDestroy"},
		{gputracebpf.KindGraphCreate, "cudaGraphCreate"},
		{gputracebpf.KindGraphClone, "cudaGraphClone"},
		{gputracebpf.KindGraphKernelNode, "cudaGraphAddKernelNode"},
		{gputracebpf.KindGraphChildNode, "cudaGraphAddChildGraphNode"},
	}
	f.Fuzz(func(t *testing.T, ops []byte) {
		h := newHarness(t)
		for i := 0; i+1 < len(ops); i += 2 {
			k := kinds[int(ops[i])%len(kinds)]
			x := uint64(ops[i+1])
			streamOf, handle := 0x5000+(x&3)*0x100, 0x6000+(x>>2&3)*0x100
			e := gputracebpf.Event{TS: uint64(i), PID: 100, TID: 100, Kind: k.kind, API: apiOf(k.api)}
			switch k.kind {
			case gputracebpf.KindLaunch:
				e.SetLaunch(0x1000+x, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 0, streamOf)
			case gputracebpf.KindCaptureBegin:
				e.A[0] = streamOf
			case gputracebpf.KindCaptureEnd:
				e.A[0], e.A[1] = streamOf, handle*(x>>4&1) // a failed capture now and then
			case gputracebpf.KindGraphInstantiate:
				e.A[0], e.A[1] = handle, 0x7000+(x>>4&3)*0x100
			case gputracebpf.KindGraphLaunch, gputracebpf.KindGraphExecDestroy:
				e.A[0], e.A[1] = 0x7000+(x>>4&3)*0x100, streamOf
			case gputracebpf.KindGraphDestroy:
				e.A[0] = handle
			case gputracebpf.KindGraphCreate:
				e.A[1] = handle
			case gputracebpf.KindGraphClone, gputracebpf.KindGraphChildNode:
				e.A[0], e.A[1] = handle, 0x6000+(x>>4&3)*0x100
				if k.kind == gputracebpf.KindGraphClone {
					e.A[0], e.A[1] = e.A[1], e.A[0]
				}
			case gputracebpf.KindGraphKernelNode:
				e.SetLaunch(0x1000+x, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 0, handle)
				e.Kind = gputracebpf.KindGraphKernelNode
			case gputracebpf.KindEventRecord:
				e.A[0], e.A[1] = 0x8000+(x>>4&3)*0x100, streamOf
			case gputracebpf.KindStreamWait:
				e.A[0], e.A[1] = streamOf, 0x8000+(x>>4&3)*0x100
			}
			h.feed(e)
		}
		p := h.s.agg.procs[100]
		if p == nil || p.graphs == nil {
			return
		}
		g := p.graphs
		held := 0
		seen := map[*capture]bool{}
		for _, c := range g.capturing {
			if !seen[c] {
				seen[c] = true
				held += len(c.nodes.kernels)
			}
		}
		nodes := map[*graphNodes]int{}
		for _, m := range []map[uint64]*graphNodes{g.graphs, g.execs} {
			for _, n := range m {
				nodes[n]++
			}
		}
		for n, refs := range nodes {
			require.Equal(t, refs, n.refs, "a graph's references")
			if n.partial {
				require.Empty(t, n.kernels, "a graph not known holds no kernel")
			}
			held += len(n.kernels)
		}
		require.Equal(t, held, g.kernels, "the kernels held")
		require.LessOrEqual(t, g.kernels, maxGraphKernels)
		require.LessOrEqual(t, len(g.graphs), maxGraphs)
		require.LessOrEqual(t, len(g.execs), maxGraphs)
		require.LessOrEqual(t, len(g.joins), maxJoins)
	})
}
