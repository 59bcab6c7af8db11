package podjoin

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/procfs/procfstest"
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

// unpack writes archive path into a temporary tree: proc/<pid>/… as the
// processes of a procfs fixture tree (a stat file generated where the
// archive has none, an empty environ likewise), log/… under the log root,
// and reads the want file: "<pid> <rendered ProcessInfo>" lines.
func unpack(t testing.TB, path string) fixture {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	dir := t.TempDir()
	fx := fixture{proc: procfstest.New(t), logs: filepath.Join(dir, "log")}
	for _, d := range []string{filepath.Join(fx.logs, "pods"), filepath.Join(fx.logs, "containers")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	procs := map[int]*procfstest.Process{}
	for _, f := range parseArchive(data) {
		if f.name == "want" {
			for _, l := range strings.Split(strings.TrimSpace(string(f.data)), "\n") {
				pid, rest, _ := strings.Cut(l, " ")
				n, err := strconv.Atoi(pid)
				require.NoError(t, err, "%s: want line %q", path, l)
				fx.want = append(fx.want, wantLine{n, rest})
			}
			continue
		}
		if proc, ok := strings.CutPrefix(f.name, "proc/"); ok {
			id, name, _ := strings.Cut(proc, "/")
			pid, err := strconv.Atoi(id)
			require.NoError(t, err, "%s: %s", path, f.name)
			p := procs[pid]
			if p == nil {
				p = &procfstest.Process{PID: pid, Files: map[string]string{}}
				procs[pid] = p
			}
			if name == "environ" {
				p.Environ = environEntries(environBlock(f.data))
			} else {
				p.Files[name] = string(f.data) // as written, an empty cgroup file too
			}
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(f.name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, f.data, 0o644))
	}
	for pid, p := range procs {
		if _, ok := p.Files["stat"]; !ok {
			p.Stat = procfstest.Stat(pid, "proc"+strconv.Itoa(pid), startOf(pid))
		}
		if p.Environ == nil && !hasEnvironDir(p) {
			p.Environ = []string{}
		}
		procfstest.Write(t, fx.proc, *p)
	}
	return fx
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

// writeProc writes one process of a procfs tree: its stat, cgroup and
// environ files.
func writeProc(t testing.TB, root string, pid int, start uint64, cgroup string, environ []byte) {
	t.Helper()
	procfstest.Write(t, root, procfstest.Process{PID: pid, Stat: procfstest.Stat(pid, "worker", start),
		Cgroup: cgroup, Environ: environEntries(environ)})
}

// environEntries splits an environment block into its entries, each
// ended by a NUL in the block.
func environEntries(block []byte) []string {
	if len(block) == 0 {
		return []string{}
	}
	return strings.Split(strings.TrimSuffix(string(block), "\x00"), "\x00")
}

// hasEnvironDir reports whether the archive makes p's environ a
// directory, an environment that cannot be read.
func hasEnvironDir(p *procfstest.Process) bool {
	for name := range p.Files {
		if strings.HasPrefix(name, "environ/") {
			return true
		}
	}
	return false
}
