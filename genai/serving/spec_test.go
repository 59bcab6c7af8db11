package serving

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xpuscope/xpuscope/internal/proctable"
	"github.com/xpuscope/xpuscope/semconv"
)

// Command lines, titles and executables as each server's processes have
// them.
func TestRecognise(t *testing.T) {
	for _, c := range []struct {
		name string
		p    proc
		kind Kind
		role string
	}{
		{"vllm serve (console script)", proc{exe: "python3.12", comm: "vllm", args: []string{"/usr/bin/python3", "/usr/local/bin/vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct"}}, VLLM, semconv.ServerRoleAPIServer},
		{"vllm serve (argv0)", proc{exe: "python3.12", comm: "vllm", args: []string{"vllm", "serve", "Qwen/Qwen3-0.6B", "--port", "8001"}}, VLLM, semconv.ServerRoleAPIServer},
		{"the OpenAI module", proc{exe: "python3.10", comm: "python3", args: []string{"python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"}}, VLLM, semconv.ServerRoleAPIServer},
		{"the OpenAI module's file", proc{exe: "python3.10", comm: "python3", args: []string{"python3", "/opt/vllm/vllm/entrypoints/openai/api_server.py"}}, VLLM, semconv.ServerRoleAPIServer},
		{"engine core (comm)", proc{exe: "python3.12", comm: "VLLM::EngineCor", args: []string{"VLLM::EngineCore"}}, VLLM, semconv.ServerRoleEngineCore},
		{"engine core (data parallel)", proc{exe: "python3.12", comm: "VLLM::EngineCor", args: []string{"VLLM::EngineCore_DP1"}}, VLLM, semconv.ServerRoleEngineCore},
		{"engine core, title not yet in the command line", proc{exe: "python3.12", comm: "VLLM::EngineCor", args: []string{"python3", "-c", "from multiprocessing.spawn import spawn_main"}}, VLLM, semconv.ServerRoleEngineCore},
		{"GPU worker", proc{exe: "python3.12", comm: "VLLM::Worker_TP", args: []string{"VLLM::Worker_TP1"}}, VLLM, semconv.ServerRoleWorker},
		{"API server of several", proc{exe: "python3.12", comm: "VLLM::APIServer", args: []string{"VLLM::APIServer_0"}}, VLLM, semconv.ServerRoleAPIServer},
		{"TGI launcher", proc{exe: "text-generation-launcher", comm: "text-generation-", args: []string{"text-generation-launcher", "--model-id", "m"}}, TGI, semconv.ServerRoleLauncher},
		{"TGI router", proc{exe: "text-generation-router", comm: "text-generation-", args: []string{"text-generation-router", "--port", "80"}}, TGI, semconv.ServerRoleRouter},
		{"TGI shard", proc{exe: "python3.11", comm: "text-generation-", args: []string{"/opt/conda/bin/python3.11", "/opt/conda/bin/text-generation-server", "serve", "m", "--uds-path", "/tmp/text-generation-server"}}, TGI, semconv.ServerRoleShard},
		{"Triton", proc{exe: "tritonserver", comm: "tritonserver", args: []string{"tritonserver", "--model-repository=/models"}}, Triton, semconv.ServerRoleServer},
		{"Triton by path", proc{exe: "tritonserver", comm: "tritonserver", args: []string{"/opt/tritonserver/bin/tritonserver"}}, Triton, semconv.ServerRoleServer},
		{"TorchServe frontend", proc{exe: "java", comm: "java", args: []string{"java", "-cp", ".:/usr/lib/ts/frontend/*", "org.pytorch.serve.ModelServer"}}, TorchServe, semconv.ServerRoleServer},
		{"TorchServe worker", proc{exe: "python3.9", comm: "python", args: []string{"python", "/usr/lib/python3.9/site-packages/ts/model_service_worker.py", "--sock-type", "unix"}}, TorchServe, semconv.ServerRoleWorker},
		{"TF Serving", proc{exe: "tensorflow_model_server", comm: "tensorflow_model", args: []string{"tensorflow_model_server", "--rest_api_port=8501"}}, TFServing, semconv.ServerRoleServer},
		{"a client of vLLM", proc{exe: "python3.12", comm: "python3", args: []string{"python3", "bench.py", "--server", "vllm"}}, "", ""},
		{"vllm, not serving", proc{exe: "python3.12", comm: "vllm", args: []string{"vllm", "bench", "serve"}}, "", ""},
		{"an editor on Triton's config", proc{exe: "vim", comm: "vim", args: []string{"vim", "tritonserver.conf"}}, "", ""},
		{"text-generation-server download", proc{exe: "python3.11", comm: "text-generation-", args: []string{"python3", "/opt/conda/bin/text-generation-server", "download-weights", "m"}}, "", ""},
	} {
		sp, role, ok := recognise(&c.p)
		if c.kind == "" {
			assert.False(t, ok, "%s: recognised as %v %s", c.name, sp, role)
			continue
		}
		if assert.True(t, ok, c.name) {
			assert.Equal(t, c.kind, sp.kind, c.name)
			assert.Equal(t, c.role, role, c.name)
		}
	}
}

func TestEndpointFlags(t *testing.T) {
	for _, c := range []struct {
		name  string
		sp    *spec
		args  [][]string
		ports []uint16
		why   string
	}{
		{"vllm", &vllmSpec, [][]string{{"vllm", "serve", "m", "--port", "8001"}, {"VLLM::EngineCore"}}, []uint16{8001, 8000}, ""},
		{"vllm default", &vllmSpec, [][]string{{"vllm", "serve", "m"}}, []uint16{8000}, ""},
		{"tgi", &tgiSpec, [][]string{{"text-generation-launcher", "--port=80"}, {"text-generation-router", "--port", "80", "--prometheus-port", "9100"}}, []uint16{9100, 80, 9000, 3000}, ""},
		{"triton", &tritonSpec, [][]string{{"tritonserver", "--metrics-port=9002"}}, []uint16{9002, 8002}, ""},
		{"triton off", &tritonSpec, [][]string{{"tritonserver", "--allow-metrics", "false"}}, nil, "started with --allow-metrics=false: it serves no metrics"},
		{"tf serving", &tfServingSpec, [][]string{{"tensorflow_model_server", "--rest_api_port=8501", "--monitoring_config_file=/m.config"}}, []uint16{8501}, ""},
		{"tf serving bare", &tfServingSpec, [][]string{{"tensorflow_model_server", "--rest_api_port=8501"}}, nil, "started without --monitoring_config_file: it serves no metrics"},
		{"tf serving no REST", &tfServingSpec, [][]string{{"tensorflow_model_server", "--monitoring_config_file=/m.config"}}, nil, "its REST API is off (--rest_api_port is 0 or not given), and the metrics are served there"},
	} {
		ports, why := c.sp.endpoint(c.args)
		assert.Equal(t, c.ports, ports, c.name)
		assert.Equal(t, c.why, why, c.name)
	}
}

func TestParseMonitoringConfig(t *testing.T) {
	for _, c := range []struct {
		in      string
		path    string
		enabled bool
	}{
		{"prometheus_config {\n  enable: true,\n  path: \"/monitoring/prometheus/metrics\"\n}\n", "/monitoring/prometheus/metrics", true},
		{"prometheus_config { enable: true path: \"/metrics\" }", "/metrics", true},
		{"prometheus_config {\n enable: true\n}\n", tfServingDefaultPath, true},
		{"prometheus_config {\n enable: false, path: \"/m\"\n}\n", "/m", false},
		{"# prometheus_config { enable: true }\n", tfServingDefaultPath, false},
		{"", tfServingDefaultPath, false},
		{"prometheus_config { enable: true, path: \"no-slash\" }", tfServingDefaultPath, true},
	} {
		path, enabled := parseMonitoringConfig([]byte(c.in))
		assert.Equal(t, c.path, path, "%q", c.in)
		assert.Equal(t, c.enabled, enabled, "%q", c.in)
	}
}

// The endpoints tried: the flags' ports where the server listens, then
// its other listening ports; the loopback of its namespace for a
// wildcard address.
func TestCandidates(t *testing.T) {
	ls := []listener{
		{addr: netip.MustParseAddr("0.0.0.0"), port: 5557, pid: 11},
		{addr: netip.MustParseAddr("::"), port: 8000, pid: 10},
		{addr: netip.MustParseAddr("10.1.2.3"), port: 9000, pid: 10},
	}
	assert.Equal(t, []candidate{{"[::1]:8000", 10}, {"127.0.0.1:5557", 11}, {"10.1.2.3:9000", 10}},
		candidates([]uint16{8000, 8001}, ls, true, 10))
	assert.Equal(t, []candidate{{"127.0.0.1:8000", 10}, {"127.0.0.1:8001", 10}},
		candidates([]uint16{8000, 8001}, nil, false, 10), "sockets unreadable: the flags' ports, on loopback")
	assert.Empty(t, candidates([]uint16{8000}, nil, true, 10), "no socket at all")
	assert.Equal(t, "127.0.0.1:80", hostOf(listener{addr: netip.MustParseAddr("::ffff:127.0.0.1"), port: 80}))
}

// A server's processes join the farthest ancestor of their kind: vLLM's
// engine core and its workers the API server, TGI's router and shards
// the launcher, through a shell between them; a process of another kind
// stays apart.
func TestRootOf(t *testing.T) {
	var tab proctable.Table
	add := func(pid, ppid int, sp *spec) *proctable.Process {
		p := &proctable.Process{PID: pid, PPID: ppid}
		if sp != nil {
			p.Kind = sp
		}
		tab.Put(p)
		return p
	}
	add(1, 0, nil)
	api := add(100, 1, &vllmSpec)
	engine := add(101, 100, &vllmSpec)
	worker := add(102, 101, &vllmSpec)
	launcher := add(200, 1, &tgiSpec)
	add(201, 200, nil) // a shell
	router := add(202, 201, &tgiSpec)
	ort := add(300, 100, &onnxSpec) // a child of vLLM's, of another kind
	orphan := add(400, 1, &vllmSpec)
	for e, root := range map[*proctable.Process]*proctable.Process{
		api: api, engine: api, worker: api, launcher: launcher, router: launcher, ort: ort, orphan: orphan,
	} {
		assert.Equal(t, root.PID, tab.RootOf(e).PID, "the root of %d", e.PID)
	}
	// A cycle in the parents (a pid reused meanwhile) ends.
	a := add(500, 501, &vllmSpec)
	add(501, 500, &vllmSpec)
	assert.Contains(t, []int{500, 501}, tab.RootOf(a).PID)
}

// A server lists at most its cap of processes; the others are counted.
func TestMemberCap(t *testing.T) {
	var es []*proctable.Process
	for pid := 1000; pid < 1000+maxProcesses+6; pid++ {
		es = append(es, &proctable.Process{PID: pid, Kind: &vllmSpec, Role: semconv.ServerRoleWorker})
	}
	srv := &server{spec: &vllmSpec}
	srv.setMembers(es, maxProcesses)
	assert.Len(t, srv.members, maxProcesses)
	assert.Equal(t, 6, srv.overProc)
	srv.setMembers(es[:3], maxProcesses)
	assert.Len(t, srv.members, 3, "brought up to date")
	assert.Zero(t, srv.overProc)
}
