package gputrace

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/testutil/cudaprog"
	"github.com/xpuscope/xpuscope/semconv"
)

// inspectorLine is one record of the NCCL Inspector's JSON dump, as its
// writer (inspector_json.cc of NCCL 2.30) prints it: the fields of the
// README's example record, with those of the current writer (comm_name,
// the timing source).
func inspectorLine(hash uint64, rank, nranks, pid int, op string, sn, bytes, us int, algo, bus string) string {
	perf := fmt.Sprintf(`"coll_perf":{"coll":%q,"coll_sn":%d,"coll_msg_size_bytes":%d,"coll_exec_time_us":%d,`+
		`"coll_timing_source":"kernel_gpu","coll_algobw_gbs":%s,"coll_busbw_gbs":%s}`, op, sn, bytes, us, algo, bus)
	if op == "Send" || op == "Recv" {
		perf = fmt.Sprintf(`"p2p_perf":{"p2p":%q,"p2p_sn":%d,"p2p_peer":%d,"p2p_msg_size_bytes":%d,"p2p_exec_time_us":%d,`+
			`"p2p_timing_source":"kernel_gpu","p2p_algobw_gbs":%s,"p2p_busbw_gbs":%s}`, op, sn, (rank+1)%nranks, bytes, us, algo, bus)
	}
	return fmt.Sprintf(`{"header":{"id":"0x%x","comm_name":"unknown","rank":%d,"n_ranks":%d,"nnodes":1},`+
		`"metadata":{"inspector_output_format_version":"v4.0","git_rev":"","rec_mechanism":"nccl_profiler_interface",`+
		`"dump_timestamp_us":1752867229276385,"hostname":"node-1","pid":%d},%s}`+"\n", hash, rank, nranks, pid, perf)
}

// TestTraceNCCLInspector: a traced job that loads the NCCL Inspector
// (its environment says so) has what the Inspector writes to its dump
// joined to the series of its ranks, read as the dump grows. The
// stand-in libnccl.so.2 loads no profiler plugin: the test appends to the
// process's dump, in the directory its NCCL_INSPECTOR_DUMP_DIR names and
// under the name the Inspector gives it (<hostname>-pid<pid>.log), what
// the Inspector would, in its format. Records that are not the process's
// (a communicator it did not make, a rank it does not have: another
// node's process of the same pid, in a shared directory) are not
// joined; a line that is not a record is counted.
func TestTraceNCCLInspector(t *testing.T) {
	requireRoot(t)
	lib := cudaprog.Build(t, "libnccl")
	exe := cudaprog.Build(t, "nccl")
	dump := filepath.Join(t.TempDir(), "nccl-inspector")
	require.NoError(t, os.MkdirAll(dump, 0o755))
	tr := startTracing(t, WithRescanInterval(time.Hour))

	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+buildLinger(t),
		"NCCL_PROFILER_PLUGIN=/opt/nccl/lib/libnccl-profiler-inspector.so", "NCCL_INSPECTOR_ENABLE=1",
		"NCCL_INSPECTOR_DUMP_DIR="+dump, "NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS=500")
	p := cudaprog.StartCmd(t, cmd)
	tr.waitAttached(t, TargetNCCL, lib)
	file := filepath.Join(dump, fmt.Sprintf("node-1-pid%d.log", p.Pid))
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	p.Go()
	p.WaitLine("ISSUED")
	got, err := cudaprog.ReadNCCLLines(p.Lines())
	require.NoError(t, err)
	a, ok := got.Comm("A", 0)
	require.True(t, ok)
	b, ok := got.Comm("B", 1)
	require.True(t, ok)

	appendTo := func(s string) {
		f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString(s)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	const gb = "100.000000"
	appendTo(inspectorLine(a.Hash, 0, 4, p.Pid, "AllReduce", 1, 1<<20, 2000, gb, "150.000000") +
		inspectorLine(a.Hash, 0, 4, p.Pid, "AllReduce", 2, 1<<20, 3000, gb, "150.000000") +
		inspectorLine(a.Hash, 3, 4, p.Pid, "AllGather", 1, 1<<20, 500, gb, `"nan"`) +
		inspectorLine(a.Hash, 0, 4, p.Pid, "Send", 1, 1<<14, 100, gb, "40.000000") +
		inspectorLine(b.Hash, 1, 2, p.Pid, "Reduce", 7, 1<<16, 250, gb, "80.000000") +
		inspectorLine(b.Hash, 1, 2, p.Pid, "SendRecv", 8, 1<<16, 250, gb, "80.000000") +
		// Not the process's: a communicator it did not make, a rank it
		// does not have.
		inspectorLine(0xdeadbeef, 0, 4, p.Pid, "AllReduce", 1, 1<<20, 9999, gb, gb) +
		inspectorLine(a.Hash, 5, 8, p.Pid, "AllReduce", 1, 1<<20, 9999, gb, gb) +
		"not a record\n" +
		// Half a record: the rest comes later.
		inspectorLine(a.Hash, 0, 4, p.Pid, "AllReduce", 3, 1<<20, 5000, gb, "150.000000")[:40])

	idA, idB := fmt.Sprintf("%#x", a.Hash), fmt.Sprintf("%#x", b.Hash)
	type key struct {
		id   string
		rank int
		op   string
	}
	value := func(pts testutil.Points, name string, k key) float64 {
		f := pts.Find(name, semconv.GPUNCCLCommID.String(k.id), semconv.GPUNCCLRank.Int(k.rank), semconv.GPUNCCLCollective.String(k.op))
		if len(f) != 1 {
			return math.NaN()
		}
		return f[0].Value
	}
	want := func(pts testutil.Points, timed map[key]float64) bool {
		for k, n := range timed {
			if value(pts, semconv.GPUNCCLOpTimed.Name, k) != n {
				return false
			}
		}
		return len(pts.Find(semconv.GPUNCCLOpTimed.Name)) == len(timed)
	}
	timed := map[key]float64{{idA, 0, "AllReduce"}: 2, {idA, 3, "AllGather"}: 1, {idA, 0, "Send"}: 1,
		{idB, 1, "Reduce"}: 1, {idB, 1, semconv.Other}: 1}
	pts := ofPid(tr.waitPoints(t, func(pts testutil.Points) bool { return want(ofPid(pts, p.Pid), timed) }), p.Pid)
	require.True(t, want(pts, timed), "gpu.nccl.operation.timed: %v", pts.Find(semconv.GPUNCCLOpTimed.Name))
	for k, v := range map[key]float64{{idA, 0, "AllReduce"}: 0.005, {idA, 3, "AllGather"}: 0.0005, {idA, 0, "Send"}: 0.0001,
		{idB, 1, "Reduce"}: 0.00025} {
		assert.InDelta(t, v, value(pts, semconv.GPUNCCLOpTime.Name, k), 1e-12, "%+v", k)
	}
	// Bus bandwidth × time: 150 GB/s for 5 ms; a NaN bandwidth counts
	// in time only.
	assert.InDelta(t, 150e9*0.005, value(pts, semconv.GPUNCCLBusBytes.Name, key{idA, 0, "AllReduce"}), 1)
	assert.Equal(t, 0.0, value(pts, semconv.GPUNCCLBusBytes.Name, key{idA, 3, "AllGather"}))
	// The same series as the calls': the same communicator, rank and size.
	pt := pts.One(t, semconv.GPUNCCLOpTimed.Name, semconv.GPUNCCLCommID.String(idA), semconv.GPUNCCLRank.Int(0),
		semconv.GPUNCCLCollective.String("AllReduce"))
	assert.Equal(t, "4", pt.Get(semconv.GPUNCCLCommSize))
	calls := pts.One(t, semconv.GPUNCCLCalls.Name, semconv.GPUNCCLCommID.String(idA), semconv.GPUNCCLRank.Int(0),
		semconv.GPUNCCLCollective.String("AllReduce"), semconv.GPUNCCLDataType.String("float32"))
	for _, k := range []string{string(semconv.GPUNCCLCommID), string(semconv.GPUNCCLRank), string(semconv.GPUNCCLCommSize),
		string(semconv.ProcessPID), string(semconv.ProcessExecutableName)} {
		assert.Equal(t, calls.Attrs[k], pt.Attrs[k], k)
	}
	errs := func(pts testutil.Points) float64 {
		return pts.One(t, semconv.XpuscopeNCCLInspectorErrors.Name, semconv.ErrorType.String(semconv.InspectorErrorRecord)).Value
	}
	assert.Equal(t, 1.0, errs(tr.collect(t)), "the line that is not a record")

	// The dump grows: the rest of the half record, and another.
	last := inspectorLine(a.Hash, 0, 4, p.Pid, "AllReduce", 3, 1<<20, 5000, gb, "150.000000")
	appendTo(last[40:] + inspectorLine(a.Hash, 1, 4, p.Pid, "AllReduce", 3, 1<<20, 1000, gb, "150.000000"))
	timed[key{idA, 0, "AllReduce"}] = 3
	timed[key{idA, 1, "AllReduce"}] = 1
	pts = ofPid(tr.waitPoints(t, func(pts testutil.Points) bool { return want(ofPid(pts, p.Pid), timed) }), p.Pid)
	require.True(t, want(pts, timed), "gpu.nccl.operation.timed: %v", pts.Find(semconv.GPUNCCLOpTimed.Name))
	assert.InDelta(t, 0.010, value(pts, semconv.GPUNCCLOpTime.Name, key{idA, 0, "AllReduce"}), 1e-12)
	assert.Equal(t, 1.0, errs(tr.collect(t)), "the half record, completed, is a record")
	assert.False(t, strings.Contains(fmt.Sprint(pts.Find(semconv.GPUNCCLOpTimed.Name)), "0xdeadbeef"))
	p.Go()
	p.Wait()
}
