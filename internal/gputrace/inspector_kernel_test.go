package gputrace

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	// in time only. The algorithm bandwidth × time likewise: 100 GB/s.
	assert.InDelta(t, 150e9*0.005, value(pts, semconv.GPUNCCLBusBytes.Name, key{idA, 0, "AllReduce"}), 1)
	assert.Equal(t, 0.0, value(pts, semconv.GPUNCCLBusBytes.Name, key{idA, 3, "AllGather"}))
	assert.InDelta(t, 100e9*0.005, value(pts, semconv.GPUNCCLOpBytes.Name, key{idA, 0, "AllReduce"}), 1)
	assert.InDelta(t, 100e9*0.0005, value(pts, semconv.GPUNCCLOpBytes.Name, key{idA, 3, "AllGather"}), 1)
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

// promSample229 is a sample of the NCCL Inspector's textfile as NCCL 2.29
// writes it (inspector_prom.cc of 2.29.7: inspectorPromWriteCollInfo's
// three lines, its labels in its order, values printed with %.6g).
func promSample229(hash uint64, rank, nranks int, coll string, sn int, size string, algo, bus, us float64) string {
	labels := fmt.Sprintf(`comm_id="0x%x",hostname="node-1",rank="%d",slurm_job="unknown",slurm_job_id="unknown",`+
		`nranks="%d",n_nodes="1",gpu_device_id="GPU0",collective=%q,coll_sn="%d",timestamp="2026-05-13T10:00:00Z",message_size=%q`,
		hash, rank, nranks, coll, sn, size)
	return fmt.Sprintf("nccl_algorithm_bandwidth_gbs{%s} %.6g\nnccl_bus_bandwidth_gbs{%s} %.6g\n"+
		"nccl_collective_exec_time_microseconds{%s} %.6g\n", labels, algo, labels, bus, labels, us)
}

// promSample230 is a sample of the textfile as NCCL 2.30 writes it
// (inspector_prom.cc of 2.30.7: inspectorPromWriteCollBucket's or, for
// Send and Recv, inspectorPromWriteP2pBucket's two lines).
func promSample230(nranks int, op, size, algoProto string, bus, us float64) string {
	labels := fmt.Sprintf(`version="v5.1",slurm_job_id="unknown",node="node-1",gpu="GPU0",comm_name="unknown",n_nodes="1",`+
		`nranks="%d",collective=%q,message_size=%q,algo_proto=%q`, nranks, op, size, algoProto)
	prefix := "nccl"
	if op == "Send" || op == "Recv" {
		labels = fmt.Sprintf(`version="v5.1",slurm_job_id="unknown",node="node-1",gpu="GPU0",comm_name="unknown",n_nodes="1",`+
			`nranks="%d",p2p_operation=%q,message_size=%q`, nranks, op, size)
		prefix = "nccl_p2p"
	}
	if prefix == "nccl" {
		return fmt.Sprintf("nccl_bus_bandwidth_gbs{%s} %.6g\nnccl_collective_exec_time_microseconds{%s} %.6g\n", labels, bus, labels, us)
	}
	return fmt.Sprintf("nccl_p2p_bus_bandwidth_gbs{%s} %.6g\nnccl_p2p_exec_time_microseconds{%s} %.6g\n", labels, bus, labels, us)
}

// rewrite writes content to path as the Inspector rewrites a textfile:
// the file truncated in place (fopen "w"), then a write per sample.
func rewrite(t *testing.T, path string, samples ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	require.NoError(t, err)
	for _, s := range samples {
		_, err := f.WriteString(s)
		require.NoError(t, err)
	}
	require.NoError(t, f.Close())
}

// TestTraceNCCLInspectorProm: traced processes that run the NCCL
// Inspector in its Prometheus mode (their environment says so) have what
// their textfiles say joined to the series of their ranks, read again
// each time a file is rewritten, and dropped when it is removed. The
// stand-in libnccl.so.2 loads no profiler plugin: each process is given
// its GPU's textfile open, as the Inspector keeps it (an inherited
// descriptor), and the test writes it as the Inspector does, truncated
// and written again in place. The job's process of the scenario (4 ranks
// of A, 2 of B) has NCCL 2.29's textfile, which names communicator and
// rank: a communicator it did not make, a rank it does not have, are not
// joined. A process of one rank (nccl one) has NCCL 2.30's, which names
// only the communicator's size, and the algorithm: its one communicator
// of that size is joined, a size it has none of is not. A textfile of
// another process's GPU in the same directory is not read.
func TestTraceNCCLInspectorProm(t *testing.T) {
	requireRoot(t)
	lib := cudaprog.Build(t, "libnccl")
	exe := cudaprog.Build(t, "nccl")
	dump := t.TempDir()
	tr := startTracing(t, WithRescanInterval(time.Hour))
	env := append(os.Environ(), "LD_PRELOAD="+buildLinger(t),
		"NCCL_PROFILER_PLUGIN=/opt/nccl/lib/libnccl-profiler-inspector.so", "NCCL_INSPECTOR_ENABLE=1", "NCCL_INSPECTOR_PROM_DUMP=1",
		"NCCL_INSPECTOR_DUMP_DIR="+dump, "NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS=30000000")
	start := func(gpu string, args ...string) (*cudaprog.Proc, string) {
		path := filepath.Join(dump, "nccl_inspector_metrics_"+gpu+".prom")
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		require.NoError(t, err)
		defer f.Close() // the process holds it
		cmd := exec.Command(exe, args...)
		cmd.Env = env
		cmd.ExtraFiles = []*os.File{f}
		return cudaprog.StartCmd(t, cmd), path
	}
	job, jobFile := start("GPU-11111111-2222-3333-4444-555555555555")
	one, oneFile := start("GPU-66666666-7777-8888-9999-000000000000", "one")
	tr.waitAttached(t, TargetNCCL, lib)
	job.Go()
	job.WaitLine("ISSUED")
	one.Go()
	one.WaitLine("ISSUED")
	jobLines, err := cudaprog.ReadNCCLLines(job.Lines())
	require.NoError(t, err)
	oneLines, err := cudaprog.ReadNCCLLines(one.Lines())
	require.NoError(t, err)
	a, ok := jobLines.Comm("A", 0)
	require.True(t, ok)
	b, ok := jobLines.Comm("B", 1)
	require.True(t, ok)
	c, ok := oneLines.Comm("one", 0)
	require.True(t, ok)
	idA, idB, idC := fmt.Sprintf("%#x", a.Hash), fmt.Sprintf("%#x", b.Hash), fmt.Sprintf("%#x", c.Hash)

	// Another process's GPU's textfile in the directory: were it read,
	// its sample would join the process of one rank's communicator.
	require.NoError(t, os.WriteFile(filepath.Join(dump, "nccl_inspector_metrics_GPU-33333333-0000-0000-0000-000000000000.prom"),
		[]byte(promSample230(1, "AllReduce", "1-2MB", "Tree_LL", 1, 1)), 0o644))
	rewrite(t, jobFile,
		promSample229(a.Hash, 0, 4, "AllReduce", 20, "4.00MB", 100, 150, 2000),
		promSample229(a.Hash, 3, 4, "AllGather", 20, "1.00MB", 50, 37.5, 500),
		promSample229(b.Hash, 1, 2, "Reduce", 20, "64.00KB", 10, 10, 250),
		promSample229(0xdeadbeef, 0, 4, "AllReduce", 1, "4.00MB", 1, 1, 1), // a communicator it did not make
		promSample229(a.Hash, 5, 8, "AllReduce", 1, "4.00MB", 1, 1, 1))     // a rank it does not have
	rewrite(t, oneFile,
		promSample230(1, "AllReduce", "1-2MB", "Ring_LL", 12.5, 80.5),
		promSample230(1, "AllReduce", "4-5GB", "NVLS_Simple", 400, 9000),
		promSample230(1, "Send", "512-513MB", "", 30, 1154.87),
		promSample230(4, "AllGather", "8-9KB", "Ring_Simple", 1, 1)) // a size it has no communicator of

	// A series: its communicator, rank, operation, algorithm, protocol
	// and size range; the gauges' values.
	type series struct {
		id                     string
		rank                   int
		op, algo, proto, sizes string
	}
	type values struct{ time, bus, algo float64 } // NaN: not reported
	nan := math.NaN()
	seriesOf := func(p testutil.Point) series {
		rank, _ := strconv.Atoi(p.Get(semconv.GPUNCCLRank))
		return series{p.Get(semconv.GPUNCCLCommID), rank, p.Get(semconv.GPUNCCLCollective), p.Get(semconv.GPUNCCLAlgorithm),
			p.Get(semconv.GPUNCCLProtocol), p.Get(semconv.GPUNCCLMessageSizeRange)}
	}
	gauges := func(pts testutil.Points) map[series]values {
		out := map[series]values{}
		for _, m := range []struct {
			name string
			set  func(v *values, x float64)
		}{
			{semconv.GPUNCCLInspectorOpTime.Name, func(v *values, x float64) { v.time = x }},
			{semconv.GPUNCCLInspectorBusBandwidth.Name, func(v *values, x float64) { v.bus = x }},
			{semconv.GPUNCCLInspectorAlgoBandwidth.Name, func(v *values, x float64) { v.algo = x }},
		} {
			for _, p := range pts.Find(m.name) {
				v, ok := out[seriesOf(p)]
				if !ok {
					v = values{nan, nan, nan}
				}
				m.set(&v, p.Value)
				out[seriesOf(p)] = v
			}
		}
		return out
	}
	same := func(got, want map[series]values) bool {
		if len(got) != len(want) {
			return false
		}
		eq := func(a, b float64) bool { return math.IsNaN(a) && math.IsNaN(b) || math.Abs(a-b) <= 1e-9*math.Abs(b) }
		for k, w := range want {
			g, ok := got[k]
			if !ok || !eq(g.time, w.time) || !eq(g.bus, w.bus) || !eq(g.algo, w.algo) {
				return false
			}
		}
		return true
	}
	var pts testutil.Points
	wait := func(pid int, want map[series]values) {
		t.Helper()
		ok := poll(20*time.Second, func() bool {
			pts = ofPid(tr.collect(t), pid)
			return same(gauges(pts), want)
		})
		require.True(t, ok, "pid %d: got %v, want %v", pid, gauges(pts), want)
	}
	wantJob := map[series]values{
		{idA, 0, "AllReduce", "", "", "4-5MB"}: {2000e-6, 150e9, 100e9},
		{idA, 3, "AllGather", "", "", "1-2MB"}: {500e-6, 37.5e9, 50e9},
		{idB, 1, "Reduce", "", "", "64-65KB"}:  {250e-6, 10e9, 10e9},
	}
	wait(job.Pid, wantJob)
	// The same series as the calls': the same communicator, rank and size.
	pt := pts.One(t, semconv.GPUNCCLInspectorOpTime.Name, semconv.GPUNCCLCommID.String(idA), semconv.GPUNCCLRank.Int(0))
	calls := pts.One(t, semconv.GPUNCCLCalls.Name, semconv.GPUNCCLCommID.String(idA), semconv.GPUNCCLRank.Int(0),
		semconv.GPUNCCLCollective.String("AllReduce"), semconv.GPUNCCLDataType.String("float32"))
	for _, k := range []string{string(semconv.GPUNCCLCommID), string(semconv.GPUNCCLRank), string(semconv.GPUNCCLCommSize),
		string(semconv.ProcessPID), string(semconv.ProcessExecutableName)} {
		assert.Equal(t, calls.Attrs[k], pt.Attrs[k], k)
	}
	assert.Equal(t, "4", pt.Get(semconv.GPUNCCLCommSize))
	wantOne := map[series]values{
		{idC, 0, "AllReduce", "Ring", "LL", "1-2MB"}:     {80.5e-6, 12.5e9, nan},
		{idC, 0, "AllReduce", "NVLS", "Simple", "4-5GB"}: {9000e-6, 400e9, nan},
		{idC, 0, "Send", "", "", "512-513MB"}:            {1154.87e-6, 30e9, nan},
	}
	wait(one.Pid, wantOne)
	assert.Equal(t, "1", pts.One(t, semconv.GPUNCCLInspectorOpTime.Name, semconv.GPUNCCLAlgorithm.String("Ring")).
		Get(semconv.GPUNCCLCommSize))
	errs := func(kind string) float64 {
		return tr.collect(t).One(t, semconv.XpuscopeNCCLInspectorErrors.Name, semconv.ErrorType.String(kind)).Value
	}
	assert.Equal(t, 3.0, errs(semconv.InspectorErrorUnjoined), "2 samples of the job's, 1 of the process of one rank")
	assert.Equal(t, 0.0, errs(semconv.InspectorErrorRecord))
	assert.Equal(t, 0.0, errs(semconv.InspectorErrorRead))

	// The Inspector's next interval: the job's textfile rewritten, with
	// a new figure of rank 0 of A and a new series of its rank 1; B and
	// rank 3 of A did nothing since, and go.
	rewrite(t, jobFile,
		promSample229(a.Hash, 0, 4, "AllReduce", 40, "4.00MB", 200, 300, 1000),
		promSample229(a.Hash, 1, 4, "Broadcast", 41, "512B", 1, 0.5, 7))
	wait(job.Pid, map[series]values{
		{idA, 0, "AllReduce", "", "", "4-5MB"}:    {1000e-6, 300e9, 200e9},
		{idA, 1, "Broadcast", "", "", "512-513B"}: {7e-6, 0.5e9, 1e9},
	})
	assert.Equal(t, 3.0, errs(semconv.InspectorErrorUnjoined), "what was read once counts once")

	// The Inspector removes its textfile at its end: its series go.
	require.NoError(t, os.Remove(oneFile))
	wait(one.Pid, map[series]values{})
	job.Go()
	job.Wait()
	one.Go()
	one.Wait()
}
