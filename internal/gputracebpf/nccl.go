package gputracebpf

import "strings"

// What NCCL's records mean: nccl.h's enums, and the bytes each call sends
// and receives. Pure functions of the records, apart from the probes.

// Collective is what an NCCL call does, whatever its form (ncclBcast and
// ncclBroadcast, the *Config forms).
type Collective uint8

// The collectives and point-to-point calls.
const (
	NoCollective Collective = iota
	AllReduce
	Broadcast
	Reduce
	AllGather
	ReduceScatter
	AlltoAll
	Gather
	Scatter
	Send
	Recv
)

var collectiveNames = [...]string{"", "AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter",
	"AlltoAll", "Gather", "Scatter", "Send", "Recv"}

// String is the collective's name as NCCL spells it after "nccl".
func (c Collective) String() string {
	if int(c) < len(collectiveNames) && c != NoCollective {
		return collectiveNames[c]
	}
	return "collective(?)"
}

// PointToPoint reports whether c is a send or a receive: a rank's own
// business with one peer, not a step every rank of the communicator takes.
func (c Collective) PointToPoint() bool { return c == Send || c == Recv }

var collectiveOf [1 << 16]Collective

func init() {
	for _, p := range Probes {
		if p.Library != NCCL {
			continue
		}
		name := strings.TrimSuffix(strings.TrimPrefix(p.Symbol, "nccl"), "Config")
		if name == "Bcast" {
			name = "Broadcast"
		}
		for c := AllReduce; c <= Recv; c++ {
			if c.String() == name {
				collectiveOf[p.API] = c
			}
		}
	}
}

// Collective is the collective an NCCL call of a makes; NoCollective for
// the other calls.
func (a API) Collective() Collective { return collectiveOf[a] }

// The NCCL calls user space tells apart by their API: a group's start and
// end, and the two queries of a communicator.
const (
	APINCCLGroupStart   = API(gputraceApiAPI_ncclGroupStart)
	APINCCLGroupEnd     = API(gputraceApiAPI_ncclGroupEnd)
	APINCCLCommSplit    = API(gputraceApiAPI_ncclCommSplit)
	APINCCLCommInitAll  = API(gputraceApiAPI_ncclCommInitAll)
	APINCCLCommCount    = API(gputraceApiAPI_ncclCommCount)
	APINCCLCommUserRank = API(gputraceApiAPI_ncclCommUserRank)
)

// DataType is an ncclDataType_t.
type DataType uint32

// ncclDataType_t's values (nccl.h: ncclInt8 = 0 … ncclFloat8e5m2 = 11;
// ncclChar, ncclInt, ncclHalf, ncclFloat and ncclDouble are aliases).
var dataTypes = [...]struct {
	name string
	size uint64
}{
	{"int8", 1}, {"uint8", 1}, {"int32", 4}, {"uint32", 4}, {"int64", 8}, {"uint64", 8},
	{"float16", 2}, {"float32", 4}, {"float64", 8}, {"bfloat16", 2}, {"float8e4m3", 1}, {"float8e5m2", 1},
}

// Size is the bytes of one element of t; 0 for a value nccl.h does not
// define.
func (t DataType) Size() uint64 {
	if int(t) < len(dataTypes) {
		return dataTypes[t].size
	}
	return 0
}

// String is t's name, nccl.h's without "nccl" and in lower case, or ""
// for a value nccl.h does not define.
func (t DataType) String() string {
	if int(t) < len(dataTypes) {
		return dataTypes[t].name
	}
	return ""
}

// NCCLCall is a KindNCCLColl record's arguments. Root is the root of a
// rooted collective, Peer the peer of a send or receive, Op the reduction
// of a reducing one; -1 where the call has none.
type NCCLCall struct {
	Collective   Collective
	Count        uint64
	Type         DataType
	Op           int32
	Root, Peer   int32
	Comm, Stream uint64
}

// NCCLCall decodes a KindNCCLColl record.
func (e *Event) NCCLCall() NCCLCall {
	c := NCCLCall{Collective: e.API.Collective(), Count: e.A[0], Type: DataType(e.A[1]),
		Op: int32(e.A[2]), Root: -1, Peer: -1, Comm: e.A[4], Stream: e.A[5]}
	if e.A[2] == ^uint64(0) {
		c.Op = -1
	}
	if e.A[3] != ^uint64(0) {
		if c.Collective.PointToPoint() {
			c.Peer = int32(e.A[3])
		} else {
			c.Root = int32(e.A[3])
		}
	}
	return c
}

// Bytes are what rank rank of a communicator of nranks sends and
// receives in c, as nccl.h defines each call's buffers: AllGather
// receives nranks × sendcount, ReduceScatter sends nranks × recvcount,
// AlltoAll both; Broadcast sends from the root only, Reduce receives
// there only, Gather receives nranks × count there, Scatter sends
// nranks × count from there. ok is false when the figures need the rank
// or the size and they are not known (negative), or the data type is not
// nccl.h's.
func (c NCCLCall) Bytes(rank, nranks int32) (send, recv uint64, ok bool) {
	if c.Type.Size() == 0 {
		return 0, 0, false
	}
	b := c.Count * c.Type.Size()
	n := uint64(max(nranks, 0))
	root := rank >= 0 && rank == c.Root
	needRank := rank < 0
	switch c.Collective {
	case AllReduce:
		return b, b, true
	case Send:
		return b, 0, true
	case Recv:
		return 0, b, true
	case AllGather:
		return b, n * b, nranks > 0
	case ReduceScatter:
		return n * b, b, nranks > 0
	case AlltoAll:
		return n * b, n * b, nranks > 0
	case Broadcast:
		if root {
			return b, b, true
		}
		return 0, b, !needRank
	case Reduce:
		if root {
			return b, b, true
		}
		return b, 0, !needRank
	case Gather:
		if root {
			return b, n * b, nranks > 0
		}
		return b, 0, !needRank
	case Scatter:
		if root {
			return n * b, b, nranks > 0
		}
		return 0, b, !needRank
	}
	return 0, 0, false
}

// NCCLCommMade is a KindNCCLComm record: the communicator a call made,
// with its rank and size where the call said them (-1 where not: a
// split's are learned from ncclCommCount and ncclCommUserRank).
func (e *Event) NCCLCommMade() (comm uint64, rank, nranks int32) {
	if e.A[0] == ^uint64(0) {
		return e.A[1], -1, -1
	}
	return e.A[1], int32(e.A[0] >> 32), int32(e.A[0])
}

// NCCLUniqueID is a KindNCCLCommID record of an init's: the first 48
// bytes of the ncclUniqueId the communicator is made from, the same in
// every rank (NCCL's holds a random magic and the root's address there).
func (e *Event) NCCLUniqueID() [48]byte {
	var id [48]byte
	for i, a := range e.A {
		for j := range 8 {
			id[8*i+j] = byte(a >> (8 * j))
		}
	}
	return id
}

// NCCLSplit is a KindNCCLCommID record of ncclCommSplit's: the parent
// communicator, the color and the key.
func (e *Event) NCCLSplit() (parent uint64, color, key int32) {
	return e.A[0], int32(e.A[1]), int32(e.A[2])
}

// NCCLCommQuery is a KindNCCLCommQuery record: the communicator asked
// about and the value (its size for ncclCommCount, its rank for
// ncclCommUserRank).
func (e *Event) NCCLCommQuery() (comm uint64, value int32) { return e.A[0], int32(e.A[1]) }

// NCCLComm is the communicator a KindNCCLCommEnd record ends.
func (e *Event) NCCLComm() uint64 { return e.A[0] }
