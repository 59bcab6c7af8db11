package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/genai/serving"
	"github.com/xpuscope/xpuscope/internal/procfs/procfstest"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

// envFakeServer makes the test binary a fake model server: it serves the
// file the variable names at /metrics, on the listener of fd 3, or, for
// "-", serves nothing. The command line it is given is the server's.
const envFakeServer = "XPUSCOPE_TEST_FAKE_MODEL_SERVER"

// fakeModelServer is the fake's main.
func fakeModelServer(payload string) int {
	if payload == "-" {
		select {}
	}
	b, err := os.ReadFile(payload)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	l, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(b)
	}))
	return 0
}

// startModelServer runs the test binary as a fake model server with the
// command line args, in which %d becomes the port of its listener.
func startModelServer(t *testing.T, payload string, args ...string) (pid, port int) {
	t.Helper()
	testutil.Native(t, "the test binary run again as a program")
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envFakeServer+"="+payload)
	if payload != "-" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		port = l.Addr().(*net.TCPAddr).Port
		f, err := l.(*net.TCPListener).File()
		require.NoError(t, err)
		l.Close()
		defer f.Close()
		cmd.ExtraFiles = []*os.File{f}
	}
	for i, a := range args {
		args[i] = regexp.MustCompile(`%d`).ReplaceAllString(a, fmt.Sprint(port))
	}
	cmd.Args = args
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// Its command line is set once its exec is done.
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cmd.Process.Pid))
		return err == nil && len(b) > 0 && string(b[:len(args[0])]) == args[0]
	}, 30*time.Second, 5*time.Millisecond)
	if payload != "-" {
		require.Eventually(t, func() bool {
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
			if err == nil {
				resp.Body.Close()
			}
			return err == nil
		}, 30*time.Second, 5*time.Millisecond)
	}
	return cmd.Process.Pid, port
}

// -check lists each model server found: its endpoint, its models, and
// for one it cannot read, why.
func TestCheckListsModelServers(t *testing.T) {
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "reading the fake server's sockets and network namespace needs root")
	}
	payload, err := filepath.Abs("../../genai/serving/testdata/vllm-v1.prom")
	require.NoError(t, err)
	vllm, port := startModelServer(t, payload, "vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--port", "%d")
	triton, _ := startModelServer(t, "-", "tritonserver", "--model-repository=/models", "--allow-metrics=false")
	root := procfstest.Host(t, vllm, triton)
	stdout, stderr, code := output(t, agent(t, "-check", "-proc-root", root))
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Regexp(t, fmt.Sprintf(`(?m)^serving +active +2 model server\(s\): `+
		`vllm \(pid %d\) at http://127\.0\.0\.1:%d/metrics, models meta-llama/Llama-3\.1-8B-Instruct \| `+
		`triton \(pid %d\): no endpoint; not read: started with --allow-metrics=false: it serves no metrics$`, vllm, port, triton), stdout)
}

// -check on a node without model servers says so; the configuration
// turns the feature off.
func TestCheckServingOffAndEmpty(t *testing.T) {
	stdout, stderr, code := output(t, agent(t, "-check", "-proc-root", procfstest.Host(t)))
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Regexp(t, `(?m)^serving +active +no model server found yet; processes are looked at every interval$`, stdout)

	cfg := filepath.Join(t.TempDir(), "agent.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("aiml:\n  serving:\n    enabled: false\n"), 0o644))
	stdout, stderr, code = output(t, agent(t, "-check", "-config", cfg))
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Regexp(t, `(?m)^serving +unavailable +serving: turned off by aiml\.serving\.enabled$`, stdout)
}

func TestDescribeServing(t *testing.T) {
	st := serving.Status{Histograms: true, Servers: []serving.Server{
		{Kind: serving.VLLM, PID: 10, Endpoint: "http://127.0.0.1:8000/metrics", NetNS: "net:[4026532301]", Read: true,
			Models:    []string{"m"},
			Processes: []serving.Process{{PID: 10, Role: semconv.ServerRoleAPIServer}, {PID: 11, Role: semconv.ServerRoleEngineCore}}},
		{Kind: serving.TGI, PID: 20, Problems: []string{"connect: no listening TCP socket among its 3 processes"}},
		{Kind: serving.ONNXRuntime, PID: 30, Problems: []string{"a library, not a server: it serves no metrics"}},
	}}
	assert.Equal(t, "3 model server(s): vllm (pid 10, 2 processes) at http://127.0.0.1:8000/metrics in net:[4026532301], models m | "+
		"tgi (pid 20): no endpoint; not read: connect: no listening TCP socket among its 3 processes | "+
		"onnxruntime (pid 30): no endpoint; not read: a library, not a server: it serves no metrics", describeServing(st))
	st.Histograms = false
	assert.Contains(t, describeServing(st), "their histograms are not reported (no Producer)")
	assert.Equal(t, "no model server found yet; processes are looked at every interval", describeServing(serving.Status{Histograms: true}))
}
