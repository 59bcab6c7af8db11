// Package deploy holds the Kubernetes manifests, Prometheus rules and
// Grafana dashboards of the reference agent, and the tests that keep them
// true to the code: promtool checks and unit-tests the rules, every metric
// and label they and the dashboards name is one the agent exports, the
// PrometheusRule embeds the rule file unchanged, and the manifests hold
// the privileges README.md documents, no more.
package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

func promtool(t *testing.T, args ...string) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		testutil.SkipOrFail(t, "promtool (Debian package prometheus, installed by scripts/install-test-deps.sh) is needed: %v", err)
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func TestPromtoolCheckRules(t *testing.T) {
	promtool(t, "check", "rules", "prometheus/rules.yml")
}

func TestPromtoolTestRules(t *testing.T) {
	promtool(t, "test", "rules", "prometheus/rules_test.yml")
}

// alertTests is the part of a promtool test file the tests read.
type alertTests struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		Name       string `yaml:"name"`
		AlertTests []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// TestEveryAlertIsTestedBothWays: promtool passes a file that tests
// nothing, and a case for a misspelt alert expecting no alerts passes too.
// So every alert of rules.yml needs a case where it fires and one where it
// must not, and every case must name an alert that exists.
func TestEveryAlertIsTestedBothWays(t *testing.T) {
	var rf ruleFile
	readYAML(t, "prometheus/rules.yml", &rf)
	var at alertTests
	readYAML(t, "prometheus/rules_test.yml", &at)
	if !slices.Equal(at.RuleFiles, []string{"rules.yml"}) {
		t.Errorf("rules_test.yml tests %v, want [rules.yml]", at.RuleFiles)
	}
	fires, silent := map[string]int{}, map[string]int{}
	for _, tc := range at.Tests {
		for _, a := range tc.AlertTests {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname]++
			} else {
				silent[a.Alertname]++
			}
		}
	}
	alerts := map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts[r.Alert] = true
			if fires[r.Alert] == 0 {
				t.Errorf("%s: no test case where it fires", r.Alert)
			}
			if silent[r.Alert] == 0 {
				t.Errorf("%s: no test case where it must not fire", r.Alert)
			}
		}
	}
	for name := range fires {
		if !alerts[name] {
			t.Errorf("rules_test.yml tests %s, which rules.yml does not define", name)
		}
	}
	for name := range silent {
		if !alerts[name] {
			t.Errorf("rules_test.yml tests %s, which rules.yml does not define", name)
		}
	}
	if len(alerts) == 0 {
		t.Fatal("no alerts in rules.yml")
	}
}

// TestPrometheusRuleEmbedsRuleFile: the Operator's PrometheusRule and the
// plain rule file (which promtool tests) must be the same rules.
func TestPrometheusRuleEmbedsRuleFile(t *testing.T) {
	var file struct {
		Groups any `yaml:"groups"`
	}
	readYAML(t, "prometheus/rules.yml", &file)
	var crd struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Spec       struct {
			Groups any `yaml:"groups"`
		} `yaml:"spec"`
	}
	readYAML(t, "kubernetes/prometheusrule.yaml", &crd)
	if crd.APIVersion != "monitoring.coreos.com/v1" || crd.Kind != "PrometheusRule" {
		t.Errorf("prometheusrule.yaml is a %s %s, want a monitoring.coreos.com/v1 PrometheusRule", crd.APIVersion, crd.Kind)
	}
	if file.Groups == nil {
		t.Fatal("rules.yml has no groups")
	}
	if !reflect.DeepEqual(file.Groups, crd.Spec.Groups) {
		got, _ := yaml.Marshal(crd.Spec.Groups)
		want, _ := yaml.Marshal(file.Groups)
		t.Errorf("prometheusrule.yaml's spec.groups differ from rules.yml's groups:\n--- prometheusrule.yaml\n%s\n--- rules.yml\n%s", got, want)
	}
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	var k struct {
		Resources []string `yaml:"resources"`
	}
	readYAML(t, "kubernetes/kustomization.yaml", &k)
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" {
			want = append(want, b)
		}
	}
	got := slices.Sorted(slices.Values(k.Resources))
	if !slices.Equal(got, want) {
		t.Errorf("kustomization.yaml lists %v; kubernetes/ holds %v", got, want)
	}
}

// The manifests' shape, as far as the tests read it.
type (
	objectMeta struct {
		Name      string            `yaml:"name"`
		Namespace string            `yaml:"namespace"`
		Labels    map[string]string `yaml:"labels"`
	}
	container struct {
		Args  []string `yaml:"args"`
		Ports []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
		} `yaml:"ports"`
		Env []struct {
			Name      string `yaml:"name"`
			ValueFrom struct {
				FieldRef struct {
					FieldPath string `yaml:"fieldPath"`
				} `yaml:"fieldRef"`
			} `yaml:"valueFrom"`
		} `yaml:"env"`
		Resources struct {
			Requests map[string]string `yaml:"requests"`
			Limits   map[string]string `yaml:"limits"`
		} `yaml:"resources"`
		SecurityContext struct {
			RunAsUser                *int  `yaml:"runAsUser"`
			ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
			AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
			Privileged               *bool `yaml:"privileged"`
			Capabilities             struct {
				Drop []string `yaml:"drop"`
				Add  []string `yaml:"add"`
			} `yaml:"capabilities"`
		} `yaml:"securityContext"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
			ReadOnly  bool   `yaml:"readOnly"`
		} `yaml:"volumeMounts"`
	}
	daemonSet struct {
		Metadata objectMeta `yaml:"metadata"`
		Spec     struct {
			Selector struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
			Template struct {
				Metadata objectMeta `yaml:"metadata"`
				Spec     struct {
					HostPID            bool              `yaml:"hostPID"`
					HostNetwork        bool              `yaml:"hostNetwork"`
					ServiceAccountName string            `yaml:"serviceAccountName"`
					NodeSelector       map[string]string `yaml:"nodeSelector"`
					Tolerations        []struct {
						Key    string `yaml:"key"`
						Effect string `yaml:"effect"`
					} `yaml:"tolerations"`
					Containers []container `yaml:"containers"`
					Volumes    []struct {
						Name     string `yaml:"name"`
						HostPath *struct {
							Path string `yaml:"path"`
						} `yaml:"hostPath"`
					} `yaml:"volumes"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
)

// capabilities is the agent's capability set. Changing it is a decision:
// change README.md's table, the comments in daemonset.yaml and this list
// together.
var capabilities = []string{"BPF", "PERFMON", "SYS_ADMIN", "SYS_PTRACE"}

func TestDaemonSetPrivileges(t *testing.T) {
	var ds daemonSet
	readYAML(t, "kubernetes/daemonset.yaml", &ds)
	pod := ds.Spec.Template.Spec
	if !pod.HostPID {
		t.Error("hostPID must be true: the probes report the node's pids")
	}
	if pod.HostNetwork {
		t.Error("hostNetwork is not needed: the capture reads sockets through tracepoints")
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(pod.Containers))
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	if sc.Privileged != nil && *sc.Privileged {
		t.Error("the agent must not run privileged")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation must be false")
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("readOnlyRootFilesystem must be true")
	}
	if sc.RunAsUser == nil || *sc.RunAsUser != 0 {
		t.Error("runAsUser must be 0: the capabilities below are granted to root")
	}
	if !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) {
		t.Errorf("capabilities.drop = %v, want [ALL]", sc.Capabilities.Drop)
	}
	if !slices.Equal(slices.Sorted(slices.Values(sc.Capabilities.Add)), capabilities) {
		t.Errorf("capabilities.add = %v, want %v", sc.Capabilities.Add, capabilities)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, cp := range sc.Capabilities.Add {
		if strings.HasPrefix(cp, "CAP_") {
			t.Errorf("%s: spell capabilities without CAP_, as Kubernetes does", cp)
		}
		if !strings.Contains(string(readme), "| `CAP_"+cp+"` |") {
			t.Errorf("README.md's capability table has no row for CAP_%s", cp)
		}
	}

	// Every host path is mounted read-only, and the procfs mount is where
	// -proc-root points.
	hostPaths := map[string]string{} // volume name -> host path
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	mounts := map[string]string{} // host path -> mount path
	for _, m := range c.VolumeMounts {
		if !m.ReadOnly {
			t.Errorf("volume %s at %s must be read-only", m.Name, m.MountPath)
		}
		if hp, ok := hostPaths[m.Name]; ok {
			mounts[hp] = m.MountPath
		}
	}
	for _, hp := range []string{"/proc", "/sys", "/var/lib/kubelet/pod-resources", "/var/log"} {
		if _, ok := mounts[hp]; !ok {
			t.Errorf("the node's %s is not mounted", hp)
		}
	}
	for hp, mp := range mounts {
		if !strings.Contains(string(readme), "| host `"+hp+"` at `"+mp+"` (read-only)") {
			t.Errorf("README.md's privilege table has no row for the node's %s at %s", hp, mp)
		}
	}
	// podjoin reads the kubelet's socket and log directories where they
	// are on the node: no flag names them.
	for _, hp := range []string{"/var/lib/kubelet/pod-resources", "/var/log"} {
		if mp, ok := mounts[hp]; ok && mp != hp {
			t.Errorf("the node's %s is mounted at %s; podjoin reads it at %s", hp, mp, hp)
		}
	}
	if i := slices.Index(c.Args, "-proc-root"); i < 0 || i+1 == len(c.Args) || c.Args[i+1] != mounts["/proc"] {
		t.Errorf("args %v: want -proc-root %s, where the node's /proc is mounted", c.Args, mounts["/proc"])
	}

	nodeName := false
	for _, e := range c.Env {
		if e.Name == "K8S_NODE_NAME" && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName" {
			nodeName = true
		}
	}
	if !nodeName {
		t.Error("K8S_NODE_NAME must come from the downward API's spec.nodeName")
	}
	for _, r := range []string{"cpu", "memory"} {
		if c.Resources.Requests[r] == "" || c.Resources.Limits[r] == "" {
			t.Errorf("resources: %s needs a request and a limit", r)
		}
	}
	if len(pod.NodeSelector) == 0 {
		t.Error("no nodeSelector: the agent belongs on GPU nodes")
	}
	tolerated := false
	for _, tl := range pod.Tolerations {
		tolerated = tolerated || tl.Key == "nvidia.com/gpu" && tl.Effect == "NoSchedule"
	}
	if !tolerated {
		t.Error("GPU nodes are often tainted nvidia.com/gpu:NoSchedule; tolerate it")
	}
}

// TestScrapeWiring: the ServiceMonitor finds the Service, the Service the
// pods, and the ports agree with the agent's -listen.
func TestScrapeWiring(t *testing.T) {
	var ns struct {
		Metadata objectMeta `yaml:"metadata"`
	}
	readYAML(t, "kubernetes/namespace.yaml", &ns)
	var sa struct {
		Metadata objectMeta `yaml:"metadata"`
	}
	readYAML(t, "kubernetes/serviceaccount.yaml", &sa)
	var ds daemonSet
	readYAML(t, "kubernetes/daemonset.yaml", &ds)
	var svc struct {
		Metadata objectMeta `yaml:"metadata"`
		Spec     struct {
			Selector map[string]string `yaml:"selector"`
			Ports    []struct {
				Name       string `yaml:"name"`
				Port       int    `yaml:"port"`
				TargetPort string `yaml:"targetPort"`
			} `yaml:"ports"`
		} `yaml:"spec"`
	}
	readYAML(t, "kubernetes/service.yaml", &svc)
	var sm struct {
		Metadata objectMeta `yaml:"metadata"`
		Spec     struct {
			Selector struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
			NamespaceSelector struct {
				MatchNames []string `yaml:"matchNames"`
			} `yaml:"namespaceSelector"`
			Endpoints []struct {
				Port string `yaml:"port"`
				Path string `yaml:"path"`
			} `yaml:"endpoints"`
		} `yaml:"spec"`
	}
	readYAML(t, "kubernetes/servicemonitor.yaml", &sm)

	namespace := ns.Metadata.Name
	for _, m := range []objectMeta{sa.Metadata, ds.Metadata, svc.Metadata, sm.Metadata} {
		if m.Namespace != namespace {
			t.Errorf("%s is in namespace %q, want %q", m.Name, m.Namespace, namespace)
		}
	}
	if ds.Spec.Template.Spec.ServiceAccountName != sa.Metadata.Name {
		t.Errorf("the DaemonSet runs as %q, want %q", ds.Spec.Template.Spec.ServiceAccountName, sa.Metadata.Name)
	}
	podLabels := ds.Spec.Template.Metadata.Labels
	matches := func(selector, labels map[string]string) bool {
		for k, v := range selector {
			if labels[k] != v {
				return false
			}
		}
		return len(selector) > 0
	}
	if !matches(ds.Spec.Selector.MatchLabels, podLabels) {
		t.Error("the DaemonSet's selector does not match its pod template")
	}
	if !matches(svc.Spec.Selector, podLabels) {
		t.Error("the Service's selector does not match the agent's pods")
	}
	if !matches(sm.Spec.Selector.MatchLabels, svc.Metadata.Labels) {
		t.Error("the ServiceMonitor's selector does not match the Service")
	}
	if !slices.Contains(sm.Spec.NamespaceSelector.MatchNames, namespace) {
		t.Errorf("the ServiceMonitor looks in %v, not %s", sm.Spec.NamespaceSelector.MatchNames, namespace)
	}

	c := ds.Spec.Template.Spec.Containers[0]
	i := slices.Index(c.Args, "-listen")
	if i < 0 || i+1 == len(c.Args) {
		t.Fatalf("args %v: want -listen", c.Args)
	}
	_, listenPort, _ := strings.Cut(c.Args[i+1], ":")
	containerPorts := map[string]int{}
	for _, p := range c.Ports {
		containerPorts[p.Name] = p.ContainerPort
	}
	if len(svc.Spec.Ports) != 1 || len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("want one Service port and one ServiceMonitor endpoint")
	}
	sp, ep := svc.Spec.Ports[0], sm.Spec.Endpoints[0]
	if port, ok := containerPorts[sp.TargetPort]; !ok || strconv.Itoa(port) != listenPort {
		t.Errorf("the Service targets port %q, the container exposes %v, the agent listens on %s", sp.TargetPort, containerPorts, c.Args[i+1])
	}
	if ep.Port != sp.Name || ep.Path != "/metrics" {
		t.Errorf("the ServiceMonitor scrapes port %q path %q; the Service's port is %q and the agent serves /metrics", ep.Port, ep.Path, sp.Name)
	}
}

// TestReadmeListsAlertsAndDashboards: README.md's tables name every alert
// and dashboard there is.
func TestReadmeListsAlertsAndDashboards(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	readYAML(t, "prometheus/rules.yml", &rf)
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" && !strings.Contains(string(readme), "| `"+r.Alert+"` |") {
				t.Errorf("README.md's alert table has no row for %s", r.Alert)
			}
		}
	}
	for _, path := range dashboards {
		d := readDashboard(t, path)
		if !strings.Contains(string(readme), "| `"+path+"` | `"+d.UID+"` |") {
			t.Errorf("README.md's dashboard table has no row for %s (uid %s)", path, d.UID)
		}
	}
}
