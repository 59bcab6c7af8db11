package gpu

// Tests of the TPU backend. No TPU here: the sysfs trees are fixtures of
// TPU VMs (internal/tpu/tputest), the processes holding the chips a
// procfs fixture, and the runtime's metrics service a real gRPC server on
// loopback, with local credentials as libtpu's, implementing the service
// from its generated code (internal/tpu/runtimepb).

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/tpu"
	"github.com/xpuscope/xpuscope/internal/tpu/runtimepb"
	"github.com/xpuscope/xpuscope/internal/tpu/tputest"
	"github.com/xpuscope/xpuscope/semconv"
)

var tpuSource = semconv.GPUMeasurementSource.String(semconv.MeasurementSourceLibTPU)

// tpuProcs is a procfs where each pid holds the device files given, with
// the environment given.
func tpuProcs(t *testing.T, holders map[int][]string, env map[int][]string) string {
	root := t.TempDir()
	for pid, files := range holders {
		dir := filepath.Join(root, strconv.Itoa(pid))
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "fd"), 0o755))
		for i, f := range files {
			require.NoError(t, os.Symlink(f, filepath.Join(dir, "fd", strconv.Itoa(i+3))))
		}
		block := strings.Join(env[pid], "\x00")
		if block != "" {
			block += "\x00"
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, "environ"), []byte(block), 0o444))
	}
	return root
}

// v4Metrics are a v4 VM's four chips as an older libtpu reports them: the
// device an int_attr; the HLO metrics in a key-value list.
func v4Metrics(n int) []*runtimepb.TPUMetric {
	var usage, total, duty, queue, timing []*runtimepb.Metric
	for i := range n {
		usage = append(usage, tputest.IntGauge(tputest.IntDevice(i), int64(i+1)<<30))
		total = append(total, tputest.IntGauge(tputest.IntDevice(i), 32<<30))
		duty = append(duty, tputest.DoubleGauge(tputest.IntDevice(i), 90+float64(i)))
		queue = append(queue, tputest.IntGauge(tputest.ListDevice(i), int64(i)))
		// 10 executions: 1 under 100 µs, 2 under 200, 4 under 400, 2 under 800, 1 above.
		timing = append(timing, tputest.Exponential(tputest.ListDevice(i), 350, 100, 2, 1, 2, 4, 2, 1))
	}
	return []*runtimepb.TPUMetric{
		tputest.Metric(tpu.MetricMemoryUsage, usage...), tputest.Metric(tpu.MetricMemoryTotal, total...),
		tputest.Metric(tpu.MetricDutyCycle, duty...), tputest.Metric(tpu.MetricHLOQueueSize, queue...),
		tputest.Metric(tpu.MetricHLOExecTiming, timing...),
	}
}

func TestTPUv4(t *testing.T) {
	srv := tputest.Start(t, v4Metrics(4)...)
	files := []string{"/dev/accel0", "/dev/accel1", "/dev/accel2", "/dev/accel3"}
	procs := tpuProcs(t, map[int][]string{4242: files, 77: {"/dev/null"}},
		map[int][]string{4242: {"PATH=/bin", "TPU_RUNTIME_METRICS_PORTS=" + strconv.Itoa(srv.Port), "HOME=/root"}})
	res := newFakeResolver()
	res.procs[4242] = []attribute.KeyValue{semconv.K8sNamespaceName.String("ml"), semconv.K8sPodName.String("jax-0"),
		semconv.ContainerID.String("abc"), semconv.ServiceName.String("train")}
	s, reader := newSource(t, WithBackends(BackendTPU), withSysfsFS(tputest.V4(4)), WithProcRoot(procs), WithResolver(res))
	pts := testutil.Collect(t, reader)

	id := semconv.HWID.String("0000:00:07.0") // accel0
	p := pts.One(t, semconv.TPUMemoryUsage.Name, id)
	assert.Equal(t, map[string]string{
		string(semconv.HWID):                 "0000:00:07.0",
		string(semconv.HWName):               "TPU v4",
		string(semconv.HWVendor):             semconv.VendorGoogle,
		string(semconv.HWType):               semconv.HWTypeTPU,
		string(semconv.GPUIndex):             "0",
		string(semconv.GPUPCIAddress):        "0000:00:07.0",
		string(semconv.GPUMeasurementSource): semconv.MeasurementSourceLibTPU,
		string(semconv.K8sNamespaceName):     "ml",
		string(semconv.K8sPodName):           "jax-0",
	}, p.Attrs, "the pod of the process holding the chip; not its container's id or service")
	assert.Equal(t, float64(1<<30), p.Value)
	for i, pci := range []string{"0000:00:07.0", "0000:00:06.0", "0000:00:05.0", "0000:00:04.0"} {
		id := semconv.HWID.String(pci)
		assert.Equal(t, float64(int64(i+1)<<30), pts.One(t, semconv.TPUMemoryUsage.Name, id).Value, "device %d", i)
		assert.Equal(t, float64(32<<30), pts.One(t, semconv.TPUMemoryLimit.Name, id).Value)
		assert.InDelta(t, (90+float64(i))/100, pts.One(t, semconv.TPUTensorCoreUtilization.Name, id).Value, 1e-12)
		assert.Equal(t, float64(i), pts.One(t, semconv.TPUHLOQueueSize.Name, id).Value)
	}
	dur := semconv.TPUHLOExecutionDuration.Name
	for _, tc := range []struct {
		stat string
		want float64
	}{{semconv.HLOStatisticMean, 350e-6}, {semconv.HLOStatisticP50, 400e-6}, {semconv.HLOStatisticP90, 800e-6},
		{semconv.HLOStatisticP95, 800e-6}, {semconv.HLOStatisticP999, 800e-6}} {
		assert.InDelta(t, tc.want, pts.One(t, dur, id, semconv.TPUHLOStatistic.String(tc.stat)).Value, 1e-12, tc.stat)
	}
	assert.Empty(t, pts.Find(semconv.XpuscopeGPUScrapeMisses.Name))
	assert.Empty(t, pts.Find(semconv.XpuscopeGPUSamplesBlank.Name))

	devs := s.Devices()
	require.Len(t, devs, 4)
	assert.Equal(t, Device{Index: 0, UUID: "0000:00:07.0", Name: "TPU v4", Vendor: semconv.VendorGoogle, PCIAddress: "0000:00:07.0"}, devs[0])
	st := s.Status().Backends[0]
	assert.True(t, st.Active)
	assert.Equal(t, 4, st.Devices)
	assert.Equal(t, "4 TPU v4; 4 held by a process; runtime metrics at 127.0.0.1:"+strconv.Itoa(srv.Port)+": 5 of 5 metrics read", st.Detail)
}

func TestTPUv5e(t *testing.T) {
	// A newer libtpu: every metric names its device by device_ordinal, a
	// string, in a key-value list; one point names a device the node does
	// not have.
	var usage []*runtimepb.Metric
	for i := range 2 {
		usage = append(usage, tputest.IntGauge(tputest.ListDevice(i), int64(5+i)<<30))
	}
	usage = append(usage, tputest.IntGauge(tputest.ListDevice(9), 1))
	duty := []*runtimepb.Metric{tputest.DoubleGauge(tputest.ListDevice(0), 250)} // not a percentage
	srv := tputest.Start(t, tputest.Metric(tpu.MetricMemoryUsage, usage...), tputest.Metric(tpu.MetricDutyCycle, duty...),
		tputest.Metric(tpu.MetricHLOExecTiming, tputest.Exponential(tputest.ListDevice(1), 0, 100, 2, 0, 0, 0)))
	s, reader := newSource(t, WithBackends(BackendTPU), withSysfsFS(tputest.V5e(2)), WithProcRoot(t.TempDir()),
		WithTPUMetricsPorts(srv.Port))
	pts := testutil.Collect(t, reader)
	assert.Equal(t, float64(5<<30), pts.One(t, semconv.TPUMemoryUsage.Name, semconv.HWID.String("0000:00:06.0")).Value, "device 0: IOMMU group 9")
	assert.Equal(t, float64(6<<30), pts.One(t, semconv.TPUMemoryUsage.Name, semconv.HWID.String("0000:00:05.0")).Value, "device 1: group 10")
	assert.Equal(t, "TPU v5e", pts.One(t, semconv.TPUMemoryUsage.Name, semconv.GPUIndex.Int(1)).Get(semconv.HWName))
	assert.Equal(t, 1.0, selfCount(pts, semconv.XpuscopeGPUSamplesBlank, backendKV(BackendTPU), fieldKV(tpu.MetricMemoryUsage), reasonKV(semconv.GPUReasonNoDevice)))
	assert.Equal(t, 1.0, selfCount(pts, semconv.XpuscopeGPUSamplesBlank, fieldKV(tpu.MetricDutyCycle), reasonKV(semconv.GPUReasonInvalid)))
	assert.Empty(t, pts.Find(semconv.TPUTensorCoreUtilization.Name))
	assert.Empty(t, pts.Find(semconv.TPUHLOExecutionDuration.Name), "no execution yet: nothing, and no blank")
	assert.Equal(t, 2.0, selfCount(pts, semconv.XpuscopeGPUSamplesBlank))
	assert.Contains(t, s.Status().Backends[0].Detail, "2 TPU v5e; runtime metrics at 127.0.0.1:"+strconv.Itoa(srv.Port)+": 3 of 5 metrics read")
}

func TestTPUv7x(t *testing.T) {
	// Two TensorCores a chip, each a device of its own.
	srv := tputest.Start(t, tputest.Metric(tpu.MetricMemoryUsage,
		tputest.IntGauge(tputest.ListDevice(0), 10), tputest.IntGauge(tputest.ListDevice(1), 11),
		tputest.IntGauge(tputest.ListDevice(2), 20), tputest.IntGauge(tputest.ListDevice(3), 21)))
	_, reader := newSource(t, WithBackends(BackendTPU), withSysfsFS(tputest.V7x(2)), WithProcRoot(t.TempDir()), WithTPUMetricsPorts(srv.Port))
	pts := testutil.Collect(t, reader)
	for pci, want := range map[string]float64{"0000:01:00.0": 10, "0000:01:00.1": 11, "0000:01:01.0": 20, "0000:01:01.1": 21} {
		p := pts.One(t, semconv.TPUMemoryUsage.Name, semconv.HWID.String(pci))
		assert.Equal(t, want, p.Value, pci)
		assert.Equal(t, "TPU7x", p.Get(semconv.HWName))
	}
}

func TestTPUServiceComesAndGoes(t *testing.T) {
	srv := tputest.Start(t, v4Metrics(1)...)
	s, reader := newSource(t, WithBackends(BackendTPU), withSysfsFS(tputest.V4(1)), WithProcRoot(t.TempDir()),
		WithTPUMetricsPorts(srv.Port), WithTPUTimeout(300*time.Millisecond))
	require.Len(t, testutil.Collect(t, reader).Find(semconv.TPUMemoryUsage.Name), 1)
	misses := func(reason string) float64 {
		return selfCount(testutil.Collect(t, reader), semconv.XpuscopeGPUScrapeMisses, backendKV(BackendTPU), reasonKV(reason))
	}

	// The service stops answering: the scrape gives up at its timeout.
	srv.Hang()
	start := time.Now()
	s.poll()
	assert.Less(t, time.Since(start), 5*time.Second, "bounded by WithTPUTimeout")
	assert.Equal(t, 1.0, misses(semconv.GPUReasonTimeout))
	assert.Empty(t, testutil.Collect(t, reader).Find(semconv.TPUMemoryUsage.Name), "nothing read this cycle")
	assert.Contains(t, s.Status().Backends[0].Detail, ": timeout")
	srv.Unhang()

	// The workload ends: nothing listens, which is counted.
	srv.Stop()
	require.Eventually(t, func() bool { s.poll(); return misses(semconv.GPUReasonNoListener) > 0 }, 10*time.Second, 20*time.Millisecond)
	assert.Contains(t, s.Status().Backends[0].Detail, "no listener (no workload runs)")
	assert.True(t, s.Status().Backends[0].Active, "an idle node is normal")

	// A workload starts again on the same port: read again.
	srv.Restart(t)
	require.Eventually(t, func() bool {
		s.poll()
		return len(testutil.Collect(t, reader).Find(semconv.TPUMemoryUsage.Name)) == 1
	}, 10*time.Second, 20*time.Millisecond)
}

func TestTPUPorts(t *testing.T) {
	files := []string{"/dev/vfio/9", "/dev/vfio/10"}
	for _, tc := range []struct {
		name    string
		holders map[int][]string
		env     map[int][]string
		want    []int
	}{
		{"no workload: the default port", nil, nil, []int{DefaultTPUMetricsPort}},
		{"the workload's ports", map[int][]string{10: files}, map[int][]string{10: {"TPU_RUNTIME_METRICS_PORTS=9000, 9001"}}, []int{9000, 9001}},
		{"a workload without the variable: the default", map[int][]string{10: files[:1], 11: files[1:]},
			map[int][]string{10: {"TPU_RUNTIME_METRICS_PORTS=9000"}}, []int{9000, DefaultTPUMetricsPort}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Source{cfg: config{procRoot: tpuProcs(t, tc.holders, tc.env)}}
			b := &tpuBackend{s: s}
			found, err := tpu.Discover(tputest.V5e(2))
			require.NoError(t, err)
			for _, f := range found {
				b.devs = append(b.devs, &tpuDevice{t: f})
			}
			assert.Equal(t, tc.want, b.readPorts(time.Now()))
		})
	}
}

func TestTPUUnavailable(t *testing.T) {
	_, err := New(WithBackends(BackendTPU), withSysfsFS(tputest.Sysfs(tputest.PCI{Address: "0000:00:03.0", Vendor: "0x10de", Device: "0x2330", Accel: -1, IOMMUGroup: -1})))
	require.Error(t, err)
	assert.True(t, errors.Is(err, xpuscope.ErrUnavailable))
	assert.Contains(t, err.Error(), "gpu: no TPU: no PCI function of vendor 0x1ae0 with a TPU device id in (injected sysfs)/bus/pci/devices")
	for _, bad := range []Option{WithTPUMetricsPorts(0), WithTPUMetricsHost(""), WithTPUTimeout(0)} {
		_, err := New(WithBackends(BackendTPU), bad)
		require.Error(t, err)
		assert.False(t, errors.Is(err, xpuscope.ErrUnavailable), "a bad option is a fault: %v", err)
	}
}
