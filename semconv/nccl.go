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
	// What the NCCL Inspector's textfiles say of the operations.
	GPUNCCLAlgorithm        = attribute.Key("gpu.nccl.algorithm")
	GPUNCCLProtocol         = attribute.Key("gpu.nccl.protocol")
	GPUNCCLMessageSizeRange = attribute.Key("gpu.nccl.message_size.range")
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
	{GPUNCCLAlgorithm, "string", "The algorithm NCCL chose for the operations, as NCCL names it (ncclAlgoStr), from the algo_proto of the NCCL Inspector's textfiles (NCCL 2.30); " + Other + " for a name NCCL 2.30 does not have; absent where the textfile does not say (NCCL 2.29's, point-to-point operations, unknown).", Extension,
		[]string{"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT", Other}},
	{GPUNCCLProtocol, "string", "The protocol NCCL chose for the operations, as NCCL names it (ncclProtoStr), from the algo_proto of the NCCL Inspector's textfiles (NCCL 2.30); " + Other + " for a name NCCL 2.30 does not have; absent where the textfile does not say.", Extension,
		[]string{"LL", "LL128", "Simple", Other}},
	{GPUNCCLMessageSizeRange, "string", "The size of the operations' messages as the NCCL Inspector's textfiles bucket it: lower-upper and a unit of 1024^k bytes (B, KB, MB, GB, TB), the lower bound the size in that unit cut to an integer (4-5GB, 512-513B; 0B for none); NCCL 2.29's size of the last operation (2.00GB) in the same range. At most 1023 ranges a unit (TB aside): bounded.", Extension, nil},
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
const inspectorNote = "Only where the job loads NVIDIA's NCCL Inspector (NCCL_PROFILER_PLUGIN with NCCL_INSPECTOR_ENABLE=1) and it writes its JSON dump (not NCCL_INSPECTOR_PROM_DUMP=1, whose figures are the gpu.nccl.inspector.* gauges): read from the dump of each traced process, as it grows. The Inspector times only the operations of at least NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES (default 8192) and, by default, only with GPU timing."

// What the NCCL Inspector's Prometheus textfiles say, joined to the
// rank's series: gauges, since the Inspector writes a summary of each
// interval, not each operation.
const inspectorPromNote = "Only where the job loads NVIDIA's NCCL Inspector in its Prometheus mode (NCCL_INSPECTOR_PROM_DUMP=1, with a dump interval: NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS, at least 30 s): read from the textfiles the traced process holds open, each time the Inspector rewrites one. NCCL 2.29 writes the last collective each rank completed in the interval, by communicator and rank; NCCL 2.30 the interval's operations of the GPU by communicator size, operation, message size range and algorithm, joined only where one communicator of the process, with one rank of it, has that size. A series goes when the textfile no longer has it."

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
	GPUNCCLOpBytes = Metric{
		Name: "gpu.nccl.operation.bytes", Kind: Counter, Unit: "By", Origin: Extension,
		Description: "NCCL's algorithm bandwidth of each operation the NCCL Inspector timed (algBw: the operation's bytes, nranks times the message for AllGather and ReduceScatter, over its time) times its time: rate(gpu.nccl.operation.bytes) / rate(gpu.nccl.operation.time) is their time-weighted mean algorithm bandwidth.",
		Attributes:  with(ncclRankAttrs, GPUNCCLCollective),
		Note:        inspectorNote + " An operation whose bandwidth the Inspector wrote as nan counts in time but not here.",
	}
	GPUNCCLInspectorOpTime = Metric{
		Name: "gpu.nccl.inspector.operation.time", Kind: Gauge, Unit: "s", Origin: Extension,
		Description: "Execution time of the rank's NCCL operations as the NCCL Inspector's last textfile says it: the last collective of the interval (NCCL 2.29), or the mean of the interval's operations of the series (NCCL 2.30).",
		Attributes:  with(ncclRankAttrs, GPUNCCLCollective, GPUNCCLAlgorithm, GPUNCCLProtocol, GPUNCCLMessageSizeRange),
		Note:        inspectorPromNote,
	}
	GPUNCCLInspectorBusBandwidth = Metric{
		Name: "gpu.nccl.inspector.bus.bandwidth", Kind: Gauge, Unit: "By/s", Origin: Extension,
		Description: "NCCL's bus bandwidth of the rank's NCCL operations as the NCCL Inspector's last textfile says it: the last collective's (NCCL 2.29), or the geometric mean of the interval's operations of the series (NCCL 2.30; 0 where none had one).",
		Attributes:  with(ncclRankAttrs, GPUNCCLCollective, GPUNCCLAlgorithm, GPUNCCLProtocol, GPUNCCLMessageSizeRange),
		Note:        inspectorPromNote,
	}
	GPUNCCLInspectorAlgoBandwidth = Metric{
		Name: "gpu.nccl.inspector.algorithm.bandwidth", Kind: Gauge, Unit: "By/s", Origin: Extension,
		Description: "NCCL's algorithm bandwidth of the rank's last collective of the interval, as the NCCL Inspector's last textfile says it (NCCL 2.29; NCCL 2.30's textfiles do not write it).",
		Attributes:  with(ncclRankAttrs, GPUNCCLCollective, GPUNCCLMessageSizeRange),
		Note:        inspectorPromNote,
	}
	XpuscopeNCCLInspectorErrors = Metric{
		Name: "xpuscope.nccl.inspector.errors", Kind: Counter, Unit: "{error}", Origin: Self,
		Description: "NCCL Inspector dumps and textfiles that could not be read, lines in them that are not records or samples of the Inspector's, and samples of a process's own textfiles not joined to one of its ranks' series, by error.type (" + InspectorErrorRead + ", " + InspectorErrorRecord + ", " + InspectorErrorUnjoined + ").",
		Attributes:  []attribute.Key{ErrorType},
		Note:        "unjoined: a communicator the process did not make or a rank it does not have (NCCL 2.29), a size that none or several of its communicators or ranks have (NCCL 2.30), or a sample past 1,024 of a process.",
	}
)

// Values of ErrorType on XpuscopeNCCLInspectorErrors.
const (
	InspectorErrorRead     = "read"
	InspectorErrorRecord   = "record"
	InspectorErrorUnjoined = "unjoined"
)

var ncclMetrics = []Metric{GPUNCCLCalls, GPUNCCLBytes, GPUNCCLSequence, GPUNCCLLastCollectiveAge,
	GPUNCCLOpTime, GPUNCCLOpTimed, GPUNCCLBusBytes, GPUNCCLOpBytes,
	GPUNCCLInspectorOpTime, GPUNCCLInspectorBusBandwidth, GPUNCCLInspectorAlgoBandwidth, XpuscopeNCCLInspectorErrors}

// SpanNCCLGroup is an NCCL group: from ncclGroupStart to ncclGroupEnd,
// which enqueues its calls; a call outside a group is a group of its own.
const SpanNCCLGroup = "nccl.group"

var ncclSpans = []Span{
	{SpanNCCLGroup, "An NCCL group, from ncclGroupStart to ncclGroupEnd, which enqueues its calls (a call outside a group, at the instant of the call); the communicator attributes are its first call's.",
		with(spanProc, GPUNCCLCollective, GPUNCCLCommID, GPUNCCLRank, GPUNCCLCommSize, GPUNCCLGroupCalls)},
}
