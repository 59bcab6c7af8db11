package gputrace

// Kernel-tier tests: a real Source (BPF, uprobes) tracing the cudaprog
// programs, which call the real Debian libcudart 11.8 and libcuda 535 with
// the arguments of the cudaprog scenario tables. Every expected value
// comes from those tables.
//
// The uprobes attached to a file fire in every process that maps it, and
// other packages' tests run CUDA programs at the same time: every check
// filters by the test program's pid.

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/gputracebpf"
	"github.com/xpuscope/xpuscope/internal/procfs/procfstest"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/testutil/cudaprog"
	"github.com/xpuscope/xpuscope/internal/uprobe"
	"github.com/xpuscope/xpuscope/semconv"
)

// TestTrace runs the scenario programs under one Source, started first
// and shared by the subtests (every check filters by the program's pid).
// The fallback sweep is an hour away, so that only the exec and loader
// hooks (or an explicit Rescan) find new libraries. The late starters are
// TestLateStarters (discovery_test.go).
func TestTrace(t *testing.T) {
	requireRoot(t)
	runScenarios(t, startTracing(t, WithRescanInterval(time.Hour)), slices.Concat(recordExact, []scenarioTest{
		{"RuntimeRegister", testRuntimeRegister},
		{"Occupancy", testOccupancy},
		{"RuntimeGraphs", testRuntimeGraphs},
		{"DriverGraphs", testDriverGraphs},
		{"RuntimeGraphUpdates", testRuntimeGraphUpdates},
		{"DriverGraphUpdates", testDriverGraphUpdates},
		{"StrippedLibrary", testStrippedLibrary},
	}))
}

// scenarioTest is a subtest of one Source shared by several.
type scenarioTest struct {
	name string
	f    func(*testing.T, *traced)
}

// recordExact are the scenarios that check every record's arguments and
// every series, also run under load (TestTraceUnderLoad).
var recordExact = []scenarioTest{
	{"RuntimeLaunch", testRuntimeLaunch},
	{"RuntimeThreads", testRuntimeThreads},
	{"DriverLaunch", testDriverLaunch},
	{"Static", testStatic},
	{"ForwardCountedOnce", testForwardCountedOnce},
}

func runScenarios(t *testing.T, tr *traced, tests []scenarioTest) {
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, tr) })
	}
}

// TestTracePerfEventUprobes runs a scenario with one perf-event uprobe per
// symbol, the attach path of kernels without uprobe_multi (before 6.6).
func TestTracePerfEventUprobes(t *testing.T) {
	requireRoot(t)
	tr := startTracing(t, WithRescanInterval(time.Hour), withoutUprobeMulti())
	testStatic(t, tr)
}

// runScenario runs s under tr: the program starts, tr is made to probe
// lib (as target), the program makes its calls, and its events arrive and
// are checked against the table. The program lingers at exit until its
// events are handled. It returns the process and its output.
func runScenario(t *testing.T, tr *traced, s cudaprog.Scenario, target, lib string) (*cudaprog.Proc, []string) {
	t.Helper()
	exe := cudaprog.Build(t, s.Program)
	p := startLingering(t, exe, s.Name)
	a := tr.waitAttached(t, target, lib)
	t.Logf("attached to %s (%s) as first seen by pid %d", a.Path, a.Target, a.PID)
	tr.rec.Watch(p.Pid)
	p.Go()
	waitPrinted(t, p, "DONE")
	n := 0
	for _, seq := range s.Threads {
		n += len(traceable(seq))
	}
	evs := tr.waitEvents(t, p.Pid, n)
	lines := p.Wait()
	require.Equal(t, s.Rets(), cudaprog.Rets(lines), "return codes")
	tids := cudaprog.Threads(lines)
	if len(s.Threads) == 1 {
		tids = map[int]int{0: p.Pid}
	}
	checkThreads(t, evs, p.Pid, s.Threads, tids, cudaprog.Stubs(lines))
	return p, lines
}

// testRuntimeLaunch: every traced runtime API, through the real
// libcudart: each record's arguments, then every series.
func testRuntimeLaunch(t *testing.T, tr *traced) {
	s := cudaprog.RuntimeLaunch
	p, _ := runScenario(t, tr, s, TargetRuntime, cudaprog.RealCudart(t))
	x := expect(t, s.Threads, demangled)
	require.NotEmpty(t, x.launches)
	require.NotEmpty(t, x.errors)
	pts := tr.checkMetrics(t, p.Pid, filepath.Base(cudaprog.Build(t, s.Program)), x)
	// cudaSetDevice came first: every series is on its device.
	dev := strconv.Itoa(s.Filter("cudaSetDevice")[0].Value)
	for _, pt := range pts.Find(semconv.CUDAKernelLaunches.Name) {
		require.Equal(t, dev, pt.Get(semconv.CUDADevice))
	}
}

// testOccupancy: the occupancy model, fed by the real libcudart's calls:
// the two kernels before the synchronised event end at the event, the
// ones after it at the stream synchronisation and at a synchronous copy. Without a GPU every call
// fails, and a failed synchronisation still ends the kernels it covers.
func testOccupancy(t *testing.T, tr *traced) {
	s := cudaprog.RuntimeOccupancy
	p, _ := runScenario(t, tr, s, TargetRuntime, cudaprog.RealCudart(t))
	before := 0
	for _, c := range s.Calls() {
		if c.API == "cudaEventSynchronize" {
			break
		}
		if c.API == "cudaLaunchKernel" {
			before++
		}
	}
	after := len(s.Filter("cudaLaunchKernel")) - before
	require.Positive(t, before)
	require.Positive(t, after)
	modelled := semconv.GPUMeasurementSource.String(semconv.MeasurementSourceEBPFModel)
	pid := semconv.ProcessPID.Int(p.Pid)
	// The series exists from the first report after the launches; its
	// time counts once the completion edges are in (a later report).
	pts := tr.waitPoints(t, func(pts testutil.Points) bool {
		tt := pts.Find(semconv.ProcessGPUThreadTime.Name, pid)
		return len(tt) == 1 && tt[0].Value > 0
	})
	byCompletion := map[string]uint64{}
	for _, pt := range pts.Find(semconv.GPUKernelDuration.Name, semconv.ContainerID.String(containerOf(p.Pid))) {
		require.True(t, pt.Has(semconv.GPUMeasurementSource))
		require.Equal(t, semconv.MeasurementSourceEBPFModel, pt.Get(semconv.GPUMeasurementSource))
		byCompletion[pt.Get(semconv.GPUKernelCompletion)] += pt.Count
	}
	require.Equal(t, map[string]uint64{
		semconv.KernelCompletionEvent:        uint64(before),
		semconv.KernelCompletionSyncFallback: uint64(after),
	}, byCompletion)
	tt := pts.One(t, semconv.ProcessGPUThreadTime.Name, pid, modelled)
	require.Positive(t, tt.Value, "the kernels were busy for some thread-seconds")
	require.Len(t, pts.Find(semconv.ProcessGPUSMActiveRatio.Name, pid, modelled), 1)
}

// testRuntimeGraphs: a stream capture through the real libcudart, its
// graph instantiated and replayed, and graphs built node by node (a kernel
// node, the captured graph as a child, a clone with one node more):
// every replay counts each of its graph's kernels once, under
// cudaGraphLaunch, the captured launches count as no run, and the
// replays of executable graphs not known (never instantiated, destroyed)
// count no kernel. Each record's arguments are
// checked by runScenario, the graph handles included.
func testRuntimeGraphs(t *testing.T, tr *traced) {
	s := cudaprog.RuntimeGraphs
	p, _ := runScenario(t, tr, s, TargetRuntime, cudaprog.RealCudart(t))
	// Which launches the capture took: those on StreamA, and on StreamC
	// after it waited for the event recorded on StreamA. GraphA's replays
	// count them, and so do GraphB's two and GraphC's one, which embed
	// GraphA; GraphB's own vectorAdd node counts in both of those, and
	// GraphC's own matmul node in its one.
	want := map[string]float64{}
	runs := map[string]float64{}
	for _, c := range s.Filter("cudaLaunchKernel") {
		if c.Stream == cudaprog.StreamB {
			runs[demangled(c)]++
		} else {
			want[demangled(c)] += cudaprog.GraphReplays + 2 + 1
		}
	}
	require.Len(t, want, 3, "the capture's kernels")
	for _, c := range s.Filter("cudaGraphAddKernelNode") {
		n := 1.0 // GraphC's
		if c.Handle == cudaprog.GraphB {
			n = 2 + 1
		}
		want[demangled(c)] += n
	}
	require.Len(t, runs, 1, "the run made while capturing")
	pid := semconv.ProcessPID.Int(p.Pid)
	byName := func(pts testutil.Points, api string) map[string]float64 {
		out := map[string]float64{}
		for _, pt := range pts.Find(semconv.CUDAKernelLaunches.Name, pid, semconv.CUDAAPIName.String(api)) {
			out[pt.Get(semconv.CUDAKernelName)] += pt.Value
		}
		return out
	}
	pts := tr.waitPoints(t, func(pts testutil.Points) bool { return maps.Equal(byName(pts, "cudaGraphLaunch"), want) })
	require.Equal(t, want, byName(pts, "cudaGraphLaunch"), "each replay counts each captured kernel")
	require.Equal(t, runs, byName(pts, "cudaLaunchKernel"), "the captured launches are no runs")
	require.Equal(t, float64(len(s.Filter("cudaGraphLaunch"))), pts.One(t, semconv.CUDAGraphLaunches.Name, pid).Value)
	// Other processes' graph launches count here too: at least this one's
	// two replays of graphs not known.
	require.GreaterOrEqual(t, pts.One(t, semconv.XpuscopeCUDAGraphReplaysUnknown.Name).Value, 2.0)
}

// testDriverGraphs: graphs through the real libcuda 535: graphs made by
// cuGraphCreate and cuGraphClone, with kernel nodes added by
// cuGraphAddKernelNode and its _v2 (whose parameters differ in size and
// start alike) and a child graph node, instantiated by the three
// instantiate calls and replayed. Each executable graph holds exactly its
// graph's kernels, in order, and every replay counts each of them once,
// under cuGraphLaunch: N replays of a graph of k nodes count N × k
// kernels, each kernel N times (the driver's kernels are unnamed here, as
// no cuModuleGetFunction can succeed: each kernel has a grid size in a
// histogram bucket of its own, so the grid size histogram's buckets count
// each kernel's launches). The two captures (both forms of
// cuStreamBeginCapture) end in the NULL graph that libcuda writes without
// a GPU: they make no graph, and their launches count as neither runs nor
// kernels of a graph. Each record's arguments are checked by runScenario.
func testDriverGraphs(t *testing.T, tr *traced) {
	s := cudaprog.DriverGraphs
	p, _ := runScenario(t, tr, s, TargetDriver, cudaprog.RealLibcuda(t))
	kernel := func(c cudaprog.Call) graphKernel {
		return graphKernel{fn: c.Function, handle: true, grid: c.Grid, block: c.Block, smem: uint64(c.SharedMem)}
	}
	nodes := func(graph uint64) []graphKernel {
		var out []graphKernel
		for _, c := range s.Calls() {
			if strings.Contains(c.API, "GraphAddKernelNode") && c.Handle == graph {
				out = append(out, kernel(c))
			}
		}
		return out
	}
	// From the table: GraphA's nodes; GraphB, GraphA's clone, and its
	// own node; GraphC, GraphA as a child and its own node.
	graphA := nodes(cudaprog.GraphA)
	graphB := slices.Concat(graphA, nodes(cudaprog.GraphB))
	graphC := slices.Concat(graphA, nodes(cudaprog.GraphC))
	require.Len(t, graphA, 3)
	require.Len(t, graphB, 4)
	require.Len(t, graphC, 4)
	// The runs: the launches outside the captures, from each capture's
	// begin to its end on its stream.
	var runs []cudaprog.Call
	capturing := map[uint64]bool{}
	for _, c := range s.Calls() {
		switch {
		case strings.Contains(c.API, "BeginCapture"):
			capturing[c.Stream] = true
		case strings.Contains(c.API, "EndCapture"):
			capturing[c.Stream] = false
		case strings.Contains(c.API, "LaunchKernel") && !capturing[c.Stream]:
			runs = append(runs, c)
		}
	}
	require.Len(t, runs, 2)
	replays := map[uint64]int{}
	for _, c := range s.Filter("cuGraphLaunch") {
		replays[c.Handle]++
	}
	require.Equal(t, map[uint64]int{cudaprog.GraphExecA: cudaprog.DriverGraphReplays + 1, cudaprog.GraphExecB: 2, cudaprog.GraphExecC: 2}, replays)

	// The engine's executable graphs: GraphExecA was destroyed, B and C
	// hold their graphs' kernels; the captures left nothing.
	tr.mu.Lock()
	g := tr.agg.procs[uint32(p.Pid)].graphs
	require.NotNil(t, g)
	execs := map[uint64][]graphKernel{}
	for h, n := range g.execs {
		execs[h] = slices.Clone(n.kernels)
	}
	capturingNow := len(g.capturing)
	tr.mu.Unlock()
	require.Equal(t, map[uint64][]graphKernel{cudaprog.GraphExecB: graphB, cudaprog.GraphExecC: graphC}, execs)
	require.Zero(t, capturingNow, "the captures ended")

	// Each replay of a known executable graph counts each of its kernels
	// once; the last launch of GraphExecA, destroyed, counts none.
	counted := map[graphKernel]int{}
	for graph, n := range map[*[]graphKernel]int{&graphA: cudaprog.DriverGraphReplays, &graphB: 2, &graphC: 2} {
		for _, k := range *graph {
			counted[k] += n
		}
	}
	replayed := cudaprog.DriverGraphReplays*len(graphA) + 2*len(graphB) + 2*len(graphC)
	pid := semconv.ProcessPID.Int(p.Pid)
	launches := func(pts testutil.Points, api string) float64 {
		var n float64
		for _, pt := range pts.Find(semconv.CUDAKernelLaunches.Name, pid, semconv.CUDAAPIName.String(api)) {
			require.Equal(t, semconv.Unknown, pt.Get(semconv.CUDAKernelName))
			n += pt.Value
		}
		return n
	}
	pts := tr.waitPoints(t, func(pts testutil.Points) bool { return launches(pts, "cuGraphLaunch") == float64(replayed) })
	require.Equal(t, float64(replayed), launches(pts, "cuGraphLaunch"), "N replays of k nodes: N × k kernels")
	require.Equal(t, float64(len(runs)), launches(pts, "cuLaunchKernel"), "the captured launches are no runs")
	require.Zero(t, launches(pts, "cuLaunchKernelEx")+launches(pts, "cuLaunchKernel_ptsz"), "the captured launches are no runs")
	require.Equal(t, float64(len(s.Filter("cuGraphLaunch"))), pts.One(t, semconv.CUDAGraphLaunches.Name, pid).Value)
	for _, api := range []string{"cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchKernel_ptsz"} {
		require.Equal(t, float64(len(s.Filter(api))), pts.One(t, semconv.CUDAAPICalls.Name, pid, semconv.CUDAAPIName.String(api)).Value,
			"a captured launch is still a call")
	}

	// Per kernel: the grid sizes' buckets.
	bounds := semconv.CUDAKernelGridSize.Buckets
	want := make([]uint64, len(bounds)+1)
	bucket := func(d [3]uint32) int {
		i, _ := slices.BinarySearch(bounds, float64(d[0])*float64(d[1])*float64(d[2])) // buckets are (lower, upper]
		return i
	}
	seen := map[int]bool{}
	for k, n := range counted {
		b := bucket(k.grid)
		require.False(t, seen[b], "two kernels in bucket %d: the check would not tell them apart", b)
		seen[b] = true
		want[b] += uint64(n)
	}
	for _, c := range runs {
		b := bucket(c.Grid)
		require.False(t, seen[b], "a run in a kernel's bucket %d", b)
		seen[b] = true
		want[b]++
	}
	h := pts.One(t, semconv.CUDAKernelGridSize.Name, semconv.ContainerID.String(containerOf(p.Pid)))
	require.Equal(t, want, h.Buckets, "launches per grid-size bucket: each kernel's replays")
}

// expectedGridBuckets is the grid-size histogram's bucket counts for launches of
// the grid sizes given, each the number of times given.
func expectedGridBuckets(launches map[uint32]int) []uint64 {
	bounds := semconv.CUDAKernelGridSize.Buckets
	out := make([]uint64, len(bounds)+1)
	for grid, n := range launches {
		i, _ := slices.BinarySearch(bounds, float64(grid)) // buckets are (lower, upper]
		out[i] += uint64(n)
	}
	return out
}

// launchesOf returns pid's cuda.kernel.launches under api, by kernel
// name.
func launchesOf(pts testutil.Points, pid int, api string) map[string]float64 {
	out := map[string]float64{}
	for _, pt := range pts.Find(semconv.CUDAKernelLaunches.Name, semconv.ProcessPID.Int(pid), semconv.CUDAAPIName.String(api)) {
		out[pt.Get(semconv.CUDAKernelName)] += pt.Value
	}
	return out
}

// testRuntimeGraphUpdates: a graph's kernels changed through the real
// libcudart, node by node (the nodes named by their making's return, read
// from the pre-filled outputs): cudaGraphKernelNodeSetParams before the
// instantiation changes what every replay counts, after it only the
// executable graphs made later; cudaGraphExecKernelNodeSetParams changes
// the one executable graph; cudaGraphExecUpdate, failing (no GPU),
// changes nothing; a graph destroyed and made anew under the same handle,
// with a node of the same handle, is the new one. Every kernel has a grid
// size of its own, so the grid-size buckets count each kernel.
func testRuntimeGraphUpdates(t *testing.T, tr *traced) {
	s := cudaprog.RuntimeGraphUpdates
	p, _ := runScenario(t, tr, s, TargetRuntime, cudaprog.RealCudart(t))
	const r = cudaprog.UpdateReplays
	// The stages of the table (RuntimeGraphUpdates' comment), by grid:
	// GraphExecB {vectorAdd 2, reduce 8} r times; {matmul 16, reduce 8}
	// 2r + 1 times (its NodeA set; B's NodeA set after, and the failed
	// update, change nothing); GraphExecC {vectorAdd 32, reduce 8} r
	// times; the new GraphExecC {reduce 64} once.
	byGrid := map[uint32]int{2: r, 8: r + 2*r + 1 + r, 16: 2*r + 1, 32: r, 64: 1}
	want := map[string]float64{"vectorAdd(float*, float*, float*, int)": 2 * r,
		"matmul(float const*, float const*, float*, int)": 2*r + 1, "void reduce<float>(float*, int)": 4*r + 2}
	for _, c := range s.Calls() {
		if c.Func != "" {
			require.Contains(t, want, demangled(c))
		}
	}
	pts := tr.waitPoints(t, func(pts testutil.Points) bool { return maps.Equal(launchesOf(pts, p.Pid, "cudaGraphLaunch"), want) })
	require.Equal(t, want, launchesOf(pts, p.Pid, "cudaGraphLaunch"))
	h := pts.One(t, semconv.CUDAKernelGridSize.Name, semconv.ContainerID.String(containerOf(p.Pid)))
	require.Equal(t, expectedGridBuckets(byGrid), h.Buckets, "launches per grid-size bucket: each kernel's replays")
	pid := semconv.ProcessPID.Int(p.Pid)
	require.Equal(t, float64(len(s.Filter("cudaGraphAddKernelNode"))), pts.One(t, semconv.CUDAAPIErrors.Name, pid,
		semconv.CUDAAPIName.String("cudaGraphAddKernelNode")).Value, "the nodes' makings' errors, from their returns")
	require.Equal(t, 1.0, pts.One(t, semconv.CUDAAPIErrors.Name, pid, semconv.CUDAAPIName.String("cudaGraphExecUpdate")).Value)
}

// testDriverGraphUpdates: the same through the real libcuda 535, with
// both versions of the driver's calls and CUDA 12.2's generic node calls
// (cuGraphAddNode of a kernel, an empty node and a child graph,
// cuGraphNodeSetParams, cuGraphExecNodeSetParams). Each kernel has a grid
// size of its own.
func testDriverGraphUpdates(t *testing.T, tr *traced) {
	s := cudaprog.DriverGraphUpdates
	p, _ := runScenario(t, tr, s, TargetDriver, cudaprog.RealLibcuda(t))
	const r = cudaprog.UpdateReplays
	// GraphExecA (DriverGraphUpdates' comment): {16, 32, 64, 1} r times,
	// its three nodes set before its instantiation; {128, 256, 512, 1}
	// r + 1 times, after its own three were set (the failed updates
	// change nothing). The empty node is no kernel; the child graph's
	// kernel (1) is in every replay.
	byGrid := map[uint32]int{16: r, 32: r, 64: r, 128: r + 1, 256: r + 1, 512: r + 1, 1: 2*r + 1}
	// The calls that made no record count once the BPF side's counts
	// are read (every second).
	x := expect(t, s.Threads, func(cudaprog.Call) string { return semconv.Unknown })
	require.Equal(t, 3.0, x.calls["cuGraphAddNode"])
	pts := tr.waitPoints(t, func(pts testutil.Points) bool {
		return launchesOf(pts, p.Pid, "cuGraphLaunch")[semconv.Unknown] == float64(4*(2*r+1)) && x.callsMatch(ofPid(pts, p.Pid))
	})
	require.Equal(t, map[string]float64{semconv.Unknown: 4 * (2*r + 1)}, launchesOf(pts, p.Pid, "cuGraphLaunch"))
	h := pts.One(t, semconv.CUDAKernelGridSize.Name, semconv.ContainerID.String(containerOf(p.Pid)))
	require.Equal(t, expectedGridBuckets(byGrid), h.Buckets, "launches per grid-size bucket: each kernel's replays")
	require.Equal(t, x.calls, gather(ofPid(pts, p.Pid), semconv.CUDAAPICalls.Name, sum, string(semconv.CUDAAPIName)),
		"every call, the empty node's making, which makes no record, among them")

	// The engine's executable graph: the kernels its nodes were last
	// set to, named by GraphA's nodes, and the child graph's.
	tr.mu.Lock()
	var got []graphKernel
	if n := tr.agg.procs[uint32(p.Pid)].graphs.execs[cudaprog.GraphExecA]; n != nil {
		got = slices.Clone(n.kernels)
	}
	tr.mu.Unlock()
	set := func(c cudaprog.Call) graphKernel {
		return graphKernel{fn: c.Function, handle: true, grid: c.Grid, block: c.Block, smem: uint64(c.SharedMem), node: c.Node}
	}
	var wantKernels []graphKernel
	for _, c := range s.Calls() {
		if strings.HasPrefix(c.API, "cuGraphExec") && strings.Contains(c.API, "NodeSetParams") {
			wantKernels = append(wantKernels, set(c))
		}
	}
	child := s.Filter("cuGraphAddKernelNode")[0]
	require.Equal(t, cudaprog.GraphC, child.Handle)
	wantKernels = append(wantKernels, graphKernel{fn: child.Function, handle: true, grid: child.Grid, block: child.Block})
	require.Equal(t, wantKernels, got)
}

// TestGraphsBuiltBeforeAttach: graphs a process made before the Source
// started (a capture, and a graph made node by node, both instantiated),
// replayed after, through the real libcudart: their replays count no
// kernel and count as unknown, as do those of executable graphs made
// after of the graph made before, and of a graph that embeds the capture
// made before; the one graph wholly made after is known.
func TestGraphsBuiltBeforeAttach(t *testing.T) {
	requireRoot(t)
	s := cudaprog.RuntimeGraphsBefore
	p := startLingering(t, cudaprog.Build(t, s.Program), s.Name) // READY: Before's calls were made
	tr := startTracing(t, WithRescanInterval(time.Hour))
	tr.waitAttached(t, TargetRuntime, cudaprog.RealCudart(t))
	tr.rec.Watch(p.Pid)
	p.Go()
	waitPrinted(t, p, "DONE")
	evs := tr.waitEvents(t, p.Pid, len(traceable(s.Threads[0])))
	lines := p.Wait()
	require.Equal(t, s.Rets(), cudaprog.Rets(lines), "return codes")
	checkThreads(t, evs, p.Pid, s.Threads, map[int]int{0: p.Pid}, cudaprog.Stubs(lines))

	const r = cudaprog.BeforeReplays
	replays := len(s.Filter("cudaGraphLaunch"))
	require.Equal(t, 5*r, replays)
	// GraphExecD, captured after, replays its reduce; the four others
	// are unknown.
	want := map[string]float64{"void reduce<float>(float*, int)": r}
	pts := tr.waitPoints(t, func(pts testutil.Points) bool { return maps.Equal(launchesOf(pts, p.Pid, "cudaGraphLaunch"), want) })
	require.Equal(t, want, launchesOf(pts, p.Pid, "cudaGraphLaunch"))
	require.Empty(t, launchesOf(pts, p.Pid, "cudaLaunchKernel"), "the launch captured after is no run")
	pid := semconv.ProcessPID.Int(p.Pid)
	require.Equal(t, float64(replays), pts.One(t, semconv.CUDAGraphLaunches.Name, pid).Value)
	// The self-metric is the Source's: other processes' replays of
	// graphs not known count in it too.
	require.GreaterOrEqual(t, pts.One(t, semconv.XpuscopeCUDAGraphReplaysUnknown.Name).Value, float64(4*r))
}

// testRuntimeThreads: each thread's records carry the device its own
// cudaSetDevice chose, and its own launches.
func testRuntimeThreads(t *testing.T, tr *traced) {
	s := cudaprog.RuntimeThreads
	p, lines := runScenario(t, tr, s, TargetRuntime, cudaprog.RealCudart(t))
	tids := cudaprog.Threads(lines)
	require.Len(t, tids, cudaprog.ThreadCount)
	launches := map[uint32]int{}
	devs := map[uint32]map[int32]bool{}
	for _, e := range tr.rec.Events(p.Pid) {
		if e.Kind == gputracebpf.KindLaunch {
			launches[e.TID]++
		}
		if devs[e.TID] == nil {
			devs[e.TID] = map[int32]bool{}
		}
		devs[e.TID][e.Device] = true
	}
	for i, seq := range s.Threads {
		want := 0
		for _, c := range seq {
			if kindOf(c.API) == gputracebpf.KindLaunch {
				want++
			}
		}
		tid := uint32(tids[i])
		require.Equal(t, want, launches[tid], "launches of thread %d", i)
		require.Equal(t, map[int32]bool{devices(seq)[len(seq)-1]: true}, devs[tid], "devices of thread %d", i)
	}
	x := expect(t, s.Threads, demangled)
	pts := tr.checkMetrics(t, p.Pid, filepath.Base(cudaprog.Build(t, s.Program)), x)
	require.Len(t, pts.Find(semconv.CUDAKernelLaunches.Name), cudaprog.ThreadCount, "one series per device")
}

// testRuntimeRegister: the names __cudaRegisterFunction records arrive
// before the launches, and name them.
func testRuntimeRegister(t *testing.T, tr *traced) {
	s := cudaprog.RuntimeRegister
	p, lines := runScenario(t, tr, s, TargetRuntime, cudaprog.RealCudart(t))
	stubs := cudaprog.Stubs(lines)
	regs := s.Filter("__cudaRegisterFunction")
	require.NotEmpty(t, regs)

	// The process's registered names (which win over the stubs' ELF
	// symbols) are the table's.
	want := map[uint64]string{}
	for _, c := range regs {
		want[stubs[c.Func]] = c.Func
	}
	tr.mu.Lock()
	got := maps.Clone(tr.agg.procs[uint32(p.Pid)].registered)
	tr.mu.Unlock()
	require.Equal(t, want, got)

	x := expect(t, s.Threads, demangled)
	tr.checkMetrics(t, p.Pid, filepath.Base(cudaprog.Build(t, s.Program)), x)
	require.Len(t, x.launches, len(regs))
}

// testDriverLaunch: the driver API through the real libcuda. Driver
// handles have no names (no cuModuleGetFunction named them); copy
// directions come from the functions' names.
func testDriverLaunch(t *testing.T, tr *traced) {
	s := cudaprog.DriverLaunch
	unresolved := func() float64 { return tr.collect(t).One(t, semconv.XpuscopeCUDAKernelNamesUnresolved.Name).Value }
	before := unresolved()
	p, _ := runScenario(t, tr, s, TargetDriver, cudaprog.RealLibcuda(t))
	x := expect(t, s.Threads, func(cudaprog.Call) string { return semconv.Unknown })
	require.NotEmpty(t, x.launches)
	require.NotEmpty(t, x.graphs)
	require.NotEmpty(t, x.memcpy)
	tr.checkMetrics(t, p.Pid, filepath.Base(cudaprog.Build(t, s.Program)), x)
	// The unresolved-name counter is the Source's: other processes may
	// add to it too.
	var launches float64
	for _, v := range x.launches {
		launches += v
	}
	require.GreaterOrEqual(t, unresolved()-before, launches)
}

// testStatic: the static program defines its own cudaLaunchKernel,
// standing in for an application linking libcudart_static.a; the Source
// attaches to the executable itself (the symbol is in .symtab only) and
// names the launches by the stubs' symbols.
func testStatic(t *testing.T, tr *traced) {
	s := cudaprog.StaticLaunch
	exe := cudaprog.Build(t, s.Program)
	p, _ := runScenario(t, tr, s, TargetRuntime, exe)
	a, ok := tr.attachment(TargetRuntime, exe)
	require.True(t, ok)
	require.Equal(t, exe, a.Path)
	require.Equal(t, []string{"cudaLaunchKernel"}, a.Symbols)
	tr.checkMetrics(t, p.Pid, filepath.Base(exe), expect(t, s.Threads, demangled))
}

// pipWheelPath is where a pip wheel puts the CUDA runtime.
const pipWheelPath = "site-packages/nvidia/cuda_runtime/lib/libcudart.so.12"

// testStrippedLibrary: a libcudart.so.12 defining no cudaLaunchKernel is
// reported as rejected, naming the symbol, and nothing breaks.
func testStrippedLibrary(t *testing.T, tr *traced) {
	lib := buildSharedLib(t, "libcudart.so.12", "int cudartStandIn(void) { return 0; }\n")
	p := cudaprog.Start(t, cudaprog.Build(t, "dlopen"), lib, "pause")
	p.Go()
	p.WaitLine("LOADED ")
	var rej []uprobe.Rejection
	rejected := func() bool {
		rej = nil
		for _, r := range tr.Status().Rejections {
			if r.Path == lib {
				rej = append(rej, r)
			}
		}
		return len(rej) > 0
	}
	require.True(t, poll(2*time.Second, rejected), "no rejection of %s: %+v", lib, tr.Status())
	require.Len(t, rej, 1)
	require.Equal(t, TargetRuntime, rej[0].Target)
	require.Equal(t, p.Pid, rej[0].PID)
	require.Contains(t, rej[0].Reason, "cudaLaunchKernel")
	_, ok := tr.attachment(TargetRuntime, lib)
	require.False(t, ok)
	p.Kill()
	// The Source goes on.
	require.NotEmpty(t, tr.collect(t).Find(semconv.XpuscopeCUDAAttachedFiles.Name))
}

// testForwardCountedOnce: a runtime launch that goes on to the driver's
// cuLaunchKernel (the forward library, as the real runtime does on a GPU
// machine) is counted once, as the runtime call; the BPF side counts the
// nested driver call.
func testForwardCountedOnce(t *testing.T, tr *traced) {
	fwd := cudaprog.Build(t, "forward")
	libcuda := cudaprog.RealLibcuda(t)
	p := startLingering(t, cudaprog.Build(t, "dlopen"), fwd, "pause")
	tr.rec.Watch(p.Pid)
	p.Go()
	p.WaitLine("LOADED ")
	tr.waitAttached(t, TargetRuntime, fwd)
	tr.waitAttached(t, TargetDriver, libcuda)
	before, err := tr.objs.Counters()
	require.NoError(t, err)

	p.Go()
	p.WaitLine("CALLED")
	time.Sleep(3 * tr.cfg.pollInterval)
	evs := tr.rec.Events(p.Pid)
	if len(evs) == 2 {
		assert.False(t, evs[1].API.Driver(), "the forwarded launch was counted twice: the driver call came %v after the runtime call's entry "+
			"(the forward library initialises the driver first), past the BPF nest window",
			time.Duration(evs[1].TS-evs[0].TS))
	}
	evs = tr.waitEvents(t, p.Pid, 1)
	after, err := tr.objs.Counters()
	require.NoError(t, err)
	p.Go()
	lines := p.Wait()
	require.Equal(t, map[string]map[int]int{"cudaLaunchKernel": {cudaprog.ForwardLaunch.Ret: 1}}, cudaprog.Rets(lines))
	checkThreads(t, evs, p.Pid, [][]cudaprog.Call{{cudaprog.DlopenLaunch}}, map[int]int{0: p.Pid}, cudaprog.Stubs(lines))
	require.Greater(t, after[gputracebpf.CounterNested], before[gputracebpf.CounterNested], "nested driver launches")
	tr.checkMetrics(t, p.Pid, "dlopen", expect(t, [][]cudaprog.Call{{cudaprog.DlopenLaunch}}, demangled))
}

// noPrivEnv runs TestNoPrivilegeChild for real.
const noPrivEnv = "XPUSCOPE_CUDATRACE_NOPRIV_CHILD"

// TestNoPrivilege: without privilege New says what is missing, as an
// ErrUnavailable. The test binary runs itself as nobody (uid/gid 65534,
// no capabilities).
func TestNoPrivilege(t *testing.T) {
	requireRoot(t)
	self, err := os.Executable()
	require.NoError(t, err)
	dir, err := os.MkdirTemp("", "cudatrace-nopriv-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755)) // nobody must reach the binary
	bin := filepath.Join(dir, "cudatrace.test")
	copyFile(t, self, bin, 0o755)

	cmd := exec.Command(bin, "-test.run=^TestNoPrivilegeChild$", "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), noPrivEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "--- PASS: TestNoPrivilegeChild", "%s", out)
	require.Contains(t, string(out), "CAP_BPF", "%s", out)
	t.Logf("as nobody: %s", out)
}

// TestNoPrivilegeChild is TestNoPrivilege's child.
func TestNoPrivilegeChild(t *testing.T) {
	if os.Getenv(noPrivEnv) == "" {
		return // only TestNoPrivilege's child does anything
	}
	require.Equal(t, 65534, os.Geteuid())
	status, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	require.Contains(t, string(status), "\nCapEff:\t0000000000000000\n", "no capabilities")
	s, err := New(CUDA, WithMeterProvider(sdkmetric.NewMeterProvider()))
	if err == nil {
		s.Close()
	}
	require.Error(t, err, "New succeeded without privilege")
	require.ErrorIs(t, err, xpuscope.ErrUnavailable)
	require.Contains(t, err.Error(), "CAP_BPF")
	// What is missing, said once; no benchmark program (it is not even
	// loaded), no guess at another cause.
	require.Equal(t, "cudatrace: load BPF object: operation not permitted: needs CAP_BPF and CAP_PERFMON, or root", err.Error())
	t.Logf("New: %v", err)
}

func copyFile(t testing.TB, src, dst string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dst, b, mode))
}

// TestTraceFlood: with a one-page ring buffer and a reader that BPF never
// wakes and that drains every two seconds, most of a 20000-launch burst
// is dropped; every launch is either received or counted dropped, and
// the call count (records received plus the calls BPF counted as
// unrecorded) is exact regardless.
//
// The drop counter counts every process's records, so the Source must
// see no other process: its procfs root holds only the program's pid, so
// it probes only what that process maps, and the launches are made by the
// static program (its own cudaLaunchKernel, in a file that no other
// process runs) rather than a shared libcudart. The event hook checks
// that no other pid was seen.
func TestTraceFlood(t *testing.T) {
	requireRoot(t)
	const n = 20000
	exe := cudaprog.Build(t, "static")
	p := cudaprog.Start(t, exe, "loop", strconv.Itoa(n))
	tr := startTracing(t, WithProcRoot(procfstest.Host(t, p.Pid)), WithRingBufferSize(4096), withWakeupBytes(1<<30),
		WithPollInterval(2*time.Second))
	tr.waitAttached(t, TargetRuntime, exe)
	tr.rec.Watch(p.Pid)
	p.Go()
	lines := p.Wait()
	require.Equal(t, map[string]map[int]int{cudaprog.StaticLoop.API: {cudaprog.StaticLoop.Ret: n}}, cudaprog.Rets(lines))

	received := func() int {
		k := 0
		for _, e := range tr.rec.Events(p.Pid) {
			if e.Kind == gputracebpf.KindLaunch {
				k++
			}
		}
		return k
	}
	var pts testutil.Points
	dropped := func() float64 { return pts.One(t, semconv.XpuscopeCUDAEventsDropped.Name).Value }
	api := semconv.CUDAAPIName.String(cudaprog.StaticLoop.API)
	calls := func() float64 {
		c := ofPid(pts, p.Pid).Find(semconv.CUDAAPICalls.Name, api)
		if len(c) != 1 {
			return -1
		}
		return c[0].Value
	}
	ok := poll(10*time.Second, func() bool {
		pts = tr.collect(t)
		return calls() == n && float64(received())+dropped() == n
	})
	require.True(t, ok, "received %d + dropped %v != %d, or calls %v", received(), dropped(), n, calls())
	require.Greater(t, dropped(), 0.0)
	require.Positive(t, received())
	launches := ofPid(pts, p.Pid).One(t, semconv.CUDAKernelLaunches.Name)
	require.Equal(t, float64(received()), launches.Value)
	require.Equal(t, map[uint32]int{uint32(p.Pid): received()}, tr.rec.Counts(), "events of other processes")
	t.Logf("%d launches: %d received, %v dropped", n, received(), dropped())
}

// countFDs counts this process's open file descriptors.
func countFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}

// TestTraceCloseLeavesNothing: after Close, the goroutines and file
// descriptors (maps, programs, links, ring buffers) are gone; a second
// Close returns nil. The Source sees only the static program (a procfs
// root holding its pid alone), which keeps Close quick.
func TestTraceCloseLeavesNothing(t *testing.T) {
	requireRoot(t)
	s := cudaprog.StaticLaunch
	exe := cudaprog.Build(t, s.Program)
	round := func() *Source {
		p := cudaprog.Start(t, exe, s.Name)
		tr := startTracing(t, WithProcRoot(procfstest.Host(t, p.Pid)))
		tr.waitAttached(t, TargetRuntime, exe)
		tr.rec.Watch(p.Pid)
		p.Go()
		p.Wait()
		tr.waitEvents(t, p.Pid, len(traceable(s.Calls())))
		tr.collect(t)
		return tr.Source
	}
	// A first round creates what lives as long as the test binary (the
	// runtime's poller, the SDK's state).
	require.NoError(t, round().Close())

	fds, goroutines := countFDs(t), runtime.NumGoroutine()
	src := round()
	require.Greater(t, countFDs(t), fds)
	require.Greater(t, runtime.NumGoroutine(), goroutines)
	require.NoError(t, src.Close())
	require.NoError(t, src.Close())
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > goroutines || countFDs(t) > fds {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			require.Failf(t, "goroutines or fds left after Close", "after Close: %d goroutines (%d before), %d fds (%d before)\n%s",
				runtime.NumGoroutine(), goroutines, countFDs(t), fds, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRejectedObjectIsAFault: a BPF object the verifier rejects (here, a
// launch program that returns without setting its return value) is a
// fault, not unavailable: New says the verifier refused it, and the agent
// exits non-zero on such an error.
func TestRejectedObjectIsAFault(t *testing.T) {
	requireRoot(t)
	_, err := New(CUDA, WithMeterProvider(sdkmetric.NewMeterProvider()), withObjectEdit(func(spec *ebpf.CollectionSpec) {
		spec.Programs["runtime_launch_kernel"].Instructions = asm.Instructions{asm.Return()}
	}))
	require.Error(t, err)
	require.NotErrorIs(t, err, xpuscope.ErrUnavailable)
	require.Contains(t, err.Error(), "runtime_launch_kernel")
	require.Contains(t, err.Error(), "R0 !read_ok", "the verifier's reason")
}
