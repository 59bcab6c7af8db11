package serving

import (
	"bufio"
	"bytes"
	"regexp"
	"strconv"
	"strings"

	"github.com/xpuscope/xpuscope/semconv"
)

// TF Serving: one process, tensorflow_model_server. Its Prometheus
// metrics are served on its REST port (--rest_api_port) only when it was
// started with --monitoring_config_file naming a file that enables them
// (prometheus_config { enable: true, path: "…" }); otherwise it is
// reported found, with no endpoint, and why.
var tfServingSpec = spec{
	kind:     TFServing,
	role:     tfServingRole,
	endpoint: tfServingEndpoint,
	path:     tfServingPath,
	profile:  &tfServingProfile,
}

// tfServingDefaultPath is the path of prometheus_config when it names
// none (tensorflow_serving/config/monitoring_config.proto).
const tfServingDefaultPath = "/monitoring/prometheus/metrics"

// maxMonitoringConfig bounds the monitoring configuration read: a few
// lines of text proto.
const maxMonitoringConfig = 64 << 10

func tfServingRole(p *proc) string {
	if p.isProgram("tensorflow_model_server") {
		return semconv.ServerRoleServer
	}
	return ""
}

func tfServingEndpoint(args [][]string) ([]uint16, string) {
	has := false
	for _, a := range args {
		if v, ok := flag(a, "--monitoring_config_file"); ok && v != "" {
			has = true
		}
	}
	if !has {
		return nil, "started without --monitoring_config_file: it serves no metrics"
	}
	port := portFlag(args, "--rest_api_port")
	if port == 0 {
		return nil, "its REST API is off (--rest_api_port is 0 or not given), and the metrics are served there"
	}
	return []uint16{port}, ""
}

// tfServingPath reads the path of the Prometheus metrics from the
// monitoring configuration the server names, through read (the file as
// the server sees it).
func tfServingPath(args [][]string, read func(string) ([]byte, error)) (string, string) {
	var file string
	for _, a := range args {
		if v, ok := flag(a, "--monitoring_config_file"); ok {
			file = v
		}
	}
	b, err := read(file)
	if err != nil {
		return "", "its monitoring configuration " + strconv.Quote(file) + " cannot be read: " + err.Error()
	}
	path, enabled := parseMonitoringConfig(b)
	if !enabled {
		return "", "its monitoring configuration " + strconv.Quote(file) + " does not enable prometheus_config"
	}
	return path, ""
}

// The fields of a MonitoringConfig in text proto that say where its
// Prometheus metrics are: prometheus_config's enable and path.
var (
	monitoringEnable = regexp.MustCompile(`\benable\s*:\s*([A-Za-z0-9]+)`)
	monitoringPath   = regexp.MustCompile(`\bpath\s*:\s*("(?:[^"\\\n]|\\.)*")`)
)

// parseMonitoringConfig reads a MonitoringConfig in text proto:
// prometheus_config's enable and path, the two fields the message holds,
// wherever they are, comments left out.
func parseMonitoringConfig(b []byte) (path string, enabled bool) {
	path = tfServingDefaultPath
	var text strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 256), maxMonitoringConfig)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		text.WriteString(line)
		text.WriteByte('\n')
	}
	if m := monitoringEnable.FindStringSubmatch(text.String()); m != nil {
		enabled = m[1] == "true" || m[1] == "True" || m[1] == "t" || m[1] == "1"
	}
	if m := monitoringPath.FindStringSubmatch(text.String()); m != nil {
		if p, err := strconv.Unquote(m[1]); err == nil && strings.HasPrefix(p, "/") {
			path = p
		}
	}
	return path, enabled
}

// tfServingProfile: TF Serving's request count by model and status (OK
// is success, another status its error.type) and its request latency
// histogram, in microseconds, its edges kept in seconds.
var tfServingProfile = profile{
	model: []string{"model_name"},
	own:   func(name string) bool { return strings.HasPrefix(name, ":tensorflow:") },
	rules: []rule{
		{names: []string{":tensorflow:serving:request_count"}, metric: &semconv.XpuscopeGenAIServerRequests, outcome: failed("status", "OK")},
		{names: []string{":tensorflow:serving:request_latency"}, metric: &semconv.GenAIServerRequestDuration, read: readHistogram, div: 1e6},
	},
}
