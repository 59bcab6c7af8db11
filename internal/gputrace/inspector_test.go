package gputrace

// The NCCL Inspector's textfiles joined to the series of a process's
// ranks, on synthetic events and samples; inspector_kernel_test.go runs
// the real probes and files.

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/gputracebpf"
	"github.com/xpuscope/xpuscope/internal/ncclinspector"
	"github.com/xpuscope/xpuscope/semconv"
)

// TestNCCLInspectorPromJoin: NCCL 2.29's samples join a communicator the
// process made and a rank it has in it; NCCL 2.30's, which name only the
// size, join the process's one live communicator of that size where it
// has one rank of it, and nothing where it has several ranks of one or
// several communicators of that size. A textfile rewritten replaces what
// it said; one removed takes its series with it; a communicator that ends
// takes its own.
func TestNCCLInspectorPromJoin(t *testing.T) {
	h := newHarness(t)
	idA := [48]byte{0xa}
	idC := [48]byte{0xc}
	hashA, hashC := NCCLCommHash(idA), NCCLCommHash(idC)
	commA, commC := fmt.Sprintf("%#x", hashA), fmt.Sprintf("%#x", hashC)
	var b ncclEvents
	// Ranks 1 and 3 of A (4 ranks), rank 0 of C (2 ranks), and a split
	// whose size the process never asked for.
	b.init(1, idA, 1, 4, 0xa1).init(2, idA, 3, 4, 0xa3).init(3, idC, 0, 2, 0xc0).
		add(1, gputracebpf.KindNCCLCommID, "ncclCommSplit", 0xa1, 1, 5).
		add(1, gputracebpf.KindNCCLComm, "ncclCommSplit", ncclNone, 0xd1)
	h.feed(b.evs...)
	nan := math.NaN()
	comm := func(hash uint64, rank, nranks int, op string, us float64) ncclinspector.PromSample {
		return ncclinspector.PromSample{Format: ncclinspector.PromComm, CommHash: hash, Rank: rank, NRanks: nranks, Op: op,
			SizeRange: "4-5MB", ExecTime: us / 1e6, BusBW: 2 * us, AlgoBW: us}
	}
	bucket := func(nranks int, op, algo string, us float64) ncclinspector.PromSample {
		return ncclinspector.PromSample{Format: ncclinspector.PromBuckets, Rank: -1, NRanks: nranks, Op: op, Algorithm: algo,
			Protocol: "Simple", SizeRange: "1-2GB", ExecTime: us / 1e6, BusBW: 3 * us, AlgoBW: nan}
	}
	update := func(file uint64, samples ...ncclinspector.PromSample) int {
		h.s.mu.Lock()
		defer h.s.mu.Unlock()
		return h.s.agg.inspectorProm(&promUpdate{pid: 100, file: fileID{1, file}, samples: samples, gone: samples == nil})
	}
	times := func() map[string]float64 {
		out := map[string]float64{}
		for _, p := range h.collect(t).Find(semconv.GPUNCCLInspectorOpTime.Name) {
			out[fmt.Sprintf("%s/%s/%s/%s/%s/%s/%s", p.Get(semconv.GPUNCCLCommID), p.Get(semconv.GPUNCCLRank),
				p.Get(semconv.GPUNCCLCommSize), p.Get(semconv.GPUNCCLCollective), p.Get(semconv.GPUNCCLAlgorithm),
				p.Get(semconv.GPUNCCLProtocol), p.Get(semconv.GPUNCCLMessageSizeRange))] = p.Value
		}
		return out
	}

	unjoined := update(7,
		comm(hashA, 1, 4, "AllReduce", 100),      // joined
		comm(hashA, 2, 4, "AllReduce", 1),        // a rank it does not have
		comm(0xdead, 0, 4, "AllReduce", 1),       // a communicator it did not make
		bucket(2, "AllGather", "Ring", 200),      // C, its one communicator of 2
		bucket(2, "SendRecv", "Ring", 300),       // C, _OTHER
		bucket(2, "AllGatherV", "Ring", 1),       // C, _OTHER again: the first is kept
		bucket(4, "AllReduce", "NVLS", 1),        // two ranks of A: which?
		bucket(8, "AllReduce", semconv.Other, 1), // no communicator of 8
	)
	assert.Equal(t, 4, unjoined)
	want := map[string]float64{
		commA + "/1/4/AllReduce///4-5MB":           100e-6,
		commC + "/0/2/AllGather/Ring/Simple/1-2GB": 200e-6,
		commC + "/0/2/_OTHER/Ring/Simple/1-2GB":    300e-6,
	}
	assert.Equal(t, want, times())
	pts := h.collect(t)
	a1 := pts.One(t, semconv.GPUNCCLInspectorBusBandwidth.Name, semconv.GPUNCCLCommID.String(commA))
	assert.Equal(t, 200.0, a1.Value)
	assert.Equal(t, "100", a1.Get(semconv.ProcessPID))
	assert.Equal(t, 100.0, pts.One(t, semconv.GPUNCCLInspectorAlgoBandwidth.Name, semconv.GPUNCCLCommID.String(commA)).Value)
	assert.Empty(t, pts.Find(semconv.GPUNCCLInspectorAlgoBandwidth.Name, semconv.GPUNCCLCommID.String(commC)),
		"NCCL 2.30 writes no algorithm bandwidth")

	// A second textfile (another GPU of the process), then the first
	// rewritten with less: what it said before goes.
	assert.Zero(t, update(8, comm(hashA, 3, 4, "Broadcast", 50)))
	assert.Zero(t, update(7, comm(hashA, 1, 4, "AllReduce", 70)))
	assert.Equal(t, map[string]float64{
		commA + "/1/4/AllReduce///4-5MB": 70e-6,
		commA + "/3/4/Broadcast///4-5MB": 50e-6,
	}, times())

	// The first removed: its series go.
	assert.Zero(t, update(7))
	assert.Equal(t, map[string]float64{commA + "/3/4/Broadcast///4-5MB": 50e-6}, times())

	// Rank 3's communicator ends: its series go once a collection has
	// reported their last values, the Inspector's among them.
	var end ncclEvents
	end.ts = b.ts
	end.add(2, gputracebpf.KindNCCLCommEnd, "ncclCommDestroy", 0xa3)
	h.feed(end.evs...)
	h.collect(t)
	h.s.agg.forget(func(uint32) bool { return true }, h.now, h.s.collected.Load())
	assert.Empty(t, times())

	// Bounded: past maxInspectorSeries samples of a process, the rest
	// are not joined, and count.
	many := make([]ncclinspector.PromSample, 0, maxInspectorSeries+5)
	for i := range maxInspectorSeries + 5 {
		s := bucket(2, "AllReduce", "Ring", 1)
		s.SizeRange = fmt.Sprintf("%d-%dKB", i+1, i+2)
		many = append(many, s)
	}
	assert.Equal(t, 5, update(9, many...))
	assert.Len(t, times(), maxInspectorSeries)
	require.NotNil(t, h.s.agg.procs[100].nccl)
}

// TestNCCLInspectorPromOther: the fold of processes past the cap keeps no
// NCCL state, and joins nothing.
func TestNCCLInspectorPromOther(t *testing.T) {
	h := newHarness(t)
	assert.Zero(t, h.s.agg.inspectorProm(&promUpdate{pid: 555, file: fileID{1, 1},
		samples: []ncclinspector.PromSample{{Format: ncclinspector.PromBuckets, Rank: -1, NRanks: 1, Op: "AllReduce"}}}))
	assert.Empty(t, h.collect(t).Find(semconv.GPUNCCLInspectorOpTime.Name))
}
