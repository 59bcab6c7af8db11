package gpu

// Tests of the RDC backend. Debian ships no RDC, and its fields need an
// AMD GPU: the library is a fake librdc_bootstrap.so built from C by the
// test (internal/rdc/testdata/fakerdc.c, whose struct layouts package
// rdc's tests check against the binding), with RDC's real entry points.
// The AMD GPUs it joins are those of the fake ROCm SMI library, over the
// sysfs fixture of its cards.

import (
	"errors"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/rdc/rdctest"
	"github.com/xpuscope/xpuscope/internal/rocmsmi/rocmsmitest"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

var rdcSource = semconv.GPUMeasurementSource.String(semconv.MeasurementSourceRDC)

func TestRDCBesideROCmSMI(t *testing.T) {
	lib := rdctest.Build(t)
	var state func(*[6]int64)
	testutil.FakeHook(t, lib, "xpuscope_fake_rdc_state", &state)
	procs := amdProcRoot(t, map[uint32]string{900: "/usr/bin/torchrun", 901: "/usr/local/bin/ollama"}, "unused")
	s, reader := newSource(t, WithBackends(BackendROCmSMI, BackendRDC), WithROCmSMILibraryPath(rocmsmitest.Build(t)),
		WithRDCLibraryPath(lib), withSysfsFS(rocmFixture(t)), WithProcRoot(procs))
	pts := testutil.Collect(t, reader)
	a, b := semconv.HWID.String(mi300xID), semconv.HWID.String(w7900ID)
	general := semconv.HWGPUTask.String(semconv.GPUTaskGeneral)

	// RDC's series of each GPU: ROCm SMI's identity of the GPU of the same
	// index, and gpu.measurement.source=rdc.
	want := amdAttrs(mi300xID, "AMD Instinct MI300X (fake)", "6.7.0-fake", 0, "0000:0c:00.0")
	want[string(semconv.GPUMeasurementSource)] = semconv.MeasurementSourceRDC
	assert.Equal(t, want, pts.One(t, semconv.HWPower.Name, a, rdcSource).Attrs)
	assert.Len(t, pts.Find(semconv.HWPower.Name, a), 2, "ROCm SMI's and RDC's, side by side")

	one := func(m semconv.Metric, id attribute.KeyValue, kvs ...attribute.KeyValue) float64 {
		t.Helper()
		return pts.One(t, m.Name, append([]attribute.KeyValue{id, rdcSource}, kvs...)...).Value
	}
	none := func(m semconv.Metric, id attribute.KeyValue, kvs ...attribute.KeyValue) {
		t.Helper()
		assert.Empty(t, pts.Find(m.Name, append([]attribute.KeyValue{id, rdcSource}, kvs...)...), m.Name)
	}
	assert.InDelta(t, 0.87, one(semconv.HWGPUUtilization, a, general), 1e-12)
	assert.InDelta(t, 0.12, one(semconv.HWGPUUtilization, b, general), 1e-12)
	assert.Equal(t, float64(60<<30), one(semconv.HWGPUMemoryUsage, a))
	assert.Equal(t, float64(192<<30), one(semconv.HWGPUMemoryLimit, a))
	assert.Equal(t, float64(132<<30), one(semconv.GPUMemoryFree, a))
	assert.Equal(t, float64(2<<30), one(semconv.HWGPUMemoryUsage, b))
	assert.InDelta(t, 512.0, one(semconv.HWPower, a), 1e-9, "µW → W")
	none(semconv.HWPower, b) // amd-smi's UINT64_MAX
	assert.Equal(t, 5.0, one(semconv.HWErrors, a, semconv.ErrorType.String(semconv.ErrorCorrected)))
	assert.Equal(t, 1.0, one(semconv.HWErrors, a, semconv.ErrorType.String(semconv.ErrorUncorrected)))
	none(semconv.HWErrors, b)
	xgmi := semconv.GPULinkType.String(semconv.LinkXGMI)
	rx, tx := semconv.NetworkIODir.String(semconv.DirectionReceive), semconv.NetworkIODir.String(semconv.DirectionTransmit)
	assert.Equal(t, 1000000.0*1024, one(semconv.GPULinkIO, a, xgmi, rx), "KB → bytes")
	assert.Equal(t, 2000000.0*1024, one(semconv.GPULinkIO, a, xgmi, tx))
	none(semconv.GPULinkIO, b)
	assert.InDelta(t, 0.455, one(semconv.GPUSMOccupancy, a), 1e-12)
	assert.InDelta(t, 0.2, one(semconv.GPUSMOccupancy, b), 1e-12)
	assert.Equal(t, 123456.0, one(semconv.GPUWaves, a))
	tensor := semconv.GPUPipe.String(semconv.PipeTensor)
	assert.InDelta(t, 0.625, one(semconv.GPUPipeUtilization, a, tensor), 1e-12)
	assert.InDelta(t, 0.3125, one(semconv.GPUPipeUtilization, b, tensor), 1e-12)
	read, write := semconv.GPUMemoryOperation.String(semconv.MemoryRead), semconv.GPUMemoryOperation.String(semconv.MemoryWrite)
	assert.Equal(t, 1500.0*1024000, one(semconv.GPUMemoryThroughput, a, read), "KiB/ms → B/s")
	assert.Equal(t, 500.0*1024000, one(semconv.GPUMemoryThroughput, a, write))
	none(semconv.GPUMemoryThroughput, b)
	none(semconv.GPUSMUtilization, a) // the fake's MI300X has no such counter
	none(semconv.GPUSMUtilization, b)

	// What each GPU cannot be watched for: the W7900's counters hold three
	// profiling fields; what either reports RDC_ST_NOT_SUPPORTED.
	un := semconv.XpuscopeGPUFieldUnavailable
	assert.Equal(t, 1.0, selfCount(pts, un, a, backendKV(BackendRDC), fieldKV("RDC_FI_PROF_SM_ACTIVE"), reasonKV("RDC_ST_NOT_SUPPORTED")))
	for _, f := range []string{"RDC_FI_PROF_EVAL_MEM_R_BW", "RDC_FI_PROF_EVAL_MEM_W_BW", "RDC_FI_PROF_SM_ACTIVE"} {
		assert.Equal(t, 1.0, selfCount(pts, un, b, fieldKV(f), reasonKV(semconv.GPUReasonCapacity)), f)
	}
	for _, f := range []string{"RDC_FI_ECC_CORRECT_TOTAL", "RDC_FI_ECC_UNCORRECT_TOTAL", "RDC_FI_XGMI_TOTAL_READ_KB", "RDC_FI_XGMI_TOTAL_WRITE_KB"} {
		assert.Equal(t, 1.0, selfCount(pts, un, b, fieldKV(f), reasonKV("RDC_ST_NOT_SUPPORTED")), f)
	}
	assert.Equal(t, 8.0, selfCount(pts, un))
	assert.Equal(t, 1.0, selfCount(pts, semconv.XpuscopeGPUSamplesBlank, b, backendKV(BackendRDC), fieldKV("RDC_FI_POWER_USAGE"), reasonKV(semconv.GPUReasonInvalid)))
	assert.Equal(t, 1.0, selfCount(pts, semconv.XpuscopeGPUSamplesBlank))
	assert.Empty(t, pts.Find(semconv.XpuscopeGPUScrapeMisses.Name))

	// The next poll asks only for what each GPU can count: 13 fields of
	// the MI300X, 7 of the W7900.
	var before, after [6]int64
	state(&before)
	s.poll()
	state(&after)
	assert.Equal(t, int64(20), after[5]-before[5], "rdc_field_get_latest_value calls")
	pts = testutil.Collect(t, reader)
	assert.Equal(t, 8.0, selfCount(pts, un), "dropped once")
	assert.Equal(t, 2.0, selfCount(pts, semconv.XpuscopeGPUSamplesBlank))

	assert.Len(t, s.Devices(), 2, "listed once")
	st := s.Status()
	require.Len(t, st.Backends, 2)
	r := st.Backends[1]
	assert.Equal(t, BackendRDC, r.Backend)
	assert.True(t, r.Active)
	assert.Equal(t, 2, r.Devices)
	assert.Contains(t, r.Detail, "embedded agent; GPU 0 "+mi300xID+": 13 of 14 fields (not watched: RDC_FI_PROF_SM_ACTIVE: RDC_ST_NOT_SUPPORTED)")
	assert.Contains(t, r.Detail, "GPU 1 "+w7900ID+": 7 of 14 fields (not watched: RDC_FI_PROF_EVAL_MEM_R_BW: capacity")
}

func TestRDCAlone(t *testing.T) {
	s, reader := newSource(t, WithBackends(BackendRDC), WithRDCLibraryPath(rdctest.Build(t)), withSysfsFS(rocmFixture(t)))
	pts := testutil.Collect(t, reader)
	p := pts.One(t, semconv.GPUSMOccupancy.Name, semconv.HWID.String("rdc:1"))
	assert.Equal(t, "AMD Radeon PRO W7900 (fake)", p.Get(semconv.HWName), "RDC's own name, rdc_device_get_attributes")
	assert.Equal(t, "1", p.Get(semconv.GPUIndex))
	assert.Equal(t, []string{"rdc:0", "rdc:1"}, []string{s.Devices()[0].UUID, s.Devices()[1].UUID})
}

func TestRDCFailuresMidRun(t *testing.T) {
	lib := rdctest.Build(t)
	var fail func(uint32)
	testutil.FakeHook(t, lib, "xpuscope_fake_rdc_fail", &fail)
	s, reader := newSource(t, WithBackends(BackendRDC), WithRDCLibraryPath(lib), withSysfsFS(rocmFixture(t)))
	fail(13) // RDC_ST_NO_DATA
	s.poll()
	pts := testutil.Collect(t, reader)
	assert.Equal(t, 2.0, selfCount(pts, semconv.XpuscopeGPUScrapeMisses, backendKV(BackendRDC), reasonKV("RDC_ST_NO_DATA")), "one a GPU")
	assert.Equal(t, 20.0, selfCount(pts, semconv.XpuscopeGPUSamplesBlank, reasonKV("RDC_ST_NO_DATA")), "one a field")
	assert.Empty(t, pts.Find(semconv.GPUSMOccupancy.Name))
	fail(0)
	s.poll()
	pts = testutil.Collect(t, reader)
	assert.Len(t, pts.Find(semconv.GPUSMOccupancy.Name), 2, "back the next cycle")
}

func TestRDCUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts func(t *testing.T) []Option
		want string
	}{
		{"no AMD GPU", func(t *testing.T) []Option {
			return []Option{WithBackends(BackendRDC), WithRDCLibraryPath(rdctest.Build(t)), withSysfsFS(fstest.MapFS{})}
		}, "no AMD GPU"},
		{"no library", func(t *testing.T) []Option {
			return []Option{WithBackends(BackendRDC), WithRDCLibraryPath(filepath.Join(t.TempDir(), "librdc_bootstrap.so.1")), withSysfsFS(rocmFixture(t))}
		}, "RDC library"},
		{"no librdc.so", func(t *testing.T) []Option {
			return []Option{WithBackends(BackendRDC), WithRDCLibraryPath(rdctest.Build(t, "-DSTART_STATUS=3")), withSysfsFS(rocmFixture(t))}
		}, "rdc_start_embedded: RDC_ST_FAIL_LOAD_MODULE (3)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.opts(t)...)
			require.Error(t, err)
			assert.True(t, errors.Is(err, xpuscope.ErrUnavailable), "%v", err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
