package deploy

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// dockerfile is the image's build file, read as its instructions: the
// keyword, then the rest of the line.
type dockerfile [][2]string

func readDockerfile(t *testing.T) dockerfile {
	t.Helper()
	b, err := os.ReadFile("image/Dockerfile")
	require.NoError(t, err)
	var d dockerfile
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		require.False(t, strings.HasSuffix(line, "\\"), "continued line %q: the test reads one instruction per line", line)
		k, v, _ := strings.Cut(line, " ")
		d = append(d, [2]string{strings.ToUpper(k), strings.TrimSpace(v)})
	}
	return d
}

// all returns the arguments of every instruction named k.
func (d dockerfile) all(k string) []string {
	var out []string
	for _, in := range d {
		if in[0] == k {
			out = append(out, in[1])
		}
	}
	return out
}

// No Docker engine runs in CI, so the image itself is not built here.
// What can drift from the code is checked instead: the Go version against
// go.mod, one Debian release for both stages (the binary links glibc),
// the build line, run as written, producing an agent that needs nothing
// but glibc, the entrypoint, and the port against the manifests.
func TestDockerfile(t *testing.T) {
	testutil.Native(t, "the agent built by the Dockerfile's line and run")
	d := readDockerfile(t)

	gomod, err := os.ReadFile("../go.mod")
	require.NoError(t, err)
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	require.NotNil(t, goVersion, "go.mod has no go directive")
	assert.Contains(t, d.all("ARG"), "GO_VERSION="+string(goVersion[1]), "ARG, against go.mod")

	froms := d.all("FROM")
	require.Len(t, froms, 2, "FROM %v: want a build stage and a runtime stage", froms)
	release := regexp.MustCompile(`-(bookworm|trixie|bullseye)\b|:(bookworm|trixie|bullseye)-`)
	var releases []string
	for _, f := range froms {
		m := release.FindStringSubmatch(f)
		require.NotNil(t, m, "FROM %s: not a Debian release the test knows", f)
		releases = append(releases, m[1]+m[2])
	}
	assert.Equal(t, releases[0], releases[1], "build stage on %s, runtime on %s: the agent links the build stage's glibc", releases[0], releases[1])

	// The build line, run as written from the repository root, into a
	// directory of ours instead of /out, for each architecture the
	// DaemonSet runs on, as docker buildx runs it for each platform
	// (TARGETARCH set; the C cross compiler the install line puts in the
	// build stage, which this machine has from install-test-deps.sh).
	// Where TARGETARCH is unset (docker build without BuildKit) the line
	// takes the build stage's own architecture: this machine's run.
	var build, install string
	for _, r := range d.all("RUN") {
		if strings.Contains(r, "go build") {
			build = r
		}
		if strings.Contains(r, "apt-get install") {
			install = r
		}
	}
	require.NotEmpty(t, build, "no RUN go build line")
	buildFor := func(targetArch string) string {
		out := t.TempDir()
		cmd := exec.Command("sh", "-c", strings.ReplaceAll(build, "/out/", out+"/"))
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "TARGETARCH="+targetArch)
		buildOut, err := cmd.CombinedOutput()
		require.NoError(t, err, "TARGETARCH=%s %s\n%s", targetArch, build, buildOut)
		bins, err := filepath.Glob(filepath.Join(out, "*"))
		require.NoError(t, err, "the build line's output")
		require.Len(t, bins, 1, "the build line wrote %v, want one binary", bins)
		f, err := elf.Open(bins[0])
		require.NoError(t, err)
		libs, err := f.ImportedLibraries()
		machine := f.Machine
		f.Close()
		require.NoError(t, err)
		for _, l := range libs {
			assert.Equal(t, "libc.so.6", l, "TARGETARCH=%s: the agent needs %s, which the runtime image (Debian slim: glibc) may lack", targetArch, l)
		}
		want, known := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[targetArch]
		require.True(t, known, "TARGETARCH=%s: no ELF machine known", targetArch)
		assert.Equal(t, want, machine, "TARGETARCH=%s", targetArch)
		return bins[0]
	}
	archs := daemonSetArchs(t)
	require.Contains(t, archs, runtime.GOARCH, "the DaemonSet does not run on this machine's architecture")
	for _, arch := range archs {
		if arch != runtime.GOARCH {
			assert.Contains(t, install, arch+")", "the install line has no case for %s, which the DaemonSet runs on", arch)
		}
		bin := buildFor(arch)
		if arch == runtime.GOARCH {
			checkOut, err := exec.Command(bin, "-check").CombinedOutput()
			assert.NoError(t, err, "the built agent's -check:\n%s", checkOut)
			assert.Regexp(t, regexp.MustCompile(`(?m)^genai +`), string(checkOut), "the built agent's -check")
			assert.Regexp(t, regexp.MustCompile(`(?m)^platform +linux/`+arch+` `), string(checkOut), "the built agent's -check")
		}
	}

	// The binary copied from the build stage is the entrypoint.
	copied := d.all("COPY")
	dest := strings.Fields(copied[len(copied)-1])
	assert.Equal(t, []string{`["` + dest[len(dest)-1] + `"]`}, d.all("ENTRYPOINT"), "ENTRYPOINT")

	// The port is the DaemonSet's container port.
	var ds struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Ports []struct {
							ContainerPort int `yaml:"containerPort"`
						} `yaml:"ports"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	b, err := os.ReadFile("kubernetes/daemonset.yaml")
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &ds))
	port := ds.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort
	assert.Equal(t, []string{"9464"}, d.all("EXPOSE"), "EXPOSE: want 9464 in both it and the DaemonSet")
	assert.Equal(t, 9464, port, "the DaemonSet's port: want 9464 in both it and EXPOSE")
}

// daemonSetArchs are the architectures the DaemonSet's node affinity
// runs the agent on (kubernetes.io/arch).
func daemonSetArchs(t *testing.T) []string {
	t.Helper()
	var ds struct {
		Spec struct {
			Template struct {
				Spec struct {
					Affinity struct {
						NodeAffinity struct {
							Required struct {
								Terms []struct {
									Expressions []struct {
										Key      string   `yaml:"key"`
										Operator string   `yaml:"operator"`
										Values   []string `yaml:"values"`
									} `yaml:"matchExpressions"`
								} `yaml:"nodeSelectorTerms"`
							} `yaml:"requiredDuringSchedulingIgnoredDuringExecution"`
						} `yaml:"nodeAffinity"`
					} `yaml:"affinity"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	b, err := os.ReadFile("kubernetes/daemonset.yaml")
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &ds))
	for _, term := range ds.Spec.Template.Spec.Affinity.NodeAffinity.Required.Terms {
		for _, e := range term.Expressions {
			if e.Key == "kubernetes.io/arch" {
				require.Equal(t, "In", e.Operator)
				return e.Values
			}
		}
	}
	t.Fatal("the DaemonSet names no kubernetes.io/arch")
	return nil
}

// The DaemonSet runs on the architectures the library has BPF objects
// for, no more, no fewer: each of them, and only them, has a gputrace
// object (the image builds for each, TestDockerfile).
func TestDaemonSetArchitectures(t *testing.T) {
	objs, err := filepath.Glob("../internal/gputracebpf/gputrace_*_bpfel.o")
	require.NoError(t, err)
	var archs []string
	for _, o := range objs {
		arch := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(o), "gputrace_"), "_bpfel.o")
		if arch == "x86" { // bpf2go's name for amd64's (and 386's) object
			arch = "amd64"
		}
		archs = append(archs, arch)
	}
	assert.ElementsMatch(t, archs, daemonSetArchs(t))
}
