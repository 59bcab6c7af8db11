package gpu

// Tests of the DCGM backend. Debian ships no DCGM, and its profiling
// fields need a datacenter GPU: the library is a fake libdcgm.so.4 built
// from C by the test (internal/dcgm/testdata/fakedcgm.c, whose struct
// layouts package dcgm's tests check against the binding), with DCGM's
// real entry points. The NVIDIA GPUs it joins are go-nvml mocks (h100(i)
// has the fake's UUIDs). Both load into this process: the fake is bound
// through purego, and each test builds its own copy.

import (
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/dcgm"
	"github.com/xpuscope/xpuscope/internal/dcgm/dcgmtest"
	"github.com/xpuscope/xpuscope/internal/dynlib"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

var dcgmSource = semconv.GPUMeasurementSource.String(semconv.MeasurementSourceDCGM)

// dcgmOnly keeps the DCGM backend alone, so that the host's own GPUs and
// libraries stay out; the engine is embedded unless a test says.
func dcgmOnly(lib string, opts ...Option) []Option {
	return append([]Option{WithBackends(BackendDCGM), WithDCGMLibraryPath(lib), WithDCGMHostEngine("")}, opts...)
}

// blanks, misses and unavailable read the self-metrics' points.
func selfCount(pts testutil.Points, m semconv.Metric, kvs ...attribute.KeyValue) float64 {
	sum := 0.0
	for _, p := range pts.Find(m.Name, kvs...) {
		sum += p.Value
	}
	return sum
}

func backendKV(b Backend) attribute.KeyValue { return semconv.XpuscopeGPUBackend.String(string(b)) }
func fieldKV(f string) attribute.KeyValue    { return semconv.XpuscopeGPUField.String(f) }
func reasonKV(r string) attribute.KeyValue   { return semconv.XpuscopeGPUReason.String(r) }

func TestDCGMBesideNVML(t *testing.T) {
	lib := dcgmtest.Build(t, "-DFAKE_MIG")
	gpu1 := h100(1)
	gpu1.migEnabled = true
	gpu1.fail = map[string]nvml.Return{"utilization": nvml.ERROR_NOT_SUPPORTED, "process_utilization": nvml.ERROR_NOT_SUPPORTED}
	small := &fakeGPU{uuid: "MIG-11111111-2222-3333-4444-555555555555", name: "NVIDIA H100 80GB HBM3 MIG 1g.10gb", gi: 9, ci: 0,
		memory: nvml.Memory_v2{Total: 10 << 30, Used: 1 << 30, Free: 9 << 30}}
	big := &fakeGPU{uuid: "MIG-66666666-7777-8888-9999-000000000000", name: "NVIDIA H100 80GB HBM3 MIG 3g.40gb", gi: 2, ci: 0,
		memory: nvml.Memory_v2{Total: 40 << 30, Used: 30 << 30, Free: 10 << 30}}
	gpu1.instances = []*fakeGPU{small, big}
	res := newFakeResolver()
	pod := []attribute.KeyValue{semconv.K8sNamespaceName.String("ml"), semconv.K8sPodName.String("trainer-0")}
	res.devices[h100(0).uuid] = pod
	s, reader := start(t, &fakeSystem{gpus: []*fakeGPU{h100(0), gpu1}},
		WithBackends(BackendNVML, BackendDCGM), WithDCGMLibraryPath(lib), WithDCGMHostEngine(""),
		WithProcRoot(t.TempDir()), WithResolver(res))

	pts := testutil.Collect(t, reader)
	g0, g1 := hwID(h100(0)), hwID(gpu1)

	// The DCGM series of GPU 0 carry NVML's identity of it, its pod, and
	// gpu.measurement.source=dcgm.
	nvmlAttrs := pts.One(t, semconv.HWPower.Name, g0).Attrs
	sm := pts.One(t, semconv.GPUSMUtilization.Name, g0)
	want := map[string]string{string(semconv.GPUMeasurementSource): semconv.MeasurementSourceDCGM}
	for k, v := range nvmlAttrs {
		want[k] = v
	}
	assert.Equal(t, want, sm.Attrs, "NVML's attributes and the pod's, and the source")
	assert.Equal(t, "trainer-0", sm.Get(semconv.K8sPodName))
	assert.Equal(t, 0.75, sm.Value)

	for _, tc := range []struct {
		m    semconv.Metric
		kvs  []attribute.KeyValue
		want [2]float64 // GPU 0, GPU 1; -1: none
	}{
		{semconv.GPUGraphicsUtilization, nil, [2]float64{0.875, 0.5}},
		{semconv.GPUSMUtilization, nil, [2]float64{0.75, 0.4375}},
		{semconv.GPUSMOccupancy, nil, [2]float64{0.5, 0.125}},
		{semconv.GPUPipeUtilization, kv(semconv.GPUPipe, semconv.PipeTensor), [2]float64{0.625, 0.3125}},
		{semconv.GPUPipeUtilization, kv(semconv.GPUPipe, semconv.PipeFP64), [2]float64{0.0625, -1}},
		{semconv.GPUPipeUtilization, kv(semconv.GPUPipe, semconv.PipeFP32), [2]float64{0.375, 0.1875}},
		{semconv.GPUPipeUtilization, kv(semconv.GPUPipe, semconv.PipeFP16), [2]float64{-1, 0.03125}},
		{semconv.GPUDRAMUtilization, nil, [2]float64{0.25, -1}},
		{semconv.GPULinkThroughput, link(semconv.LinkPCIe, semconv.DirectionTransmit), [2]float64{1.5e9, 1e6}},
		{semconv.GPULinkThroughput, link(semconv.LinkPCIe, semconv.DirectionReceive), [2]float64{2.5e9, 3e6}},
		{semconv.GPULinkThroughput, link(semconv.LinkNVLink, semconv.DirectionTransmit), [2]float64{40e9, 0}},
		{semconv.GPULinkThroughput, link(semconv.LinkNVLink, semconv.DirectionReceive), [2]float64{-1, 0}},
	} {
		for i, id := range []attribute.KeyValue{g0, g1} {
			got := filterNoParent(pts.Find(tc.m.Name, append([]attribute.KeyValue{id}, tc.kvs...)...))
			if tc.want[i] < 0 {
				assert.Empty(t, got, "%s %v GPU %d", tc.m.Name, tc.kvs, i)
				continue
			}
			if assert.Len(t, got, 1, "%s %v GPU %d", tc.m.Name, tc.kvs, i) {
				assert.Equal(t, tc.want[i], got[0].Value, "%s %v GPU %d", tc.m.Name, tc.kvs, i)
				assert.Equal(t, semconv.MeasurementSourceDCGM, got[0].Get(semconv.GPUMeasurementSource))
			}
		}
	}

	// Blank samples, by field and reason; the field GPU 1 cannot count.
	blank := semconv.XpuscopeGPUSamplesBlank
	assert.Equal(t, 1.0, selfCount(pts, blank, g0, backendKV(BackendDCGM), fieldKV("DCGM_FI_PROF_PIPE_FP16_ACTIVE"), reasonKV(semconv.GPUReasonBlank)))
	assert.Equal(t, 1.0, selfCount(pts, blank, g0, fieldKV("DCGM_FI_PROF_NVLINK_RX_BYTES"), reasonKV(semconv.GPUReasonNotSupported)))
	assert.Equal(t, 1.0, selfCount(pts, blank, g1, fieldKV("DCGM_FI_PROF_DRAM_ACTIVE"), reasonKV(semconv.GPUReasonNaN)))
	for _, in := range []*fakeGPU{small, big} {
		assert.Equal(t, 1.0, selfCount(pts, blank, hwID(in), fieldKV("DCGM_FI_PROF_DRAM_ACTIVE"), reasonKV(semconv.GPUReasonNaN)), "MIG: as its GPU")
	}
	assert.Equal(t, 5.0, selfCount(pts, blank), "no other blank")
	assert.Equal(t, 1.0, selfCount(pts, semconv.XpuscopeGPUFieldUnavailable, g1, fieldKV("DCGM_FI_PROF_PIPE_FP64_ACTIVE"), reasonKV(semconv.GPUReasonCapacity)))
	assert.Equal(t, 1.0, selfCount(pts, semconv.XpuscopeGPUFieldUnavailable))
	assert.Empty(t, pts.Find(semconv.XpuscopeGPUScrapeMisses.Name))

	// MIG compute instances, under NVML's MIG- UUIDs; PCIe and NVLink are
	// the GPU's alone.
	for _, tc := range []struct {
		in    *fakeGPU
		scale float64
	}{{small, 0.5}, {big, 0.25}} {
		p := pts.One(t, semconv.GPUSMUtilization.Name, hwID(tc.in))
		assert.Equal(t, 0.4375*tc.scale, p.Value)
		assert.Equal(t, gpu1.uuid, p.Get(semconv.HWParent))
		assert.Equal(t, semconv.MeasurementSourceDCGM, p.Get(semconv.GPUMeasurementSource))
		assert.Equal(t, pts.One(t, semconv.HWGPUMemoryUsage.Name, hwID(tc.in)).Get(semconv.GPUMIGProfile), p.Get(semconv.GPUMIGProfile))
		assert.Empty(t, pts.Find(semconv.GPULinkThroughput.Name, hwID(tc.in)))
	}

	// Listed once, as NVML found them.
	devs := s.Devices()
	require.Len(t, devs, 4, "two GPUs and two MIG instances")
	for _, d := range devs {
		assert.NotContains(t, d.UUID, "/gi")
	}
	st := s.Status()
	require.Len(t, st.Backends, 2)
	assert.Equal(t, BackendStatus{Backend: BackendNVML, Active: true, Devices: 2}, st.Backends[0])
	d := st.Backends[1]
	assert.True(t, d.Active)
	assert.Equal(t, 4, d.Devices)
	assert.Contains(t, d.Detail, "embedded host engine")
	assert.Contains(t, d.Detail, "GPU 0 GPU-00000000-aaaa-bbbb-cccc-dddddddddddd: 12 of 12 profiling fields")
	assert.Contains(t, d.Detail, "GPU 1 GPU-00000001-aaaa-bbbb-cccc-dddddddddddd: 11 of 12 profiling fields, 2 MIG compute instance(s) (not watched: DCGM_FI_PROF_PIPE_FP64_ACTIVE: capacity)")

	// Another poll counts the blanks again.
	s.poll()
	pts = testutil.Collect(t, reader)
	assert.Equal(t, 10.0, selfCount(pts, blank))
}

// filterNoParent keeps the points of GPUs, not MIG instances.
func filterNoParent(ps testutil.Points) testutil.Points {
	var out testutil.Points
	for _, p := range ps {
		if !p.Has(semconv.HWParent) {
			out = append(out, p)
		}
	}
	return out
}

func TestDCGMAlone(t *testing.T) {
	lib := dcgmtest.Build(t)
	s, reader := newSource(t, dcgmOnly(lib)...)
	pts := testutil.Collect(t, reader)
	p := pts.One(t, semconv.GPUSMOccupancy.Name, semconv.HWID.String("GPU-00000001-aaaa-bbbb-cccc-dddddddddddd"))
	assert.Equal(t, map[string]string{
		string(semconv.HWID):                 "GPU-00000001-aaaa-bbbb-cccc-dddddddddddd",
		string(semconv.HWName):               "NVIDIA H100 80GB HBM3",
		string(semconv.HWVendor):             semconv.VendorNVIDIA,
		string(semconv.HWType):               semconv.HWTypeGPU,
		string(semconv.HWDriverVersion):      "550.54.15",
		string(semconv.GPUIndex):             "1",
		string(semconv.GPUPCIAddress):        "0000:19:00.0",
		string(semconv.GPUMeasurementSource): semconv.MeasurementSourceDCGM,
	}, p.Attrs, "DCGM's own identity: DCGM_FI_DEV_UUID, _NAME, _PCI_BUSID and DCGM_FI_DRIVER_VERSION")
	assert.Equal(t, 0.125, p.Value)
	assert.Len(t, s.Devices(), 2, "without NVML, DCGM's GPUs are the Source's")
	assert.Equal(t, "0000:18:00.0", s.Devices()[0].PCIAddress)
}

func TestDCGMProfilingBusy(t *testing.T) {
	lib := dcgmtest.Build(t, "-DPROF_BUSY")
	var busy func(int32)
	var state func(*[8]int64)
	testutil.FakeHook(t, lib, "xpuscope_fake_dcgm_busy", &busy)
	testutil.FakeHook(t, lib, "xpuscope_fake_dcgm_state", &state)
	s, reader := newSource(t, dcgmOnly(lib)...)
	d := s.Status().Backends[0]
	assert.True(t, d.Active, "a profiler holding the counters is no reason to give up")
	assert.Contains(t, d.Detail, "profiling busy: another profiler (Nsight, CUPTI, another host engine) holds the counters (DCGM_ST_IN_USE)")
	misses := func() float64 {
		return selfCount(testutil.Collect(t, reader), semconv.XpuscopeGPUScrapeMisses, backendKV(BackendDCGM), reasonKV(semconv.GPUReasonProfilingBusy))
	}
	assert.Equal(t, 2.0, misses(), "New's poll: one per GPU")
	s.poll()
	assert.Equal(t, 4.0, misses())
	assert.Empty(t, testutil.Collect(t, reader).Find(semconv.GPUSMUtilization.Name))

	// The other profiler is done: the next poll watches and reads.
	busy(0)
	s.poll()
	pts := testutil.Collect(t, reader)
	assert.Equal(t, 4.0, selfCount(pts, semconv.XpuscopeGPUScrapeMisses))
	assert.Len(t, pts.Find(semconv.GPUSMUtilization.Name), 2)
	assert.NotContains(t, s.Status().Backends[0].Detail, "busy")

	// It comes back: DCGM stores blanks meanwhile, counted as such.
	busy(1)
	s.poll()
	pts = testutil.Collect(t, reader)
	assert.Equal(t, 2.0, selfCount(pts, semconv.XpuscopeGPUSamplesBlank, fieldKV("DCGM_FI_PROF_SM_ACTIVE"), reasonKV(semconv.GPUReasonBlank)))
	assert.Empty(t, pts.Find(semconv.GPUSMUtilization.Name), "no value while the counters are held")
	var st [8]int64
	state(&st)
	assert.Equal(t, int64(1), st[1], "embedded")
}

func TestDCGMFailuresMidRun(t *testing.T) {
	lib := dcgmtest.Build(t)
	var fail func(int32)
	var age func(int64)
	testutil.FakeHook(t, lib, "xpuscope_fake_dcgm_fail", &fail)
	testutil.FakeHook(t, lib, "xpuscope_fake_dcgm_age", &age)
	s, reader := newSource(t, dcgmOnly(lib)...)
	fail(-18) // DCGM_ST_GPU_IS_LOST
	s.poll()
	pts := testutil.Collect(t, reader)
	assert.Equal(t, 2.0, selfCount(pts, semconv.XpuscopeGPUScrapeMisses, reasonKV("DCGM_ST_GPU_IS_LOST")))
	assert.Empty(t, pts.Find(semconv.GPUSMUtilization.Name), "nothing read this cycle")
	fail(0)
	s.poll()
	pts = testutil.Collect(t, reader)
	assert.Len(t, pts.Find(semconv.GPUSMUtilization.Name), 2, "back the next cycle")
	assert.Equal(t, 2.0, selfCount(pts, semconv.XpuscopeGPUScrapeMisses))

	// Values the host engine stopped updating are stale: three poll
	// intervals (an hour here) and some.
	age(4 * 3600 * 1e6)
	s.poll()
	pts = testutil.Collect(t, reader)
	assert.Empty(t, pts.Find(semconv.GPUSMUtilization.Name))
	assert.Equal(t, 2.0, selfCount(pts, semconv.XpuscopeGPUSamplesBlank, fieldKV("DCGM_FI_PROF_SM_ACTIVE"), reasonKV(semconv.GPUReasonStale)))
}

func TestDCGMHostEngine(t *testing.T) {
	lib := dcgmtest.Build(t)
	var connected func(out *byte, n uint32, isUnix *uint32) int32
	var fail func(int32)
	var state func(*[8]int64)
	testutil.FakeHook(t, lib, "xpuscope_fake_dcgm_connected", &connected)
	testutil.FakeHook(t, lib, "xpuscope_fake_dcgm_fail", &fail)
	testutil.FakeHook(t, lib, "xpuscope_fake_dcgm_state", &state)
	where := func() (string, uint32) {
		var buf [256]byte
		var isUnix uint32
		if connected(&buf[0], uint32(len(buf)), &isUnix) == 0 {
			return "", 0
		}
		return dynlib.BufString(buf[:]), isUnix
	}

	t.Run("configured", func(t *testing.T) {
		s, reader := newSource(t, WithBackends(BackendDCGM), WithDCGMLibraryPath(lib), WithDCGMHostEngine("unix:///run/nvidia/hostengine.sock"))
		addr, isUnix := where()
		assert.Equal(t, "/run/nvidia/hostengine.sock", addr)
		assert.Equal(t, uint32(1), isUnix)
		assert.Contains(t, s.Status().Backends[0].Detail, "nv-hostengine at unix:///run/nvidia/hostengine.sock")
		// The connection breaks: counted, then the backend connects again
		// and watches anew.
		fail(int32(dcgm.ConnectionNotValid))
		s.poll()
		fail(0)
		s.poll()
		pts := testutil.Collect(t, reader)
		assert.Equal(t, 2.0, selfCount(pts, semconv.XpuscopeGPUScrapeMisses, reasonKV("DCGM_ST_CONNECTION_NOT_VALID")))
		assert.Len(t, pts.Find(semconv.GPUSMUtilization.Name), 2, "read again after reconnecting")
	})
	var st [8]int64
	state(&st)
	assert.Equal(t, [3]int64{0, 0, 0}, [3]int64(st[:3]), "Close disconnected and shut DCGM down")
	assert.Zero(t, st[3]+st[4], "no group left behind")

	t.Run("unreachable", func(t *testing.T) {
		_, err := New(WithBackends(BackendDCGM), WithDCGMLibraryPath(lib), WithDCGMHostEngine("no-hostengine:5555"))
		require.ErrorIs(t, err, xpuscope.ErrUnavailable)
		assert.Contains(t, err.Error(), "nv-hostengine at no-hostengine:5555: dcgmConnect_v2: DCGM_ST_CONNECTION_NOT_VALID")
	})

	t.Run("found on its socket", func(t *testing.T) {
		sock := filepath.Join(t.TempDir(), "nv-hostengine")
		l, err := net.Listen("unix", sock)
		require.NoError(t, err)
		defer l.Close()
		s, _ := newSource(t, WithBackends(BackendDCGM), WithDCGMLibraryPath(lib), withDCGMProbe(sock, ""))
		addr, isUnix := where()
		assert.Equal(t, sock, addr)
		assert.Equal(t, uint32(1), isUnix)
		assert.Contains(t, s.Status().Backends[0].Detail, "nv-hostengine at unix://"+sock)
	})

	t.Run("found on its port", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer l.Close()
		newSource(t, WithBackends(BackendDCGM), WithDCGMLibraryPath(lib), withDCGMProbe(filepath.Join(t.TempDir(), "none"), l.Addr().String()))
		addr, isUnix := where()
		assert.Equal(t, l.Addr().String(), addr)
		assert.Zero(t, isUnix)
	})

	t.Run("none answers: embedded", func(t *testing.T) {
		s, _ := newSource(t, WithBackends(BackendDCGM), WithDCGMLibraryPath(lib), withDCGMProbe(filepath.Join(t.TempDir(), "none"), ""))
		addr, _ := where()
		assert.Empty(t, addr)
		assert.Contains(t, s.Status().Backends[0].Detail, "embedded host engine")
	})
}

func TestDCGMMissingHierarchy(t *testing.T) {
	lib := dcgmtest.Build(t, "-DFAKE_MIG", "-DOMIT_HIERARCHY")
	s, reader := newSource(t, dcgmOnly(lib)...)
	pts := testutil.Collect(t, reader)
	assert.Len(t, pts.Find(semconv.GPUSMUtilization.Name), 2, "the GPUs, without their MIG instances")
	assert.Contains(t, s.Status().Backends[0].Detail, "dcgmGetGpuInstanceHierarchy: SYMBOL_MISSING: MIG instances not read")
}

func TestDCGMUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts func(t *testing.T) []Option
		want string
	}{
		{"no library", func(t *testing.T) []Option {
			return []Option{WithBackends(BackendDCGM), WithDCGMLibraryPath(filepath.Join(t.TempDir(), "libdcgm.so.4"))}
		}, "DCGM library"},
		{"not DCGM", func(*testing.T) []Option {
			return []Option{WithBackends(BackendDCGM), WithDCGMLibraryPath("libc.so.6")}
		},
			"libc.so.6 is not a usable DCGM library: it lacks dcgmInit"},
		{"init fails", func(t *testing.T) []Option { return dcgmOnly(dcgmtest.Build(t, "-DINIT_STATUS=-7")) },
			"dcgmInit: DCGM_ST_INIT_ERROR (-7)"},
		{"no profiling", func(t *testing.T) []Option { return dcgmOnly(dcgmtest.Build(t, "-DPROF_UNSUPPORTED")) },
			"watches no profiling field of its 2 GPU(s): profiling: DCGM_ST_PROFILING_NOT_SUPPORTED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.opts(t)...)
			require.Error(t, err)
			assert.True(t, errors.Is(err, xpuscope.ErrUnavailable), "%v", err)
			assert.Contains(t, err.Error(), tc.want)
			assert.True(t, strings.HasPrefix(err.Error(), "gpu: "), err.Error())
		})
	}
}
