package deploy

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	// directory of ours instead of /out.
	var build string
	for _, r := range d.all("RUN") {
		if strings.Contains(r, "go build") {
			build = r
		}
	}
	require.NotEmpty(t, build, "no RUN go build line")
	out := t.TempDir()
	cmd := exec.Command("sh", "-c", strings.ReplaceAll(build, "/out/", out+"/"))
	cmd.Dir = ".."
	buildOut, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s\n%s", build, buildOut)
	bins, err := filepath.Glob(filepath.Join(out, "*"))
	require.NoError(t, err, "the build line's output")
	require.Len(t, bins, 1, "the build line wrote %v, want one binary", bins)
	f, err := elf.Open(bins[0])
	require.NoError(t, err)
	libs, err := f.ImportedLibraries()
	f.Close()
	require.NoError(t, err)
	for _, l := range libs {
		assert.Equal(t, "libc.so.6", l, "the agent needs %s, which the runtime image (Debian slim: glibc) may lack", l)
	}
	checkOut, err := exec.Command(bins[0], "-check").CombinedOutput()
	assert.NoError(t, err, "the built agent's -check:\n%s", checkOut)
	assert.Regexp(t, regexp.MustCompile(`(?m)^genai +`), string(checkOut), "the built agent's -check")

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
