package cudaprog

import (
	"cmp"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// NCCL test fixtures. Debian has no NCCL, so "libnccl" is a stand-in
// libnccl.so.2 (testdata/nccl_stub.c) exporting NCCL's functions with
// nccl.h's exact signatures, and "nccl" (testdata/nccl.c) a program that
// drives it from one thread per rank of two communicators, NCCLCommA and
// NCCLCommB. Both include the nccl.h and nccl_scenario.h that Build
// generates from this file (ncclHeader, ncclScenarioHeader), so the C
// and the tables below cannot drift. nccl.h's types, enums and struct
// layouts are NCCL 2.31's (src/nccl.h.in of NVIDIA's repository).
//
// The stub exports every NCCLFunctions entry twice, as NCCL's own build
// (PROFAPI, its default) does: ncclX, a weak symbol, and pncclX, an alias
// at the same address. Its ncclBcast calls ncclBroadcast, as NCCL's does,
// through the PLT. The stub checks what NCCL checks of the arguments and
// returns ncclInvalidArgument (or ncclInvalidUsage) where NCCL would: a
// communicator that is not live (or is finalized), a data type or
// reduction outside nccl.h's, a root or peer outside the communicator, a
// config or collective config without NCCL_API_MAGIC, an ncclGroupEnd
// without its ncclGroupStart. ncclCommInitRank and its Config form wait,
// as NCCL's do, until every rank of the ncclUniqueId has come (each rank
// its own thread), and ncclCommSplit until every rank of the parent has:
// the ranks of one color make a communicator, ordered by key, then by
// parent rank. The nccl program exits with status 1 on any return it does
// not expect.
//
// The nccl program's stdout (one line each, flushed):
//
//	READY <pid>
//	... one line is read from stdin ...
//	UID <comm name> <256 hex digits>        once per communicator, before its ranks start
//	COMM <comm name> <rank> <nranks> <tid> 0x<comm> 0x<commHash>   each rank after its init
//	SPLIT <comm name> <i> <parent rank> <color> <sub rank> <sub size> 0x<sub comm> 0x<commHash>   each rank's split i
//
// (commHash: NCCL's name of the communicator, which NCCL's logs print as
// its commId and the NCCL Inspector as its id: the stub computes it as
// NCCL does and exports cudaprogNcclCommHash, not NCCL's, to give it.)
//	ISSUED                                  every thread has finished
//	... a second line (or EOF) is read from stdin; the communicators are still alive ...
//	DONE                                    every handle destroyed; exit status 0
//
// "nccl single" is one thread's NCCL: after READY and the go line, the
// two communicators of ncclCommInitAll(comms, 2, NULL) ("all") and one of
// ncclCommInitRankScalable(&comm, 1, 0, 1, &id, NULL) ("scalable"), with
// their COMM lines and the latter's UID line; a group of an
// ncclAllReduce of NCCLSingleCount float32 on each of the first two
// (rank i's on NCCLLoopStream + i*0x100), then an ncclAllGather of
// NCCLSingleCount int8 on the third (NCCLLoopStream); then calls NCCL
// refuses, each printed as "INVALID <what> <ncclResult_t>" (and one it
// takes, "valid"), the ends, and DONE.
//
// "nccl loop <n> [<threads>]" is the benchmark's: each thread makes a
// communicator of one rank of its own, then, after READY and the go line,
// calls ncclAllReduce (NCCLLoopCall) n times; it prints NS_PER_CALL (the
// threads' mean time per call) and DONE.
//
// With CUDAPROG_NCCL_ECHO=1 in its environment, the stub also prints,
// for every collective, send, receive and group call the program makes
// (ncclBcast's inner ncclBroadcast is not echoed):
//
//	CALL <tid> <api> 0x<comm> <count> <datatype> <op> <root> <peer> 0x<stream>
//
// (-1 where the call has no such argument; comm and stream 0x0 for
// ncclGroupStart and ncclGroupEnd.) ReadNCCLLines parses these lines.

// NCCLDataType is nccl.h's ncclDataType_t.
type NCCLDataType int

// The ncclDataType_t values, as nccl.h numbers them (ncclChar, ncclInt,
// ncclHalf, ncclFloat and ncclDouble are nccl.h's aliases of ncclInt8,
// ncclInt32, ncclFloat16, ncclFloat32 and ncclFloat64). The size of one
// element in bytes:
//
//	ncclInt8       0  1      ncclFloat16     6  2
//	ncclUint8      1  1      ncclFloat32     7  4
//	ncclInt32      2  4      ncclFloat64     8  8
//	ncclUint32     3  4      ncclBfloat16    9  2
//	ncclInt64      4  8      ncclFloat8e4m3 10  1
//	ncclUint64     5  8      ncclFloat8e5m2 11  1
const (
	NCCLInt8 NCCLDataType = iota
	NCCLUint8
	NCCLInt32
	NCCLUint32
	NCCLInt64
	NCCLUint64
	NCCLFloat16
	NCCLFloat32
	NCCLFloat64
	NCCLBfloat16
	NCCLFloat8e4m3
	NCCLFloat8e5m2
	// NCCLNumTypes is nccl.h's ncclNumTypes: the stub rejects a data
	// type at or above it (and a negative one) with ncclInvalidArgument.
	NCCLNumTypes
)

var ncclDataTypes = [NCCLNumTypes]struct {
	name string
	size int
}{
	{"ncclInt8", 1}, {"ncclUint8", 1}, {"ncclInt32", 4}, {"ncclUint32", 4}, {"ncclInt64", 8}, {"ncclUint64", 8},
	{"ncclFloat16", 2}, {"ncclFloat32", 4}, {"ncclFloat64", 8}, {"ncclBfloat16", 2},
	{"ncclFloat8e4m3", 1}, {"ncclFloat8e5m2", 1},
}

// String is t's name in nccl.h ("ncclFloat32"), or "ncclDataType(<n>)".
func (t NCCLDataType) String() string {
	if t >= 0 && t < NCCLNumTypes {
		return ncclDataTypes[t].name
	}
	return fmt.Sprintf("ncclDataType(%d)", int(t))
}

// Size is the bytes of one element of t; 0 for a value nccl.h does not
// define.
func (t NCCLDataType) Size() int {
	if t >= 0 && t < NCCLNumTypes {
		return ncclDataTypes[t].size
	}
	return 0
}

// NCCLRedOp is nccl.h's ncclRedOp_t.
type NCCLRedOp int

// The built-in ncclRedOp_t values, as nccl.h numbers them.
const (
	NCCLSum NCCLRedOp = iota
	NCCLProd
	NCCLMax
	NCCLMin
	NCCLAvg
	// NCCLNumOps is nccl.h's ncclNumOps: the stub rejects an op at or
	// above it (user-defined ops are not supported) and a negative one.
	NCCLNumOps
)

var ncclRedOps = [NCCLNumOps]string{"ncclSum", "ncclProd", "ncclMax", "ncclMin", "ncclAvg"}

// String is op's name in nccl.h ("ncclSum"), or "ncclRedOp(<n>)".
func (op NCCLRedOp) String() string {
	if op >= 0 && op < NCCLNumOps {
		return ncclRedOps[op]
	}
	return fmt.Sprintf("ncclRedOp(%d)", int(op))
}

// NCCLNone (-1) is an NCCLCall's DataType, Op or Root where the call has
// no such argument, and what the CALL lines print there.
const NCCLNone = -1

// nccl.h's result codes the stub returns.
const (
	NCCLSuccess         = 0 // ncclSuccess
	NCCLInvalidArgument = 4 // ncclInvalidArgument
	NCCLInvalidUsage    = 5 // ncclInvalidUsage
)

// NCCLConfigMagic is nccl.h's NCCL_API_MAGIC, the magic of ncclConfig_t
// and ncclCollConfig_t (their initializers'); the stub rejects a config
// carrying another with ncclInvalidArgument.
const NCCLConfigMagic = 0xcafebeef

// NCCLVersionCode is the NCCL_VERSION_CODE of the generated nccl.h: NCCL
// 2.31.0, the first with the *Config collectives.
const NCCLVersionCode = 23100

// NCCLUniqueIDBytes is the size of an ncclUniqueId, passed by value to
// ncclCommInitRank and ncclCommInitRankConfig (in memory, on the stack,
// under the x86-64 SysV ABI).
const NCCLUniqueIDBytes = 128

// The nccl program's scenario constants.
const (
	// NCCLIterations is how many times each rank runs its
	// communicator's Ops.
	NCCLIterations = 20
	// NCCLStopAfter is how many iterations the lagging rank runs.
	NCCLStopAfter = 5
	// NCCLLaggingRank is the rank of NCCLCommA that stops after
	// NCCLStopAfter iterations.
	NCCLLaggingRank = 3
	// NCCLSplitCount is the count of NCCLSplitCall.
	NCCLSplitCount = 4096
	// NCCLSingleCount is the count of the calls of "nccl single".
	NCCLSingleCount = 300
)

// The buffers the nccl program passes: fake device pointers, never
// dereferenced (nothing is mapped there). Every call passes NCCLSendBuff
// as its send buffer and NCCLRecvBuff as its receive buffer; ncclBcast's
// one buffer is NCCLRecvBuff, ncclRecv's is NCCLRecvBuff, ncclSend's
// NCCLSendBuff.
var (
	NCCLSendBuff = DevPtr(100)
	NCCLRecvBuff = DevPtr(200)
)

// NCCLCall is one call of an NCCLComm's per-iteration op list: an
// ncclGroupStart or ncclGroupEnd (everything else NCCLNone or 0), or a
// collective, send or receive on the rank's communicator and stream.
type NCCLCall struct {
	// API is the function: "ncclAllReduce", "ncclAllReduceConfig",
	// "ncclSend", "ncclGroupStart", ...
	API string
	// Count is the count argument (sendcount for ncclAllGather,
	// recvcount for ncclReduceScatter).
	Count    uint64
	DataType NCCLDataType // NCCLNone for the group calls
	Op       NCCLRedOp    // NCCLNone unless the call reduces
	Root     int          // NCCLNone unless the call has a root
	// PeerOffset is, for ncclSend and ncclRecv, the peer's offset from
	// the calling rank: Peer(rank, nranks) = (rank + PeerOffset) mod
	// nranks.
	PeerOffset int
}

// PointToPoint reports whether c is an ncclSend or ncclRecv.
func (c NCCLCall) PointToPoint() bool { return c.API == "ncclSend" || c.API == "ncclRecv" }

// Peer is the peer rank rank of a communicator of nranks passes to c:
// NCCLNone unless c is point to point.
func (c NCCLCall) Peer(rank, nranks int) int {
	if !c.PointToPoint() {
		return NCCLNone
	}
	return ((rank+c.PeerOffset)%nranks + nranks) % nranks
}

// Group reports whether c is ncclGroupStart or ncclGroupEnd.
func (c NCCLCall) Group() bool { return c.API == "ncclGroupStart" || c.API == "ncclGroupEnd" }

// The shapes of nccl.h's calls.
func ncclReduction(api string, count uint64, t NCCLDataType, op NCCLRedOp) NCCLCall {
	return NCCLCall{API: api, Count: count, DataType: t, Op: op, Root: NCCLNone}
}

func ncclRooted(api string, count uint64, t NCCLDataType, root int) NCCLCall {
	return NCCLCall{API: api, Count: count, DataType: t, Op: NCCLNone, Root: root}
}

func ncclReduceTo(api string, count uint64, t NCCLDataType, op NCCLRedOp, root int) NCCLCall {
	return NCCLCall{API: api, Count: count, DataType: t, Op: op, Root: root}
}

func ncclAll(api string, count uint64, t NCCLDataType) NCCLCall {
	return NCCLCall{API: api, Count: count, DataType: t, Op: NCCLNone, Root: NCCLNone}
}

func ncclP2P(api string, count uint64, t NCCLDataType, peerOffset int) NCCLCall {
	return NCCLCall{API: api, Count: count, DataType: t, Op: NCCLNone, Root: NCCLNone, PeerOffset: peerOffset}
}

func ncclGroup(api string) NCCLCall {
	return NCCLCall{API: api, DataType: NCCLNone, Op: NCCLNone, Root: NCCLNone}
}

// NCCLComm is one communicator of the nccl program: NRanks threads, one
// per rank, each making its rank's communicator with Init from one
// ncclUniqueId, then running Ops Iterations(rank) times on its own
// stream, Stream(rank).
type NCCLComm struct {
	Name   string // in the UID and COMM lines
	NRanks int
	// Init is "ncclCommInitRank" or "ncclCommInitRankConfig" (with a
	// non-NULL config: NCCL_CONFIG_INITIALIZER's, blocking 1).
	Init string
	// LaggingRank runs NCCLStopAfter iterations instead of
	// NCCLIterations; NCCLNone for none.
	LaggingRank int
	// Splits are the ncclCommSplit(comm, color, key, &sub, NULL) each
	// rank makes after its iterations, in order, one after the other,
	// each followed by ncclCommCount(sub) and ncclCommUserRank(sub) and
	// its SPLIT line (a rank that gets no communicator, with
	// NCCL_SPLIT_NOCOLOR, asks nothing). Then it makes NCCLSplitCall on
	// each of its new communicators (split i on SplitStream(i, rank)),
	// then ncclCommDestroy of each: they are all alive together, as a
	// job's tensor- and data-parallel groups are.
	Splits []NCCLSplit
	// FinalizeRank's handle is ended with ncclCommFinalize then
	// ncclCommDestroy, the others' with ncclCommDestroy alone (by the
	// main thread, after ISSUED and the second stdin line); NCCLNone for
	// none.
	FinalizeRank int
	// StreamBase is rank 0's fake cudaStream_t; see Stream.
	StreamBase uint64
	// Ops is one iteration's calls.
	Ops []NCCLCall
}

// Stream is the fake cudaStream_t (never dereferenced) rank passes to
// every call it makes on the communicator: StreamBase + rank*0x100.
func (c *NCCLComm) Stream(rank int) uint64 { return c.StreamBase + uint64(rank)*0x100 }

// SplitStream is the fake cudaStream_t rank passes to NCCLSplitCall on
// the communicator of split i: Stream(rank) + (i+1)*0x40.
func (c *NCCLComm) SplitStream(i, rank int) uint64 { return c.Stream(rank) + uint64(i+1)*0x40 }

// Iterations is how many times rank runs Ops.
func (c *NCCLComm) Iterations(rank int) int {
	if rank == c.LaggingRank {
		return NCCLStopAfter
	}
	return NCCLIterations
}

// Calls is every call of the op lists rank makes, in order: Ops,
// Iterations(rank) times (NCCLSplitCall, on the split communicator, not
// included).
func (c *NCCLComm) Calls(rank int) []NCCLCall {
	var out []NCCLCall
	for range c.Iterations(rank) {
		out = append(out, c.Ops...)
	}
	return out
}

// NCCLSplit is one ncclCommSplit of a communicator's ranks: the color
// and key each rank passes (NCCLNone for NCCL_SPLIT_NOCOLOR).
type NCCLSplit struct {
	Color, Key func(rank int) int
}

// Split is what split i gives rank: its color, and its rank and the size
// of its new communicator, as NCCL orders a split (the ranks of one
// color, by key, ties by parent rank); subRank and subSize are NCCLNone
// for NCCL_SPLIT_NOCOLOR (-1).
func (c *NCCLComm) Split(i, rank int) (color, subRank, subSize int) {
	sp := c.Splits[i]
	color = sp.Color(rank)
	if color == NCCLNone {
		return color, NCCLNone, NCCLNone
	}
	var members []int
	for r := range c.NRanks {
		if sp.Color(r) == color {
			members = append(members, r)
		}
	}
	slices.SortStableFunc(members, func(a, b int) int {
		return cmp.Or(cmp.Compare(sp.Key(a), sp.Key(b)), cmp.Compare(a, b))
	})
	return color, slices.Index(members, rank), len(members)
}

// NCCLCommA is communicator "A": 4 ranks made with ncclCommInitRank;
// rank NCCLLaggingRank stops early. Its ranks then split it twice, as a
// job makes its tensor- and data-parallel groups: with color rank%2 and
// key rank, then with color rank/2 (rank 3 NCCL_SPLIT_NOCOLOR) and key
// -rank. Rank 0 is then in two communicators of color 0 of one parent,
// rank 1 of 2 in its second, as rank 2 is in its first.
var NCCLCommA = NCCLComm{
	Name: "A", NRanks: 4, Init: "ncclCommInitRank", LaggingRank: NCCLLaggingRank, FinalizeRank: NCCLNone,
	Splits: []NCCLSplit{
		{Color: func(rank int) int { return rank % 2 }, Key: func(rank int) int { return rank }},
		{Color: func(rank int) int { return []int{0, 0, 1, NCCLNone}[rank] }, Key: func(rank int) int { return -rank }},
	},
	StreamBase: HandleBase + 0x80*handleStep,
	Ops: []NCCLCall{
		ncclReduction("ncclAllReduce", 1000, NCCLFloat32, NCCLSum),
		ncclAll("ncclAllGather", 250, NCCLBfloat16),
		ncclReduction("ncclReduceScatter", 100, NCCLFloat16, NCCLMax),
		ncclRooted("ncclBroadcast", 64, NCCLInt8, 0),
		ncclGroup("ncclGroupStart"),
		ncclP2P("ncclSend", 10, NCCLInt32, +1),
		ncclP2P("ncclRecv", 10, NCCLInt32, -1),
		ncclGroup("ncclGroupEnd"),
		ncclReduction("ncclAllReduceConfig", 8, NCCLFloat64, NCCLSum),
	},
}

// NCCLCommB is communicator "B": 2 ranks made with
// ncclCommInitRankConfig; rank 0 ends its handle with ncclCommFinalize
// before ncclCommDestroy.
var NCCLCommB = NCCLComm{
	Name: "B", NRanks: 2, Init: "ncclCommInitRankConfig", LaggingRank: NCCLNone, FinalizeRank: 0,
	StreamBase: HandleBase + 0x90*handleStep,
	Ops: []NCCLCall{
		ncclReduceTo("ncclReduce", 512, NCCLFloat64, NCCLMin, 1),
		ncclAll("ncclAlltoAll", 32, NCCLUint8),
		ncclRooted("ncclGather", 16, NCCLInt64, 0),
		ncclRooted("ncclScatter", 16, NCCLUint64, 0),
		ncclRooted("ncclBcast", 7, NCCLUint32, 1),
		ncclAll("ncclAllGatherConfig", 3, NCCLFloat8e4m3),
	},
}

// NCCLComms are the nccl program's communicators, in the order its
// threads are started.
var NCCLComms = []*NCCLComm{&NCCLCommA, &NCCLCommB}

// NCCLSplitCall is the call each rank makes once on each communicator
// its splits give it.
var NCCLSplitCall = ncclReduction("ncclAllReduce", NCCLSplitCount, NCCLFloat32, NCCLSum)

// NCCLLoopCall is the call each thread of "nccl loop" makes, on its
// communicator of one rank and NCCLLoopStream.
var NCCLLoopCall = ncclReduction("ncclAllReduce", 1<<20, NCCLFloat32, NCCLSum)

// NCCLLoopStream is the fake cudaStream_t of "nccl loop".
const NCCLLoopStream = HandleBase + 0xa0*handleStep

// NCCLFunction is one function the stub exports, with nccl.h's
// parameter list. It also exports "p"+Name, the same code (an alias at
// the same address, as NCCL's PROFAPI build does): a tracer must probe
// one of the two only, or count each call twice.
type NCCLFunction struct {
	Name   string
	Params string // C, as nccl.h declares them
}

const (
	ncclReduceParams     = "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream"
	ncclBroadcastParams  = "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream"
	ncclAllReduceParams  = "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream"
	ncclRSParams         = "const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream"
	ncclAllGatherParams  = "const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream"
	ncclAlltoAllParams   = "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream"
	ncclRootedParams     = "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream"
	ncclCollConfigSuffix = ", const ncclCollConfig_t* config"
)

// NCCLFunctions are the functions the stub exports (each also as its
// pnccl alias). The *Config collectives are NCCL 2.31's: a collective's
// arguments then a const ncclCollConfig_t* (the nccl program passes one
// made with NCCL_COLLCONFIG_INITIALIZER, on the stack: the 8th or 9th
// argument).
var NCCLFunctions = []NCCLFunction{
	{"ncclGetUniqueId", "ncclUniqueId* uniqueId"},
	{"ncclCommInitRank", "ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank"},
	{"ncclCommInitRankConfig", "ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config"},
	{"ncclCommInitRankScalable", "ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds, ncclConfig_t* config"},
	{"ncclCommInitAll", "ncclComm_t* comm, int ndev, const int* devlist"},
	{"ncclCommSplit", "ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config"},
	{"ncclCommFinalize", "ncclComm_t comm"},
	{"ncclCommDestroy", "ncclComm_t comm"},
	{"ncclCommAbort", "ncclComm_t comm"},
	{"ncclCommCount", "const ncclComm_t comm, int* count"},
	{"ncclCommUserRank", "const ncclComm_t comm, int* rank"},
	{"ncclCommCuDevice", "const ncclComm_t comm, int* device"},
	{"ncclReduce", ncclReduceParams},
	{"ncclBcast", "void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream"},
	{"ncclBroadcast", ncclBroadcastParams},
	{"ncclAllReduce", ncclAllReduceParams},
	{"ncclReduceScatter", ncclRSParams},
	{"ncclAllGather", ncclAllGatherParams},
	{"ncclAlltoAll", ncclAlltoAllParams},
	{"ncclGather", ncclRootedParams},
	{"ncclScatter", ncclRootedParams},
	{"ncclSend", "const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream"},
	{"ncclRecv", "void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream"},
	{"ncclAllReduceConfig", ncclAllReduceParams + ncclCollConfigSuffix},
	{"ncclReduceScatterConfig", ncclRSParams + ncclCollConfigSuffix},
	{"ncclBroadcastConfig", ncclBroadcastParams + ncclCollConfigSuffix},
	{"ncclReduceConfig", ncclReduceParams + ncclCollConfigSuffix},
	{"ncclAllGatherConfig", ncclAllGatherParams + ncclCollConfigSuffix},
	{"ncclAlltoAllConfig", ncclAlltoAllParams + ncclCollConfigSuffix},
	{"ncclGatherConfig", ncclRootedParams + ncclCollConfigSuffix},
	{"ncclScatterConfig", ncclRootedParams + ncclCollConfigSuffix},
	{"ncclGroupStart", "void"},
	{"ncclGroupEnd", "void"},
}

// NCCLCommLine is a COMM line: a rank's communicator after its init.
type NCCLCommLine struct {
	Name         string // the NCCLComm's
	Rank, NRanks int
	Tid          int    // the rank's thread
	Comm         uint64 // the ncclComm_t
	Hash         uint64 // NCCL's commHash of it
}

// NCCLSplitLine is a SPLIT line: what split Index of the communicator
// called Name gave its rank ParentRank, with ncclCommCount and
// ncclCommUserRank (-1 for NCCL_SPLIT_NOCOLOR).
type NCCLSplitLine struct {
	Name              string
	Index             int
	ParentRank, Color int
	Rank, NRanks      int    // in the new communicator
	Comm              uint64 // the new ncclComm_t (0 for NCCL_SPLIT_NOCOLOR)
	Hash              uint64 // NCCL's commHash of it (0 for NCCL_SPLIT_NOCOLOR)
}

// NCCLCallLine is a CALL line of the stub's echo (CUDAPROG_NCCL_ECHO=1).
type NCCLCallLine struct {
	Tid      int
	API      string
	Comm     uint64
	Count    uint64
	DataType NCCLDataType
	Op       NCCLRedOp
	Root     int
	Peer     int
	Stream   uint64
}

// NCCLLines are the nccl program's parsed lines.
type NCCLLines struct {
	UIDs   map[string][NCCLUniqueIDBytes]byte // communicator name -> its ncclUniqueId
	Comms  []NCCLCommLine                     // in printed order
	Splits []NCCLSplitLine                    // in printed order
	Calls  []NCCLCallLine                     // in printed order (echo only)
	Issued bool                               // an ISSUED line was printed
	Done   bool                               // a DONE line was printed
}

// Comm returns the COMM line of rank of the communicator called name.
func (l *NCCLLines) Comm(name string, rank int) (NCCLCommLine, bool) {
	for _, c := range l.Comms {
		if c.Name == name && c.Rank == rank {
			return c, true
		}
	}
	return NCCLCommLine{}, false
}

// Split returns the SPLIT line of split i of rank of the communicator
// called name.
func (l *NCCLLines) Split(name string, i, rank int) (NCCLSplitLine, bool) {
	for _, s := range l.Splits {
		if s.Name == name && s.Index == i && s.ParentRank == rank {
			return s, true
		}
	}
	return NCCLSplitLine{}, false
}

// NCCLUniqueIDMagic is bytes 0-7 of an ncclUniqueId, little endian: the
// random magic ncclGetUniqueId puts there (NCCL's bootstrap handle; its
// bytes 8-35 are a socket address, the rest zero).
func NCCLUniqueIDMagic(id [NCCLUniqueIDBytes]byte) uint64 {
	var m uint64
	for i := range 8 {
		m |= uint64(id[i]) << (8 * i)
	}
	return m
}

// ReadNCCLLines parses the nccl program's UID, COMM, SPLIT, CALL, ISSUED
// and DONE lines, ignoring the others; a malformed one is an error.
func ReadNCCLLines(lines []string) (NCCLLines, error) {
	out := NCCLLines{UIDs: map[string][NCCLUniqueIDBytes]byte{}}
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		r := fieldReader{f: f, i: 1}
		switch f[0] {
		case "UID":
			r.want(3)
			name, id := r.str(), r.uid()
			if r.err == nil {
				out.UIDs[name] = id
			}
		case "COMM":
			r.want(7)
			out.Comms = append(out.Comms, NCCLCommLine{Name: r.str(), Rank: r.int(), NRanks: r.int(), Tid: r.int(), Comm: r.ptr(),
				Hash: r.ptr()})
		case "SPLIT":
			r.want(9)
			out.Splits = append(out.Splits, NCCLSplitLine{Name: r.str(), Index: r.int(), ParentRank: r.int(), Color: r.int(),
				Rank: r.int(), NRanks: r.int(), Comm: r.ptr(), Hash: r.ptr()})
		case "CALL":
			r.want(10)
			out.Calls = append(out.Calls, NCCLCallLine{Tid: r.int(), API: r.str(), Comm: r.ptr(), Count: r.uint(),
				DataType: NCCLDataType(r.int()), Op: NCCLRedOp(r.int()), Root: r.int(), Peer: r.int(), Stream: r.ptr()})
		case "ISSUED":
			out.Issued = true
		case "DONE":
			out.Done = true
		}
		if r.err != nil {
			return out, fmt.Errorf("cudaprog: bad line %q: %v", line, r.err)
		}
	}
	return out, nil
}

// fieldReader reads a line's fields in turn, keeping the first error.
type fieldReader struct {
	f   []string
	i   int
	err error
}

func (r *fieldReader) want(n int) {
	if len(r.f) != n {
		r.err = fmt.Errorf("%d fields, want %d", len(r.f), n)
	}
}

func (r *fieldReader) str() string {
	if r.err != nil || r.i >= len(r.f) {
		return ""
	}
	r.i++
	return r.f[r.i-1]
}

func (r *fieldReader) int() int {
	s := r.str()
	if r.err != nil {
		return 0
	}
	v, err := strconv.Atoi(s)
	r.err = err
	return v
}

func (r *fieldReader) uint() uint64 {
	s := r.str()
	if r.err != nil {
		return 0
	}
	v, err := strconv.ParseUint(s, 10, 64)
	r.err = err
	return v
}

func (r *fieldReader) ptr() uint64 {
	s := r.str()
	if r.err != nil {
		return 0
	}
	h, ok := strings.CutPrefix(s, "0x")
	if !ok {
		r.err = fmt.Errorf("%q is not 0x<hex>", s)
		return 0
	}
	v, err := strconv.ParseUint(h, 16, 64)
	r.err = err
	return v
}

func (r *fieldReader) uid() [NCCLUniqueIDBytes]byte {
	var id [NCCLUniqueIDBytes]byte
	s := r.str()
	if r.err != nil {
		return id
	}
	b, err := hex.DecodeString(s)
	if err == nil && len(b) != len(id) {
		err = fmt.Errorf("an id of %d bytes, want %d", len(b), len(id))
	}
	r.err = err
	copy(id[:], b)
	return id
}

// writeNCCLHeaders writes the generated nccl.h and nccl_scenario.h into
// the build directory dir.
func writeNCCLHeaders(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "nccl.h"), []byte(ncclHeader()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "nccl_scenario.h"), []byte(ncclScenarioHeader()), 0o644)
}

// NCCLHeader is the nccl.h the stub and the program include (ncclHeader),
// for other tests that compile callers of NCCL's functions.
func NCCLHeader() string { return ncclHeader() }

// ncclHeader renders the nccl.h the stub and the program include: the
// part of NCCL's nccl.h (NCCL 2.31) they use, with its types, enums and
// struct layouts as NCCL declares them, and the prototypes from
// NCCLFunctions.
func ncclHeader() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("/* Code generated by cudaprog (nccl.go); DO NOT EDIT. */\n")
	p("/* The part of NCCL's nccl.h (NCCL %d.%d.%d) the cudaprog NCCL stub and program use. */\n",
		NCCLVersionCode/10000, NCCLVersionCode/100%100, NCCLVersionCode%100)
	p("#ifndef NCCL_H_\n#define NCCL_H_\n\n#include <limits.h>\n#include <stddef.h>\n#include <stdint.h>\n\n")
	p("#define NCCL_VERSION_CODE %d\n\n", NCCLVersionCode)
	p("typedef struct CUstream_st *cudaStream_t; /* as cuda_runtime_api.h has it; no CUDA headers here */\n\n")
	p("typedef struct ncclComm *ncclComm_t;\n#define NCCL_COMM_NULL NULL\n\n")
	p("#define NCCL_UNIQUE_ID_BYTES %d\n", NCCLUniqueIDBytes)
	p("typedef struct { char internal[NCCL_UNIQUE_ID_BYTES]; } ncclUniqueId;\n\n")
	p(`typedef enum {
	ncclSuccess = %d,
	ncclUnhandledCudaError = 1,
	ncclSystemError = 2,
	ncclInternalError = 3,
	ncclInvalidArgument = %d,
	ncclInvalidUsage = %d,
	ncclRemoteError = 6,
	ncclInProgress = 7,
	ncclTimeout = 8,
	ncclNumResults = 9
} ncclResult_t;

#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR %d
#define NCCL_API_MAGIC 0x%xu

`, NCCLSuccess, NCCLInvalidArgument, NCCLInvalidUsage, NCCLNone, NCCLConfigMagic)
	p(`typedef struct ncclConfig_v23100 {
	size_t size;
	unsigned int magic;
	unsigned int version;
	int blocking;
	int cgaClusterSize;
	int minCTAs;
	int maxCTAs;
	const char *netName;
	int splitShare;
	int trafficClass;
	const char *commName;
	int collnetEnable;
	int CTAPolicy;
	int shrinkShare;
	int nvlsCTAs;
	int nChannelsPerNetPeer;
	int nvlinkCentricSched;
	int graphUsageMode;
	int numRmaCtx;
	int maxP2pPeers;
	int graphStreamOrdering;
	int launchOrderImplicit;
	int numRmaSig;
	int rmaEagerInit;
	int hostCftMode;
	int nvlsHostMode;
} ncclConfig_t;

#define NCCL_CONFIG_INITIALIZER {                                                          \
	sizeof(ncclConfig_t), NCCL_API_MAGIC, NCCL_VERSION_CODE, NCCL_CONFIG_UNDEF_INT,     \
	NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                \
	NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                \
	NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                \
	NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                \
	NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                \
	NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                \
	NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                \
	NCCL_CONFIG_UNDEF_INT}

typedef struct ncclConfigExt {
	struct ncclConfigExt *next;
	struct {
		int vendorId;
		int optionId;
	} key;
	union {
		int i;
		const char *s;
		void *raw;
	} val;
} ncclConfigExt_t;

typedef struct ncclCollConfig_v23100 {
	size_t size;
	unsigned int magic;
	unsigned int version;
	ncclConfigExt_t *ext;
	int minCTAs;
	int maxCTAs;
	int nvlsCTAs;
	int cgaClusterSize;
	const char *algSelection;
	int forceAlgSelection;
	int CTAPolicy;
	uint64_t userProfilerTag;
} ncclCollConfig_t;

#define NCCL_COLLCONFIG_INITIALIZER {                                                      \
	sizeof(ncclCollConfig_t), NCCL_API_MAGIC, NCCL_VERSION_CODE, NCCL_CONFIG_UNDEF_PTR, \
	NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                \
	NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, 1, NCCL_CONFIG_UNDEF_INT, 0}

`)
	p("typedef enum {\n")
	for op := range NCCLNumOps {
		p("\t%s = %d,\n", op, int(op))
	}
	p("\tncclNumOps = %d,\n\tncclMaxRedOp = 0x7fffffff\n} ncclRedOp_t;\n\n", int(NCCLNumOps))
	p("typedef enum {\n")
	for t := range NCCLNumTypes {
		p("\t%s = %d,\n", t, int(t))
	}
	p("\tncclChar = %s, ncclInt = %s, ncclHalf = %s, ncclFloat = %s, ncclDouble = %s,\n",
		NCCLInt8, NCCLInt32, NCCLFloat16, NCCLFloat32, NCCLFloat64)
	p("\tncclNumTypes = %d\n} ncclDataType_t;\n\n", int(NCCLNumTypes))
	for _, f := range NCCLFunctions {
		p("ncclResult_t  %s(%s);\nncclResult_t p%s(%s);\n", f.Name, f.Params, f.Name, f.Params)
	}
	p("\n/* Not NCCL's: the stub's commHash of comm, as NCCL computes it. */\n")
	p("uint64_t cudaprogNcclCommHash(ncclComm_t comm);\n")
	p("\n#endif\n")
	return b.String()
}

// ncclScenarioHeader renders the nccl_scenario.h the nccl program
// includes: NCCLComms and NCCLSplitCall as C data.
func ncclScenarioHeader() string {
	var apis []string
	for _, c := range NCCLComms {
		for _, op := range c.Ops {
			apis = append(apis, op.API)
		}
	}
	apis = append(apis, NCCLSplitCall.API, NCCLLoopCall.API)
	slices.Sort(apis)
	apis = slices.Compact(apis)

	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("/* Code generated by cudaprog (nccl.go); DO NOT EDIT. */\n")
	p("#ifndef CUDAPROG_NCCL_SCENARIO_H\n#define CUDAPROG_NCCL_SCENARIO_H\n\n#include \"nccl.h\"\n\n")
	p("#define NCCL_SEND_BUFF 0x%xULL\n#define NCCL_RECV_BUFF 0x%xULL\n", NCCLSendBuff, NCCLRecvBuff)
	p("#define NCCL_CONFIG_MAGIC 0x%xu\n\n", NCCLConfigMagic)
	p("enum nccl_op_api {\n")
	for _, a := range apis {
		p("\tOP_%s,\n", a)
	}
	p("};\n\n")
	p(`struct nccl_op {
	enum nccl_op_api api;
	const char *name;
	unsigned long long count;
	int datatype, op, root, peer_offset;
};

struct nccl_comm_spec {
	const char *name;
	int nranks;
	int use_config;                     /* ncclCommInitRankConfig, not ncclCommInitRank */
	const int *iterations;              /* per rank */
	const unsigned long long *streams;  /* per rank */
	int nsplits;
	/* split i of rank r at [i*nranks + r] */
	const int *split_color, *split_key;
	const unsigned long long *split_streams;
	int finalize_rank;                  /* -1: none */
	const struct nccl_op *ops;
	int nops;
};

`)
	lit := func(c NCCLCall) string {
		return fmt.Sprintf("{OP_%s, %q, %dULL, %d, %d, %d, %d}", c.API, c.API, c.Count, c.DataType, c.Op, c.Root, c.PeerOffset)
	}
	ints := func(n int, f func(int) int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = strconv.Itoa(f(i))
		}
		return strings.Join(s, ", ")
	}
	for ci, c := range NCCLComms {
		p("static const struct nccl_op nccl_comm%d_ops[] = {\n", ci)
		for _, op := range c.Ops {
			p("\t%s,\n", lit(op))
		}
		p("};\n")
		p("static const int nccl_comm%d_iterations[] = {%s};\n", ci, ints(c.NRanks, c.Iterations))
		p("static const unsigned long long nccl_comm%d_streams[] = {", ci)
		for r := range c.NRanks {
			p("0x%xULL, ", c.Stream(r))
		}
		p("};\n")
		if len(c.Splits) > 0 {
			var colors, keys, streams []string
			for i, sp := range c.Splits {
				colors = append(colors, ints(c.NRanks, sp.Color))
				keys = append(keys, ints(c.NRanks, sp.Key))
				for r := range c.NRanks {
					streams = append(streams, fmt.Sprintf("0x%xULL", c.SplitStream(i, r)))
				}
			}
			p("static const int nccl_comm%d_split_color[] = {%s};\n", ci, strings.Join(colors, ", "))
			p("static const int nccl_comm%d_split_key[] = {%s};\n", ci, strings.Join(keys, ", "))
			p("static const unsigned long long nccl_comm%d_split_streams[] = {%s};\n", ci, strings.Join(streams, ", "))
		}
		p("\n")
	}
	p("static const struct nccl_comm_spec nccl_comms[] = {\n")
	for ci, c := range NCCLComms {
		useConfig := 0
		switch c.Init {
		case "ncclCommInitRank":
		case "ncclCommInitRankConfig":
			useConfig = 1
		default:
			panic("cudaprog: NCCLComm " + c.Name + ": unknown Init " + c.Init)
		}
		split := "0, NULL, NULL, NULL"
		if len(c.Splits) > 0 {
			split = fmt.Sprintf("%d, nccl_comm%d_split_color, nccl_comm%d_split_key, nccl_comm%d_split_streams", len(c.Splits), ci, ci, ci)
		}
		p("\t{%q, %d, %d, nccl_comm%d_iterations, nccl_comm%d_streams, %s, %d, nccl_comm%d_ops, %d},\n",
			c.Name, c.NRanks, useConfig, ci, ci, split, c.FinalizeRank, ci, len(c.Ops))
	}
	p("};\n#define NCCL_NCOMMS %d\n\n", len(NCCLComms))
	p("static const struct nccl_op nccl_split_op = %s;\n", lit(NCCLSplitCall))
	p("static const struct nccl_op nccl_loop_op = %s;\n", lit(NCCLLoopCall))
	p("#define NCCL_LOOP_STREAM 0x%xULL\n", NCCLLoopStream)
	p("#define NCCL_SINGLE_COUNT %d\n\n#endif\n", NCCLSingleCount)
	return b.String()
}
