package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/testutil/cudaprog"
	"github.com/xpuscope/xpuscope/internal/testutil/llmserver"
	"github.com/xpuscope/xpuscope/semconv"
)

// prometheusBin is the Prometheus server of Debian's prometheus package,
// which make test installs.
const prometheusBin = "/usr/bin/prometheus"

// TestPrometheusEndToEnd (issue #7): the real Prometheus server scrapes
// the agent on loopback while a C program calls the real libcudart and
// curl makes one streamed LLM call over TLS; Prometheus's HTTP API then
// has the fake GPUs' power and utilization, the program's kernel
// launches (with the service name the pod resolver read from its
// environment), the LLM call's duration histogram with an exemplar
// pointing at its trace, and the agent's feature states.
func TestPrometheusEndToEnd(t *testing.T) {
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "the end-to-end test needs root: the cudatrace and genai features load BPF programs")
	}
	if _, err := os.Stat(prometheusBin); err != nil {
		testutil.SkipOrFail(t, "the Prometheus server is not installed (Debian package prometheus; run make test): %v", err)
	}
	cudaExe := cudaprog.Build(t, "runtime")
	agentAddr := startAgent(t, "-interval", "1s", "-listen", "127.0.0.1:0", "-nvml-library", testutil.BuildFakeNVML(t))
	prom := startPrometheus(t, agentAddr)

	// A program calling the real libcudart, once the agent probes it
	// (the program has it mapped at READY). It names its service: the
	// agent's pod resolver reads it from /proc/<pid>/environ when
	// cudatrace first sees the program, which lingers at exit until then.
	cmd := exec.Command(cudaExe, cudaprog.RuntimeLaunch.Name)
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+cudaprog.Build(t, "linger"), "OTEL_SERVICE_NAME=e2e-trainer")
	p := cudaprog.StartCmd(t, cmd)
	attached := poll(10*time.Second, func() bool {
		return gaugeValue(scrapeAgent(t, agentAddr), "xpuscope_cuda_attached_files", "xpuscope_target", "libcudart") >= 1
	})
	require.True(t, attached, "the agent did not probe libcudart within 10s of pid %d mapping it", p.Pid)
	p.Go()
	launches := len(cudaprog.RuntimeLaunch.Filter("cudaLaunchKernel", "cudaLaunchKernel_ptsz"))

	// One streamed chat completion over TLS that the agent captures. A
	// curl that runs before the agent has probed its libssl is not seen:
	// repeat until one is.
	opts := llmserver.Options{TLS: true, FirstDelay: 50 * time.Millisecond, ChunkDelay: 10 * time.Millisecond, Chunks: 3}
	llm := llmserver.Start(t, opts)
	// The least a call's duration can be: the whole stream.
	minDuration := opts.FirstDelay + time.Duration(opts.Chunks-1)*opts.ChunkDelay
	port := strconv.Itoa(llm.Port)
	calls := 0
	captured := poll(10*time.Second, func() bool {
		out, err := exec.Command("curl", "-sS", "--http1.1", "-N", "--fail", "--cacert", llm.CAFile,
			"-H", "Content-Type: application/json",
			"-d", `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`,
			"-o", "/dev/null", llm.URL+"/v1/chat/completions").CombinedOutput()
		require.NoError(t, err, "curl %s: %s", llm.URL, out)
		calls++
		return poll(time.Second, func() bool {
			return histogramCount(scrapeAgent(t, agentAddr), "gen_ai_client_operation_duration_seconds", "server_port", port) > 0
		})
	})
	require.True(t, captured, "none of %d streamed calls to %s was captured by the agent", calls, llm.URL)

	// Prometheus has every series.
	gpus := map[string]float64{
		"GPU-fa4e0000-0000-4000-8000-000000000000": 312.5,
		"GPU-fa4e0001-0000-4000-8000-000000000001": 98.765,
	}
	power := prom.waitSeries(t, `hw_power_watts{hw_type="gpu"}`, len(gpus))
	for _, s := range power {
		assert.InDelta(t, gpus[s.Metric["hw_id"]], s.value(t), 1e-9, "power of %v", s.Metric)
	}
	util := map[string]float64{
		"GPU-fa4e0000-0000-4000-8000-000000000000": 0.75,
		"GPU-fa4e0001-0000-4000-8000-000000000001": 0.2,
	}
	for _, s := range prom.waitSeries(t, `hw_gpu_utilization_ratio{hw_gpu_task="general"}`, len(util)) {
		assert.InDelta(t, util[s.Metric["hw_id"]], s.value(t), 1e-9, "utilization of %v", s.Metric)
	}

	// Every launch of the program, by its pid and the service name the
	// resolver gave it (a scrape may come while the agent is still
	// counting them).
	expr := fmt.Sprintf(`sum(cuda_kernel_launches_total{process_pid="%d",service_name="e2e-trainer"})`, p.Pid)
	var sum float64
	counted := poll(20*time.Second, func() bool {
		got := prom.query(t, expr)
		if len(got) == 1 {
			sum = got[0].value(t)
		}
		return sum == float64(launches)
	})
	require.True(t, counted, "%s = %v, want %d; targets: %s", expr, sum, launches, prom.targets(t))
	p.Wait()

	buckets := prom.waitSeries(t, `gen_ai_client_operation_duration_seconds_bucket{server_port="`+port+`",le="+Inf"}`, 1)
	b := buckets[0]
	assert.Equal(t, "chat", b.Metric["gen_ai_operation_name"])
	assert.Equal(t, semconv.GenAIProviderOpenAICompatible, b.Metric["gen_ai_provider_name"], "a loopback server speaking the OpenAI API")
	assert.Equal(t, "gpt-4o-mini", b.Metric["gen_ai_request_model"])
	assert.GreaterOrEqual(t, b.value(t), 1.0, "calls counted in the +Inf bucket")
	assert.LessOrEqual(t, b.value(t), float64(calls), "calls counted in the +Inf bucket")

	states := prom.waitSeries(t, `xpuscope_agent_feature_state{xpuscope_feature_state="active"} == 1`, 8)
	var active []string
	for _, s := range states {
		active = append(active, s.Metric["xpuscope_feature"])
	}
	assert.ElementsMatch(t, []string{"podjoin", "gpu", "cudatrace", "hiptrace", "serving", "training", "node", "genai"}, active)

	// The exemplar of the call's duration: Prometheus scraped it in
	// OpenMetrics, with the trace id of the call's span.
	traceID := regexp.MustCompile(`^[0-9a-f]{32}$`)
	var exemplars []promExemplar
	found := poll(15*time.Second, func() bool {
		exemplars = prom.exemplars(t, `gen_ai_client_operation_duration_seconds_bucket{server_port="`+port+`"}`)
		return len(exemplars) > 0
	})
	require.True(t, found, "no exemplar of gen_ai_client_operation_duration_seconds_bucket in Prometheus; agent's OpenMetrics: %s",
		grepLines(scrapeOpenMetrics(t, agentAddr), "gen_ai_client_operation_duration_seconds_bucket"))
	for _, e := range exemplars {
		assert.Regexp(t, traceID, e.Labels["trace_id"], "exemplar %+v", e)
		assert.NotEqual(t, strings.Repeat("0", 32), e.Labels["trace_id"], "exemplar %+v", e)
		assert.Regexp(t, `^[0-9a-f]{16}$`, e.Labels["span_id"], "exemplar %+v", e)
		v, err := strconv.ParseFloat(e.Value, 64)
		require.NoError(t, err, "exemplar value %q", e.Value)
		assert.GreaterOrEqual(t, v, minDuration.Seconds(), "exemplar %+v: a call's duration, at least the stream's", e)
	}
}

// startAgent runs the agent with args until the test ends, and returns
// the address its Prometheus endpoint listens on. At the end it is sent
// SIGTERM, and must exit 0.
func startAgent(t *testing.T, args ...string) string {
	t.Helper()
	cmd := agent(t, args...)
	var stderr testutil.SyncBuffer
	cmd.Stderr = &stderr
	wait := startStoppable(t, cmd)
	t.Cleanup(func() {
		assert.NoError(t, wait(), "agent %v; stderr:\n%s", args, stderr.String())
	})
	var addr string
	ok := poll(30*time.Second, func() bool {
		if m := listening.FindStringSubmatch(stderr.String()); m != nil {
			addr = m[1]
		}
		return addr != ""
	})
	require.True(t, ok, "agent %v never said where it listens; stderr:\n%s", args, stderr.String())
	return addr
}

// listening is the agent's log line saying where it serves /metrics.
var listening = regexp.MustCompile(`msg="serving Prometheus metrics" addr=(\S+)`)

// startStoppable starts cmd, whose context ends with the test: then it
// is sent SIGTERM, and SIGKILL 30 s later. The function returned waits
// for its exit, and says how it exited unless with status 0. The agent
// is this test binary (built with -race under make test): closing its
// Sources took more than 10 s once with both cores of the machine busy
// (TestTopRecordedFromTheAgent, SIGKILLed after its checks passed).
func startStoppable(t *testing.T, cmd *exec.Cmd) func() error {
	t.Helper()
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	require.NoError(t, cmd.Start(), "starting %s", cmd.Path)
	done := make(chan error, 1)
	go func() {
		err := cmd.Wait() // the context's error once SIGTERM was sent
		if cmd.ProcessState != nil && cmd.ProcessState.Success() {
			err = nil
		}
		done <- err
	}()
	return func() error { return <-done }
}

// promServer is a running Prometheus server's HTTP API.
type promServer struct {
	url string
	log *testutil.SyncBuffer
}

// startPrometheus runs the Prometheus server on loopback, scraping the
// agent at target every second, with exemplar storage on, until the test
// ends, and waits until it is ready.
func startPrometheus(t *testing.T, target string) *promServer {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfg, []byte(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: xpuscope-agent
    static_configs:
      - targets: ["`+target+`"]
`), 0o644))
	addr := freeLoopbackAddr(t)
	ctx := t.Context()
	cmd := exec.CommandContext(ctx, prometheusBin,
		"--config.file="+cfg,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--enable-feature=exemplar-storage")
	p := &promServer{url: "http://" + addr, log: &testutil.SyncBuffer{}}
	cmd.Stdout, cmd.Stderr = p.log, p.log
	wait := startStoppable(t, cmd)
	t.Cleanup(func() {
		assert.NoError(t, wait(), "prometheus; log:\n%s", p.log.String())
	})
	ready := poll(30*time.Second, func() bool {
		resp, err := http.Get(p.url + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	require.True(t, ready, "prometheus at %s not ready after 30s; log:\n%s", p.url, p.log.String())
	return p
}

// freeLoopbackAddr returns a loopback address whose port was free a
// moment ago, for a server that takes its address on the command line.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// promSample is one element of an instant vector.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"` // [unix time, "value"]
}

func (s promSample) value(t *testing.T) float64 {
	t.Helper()
	str, ok := s.Value[1].(string)
	require.True(t, ok, "sample value %v", s.Value)
	v, err := strconv.ParseFloat(str, 64)
	require.NoError(t, err, "sample value %q", str)
	return v
}

// promExemplar is one exemplar of /api/v1/query_exemplars.
type promExemplar struct {
	Labels map[string]string `json:"labels"`
	Value  string            `json:"value"`
}

// get calls the API at path with the query and decodes its data into out.
func (p *promServer) get(t *testing.T, path string, query url.Values, out any) {
	t.Helper()
	u := p.url + path + "?" + query.Encode()
	resp, err := http.Get(u)
	require.NoError(t, err, "GET %s", u)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err, "GET %s", u)
	var r struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	require.NoError(t, json.Unmarshal(body, &r), "GET %s: %s", u, body)
	require.Equal(t, "success", r.Status, "GET %s: %s", u, body)
	require.NoError(t, json.Unmarshal(r.Data, out), "GET %s: %s", u, body)
}

// query evaluates expr (an instant vector) now.
func (p *promServer) query(t *testing.T, expr string) []promSample {
	t.Helper()
	var data struct {
		ResultType string       `json:"resultType"`
		Result     []promSample `json:"result"`
	}
	p.get(t, "/api/v1/query", url.Values{"query": {expr}}, &data)
	require.Equal(t, "vector", data.ResultType, "query %s", expr)
	return data.Result
}

// waitSeries waits until expr yields n series, and returns them.
func (p *promServer) waitSeries(t *testing.T, expr string, n int) []promSample {
	t.Helper()
	var got []promSample
	ok := poll(20*time.Second, func() bool {
		got = p.query(t, expr)
		return len(got) >= n
	})
	require.True(t, ok, "%s: %d series after 20s, want %d: %v; targets: %s", expr, len(got), n, got, p.targets(t))
	require.Len(t, got, n, "%s: %v", expr, got)
	return got
}

// exemplars returns the exemplars of the series selector selects, over
// the last ten minutes.
func (p *promServer) exemplars(t *testing.T, selector string) []promExemplar {
	t.Helper()
	var data []struct {
		Exemplars []promExemplar `json:"exemplars"`
	}
	now := time.Now()
	p.get(t, "/api/v1/query_exemplars", url.Values{
		"query": {selector},
		"start": {strconv.FormatInt(now.Add(-10*time.Minute).Unix(), 10)},
		"end":   {strconv.FormatInt(now.Add(time.Minute).Unix(), 10)},
	}, &data)
	var out []promExemplar
	for _, s := range data {
		out = append(out, s.Exemplars...)
	}
	return out
}

// targets says how the scrapes go, for failure messages.
func (p *promServer) targets(t *testing.T) string {
	t.Helper()
	var data struct {
		ActiveTargets []struct {
			ScrapeURL string `json:"scrapeUrl"`
			Health    string `json:"health"`
			LastError string `json:"lastError"`
		} `json:"activeTargets"`
	}
	p.get(t, "/api/v1/targets", url.Values{}, &data)
	return fmt.Sprintf("%+v", data.ActiveTargets)
}

// scrapeAgent reads the agent's /metrics in the Prometheus text format.
func scrapeAgent(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	body, err := fetch("http://"+addr+"/metrics", "")
	require.NoError(t, err)
	return parseText(t, body)
}

// openMetrics is the Accept header of a Prometheus scrape.
const openMetrics = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75," +
	"text/plain;version=0.0.4;q=0.5,*/*;q=0.1"

// scrapeOpenMetrics reads the agent's /metrics as Prometheus does.
func scrapeOpenMetrics(t *testing.T, addr string) string {
	t.Helper()
	body, err := fetch("http://"+addr+"/metrics", openMetrics)
	require.NoError(t, err)
	return body
}

// fetch GETs u, with an Accept header unless accept is "", and returns
// the body of a 200 response.
func fetch(u, accept string) (string, error) {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", u, resp.Status, b)
	}
	return string(b), nil
}

func grepLines(text, substr string) string {
	var out []string
	for line := range strings.Lines(text) {
		if strings.Contains(line, substr) {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return strings.Join(out, "\n")
}

// hasLabel reports whether m carries the label name=value.
func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// gaugeValue is the value of the gauge (or untyped) series of family
// name carrying label=value, or -1 when there is none.
func gaugeValue(families map[string]*dto.MetricFamily, name, label, value string) float64 {
	for _, m := range families[name].GetMetric() {
		if hasLabel(m, label, value) {
			return m.GetGauge().GetValue() + m.GetUntyped().GetValue()
		}
	}
	return -1
}

// histogramCount is the count of the histogram series of family name
// carrying label=value, summed.
func histogramCount(families map[string]*dto.MetricFamily, name, label, value string) uint64 {
	var n uint64
	for _, m := range families[name].GetMetric() {
		if hasLabel(m, label, value) {
			n += m.GetHistogram().GetSampleCount()
		}
	}
	return n
}
