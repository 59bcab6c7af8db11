package serving

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/procfs/procfstest"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

// harness is a Source reading a procfs of the given processes only, its
// metrics collected by a manual reader with its Producer.
type harness struct {
	src    *Source
	reader *sdkmetric.ManualReader
	root   string
}

func newHarness(t *testing.T, pids []int, opts ...Option) *harness {
	t.Helper()
	p := NewProducer()
	r := sdkmetric.NewManualReader(sdkmetric.WithProducer(p))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	h := &harness{reader: r, root: procfstest.Host(t, pids...)}
	src, err := New(append([]Option{
		WithProcRoot(h.root), WithMeterProvider(mp), WithProducer(p),
		WithInterval(100 * time.Millisecond), WithTimeout(time.Second),
	}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, src.Close()) })
	h.src = src
	return h
}

// add shows the Source more processes of the host.
func (h *harness) add(t *testing.T, pids ...int) {
	for _, pid := range pids {
		require.NoError(t, os.Symlink(filepath.Join("/proc", strconv.Itoa(pid)), filepath.Join(h.root, strconv.Itoa(pid))))
	}
}

// server waits for the server of root process pid to match cond, and
// returns it.
func (h *harness) server(t *testing.T, pid int, what string, cond func(Server) bool) Server {
	t.Helper()
	var last Server
	ok := assert.Eventually(t, func() bool {
		for _, s := range h.src.Status().Servers {
			if s.PID == pid {
				last = s
				return cond(s)
			}
		}
		return false
	}, 30*time.Second, 10*time.Millisecond, "server of pid %d: %s", pid, what)
	if !ok {
		t.Fatalf("the server of pid %d, last seen: %+v", pid, last)
	}
	return last
}

func read(s Server) bool { return s.Read }

func roles(s Server) map[int]string {
	out := map[int]string{}
	for _, p := range s.Processes {
		out[p.PID] = p.Role
	}
	return out
}

// histogram returns the data point of histogram name with the given
// attributes, from the reader's own data.
func histogram(t *testing.T, r sdkmetric.Reader, name string, kvs ...attribute.KeyValue) metricdata.HistogramDataPoint[float64] {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	var found []metricdata.HistogramDataPoint[float64]
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			h, ok := m.Data.(metricdata.Histogram[float64])
			require.True(t, ok, "%s is a %T", name, m.Data)
			for _, dp := range h.DataPoints {
				if hasAll(dp.Attributes, kvs) {
					found = append(found, dp)
				}
			}
		}
	}
	require.Len(t, found, 1, "points of %s with %v", name, kvs)
	return found[0]
}

func hasAll(set attribute.Set, kvs []attribute.KeyValue) bool {
	for _, kv := range kvs {
		v, ok := set.Value(kv.Key)
		if !ok || v.Emit() != kv.Value.Emit() {
			return false
		}
	}
	return true
}

var (
	vllmKind = semconv.GenAIProviderName.String(semconv.GenAIProviderVLLM)
	llamaReq = semconv.GenAIRequestModel.String(llama)
	llamaRes = semconv.GenAIResponseModel.String(llama)
)

func vllmArgs() []string { return []string{"vllm", "serve", llama, "--port", "%d"} }

// vLLM's API server and engine core are two processes, one server: the
// engine core, a child titled VLLM::EngineCore (15 bytes of it in comm),
// is joined to the API server that holds the port.
func TestVLLMSplitProcesses(t *testing.T) {
	f := startFake(t, fakeOpts{args: vllmArgs(), payload: "vllm-v1.prom", engine: true})
	api := f.cmd.Process.Pid
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", f.engine))
	require.NoError(t, err)
	require.Equal(t, "VLLM::EngineCor\n", string(comm), "the engine core's comm, as vLLM's is")

	h := newHarness(t, []int{api, f.engine})
	s := h.server(t, api, "read", read)
	assert.Equal(t, VLLM, s.Kind)
	assert.Equal(t, map[int]string{api: semconv.ServerRoleAPIServer, f.engine: semconv.ServerRoleEngineCore}, roles(s), "processes")
	assert.Equal(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", f.port), s.Endpoint)
	assert.Empty(t, s.NetNS, "in the test's own namespace")
	assert.Equal(t, []string{llama}, s.Models)
	assert.Len(t, h.src.Status().Servers, 1, "one server")
	assert.True(t, h.src.Status().Histograms)

	port := semconv.ServerPort.Int(f.port)
	ps := testutil.Collect(t, h.reader)
	assert.Equal(t, float64(3), ps.One(t, semconv.XpuscopeGenAIServerWaitingRequests.Name, vllmKind, llamaReq, llamaRes, port).Value)
	assert.Equal(t, float64(8), ps.One(t, semconv.XpuscopeGenAIServerRunningRequests.Name, vllmKind, llamaReq, port).Value)
	assert.Equal(t, 0.4375, ps.One(t, semconv.XpuscopeGenAIServerKVCacheUtilization.Name, vllmKind, llamaReq).Value)
	assert.Equal(t, float64(27453), ps.One(t, semconv.XpuscopeGenAIServerTokens.Name, vllmKind, output).Value)
	for pid, role := range map[int]string{api: semconv.ServerRoleAPIServer, f.engine: semconv.ServerRoleEngineCore} {
		p := ps.One(t, semconv.XpuscopeGenAIServerProcesses.Name, vllmKind, semconv.ProcessPID.Int(pid))
		assert.Equal(t, role, p.Get(semconv.XpuscopeGenAIServerRole), "the role of pid %d", pid)
		assert.Equal(t, float64(1), p.Value)
	}
	ttft := histogram(t, h.reader, semconv.GenAIServerTimeToFirstToken.Name, vllmKind, llamaReq)
	assert.Equal(t, []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0},
		ttft.Bounds, "vLLM's own bounds, kept")
	assert.Equal(t, uint64(140), ttft.Count)
	assert.Equal(t, []uint64{0, 0, 0, 13, 84, 26, 15, 2}, ttft.BucketCounts[:8])
	assert.True(t, h.src.Reports(api, semconv.GenAIServerTimeToFirstToken.Name), "the API server's requests' TTFT is the Source's")
	assert.False(t, h.src.Reports(api+1e6, semconv.GenAIServerTimeToFirstToken.Name), "a process of no server")
}

// A server bound to 127.0.0.1 in a network namespace of its own (a pod's)
// is scraped from inside that namespace.
func TestVLLMInItsOwnNetworkNamespace(t *testing.T) {
	f := startFake(t, fakeOpts{args: []string{"python3", "-m", "vllm.entrypoints.openai.api_server", "--model", llama, "--port", "8000"},
		payload: "vllm-v0.prom", netns: true, port: 8000, engine: true})
	api := f.cmd.Process.Pid
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", api))
	require.NoError(t, err)
	require.NotEqual(t, selfNetNS(), ns, "the fake is in a namespace of its own")

	h := newHarness(t, []int{api, f.engine})
	s := h.server(t, api, "read", read)
	assert.Equal(t, "http://127.0.0.1:8000/metrics", s.Endpoint)
	assert.Equal(t, ns, s.NetNS)
	assert.Equal(t, map[int]string{api: semconv.ServerRoleAPIServer, f.engine: semconv.ServerRoleEngineCore}, roles(s))
	ps := testutil.Collect(t, h.reader)
	assert.Equal(t, float64(8), ps.One(t, semconv.XpuscopeGenAIServerRunningRequests.Name, vllmKind, llamaReq).Value)
	// The names before the rename, under the same semconv names.
	tpot := histogram(t, h.reader, semconv.GenAIServerTimePerOutputToken.Name, vllmKind)
	assert.Equal(t, []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5}, tpot.Bounds)
}

// TGI's router, in a namespace of its own: its /info names the model,
// which its metrics do not.
func TestTGI(t *testing.T) {
	f := startFake(t, fakeOpts{args: []string{"text-generation-router", "--port", "80", "--prometheus-port", "9000", "--max-concurrent-requests", "128"},
		payload: "tgi.prom", info: "tgi-info.json", netns: true, port: 80})
	pid := f.cmd.Process.Pid
	h := newHarness(t, []int{pid})
	s := h.server(t, pid, "read", read)
	assert.Equal(t, TGI, s.Kind)
	assert.Equal(t, "http://127.0.0.1:80/metrics", s.Endpoint)
	assert.Equal(t, []string{"bigscience/bloom-560m"}, s.Models, "the model /info names")
	assert.Equal(t, map[int]string{pid: semconv.ServerRoleRouter}, roles(s))
	ps := testutil.Collect(t, h.reader)
	tgi := semconv.GenAIProviderName.String(semconv.GenAIProviderTGI)
	assert.Equal(t, float64(3), ps.One(t, semconv.XpuscopeGenAIServerWaitingRequests.Name, tgi, semconv.GenAIRequestModel.String("bigscience/bloom-560m")).Value)
	assert.Equal(t, float64(5), ps.One(t, semconv.XpuscopeGenAIServerRequests.Name, tgi, semconv.ErrorType.String("validation")).Value)
	d := histogram(t, h.reader, semconv.GenAIServerRequestDuration.Name, tgi)
	assert.Len(t, d.Bounds, 35, "the router's 35 bounds")
	assert.Equal(t, uint64(132), d.Count)
}

// Triton, run from a file named tritonserver, with its metrics on their
// own port.
func TestTriton(t *testing.T) {
	f := startFake(t, fakeOpts{exeName: "tritonserver", args: []string{"tritonserver", "--model-repository=/models", "--metrics-port=%d"}, payload: "triton.prom"})
	pid := f.cmd.Process.Pid
	h := newHarness(t, []int{pid})
	s := h.server(t, pid, "read", read)
	assert.Equal(t, Triton, s.Kind)
	assert.Equal(t, []Process{{PID: pid, Role: semconv.ServerRoleServer, Executable: "tritonserver"}}, s.Processes)
	assert.ElementsMatch(t, []string{"my_model", "ensemble_llm"}, s.Models)
	ps := testutil.Collect(t, h.reader)
	triton := semconv.GenAIProviderName.String(semconv.GenAIProviderTriton)
	mine := semconv.GenAIRequestModel.String("my_model")
	assert.Equal(t, float64(5), ps.One(t, semconv.XpuscopeGenAIServerWaitingRequests.Name, triton, mine).Value)
	assert.InDelta(t, 0.01111, ps.One(t, semconv.XpuscopeGenAIServerRequestTime.Name, triton, mine, phaseOf(semconv.ServerPhaseQueue)).Value, 1e-12)
	first := histogram(t, h.reader, semconv.GenAIServerTimeToFirstToken.Name, triton, mine)
	assert.Equal(t, []float64{0.1, 0.5, 2, 5}, first.Bounds, "Triton's millisecond edges, in seconds")
}

// A Triton started with its metrics off is found, with no endpoint, and
// says why.
func TestTritonMetricsOff(t *testing.T) {
	f := startFake(t, fakeOpts{mode: "none", exeName: "tritonserver", args: []string{"tritonserver", "--model-repository=/models", "--allow-metrics=false"}})
	pid := f.cmd.Process.Pid
	h := newHarness(t, []int{pid})
	s := h.server(t, pid, "found, and why it has no endpoint", func(s Server) bool { return len(s.Problems) > 0 })
	assert.Empty(t, s.Endpoint)
	assert.Contains(t, s.Problems[0], "--allow-metrics=false")
}

// TorchServe's Java frontend serves its metrics API on a port its flags
// do not name: its listening sockets give it.
func TestTorchServe(t *testing.T) {
	f := startFake(t, fakeOpts{args: []string{"java", "-Dmodel_server_home=/home/model-server", "-cp", ".:/usr/lib/ts/frontend/*", "org.pytorch.serve.ModelServer", "--ts-config", "/home/model-server/config.properties"},
		payload: "torchserve.prom"})
	pid := f.cmd.Process.Pid
	h := newHarness(t, []int{pid})
	s := h.server(t, pid, "read", read)
	assert.Equal(t, TorchServe, s.Kind)
	assert.Equal(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", f.port), s.Endpoint)
	ps := testutil.Collect(t, h.reader)
	assert.Equal(t, float64(3), ps.One(t, semconv.XpuscopeGenAIServerRequests.Name, semconv.GenAIRequestModel.String("resnet18")).Value)
}

// TF Serving serves metrics only with a monitoring configuration, at the
// path it names; without one it is found, and says so.
func TestTFServing(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "monitoring.config")
	require.NoError(t, os.WriteFile(cfg, []byte("prometheus_config {\n  enable: true,\n  path: \"/metrics\"\n}\n"), 0o644))
	f := startFake(t, fakeOpts{exeName: "tensorflow_model_server", args: []string{"tensorflow_model_server", "--port=8500", "--rest_api_port=%d", "--model_name=half_plus_two", "--monitoring_config_file=" + cfg},
		payload: "tfserving.prom"})
	bare := startFake(t, fakeOpts{mode: "none", exeName: "tensorflow_model_server", args: []string{"tensorflow_model_server", "--port=8500", "--rest_api_port=8501"}})
	h := newHarness(t, []int{f.cmd.Process.Pid, bare.cmd.Process.Pid})
	s := h.server(t, f.cmd.Process.Pid, "read", read)
	assert.Equal(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", f.port), s.Endpoint)
	ps := testutil.Collect(t, h.reader)
	reqs := ps.Find(semconv.XpuscopeGenAIServerRequests.Name, semconv.GenAIRequestModel.String("half_plus_two"))
	require.Len(t, reqs, 2, "requests: OK, and INVALID_ARGUMENT")
	for _, p := range reqs {
		if p.Has(semconv.ErrorType) {
			assert.Equal(t, float64(12), p.Value, "failed")
		} else {
			assert.Equal(t, float64(1450), p.Value, "OK")
		}
	}
	b := h.server(t, bare.cmd.Process.Pid, "found, with why it has no endpoint", func(s Server) bool { return len(s.Problems) > 0 })
	assert.Contains(t, b.Problems[0], "--monitoring_config_file")
	assert.Empty(t, b.Endpoint)
}

// ONNX Runtime is a library: a process that maps it is found, with its
// process, for the join to its GPUs, and no endpoint.
func TestONNXRuntime(t *testing.T) {
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "reading another process's mappings needs root")
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		testutil.SkipOrFail(t, "python3: %v", err)
	}
	// A library named as ONNX Runtime's is: a copy of libz, which
	// ctypes loads as any.
	lib := filepath.Join(t.TempDir(), "libonnxruntime.so.1.20.1")
	src, err := os.ReadFile("/lib/x86_64-linux-gnu/libz.so.1")
	if err != nil {
		testutil.SkipOrFail(t, "libz to load as ONNX Runtime: %v", err)
	}
	require.NoError(t, os.WriteFile(lib, src, 0o755))
	ready := filepath.Join(t.TempDir(), "ready")
	// It ends when its stdin does: with the test.
	cmd := exec.Command(python, "-c", fmt.Sprintf("import ctypes, sys\nctypes.CDLL(%q)\nopen(%q, 'w').close()\nsys.stdin.read()", lib, ready))
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	defer stdin.Close()
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	require.Eventually(t, func() bool { _, err := os.Stat(ready); return err == nil }, 30*time.Second, 5*time.Millisecond)
	h := newHarness(t, []int{cmd.Process.Pid})
	s := h.server(t, cmd.Process.Pid, "found", func(s Server) bool { return len(s.Processes) == 1 })
	assert.Equal(t, ONNXRuntime, s.Kind)
	assert.Equal(t, semconv.ServerRoleProcess, s.Processes[0].Role)
	assert.Empty(t, s.Endpoint)
	assert.Contains(t, s.Problems, "a library, not a server: it serves no metrics")
	ps := testutil.Collect(t, h.reader)
	p := ps.One(t, semconv.XpuscopeGenAIServerProcesses.Name, semconv.GenAIProviderName.String(semconv.GenAIProviderONNXRuntime))
	assert.Equal(t, strconv.Itoa(cmd.Process.Pid), p.Get(semconv.ProcessPID))
	assert.Equal(t, float64(1), ps.One(t, semconv.XpuscopeGenAIServingServers.Name, semconv.GenAIProviderName.String(semconv.GenAIProviderONNXRuntime), semconv.XpuscopeGenAIServingState.String(semconv.ServingStateNoEndpoint)).Value)
}

// Servers that fail in every way beside one that works: it is read every
// interval, they are counted by why, and the Source's collection and
// Close do not wait for them.
func TestBadServers(t *testing.T) {
	good := startFake(t, fakeOpts{args: vllmArgs(), payload: "vllm-v1.prom"})
	hang := startFake(t, fakeOpts{mode: "hang", args: vllmArgs()})
	huge := startFake(t, fakeOpts{mode: "huge", args: vllmArgs()})              // 10 MB, its length unsaid
	hugeLength := startFake(t, fakeOpts{mode: "huge-length", args: vllmArgs()}) // 10 MB, its length said
	garbage := startFake(t, fakeOpts{mode: "garbage", args: vllmArgs()})
	none := startFake(t, fakeOpts{mode: "none", args: []string{"vllm", "serve", llama}})
	// A timeout that the 1 MB read past the cap fits in, on a loaded
	// machine under the race detector.
	h := newHarness(t, []int{good.cmd.Process.Pid, hang.cmd.Process.Pid, huge.cmd.Process.Pid, hugeLength.cmd.Process.Pid, garbage.cmd.Process.Pid, none.cmd.Process.Pid},
		WithTimeout(2*time.Second), WithBodyLimit(1<<20))
	first := h.server(t, good.cmd.Process.Pid, "read", read).LastRead
	// Read again, while the others fail.
	h.server(t, good.cmd.Process.Pid, "read again", func(s Server) bool { return s.Read && s.LastRead.After(first) })
	for _, c := range []struct {
		f      *fake
		reason string
	}{{hang, semconv.ScrapeErrorTimeout}, {huge, semconv.ScrapeErrorTooLarge}, {hugeLength, semconv.ScrapeErrorTooLarge}, {garbage, semconv.ScrapeErrorParse}} {
		s := h.server(t, c.f.cmd.Process.Pid, "failed: "+c.reason, func(s Server) bool { return !s.Read && len(s.Problems) > 0 })
		assert.Contains(t, s.Problems[len(s.Problems)-1], c.reason, "why the server of pid %d failed", c.f.cmd.Process.Pid)
	}
	n := h.server(t, none.cmd.Process.Pid, "found, serving nothing", func(s Server) bool { return len(s.Problems) > 0 })
	assert.Contains(t, n.Problems[len(n.Problems)-1], "no listening TCP socket")
	assert.Empty(t, n.Endpoint)

	ps := testutil.Collect(t, h.reader)
	for _, reason := range []string{semconv.ScrapeErrorTimeout, semconv.ScrapeErrorTooLarge, semconv.ScrapeErrorParse, semconv.ScrapeErrorConnect} {
		assert.NotEmpty(t, ps.Find(semconv.XpuscopeGenAIServingScrapes.Name, vllmKind, semconv.ErrorType.String(reason)), "scrapes failed by %s", reason)
	}
	read := ps.Find(semconv.XpuscopeGenAIServingScrapes.Name, vllmKind)
	assert.NotEmpty(t, read)
	// The good server's series only.
	assert.Len(t, ps.Find(semconv.XpuscopeGenAIServerWaitingRequests.Name), 1)

	// A collection does not wait for the hanging scrape, nor does Close.
	start := time.Now()
	testutil.Collect(t, h.reader)
	collect := time.Since(start)
	start = time.Now()
	require.NoError(t, h.src.Close())
	closing := time.Since(start)
	assert.Less(t, collect, 300*time.Millisecond, "a collection waited for a scrape")
	assert.Less(t, closing, 5*time.Second, "Close waited for the hanging server")
	require.NoError(t, h.src.Close(), "a second Close")
}

// A server that renames its metrics mid-run (an upgrade of vLLM across
// its 0.9 renames, or a release exporting both) keeps its series: the
// same semconv names, the same attributes, the new bounds.
func TestRenamedMidRun(t *testing.T) {
	f := startFake(t, fakeOpts{args: vllmArgs(), payload: "vllm-v0.prom", next: "vllm-v1.prom"})
	pid := f.cmd.Process.Pid
	h := newHarness(t, []int{pid})
	h.server(t, pid, "read", read)
	before := histogram(t, h.reader, semconv.GenAIServerTimePerOutputToken.Name, vllmKind)
	require.Len(t, before.Bounds, 13, "before the rename")
	kvBefore := testutil.Collect(t, h.reader).One(t, semconv.XpuscopeGenAIServerKVCacheUtilization.Name, vllmKind)
	require.NoError(t, f.cmd.Process.Signal(syscall.SIGUSR1))
	require.Eventually(t, func() bool {
		return len(histogram(t, h.reader, semconv.GenAIServerTimePerOutputToken.Name, vllmKind).Bounds) == 19
	}, 30*time.Second, 10*time.Millisecond, "the renamed histogram read")
	after := histogram(t, h.reader, semconv.GenAIServerTimePerOutputToken.Name, vllmKind)
	assert.True(t, before.Attributes.Equals(&after.Attributes), "the same series: %v, then %v", before.Attributes.ToSlice(), after.Attributes.ToSlice())
	kvAfter := testutil.Collect(t, h.reader).One(t, semconv.XpuscopeGenAIServerKVCacheUtilization.Name, vllmKind)
	assert.Equal(t, kvBefore.Attrs, kvAfter.Attrs, "kv_cache_usage_perc continues gpu_cache_usage_perc")
	// The metric only the new names have appears.
	histogram(t, h.reader, semconv.XpuscopeGenAIServerQueueDuration.Name, vllmKind)
}

// recorder is a ProcessResolver that puts every process in one pod and
// remembers what it was told.
type recorder struct {
	mu        sync.Mutex
	asked     []int
	forgotten []int
}

func (r *recorder) ProcessAttributes(pid int) ([]attribute.KeyValue, trace.SpanContext) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, pid)
	return []attribute.KeyValue{semconv.K8sPodName.String("vllm-0"), semconv.K8sNamespaceName.String("inference")}, trace.SpanContext{}
}

func (r *recorder) Forget(pid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forgotten = append(r.forgotten, pid)
}

var _ xpuscope.ProcessResolver = (*recorder)(nil)

// A server's series carry its pod; a server that exits is forgotten: its
// series go, and the resolver hears of it.
func TestPodsAndExit(t *testing.T) {
	f := startFake(t, fakeOpts{args: vllmArgs(), payload: "vllm-v1.prom", engine: true})
	pid := f.cmd.Process.Pid
	r := &recorder{}
	h := newHarness(t, []int{pid, f.engine}, WithResolver(r))
	h.server(t, pid, "read", read)
	pod := semconv.K8sPodName.String("vllm-0")
	ps := testutil.Collect(t, h.reader)
	assert.Len(t, ps.Find(semconv.XpuscopeGenAIServerRunningRequests.Name, pod, semconv.K8sNamespaceName.String("inference")), 1, "the series in its pod")
	assert.Len(t, ps.Find(semconv.XpuscopeGenAIServerProcesses.Name, pod), 2, "its processes in its pod")
	histogram(t, h.reader, semconv.GenAIServerRequestDuration.Name, pod)
	r.mu.Lock()
	assert.Equal(t, []int{pid}, r.asked, "asked once, for the server")
	r.mu.Unlock()

	require.NoError(t, f.cmd.Process.Kill())
	_ = f.cmd.Wait()
	require.Eventually(t, func() bool { return len(h.src.Status().Servers) == 0 }, 30*time.Second, 10*time.Millisecond, "the server forgotten")
	ps = testutil.Collect(t, h.reader)
	assert.Empty(t, ps.Find(semconv.XpuscopeGenAIServerRunningRequests.Name), "its series gone")
	assert.Empty(t, ps.Find(semconv.XpuscopeGenAIServerProcesses.Name), "its processes gone")
	r.mu.Lock()
	// The engine core, which outlives its API server for a moment (its
	// parent's death kills it), may have been a server of its own: every
	// process asked about is forgotten.
	assert.Contains(t, r.forgotten, pid, "the resolver told")
	assert.ElementsMatch(t, r.asked, r.forgotten, "each process asked about, forgotten")
	r.mu.Unlock()
}

// TestScope checks the Source's real collected data against semconv.
func TestScope(t *testing.T) {
	v := startFake(t, fakeOpts{args: vllmArgs(), payload: "vllm-v1.prom", engine: true})
	tr := startFake(t, fakeOpts{exeName: "tritonserver", args: []string{"tritonserver", "--metrics-port=%d"}, payload: "triton.prom"})
	h := newHarness(t, []int{v.cmd.Process.Pid, v.engine, tr.cmd.Process.Pid})
	h.server(t, v.cmd.Process.Pid, "read", read)
	h.server(t, tr.cmd.Process.Pid, "read", read)
	names := testutil.CheckScope(t, h.reader, ScopeName)
	for _, m := range []semconv.Metric{
		semconv.XpuscopeGenAIServerWaitingRequests, semconv.XpuscopeGenAIServerRunningRequests,
		semconv.XpuscopeGenAIServerKVCacheUtilization, semconv.XpuscopeGenAIServerKVCacheCapacity,
		semconv.XpuscopeGenAIServerTokens, semconv.XpuscopeGenAIServerPreemptions, semconv.XpuscopeGenAIServerRequests,
		semconv.XpuscopeGenAIServerRequestTime, semconv.XpuscopeGenAIServerInferences, semconv.XpuscopeGenAIServerExecutions,
		semconv.XpuscopeGenAIServerProcesses, semconv.XpuscopeGenAIServingScrapes, semconv.XpuscopeGenAIServingServers,
		semconv.GenAIServerRequestDuration, semconv.GenAIServerTimeToFirstToken, semconv.GenAIServerTimePerOutputToken,
		semconv.XpuscopeGenAIServerQueueDuration,
	} {
		assert.Contains(t, names, m.Name)
	}
}

// Without a Producer the histograms are not reported, and Status says
// so; the other metrics are.
func TestNoProducer(t *testing.T) {
	f := startFake(t, fakeOpts{args: vllmArgs(), payload: "vllm-v1.prom"})
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer mp.Shutdown(context.Background())
	src, err := New(WithProcRoot(procfstest.Host(t, f.cmd.Process.Pid)), WithMeterProvider(mp), WithInterval(100*time.Millisecond))
	require.NoError(t, err)
	defer src.Close()
	require.Eventually(t, func() bool {
		st := src.Status()
		return len(st.Servers) == 1 && st.Servers[0].Read
	}, 30*time.Second, 10*time.Millisecond)
	assert.False(t, src.Status().Histograms)
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	var names []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			names = append(names, m.Name)
		}
	}
	assert.Contains(t, names, semconv.XpuscopeGenAIServerRunningRequests.Name)
	assert.False(t, slices.Contains(names, semconv.GenAIServerTimeToFirstToken.Name), "a histogram without a Producer")
	assert.False(t, src.Reports(f.cmd.Process.Pid, semconv.GenAIServerTimeToFirstToken.Name), "the capture keeps what the Source does not report")
}

func TestOptions(t *testing.T) {
	for _, c := range []struct {
		opt  Option
		want string
	}{
		{WithInterval(time.Millisecond), "serving: WithInterval: the interval must be at least 100ms, got 1ms"},
		{WithTimeout(0), "serving: WithTimeout: the timeout must be positive, got 0s"},
		{WithBodyLimit(100), "serving: WithBodyLimit: the limit must be 4096 to 67108864 bytes, got 100"},
		{WithMaxServers(0), "serving: WithMaxServers: the cap must be at least 1, got 0"},
		{WithMaxModels(0), "serving: WithMaxModels: the cap must be at least 1, got 0"},
		{WithMaxSeries(0), "serving: WithMaxSeries: the cap must be at least 1, got 0"},
		{WithProcRoot(""), "serving: WithProcRoot: the procfs root is empty"},
	} {
		_, err := New(c.opt)
		require.EqualError(t, err, c.want)
		assert.NotErrorIs(t, err, xpuscope.ErrUnavailable, "a bad option is a fault")
	}
	_, err := New(WithProcRoot(filepath.Join(t.TempDir(), "none")))
	require.ErrorIs(t, err, xpuscope.ErrUnavailable, "a procfs that cannot be read")
	assert.ErrorContains(t, err, "serving: cannot list the processes")
}

// Past the cap of servers, the newest wait, counted.
func TestServerCap(t *testing.T) {
	a := startFake(t, fakeOpts{mode: "none", exeName: "tritonserver", args: []string{"tritonserver", "--allow-metrics=false"}})
	b := startFake(t, fakeOpts{mode: "none", exeName: "tritonserver", args: []string{"tritonserver", "--allow-metrics=false"}})
	h := newHarness(t, []int{a.cmd.Process.Pid, b.cmd.Process.Pid}, WithMaxServers(1))
	h.server(t, a.cmd.Process.Pid, "found", func(Server) bool { return true })
	assert.Len(t, h.src.Status().Servers, 1)
	ps := testutil.Collect(t, h.reader)
	assert.Positive(t, ps.One(t, semconv.XpuscopeGenAIServingOverflow.Name, semconv.XpuscopeGenAIServingReason.String(semconv.ServingReasonServers)).Value)
}
