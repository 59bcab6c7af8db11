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

// nodeRecords adds the records of a kernel node's making to r: the
// entry's (the kernel, on graph) and, unless node is 0 (its return lost),
// the return's, which names it.
func (r *graphRecords) kernelNode(api string, graph, node, fn uint64, grid uint32) *graphRecords {
	e := gputracebpf.Event{API: apiOf(api)}
	e.SetLaunch(fn, [3]uint32{grid, 1, 1}, [3]uint32{64, 1, 1}, 0, 0)
	e.Kind, e.A[5] = gputracebpf.KindGraphKernelNode, graph
	r.add(e)
	if node != 0 {
		r.call(gputracebpf.KindGraphNode, api, graph, node)
	}
	return r
}

// setNode adds a cudaGraphKernelNodeSetParams record; setExecNode a
// cudaGraphExecKernelNodeSetParams one.
func (r *graphRecords) setNode(node, fn uint64, grid uint32) *graphRecords {
	e := gputracebpf.Event{API: apiOf("cudaGraphKernelNodeSetParams")}
	e.SetLaunch(fn, [3]uint32{grid, 1, 1}, [3]uint32{64, 1, 1}, 0, 0)
	e.Kind, e.A[5] = gputracebpf.KindGraphNodeParams, node
	return r.add(e)
}

func (r *graphRecords) setExecNode(exec, node, fn uint64, grid uint32) *graphRecords {
	e := gputracebpf.Event{API: apiOf("cudaGraphExecKernelNodeSetParams")}
	e.SetLaunch(fn, [3]uint32{grid, 1, 1}, [3]uint32{64, 1, 1}, 0, 0)
	e.Kind, e.A[5], e.Wide = gputracebpf.KindGraphExecNodeParams, exec, node
	return r.add(e)
}

// replays feeds r's records, then one replay of each exec, and returns
// the kernels those replays counted, by name and grid size ("gemm()/8"),
// and how many of them were unknown.
func replays(t *testing.T, h *harness, r *graphRecords, execs ...uint64) (map[string]float64, float64) {
	t.Helper()
	count := func() (map[string]float64, float64) {
		out := map[string]float64{}
		pts := h.collect(t)
		for _, p := range pts.Find(semconv.CUDAKernelLaunches.Name, semconv.CUDAAPIName.String("cudaGraphLaunch")) {
			out[p.Get(semconv.CUDAKernelName)] += p.Value
		}
		return out, pts.One(t, semconv.XpuscopeCUDAGraphReplaysUnknown.Name).Value
	}
	h.feed(r.out...)
	r.out = nil
	before, unknown0 := count()
	for _, x := range execs {
		r.call(gputracebpf.KindGraphLaunch, "cudaGraphLaunch", x, streamRun)
	}
	h.feed(r.out...)
	r.out = nil
	after, unknown1 := count()
	for k, v := range before {
		if after[k] -= v; after[k] == 0 {
			delete(after, k)
		}
	}
	return after, unknown1 - unknown0
}

// TestGraphNodeChanges: a kernel node named by its making's return can be
// changed: in its graph (cudaGraphKernelNodeSetParams), which changes the
// executable graphs made after but not those made before, and in an
// executable graph (cudaGraphExecKernelNodeSetParams, named by the
// graph's node), which changes that one only. An update that succeeded
// (cudaGraphExecUpdate) gives an executable graph another graph's kernels,
// known or not before; a refused one leaves it. A node no call named says
// not which kernel changed: the executable graph, or every graph that may
// hold it, counts its replays as unknown.
func TestGraphNodeChanges(t *testing.T) {
	h := newHarness(t)
	for fn, name := range map[uint64]string{0x1000: "vectorAdd()", 0x2000: "gemm()", 0x3000: "reduce()", 0x4000: "softmax()"} {
		h.names.symbols[fn] = name
	}
	const (
		graphB, graphC, graphD  = 0x6300, 0x6400, 0x6500
		execE1, execE2, execE3  = 0x7200, 0x7300, 0x7400
		execOld, execE4         = 0x7500, 0x7600
		node1, node2, nodeLost  = 0x9100, 0x9200, 0x9300
		unnamedNode             = 0x9f00
		graphExecUpdateFailure  = 910 // cudaErrorGraphExecUpdateFailure, CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE
		vectorAdd, gemm, reduce = 0x1000, 0x2000, 0x3000
		softmax                 = 0x4000
	)
	one := [3]uint32{1, 1, 1}
	r := &graphRecords{}
	r.call(gputracebpf.KindGraphCreate, "cudaGraphCreate", 0, graphB)
	r.kernelNode("cudaGraphAddKernelNode", graphB, node1, vectorAdd, 1)
	r.kernelNode("cudaGraphAddKernelNode", graphB, node2, gemm, 1)
	r.setNode(node2, reduce, 2) // before the instantiation: B = {vectorAdd, reduce}
	r.call(gputracebpf.KindGraphInstantiate, "cudaGraphInstantiate", graphB, execE1)
	got, unknown := replays(t, h, r, execE1)
	assert.Equal(t, map[string]float64{"vectorAdd()": 1, "reduce()": 1}, got)
	assert.Zero(t, unknown)

	// B changes after E1 was made: E1 is as it was; E2, made after, has
	// the change.
	r.setNode(node1, gemm, 4)
	r.call(gputracebpf.KindGraphInstantiate, "cudaGraphInstantiate", graphB, execE2)
	got, _ = replays(t, h, r, execE1, execE2)
	assert.Equal(t, map[string]float64{"vectorAdd()": 1, "reduce()": 2, "gemm()": 1}, got)

	// E1's node2 changes; E2 and B are as they were (E3 is made of B).
	r.setExecNode(execE1, node2, softmax, 8)
	r.call(gputracebpf.KindGraphInstantiate, "cudaGraphInstantiate", graphB, execE3)
	got, _ = replays(t, h, r, execE1, execE2, execE3)
	assert.Equal(t, map[string]float64{"vectorAdd()": 1, "softmax()": 1, "gemm()": 2, "reduce()": 2}, got)
	pts := h.collect(t)
	// Grid sizes: E1 {1, 2} twice and {1, 8} once, E2 {4, 2} twice, E3
	// {4, 2} once.
	assert.Equal(t, float64(2*(1+2)+(1+8)+3*(4+2)), pts.One(t, semconv.CUDAKernelGridSize.Name).Value,
		"each replay's kernels with their grids")

	// Graph C, captured: its nodes have no names. An update refused
	// leaves E1 as it was; one made gives E1 C's kernels, and so to
	// execOld, not known before.
	r.call(gputracebpf.KindCaptureBegin, "cudaStreamBeginCapture", streamS, 0)
	r.launchOn("cudaLaunchKernel", softmax, one, one, 0, streamS)
	r.launchOn("cudaLaunchKernel", softmax, one, one, 0, streamS)
	r.call(gputracebpf.KindCaptureEnd, "cudaStreamEndCapture", streamS, graphC)
	update := func(exec, graph uint64, ret int32) {
		r.add(gputracebpf.Event{Kind: gputracebpf.KindGraphExecUpdate, API: apiOf("cudaGraphExecUpdate"), Ret: ret, A: [6]uint64{exec, graph}})
	}
	update(execE1, graphC, graphExecUpdateFailure)
	got, _ = replays(t, h, r, execE1)
	assert.Equal(t, map[string]float64{"vectorAdd()": 1, "softmax()": 1}, got, "a refused update changes nothing")
	update(execE1, graphC, 0)
	update(execOld, graphC, 0)
	got, unknown = replays(t, h, r, execE1, execOld)
	assert.Equal(t, map[string]float64{"softmax()": 4}, got, "an update made gives the graph's kernels")
	assert.Zero(t, unknown)
	// E1's nodes are named by B's handles still, but which of C's
	// kernels pairs with which is not known: a change makes E1 unknown.
	r.setExecNode(execE1, node1, gemm, 1)
	got, unknown = replays(t, h, r, execE1, execOld)
	assert.Equal(t, map[string]float64{"softmax()": 2}, got)
	assert.Equal(t, 1.0, unknown)
	// A node E2 does not hold: E2 unknown too.
	r.setExecNode(execE2, unnamedNode, gemm, 1)
	got, unknown = replays(t, h, r, execE2, execE3)
	assert.Equal(t, map[string]float64{"gemm()": 1, "reduce()": 1}, got)
	assert.Equal(t, 1.0, unknown)
	// An update from a graph not known: execOld is no longer known.
	update(execOld, 0x6f00, 0)
	_, unknown = replays(t, h, r, execOld)
	assert.Equal(t, 1.0, unknown)

	// Graph D, one node of which lost its return: its node is not named.
	// A node no call named may be C's or D's, not B's: C and D are
	// forgotten, and the executable graphs made of them after.
	r.call(gputracebpf.KindGraphCreate, "cudaGraphCreate", 0, graphD)
	r.kernelNode("cudaGraphAddKernelNode", graphD, node1+0x10, vectorAdd, 1)
	r.kernelNode("cudaGraphAddKernelNode", graphD, 0, gemm, 1) // the return lost
	r.setNode(unnamedNode, reduce, 1)
	r.call(gputracebpf.KindGraphInstantiate, "cudaGraphInstantiate", graphB, execE4)
	r.call(gputracebpf.KindGraphInstantiate, "cudaGraphInstantiate", graphC, execE1)
	r.call(gputracebpf.KindGraphInstantiate, "cudaGraphInstantiate", graphD, execE2)
	got, unknown = replays(t, h, r, execE4, execE1, execE2, execE3)
	assert.Equal(t, map[string]float64{"gemm()": 2, "reduce()": 2}, got, "B's executable graphs")
	assert.Equal(t, 2.0, unknown, "C's and D's")

	// A named node's return that comes with no node being added names
	// nothing; a node handle made anew after its graph is destroyed names
	// the new graph's node.
	r.call(gputracebpf.KindGraphNode, "cudaGraphAddKernelNode", graphB, nodeLost)
	r.call(gputracebpf.KindGraphDestroy, "cudaGraphDestroy", graphB, 0)
	r.call(gputracebpf.KindGraphCreate, "cudaGraphCreate", 0, graphB)
	r.kernelNode("cudaGraphAddKernelNode", graphB, node1, softmax, 1)
	r.setNode(node1, vectorAdd, 3)
	r.call(gputracebpf.KindGraphInstantiate, "cudaGraphInstantiate", graphB, execE4)
	got, _ = replays(t, h, r, execE4)
	assert.Equal(t, map[string]float64{"vectorAdd()": 1}, got)
	g := h.s.agg.procs[100].graphs
	assert.NotContains(t, g.nodes, uint64(nodeLost))
	assert.NotContains(t, g.nodes, uint64(node2), "B's node went with B")
	assert.Equal(t, nodeRef{graph: graphB, i: 0}, g.nodes[node1])
	assert.Empty(t, g.adding)
}

// TestGraphCaptureToGraph: a capture begun by
// cudaStreamBeginCaptureToGraph adds its kernels to a graph that exists;
// one that fails leaves that graph not known; one into a graph not known
// holds nothing after its end.
func TestGraphCaptureToGraph(t *testing.T) {
	h := newHarness(t)
	h.names.symbols[0x1000] = "vectorAdd()"
	h.names.symbols[0x2000] = "gemm()"
	const (
		graphB, graphOld = 0x6300, 0x6400
		execB, execB2    = 0x7200, 0x7300
		node1            = 0x9100
	)
	one := [3]uint32{1, 1, 1}
	r := &graphRecords{}
	capture := func(graph, end uint64, fn uint64) {
		r.call(gputracebpf.KindCaptureBegin, "cudaStreamBeginCaptureToGraph", streamS, graph)
		r.launchOn("cudaLaunchKernel", fn, one, one, 0, streamS)
		r.launchOn("cudaLaunchKernel", fn, one, one, 0, streamS)
		r.call(gputracebpf.KindCaptureEnd, "cudaStreamEndCapture", streamS, end)
	}
	r.call(gputracebpf.KindGraphCreate, "cudaGraphCreate", 0, graphB)
	r.kernelNode("cudaGraphAddKernelNode", graphB, node1, 0x1000, 1)
	capture(graphB, graphB, 0x2000)
	r.call(gputracebpf.KindGraphInstantiate, "cudaGraphInstantiate", graphB, execB)
	capture(graphOld, graphOld, 0x2000)
	got, unknown := replays(t, h, r, execB)
	assert.Equal(t, map[string]float64{"vectorAdd()": 1, "gemm()": 2}, got)
	assert.Zero(t, unknown)
	assert.Equal(t, 3, h.s.agg.procs[100].graphs.kernels, "B's three; the capture into a graph not known let go of its two")

	capture(graphB, 0, 0x1000) // failed
	r.call(gputracebpf.KindGraphInstantiate, "cudaGraphInstantiate", graphB, execB2)
	got, unknown = replays(t, h, r, execB, execB2)
	assert.Equal(t, map[string]float64{"vectorAdd()": 1, "gemm()": 2}, got, "the executable graph made before")
	assert.Equal(t, 1.0, unknown, "the one made after the failed capture")
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
// over a few streams, events, graphs, nodes and threads: it never panics,
// its count of the kernels it holds is what its captures and graphs hold
// (so the bound holds), a node handle names one kernel of a graph at
// most, every named node it looks up is where it says, a replay counts
// exactly the kernels its executable graph holds, and nothing it keeps
// passes its bounds.
func FuzzGraphs(f *testing.F) {
	f.Add([]byte{0, 1, 1, 1, 2, 0, 3, 0, 4, 0})
	f.Add([]byte{0, 0, 5, 0, 6, 1, 1, 1, 2, 0, 3, 0, 4, 0, 8, 0, 7, 0})
	f.Add([]byte{9, 0, 11, 0, 12, 16, 10, 20, 11, 16, 3, 0, 4, 0})
	f.Add([]byte{9, 0, 11, 0, 13, 0, 11, 4, 13, 5, 14, 1, 3, 0, 15, 0, 4, 0, 16, 16, 4, 0})
	f.Add([]byte{0, 1, 1, 1, 2, 4, 17, 0, 3, 0, 16, 0, 4, 0, 14, 0, 4, 0})
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
		{gputracebpf.KindGraphNode, "cudaGraphAddKernelNode"},
		{gputracebpf.KindGraphNodeParams, "cudaGraphKernelNodeSetParams"},
		{gputracebpf.KindGraphExecNodeParams, "cudaGraphExecKernelNodeSetParams"},
		{gputracebpf.KindGraphExecUpdate, "cudaGraphExecUpdate"},
		{gputracebpf.KindCaptureBegin, "cudaStreamBeginCaptureToGraph"},
	}
	f.Fuzz(func(t *testing.T, ops []byte) {
		h := newHarness(t)
		for i := 0; i+1 < len(ops); i += 2 {
			k := kinds[int(ops[i])%len(kinds)]
			x := uint64(ops[i+1])
			streamOf, handle := 0x5000+(x&3)*0x100, 0x6000+(x>>2&3)*0x100
			node := 0x9000 + (x>>4&7)*0x100 // 0x9000: none
			e := gputracebpf.Event{TS: uint64(i), PID: 100, TID: 100 + uint32(x>>7), Kind: k.kind, API: apiOf(k.api)}
			switch k.kind {
			case gputracebpf.KindLaunch:
				e.SetLaunch(0x1000+x, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 0, streamOf)
			case gputracebpf.KindCaptureBegin:
				e.A[0] = streamOf
				if k.api == "cudaStreamBeginCaptureToGraph" {
					e.A[1] = handle
				}
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
			case gputracebpf.KindGraphNode:
				e.A[0], e.A[1] = handle, node
				if x>>4&7 == 0 {
					e.A[1] = 0 // a failed making's NULL
				}
			case gputracebpf.KindGraphNodeParams:
				e.SetLaunch(0x1000+x, [3]uint32{2, 1, 1}, [3]uint32{32, 1, 1}, 0, node)
				e.Kind = gputracebpf.KindGraphNodeParams
			case gputracebpf.KindGraphExecNodeParams:
				e.SetLaunch(0x1000+x, [3]uint32{2, 1, 1}, [3]uint32{32, 1, 1}, 0, 0x7000+(x&3)*0x100)
				e.Kind, e.Wide = gputracebpf.KindGraphExecNodeParams, node
			case gputracebpf.KindGraphExecUpdate:
				e.A[0], e.A[1] = 0x7000+(x>>4&3)*0x100, handle
				if x&1 == 1 {
					e.Ret = 910 // refused
				}
			case gputracebpf.KindEventRecord:
				e.A[0], e.A[1] = 0x8000+(x>>4&3)*0x100, streamOf
			case gputracebpf.KindStreamWait:
				e.A[0], e.A[1] = streamOf, 0x8000+(x>>4&3)*0x100
			}
			if k.kind != gputracebpf.KindGraphLaunch {
				h.feed(e)
				continue
			}
			// A replay counts exactly its executable graph's kernels,
			// or none and one unknown replay.
			a := h.s.agg
			launched := func() int64 {
				var n int64
				for _, c := range a.launches {
					n += c.n
				}
				return n
			}
			want, unknown := int64(0), a.unknownReplays+1
			if p := a.procs[100]; p != nil && p.graphs != nil {
				if n := p.graphs.execs[e.GraphExec()]; n != nil && !n.partial {
					want, unknown = int64(len(n.kernels)), a.unknownReplays
				}
			}
			before := launched()
			h.feed(e)
			require.Equal(t, want, launched()-before, "kernels a replay counted")
			require.Equal(t, unknown, a.unknownReplays, "unknown replays")
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
		// Each node a graph holds by a handle is the one that handle
		// names.
		for h, n := range g.graphs {
			for i, k := range n.kernels {
				if k.node != 0 {
					require.Equal(t, nodeRef{graph: h, i: i}, g.nodes[k.node], "where node %#x is", k.node)
				}
			}
		}
		for n := range nodes {
			named := map[uint64]bool{}
			for _, k := range n.kernels {
				require.False(t, k.node != 0 && named[k.node], "node %#x twice in a graph", k.node)
				named[k.node] = true
			}
		}
		require.LessOrEqual(t, len(g.nodes), maxGraphKernels)
		require.LessOrEqual(t, len(g.adding), maxAdding)
		require.LessOrEqual(t, len(g.graphs), maxGraphs)
		require.LessOrEqual(t, len(g.execs), maxGraphs)
		require.LessOrEqual(t, len(g.joins), maxJoins)
	})
}
