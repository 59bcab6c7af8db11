package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/gpu"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/occupancy"
	"github.com/xpuscope/xpuscope/podjoin"
	"github.com/xpuscope/xpuscope/semconv"
)

// envAgent makes the test binary run the agent's main instead of tests:
// an agent that loads NVML must be a process of its own (one NVML library
// per process).
const envAgent = "XPUSCOPE_TEST_RUN_AGENT"

func TestMain(m *testing.M) {
	if os.Getenv(envAgent) != "" {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	if payload := os.Getenv(envFakeServer); payload != "" {
		os.Exit(fakeModelServer(payload))
	}
	os.Exit(m.Run())
}

// agent runs the agent in a child process with args.
func agent(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	testutil.Native(t, "the test binary run again as a program")
	exe, err := os.Executable()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), envAgent+"=1")
	return cmd
}

func output(t *testing.T, cmd *exec.Cmd) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return o.String(), e.String(), ee.ExitCode()
	}
	require.NoError(t, err)
	return o.String(), e.String(), 0
}

// requireRealNVML fails (CI) or skips unless Debian's libnvidia-ml1 is
// installed.
func requireRealNVML(t *testing.T) {
	for _, dir := range []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"} {
		if _, err := os.Stat(dir + "/libnvidia-ml.so.1"); err == nil {
			return
		}
	}
	testutil.SkipOrFail(t, "the real NVML library (Debian package libnvidia-ml1) is not installed; run make test")
}

// On this GPU-less machine the real NVML library fails nvmlInit: the GPU
// feature is unavailable, which is not a fault.
func TestCheckOnNodeWithoutGPU(t *testing.T) {
	requireRealNVML(t)
	stdout, stderr, code := output(t, agent(t, "-check"))
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Regexp(t, `(?m)^gpu +unavailable +gpu: nvmlInit \(libnvidia-ml\.so\.1\): NVIDIA driver not loaded`, stdout)
	// No kubelet here: the resolver is active, without GPU-to-pod joins.
	assert.Regexp(t, `(?m)^podjoin +active +kubelet: unavailable \(.*kubelet\.sock.*\): cgroup and environment joins only`, stdout)
	assert.Regexp(t, `(?m)^podjoin .*; pod names: `, stdout)
	assert.Regexp(t, `(?m)^serving +active +(no model server found yet|\d+ model server\(s\): )`, stdout)
	assert.Regexp(t, `(?m)^training +active +(no training job found yet|\d+ training job\(s\): )`, stdout)
	if os.Geteuid() == 0 {
		assert.Regexp(t, `(?m)^cudatrace +active +uprobes`, stdout)
		assert.Regexp(t, `(?m)^hiptrace +active +uprobes`, stdout)
		assert.Regexp(t, `(?m)^genai +active +plaintext HTTP on ports \[8000 8080 4000 3000 30000 11434\]; TLS: `, stdout)
		assert.Regexp(t, `(?m)^node +active +TCP retransmits and resets, model files' page cache and faults, model files' opens and reads; \d+ model file\(s\) watched; TCP server ports \[8000 8080 4000 3000 30000 11434\]`, stdout)
	} else {
		assert.Regexp(t, `(?m)^cudatrace +unavailable +cudatrace: .*needs CAP_BPF`, stdout)
		assert.Regexp(t, `(?m)^hiptrace +unavailable +hiptrace: .*needs CAP_BPF`, stdout)
		assert.Regexp(t, `(?m)^genai +unavailable +genai capture: .*needs CAP_BPF`, stdout)
		assert.Regexp(t, `(?m)^node +unavailable +node: `, stdout)
	}
}

// The fake NVML library stands in for a GPU node.
func TestRunWithGPUs(t *testing.T) {
	lib := testutil.BuildFakeNVML(t)

	stdout, stderr, code := output(t, agent(t, "-check", "-nvml-library", lib))
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Regexp(t, `(?m)^gpu +active +NVIDIA: 2 GPU\(s\), driver 535\.999\.01: 0:NVIDIA Fake H100 80GB HBM3, 1:NVIDIA Fake A100-SXM4-40GB$`, stdout)
	// A line per backend: NVML reads the GPUs; DCGM, not installed here,
	// is unavailable, which is no fault.
	assert.Regexp(t, `(?m)^gpu/nvml +active +2 device\(s\)$`, stdout)
	assert.Regexp(t, `(?m)^gpu/dcgm +unavailable +gpu: DCGM library libdcgm\.so\.4 cannot be loaded`, stdout)
	// No i915 or xe card here: Level Zero is not loaded, and neither
	// Intel backend finds a GPU.
	assert.Regexp(t, `(?m)^gpu/level_zero +unavailable +gpu: no Intel GPU: (sysfs at /sys: open class/drm: no such file or directory|no card of the i915 or xe driver in /sys/class/drm)$`, stdout)
	assert.Regexp(t, `(?m)^gpu/intel_sysfs +unavailable +gpu: no Intel GPU: (sysfs at /sys: open class/drm: no such file or directory|no card of the i915 or xe driver in /sys/class/drm)$`, stdout)
	if os.Geteuid() == 0 {
		// An NVIDIA node: the HIP tracer's ring is the small one.
		assert.Regexp(t, `(?m)^cudatrace +active +uprobes`, stdout)
		assert.Regexp(t, `(?m)^hiptrace +active +ring buffer 256 KiB, as the node has no AMD GPU; uprobes`, stdout)
	}

	// Run for a while: scrape the endpoint while it runs, then read the
	// final metrics it prints.
	cmd := agent(t, "-duration", "3s", "-interval", "100ms", "-listen", "127.0.0.1:0", "-nvml-library", lib)
	var out bytes.Buffer
	cmd.Stdout = &out
	errPipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	addr := regexp.MustCompile(`msg="serving Prometheus metrics" addr=(\S+)`)
	var scraped string
	for sc := bufio.NewScanner(errPipe); sc.Scan(); {
		if m := addr.FindStringSubmatch(sc.Text()); m != nil && scraped == "" {
			resp, err := http.Get("http://" + m[1] + "/metrics")
			require.NoError(t, err)
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			scraped = string(b)
		}
	}
	require.NoError(t, cmd.Wait())
	require.NotEmpty(t, scraped, "the agent never said where it listens")

	for name, text := range map[string]string{"scrape": scraped, "-duration output": out.String()} {
		families := parseText(t, text)
		power := families["hw_power_watts"]
		require.NotNil(t, power, "%s has no hw_power_watts", name)
		assert.Len(t, power.GetMetric(), 2, name)
		require.NotNil(t, families["hw_gpu_memory_usage_bytes"], name)
		require.NotNil(t, families["process_gpu_memory_usage_bytes"], name)
		assert.NotContains(t, families, "xpuscope_gpu_symbol_missing", name)
	}
}

func parseText(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	require.NoError(t, err)
	return families
}

// A bad option is a fault: -check reports it and exits 1.
func TestFaultExitsNonZero(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"-check", "-interval", "0s"}, &stdout, &stderr)
	assert.Equal(t, 1, code)
	assert.Regexp(t, `(?m)^gpu +fault +gpu: WithInterval: poll interval must be positive, got 0s$`, stdout.String())

	stdout.Reset()
	code = run(t.Context(), []string{"-interval", "0s", "-listen", ""}, &stdout, &stderr)
	assert.Equal(t, 1, code, "a fault stops the agent, not only -check")
}

func TestBadArguments(t *testing.T) {
	for _, args := range [][]string{{"-no-such-flag"}, {"-duration", "-1s"}, {"stray"}} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 2, run(t.Context(), args, &stdout, &stderr), "%v", args)
		assert.NotEmpty(t, stderr.String())
	}
}

func TestCommonCapacity(t *testing.T) {
	nv, amd := semconv.VendorNVIDIA, semconv.VendorAMD
	h100 := gpu.Device{UUID: "GPU-a", Vendor: nv, SMs: 132, ThreadsPerSM: 2048}
	a100 := gpu.Device{UUID: "GPU-b", Vendor: nv, SMs: 108, ThreadsPerSM: 2048}
	mig := gpu.Device{UUID: "MIG-c", Vendor: nv, Parent: "GPU-a"}
	mi300x := gpu.Device{UUID: "0x7a3c000000000000", Vendor: amd, SMs: 304, ThreadsPerSM: 2048}
	assert.Equal(t, &occupancy.Capacity{SMs: 132, ThreadsPerSM: 2048}, commonCapacity([]gpu.Device{h100, h100}, nv))
	assert.Nil(t, commonCapacity([]gpu.Device{h100, a100}, nv), "different GPUs: no one capacity")
	assert.Nil(t, commonCapacity([]gpu.Device{h100, mig}, nv), "MIG splits a GPU")
	assert.Nil(t, commonCapacity([]gpu.Device{{UUID: "GPU-x", Vendor: nv}}, nv), "unknown capacity")
	assert.Nil(t, commonCapacity([]gpu.Device{{UUID: "GPU-x", Vendor: nv, SMs: 132}}, nv), "unknown threads per SM")
	assert.Nil(t, commonCapacity(nil, nv))
	// Each vendor's runtime sees its own GPUs only.
	mixed := []gpu.Device{h100, mi300x, h100, mi300x}
	assert.Equal(t, &occupancy.Capacity{SMs: 132, ThreadsPerSM: 2048}, commonCapacity(mixed, nv))
	assert.Equal(t, &occupancy.Capacity{SMs: 304, ThreadsPerSM: 2048}, commonCapacity(mixed, amd))
	assert.Nil(t, commonCapacity([]gpu.Device{h100}, amd), "no AMD GPU")
}

// A runtime tracer gets the small ring only where gpu found GPUs, none of
// its runtime's vendor.
func TestRingFor(t *testing.T) {
	nv, amd := semconv.VendorNVIDIA, semconv.VendorAMD
	h100 := gpu.Device{UUID: "GPU-a", Vendor: nv}
	mig := gpu.Device{UUID: "MIG-c", Vendor: nv, Parent: "GPU-a"}
	mi300x := gpu.Device{UUID: "0x7a3c000000000000", Vendor: amd}
	for _, tc := range []struct {
		name   string
		gpus   []gpu.Device
		vendor string
		want   uint32
	}{
		{"gpu did not start: nothing known", nil, nv, 0},
		{"gpu did not start, AMD: nothing known", nil, amd, 0},
		{"NVIDIA node, CUDA", []gpu.Device{h100, h100}, nv, 0},
		{"NVIDIA node, HIP", []gpu.Device{h100, h100}, amd, idleRingBytes},
		{"MIG node, CUDA", []gpu.Device{h100, mig}, nv, 0},
		{"AMD node, CUDA", []gpu.Device{mi300x}, nv, idleRingBytes},
		{"mixed node, HIP", []gpu.Device{h100, mi300x}, amd, 0},
		{"gpu found no GPU", []gpu.Device{}, nv, idleRingBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := ringFor(tc.gpus, tc.vendor)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, got != 0, strings.Contains(why, "no "+tc.vendor+" GPU"), "why: %q", why)
		})
	}
}

func TestDescribePodjoin(t *testing.T) {
	assert.Equal(t, "kubelet: up, 12 pods, 9 GPU device(s) allocated (3 shared by several pods: no pod labels); pod names: 40 pods in the kubelet's log directories",
		describePodjoin(podjoin.Status{KubeletUp: true, Pods: 12, Devices: 9, Shared: 3, NamedPods: 40}))
	assert.Equal(t, "kubelet: unavailable (refused): cgroup and environment joins only, no GPU-to-pod join; pod names: unavailable (gone): processes get their pod UID and container id only",
		describePodjoin(podjoin.Status{KubeletErr: errors.New("refused"), LogErr: errors.New("gone")}))
}

// A bad configuration file stops the agent before anything starts, with
// the line of each problem, and exit status 2.
func TestConfigErrorsStopTheAgent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.yaml")
	require.NoError(t, os.WriteFile(path, []byte("gpu:\n  enabled: true\nexport:\n  intervl: 10s\n"), 0o644))
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"-check", "-config", path}, &stdout, &stderr)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr.String(), path+":1:1: unknown key \"gpu\" (GPU detection is automatic")
	assert.Contains(t, stderr.String(), path+":4:3: export: unknown key \"intervl\"")
	assert.Empty(t, stdout.String(), "no feature was started")

	// The environment is checked as strictly.
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "carrier-pigeon")
	stderr.Reset()
	assert.Equal(t, 2, run(t.Context(), []string{"-check"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "OTEL_EXPORTER_OTLP_PROTOCOL")
}

// A -config naming a FIFO with no writer stops the agent at once with
// exit status 2 and the reason (a plain open would wait forever).
func TestConfigFIFOStopsTheAgent(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "agent.yaml")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(t.Context(), []string{"-check", "-config", fifo}, &stdout, &stderr) }()
	var code int
	select {
	case code = <-done:
	case <-time.After(time.Minute):
		require.FailNow(t, "the agent waits on the FIFO")
	}
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr.String(), "configuration: read configuration "+fifo+": a FIFO, not a regular file")
	assert.Empty(t, stdout.String(), "no feature was started")
}

// The file's settings take: the service name and resource attributes, and
// the agent's own metrics say which feature is in which state.
func TestConfigFileAndSelfMetrics(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`service_name: gpu-agent-test
resource:
  deployment.environment.name: test
export:
  prometheus:
    listen: "127.0.0.1:0"
`), 0o644))
	stdout, stderr, code := output(t, agent(t, "-config", path, "-duration", "1s", "-nvml-library", "/nonexistent/libnvidia-ml.so.1"))
	require.Equal(t, 0, code, "stderr: %s", stderr)
	families := parseText(t, stdout)
	target := families["target_info"]
	require.NotNil(t, target)
	labels := map[string]string{}
	for _, l := range target.GetMetric()[0].GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	assert.Equal(t, "gpu-agent-test", labels["service_name"])
	assert.Equal(t, "test", labels["deployment_environment_name"])

	states := families["xpuscope_agent_feature_state"]
	require.NotNil(t, states, "no feature states in %s", stdout)
	got := map[string]float64{}
	reasons := map[string]string{}
	for _, m := range states.GetMetric() {
		var feature, state, reason string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "xpuscope_feature":
				feature = l.GetValue()
			case "xpuscope_feature_state":
				state = l.GetValue()
			case "xpuscope_feature_reason":
				reason = l.GetValue()
			}
		}
		got[feature+"/"+state] = m.GetGauge().GetValue() + m.GetUntyped().GetValue()
		reasons[feature+"/"+state] = reason
	}
	assert.Contains(t, reasons["gpu/unavailable"], "/nonexistent/libnvidia-ml.so.1", "why gpu is not active, as -check says")
	assert.Equal(t, reasons["gpu/unavailable"], reasons["gpu/active"], "one reason for each of the feature's series")
	assert.Empty(t, reasons["podjoin/active"], "an active feature has no reason")
	assert.Equal(t, 1.0, got["gpu/unavailable"], "%v", got)
	assert.Equal(t, 1.0, got["podjoin/active"], "%v", got)
	assert.Equal(t, 1.0, got["serving/active"], "%v", got)
	assert.Equal(t, 1.0, got["training/active"], "%v", got)
	assert.Equal(t, 0.0, got["gpu/active"], "%v", got)
	if os.Geteuid() == 0 {
		assert.Equal(t, 1.0, got["genai/active"], "%v", got)
		assert.Equal(t, 1.0, got["node/active"], "%v", got)
		assert.Equal(t, 1.0, got["cudatrace/active"], "%v", got)
		assert.Equal(t, 1.0, got["hiptrace/active"], "%v", got)
	}
}
