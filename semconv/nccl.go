package semconv

import "go.opentelemetry.io/otel/attribute"

// NCCL attributes (extensions): what cudatrace reads of the NCCL calls of
// a process (libnccl.so.2).
const (
	GPUNCCLCollective = attribute.Key("gpu.nccl.collective")
	GPUNCCLDataType   = attribute.Key("gpu.nccl.data_type")
	GPUNCCLCommID     = attribute.Key("gpu.nccl.comm.id")
	GPUNCCLRank       = attribute.Key("gpu.nccl.rank")
	GPUNCCLCommSize   = attribute.Key("gpu.nccl.comm.size")
	GPUNCCLGroupCalls = attribute.Key("gpu.nccl.group.calls")
)

// NCCLCollectiveMixed is a group span's gpu.nccl.collective when the
// group's calls are not all of one collective.
const NCCLCollectiveMixed = "mixed"

var ncclAttributes = []Attribute{
	{GPUNCCLCollective, "string", "The NCCL call, nccl.h's name without nccl (ncclBcast and the *Config forms under their collective's name); on a group span, the group's collective, or " + NCCLCollectiveMixed + "; on what the NCCL Inspector timed, its name of the operation, " + Other + " for one NCCL's API does not name so (its SendRecv, PutSignal, ...).", Extension,
		[]string{"AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter", "AlltoAll", "Gather", "Scatter", "Send", "Recv", NCCLCollectiveMixed, Other}},
	{GPUNCCLDataType, "string", "The call's ncclDataType_t, nccl.h's name without nccl, in lower case; " + Other + " for a value nccl.h does not define.", Extension,
		[]string{"int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32", "float64", "bfloat16", "float8e4m3", "float8e5m2", Other}},
	{GPUNCCLCommID, "string", "The communicator, by NCCL's own name of it, its commHash, as NCCL's logs (commId) and the NCCL Inspector (id) print it (0x and hexadecimal digits): the same in every rank of it on every node. NCCL hashes the 128-byte ncclUniqueId the communicator is made from (of which the Source reads the first 48 bytes, the rest being zero in every id ncclGetUniqueId makes), and a split's from its parent's, its place among the parent's splits and its color. A communicator made before the Source started, or by ncclCommInitAll (which makes its id inside), has an id local to its process, local-0x…. " + Other + " past 256 communicators in a process.", Extension, nil},
	{GPUNCCLRank, "int", "The process's rank in the communicator; absent where not known (a split whose ranks the process never asked for with ncclCommUserRank).", Extension, nil},
	{GPUNCCLCommSize, "int", "The communicator's ranks; absent where not known (a split whose size the process never asked for with ncclCommCount).", Extension, nil},
	{GPUNCCLGroupCalls, "int", "The NCCL calls a group (ncclGroupStart to ncclGroupEnd) enqueued. Span attribute only.", Extension, nil},
}

var ncclRankAttrs = with(procAttrs, GPUNCCLCommID, GPUNCCLRank, GPUNCCLCommSize)

// NCCL metrics.
var (
	GPUNCCLCalls = Metric{
		Name: "gpu.nccl.calls", Kind: Counter, Unit: "{call}", Origin: Extension,
		Description: "NCCL collective and point-to-point calls, by collective, data type and communicator.",
		Attributes:  with(ncclRankAttrs, GPUNCCLCollective, GPUNCCLDataType),
	}
	GPUNCCLBytes = Metric{
		Name: "gpu.nccl.bytes", Kind: Counter, Unit: "By", Origin: Extension,
		Description: "Bytes the NCCL calls send (transmit) and receive, as nccl.h defines each call's buffers: AllReduce sends and receives count elements, AllGather receives nranks × sendcount, ReduceScatter sends nranks × recvcount, AlltoAll both; Broadcast and Scatter send from the root only, Reduce and Gather receive there only.",
		Attributes:  with(ncclRankAttrs, GPUNCCLCollective, GPUNCCLDataType, NetworkIODir),
		Note:        "Calls whose figures need the rank or the size when they are not known, or whose data type is not nccl.h's, are counted in gpu.nccl.calls only.",
	}
	GPUNCCLSequence = Metric{
		Name: "gpu.nccl.collective.sequence", Kind: Gauge, Unit: "{collective}", Origin: Extension,
		Description: "Collectives the rank has issued on the communicator since it was made (sends and receives are not counted: ranks issue different ones). Every rank of a healthy communicator issues the same collectives: a rank whose sequence stays behind its communicator's highest is the one the others wait for.",
		Attributes:  ncclRankAttrs,
		Note:        "Counted from the communicator's making when the Source saw it; from the Source's start otherwise, so comparable across ranks only for communicators made after every node's agent started.",
	}
	GPUNCCLLastCollectiveAge = Metric{
		Name: "gpu.nccl.last_collective.age", Kind: Gauge, Unit: "s", Origin: Extension,
		Description: "Time since the rank last issued a collective on the communicator (since it was made, before the first).",
		Attributes:  ncclRankAttrs,
	}
)

// What the NCCL Inspector (NCCL's profiler plugin, where a job loads it)
// timed of each operation, joined to the rank's series: the same
// communicator, rank and size attributes as gpu.nccl.calls.
const inspectorNote = "Only where the job loads NVIDIA's NCCL Inspector (NCCL_PROFILER_PLUGIN with NCCL_INSPECTOR_ENABLE=1) and it writes its JSON dump (not NCCL_INSPECTOR_PROM_DUMP=1): read from the dump of each traced process, as it grows. The Inspector times only the operations of at least NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES (default 8192) and, by default, only with GPU timing."

var (
	GPUNCCLOpTime = Metric{
		Name: "gpu.nccl.operation.time", Kind: Counter, Unit: "s", Origin: Extension,
		Description: "Time the NCCL operations the NCCL Inspector timed ran on the GPU (its exec time), by collective (or Send, Recv) and communicator: rate(gpu.nccl.operation.time) / rate(gpu.nccl.operation.timed) is their mean duration.",
		Attributes:  with(ncclRankAttrs, GPUNCCLCollective),
		Note:        inspectorNote,
	}
	GPUNCCLOpTimed = Metric{
		Name: "gpu.nccl.operation.timed", Kind: Counter, Unit: "{operation}", Origin: Extension,
		Description: "NCCL operations the NCCL Inspector timed, by collective (or Send, Recv) and communicator.",
		Attributes:  with(ncclRankAttrs, GPUNCCLCollective),
		Note:        inspectorNote,
	}
	GPUNCCLBusBytes = Metric{
		Name: "gpu.nccl.bus.bytes", Kind: Counter, Unit: "By", Origin: Extension,
		Description: "NCCL's bus bandwidth of each operation the NCCL Inspector timed (busBw: the algorithm bandwidth, bytes over time, times the collective's factor, 2(n-1)/n for AllReduce) times its time: rate(gpu.nccl.bus.bytes) / rate(gpu.nccl.operation.time) is their time-weighted mean bus bandwidth, comparable across collectives and sizes of communicator.",
		Attributes:  with(ncclRankAttrs, GPUNCCLCollective),
		Note:        inspectorNote + " An operation whose bandwidth the Inspector wrote as nan counts in time but not here.",
	}
	XpuscopeNCCLInspectorErrors = Metric{
		Name: "xpuscope.nccl.inspector.errors", Kind: Counter, Unit: "{error}", Origin: Self,
		Description: "NCCL Inspector dumps that could not be read, and lines in them that are not records of the Inspector's, by error.type (" + InspectorErrorRead + ", " + InspectorErrorRecord + ").",
		Attributes:  []attribute.Key{ErrorType},
	}
)

// Values of ErrorType on XpuscopeNCCLInspectorErrors.
const (
	InspectorErrorRead   = "read"
	InspectorErrorRecord = "record"
)

var ncclMetrics = []Metric{GPUNCCLCalls, GPUNCCLBytes, GPUNCCLSequence, GPUNCCLLastCollectiveAge,
	GPUNCCLOpTime, GPUNCCLOpTimed, GPUNCCLBusBytes, XpuscopeNCCLInspectorErrors}

// SpanNCCLGroup is an NCCL group: from ncclGroupStart to ncclGroupEnd,
// which enqueues its calls; a call outside a group is a group of its own.
const SpanNCCLGroup = "nccl.group"

var ncclSpans = []Span{
	{SpanNCCLGroup, "An NCCL group, from ncclGroupStart to ncclGroupEnd, which enqueues its calls (a call outside a group, at the instant of the call); the communicator attributes are its first call's.",
		with(spanProc, GPUNCCLCollective, GPUNCCLCommID, GPUNCCLRank, GPUNCCLCommSize, GPUNCCLGroupCalls)},
}
