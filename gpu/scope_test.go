package gpu

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xpuscope/xpuscope/internal/dcgm/dcgmtest"
	"github.com/xpuscope/xpuscope/internal/rdc/rdctest"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/tpu/tputest"
	"github.com/xpuscope/xpuscope/semconv"
)

// TestScope: what the Source reports, in the SDK's own data, is of the
// scope ScopeName at xpuscope.Version, each metric with the unit, kind and
// buckets the registry gives it. The GPUs are go-nvml mocks: no NVIDIA GPU
// here.
func TestScope(t *testing.T) {
	_, reader := start(t, &fakeSystem{gpus: []*fakeGPU{h100(0), h100(1)}})
	names := testutil.CheckScope(t, reader, ScopeName)
	assert.Subset(t, names, []string{
		semconv.HWGPUUtilization.Name, semconv.HWGPUMemoryUsage.Name, semconv.HWGPUMemoryLimit.Name,
		semconv.HWPower.Name, semconv.HWEnergy.Name, semconv.HWTemperature.Name, semconv.GPUClockFrequency.Name,
	})
}

// TestScopeDCGM: the DCGM backend's metrics and self-metrics, in the SDK's
// data, as the registry gives them. DCGM is the fake library built by the
// test (no DCGM in Debian, no GPU here).
func TestScopeDCGM(t *testing.T) {
	_, reader := newSource(t, dcgmOnly(dcgmtest.Build(t, "-DFAKE_MIG"))...)
	names := testutil.CheckScope(t, reader, ScopeName)
	assert.Subset(t, names, []string{
		semconv.GPUGraphicsUtilization.Name, semconv.GPUSMUtilization.Name, semconv.GPUSMOccupancy.Name,
		semconv.GPUPipeUtilization.Name, semconv.GPUDRAMUtilization.Name, semconv.GPULinkThroughput.Name,
		semconv.XpuscopeGPUSamplesBlank.Name, semconv.XpuscopeGPUFieldUnavailable.Name,
	})
}

// TestScopeRDC: the RDC backend's metrics, with the fake RDC library.
func TestScopeRDC(t *testing.T) {
	_, reader := newSource(t, WithBackends(BackendRDC), WithRDCLibraryPath(rdctest.Build(t)), withSysfsFS(rocmFixture(t)))
	names := testutil.CheckScope(t, reader, ScopeName)
	assert.Subset(t, names, []string{
		semconv.HWGPUUtilization.Name, semconv.HWGPUMemoryUsage.Name, semconv.HWPower.Name, semconv.HWErrors.Name,
		semconv.GPULinkIO.Name, semconv.GPUSMOccupancy.Name, semconv.GPUWaves.Name, semconv.GPUMemoryThroughput.Name,
		semconv.XpuscopeGPUFieldUnavailable.Name,
	})
}

// TestScopeTPU: the TPU backend's metrics, from a loopback service.
func TestScopeTPU(t *testing.T) {
	srv := tputest.Start(t, v4Metrics(2)...)
	_, reader := newSource(t, WithBackends(BackendTPU), withSysfsFS(tputest.V4(2)), WithProcRoot(t.TempDir()), WithTPUMetricsPorts(srv.Port))
	names := testutil.CheckScope(t, reader, ScopeName)
	assert.Subset(t, names, []string{
		semconv.TPUMemoryUsage.Name, semconv.TPUMemoryLimit.Name, semconv.TPUTensorCoreUtilization.Name,
		semconv.TPUHLOQueueSize.Name, semconv.TPUHLOExecutionDuration.Name,
	})
}
