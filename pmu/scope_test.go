package pmu

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

// TestScope: what the Source reports, in the SDK's own data, is of the
// scope ScopeName at xpuscope.Version, each metric with the unit, kind and
// description the registry gives it. The counters are the fake opener's:
// no uncore PMU here.
func TestScope(t *testing.T) {
	src, f, _, reader := start(t, "skx", WithPeakBandwidth(38.4e9))
	for _, c := range f.all() {
		c.add(1000, 1e9, 5e8)
	}
	f.all()[0].failNext(errTest)
	src.poll()
	names := testutil.CheckScope(t, reader, ScopeName)
	assert.ElementsMatch(t, []string{
		semconv.HWCPUMemoryIO.Name, semconv.HWCPUMemoryUtilization.Name,
		semconv.XpuscopePMUCoverage.Name, semconv.XpuscopePMURunningRatio.Name, semconv.XpuscopePMUEvents.Name,
		semconv.XpuscopePMUFamilyUnknown.Name, semconv.XpuscopePMUReadErrors.Name, semconv.XpuscopePMUReopens.Name,
		semconv.XpuscopePMUSysfsSkipped.Name,
	}, names)
}
