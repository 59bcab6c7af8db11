package main

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/perfevent"
)

// -check's pmu line: on this virtual machine, unavailable, saying that no
// memory-controller PMU is there, which PMUs are, and why; on a machine
// with one, active or unavailable for the privilege it lacks, never a
// fault.
func TestCheckPMU(t *testing.T) {
	stdout, stderr, code := output(t, agent(t, "-check"))
	require.NotEqual(t, 1, code, "stderr: %s", stderr)
	line := ""
	for l := range strings.SplitSeq(stdout, "\n") {
		if strings.HasPrefix(l, "pmu ") {
			line = l
		}
	}
	require.NotEmpty(t, line, "no pmu line in -check's output:\n%s", stdout)
	names, err := perfevent.ListPMUs(os.DirFS("/sys"))
	require.NoError(t, err)
	memory := slices.ContainsFunc(names, func(n string) bool {
		return strings.HasPrefix(n, "uncore_imc") || strings.HasPrefix(n, "amd_umc_") || n == "amd_df"
	})
	if !memory {
		assert.Regexp(t, `^pmu +unavailable +pmu: no memory-controller PMU in /sys/bus/event_source/devices \(.*found `+strings.Join(names, ", ")+`\): `, line)
		return
	}
	assert.Regexp(t, `^pmu +(active +.* counters open|unavailable +pmu: .*(CAP_PERFMON|no memory-bandwidth event))`, line)
}
