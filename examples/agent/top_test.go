package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/examples/agent/internal/top"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/testutil/cudaprog"
	"github.com/xpuscope/xpuscope/internal/testutil/llmserver"
	"github.com/xpuscope/xpuscope/internal/testutil/trainlog"
	"github.com/xpuscope/xpuscope/semconv"
)

// updateTop rewrites the recorded scrapes that top's model tests replay
// (internal/top/testdata/agent), from TestTopRecordedFromTheAgent.
var updateTop = flag.Bool("top.update", false, "rewrite internal/top/testdata/agent from a run of the agent")

// The workload top is shown in its tests: what cudaprog's late program
// launches, the model the LLM calls name, the fake vLLM's model.
const (
	topKernel    = "saxpy(int, float, float*, float*)" // cudaprog.KernelSaxpy, demangled
	topLLMModel  = "gpt-4o-mini"
	topVLLMModel = "meta-llama/Llama-3.1-8B-Instruct"
)

// topWorkload is what runs on the node for top's tests: a program calling
// the real libcudart (cudaprog's late: saxpy every 2 ms), streamed LLM
// calls over TLS to the mock, a fake vLLM server, and a training job (the
// tests' Python writer, loading a library named as PyTorch's) writing its
// loss and learning rate to TensorBoard.
type topWorkload struct {
	late           *cudaprog.Proc
	llm            *llmserver.Server
	vllm, vllmPort int
	train          *trainlog.Job
	step           int
}

// topRun is the training job's run: its TensorBoard directory's name,
// one no other test's job has (genai/training's tests, which go test runs
// beside this package's, write to exp1).
const topRun = "top-run"

// startTopWorkload starts the workload. The agent must be running: the
// late program is held until it is probed.
func startTopWorkload(t *testing.T) *topWorkload {
	t.Helper()
	w := &topWorkload{}
	payload, err := filepath.Abs("../../genai/serving/testdata/vllm-v1.prom")
	require.NoError(t, err)
	w.vllm, w.vllmPort = startModelServer(t, payload, "vllm", "serve", topVLLMModel, "--port", "%d")
	w.late = cudaprog.Start(t, cudaprog.Build(t, "late"), cudaprog.RealCudart(t), "1000000", "2000")
	w.late.Go()
	w.llm = llmserver.Start(t, llmserver.Options{TLS: true, FirstDelay: 30 * time.Millisecond, ChunkDelay: 5 * time.Millisecond, Chunks: 3})
	dir := t.TempDir()
	w.train = trainlog.StartJob(t, trainlog.JobOptions{
		Lib: trainlog.FrameworkLib(t, dir, "torch/lib/libtorch_cpu.so"), LogDir: filepath.Join(dir, "runs", topRun),
	})
	w.trainStep(t)
	return w
}

// trainStep has the training job log 10 steps more: its loss (2 over the
// step) and learning rate.
func (w *topWorkload) trainStep(t *testing.T) {
	t.Helper()
	w.step += 10
	w.train.Do("scalar loss %d %g", w.step, 2/float64(w.step))
	w.train.Do("scalar lr %d 0.001", w.step)
}

// call makes one streamed chat completion with curl (the system
// OpenSSL, which the agent probes).
func (w *topWorkload) call(t *testing.T) {
	t.Helper()
	out, err := exec.Command("curl", "-sS", "--http1.1", "-N", "--fail", "--cacert", w.llm.CAFile,
		"-H", "Content-Type: application/json",
		"-d", `{"model":"`+topLLMModel+`","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`,
		"-o", "/dev/null", w.llm.URL+"/v1/chat/completions").CombinedOutput()
	require.NoError(t, err, "curl %s: %s", w.llm.URL, out)
}

// shows reports whether a Frame has the workload: the late program's
// saxpy launches, the LLM calls' model, the vLLM server's model, the
// training job's loss and step rate.
func (w *topWorkload) shows(f *top.Frame) (process, llm, server, training bool) {
	for _, p := range f.Processes {
		if p.PID == int64(w.late.Pid) && slices.ContainsFunc(p.Kernels, func(k top.KernelRow) bool { return k.Name == topKernel && k.Total > 0 }) {
			process = true
		}
	}
	for _, l := range f.LLM {
		llm = llm || l.Model == topLLMModel
	}
	for _, s := range f.Servers {
		server = server || (s.Kind == "vllm" && s.Model == topVLLMModel)
	}
	for _, r := range f.Training {
		loss, rate := trainingFigure(r, "loss"), trainingFigure(r, "steps/s")
		training = training || (slices.Contains(r.Key, topRun) && loss > 0 && rate > 0)
	}
	return
}

// trainingFigure is the Training view's column of that title in r; NaN
// for none.
func trainingFigure(r top.TrainingRow, title string) float64 {
	for i, c := range top.TrainingColumns() {
		if c.Title == title && i < len(r.Values) {
			return r.Values[i]
		}
	}
	return math.NaN()
}

// waitShown makes LLM calls until the agent at addr shows the whole
// workload (a call made before the agent probed curl's libssl is not
// seen), as top reads it.
func (w *topWorkload) waitShown(t *testing.T, addr string) {
	t.Helper()
	ref := top.NewRefresher(top.NewHTTPSource("http://"+addr+"/metrics", top.DefaultBodyLimit), 10*time.Second)
	var p, l, s, tr bool
	ok := poll(60*time.Second, func() bool {
		w.call(t)
		w.trainStep(t)
		f, err := ref.Refresh(t.Context())
		require.NoError(t, err)
		p, l, s, tr = w.shows(f)
		return p && l && s && tr
	})
	require.True(t, ok, "after 60s the agent shows: late's %s launches %v, LLM model %s %v, vLLM server %v, training run %s's loss and step rate %v",
		topKernel, p, topLLMModel, l, s, topRun, tr)
}

// replay is a Source of recorded scrapes, in turn.
type replay struct {
	scrapes []top.Scrape
	i       int
}

func (r *replay) String() string { return "recorded" }

func (r *replay) Scrape(context.Context) (top.Scrape, error) {
	if r.i >= len(r.scrapes) {
		return top.Scrape{}, io.EOF
	}
	r.i++
	return r.scrapes[r.i-1], nil
}

// scrapeText reads the agent's /metrics in the text format, without the
// target_info family (the host's name and id, which top does not read and
// the recording must not carry), and without the series of training jobs
// other than the workload's (other packages' tests run theirs on the same
// machine, and the agent sees every job of the host).
func scrapeText(t *testing.T, addr string) []byte {
	t.Helper()
	body, err := fetch("http://"+addr+"/metrics", "text/plain;version=0.0.4")
	require.NoError(t, err)
	run := strings.ReplaceAll(string(semconv.TrainingRun), ".", "_") + "="
	var out bytes.Buffer
	skip := false
	for line := range strings.Lines(body) {
		if strings.HasPrefix(line, "# HELP ") || strings.HasPrefix(line, "# TYPE ") {
			skip = strings.HasPrefix(line[7:], "target_info ")
		}
		if skip || (strings.Contains(line, run) && !strings.Contains(line, run+strconv.Quote(topRun))) {
			continue
		}
		out.WriteString(line)
	}
	return out.Bytes()
}

// TestTopRecordedFromTheAgent runs the agent against the real libcudart
// (cudaprog's late program launching saxpy every 2 ms), streamed LLM
// calls over TLS to the mock, a fake vLLM server and the fake NVML's two
// GPUs, takes two scrapes 2 s apart, and checks what top builds of them:
// the process and its kernel with a launch rate near 500/s, the LLM
// calls' model with a call rate and a time to first chunk, the vLLM
// server's queue, batch and KV cache, the GPUs, the features. With
// -top.update it writes the two scrapes to internal/top/testdata/agent,
// which the model tests replay.
func TestTopRecordedFromTheAgent(t *testing.T) {
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "the agent's cudatrace and genai features load BPF programs, and serving reads other processes' sockets: root")
	}
	addr := startAgent(t, "-interval", "1s", "-listen", "127.0.0.1:0", "-nvml-library", testutil.BuildFakeNVML(t))
	w := startTopWorkload(t)
	w.waitShown(t, addr)

	at1 := time.Now()
	s1 := scrapeText(t, addr)
	for range 5 {
		w.call(t)
	}
	w.trainStep(t)
	time.Sleep(2*time.Second - time.Since(at1)) // the rates' interval: a figure, not a wait for a condition
	at2 := time.Now()
	s2 := scrapeText(t, addr)
	text := expfmt.NewFormat(expfmt.TypeTextPlain)
	ref := top.NewRefresher(&replay{scrapes: []top.Scrape{top.ExpfmtScrape(at1, s1, text), top.ExpfmtScrape(at2, s2, text)}}, time.Second)
	_, err := ref.Refresh(t.Context())
	require.NoError(t, err)
	f, err := ref.Refresh(t.Context())
	require.NoError(t, err)
	checkRecordedFrame(t, f, w.late.Pid, at2.Sub(at1))

	if *updateTop {
		dir := filepath.Join("internal", "top", "testdata", "agent")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "scrape1.prom"), s1, 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "scrape2.prom"), s2, 0o644))
		meta := fmt.Sprintf("at1 %s\nat2 %s\nlate %d\n", at1.UTC().Format(time.RFC3339Nano), at2.UTC().Format(time.RFC3339Nano), w.late.Pid)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "meta.txt"), []byte(meta), 0o644))
		t.Logf("wrote %s", dir)
	}
}

// checkRecordedFrame checks a Frame of the agent with the top workload.
func checkRecordedFrame(t *testing.T, f *top.Frame, late int, interval time.Duration) {
	t.Helper()
	require.InDelta(t, interval.Seconds(), f.Interval.Seconds(), 1e-6)

	require.Len(t, f.GPUs, 2, "the fake NVML's GPUs")
	assert.Equal(t, "NVIDIA Fake H100 80GB HBM3", f.GPUs[0].Name)
	assert.InDelta(t, 0.75, f.GPUs[0].Util, 1e-9)
	assert.InDelta(t, 20<<30, f.GPUs[0].MemUsed, 1)
	assert.InDelta(t, 312.5, f.GPUs[0].Power, 1e-9)
	assert.Equal(t, []string{"hw_thermal_slowdown", "sw_power_cap"}, f.GPUs[0].Throttle)

	i := slices.IndexFunc(f.Processes, func(p top.ProcessRow) bool { return p.PID == int64(late) })
	require.GreaterOrEqual(t, i, 0, "no row of the late program (pid %d) in %+v", late, f.Processes)
	p := f.Processes[i]
	assert.Equal(t, "late", p.Exe)
	require.NotEmpty(t, p.Kernels)
	assert.Equal(t, topKernel, p.Kernels[0].Name)
	// 2 ms apart, each launch also sleeping: at most 500 a second, and
	// well above 100 unless the machine starves the program. A launch is
	// counted when the agent's reader takes its record from the ring (a
	// 50 ms poll, later when a loaded machine delays the reader), so a
	// scrape's count lags the launches by a varying time: the delta of
	// two scrapes may hold launches made before the first (659/s was
	// seen under load). Up to 1 s of them is allowed.
	assert.Greater(t, p.Launches, 100.0, "launches/s")
	assert.LessOrEqual(t, p.Launches, 500*(interval+time.Second).Seconds()/interval.Seconds(), "launches/s")
	assert.InDelta(t, p.Launches, p.Kernels[0].Rate, 1e-9)

	i = slices.IndexFunc(f.LLM, func(l top.LLMRow) bool { return l.Model == topLLMModel })
	require.GreaterOrEqual(t, i, 0, "no LLM row of %s in %+v", topLLMModel, f.LLM)
	l := f.LLM[i]
	assert.Greater(t, l.Calls, 0.0)
	assert.LessOrEqual(t, l.Calls, 6/interval.Seconds(), "at most the 5 calls between the scrapes (and one in flight)")
	assert.GreaterOrEqual(t, l.TTFTP50, 0.02, "the mock waits 30 ms for its first chunk; buckets from 0.02 s")
	assert.Greater(t, l.TokensOut, 0.0)

	i = slices.IndexFunc(f.Servers, func(s top.ServerRow) bool { return s.Kind == "vllm" })
	require.GreaterOrEqual(t, i, 0, "no vLLM row in %+v", f.Servers)
	s := f.Servers[i]
	assert.Equal(t, topVLLMModel, s.Model)
	assert.Equal(t, 3.0, s.Waiting, "vllm:num_requests_waiting")
	assert.Equal(t, 8.0, s.Running, "vllm:num_requests_running")
	assert.InDelta(t, 0.4375, s.KVCache, 1e-9, "vllm:kv_cache_usage_perc")
	assert.Zero(t, s.Requests, "the fake's figures do not move")

	var active []string
	for _, ft := range f.Features {
		if ft.State == "active" {
			active = append(active, ft.Name)
		}
	}
	assert.Equal(t, []string{"podjoin", "gpu", "cudatrace", "hiptrace", "serving", "genai", "node", "training"}, active)

	i = slices.IndexFunc(f.Training, func(r top.TrainingRow) bool { return slices.Contains(r.Key, topRun) })
	require.GreaterOrEqual(t, i, 0, "no training row of run %s in %+v", topRun, f.Training)
	r := f.Training[i]
	assert.Regexp(t, `^python3`, r.Key[0], "the job's executable")
	loss := trainingFigure(r, "loss")
	assert.True(t, loss > 0 && loss <= 0.2, "the loss logged last, 2 over a step of 10 or more: %v", loss)
	assert.InDelta(t, 0.001, trainingFigure(r, "lr"), 1e-9, "the learning rate (a float32 in TensorBoard)")
	assert.Greater(t, trainingFigure(r, "steps/s"), 0.0, "derived from the steps and the records' times")
	assert.GreaterOrEqual(t, trainingFigure(r, "step"), 20.0)
}

// tmuxSession is a tmux server of the test's own, with one session.
type tmuxSession struct {
	t    *testing.T
	bin  string
	sock string
}

// newTmux starts a detached session of w×h running the shell command.
func newTmux(t *testing.T, w, h int, command string) *tmuxSession {
	t.Helper()
	bin, err := exec.LookPath("tmux")
	if err != nil {
		testutil.SkipOrFail(t, "tmux is not installed (Debian package tmux; run make test): %v", err)
	}
	s := &tmuxSession{t: t, bin: bin, sock: filepath.Join(t.TempDir(), "tmux.sock")}
	s.run("-f", "/dev/null", "new-session", "-d", "-x", strconv.Itoa(w), "-y", strconv.Itoa(h), "-s", "top", "sh", "-c", command)
	t.Cleanup(func() { _ = exec.Command(bin, "-S", s.sock, "kill-server").Run() })
	return s
}

func (s *tmuxSession) run(args ...string) string {
	s.t.Helper()
	out, err := exec.Command(s.bin, append([]string{"-S", s.sock}, args...)...).CombinedOutput()
	require.NoError(s.t, err, "tmux %v: %s", args, out)
	return string(out)
}

// keys sends keys: tmux's key names (Enter, Escape) or, with literal,
// text.
func (s *tmuxSession) keys(literal bool, keys ...string) {
	s.t.Helper()
	args := []string{"send-keys", "-t", "top"}
	if literal {
		args = append(args, "-l")
	}
	s.run(append(args, keys...)...)
}

// screen is what the pane shows.
func (s *tmuxSession) screen() string { return s.run("capture-pane", "-p", "-t", "top") }

// wait waits until the screen satisfies cond, and returns it.
func (s *tmuxSession) wait(what string, cond func(string) bool) string {
	s.t.Helper()
	var screen string
	ok := poll(30*time.Second, func() bool {
		screen = s.screen()
		return cond(screen)
	})
	require.True(s.t, ok, "after 30s the screen shows no %s:\n%s", what, screen)
	return screen
}

func (s *tmuxSession) waitFor(re *regexp.Regexp) []string {
	s.t.Helper()
	var m []string
	s.wait(re.String(), func(screen string) bool {
		m = re.FindStringSubmatch(screen)
		return m != nil
	})
	return m
}

// TestTopInTmux drives the built agent's top in a real terminal (tmux, at
// 100×30) against the agent running with the top workload: the GPUs
// appear; the late program's row, once filtered, and its saxpy kernel,
// whose count goes up while the screen is watched; the LLM calls' model;
// the vLLM server; the training job, its step going up. q leaves the
// terminal as it found it (its stty settings, the shell's screen back);
// so do SIGTERM, SIGINT and SIGHUP.
func TestTopInTmux(t *testing.T) {
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "the agent's cudatrace and genai features load BPF programs: root")
	}
	exe := buildAgent(t)
	cmd := exec.CommandContext(t.Context(), exe, "-interval", "1s", "-listen", "127.0.0.1:0", "-nvml-library", testutil.BuildFakeNVML(t))
	var stderr testutil.SyncBuffer
	cmd.Stderr = &stderr
	wait := startStoppable(t, cmd)
	t.Cleanup(func() { assert.NoError(t, wait(), "agent; stderr:\n%s", stderr.String()) })
	var addr string
	require.True(t, poll(30*time.Second, func() bool {
		if m := listening.FindStringSubmatch(stderr.String()); m != nil {
			addr = m[1]
		}
		return addr != ""
	}), "the agent never said where it listens; stderr:\n%s", stderr.String())
	w := startTopWorkload(t)
	w.waitShown(t, addr)
	// LLM calls go on while top is watched.
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	go func() {
		for ctx.Err() == nil {
			_ = exec.CommandContext(ctx, "curl", "-sS", "--http1.1", "-N", "--cacert", w.llm.CAFile, "-H", "Content-Type: application/json",
				"-d", `{"model":"`+topLLMModel+`","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`,
				"-o", "/dev/null", w.llm.URL+"/v1/chat/completions").Run()
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()

	dir := t.TempDir()
	// Four tops in turn, each told apart by its -refresh: ended by q,
	// then by SIGTERM, SIGINT and SIGHUP.
	signals := []struct {
		sig     syscall.Signal
		refresh string
	}{{syscall.SIGTERM, "499ms"}, {syscall.SIGINT, "498ms"}, {syscall.SIGHUP, "497ms"}}
	script := fmt.Sprintf(`stty -g > %[1]s/before; echo BEFORE-TOP; %[2]s top -addr %[3]s -refresh 500ms; echo TOP-EXIT=$?; stty -g > %[1]s/after; `, dir, exe, addr)
	for _, sg := range signals {
		script += fmt.Sprintf(`%[2]s top -addr %[3]s -refresh %[4]s; echo TOP-EXIT=$?; stty -g > %[1]s/after-%[4]s; `, dir, exe, addr, sg.refresh)
	}
	script += "sleep 600"
	s := newTmux(t, 100, 30, script)

	s.wait("GPUs", func(screen string) bool {
		return strings.Contains(screen, "Fake H100") && strings.Contains(screen, "75%") && strings.Contains(screen, "features 8/10 active")
	})
	s.keys(true, "2/late")
	s.keys(false, "Enter")
	s.waitFor(regexp.MustCompile(fmt.Sprintf(`(?m)^ +%d +late +.* \d+(\.\d+)?k? `, w.late.Pid)))
	s.keys(false, "Enter")
	kernel := regexp.MustCompile(`(?m)^saxpy\(int, float, float\*, float\*\) +(\S+) +(\S+)`)
	first := s.waitFor(kernel)
	s.wait("saxpy's count going up", func(screen string) bool {
		m := kernel.FindStringSubmatch(screen)
		return m != nil && m[2] != first[2]
	})
	assert.Contains(t, s.screen(), fmt.Sprintf("PID %d  late", w.late.Pid))

	// Escape, then (once it is read as one, not as the start of alt+3)
	// the LLM view.
	s.keys(false, "Escape")
	s.wait("the processes again", func(screen string) bool { return !strings.Contains(screen, "KERNEL ") })
	s.keys(true, "3")
	s.waitFor(regexp.MustCompile(`(?m)^openai_compatible +` + topLLMModel + ` +\d`))
	s.keys(true, "4")
	s.waitFor(regexp.MustCompile(`(?m)^vllm +meta-llama/Llama-3\.1-8B-\S* +3 +8 `))
	// The training job's row, its step going up as it logs.
	s.keys(true, "5")
	training := regexp.MustCompile(`(?m)^python3\S* +` + topRun + ` +(\S+) +\S+ +\S+ +(\d+)`)
	firstStep := s.waitFor(training)
	w.trainStep(t)
	s.wait("the training job's step going up", func(screen string) bool {
		m := training.FindStringSubmatch(screen)
		return m != nil && m[2] != firstStep[2]
	})

	s.keys(true, "q")
	screen := s.wait("top's exit", func(screen string) bool { return strings.Contains(screen, "TOP-EXIT=0") })
	assert.Contains(t, screen, "BEFORE-TOP", "the shell's screen is back")
	assert.NotContains(t, screen, "xpuscope top", "top's screen is gone")
	before := readStty(t, filepath.Join(dir, "before"))
	after := readStty(t, filepath.Join(dir, "after"))
	assert.Equal(t, before, after, "the terminal's settings after q")

	// The next tops: ended by a signal each.
	for i, sg := range signals {
		s.wait("the top ended by "+sg.sig.String(), func(screen string) bool { return strings.Contains(screen, "Fake H100") })
		pid := findProcess(t, exe, sg.refresh)
		require.NoError(t, syscall.Kill(pid, sg.sig))
		screen = s.wait("top's exit on "+sg.sig.String(), func(screen string) bool { return strings.Count(screen, "TOP-EXIT=0") == i+2 })
		assert.NotContains(t, screen, "xpuscope top", "after %s", sg.sig)
		after = readStty(t, filepath.Join(dir, "after-"+sg.refresh))
		assert.Equal(t, before, after, "the terminal's settings after %s", sg.sig)
	}
}

// readStty reads what the shell's stty -g wrote to path: the shell
// makes the file before stty writes it, so it waits for the whole line.
func readStty(t *testing.T, path string) string {
	t.Helper()
	var b []byte
	require.True(t, poll(10*time.Second, func() bool {
		b, _ = os.ReadFile(path)
		return bytes.HasSuffix(b, []byte("\n"))
	}), "%s: %q", path, b)
	return string(b)
}

// findProcess finds the process whose command line is exe's with arg.
func findProcess(t *testing.T, exe, arg string) int {
	t.Helper()
	var pid int
	require.True(t, poll(10*time.Second, func() bool {
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			n, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			args := strings.Split(string(b), "\x00")
			if len(args) > 1 && args[0] == exe && slices.Contains(args, arg) {
				pid = n
				return true
			}
		}
		return false
	}), "no process %s with %s", exe, arg)
	return pid
}

// buildAgent builds the agent binary once for the test.
func buildAgent(t *testing.T) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "agent")
	out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput()
	require.NoError(t, err, "go build\n%s", out)
	return exe
}

// -once -standalone starts the Sources in the process and prints one
// frame of each view, and the features with their reasons.
func TestTopOnceStandalone(t *testing.T) {
	lib := testutil.BuildFakeNVML(t)
	stdout, stderr, code := output(t, agent(t, "top", "-once", "-standalone", "-refresh", "300ms", "-nvml-library", lib, "-width", "120"))
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Contains(t, stdout, "xpuscope top: standalone, ")
	assert.Regexp(t, `(?m)^   0 Fake H100 80GB\S* +█{6}▊ +75% +20\.0/80\.0G +312/700W +61C `, stdout)
	assert.Regexp(t, `(?m)^   1 Fake A100-SXM4\S* +█▊ +20% +4\.00/40\.0G +98\.8/400W +44C `, stdout)
	// The fake NVML reports its loader, this process, on GPU 0.
	assert.Regexp(t, `(?m)^ +\d+ +agent\.test +1\.00G +37% `, stdout)
	assert.Regexp(t, `(?m)^== Features$`, stdout)
	assert.Regexp(t, `(?m)^gpu +active +NVIDIA: 2 GPU\(s\), driver 535\.999\.01: 0:NVIDIA Fake H100 80GB HBM3, 1:NVIDIA Fake A100-SXM4-40GB$`, stdout)
	assert.Regexp(t, `(?m)^serving +active +no model server found yet`, stdout)
	assert.Regexp(t, `(?m)^no training jobs$`, stdout)
	// The rates span the refresh at least: more where a busy machine
	// delays the second read (401ms in a CI run with every core busy).
	m := regexp.MustCompile(`(?m)^\d+ series, rates over (\d+)ms$`).FindStringSubmatch(stdout)
	require.NotNil(t, m, "no series and rates line")
	ms, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	assert.GreaterOrEqual(t, ms, 300, "rates over less than the refresh")
}

// With no agent at the configured address, top starts the Sources itself
// and says so; given -addr, it reads only that address.
func TestTopNoAgent(t *testing.T) {
	free := freeLoopbackAddr(t)
	cfg := filepath.Join(t.TempDir(), "agent.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("export:\n  prometheus:\n    listen: "+free+"\n"), 0o644))
	stdout, stderr, code := output(t, agent(t, "top", "-once", "-view", "gpus", "-config", cfg, "-refresh", "100ms",
		"-nvml-library", testutil.BuildFakeNVML(t)))
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Contains(t, stderr, "top: no agent at http://"+free+"/metrics: starting the Sources in this process")
	assert.Contains(t, stdout, "xpuscope top: standalone")
	assert.Contains(t, stdout, "Fake H100")

	_, stderr, code = output(t, agent(t, "top", "-once", "-addr", free, "-refresh", "100ms"))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "connection refused")
	assert.NotContains(t, stderr, "starting the Sources")
}

func TestTopFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-refresh", "0s"}, "-refresh must be positive"},
		{[]string{"-view", "disks"}, `-view: no view "disks": want one of GPUs, Processes, LLM, Servers, Training`},
		{[]string{"-standalone", "-addr", ":1"}, "-standalone and -addr are exclusive"},
		{[]string{"-width", "10"}, "-width must be at least 40"},
		{[]string{"extra"}, `unexpected arguments: ["extra"]`},
	} {
		_, stderr, code := output(t, agent(t, append([]string{"top"}, tc.args...)...))
		assert.Equal(t, 2, code, "%v", tc.args)
		assert.Contains(t, stderr, tc.want, "%v", tc.args)
	}
	// Not on a terminal, the screen is refused: -once is for scripts.
	srv := newStaticEndpoint(t)
	_, stderr, code := output(t, agent(t, "top", "-addr", srv))
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "not a terminal: use -once")
}

// newStaticEndpoint serves an empty exposition, and returns its address.
func newStaticEndpoint(t *testing.T) string {
	t.Helper()
	addr := freeLoopbackAddr(t)
	srv := &http.Server{Addr: addr, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})}
	go srv.ListenAndServe()
	t.Cleanup(func() { srv.Close() })
	require.True(t, poll(5*time.Second, func() bool { _, err := fetch("http://"+addr+"/metrics", ""); return err == nil }))
	return addr
}

func TestMetricsURL(t *testing.T) {
	for _, tc := range []struct{ addr, listen, want string }{
		{"", ":9464", "http://127.0.0.1:9464/metrics"},
		{"", "0.0.0.0:9464", "http://127.0.0.1:9464/metrics"},
		{"", "[::]:9464", "http://127.0.0.1:9464/metrics"},
		{"", "10.1.2.3:9000", "http://10.1.2.3:9000/metrics"},
		{"localhost:1234", ":9464", "http://localhost:1234/metrics"},
		{"http://agent:9464", ":9464", "http://agent:9464/metrics"},
		{"https://agent:9464/custom", ":9464", "https://agent:9464/custom"},
	} {
		got, err := metricsURL(tc.addr, tc.listen)
		require.NoError(t, err, "%+v", tc)
		assert.Equal(t, tc.want, got, "%+v", tc)
	}
	_, err := metricsURL("nonsense", ":9464")
	assert.ErrorContains(t, err, `the agent's address "nonsense"`)
}
