package gpu

import (
	"context"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/embedded"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// BenchmarkCollect measures one full cycle over 8 mocked GPUs with 4
// processes each: "poll" reads every device into a snapshot (the Source's
// own work), "observe" is the Source's callback reporting every series of
// the snapshot, and "poll+collect" adds an OpenTelemetry SDK collection of every
// series, which is what an exporter pays each interval. allocs/device is
// the poll's allocations divided by the device count. go-nvml's mock
// records every call, so the figures include the mock's own cost.
func BenchmarkCollect(b *testing.B) {
	const gpus, procs = 8, 4
	fs := &fakeSystem{}
	for i := range gpus {
		g := h100(i)
		for p := range uint32(procs) {
			g.compute = append(g.compute, nvml.ProcessInfo{Pid: uint32(1000*i) + p, UsedGpuMemory: 1 << 30})
		}
		fs.gpus = append(fs.gpus, g)
	}
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	s, err := New(WithNVML(fs.lib()), WithMeterProvider(mp), WithInterval(1<<62), WithProcRoot(b.TempDir()))
	require.NoError(b, err)
	defer s.Close()
	var rm metricdata.ResourceMetrics

	b.Run("poll", func(b *testing.B) {
		b.ReportAllocs()
		s.poll() // steady state: caches warm
		allocs := testing.AllocsPerRun(100, s.poll)
		b.ResetTimer()
		for b.Loop() {
			s.poll()
		}
		b.ReportMetric(allocs/gpus, "allocs/device")
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
		for b.Loop() {
			s.poll()
			if err := reader.Collect(context.Background(), &rm); err != nil {
				require.NoError(b, err)
			}
		}
		pts, err := testutil.Flatten(rm)
		require.NoError(b, err)
		b.ReportMetric(float64(len(pts)), "points/op")
	})
}

// discard is an Observer that keeps nothing, to measure the Source's own
// callback without the SDK's aggregation.
type discard struct{ embedded.Observer }

func (discard) ObserveFloat64(metric.Float64Observable, float64, ...metric.ObserveOption) {}
func (discard) ObserveInt64(metric.Int64Observable, int64, ...metric.ObserveOption)       {}
