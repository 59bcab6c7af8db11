package training

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/xpuscope/xpuscope/internal/procfs/procfstest"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/testutil/trainlog"
)

// cpuTime is the CPU time the process has spent, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTailing: one 10 s interval of the Source on a node of 32
// training jobs, as it spends it: the look at their processes (the
// process table's scan of the 32), their watched directories' fstat, the
// read and decode of what each appended since the interval before
// (records=N: N TensorBoard records a job; a quarter of the jobs also
// append an MLflow metric line and a CSV row), the publish of their
// series, the fd scans of the jobs' processes every minute (the clock
// goes 10 s an interval), and an OpenTelemetry SDK reader's collection,
// as a user runs it. The jobs are processes of their own (the tests'
// Python writer), and the CPU time is taken around the Source's interval
// and the collection only (getrusage, user and system), so that it is
// the Source's alone: cpu-us/op, and %core@10s, the fraction of a core
// at a 10 s interval (the bound: 0.5 % for 32 jobs). The
// discovery of the host's other processes is internal/proctable's, which
// genai/serving's BenchmarkDiscover measures.
func BenchmarkTailing(b *testing.B) {
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(b, "reading other processes' files needs root")
	}
	const nJobs = 32
	dir := b.TempDir()
	lib := trainlog.FrameworkLib(b, dir, "torch/lib/libtorch_cpu.so")
	jobs := make([]*trainlog.Job, nJobs)
	pids := make([]int, nJobs)
	for i := range jobs {
		d := filepath.Join(dir, fmt.Sprintf("job%d", i))
		o := trainlog.JobOptions{Lib: lib, LogDir: filepath.Join(d, "runs", "exp")}
		if i%4 == 0 {
			require.NoError(b, os.MkdirAll(d, 0o755))
			o.Dir = d
			o.MLflowRun = filepath.Join(d, "mlruns", "0", "run")
			o.CSVDir = filepath.Join(d, "lightning_logs", "version_0")
			o.Env = []string{"MLFLOW_TRACKING_URI=" + filepath.Join(d, "mlruns")}
		}
		jobs[i] = trainlog.StartJob(b, o)
		pids[i] = jobs[i].PID()
		if i%4 == 0 {
			jobs[i].Do("mlflow loss 0 1")
			jobs[i].Do("csv epoch=0 step=0 train_loss=1")
		}
	}
	for _, records := range []int{10, 200} {
		b.Run(fmt.Sprintf("records=%d", records), func(b *testing.B) {
			r := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
			defer mp.Shutdown(context.Background())
			// The Source's own goroutine does not tick in an hour: the
			// benchmark drives its intervals.
			s, err := New(WithProcRoot(procfstest.Host(b, pids...)), WithMeterProvider(mp), WithInterval(time.Hour))
			require.NoError(b, err)
			defer s.Close()
			now := time.Now()
			step := 0
			for range 3 { // found, its files read to their ends
				now = now.Add(DefaultInterval)
				s.cycle(now)
			}
			st := s.Status()
			require.Len(b, st.Jobs, nJobs)
			var rm metricdata.ResourceMetrics
			var cpu time.Duration
			b.ReportAllocs()
			for b.Loop() {
				step++
				for i, j := range jobs {
					j.Do("burst loss %d", records)
					if i%4 == 0 {
						j.Do("mlflow loss %d 0.5", step)
						j.Do("csv epoch=0 step=%d train_loss=0.5", step)
					}
				}
				now = now.Add(DefaultInterval)
				cpu0 := cpuTime(b)
				s.cycle(now)
				if err := r.Collect(context.Background(), &rm); err != nil {
					b.Fatal(err)
				}
				cpu += cpuTime(b) - cpu0
			}
			for _, j := range s.Status().Jobs {
				for _, f := range j.Files {
					require.Equal(b, f.Size, f.Offset, "every file read to its end: %s", f.Path)
				}
			}
			perInterval := cpu.Seconds() / float64(b.N)
			b.ReportMetric(perInterval*1e6, "cpu-us/op")
			b.ReportMetric(100*perInterval/DefaultInterval.Seconds(), "%core@10s")
			b.ReportMetric(float64(nJobs*records)/perInterval, "records/cpu-s")
		})
	}
}
