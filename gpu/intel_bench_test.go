package gpu

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/drmfdinfo/drmfdinfotest"
	"github.com/xpuscope/xpuscope/internal/intelsysfs/intelsysfstest"
	"github.com/xpuscope/xpuscope/internal/levelzero/levelzerotest"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

// intelBenchGPUs and intelBenchClients size the Intel benchmarks: the
// eight-GPU xe fixture and 64 client processes, eight a GPU.
const intelBenchGPUs, intelBenchClients = 8, 64

// eightGPUPDevs are the PCI addresses of the eight-gpus fixture.
var eightGPUPDevs = [intelBenchGPUs]string{
	"0000:1b:00.0", "0000:29:00.0", "0000:3a:00.0", "0000:4d:00.0",
	"0000:8c:00.0", "0000:9a:00.0", "0000:ab:00.0", "0000:cc:00.0",
}

// intelBenchProcs writes a procfs of intelBenchClients processes, each an
// xe client of GPU i%8 through a render node and a dup of it on the card
// node (one client, two descriptors), plus a socket, with busy cycles
// that grow with round.
func intelBenchProcs(t testing.TB, root string, pdevs []string, round uint64) {
	t.Helper()
	procs := make([]drmfdinfotest.Proc, intelBenchClients)
	for i := range procs {
		pdev := pdevs[i%len(pdevs)]
		ts := 1_000_000 + round*1_000_000
		info := drmfdinfotest.Header(5) + drmfdinfotest.Xe(pdev, uint64(i+1), ts, round*100_000, 0, round*10_000, 0, round*50_000, 4, 1<<30, 64<<20)
		procs[i] = drmfdinfotest.Proc{PID: 10_000 + i, Exe: "/usr/bin/python3", FDs: []drmfdinfotest.FD{
			{N: 3, Target: "socket:[1]"},
			{N: 5, Target: "/dev/dri/renderD128", Info: info},
			{N: 6, Target: "/dev/dri/card1", Info: info},
		}}
	}
	drmfdinfotest.Write(t, root, procs...)
}

// intelBenchSetups are the Intel sysfs backend's two ways to read the
// engines over the eight-GPU fixture: "pmu", the xe PMUs opened (counted
// by the fake opener: no GPU PMU here) with the clients' fdinfo for the
// processes, and "fdinfo", the PMU refused (no CAP_PERFMON) so that the
// devices' engines are the clients' sums too.
func intelBenchSetups() map[string]func() *fakeOpener {
	return map[string]func() *fakeOpener{
		"pmu":    func() *fakeOpener { return &fakeOpener{rates: map[uint64]uint64{}} },
		"fdinfo": refuseAll,
	}
}

// intelBench is an Intel backend over 8 GPUs and the procfs of
// intelBenchProcs, with its counters at round.
type intelBench struct {
	s      *Source
	reader *sdkmetric.ManualReader
	procs  string
	pdevs  []string
	opener *fakeOpener // nil: no PMU
	round  uint64
}

// intelBenchProcRoot is a procfs with the kernel release and the 64
// clients of pdevs at round 1.
func intelBenchProcRoot(t testing.TB, pdevs []string) string {
	procs := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(procs, "sys", "kernel"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(procs, "sys", "kernel", "osrelease"), []byte("6.18.0-intel\n"), 0o444))
	intelBenchProcs(t, procs, pdevs, 1)
	return procs
}

func startIntelBench(t testing.TB, opener *fakeOpener) *intelBench {
	t.Helper()
	procs := intelBenchProcRoot(t, eightGPUPDevs[:])
	s, reader := startAccel(t, []Option{WithBackends(BackendIntelSysfs), withSysfsFS(intelsysfstest.Load(t, "eight-gpus")),
		WithProcRoot(procs), withPerfOpener(opener)})
	require.Len(t, s.Devices(), intelBenchGPUs)
	ib := &intelBench{s: s, reader: reader, procs: procs, pdevs: eightGPUPDevs[:], opener: opener, round: 1}
	ib.advance(t)
	s.poll()
	return ib
}

// advance moves every counter on by one round, so that each client and
// engine has a rate at the next poll.
func (ib *intelBench) advance(t testing.TB) {
	ib.round++
	intelBenchProcs(t, ib.procs, ib.pdevs, ib.round)
	if ib.opener != nil {
		ib.opener.tick()
	}
}

// TestIntelObserveDoesNotAllocate: the callback reporting the Intel
// backend's snapshot of 8 GPUs and 64 clients allocates nothing, and
// the snapshot holds what the benchmark claims to measure (every
// client's process on its GPU).
func TestIntelObserveDoesNotAllocate(t *testing.T) {
	for name, setup := range intelBenchSetups() {
		t.Run(name, func(t *testing.T) {
			ib := startIntelBench(t, setup())
			s, reader := ib.s, ib.reader
			procs := 0
			for i := range s.front.samples {
				procs += len(s.front.samples[i].procs)
			}
			assert.Equal(t, intelBenchClients, procs, "each client's process on its GPU")
			ctx := context.Background()
			assert.Zero(t, testing.AllocsPerRun(100, func() { _ = s.observe(ctx, discard{}) }))
			pts := testutil.Collect(t, reader)
			assert.Equal(t, intelBenchClients*5, len(pts.Find(semconv.ProcessGPUEngineUtilization.Name)), "the five classes xe writes drm-cycles for, of each process")
		})
	}
}

// BenchmarkIntelPoll measures one interval of the Intel sysfs backend
// over 8 GPUs with 64 client processes (each one client through two
// descriptors): "poll" is the Source's goroutine reading the sysfs
// fixture (a MapFS: the figure leaves out the kernel's show callbacks),
// the PMUs' counters where opened, and every process's fdinfo from a
// procfs tree on disk (the real scan, by raw syscalls); "observe" the
// callback (no allocation); "poll+collect" adds an OpenTelemetry SDK
// collection, what an exporter pays each interval. Every counter moves
// on before each poll (the timer stopped while the files are written), so
// that every client and engine gives a figure. core% is poll+collect as a
// share of one core at the default interval.
func BenchmarkIntelPoll(b *testing.B) {
	for name, setup := range intelBenchSetups() {
		b.Run(name, func(b *testing.B) {
			benchIntel(b, startIntelBench(b, setup()))
		})
	}
}

// BenchmarkLevelZeroPoll is BenchmarkIntelPoll for the Level Zero
// backend: the fake driver of internal/levelzero with 8 GPUs (each two
// tiles, 11 engine groups, two memory modules, three power domains, three
// temperature sensors, two frequency domains, two processes) through
// Debian's real loader, which initialises once per process: this
// benchmark must be the process's first to load Level Zero (the tests
// that do run in child processes). The engines per process come from the
// 64 clients' fdinfo, as on a node.
func BenchmarkLevelZeroPoll(b *testing.B) {
	lib := levelzerotest.Build(b, "libze_fake.so", "-DFAKE_GPUS=8", "-DFAKE_FAIL_GPU=-1")
	b.Setenv("ZE_ENABLE_ALT_DRIVERS", lib)
	pdevs := make([]string, intelBenchGPUs)
	sysfs := fstest.MapFS{}
	for i := range pdevs {
		pdevs[i] = fmt.Sprintf("0000:%02x:00.0", 0x3a+i)
		sysfs[fmt.Sprintf("class/drm/card%d/device/uevent", i)] = &fstest.MapFile{Data: []byte("DRIVER=xe\nPCI_ID=8086:0BD5\nPCI_SLOT_NAME=" + pdevs[i] + "\n")}
	}
	procs := intelBenchProcRoot(b, pdevs)
	s, reader := startAccel(b, []Option{WithBackends(BackendLevelZero), withSysfsFS(sysfs), WithProcRoot(procs)})
	st := s.Status()
	require.Len(b, st.Backends, 1)
	require.Equal(b, intelBenchGPUs, st.Backends[0].Devices, "Level Zero read the 8 fake GPUs: %s", st.Backends[0].Detail)
	ib := &intelBench{s: s, reader: reader, procs: procs, pdevs: pdevs, round: 1}
	ib.advance(b)
	s.poll()
	benchIntel(b, ib)
}

// benchIntel runs the poll, observe and poll+collect measures of an Intel
// backend.
func benchIntel(b *testing.B, ib *intelBench) {
	s := ib.s
	b.Run("poll", func(b *testing.B) {
		b.ReportAllocs()
		// The poll runs on this goroutine: its thread's CPU time, apart
		// from the wall time a shared machine stretches.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var cpu time.Duration
		for b.Loop() {
			b.StopTimer()
			ib.advance(b)
			b.StartTimer()
			before := threadCPU(b)
			s.poll()
			cpu += threadCPU(b) - before
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/poll")
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/poll")
	})
	b.Run("observe", func(b *testing.B) {
		b.ReportAllocs()
		ctx := context.Background()
		for b.Loop() {
			_ = s.observe(ctx, discard{})
		}
	})
	b.Run("poll+collect", func(b *testing.B) {
		b.ReportAllocs()
		var rm metricdata.ResourceMetrics
		for b.Loop() {
			b.StopTimer()
			ib.advance(b)
			b.StartTimer()
			s.poll()
			if err := ib.reader.Collect(context.Background(), &rm); err != nil {
				require.NoError(b, err)
			}
		}
		pts, err := testutil.Flatten(rm)
		require.NoError(b, err)
		b.ReportMetric(float64(len(pts)), "points/op")
		perOp := b.Elapsed() / time.Duration(b.N)
		b.ReportMetric(100*perOp.Seconds()/DefaultInterval.Seconds(), "core%")
	})
}

// threadCPU is the calling thread's CPU time, user and system.
func threadCPU(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
