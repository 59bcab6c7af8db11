package gpu_test

// These tests load real shared libraries into the gpu Source:
//
//   - internal/testutil/testdata/fakenvml.c, built with gcc by
//     testutil.BuildFakeNVML, is a fake libnvidia-ml.so.1.
//     It stands in for the NVIDIA GPUs that this machine (and CI) lacks:
//     it reports two GPUs with fixed values, so that every read, unit
//     conversion and attribute of the Source can be checked end to end
//     through go-nvml's cgo bindings.
//   - Debian's libnvidia-ml1 is the real NVML library. Without a GPU and
//     its kernel driver it fails nvmlInit the way a GPU-less node does.
//
// Only one NVML library can be loaded per process (go-nvml binds its
// symbols globally), so each load happens in a child process: the test
// binary re-executes itself running only TestNVMLSubprocess, which prints
// what the Source reported as JSON on stdout.

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/dl"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/gpu"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

const (
	// envNVMLLibrary names the NVML library the child loads. It is set only
	// in the child's environment.
	envNVMLLibrary = "XPUSCOPE_TEST_NVML_LIBRARY"
	// resultPrefix starts the child's one line of JSON on stdout.
	resultPrefix = "XPUSCOPE_NVML_RESULT "
	// childTimeout bounds one child run.
	childTimeout = 2 * time.Minute
	// realNVML is the soname of the real library (Debian package
	// libnvidia-ml1), found through the loader path.
	realNVML = "libnvidia-ml.so.1"
	// missingEnergySymbol is what fakenvml.c leaves out with -DOMIT_ENERGY.
	missingEnergySymbol = "nvmlDeviceGetTotalEnergyConsumption"
)

// childResult is what the child reports.
type childResult struct {
	// LoadError is dlopen's error for the library; empty when it loads.
	LoadError string `json:"load_error"`
	// Error is gpu.New's error; empty when New succeeded.
	Error       string          `json:"error"`
	Unavailable bool            `json:"unavailable"`
	CloseError  string          `json:"close_error"`
	Points      testutil.Points `json:"points"`
}

// TestNVMLSubprocess is the child's side of the harness; it does nothing
// unless envNVMLLibrary is set.
func TestNVMLSubprocess(t *testing.T) {
	path, ok := os.LookupEnv(envNVMLLibrary)
	if !ok {
		return // a helper for the tests below, not a test of its own
	}
	res := collectOnce(t, path)
	b, err := json.Marshal(res)
	require.NoError(t, err)
	fmt.Printf("%s%s\n", resultPrefix, b)
}

// collectOnce loads the NVML library at path into a gpu Source, collects
// its metrics once and closes it.
func collectOnce(t *testing.T, path string) childResult {
	var res childResult
	probe := dl.New(path, dl.RTLD_LAZY|dl.RTLD_LOCAL)
	if err := probe.Open(); err != nil {
		res.LoadError = err.Error()
	} else {
		require.NoError(t, probe.Close())
	}

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { require.NoError(t, mp.Shutdown(context.Background())) }()

	src, err := gpu.New(gpu.WithNVMLLibraryPath(path), gpu.WithMeterProvider(mp))
	if err != nil {
		res.Error, res.Unavailable = err.Error(), errors.Is(err, xpuscope.ErrUnavailable)
		return res
	}
	res.Points = testutil.Collect(t, reader)
	if err := src.Close(); err != nil {
		res.CloseError = err.Error()
	}
	return res
}

// child is a finished child run.
type child struct {
	childResult
	pid int    // the child's pid: the fake reports it as the GPU process
	exe string // base name of the child's executable
}

// runChild runs TestNVMLSubprocess in a child process that loads the NVML
// library at lib, and returns what it reported.
func runChild(t *testing.T, lib string) child {
	t.Helper()
	testutil.Native(t, "the test binary run again as a program")
	exe, err := os.Executable()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), childTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.run=^TestNVMLSubprocess$", "-test.count=1")
	cmd.Env = append(os.Environ(), envNVMLLibrary+"="+lib)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	require.NoError(t, err, "child with %s failed\nstdout:\n%s\nstderr:\n%s", lib, &stdout, &stderr)

	c := child{pid: cmd.Process.Pid, exe: filepath.Base(exe)}
	found := false
	for sc := bufio.NewScanner(&stdout); sc.Scan(); {
		if line, ok := strings.CutPrefix(sc.Text(), resultPrefix); ok {
			require.NoError(t, json.Unmarshal([]byte(line), &c.childResult))
			found = true
		}
	}
	require.True(t, found, "child printed no result\nstdout:\n%s\nstderr:\n%s", &stdout, &stderr)
	return c
}

// exportsSymbol reports whether the shared library at path defines sym.
func exportsSymbol(t *testing.T, path, sym string) bool {
	t.Helper()
	f, err := elf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	syms, err := f.DynamicSymbols()
	require.NoError(t, err)
	for _, s := range syms {
		if s.Name == sym && s.Section != elf.SHN_UNDEF {
			return true
		}
	}
	return false
}

// requireValue checks the one point of metric m with attrs against want.
func (c child) requireValue(t *testing.T, want float64, m semconv.Metric, attrs ...attribute.KeyValue) {
	t.Helper()
	got := c.Points.One(t, m.Name, attrs...).Value
	require.InDelta(t, want, got, 1e-9*math.Max(1, math.Abs(want)), "%s with %v", m.Name, attrs)
}

// fakeGPU mirrors one GPU of internal/testutil/testdata/fakenvml.c, in
// the units NVML reports. Keep the two in step.
type fakeGPU struct {
	index                       int
	uuid, name                  string
	pciAddress                  string  // sysfs form of the bus id NVML reports
	utilGPU, utilMemory         float64 // percent
	encoder, decoder            float64 // percent
	memTotal, memReserved, used int64   // bytes (memory v2)
	temperature                 float64 // °C
	powerMW, powerLimitMW       float64 // milliwatts
	energyMJ                    float64 // millijoules
	clockSMMHz, clockMemMHz     float64 // MHz
	pcieTx, pcieRx              int64   // bytes
	fan                         float64 // percent
	eccCorrected, eccUncorrect  int64   // volatile counts
	throttling                  []string
	procMemory                  int64   // the child's memory on the GPU; 0: no process
	procSMUtil                  float64 // percent
}

const fakeDriverVersion = "535.999.01"

var fakeGPUs = []fakeGPU{
	{
		index:        0,
		uuid:         "GPU-fa4e0000-0000-4000-8000-000000000000",
		name:         "NVIDIA Fake H100 80GB HBM3",
		pciAddress:   "0000:3b:00.0", // NVML: 00000000:3B:00.0
		utilGPU:      75,
		utilMemory:   40,
		encoder:      12,
		decoder:      7,
		memTotal:     80 << 30,
		memReserved:  512 << 20,
		used:         20 << 30,
		temperature:  61,
		powerMW:      312500,
		powerLimitMW: 700000,
		energyMJ:     123456789,
		clockSMMHz:   1980,
		clockMemMHz:  2619,
		pcieTx:       1111111111,
		pcieRx:       2222222222,
		fan:          55,
		eccCorrected: 3,
		eccUncorrect: 1,
		throttling:   []string{"sw_power_cap", "hw_thermal_slowdown"},
		// Compute list 1 GiB, graphics list 256 MiB for the same pid: the
		// process counts once, with the larger figure.
		procMemory: 1 << 30,
		procSMUtil: 37,
	},
	{
		index:        1,
		uuid:         "GPU-fa4e0001-0000-4000-8000-000000000001",
		name:         "NVIDIA Fake A100-SXM4-40GB",
		pciAddress:   "0000:af:00.0", // NVML: 00000000:AF:00.0
		utilGPU:      20,
		utilMemory:   10,
		encoder:      3,
		decoder:      4,
		memTotal:     40 << 30,
		memReserved:  256 << 20,
		used:         4 << 30,
		temperature:  44,
		powerMW:      98765,
		powerLimitMW: 400000,
		energyMJ:     987654321,
		clockSMMHz:   1410,
		clockMemMHz:  1215,
		pcieTx:       333333333,
		pcieRx:       444444444,
		fan:          30,
		eccCorrected: 5,
		eccUncorrect: 2,
		throttling:   []string{"gpu_idle", "display_clock_setting"},
	},
}

// Unit conversions the Source applies.
const (
	percentToRatio = 0.01
	mWToW          = 1e-3
	mJToJ          = 1e-3
	mHzToHz        = 1e6
)

// deviceAttrs is the attribute set every series of g carries.
func (g fakeGPU) deviceAttrs() map[string]string {
	return map[string]string{
		string(semconv.HWID):            g.uuid,
		string(semconv.HWName):          g.name,
		string(semconv.HWVendor):        "NVIDIA",
		string(semconv.HWType):          semconv.HWTypeGPU,
		string(semconv.HWDriverVersion): fakeDriverVersion,
		string(semconv.GPUIndex):        strconv.Itoa(g.index),
		string(semconv.GPUPCIAddress):   g.pciAddress,
	}
}

func TestFakeNVMLFullLibrary(t *testing.T) {
	lib := testutil.BuildFakeNVML(t)
	require.True(t, exportsSymbol(t, lib, missingEnergySymbol))
	c := runChild(t, lib)
	require.Empty(t, c.LoadError)
	require.Empty(t, c.Error)
	require.Empty(t, c.CloseError)

	for _, g := range fakeGPUs {
		t.Run(g.uuid, func(t *testing.T) { checkFakeGPU(t, c, g) })
	}

	require.Empty(t, c.Points.Find(semconv.XpuscopeGPUSymbolMissing.Name), "the full library lacks no symbol")
	require.Empty(t, c.Points.Find(semconv.XpuscopeGPUReadErrors.Name), "no read of the fake library fails")
	require.Empty(t, c.Points.Find(semconv.XpuscopeGPUProcessOverflow.Name))
}

// checkFakeGPU checks every metric of g against the fake's values.
func checkFakeGPU(t *testing.T, c child, g fakeGPU) {
	id := semconv.HWID.String(g.uuid)

	// The device's identity, on a plain device series and on every other.
	require.Equal(t, g.deviceAttrs(), c.Points.One(t, semconv.HWPower.Name, id).Attrs)
	for _, p := range c.Points {
		if p.Attrs[string(semconv.HWID)] != g.uuid || strings.HasPrefix(p.Name, "xpuscope.") {
			continue
		}
		for k, v := range g.deviceAttrs() {
			require.Equal(t, v, p.Attrs[k], "%s: attribute %s", p.Name, k)
		}
		require.NotContains(t, p.Attrs, string(semconv.HWParent), "%s: not a MIG instance", p.Name)
	}

	// Percent → ratio.
	c.requireValue(t, g.utilGPU*percentToRatio, semconv.HWGPUUtilization, id, semconv.HWGPUTask.String(semconv.GPUTaskGeneral))
	c.requireValue(t, g.encoder*percentToRatio, semconv.HWGPUUtilization, id, semconv.HWGPUTask.String(semconv.GPUTaskEncoder))
	c.requireValue(t, g.decoder*percentToRatio, semconv.HWGPUUtilization, id, semconv.HWGPUTask.String(semconv.GPUTaskDecoder))
	c.requireValue(t, g.utilMemory*percentToRatio, semconv.GPUMemoryControllerUtilization, id)
	c.requireValue(t, g.fan*percentToRatio, semconv.GPUFanSpeed, id)

	// Memory (v2): bytes as they are, free excludes the reserved part.
	c.requireValue(t, float64(g.used), semconv.HWGPUMemoryUsage, id)
	c.requireValue(t, float64(g.memTotal), semconv.HWGPUMemoryLimit, id)
	c.requireValue(t, float64(g.memTotal-g.memReserved-g.used), semconv.GPUMemoryFree, id)
	c.requireValue(t, float64(g.memReserved), semconv.GPUMemoryReserved, id)
	c.requireValue(t, float64(g.used)/float64(g.memTotal), semconv.HWGPUMemoryUtilization, id)

	c.requireValue(t, g.temperature, semconv.HWTemperature, id)
	// mW → W, mJ → J, MHz → Hz.
	c.requireValue(t, g.powerMW*mWToW, semconv.HWPower, id)
	c.requireValue(t, g.powerLimitMW*mWToW, semconv.GPUPowerLimit, id)
	c.requireValue(t, g.energyMJ*mJToJ, semconv.HWEnergy, id)
	c.requireValue(t, g.clockSMMHz*mHzToHz, semconv.GPUClockFrequency, id, semconv.GPUClockDomain.String(semconv.ClockDomainSM))
	c.requireValue(t, g.clockMemMHz*mHzToHz, semconv.GPUClockFrequency, id, semconv.GPUClockDomain.String(semconv.ClockDomainMemory))

	c.requireValue(t, float64(g.pcieTx), semconv.HWGPUIO, id, semconv.NetworkIODir.String(semconv.DirectionTransmit))
	c.requireValue(t, float64(g.pcieRx), semconv.HWGPUIO, id, semconv.NetworkIODir.String(semconv.DirectionReceive))

	// ECC: the volatile counters (the fake's aggregate ones differ).
	c.requireValue(t, float64(g.eccCorrected), semconv.HWErrors, id, semconv.ErrorType.String(semconv.ErrorCorrected))
	c.requireValue(t, float64(g.eccUncorrect), semconv.HWErrors, id, semconv.ErrorType.String(semconv.ErrorUncorrected))
	require.Empty(t, c.Points.Find(semconv.HWErrors.Name, id, semconv.ErrorType.String(semconv.ErrorXID)), "the fake raises no XID")

	// One series per known reason: 1 for the fake's bits, 0 for the rest.
	for _, r := range g.throttling {
		require.Contains(t, semconv.ThrottleReasons, r)
	}
	for _, r := range semconv.ThrottleReasons {
		want := 0.0
		if contains(g.throttling, r) {
			want = 1
		}
		c.requireValue(t, want, semconv.GPUClockThrottle, id, semconv.GPUClockThrottleReason.String(r))
	}

	// The fake lists the child itself as the GPU's process.
	if g.procMemory == 0 {
		require.Empty(t, c.Points.Find(semconv.ProcessGPUMemoryUsage.Name, id))
		require.Empty(t, c.Points.Find(semconv.ProcessGPUUtilization.Name, id))
		return
	}
	proc := []attribute.KeyValue{id, semconv.ProcessPID.Int(c.pid), semconv.ProcessExecutableName.String(c.exe)}
	require.Len(t, c.Points.Find(semconv.ProcessGPUMemoryUsage.Name, id), 1, "one process, listed as compute and graphics")
	c.requireValue(t, float64(g.procMemory), semconv.ProcessGPUMemoryUsage, proc...)
	c.requireValue(t, g.procSMUtil*percentToRatio, semconv.ProcessGPUUtilization, proc...)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestFakeNVMLMissingOptionalSymbol(t *testing.T) {
	lib := testutil.BuildFakeNVML(t, "-DOMIT_ENERGY")
	require.False(t, exportsSymbol(t, lib, missingEnergySymbol), "-DOMIT_ENERGY must drop %s", missingEnergySymbol)
	c := runChild(t, lib) // go-nvml kills the process if the Source calls the symbol
	require.Empty(t, c.LoadError)
	require.Empty(t, c.Error)
	require.Empty(t, c.CloseError)

	require.Empty(t, c.Points.Find(semconv.HWEnergy.Name))
	for _, g := range fakeGPUs {
		c.requireValue(t, g.powerMW*mWToW, semconv.HWPower, semconv.HWID.String(g.uuid))
	}
	missing := c.Points.One(t, semconv.XpuscopeGPUSymbolMissing.Name)
	require.Equal(t, map[string]string{
		string(semconv.XpuscopeSymbol):     missingEnergySymbol,
		string(semconv.XpuscopeMetricName): semconv.HWEnergy.Name,
	}, missing.Attrs)
	require.Equal(t, 1.0, missing.Value)
}

func TestRealNVMLWithoutDriver(t *testing.T) {
	c := runChild(t, realNVML)
	if c.LoadError != "" {
		testutil.SkipOrFail(t, "the real NVML library %s is not installed (Debian package libnvidia-ml1): %s", realNVML, c.LoadError)
	}
	require.NotEmpty(t, c.Error, "gpu.New must fail without a GPU driver")
	require.True(t, c.Unavailable, "the error must wrap xpuscope.ErrUnavailable: %s", c.Error)
	require.Contains(t, strings.ToLower(c.Error), "driver not loaded")
	require.Empty(t, c.Points)
}
