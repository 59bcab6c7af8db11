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
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

func promtool(t *testing.T, args ...string) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		testutil.SkipOrFail(t, "promtool (Debian package prometheus, installed by scripts/install-test-deps.sh) is needed: %v", err)
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	require.NoError(t, err, "promtool %s\n%s", strings.Join(args, " "), out)
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
	assert.Equal(t, []string{"rules.yml"}, at.RuleFiles, "the rule files rules_test.yml tests")
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
			assert.NotZero(t, fires[r.Alert], "%s: no test case where it fires", r.Alert)
			assert.NotZero(t, silent[r.Alert], "%s: no test case where it must not fire", r.Alert)
		}
	}
	for name := range fires {
		assert.True(t, alerts[name], "rules_test.yml tests %s, which rules.yml does not define", name)
	}
	for name := range silent {
		assert.True(t, alerts[name], "rules_test.yml tests %s, which rules.yml does not define", name)
	}
	require.NotEmpty(t, alerts, "no alerts in rules.yml")
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
	assert.Equal(t, "monitoring.coreos.com/v1", crd.APIVersion, "prometheusrule.yaml's apiVersion")
	assert.Equal(t, "PrometheusRule", crd.Kind, "prometheusrule.yaml's kind")
	require.NotNil(t, file.Groups, "rules.yml has no groups")
	assert.Equal(t, file.Groups, crd.Spec.Groups, "prometheusrule.yaml's spec.groups differ from rules.yml's groups")
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	var k struct {
		Resources []string `yaml:"resources"`
	}
	readYAML(t, "kubernetes/kustomization.yaml", &k)
	files, err := filepath.Glob("kubernetes/*.yaml")
	require.NoError(t, err)
	var want []string
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" {
			want = append(want, b)
		}
	}
	got := slices.Sorted(slices.Values(k.Resources))
	assert.Equal(t, want, got, "kustomization.yaml's resources against what kubernetes/ holds")
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
	assert.True(t, pod.HostPID, "hostPID must be true: the probes report the node's pids")
	assert.False(t, pod.HostNetwork, "hostNetwork is not needed: the capture reads sockets through tracepoints")
	require.Len(t, pod.Containers, 1, "want one container")
	c := pod.Containers[0]
	sc := c.SecurityContext
	assert.False(t, sc.Privileged != nil && *sc.Privileged, "the agent must not run privileged")
	assert.True(t, sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation, "allowPrivilegeEscalation must be false")
	assert.True(t, sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem, "readOnlyRootFilesystem must be true")
	assert.True(t, sc.RunAsUser != nil && *sc.RunAsUser == 0, "runAsUser must be 0: the capabilities below are granted to root")
	assert.Equal(t, []string{"ALL"}, sc.Capabilities.Drop, "capabilities.drop")
	assert.Equal(t, capabilities, slices.Sorted(slices.Values(sc.Capabilities.Add)), "capabilities.add = %v, sorted", sc.Capabilities.Add)
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	for _, cp := range sc.Capabilities.Add {
		assert.False(t, strings.HasPrefix(cp, "CAP_"), "%s: spell capabilities without CAP_, as Kubernetes does", cp)
		assert.True(t, strings.Contains(string(readme), "| `CAP_"+cp+"` |"), "README.md's capability table has no row for CAP_%s", cp)
	}

	// Every host path is mounted read-only but the BPF file system, where
	// the hold map is pinned, and the procfs mount is where -proc-root
	// points.
	hostPaths := map[string]string{} // volume name -> host path
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	mounts := map[string]string{} // host path -> mount path
	access := map[string]string{} // host path -> "read-only" or "read-write"
	for _, m := range c.VolumeMounts {
		hp, ok := hostPaths[m.Name]
		if !ok {
			continue
		}
		mounts[hp] = m.MountPath
		access[hp] = "read-only"
		if !m.ReadOnly {
			access[hp] = "read-write"
		}
		if hp == "/sys/fs/bpf" {
			assert.Equal(t, hp, m.MountPath, "the hold map is pinned in the BPF file system at %s", hp)
			assert.False(t, m.ReadOnly, "the BPF file system must be writable: the hold map is pinned there")
			continue
		}
		assert.True(t, m.ReadOnly, "volume %s at %s must be read-only", m.Name, m.MountPath)
	}
	for _, hp := range []string{"/proc", "/sys", "/var/lib/kubelet/pod-resources", "/var/log", "/sys/fs/bpf"} {
		assert.Contains(t, mounts, hp, "the node's %s is not mounted", hp)
	}
	for hp, mp := range mounts {
		assert.True(t, strings.Contains(string(readme), "| host `"+hp+"` at `"+mp+"` ("+access[hp]+")"),
			"README.md's privilege table has no row for the node's %s at %s (%s)", hp, mp, access[hp])
	}
	// podjoin reads the kubelet's socket and log directories where they
	// are on the node: no flag names them.
	for _, hp := range []string{"/var/lib/kubelet/pod-resources", "/var/log"} {
		if mp, ok := mounts[hp]; ok {
			assert.Equal(t, hp, mp, "the node's %s is mounted at %s; podjoin reads it at %s", hp, mp, hp)
		}
	}
	i := slices.Index(c.Args, "-proc-root")
	assert.True(t, i >= 0 && i+1 != len(c.Args) && c.Args[i+1] == mounts["/proc"],
		"args %v: want -proc-root %s, where the node's /proc is mounted", c.Args, mounts["/proc"])

	nodeName := false
	for _, e := range c.Env {
		if e.Name == "K8S_NODE_NAME" && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName" {
			nodeName = true
		}
	}
	assert.True(t, nodeName, "K8S_NODE_NAME must come from the downward API's spec.nodeName")
	for _, r := range []string{"cpu", "memory"} {
		assert.NotEmpty(t, c.Resources.Requests[r], "resources: %s needs a request and a limit", r)
		assert.NotEmpty(t, c.Resources.Limits[r], "resources: %s needs a request and a limit", r)
	}
	assert.NotEmpty(t, pod.NodeSelector, "no nodeSelector: the agent belongs on GPU nodes")
	tolerated := false
	for _, tl := range pod.Tolerations {
		tolerated = tolerated || tl.Key == "nvidia.com/gpu" && tl.Effect == "NoSchedule"
	}
	assert.True(t, tolerated, "GPU nodes are often tainted nvidia.com/gpu:NoSchedule; tolerate it")
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
		assert.Equal(t, namespace, m.Namespace, "%s's namespace", m.Name)
	}
	assert.Equal(t, sa.Metadata.Name, ds.Spec.Template.Spec.ServiceAccountName, "the DaemonSet's service account")
	podLabels := ds.Spec.Template.Metadata.Labels
	matches := func(selector, labels map[string]string) bool {
		for k, v := range selector {
			if labels[k] != v {
				return false
			}
		}
		return len(selector) > 0
	}
	assert.True(t, matches(ds.Spec.Selector.MatchLabels, podLabels), "the DaemonSet's selector does not match its pod template")
	assert.True(t, matches(svc.Spec.Selector, podLabels), "the Service's selector does not match the agent's pods")
	assert.True(t, matches(sm.Spec.Selector.MatchLabels, svc.Metadata.Labels), "the ServiceMonitor's selector does not match the Service")
	assert.Contains(t, sm.Spec.NamespaceSelector.MatchNames, namespace, "the namespaces the ServiceMonitor looks in")

	c := ds.Spec.Template.Spec.Containers[0]
	i := slices.Index(c.Args, "-listen")
	require.True(t, i >= 0 && i+1 != len(c.Args), "args %v: want -listen", c.Args)
	_, listenPort, _ := strings.Cut(c.Args[i+1], ":")
	containerPorts := map[string]int{}
	for _, p := range c.Ports {
		containerPorts[p.Name] = p.ContainerPort
	}
	require.Len(t, svc.Spec.Ports, 1, "want one Service port and one ServiceMonitor endpoint")
	require.Len(t, sm.Spec.Endpoints, 1, "want one Service port and one ServiceMonitor endpoint")
	sp, ep := svc.Spec.Ports[0], sm.Spec.Endpoints[0]
	port, ok := containerPorts[sp.TargetPort]
	assert.True(t, ok && strconv.Itoa(port) == listenPort,
		"the Service targets port %q, the container exposes %v, the agent listens on %s", sp.TargetPort, containerPorts, c.Args[i+1])
	assert.Equal(t, sp.Name, ep.Port, "the port the ServiceMonitor scrapes, against the Service's")
	assert.Equal(t, "/metrics", ep.Path, "the path the ServiceMonitor scrapes; the agent serves /metrics")
}

// TestReadmeListsAlertsAndDashboards: README.md's tables name every alert
// and dashboard there is.
func TestReadmeListsAlertsAndDashboards(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	var rf ruleFile
	readYAML(t, "prometheus/rules.yml", &rf)
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				assert.True(t, strings.Contains(string(readme), "| `"+r.Alert+"` |"), "README.md's alert table has no row for %s", r.Alert)
			}
		}
	}
	for _, path := range dashboards {
		d := readDashboard(t, path)
		assert.True(t, strings.Contains(string(readme), "| `"+path+"` | `"+d.UID+"` |"), "README.md's dashboard table has no row for %s (uid %s)", path, d.UID)
	}
}
