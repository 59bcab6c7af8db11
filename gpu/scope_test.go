package gpu

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xpuscope/xpuscope/internal/testutil"
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
