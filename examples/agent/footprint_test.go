package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// envBenchSeconds sets how long BenchmarkFootprint runs the agent.
const envBenchSeconds = "XPUSCOPE_BENCH_SECONDS"

// BenchmarkFootprint (issue #7): the agent's own footprint over a run of
// 60 s (XPUSCOPE_BENCH_SECONDS) with a fake NVML reporting 8 GPUs, a 1 s
// poll and a Prometheus scrape every 15 s, measured from outside: peak
// RSS (the kernel's maxrss of the agent's process) and the CPU time it
// used, start-up included. The agent is built as users build it, not run
// from this test binary, whose extra code would count in its RSS. As root the cudatrace and genai features run
// too, as in the DaemonSet; the BPF programs they attach run in the
// context of the processes they trace, and are not counted here. Targets:
// RSS at most 50 MB, CPU at most 1% of a core.
//
//	go test -run '^$' -bench Footprint -benchtime 1x ./examples/agent
func BenchmarkFootprint(b *testing.B) {
	seconds := benchEnv(b, envBenchSeconds, 60)
	lib := testutil.BuildFakeNVML(b, "-DFAKE_GPUS=8")
	exe := filepath.Join(b.TempDir(), "agent")
	out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput()
	require.NoError(b, err, "go build\n%s", out)
	args := []string{"-duration", strconv.Itoa(seconds) + "s", "-interval", "1s", "-nvml-library", lib, "-listen", "127.0.0.1:0"}
	var maxRSS, cpu, wall float64
	for range b.N {
		cmd := exec.Command(exe, args...)
		var stderr testutil.SyncBuffer
		cmd.Stderr = &stderr // stdout, the final metrics, is discarded
		start := time.Now()
		if err := cmd.Start(); err != nil {
			require.NoError(b, err, "starting the agent %v", args)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		err := scrapeUntilExit(cmd, &stderr, done, 15*time.Second, time.Duration(seconds)*time.Second)
		elapsed := time.Since(start)
		if err != nil {
			require.NoError(b, err, "agent %v; stderr:\n%s", args, stderr.String())
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		maxRSS = max(maxRSS, float64(ru.Maxrss)*1024/1e6) // Maxrss is in KiB
		cpu += (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
		wall += elapsed.Seconds()
	}
	b.ReportMetric(maxRSS, "rss-MB")
	b.ReportMetric(cpu/float64(b.N), "cpu-seconds")
	b.ReportMetric(100*cpu/wall, "cpu-%-of-a-core")
	b.ReportMetric(0, "ns/op") // the run's length is set, not measured
}

// scrapeUntilExit scrapes the agent's /metrics in OpenMetrics, as
// Prometheus does, every interval until 2 s before the end of its run,
// then waits for its exit (done). It fails when the agent does not listen
// within 30 s, a scrape fails or lacks the eighth GPU, or the agent exits
// with a non-zero status.
func scrapeUntilExit(cmd *exec.Cmd, stderr *testutil.SyncBuffer, done <-chan error, interval, run time.Duration) error {
	stop := func(err error) error {
		_ = cmd.Process.Kill()
		<-done
		return err
	}
	addr, err := waitListening(cmd, stderr, done)
	if err != nil {
		return err
	}
	// The run started before the agent listened: scraping stops in time.
	last := time.Now().Add(run - 2*time.Second)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case now := <-tick.C:
			if now.After(last) {
				continue
			}
		}
		body, err := fetch("http://"+addr+"/metrics", openMetrics)
		if err == nil && !strings.Contains(body, `gpu_index="7"`) {
			err = fmt.Errorf("scrape of %s has no GPU 7:\n%s", addr, body)
		}
		if err != nil {
			return stop(err)
		}
	}
}
