package training

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/testutil/trainlog"
	"github.com/xpuscope/xpuscope/semconv"
)

// TensorFlow and JAX jobs, by the libraries they map; a job run by a
// launcher (argv[0] deepspeed), by its command line.
func TestFrameworksAndLaunchers(t *testing.T) {
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "reading other processes' mappings and files needs root")
	}
	dir := t.TempDir()
	start := func(lib, argv0 string) *trainlog.Job {
		d := filepath.Join(dir, filepath.Base(filepath.Dir(lib))+argv0)
		return trainlog.StartJob(t, trainlog.JobOptions{Lib: trainlog.FrameworkLib(t, d, lib), LogDir: filepath.Join(d, "logs", "train"), Argv0: argv0})
	}
	tf := start("tensorflow/libtensorflow_framework.so.2", "")
	jax := start("jaxlib/xla_extension.so", "")
	ds := start("torch/lib/libtorch_cuda.so", "deepspeed")
	for _, j := range []*trainlog.Job{tf, jax, ds} {
		j.Do("scalar Train/Samples/train_loss 1 3.5")
	}
	h := newHarness(t, []int{tf.PID(), jax.PID(), ds.PID()})
	for _, tc := range []struct {
		job       *trainlog.Job
		framework string
		launcher  string
		role      string
	}{
		{tf, semconv.TrainingFrameworkTensorFlow, "", semconv.TrainingRoleWorker},
		{jax, semconv.TrainingFrameworkJAX, "", semconv.TrainingRoleWorker},
		{ds, semconv.TrainingFrameworkPyTorch, semconv.TrainingLauncherDeepSpeed, semconv.TrainingRoleLauncher},
	} {
		j := h.job(t, tc.job.PID(), "read", func(j Job) bool { return len(j.Files) == 1 && j.Files[0].Records >= 2 })
		assert.Equal(t, tc.framework, j.Framework, "pid %d", j.PID)
		assert.Equal(t, tc.launcher, j.Launcher, "pid %d", j.PID)
		require.Len(t, j.Processes, 1)
		assert.Equal(t, tc.role, j.Processes[0].Role)
		p := h.value(t, semconv.TrainingLoss.Name, 3.5, semconv.TrainingFramework.String(tc.framework), semconv.TrainingRun.String("train"))
		if tc.launcher != "" {
			assert.Equal(t, tc.launcher, p.Get(semconv.TrainingLauncher))
		} else {
			assert.False(t, p.Has(semconv.TrainingLauncher))
		}
	}
}

// Beside the file a job writes, one of the Python writer's fixture (in
// the same directory, named with the job's pid, as a second writer of it
// would): its bad checksum, its bytes that are no record and its record
// too large are counted by why; and a backlog of 100,000 records is read
// a bounded piece an interval, to its end.
func TestReadErrorsAndBacklog(t *testing.T) {
	testutil.Native(t, "openat2(2), which QEMU 7.2's user mode lacks")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "reading another process's files needs root")
	}
	dir := t.TempDir()
	logdir := filepath.Join(dir, "runs", "backlog")
	job := trainlog.StartJob(t, trainlog.JobOptions{Lib: trainlog.FrameworkLib(t, dir, "torch/lib/libtorch_cpu.so"), LogDir: logdir})
	pid := job.PID()
	fixture := filepath.Join(logdir, fmt.Sprintf("events.out.tfevents.1700000000.host.%d.7", pid))
	m := trainlog.Fixture(t, fixture)
	require.NoError(t, os.Remove(fixture+".rest")) // the torn record's end, for another test
	big := trainlog.Big(t, filepath.Join(logdir, fmt.Sprintf("events.out.tfevents.1700000001.host.%d.8", pid)), 100_000)

	h := newHarness(t, []int{pid}, WithReadLimit(256<<10), WithInterval(200*time.Millisecond))
	var partial bool
	j := h.job(t, pid, "the backlog read to its end", func(j Job) bool {
		for _, f := range j.Files {
			if strings.HasSuffix(f.Path, ".8") {
				if f.Offset > 0 && f.Offset < f.Size {
					partial = true
				}
				return f.Records == int64(big.Records)
			}
		}
		return false
	})
	assert.True(t, partial, "the backlog was seen part read: bounded reads")
	assert.Len(t, j.Files, 3)
	run := semconv.TrainingRun.String("backlog")
	h.value(t, semconv.TrainingStep.Name, float64(big.Last.Step), run)
	h.value(t, semconv.TrainingLoss.Name, big.Last.Value, run)
	ps := testutil.Collect(t, h.reader)
	format := semconv.TrainingLogFormat.String(tb)
	for why, n := range map[string]int{semconv.TrainingErrorBadCRC: m.BadCRC, semconv.TrainingErrorCorrupt: m.Corrupt, semconv.TrainingErrorTooLarge: m.TooLarge} {
		assert.Equal(t, float64(n), ps.One(t, semconv.XpuscopeTrainingReadErrors.Name, format, semconv.ErrorType.String(why)).Value, why)
	}
	for _, f := range j.Files {
		if strings.HasSuffix(f.Path, ".7") {
			assert.True(t, f.Pending, "the fixture's torn tail is awaited")
			assert.Equal(t, int64(m.Records), f.Records)
		}
	}
}

// fakeResolver places every process in one pod, and remembers what it
// was asked and told.
type fakeResolver struct {
	mu     sync.Mutex
	asked  []int
	forgot []int
}

func (r *fakeResolver) ProcessAttributes(pid int) ([]attribute.KeyValue, trace.SpanContext) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, pid)
	return []attribute.KeyValue{semconv.K8sPodName.String("trainer-0"), semconv.K8sNamespaceName.String("ml")}, trace.SpanContext{}
}

func (r *fakeResolver) Forget(pid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forgot = append(r.forgot, pid)
}

// Caps: the tags past WithMaxTags and the files past WithMaxFiles are
// counted, not read; a job's series carry its pod; a job that exits is
// forgotten, its series gone and the resolver told.
func TestCapsPodsAndExit(t *testing.T) {
	testutil.Native(t, "openat2(2), which QEMU 7.2's user mode lacks")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "reading another process's files needs root")
	}
	dir := t.TempDir()
	job := trainlog.StartJob(t, trainlog.JobOptions{Lib: trainlog.FrameworkLib(t, dir, "torch/lib/libtorch_cpu.so"), LogDir: filepath.Join(dir, "runs", "capped")})
	pid := job.PID()
	job.Do("scalar loss 1 1")
	job.Do("scalar acc 1 0.5")
	job.Do("scalar f1 1 0.25")
	job.Do("scalar recall 1 0.125")
	r := &fakeResolver{}
	// A second of interval: a file past the cap is counted only while the
	// first has grown within two intervals (else the first is let go for
	// it), and with every core busy the test's steps between the first
	// file's last growth and the second file took more than the harness's
	// 2 × 100 ms (a CI run).
	h := newHarness(t, []int{pid}, WithMaxTags(1), WithMaxFiles(1), WithResolver(r), WithInterval(time.Second))
	h.job(t, pid, "read", func(j Job) bool { return len(j.Files) == 1 && j.Files[0].Records == 5 })
	pod := semconv.K8sPodName.String("trainer-0")
	h.value(t, semconv.TrainingLoss.Name, 1, pod, semconv.K8sNamespaceName.String("ml"))
	ps := testutil.Collect(t, h.reader)
	assert.Len(t, ps.Find(semconv.TrainingScalar.Name), 1, "one tag of three")
	h.value(t, semconv.XpuscopeTrainingOverflow.Name, 2, semconv.XpuscopeTrainingReason.String(semconv.TrainingReasonTags))
	// A second file while the first still grows: past the cap.
	job.Do("reopen")
	job.Do("scalar loss 2 0.5")
	assert.Eventually(t, func() bool {
		return len(testutil.Collect(t, h.reader).Find(semconv.XpuscopeTrainingOverflow.Name, semconv.XpuscopeTrainingReason.String(semconv.TrainingReasonFiles))) == 1
	}, 30*time.Second, 10*time.Millisecond, "the file past the cap, counted")

	job.Stop()
	assert.Eventually(t, func() bool { return len(h.src.Status().Jobs) == 0 }, 30*time.Second, 10*time.Millisecond, "forgotten")
	ps = testutil.Collect(t, h.reader)
	assert.Empty(t, ps.Find(semconv.TrainingLoss.Name), "its series gone")
	assert.Empty(t, ps.Find(semconv.TrainingProcesses.Name))
	r.mu.Lock()
	defer r.mu.Unlock()
	assert.Equal(t, []int{pid}, r.asked, "asked once")
	assert.Equal(t, []int{pid}, r.forgot)
}

// MLflow and CSV files in a job's own mount namespace: its working
// directory (where lightning_logs is) and its MLflow store on a tmpfs
// the host does not see, read through /proc/<pid>/root.
func TestMLflowAndCSVInItsOwnMountNamespace(t *testing.T) {
	testutil.Native(t, "openat2(2), which QEMU 7.2's user mode lacks")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "a job in a mount namespace of its own needs root")
	}
	dir := t.TempDir()
	mnt := filepath.Join(dir, "mnt")
	require.NoError(t, os.MkdirAll(mnt, 0o755))
	store := filepath.Join(mnt, "mlruns")
	job := trainlog.StartJob(t, trainlog.JobOptions{
		Lib: trainlog.FrameworkLib(t, dir, "torch/lib/libtorch_cpu.so"), MountNS: mnt, Dir: filepath.Join(mnt, "work"),
		MLflowRun: filepath.Join(store, "7", "feedfacefeedfacefeedfacefeedface"), CSVDir: filepath.Join(mnt, "work", "lightning_logs", "version_3"),
		Env: []string{"MLFLOW_TRACKING_URI=" + store},
	})
	pid := job.PID()
	job.Do("mlflow train/loss 5 0.25")
	job.Do("csv epoch=2 step=50 train_loss=0.5")
	_, err := os.Stat(filepath.Join(mnt, "work"))
	require.ErrorIs(t, err, os.ErrNotExist, "the host does not see the job's tmpfs")
	h := newHarness(t, []int{pid})
	h.value(t, semconv.TrainingLoss.Name, 0.25, semconv.TrainingLogFormat.String(semconv.TrainingLogMLflow), semconv.TrainingRun.String("feedfacefeedfacefeedfacefeedface"))
	h.value(t, semconv.TrainingLoss.Name, 0.5, semconv.TrainingLogFormat.String(semconv.TrainingLogCSV), semconv.TrainingRun.String("version_3"))
	h.value(t, semconv.TrainingEpoch.Name, 2, semconv.TrainingLogFormat.String(semconv.TrainingLogCSV))
	j := h.job(t, pid, "both files", func(j Job) bool { return len(j.Files) == 2 })
	assert.Equal(t, store, j.MLflowStore)
	job.Do("csv epoch=2 step=60 train_loss=0.375")
	h.value(t, semconv.TrainingLoss.Name, 0.375, semconv.TrainingLogFormat.String(semconv.TrainingLogCSV))
}
