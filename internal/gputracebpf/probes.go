package gputracebpf

import (
	"slices"
	"strings"
)

// Library is the file a probe attaches to.
type Library uint8

const (
	// Runtime is libcudart, or an executable or library linking it
	// statically.
	Runtime Library = iota + 1
	// Driver is libcuda.
	Driver
	// HIP is libamdhip64, the HIP runtime of ROCm.
	HIP
	// NCCL is libnccl, NVIDIA's collective communication library.
	NCCL
)

func (l Library) String() string {
	switch l {
	case Runtime:
		return "runtime"
	case Driver:
		return "driver"
	case HIP:
		return "hip"
	case NCCL:
		return "nccl"
	}
	return "library(?)"
}

// Probe says which program probes which symbol, and where the arguments
// the program cannot tell from the symbol are.
type Probe struct {
	Symbol  string
	API     API
	Library Library
	// Entry and Return name the programs (Objects.Program); Return is ""
	// where no return probe is needed.
	Entry, Return string
	// StreamArg is the 1-based position of the stream argument; 0 when
	// the call takes none.
	StreamArg uint8
	// CopyKind is the direction of a driver copy named for it
	// (cuMemcpyHtoD…), or NoCopyKind.
	CopyKind int8
	// SyncCopy marks a synchronous copy: its Return probe records when
	// it returned, an edge for the occupancy model.
	SyncCopy bool
	// Handle marks a HIP launch of a module function handle (named by
	// hipModuleGetFunction's name records), not of a host stub. Every
	// driver launch launches one: see API.Handle.
	Handle bool
}

// NoCopyKind marks a probe whose copy direction is not in its name.
const NoCopyKind = -1

// Cookie is the attach cookie of p: the api in bits 0-15, the stream
// argument in bits 16-19, the copy direction plus one in bits 20-23, bit
// 24 for a synchronous copy (as gputrace.bpf.c's api_of, stream_of,
// copy_kind_of and sync_copy read it).
func (p Probe) Cookie() uint64 {
	c := uint64(p.API) | uint64(p.StreamArg&0xf)<<16 | uint64(uint8(p.CopyKind+1)&0xf)<<20
	if p.SyncCopy {
		c |= 1 << 24
	}
	return c
}

// The programs, by the names the probe table uses.
const (
	launch         = gputraceProgRuntimeLaunchKernel
	launchPtsz     = gputraceProgRuntimeLaunchKernelPtsz
	launchCoop     = gputraceProgRuntimeLaunchCooperativeKernel
	launchExC      = gputraceProgRuntimeLaunchKernelExc
	hipLaunch      = gputraceProgHipLaunchKernel
	hipExtLaunch   = gputraceProgHipExtLaunchKernel
	driverLaunch   = gputraceProgDriverLaunchKernel
	driverLaunchEx = gputraceProgDriverLaunchKernelEx
	graph          = gputraceProgGraphLaunch
	memcpy         = gputraceProgRuntimeMemcpy
	driverMemcpy   = gputraceProgDriverMemcpy
	memset         = gputraceProgRuntimeMemset
	mallocEnter    = gputraceProgMallocEnter
	mallocReturn   = gputraceProgMallocReturn
	free           = gputraceProgFreeEnter
	syncEnter      = gputraceProgSyncEnter
	syncReturn     = gputraceProgSyncReturn
	eventRecord    = gputraceProgEventRecord
	streamWait     = gputraceProgStreamWaitEvent
	setDevice      = gputraceProgSetDevice
	register       = gputraceProgRegisterFunction
	copyReturn     = gputraceProgCopyReturn
	queryEnter     = gputraceProgEventQueryEnter
	queryReturn    = gputraceProgEventQueryReturn
	getKernelEnter = gputraceProgGetKernelEnter
	getKernelRet   = gputraceProgGetKernelReturn
	getFuncEnter   = gputraceProgModuleGetFunctionEnter
	getFuncReturn  = gputraceProgModuleGetFunctionReturn
	captureBegin   = gputraceProgCaptureBegin
	captureEnd     = gputraceProgCaptureEndEnter
	instantiate    = gputraceProgGraphInstantiateEnter
	handleOut      = gputraceProgHandleOutReturn
	graphDestroy   = gputraceProgGraphDestroy
	graphCreate    = gputraceProgGraphCreateEnter
	graphClone     = gputraceProgGraphCloneEnter
	kernelNode     = gputraceProgGraphKernelNode
	childNode      = gputraceProgGraphChildNode
	nodeParams     = gputraceProgGraphNodeParams
	execNodeParams = gputraceProgGraphExecNodeParams
	execUpdate     = gputraceProgGraphExecUpdateEnter
	execUpdateRet  = gputraceProgGraphExecUpdateReturn
	captureTo      = gputraceProgCaptureToGraph
	execDestroy    = gputraceProgGraphExecDestroy
	ncclReduction  = gputraceProgNcclReduction
	ncclRooted     = gputraceProgNcclRooted
	ncclReduce     = gputraceProgNcclReduce
	ncclAll        = gputraceProgNcclAll
	ncclPeer       = gputraceProgNcclPeer
	ncclGroup      = gputraceProgNcclGroup
	ncclInitRank   = gputraceProgNcclInitRank
	ncclScalable   = gputraceProgNcclInitRankScalable
	ncclInitAll    = gputraceProgNcclInitAllEnter
	ncclInitAllRet = gputraceProgNcclInitAllReturn
	ncclSplit      = gputraceProgNcclSplit
	ncclQuery      = gputraceProgNcclCommQuery
	ncclCommEnd    = gputraceProgNcclCommEnd
	none           = ""
)

// Anchors are the symbols that make a file a target: a file defining one
// of them is probed for every symbol of its library it defines.
var Anchors = map[Library]string{
	Runtime: "cudaLaunchKernel",
	Driver:  "cuLaunchKernel",
	HIP:     "hipLaunchKernel",
	NCCL:    "ncclAllReduce",
}

// Probes lists every probed function.
var Probes = []Probe{
	// Runtime launches: cudaLaunchKernel(func, grid, block, args, smem, stream).
	rt("cudaLaunchKernel", gputraceApiAPI_cudaLaunchKernel, launch, none, 0),
	rt("cudaLaunchKernel_ptsz", gputraceApiAPI_cudaLaunchKernelPtsz, launchPtsz, none, 0),
	rt("cudaLaunchCooperativeKernel", gputraceApiAPI_cudaLaunchCooperativeKernel, launchCoop, none, 0),
	rt("cudaLaunchKernelExC", gputraceApiAPI_cudaLaunchKernelExC, launchExC, none, 0),
	rt("cudaGraphLaunch", gputraceApiAPI_cudaGraphLaunch, graph, none, 2),
	rt("cudaGraphLaunch_ptsz", gputraceApiAPI_cudaGraphLaunchPtsz, graph, none, 2),
	// Copies: cudaMemcpy(dst, src, count, kind[, stream]).
	syncCopy(rt("cudaMemcpy", gputraceApiAPI_cudaMemcpy, memcpy, none, 0)),
	syncCopy(rt("cudaMemcpy_ptds", gputraceApiAPI_cudaMemcpyPtds, memcpy, none, 0)),
	rt("cudaMemcpyAsync", gputraceApiAPI_cudaMemcpyAsync, memcpy, none, 5),
	rt("cudaMemcpyAsync_ptsz", gputraceApiAPI_cudaMemcpyAsyncPtsz, memcpy, none, 5),
	rt("cudaMemset", gputraceApiAPI_cudaMemset, memset, none, 0),
	rt("cudaMemset_ptds", gputraceApiAPI_cudaMemsetPtds, memset, none, 0),
	rt("cudaMemsetAsync", gputraceApiAPI_cudaMemsetAsync, memset, none, 4),
	rt("cudaMemsetAsync_ptsz", gputraceApiAPI_cudaMemsetAsyncPtsz, memset, none, 4),
	// Memory: cudaMalloc(void **p, size[, stream]), cudaFree(p[, stream]).
	rt("cudaMalloc", gputraceApiAPI_cudaMalloc, mallocEnter, mallocReturn, 0),
	rt("cudaMallocAsync", gputraceApiAPI_cudaMallocAsync, mallocEnter, mallocReturn, 3),
	rt("cudaMallocAsync_ptsz", gputraceApiAPI_cudaMallocAsyncPtsz, mallocEnter, mallocReturn, 3),
	rt("cudaFree", gputraceApiAPI_cudaFree, free, none, 0),
	rt("cudaFreeAsync", gputraceApiAPI_cudaFreeAsync, free, none, 2),
	rt("cudaFreeAsync_ptsz", gputraceApiAPI_cudaFreeAsyncPtsz, free, none, 2),
	// Synchronisation; the "stream" of cudaEventSynchronize is its event.
	rt("cudaStreamSynchronize", gputraceApiAPI_cudaStreamSynchronize, syncEnter, syncReturn, 1),
	rt("cudaStreamSynchronize_ptsz", gputraceApiAPI_cudaStreamSynchronizePtsz, syncEnter, syncReturn, 1),
	rt("cudaDeviceSynchronize", gputraceApiAPI_cudaDeviceSynchronize, syncEnter, syncReturn, 0),
	rt("cudaEventSynchronize", gputraceApiAPI_cudaEventSynchronize, syncEnter, syncReturn, 1),
	rt("cudaEventRecord", gputraceApiAPI_cudaEventRecord, eventRecord, none, 2),
	rt("cudaEventRecord_ptsz", gputraceApiAPI_cudaEventRecordPtsz, eventRecord, none, 2),
	rt("cudaEventQuery", gputraceApiAPI_cudaEventQuery, queryEnter, queryReturn, 0),
	rt("cudaStreamWaitEvent", gputraceApiAPI_cudaStreamWaitEvent, streamWait, none, 1),
	rt("cudaStreamWaitEvent_ptsz", gputraceApiAPI_cudaStreamWaitEventPtsz, streamWait, none, 1),
	rt("cudaSetDevice", gputraceApiAPI_cudaSetDevice, setDevice, none, 0),
	// Kernel names and handles.
	rt("__cudaRegisterFunction", gputraceApiAPI___cudaRegisterFunction, register, none, 0),
	rt("__cudaGetKernel", gputraceApiAPI___cudaGetKernel, getKernelEnter, getKernelRet, 0),
	rt("cudaGetKernel", gputraceApiAPI_cudaGetKernel, getKernelEnter, getKernelRet, 0),
	// Graphs: stream capture, cudaStreamBeginCapture(stream, mode) …
	// cudaStreamEndCapture(stream, cudaGraph_t *graph);
	// cudaGraphInstantiate(cudaGraphExec_t *exec, graph, …); the
	// destroys.
	rt("cudaStreamBeginCapture", gputraceApiAPI_cudaStreamBeginCapture, captureBegin, none, 1),
	rt("cudaStreamBeginCapture_ptsz", gputraceApiAPI_cudaStreamBeginCapturePtsz, captureBegin, none, 1),
	rt("cudaStreamEndCapture", gputraceApiAPI_cudaStreamEndCapture, captureEnd, handleOut, 1),
	rt("cudaStreamEndCapture_ptsz", gputraceApiAPI_cudaStreamEndCapturePtsz, captureEnd, handleOut, 1),
	rt("cudaGraphInstantiate", gputraceApiAPI_cudaGraphInstantiate, instantiate, handleOut, 0),
	rt("cudaGraphInstantiateWithFlags", gputraceApiAPI_cudaGraphInstantiateWithFlags, instantiate, handleOut, 0),
	rt("cudaGraphDestroy", gputraceApiAPI_cudaGraphDestroy, graphDestroy, none, 0),
	rt("cudaGraphExecDestroy", gputraceApiAPI_cudaGraphExecDestroy, execDestroy, none, 0),
	// Graphs built node by node: cudaGraphCreate(cudaGraph_t *graph,
	// flags), cudaGraphClone(cudaGraph_t *clone, original),
	// cudaGraphAddKernelNode(node *, graph, deps, ndeps, params *) (the
	// node known on return), cudaGraphAddChildGraphNode(node *, graph,
	// deps, ndeps, child); CUDA 12.2's generic cudaGraphAddNode(node *,
	// graph, deps, ndeps, cudaGraphNodeParams *) and 12.3's _v2 (deps,
	// depData, ndeps: the parameters the 6th argument).
	rt("cudaGraphCreate", gputraceApiAPI_cudaGraphCreate, graphCreate, handleOut, 0),
	rt("cudaGraphClone", gputraceApiAPI_cudaGraphClone, graphClone, handleOut, 0),
	rt("cudaGraphAddKernelNode", gputraceApiAPI_cudaGraphAddKernelNode, kernelNode, handleOut, 0),
	rt("cudaGraphAddChildGraphNode", gputraceApiAPI_cudaGraphAddChildGraphNode, childNode, none, 0),
	rt("cudaGraphAddNode", gputraceApiAPI_cudaGraphAddNode, kernelNode, handleOut, 0),
	rt("cudaGraphAddNode_v2", gputraceApiAPI_cudaGraphAddNodeV2, kernelNode, handleOut, 0),
	// Kernels changed: cudaGraphKernelNodeSetParams(node, params *),
	// cudaGraphExecKernelNodeSetParams(exec, node, params *), their
	// generic forms with a cudaGraphNodeParams, and
	// cudaGraphExecUpdate(exec, graph, …) (whether it was made known on
	// return). cudaStreamBeginCaptureToGraph(stream, graph, …) (CUDA 12.3)
	// captures into a graph that exists.
	rt("cudaGraphKernelNodeSetParams", gputraceApiAPI_cudaGraphKernelNodeSetParams, nodeParams, none, 0),
	rt("cudaGraphNodeSetParams", gputraceApiAPI_cudaGraphNodeSetParams, nodeParams, none, 0),
	rt("cudaGraphExecKernelNodeSetParams", gputraceApiAPI_cudaGraphExecKernelNodeSetParams, execNodeParams, none, 0),
	rt("cudaGraphExecNodeSetParams", gputraceApiAPI_cudaGraphExecNodeSetParams, execNodeParams, none, 0),
	rt("cudaGraphExecUpdate", gputraceApiAPI_cudaGraphExecUpdate, execUpdate, execUpdateRet, 0),
	rt("cudaStreamBeginCaptureToGraph", gputraceApiAPI_cudaStreamBeginCaptureToGraph, captureTo, none, 1),
	rt("cudaStreamBeginCaptureToGraph_ptsz", gputraceApiAPI_cudaStreamBeginCaptureToGraphPtsz, captureTo, none, 1),

	// Driver launches: cuLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, stream, …).
	drv("cuLaunchKernel", gputraceApiAPI_cuLaunchKernel, driverLaunch, none, 0, NoCopyKind),
	drv("cuLaunchKernel_ptsz", gputraceApiAPI_cuLaunchKernelPtsz, driverLaunch, none, 0, NoCopyKind),
	drv("cuLaunchCooperativeKernel", gputraceApiAPI_cuLaunchCooperativeKernel, driverLaunch, none, 0, NoCopyKind),
	drv("cuLaunchCooperativeKernel_ptsz", gputraceApiAPI_cuLaunchCooperativeKernelPtsz, driverLaunch, none, 0, NoCopyKind),
	drv("cuLaunchKernelEx", gputraceApiAPI_cuLaunchKernelEx, driverLaunchEx, none, 0, NoCopyKind),
	drv("cuLaunchKernelEx_ptsz", gputraceApiAPI_cuLaunchKernelExPtsz, driverLaunchEx, none, 0, NoCopyKind),
	drv("cuGraphLaunch", gputraceApiAPI_cuGraphLaunch, graph, none, 2, NoCopyKind),
	drv("cuGraphLaunch_ptsz", gputraceApiAPI_cuGraphLaunchPtsz, graph, none, 2, NoCopyKind),
	// Graphs, as the runtime's. cuGraphInstantiate is CUDA 11's
	// (exec, graph, errorNode, log, size), _v2 the same, WithFlags
	// (exec, graph, flags).
	drv("cuStreamBeginCapture", gputraceApiAPI_cuStreamBeginCapture, captureBegin, none, 1, NoCopyKind),
	drv("cuStreamBeginCapture_ptsz", gputraceApiAPI_cuStreamBeginCapturePtsz, captureBegin, none, 1, NoCopyKind),
	drv("cuStreamBeginCapture_v2", gputraceApiAPI_cuStreamBeginCaptureV2, captureBegin, none, 1, NoCopyKind),
	drv("cuStreamBeginCapture_v2_ptsz", gputraceApiAPI_cuStreamBeginCaptureV2Ptsz, captureBegin, none, 1, NoCopyKind),
	drv("cuStreamEndCapture", gputraceApiAPI_cuStreamEndCapture, captureEnd, handleOut, 1, NoCopyKind),
	drv("cuStreamEndCapture_ptsz", gputraceApiAPI_cuStreamEndCapturePtsz, captureEnd, handleOut, 1, NoCopyKind),
	drv("cuGraphInstantiate", gputraceApiAPI_cuGraphInstantiate, instantiate, handleOut, 0, NoCopyKind),
	drv("cuGraphInstantiate_v2", gputraceApiAPI_cuGraphInstantiateV2, instantiate, handleOut, 0, NoCopyKind),
	drv("cuGraphInstantiateWithFlags", gputraceApiAPI_cuGraphInstantiateWithFlags, instantiate, handleOut, 0, NoCopyKind),
	drv("cuGraphDestroy", gputraceApiAPI_cuGraphDestroy, graphDestroy, none, 0, NoCopyKind),
	drv("cuGraphExecDestroy", gputraceApiAPI_cuGraphExecDestroy, execDestroy, none, 0, NoCopyKind),
	drv("cuGraphCreate", gputraceApiAPI_cuGraphCreate, graphCreate, handleOut, 0, NoCopyKind),
	drv("cuGraphClone", gputraceApiAPI_cuGraphClone, graphClone, handleOut, 0, NoCopyKind),
	drv("cuGraphAddKernelNode", gputraceApiAPI_cuGraphAddKernelNode, kernelNode, handleOut, 0, NoCopyKind),
	drv("cuGraphAddKernelNode_v2", gputraceApiAPI_cuGraphAddKernelNodeV2, kernelNode, handleOut, 0, NoCopyKind),
	drv("cuGraphAddChildGraphNode", gputraceApiAPI_cuGraphAddChildGraphNode, childNode, none, 0, NoCopyKind),
	drv("cuGraphAddNode", gputraceApiAPI_cuGraphAddNode, kernelNode, handleOut, 0, NoCopyKind),
	drv("cuGraphAddNode_v2", gputraceApiAPI_cuGraphAddNodeV2, kernelNode, handleOut, 0, NoCopyKind),
	drv("cuGraphKernelNodeSetParams", gputraceApiAPI_cuGraphKernelNodeSetParams, nodeParams, none, 0, NoCopyKind),
	drv("cuGraphKernelNodeSetParams_v2", gputraceApiAPI_cuGraphKernelNodeSetParamsV2, nodeParams, none, 0, NoCopyKind),
	drv("cuGraphNodeSetParams", gputraceApiAPI_cuGraphNodeSetParams, nodeParams, none, 0, NoCopyKind),
	drv("cuGraphExecKernelNodeSetParams", gputraceApiAPI_cuGraphExecKernelNodeSetParams, execNodeParams, none, 0, NoCopyKind),
	drv("cuGraphExecKernelNodeSetParams_v2", gputraceApiAPI_cuGraphExecKernelNodeSetParamsV2, execNodeParams, none, 0, NoCopyKind),
	drv("cuGraphExecNodeSetParams", gputraceApiAPI_cuGraphExecNodeSetParams, execNodeParams, none, 0, NoCopyKind),
	// cuGraphExecUpdate is CUDA 11's (exec, graph, CUgraphNode
	// *errorNode, CUgraphExecUpdateResult *result), _v2 CUDA 12's (exec,
	// graph, CUgraphExecUpdateResultInfo *).
	drv("cuGraphExecUpdate", gputraceApiAPI_cuGraphExecUpdate, execUpdate, execUpdateRet, 0, NoCopyKind),
	drv("cuGraphExecUpdate_v2", gputraceApiAPI_cuGraphExecUpdateV2, execUpdate, execUpdateRet, 0, NoCopyKind),
	drv("cuStreamBeginCaptureToGraph", gputraceApiAPI_cuStreamBeginCaptureToGraph, captureTo, none, 1, NoCopyKind),
	drv("cuStreamBeginCaptureToGraph_ptsz", gputraceApiAPI_cuStreamBeginCaptureToGraphPtsz, captureTo, none, 1, NoCopyKind),
	// Memory: cuMemAlloc_v2(CUdeviceptr *p, size[, stream]), cuMemFree_v2(p[, stream]).
	drv("cuMemAlloc_v2", gputraceApiAPI_cuMemAllocV2, mallocEnter, mallocReturn, 0, NoCopyKind),
	drv("cuMemAllocAsync", gputraceApiAPI_cuMemAllocAsync, mallocEnter, mallocReturn, 3, NoCopyKind),
	drv("cuMemAllocAsync_ptsz", gputraceApiAPI_cuMemAllocAsyncPtsz, mallocEnter, mallocReturn, 3, NoCopyKind),
	drv("cuMemFree_v2", gputraceApiAPI_cuMemFreeV2, free, none, 0, NoCopyKind),
	drv("cuMemFreeAsync", gputraceApiAPI_cuMemFreeAsync, free, none, 2, NoCopyKind),
	drv("cuMemFreeAsync_ptsz", gputraceApiAPI_cuMemFreeAsyncPtsz, free, none, 2, NoCopyKind),
	// Copies: (dst, src, bytes[, stream]); the direction is in the name.
	syncCopy(drv("cuMemcpy", gputraceApiAPI_cuMemcpy, driverMemcpy, none, 0, MemcpyDefault)),
	drv("cuMemcpyAsync", gputraceApiAPI_cuMemcpyAsync, driverMemcpy, none, 4, MemcpyDefault),
	drv("cuMemcpyAsync_ptsz", gputraceApiAPI_cuMemcpyAsyncPtsz, driverMemcpy, none, 4, MemcpyDefault),
	syncCopy(drv("cuMemcpyHtoD_v2", gputraceApiAPI_cuMemcpyHtoD_v2, driverMemcpy, none, 0, MemcpyHostToDevice)),
	syncCopy(drv("cuMemcpyHtoD_v2_ptds", gputraceApiAPI_cuMemcpyHtoD_v2Ptds, driverMemcpy, none, 0, MemcpyHostToDevice)),
	syncCopy(drv("cuMemcpyDtoH_v2", gputraceApiAPI_cuMemcpyDtoH_v2, driverMemcpy, none, 0, MemcpyDeviceToHost)),
	syncCopy(drv("cuMemcpyDtoH_v2_ptds", gputraceApiAPI_cuMemcpyDtoH_v2Ptds, driverMemcpy, none, 0, MemcpyDeviceToHost)),
	drv("cuMemcpyDtoD_v2", gputraceApiAPI_cuMemcpyDtoD_v2, driverMemcpy, none, 0, MemcpyDeviceToDevice),
	drv("cuMemcpyDtoD_v2_ptds", gputraceApiAPI_cuMemcpyDtoD_v2Ptds, driverMemcpy, none, 0, MemcpyDeviceToDevice),
	drv("cuMemcpyHtoDAsync_v2", gputraceApiAPI_cuMemcpyHtoDAsyncV2, driverMemcpy, none, 4, MemcpyHostToDevice),
	drv("cuMemcpyHtoDAsync_v2_ptsz", gputraceApiAPI_cuMemcpyHtoDAsyncV2Ptsz, driverMemcpy, none, 4, MemcpyHostToDevice),
	drv("cuMemcpyDtoHAsync_v2", gputraceApiAPI_cuMemcpyDtoHAsyncV2, driverMemcpy, none, 4, MemcpyDeviceToHost),
	drv("cuMemcpyDtoHAsync_v2_ptsz", gputraceApiAPI_cuMemcpyDtoHAsyncV2Ptsz, driverMemcpy, none, 4, MemcpyDeviceToHost),
	drv("cuMemcpyDtoDAsync_v2", gputraceApiAPI_cuMemcpyDtoDAsyncV2, driverMemcpy, none, 4, MemcpyDeviceToDevice),
	drv("cuMemcpyDtoDAsync_v2_ptsz", gputraceApiAPI_cuMemcpyDtoDAsyncV2Ptsz, driverMemcpy, none, 4, MemcpyDeviceToDevice),
	// Synchronisation.
	drv("cuStreamSynchronize", gputraceApiAPI_cuStreamSynchronize, syncEnter, syncReturn, 1, NoCopyKind),
	drv("cuStreamSynchronize_ptsz", gputraceApiAPI_cuStreamSynchronizePtsz, syncEnter, syncReturn, 1, NoCopyKind),
	drv("cuCtxSynchronize", gputraceApiAPI_cuCtxSynchronize, syncEnter, syncReturn, 0, NoCopyKind),
	// Kernel names.
	drv("cuModuleGetFunction", gputraceApiAPI_cuModuleGetFunction, getFuncEnter, getFuncReturn, 0, NoCopyKind),

	// HIP (libamdhip64). Each entry point takes its CUDA counterpart's
	// arguments (hip_runtime_api.h, HIP 5.2), so the same programs read
	// them, at the same positions; hipMemcpyKind's values are
	// cudaMemcpyKind's. hipLaunchKernel(func, dim3 grid, dim3 block,
	// args, smem, stream) is cudaLaunchKernel: rdi func, rsi grid.x|y<<32,
	// edx grid.z, rcx block.x|y<<32, r8d block.z, r9 args, smem at
	// [rsp+8], stream at [rsp+16]. hipExtLaunchKernel appends startEvent,
	// stopEvent and flags; hipModuleLaunchKernel(f, gx, gy, gz, bx, by,
	// bz, smem, stream, params, extra) is cuLaunchKernel.
	hip("hipLaunchKernel", gputraceApiAPI_hipLaunchKernel, hipLaunch, none, 0),
	hip("hipExtLaunchKernel", gputraceApiAPI_hipExtLaunchKernel, hipExtLaunch, none, 0),
	handle(hip("hipModuleLaunchKernel", gputraceApiAPI_hipModuleLaunchKernel, driverLaunch, none, 0)),
	hip("hipModuleGetFunction", gputraceApiAPI_hipModuleGetFunction, getFuncEnter, getFuncReturn, 0),
	hip("hipGraphLaunch", gputraceApiAPI_hipGraphLaunch, graph, none, 2),
	syncCopy(hip("hipMemcpy", gputraceApiAPI_hipMemcpy, memcpy, none, 0)),
	hip("hipMemcpyAsync", gputraceApiAPI_hipMemcpyAsync, memcpy, none, 5),
	hip("hipMalloc", gputraceApiAPI_hipMalloc, mallocEnter, mallocReturn, 0),
	hip("hipFree", gputraceApiAPI_hipFree, free, none, 0),
	hip("hipStreamSynchronize", gputraceApiAPI_hipStreamSynchronize, syncEnter, syncReturn, 1),
	hip("hipDeviceSynchronize", gputraceApiAPI_hipDeviceSynchronize, syncEnter, syncReturn, 0),
	hip("hipEventSynchronize", gputraceApiAPI_hipEventSynchronize, syncEnter, syncReturn, 1),
	hip("hipEventRecord", gputraceApiAPI_hipEventRecord, eventRecord, none, 2),
	hip("hipStreamWaitEvent", gputraceApiAPI_hipStreamWaitEvent, streamWait, none, 1),
	hip("hipSetDevice", gputraceApiAPI_hipSetDevice, setDevice, none, 0),
	hip("hipStreamBeginCapture", gputraceApiAPI_hipStreamBeginCapture, captureBegin, none, 1),
	hip("hipStreamEndCapture", gputraceApiAPI_hipStreamEndCapture, captureEnd, handleOut, 1),
	hip("hipGraphInstantiate", gputraceApiAPI_hipGraphInstantiate, instantiate, handleOut, 0),
	hip("hipGraphInstantiateWithFlags", gputraceApiAPI_hipGraphInstantiateWithFlags, instantiate, handleOut, 0),
	hip("hipGraphDestroy", gputraceApiAPI_hipGraphDestroy, graphDestroy, none, 0),
	hip("hipGraphExecDestroy", gputraceApiAPI_hipGraphExecDestroy, execDestroy, none, 0),
	// Graphs built node by node, as CUDA's, but hipKernelNodeParams
	// orders its fields otherwise (the kernel node programs read it by
	// the API); hipGraphExecUpdate is CUDA 11's cudaGraphExecUpdate.
	hip("hipGraphCreate", gputraceApiAPI_hipGraphCreate, graphCreate, handleOut, 0),
	hip("hipGraphClone", gputraceApiAPI_hipGraphClone, graphClone, handleOut, 0),
	hip("hipGraphAddKernelNode", gputraceApiAPI_hipGraphAddKernelNode, kernelNode, handleOut, 0),
	hip("hipGraphAddChildGraphNode", gputraceApiAPI_hipGraphAddChildGraphNode, childNode, none, 0),
	hip("hipGraphKernelNodeSetParams", gputraceApiAPI_hipGraphKernelNodeSetParams, nodeParams, none, 0),
	hip("hipGraphExecKernelNodeSetParams", gputraceApiAPI_hipGraphExecKernelNodeSetParams, execNodeParams, none, 0),
	hip("hipGraphExecUpdate", gputraceApiAPI_hipGraphExecUpdate, execUpdate, execUpdateRet, 0),

	// NCCL (libnccl.so.2), as nccl.h declares it. The *Config forms
	// append a config pointer to the plain form's arguments. Each
	// function's pnccl* alias is the same code, at the same address, and
	// is not probed again.
	nccl("ncclAllReduce", gputraceApiAPI_ncclAllReduce, ncclReduction, none),
	nccl("ncclAllReduceConfig", gputraceApiAPI_ncclAllReduceConfig, ncclReduction, none),
	nccl("ncclReduceScatter", gputraceApiAPI_ncclReduceScatter, ncclReduction, none),
	nccl("ncclReduceScatterConfig", gputraceApiAPI_ncclReduceScatterConfig, ncclReduction, none),
	nccl("ncclBroadcast", gputraceApiAPI_ncclBroadcast, ncclRooted, none),
	nccl("ncclBroadcastConfig", gputraceApiAPI_ncclBroadcastConfig, ncclRooted, none),
	nccl("ncclGather", gputraceApiAPI_ncclGather, ncclRooted, none),
	nccl("ncclGatherConfig", gputraceApiAPI_ncclGatherConfig, ncclRooted, none),
	nccl("ncclScatter", gputraceApiAPI_ncclScatter, ncclRooted, none),
	nccl("ncclScatterConfig", gputraceApiAPI_ncclScatterConfig, ncclRooted, none),
	nccl("ncclReduce", gputraceApiAPI_ncclReduce, ncclReduce, none),
	nccl("ncclReduceConfig", gputraceApiAPI_ncclReduceConfig, ncclReduce, none),
	nccl("ncclAllGather", gputraceApiAPI_ncclAllGather, ncclAll, none),
	nccl("ncclAllGatherConfig", gputraceApiAPI_ncclAllGatherConfig, ncclAll, none),
	nccl("ncclAlltoAll", gputraceApiAPI_ncclAlltoAll, ncclAll, none),
	nccl("ncclAlltoAllConfig", gputraceApiAPI_ncclAlltoAllConfig, ncclAll, none),
	nccl("ncclSend", gputraceApiAPI_ncclSend, ncclPeer, none),
	nccl("ncclRecv", gputraceApiAPI_ncclRecv, ncclPeer, none),
	nccl("ncclBcast", gputraceApiAPI_ncclBcast, ncclPeer, none),
	nccl("ncclGroupStart", gputraceApiAPI_ncclGroupStart, ncclGroup, none),
	nccl("ncclGroupEnd", gputraceApiAPI_ncclGroupEnd, ncclGroup, none),
	// Communicators: made by ncclCommInitRank(comm *, nranks, id, rank)
	// and its Config and Scalable forms, ncclCommInitAll(comms, ndev,
	// devlist) and ncclCommSplit(comm, color, key, newcomm *, config);
	// asked for their size and rank; ended.
	nccl("ncclCommInitRank", gputraceApiAPI_ncclCommInitRank, ncclInitRank, handleOut),
	nccl("ncclCommInitRankConfig", gputraceApiAPI_ncclCommInitRankConfig, ncclInitRank, handleOut),
	nccl("ncclCommInitRankScalable", gputraceApiAPI_ncclCommInitRankScalable, ncclScalable, handleOut),
	nccl("ncclCommInitAll", gputraceApiAPI_ncclCommInitAll, ncclInitAll, ncclInitAllRet),
	nccl("ncclCommSplit", gputraceApiAPI_ncclCommSplit, ncclSplit, handleOut),
	nccl("ncclCommCount", gputraceApiAPI_ncclCommCount, ncclQuery, handleOut),
	nccl("ncclCommUserRank", gputraceApiAPI_ncclCommUserRank, ncclQuery, handleOut),
	nccl("ncclCommDestroy", gputraceApiAPI_ncclCommDestroy, ncclCommEnd, none),
	nccl("ncclCommAbort", gputraceApiAPI_ncclCommAbort, ncclCommEnd, none),
	nccl("ncclCommFinalize", gputraceApiAPI_ncclCommFinalize, ncclCommEnd, none),
}

// nccl is an NCCL function: its programs read its stream themselves
// (the 7th and 8th arguments are on the stack).
func nccl(sym string, api gputraceApi, entry, ret string) Probe {
	p := rt(sym, api, entry, ret, 0)
	p.Library = NCCL
	return p
}

func hip(sym string, api gputraceApi, entry, ret string, stream uint8) Probe {
	p := rt(sym, api, entry, ret, stream)
	p.Library = HIP
	return p
}

// handle marks a launch of a module function handle.
func handle(p Probe) Probe {
	p.Handle = true
	return p
}

func rt(sym string, api gputraceApi, entry, ret string, stream uint8) Probe {
	return Probe{Symbol: sym, API: API(api), Library: Runtime, Entry: entry, Return: ret, StreamArg: stream, CopyKind: NoCopyKind}
}

// syncCopy marks a synchronous copy, with its return probe.
func syncCopy(p Probe) Probe {
	p.SyncCopy, p.Return = true, copyReturn
	return p
}

func drv(sym string, api gputraceApi, entry, ret string, stream uint8, kind int8) Probe {
	return Probe{Symbol: sym, API: API(api), Library: Driver, Entry: entry, Return: ret, StreamArg: stream, CopyKind: kind}
}

// Programs returns the programs the probes of libs use (of every library
// when none is given), each once, in the table's order.
func Programs(libs ...Library) []string {
	var out []string
	add := func(name string) {
		if name != none && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	for _, p := range Probes {
		if len(libs) == 0 || slices.Contains(libs, p.Library) {
			add(p.Entry)
			add(p.Return)
		}
	}
	return out
}

// SyncScope is what a synchronisation call waits for.
type SyncScope uint8

// Sync scopes.
const (
	SyncNone   SyncScope = iota
	SyncStream           // one stream: cudaStreamSynchronize, cuStreamSynchronize
	SyncDevice           // every stream: cudaDeviceSynchronize, cuCtxSynchronize
	SyncEvent            // one event: cudaEventSynchronize
)

var (
	apiNames  = map[API]string{}
	driverAPI [1 << 16]bool
	handleAPI [1 << 16]bool
	perThread [1 << 16]bool
	syncScope [1 << 16]SyncScope
)

func init() {
	for _, p := range Probes {
		apiNames[p.API] = p.Symbol
		driverAPI[p.API] = p.Library == Driver
		handleAPI[p.API] = p.Library == Driver || p.Handle
		perThread[p.API] = strings.HasSuffix(p.Symbol, "_ptsz") || strings.HasSuffix(p.Symbol, "_ptds")
		switch {
		case strings.Contains(p.Symbol, "StreamSynchronize"):
			syncScope[p.API] = SyncStream
		case strings.Contains(p.Symbol, "DeviceSynchronize"), strings.Contains(p.Symbol, "CtxSynchronize"):
			syncScope[p.API] = SyncDevice
		case strings.Contains(p.Symbol, "EventSynchronize"):
			syncScope[p.API] = SyncEvent
		}
	}
}

// Driver reports whether a is a driver API function.
func (a API) Driver() bool { return driverAPI[a] }

// Handle reports whether a launch by a names its function by a module
// function handle (cuModuleGetFunction, hipModuleGetFunction) rather than
// by a host stub's address.
func (a API) Handle() bool { return handleAPI[a] }

// PerThread reports whether a is a per-thread-default-stream variant
// (_ptsz, _ptds): its stream 0 is the calling thread's own.
func (a API) PerThread() bool { return perThread[a] }

// SyncScope is what a waits for, if it is a synchronisation.
func (a API) SyncScope() SyncScope { return syncScope[a] }

// String is the probed function's name.
func (a API) String() string {
	if n, ok := apiNames[a]; ok {
		return n
	}
	return "api(?)"
}
