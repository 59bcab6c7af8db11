package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/procfs"
	"github.com/xpuscope/xpuscope/internal/testutil"
)

// envBusyStarts sets how many processes a second BenchmarkBusyNode
// starts; envBusyWindow how long each of its two windows is.
const (
	envBusyStarts = "XPUSCOPE_BENCH_STARTS"
	envBusyWindow = "XPUSCOPE_BENCH_WINDOW"
)

// BenchmarkBusyNode (issue 16): the agent's CPU on a node that starts 100
// short processes a second (XPUSCOPE_BENCH_STARTS) with no CUDA in them,
// against the same agent idle, in one run. The agent runs as
// BenchmarkFootprint runs it (built with go build, a fake NVML reporting 8
// GPUs, a 1 s poll, a Prometheus scrape every 15 s), as root, so that
// cudatrace, hiptrace and the genai capture watch every process. After a
// warm-up (start-up is BenchmarkFootprint's), its CPU time is read from
// outside (the run time of its threads) over a window of 30 s
// (XPUSCOPE_BENCH_WINDOW) idle, then over one while /bin/true is started
// at the rate. Targets: at most 1% of a core busy, 0.5% idle.
//
//	go test -run '^$' -bench BusyNode -benchtime 1x ./examples/agent
func BenchmarkBusyNode(b *testing.B) {
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(b, "the tracing features need root: they load BPF programs")
	}
	rate, window := 100, 30*time.Second
	if v := os.Getenv(envBusyStarts); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(b, err, "%s=%q: want a number of processes a second", envBusyStarts, v)
		require.Positive(b, n, "%s=%q: want a number of processes a second", envBusyStarts, v)
		rate = n
	}
	if v := os.Getenv(envBusyWindow); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(b, err, "%s=%q: want a duration", envBusyWindow, v)
		require.Positive(b, d, "%s=%q: want a duration", envBusyWindow, v)
		window = d
	}
	const warmup = 10 * time.Second
	trueBin, err := exec.LookPath("true")
	require.NoError(b, err)
	lib := testutil.BuildFakeNVML(b, "-DFAKE_GPUS=8")
	exe := filepath.Join(b.TempDir(), "agent")
	out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput()
	require.NoError(b, err, "go build\n%s", out)
	run := warmup + 2*window + 10*time.Second
	args := []string{"-duration", run.String(), "-interval", "1s", "-nvml-library", lib, "-listen", "127.0.0.1:0"}

	var idle, busy, starts float64
	for range b.N {
		cmd := exec.Command(exe, args...)
		var stderr testutil.SyncBuffer
		cmd.Stderr = &stderr
		require.NoError(b, cmd.Start(), "starting the agent %v", args)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		scraped := make(chan error, 1)
		go func() { scraped <- scrapeUntilExit(cmd, &stderr, done, 15*time.Second, run) }()
		agent := procfs.FS{Root: procfs.DefaultRoot}.Proc(cmd.Process.Pid)
		cpu := func() time.Duration {
			d, err := agent.CPUTime()
			require.NoError(b, err, "the agent's CPU time; stderr:\n%s", stderr.String())
			return d
		}
		time.Sleep(warmup)
		c0 := cpu()
		time.Sleep(window)
		c1 := cpu()
		n, elapsed := startProcesses(b, trueBin, rate, window)
		c2 := cpu()
		require.NoError(b, <-scraped, "agent %v; stderr:\n%s", args, stderr.String())
		idle += 100 * (c1 - c0).Seconds() / window.Seconds()
		busy += 100 * (c2 - c1).Seconds() / elapsed.Seconds()
		starts += float64(n) / elapsed.Seconds()
	}
	nb := float64(b.N)
	b.ReportMetric(idle/nb, "idle-cpu-%-of-a-core")
	b.ReportMetric(busy/nb, "busy-cpu-%-of-a-core")
	b.ReportMetric(busy/idle, "busy/idle")
	b.ReportMetric(starts/nb, "starts/s")
	b.ReportMetric(0, "ns/op") // the run's length is set, not measured
}

// startProcesses runs bin, one process after another, at rate a second
// for d, and returns how many it started and how long that took.
func startProcesses(b *testing.B, bin string, rate int, d time.Duration) (int, time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	start := time.Now()
	n := 0
	for {
		select {
		case <-ctx.Done():
			return n, time.Since(start)
		case <-tick.C:
			if out, err := exec.Command(bin).CombinedOutput(); err != nil {
				b.Fatalf("%s: %v\n%s", bin, err, out)
			}
			n++
		}
	}
}
