package tpu_test

// No TPU here: the sysfs trees are fixtures of TPU VMs (tputest), and the
// runtime's metrics service is a real gRPC server on loopback implementing
// the service from its generated code.

import (
	"context"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/xpuscope/xpuscope/internal/tpu"
	"github.com/xpuscope/xpuscope/internal/tpu/runtimepb"
	"github.com/xpuscope/xpuscope/internal/tpu/tputest"
)

func TestChipOf(t *testing.T) {
	for _, tc := range []struct {
		device, sub string
		want        tpu.Chip
		ok          bool
	}{
		{"0x0027", "0x004e", tpu.Chip{Name: "v2", Cores: 2}, true},
		{"0x0027", "0x004f", tpu.Chip{Name: "v3", Cores: 2}, true},
		{"0x0027", "0x0000", tpu.Chip{}, false},
		{"0x005e", "", tpu.Chip{Name: "v4", Cores: 1}, true},
		{"0x0063", "", tpu.Chip{Name: "v5e", Cores: 1}, true},
		{"0x0062", "", tpu.Chip{Name: "v5p", Cores: 1}, true},
		{"0x006F", "", tpu.Chip{Name: "v6e", Cores: 1}, true},
		{"0x0076", "", tpu.Chip{Name: "7x", Cores: 2}, true},
		{"0x1000", "", tpu.Chip{}, false},
	} {
		got, ok := tpu.ChipOf(tc.device, tc.sub)
		assert.Equal(t, tc.ok, ok, tc.device)
		assert.Equal(t, tc.want, got, tc.device)
	}
}

func TestDiscover(t *testing.T) {
	v4, err := tpu.Discover(tputest.V4(4))
	require.NoError(t, err)
	require.Len(t, v4, 4, "the NIC of another vendor is left out")
	for i, d := range v4 {
		assert.Equal(t, i, d.Ordinal)
		assert.Equal(t, "/dev/accel"+strconv.Itoa(i), d.File, "numbered by accel device")
		assert.Equal(t, "TPU v4", d.Name())
	}
	assert.Equal(t, "0000:00:07.0", v4[0].PCIAddress, "accel0 has the highest address")

	v5e, err := tpu.Discover(tputest.V5e(3))
	require.NoError(t, err)
	require.Len(t, v5e, 3)
	assert.Equal(t, []string{"/dev/vfio/8", "/dev/vfio/9", "/dev/vfio/10"}, []string{v5e[0].File, v5e[1].File, v5e[2].File}, "numbered by IOMMU group, as tpu-info does")
	assert.Equal(t, "0000:00:07.0", v5e[0].PCIAddress)

	v7x, err := tpu.Discover(tputest.V7x(2))
	require.NoError(t, err)
	require.Len(t, v7x, 4, "two TensorCores a chip")
	assert.Equal(t, []string{"0000:01:00.0", "0000:01:00.1", "0000:01:01.0", "0000:01:01.1"},
		[]string{v7x[0].PCIAddress, v7x[1].PCIAddress, v7x[2].PCIAddress, v7x[3].PCIAddress})
	assert.Equal(t, "TPU7x", v7x[0].Name())
	assert.Equal(t, tpu.Chip{Name: "7x", Cores: 2}, v7x[3].Chip)

	none, err := tpu.Discover(tputest.Sysfs(tputest.PCI{Address: "0000:00:03.0", Vendor: "0x10de", Device: "0x2330", Accel: -1, IOMMUGroup: -1}))
	require.NoError(t, err)
	assert.Empty(t, none)
	_, err = tpu.Discover(os.DirFS(t.TempDir()))
	assert.Error(t, err, "no bus/pci/devices")
}

// procTree makes /proc/<pid>/fd/<n> links to the files given.
func procTree(t *testing.T, fds map[int][]string) string {
	root := t.TempDir()
	for pid, files := range fds {
		dir := filepath.Join(root, strconv.Itoa(pid), "fd")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		for i, f := range files {
			require.NoError(t, os.Symlink(f, filepath.Join(dir, strconv.Itoa(i))))
		}
	}
	require.NoError(t, os.MkdirAll(filepath.Join(root, "self"), 0o755))
	return root
}

func TestOwners(t *testing.T) {
	root := procTree(t, map[int][]string{
		100: {"/dev/null", "/dev/accel0", "/dev/accel1", "/dev/accel0"},
		200: {"/dev/accel1", "socket:[123]"},
		300: {"/dev/vfio/8"},
	})
	got, err := tpu.Owners(root, []string{"/dev/accel0", "/dev/accel1", "/dev/accel2", ""})
	require.NoError(t, err)
	assert.Equal(t, map[string][]int{"/dev/accel0": {100}, "/dev/accel1": {100, 200}}, got)
}

func TestOrdinal(t *testing.T) {
	str := func(s string) *runtimepb.AttrValue {
		return &runtimepb.AttrValue{Attr: &runtimepb.AttrValue_StringAttr{StringAttr: s}}
	}
	list := func(kvs ...*runtimepb.Attribute) *runtimepb.Attribute {
		return &runtimepb.Attribute{Value: &runtimepb.AttrValue{Attr: &runtimepb.AttrValue_KvlistAttr{KvlistAttr: &runtimepb.KeyValueList{Attributes: kvs}}}}
	}
	for _, tc := range []struct {
		name string
		a    *runtimepb.Attribute
		want int
		ok   bool
	}{
		{"v4: int_attr", tputest.IntDevice(3), 3, true},
		{"v5e: device_ordinal string in a list", tputest.ListDevice(2), 2, true},
		{"device_ordinal int in a list", list(&runtimepb.Attribute{Key: "device_ordinal", Value: &runtimepb.AttrValue{Attr: &runtimepb.AttrValue_IntAttr{IntAttr: 5}}}), 5, true},
		{"a list without it", list(&runtimepb.Attribute{Key: "core_type", Value: str("tensor_core")}), 0, false},
		{"not digits", list(&runtimepb.Attribute{Key: "device_ordinal", Value: str("1.5")}), 0, false},
		{"a sign", list(&runtimepb.Attribute{Key: "device_ordinal", Value: str("+1")}), 0, false},
		{"negative", tputest.IntDevice(-1), 0, false},
		{"too large", tputest.IntDevice(1 << 20), 0, false},
		{"digits as the value", &runtimepb.Attribute{Value: str("7")}, 7, true},
		{"none", nil, 0, false},
	} {
		got, ok := tpu.Ordinal(&runtimepb.Metric{Attribute: tc.a})
		assert.Equal(t, tc.ok, ok, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}
}

func TestNumber(t *testing.T) {
	v, ok := tpu.Number(tputest.IntGauge(nil, 17<<30))
	assert.True(t, ok)
	assert.Equal(t, float64(17<<30), v)
	v, ok = tpu.Number(tputest.DoubleGauge(nil, 42.5))
	assert.True(t, ok)
	assert.Equal(t, 42.5, v)
	_, ok = tpu.Number(tputest.DoubleGauge(nil, math.NaN()))
	assert.False(t, ok)
	_, ok = tpu.Number(&runtimepb.Metric{Measure: &runtimepb.Metric_Gauge{Gauge: &runtimepb.Gauge{Value: &runtimepb.Gauge_AsString{AsString: "x"}}}})
	assert.False(t, ok, "a string gauge")
	v, ok = tpu.Number(&runtimepb.Metric{Measure: &runtimepb.Metric_Counter{Counter: &runtimepb.Counter{Value: &runtimepb.Counter_AsInt{AsInt: 9}}}})
	assert.True(t, ok)
	assert.Equal(t, 9.0, v)
	_, ok = tpu.Number(tputest.Exponential(nil, 1, 1, 2, 1, 1))
	assert.False(t, ok, "a distribution")
}

func TestPercentile(t *testing.T) {
	// Exponential: scale 100 µs, ×2: underflow <100, [100,200), [200,400),
	// [400,800), overflow; 10 samples: 1, 2, 4, 2, 1.
	d := tputest.Exponential(nil, 300, 100, 2, 1, 2, 4, 2, 1).GetDistribution()
	for _, tc := range []struct{ q, want float64 }{
		{0.1, 100}, {0.2, 200}, {0.3, 200}, {0.5, 400}, {0.7, 400}, {0.9, 800}, {0.95, 800},
	} {
		got, ok := tpu.Percentile(d, tc.q)
		assert.True(t, ok, "q %v", tc.q)
		assert.Equal(t, tc.want, got, "q %v", tc.q)
	}
	got, ok := tpu.Percentile(d, 1)
	assert.True(t, ok)
	assert.Equal(t, 800.0, got, "in the overflow bucket, without a max: its lower bound")
	d.Max = 1234
	got, _ = tpu.Percentile(d, 1)
	assert.Equal(t, 1234.0, got, "in the overflow bucket: the max")

	lin := &runtimepb.Distribution{BucketCounts: []int64{0, 3, 1, 0},
		BucketOptions: &runtimepb.Distribution_BucketOptions{Options: &runtimepb.Distribution_BucketOptions_LinearBuckets{
			LinearBuckets: &runtimepb.Distribution_BucketOptions_Linear{NumFiniteBuckets: 2, Width: 10, Offset: 5}}}}
	got, ok = tpu.Percentile(lin, 0.5)
	assert.True(t, ok)
	assert.Equal(t, 15.0, got)
	got, _ = tpu.Percentile(lin, 1)
	assert.Equal(t, 25.0, got)

	exp := &runtimepb.Distribution{BucketCounts: []int64{1, 0, 1},
		BucketOptions: &runtimepb.Distribution_BucketOptions{Options: &runtimepb.Distribution_BucketOptions_ExplicitBuckets{
			ExplicitBuckets: &runtimepb.Distribution_BucketOptions_Explicit{Bounds: []float64{1, 2}}}}}
	got, _ = tpu.Percentile(exp, 0.5)
	assert.Equal(t, 1.0, got)

	for name, bad := range map[string]*runtimepb.Distribution{
		"no sample":         tputest.Exponential(nil, 0, 100, 2, 0, 0, 0).GetDistribution(),
		"no options":        {BucketCounts: []int64{1}},
		"growth ≤ 1":        tputest.Exponential(nil, 0, 100, 1, 1, 1, 1).GetDistribution(),
		"counts ≠ buckets":  {BucketCounts: []int64{1, 1}, BucketOptions: d.BucketOptions},
		"negative count":    tputest.Exponential(nil, 0, 100, 2, 1, -1, 1).GetDistribution(),
		"unsorted explicit": {BucketCounts: []int64{1, 1, 1}, BucketOptions: &runtimepb.Distribution_BucketOptions{Options: &runtimepb.Distribution_BucketOptions_ExplicitBuckets{ExplicitBuckets: &runtimepb.Distribution_BucketOptions_Explicit{Bounds: []float64{2, 1}}}}},
	} {
		_, ok := tpu.Percentile(bad, 0.5)
		assert.False(t, ok, name)
	}
	_, ok = tpu.Percentile(d, 0)
	assert.False(t, ok, "q 0")
}

func TestEndpoint(t *testing.T) {
	srv := tputest.Start(t,
		tputest.Metric(tpu.MetricMemoryUsage, tputest.IntGauge(tputest.IntDevice(0), 1<<30)),
		tputest.Metric(tpu.MetricHLOQueueSize, tputest.IntGauge(tputest.ListDevice(0), 3)),
	)
	ep, err := tpu.NewEndpoint("127.0.0.1", srv.Port)
	require.NoError(t, err)
	defer ep.Close()
	got := map[string]*runtimepb.MetricResponse{}
	var failed []string
	scrape := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return ep.Scrape(ctx, tpu.Metrics, func(n string, r *runtimepb.MetricResponse) { got[n] = r },
			func(n string, err error) { failed = append(failed, n) })
	}
	require.NoError(t, scrape())
	assert.Len(t, got, 2, "only what the service lists is asked for")
	assert.Empty(t, failed)
	assert.True(t, ep.Supported(tpu.MetricMemoryUsage))
	assert.False(t, ep.Supported(tpu.MetricDutyCycle))
	require.NoError(t, scrape())
	assert.Equal(t, 1, srv.Calls("ListSupportedMetrics"), "listed once")
	assert.Equal(t, 4, srv.Calls("GetRuntimeMetric"))

	// The service stops answering: a deadline.
	srv.Hang()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	err = ep.Scrape(ctx, tpu.Metrics, func(string, *runtimepb.MetricResponse) {}, func(string, error) {})
	cancel()
	require.Error(t, err)
	assert.Equal(t, "timeout", tpu.Reason(err))
	srv.Unhang()

	// The workload ends: nothing listens.
	srv.Stop()
	require.Eventually(t, func() bool {
		err := scrape()
		return err != nil && tpu.Reason(err) == "no_listener"
	}, 10*time.Second, 50*time.Millisecond)
}

func TestReasonOfARefusedPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	ep, err := tpu.NewEndpoint("127.0.0.1", port)
	require.NoError(t, err)
	defer ep.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = ep.Scrape(ctx, tpu.Metrics, nil, nil)
	require.Error(t, err)
	assert.Equal(t, "no_listener", tpu.Reason(err))
}

func TestParsePorts(t *testing.T) {
	for in, want := range map[string][]int{
		"8431":                 {8431},
		"8431,8432, 8433 ":     {8431, 8432, 8433},
		"8431,8431":            {8431},
		"0,65536,-1,x,,8431":   {8431},
		"":                     nil,
		" 9000 ,\t9001":        {9000, 9001},
		"8431:8432":            nil,
		"99999999999999999999": nil,
	} {
		assert.Equal(t, want, tpu.ParsePorts(in), "%q", in)
	}
	var many []string
	for p := range 100 {
		many = append(many, strconv.Itoa(9000+p))
	}
	assert.Len(t, tpu.ParsePorts(strings.Join(many, ",")), 64, "capped")
}

// FuzzParsePorts: TPU_RUNTIME_METRICS_PORTS is a workload's to set;
// whatever it holds gives at most 64 distinct ports in range.
func FuzzParsePorts(f *testing.F) {
	f.Add("8431,8432")
	f.Add(" 1 ,65535,,x")
	f.Fuzz(func(t *testing.T, s string) {
		ps := tpu.ParsePorts(s)
		if len(ps) > 64 {
			t.Fatalf("%d ports", len(ps))
		}
		seen := map[int]bool{}
		for _, p := range ps {
			if p < 1 || p > 65535 || seen[p] {
				t.Fatalf("port %d in %v", p, ps)
			}
			seen[p] = true
		}
	})
}

// FuzzMapping decodes arbitrary bytes as a MetricResponse, as a service
// might send, and maps every point: nothing panics, values are finite,
// and percentiles do not decrease with the quantile.
func FuzzMapping(f *testing.F) {
	for _, m := range []*runtimepb.TPUMetric{
		tputest.Metric(tpu.MetricMemoryUsage, tputest.IntGauge(tputest.IntDevice(0), 1<<30), tputest.IntGauge(tputest.IntDevice(1), 2<<30)),
		tputest.Metric(tpu.MetricHLOQueueSize, tputest.IntGauge(tputest.ListDevice(3), 4)),
		tputest.Metric(tpu.MetricHLOExecTiming, tputest.Exponential(tputest.ListDevice(0), 300, 100, 2, 1, 2, 4, 2, 1)),
		tputest.Metric(tpu.MetricDutyCycle, tputest.DoubleGauge(tputest.IntDevice(0), 97.5)),
	} {
		b, err := proto.Marshal(&runtimepb.MetricResponse{Metric: m})
		require.NoError(f, err)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r runtimepb.MetricResponse
		if proto.Unmarshal(b, &r) != nil {
			return
		}
		for _, m := range r.GetMetric().GetMetrics() {
			if o, ok := tpu.Ordinal(m); ok && (o < 0 || o >= 1<<16) {
				t.Fatalf("ordinal %d", o)
			}
			if v, ok := tpu.Number(m); ok && (math.IsNaN(v) || math.IsInf(v, 0)) {
				t.Fatalf("value %v", v)
			}
			last := math.Inf(-1)
			for _, q := range []float64{0.5, 0.9, 0.95, 0.999} {
				p, ok := tpu.Percentile(m.GetDistribution(), q)
				if !ok {
					break
				}
				if math.IsNaN(p) || math.IsInf(p, 0) || p < last {
					t.Fatalf("p%v = %v after %v", q, p, last)
				}
				last = p
			}
		}
	})
}
