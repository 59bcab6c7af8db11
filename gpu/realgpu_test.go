//go:build gpu

package gpu_test

// Tier 4: runs only with -tags gpu, on a machine with an NVIDIA GPU and
// its driver. It checks what the Source reports against nvidia-smi, which
// reads the same driver through its own path.

import (
	"encoding/csv"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/xpuscope/xpuscope/gpu"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

func smi(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("nvidia-smi",
		"--query-gpu=uuid,memory.total,memory.used,temperature.gpu,power.draw,clocks.sm,pci.bus_id",
		"--format=csv,noheader,nounits").Output()
	require.NoError(t, err, "nvidia-smi")
	rows, err := csv.NewReader(strings.NewReader(string(out))).ReadAll()
	require.NoError(t, err)
	byUUID := map[string][]string{}
	for _, r := range rows {
		for i := range r {
			r[i] = strings.TrimSpace(r[i])
		}
		byUUID[r[0]] = r
	}
	return byUUID
}

func num(t *testing.T, s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err, "%q", s)
	return v
}

func TestAgainstNvidiaSMI(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	src, err := gpu.New(gpu.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	require.NoError(t, err)
	defer src.Close()
	pts := testutil.Collect(t, reader)
	want := smi(t)
	require.Len(t, src.Devices(), len(want), "GPU count")

	for _, d := range src.Devices() {
		row, ok := want[d.UUID]
		require.True(t, ok, "nvidia-smi does not list %s", d.UUID)
		id := semconv.HWID.String(d.UUID)
		mib := float64(1 << 20)
		limit := pts.One(t, semconv.HWGPUMemoryLimit.Name, id).Value
		require.InDelta(t, num(t, row[1]), limit/mib, 1, "%s memory.total MiB", d.UUID)
		require.InDelta(t, num(t, row[2]), pts.One(t, semconv.HWGPUMemoryUsage.Name, id).Value/mib, 512, "%s memory.used MiB", d.UUID)
		require.InDelta(t, num(t, row[3]), pts.One(t, semconv.HWTemperature.Name, id).Value, 5, "%s temperature", d.UUID)
		if p := num(t, row[4]); !math.IsNaN(p) {
			require.InDelta(t, p, pts.One(t, semconv.HWPower.Name, id).Value, math.Max(30, 0.2*p), "%s power W", d.UUID)
		}
		require.InDelta(t, num(t, row[5])*1e6, pts.One(t, semconv.GPUClockFrequency.Name, id, semconv.GPUClockDomain.String(semconv.ClockDomainSM)).Value, 500e6, "%s SM clock", d.UUID)
		require.Equal(t, strings.ToLower(row[6][len(row[6])-12:]), d.PCIAddress, "%s PCI address", d.UUID)
	}
}
