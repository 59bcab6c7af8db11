// Package perfeventtest writes the sysfs and procfs trees of real machines'
// PMUs for the tests of packages perfevent, pmu and intelpt: Intel
// Skylake-SP, Ice Lake-SP (with free-running IMC counters), Sapphire
// Rapids and Emerald Rapids, AMD Zen 3 (data fabric) and Zen 4 (UMC and
// data fabric), an Intel PT PMU, and a virtual machine with none of them.
// Every encoding in them is the kernel's, as its uncore drivers write them
// to sysfs; each fixture names the driver table it comes from.
//
// A fixture is a txtar-like archive in testdata/: "-- path --" lines, each
// followed by the file's contents. A path may hold one range, {a..b},
// which writes the file once for each number n from a to b; its contents
// may then say {n} or {n+k}. Paths start with sys/ or proc/.
package perfeventtest

import (
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

//go:embed testdata/*.txtar
var fixtures embed.FS

// Names lists the fixtures.
func Names() []string {
	entries, err := fixtures.ReadDir("testdata")
	if err != nil {
		panic(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".txtar"))
	}
	slices.Sort(names)
	return names
}

// Tree is a fixture written out: its sysfs and procfs roots.
type Tree struct {
	Root string
	Sys  string // Root/sys
	Proc string // Root/proc
}

// Write writes fixture name under t.TempDir().
func Write(t testing.TB, name string) Tree {
	t.Helper()
	data, err := fixtures.ReadFile("testdata/" + name + ".txtar")
	if err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	files, err := Expand(string(data))
	if err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"sys", "proc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return Tree{Root: root, Sys: filepath.Join(root, "sys"), Proc: filepath.Join(root, "proc")}
}

// Set writes (or, with a nil content, removes) the file at path p of the
// tree, as a hotplug or a test's change would.
func (tr Tree) Set(t testing.TB, p string, content *string) {
	t.Helper()
	full := filepath.Join(tr.Root, filepath.FromSlash(p))
	if content == nil {
		if err := os.RemoveAll(full); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := full + ".tmp"
	if err := os.WriteFile(tmp, []byte(*content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, full); err != nil {
		t.Fatal(err)
	}
}

var (
	rangeRE = regexp.MustCompile(`\{(\d+)\.\.(\d+)\}`)
	nRE     = regexp.MustCompile(`\{n(?:\+(\d+))?\}`)
)

// Expand reads an archive into its files by path, expanding ranges.
func Expand(archive string) (map[string]string, error) {
	files := map[string]string{}
	var name string
	var body strings.Builder
	flush := func() error {
		if name == "" {
			return nil
		}
		content := body.String()
		body.Reset()
		m := rangeRE.FindStringSubmatchIndex(name)
		if m == nil {
			files[name] = content
			return nil
		}
		lo, _ := strconv.Atoi(name[m[2]:m[3]])
		hi, _ := strconv.Atoi(name[m[4]:m[5]])
		if hi < lo || hi-lo > 4096 {
			return fmt.Errorf("%s: bad range", name)
		}
		for n := lo; n <= hi; n++ {
			p := name[:m[0]] + strconv.Itoa(n) + name[m[1]:]
			files[p] = nRE.ReplaceAllStringFunc(content, func(s string) string {
				k := 0
				if sm := nRE.FindStringSubmatch(s); sm[1] != "" {
					k, _ = strconv.Atoi(sm[1])
				}
				return strconv.Itoa(n + k)
			})
		}
		return nil
	}
	for line := range strings.SplitAfterSeq(archive, "\n") {
		trimmed := strings.TrimRight(line, "\n")
		if strings.HasPrefix(trimmed, "-- ") && strings.HasSuffix(trimmed, " --") && len(trimmed) > 6 {
			if err := flush(); err != nil {
				return nil, err
			}
			name = strings.TrimSpace(trimmed[3 : len(trimmed)-3])
			if !strings.HasPrefix(name, "sys/") && !strings.HasPrefix(name, "proc/") {
				return nil, fmt.Errorf("%s: a fixture's paths start with sys/ or proc/", name)
			}
			continue
		}
		if name != "" {
			body.WriteString(line)
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return files, nil
}
