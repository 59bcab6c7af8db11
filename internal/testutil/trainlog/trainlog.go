// Package trainlog runs trainlog.py, the tests' own writer of what
// training jobs write: TensorBoard event files (framing and protocol
// buffers encoded by hand in Python, with a CRC-32C of its own, so that
// the Go reader is never checked against itself), MLflow file-store
// metric files and Lightning's CSVLogger metrics.csv; and a training job
// that appends to them as it is told.
package trainlog

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// Python is the interpreter the writer runs under: the system's, which
// has the standard library the script uses and nothing it relies on.
const Python = "/usr/bin/python3"

// Script returns the path of trainlog.py.
func Script(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat(Python); err != nil {
		testutil.SkipOrFail(t, "the test writer needs %s: %v", Python, err)
	}
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	return filepath.Join(filepath.Dir(file), "trainlog.py")
}

// Scalar is a scalar the writer wrote, as it computed it.
type Scalar struct {
	Tag      string  `json:"tag"`
	Step     int64   `json:"step"`
	WallTime float64 `json:"wall_time"`
	Value    float64 `json:"value"`
	DType    string  `json:"dtype"`
	Tensor   bool    `json:"tensor"`
}

// Manifest is what the fixture file holds.
type Manifest struct {
	Scalars []Scalar `json:"scalars"`
	// Records is the records a reader with a 64 KiB buffer hands out,
	// the torn one not included.
	Records  int    `json:"records"`
	BadCRC   int    `json:"bad_crc"`
	Corrupt  int    `json:"corrupt"`
	TooLarge int    `json:"too_large"`
	Torn     Scalar `json:"torn"` // the last record's, whose end is in path+".rest"
	Size     int64  `json:"size"`
}

// Fixture writes the fixture TensorBoard file at path, and its rest at
// path+".rest": scalars in both forms and of every dtype, values that are
// not scalars, a record with a bad checksum, bytes that are no record, a
// record of 100 KiB, and a torn last record.
func Fixture(t testing.TB, path string) Manifest {
	t.Helper()
	var m Manifest
	run(t, &m, "fixture", path)
	return m
}

// BigManifest is what Big wrote.
type BigManifest struct {
	Records int    `json:"records"`
	Last    Scalar `json:"last"`
}

// Big writes n records of one simple value each (tag loss, steps 0 to
// n-1, value step/4) after the file_version record.
func Big(t testing.TB, path string, n int) BigManifest {
	t.Helper()
	var m BigManifest
	run(t, &m, "big", path, fmt.Sprint(n))
	return m
}

func run(t testing.TB, v any, args ...string) {
	t.Helper()
	cmd := exec.Command(Python, append([]string{Script(t)}, args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	require.NoError(t, err, "trainlog.py %v", args)
	require.NoError(t, json.Unmarshal(out, v), "trainlog.py %v: %s", args, out)
}

// JobOptions say what a job writes and how it runs.
type JobOptions struct {
	// Lib is a library file the job loads, named as a framework's
	// (torch/lib/libtorch_cpu.so): what the Source recognises it by.
	Lib string
	// LogDir is where it writes TensorBoard files ("" for none).
	LogDir string
	// MLflowRun is the run directory of an MLflow file store it writes
	// metrics to (<root>/<experiment>/<run>; "" for none).
	MLflowRun string
	// CSVDir is where it writes Lightning's metrics.csv ("" for none).
	CSVDir string
	// Env is added to its environment (MLFLOW_TRACKING_URI=…).
	Env []string
	// Argv0 is its argv[0]; the interpreter's path by default.
	Argv0 string
	// MountNS runs it in a mount namespace of its own, with a tmpfs on
	// MountNS (a directory): the files it writes there are seen only
	// through /proc/<pid>/root. Needs root.
	MountNS string
	// Dir is its working directory; with MountNS, entered after the
	// tmpfs is mounted (it may be on it).
	Dir string
}

// Job is a running training job.
type Job struct {
	t      testing.TB
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	Events string // the events file it holds open, as it names it
}

// StartJob starts a job and waits until it has loaded its library and
// opened its first events file.
func StartJob(t testing.TB, o JobOptions) *Job {
	t.Helper()
	args := []string{Script(t), "job"}
	for _, kv := range [][2]string{{"--lib", o.Lib}, {"--logdir", o.LogDir}, {"--mlflow-run", o.MLflowRun}, {"--csv-dir", o.CSVDir}} {
		if kv[1] != "" {
			args = append(args, kv[0], kv[1])
		}
	}
	var cmd *exec.Cmd
	if o.MountNS != "" {
		if os.Geteuid() != 0 {
			testutil.SkipOrFail(t, "a job in a mount namespace of its own needs root")
		}
		// unshare makes the namespace (private propagation: the tmpfs
		// stays in it), the shell mounts the tmpfs, then runs the job in
		// its place.
		cd := ""
		if o.Dir != "" {
			cd = "mkdir -p " + shellQuote(o.Dir) + " && cd " + shellQuote(o.Dir) + " && "
		}
		script := fmt.Sprintf("mount -t tmpfs xpuscope-test %s && %sexec %s", shellQuote(o.MountNS), cd, strings.Join(quoteAll(append([]string{Python}, args...)), " "))
		cmd = exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script)
	} else {
		cmd = exec.Command(Python, args...)
	}
	if o.Argv0 != "" && o.MountNS == "" {
		cmd.Args[0] = o.Argv0
	}
	cmd.Env = append(os.Environ(), o.Env...)
	if o.MountNS == "" {
		cmd.Dir = o.Dir
	}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	j := &Job{t: t, cmd: cmd, in: in, out: bufio.NewReader(out)}
	t.Cleanup(j.Stop)
	line := j.line()
	path, ok := strings.CutPrefix(line, "ready")
	require.True(t, ok, "the job said %q", line)
	j.Events = strings.TrimSpace(path)
	return j
}

// PID is the job's pid.
func (j *Job) PID() int { return j.cmd.Process.Pid }

// Do sends the job a command (scalar TAG STEP VALUE, tensor TAG STEP VALUE
// DTYPE, torn TAG STEP VALUE, finish, reopen, close, mlflow KEY STEP
// VALUE, csv K=V…) and waits until it is done: the file is written and
// flushed. It returns what the job said of it (reopen: the new file).
func (j *Job) Do(format string, args ...any) string {
	j.t.Helper()
	_, err := fmt.Fprintf(j.in, format+"\n", args...)
	require.NoError(j.t, err)
	line := j.line()
	rest, ok := strings.CutPrefix(line, "ok")
	require.True(j.t, ok, "the job said %q to %q", line, fmt.Sprintf(format, args...))
	return strings.TrimSpace(rest)
}

func (j *Job) line() string {
	j.t.Helper()
	type result struct {
		s   string
		err error
	}
	ch := make(chan result, 1)
	go func() {
		s, err := j.out.ReadString('\n')
		ch <- result{s, err}
	}()
	select {
	case r := <-ch:
		require.NoError(j.t, r.err, "reading the job's answer")
		return strings.TrimSpace(r.s)
	case <-time.After(60 * time.Second):
		j.t.Fatal("the job did not answer in 60 s")
		return ""
	}
}

// Stop ends the job and waits for it.
func (j *Job) Stop() {
	if j.cmd.ProcessState != nil {
		return
	}
	_, _ = io.WriteString(j.in, "exit\n")
	_ = j.in.Close()
	done := make(chan struct{})
	go func() { _ = j.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = j.cmd.Process.Kill()
		<-done
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = shellQuote(s)
	}
	return out
}

// FrameworkLib copies a real shared library (libz) to dir under a
// framework library's relative name (torch/lib/libtorch_cpu.so,
// tensorflow/libtensorflow_framework.so.2, jaxlib/xla_extension.so) for a
// job to load: a process that maps it is what the Source recognises.
func FrameworkLib(t testing.TB, dir, name string) string {
	t.Helper()
	src, err := os.ReadFile("/lib/x86_64-linux-gnu/libz.so.1")
	if err != nil {
		testutil.SkipOrFail(t, "libz to load as a framework's library: %v", err)
	}
	path := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, src, 0o755))
	return path
}
