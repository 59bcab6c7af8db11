package podjoin

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// archiveFile is one file of a txtar archive.
type archiveFile struct {
	name string
	data []byte
}

// parseArchive splits a txtar archive into its files ("-- name --"
// lines start each).
func parseArchive(data []byte) []archiveFile {
	var files []archiveFile
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		full := data[:len(data)-len(rest)]
		data = rest
		if bytes.HasPrefix(line, []byte("-- ")) && bytes.HasSuffix(line, []byte(" --")) && len(line) >= 6 {
			files = append(files, archiveFile{name: strings.TrimSpace(string(line[3 : len(line)-3]))})
			continue
		}
		if len(files) > 0 {
			f := &files[len(files)-1]
			f.data = append(f.data, full...)
		}
	}
	return files
}

// fixture is a fixture archive unpacked: a procfs tree, log directories
// and the expected lookups.
type fixture struct {
	proc, logs string
	want       []wantLine
}

type wantLine struct {
	pid  int
	want string
}

// startOf is the start time a generated stat file gives pid.
func startOf(pid int) uint64 { return 1000 + uint64(pid) }

// statLine is a /proc/<pid>/stat line with start time start.
func statLine(pid int, comm string, start uint64) string {
	return fmt.Sprintf("%d (%s) S 1 %d %d 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 %d 1000000 100 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
		pid, comm, pid, pid, start)
}

// environBlock turns lines into an environment block: each line an entry,
// each entry ended by a NUL.
func environBlock(lines []byte) []byte {
	var b []byte
	for _, l := range bytes.Split(bytes.TrimSuffix(lines, []byte("\n")), []byte("\n")) {
		if len(l) > 0 {
			b = append(append(b, l...), 0)
		}
	}
	return b
}

// unpack writes archive path into a temporary tree: proc/<pid>/… under
// the procfs root (a stat file generated where the archive has none, an
// empty environ likewise), log/… under the log root, and reads the want
// file: "<pid> <rendered ProcessInfo>" lines.
func unpack(t testing.TB, path string) fixture {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fx := fixture{proc: filepath.Join(dir, "proc"), logs: filepath.Join(dir, "log")}
	for _, d := range []string{fx.proc, filepath.Join(fx.logs, "pods"), filepath.Join(fx.logs, "containers")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pids := map[int]bool{}
	for _, f := range parseArchive(data) {
		if f.name == "want" {
			for _, l := range strings.Split(strings.TrimSpace(string(f.data)), "\n") {
				pid, rest, _ := strings.Cut(l, " ")
				n, err := strconv.Atoi(pid)
				if err != nil {
					t.Fatalf("%s: want line %q: %v", path, l, err)
				}
				fx.want = append(fx.want, wantLine{n, rest})
			}
			continue
		}
		content := f.data
		parts := strings.Split(f.name, "/")
		if parts[0] == "proc" && len(parts) == 3 {
			pid, err := strconv.Atoi(parts[1])
			if err != nil {
				t.Fatalf("%s: %s: %v", path, f.name, err)
			}
			pids[pid] = true
			if parts[2] == "environ" {
				content = environBlock(content)
			}
		}
		p := filepath.Join(dir, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for pid := range pids {
		writeIfMissing(t, filepath.Join(fx.proc, strconv.Itoa(pid), "stat"), statLine(pid, "proc"+strconv.Itoa(pid), startOf(pid)))
		writeIfMissing(t, filepath.Join(fx.proc, strconv.Itoa(pid), "environ"), "")
	}
	return fx
}

func writeIfMissing(t testing.TB, path, content string) {
	t.Helper()
	if _, err := os.Lstat(path); err == nil {
		return
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// render writes a ProcessInfo as a want line does: its known fields in a
// fixed order, "-" when none is.
func render(p ProcessInfo) string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("runtime", p.Runtime)
	add("id", p.ContainerID)
	add("uid", p.PodUID)
	add("qos", p.QoSClass)
	add("ns", p.Namespace)
	add("pod", p.PodName)
	add("ctr", p.ContainerName)
	add("svc", p.ServiceName)
	if sc := p.SpanContext; sc.IsValid() {
		add("trace", fmt.Sprintf("%s/%s/%02x", sc.TraceID(), sc.SpanID(), byte(sc.TraceFlags())))
		add("tracestate", sc.TraceState().String())
	}
	var res []string
	for _, kv := range p.ResourceAttrs {
		res = append(res, string(kv.Key)+"="+kv.Value.Emit())
	}
	add("res", strings.Join(res, ";"))
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// writeProc writes one process of a procfs tree.
func writeProc(t testing.TB, root string, pid int, start uint64, cgroup string, environ []byte) {
	t.Helper()
	d := filepath.Join(root, strconv.Itoa(pid))
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{
		"stat":    []byte(statLine(pid, "worker", start)),
		"cgroup":  []byte(cgroup),
		"environ": environ,
	} {
		if err := os.WriteFile(filepath.Join(d, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
