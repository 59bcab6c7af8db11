package cudaprog

import (
	"fmt"
	"slices"
	"strings"
)

// Fake handles. Streams, events, graph execs and CUfunctions are host
// pointers that the libraries may dereference (libcuda 535 reads
// *(int *)CUfunction and walks a CUgraphExec even before cuInit succeeds,
// so arbitrary values such as 0x1111 crash it). Every program therefore
// maps HandleSpan zeroed bytes at HandleBase (MAP_FIXED_NOREPLACE) before
// READY, and every fake handle points into that region: the values are
// fixed, known here, and safe to pass.
const (
	HandleBase uint64 = 0x10000000
	HandleSpan uint64 = 1 << 20
	handleStep uint64 = 0x100

	// DevBase is where fake device pointers (CUdeviceptr, the device side
	// of a cudaMemcpy) start. The libraries never dereference them on the
	// host; nothing is mapped there.
	DevBase uint64 = 0xd00000000
	devStep uint64 = 1 << 20
)

// Handle returns the k-th fake handle (HandleBase + k*0x100).
func Handle(k int) uint64 { return HandleBase + uint64(k)*handleStep }

// DevPtr returns the k-th fake device pointer (DevBase + k MiB).
func DevPtr(k int) uint64 { return DevBase + uint64(k)*devStep }

// The handles the scenarios use.
const (
	StreamA   = HandleBase + 1*handleStep // cudaStream_t / CUstream
	StreamB   = HandleBase + 2*handleStep
	StreamC   = HandleBase + 3*handleStep
	EventA    = HandleBase + 8*handleStep  // cudaEvent_t
	GraphExec = HandleBase + 9*handleStep  // cudaGraphExec_t / CUgraphExec
	GraphA    = HandleBase + 10*handleStep // cudaGraph_t / CUgraph
	// GraphExecA is the exec RuntimeGraphs instantiates from GraphA.
	GraphExecA = HandleBase + 11*handleStep
	// GraphB is built node by node, GraphC cloned from it; GraphExecB
	// and GraphExecC are made of them.
	GraphB     = HandleBase + 12*handleStep
	GraphC     = HandleBase + 13*handleStep
	GraphExecB = HandleBase + 14*handleStep
	GraphExecC = HandleBase + 15*handleStep
	GraphD     = HandleBase + 18*handleStep
	GraphExecD = HandleBase + 19*handleStep
	Function1  = HandleBase + 16*handleStep // CUfunction
	Function2  = HandleBase + 17*handleStep // CUfunction
	// ForwardFunction is the CUfunction the forward library (a stand-in
	// libcudart.so.12) passes to cuLaunchKernel for every cudaLaunchKernel.
	ForwardFunction = HandleBase + 20*handleStep
	// threadStream0 is the stream of thread 0 in RuntimeThreads; thread i
	// uses threadStream0 + i*0x100.
	threadStream0 = HandleBase + 32*handleStep
	// NodeA… are graph nodes (cudaGraphNode_t, CUgraphNode).
	NodeA = HandleBase + 40*handleStep
	NodeB = HandleBase + 41*handleStep
	NodeC = HandleBase + 42*handleStep
	NodeD = HandleBase + 43*handleStep
)

// Kernel host stubs: the C++ mangled names of the functions whose
// addresses the programs pass as cudaLaunchKernel's func. They are
// ordinary host functions carrying these names as asm labels, exactly
// what nvcc emits for __global__ functions. The runtime and static
// programs are linked without -rdynamic: the names are in .symtab only,
// as in an unstripped nvcc-built application.
const (
	KernelVectorAdd = "_Z9vectorAddPfS_S_i" // vectorAdd(float*, float*, float*, int)
	KernelMatmul    = "_Z6matmulPKfS0_Pfi"  // matmul(float const*, float const*, float*, int)
	KernelReduce    = "_Z6reduceIfEvPT_i"   // void reduce<float>(float*, int)
	KernelSaxpy     = "_Z5saxpyifPfS_"      // saxpy(int, float, float*, float*), in the dlopen program
)

// MemcpyKind is cudaMemcpyKind. The driver's typed copies (cuMemcpyHtoD
// ...) carry the kind they imply; cuMemcpy and cuMemcpyAsync carry
// MemcpyDefault.
type MemcpyKind int

// The cudaMemcpyKind values.
const (
	MemcpyHostToHost     MemcpyKind = 0
	MemcpyHostToDevice   MemcpyKind = 1
	MemcpyDeviceToHost   MemcpyKind = 2
	MemcpyDeviceToDevice MemcpyKind = 3
	MemcpyDefault        MemcpyKind = 4
)

// Dim3 is a dim3 (x, y, z).
type Dim3 [3]uint32

// Call is one API call a program makes, with the exact arguments it
// passes. Fields an API does not take are zero.
type Call struct {
	// API is the exported symbol called, e.g. "cudaLaunchKernel",
	// "cudaLaunchKernel_ptsz", "cuLaunchKernel", "cuMemcpyHtoD_v2".
	API string
	// Func names the kernel host stub whose address is passed as
	// cudaLaunchKernel's func (runtime launches; __cudaRegisterFunction's
	// hostFun, deviceFun and deviceName).
	Func string
	// ViaStub: the launch is made the way nvcc's <<<...>>> makes it:
	// __cudaPushCallConfiguration(Grid, Block, SharedMem, Stream), then a
	// call of the host stub, which calls __cudaPopCallConfiguration and
	// then cudaLaunchKernel(stub, grid, block, args, smem, stream). Without
	// a device cudart's pop returns 0 but leaves its outputs untouched
	// (a real nvcc stub would then launch with uninitialised values); our
	// stubs start from the pushed values, so cudaLaunchKernel still sees
	// Grid, Block, SharedMem and Stream.
	ViaStub bool
	// Handle is the CUfunction of a driver launch, the event of
	// cudaEventRecord / cudaEventSynchronize / cudaStreamWaitEvent, the
	// graph exec of cudaGraphLaunch / cuGraphLaunch and
	// cudaGraphExecDestroy, or the graph of cudaGraphInstantiate,
	// cudaGraphDestroy, cudaGraphAddKernelNode and
	// cudaGraphAddChildGraphNode (cudaGraphClone's original), and the
	// same of the driver's cuGraph* calls.
	Handle uint64
	// Child is cudaGraphAddChildGraphNode's child graph.
	Child uint64
	// Function is the CUfunction of a driver kernel node
	// (cuGraphAddKernelNode, cuGraphKernelNodeSetParams …), whose Handle
	// is the graph or the graph exec.
	Function uint64
	// Node is the graph node whose parameters a call sets
	// (cudaGraphKernelNodeSetParams, cudaGraphExecKernelNodeSetParams and
	// the driver's); a node's making has it in Out.
	Node uint64
	// Graph is cudaGraphExecUpdate's graph (Handle is the graph exec).
	Graph uint64
	// NodeType is the CUgraphNodeType of the generic node calls
	// (cuGraphAddNode, cuGraphNodeSetParams, cuGraphExecNodeSetParams):
	// NodeKernel takes Function and the dimensions, NodeGraph Child.
	NodeType int
	// Out is what the program puts in a call's output handle before the
	// call (cudaStreamEndCapture's, cudaGraphCreate's and cudaGraphClone's
	// graph, cudaGraphInstantiate's exec, and the driver's):
	// without a GPU the libraries fail and leave it as it was, so the
	// return probes read a known value.
	Out uint64
	// OutNull: the library writes NULL to the output instead (libcuda
	// 535's cuStreamEndCapture does without a GPU, as for a capture that
	// was invalidated), so the return probe reads 0.
	OutNull     bool
	Grid, Block Dim3
	SharedMem   uint32
	Stream      uint64
	// Kind is the copy direction (cudaMemcpy's kind argument; implied for
	// the driver's typed copies).
	Kind MemcpyKind
	// Size is the byte count of a copy, memset or allocation.
	Size uint64
	// Dst and Src are a copy's pointers; 0 means a host buffer of Size
	// bytes that the program allocates (its address is not fixed).
	Dst, Src uint64
	// Ptr is the pointer freed (cudaFree, cuMemFree_v2 ...) or set
	// (cudaMemset, cuMemsetD8_v2).
	Ptr uint64
	// Value is cudaSetDevice's device, cuInit's and cudaStreamWaitEvent's
	// flags, or the memset byte value.
	Value int
	// Ret is what the call returns on a machine with Debian's libcudart
	// 11.8 / libcuda 535 and no NVIDIA kernel module (CI): cudart 100
	// (cudaErrorNoDevice) for everything; libcuda 100 from cuInit,
	// 3 (CUDA_ERROR_NOT_INITIALIZED) from cuMemAlloc_v2, cuMemFree_v2,
	// copies, memset and cuCtxSynchronize (and from cuLaunchKernel when
	// cuInit was not called: DriverLoop), 400 (CUDA_ERROR_INVALID_HANDLE)
	// from calls taking a stream or CUfunction: launches,
	// cuStreamSynchronize, cuGraphLaunch, cuMemAllocAsync, cuMemFreeAsync,
	// a capture's begin and end; 3 from the other graph calls.
	// The static program's own cudaLaunchKernel returns 0.
	// Unused (NoRet) for void functions (__cudaRegister*).
	Ret int
}

// CUgraphNodeType values (cuda.h).
const (
	NodeKernel = 0 // CU_GRAPH_NODE_TYPE_KERNEL
	NodeGraph  = 4 // CU_GRAPH_NODE_TYPE_GRAPH
	NodeEmpty  = 5 // CU_GRAPH_NODE_TYPE_EMPTY
)

// NoRet is Call.Ret of a void function: it prints no RET line.
const NoRet = -1000000

// Scenario is what a program does for one command-line argument.
type Scenario struct {
	Program string // "runtime", "driver" or "static"
	Name    string // the command-line argument
	// Before are calls the main thread makes before READY: a tracer
	// started at READY does not see them (a process it attached to
	// late). Only with one thread.
	Before []Call
	// Threads holds one call sequence per thread. With one sequence the
	// main thread runs it; with several, the program starts one thread per
	// sequence before READY (printing "THREAD <i> <tid>"), and after the go
	// line all of them run at once.
	Threads [][]Call
}

// Calls returns every call of s, thread after thread, Before's first.
func (s Scenario) Calls() []Call { return slices.Concat(append([][]Call{s.Before}, s.Threads...)...) }

// Filter returns the calls of s to any of apis, in order, thread after
// thread.
func (s Scenario) Filter(apis ...string) []Call {
	var out []Call
	for _, c := range s.Calls() {
		if slices.Contains(apis, c.API) {
			out = append(out, c)
		}
	}
	return out
}

// Counts returns how many times s calls each exported API, including the
// __cudaPushCallConfiguration / __cudaPopCallConfiguration pairs around
// ViaStub launches.
func (s Scenario) Counts() map[string]int {
	n := map[string]int{}
	for _, c := range s.Calls() {
		n[c.API]++
		if c.ViaStub {
			n["__cudaPushCallConfiguration"]++
			n["__cudaPopCallConfiguration"]++
		}
	}
	return n
}

// Rets returns the RET lines' content a run of s prints on CI (no GPU):
// api -> return code -> count.
func (s Scenario) Rets() map[string]map[int]int {
	out := map[string]map[int]int{}
	add := func(api string, ret, n int) {
		if ret == NoRet {
			return
		}
		if out[api] == nil {
			out[api] = map[int]int{}
		}
		out[api][ret] += n
	}
	for _, c := range s.Calls() {
		add(c.API, c.Ret, 1)
		if c.ViaStub {
			add("__cudaPushCallConfiguration", 0, 1)
			add("__cudaPopCallConfiguration", 0, 1)
		}
	}
	return out
}

func launch(api, fn string, grid, block Dim3, smem uint32, stream uint64, ret int) Call {
	return Call{API: api, Func: fn, Grid: grid, Block: block, SharedMem: smem, Stream: stream, Ret: ret}
}

func drvLaunch(api string, f uint64, grid, block Dim3, smem uint32, stream uint64) Call {
	return Call{API: api, Handle: f, Grid: grid, Block: block, SharedMem: smem, Stream: stream, Ret: 400}
}

const noDevice = 100 // cudaErrorNoDevice, CUDA_ERROR_NO_DEVICE

// RuntimeLaunch is "runtime launch": every traced runtime API once or
// more, single-threaded, in this order: set device, allocations,
// launches, copies, memset, event/stream/device syncs, a graph launch,
// frees.
var RuntimeLaunch = Scenario{Program: "runtime", Name: "launch", Threads: [][]Call{{
	{API: "cudaSetDevice", Value: 1, Ret: noDevice},
	{API: "cudaMalloc", Size: 1 << 20, Ret: noDevice},
	{API: "cudaMalloc", Size: 4096, Ret: noDevice},
	{API: "cudaMalloc", Size: 12345, Ret: noDevice},
	{API: "cudaMallocAsync", Size: 65536, Stream: StreamA, Ret: noDevice},

	launch("cudaLaunchKernel", KernelVectorAdd, Dim3{1024, 1, 1}, Dim3{256, 1, 1}, 0, 0, noDevice),
	launch("cudaLaunchKernel", KernelVectorAdd, Dim3{64, 2, 1}, Dim3{128, 2, 1}, 1024, StreamA, noDevice),
	launch("cudaLaunchKernel", KernelMatmul, Dim3{16, 16, 1}, Dim3{16, 16, 1}, 2048, StreamB, noDevice),
	launch("cudaLaunchKernel", KernelMatmul, Dim3{8, 8, 2}, Dim3{32, 4, 2}, 49152, StreamA, noDevice),
	launch("cudaLaunchKernel", KernelReduce, Dim3{4, 3, 2}, Dim3{64, 1, 1}, 4096, StreamC, noDevice),
	// The largest grid CUDA allows: checks the x|y<<32 register packing.
	launch("cudaLaunchKernel", KernelReduce, Dim3{0x7fffffff, 65535, 65535}, Dim3{1024, 1, 1}, 0, StreamB, noDevice),
	launch("cudaLaunchKernel_ptsz", KernelVectorAdd, Dim3{7, 5, 3}, Dim3{96, 1, 1}, 512, 0, noDevice),

	{API: "cudaMemcpy", Kind: MemcpyHostToHost, Size: 1000, Ret: noDevice},
	{API: "cudaMemcpy", Kind: MemcpyHostToDevice, Size: 1 << 20, Dst: DevPtr(1), Ret: noDevice},
	{API: "cudaMemcpy", Kind: MemcpyDeviceToHost, Size: 2 << 20, Src: DevPtr(2), Ret: noDevice},
	{API: "cudaMemcpy", Kind: MemcpyDeviceToDevice, Size: 3 << 20, Dst: DevPtr(3), Src: DevPtr(4), Ret: noDevice},
	{API: "cudaMemcpy", Kind: MemcpyDefault, Size: 4<<20 + 1, Dst: DevPtr(5), Ret: noDevice},
	{API: "cudaMemcpyAsync", Kind: MemcpyHostToDevice, Size: 8192, Dst: DevPtr(1), Stream: StreamA, Ret: noDevice},
	{API: "cudaMemcpyAsync", Kind: MemcpyDeviceToHost, Size: 16384, Src: DevPtr(2), Stream: StreamB, Ret: noDevice},
	{API: "cudaMemcpyAsync_ptsz", Kind: MemcpyDeviceToDevice, Size: 32768, Dst: DevPtr(3), Src: DevPtr(4), Ret: noDevice},
	{API: "cudaMemcpy_ptds", Kind: MemcpyHostToDevice, Size: 65536, Dst: DevPtr(5), Ret: noDevice},
	{API: "cudaMemset", Ptr: DevPtr(1), Value: 0xab, Size: 4096, Ret: noDevice},

	{API: "cudaEventRecord", Handle: EventA, Stream: StreamA, Ret: noDevice},
	{API: "cudaStreamWaitEvent", Handle: EventA, Stream: StreamB, Value: 0, Ret: noDevice},
	{API: "cudaEventSynchronize", Handle: EventA, Ret: noDevice},
	{API: "cudaStreamSynchronize", Stream: StreamA, Ret: noDevice},
	{API: "cudaDeviceSynchronize", Ret: noDevice},
	{API: "cudaGraphLaunch", Handle: GraphExec, Stream: StreamB, Ret: noDevice},

	{API: "cudaFreeAsync", Ptr: DevPtr(3), Stream: StreamA, Ret: noDevice},
	{API: "cudaFree", Ptr: DevPtr(1), Ret: noDevice},
	{API: "cudaFree", Ptr: DevPtr(2), Ret: noDevice},
	{API: "cudaFree", Ptr: 0, Ret: noDevice},
}}}

// ThreadCount is the number of threads of RuntimeThreads.
const ThreadCount = 4

// ThreadStream is the stream thread i of RuntimeThreads uses.
func ThreadStream(i int) uint64 { return threadStream0 + uint64(i)*handleStep }

// RuntimeThreads is "runtime threads": ThreadCount threads; thread i
// calls cudaSetDevice(i), then launches vectorAdd i+1 times with grid
// (i+1, j+1, 1) for j = 0..i, block (32*(i+1), 1, 1), shared memory
// i*256 on ThreadStream(i), copies (i+1)*4096 bytes to DevPtr(10+i) with
// cudaMemcpyAsync on that stream and synchronises it.
var RuntimeThreads = Scenario{Program: "runtime", Name: "threads", Threads: threads()}

func threads() [][]Call {
	out := make([][]Call, ThreadCount)
	for i := range ThreadCount {
		s := ThreadStream(i)
		seq := []Call{{API: "cudaSetDevice", Value: i, Ret: noDevice}}
		for j := range i + 1 {
			seq = append(seq, launch("cudaLaunchKernel", KernelVectorAdd,
				Dim3{uint32(i + 1), uint32(j + 1), 1}, Dim3{uint32(32 * (i + 1)), 1, 1}, uint32(i*256), s, noDevice))
		}
		seq = append(seq,
			Call{API: "cudaMemcpyAsync", Kind: MemcpyHostToDevice, Size: uint64(i+1) * 4096, Dst: DevPtr(10 + i), Stream: s, Ret: noDevice},
			Call{API: "cudaStreamSynchronize", Stream: s, Ret: noDevice},
		)
		out[i] = seq
	}
	return out
}

// RuntimeRegister is "runtime register": what an nvcc-built program does
// at start-up and on <<<...>>>: __cudaRegisterFatBinary with a minimal
// fake fatbin (wrapper magic 0x466243b1, version 1, pointing at an empty
// fatbin header 0xBA55ED50), __cudaRegisterFunction for each of the three
// stubs (hostFun = stub address, deviceFun = deviceName = Func),
// __cudaRegisterFatBinaryEnd, three ViaStub launches, and
// __cudaUnregisterFatBinary. Without a GPU, cudart 11.8 accepts all of
// this (registration is lazy) and only the launches fail (100).
var RuntimeRegister = Scenario{Program: "runtime", Name: "register", Threads: [][]Call{{
	{API: "__cudaRegisterFatBinary", Ret: NoRet},
	{API: "__cudaRegisterFunction", Func: KernelVectorAdd, Ret: NoRet},
	{API: "__cudaRegisterFunction", Func: KernelMatmul, Ret: NoRet},
	{API: "__cudaRegisterFunction", Func: KernelReduce, Ret: NoRet},
	{API: "__cudaRegisterFatBinaryEnd", Ret: NoRet},
	{API: "cudaLaunchKernel", ViaStub: true, Func: KernelVectorAdd, Grid: Dim3{10, 1, 1}, Block: Dim3{128, 1, 1}, Stream: StreamA, Ret: noDevice},
	{API: "cudaLaunchKernel", ViaStub: true, Func: KernelMatmul, Grid: Dim3{4, 4, 1}, Block: Dim3{16, 16, 1}, SharedMem: 1024, Stream: StreamB, Ret: noDevice},
	{API: "cudaLaunchKernel", ViaStub: true, Func: KernelReduce, Grid: Dim3{2, 1, 1}, Block: Dim3{256, 1, 1}, SharedMem: 2048, Ret: noDevice},
	{API: "__cudaUnregisterFatBinary", Ret: NoRet},
}}}

// RuntimeLoop is the call "runtime loop <n>" makes n times.
var RuntimeLoop = launch("cudaLaunchKernel", KernelVectorAdd, Dim3{256, 1, 1}, Dim3{256, 1, 1}, 0, StreamA, noDevice)

// DriverLaunch is "driver launch": cuInit, allocations, launches (plain,
// per-thread-stream and Ex), typed and untyped copies, memset, syncs, a
// graph launch, frees. cuLaunchKernelEx's CUlaunchConfig is
// {gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
// sharedMemBytes (offset 24), hStream (32), attrs (40), numAttrs (48)},
// with attrs NULL and numAttrs 0.
var DriverLaunch = Scenario{Program: "driver", Name: "launch", Threads: [][]Call{{
	{API: "cuInit", Value: 0, Ret: noDevice},
	{API: "cuMemAlloc_v2", Size: 1 << 20, Ret: 3},
	{API: "cuMemAlloc_v2", Size: 8192, Ret: 3},
	{API: "cuMemAllocAsync", Size: 65536, Stream: StreamA, Ret: 400},

	drvLaunch("cuLaunchKernel", Function1, Dim3{1024, 1, 1}, Dim3{256, 1, 1}, 0, 0),
	drvLaunch("cuLaunchKernel", Function2, Dim3{16, 16, 1}, Dim3{16, 16, 1}, 2048, StreamA),
	drvLaunch("cuLaunchKernel", Function1, Dim3{8, 8, 2}, Dim3{32, 4, 2}, 49152, StreamB),
	drvLaunch("cuLaunchKernel_ptsz", Function2, Dim3{7, 5, 3}, Dim3{96, 1, 1}, 512, 0),
	drvLaunch("cuLaunchKernelEx", Function1, Dim3{3, 2, 1}, Dim3{64, 2, 1}, 1024, StreamC),

	{API: "cuMemcpyHtoD_v2", Kind: MemcpyHostToDevice, Size: 1 << 20, Dst: DevPtr(1), Ret: 3},
	{API: "cuMemcpyDtoH_v2", Kind: MemcpyDeviceToHost, Size: 2 << 20, Src: DevPtr(2), Ret: 3},
	{API: "cuMemcpyDtoD_v2", Kind: MemcpyDeviceToDevice, Size: 3 << 20, Dst: DevPtr(3), Src: DevPtr(4), Ret: 3},
	{API: "cuMemcpy", Kind: MemcpyDefault, Size: 4096, Dst: DevPtr(5), Src: DevPtr(6), Ret: 3},
	{API: "cuMemcpyAsync", Kind: MemcpyDefault, Size: 8192, Dst: DevPtr(6), Src: DevPtr(5), Stream: StreamA, Ret: 3},
	{API: "cuMemsetD8_v2", Ptr: DevPtr(1), Value: 0xab, Size: 4096, Ret: 3},

	{API: "cuStreamSynchronize", Stream: StreamA, Ret: 400},
	{API: "cuCtxSynchronize", Ret: 3},
	{API: "cuGraphLaunch", Handle: GraphExec, Stream: StreamB, Ret: 400},

	{API: "cuMemFreeAsync", Ptr: DevPtr(3), Stream: StreamA, Ret: 400},
	{API: "cuMemFree_v2", Ptr: DevPtr(1), Ret: 3},
	{API: "cuMemFree_v2", Ptr: DevPtr(2), Ret: 3},
}}}

// DriverLoop is the call "driver loop <n>" makes n times. The loop does
// not call cuInit first, so libcuda returns 3 (not initialised).
var DriverLoop = func() Call {
	c := drvLaunch("cuLaunchKernel", Function1, Dim3{256, 1, 1}, Dim3{256, 1, 1}, 0, StreamA)
	c.Ret = 3
	return c
}()

// StaticLaunch is "static launch": launches through the program's own
// cudaLaunchKernel (standing in for a statically linked cudart; it
// returns 0).
var StaticLaunch = Scenario{Program: "static", Name: "launch", Threads: [][]Call{{
	launch("cudaLaunchKernel", KernelVectorAdd, Dim3{1024, 1, 1}, Dim3{256, 1, 1}, 0, 0, 0),
	launch("cudaLaunchKernel", KernelMatmul, Dim3{16, 16, 1}, Dim3{16, 16, 1}, 2048, StreamB, 0),
	launch("cudaLaunchKernel", KernelVectorAdd, Dim3{64, 2, 1}, Dim3{128, 2, 1}, 1024, StreamA, 0),
	launch("cudaLaunchKernel", KernelReduce, Dim3{0x7fffffff, 65535, 65535}, Dim3{1024, 1, 1}, 0, StreamC, 0),
}}}

// StaticLoop is the call "static loop <n>" makes n times.
var StaticLoop = launch("cudaLaunchKernel", KernelVectorAdd, Dim3{256, 1, 1}, Dim3{256, 1, 1}, 0, StreamA, 0)

// DlopenLaunch is the one call the dlopen program makes, through
// dlsym(lib, "cudaLaunchKernel"). Its Ret is the real cudart's; the
// forward library returns cuLaunchKernel's 400 instead.
var DlopenLaunch = launch("cudaLaunchKernel", KernelSaxpy, Dim3{12, 34, 5}, Dim3{64, 8, 2}, 768, StreamC, noDevice)

// ForwardLaunch is what the forward library passes to cuLaunchKernel when
// the dlopen program calls it with DlopenLaunch.
var ForwardLaunch = drvLaunch("cuLaunchKernel", ForwardFunction, DlopenLaunch.Grid, DlopenLaunch.Block, DlopenLaunch.SharedMem, DlopenLaunch.Stream)

// ShortKernels are the kernels the short program launches, once each,
// by the mangled names of their host stubs.
var ShortKernels = func() []string {
	names := make([]string, 10)
	for i := range names {
		names[i] = fmt.Sprintf("_Z12shortKernel%dPfi", i) // shortKernel<i>(float*, int)
	}
	return names
}()

// Scenarios lists every scenario of every program.
// RuntimeOccupancy is "runtime occupancy", the pattern the occupancy
// model is checked with end to end: two launches and an event recorded
// on StreamA, the event synchronised (so both kernels end at the event,
// completion=event), a third launch, an event query (which fails without
// a GPU, so it completes nothing), then StreamA synchronised (the third
// kernel ends there, completion=sync_fallback); last a launch on the
// default stream ended by a synchronous host-to-device copy
// (completion=sync_fallback).
var RuntimeOccupancy = Scenario{Program: "runtime", Name: "occupancy", Threads: [][]Call{{
	launch("cudaLaunchKernel", KernelVectorAdd, Dim3{64, 1, 1}, Dim3{128, 1, 1}, 0, StreamA, noDevice),
	launch("cudaLaunchKernel", KernelMatmul, Dim3{16, 16, 1}, Dim3{16, 16, 1}, 0, StreamA, noDevice),
	{API: "cudaEventRecord", Handle: EventA, Stream: StreamA, Ret: noDevice},
	{API: "cudaEventSynchronize", Handle: EventA, Ret: noDevice},
	launch("cudaLaunchKernel", KernelReduce, Dim3{4, 1, 1}, Dim3{64, 1, 1}, 0, StreamA, noDevice),
	{API: "cudaEventQuery", Handle: EventA, Ret: noDevice},
	{API: "cudaStreamSynchronize", Stream: StreamA, Ret: noDevice},
	launch("cudaLaunchKernel", KernelVectorAdd, Dim3{8, 1, 1}, Dim3{32, 1, 1}, 0, 0, noDevice),
	{API: "cudaMemcpy", Kind: MemcpyHostToDevice, Size: 4096, Dst: DevPtr(1), Ret: noDevice},
}}}

// GraphReplays is how many times RuntimeGraphs replays its captured
// graph.
const GraphReplays = 7

// RuntimeGraphs is "runtime graphs": a stream capture on StreamA, with
// two launches on it and one on StreamC, which joins the capture by
// waiting for an event recorded on StreamA, and meanwhile a launch on
// StreamB (a run); the capture's end into GraphA, GraphA instantiated as
// GraphExecA and replayed GraphReplays times on StreamB; a launch of
// GraphExec, never instantiated. Then GraphB, built node by node: a
// vectorAdd kernel node and GraphA as a child graph node; GraphC, a clone
// of GraphB with a matmul kernel node more; GraphB instantiated as
// GraphExecB and replayed twice, GraphC as GraphExecC and replayed once.
// Last GraphExecA and GraphA destroyed, and GraphExecA launched once more.
var RuntimeGraphs = Scenario{Program: "runtime", Name: "graphs", Threads: [][]Call{func() []Call {
	seq := []Call{
		{API: "cudaStreamBeginCapture", Stream: StreamA, Value: 0, Ret: noDevice},
		launch("cudaLaunchKernel", KernelVectorAdd, Dim3{64, 1, 1}, Dim3{128, 1, 1}, 0, StreamA, noDevice),
		launch("cudaLaunchKernel", KernelMatmul, Dim3{16, 16, 1}, Dim3{16, 16, 1}, 2048, StreamA, noDevice),
		{API: "cudaEventRecord", Handle: EventA, Stream: StreamA, Ret: noDevice},
		{API: "cudaStreamWaitEvent", Handle: EventA, Stream: StreamC, Ret: noDevice},
		launch("cudaLaunchKernel", KernelReduce, Dim3{4, 1, 1}, Dim3{256, 1, 1}, 1024, StreamC, noDevice),
		launch("cudaLaunchKernel", KernelReduce, Dim3{2, 1, 1}, Dim3{32, 1, 1}, 0, StreamB, noDevice),
		{API: "cudaStreamEndCapture", Stream: StreamA, Out: GraphA, Ret: noDevice},
		{API: "cudaGraphInstantiate", Handle: GraphA, Out: GraphExecA, Ret: noDevice},
	}
	for range GraphReplays {
		seq = append(seq, Call{API: "cudaGraphLaunch", Handle: GraphExecA, Stream: StreamB, Ret: noDevice})
	}
	return append(seq,
		Call{API: "cudaGraphLaunch", Handle: GraphExec, Stream: StreamB, Ret: noDevice},
		Call{API: "cudaGraphCreate", Out: GraphB, Value: 0, Ret: noDevice},
		Call{API: "cudaGraphAddKernelNode", Handle: GraphB, Func: KernelVectorAdd, Grid: Dim3{3, 2, 1}, Block: Dim3{64, 1, 1}, SharedMem: 512, Ret: noDevice},
		Call{API: "cudaGraphAddChildGraphNode", Handle: GraphB, Child: GraphA, Ret: noDevice},
		Call{API: "cudaGraphClone", Handle: GraphB, Out: GraphC, Ret: noDevice},
		Call{API: "cudaGraphAddKernelNode", Handle: GraphC, Func: KernelMatmul, Grid: Dim3{5, 5, 1}, Block: Dim3{32, 32, 1}, SharedMem: 0, Ret: noDevice},
		Call{API: "cudaGraphInstantiate", Handle: GraphB, Out: GraphExecB, Ret: noDevice},
		Call{API: "cudaGraphInstantiate", Handle: GraphC, Out: GraphExecC, Ret: noDevice},
		Call{API: "cudaGraphLaunch", Handle: GraphExecB, Stream: StreamB, Ret: noDevice},
		Call{API: "cudaGraphLaunch", Handle: GraphExecB, Stream: StreamB, Ret: noDevice},
		Call{API: "cudaGraphLaunch", Handle: GraphExecC, Stream: StreamB, Ret: noDevice},
		Call{API: "cudaGraphExecDestroy", Handle: GraphExecA, Ret: noDevice},
		Call{API: "cudaGraphDestroy", Handle: GraphA, Ret: noDevice},
		Call{API: "cudaGraphLaunch", Handle: GraphExecA, Stream: StreamB, Ret: noDevice},
	)
}()}}

// DriverGraphReplays is how many times DriverGraphs replays GraphExecA.
const DriverGraphReplays = 6

// DriverGraphs is "driver graphs": graphs through the driver API. First a
// stream capture on StreamA (cuStreamBeginCapture_v2) of a cuLaunchKernel
// and a cuLaunchKernelEx, with a run on StreamB meanwhile; without a GPU
// libcuda 535's cuStreamEndCapture writes NULL to its output (as for a
// capture that was invalidated), so the capture makes no graph, and the
// launch on StreamA after it is a run. Then GraphA made by cuGraphCreate,
// with three kernel nodes added by cuGraphAddKernelNode
// (CUDA_KERNEL_NODE_PARAMS v1) and cuGraphAddKernelNode_v2 (v2),
// instantiated (cuGraphInstantiate, CUDA 11's form) as GraphExecA and
// replayed DriverGraphReplays times on StreamB. A capture on StreamC with
// cuStreamBeginCapture (the first form, without a mode) of one
// cuLaunchKernel_ptsz, which makes no graph either. GraphB, a
// cuGraphClone of GraphA with one kernel node more; GraphC, made by
// cuGraphCreate, with GraphA as a child graph node
// (cuGraphAddChildGraphNode) and a kernel node; GraphB instantiated with
// cuGraphInstantiateWithFlags as GraphExecB, GraphC with
// cuGraphInstantiate_v2 as GraphExecC, each replayed twice. Last
// GraphExecA and GraphA destroyed, and GraphExecA launched once more (not
// known any more). Without a GPU cuInit returns 100, the calls taking a
// stream 400 and the others 3; cuGraphCreate, cuGraphClone, the
// instantiations and the node calls leave their pre-filled outputs as they
// were. Every kernel's grid size is in a power-of-two bucket of its own.
var DriverGraphs = Scenario{Program: "driver", Name: "graphs", Threads: [][]Call{func() []Call {
	node := func(api string, graph, fn uint64, grid, block Dim3, smem uint32) Call {
		return Call{API: api, Handle: graph, Function: fn, Grid: grid, Block: block, SharedMem: smem, Ret: 3}
	}
	seq := []Call{
		{API: "cuInit", Value: 0, Ret: noDevice},
		{API: "cuStreamBeginCapture_v2", Stream: StreamA, Value: 0, Ret: 400},
		drvLaunch("cuLaunchKernel", Function1, Dim3{64, 1, 1}, Dim3{128, 1, 1}, 0, StreamA),
		drvLaunch("cuLaunchKernelEx", Function2, Dim3{16, 16, 1}, Dim3{16, 16, 1}, 2048, StreamA),
		drvLaunch("cuLaunchKernel", Function2, Dim3{2, 1, 1}, Dim3{32, 1, 1}, 0, StreamB),
		{API: "cuStreamEndCapture", Stream: StreamA, Out: GraphA, OutNull: true, Ret: 400},
		drvLaunch("cuLaunchKernel", Function1, Dim3{3, 1, 1}, Dim3{32, 1, 1}, 0, StreamA),
		{API: "cuGraphCreate", Out: GraphA, Value: 0, Ret: 3},
		node("cuGraphAddKernelNode", GraphA, Function1, Dim3{3, 2, 1}, Dim3{256, 1, 1}, 512),
		node("cuGraphAddKernelNode_v2", GraphA, Function2, Dim3{1024, 1, 1}, Dim3{32, 32, 1}, 49152),
		node("cuGraphAddKernelNode", GraphA, Function1, Dim3{5, 8, 1}, Dim3{64, 1, 1}, 0),
		{API: "cuGraphInstantiate", Handle: GraphA, Out: GraphExecA, Ret: 3},
	}
	for range DriverGraphReplays {
		seq = append(seq, Call{API: "cuGraphLaunch", Handle: GraphExecA, Stream: StreamB, Ret: 400})
	}
	seq = append(seq,
		Call{API: "cuStreamBeginCapture", Stream: StreamC, Ret: 400},
		drvLaunch("cuLaunchKernel_ptsz", Function1, Dim3{12, 1, 1}, Dim3{64, 2, 1}, 256, StreamC),
		Call{API: "cuStreamEndCapture", Stream: StreamC, Out: GraphB, OutNull: true, Ret: 400},
		Call{API: "cuGraphClone", Handle: GraphA, Out: GraphB, Ret: 3},
		node("cuGraphAddKernelNode_v2", GraphB, Function2, Dim3{12, 1, 1}, Dim3{128, 1, 1}, 1024),
		Call{API: "cuGraphCreate", Out: GraphC, Value: 0, Ret: 3},
		Call{API: "cuGraphAddChildGraphNode", Handle: GraphC, Child: GraphA, Ret: 3},
		node("cuGraphAddKernelNode", GraphC, Function2, Dim3{10, 20, 1}, Dim3{96, 1, 1}, 4096),
		Call{API: "cuGraphInstantiateWithFlags", Handle: GraphB, Out: GraphExecB, Ret: 3},
		Call{API: "cuGraphInstantiate_v2", Handle: GraphC, Out: GraphExecC, Ret: 3},
	)
	for range 2 {
		seq = append(seq,
			Call{API: "cuGraphLaunch", Handle: GraphExecB, Stream: StreamB, Ret: 400},
			Call{API: "cuGraphLaunch", Handle: GraphExecC, Stream: StreamB, Ret: 400})
	}
	return append(seq,
		Call{API: "cuGraphExecDestroy", Handle: GraphExecA, Ret: 3},
		Call{API: "cuGraphDestroy", Handle: GraphA, Ret: 3},
		Call{API: "cuGraphLaunch", Handle: GraphExecA, Stream: StreamB, Ret: 400},
	)
}()}}

// RuntimeGraphUpdates is "runtime graphupdate": a graph's kernels
// changed, through the real libcudart. GraphB, made by cudaGraphCreate,
// gets a vectorAdd node (NodeA) and a matmul node (NodeB), whose
// parameters cudaGraphKernelNodeSetParams sets to a reduce before
// GraphB is instantiated as GraphExecB; GraphExecB is replayed
// UpdateReplays times. cudaGraphExecKernelNodeSetParams makes GraphExecB's
// NodeA a matmul; it is replayed UpdateReplays times. GraphB's NodeA set
// to a vectorAdd of another grid after the instantiation leaves
// GraphExecB as it was, and GraphExecC, instantiated then, has it: both
// replayed UpdateReplays times. cudaGraphExecUpdate of GraphExecB from
// GraphB fails (no GPU), which leaves GraphExecB as it was: replayed
// once. Last GraphB destroyed and made anew with one reduce node, named
// NodeA again, instantiated as GraphExecC (the handles reused) and
// replayed once. Node handles are pre-filled, as the outputs.
var RuntimeGraphUpdates = Scenario{Program: "runtime", Name: "graphupdate", Threads: [][]Call{func() []Call {
	node := func(api string, graph, node uint64, fn string, grid Dim3, smem uint32) Call {
		return Call{API: api, Handle: graph, Out: node, Func: fn, Grid: grid, Block: Dim3{64, 1, 1}, SharedMem: smem, Ret: noDevice}
	}
	set := func(api string, exec, node uint64, fn string, grid Dim3, smem uint32) Call {
		return Call{API: api, Handle: exec, Node: node, Func: fn, Grid: grid, Block: Dim3{128, 1, 1}, SharedMem: smem, Ret: noDevice}
	}
	replay := func(exec uint64, n int) []Call {
		out := make([]Call, n)
		for i := range out {
			out[i] = Call{API: "cudaGraphLaunch", Handle: exec, Stream: StreamB, Ret: noDevice}
		}
		return out
	}
	return slices.Concat(
		[]Call{
			{API: "cudaGraphCreate", Out: GraphB, Value: 0, Ret: noDevice},
			node("cudaGraphAddKernelNode", GraphB, NodeA, KernelVectorAdd, Dim3{2, 1, 1}, 0),
			node("cudaGraphAddKernelNode", GraphB, NodeB, KernelMatmul, Dim3{4, 4, 1}, 1024),
			set("cudaGraphKernelNodeSetParams", 0, NodeB, KernelReduce, Dim3{8, 1, 1}, 0),
			{API: "cudaGraphInstantiate", Handle: GraphB, Out: GraphExecB, Ret: noDevice},
		},
		replay(GraphExecB, UpdateReplays),
		[]Call{set("cudaGraphExecKernelNodeSetParams", GraphExecB, NodeA, KernelMatmul, Dim3{16, 1, 1}, 2048)},
		replay(GraphExecB, UpdateReplays),
		[]Call{
			set("cudaGraphKernelNodeSetParams", 0, NodeA, KernelVectorAdd, Dim3{32, 1, 1}, 0),
			{API: "cudaGraphInstantiate", Handle: GraphB, Out: GraphExecC, Ret: noDevice},
		},
		replay(GraphExecB, UpdateReplays),
		replay(GraphExecC, UpdateReplays),
		[]Call{{API: "cudaGraphExecUpdate", Handle: GraphExecB, Graph: GraphB, Ret: noDevice}},
		replay(GraphExecB, 1),
		[]Call{
			{API: "cudaGraphExecDestroy", Handle: GraphExecC, Ret: noDevice},
			{API: "cudaGraphDestroy", Handle: GraphB, Ret: noDevice},
			{API: "cudaGraphCreate", Out: GraphB, Value: 0, Ret: noDevice},
			node("cudaGraphAddKernelNode", GraphB, NodeA, KernelReduce, Dim3{64, 1, 1}, 0),
			{API: "cudaGraphInstantiate", Handle: GraphB, Out: GraphExecC, Ret: noDevice},
		},
		replay(GraphExecC, 1),
	)
}()}}

// UpdateReplays is how many times RuntimeGraphUpdates and
// DriverGraphUpdates replay an executable graph between its changes.
const UpdateReplays = 3

// DriverGraphUpdates is "driver graphupdate": the same through the real
// libcuda 535, with CUDA 12.2's generic node calls. GraphA, made by
// cuGraphCreate, gets kernel nodes by cuGraphAddKernelNode (NodeA),
// cuGraphAddKernelNode_v2 (NodeB) and cuGraphAddNode (NodeC, a kernel),
// an empty node by cuGraphAddNode (NodeD: no kernel) and GraphC, made by
// cuGraphCreate with one kernel node, as a child graph node by
// cuGraphAddNode; cuGraphKernelNodeSetParams, its _v2 and
// cuGraphNodeSetParams change NodeA, NodeB and NodeC before GraphA is
// instantiated as GraphExecA, replayed UpdateReplays times.
// cuGraphExecKernelNodeSetParams, its _v2 and cuGraphExecNodeSetParams
// change GraphExecA's NodeA, NodeB and NodeC: replayed UpdateReplays
// times. cuGraphExecUpdate and its _v2 from GraphC fail (3), which leaves
// GraphExecA as it was: replayed once. Without a GPU the calls return 3
// (not initialised), but for the empty node's making and the calls on
// GraphExecA but its launches, 1 (invalid value). Every kernel has a grid size in a
// power-of-two bucket of its own.
var DriverGraphUpdates = Scenario{Program: "driver", Name: "graphupdate", Threads: [][]Call{func() []Call {
	node := func(api string, graph, node, fn uint64, grid Dim3) Call {
		return Call{API: api, Handle: graph, Out: node, Function: fn, Grid: grid, Block: Dim3{64, 1, 1}, Ret: 3}
	}
	set := func(api string, exec, node, fn uint64, grid Dim3, ret int) Call {
		return Call{API: api, Handle: exec, Node: node, Function: fn, Grid: grid, Block: Dim3{32, 4, 1}, SharedMem: 256, Ret: ret}
	}
	replay := func(n int) []Call {
		out := make([]Call, n)
		for i := range out {
			out[i] = Call{API: "cuGraphLaunch", Handle: GraphExecA, Stream: StreamB, Ret: 400}
		}
		return out
	}
	return slices.Concat(
		[]Call{
			{API: "cuInit", Value: 0, Ret: noDevice},
			{API: "cuGraphCreate", Out: GraphC, Value: 0, Ret: 3},
			node("cuGraphAddKernelNode", GraphC, 0, Function2, Dim3{1, 1, 1}),
			{API: "cuGraphCreate", Out: GraphA, Value: 0, Ret: 3},
			node("cuGraphAddKernelNode", GraphA, NodeA, Function1, Dim3{2, 1, 1}),
			node("cuGraphAddKernelNode_v2", GraphA, NodeB, Function2, Dim3{4, 1, 1}),
			node("cuGraphAddNode", GraphA, NodeC, Function1, Dim3{8, 1, 1}),
			{API: "cuGraphAddNode", Handle: GraphA, Out: NodeD, NodeType: NodeEmpty, Ret: 1},
			{API: "cuGraphAddNode", Handle: GraphA, Out: 0, NodeType: NodeGraph, Child: GraphC, Ret: 3},
			set("cuGraphKernelNodeSetParams", 0, NodeA, Function2, Dim3{16, 1, 1}, 3),
			set("cuGraphKernelNodeSetParams_v2", 0, NodeB, Function1, Dim3{32, 1, 1}, 3),
			set("cuGraphNodeSetParams", 0, NodeC, Function2, Dim3{64, 1, 1}, 3),
			{API: "cuGraphInstantiate", Handle: GraphA, Out: GraphExecA, Ret: 3},
		},
		replay(UpdateReplays),
		[]Call{
			set("cuGraphExecKernelNodeSetParams", GraphExecA, NodeA, Function1, Dim3{128, 1, 1}, 1),
			set("cuGraphExecKernelNodeSetParams_v2", GraphExecA, NodeB, Function2, Dim3{256, 1, 1}, 1),
			set("cuGraphExecNodeSetParams", GraphExecA, NodeC, Function1, Dim3{512, 1, 1}, 1),
		},
		replay(UpdateReplays),
		[]Call{
			{API: "cuGraphExecUpdate", Handle: GraphExecA, Graph: GraphC, Ret: 3},
			{API: "cuGraphExecUpdate_v2", Handle: GraphExecA, Graph: GraphC, Ret: 3},
		},
		replay(1),
	)
}()}}

// BeforeReplays is how many times RuntimeGraphsBefore replays each of
// its executable graphs.
const BeforeReplays = 4

// RuntimeGraphsBefore is "runtime graphsbefore": graphs made before a
// tracer attached, and replayed after. Before READY: a capture on StreamA
// of a vectorAdd and a matmul, ended into GraphA and instantiated as
// GraphExecA; GraphB made by cudaGraphCreate with a reduce node,
// instantiated as GraphExecB. After: GraphExecA and GraphExecB replayed
// BeforeReplays times each; GraphB instantiated again as GraphExecC, and
// GraphC made with a vectorAdd node and GraphA as a child graph node,
// instantiated as GraphExecD, each replayed BeforeReplays times; and a
// capture on StreamC of a reduce, ended into GraphE, instantiated as
// GraphExecE and replayed BeforeReplays times: the one graph wholly made
// after.
var RuntimeGraphsBefore = Scenario{Program: "runtime", Name: "graphsbefore",
	Before: []Call{
		{API: "cudaStreamBeginCapture", Stream: StreamA, Value: 0, Ret: noDevice},
		launch("cudaLaunchKernel", KernelVectorAdd, Dim3{64, 1, 1}, Dim3{128, 1, 1}, 0, StreamA, noDevice),
		launch("cudaLaunchKernel", KernelMatmul, Dim3{16, 16, 1}, Dim3{16, 16, 1}, 2048, StreamA, noDevice),
		{API: "cudaStreamEndCapture", Stream: StreamA, Out: GraphA, Ret: noDevice},
		{API: "cudaGraphInstantiate", Handle: GraphA, Out: GraphExecA, Ret: noDevice},
		{API: "cudaGraphCreate", Out: GraphB, Value: 0, Ret: noDevice},
		{API: "cudaGraphAddKernelNode", Handle: GraphB, Out: NodeA, Func: KernelReduce, Grid: Dim3{4, 1, 1}, Block: Dim3{64, 1, 1}, Ret: noDevice},
		{API: "cudaGraphInstantiate", Handle: GraphB, Out: GraphExecB, Ret: noDevice},
	},
	Threads: [][]Call{func() []Call {
		replay := func(exec uint64) []Call {
			out := make([]Call, BeforeReplays)
			for i := range out {
				out[i] = Call{API: "cudaGraphLaunch", Handle: exec, Stream: StreamB, Ret: noDevice}
			}
			return out
		}
		return slices.Concat(
			replay(GraphExecA), replay(GraphExecB),
			[]Call{
				{API: "cudaGraphInstantiate", Handle: GraphB, Out: GraphExecC, Ret: noDevice},
				{API: "cudaGraphCreate", Out: GraphC, Value: 0, Ret: noDevice},
				{API: "cudaGraphAddKernelNode", Handle: GraphC, Out: NodeB, Func: KernelVectorAdd, Grid: Dim3{8, 1, 1}, Block: Dim3{64, 1, 1}, Ret: noDevice},
				{API: "cudaGraphAddChildGraphNode", Handle: GraphC, Child: GraphA, Ret: noDevice},
				{API: "cudaGraphInstantiate", Handle: GraphC, Out: GraphExec, Ret: noDevice},
			},
			replay(GraphExecC), replay(GraphExec),
			[]Call{
				{API: "cudaStreamBeginCapture", Stream: StreamC, Value: 0, Ret: noDevice},
				launch("cudaLaunchKernel", KernelReduce, Dim3{2, 1, 1}, Dim3{32, 1, 1}, 0, StreamC, noDevice),
				{API: "cudaStreamEndCapture", Stream: StreamC, Out: GraphD, Ret: noDevice},
				{API: "cudaGraphInstantiate", Handle: GraphD, Out: GraphExecD, Ret: noDevice},
			},
			replay(GraphExecD),
		)
	}()},
}

var Scenarios = []*Scenario{&RuntimeLaunch, &RuntimeThreads, &RuntimeRegister, &RuntimeOccupancy, &RuntimeGraphs, &DriverLaunch,
	&DriverGraphs, &RuntimeGraphUpdates, &DriverGraphUpdates, &RuntimeGraphsBefore, &StaticLaunch}

// Loop is what "<program> <name> <n> [<threads>]" does: Setup, made once
// by the main thread after the go line (a tracer attached at READY sees
// it), then Call n times on each of the threads, timed (NS_PER_CALL).
type Loop struct {
	Program, Name string
	Setup         []Call
	Call          Call
}

// GraphLoopKernels is how many kernels RuntimeGraphLoop's graph holds.
const GraphLoopKernels = 100

// RuntimeGraphLoop is "runtime graphloop <n>": a capture on StreamA of
// GraphLoopKernels launches (vectorAdd, matmul and reduce in turn, the
// i-th with a grid of i+1 blocks), ended into GraphA and instantiated as
// GraphExecA; then cudaGraphLaunch(GraphExecA, StreamB) n times.
var RuntimeGraphLoop = Loop{Program: "runtime", Name: "graphloop",
	Setup: func() []Call {
		kernels := []string{KernelVectorAdd, KernelMatmul, KernelReduce}
		out := []Call{{API: "cudaStreamBeginCapture", Stream: StreamA, Value: 0, Ret: noDevice}}
		for i := range GraphLoopKernels {
			out = append(out, launch("cudaLaunchKernel", kernels[i%len(kernels)], Dim3{uint32(i + 1), 1, 1}, Dim3{128, 1, 1}, 0, StreamA, noDevice))
		}
		return append(out,
			Call{API: "cudaStreamEndCapture", Stream: StreamA, Out: GraphA, Ret: noDevice},
			Call{API: "cudaGraphInstantiate", Handle: GraphA, Out: GraphExecA, Ret: noDevice})
	}(),
	Call: Call{API: "cudaGraphLaunch", Handle: GraphExecA, Stream: StreamB, Ret: noDevice},
}

// Loops lists every program's loops: "loop" (the call of RuntimeLoop,
// DriverLoop, StaticLoop) and RuntimeGraphLoop.
var Loops = []*Loop{
	{Program: "runtime", Name: "loop", Call: RuntimeLoop},
	{Program: "driver", Name: "loop", Call: DriverLoop},
	{Program: "static", Name: "loop", Call: StaticLoop},
	&RuntimeGraphLoop,
}

// header renders the scenarios.h the C programs include: the scenario
// tables above as C data, so the programs and these tables cannot drift.
func header() string {
	var apis []string
	all := []Call{DlopenLaunch, ForwardLaunch}
	for _, s := range Scenarios {
		all = append(all, s.Calls()...)
	}
	for _, l := range Loops {
		all = append(all, l.Setup...)
		all = append(all, l.Call)
	}
	for _, c := range all {
		apis = append(apis, c.API)
	}
	apis = append(apis, "__cudaPushCallConfiguration", "__cudaPopCallConfiguration")
	slices.Sort(apis)
	apis = slices.Compact(apis)

	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("/* Code generated by cudaprog (scenario.go); DO NOT EDIT. */\n")
	p("#ifndef CUDAPROG_SCENARIOS_H\n#define CUDAPROG_SCENARIOS_H\n\n")
	p("#define HANDLE_BASE 0x%xULL\n#define HANDLE_SPAN 0x%xULL\n", HandleBase, HandleSpan)
	p("#define FORWARD_FUNCTION 0x%xULL\n#define NORET (%d)\n\n", ForwardFunction, NoRet)
	p("enum api {\n")
	for _, a := range apis {
		p("\tAPI_%s,\n", a)
	}
	p("\tAPI_COUNT\n};\n\n")
	p("static const char *const api_name[] __attribute__((unused)) = {\n")
	for _, a := range apis {
		p("\t%q,\n", a)
	}
	p("};\n\n")
	p(`struct call {
	enum api api;
	const char *func;
	int via_stub;
	unsigned long long handle;
	unsigned grid[3], block[3];
	unsigned smem;
	unsigned long long stream;
	int kind;
	unsigned long long size, dst, src, ptr;
	int value;
	unsigned long long out, child, function, node, graph;
	int node_type;
};

struct seq { const struct call *calls; int n; };
struct scenario { const char *program, *name; const struct seq *threads; int nthreads; struct seq before; };

`)
	lit := func(c Call) string {
		fn := "0"
		if c.Func != "" {
			fn = fmt.Sprintf("%q", c.Func)
		}
		via := 0
		if c.ViaStub {
			via = 1
		}
		return fmt.Sprintf("{API_%s, %s, %d, 0x%xULL, {%d, %d, %d}, {%d, %d, %d}, %d, 0x%xULL, %d, %dULL, 0x%xULL, 0x%xULL, 0x%xULL, %d, 0x%xULL, 0x%xULL, 0x%xULL, 0x%xULL, 0x%xULL, %d}",
			c.API, fn, via, c.Handle, c.Grid[0], c.Grid[1], c.Grid[2], c.Block[0], c.Block[1], c.Block[2],
			c.SharedMem, c.Stream, c.Kind, c.Size, c.Dst, c.Src, c.Ptr, c.Value, c.Out, c.Child, c.Function, c.Node, c.Graph,
			c.NodeType)
	}
	for si, s := range Scenarios {
		p("static const struct call scenario%d_before[] = {\n", si)
		for _, c := range s.Before {
			p("\t%s,\n", lit(c))
		}
		p("\t{0}};\n") // never empty
		for ti, seq := range s.Threads {
			p("static const struct call scenario%d_thread%d[] = {\n", si, ti)
			for _, c := range seq {
				p("\t%s,\n", lit(c))
			}
			p("};\n")
		}
		p("static const struct seq scenario%d_threads[] = {\n", si)
		for ti, seq := range s.Threads {
			p("\t{scenario%d_thread%d, %d},\n", si, ti, len(seq))
		}
		p("};\n\n")
	}
	p("static const struct scenario scenarios[] __attribute__((unused)) = {\n")
	for si, s := range Scenarios {
		p("\t{%q, %q, scenario%d_threads, %d, {scenario%d_before, %d}},\n", s.Program, s.Name, si, len(s.Threads), si, len(s.Before))
	}
	p("};\n#define NSCENARIOS %d\n\n", len(Scenarios))
	for li, l := range Loops {
		p("static const struct call loop%d_setup[] = {\n", li)
		for _, c := range l.Setup {
			p("\t%s,\n", lit(c))
		}
		p("\t{0}};\n") // never empty
	}
	p("struct loop { const char *program, *name; struct seq setup; struct call call; };\n")
	p("static const struct loop loops[] __attribute__((unused)) = {\n")
	for li, l := range Loops {
		p("\t{%q, %q, {loop%d_setup, %d}, %s},\n", l.Program, l.Name, li, len(l.Setup), lit(l.Call))
	}
	p("};\n#define NLOOPS %d\n\n", len(Loops))
	p("static const struct call dlopen_launch __attribute__((unused)) = %s;\n#define DLOPEN_LAUNCH_RET %d\n\n", lit(DlopenLaunch), DlopenLaunch.Ret)
	p("#define SHORT_KERNELS(X)")
	for _, k := range ShortKernels {
		p(" X(%s)", k)
	}
	p("\n\n")
	p("#endif\n")
	return b.String()
}
