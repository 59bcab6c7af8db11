package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/genai/training"
	"github.com/xpuscope/xpuscope/internal/procfs/procfstest"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/testutil/trainlog"
	"github.com/xpuscope/xpuscope/semconv"
)

// -check lists each training job found and what it reads: a PyTorch job
// (the tests' Python writer, loading a library named as PyTorch's) that
// writes a TensorBoard file and an MLflow store.
func TestCheckListsTrainingJobs(t *testing.T) {
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "reading another process's mappings, files and environment needs root")
	}
	dir := t.TempDir()
	store := filepath.Join(dir, "mlruns")
	job := trainlog.StartJob(t, trainlog.JobOptions{
		Lib: trainlog.FrameworkLib(t, dir, "torch/lib/libtorch_cpu.so"), LogDir: filepath.Join(dir, "runs", "exp1"),
		MLflowRun: filepath.Join(store, "0", "abcdef"), Env: []string{"MLFLOW_TRACKING_URI=file://" + store},
	})
	job.Do("scalar loss 1 0.5")
	job.Do("mlflow loss 1 0.5")
	stdout, stderr, code := output(t, agent(t, "-check", "-proc-root", procfstest.Host(t, job.PID())))
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Regexp(t, fmt.Sprintf(`(?m)^training +active +1 training job\(s\): pytorch \(pid %d, python3[.0-9]*\) reads `+
		`mlflow %s \(run abcdef, 1 records\), tensorboard %s \(run exp1, 2 records\)$`,
		job.PID(), regexp.QuoteMeta(filepath.Join(store, "0", "abcdef", "metrics", "loss")), regexp.QuoteMeta(job.Events)), stdout)
}

// -check on a node without training jobs says so; the configuration
// turns the feature off.
func TestCheckTrainingOffAndEmpty(t *testing.T) {
	stdout, stderr, code := output(t, agent(t, "-check", "-proc-root", procfstest.Host(t)))
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Regexp(t, `(?m)^training +active +no training job found yet; processes are looked at every interval$`, stdout)

	cfg := filepath.Join(t.TempDir(), "agent.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("aiml:\n  training:\n    enabled: false\n"), 0o644))
	stdout, stderr, code = output(t, agent(t, "-check", "-config", cfg))
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Regexp(t, `(?m)^training +unavailable +training: turned off by aiml\.training\.enabled$`, stdout)
}

func TestDescribeTraining(t *testing.T) {
	st := training.Status{Jobs: []training.Job{
		{PID: 10, Framework: semconv.TrainingFrameworkPyTorch, Launcher: semconv.TrainingLauncherTorchrun, Executable: "python3.11",
			Processes: []training.Process{{PID: 10}, {PID: 11}, {PID: 12}},
			Files: []training.File{
				{Path: "/runs/exp/events.out.tfevents.1.h.11.0", Format: semconv.TrainingLogTensorBoard, Run: "exp", Records: 40, LastGrowth: time.Now()},
				{Path: "/logs/lightning_logs/version_0/metrics.csv", Format: semconv.TrainingLogCSV, Run: "version_0", Records: 3, Problem: "read: EIO"},
			}},
		{PID: 20, Executable: "python3", Problems: []string{"MLFLOW_TRACKING_URI names a tracking server or database (https:), not a file store: not read", "no log file found yet: …"}},
	}}
	assert.Equal(t, "2 training job(s): pytorch (pid 10, python3.11, launched by torchrun, 3 processes) reads "+
		"tensorboard /runs/exp/events.out.tfevents.1.h.11.0 (run exp, 40 records), csv /logs/lightning_logs/version_0/metrics.csv (run version_0, 3 records): read: EIO | "+
		"unknown framework (pid 20, python3); MLFLOW_TRACKING_URI names a tracking server or database (https:), not a file store: not read; no log file found yet: …", describeTraining(st))
	assert.Equal(t, "no training job found yet; processes are looked at every interval", describeTraining(training.Status{}))
}
