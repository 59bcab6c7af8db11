package deploy

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// dockerfile is the image's build file, read as its instructions: the
// keyword, then the rest of the line.
type dockerfile [][2]string

func readDockerfile(t *testing.T) dockerfile {
	t.Helper()
	b, err := os.ReadFile("image/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var d dockerfile
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			t.Fatalf("continued line %q: the test reads one instruction per line", line)
		}
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
	d := readDockerfile(t)

	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if goVersion == nil {
		t.Fatal("go.mod has no go directive")
	}
	if want := "GO_VERSION=" + string(goVersion[1]); !slices.Contains(d.all("ARG"), want) {
		t.Errorf("ARG %v, want %s (go.mod)", d.all("ARG"), want)
	}

	froms := d.all("FROM")
	if len(froms) != 2 {
		t.Fatalf("FROM %v: want a build stage and a runtime stage", froms)
	}
	release := regexp.MustCompile(`-(bookworm|trixie|bullseye)\b|:(bookworm|trixie|bullseye)-`)
	var releases []string
	for _, f := range froms {
		m := release.FindStringSubmatch(f)
		if m == nil {
			t.Fatalf("FROM %s: not a Debian release the test knows", f)
		}
		releases = append(releases, m[1]+m[2])
	}
	if releases[0] != releases[1] {
		t.Errorf("build stage on %s, runtime on %s: the agent links the build stage's glibc", releases[0], releases[1])
	}

	// The build line, run as written from the repository root, into a
	// directory of ours instead of /out.
	var build string
	for _, r := range d.all("RUN") {
		if strings.Contains(r, "go build") {
			build = r
		}
	}
	if build == "" {
		t.Fatal("no RUN go build line")
	}
	out := t.TempDir()
	cmd := exec.Command("sh", "-c", strings.ReplaceAll(build, "/out/", out+"/"))
	cmd.Dir = ".."
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", build, err, b)
	}
	bins, err := filepath.Glob(filepath.Join(out, "*"))
	if err != nil || len(bins) != 1 {
		t.Fatalf("the build line wrote %v (%v), want one binary", bins, err)
	}
	f, err := elf.Open(bins[0])
	if err != nil {
		t.Fatal(err)
	}
	libs, err := f.ImportedLibraries()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range libs {
		if l != "libc.so.6" {
			t.Errorf("the agent needs %s, which the runtime image (Debian slim: glibc) may lack", l)
		}
	}
	check := exec.Command(bins[0], "-check")
	if b, err := check.CombinedOutput(); err != nil || !regexp.MustCompile(`(?m)^genai +`).Match(b) {
		t.Errorf("the built agent's -check: %v\n%s", err, b)
	}

	// The binary copied from the build stage is the entrypoint.
	copied := d.all("COPY")
	dest := strings.Fields(copied[len(copied)-1])
	if want := `["` + dest[len(dest)-1] + `"]`; !slices.Equal(d.all("ENTRYPOINT"), []string{want}) {
		t.Errorf("ENTRYPOINT %v, want %s", d.all("ENTRYPOINT"), want)
	}

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
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &ds); err != nil {
		t.Fatal(err)
	}
	port := ds.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort
	if got := d.all("EXPOSE"); !slices.Equal(got, []string{"9464"}) || port != 9464 {
		t.Errorf("EXPOSE %v, DaemonSet port %d: want 9464 in both", got, port)
	}
}
