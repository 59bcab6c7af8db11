package levelzero

// The tests load Debian's real Level Zero loader (libze1 1.8.12), which
// finds no driver here (no Intel GPU, no compute runtime), and a fake
// driver built from C by the tests against the real headers
// (testdata/fakeze.c), which the real loader loads through
// ZE_ENABLE_ALT_DRIVERS so that its dispatch is the real one: one driver
// (the loader hands out the driver's own tables) and two (the loader
// intercepts every call and translates its handles). Each scenario of
// the real loader runs in a child process (levelzerotest.Run): the
// loader initialises once per process.

import (
	"os"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/levelzero/levelzerotest"
	"github.com/xpuscope/xpuscope/internal/testutil"
)

// fakeEnv names the fake driver in a child's environment.
const fakeEnv = "XPUSCOPE_TEST_FAKE_ZE"

func hook(t *testing.T, lib, name string, fptr any) {
	t.Helper()
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL)
	require.NoError(t, err)
	addr, err := purego.Dlsym(h, name)
	require.NoError(t, err)
	purego.RegisterFunc(fptr, addr)
}

// fakeState is what the fake saw: zeInit calls, zesInit calls, Sysman on,
// Sysman calls, Sysman calls refused.
func fakeState(t *testing.T, lib string) [5]int64 {
	var state func(*[5]int64)
	hook(t, lib, "xpuscope_fake_ze_state", &state)
	var out [5]int64
	state(&out)
	return out
}

func TestStructLayoutMatchesTheHeaders(t *testing.T) {
	lib := levelzerotest.Build(t, "libfakeze.so")
	var layout func(*[64]uint64)
	hook(t, lib, "xpuscope_fake_ze_layout", &layout)
	var got [64]uint64
	layout(&got)
	var (
		dp  DeviceProperties
		cp  CoreDeviceProperties
		pci PCIProperties
		ep  EngineProperties
		es  EngineStats
		mp  MemProperties
		ms  MemState
		mb  MemBandwidth
		pp  PowerProperties
		ec  EnergyCounter
		tp  TempProperties
		fp  FreqProperties
		fs  FreqState
		ps  ProcessState
	)
	want := []uint64{
		uint64(unsafe.Sizeof(dp)), uint64(unsafe.Offsetof(dp.Core)), uint64(unsafe.Offsetof(dp.NumSubdevices)),
		uint64(unsafe.Offsetof(dp.ModelName)), uint64(unsafe.Offsetof(dp.DriverVersion)),
		uint64(unsafe.Sizeof(cp)), uint64(unsafe.Offsetof(cp.VendorID)), uint64(unsafe.Offsetof(cp.DeviceID)),
		uint64(unsafe.Offsetof(cp.UUID)), uint64(unsafe.Offsetof(cp.Name)),
		uint64(unsafe.Sizeof(pci)), uint64(unsafe.Offsetof(pci.Address)),
		uint64(unsafe.Sizeof(ep)), uint64(unsafe.Offsetof(ep.Type)), uint64(unsafe.Offsetof(ep.OnSubdevice)), uint64(unsafe.Offsetof(ep.SubdeviceID)),
		uint64(unsafe.Sizeof(es)), uint64(unsafe.Offsetof(es.Timestamp)),
		uint64(unsafe.Sizeof(mp)), uint64(unsafe.Offsetof(mp.OnSubdevice)), uint64(unsafe.Offsetof(mp.SubdeviceID)),
		uint64(unsafe.Offsetof(mp.Location)), uint64(unsafe.Offsetof(mp.PhysicalSize)),
		uint64(unsafe.Sizeof(ms)), uint64(unsafe.Offsetof(ms.Free)), uint64(unsafe.Offsetof(ms.Size)),
		uint64(unsafe.Sizeof(mb)), uint64(unsafe.Offsetof(mb.Timestamp)),
		uint64(unsafe.Sizeof(pp)), uint64(unsafe.Offsetof(pp.OnSubdevice)), uint64(unsafe.Offsetof(pp.SubdeviceID)),
		uint64(unsafe.Sizeof(ec)),
		uint64(unsafe.Sizeof(tp)), uint64(unsafe.Offsetof(tp.Type)), uint64(unsafe.Offsetof(tp.OnSubdevice)), uint64(unsafe.Offsetof(tp.SubdeviceID)),
		uint64(unsafe.Sizeof(fp)), uint64(unsafe.Offsetof(fp.Type)), uint64(unsafe.Offsetof(fp.OnSubdevice)),
		uint64(unsafe.Sizeof(fs)), uint64(unsafe.Offsetof(fs.Actual)),
		uint64(unsafe.Sizeof(ps)), uint64(unsafe.Offsetof(ps.ProcessID)), uint64(unsafe.Offsetof(ps.MemSize)), uint64(unsafe.Offsetof(ps.Engines)),
		stypeDeviceProperties, stypePCIProperties, stypeEngineProperties, stypeMemProperties, stypeMemState,
		stypePowerProperties, stypeTempProperties, stypeFreqProperties, stypeFreqState, stypeProcessState,
		stypeCoreDeviceProperties,
		uint64(ErrorUninitialized), uint64(ErrorDeviceLost), uint64(ErrorUnsupportedFeature), uint64(ErrorInsufficientPermissions),
	}
	require.Equal(t, uint64(len(want)), got[len(want)], "the C side wrote as many values as the Go side compares")
	assert.Equal(t, want, got[:len(want)], "struct layouts, structure types and results as C lays them out from zes_api.h v1.4")
	assert.Equal(t, uint64(368), got[5], "ze_device_properties_t")
}

// TestRealLoaderWithoutDriver: Debian's loader, with no driver to load
// (no Intel compute runtime on this machine or in CI), fails zeInit with
// ZE_RESULT_ERROR_UNINITIALIZED, as on a node without Intel GPUs.
func TestRealLoaderWithoutDriver(t *testing.T) {
	levelzerotest.Run(t, "TestRealLoaderWithoutDriverChild")
}

func TestRealLoaderWithoutDriverChild(t *testing.T) {
	if !levelzerotest.InChild() {
		return
	}
	l, err := Open(DefaultLibrary)
	if err != nil {
		testutil.SkipOrFail(t, "Debian's libze1 is needed (scripts/install-test-deps.sh): %v", err)
	}
	assert.False(t, l.HasSysmanInit(), "loader 1.8.12 has no zesInit")
	assert.ElementsMatch(t, []string{"zesInit", "zesDriverGet", "zesDeviceGet"}, l.Missing())
	how, r := l.Init()
	assert.Equal(t, "zeInit with ZES_ENABLE_SYSMAN=1 (set by the agent)", how)
	assert.Equal(t, ErrorUninitialized, r)
	assert.Equal(t, Result(0x78000001), r)
	assert.Equal(t, "ZE_RESULT_ERROR_UNINITIALIZED", r.String())
	assert.Equal(t, "1", os.Getenv(SysmanEnv))
	devs, r := l.Devices()
	assert.Equal(t, ErrorUninitialized, r, "no driver")
	assert.Empty(t, devs)
}

// TestFakeDriverThroughRealLoader: the real loader loads the fake driver
// (ZE_ENABLE_ALT_DRIVERS) and hands out its tables; Sysman answers because
// Init set ZES_ENABLE_SYSMAN before zeInit reached the driver.
func TestFakeDriverThroughRealLoader(t *testing.T) {
	lib := levelzerotest.Build(t, "libze_fake.so")
	levelzerotest.Run(t, "TestFakeDriverChild", "ZE_ENABLE_ALT_DRIVERS="+lib, fakeEnv+"="+lib, "XPUSCOPE_TEST_GPUS=2")
}

// TestTwoDriversThroughRealLoader: with two drivers the loader intercepts
// every call and wraps every handle: its dispatch, not the driver's, is
// what the binding meets.
func TestTwoDriversThroughRealLoader(t *testing.T) {
	a := levelzerotest.Build(t, "libze_fake_a.so")
	b := levelzerotest.Build(t, "libze_fake_b.so", "-DFAKE_BUS=0x9a", "-DFAKE_FAIL_GPU=-1")
	levelzerotest.Run(t, "TestFakeDriverChild", "ZE_ENABLE_ALT_DRIVERS="+a+","+b, fakeEnv+"="+a, "XPUSCOPE_TEST_GPUS=4")
}

func TestFakeDriverChild(t *testing.T) {
	if !levelzerotest.InChild() {
		return
	}
	lib := os.Getenv(fakeEnv)
	l, err := Open(DefaultLibrary)
	if err != nil {
		testutil.SkipOrFail(t, "Debian's libze1 is needed (scripts/install-test-deps.sh): %v", err)
	}
	_, r := l.Init()
	require.Equal(t, Success, r)
	devs, r := l.Devices()
	require.Equal(t, Success, r)
	want := 2
	if os.Getenv("XPUSCOPE_TEST_GPUS") == "4" {
		want = 4
	}
	require.Len(t, devs, want)
	checkFake(t, l, devs)

	st := fakeState(t, lib)
	assert.Positive(t, st[0], "zeInit reached the driver")
	assert.Zero(t, st[1], "never zesInit")
	assert.Equal(t, int64(1), st[2], "Sysman on: ZES_ENABLE_SYSMAN was set when zeInit reached it")
	assert.Zero(t, st[4], "no Sysman call refused")
}

// checkFake reads every device and checks what the fake reports.
func checkFake(t *testing.T, l *Lib, devs []Handle) {
	buses := map[string]bool{}
	for i, d := range devs {
		var p DeviceProperties
		require.Equal(t, Success, l.DeviceProperties(d, &p))
		assert.Equal(t, "Intel(R) Data Center GPU Max 1550 (fake)", String(p.Core.Name[:]))
		assert.Equal(t, uint32(0x8086), p.Core.VendorID)
		assert.Equal(t, uint32(0x0bd5), p.Core.DeviceID)
		assert.Equal(t, uint32(2), p.NumSubdevices)
		assert.Equal(t, "1.3.29735 (fake)", String(p.DriverVersion[:]))
		var pci PCIProperties
		require.Equal(t, Success, l.PCIProperties(d, &pci))
		buses[pci.Address.String()] = true

		engines, r := l.Enum(d, Engines)
		require.Equal(t, Success, r)
		require.Len(t, engines, 11)
		var ep EngineProperties
		require.Equal(t, Success, l.EngineProperties(engines[7], &ep))
		assert.Equal(t, EngineAll, ep.Type)
		assert.Equal(t, uint8(1), ep.OnSubdevice)
		assert.Equal(t, uint32(0), ep.SubdeviceID)
		a, r := l.EngineActivity(engines[0])
		require.Equal(t, Success, r)
		b, r := l.EngineActivity(engines[0])
		require.Equal(t, Success, r)
		assert.InDelta(t, 0.8, float64(b.ActiveTime-a.ActiveTime)/float64(b.Timestamp-a.Timestamp), 1e-12, "ALL: 800 per 1000")

		mems, r := l.Enum(d, MemoryModules)
		require.Equal(t, Success, r)
		require.Len(t, mems, 2)
		var mp MemProperties
		require.Equal(t, Success, l.MemoryProperties(mems[1], &mp))
		assert.Equal(t, uint32(MemLocDevice), mp.Location)
		assert.Equal(t, uint32(1), mp.SubdeviceID)
		ms, r := l.MemoryState(mems[0])
		if pci.Address.Bus == 0x3b {
			assert.Equal(t, ErrorDeviceLost, r, "the failing query of the second GPU")
		} else {
			require.Equal(t, Success, r, "%s", pci.Address)
			assert.Equal(t, uint64(64<<30), ms.Size)
		}

		card, r := l.CardPowerDomain(d)
		require.Equal(t, Success, r)
		e1, r := l.EnergyCounter(card)
		require.Equal(t, Success, r)
		e2, r := l.EnergyCounter(card)
		require.Equal(t, Success, r)
		assert.Equal(t, uint64(300_000_000), e2.Energy-e1.Energy)

		temps, r := l.Enum(d, TemperatureSensors)
		require.Equal(t, Success, r)
		require.Len(t, temps, 4)
		var tp TempProperties
		require.Equal(t, Success, l.TemperatureProperties(temps[1], &tp))
		assert.Equal(t, uint32(TempMemory), tp.Type)
		v, r := l.Temperature(temps[0])
		require.Equal(t, Success, r)
		assert.Equal(t, 65.5, v)

		freqs, r := l.Enum(d, FrequencyDomains)
		require.Equal(t, Success, r)
		fs, r := l.FrequencyState(freqs[0])
		require.Equal(t, Success, r)
		assert.Equal(t, 1600.0, fs.Actual)

		procs, r := l.Processes(d, 16)
		require.Equal(t, Success, r)
		require.Len(t, procs, 2)
		assert.Equal(t, uint32(4242), procs[0].ProcessID)
		assert.Equal(t, uint64(8<<30), procs[0].MemSize)
		assert.Equal(t, uint32(5151), procs[1].ProcessID)
		procs, r = l.Processes(d, 1)
		require.Equal(t, Success, r)
		assert.Len(t, procs, 1, "at most max")
		_ = i
	}
	assert.Len(t, buses, len(devs), "each GPU its own PCI address")
}

// TestZesInitLoader: a loader of Level Zero 1.5 and later exports zesInit:
// Init calls it and never zeInit, and enumerates with zesDriverGet and
// zesDeviceGet. The stand-in is the fake built as a loader (no such
// loader in Debian 12).
func TestZesInitLoader(t *testing.T) {
	lib := levelzerotest.Build(t, "libze_loader_15.so", "-DFAKE_AS_LOADER")
	levelzerotest.Run(t, "TestZesInitLoaderChild", fakeEnv+"="+lib)
}

func TestZesInitLoaderChild(t *testing.T) {
	if !levelzerotest.InChild() {
		return
	}
	lib := os.Getenv(fakeEnv)
	l, err := Open(lib)
	require.NoError(t, err)
	assert.True(t, l.HasSysmanInit())
	how, r := l.Init()
	assert.Equal(t, "zesInit", how)
	require.Equal(t, Success, r)
	assert.Empty(t, os.Getenv(SysmanEnv), "zesInit needs no environment variable")
	devs, r := l.Devices()
	require.Equal(t, Success, r)
	require.Len(t, devs, 2)
	checkFake(t, l, devs)
	st := fakeState(t, lib)
	assert.Zero(t, st[0], "never zeInit beside zesInit")
	assert.Equal(t, int64(1), st[1])
}

// TestLoaderWithoutZesInit: the variant without the zes* initialisation
// symbols: Init falls back to zeInit with ZES_ENABLE_SYSMAN.
func TestLoaderWithoutZesInit(t *testing.T) {
	lib := levelzerotest.Build(t, "libze_loader_14.so", "-DFAKE_AS_LOADER", "-DFAKE_NO_ZES_INIT")
	levelzerotest.Run(t, "TestLoaderWithoutZesInitChild", fakeEnv+"="+lib)
}

func TestLoaderWithoutZesInitChild(t *testing.T) {
	if !levelzerotest.InChild() {
		return
	}
	lib := os.Getenv(fakeEnv)
	l, err := Open(lib)
	require.NoError(t, err)
	assert.False(t, l.HasSysmanInit())
	how, r := l.Init()
	assert.Equal(t, "zeInit with ZES_ENABLE_SYSMAN=1 (set by the agent)", how)
	require.Equal(t, Success, r)
	devs, r := l.Devices()
	require.Equal(t, Success, r)
	checkFake(t, l, devs)
	st := fakeState(t, lib)
	assert.Equal(t, int64(1), st[0])
	assert.Zero(t, st[1])
	assert.Equal(t, int64(1), st[2], "Sysman on through the environment variable")
}

func TestOpenErrors(t *testing.T) {
	_, err := Open("/nonexistent/libze_loader.so.1")
	assert.ErrorContains(t, err, "Level Zero library /nonexistent/libze_loader.so.1 cannot be loaded")
	// A library that is not Level Zero's: the fake's layout helper only.
	lib := levelzerotest.Build(t, "libnotze.so", "-DFAKE_AS_LOADER", "-DFAKE_NO_ZES_INIT", "-Dzesdummy=1")
	_, err = Open(lib)
	assert.NoError(t, err, "the loader stand-in has every required function")
	assert.Equal(t, "ZE_RESULT_0x1234", Result(0x1234).String())
	assert.Equal(t, "SYMBOL_MISSING", noSymbol.String())
	assert.Equal(t, "0000:3a:00.0", PCIAddress{Bus: 0x3a}.String())
}

// The poll's calls allocate nothing once the caller's structs are on the
// heap.
func TestCallsAllocateNothing(t *testing.T) {
	levelzerotest.Run(t, "TestCallsAllocateNothingChild", fakeEnv+"="+levelzerotest.Build(t, "libze_loader_15.so", "-DFAKE_AS_LOADER"))
}

func TestCallsAllocateNothingChild(t *testing.T) {
	if !levelzerotest.InChild() {
		return
	}
	l, err := Open(os.Getenv(fakeEnv))
	require.NoError(t, err)
	_, r := l.Init()
	require.Equal(t, Success, r)
	devs, _ := l.Devices()
	engines, _ := l.Enum(devs[0], Engines)
	mems, _ := l.Enum(devs[0], MemoryModules)
	temps, _ := l.Enum(devs[0], TemperatureSensors)
	freqs, _ := l.Enum(devs[0], FrequencyDomains)
	card, _ := l.CardPowerDomain(devs[0])
	allocs := testing.AllocsPerRun(100, func() {
		l.EngineActivity(engines[0])
		l.MemoryState(mems[0])
		l.MemoryBandwidth(mems[0])
		l.EnergyCounter(card)
		l.Temperature(temps[0])
		l.FrequencyState(freqs[0])
		l.Processes(devs[0], 16)
	})
	if raceEnabled {
		// purego's pooled frames, dropped at random (race_test.go): 1-2
		// of the 7 calls; an argument escaping would make it 7 or more.
		assert.Less(t, allocs, 7.0)
		return
	}
	assert.Zero(t, allocs)
}
