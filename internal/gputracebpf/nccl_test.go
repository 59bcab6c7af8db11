package gputracebpf

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The values of ncclDataType_t and their sizes, as nccl.h (NCCL 2.27)
// defines them, written out here rather than derived from the table under
// test.
func TestNCCLDataTypes(t *testing.T) {
	want := []struct {
		v    DataType
		name string
		size uint64
	}{
		{0, "int8", 1}, {1, "uint8", 1}, {2, "int32", 4}, {3, "uint32", 4}, {4, "int64", 8}, {5, "uint64", 8},
		{6, "float16", 2}, {7, "float32", 4}, {8, "float64", 8}, {9, "bfloat16", 2}, {10, "float8e4m3", 1},
		{11, "float8e5m2", 1},
	}
	for _, w := range want {
		assert.Equal(t, w.name, w.v.String(), "ncclDataType_t %d", w.v)
		assert.Equal(t, w.size, w.v.Size(), "ncclDataType_t %d", w.v)
	}
	assert.Equal(t, "", DataType(12).String(), "ncclNumTypes is not a type")
	assert.Zero(t, DataType(12).Size())
}

func TestNCCLCollectiveOf(t *testing.T) {
	for sym, want := range map[string]Collective{
		"ncclAllReduce": AllReduce, "ncclAllReduceConfig": AllReduce, "ncclBcast": Broadcast,
		"ncclBroadcast": Broadcast, "ncclReduce": Reduce, "ncclReduceScatterConfig": ReduceScatter,
		"ncclAlltoAll": AlltoAll, "ncclSend": Send, "ncclRecv": Recv, "ncclGroupEnd": NoCollective,
		"ncclCommInitRank": NoCollective, "cudaLaunchKernel": NoCollective,
	} {
		var api API
		for _, p := range Probes {
			if p.Symbol == sym {
				api = p.API
			}
		}
		assert.NotZero(t, api, sym)
		assert.Equal(t, want, api.Collective(), sym)
	}
}

func TestNCCLBytes(t *testing.T) {
	const f32 = DataType(7)
	call := func(c Collective, root int32) NCCLCall {
		return NCCLCall{Collective: c, Count: 100, Type: f32, Op: -1, Root: root, Peer: -1}
	}
	for _, tc := range []struct {
		name         string
		call         NCCLCall
		rank, nranks int32
		send, recv   uint64
		ok           bool
	}{
		{"allreduce", call(AllReduce, -1), 1, 4, 400, 400, true},
		{"allreduce, rank unknown", call(AllReduce, -1), -1, -1, 400, 400, true},
		{"allgather receives nranks × sendcount", call(AllGather, -1), 0, 4, 400, 1600, true},
		{"reducescatter sends nranks × recvcount", call(ReduceScatter, -1), 2, 8, 3200, 400, true},
		{"alltoall", call(AlltoAll, -1), 0, 2, 800, 800, true},
		{"allgather, size unknown", call(AllGather, -1), 0, -1, 0, 0, false},
		{"broadcast root", call(Broadcast, 1), 1, 4, 400, 400, true},
		{"broadcast non-root", call(Broadcast, 1), 0, 4, 0, 400, true},
		{"broadcast, rank unknown", call(Broadcast, 1), -1, 4, 0, 0, false},
		{"reduce root", call(Reduce, 0), 0, 4, 400, 400, true},
		{"reduce non-root", call(Reduce, 0), 3, 4, 400, 0, true},
		{"gather root", call(Gather, 0), 0, 3, 400, 1200, true},
		{"gather non-root", call(Gather, 0), 2, 3, 400, 0, true},
		{"scatter root", call(Scatter, 2), 2, 3, 1200, 400, true},
		{"scatter non-root", call(Scatter, 2), 1, 3, 0, 400, true},
		{"send", NCCLCall{Collective: Send, Count: 10, Type: 2, Peer: 1}, 0, 2, 40, 0, true},
		{"recv", NCCLCall{Collective: Recv, Count: 10, Type: 2, Peer: 1}, 0, 2, 0, 40, true},
		{"a type nccl.h does not define", NCCLCall{Collective: AllReduce, Count: 10, Type: 99}, 0, 2, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			send, recv, ok := tc.call.Bytes(tc.rank, tc.nranks)
			assert.Equal(t, tc.ok, ok)
			if tc.ok {
				assert.Equal(t, tc.send, send, "sent")
				assert.Equal(t, tc.recv, recv, "received")
			}
		})
	}
}

func TestNCCLDecode(t *testing.T) {
	api := func(sym string) API {
		for _, p := range Probes {
			if p.Symbol == sym {
				return p.API
			}
		}
		t.Fatal(sym)
		return 0
	}
	none := ^uint64(0)
	e := Event{Kind: KindNCCLColl, API: api("ncclReduce"), A: [6]uint64{512, 8, 3, 1, 0xc0, 0x50}}
	assert.Equal(t, NCCLCall{Collective: Reduce, Count: 512, Type: 8, Op: 3, Root: 1, Peer: -1, Comm: 0xc0, Stream: 0x50}, e.NCCLCall())
	e = Event{Kind: KindNCCLColl, API: api("ncclSend"), A: [6]uint64{10, 2, none, 3, 0xc0, 0x50}}
	assert.Equal(t, NCCLCall{Collective: Send, Count: 10, Type: 2, Op: -1, Root: -1, Peer: 3, Comm: 0xc0, Stream: 0x50}, e.NCCLCall())
	e = Event{Kind: KindNCCLColl, API: api("ncclAllGather"), A: [6]uint64{250, 9, none, none, 0xc0, 0x50}}
	assert.Equal(t, NCCLCall{Collective: AllGather, Count: 250, Type: 9, Op: -1, Root: -1, Peer: -1, Comm: 0xc0, Stream: 0x50}, e.NCCLCall())

	e = Event{Kind: KindNCCLComm, A: [6]uint64{4 | 3<<32, 0xabc}}
	c, rank, size := e.NCCLCommMade()
	assert.Equal(t, []any{uint64(0xabc), int32(3), int32(4)}, []any{c, rank, size})
	e = Event{Kind: KindNCCLComm, A: [6]uint64{none, 0xdef}}
	c, rank, size = e.NCCLCommMade()
	assert.Equal(t, []any{uint64(0xdef), int32(-1), int32(-1)}, []any{c, rank, size}, "a split's")

	e = Event{Kind: KindNCCLCommID, A: [6]uint64{0x0807060504030201}}
	id := e.NCCLUniqueID()
	assert.Equal(t, []byte{1, 2, 3, 4, 5, 6, 7, 8, 0}, id[:9], "the id's bytes in memory order")
	e = Event{Kind: KindNCCLCommQuery, A: [6]uint64{0xc0, 0xdeadbeef_00000004}}
	c, v := e.NCCLCommQuery()
	assert.Equal(t, []any{uint64(0xc0), int32(4)}, []any{c, v}, "the int, not the bytes after it")
	assert.False(t, (&Event{Kind: KindNCCLComm}).IsCall(), "a return of a call counted at entry")
	assert.True(t, (&Event{Kind: KindNCCLCommID}).IsCall())
}
