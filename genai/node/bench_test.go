package node

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// overheadRounds is how many rounds overhead runs, each with the Source
// and without.
const overheadRounds = 9

// overhead runs op b.N times with no Source, then b.N times with one
// (every part on, as New's defaults, unless opts say otherwise; on the
// OpenTelemetry SDK), in rounds, and reports the time with it over the
// time without, the overhead as ratios measured in one run: the wall
// time's (on/off), the process's CPU time's (cpu-on/off), each the median
// of the rounds' own ratios (a round's two halves run back to back, so
// the machine's drift between rounds cancels), and the BPF
// programs' run time, measured over a third run of b.N ops, over the
// wall time without (bpf/off). A model file is held open
// while the Source runs, so that the kernel side watches a file, as on a
// node that serves a model: by another process (a model server beside
// the workload), or, with self, by the benchmark's own (the workload is
// the model server's, which maps the file: its page faults are looked
// at).
func overhead(b *testing.B, self bool, op func(b *testing.B), opts ...Option) {
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(b, "genai/node's BPF programs need root")
	}
	dir := b.TempDir()
	model := filepath.Join(dir, "bench.safetensors")
	if err := os.WriteFile(model, make([]byte, 2<<20), 0o600); err != nil {
		b.Fatal(err)
	}
	const rounds = overheadRounds
	var off, on, inBPF, cpuOff, cpuOn time.Duration
	var wallRatios, cpuRatios []float64
	byProgram := map[string]time.Duration{}
	runtimeOf := func(s *Source, sign time.Duration) time.Duration {
		var d time.Duration
		for _, p := range s.objs.Attach {
			if st, err := s.objs.Program(p.Name).Stats(); err == nil {
				d += st.Runtime
				byProgram[p.Name] += sign * st.Runtime
			}
		}
		return d
	}
	// The wall time of b.N ops, and the CPU time this process spent
	// meanwhile: the workload's, in user space and in the kernel (where
	// the BPF programs run, on its account), and the Source's reader's.
	// On a quiet machine the CPU time is the steadier of the two: it does
	// not count the waits, which the scheduler decides.
	measure := func(wall, cpu *time.Duration) {
		// Each half starts with the garbage collected: a Source's load
		// leaves tens of MB of it (the kernel's BTF, parsed), which the
		// runtime's background workers would otherwise collect on the
		// workload's cores while it is measured.
		debug.FreeOSMemory() // a collection, then the memory returned
		cpu0, start := testutil.ProcessCPU(b), time.Now()
		for range b.N {
			op(b)
		}
		*wall += time.Since(start)
		*cpu += testutil.ProcessCPU(b) - cpu0
	}
	// The programs' own run time, summed over them: the Source's cost
	// in CPU, less noisy than the wall time on a shared machine, and an
	// upper bound (it counts the programs' runs for every process of the
	// node). The kernel's BPF statistics read the clock twice a run,
	// which on a VM (kvm-clock) costs as much as a short program: with
	// them on through the runs above, their ratios rose by ~0.1 on the
	// page-cache workload. So they are on for a third run of their own.
	runtimeIn := func(s *Source) {
		stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
		if err != nil {
			b.Logf("no BPF statistics: %v", err)
			return
		}
		defer stats.Close()
		ran := runtimeOf(s, -1)
		var wall, cpu time.Duration
		measure(&wall, &cpu)
		inBPF += runtimeOf(s, 1) - ran
	}
	b.ResetTimer()
	for r := range rounds {
		off0, on0, cpuOff0, cpuOn0 := off, on, cpuOff, cpuOn
		// Every other round runs without the Source last: whichever
		// half runs first in a round pays for a cold cache and a
		// waking CPU (with it always second, the Source measured
		// 0.96-0.99 of the time without it, on a workload it costs).
		if r%2 == 0 {
			measure(&off, &cpuOff)
		}
		b.StopTimer()
		reader := sdkmetric.NewManualReader()
		s, err := New(append([]Option{WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))}, opts...)...)
		if err != nil {
			b.Fatal(err)
		}
		var holder *exec.Cmd
		var f *os.File
		var mapped []byte
		if self {
			f, err = os.Open(model) // watched from its open
			if err == nil {
				// and mapped, as a model server maps its weights
				mapped, err = unix.Mmap(int(f.Fd()), 0, 2<<20, unix.PROT_READ, unix.MAP_SHARED)
			}
		} else {
			holder = exec.Command("sh", "-c", "exec sleep 600 < "+model)
			err = holder.Start()
		}
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		measure(&on, &cpuOn)
		b.StopTimer()
		runtimeIn(s)
		if self {
			_ = unix.Munmap(mapped)
			f.Close()
		} else {
			_ = holder.Process.Kill()
			_ = holder.Wait()
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if r%2 == 1 {
			measure(&off, &cpuOff)
		}
		wallRatios = append(wallRatios, float64(on-on0)/float64(off-off0))
		cpuRatios = append(cpuRatios, float64(cpuOn-cpuOn0)/float64(cpuOff-cpuOff0))
	}
	b.Logf("each round's wall ratio, in order: %.3f", wallRatios)
	b.Logf("each round's CPU ratio, in order: %.3f", cpuRatios)
	b.ReportMetric(testutil.Median(wallRatios), "on/off")
	b.ReportMetric(testutil.Median(cpuRatios), "cpu-on/off")
	b.ReportMetric(float64(inBPF)/float64(off), "bpf/off")
	for name, d := range byProgram {
		if d > 0 {
			b.Logf("%s: %.3g of the time without", name, float64(d)/float64(off))
		}
	}
	b.ReportMetric(float64(off.Nanoseconds())/float64(rounds*b.N), "ns/op-off")
	b.ReportMetric(float64(on.Nanoseconds())/float64(rounds*b.N), "ns/op-on")
}

// BenchmarkPageCacheOverhead: page-cache churn on files no Source
// watches, with no disk I/O to hide the cost: each op writes 4 MiB to a
// file (pages added) and truncates it to nothing (pages removed, before
// any writeback), on a disk file system.
func BenchmarkPageCacheOverhead(b *testing.B) {
	dir := diskDir(b)
	f, err := os.Create(filepath.Join(dir, "churn.dat"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4<<20)
	b.SetBytes(int64(len(buf)))
	overhead(b, false, func(b *testing.B) {
		if _, err := f.WriteAt(buf, 0); err != nil {
			b.Fatal(err)
		}
		if err := f.Truncate(0); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkFaultOverhead: page faults on memory that maps no watched file
// (a fresh anonymous 16 MiB mapping touched page by page, a fault a
// page), while a model file is watched: in a process that holds none
// (other), the cost of x86's page_fault_user program is a hash lookup;
// in one that opened and mapped a model file (model_process), it matches
// each fault's address against the process's mappings of watched files,
// and each mmap and munmap of the op is looked at too.
func BenchmarkFaultOverhead(b *testing.B) {
	for _, bc := range []struct {
		name string
		self bool
	}{{"other", false}, {"model_process", true}} {
		b.Run(bc.name, func(b *testing.B) {
			const size = 16 << 20
			page := os.Getpagesize()
			b.SetBytes(size)
			overhead(b, bc.self, func(b *testing.B) {
				m, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
				if err != nil {
					b.Fatal(err)
				}
				if err := unix.Madvise(m, unix.MADV_NOHUGEPAGE); err != nil {
					b.Fatal(err)
				}
				for i := 0; i < size; i += page {
					m[i] = 1
				}
				if err := unix.Munmap(m); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}
