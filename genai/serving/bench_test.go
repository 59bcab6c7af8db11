package serving

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/xpuscope/xpuscope/internal/procfs"
	"github.com/xpuscope/xpuscope/internal/proctable"
)

// realSizedVLLM is a vLLM /metrics of a real server's size: the fixture
// (vllm-v1.prom) and what a vLLM 0.10 API server exports besides, which
// the Source parses and leaves out: its other request histograms (prompt
// and generation tokens in 1-2-5 buckets up to a 32k context, iteration
// tokens, the n and max_tokens parameters, prefill, decode, inference and
// per-token times), and the HTTP and Python metrics of
// prometheus_fastapi_instrumentator and prometheus_client. About 60 KB,
// 700 lines, as a served vLLM's /metrics is.
func realSizedVLLM(t testing.TB) []byte {
	var b bytes.Buffer
	b.Write(fixture(t, "vllm-v1.prom"))
	const model = `engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"`
	hist := func(name string, bounds []float64, labelSets ...string) {
		fmt.Fprintf(&b, "# HELP %s A histogram.\n# TYPE %s histogram\n", name, name)
		for _, labels := range labelSets {
			n := 0
			for i, ub := range bounds {
				n += i % 7
				fmt.Fprintf(&b, "%s_bucket{%s,le=\"%g\"} %d.0\n", name, labels, ub, n)
			}
			fmt.Fprintf(&b, "%s_bucket{%s,le=\"+Inf\"} %d.0\n%s_count{%s} %d.0\n%s_sum{%s} %d.5\n", name, labels, n, name, labels, n, name, labels, n*3)
		}
	}
	var tokens []float64
	for e := 1.0; e <= 32768; e *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if m*e <= 32768 {
				tokens = append(tokens, m*e)
			}
		}
	}
	latency := []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	for _, name := range []string{"vllm:request_prompt_tokens", "vllm:request_generation_tokens", "vllm:request_max_num_generation_tokens", "vllm:request_params_max_tokens"} {
		hist(name, tokens, model)
	}
	hist("vllm:iteration_tokens_total", []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}, model)
	hist("vllm:request_params_n", []float64{1, 2, 5, 10, 20}, model)
	hist("vllm:time_per_prefill_token_request_seconds", []float64{0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0}, model)
	for _, name := range []string{"vllm:request_inference_time_seconds", "vllm:request_time_per_output_token_seconds"} {
		hist(name, latency, model)
	}
	var handlers []string
	for _, h := range []string{"/v1/completions", "/v1/chat/completions", "/health", "/metrics"} {
		for _, m := range []string{"GET", "POST"} {
			handlers = append(handlers, fmt.Sprintf(`handler="%s",method="%s"`, h, m))
		}
	}
	hist("http_request_duration_seconds", []float64{0.1, 0.5, 1}, handlers...)
	hist("http_request_size_bytes", []float64{1, 10, 100, 1000, 10000, 100000, 1e6}, handlers...)
	hist("http_response_size_bytes", []float64{1, 10, 100, 1000, 10000, 100000, 1e6}, handlers...)
	hist("http_request_duration_highr_seconds", []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 7.5, 10, 30, 60}, `x="1"`)
	for _, g := range []string{"0", "1", "2"} {
		fmt.Fprintf(&b, "python_gc_objects_collected_total{generation=\"%s\"} 1234.0\npython_gc_collections_total{generation=\"%s\"} 56.0\n", g, g)
	}
	b.WriteString("process_virtual_memory_bytes 3.4e+10\nprocess_resident_memory_bytes 2.1e+09\nprocess_cpu_seconds_total 1234.5\nprocess_open_fds 187.0\n")
	return b.Bytes()
}

// BenchmarkScrapeAndMap: one interval of one vLLM server, as the Source
// spends it: the HTTP GET of its /metrics (on loopback, its connection
// kept), expfmt's parse, the mapping, the snapshot of its series; and,
// as a user runs it, an OpenTelemetry SDK reader's collection of the
// Source's instruments and Producer. servers=16 does the same for
// sixteen servers. The server is a process of its own (a fake vLLM
// serving the payload), so that the CPU time the benchmark's process
// spends (getrusage: user and system) is the Source's alone: cpu-us/op,
// and the fraction of a core it is at a 10 s interval (%core@10s, the
// issue's bound being 0.5 % for sixteen servers); ns/op is the wall
// time, the server's answer included.
func BenchmarkScrapeAndMap(b *testing.B) {
	payload := realSizedVLLM(b)
	file := filepath.Join(b.TempDir(), "vllm.prom")
	require.NoError(b, os.WriteFile(file, payload, 0o644))
	f := startFake(b, fakeOpts{args: []string{"vllm", "serve", "m", "--port", "%d"}, payload: file})
	url := fmt.Sprintf("http://127.0.0.1:%d/metrics", f.port)
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprintf("servers=%d", n), func(b *testing.B) {
			p := NewProducer()
			r := sdkmetric.NewManualReader(sdkmetric.WithProducer(p))
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
			defer mp.Shutdown(context.Background())
			s := &Source{cfg: config{interval: DefaultInterval, timeout: DefaultTimeout, bodyLimit: DefaultBodyLimit, producer: p},
				scrapes: map[scrapeKey]int64{}}
			require.NoError(b, s.inst.create(mp.Meter(ScopeName)))
			reg, err := mp.Meter(ScopeName).RegisterCallback(s.observe, s.inst.all()...)
			require.NoError(b, err)
			defer reg.Unregister()
			p.sources.Add(s)
			servers := make([]*server, n)
			for i := range servers {
				servers[i] = &server{spec: &vllmSpec, series: map[pointKey]*seriesState{}, port: uint16(8000 + i),
					client: s.client(os.Getpid())}
				servers[i].vals.lim = limits{models: DefaultMaxModels, series: DefaultMaxSeries, values: maxWords}
				servers[i].rebase()
			}
			var rm metricdata.ResourceMetrics
			b.SetBytes(int64(n * len(payload)))
			b.ReportAllocs()
			cpu0 := cpuTime(b)
			b.ResetTimer()
			for b.Loop() {
				now := time.Now()
				sn := &snapshot{at: now, served: map[int][]string{}}
				for _, srv := range servers {
					if err := s.fetch(context.Background(), srv, srv.client, url); err != nil {
						b.Fatal(err)
					}
					s.publishPoints(sn, srv, now)
				}
				s.snap.Store(sn)
				if err := r.Collect(context.Background(), &rm); err != nil {
					b.Fatal(err)
				}
			}
			perInterval := (cpuTime(b) - cpu0).Seconds() / float64(b.N)
			b.ReportMetric(perInterval*1e6, "cpu-us/op")
			b.ReportMetric(100*perInterval/DefaultInterval.Seconds(), "%core@10s")
			b.ReportMetric(float64(len(payload)), "payload-bytes")
		})
	}
}

// cpuTime is the CPU time the process has spent, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDiscover: one interval's look at the host's processes, all of
// them known already (the steady state): list /proc, read each one's
// start time. Its %core@10s is what it adds to the scrapes'.
func BenchmarkDiscover(b *testing.B) {
	fs := procfs.FS{Root: procfs.DefaultRoot}
	h, err := fs.Open()
	require.NoError(b, err)
	defer h.Close()
	s := &Source{cfg: config{maxServers: DefaultMaxServers, maxModels: DefaultMaxModels, maxSeries: DefaultMaxSeries},
		procs: fs, handle: h, servers: map[serverKey]*server{}}
	s.table = proctable.Table{FS: fs, Handle: h, Identify: s.identify}
	s.discover(time.Now())
	pids, _ := fs.PIDs()
	b.ReportAllocs()
	for b.Loop() {
		s.discover(time.Now())
	}
	b.ReportMetric(100*b.Elapsed().Seconds()/float64(b.N)/DefaultInterval.Seconds(), "%core@10s")
	b.ReportMetric(float64(len(pids)), "processes")
}
