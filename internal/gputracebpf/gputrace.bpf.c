//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// Uprobes on the CUDA runtime (libcudart) and driver (libcuda) APIs.
//
// Design: every probe writes one fixed-size record to its CPU's lane
// (bpfsource's lanes.bpf.h: a ring buffer per CPU, written without a
// helper call or a lock shared with other CPUs; launches, the hottest,
// through the lane's stage, 16 at a time) WITHOUT waking the
// reader, unless the lane is past the wake-up watermark; the reader polls
// on a short timer and merges the lanes in timestamp order. A record that
// finds no room is counted in `counters[COUNTER_DROPS]`, and its call in
// `unrecorded_calls`: user space counts a call per record it reads plus
// that map, which keeps the call counts exact with no map update on the
// hot path. Per-thread state is task-local storage (`threads`), looked up
// from the task, which also gives the ids. Return probes exist only
// where the value matters: allocations (the pointer), syncs (duration and
// error), cuModuleGetFunction / __cudaGetKernel (the handle), the calls
// that make a graph, an executable graph or a kernel node (the handle),
// and a graph update (whether it was made).
//
// Arguments are read by the C calling convention of the architecture the
// object is built for (x86-64's System V ABI, arm64's AAPCS64), through
// bpfsource's args.bpf.h: the argument words 1 to 6 are in registers on
// both, the 7th and 8th on the stack on x86-64 and in x6, x7 on arm64.

#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "../bpfsource/args.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

// What a record describes. Mirrored in Go by bpf2go (-type kind).
enum kind {
	KIND_LAUNCH = 1,     // a0 func, a1 grid x|y<<32, a2 grid z|block z<<32, a3 block x|y<<32, a4 shared mem, a5 stream
	KIND_MEMCPY = 2,     // a0 dst, a1 src, a2 bytes, a3 cudaMemcpyKind, a4 stream
	KIND_MEMSET = 3,     // a0 ptr, a1 value, a2 bytes, a4 stream
	KIND_MALLOC = 4,     // a0 pointer returned, a1 bytes, a2 duration ns, a4 stream; ret
	KIND_FREE = 5,       // a0 pointer, a4 stream
	KIND_SYNC = 6,       // a0 stream/event (0 for device/context), a1 duration ns; ret
	KIND_EVENT_RECORD = 7,   // a0 event, a1 stream
	KIND_STREAM_WAIT = 8,    // a0 stream, a1 event
	KIND_SET_DEVICE = 9,     // a0 device
	KIND_GRAPH_LAUNCH = 10,  // a0 graph exec, a1 stream
	KIND_FUNC_NAME = 11,     // name record: a0 host function or driver handle, a1 1 for a driver handle
	KIND_KERNEL_HANDLE = 12, // a0 cudaKernel_t handle, a1 host function it stands for
	KIND_EVENT_QUERY = 13,   // a0 event; ret (0: the event has completed)
	KIND_COPY_DONE = 14,     // a synchronous copy returned: a0 stream, a1 duration ns, a3 cudaMemcpyKind; ret
	KIND_CAPTURE_BEGIN = 15,     // a0 stream
	KIND_CAPTURE_END = 16,       // a0 stream, a1 the graph left in the output; ret
	KIND_GRAPH_INSTANTIATE = 17, // a0 graph, a1 the graph exec left in the output; ret
	KIND_GRAPH_DESTROY = 18,     // a0 graph
	KIND_GRAPH_EXEC_DESTROY = 19, // a0 graph exec
	KIND_GRAPH_CREATE = 20,      // a0 flags, a1 the graph left in the output; ret
	KIND_GRAPH_CLONE = 21,       // a0 graph copied, a1 the copy left in the output; ret
	KIND_GRAPH_KERNEL_NODE = 22, // a0-a4 as KIND_LAUNCH's (the node's kernel), a5 graph
	KIND_GRAPH_CHILD_NODE = 23,  // a0 graph, a1 the child graph it embeds
	// NCCL (libnccl): the api says which call.
	KIND_NCCL_COLL = 24,       // a collective or point-to-point call: a0 count, a1 ncclDataType_t, a2 ncclRedOp_t (~0: none), a3 root or peer (~0: none), a4 comm, a5 stream
	KIND_NCCL_GROUP = 25,      // ncclGroupStart or ncclGroupEnd
	KIND_NCCL_COMM_ID = 26,    // a communicator's making begins: a0-a5 the first 48 bytes of its ncclUniqueId; for ncclCommSplit a0 parent comm, a1 color, a2 key
	KIND_NCCL_COMM = 27,       // it returned: a0 nranks | rank<<32 (~0: not known), a1 the comm left in the output; ret
	KIND_NCCL_COMM_QUERY = 28, // ncclCommCount, ncclCommUserRank returned: a0 comm, a1 the int left in the output (low 32 bits); ret
	KIND_NCCL_COMM_END = 29,   // ncclCommDestroy, ncclCommAbort, ncclCommFinalize: a0 comm
	// Graphs (continued): a kernel node's handle, the changes of a
	// graph's and an executable graph's kernels.
	KIND_GRAPH_NODE = 30,             // a kernel node's making returned: a0 graph, a1 the node left in the output; ret
	KIND_GRAPH_NODE_PARAMS = 31,      // a kernel node's parameters set: a0-a4 as KIND_LAUNCH's (the new kernel), a5 node
	KIND_GRAPH_EXEC_NODE_PARAMS = 32, // an executable graph's kernel node's set (struct wide_event): a0-a4 the new kernel, a5 graph exec, node
	KIND_GRAPH_EXEC_UPDATE = 33,      // an executable graph updated from a graph: a0 graph exec, a1 graph; ret
};

// Which function a probe is attached to: the attach cookie.
enum api {
	API_cudaLaunchKernel = 1,
	API_cudaLaunchKernel_ptsz,
	API_cudaLaunchKernelExC,
	API_cudaLaunchCooperativeKernel,
	API_cudaGraphLaunch,
	API_cudaMemcpy,
	API_cudaMemcpyAsync,
	API_cudaMemcpyAsync_ptsz,
	API_cudaMemset,
	API_cudaMemsetAsync,
	API_cudaMalloc,
	API_cudaMallocAsync,
	API_cudaFree,
	API_cudaFreeAsync,
	API_cudaStreamSynchronize,
	API_cudaDeviceSynchronize,
	API_cudaEventRecord,
	API_cudaEventSynchronize,
	API_cudaStreamWaitEvent,
	API_cudaSetDevice,
	API___cudaRegisterFunction,
	API___cudaGetKernel,
	API_cudaGetKernel,
	API_cudaMemcpy_ptds,
	API_cudaMemset_ptds,
	API_cudaMemsetAsync_ptsz,
	API_cudaMallocAsync_ptsz,
	API_cudaFreeAsync_ptsz,
	API_cudaStreamSynchronize_ptsz,
	API_cudaEventRecord_ptsz,
	API_cudaStreamWaitEvent_ptsz,
	API_cudaGraphLaunch_ptsz,
	API_cudaEventQuery,
	API_cudaStreamBeginCapture,
	API_cudaStreamBeginCapture_ptsz,
	API_cudaStreamEndCapture,
	API_cudaStreamEndCapture_ptsz,
	API_cudaGraphInstantiate,
	API_cudaGraphInstantiateWithFlags,
	API_cudaGraphDestroy,
	API_cudaGraphExecDestroy,
	API_cudaGraphCreate,
	API_cudaGraphClone,
	API_cudaGraphAddKernelNode,
	API_cudaGraphAddChildGraphNode,
	API_cudaGraphKernelNodeSetParams,
	API_cudaGraphExecKernelNodeSetParams,
	API_cudaGraphExecUpdate,
	API_cudaGraphAddNode,
	API_cudaGraphAddNode_v2,
	API_cudaGraphNodeSetParams,
	API_cudaGraphExecNodeSetParams,
	API_cudaStreamBeginCaptureToGraph,
	API_cudaStreamBeginCaptureToGraph_ptsz,
	API_cuLaunchKernel,
	API_cuLaunchKernelEx,
	API_cuMemAlloc_v2,
	API_cuMemFree_v2,
	API_cuMemcpy,
	API_cuMemcpyAsync,
	API_cuMemcpyHtoD_v2,
	API_cuMemcpyDtoH_v2,
	API_cuMemcpyDtoD_v2,
	API_cuMemcpyHtoDAsync_v2,
	API_cuMemcpyDtoHAsync_v2,
	API_cuMemcpyDtoDAsync_v2,
	API_cuStreamSynchronize,
	API_cuCtxSynchronize,
	API_cuGraphLaunch,
	API_cuModuleGetFunction,
	API_cuLaunchKernel_ptsz,
	API_cuLaunchKernelEx_ptsz,
	API_cuLaunchCooperativeKernel,
	API_cuLaunchCooperativeKernel_ptsz,
	API_cuMemAllocAsync,
	API_cuMemAllocAsync_ptsz,
	API_cuMemFreeAsync,
	API_cuMemFreeAsync_ptsz,
	API_cuMemcpyAsync_ptsz,
	API_cuMemcpyHtoD_v2_ptds,
	API_cuMemcpyDtoH_v2_ptds,
	API_cuMemcpyDtoD_v2_ptds,
	API_cuMemcpyHtoDAsync_v2_ptsz,
	API_cuMemcpyDtoHAsync_v2_ptsz,
	API_cuMemcpyDtoDAsync_v2_ptsz,
	API_cuStreamSynchronize_ptsz,
	API_cuGraphLaunch_ptsz,
	API_cuStreamBeginCapture,
	API_cuStreamBeginCapture_ptsz,
	API_cuStreamBeginCapture_v2,
	API_cuStreamBeginCapture_v2_ptsz,
	API_cuStreamEndCapture,
	API_cuStreamEndCapture_ptsz,
	API_cuGraphInstantiate,
	API_cuGraphInstantiate_v2,
	API_cuGraphInstantiateWithFlags,
	API_cuGraphDestroy,
	API_cuGraphExecDestroy,
	API_cuGraphCreate,
	API_cuGraphClone,
	API_cuGraphAddKernelNode,
	API_cuGraphAddKernelNode_v2,
	API_cuGraphAddChildGraphNode,
	API_cuGraphKernelNodeSetParams,
	API_cuGraphKernelNodeSetParams_v2,
	API_cuGraphExecKernelNodeSetParams,
	API_cuGraphExecKernelNodeSetParams_v2,
	API_cuGraphExecUpdate,
	API_cuGraphExecUpdate_v2,
	API_cuGraphAddNode,
	API_cuGraphAddNode_v2,
	API_cuGraphNodeSetParams,
	API_cuGraphExecNodeSetParams,
	API_cuStreamBeginCaptureToGraph,
	API_cuStreamBeginCaptureToGraph_ptsz,
	API_hipLaunchKernel,
	API_hipExtLaunchKernel,
	API_hipModuleLaunchKernel,
	API_hipModuleGetFunction,
	API_hipMemcpy,
	API_hipMemcpyAsync,
	API_hipMalloc,
	API_hipFree,
	API_hipStreamSynchronize,
	API_hipDeviceSynchronize,
	API_hipSetDevice,
	API_hipGraphLaunch,
	API_hipEventRecord,
	API_hipEventSynchronize,
	API_hipStreamWaitEvent,
	API_hipStreamBeginCapture,
	API_hipStreamEndCapture,
	API_hipGraphInstantiate,
	API_hipGraphInstantiateWithFlags,
	API_hipGraphDestroy,
	API_hipGraphExecDestroy,
	API_hipGraphCreate,
	API_hipGraphClone,
	API_hipGraphAddKernelNode,
	API_hipGraphAddChildGraphNode,
	API_hipGraphKernelNodeSetParams,
	API_hipGraphExecKernelNodeSetParams,
	API_hipGraphExecUpdate,
	API_ncclAllReduce,
	API_ncclBroadcast,
	API_ncclBcast,
	API_ncclReduce,
	API_ncclAllGather,
	API_ncclReduceScatter,
	API_ncclAlltoAll,
	API_ncclGather,
	API_ncclScatter,
	API_ncclSend,
	API_ncclRecv,
	API_ncclAllReduceConfig,
	API_ncclBroadcastConfig,
	API_ncclReduceConfig,
	API_ncclAllGatherConfig,
	API_ncclReduceScatterConfig,
	API_ncclAlltoAllConfig,
	API_ncclGatherConfig,
	API_ncclScatterConfig,
	API_ncclGroupStart,
	API_ncclGroupEnd,
	API_ncclCommInitRank,
	API_ncclCommInitRankConfig,
	API_ncclCommInitRankScalable,
	API_ncclCommInitAll,
	API_ncclCommSplit,
	API_ncclCommCount,
	API_ncclCommUserRank,
	API_ncclCommDestroy,
	API_ncclCommAbort,
	API_ncclCommFinalize,
	API_MAX,
};

enum counter {
	COUNTER_DROPS = 0,        // records the ring buffer had no room for
	COUNTER_NESTED = 1,       // driver launches inside a runtime launch (and ncclBcast's ncclBroadcast), not reported twice
	COUNTER_LOST_RETURNS = 2, // return probes whose entry state was evicted
	COUNTER_MAX,
};

// Runtime functions come first, then the driver's, then HIP's
// (libamdhip64), which are runtime calls: HIP has no probed layer below
// them. HIP's entry points take their CUDA counterparts' arguments
// (hip_runtime_api.h, HIP 5.2), so the same programs probe them.
#define IS_DRIVER(api) ((api) >= API_cuLaunchKernel && (api) < API_hipLaunchKernel)
// NCCL's come last. NCCL calls the CUDA runtime inside them (its own
// static copy, or libcudart), so a call of NCCL's waiting for its return
// probe has a slot of its own, and marks no runtime call.
#define IS_NCCL(api) ((api) >= API_ncclAllReduce)

// cudaMemcpyKind values.
#define MEMCPY_H2H 0
#define MEMCPY_H2D 1
#define MEMCPY_D2H 2
#define MEMCPY_D2D 3
#define MEMCPY_DEFAULT 4

#define NAME_LEN 240

// A record; it starts as a lane record must (struct lane_record): the
// timestamp, and at byte 28 its length in lane units, written last.
struct event {
	__u64 ts;
	__u32 pid;
	__u32 tid;
	__u16 kind;
	__u16 api;
	__s32 device;
	__s32 ret;
	__u32 units;
	__u64 a[6];
};

struct name_event {
	struct event h; // kind KIND_FUNC_NAME: a0 handle or host function, a1 1 if a driver handle
	char name[NAME_LEN];
};

// A record with one word more than struct event's six arguments
// (KIND_GRAPH_EXEC_NODE_PARAMS: the node).
struct wide_event {
	struct event h;
	__u64 node;
	__u64 _pad;
};

#define EVENT_UNITS (sizeof(struct event) / LANE_UNIT)
#define NAME_EVENT_UNITS (sizeof(struct name_event) / LANE_UNIT)
#define WIDE_EVENT_UNITS (sizeof(struct wide_event) / LANE_UNIT)
// The largest record, in lane units; launches wait in the lanes' stages
// (lanes.bpf.h), a whole stage's worth at a time.
#define LANE_MAX_UNITS 80
#define LANE_STAGE_UNITS EVENT_UNITS
#include "../bpfsource/lanes.bpf.h"
_Static_assert(sizeof(struct event) % LANE_UNIT == 0, "records are whole lane units");
_Static_assert(sizeof(struct name_event) <= LANE_MAX_UNITS * LANE_UNIT, "the largest record");
_Static_assert(sizeof(struct wide_event) % LANE_UNIT == 0, "records are whole lane units");
_Static_assert(LANE_STAGE_RECORDS * LANE_STAGE_UNITS <= LANE_MAX_UNITS, "a stage's copy into the lane, in the slack");
_Static_assert(__builtin_offsetof(struct event, units) == __builtin_offsetof(struct lane_record, units),
	       "a record's length where the lane reader reads it");

struct call_key {
	__u32 pid;
	__u32 api;
};

// Entry state a return probe needs.
struct pending {
	__u64 ts;
	__u64 arg0; // out-pointer (malloc, handles) or stream/event (sync)
	__u64 arg1; // size (malloc) or name pointer (cuModuleGetFunction)
	__u64 arg2; // stream (async malloc)
	__u32 api;  // 0: none
	__u32 _pad;
};

// The runtime call a thread is in, so that the driver call it makes is not
// reported a second time. open: until the runtime call returns (calls with
// a return probe). Else a launch matches the driver launch with the same
// signature (grid, block, shared memory, stream) within launch_window_ns
// (the driver's first launch can wait for context creation), and other
// calls match within nest_window_ns of entry.
struct runtime_call {
	__u64 ts;
	__u64 sig;
	__u32 kind; // 0: none
	__u32 open;
};

// What the probes keep per thread, in task-local storage: one lookup
// without hashing, and freed with the thread (thread ids are reused).
struct thread {
	struct runtime_call call;
	struct pending runtime; // a runtime call waiting for its return probe
	struct pending driver;  // the same for a driver call: a runtime call runs driver calls inside
	struct pending nccl;    // the same for an NCCL call: it runs runtime calls inside; or an ncclBcast (nccl_inner)
	__s32 device;           // as set by cudaSetDevice; 0 before
	__u32 _pad;
};

// Tunables, set before load (the lanes' in lanes.bpf.h).
volatile const __u64 nest_window_ns = 1000000;      // a driver call this soon after a runtime call of its kind on the thread continues it
volatile const __u64 launch_window_ns = 5000000000; // the same, for a driver launch with the runtime launch's signature

// The benchmarks' ring buffer (bench_record, bench_naive), sized by
// gputracebpf.Load when it loads them.
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} bench_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, COUNTER_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

// Calls that reached user space as no record: dropped for want of room, or
// made no record by design (a failed cuModuleGetFunction). User space
// counts one call per record it reads and adds these, so that the call
// counts stay exact without a map update on the hot path.
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct call_key);
	__type(value, __u64);
} unrecorded_calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread);
} threads SEC(".maps");

static __always_inline void count(__u32 c)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &c);
	if (v)
		*v += 1;
}

// count_unrecorded counts a call of api by pid that makes no record.
static __always_inline void count_unrecorded(__u32 pid, __u32 api)
{
	struct call_key k = {.pid = pid, .api = api};
	__u64 *v = bpf_map_lookup_elem(&unrecorded_calls, &k);
	if (v) {
		__sync_fetch_and_add(v, 1);
		return;
	}
	__u64 one = 1;
	if (bpf_map_update_elem(&unrecorded_calls, &k, &one, BPF_NOEXIST))
		__sync_fetch_and_add((__u64 *)bpf_map_lookup_elem(&unrecorded_calls, &k) ?: &one, 1);
}

// What the probes read of the calling task (CO-RE: the offsets are the
// running kernel's).
struct task_struct {
	int pid;
	int tgid;
} __attribute__((preserve_access_index));

// The calling thread: its task (for its ids) and its state, NULL only when
// the kernel cannot allocate it.
struct caller {
	struct task_struct *task;
	struct thread *t;
};

// whoami looks up the calling thread, creating its state.
static __always_inline void whoami(struct caller *c)
{
	c->task = bpf_get_current_task_btf();
	c->t = bpf_task_storage_get(&threads, c->task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
}

static __always_inline void enter_runtime_sig(struct thread *t, __u32 kind, __u32 open, __u64 sig, __u64 now)
{
	if (!t)
		return;
	t->call.ts = now;
	t->call.sig = sig;
	t->call.kind = kind;
	t->call.open = open;
}

static __always_inline void enter_runtime(struct thread *t, __u32 kind, __u32 open)
{
	enter_runtime_sig(t, kind, open, 0, bpf_ktime_get_ns());
}

// launch_sig condenses a launch's configuration (the a[1..5] of its
// record) for matching a runtime launch with the driver launch it makes.
static __always_inline __u64 launch_sig(const __u64 *a)
{
	// Never 0, which means "no signature".
	return (a[1] ^ (a[2] * 0x9e3779b97f4a7c15ULL) ^ (a[3] * 0xc2b2ae3d27d4eb4fULL) ^
		(a[4] * 0x165667b19e3779f9ULL) ^ (a[5] * 0x27d4eb2f165667c5ULL)) | 1;
}

// nested_sig reports whether a driver call of this kind runs inside a
// runtime call of the same kind on this thread (cudart calls the driver):
// it is counted once, as the runtime call. sig is a launch's signature, 0
// for other calls.
static __always_inline int nested_sig(struct thread *t, __u32 kind, __u64 sig)
{
	if (!t || t->call.kind != kind)
		return 0;
	if (!t->call.open) {
		__u64 since = bpf_ktime_get_ns() - t->call.ts;
		int match = t->call.sig ? (t->call.sig == sig && since <= launch_window_ns) : since <= nest_window_ns;
		t->call.kind = 0; // consumed
		if (!match)
			return 0;
	}
	count(COUNTER_NESTED);
	return 1;
}

static __always_inline int nested(struct thread *t, __u32 kind)
{
	return nested_sig(t, kind, 0);
}

// drop counts a call of api by pid whose record of kind found no room.
static __always_inline void drop(__u32 pid, __u32 api, __u16 kind)
{
	count(COUNTER_DROPS);
	if (kind != KIND_COPY_DONE && kind != KIND_NCCL_COMM && kind != KIND_GRAPH_NODE) // the return of a call already counted
		count_unrecorded(pid, api);
}

// header fills the header of a record of kind for c's call of api: the
// time (read once the record is reserved, as the lanes require), the ids
// and the thread's device; the return value and the length are 0 (a
// stage's record is not zeroed beforehand).
static __always_inline void header(struct event *e, __u32 api, __u16 kind, const struct caller *c)
{
	e->ts = bpf_ktime_get_ns();
	e->pid = c->task->tgid;
	e->tid = c->task->pid;
	e->kind = kind;
	e->api = api;
	e->device = c->t ? c->t->device : 0;
	e->ret = 0;
	e->units = 0;
}

// reserve reserves a record of kind for c's call of api and fills its
// header: the time (read once the record is reserved, as the lanes
// require), the ids and the thread's device; the rest is zero. A call
// that finds no room is counted (drop).
static __always_inline struct event *reserve(struct lane_slot *s, __u32 api, __u16 kind, const struct caller *c)
{
	struct event *e = lane_reserve(s, EVENT_UNITS);
	if (!e) {
		drop(c->task->tgid, api, kind);
		return 0;
	}
	header(e, api, kind, c);
	return e;
}

// reserve_launch reserves a launch record of c's call of api in the
// stage of its CPU's lane, or, where the stage is taken or full, as
// reserve does; the caller writes all of a[]. The record goes with
// lane_stage_submit.
static __always_inline struct event *reserve_launch(struct lane_slot *s, __u32 api, const struct caller *c)
{
	struct event *e = lane_stage_reserve(s);
	if (!e)
		return reserve(s, api, KIND_LAUNCH, c);
	header(e, api, KIND_LAUNCH, c);
	return e;
}

// submit publishes e, reserved in s, without waking the reader unless its
// lane is past the watermark.
static __always_inline void submit(struct lane_slot *s, struct event *e)
{
	lane_submit(s, e, 0);
}

// The attach cookie: bits 0-15 the api, bits 16-19 the 1-based position of
// the stream argument (0: none), bits 20-23 the copy direction plus one
// for copies whose direction is in the function's name (0: the kind
// argument says), bit 24 set for a synchronous copy (it has a return
// probe).
static __always_inline __u32 api_of(struct pt_regs *ctx)
{
	return (__u32)(bpf_get_attach_cookie(ctx) & 0xffff);
}

// arg is argument word n, 1 to 6 (and 7 on arm64), else 0.
static __always_inline __u64 arg(struct pt_regs *ctx, __u32 n)
{
	// Context reads must use constant offsets: read the registers, then
	// index the copy.
	__u64 regs[8] = {0, PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx), PT_REGS_PARM3(ctx),
			 PT_REGS_PARM4(ctx), PT_REGS_PARM5(ctx), ARG6(ctx),
#if ARG_REGS >= 8
			 ARG7(ctx)
#else
			 0
#endif
	};
	return regs[n & 7];
}

static __always_inline __u64 stream_of(struct pt_regs *ctx)
{
	return arg(ctx, (bpf_get_attach_cookie(ctx) >> 16) & 0xf);
}

static __always_inline int sync_copy(struct pt_regs *ctx)
{
	return (bpf_get_attach_cookie(ctx) >> 24) & 1;
}

// copy_kind_of is the direction a driver copy's name gives, or -1.
static __always_inline int copy_kind_of(struct pt_regs *ctx)
{
	return (int)((bpf_get_attach_cookie(ctx) >> 20) & 0xf) - 1;
}

// pending_slot is where a call's entry state waits for its return probe.
static __always_inline struct pending *pending_slot(struct thread *t, __u32 api)
{
	if (IS_NCCL(api))
		return &t->nccl;
	return IS_DRIVER(api) ? &t->driver : &t->runtime;
}

// take moves the entry state of the call of api returning on this thread
// to out, and fills c. A runtime call whose state is missing is counted
// lost; a driver call has none when it was nested in a runtime call.
static __always_inline int take(__u32 api, struct caller *c, struct pending *out)
{
	whoami(c);
	struct thread *t = c->t;
	struct pending *p = t ? pending_slot(t, api) : 0;
	if (!p || p->api != api) {
		if (!IS_DRIVER(api))
			count(COUNTER_LOST_RETURNS);
		return 0;
	}
	*out = *p;
	p->api = 0;
	if (!IS_DRIVER(api) && !IS_NCCL(api))
		t->call.kind = 0; // the runtime call is over
	return 1;
}

// begin records a call's entry state for its return probe, unless it is
// a driver call nested in a runtime call of the same kind.
static __always_inline int begin(struct thread *t, __u32 kind, struct pending *p)
{
	if (IS_DRIVER(p->api)) {
		if (nested(t, kind))
			return 0;
	} else if (!IS_NCCL(p->api)) {
		enter_runtime_sig(t, kind, 1, 0, p->ts);
	}
	if (t)
		*pending_slot(t, p->api) = *p;
	return 1;
}

// runtime_launch_args reads the arguments of cudaLaunchKernel(func, dim3
// grid, dim3 block, args, smem, stream) into a, the a[] of its record.
// Each dim3 takes two words (x | y << 32, then z): func is word 1, grid
// words 2 and 3, block 4 and 5, args 6, smem and stream 7 and 8.
static __always_inline void runtime_launch_args(struct pt_regs *ctx, __u64 *a)
{
	a[0] = PT_REGS_PARM1(ctx);
	a[1] = PT_REGS_PARM2(ctx);
	a[2] = (PT_REGS_PARM3(ctx) & 0xffffffff) | (PT_REGS_PARM5(ctx) << 32);
	a[3] = PT_REGS_PARM4(ctx);
	args_7_8(ctx, &a[4]);
}

struct launch_config {
	__u32 grid[3];
	__u32 block[3];
	__u64 smem;
	__u64 stream;
};

// pack_launch lays a launch configuration out as a KIND_LAUNCH record's
// arguments.
static __always_inline void pack_launch(__u64 *a, __u64 fn, const __u32 *grid, const __u32 *block, __u64 smem,
					__u64 stream)
{
	a[0] = fn;
	a[1] = grid[0] | ((__u64)grid[1] << 32);
	a[2] = grid[2] | ((__u64)block[2] << 32);
	a[3] = block[0] | ((__u64)block[1] << 32);
	a[4] = smem;
	a[5] = stream;
}

// runtime_launch_exc_args reads the arguments of cudaLaunchKernelExC(const
// cudaLaunchConfig_t *config, const void *func, void **args) into a.
static __always_inline void runtime_launch_exc_args(struct pt_regs *ctx, __u64 *a)
{
	struct launch_config c = {};
	bpf_probe_read_user(&c, sizeof(c), (void *)PT_REGS_PARM1(ctx));
	pack_launch(a, PT_REGS_PARM2(ctx), c.grid, c.block, c.smem, c.stream);
}

// runtime_launch records a runtime launch of api, its arguments read into
// the record (by runtime_launch_exc_args if exc, else
// runtime_launch_args), and marks the thread as in a launch with their
// signature, even when the record finds no room: the driver launch it
// makes is still not a call of its own.
static __always_inline int runtime_launch(struct pt_regs *ctx, __u32 api, int exc)
{
	struct caller c;
	whoami(&c);
	struct lane_slot s;
	struct event *e = reserve_launch(&s, api, &c);
	if (e) {
		if (exc)
			runtime_launch_exc_args(ctx, e->a);
		else
			runtime_launch_args(ctx, e->a);
		enter_runtime_sig(c.t, KIND_LAUNCH, 0, launch_sig(e->a), e->ts);
		lane_stage_submit(&s, e);
		return 0;
	}
	__u64 a[6];
	if (exc)
		runtime_launch_exc_args(ctx, a);
	else
		runtime_launch_args(ctx, a);
	enter_runtime_sig(c.t, KIND_LAUNCH, 0, launch_sig(a), bpf_ktime_get_ns());
	return 0;
}

// One program per runtime launch function, which knows its API: the
// launches, the hottest path, read no attach cookie. cudaLaunchKernel,
// and the _ptsz and cooperative variants with the same arguments; HIP's
// hipLaunchKernel has them too, and hipExtLaunchKernel starts with them
// (then startEvent, stopEvent, flags).
SEC("uprobe")
int runtime_launch_kernel(struct pt_regs *ctx)
{
	return runtime_launch(ctx, API_cudaLaunchKernel, 0);
}

SEC("uprobe")
int runtime_launch_kernel_ptsz(struct pt_regs *ctx)
{
	return runtime_launch(ctx, API_cudaLaunchKernel_ptsz, 0);
}

SEC("uprobe")
int runtime_launch_cooperative_kernel(struct pt_regs *ctx)
{
	return runtime_launch(ctx, API_cudaLaunchCooperativeKernel, 0);
}

SEC("uprobe")
int hip_launch_kernel(struct pt_regs *ctx)
{
	return runtime_launch(ctx, API_hipLaunchKernel, 0);
}

SEC("uprobe")
int hip_ext_launch_kernel(struct pt_regs *ctx)
{
	return runtime_launch(ctx, API_hipExtLaunchKernel, 0);
}

// cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args)
SEC("uprobe")
int runtime_launch_kernel_exc(struct pt_regs *ctx)
{
	return runtime_launch(ctx, API_cudaLaunchKernelExC, 1);
}

// submit_driver_launch records a driver launch with arguments a, unless it
// continues a runtime launch on this thread.
static __always_inline int submit_driver_launch(struct pt_regs *ctx, const __u64 *a)
{
	struct caller c;
	whoami(&c);
	if (nested_sig(c.t, KIND_LAUNCH, launch_sig(a)))
		return 0;
	struct lane_slot s;
	struct event *e = reserve_launch(&s, api_of(ctx), &c);
	if (!e)
		return 0;
	for (int i = 0; i < 6; i++)
		e->a[i] = a[i];
	lane_stage_submit(&s, e);
	return 0;
}

// cuLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra),
// and hipModuleLaunchKernel with the same arguments.
SEC("uprobe")
int driver_launch_kernel(struct pt_regs *ctx)
{
	// bz, smem and stream, the 7th to 9th arguments.
	__u64 st[3];
	args_7_9(ctx, st);
	__u64 a[6];
	a[0] = PT_REGS_PARM1(ctx);
	a[1] = (PT_REGS_PARM2(ctx) & 0xffffffff) | (PT_REGS_PARM3(ctx) << 32);
	a[2] = (PT_REGS_PARM4(ctx) & 0xffffffff) | (st[0] << 32);
	a[3] = (PT_REGS_PARM5(ctx) & 0xffffffff) | (ARG6(ctx) << 32);
	a[4] = st[1] & 0xffffffff;
	a[5] = st[2];
	return submit_driver_launch(ctx, a);
}

struct cu_launch_config {
	__u32 grid[3];
	__u32 block[3];
	__u32 smem;
	__u32 _pad;
	__u64 stream;
};

// cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, params, extra)
SEC("uprobe")
int driver_launch_kernel_ex(struct pt_regs *ctx)
{
	struct cu_launch_config c = {};
	bpf_probe_read_user(&c, sizeof(c), (void *)PT_REGS_PARM1(ctx));
	__u64 a[6];
	pack_launch(a, PT_REGS_PARM2(ctx), c.grid, c.block, c.smem, c.stream);
	return submit_driver_launch(ctx, a);
}

// reserve_call reserves the record of kind for the call ctx probes, for
// the caller to fill and submit: NULL when it finds no room (counted) or
// when the call is a driver call inside a runtime call of its kind. A
// runtime call marks its thread, so that the driver call it makes is not
// reported again.
static __always_inline struct event *reserve_call(struct pt_regs *ctx, __u16 kind, struct lane_slot *s)
{
	__u32 api = api_of(ctx);
	struct caller c;
	whoami(&c);
	if (!IS_DRIVER(api))
		enter_runtime(c.t, kind, 0);
	else if (nested(c.t, kind))
		return 0;
	return reserve(s, api, kind, &c);
}

// cudaGraphLaunch(exec, stream), cuGraphLaunch(exec, stream)
SEC("uprobe")
int graph_launch(struct pt_regs *ctx)
{
	struct lane_slot s;
	struct event *e = reserve_call(ctx, KIND_GRAPH_LAUNCH, &s);
	if (!e)
		return 0;
	e->a[0] = PT_REGS_PARM1(ctx);
	e->a[1] = stream_of(ctx);
	submit(&s, e);
	return 0;
}

// submit_handle_call records a call of kind whose first argument is all
// that is needed: a stream, a graph or a graph exec.
static __always_inline int submit_handle_call(struct pt_regs *ctx, __u16 kind)
{
	struct lane_slot s;
	struct event *e = reserve_call(ctx, kind, &s);
	if (!e)
		return 0;
	e->a[0] = PT_REGS_PARM1(ctx);
	submit(&s, e);
	return 0;
}

// cudaStreamBeginCapture(stream, mode), cuStreamBeginCapture(_v2)(stream,
// mode): user space takes the launches on the stream from here on as a
// graph's members, not as runs. (a1, the graph captured into, is 0.)
SEC("uprobe")
int capture_begin(struct pt_regs *ctx)
{
	return submit_handle_call(ctx, KIND_CAPTURE_BEGIN);
}

// cudaGraphDestroy(graph), cuGraphDestroy(graph)
SEC("uprobe")
int graph_destroy(struct pt_regs *ctx)
{
	return submit_handle_call(ctx, KIND_GRAPH_DESTROY);
}

// cudaGraphExecDestroy(exec), cuGraphExecDestroy(exec)
SEC("uprobe")
int graph_exec_destroy(struct pt_regs *ctx)
{
	return submit_handle_call(ctx, KIND_GRAPH_EXEC_DESTROY);
}

// begin_handle_out keeps, for the return probe, a call's input handle in
// and the address out of the handle it makes, with the record's kind.
static __always_inline int begin_handle_out(struct pt_regs *ctx, __u32 kind, __u64 in, __u64 out)
{
	struct pending p = {.ts = bpf_ktime_get_ns(), .arg0 = out, .arg1 = in, .arg2 = kind, .api = api_of(ctx)};
	struct caller c;
	whoami(&c);
	begin(c.t, kind, &p);
	return 0;
}

// Entry of cudaStreamEndCapture(stream, cudaGraph_t *graph) and
// cuStreamEndCapture(stream, CUgraph *graph): the graph is known on return.
SEC("uprobe")
int capture_end_enter(struct pt_regs *ctx)
{
	return begin_handle_out(ctx, KIND_CAPTURE_END, PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx));
}

// Entry of cudaGraphInstantiate(cudaGraphExec_t *exec, graph, …), its
// WithFlags form and the driver's (their first two arguments are these in
// CUDA 11 and 12): the exec is known on return.
SEC("uprobe")
int graph_instantiate_enter(struct pt_regs *ctx)
{
	return begin_handle_out(ctx, KIND_GRAPH_INSTANTIATE, PT_REGS_PARM2(ctx), PT_REGS_PARM1(ctx));
}

// Entry of cudaGraphCreate(cudaGraph_t *graph, flags) and cuGraphCreate.
SEC("uprobe")
int graph_create_enter(struct pt_regs *ctx)
{
	return begin_handle_out(ctx, KIND_GRAPH_CREATE, PT_REGS_PARM2(ctx), PT_REGS_PARM1(ctx));
}

// Entry of cudaGraphClone(cudaGraph_t *clone, original) and cuGraphClone.
SEC("uprobe")
int graph_clone_enter(struct pt_regs *ctx)
{
	return begin_handle_out(ctx, KIND_GRAPH_CLONE, PT_REGS_PARM2(ctx), PT_REGS_PARM1(ctx));
}

// What the graph probes read of a kernel node's parameters: the first 36
// bytes of cudaKernelNodeParams (func, dim3 gridDim, dim3 blockDim,
// sharedMemBytes) and of CUDA_KERNEL_NODE_PARAMS (v1, v2 and v3:
// CUfunction, gridDimX..Z, blockDimX..Z, sharedMemBytes), which lay them
// out alike (cuda.h, driver_types.h).
struct kernel_node_params {
	__u64 func;
	__u32 grid[3];
	__u32 block[3];
	__u32 smem;
	__u32 _pad;
};

// HIP's hipKernelNodeParams (hip_runtime_api.h, HIP 5.2) orders its
// fields otherwise: blockDim, extra, func, gridDim, kernelParams,
// sharedMemBytes.
struct hip_kernel_node_params {
	__u32 block[3];
	__u32 _pad0;
	__u64 extra;
	__u64 func;
	__u32 grid[3];
	__u32 _pad1;
	__u64 kernel_params;
	__u32 smem;
	__u32 _pad2;
};
_Static_assert(sizeof(struct hip_kernel_node_params) == 64, "hipKernelNodeParams");

// The generic node calls (CUDA 12.2's cuGraphAddNode, cuGraphNodeSetParams,
// cuGraphExecNodeSetParams and the runtime's) take a CUgraphNodeParams
// (cudaGraphNodeParams): the node's type, 12 reserved bytes, then the
// type's parameters: a kernel's as CUDA_KERNEL_NODE_PARAMS_v3
// (cudaKernelNodeParamsV2) starts, a child graph's as its graph.
struct generic_node_params {
	__s32 type;
	__s32 reserved[3];
	struct kernel_node_params kernel; // kernel.func is a child graph node's graph
};

// CUgraphNodeType (cudaGraphNodeType) values.
#define NODE_KERNEL 0
#define NODE_GRAPH 4

// node_layout_of says how the node parameters of api are laid out.
enum node_layout { LAYOUT_CUDA, LAYOUT_HIP, LAYOUT_GENERIC };
static __always_inline enum node_layout node_layout_of(__u32 api)
{
	if (api >= API_hipLaunchKernel)
		return LAYOUT_HIP; // HIP's graph calls; NCCL's do not come here
	switch (api) {
	case API_cudaGraphAddNode:
	case API_cudaGraphAddNode_v2:
	case API_cudaGraphNodeSetParams:
	case API_cudaGraphExecNodeSetParams:
	case API_cuGraphAddNode:
	case API_cuGraphAddNode_v2:
	case API_cuGraphNodeSetParams:
	case API_cuGraphExecNodeSetParams:
		return LAYOUT_GENERIC;
	}
	return LAYOUT_CUDA;
}

// read_node reads the node parameters at p, as api lays them out, into k
// and returns the node's type: NODE_KERNEL for the calls that take a
// kernel's parameters only. Unreadable parameters read as a kernel of
// zeros (the call fails, and user space follows the calls made).
static __always_inline __s32 read_node(__u32 api, const void *p, struct kernel_node_params *k)
{
	__builtin_memset(k, 0, sizeof(*k));
	switch (node_layout_of(api)) {
	case LAYOUT_HIP: {
		struct hip_kernel_node_params h;
		if (bpf_probe_read_user(&h, sizeof(h), p))
			return NODE_KERNEL;
		k->func = h.func;
		for (int i = 0; i < 3; i++) {
			k->grid[i] = h.grid[i];
			k->block[i] = h.block[i];
		}
		k->smem = h.smem;
		return NODE_KERNEL;
	}
	case LAYOUT_GENERIC: {
		struct generic_node_params g;
		if (bpf_probe_read_user(&g, sizeof(g), p))
			return NODE_KERNEL;
		*k = g.kernel;
		return g.type;
	}
	default:
		if (bpf_probe_read_user(k, sizeof(*k), p))
			__builtin_memset(k, 0, sizeof(*k));
		return NODE_KERNEL;
	}
}

// enter_graph_call marks a runtime call of kind on c's thread (so that
// the driver call it makes is not reported again), or reports whether a
// driver call runs inside one (0: it does, and is not reported).
static __always_inline int enter_graph_call(struct caller *c, __u32 api, __u16 kind)
{
	whoami(c);
	if (!IS_DRIVER(api)) {
		enter_runtime(c->t, kind, 0);
		return 1;
	}
	return !nested(c->t, kind);
}

// cudaGraphAddKernelNode(cudaGraphNode_t *node, graph, deps, ndeps, const
// cudaKernelNodeParams *params), cuGraphAddKernelNode(_v2) and
// hipGraphAddKernelNode with the same positions, cudaGraphAddNode and
// cuGraphAddNode (the same, with a CUgraphNodeParams) and their _v2 (the
// parameters the 6th argument): a kernel node's kernel as a launch would
// record it, and the graph; a child graph node as
// cudaGraphAddChildGraphNode's; other nodes make no record. The node's
// handle is known on return (handle_out_return: KIND_GRAPH_NODE).
SEC("uprobe")
int graph_kernel_node(struct pt_regs *ctx)
{
	__u32 api = api_of(ctx);
	struct caller c;
	whoami(&c);
	struct pending p = {.ts = bpf_ktime_get_ns(), .arg0 = PT_REGS_PARM1(ctx), .arg1 = PT_REGS_PARM2(ctx),
			    .arg2 = KIND_GRAPH_NODE, .api = api};
	if (!begin(c.t, KIND_GRAPH_KERNEL_NODE, &p))
		return 0; // a driver call inside the runtime's
	__u64 at = arg(ctx, (api == API_cudaGraphAddNode_v2 || api == API_cuGraphAddNode_v2) ? 6 : 5);
	struct kernel_node_params k;
	__s32 type = read_node(api, (const void *)at, &k);
	if (type != NODE_KERNEL && type != NODE_GRAPH) {
		count_unrecorded(c.task->tgid, api); // a node of no kernel: a call, and no record
		return 0;
	}
	struct lane_slot s;
	struct event *e = reserve(&s, api, type == NODE_KERNEL ? KIND_GRAPH_KERNEL_NODE : KIND_GRAPH_CHILD_NODE, &c);
	if (!e)
		return 0;
	if (type == NODE_KERNEL) {
		pack_launch(e->a, k.func, k.grid, k.block, k.smem, PT_REGS_PARM2(ctx));
	} else {
		e->a[0] = PT_REGS_PARM2(ctx);
		e->a[1] = k.func; // the child graph
	}
	submit(&s, e);
	return 0;
}

// cudaGraphKernelNodeSetParams(node, const cudaKernelNodeParams *params),
// cuGraphKernelNodeSetParams(_v2) and hipGraphKernelNodeSetParams, and
// the generic cudaGraphNodeSetParams and cuGraphNodeSetParams (a
// CUgraphNodeParams): a graph's kernel node changes kernel.
SEC("uprobe")
int graph_node_params(struct pt_regs *ctx)
{
	__u32 api = api_of(ctx);
	struct caller c;
	if (!enter_graph_call(&c, api, KIND_GRAPH_NODE_PARAMS))
		return 0;
	struct kernel_node_params k;
	if (read_node(api, (const void *)PT_REGS_PARM2(ctx), &k) != NODE_KERNEL) {
		count_unrecorded(c.task->tgid, api); // not a kernel's
		return 0;
	}
	struct lane_slot s;
	struct event *e = reserve(&s, api, KIND_GRAPH_NODE_PARAMS, &c);
	if (!e)
		return 0;
	pack_launch(e->a, k.func, k.grid, k.block, k.smem, PT_REGS_PARM1(ctx));
	submit(&s, e);
	return 0;
}

// cudaGraphExecKernelNodeSetParams(exec, node, const cudaKernelNodeParams
// *params), cuGraphExecKernelNodeSetParams(_v2),
// hipGraphExecKernelNodeSetParams, and the generic
// cudaGraphExecNodeSetParams and cuGraphExecNodeSetParams: an executable
// graph's kernel node (named by the node of the graph it was made of)
// changes kernel. The record is a wide one: the kernel, the exec and the
// node do not fit in six words.
SEC("uprobe")
int graph_exec_node_params(struct pt_regs *ctx)
{
	__u32 api = api_of(ctx);
	struct caller c;
	if (!enter_graph_call(&c, api, KIND_GRAPH_EXEC_NODE_PARAMS))
		return 0;
	struct kernel_node_params k;
	if (read_node(api, (const void *)PT_REGS_PARM3(ctx), &k) != NODE_KERNEL) {
		count_unrecorded(c.task->tgid, api);
		return 0;
	}
	struct lane_slot s;
	struct wide_event *e = lane_reserve(&s, WIDE_EVENT_UNITS);
	if (!e) {
		drop(c.task->tgid, api, KIND_GRAPH_EXEC_NODE_PARAMS);
		return 0;
	}
	header(&e->h, api, KIND_GRAPH_EXEC_NODE_PARAMS, &c);
	pack_launch(e->h.a, k.func, k.grid, k.block, k.smem, PT_REGS_PARM1(ctx));
	e->node = PT_REGS_PARM2(ctx);
	e->_pad = 0;
	lane_submit(&s, e, 0);
	return 0;
}

// Entry of cudaGraphExecUpdate(exec, graph, …), cuGraphExecUpdate(_v2) and
// hipGraphExecUpdate: whether the update was made is known on return. The
// arguments after the graph differ between CUDA 11 and 12 and are not
// read.
SEC("uprobe")
int graph_exec_update_enter(struct pt_regs *ctx)
{
	struct pending p = {.ts = bpf_ktime_get_ns(), .arg0 = PT_REGS_PARM1(ctx), .arg1 = PT_REGS_PARM2(ctx),
			    .api = api_of(ctx)};
	struct caller c;
	whoami(&c);
	begin(c.t, KIND_GRAPH_EXEC_UPDATE, &p);
	return 0;
}

SEC("uretprobe")
int graph_exec_update_return(struct pt_regs *ctx)
{
	struct caller c;
	struct pending in;
	if (!take(api_of(ctx), &c, &in))
		return 0;
	struct lane_slot s;
	struct event *e = reserve(&s, in.api, KIND_GRAPH_EXEC_UPDATE, &c);
	if (!e)
		return 0;
	e->ret = (__s32)PT_REGS_RC(ctx);
	e->a[0] = in.arg0;
	e->a[1] = in.arg1;
	submit(&s, e);
	return 0;
}

// cudaStreamBeginCaptureToGraph(stream, graph, deps, depData, ndeps, mode)
// and cuStreamBeginCaptureToGraph (CUDA 12.3): a capture into a graph
// that exists.
SEC("uprobe")
int capture_to_graph(struct pt_regs *ctx)
{
	struct lane_slot s;
	struct event *e = reserve_call(ctx, KIND_CAPTURE_BEGIN, &s);
	if (!e)
		return 0;
	e->a[0] = PT_REGS_PARM1(ctx);
	e->a[1] = PT_REGS_PARM2(ctx);
	submit(&s, e);
	return 0;
}

// cudaGraphAddChildGraphNode(node *, graph, deps, ndeps, childGraph) and
// cuGraphAddChildGraphNode: the graph embeds a copy of the child.
SEC("uprobe")
int graph_child_node(struct pt_regs *ctx)
{
	struct lane_slot s;
	struct event *e = reserve_call(ctx, KIND_GRAPH_CHILD_NODE, &s);
	if (!e)
		return 0;
	e->a[0] = PT_REGS_PARM2(ctx);
	e->a[1] = PT_REGS_PARM5(ctx);
	submit(&s, e);
	return 0;
}

// The return of those: the input handle and the handle the call left in
// its output, read whatever the call returned (a capture that failed
// leaves NULL there), with the return code for user space to judge.
SEC("uretprobe")
int handle_out_return(struct pt_regs *ctx)
{
	struct caller c;
	struct pending in;
	if (!take(api_of(ctx), &c, &in))
		return 0;
	struct lane_slot s;
	struct event *e = reserve(&s, in.api, (__u16)in.arg2, &c);
	if (!e)
		return 0;
	__u64 h = 0;
	if (bpf_probe_read_user(&h, sizeof(h), (void *)in.arg0))
		h = 0;
	e->ret = (__s32)PT_REGS_RC(ctx);
	e->a[0] = in.arg1;
	e->a[1] = h;
	submit(&s, e);
	return 0;
}

// submit_memcpy records a copy: (dst, src, bytes, kind, stream).
static __always_inline int submit_memcpy(struct pt_regs *ctx, const struct caller *c, __u64 kind)
{
	struct lane_slot s;
	struct event *e = reserve(&s, api_of(ctx), KIND_MEMCPY, c);
	if (!e)
		return 0;
	e->a[0] = PT_REGS_PARM1(ctx);
	e->a[1] = PT_REGS_PARM2(ctx);
	e->a[2] = PT_REGS_PARM3(ctx);
	e->a[3] = kind;
	e->a[4] = stream_of(ctx);
	submit(&s, e);
	return 0;
}

// cudaMemcpy(dst, src, count, kind) and cudaMemcpyAsync(…, kind, stream)
SEC("uprobe")
int runtime_memcpy(struct pt_regs *ctx)
{
	__u64 kind = PT_REGS_PARM4(ctx) & 0xffffffff;
	struct caller c;
	whoami(&c);
	if (sync_copy(ctx)) {
		struct pending p = {.ts = bpf_ktime_get_ns(), .arg1 = kind, .api = api_of(ctx)};
		begin(c.t, KIND_MEMCPY, &p);
	} else {
		enter_runtime(c.t, KIND_MEMCPY, 0);
	}
	return submit_memcpy(ctx, &c, kind);
}

// The driver's copies: the direction is in the name. (dst, src, bytes[, stream])
SEC("uprobe")
int driver_memcpy(struct pt_regs *ctx)
{
	int k = copy_kind_of(ctx);
	__u64 kind = k < 0 ? MEMCPY_DEFAULT : k;
	struct caller c;
	whoami(&c);
	if (sync_copy(ctx)) {
		struct pending p = {.ts = bpf_ktime_get_ns(), .arg1 = kind, .api = api_of(ctx)};
		if (!begin(c.t, KIND_MEMCPY, &p))
			return 0;
	} else if (nested(c.t, KIND_MEMCPY)) {
		return 0;
	}
	return submit_memcpy(ctx, &c, kind);
}

// The return of a synchronous copy: all work before it on the default
// stream was done. Recorded apart from the copy (made at entry) for the
// occupancy model.
SEC("uretprobe")
int copy_return(struct pt_regs *ctx)
{
	struct caller c;
	struct pending in;
	if (!take(api_of(ctx), &c, &in))
		return 0;
	struct lane_slot s;
	struct event *e = reserve(&s, in.api, KIND_COPY_DONE, &c);
	if (!e)
		return 0;
	e->ret = (__s32)PT_REGS_RC(ctx);
	e->a[1] = e->ts - in.ts;
	e->a[3] = in.arg1;
	submit(&s, e);
	return 0;
}

// cudaMemset(ptr, value, count), cudaMemsetAsync(ptr, value, count, stream)
SEC("uprobe")
int runtime_memset(struct pt_regs *ctx)
{
	struct caller c;
	whoami(&c);
	struct lane_slot s;
	struct event *e = reserve(&s, api_of(ctx), KIND_MEMSET, &c);
	if (!e)
		return 0;
	e->a[0] = PT_REGS_PARM1(ctx);
	e->a[1] = PT_REGS_PARM2(ctx) & 0xffffffff;
	e->a[2] = PT_REGS_PARM3(ctx);
	e->a[4] = stream_of(ctx);
	submit(&s, e);
	return 0;
}

// Entry of cudaMalloc(void **p, size), cudaMallocAsync(void **p, size,
// stream), cuMemAlloc_v2(CUdeviceptr *p, size): the pointer is known only
// on return.
SEC("uprobe")
int malloc_enter(struct pt_regs *ctx)
{
	struct pending p = {
		.ts = bpf_ktime_get_ns(),
		.arg0 = PT_REGS_PARM1(ctx),
		.arg1 = PT_REGS_PARM2(ctx),
		.api = api_of(ctx),
	};
	p.arg2 = stream_of(ctx);
	struct caller c;
	whoami(&c);
	begin(c.t, KIND_MALLOC, &p);
	return 0;
}

SEC("uretprobe")
int malloc_return(struct pt_regs *ctx)
{
	struct caller c;
	struct pending in;
	if (!take(api_of(ctx), &c, &in))
		return 0;
	struct lane_slot s;
	struct event *e = reserve(&s, in.api, KIND_MALLOC, &c);
	if (!e)
		return 0;
	__u64 ptr = 0;
	e->ret = (__s32)PT_REGS_RC(ctx);
	if (e->ret == 0)
		bpf_probe_read_user(&ptr, sizeof(ptr), (void *)in.arg0);
	e->a[0] = ptr;
	e->a[1] = in.arg1;
	e->a[2] = e->ts - in.ts;
	e->a[4] = in.arg2;
	submit(&s, e);
	return 0;
}

// cudaFree(ptr), cudaFreeAsync(ptr, stream), cuMemFree_v2(ptr)
SEC("uprobe")
int free_enter(struct pt_regs *ctx)
{
	struct lane_slot s;
	struct event *e = reserve_call(ctx, KIND_FREE, &s);
	if (!e)
		return 0;
	e->a[0] = PT_REGS_PARM1(ctx);
	e->a[4] = stream_of(ctx);
	submit(&s, e);
	return 0;
}

// Entry of the syncs: cudaStreamSynchronize(stream),
// cudaEventSynchronize(event), cudaDeviceSynchronize(),
// cuStreamSynchronize(stream), cuCtxSynchronize().
SEC("uprobe")
int sync_enter(struct pt_regs *ctx)
{
	struct pending p = {
		.ts = bpf_ktime_get_ns(),
		.api = api_of(ctx),
	};
	p.arg0 = stream_of(ctx);
	struct caller c;
	whoami(&c);
	begin(c.t, KIND_SYNC, &p);
	return 0;
}

SEC("uretprobe")
int sync_return(struct pt_regs *ctx)
{
	struct caller c;
	struct pending in;
	if (!take(api_of(ctx), &c, &in))
		return 0;
	struct lane_slot s;
	struct event *e = reserve(&s, in.api, KIND_SYNC, &c);
	if (!e)
		return 0;
	e->ret = (__s32)PT_REGS_RC(ctx);
	e->a[0] = in.arg0;
	e->a[1] = e->ts - in.ts;
	submit(&s, e);
	return 0;
}

// submit_pair records a call of two pointer arguments: cudaEventRecord
// (event, stream), cudaStreamWaitEvent(stream, event, flags).
static __always_inline int submit_pair(struct pt_regs *ctx, __u16 kind)
{
	struct caller c;
	whoami(&c);
	struct lane_slot s;
	struct event *e = reserve(&s, api_of(ctx), kind, &c);
	if (!e)
		return 0;
	e->a[0] = PT_REGS_PARM1(ctx);
	e->a[1] = PT_REGS_PARM2(ctx);
	submit(&s, e);
	return 0;
}

// cudaEventRecord(event, stream)
SEC("uprobe")
int event_record(struct pt_regs *ctx)
{
	return submit_pair(ctx, KIND_EVENT_RECORD);
}

// cudaEventQuery(event): whether the event has completed is known on
// return.
SEC("uprobe")
int event_query_enter(struct pt_regs *ctx)
{
	struct pending p = {
		.ts = bpf_ktime_get_ns(),
		.arg0 = PT_REGS_PARM1(ctx),
		.api = api_of(ctx),
	};
	struct caller c;
	whoami(&c);
	begin(c.t, KIND_EVENT_QUERY, &p);
	return 0;
}

SEC("uretprobe")
int event_query_return(struct pt_regs *ctx)
{
	struct caller c;
	struct pending in;
	if (!take(api_of(ctx), &c, &in))
		return 0;
	struct lane_slot s;
	struct event *e = reserve(&s, in.api, KIND_EVENT_QUERY, &c);
	if (!e)
		return 0;
	e->ret = (__s32)PT_REGS_RC(ctx);
	e->a[0] = in.arg0;
	submit(&s, e);
	return 0;
}

// cudaStreamWaitEvent(stream, event, flags)
SEC("uprobe")
int stream_wait_event(struct pt_regs *ctx)
{
	return submit_pair(ctx, KIND_STREAM_WAIT);
}

// cudaSetDevice(device): later records of the thread carry the device.
SEC("uprobe")
int set_device(struct pt_regs *ctx)
{
	struct caller c;
	whoami(&c);
	__s32 dev = (__s32)PT_REGS_PARM1(ctx);
	if (c.t)
		c.t->device = dev;
	struct lane_slot s;
	struct event *e = reserve(&s, api_of(ctx), KIND_SET_DEVICE, &c);
	if (!e)
		return 0;
	e->a[0] = (__u64)(__s64)dev;
	submit(&s, e);
	return 0;
}

static __always_inline void submit_name(__u32 api, __u64 handle, __u64 driver, const char *name)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct lane_slot s;
	struct name_event *e = lane_reserve(&s, NAME_EVENT_UNITS);
	if (!e) {
		drop(id >> 32, api, KIND_FUNC_NAME);
		return;
	}
	e->h.ts = bpf_ktime_get_ns();
	e->h.pid = id >> 32;
	e->h.tid = (__u32)id;
	e->h.kind = KIND_FUNC_NAME;
	e->h.api = api;
	e->h.a[0] = handle;
	e->h.a[1] = driver;
	bpf_probe_read_user_str(e->name, sizeof(e->name), name); // zeroes it on failure
	// Names are rare and needed before the launches that use them.
	lane_submit(&s, e, 1);
}

// __cudaRegisterFunction(handle, hostFun, deviceFun, deviceName, ...):
// the host stub's address and the kernel's (mangled) name.
SEC("uprobe")
int register_function(struct pt_regs *ctx)
{
	submit_name(API___cudaRegisterFunction, PT_REGS_PARM2(ctx), 0, (const char *)PT_REGS_PARM4(ctx));
	return 0;
}

// remember keeps a call's two pointer arguments for its return probe. A
// name lookup runs inside no other probed call, so it marks nothing.
static __always_inline void remember(struct pt_regs *ctx, __u64 arg0, __u64 arg1)
{
	struct caller c;
	whoami(&c);
	if (!c.t)
		return;
	struct pending p = {
		.ts = bpf_ktime_get_ns(),
		.arg0 = arg0,
		.arg1 = arg1,
		.api = api_of(ctx),
	};
	*pending_slot(c.t, p.api) = p;
}

// cuModuleGetFunction(CUfunction *hfunc, CUmodule mod, const char *name),
// hipModuleGetFunction(hipFunction_t *, hipModule_t, const char *)
SEC("uprobe")
int module_get_function_enter(struct pt_regs *ctx)
{
	remember(ctx, PT_REGS_PARM1(ctx), PT_REGS_PARM3(ctx));
	return 0;
}

SEC("uretprobe")
int module_get_function_return(struct pt_regs *ctx)
{
	struct caller c;
	struct pending in;
	if (!take(api_of(ctx), &c, &in))
		return 0;
	if (PT_REGS_RC(ctx) != 0) {
		// A failed lookup makes no record, but it was a call.
		count_unrecorded(c.task->tgid, in.api);
		return 0;
	}
	__u64 handle = 0;
	bpf_probe_read_user(&handle, sizeof(handle), (void *)in.arg0);
	submit_name(in.api, handle, 1, (const char *)in.arg1);
	return 0;
}

// cudaGetKernel / __cudaGetKernel(cudaKernel_t *kernel, const void *func):
// the CUDA 12 kernel handle a driver launch may carry, for its host stub.
SEC("uprobe")
int get_kernel_enter(struct pt_regs *ctx)
{
	remember(ctx, PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx));
	return 0;
}

SEC("uretprobe")
int get_kernel_return(struct pt_regs *ctx)
{
	struct caller c;
	struct pending in;
	if (!take(api_of(ctx), &c, &in))
		return 0;
	struct lane_slot s;
	struct event *e = reserve(&s, in.api, KIND_KERNEL_HANDLE, &c);
	if (!e)
		return 0;
	e->ret = (__s32)PT_REGS_RC(ctx);
	__u64 handle = 0;
	if (e->ret == 0)
		bpf_probe_read_user(&handle, sizeof(handle), (void *)in.arg0);
	e->a[0] = handle;
	e->a[1] = in.arg1;
	// Needed before the launches that use it.
	lane_submit(&s, e, 1);
	return 0;
}

// NCCL (libnccl.so.2). Arguments as nccl.h declares them; the *Config
// forms append a config pointer to the plain form's arguments, so the
// plain form's program probes them.

#define NCCL_NONE (~0ULL)

// nccl_inner reports whether the call of api on c's thread is the
// ncclBroadcast that an ncclBcast just entered calls with its arguments:
// NCCL's ncclBcast calls the exported ncclBroadcast (through the PLT, the
// symbol being weak), whose probe must not count the call again. The
// ncclBcast leaves its signature in the thread's NCCL slot, which the
// next NCCL collective on the thread takes, whatever it is; a slot no
// ncclBroadcast takes (NCCL built with the call inlined) is taken by the
// next one, or goes after launch_window_ns. An NCCL call waiting for its
// return probe replaces it (none calls ncclBcast).
static __always_inline int nccl_inner(struct caller *c, __u32 api, __u64 n, __u64 type, __u64 root, __u64 comm,
				      __u64 stream)
{
	struct thread *t = c->t;
	if (!t)
		return 0;
	__u64 sig = (n ^ (type * 0x9e3779b97f4a7c15ULL) ^ (root * 0xc2b2ae3d27d4eb4fULL) ^
		     (comm * 0x165667b19e3779f9ULL) ^ (stream * 0x27d4eb2f165667c5ULL)) | 1;
	if (t->nccl.api == API_ncclBcast) {
		t->nccl.api = 0;
		if (api == API_ncclBroadcast && t->nccl.arg0 == sig &&
		    bpf_ktime_get_ns() - t->nccl.ts <= launch_window_ns) {
			count(COUNTER_NESTED);
			return 1;
		}
	}
	if (api == API_ncclBcast) {
		t->nccl.api = API_ncclBcast;
		t->nccl.arg0 = sig;
		t->nccl.ts = bpf_ktime_get_ns();
	}
	return 0;
}

// submit_nccl records an NCCL collective or point-to-point call.
static __always_inline int submit_nccl(struct pt_regs *ctx, __u64 count, __u64 type, __u64 op, __u64 root,
				       __u64 comm, __u64 stream)
{
	struct caller c;
	whoami(&c);
	__u32 api = api_of(ctx);
	if (nccl_inner(&c, api, count, type & 0xffffffff, root, comm, stream))
		return 0;
	struct lane_slot s;
	struct event *e = reserve(&s, api, KIND_NCCL_COLL, &c);
	if (!e)
		return 0;
	e->a[0] = count;
	e->a[1] = type & 0xffffffff;
	e->a[2] = op;
	e->a[3] = root;
	e->a[4] = comm;
	e->a[5] = stream;
	submit(&s, e);
	return 0;
}

// ncclAllReduce(send, recv, count, type, op, comm, stream) and
// ncclReduceScatter(send, recv, recvcount, type, op, comm, stream).
SEC("uprobe")
int nccl_reduction(struct pt_regs *ctx)
{
	__u64 st[2];
	args_7_8(ctx, st);
	return submit_nccl(ctx, PT_REGS_PARM3(ctx), PT_REGS_PARM4(ctx), PT_REGS_PARM5(ctx) & 0xffffffff, NCCL_NONE,
			   ARG6(ctx), st[0]);
}

// ncclBroadcast, ncclGather and ncclScatter(send, recv, count, type, root,
// comm, stream).
SEC("uprobe")
int nccl_rooted(struct pt_regs *ctx)
{
	__u64 st[2];
	args_7_8(ctx, st);
	return submit_nccl(ctx, PT_REGS_PARM3(ctx), PT_REGS_PARM4(ctx), NCCL_NONE, PT_REGS_PARM5(ctx) & 0xffffffff,
			   ARG6(ctx), st[0]);
}

// ncclReduce(send, recv, count, type, op, root, comm, stream).
SEC("uprobe")
int nccl_reduce(struct pt_regs *ctx)
{
	__u64 st[2];
	args_7_8(ctx, st);
	return submit_nccl(ctx, PT_REGS_PARM3(ctx), PT_REGS_PARM4(ctx), PT_REGS_PARM5(ctx) & 0xffffffff,
			   ARG6(ctx) & 0xffffffff, st[0], st[1]);
}

// ncclAllGather(send, recv, sendcount, type, comm, stream) and
// ncclAlltoAll(send, recv, count, type, comm, stream).
SEC("uprobe")
int nccl_all(struct pt_regs *ctx)
{
	return submit_nccl(ctx, PT_REGS_PARM3(ctx), PT_REGS_PARM4(ctx), NCCL_NONE, NCCL_NONE, PT_REGS_PARM5(ctx),
			   ARG6(ctx));
}

// ncclSend(send, count, type, peer, comm, stream), ncclRecv(recv, …) and
// ncclBcast(buff, count, type, root, comm, stream).
SEC("uprobe")
int nccl_peer(struct pt_regs *ctx)
{
	return submit_nccl(ctx, PT_REGS_PARM2(ctx), PT_REGS_PARM3(ctx), NCCL_NONE, PT_REGS_PARM4(ctx) & 0xffffffff,
			   PT_REGS_PARM5(ctx), ARG6(ctx));
}

// submit_nccl_plain records an NCCL call of kind with a0 = arg (the
// group calls, the ends of a communicator).
static __always_inline int submit_nccl_plain(struct pt_regs *ctx, __u16 kind, __u64 arg)
{
	struct caller c;
	whoami(&c);
	struct lane_slot s;
	struct event *e = reserve(&s, api_of(ctx), kind, &c);
	if (!e)
		return 0;
	e->a[0] = arg;
	submit(&s, e);
	return 0;
}

// ncclGroupStart(), ncclGroupEnd()
SEC("uprobe")
int nccl_group(struct pt_regs *ctx)
{
	return submit_nccl_plain(ctx, KIND_NCCL_GROUP, 0);
}

// ncclCommDestroy(comm), ncclCommAbort(comm), ncclCommFinalize(comm)
SEC("uprobe")
int nccl_comm_end(struct pt_regs *ctx)
{
	return submit_nccl_plain(ctx, KIND_NCCL_COMM_END, PT_REGS_PARM1(ctx));
}

// nccl_comm_begin records what the call making a communicator was given:
// the first 48 bytes at id when id is not NULL, else a[]. It keeps, for
// the return probe (handle_out_return), where the comm will be and in.
static __always_inline int nccl_comm_begin(struct pt_regs *ctx, const void *id, const __u64 *a, __u64 in, __u64 out)
{
	struct caller c;
	whoami(&c);
	struct lane_slot s;
	struct event *e = reserve(&s, api_of(ctx), KIND_NCCL_COMM_ID, &c);
	if (e) {
		if (!id || bpf_probe_read_user(e->a, sizeof(e->a), id)) {
			for (int i = 0; i < 6; i++)
				e->a[i] = a ? a[i] : 0;
		}
		submit(&s, e);
	}
	struct pending p = {.ts = bpf_ktime_get_ns(), .arg0 = out, .arg1 = in, .arg2 = KIND_NCCL_COMM, .api = api_of(ctx)};
	begin(c.t, KIND_NCCL_COMM, &p);
	return 0;
}

// ncclCommInitRank(comm *, nranks, ncclUniqueId id, rank) and
// ncclCommInitRankConfig(…, config): the 128-byte id is passed in memory.
// On x86-64 it is on the stack, where the 7th word would be, and the rank
// is the third word; on arm64 the third word is the address of the id's
// copy, and the rank the fourth.
SEC("uprobe")
int nccl_init_rank(struct pt_regs *ctx)
{
#if defined(__TARGET_ARCH_arm64)
	return nccl_comm_begin(ctx, (void *)PT_REGS_PARM3(ctx), 0,
			       (PT_REGS_PARM2(ctx) & 0xffffffff) | (PT_REGS_PARM4(ctx) << 32), PT_REGS_PARM1(ctx));
#else
	return nccl_comm_begin(ctx, (void *)ARG_STACK(ctx), 0,
			       (PT_REGS_PARM2(ctx) & 0xffffffff) | (PT_REGS_PARM3(ctx) << 32), PT_REGS_PARM1(ctx));
#endif
}

// ncclCommInitRankScalable(comm *, nranks, rank, nId, ncclUniqueId *ids,
// config): the first of the ids.
SEC("uprobe")
int nccl_init_rank_scalable(struct pt_regs *ctx)
{
	return nccl_comm_begin(ctx, (void *)PT_REGS_PARM5(ctx), 0,
			       (PT_REGS_PARM2(ctx) & 0xffffffff) | (PT_REGS_PARM3(ctx) << 32), PT_REGS_PARM1(ctx));
}

// ncclCommSplit(comm, color, key, ncclComm_t *newcomm, config): the new
// communicator's rank and size are not known here.
SEC("uprobe")
int nccl_split(struct pt_regs *ctx)
{
	__u64 a[6] = {PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx) & 0xffffffff, PT_REGS_PARM3(ctx) & 0xffffffff};
	return nccl_comm_begin(ctx, 0, a, NCCL_NONE, PT_REGS_PARM4(ctx));
}

// Entry of ncclCommCount(comm, int *count) and ncclCommUserRank(comm, int
// *rank): the int is known on return (handle_out_return).
SEC("uprobe")
int nccl_comm_query(struct pt_regs *ctx)
{
	return begin_handle_out(ctx, KIND_NCCL_COMM_QUERY, PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx));
}

// The communicators of one ncclCommInitAll that its return reports: a
// process drives at most this many devices this way.
#define NCCL_INIT_ALL_MAX 8

// Entry of ncclCommInitAll(ncclComm_t *comms, ndev, devlist).
SEC("uprobe")
int nccl_init_all_enter(struct pt_regs *ctx)
{
	__u64 ndev = PT_REGS_PARM2(ctx) & 0xffffffff;
	__u64 a[6] = {ndev};
	return nccl_comm_begin(ctx, 0, a, ndev, PT_REGS_PARM1(ctx));
}

// Its return: a record per communicator made, rank i being comms[i], up to
// NCCL_INIT_ALL_MAX.
SEC("uretprobe")
int nccl_init_all_return(struct pt_regs *ctx)
{
	struct caller c;
	struct pending in;
	if (!take(api_of(ctx), &c, &in))
		return 0;
	__u64 comms[NCCL_INIT_ALL_MAX] = {};
	__u32 n = in.arg1 < NCCL_INIT_ALL_MAX ? in.arg1 : NCCL_INIT_ALL_MAX;
	__u32 size = n * sizeof(comms[0]);
	if (size > sizeof(comms) || bpf_probe_read_user(comms, size, (void *)in.arg0))
		return 0;
	__s32 ret = (__s32)PT_REGS_RC(ctx);
	for (__u32 i = 0; i < NCCL_INIT_ALL_MAX && i < n; i++) {
		struct lane_slot s;
		struct event *e = reserve(&s, in.api, KIND_NCCL_COMM, &c);
		if (!e)
			return 0;
		e->ret = ret;
		e->a[0] = in.arg1 | ((__u64)i << 32);
		e->a[1] = comms[i];
		submit(&s, e);
	}
	return 0;
}

// For the benchmarks: the floor (an empty program), the user-memory read
// alone, the least a record costs through a BPF ring buffer, ours without
// the lanes, and the naive design (one record per call, always waking the
// reader).
SEC("uprobe")
int bench_empty(struct pt_regs *ctx)
{
	return 0;
}

// The least a launch record costs through a BPF ring buffer: the two
// stack arguments, a timestamp, the ids and a record submitted without a
// wakeup; no per-thread state, no call counts, no API id.
SEC("uprobe")
int bench_record(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct event *e = bpf_ringbuf_reserve(&bench_events, sizeof(*e), 0);
	if (!e)
		return 0;
	__builtin_memset(e, 0, sizeof(*e));
	e->ts = bpf_ktime_get_ns();
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->kind = KIND_LAUNCH;
	e->a[0] = PT_REGS_PARM1(ctx);
	args_7_8(ctx, &e->a[4]);
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}

// What the lanes cost: runtime_launch_kernel's work (the thread's state,
// the header, the arguments, the runtime-call marker) with the record
// written to a slot of the CPU's own that no reader touches, so that it
// stays in the CPU's cache, instead of to the lane.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct event);
} bench_hot_slot SEC(".maps");

SEC("uprobe")
int bench_hot(struct pt_regs *ctx)
{
	struct caller c;
	whoami(&c);
	__u32 zero = 0;
	struct event *e = bpf_map_lookup_elem(&bench_hot_slot, &zero);
	if (!e)
		return 0;
	header(e, API_cudaLaunchKernel, KIND_LAUNCH, &c);
	runtime_launch_args(ctx, e->a);
	enter_runtime_sig(c.t, KIND_LAUNCH, 0, launch_sig(e->a), e->ts);
	*(volatile __u32 *)&e->units = EVENT_UNITS;
	return 0;
}

// The one user-memory read every launch record of ours needs on x86-64,
// alone: the two stack arguments (args_7_8), kept in bench_args_sink.
__u64 bench_args_sink[2];

SEC("uprobe")
int bench_args(struct pt_regs *ctx)
{
	args_7_8(ctx, bench_args_sink);
	return 0;
}

SEC("uprobe")
int bench_naive(struct pt_regs *ctx)
{
	struct event *e = bpf_ringbuf_reserve(&bench_events, sizeof(*e), 0);
	if (!e)
		return 0;
	__builtin_memset(e, 0, sizeof(*e));
	e->ts = bpf_ktime_get_ns();
	e->kind = KIND_LAUNCH;
	e->a[0] = PT_REGS_PARM1(ctx);
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return 0;
}

// Keep the enums in BTF for bpf2go -type.
const enum kind *unused_kind __attribute__((unused));
const enum api *unused_api __attribute__((unused));
const enum counter *unused_counter __attribute__((unused));
const struct name_event *unused_name_event __attribute__((unused));
const struct wide_event *unused_wide_event __attribute__((unused));
