package rocmsmi

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/rocmsmi/rocmsmitest"
	"github.com/xpuscope/xpuscope/internal/testutil"
)

// fakeHook binds a test hook the fake library exports (not part of ROCm
// SMI) through a handle of its own.
func fakeHook(t *testing.T, lib, name string, fptr any) {
	t.Helper()
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = purego.Dlclose(h) })
	addr, err := purego.Dlsym(h, name)
	require.NoError(t, err)
	purego.RegisterFunc(fptr, addr)
}

func TestStructLayoutMatchesTheFake(t *testing.T) {
	lib := rocmsmitest.Build(t)
	var layout func(out *[7]uint64)
	fakeHook(t, lib, "xpuscope_fake_rsmi_layout", &layout)
	var got [7]uint64
	layout(&got)
	var f Frequencies
	var ec ErrorCount
	assert.Equal(t, [7]uint64{
		uint64(unsafe.Sizeof(f)),
		uint64(unsafe.Offsetof(f.NumSupported)),
		uint64(unsafe.Offsetof(f.Current)),
		uint64(unsafe.Offsetof(f.Frequency)),
		uint64(unsafe.Sizeof(ec)),
		uint64(unsafe.Offsetof(ec.Correctable)),
		uint64(unsafe.Offsetof(ec.Uncorrectable)),
	}, got, "rsmi_frequencies_t and rsmi_error_count_t as C lays them out")
	assert.Equal(t, uint64(8+8*maxFrequencies), got[0])
}

func open(t *testing.T, path string) *Lib {
	t.Helper()
	l, err := Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	return l
}

func TestFakeLibraryValues(t *testing.T) {
	path := rocmsmitest.Build(t)
	var initialized func() int32
	fakeHook(t, path, "xpuscope_fake_rsmi_initialized", &initialized)
	l := open(t, path)
	assert.Empty(t, l.Missing())
	assert.Equal(t, path, l.Path())

	_, st := l.NumDevices()
	assert.Equal(t, StatusInitError, st, "the fake refuses calls before rsmi_init")
	require.Equal(t, StatusSuccess, l.Init())
	assert.Equal(t, int32(1), initialized())

	n, st := l.NumDevices()
	require.Equal(t, StatusSuccess, st)
	require.Equal(t, uint32(2), n)

	name, st := l.Name(0)
	assert.Equal(t, StatusSuccess, st)
	assert.Equal(t, "AMD Instinct MI300X (fake)", name)
	bdf, st := l.PCIID(1)
	assert.Equal(t, StatusSuccess, st)
	assert.Equal(t, "0000:83:00.0", PCIAddress(bdf))
	id, st := l.UniqueID(0)
	assert.Equal(t, StatusSuccess, st)
	assert.Equal(t, uint64(0x5a3c9e01f00dbabe), id)
	_, st = l.UniqueID(1)
	assert.Equal(t, StatusNotSupported, st)
	assert.Equal(t, "fake: feature not supported", l.StatusText(st))

	busy, st := l.BusyPercent(0)
	assert.Equal(t, StatusSuccess, st)
	assert.Equal(t, uint32(87), busy)
	memBusy, _ := l.MemoryBusyPercent(1)
	assert.Equal(t, uint32(3), memBusy)
	total, _ := l.MemoryTotal(0, MemVRAM)
	used, _ := l.MemoryUsage(0, MemVRAM)
	assert.Equal(t, uint64(192<<30), total)
	assert.Equal(t, uint64(60<<30), used)

	for _, tc := range []struct {
		dv     uint32
		sensor TempSensor
		milliC int64
		st     Status
	}{
		{0, TempEdge, 51500, StatusSuccess},
		{0, TempJunction, 68250, StatusSuccess},
		{0, TempMemory, 57000, StatusSuccess},
		{1, TempEdge, -5000, StatusSuccess},
		{1, TempMemory, 0, StatusNotSupported},
	} {
		v, st := l.Temperature(tc.dv, tc.sensor)
		assert.Equal(t, tc.st, st, "GPU %d sensor %d", tc.dv, tc.sensor)
		assert.Equal(t, tc.milliC, v, "GPU %d sensor %d", tc.dv, tc.sensor)
	}

	socket, st := l.CurrentSocketPower(0)
	assert.Equal(t, StatusSuccess, st)
	assert.Equal(t, uint64(512345678), socket)
	avg, _ := l.PowerAverage(1)
	assert.Equal(t, uint64(45500000), avg)
	limit, _ := l.PowerCap(0)
	assert.Equal(t, uint64(750000000), limit)

	count, res, st := l.EnergyCount(0)
	assert.Equal(t, StatusSuccess, st)
	assert.Equal(t, uint64(123456789), count)
	assert.Equal(t, float32(15.25), res)

	_, st = l.FanSpeed(0)
	assert.Equal(t, StatusNotSupported, st)
	fan, _ := l.FanSpeed(1)
	fanMax, _ := l.FanSpeedMax(1)
	assert.Equal(t, int64(102), fan)
	assert.Equal(t, uint64(255), fanMax)

	var f Frequencies
	require.Equal(t, StatusSuccess, l.ClockFrequencies(0, ClockSystem, &f))
	hz, ok := f.CurrentHz()
	assert.True(t, ok)
	assert.Equal(t, uint64(2100e6), hz)
	require.Equal(t, StatusSuccess, l.ClockFrequencies(0, ClockMemory, &f))
	hz, _ = f.CurrentHz()
	assert.Equal(t, uint64(1300e6), hz)
	assert.Equal(t, StatusNotSupported, l.ClockFrequencies(1, ClockMemory, &f))

	sent, recv, pkt, st := l.PCIThroughput(0)
	assert.Equal(t, StatusSuccess, st)
	assert.Equal(t, [3]uint64{1000, 3000, 256}, [3]uint64{sent, recv, pkt})

	umc, st := l.ECCCount(0, BlockFirst)
	assert.Equal(t, StatusSuccess, st)
	assert.Equal(t, ErrorCount{Correctable: 3, Uncorrectable: 1}, umc)
	_, st = l.ECCCount(0, BlockLast)
	assert.Equal(t, StatusNotSupported, st)
	_, st = l.ECCCount(0, BlockLast<<1)
	assert.Equal(t, StatusInvalidArgs, st, "the fake checks the block argument")

	v, st := l.DriverVersion()
	assert.Equal(t, StatusSuccess, st)
	assert.Equal(t, "6.7.0-fake", v)

	_, st = l.BusyPercent(2)
	assert.Equal(t, StatusInvalidArgs, st)

	require.Equal(t, StatusSuccess, l.Shutdown())
	assert.Equal(t, int32(0), initialized())
}

func TestMissingOptionalFunction(t *testing.T) {
	l := open(t, rocmsmitest.Build(t, "-DOMIT_ENERGY"))
	assert.Equal(t, []string{SymEnergyCount}, l.Missing())
	assert.False(t, l.Has(SymEnergyCount))
	assert.True(t, l.Has(SymPowerAve))
	assert.False(t, l.Has("rsmi_no_such_function"))
	require.Equal(t, StatusSuccess, l.Init())
	defer l.Shutdown()
	_, _, st := l.EnergyCount(0)
	assert.Equal(t, StatusNoSymbol, st, "a missing function is never called")
	p, st := l.PowerAverage(0)
	assert.Equal(t, StatusSuccess, st)
	assert.Equal(t, uint64(498000000), p)
}

func TestInitFailure(t *testing.T) {
	l := open(t, rocmsmitest.Build(t, "-DINIT_STATUS=8"))
	st := l.Init()
	assert.Equal(t, StatusInitError, st)
	err := l.Err("rsmi_init", st)
	require.Error(t, err)
	assert.Equal(t, "rsmi_init: RSMI_STATUS_INIT_ERROR (8): fake: an error occurred during initialization", err.Error())
	assert.NoError(t, l.Err("rsmi_init", StatusSuccess))
}

func TestOpenErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "librocm_smi64.so.1")
	_, err := Open(missing)
	require.Error(t, err)
	assert.Contains(t, err.Error(), missing)

	// A real shared library that is not ROCm SMI: the C library.
	_, err = Open("libc.so.6")
	require.Error(t, err)
	assert.Equal(t, "libc.so.6 is not a usable ROCm SMI library: it lacks rsmi_init", err.Error())
}

// TestRealLibraryWithoutGPU loads Debian's librocm-smi64-1 (ROCm SMI 5.2),
// which scripts/install-test-deps.sh installs, in a child process so that
// what it writes to stderr can be checked.
func TestRealLibraryWithoutGPU(t *testing.T) {
	testutil.Native(t, "the test binary run again as a program")
	if os.Getenv(envRealChild) != "" {
		realChild(t)
		return
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^TestRealLibraryWithoutGPU$", "-test.count=1")
	cmd.Env = append(os.Environ(), envRealChild+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stdout:\n%s\nstderr:\n%s", &stdout, &stderr)
	out := stdout.String()
	if strings.Contains(out, realNotInstalled) {
		testutil.SkipOrFail(t, "the real ROCm SMI library %s is not installed (Debian package librocm-smi64-1): %s", DefaultLibrary, out)
	}
	require.Contains(t, out, realInitFailed, "stdout:\n%s\nstderr:\n%s", &stdout, &stderr)
	if _, err := os.Stat("/sys/class/drm"); os.IsNotExist(err) {
		// What ROCm SMI 5.2 itself prints (std::cerr) when there is no DRM
		// class in sysfs: the gpu Source documents it.
		assert.Contains(t, stderr.String(), "Failed to open drm root directory /sys/class/drm.")
		assert.Contains(t, stderr.String(), "Exception caught: rsmi_init.")
	}
}

const (
	envRealChild     = "XPUSCOPE_TEST_REAL_ROCM_SMI"
	realNotInstalled = "REAL_ROCM_SMI_NOT_INSTALLED"
	realInitFailed   = "REAL_ROCM_SMI_INIT_FAILED"
)

func realChild(t *testing.T) {
	l, err := Open(DefaultLibrary)
	if err != nil {
		os.Stdout.WriteString(realNotInstalled + " " + err.Error() + "\n")
		return
	}
	defer l.Close()
	// 5.2 predates rsmi_dev_current_socket_power_get; it has the rest.
	assert.Equal(t, []string{SymCurrentSocketPower}, l.Missing())
	st := l.Init()
	if st == StatusSuccess {
		// A machine with /sys/class/drm but no AMD GPU: init succeeds
		// with no device to monitor.
		n, st := l.NumDevices()
		assert.Equal(t, StatusSuccess, st)
		assert.Zero(t, n)
		l.Shutdown()
		return
	}
	assert.Equal(t, StatusInitError, st)
	assert.NotEmpty(t, l.StatusText(st), "rsmi_status_string describes the failure")
	os.Stdout.WriteString(realInitFailed + " " + l.Err("rsmi_init", st).Error() + "\n")
}

func TestPCIAddress(t *testing.T) {
	for _, tc := range []struct {
		bdfid uint64
		want  string
	}{
		{0x0c00, "0000:0c:00.0"},
		{1<<32 | 0xc1<<8 | 0x1f<<3 | 7, "0001:c1:1f.7"},
		{0xffff_ffff_ffff_ffff, "ffffffff:ff:1f.7"},
		{0, "0000:00:00.0"},
	} {
		assert.Equal(t, tc.want, PCIAddress(tc.bdfid), "%#x", tc.bdfid)
	}
}

func TestStatusString(t *testing.T) {
	assert.Equal(t, "RSMI_STATUS_SUCCESS", StatusSuccess.String())
	assert.Equal(t, "RSMI_STATUS_INIT_ERROR", Status(8).String())
	assert.Equal(t, "RSMI_STATUS_REFCOUNT_OVERFLOW", StatusRefcountOverflow.String())
	assert.Equal(t, "RSMI_STATUS_UNKNOWN_ERROR", StatusUnknownError.String())
	assert.Equal(t, "SYMBOL_MISSING", StatusNoSymbol.String())
	assert.Equal(t, "RSMI_STATUS_18", Status(18).String())
}

func TestCurrentHz(t *testing.T) {
	f := Frequencies{NumSupported: 2, Current: 1, Frequency: [maxFrequencies]uint64{5, 7}}
	hz, ok := f.CurrentHz()
	assert.True(t, ok)
	assert.Equal(t, uint64(7), hz)
	for _, bad := range []Frequencies{
		{NumSupported: 2, Current: 0xFFFFFFFF}, // "no current frequency is found"
		{NumSupported: 2, Current: 2},
		{NumSupported: maxFrequencies + 1, Current: 0},
		{},
	} {
		_, ok := bad.CurrentHz()
		assert.False(t, ok, "%+v", bad)
	}
}
