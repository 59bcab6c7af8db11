package podjoin

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	prometheus "github.com/prometheus/procfs"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/envscan"
	"github.com/xpuscope/xpuscope/internal/procfs"
	"github.com/xpuscope/xpuscope/internal/procfs/procfstest"
)

// benchEnviron is a container's environment of about 3 KiB: service
// links, a PATH, and the variables podjoin reads.
func benchEnviron(pid int) []byte {
	var b []byte
	add := func(s string) { b = append(append(b, s...), 0) }
	add("PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	for i := range 40 {
		add(fmt.Sprintf("SVC_%d_SERVICE_HOST=10.96.%d.%d", i, i/250, i%250))
		add(fmt.Sprintf("SVC_%d_PORT=tcp://10.96.%d.%d:8080", i, i/250, i%250))
	}
	add(fmt.Sprintf("TRACEPARENT=00-4bf92f3577b34da6a3ce929d0e0e%04x-00f067aa0ba902b7-01", pid%0x10000))
	add("OTEL_SERVICE_NAME=trainer")
	add("OTEL_RESOURCE_ATTRIBUTES=team=ml,deployment.environment=prod")
	return b
}

func benchCgroup(pid int) string {
	return fmt.Sprintf("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%08x_524d_5472_b6fd_cd5deeb0e561.slice/cri-containerd-%064x.scope\n", pid, pid)
}

// A lookup of a cached process: the start time is read from procfs on
// each lookup (so that a reused pid is noticed), then the entry is served.
func BenchmarkProcessCached(b *testing.B) {
	proc := b.TempDir()
	writeProc(b, proc, 42, 7, benchCgroup(42), benchEnviron(42))
	r, _ := newTestResolver(b, proc, "", WithRefresh(time.Hour))
	require.NotEmpty(b, r.Process(42).ContainerID, "not resolved")
	b.ReportAllocs()
	for b.Loop() {
		r.Process(42)
	}
}

// Resolving 1,000 processes never seen: stat, cgroup and environment of
// each. One op is the 1,000 lookups.
func BenchmarkProcessCold1000(b *testing.B) {
	const n = 1000
	proc := b.TempDir()
	for pid := 1; pid <= n; pid++ {
		writeProc(b, proc, pid, uint64(pid), benchCgroup(pid), benchEnviron(pid))
	}
	r, _ := newTestResolver(b, proc, "", WithRefresh(time.Hour), WithCacheSize(n))
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		for pid := 1; pid <= n; pid++ {
			r.Forget(pid)
		}
		b.StartTimer()
		for pid := 1; pid <= n; pid++ {
			if id := r.Process(pid).ContainerID; id == "" {
				require.NotEmpty(b, id, "not resolved")
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/pid")
}

func BenchmarkParseCgroup(b *testing.B) {
	in := []byte(benchCgroup(42))
	b.ReportAllocs()
	for b.Loop() {
		ParseCgroup(in)
	}
}

func BenchmarkParseEnviron(b *testing.B) {
	in := benchEnviron(42)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		ParseEnviron(in)
	}
}

// BenchmarkReadCgroup reads and parses a process's cgroup file, as a
// lookup of a process not yet cached does, against prometheus/procfs's
// Proc.Cgroups with the same path parsing after it.
func BenchmarkReadCgroup(b *testing.B) {
	proc := procfstest.New(b, procfstest.Process{PID: 42, Cgroup: benchCgroup(42)})
	p := procfs.FS{Root: proc}.Proc(42)
	procfstest.Versus(b, proc, 42,
		func() error {
			c, err := readCgroup(p)
			if err == nil && c.ContainerID == "" {
				err = errors.New("not resolved")
			}
			return err
		},
		func(p prometheus.Proc) error {
			cgs, err := p.Cgroups()
			var best Cgroup
			for _, cg := range cgs {
				if c := parseCgroupPath([]byte(cg.Path)); strings.HasPrefix(cg.Path, "/") && rank(c) > rank(best) {
					best = c
				}
			}
			if err == nil && best.ContainerID == "" {
				err = errors.New("not resolved")
			}
			return err
		})
}

// BenchmarkReadEnviron reads the allowed variables of a 3 KiB environment
// as a lookup of a process not yet cached does, against prometheus/procfs's
// Proc.Environ (which makes a string of every variable) with the same
// selection after it.
func BenchmarkReadEnviron(b *testing.B) {
	proc := procfstest.New(b, procfstest.Process{PID: 42, Environ: environEntries(benchEnviron(42))})
	p := procfs.FS{Root: proc}.Proc(42)
	buf := make([]byte, environBuf)
	procfstest.Versus(b, proc, 42,
		func() error {
			e, err := readEnviron(p, buf)
			if err == nil && e.ServiceName == "" {
				err = errors.New("not read")
			}
			return err
		},
		func(p prometheus.Proc) error {
			env, err := p.Environ()
			var parser envscan.Parser
			for _, e := range env {
				parser.Entry([]byte(e))
			}
			if err == nil && parser.Vars().ServiceName == "" {
				err = errors.New("not read")
			}
			return err
		})
}
