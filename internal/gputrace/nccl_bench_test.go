package gputrace

import (
	"strconv"
	"testing"

	"github.com/xpuscope/xpuscope/internal/gputracebpf"
	"github.com/xpuscope/xpuscope/internal/testutil/cudaprog"
)

// BenchmarkNCCLOverhead measures what a traced ncclAllReduce costs: the
// cudaprog "nccl" program's loop (T threads, each a communicator of one
// rank of its own on the stand-in libnccl.so.2, each making N
// ncclAllReduce calls; it prints their mean NS_PER_CALL) runs, with one
// thread and with two,
//
//   - untraced;
//   - floor: the empty bench_empty program on a uprobe on ncclAllReduce;
//   - ours: the real Source (New, every probe on every CUDA and NCCL
//     library mapped), with the OpenTelemetry SDK's MeterProvider and the
//     Producer on its reader, as the agent runs it;
//   - ours-noop: the same with the API's no-op MeterProvider.
//
// The variants are interleaved (the order rotates each round) and the
// median of the rounds is reported per variant, with ours/floor, the
// cost above the floor in ns (ours-floor), and (ours-untraced) /
// (floor-untraced); the two-thread figures have a "-2t" suffix. A last
// pass with BPF run-time statistics on gives the time spent in the BPF
// programs themselves: bench_empty, and nccl_reduction attached alone
// (with ncclAllReduce's cookie, drained by a lane reader; "alone", whose
// whole call is reported too).
//
// The stub's ncclAllReduce checks its arguments and its communicator
// under a mutex and returns: a few tens of ns, where NCCL's enqueues a
// kernel, so the untraced figure is the stub's, not NCCL's; the added
// cost is what a traced NCCL call pays.
//
// XPUSCOPE_BENCH_CALLS (default 200000, per thread) and
// XPUSCOPE_BENCH_ROUNDS (default 5) size it. Run it once: -benchtime=1x.
func BenchmarkNCCLOverhead(b *testing.B) {
	lib := cudaprog.Build(b, "libnccl")
	exe := cudaprog.Build(b, "nccl")
	calls := benchEnvInt("XPUSCOPE_BENCH_CALLS", 200_000)
	rounds := benchEnvInt("XPUSCOPE_BENCH_ROUNDS", 5)
	o := newOverhead(b, lib, "ncclAllReduce", calls, func(threads int) *cudaprog.Proc {
		return cudaprog.Start(b, exe, "loop", strconv.Itoa(calls), strconv.Itoa(threads))
	})
	collective := func(e *gputracebpf.Event) bool { return e.Kind == gputracebpf.KindNCCLColl }
	// ours: the program waits at READY with its communicators made.
	ours := func(sdk bool) func(threads int) float64 {
		return func(threads int) float64 {
			return o.ours(threads, oursRun{
				sdk:     sdk,
				targets: []string{TargetNCCL},
				record:  func(e *gputracebpf.Event, _ int) bool { return collective(e) },
				drained: drainedAfterPolls,
			})
		}
	}
	// Another cudatrace Source on the host (another test binary) probes
	// every libnccl a process maps, this one's too.
	runs := runOverhead(b, rounds, []int{1, 2}, []overheadVariant{
		{name: "untraced", run: func(threads int) float64 { return o.loop(threads, nil) }},
		{name: "floor", run: o.under("bench_empty")},
		{name: "ours", run: ours(true)},
		{name: "ours-noop", run: ours(false)},
	}, foreignPrograms(b, o.objs.Program("nccl_reduction")))
	o.logOurs()
	for _, threads := range []int{1, 2} {
		sfx := threadSuffix(threads)
		untraced := runs.med("untraced", threads)
		floor, floorLo, floorHi := runs.median("floor", threads)
		oursNs, oursLo, oursHi := runs.median("ours", threads)
		noopNs := runs.med("ours-noop", threads)
		b.Logf("%d thread(s): floor %.0f (%.0f–%.0f), ours %.0f (%.0f–%.0f) ns/call", threads, floor, floorLo, floorHi,
			oursNs, oursLo, oursHi)
		b.ReportMetric(untraced, "untraced"+sfx+"-ns/call")
		b.ReportMetric(floor, "floor"+sfx+"-ns/call")
		b.ReportMetric(oursNs, "ours"+sfx+"-ns/call")
		b.ReportMetric(noopNs, "ours-noop"+sfx+"-ns/call")
		b.ReportMetric(oursNs/floor, "ours/floor"+sfx)
		b.ReportMetric(noopNs/floor, "ours-noop/floor"+sfx)
		b.ReportMetric(oursNs-floor, "ours-floor"+sfx+"-ns")
		b.ReportMetric(noopNs-floor, "ours-noop-floor"+sfx+"-ns")
		b.ReportMetric((oursNs-untraced)/(floor-untraced), "ours/floor-added"+sfx)
	}
	b.ReportMetric(float64(o.drops.Load()), "ours-drops")
	b.ReportMetric(float64(o.records.Load())/float64(o.called.Load()), "ours-records/call")

	// The BPF programs' own run time, with statistics on.
	stop := bpfStats(b)
	if stop == nil {
		return
	}
	defer stop()
	for _, threads := range []int{1, 2} {
		sfx := threadSuffix(threads)
		floorBPF, floorStat := perRun(b, o.objs.Program("bench_empty"), func() float64 { return o.under("bench_empty")(threads) })
		oursBPF, oursStat := perRun(b, o.objs.Program("nccl_reduction"), func() float64 {
			ns, _ := o.alone(threads, "nccl_reduction", collective)
			return ns
		})
		b.Logf("with BPF statistics on, %d thread(s), ns/call: floor %.0f, nccl_reduction alone %.0f", threads, floorStat, oursStat)
		b.ReportMetric(oursStat, "alone"+sfx+"-ns/call")
		b.ReportMetric(floorBPF, "floor-bpf"+sfx+"-ns/run")
		b.ReportMetric(oursBPF, "ours-bpf"+sfx+"-ns/run")
	}
}
