package cudaprog

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNCCLDataTypes holds the tables to nccl.h's ncclDataType_t and
// ncclRedOp_t (NCCL 2.31's src/nccl.h.in), written out here rather than
// derived from the tables: a peer project's test hard-codes a wrong enum.
func TestNCCLDataTypes(t *testing.T) {
	for _, w := range []struct {
		t    NCCLDataType
		name string
		v    int
		size int
	}{
		{NCCLInt8, "ncclInt8", 0, 1}, {NCCLUint8, "ncclUint8", 1, 1}, {NCCLInt32, "ncclInt32", 2, 4},
		{NCCLUint32, "ncclUint32", 3, 4}, {NCCLInt64, "ncclInt64", 4, 8}, {NCCLUint64, "ncclUint64", 5, 8},
		{NCCLFloat16, "ncclFloat16", 6, 2}, {NCCLFloat32, "ncclFloat32", 7, 4}, {NCCLFloat64, "ncclFloat64", 8, 8},
		{NCCLBfloat16, "ncclBfloat16", 9, 2}, {NCCLFloat8e4m3, "ncclFloat8e4m3", 10, 1},
		{NCCLFloat8e5m2, "ncclFloat8e5m2", 11, 1},
	} {
		assert.Equal(t, w.v, int(w.t), w.name)
		assert.Equal(t, w.name, w.t.String())
		assert.Equal(t, w.size, w.t.Size(), w.name)
	}
	assert.Equal(t, 12, int(NCCLNumTypes))
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5}, []int{int(NCCLSum), int(NCCLProd), int(NCCLMax), int(NCCLMin), int(NCCLAvg), int(NCCLNumOps)})
	h := ncclHeader()
	for _, decl := range []string{"ncclFloat8e5m2 = 11,", "ncclHalf = ncclFloat16", "ncclNumTypes = 12", "ncclAvg = 4,",
		"ncclInvalidArgument = 4,", "ncclInProgress = 7,", "ncclTimeout = 8,", "ncclNumResults = 9",
		"#define NCCL_SPLIT_NOCOLOR -1", "#define NCCL_API_MAGIC 0xcafebeefu", "#define NCCL_VERSION_CODE 23100",
		"ncclResult_t  ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);"} {
		assert.Contains(t, h, decl)
	}
}

// TestNCCLStubExports: the stub exports every NCCLFunctions entry as
// NCCL's PROFAPI build does, ncclX weak and pncclX global at the same
// address, and nothing probed twice.
func TestNCCLStubExports(t *testing.T) {
	f, err := elf.Open(Build(t, "libnccl"))
	require.NoError(t, err)
	defer f.Close()
	dyn, err := f.DynamicSymbols()
	require.NoError(t, err)
	sym := map[string]elf.Symbol{}
	for _, s := range dyn {
		if s.Value != 0 && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			sym[s.Name] = s
		}
	}
	for _, fn := range NCCLFunctions {
		s, ok := sym[fn.Name]
		p, pok := sym["p"+fn.Name]
		if assert.True(t, ok, "no %s", fn.Name) && assert.True(t, pok, "no p%s", fn.Name) {
			assert.Equal(t, elf.STB_WEAK, elf.ST_BIND(s.Info), fn.Name)
			assert.Equal(t, elf.STB_GLOBAL, elf.ST_BIND(p.Info), "p"+fn.Name)
			assert.Equal(t, s.Value, p.Value, "%s and p%s at one address", fn.Name, fn.Name)
		}
	}
	soname, err := f.DynString(elf.DT_SONAME)
	require.NoError(t, err)
	assert.Equal(t, []string{"libnccl.so.2"}, soname)
}

// TestNCCLScenario runs the nccl program with the stub's echo and checks
// every line against the tables: the communicators, the split, and each
// rank's calls, with their exact arguments.
func TestNCCLScenario(t *testing.T) {
	cmd := exec.Command(Build(t, "nccl"))
	cmd.Env = append(os.Environ(), "CUDAPROG_NCCL_ECHO=1")
	p := StartCmd(t, cmd)
	p.Go()
	p.WaitLine("ISSUED")
	p.Go()
	got, err := ReadNCCLLines(p.Wait())
	require.NoError(t, err)
	require.True(t, got.Issued)
	require.True(t, got.Done)

	require.Len(t, got.UIDs, len(NCCLComms))
	seen := map[uint64]bool{}
	for _, id := range got.UIDs {
		m := NCCLUniqueIDMagic(id)
		assert.NotZero(t, m, "a random magic")
		assert.False(t, seen[m], "two ids with one magic")
		seen[m] = true
		assert.Equal(t, byte(2), id[8], "AF_INET at byte 8")
		assert.Equal(t, make([]byte, NCCLUniqueIDBytes-40), id[40:], "zero past the bootstrap handle")
	}

	byTid := map[int][]NCCLCallLine{}
	for _, c := range got.Calls {
		byTid[c.Tid] = append(byTid[c.Tid], c)
	}
	// Handles alive together are distinct: the ranks' own, until the
	// end, and the splits', until all are made. (A split's freed handle
	// may come back as a late rank's of B.)
	handles, subHandles := map[uint64]bool{}, map[uint64]bool{}
	commHashes, splitHashes := map[string]uint64{}, map[string]uint64{}
	for _, c := range NCCLComms {
		for r := range c.NRanks {
			line, ok := got.Comm(c.Name, r)
			require.True(t, ok, "no COMM line of %s rank %d", c.Name, r)
			assert.Equal(t, c.NRanks, line.NRanks)
			if h, ok := commHashes[c.Name]; ok {
				assert.Equal(t, h, line.Hash, "the commHash of %s in each of its ranks", c.Name)
			}
			commHashes[c.Name] = line.Hash
			assert.False(t, handles[line.Comm], "handle %#x twice", line.Comm)
			handles[line.Comm] = true
			type on struct {
				comm, stream uint64
				rank, nranks int
			}
			want, where := c.Calls(r), []on{}
			for range want {
				where = append(where, on{line.Comm, c.Stream(r), r, c.NRanks})
			}
			for i := range c.Splits {
				color, subRank, subSize := c.Split(i, r)
				split, ok := got.Split(c.Name, i, r)
				require.True(t, ok, "no SPLIT line of split %d of rank %d", i, r)
				assert.Equal(t, NCCLSplitLine{Name: c.Name, Index: i, ParentRank: r, Color: color, Rank: subRank, NRanks: subSize,
					Comm: split.Comm, Hash: split.Hash}, split)
				if color != NCCLNone {
					k := fmt.Sprintf("%s/%d/%d", c.Name, i, color)
					if h, ok := splitHashes[k]; ok {
						assert.Equal(t, h, split.Hash, "the commHash of %s in each of its ranks", k)
					}
					splitHashes[k] = split.Hash
				}
				if color == NCCLNone {
					assert.Zero(t, split.Comm, "a communicator for NCCL_SPLIT_NOCOLOR")
					continue
				}
				assert.False(t, subHandles[split.Comm], "handle %#x twice", split.Comm)
				subHandles[split.Comm] = true
				want = append(want, NCCLSplitCall)
				where = append(where, on{split.Comm, c.SplitStream(i, r), subRank, subSize})
			}
			calls := byTid[line.Tid]
			require.Len(t, calls, len(want), "%s rank %d", c.Name, r)
			for i, w := range want {
				o := where[i]
				if w.Group() {
					o.comm, o.stream = 0, 0
				}
				assert.Equal(t, NCCLCallLine{Tid: line.Tid, API: w.API, Comm: o.comm, Count: w.Count, DataType: w.DataType,
					Op: w.Op, Root: w.Root, Peer: w.Peer(o.rank, o.nranks), Stream: o.stream}, calls[i], "%s rank %d call %d", c.Name, r, i)
			}
		}
	}
	assert.Len(t, got.Comms, 6)
	hashes := map[uint64]bool{}
	for _, h := range commHashes {
		hashes[h] = true
	}
	for _, h := range splitHashes {
		hashes[h] = true
	}
	assert.Len(t, hashes, len(commHashes)+len(splitHashes), "a commHash per communicator: %v %v", commHashes, splitHashes)
	assert.Len(t, got.Splits, 8)
}

// TestNCCLSplitOrder: NCCL orders a split's ranks by key, then by parent
// rank, and NCCL_SPLIT_NOCOLOR leaves a rank out.
func TestNCCLSplitOrder(t *testing.T) {
	c := NCCLComm{NRanks: 5, Splits: []NCCLSplit{{Color: func(r int) int { return []int{0, 1, 0, NCCLNone, 0}[r] },
		Key: func(r int) int { return []int{5, 0, 1, 0, 1}[r] }}}}
	var got []string
	for r := range 5 {
		color, rank, size := c.Split(0, r)
		got = append(got, fmt.Sprintf("%d:%d/%d", color, rank, size))
	}
	assert.Equal(t, []string{"0:2/3", "1:0/1", "0:0/3", "-1:-1/-1", "0:1/3"}, got)
}

// TestNCCLSingle: one thread's communicators (ncclCommInitAll's and
// ncclCommInitRankScalable's) and calls; the stub refuses what NCCL
// refuses, with NCCL's result codes, and takes a valid call.
func TestNCCLSingle(t *testing.T) {
	cmd := exec.Command(Build(t, "nccl"), "single")
	cmd.Env = append(os.Environ(), "CUDAPROG_NCCL_ECHO=1")
	p := StartCmd(t, cmd)
	p.Go()
	lines := p.Wait()
	got := map[string]int{}
	for _, l := range lines {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "INVALID" {
			v, err := strconv.Atoi(f[2])
			require.NoError(t, err, l)
			got[f[1]] = v
		}
	}
	assert.Equal(t, map[string]int{
		"valid": NCCLSuccess, "datatype": NCCLInvalidArgument, "negative_datatype": NCCLInvalidArgument,
		"op": NCCLInvalidArgument, "root": NCCLInvalidArgument, "peer": NCCLInvalidArgument,
		"collconfig": NCCLInvalidArgument, "group_end": NCCLInvalidUsage, "rank": NCCLInvalidArgument,
		"config": NCCLInvalidArgument, "finalized": NCCLInvalidUsage, "destroyed": NCCLInvalidArgument,
	}, got)

	nl, err := ReadNCCLLines(lines)
	require.NoError(t, err)
	a0, ok0 := nl.Comm("all", 0)
	a1, ok1 := nl.Comm("all", 1)
	sc, ok2 := nl.Comm("scalable", 0)
	require.True(t, ok0 && ok1 && ok2, "COMM lines: %+v", nl.Comms)
	assert.Equal(t, []int{2, 2, 1}, []int{a0.NRanks, a1.NRanks, sc.NRanks})
	assert.Equal(t, p.Pid, a0.Tid, "the main thread")
	assert.Contains(t, nl.UIDs, "scalable")
	require.GreaterOrEqual(t, len(nl.Calls), 5)
	start := NCCLCallLine{Tid: p.Pid, API: "ncclGroupStart", DataType: NCCLNone, Op: NCCLNone, Root: NCCLNone, Peer: NCCLNone}
	end := start
	end.API = "ncclGroupEnd"
	assert.Equal(t, []NCCLCallLine{start,
		{p.Pid, "ncclAllReduce", a0.Comm, NCCLSingleCount, NCCLFloat32, NCCLSum, NCCLNone, NCCLNone, NCCLLoopStream},
		{p.Pid, "ncclAllReduce", a1.Comm, NCCLSingleCount, NCCLFloat32, NCCLSum, NCCLNone, NCCLNone, NCCLLoopStream + 0x100},
		end,
		{p.Pid, "ncclAllGather", sc.Comm, NCCLSingleCount, NCCLInt8, NCCLNone, NCCLNone, NCCLNone, NCCLLoopStream},
	}, nl.Calls[:5])
}

// TestNCCLLoop: every thread of the loop makes its n calls.
func TestNCCLLoop(t *testing.T) {
	cmd := exec.Command(Build(t, "nccl"), "loop", "1000", "3")
	cmd.Env = append(os.Environ(), "CUDAPROG_NCCL_ECHO=1")
	p := StartCmd(t, cmd)
	p.Go()
	got, err := ReadNCCLLines(p.Wait())
	require.NoError(t, err)
	require.Len(t, got.Calls, 3000)
	tids := map[int]int{}
	for _, c := range got.Calls {
		tids[c.Tid]++
		assert.Equal(t, NCCLLoopCall.Count, c.Count)
		assert.Equal(t, NCCLLoopStream, c.Stream)
	}
	assert.Len(t, tids, 3)
	ns, ok := NsPerCall(p.Lines())
	assert.True(t, ok)
	assert.Positive(t, ns)
}
