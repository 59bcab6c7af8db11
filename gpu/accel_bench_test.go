package gpu

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/xpuscope/xpuscope/internal/amdsysfs/amdsysfstest"
	"github.com/xpuscope/xpuscope/internal/dcgm/dcgmtest"
	"github.com/xpuscope/xpuscope/internal/rdc/rdctest"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/tpu/tputest"
)

// accelSetups are the runtime backends over 8 devices each, as the
// benchmarks and the allocation test start them: DCGM and RDC through
// their fake libraries (-DFAKE_GPUS=8; RDC over a sysfs fixture of an AMD
// card, which it needs to start); the TPU runtime as a v4 VM of 8 chips
// whose service, a gRPC server on loopback, serves the five metrics.
func accelSetups() map[string]func(testing.TB) []Option {
	return map[string]func(testing.TB) []Option{
		"dcgm": func(t testing.TB) []Option {
			return []Option{WithBackends(BackendDCGM), WithDCGMLibraryPath(dcgmtest.Build(t, "-DFAKE_GPUS=8")), WithDCGMHostEngine("")}
		},
		"rdc": func(t testing.TB) []Option {
			return []Option{WithBackends(BackendRDC), WithRDCLibraryPath(rdctest.Build(t, "-DFAKE_GPUS=8")), withSysfsFS(amdsysfstest.Load(t, "one-gpu"))}
		},
		"tpu": func(t testing.TB) []Option {
			srv := tputest.Start(t, v4Metrics(8)...)
			return []Option{WithBackends(BackendTPU), withSysfsFS(tputest.V4(8)), WithProcRoot(t.TempDir()), WithTPUMetricsPorts(srv.Port)}
		},
	}
}

func startAccel(t testing.TB, opts []Option) (*Source, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	s, err := New(append([]Option{WithMeterProvider(mp), WithInterval(1 << 62)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s, reader
}

// TestAccelObserveDoesNotAllocate: the callback that reports a runtime
// backend's snapshot allocates nothing, whatever the backend read.
func TestAccelObserveDoesNotAllocate(t *testing.T) {
	for name, setup := range accelSetups() {
		t.Run(name, func(t *testing.T) {
			s, _ := startAccel(t, setup(t))
			require.NotZero(t, len(s.front.samples))
			ctx := context.Background()
			assert.Zero(t, testing.AllocsPerRun(100, func() { _ = s.observe(ctx, discard{}) }))
		})
	}
}

// BenchmarkScrape measures one scrape of a runtime backend over 8
// devices: "poll" is the Source's own goroutine reading every device into
// a snapshot (the calls into the library, decoding, the self-metrics),
// "observe" the callback reporting the snapshot (no allocation), and
// "poll+collect" adds an OpenTelemetry SDK collection, what an exporter
// pays each interval. The libraries are the fakes, whose own work is a
// table lookup: the figures are the binding's and the Source's, not a
// host engine's or an RDC agent's. The TPU's scrape is six gRPC calls on
// loopback (the server's side in the same process).
func BenchmarkScrape(b *testing.B) {
	for name, setup := range accelSetups() {
		b.Run(name, func(b *testing.B) {
			s, reader := startAccel(b, setup(b))
			devices := float64(len(s.front.samples))
			b.Run("poll", func(b *testing.B) {
				b.ReportAllocs()
				s.poll()
				allocs := testing.AllocsPerRun(20, s.poll)
				for b.Loop() {
					s.poll()
				}
				b.ReportMetric(allocs/devices, "allocs/device")
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/scrape")
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
					s.poll()
					if err := reader.Collect(context.Background(), &rm); err != nil {
						require.NoError(b, err)
					}
				}
				pts, err := testutil.Flatten(rm)
				require.NoError(b, err)
				b.ReportMetric(float64(len(pts)), "points/op")
			})
		})
	}
}
