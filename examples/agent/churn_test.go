package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/testutil/cudaprog"
)

// envBenchProcesses sets how many short CUDA processes BenchmarkChurn
// starts, over XPUSCOPE_BENCH_SECONDS.
const envBenchProcesses = "XPUSCOPE_BENCH_PROCESSES"

// BenchmarkChurn (issue #16, item 4): the agent on a node whose CUDA
// processes come and go, measured from outside as BenchmarkFootprint
// measures it. The agent, built with go build, runs with a fake NVML
// reporting 8 GPUs and a 1 s poll, every feature on (as root); once it
// probes the real libcudart, 1,000 processes (XPUSCOPE_BENCH_PROCESSES)
// start over 50 s (XPUSCOPE_BENCH_SECONDS), 20 a second, each the cudaprog
// "runtime launch" scenario calling every traced runtime function, and
// exit at once; /metrics is scraped in OpenMetrics every 15 s, as
// Prometheus does, until the scrapes have seen every call (or a minute
// after the last process), when the agent is stopped (SIGTERM).
// Reported: the peak RSS (the kernel's maxrss), the RSS at the last
// scrape, the most series (sample lines) and bytes a scrape had, and the
// processes folded past the cap. The scrapes must have seen every launch
// call: all of each process's, for those with series of their own (its
// series went only after a scrape had their last values), and for the
// others the fold's, which counts them (and any other process on the
// host folded meanwhile). Targets: RSS ≤ 64 MB, ≤ 10,000 series.
//
//	go test -run '^$' -bench Churn -benchtime 1x ./examples/agent
func BenchmarkChurn(b *testing.B) {
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(b, "the churn benchmark needs root: the cudatrace feature loads BPF programs")
	}
	processes, seconds := benchEnv(b, envBenchProcesses, 1000), benchEnv(b, envBenchSeconds, 50)
	cudaExe := cudaprog.Build(b, "runtime")
	calls := len(cudaprog.RuntimeLaunch.Filter("cudaLaunchKernel", "cudaLaunchKernel_ptsz"))
	lib := testutil.BuildFakeNVML(b, "-DFAKE_GPUS=8")
	exe := filepath.Join(b.TempDir(), "agent")
	out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput()
	require.NoError(b, err, "go build\n%s", out)
	args := []string{"-interval", "1s", "-nvml-library", lib, "-listen", "127.0.0.1:0"}
	for range b.N {
		cmd := exec.Command(exe, args...)
		var stderr testutil.SyncBuffer
		cmd.Stderr = &stderr
		start := time.Now()
		require.NoError(b, cmd.Start(), "starting the agent %v", args)
		b.Cleanup(func() { _ = cmd.Process.Kill() }) // if it failed before the agent stopped
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		addr, err := waitListening(cmd, &stderr, done)
		require.NoError(b, err, "agent %v; stderr:\n%s", args, stderr.String())

		// A first process holds libcudart mapped until the agent probes
		// it, so that every later process starts probed.
		first := cudaprog.Start(b, cudaExe, cudaprog.RuntimeLaunch.Name)
		probed := false
		for deadline := time.Now().Add(30 * time.Second); !probed && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			body, err := fetch("http://"+addr+"/metrics", openMetrics)
			require.NoError(b, err)
			probed = attachedCudart.MatchString(body)
		}
		require.True(b, probed, "the agent did not probe libcudart within 30s; stderr:\n%s", stderr.String())
		first.Go()
		first.Wait()
		ours := map[string]bool{strconv.Itoa(first.Pid): true}

		scrapes := &churnScrapes{seen: map[string]float64{}}
		stopScraping := make(chan struct{})
		scraped := make(chan error, 1)
		go func() { scraped <- scrapes.every(addr, cmd.Process.Pid, 15*time.Second, stopScraping) }()
		pids, churnErr := churn(cudaExe, processes, time.Duration(seconds)*time.Second)
		for _, pid := range pids {
			ours[strconv.Itoa(pid)] = true
		}
		for deadline := time.Now().Add(time.Minute); !scrapes.sawAll(ours, calls) && time.Now().Before(deadline); {
			time.Sleep(100 * time.Millisecond)
		}
		close(stopScraping)
		scrapeErr := <-scraped
		require.NoError(b, cmd.Process.Signal(syscall.SIGTERM))
		err = <-done
		wall := time.Since(start)
		require.NoError(b, churnErr)
		require.NoError(b, scrapeErr)
		require.NoError(b, err, "agent %v; stderr:\n%s", args, stderr.String())
		own, short := scrapes.ownSeries(ours, calls)
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		cpu := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
		b.ReportMetric(float64(ru.Maxrss)*1024/1e6, "rss-MB") // Maxrss is in KiB
		b.ReportMetric(scrapes.lastRSS/1e6, "rss-last-scrape-MB")
		b.ReportMetric(float64(scrapes.peakSeries), "series")
		b.ReportMetric(float64(scrapes.peakBytes)/1e6, "scrape-MB")
		b.ReportMetric(scrapes.folded, "folded-processes")
		b.ReportMetric(float64(own), "own-series-processes")
		b.ReportMetric(100*cpu/wall.Seconds(), "cpu-%-of-a-core")
		b.ReportMetric(0, "ns/op") // the run's length is set, not measured
		require.Empty(b, short, "processes whose last launch calls no scrape saw")
		require.GreaterOrEqual(b, scrapes.other, float64((len(ours)-own)*calls),
			"the fold's launch calls: %d of our processes had no series of their own", len(ours)-own)
	}
}

// benchEnv reads a positive integer from the environment variable name,
// or def.
func benchEnv(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(b, err, "%s=%q: want a positive number", name, v)
	require.Positive(b, n, "%s=%q: want a positive number", name, v)
	return n
}

// waitListening waits up to 30 s for the agent to say where it serves
// /metrics.
func waitListening(cmd *exec.Cmd, stderr *testutil.SyncBuffer, done <-chan error) (string, error) {
	for deadline := time.Now().Add(30 * time.Second); ; {
		select {
		case err := <-done:
			return "", fmt.Errorf("exited (%v) before listening", err)
		case <-time.After(50 * time.Millisecond):
		}
		if m := listening.FindStringSubmatch(stderr.String()); m != nil {
			return m[1], nil
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-done
			return "", errors.New("did not say where it listens within 30s")
		}
	}
}

// churn starts n processes of the cudaprog "runtime launch" scenario
// evenly over d, each told to go at once, waits for them all and returns
// their pids.
func churn(exe string, n int, d time.Duration) ([]int, error) {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		pids []int
	)
	tick := time.NewTicker(d / time.Duration(n))
	defer tick.Stop()
	for range n {
		<-tick.C
		cmd := exec.Command(exe, cudaprog.RuntimeLaunch.Name)
		cmd.Stdin = strings.NewReader("go\n")
		if err := cmd.Start(); err != nil {
			errs = append(errs, err)
			continue
		}
		pids = append(pids, cmd.Process.Pid)
		wg.Go(func() {
			if err := cmd.Wait(); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s %s (pid %d): %v", exe, cudaprog.RuntimeLaunch.Name, cmd.Process.Pid, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return pids, errors.Join(errs...)
}

var (
	// attachedCudart is a scrape's line saying libcudart is probed.
	attachedCudart = regexp.MustCompile(`(?m)^xpuscope_cuda_attached_files\{[^}]*xpuscope_target="libcudart"[^}]*\} [1-9]`)
	// launchCalls are a scrape's series of the launch calls.
	launchCalls = regexp.MustCompile(`(?m)^cuda_api_calls_total\{([^}]*cuda_api_name="cudaLaunchKernel(?:_ptsz)?"[^}]*)\} (\S+)`)
	pidLabel    = regexp.MustCompile(`process_pid="(\d+)"`)
	folded      = regexp.MustCompile(`(?m)^xpuscope_cuda_process_overflow_total\{[^}]*\} (\S+)`)
	vmRSS       = regexp.MustCompile(`(?m)^VmRSS:\s+(\d+) kB`)
)

// churnScrapes is what BenchmarkChurn's scrapes saw.
type churnScrapes struct {
	mu                    sync.Mutex
	peakSeries, peakBytes int
	// seen is the largest count of launch calls a scrape showed of each
	// process; other the largest the fold showed.
	seen   map[string]float64
	other  float64
	folded float64
	// lastRSS is the agent's resident set at the last scrape, in bytes.
	lastRSS float64
}

// ownSeries returns how many of the processes ours the scrapes saw with
// series of their own, and those of them with fewer than calls launch
// calls.
func (c *churnScrapes) ownSeries(ours map[string]bool, calls int) (own int, short map[string]float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	short = map[string]float64{}
	for pid, v := range c.seen {
		if !ours[pid] {
			continue
		}
		own++
		if v < float64(calls) {
			short[pid] = v
		}
	}
	return own, short
}

// sawAll reports whether the scrapes saw the launch calls of all the
// processes ours, in their own series or in the fold's.
func (c *churnScrapes) sawAll(ours map[string]bool, calls int) bool {
	own, short := c.ownSeries(ours, calls)
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(short) == 0 && c.other >= float64((len(ours)-own)*calls)
}

// every scrapes addr every interval until stop closes, and reads the
// resident set of the agent (pid) after each scrape.
func (c *churnScrapes) every(addr string, pid int, interval time.Duration, stop <-chan struct{}) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return nil
		case <-tick.C:
		}
		body, err := fetch("http://"+addr+"/metrics", openMetrics)
		if err != nil {
			return err
		}
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return err
		}
		m := vmRSS.FindSubmatch(st)
		if m == nil {
			return fmt.Errorf("no VmRSS in /proc/%d/status:\n%s", pid, st)
		}
		kb, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil {
			return err
		}
		if err := c.add(body, kb*1024); err != nil {
			return err
		}
	}
}

// add takes one scrape, and the agent's resident set after it.
func (c *churnScrapes) add(body string, rss float64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastRSS = rss
	series := 0
	for line := range strings.Lines(body) {
		if line != "\n" && !strings.HasPrefix(line, "#") {
			series++
		}
	}
	c.peakSeries, c.peakBytes = max(c.peakSeries, series), max(c.peakBytes, len(body))
	byPID := map[string]float64{}
	other := 0.0
	for _, m := range launchCalls.FindAllStringSubmatch(body, -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return fmt.Errorf("series %s: %w", m[0], err)
		}
		if p := pidLabel.FindStringSubmatch(m[1]); p != nil {
			byPID[p[1]] += v
		} else {
			other += v
		}
	}
	for pid, v := range byPID {
		c.seen[pid] = max(c.seen[pid], v)
	}
	c.other = max(c.other, other)
	if m := folded.FindStringSubmatch(body); m != nil {
		c.folded, _ = strconv.ParseFloat(m[1], 64)
	}
	return nil
}
