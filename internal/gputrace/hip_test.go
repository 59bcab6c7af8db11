package gputrace

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/gputracebpf"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/testutil/cudaprog"
	"github.com/xpuscope/xpuscope/semconv"
)

// hexField parses the n-th field of the line starting with prefix.
func hexField(t *testing.T, lines []string, prefix string, n int) uint64 {
	t.Helper()
	for _, l := range lines {
		if f := strings.Fields(l); strings.HasPrefix(l, prefix) && len(f) > n {
			v, err := strconv.ParseUint(strings.TrimPrefix(f[n], "0x"), 16, 64)
			require.NoError(t, err, "%q", l)
			return v
		}
	}
	require.Failf(t, "no such line", "no %q line in %q", prefix, lines)
	return 0
}

// TestHIPRuntime: the real HIP runtime's entry points, called with known
// arguments (they fail without /dev/kfd, after the probes fired), decode
// to exactly those arguments, and count in the CUDA metrics under their
// HIP names. The launches prove hipLaunchKernel's x86-64 layout is
// cudaLaunchKernel's (dim3 grid in rsi and edx, dim3 block in rcx and r8d,
// smem and stream on the stack), hipExtLaunchKernel's starts the same, and
// hipModuleLaunchKernel's is cuLaunchKernel's.
func TestHIPRuntime(t *testing.T) {
	exe := cudaprog.Build(t, "hip")
	tr := startTracingRuntime(t, HIP)
	p := startLingering(t, exe)
	tr.waitAttached(t, TargetHIP, cudaprog.RealHIP(t))
	tr.rec.Watch(p.Pid)
	p.Go()
	lines := p.Wait()
	stub := hexField(t, lines, "STUB hip_kernel", 2)
	host, dev := hexField(t, lines, "BUF", 1), hexField(t, lines, "BUF", 2)
	apis := []string{"hipSetDevice", "hipMalloc", "hipLaunchKernel", "hipExtLaunchKernel", "hipModuleGetFunction",
		"hipModuleLaunchKernel", "hipMemcpy", "hipMemcpyAsync", "hipFree", "hipStreamSynchronize",
		"hipDeviceSynchronize", "hipGraphLaunch", "hipEventRecord", "hipEventSynchronize", "hipStreamWaitEvent",
		"hipStreamBeginCapture", "hipStreamEndCapture", "hipGraphInstantiate", "hipGraphExecDestroy", "hipGraphDestroy"}
	// The program's last calls capture a launch into a graph and replay
	// it twice: hipLaunchKernel is called twice, hipGraphLaunch three
	// times (once before the graph is known).
	callsOf := func(api string) int {
		switch api {
		case "hipLaunchKernel":
			return 2
		case "hipGraphLaunch":
			return 3
		}
		return 1
	}
	rets := map[string]map[int]int{}
	for _, api := range apis {
		rets[api] = map[int]int{101: callsOf(api)} // hipErrorInvalidDevice: no /dev/kfd
	}
	require.Equal(t, rets, cudaprog.Rets(lines))

	// One record per call but hipModuleGetFunction (a failed lookup makes
	// none), and hipMemcpy's return; every record carries the device of
	// hipSetDevice(1), its own included.
	const stream, event, graph, exec = 0x1234, 0x888, 0x999, 0x777
	type rec struct {
		kind gputracebpf.Kind
		api  string
		ret  int32
		a    [6]uint64
	}
	launch := func(fn uint64, grid, block [3]uint64, smem uint64) [6]uint64 {
		return [6]uint64{fn, grid[0] | grid[1]<<32, grid[2] | block[2]<<32, block[0] | block[1]<<32, smem, stream}
	}
	want := []rec{
		{gputracebpf.KindSetDevice, "hipSetDevice", 0, [6]uint64{1}},
		{gputracebpf.KindMalloc, "hipMalloc", 101, [6]uint64{0, 4096}}, // a[2] (duration) checked below
		{gputracebpf.KindLaunch, "hipLaunchKernel", 0, launch(stub, [3]uint64{7, 3, 2}, [3]uint64{64, 2, 1}, 128)},
		{gputracebpf.KindLaunch, "hipExtLaunchKernel", 0, launch(stub, [3]uint64{7, 3, 2}, [3]uint64{64, 2, 1}, 256)},
		{gputracebpf.KindLaunch, "hipModuleLaunchKernel", 0, launch(0x5678, [3]uint64{4, 5, 6}, [3]uint64{32, 4, 2}, 512)},
		{gputracebpf.KindMemcpy, "hipMemcpy", 0, [6]uint64{dev, host, 64, gputracebpf.MemcpyHostToDevice, 0}},
		{gputracebpf.KindCopyDone, "hipMemcpy", 101, [6]uint64{0, 0, 0, gputracebpf.MemcpyHostToDevice}},
		{gputracebpf.KindMemcpy, "hipMemcpyAsync", 0, [6]uint64{host, dev, 32, gputracebpf.MemcpyDeviceToHost, stream}},
		{gputracebpf.KindFree, "hipFree", 0, [6]uint64{0xabc000}},
		{gputracebpf.KindSync, "hipStreamSynchronize", 101, [6]uint64{stream}},
		{gputracebpf.KindSync, "hipDeviceSynchronize", 101, [6]uint64{0}},
		{gputracebpf.KindGraphLaunch, "hipGraphLaunch", 0, [6]uint64{exec, stream}},
		{gputracebpf.KindEventRecord, "hipEventRecord", 0, [6]uint64{event, stream}},
		{gputracebpf.KindSync, "hipEventSynchronize", 101, [6]uint64{event}},
		{gputracebpf.KindStreamWait, "hipStreamWaitEvent", 0, [6]uint64{stream, event}},
		{gputracebpf.KindCaptureBegin, "hipStreamBeginCapture", 0, [6]uint64{stream}},
		{gputracebpf.KindLaunch, "hipLaunchKernel", 0, launch(stub, [3]uint64{7, 3, 2}, [3]uint64{64, 2, 1}, 64)},
		{gputracebpf.KindCaptureEnd, "hipStreamEndCapture", 101, [6]uint64{stream, graph}},
		{gputracebpf.KindGraphInstantiate, "hipGraphInstantiate", 101, [6]uint64{graph, exec}},
		{gputracebpf.KindGraphLaunch, "hipGraphLaunch", 0, [6]uint64{exec, stream}},
		{gputracebpf.KindGraphLaunch, "hipGraphLaunch", 0, [6]uint64{exec, stream}},
		{gputracebpf.KindGraphExecDestroy, "hipGraphExecDestroy", 0, [6]uint64{exec}},
		{gputracebpf.KindGraphDestroy, "hipGraphDestroy", 0, [6]uint64{graph}},
	}
	evs := tr.waitEvents(t, p.Pid, len(want))
	var got []rec
	for _, e := range evs {
		r := rec{e.Kind, e.API.String(), e.Ret, e.A}
		switch e.Kind {
		case gputracebpf.KindMalloc, gputracebpf.KindCopyDone, gputracebpf.KindSync: // durations
			d := &r.a[2]
			if e.Kind != gputracebpf.KindMalloc {
				d = &r.a[1]
			}
			require.NotZero(t, *d, "%s: duration", r.api)
			*d = 0
		}
		require.Equal(t, int32(1), e.Device, "%s: device", r.api)
		require.Equal(t, uint32(p.Pid), e.PID)
		got = append(got, r)
	}
	require.Equal(t, want, got)
	require.Equal(t, [3]uint32{7, 3, 2}, evs[2].Grid())
	require.Equal(t, [3]uint32{64, 2, 1}, evs[2].Block())

	// Metrics: the calls of each HIP function, the launches and the
	// copies, under cuda.api.name.
	pts := ofPid(tr.waitPoints(t, func(pts testutil.Points) bool {
		return len(gather(ofPid(pts, p.Pid), semconv.CUDAAPICalls.Name, sum, string(semconv.CUDAAPIName))) == len(apis)
	}), p.Pid)
	calls := series{}
	for _, api := range apis {
		calls[api] = float64(callsOf(api))
	}
	api := string(semconv.CUDAAPIName)
	require.Equal(t, calls, gather(pts, semconv.CUDAAPICalls.Name, sum, api))
	// The captured launch is no run; the two replays of its graph count
	// it under hipGraphLaunch, with its configuration.
	require.Equal(t, series{"hipLaunchKernel": 1, "hipExtLaunchKernel": 1, "hipModuleLaunchKernel": 1, "hipGraphLaunch": 2},
		gather(pts, semconv.CUDAKernelLaunches.Name, sum, api))
	require.Equal(t, series{"1": 3*2*7*(1+1+2) + 4*5*6}, gather(pts, semconv.CUDAKernelGridSize.Name, sum, string(semconv.CUDADevice)))
	require.Equal(t, series{"1": 128 + 256 + 512 + 2*64}, gather(pts, semconv.CUDAKernelSharedMemory.Name, sum, string(semconv.CUDADevice)))
	require.Equal(t, series{key("host_to_device", "hipMemcpy"): 64, key("device_to_host", "hipMemcpyAsync"): 32},
		gather(pts, semconv.CUDAMemcpyTransferred.Name, sum, string(semconv.CUDAMemcpyKind), api))
	require.Equal(t, series{"hipGraphLaunch": 3}, gather(pts, semconv.CUDAGraphLaunches.Name, sum, api))
	require.Equal(t, series{"hipStreamSynchronize": 1, "hipDeviceSynchronize": 1, "hipEventSynchronize": 1},
		gather(pts, semconv.CUDASyncDuration.Name, histCount, api))
	for _, p := range pts {
		require.Equal(t, "hipprog", p.Get(semconv.ProcessExecutableName), "%s", p.Name)
	}
	for _, a := range tr.Status().Attachments {
		require.Equal(t, TargetHIP, a.Target, "a HIP Source probes HIP files only")
	}
}

// TestHIPGraphs: HIP's graphs built node by node, through the real HIP
// runtime: hipGraphCreate, hipGraphAddKernelNode (whose
// hipKernelNodeParams orders its fields otherwise than CUDA's: each
// record's kernel is the one the program passed), the node handles from
// its return, hipGraphKernelNodeSetParams, a child graph node, a clone,
// hipGraphExecKernelNodeSetParams and a failed hipGraphExecUpdate (see
// hip.c's graphs()). Each replay counts its graph's kernels as they were
// set: by grid size, 5 ×3, 17 ×5, 33 ×2 (9, replaced before the
// instantiation, never).
func TestHIPGraphs(t *testing.T) {
	exe := cudaprog.Build(t, "hip")
	tr := startTracingRuntime(t, HIP)
	cmd := exec.Command(exe, "graphs")
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+buildLinger(t))
	p := cudaprog.StartCmd(t, cmd)
	tr.waitAttached(t, TargetHIP, cudaprog.RealHIP(t))
	tr.rec.Watch(p.Pid)
	p.Go()
	lines := p.Wait()
	stub := hexField(t, lines, "STUB hip_kernel", 2)
	require.Equal(t, map[string]map[int]int{
		"hipGraphCreate": {101: 2}, "hipGraphAddKernelNode": {101: 2}, "hipGraphKernelNodeSetParams": {101: 1},
		"hipGraphAddChildGraphNode": {101: 1}, "hipGraphClone": {101: 1}, "hipGraphInstantiate": {101: 2},
		"hipGraphLaunch": {101: 5}, "hipGraphExecKernelNodeSetParams": {101: 1}, "hipGraphExecUpdate": {101: 1},
	}, cudaprog.Rets(lines))

	const (
		stream                 = 0x1234
		graphB, graphC, graphD = 0xb00, 0xc00, 0xd00
		nodeA, nodeB           = 0xa10, 0xa20
		execB, execD           = 0xe00, 0xe10
	)
	type rec struct {
		kind gputracebpf.Kind
		api  string
		ret  int32
		a    [6]uint64
		wide uint64
	}
	kernel := func(grid, block [2]uint64, smem, last uint64) [6]uint64 {
		return [6]uint64{stub, grid[0] | grid[1]<<32, 1 | 1<<32, block[0] | block[1]<<32, smem, last}
	}
	launch := rec{gputracebpf.KindGraphLaunch, "hipGraphLaunch", 0, [6]uint64{execB, stream}, 0}
	want := []rec{
		{gputracebpf.KindGraphCreate, "hipGraphCreate", 101, [6]uint64{0, graphB}, 0},
		{gputracebpf.KindGraphKernelNode, "hipGraphAddKernelNode", 0, kernel([2]uint64{5, 1}, [2]uint64{64, 2}, 96, graphB), 0},
		{gputracebpf.KindGraphNode, "hipGraphAddKernelNode", 101, [6]uint64{graphB, nodeA}, 0},
		{gputracebpf.KindGraphKernelNode, "hipGraphAddKernelNode", 0, kernel([2]uint64{9, 1}, [2]uint64{32, 1}, 0, graphB), 0},
		{gputracebpf.KindGraphNode, "hipGraphAddKernelNode", 101, [6]uint64{graphB, nodeB}, 0},
		{gputracebpf.KindGraphNodeParams, "hipGraphKernelNodeSetParams", 0, kernel([2]uint64{17, 1}, [2]uint64{128, 1}, 64, nodeB), 0},
		{gputracebpf.KindGraphCreate, "hipGraphCreate", 101, [6]uint64{0, graphC}, 0},
		{gputracebpf.KindGraphChildNode, "hipGraphAddChildGraphNode", 0, [6]uint64{graphC, graphB}, 0},
		{gputracebpf.KindGraphClone, "hipGraphClone", 101, [6]uint64{graphC, graphD}, 0},
		{gputracebpf.KindGraphInstantiate, "hipGraphInstantiate", 101, [6]uint64{graphB, execB}, 0},
		launch, launch,
		{gputracebpf.KindGraphExecNodeParams, "hipGraphExecKernelNodeSetParams", 0, kernel([2]uint64{33, 1}, [2]uint64{256, 1}, 32, execB), nodeA},
		launch,
		{gputracebpf.KindGraphInstantiate, "hipGraphInstantiate", 101, [6]uint64{graphD, execD}, 0},
		{gputracebpf.KindGraphLaunch, "hipGraphLaunch", 0, [6]uint64{execD, stream}, 0},
		{gputracebpf.KindGraphExecUpdate, "hipGraphExecUpdate", 101, [6]uint64{execB, graphC}, 0},
		launch,
	}
	var got []rec
	for _, e := range tr.waitEvents(t, p.Pid, len(want)) {
		got = append(got, rec{e.Kind, e.API.String(), e.Ret, e.A, e.Wide})
	}
	require.Equal(t, want, got)

	pts := ofPid(tr.waitPoints(t, func(pts testutil.Points) bool {
		return gather(ofPid(pts, p.Pid), semconv.CUDAKernelLaunches.Name, sum, string(semconv.CUDAAPIName))["hipGraphLaunch"] == 10
	}), p.Pid)
	require.Equal(t, series{"hipGraphLaunch": 10}, gather(pts, semconv.CUDAKernelLaunches.Name, sum, string(semconv.CUDAAPIName)))
	h := pts.One(t, semconv.CUDAKernelGridSize.Name)
	require.Equal(t, expectedGridBuckets(map[uint32]int{5: 3, 17: 5, 33: 2}), h.Buckets, "launches per grid-size bucket")
	require.Equal(t, float64(3*96+5*64+2*32), pts.One(t, semconv.CUDAKernelSharedMemory.Name).Value)
	require.Equal(t, float64(3*64*2+5*128+2*256), pts.One(t, semconv.CUDAKernelBlockSize.Name).Value)
}
