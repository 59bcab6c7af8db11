package training

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/testutil/trainlog"
	"github.com/xpuscope/xpuscope/semconv"
)

var (
	pytorch = semconv.TrainingFramework.String(semconv.TrainingFrameworkPyTorch)
	tb      = semconv.TrainingLogTensorBoard
)

func f32(x float64) float64 { return float64(float32(x)) }

// A PyTorch job in a mount namespace of its own (its files on a tmpfs the
// host does not see), found by the library it maps and the events file it
// holds open, read through /proc/<pid>/root and its fd link: values
// appended while the Source runs come out; a torn record is waited for,
// not misread; a file closed and a new one opened in the same directory
// is followed; every form of scalar maps to its metric.
func TestTensorBoardJobInItsOwnMountNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "a job in a mount namespace of its own, and reading another process's files, need root")
	}
	dir := t.TempDir()
	mnt := filepath.Join(dir, "mnt")
	require.NoError(t, os.MkdirAll(mnt, 0o755))
	lib := trainlog.FrameworkLib(t, dir, "site-packages/torch/lib/libtorch_cpu.so")
	job := trainlog.StartJob(t, trainlog.JobOptions{Lib: lib, LogDir: filepath.Join(mnt, "runs", "exp1"), MountNS: mnt})
	_, err := os.Stat(job.Events)
	require.ErrorIs(t, err, os.ErrNotExist, "the host does not see the job's tmpfs")
	pid := job.PID()
	job.Do("scalar loss 1 2.5")
	job.Do("scalar lr 1 0.001")
	job.Do("tensor grad_norm 1 0.5 DT_HALF")
	job.Do("tensor my/accuracy 1 0.75 DT_BFLOAT16")
	job.Do("tensor epoch 1 0 DT_DOUBLE")

	h := newHarness(t, []int{pid})
	j := h.job(t, pid, "its events file read", func(j Job) bool { return len(j.Files) == 1 && j.Files[0].Records >= 6 })
	assert.Equal(t, semconv.TrainingFrameworkPyTorch, j.Framework)
	assert.Equal(t, job.Events, j.Files[0].Path, "the path as the job names it")
	assert.Equal(t, tb, j.Files[0].Format)
	assert.Equal(t, "exp1", j.Files[0].Run)

	run := semconv.TrainingRun.String("exp1")
	loss := h.value(t, semconv.TrainingLoss.Name, 2.5, run, pytorch)
	assert.Equal(t, tb, loss.Get(semconv.TrainingLogFormat))
	assert.Equal(t, "python3", loss.Get(semconv.ProcessExecutableName)[:7])
	h.value(t, semconv.TrainingLearningRate.Name, f32(0.001), run)
	h.value(t, semconv.TrainingGradientNorm.Name, 0.5, run)
	h.value(t, semconv.TrainingEpoch.Name, 0, run)
	h.value(t, semconv.TrainingStep.Name, 1, run)
	h.value(t, semconv.TrainingScalar.Name, 0.75, run, semconv.TrainingTag.String("my/accuracy"))
	p := h.value(t, semconv.TrainingProcesses.Name, 1, semconv.ProcessPID.Int(pid))
	assert.Equal(t, semconv.TrainingRoleWorker, p.Get(semconv.TrainingRole))
	assert.Equal(t, "exp1", p.Get(semconv.TrainingRun))

	// Appended while the Source runs.
	job.Do("scalar loss 2 2.0")
	h.value(t, semconv.TrainingLoss.Name, 2.0, run)
	h.value(t, semconv.TrainingStep.Name, 2, run)
	// A step rate, from the records' times: no samples or tokens logged.
	ps := testutil.Collect(t, h.reader).Find(semconv.TrainingThroughput.Name, run)
	require.Len(t, ps, 1)
	assert.Equal(t, semconv.TrainingItemStep, ps[0].Get(semconv.TrainingThroughputItem))
	assert.Greater(t, ps[0].Value, 0.0)

	// A torn record: waited for, not misread.
	job.Do("torn loss 3 1.5")
	h.job(t, pid, "the torn record awaited", func(j Job) bool { return len(j.Files) == 1 && j.Files[0].Pending })
	h.value(t, semconv.TrainingLoss.Name, 2.0, run)
	job.Do("finish")
	h.value(t, semconv.TrainingLoss.Name, 1.5, run)
	h.value(t, semconv.TrainingStep.Name, 3, run)

	// The writer closes its file and opens another in the same
	// directory: followed.
	next := job.Do("reopen")
	require.NotEqual(t, job.Events, next)
	job.Do("scalar loss 4 1.25")
	h.value(t, semconv.TrainingLoss.Name, 1.25, run)
	j = h.job(t, pid, "both files", func(j Job) bool { return len(j.Files) == 2 })
	assert.ElementsMatch(t, []string{job.Events, next}, []string{j.Files[0].Path, j.Files[1].Path})

	testutil.CheckScope(t, h.reader, ScopeName)
	ps = testutil.Collect(t, h.reader)
	assert.Equal(t, float64(1), ps.One(t, semconv.XpuscopeTrainingJobs.Name, pytorch, semconv.TrainingLogFormat.String(tb)).Value)
	assert.GreaterOrEqual(t, ps.One(t, semconv.XpuscopeTrainingRecords.Name, semconv.TrainingLogFormat.String(tb)).Value, float64(8))
	assert.Empty(t, ps.Find(semconv.XpuscopeTrainingReadErrors.Name), "no read error")
}

// A job that logs to an MLflow file store (where its MLFLOW_TRACKING_URI
// says: its files are not held open, MLflow opens, appends and closes
// them) and to Lightning's CSVLogger (under its working directory's
// lightning_logs, rewritten whole when a column is added).
func TestMLflowAndCSVJob(t *testing.T) {
	testutil.Native(t, "openat2(2), which QEMU 7.2's user mode lacks")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "reading another process's files and environment needs root")
	}
	dir := t.TempDir()
	lib := trainlog.FrameworkLib(t, dir, "site-packages/torch/_C.cpython-311-x86_64-linux-gnu.so")
	store := filepath.Join(dir, "store", "mlruns")
	runDir := filepath.Join(store, "0", "0123456789abcdef0123456789abcdef")
	// An old run, made before the job started: not the job's.
	require.NoError(t, os.MkdirAll(filepath.Join(store, "0", "old", "metrics"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(store, "0", "old", "metrics", "loss"), []byte("1 99 1\n"), 0o644))
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(store, "0", "old"), old, old))
	job := trainlog.StartJob(t, trainlog.JobOptions{
		Lib: lib, Dir: dir, MLflowRun: runDir, CSVDir: filepath.Join(dir, "lightning_logs", "version_0"),
		Env: []string{"MLFLOW_TRACKING_URI=file://" + store, "MLFLOW_TRACKING_TOKEN=SECRET-token"},
	})
	pid := job.PID()
	job.Do("mlflow loss 1 0.9")
	job.Do("mlflow learning_rate 1 0.01")
	job.Do("mlflow tokens_per_second 1 1234.5")
	job.Do("csv epoch=0 step=9 train_loss=0.9 val_acc=0.5")
	job.Do("csv epoch=0 step=19 train_loss=0.8")

	h := newHarness(t, []int{pid})
	j := h.job(t, pid, "its MLflow metrics and metrics.csv read", func(j Job) bool { return len(j.Files) == 4 })
	assert.Equal(t, store, j.MLflowStore)
	mlflow := semconv.TrainingLogFormat.String(semconv.TrainingLogMLflow)
	csv := semconv.TrainingLogFormat.String(semconv.TrainingLogCSV)
	mlrun := semconv.TrainingRun.String("0123456789abcdef0123456789abcdef")
	h.value(t, semconv.TrainingLoss.Name, 0.9, mlflow, mlrun, pytorch)
	h.value(t, semconv.TrainingLearningRate.Name, 0.01, mlflow)
	tp := h.value(t, semconv.TrainingThroughput.Name, 1234.5, mlflow)
	assert.Equal(t, semconv.TrainingItemToken, tp.Get(semconv.TrainingThroughputItem))
	h.value(t, semconv.TrainingStep.Name, 1, mlflow)
	csvRun := semconv.TrainingRun.String("version_0")
	h.value(t, semconv.TrainingLoss.Name, 0.8, csv, csvRun)
	h.value(t, semconv.TrainingStep.Name, 19, csv)
	h.value(t, semconv.TrainingEpoch.Name, 0, csv)
	h.value(t, semconv.TrainingScalar.Name, 0.5, csv, semconv.TrainingTag.String("val_acc"))

	// While it runs: a key with a slash (a directory of its own), a new
	// column (the CSV rewritten whole with its new header).
	job.Do("mlflow val/loss 2 0.7")
	job.Do("mlflow loss 2 0.6")
	h.value(t, semconv.TrainingScalar.Name, 0.7, mlflow, semconv.TrainingTag.String("val/loss"))
	h.value(t, semconv.TrainingLoss.Name, 0.6, mlflow)
	h.value(t, semconv.TrainingStep.Name, 2, mlflow)
	job.Do("csv epoch=1 step=29 train_loss=0.7 lr-AdamW=0.001")
	h.value(t, semconv.TrainingLoss.Name, 0.7, csv)
	h.value(t, semconv.TrainingLearningRate.Name, 0.001, csv)
	h.value(t, semconv.TrainingStep.Name, 29, csv)
	h.value(t, semconv.TrainingEpoch.Name, 1, csv)

	ps := testutil.Collect(t, h.reader)
	assert.Empty(t, ps.Find(semconv.TrainingLoss.Name, semconv.TrainingRun.String("old")), "the run from before the job is not read")
	assert.Empty(t, ps.Find(semconv.XpuscopeTrainingReadErrors.Name), "no read error")
	j = h.job(t, pid, "five files", func(j Job) bool { return len(j.Files) == 5 })
	for _, out := range []string{fmt.Sprintf("%+v", j), fmt.Sprintf("%+v", ps)} {
		assert.NotContains(t, out, "SECRET", "an environment variable other than the tracking URI")
	}
}
