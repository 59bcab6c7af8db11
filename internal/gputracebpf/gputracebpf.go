// Package gputracebpf holds the eBPF programs of internal/gputrace, which
// probe the GPU runtimes' APIs: CUDA's runtime and driver, and HIP's
// runtime, whose entry points take their CUDA counterparts' arguments
// (gputrace.bpf.c, compiled by bpf2go into the committed
// gputrace_x86_bpfel.o). It also holds the table of which program probes
// which symbol, and the decoder of the records they submit.
//
// The record layout is fixed by struct event in gputrace.bpf.c; Decode reads
// it without allocating. The records travel in lanes (internal/bpfsource's
// lanes.bpf.h, one ring buffer per CPU), read by Objects.NewRing.
package gputracebpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cilium/ebpf"

	"github.com/xpuscope/xpuscope/internal/bpfsource"
)

// API identifies a probed function; it is the probe's attach cookie and
// each record's api field.
type API uint16

// Kind says what a record describes.
type Kind uint16

// Record kinds (enum kind in gputrace.bpf.c).
const (
	KindLaunch       = Kind(gputraceKindKIND_LAUNCH)
	KindMemcpy       = Kind(gputraceKindKIND_MEMCPY)
	KindMemset       = Kind(gputraceKindKIND_MEMSET)
	KindMalloc       = Kind(gputraceKindKIND_MALLOC)
	KindFree         = Kind(gputraceKindKIND_FREE)
	KindSync         = Kind(gputraceKindKIND_SYNC)
	KindEventRecord  = Kind(gputraceKindKIND_EVENT_RECORD)
	KindStreamWait   = Kind(gputraceKindKIND_STREAM_WAIT)
	KindSetDevice    = Kind(gputraceKindKIND_SET_DEVICE)
	KindGraphLaunch  = Kind(gputraceKindKIND_GRAPH_LAUNCH)
	KindFuncName     = Kind(gputraceKindKIND_FUNC_NAME)
	KindKernelHandle = Kind(gputraceKindKIND_KERNEL_HANDLE)
	KindEventQuery   = Kind(gputraceKindKIND_EVENT_QUERY)
	KindCopyDone     = Kind(gputraceKindKIND_COPY_DONE)
	// Graphs: a stream capture's begin and end, an instantiation, the
	// destroys.
	KindCaptureBegin     = Kind(gputraceKindKIND_CAPTURE_BEGIN)
	KindCaptureEnd       = Kind(gputraceKindKIND_CAPTURE_END)
	KindGraphInstantiate = Kind(gputraceKindKIND_GRAPH_INSTANTIATE)
	KindGraphDestroy     = Kind(gputraceKindKIND_GRAPH_DESTROY)
	KindGraphExecDestroy = Kind(gputraceKindKIND_GRAPH_EXEC_DESTROY)
	// Graphs built node by node: a graph made or copied, a kernel node,
	// a child graph node.
	KindGraphCreate     = Kind(gputraceKindKIND_GRAPH_CREATE)
	KindGraphClone      = Kind(gputraceKindKIND_GRAPH_CLONE)
	KindGraphKernelNode = Kind(gputraceKindKIND_GRAPH_KERNEL_NODE)
	KindGraphChildNode  = Kind(gputraceKindKIND_GRAPH_CHILD_NODE)
	// A kernel node's handle (the return of the call that made it), and
	// the changes of a graph's or an executable graph's kernels: a node's
	// parameters set, in a graph or in an executable graph (a wide
	// record), and an executable graph updated from a graph.
	KindGraphNode           = Kind(gputraceKindKIND_GRAPH_NODE)
	KindGraphNodeParams     = Kind(gputraceKindKIND_GRAPH_NODE_PARAMS)
	KindGraphExecNodeParams = Kind(gputraceKindKIND_GRAPH_EXEC_NODE_PARAMS)
	KindGraphExecUpdate     = Kind(gputraceKindKIND_GRAPH_EXEC_UPDATE)
	// NCCL (nccl.go): a collective or point-to-point call, a group's
	// start or end, a communicator's making (its id, then its handle on
	// return), a query of its size or rank, its end.
	KindNCCLColl      = Kind(gputraceKindKIND_NCCL_COLL)
	KindNCCLGroup     = Kind(gputraceKindKIND_NCCL_GROUP)
	KindNCCLCommID    = Kind(gputraceKindKIND_NCCL_COMM_ID)
	KindNCCLComm      = Kind(gputraceKindKIND_NCCL_COMM)
	KindNCCLCommQuery = Kind(gputraceKindKIND_NCCL_COMM_QUERY)
	KindNCCLCommEnd   = Kind(gputraceKindKIND_NCCL_COMM_END)
)

// cudaMemcpyKind values, as a KindMemcpy record's MemcpyKind.
const (
	MemcpyHostToHost     = 0
	MemcpyHostToDevice   = 1
	MemcpyDeviceToHost   = 2
	MemcpyDeviceToDevice = 3
	MemcpyDefault        = 4
)

// NumAPIs bounds the API ids the probes use.
const NumAPIs = int(gputraceApiAPI_MAX)

// Counters of the BPF side (enum counter), read from the counters map.
const (
	CounterDrops       = uint32(gputraceCounterCOUNTER_DROPS)
	CounterNested      = uint32(gputraceCounterCOUNTER_NESTED)
	CounterLostReturns = uint32(gputraceCounterCOUNTER_LOST_RETURNS)
	NumCounters        = int(gputraceCounterCOUNTER_MAX)
)

// Sizes of the record layouts: struct event, struct name_event (a
// KindFuncName record) and struct wide_event (a KindGraphExecNodeParams
// record).
const (
	EventSize     = 80
	NameEventSize = EventSize + nameLen
	nameLen       = 240
	WideEventSize = EventSize + 16
)

// Event is one decoded record. Which of A means what depends on Kind; the
// accessors below name them.
type Event struct {
	TS     uint64 // CLOCK_MONOTONIC ns
	PID    uint32
	TID    uint32
	Kind   Kind
	API    API
	Device int32 // the thread's device as set by cudaSetDevice; 0 before
	Ret    int32 // return code, for records made by return probes
	A      [6]uint64
	// Wide is the word past A of a wide record (KindGraphExecNodeParams);
	// 0 for the other kinds. GraphNode reads it.
	Wide uint64
	// Name is the kernel name of a KindFuncName record. It points into
	// the decoded buffer: copy it to keep it.
	Name []byte
}

// ErrShort is returned for a record smaller than its layout.
var ErrShort = errors.New("gputracebpf: short record")

// Decode decodes one ring-buffer record into e without allocating.
func Decode(b []byte, e *Event) error {
	if len(b) < EventSize {
		return fmt.Errorf("%w: %d bytes, want %d", ErrShort, len(b), EventSize)
	}
	le := binary.LittleEndian
	e.TS = le.Uint64(b[0:])
	e.PID = le.Uint32(b[8:])
	e.TID = le.Uint32(b[12:])
	e.Kind = Kind(le.Uint16(b[16:]))
	e.API = API(le.Uint16(b[18:]))
	e.Device = int32(le.Uint32(b[20:]))
	e.Ret = int32(le.Uint32(b[24:]))
	for i := range e.A {
		e.A[i] = le.Uint64(b[32+8*i:])
	}
	e.Name, e.Wide = nil, 0
	if e.Kind == KindGraphExecNodeParams {
		if len(b) < WideEventSize {
			return fmt.Errorf("%w: %d bytes of a wide record, want %d", ErrShort, len(b), WideEventSize)
		}
		e.Wide = le.Uint64(b[EventSize:])
	}
	if e.Kind == KindFuncName {
		if len(b) < NameEventSize {
			return fmt.Errorf("%w: name record of %d bytes, want %d", ErrShort, len(b), NameEventSize)
		}
		name := b[EventSize:NameEventSize]
		for i, c := range name {
			if c == 0 {
				name = name[:i]
				break
			}
		}
		e.Name = name
	}
	return nil
}

// IsCall reports whether the record stands for one call of its API: every
// record does but the returns of calls already recorded at entry,
// KindCopyDone, KindNCCLComm and KindGraphNode.
func (e *Event) IsCall() bool {
	return e.Kind != KindCopyDone && e.Kind != KindNCCLComm && e.Kind != KindGraphNode
}

// The fields of the records, by kind, as enum kind in gputrace.bpf.c lays
// them out in A. Nothing outside this file indexes A.

// Func is a KindLaunch (or KindGraphKernelNode, KindGraphNodeParams,
// KindGraphExecNodeParams) record's function: the host stub of a runtime
// launch, the function handle of a driver or module launch.
func (e *Event) Func() uint64 { return e.A[0] }

// Grid and Block are a KindLaunch (or KindGraphKernelNode,
// KindGraphNodeParams, KindGraphExecNodeParams) record's dimensions, x, y,
// z.
func (e *Event) Grid() [3]uint32 {
	return [3]uint32{uint32(e.A[1]), uint32(e.A[1] >> 32), uint32(e.A[2])}
}
func (e *Event) Block() [3]uint32 {
	return [3]uint32{uint32(e.A[3]), uint32(e.A[3] >> 32), uint32(e.A[2] >> 32)}
}

// SetLaunch makes e a KindLaunch record of a launch of fn with that
// configuration on stream, as the launch probes lay it out: what a
// graph's replay stands for, kernel by kernel.
func (e *Event) SetLaunch(fn uint64, grid, block [3]uint32, smem, stream uint64) {
	e.Kind = KindLaunch
	e.A = [6]uint64{fn, uint64(grid[0]) | uint64(grid[1])<<32, uint64(grid[2]) | uint64(block[2])<<32,
		uint64(block[0]) | uint64(block[1])<<32, smem, stream}
}

// SharedMem is a KindLaunch (or KindGraphKernelNode, KindGraphNodeParams,
// KindGraphExecNodeParams) record's dynamic shared memory, in bytes.
func (e *Event) SharedMem() uint64 { return e.A[4] }

// Stream is the stream a record names: a launch's, a copy's, a memset's,
// an allocation's or a free's (0 for the default stream or a synchronous
// call), an event record's, a graph launch's, a stream wait's and a
// finished synchronous copy's; 0 for the other kinds.
func (e *Event) Stream() uint64 {
	switch e.Kind {
	case KindLaunch:
		return e.A[5]
	case KindMemcpy, KindMemset, KindMalloc, KindFree:
		return e.A[4]
	case KindEventRecord, KindGraphLaunch:
		return e.A[1]
	case KindStreamWait, KindCopyDone, KindCaptureBegin, KindCaptureEnd:
		return e.A[0]
	}
	return 0
}

// Graph is the CUDA graph (cudaGraph_t, CUgraph) a KindCaptureEnd,
// KindGraphCreate or KindGraphClone record's call left in its output, a
// KindGraphInstantiate record instantiated, a KindGraphDestroy record
// destroys, a KindGraphKernelNode, KindGraphChildNode or KindGraphNode
// record adds a node to, a KindCaptureBegin record captures into (0: a
// new graph) or a KindGraphExecUpdate record updates from; 0 for the
// other kinds. A kernel node's kernel is read as a launch's: Func, Grid,
// Block, SharedMem.
func (e *Event) Graph() uint64 {
	switch e.Kind {
	case KindCaptureEnd, KindGraphCreate, KindGraphClone, KindCaptureBegin, KindGraphExecUpdate:
		return e.A[1]
	case KindGraphInstantiate, KindGraphDestroy, KindGraphChildNode, KindGraphNode:
		return e.A[0]
	case KindGraphKernelNode:
		return e.A[5]
	}
	return 0
}

// GraphNode is the kernel node (cudaGraphNode_t, CUgraphNode) a
// KindGraphNode record's call left in its output, or a
// KindGraphNodeParams or KindGraphExecNodeParams record sets; 0 for the
// other kinds.
func (e *Event) GraphNode() uint64 {
	switch e.Kind {
	case KindGraphNode:
		return e.A[1]
	case KindGraphNodeParams:
		return e.A[5]
	case KindGraphExecNodeParams:
		return e.Wide
	}
	return 0
}

// SourceGraph is the graph a KindGraphClone record copies or a
// KindGraphChildNode record embeds; 0 for the other kinds.
func (e *Event) SourceGraph() uint64 {
	switch e.Kind {
	case KindGraphClone:
		return e.A[0]
	case KindGraphChildNode:
		return e.A[1]
	}
	return 0
}

// GraphExec is the executable graph (cudaGraphExec_t, CUgraphExec) a
// KindGraphInstantiate record's call left in its output, a
// KindGraphLaunch record launches, a KindGraphExecDestroy record
// destroys, or a KindGraphExecNodeParams or KindGraphExecUpdate record
// changes; 0 for the other kinds.
func (e *Event) GraphExec() uint64 {
	switch e.Kind {
	case KindGraphInstantiate:
		return e.A[1]
	case KindGraphLaunch, KindGraphExecDestroy, KindGraphExecUpdate:
		return e.A[0]
	case KindGraphExecNodeParams:
		return e.A[5]
	}
	return 0
}

// Waited is what a KindSync record waited for: the stream, or the event
// of an event synchronisation (see API.SyncScope); 0 for a device.
func (e *Event) Waited() uint64 { return e.A[0] }

// Duration is how long a call with a return probe took, in ns: an
// allocation (KindMalloc), a synchronisation (KindSync), a synchronous
// copy (KindCopyDone); 0 for the other kinds.
func (e *Event) Duration() uint64 {
	switch e.Kind {
	case KindMalloc:
		return e.A[2]
	case KindSync, KindCopyDone:
		return e.A[1]
	}
	return 0
}

// Bytes is how many bytes a KindMemcpy or KindMemset record moves or sets,
// or a KindMalloc record allocates; 0 for the other kinds.
func (e *Event) Bytes() uint64 {
	switch e.Kind {
	case KindMemcpy, KindMemset:
		return e.A[2]
	case KindMalloc:
		return e.A[1]
	}
	return 0
}

// CopyKind is the cudaMemcpyKind of a KindMemcpy or KindCopyDone record
// (MemcpyHostToHost…); the value is unchecked, straight from the caller.
func (e *Event) CopyKind() uint64 { return e.A[3] }

// Pointer is the device pointer a KindMalloc record returned (0 on
// failure) or a KindFree record frees.
func (e *Event) Pointer() uint64 { return e.A[0] }

// EventHandle is the CUDA event of a KindEventRecord, KindStreamWait or
// KindEventQuery record; 0 for the other kinds.
func (e *Event) EventHandle() uint64 {
	switch e.Kind {
	case KindEventRecord, KindEventQuery:
		return e.A[0]
	case KindStreamWait:
		return e.A[1]
	}
	return 0
}

// NamedFunc is the function a KindFuncName record names: a host stub, or,
// when driver is set, a driver or module function handle.
func (e *Event) NamedFunc() (fn uint64, driver bool) { return e.A[0], e.A[1] == 1 }

// KernelHandle is a KindKernelHandle record's cudaKernel_t and the host
// stub it stands for.
func (e *Event) KernelHandle() (kernel, hostFunc uint64) { return e.A[0], e.A[1] }

// LoadOptions tune the BPF side.
type LoadOptions struct {
	// Libraries are the libraries whose probes' programs are loaded;
	// none loads those of every library.
	Libraries []Library
	// RingBytes is the lanes' size, all of them together, a power of two
	// multiple of the page size, split evenly between them (each at
	// least a page); 0 gives each a page.
	RingBytes uint32
	// WakeupBytes wakes the reader once this much is unread in a lane;
	// below it records are submitted without a wakeup. 0 is a quarter of
	// a lane.
	WakeupBytes uint64
	// UprobeMulti loads the probe programs for uprobe_multi links (Linux
	// 6.6+): one link per program and file, which attaches and detaches
	// far faster than one perf event per symbol.
	UprobeMulti bool
	// Bench loads the benchmark programs too (BenchPrograms), as plain
	// uprobes, and gives their ring buffer (BenchEvents) BenchRingBytes.
	// No Source loads them.
	Bench bool
	// Edit, if set, changes the parsed object before it is loaded (tests:
	// an object the verifier rejects).
	Edit func(*ebpf.CollectionSpec)
}

// BenchPrograms are the programs the benchmarks compare the probes with:
// the floor (an empty program), the one user-memory read a launch record
// needs (the two stack arguments), the least a launch record costs through
// a BPF ring buffer, the launch probe's work with its record kept in the
// CPU's cache instead of a lane (what the lanes cost), and the naive
// design (a record per call that always wakes the reader).
var BenchPrograms = []string{gputraceProgBenchEmpty, gputraceProgBenchArgs, gputraceProgBenchRecord, gputraceProgBenchHot,
	gputraceProgBenchNaive}

// BenchRingBytes is the size of the benchmark programs' ring buffer.
const BenchRingBytes = 2 << 20

// Objects are the loaded programs and maps.
type Objects struct {
	gputraceMaps
	gputraceVariables
	bpfsource.Programs // by name
}

// Load loads the maps and the programs of the probes o selects into the
// kernel. Errors are cilium/ebpf's: bpfsource.Classify sorts them.
func Load(o LoadOptions) (*Objects, error) {
	spec, err := loadGputrace()
	if err != nil {
		return nil, fmt.Errorf("gputracebpf: parse embedded object: %w", err)
	}
	probes := Programs(o.Libraries...)
	lo := bpfsource.LoadOptions{Ring: gputraceMapLanes, RingBytes: o.RingBytes, WakeupBytes: o.WakeupBytes,
		Programs: probes, Edit: o.Edit}
	if o.UprobeMulti {
		lo.UprobeMulti = probes
	}
	if o.Bench {
		lo.Programs = append(slices.Clip(probes), BenchPrograms...)
		spec.Maps[gputraceMapBenchEvents].MaxEntries = BenchRingBytes
	}
	objs := &Objects{}
	objs.Programs, err = bpfsource.Load(spec, lo, &objs.gputraceMaps, &objs.gputraceVariables)
	if err != nil {
		return nil, err
	}
	return objs, nil
}

// Close frees the programs and maps.
func (o *Objects) Close() error {
	return errors.Join(o.Programs.Close(), o.gputraceMaps.Close())
}

// Counters sums the BPF counters over CPUs.
func (o *Objects) Counters() ([NumCounters]uint64, error) {
	var out [NumCounters]uint64
	err := bpfsource.SumPerCPU(o.gputraceMaps.Counters, out[:])
	return out, err
}

// NewRing starts the reader of the records, the lanes'.
func (o *Objects) NewRing(cfg bpfsource.RingConfig) (*bpfsource.Ring, error) {
	return bpfsource.NewLaneRing(o.gputraceMaps.Lanes, o.gputraceMaps.LaneStages, o.gputraceMaps.LaneWakeups, cfg)
}

// Lanes is the lanes map.
func (o *Objects) Lanes() *ebpf.Map { return o.gputraceMaps.Lanes }

// LaneStages is the lanes' stages map, where launch records wait
// (lanes.bpf.h).
func (o *Objects) LaneStages() *ebpf.Map { return o.gputraceMaps.LaneStages }

// BenchEvents is the benchmark programs' ring buffer map.
func (o *Objects) BenchEvents() *ebpf.Map { return o.gputraceMaps.BenchEvents }

// UnrecordedCalls is the map of the calls, by (pid, api), that reached
// the ring buffer as no record: dropped for want of room, or failed calls
// that make none. A call's count is the records read for it (see
// Event.IsCall) plus this map's.
func (o *Objects) UnrecordedCalls() *ebpf.Map { return o.gputraceMaps.UnrecordedCalls }

// CallKey is a key of the UnrecordedCalls map.
type CallKey = gputraceCallKey
