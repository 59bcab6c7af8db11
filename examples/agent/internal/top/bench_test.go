package top

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"

	"github.com/xpuscope/xpuscope/semconv"
)

// bigScrape writes a node's scrape as the agent serves it in the text
// format: nodes of 8 GPUs, procs CUDA processes, each in its own pod and
// container, with kernels kernels each (launches), 10 API calls, 4
// memcpy directions, its memory and occupancy series, and the launch
// shape histograms of its executable; 20 LLM models. step moves every
// counter on, as a later scrape does. It returns the text and its
// samples (lines that are not comments).
func bigScrape(procs, kernels int, step float64) ([]byte, int) {
	var b bytes.Buffer
	n := 0
	typ := func(m semconv.Metric, t string) { fmt.Fprintf(&b, "# TYPE %s %s\n", promName(m), t) }
	line := func(m semconv.Metric, suffix, labels string, v float64) {
		fmt.Fprintf(&b, "%s%s{%s} %g\n", promName(m), suffix, labels, v)
		n++
	}
	scope := `otel_scope_name="github.com/xpuscope/xpuscope/cudatrace",otel_scope_version="0.2.0"`
	// A process on a node without Kubernetes (no pod labels): a launch
	// line is some 210 bytes, which makes the 20 MB of 100,000 samples the
	// issue sets.
	proc := func(p int) string {
		return fmt.Sprintf(`%s="python3",%s="%d",%s`, promLabel(semconv.ProcessExecutableName), promLabel(semconv.ProcessPID), 10000+p, scope)
	}
	gpu := func(g int) string {
		return fmt.Sprintf(`%s="GPU-fa4e%04x-0000-4000-8000-%012x",%s="NVIDIA H100 80GB HBM3",%s="NVIDIA",%s="gpu",%s="%d",%s="0000:%02x:00.0"`,
			promLabel(semconv.HWID), g, g, promLabel(semconv.HWName), promLabel(semconv.HWVendor), promLabel(semconv.HWType),
			promLabel(semconv.GPUIndex), g, promLabel(semconv.GPUPCIAddress), 0x3b+g)
	}
	for _, m := range []semconv.Metric{semconv.HWGPUUtilization, semconv.HWPower, semconv.GPUPowerLimit, semconv.HWTemperature} {
		typ(m, "gauge")
		for g := range 8 {
			line(m, "", gpu(g), 0.5)
		}
	}
	for _, m := range []semconv.Metric{semconv.HWGPUMemoryUsage, semconv.HWGPUMemoryLimit} {
		typ(m, "gauge")
		for g := range 8 {
			line(m, "", gpu(g), 40<<30)
		}
	}
	typ(semconv.ProcessGPUMemoryUsage, "gauge")
	for p := range procs {
		line(semconv.ProcessGPUMemoryUsage, "", gpu(p%8)+","+proc(p), 1<<30)
	}
	typ(semconv.CUDAKernelLaunches, "counter")
	for p := range procs {
		for k := range kernels {
			line(semconv.CUDAKernelLaunches, "", fmt.Sprintf(`%s,%s="gemm_kernel<%d>",%s="0",%s="cudaLaunchKernel"`,
				proc(p), promLabel(semconv.CUDAKernelName), k, promLabel(semconv.CUDADevice), promLabel(semconv.CUDAAPIName)), float64(1000*k)+step*float64(k))
		}
	}
	typ(semconv.CUDAAPICalls, "counter")
	for p := range procs {
		for a := range 10 {
			line(semconv.CUDAAPICalls, "", fmt.Sprintf(`%s,%s="cudaApi%d"`, proc(p), promLabel(semconv.CUDAAPIName), a), 100+step)
		}
	}
	typ(semconv.CUDAMemcpyTransferred, "counter")
	for p := range procs {
		for _, kind := range []string{semconv.MemcpyHostToDevice, semconv.MemcpyDeviceToHost, semconv.MemcpyDeviceToDevice, semconv.MemcpyDefault} {
			line(semconv.CUDAMemcpyTransferred, "", fmt.Sprintf(`%s,%s="%s",%s="0"`, proc(p), promLabel(semconv.CUDAMemcpyKind), kind, promLabel(semconv.CUDADevice)), 1e9+step*1e6)
		}
	}
	for _, m := range []semconv.Metric{semconv.CUDAMemoryOutstanding, semconv.CUDAMemoryOldestAge, semconv.ProcessGPUSMActiveRatio, semconv.ProcessGPUThreadUtilization} {
		typ(m, "gauge")
		for p := range procs {
			line(m, "", proc(p), 0.25)
		}
	}
	// The launch shapes: by executable and container, no pid.
	for _, m := range []semconv.Metric{semconv.CUDAKernelGridSize, semconv.CUDAKernelBlockSize} {
		typ(m, "histogram")
		for p := range procs / 5 {
			labels := strings.Replace(proc(p), fmt.Sprintf(`,%s="%d"`, promLabel(semconv.ProcessPID), 10000+p), "", 1)
			cum := 0.0
			for _, bound := range m.Buckets {
				cum += step
				line(m, "_bucket", fmt.Sprintf(`%s,le="%g"`, labels, bound), cum)
			}
			line(m, "_bucket", labels+`,le="+Inf"`, cum)
			line(m, "_sum", labels, cum*100)
			line(m, "_count", labels, cum)
		}
	}
	llm := func(i int) string {
		return fmt.Sprintf(`%s="chat",%s="openai",%s="gpt-model-%d",%s="gpt-model-%d",%s="api.openai.com",%s="443"`,
			promLabel(semconv.GenAIOperationName), promLabel(semconv.GenAIProviderName), promLabel(semconv.GenAIRequestModel), i,
			promLabel(semconv.GenAIResponseModel), i, promLabel(semconv.ServerAddress), promLabel(semconv.ServerPort))
	}
	for _, m := range []semconv.Metric{semconv.GenAIClientOperationDuration, semconv.GenAIClientOperationTimeToFirstChunk} {
		typ(m, "histogram")
		for i := range 20 {
			cum := 0.0
			for _, bound := range m.Buckets {
				cum += step
				line(m, "_bucket", fmt.Sprintf(`%s,le="%g"`, llm(i), bound), cum)
			}
			line(m, "_bucket", llm(i)+`,le="+Inf"`, cum)
			line(m, "_sum", llm(i), cum)
			line(m, "_count", llm(i), cum)
		}
	}
	return b.Bytes(), n
}

// refreshCost is one refresh of a big scrape: decoded, built into a
// Frame, with rates against the scrape before, and a 160×50 screen of the
// processes rendered.
type refreshCost struct {
	m       *Model
	ref     *Refresher
	scrapes [2]Scrape
	i       int
}

func newRefreshCost(scrapes [2]Scrape) *refreshCost {
	c := &refreshCost{scrapes: scrapes}
	src := &cycle{c: c}
	c.ref = NewRefresher(src, time.Minute)
	c.m = New(Options{Refresher: c.ref, Interval: time.Second, View: ViewProcesses})
	c.m.width, c.m.height = 160, 50
	return c
}

// cycle gives the two scrapes in turn, each a second after the last.
type cycle struct{ c *refreshCost }

func (*cycle) String() string { return "bench" }

func (s *cycle) Scrape(context.Context) (Scrape, error) {
	c := s.c
	sc := c.scrapes[c.i%2]
	sc.At = time.Unix(int64(c.i), 0)
	c.i++
	return sc, nil
}

func (c *refreshCost) once(tb testing.TB) {
	f, err := c.ref.Refresh(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	c.m.frame = f
	c.m.reload()
	if len(c.m.Render()) == 0 {
		tb.Fatal("empty screen")
	}
}

// cpuTime is the CPU time this process has used, in user and system
// mode: with -cpu 1, a frame's own work and its garbage collection, and
// not the time it waited for a core on a busy machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRefresh (issue 24): the cost of one refresh of top (decode,
// rates and percentiles, the Frame, a 160×50 screen) for a 20 MB scrape
// of 100,000 samples, on one core (-cpu 1): ms a frame (wall clock, and
// the CPU time the process used, which a busy machine does not inflate)
// and bytes allocated. ours decodes the protobuf exposition the agent answers top
// with, through protowire; expfmt-proto and expfmt-text decode it, and
// the text format, with expfmt. ratio runs the three in turns and reports
// expfmt's times over ours, measured in the same run. Target: ≤ 100 ms a
// frame.
//
//	go test -run '^$' -bench Refresh -cpu 1 -benchtime 20x ./examples/agent/internal/top
func BenchmarkRefresh(b *testing.B) {
	t1, samples := bigScrape(1000, 70, 1)
	t2, _ := bigScrape(1000, 70, 2)
	p1, p2 := toProto(b, t1), toProto(b, t2)
	text := expfmt.NewFormat(expfmt.TypeTextPlain)
	protoFmt := expfmt.NewFormat(expfmt.TypeProtoDelim)
	variants := []struct {
		name    string
		scrapes [2]Scrape
	}{
		{"ours", [2]Scrape{ProtoScrape(time.Time{}, p1), ProtoScrape(time.Time{}, p2)}},
		{"expfmt-proto", [2]Scrape{ExpfmtScrape(time.Time{}, p1, protoFmt), ExpfmtScrape(time.Time{}, p2, protoFmt)}},
		{"expfmt-text", [2]Scrape{ExpfmtScrape(time.Time{}, t1, text), ExpfmtScrape(time.Time{}, t2, text)}},
	}
	b.Logf("scrape: %.1f MB of text, %d samples; %.1f MB in the protobuf exposition", float64(len(t1))/1e6, samples, float64(len(p1))/1e6)
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			c := newRefreshCost(v.scrapes)
			c.once(b) // the first, without rates
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			for b.Loop() {
				c.once(b)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/frame")
			b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/1e3/float64(b.N), "cpu-ms/frame")
			b.ReportMetric(float64(samples), "samples")
			b.ReportMetric(float64(len(t1))/1e6, "text-MB")
		})
	}
	b.Run("ratio", func(b *testing.B) {
		cs := make([]*refreshCost, len(variants))
		for i, v := range variants {
			cs[i] = newRefreshCost(v.scrapes)
			cs[i].once(b)
		}
		took := make([]time.Duration, len(variants))
		for b.Loop() {
			for i, c := range cs {
				start := time.Now()
				c.once(b)
				took[i] += time.Since(start)
			}
		}
		b.ReportMetric(float64(took[0].Microseconds())/1e3/float64(b.N), "ours-ms/frame")
		b.ReportMetric(took[1].Seconds()/took[0].Seconds(), "expfmt-proto/ours")
		b.ReportMetric(took[2].Seconds()/took[0].Seconds(), "expfmt-text/ours")
		b.ReportMetric(0, "ns/op")
	})
}
