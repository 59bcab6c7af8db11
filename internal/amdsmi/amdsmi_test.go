package amdsmi

import (
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/amdsmi/amdsmitest"
	"github.com/xpuscope/xpuscope/internal/testutil"
)

// layouts are the fake's builds, one per struct layout the binding knows.
var layouts = []struct {
	name    string
	defines []string
	version Version
}{
	{"26.1", nil, Version{Major: 26, Minor: 1}},
	{"24.6", []string{"-DLAYOUT_24_6"}, Version{Year: 24, Major: 6, Minor: 1}},
	{"23.2", []string{"-DLAYOUT_23_2"}, Version{Year: 23, Major: 2}},
}

// TestStructLayoutMatchesTheFake compares, for each layout, the C structs
// of the fake (declared as amdsmi.h declares them) with what the binding
// reads: offsets, and buffers at least as large as the structs.
func TestStructLayoutMatchesTheFake(t *testing.T) {
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			lib := amdsmitest.Build(t, l.defines...)
			var layout func(out *[16]uint64)
			testutil.FakeHook(t, lib, "xpuscope_fake_amdsmi_layout", &layout)
			var got [16]uint64
			layout(&got)
			var u EngineUsage
			var ec ErrorCount
			var raw rawVersion
			assert.Equal(t, uint64(unsafe.Sizeof(u)), got[0], "amdsmi_engine_usage_t")
			assert.Equal(t, uint64(unsafe.Offsetof(u.GfxActivity)), got[1])
			assert.Equal(t, uint64(unsafe.Offsetof(u.UmcActivity)), got[2])
			assert.LessOrEqual(t, got[3], uint64(unsafe.Sizeof(ec)), "amdsmi_error_count_t")
			assert.Equal(t, uint64(unsafe.Offsetof(ec.Correctable)), got[4])
			assert.Equal(t, uint64(unsafe.Offsetof(ec.Uncorrectable)), got[5])
			assert.LessOrEqual(t, got[6], uint64(64*8), "amdsmi_power_info_t fits the buffer")
			pl := l.version.PowerLayout()
			require.True(t, pl.Known)
			assert.Equal(t, int64(pl.Current), int64(got[7]), "current_socket_power")
			assert.Equal(t, uint64(pl.Average), got[8], "average_socket_power")
			assert.Equal(t, uint64(unsafe.Offsetof(raw.build)), got[9], "amdsmi_version_t.build")
			assert.LessOrEqual(t, got[10], uint64(unsafe.Sizeof(raw)))
			assert.Zero(t, got[11], "amdsmi_clk_info_t.clk")
			assert.LessOrEqual(t, got[12], uint64(16*4))
			assert.Zero(t, got[13]&0xffffffff, "power_cap first")
			assert.LessOrEqual(t, got[13]>>32, uint64(16*8))
			assert.Zero(t, got[14]&0xffffffff, "market_name first")
			assert.GreaterOrEqual(t, got[14]>>32, uint64(nameLen))
			assert.LessOrEqual(t, got[14]>>32, uint64(infoLen))
			if pl.DriverInfo {
				assert.Zero(t, got[15]&0xffffffff, "driver_version first")
				assert.LessOrEqual(t, got[15]>>32, uint64(infoLen))
			}
		})
	}
}

func TestBDFBitfields(t *testing.T) {
	var pack func(domain, bus, device, function uint64) uint64
	testutil.FakeHook(t, amdsmitest.Build(t), "xpuscope_fake_amdsmi_bdf", &pack)
	for _, tc := range []struct {
		d, b, dev, fn uint64
		want          string
	}{
		{0, 0x0c, 0, 0, "0000:0c:00.0"},
		{1, 0xc1, 0x1f, 7, "0001:c1:1f.7"},
		{0xabcd, 0x83, 0x02, 1, "abcd:83:02.1"},
	} {
		assert.Equal(t, tc.want, PCIAddress(pack(tc.d, tc.b, tc.dev, tc.fn)))
	}
}

func open(t *testing.T, path string) *Lib {
	t.Helper()
	l, err := Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	return l
}

func TestFakeLibraryValues(t *testing.T) {
	for _, lay := range layouts {
		t.Run(lay.name, func(t *testing.T) { testValues(t, lay.defines, lay.version) })
	}
}

func testValues(t *testing.T, defines []string, version Version) {
	path := amdsmitest.Build(t, defines...)
	var initialized func() int32
	testutil.FakeHook(t, path, "xpuscope_fake_amdsmi_initialized", &initialized)
	l := open(t, path)
	if version.Year == 23 {
		assert.Equal(t, []string{SymGPUDriverInfo}, l.Missing())
	} else {
		assert.Empty(t, l.Missing())
	}
	v, st := l.Version()
	require.Equal(t, StatusSuccess, st)
	assert.Equal(t, version, v)
	assert.True(t, l.Layout().Known)

	_, _, st = l.GPUs()
	assert.Equal(t, StatusNotInit, st, "the fake refuses calls before amdsmi_init")
	require.Equal(t, StatusSuccess, l.Init())
	assert.Equal(t, int32(1), initialized())

	gpus, _, st := l.GPUs()
	require.Equal(t, StatusSuccess, st)
	require.Len(t, gpus, 2)
	a, b := gpus[0], gpus[1]

	bdf, st := l.BDF(b)
	assert.Equal(t, StatusSuccess, st)
	assert.Equal(t, "0000:83:00.0", PCIAddress(bdf))
	name, st := l.MarketName(a)
	assert.Equal(t, StatusSuccess, st)
	assert.Equal(t, "AMD Instinct MI300X (fake)", name)
	drv, st := l.DriverVersion(a)
	if version.Year == 23 {
		assert.Equal(t, StatusNoSymbol, st)
	} else {
		assert.Equal(t, StatusSuccess, st)
		assert.Equal(t, "6.7.0-fake", drv)
	}

	u, st := l.Activity(a)
	assert.Equal(t, StatusSuccess, st)
	assert.Equal(t, [2]uint32{87, 45}, [2]uint32{u.GfxActivity, u.UmcActivity})
	u, _ = l.Activity(b)
	assert.Equal(t, uint32(Unsupported16), u.UmcActivity)
	total, _ := l.MemoryTotal(a)
	used, _ := l.MemoryUsage(a)
	assert.Equal(t, uint64(192<<30), total)
	assert.Equal(t, uint64(60<<30), used)

	for _, tc := range []struct {
		h       Handle
		sensor  TempSensor
		celsius int64
		st      Status
	}{
		{a, TempEdge, 51, StatusSuccess},
		{a, TempHotspot, 68, StatusSuccess},
		{a, TempVRAM, 57, StatusSuccess},
		{b, TempEdge, -5, StatusSuccess},
		{b, TempVRAM, 0, StatusNotSupported},
	} {
		v, st := l.Temperature(tc.h, tc.sensor)
		assert.Equal(t, tc.st, st, "sensor %d", tc.sensor)
		assert.Equal(t, tc.celsius, v, "sensor %d", tc.sensor)
	}

	cur, avg, st := l.Power(a)
	assert.Equal(t, StatusSuccess, st)
	if version.Year == 23 {
		assert.Equal(t, uint32(Unsupported32), cur, "23.2 has no current socket power")
	} else {
		assert.Equal(t, uint32(512), cur)
	}
	assert.Equal(t, uint32(498), avg)
	cur, avg, _ = l.Power(b)
	assert.Equal(t, [2]uint32{Unsupported32, 45}, [2]uint32{cur, avg})
	limit, _ := l.PowerCap(a)
	assert.Equal(t, uint64(750000000), limit)

	count, res, st := l.EnergyCount(a)
	assert.Equal(t, StatusSuccess, st)
	assert.Equal(t, uint64(123456789), count)
	assert.Equal(t, float32(15.25), res)

	_, st = l.FanSpeed(a)
	assert.Equal(t, StatusNotSupported, st)
	fan, _ := l.FanSpeed(b)
	fanMax, _ := l.FanSpeedMax(b)
	assert.Equal(t, int64(102), fan)
	assert.Equal(t, uint64(255), fanMax)

	mhz, st := l.ClockMHz(a, ClockSystem)
	assert.Equal(t, StatusSuccess, st)
	assert.Equal(t, uint32(2100), mhz)
	mhz, _ = l.ClockMHz(a, ClockMemory)
	assert.Equal(t, uint32(1300), mhz)
	mhz, _ = l.ClockMHz(b, ClockMemory)
	assert.Equal(t, uint32(Unsupported32), mhz)

	ec, st := l.TotalECCCount(a)
	assert.Equal(t, StatusSuccess, st)
	assert.Equal(t, [2]uint64{5, 1}, [2]uint64{ec.Correctable, ec.Uncorrectable})
	_, st = l.TotalECCCount(b)
	assert.Equal(t, StatusNotSupported, st)
	assert.Equal(t, "fake: command not supported", l.StatusText(st))

	_, st = l.BDF(Handle(1))
	assert.Equal(t, StatusInval, st, "the fake checks the handle")

	require.Equal(t, StatusSuccess, l.Shutdown())
	assert.Equal(t, int32(0), initialized())
}

func TestUnknownVersion(t *testing.T) {
	l := open(t, amdsmitest.Build(t, "-DVERSION_24_7"))
	v, _ := l.Version()
	assert.Equal(t, Version{Year: 24, Major: 7, Minor: 1}, v)
	assert.Equal(t, "24.7.1.0", v.String())
	assert.False(t, l.Layout().Known)
	require.Equal(t, StatusSuccess, l.Init())
	defer l.Shutdown()
	gpus, _, _ := l.GPUs()
	_, _, st := l.Power(gpus[0])
	assert.Equal(t, StatusNotSupported, st, "an unknown layout is never read")
	_, st = l.DriverVersion(gpus[0])
	assert.Equal(t, StatusNotSupported, st)
}

func TestMissingOptionalFunction(t *testing.T) {
	l := open(t, amdsmitest.Build(t, "-DOMIT_ENERGY"))
	assert.Equal(t, []string{SymEnergyCount}, l.Missing())
	assert.False(t, l.Has(SymEnergyCount))
	assert.True(t, l.Has(SymPowerInfo))
	assert.False(t, l.Has("amdsmi_no_such_function"))
	require.Equal(t, StatusSuccess, l.Init())
	defer l.Shutdown()
	gpus, _, _ := l.GPUs()
	_, _, st := l.EnergyCount(gpus[0])
	assert.Equal(t, StatusNoSymbol, st, "a missing function is never called")
	p, st := l.PowerCap(gpus[0])
	assert.Equal(t, StatusSuccess, st)
	assert.Equal(t, uint64(750000000), p)
}

func TestInitFailure(t *testing.T) {
	l := open(t, amdsmitest.Build(t, "-DINIT_STATUS=18"))
	st := l.Init()
	assert.Equal(t, StatusInitError, st)
	err := l.Err("amdsmi_init", st)
	require.Error(t, err)
	assert.Equal(t, "amdsmi_init: AMDSMI_STATUS_INIT_ERROR (18): fake: an error occurred when initializing internal data structures", err.Error())
	assert.NoError(t, l.Err("amdsmi_init", StatusSuccess))
}

func TestOpenErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libamd_smi.so")
	_, err := Open(missing)
	require.Error(t, err)
	assert.Contains(t, err.Error(), missing)

	_, err = Open("libc.so.6")
	require.Error(t, err)
	assert.Equal(t, "libc.so.6 is not a usable AMD SMI library: it lacks amdsmi_init", err.Error())
}

func TestVersionOf(t *testing.T) {
	assert.Equal(t, Version{Year: 24, Major: 6, Minor: 1}, versionOf([4]uint32{24, 6, 1, 0}))
	assert.Equal(t, Version{Year: 25, Major: 3}, versionOf([4]uint32{25, 3, 0, 0}))
	assert.Equal(t, Version{Major: 26, Minor: 1, Release: 2}, versionOf([4]uint32{26, 1, 2, 0}))
	assert.Equal(t, "26.1.2", Version{Major: 26, Minor: 1, Release: 2}.String())
	for _, v := range []Version{{Year: 25, Major: 3}, {Year: 24, Major: 7}, {Year: 24, Major: 5}, {Year: 23, Major: 4}, {}} {
		assert.False(t, v.PowerLayout().Known, "%v", v)
	}
	assert.True(t, Version{Major: 27}.PowerLayout().Known)
}

func TestStatusString(t *testing.T) {
	assert.Equal(t, "AMDSMI_STATUS_SUCCESS", StatusSuccess.String())
	assert.Equal(t, "AMDSMI_STATUS_INIT_ERROR", Status(18).String())
	assert.Equal(t, "AMDSMI_STATUS_BUSY", Status(30).String())
	assert.Equal(t, "AMDSMI_STATUS_MAP_ERROR", StatusMapError.String())
	assert.Equal(t, "SYMBOL_MISSING", StatusNoSymbol.String())
	assert.Equal(t, "AMDSMI_STATUS_20", Status(20).String())
}
