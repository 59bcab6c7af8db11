package gputrace

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/gputracebpf"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/testutil/cudaprog"
	"github.com/xpuscope/xpuscope/semconv"
)

// launchCounter counts the launch records the Source reads, by process,
// and the processes that began a stream capture, whose launches on a
// capturing stream are a graph's kernels, not launches of their own.
type launchCounter struct {
	mu        sync.Mutex
	pid       map[uint32]int
	capturing map[uint32]bool
}

func (c *launchCounter) hook(e *gputracebpf.Event) {
	if e.Kind != gputracebpf.KindLaunch && e.Kind != gputracebpf.KindCaptureBegin {
		return
	}
	c.mu.Lock()
	if e.Kind == gputracebpf.KindCaptureBegin {
		c.capturing[e.PID] = true
	} else {
		c.pid[e.PID]++
	}
	c.mu.Unlock()
}

// counted reports whether n, the launches the series count, are the
// launch records read: all of them, or, where processes began a capture,
// at least those of the others.
func (c *launchCounter) counted(n float64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	all, sure := 0, 0
	for pid, k := range c.pid {
		all += k
		if !c.capturing[pid] {
			sure += k
		}
	}
	if len(c.capturing) == 0 {
		return n == float64(all)
	}
	return float64(sure) <= n && n <= float64(all)
}

func (c *launchCounter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, k := range c.pid {
		n += k
	}
	return n
}

// scraper keeps the last value of every cuda.kernel.launches series it
// has collected, as a Prometheus server keeps a series' last sample after
// it goes stale, and the most processes with launch series of their own
// (a pid) one collection had: the Source's cap counts every process it
// sees, other tests' too, whatever series each has.
type scraper struct {
	last      map[string]float64
	mostPIDed int
	most      []string // the series of that collection
}

func (s *scraper) scrape(pts testutil.Points) {
	pids := map[string]bool{}
	var series []string
	for _, p := range pts.Find(semconv.CUDAKernelLaunches.Name) {
		if strings.Contains(p.Get(semconv.CUDAAPIName), "GraphLaunch") {
			continue // a graph's replays: kernels no launch record stands for (other tests' processes)
		}
		kv := make([]string, 0, len(p.Attrs))
		for k, v := range p.Attrs {
			kv = append(kv, k+"="+v)
		}
		slices.Sort(kv)
		key := strings.Join(kv, ",")
		s.last[key] = p.Value
		series = append(series, key)
		if p.Has(semconv.ProcessPID) {
			pids[p.Get(semconv.ProcessPID)] = true
		}
	}
	if len(pids) > s.mostPIDed {
		s.mostPIDed, s.most = len(pids), series
	}
}

func (s *scraper) total() float64 {
	var n float64
	for _, v := range s.last {
		n += v
	}
	return n
}

// TestChurnBounded: 200 short processes, each launching 5 kernels through
// the real libcudart and exiting, under a Source capped at 8 processes
// with series of their own and collected every 10 processes. No
// collection has launch series of more than 8 pids; every launch
// any process made is in a series' last collected value (a scraper that
// keeps each series' last sample sums to the launch records read; where
// another test's process captures graphs at the same time, its captured
// launches are no runs and its replays count kernels no record stands
// for: the sum is then between the records of the processes that did not
// capture and all of them, the replays left out), none moved between
// series; every record of every process is read; past the
// cap processes are counted folded; and once the processes are gone their
// series go with them (issue 16, item 4, on a real kernel).
func TestChurnBounded(t *testing.T) {
	requireRoot(t)
	const (
		procs    = 200
		launches = 5
		capped   = 8
	)
	c := &launchCounter{pid: map[uint32]int{}, capturing: map[uint32]bool{}}
	tr := startTracing(t, WithRescanInterval(time.Hour), WithMaxProcesses(capped), withEventHook(c.hook))
	exe := cudaprog.Build(t, "runtime")
	first := cudaprog.Start(t, exe, "loop", strconv.Itoa(launches))
	tr.waitAttached(t, TargetRuntime, cudaprog.RealCudart(t))
	first.Go()
	first.Wait()

	sc := &scraper{last: map[string]float64{}}
	ours := map[int]bool{first.Pid: true}
	for i := 1; i < procs; i++ {
		p := cudaprog.Start(t, exe, "loop", strconv.Itoa(launches))
		ours[p.Pid] = true
		p.Go()
		p.Wait()
		if i%10 == 0 {
			sc.scrape(tr.collect(t))
		}
	}
	var pts testutil.Points
	settled := poll(15*time.Second, func() bool {
		pts = tr.collect(t)
		sc.scrape(pts)
		for _, p := range pts.Find(semconv.CUDAKernelLaunches.Name) {
			if pid, err := strconv.Atoi(p.Get(semconv.ProcessPID)); err == nil && ours[pid] {
				return false // not retired yet
			}
		}
		return c.total() >= procs*launches && c.counted(sc.total())
	})
	require.True(t, settled, "launch records read %d (want at least %d), the series' last values sum to %v; series left: %v",
		c.total(), procs*launches, sc.total(), pts.Find(semconv.CUDAKernelLaunches.Name))
	require.LessOrEqual(t, sc.mostPIDed, capped, "processes with launch series of their own in one collection: %q", sc.most)
	require.Positive(t, pts.One(t, semconv.XpuscopeCUDAProcessOverflow.Name).Value, "processes folded")
	c.mu.Lock()
	defer c.mu.Unlock()
	for pid := range ours {
		require.Equal(t, launches, c.pid[uint32(pid)], "launch records of pid %d", pid)
	}
}
