package dcgm

// The library tests load a fake libdcgm.so.4 built from C by the tests
// (testdata/fakedcgm.c, through dcgmtest.Build): Debian ships no DCGM, and
// its profiling fields need a datacenter GPU.

import (
	"math"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/dcgm/dcgmtest"
	"github.com/xpuscope/xpuscope/internal/dynlib"
	"github.com/xpuscope/xpuscope/internal/testutil"
)

func TestStructLayoutMatchesTheFake(t *testing.T) {
	lib := dcgmtest.Build(t)
	var layout func(out *[20]uint64)
	testutil.FakeHook(t, lib, "xpuscope_fake_dcgm_layout", &layout)
	var got [20]uint64
	layout(&got)
	var fv FieldValue
	var cp ConnectParams
	var pair GroupEntityPair
	var info MigEntityInfo
	var hi MigHierarchyInfo
	var h MigHierarchy
	assert.Equal(t, [20]uint64{
		uint64(unsafe.Sizeof(fv)),
		uint64(unsafe.Offsetof(fv.Version)),
		uint64(unsafe.Offsetof(fv.FieldID)),
		uint64(unsafe.Offsetof(fv.FieldType)),
		uint64(unsafe.Offsetof(fv.Status)),
		uint64(unsafe.Offsetof(fv.TS)),
		uint64(unsafe.Offsetof(fv.Value)),
		uint64(unsafe.Sizeof(cp)),
		uint64(unsafe.Offsetof(cp.TimeoutMs)),
		uint64(unsafe.Offsetof(cp.AddressIsUnixSocket)),
		uint64(unsafe.Sizeof(pair)),
		uint64(unsafe.Sizeof(info)),
		uint64(unsafe.Offsetof(info.NVMLInstanceID)),
		uint64(unsafe.Offsetof(info.NVMLComputeInstanceID)),
		uint64(unsafe.Sizeof(hi)),
		uint64(unsafe.Offsetof(hi.Info)),
		uint64(unsafe.Sizeof(h)),
		uint64(unsafe.Offsetof(h.EntityList)),
		uint64(makeVersion(unsafe.Sizeof(cp), 2)),
		uint64(makeVersion(unsafe.Sizeof(h), 2)),
	}, got, "dcgmFieldValue_v1, dcgmConnectV2Params_v2, the MIG hierarchy and their versions as C lays them out")
	assert.Equal(t, uint64(4120), got[0], "dcgmFieldValue_v1: a 4096-byte union at 24")
}

func open(t *testing.T, path string) *Lib {
	t.Helper()
	l, err := Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	return l
}

var profFields = []FieldID{
	FIProfGrEngineActive, FIProfSMActive, FIProfSMOccupancy, FIProfPipeTensorActive,
	FIProfDRAMActive, FIProfPipeFP64Active, FIProfPipeFP32Active, FIProfPipeFP16Active,
	FIProfPCIeTxBytes, FIProfPCIeRxBytes, FIProfNVLinkTxBytes, FIProfNVLinkRxBytes,
}

// number decodes v, failing the test on a status.
func number(t *testing.T, v *FieldValue) (float64, Blank) {
	t.Helper()
	return Number(v)
}

func TestFakeLibraryValues(t *testing.T) {
	path := dcgmtest.Build(t, "-DFAKE_MIG")
	var state func(out *[8]int64)
	testutil.FakeHook(t, path, "xpuscope_fake_dcgm_state", &state)
	l := open(t, path)
	assert.Empty(t, l.Missing())

	_, r := l.StartEmbedded()
	assert.Equal(t, Uninitialized, r, "the fake refuses calls before dcgmInit")
	require.Equal(t, OK, l.Init())
	h, r := l.StartEmbedded()
	require.Equal(t, OK, r)

	gpus, r := l.SupportedGPUs(h)
	require.Equal(t, OK, r)
	assert.Equal(t, []uint32{0, 1}, gpus)

	var hier MigHierarchy
	require.Equal(t, OK, l.Hierarchy(h, &hier))
	require.Equal(t, uint32(4), hier.Count, "two GPU instances and a compute instance in each")
	ci := hier.EntityList[1]
	assert.Equal(t, GroupEntityPair{FEGPUCI, 0}, ci.Entity)
	assert.Equal(t, GroupEntityPair{FEGPUI, 0}, ci.Parent)
	assert.Equal(t, "GPU-00000001-aaaa-bbbb-cccc-dddddddddddd", dynlib.BufString(ci.Info.GPUUUID[:]))
	assert.Equal(t, [2]uint32{9, 0}, [2]uint32{ci.Info.NVMLInstanceID, ci.Info.NVMLComputeInstanceID})

	g, r := l.GroupCreate(h, "xpuscope")
	require.Equal(t, OK, r)
	require.Equal(t, OK, l.GroupAddEntity(h, g, FEGPU, 0))
	assert.Equal(t, BadParam, l.GroupAddEntity(h, g, FEGPU, 7), "no GPU 7")
	ids := []FieldID{FIDevUUID, FIDevName, FIDevPCIBusID}
	fg, r := l.FieldGroupCreate(h, ids, "xpuscope-identity")
	require.Equal(t, OK, r)
	_, r = l.FieldGroupCreate(h, ids, "xpuscope-identity")
	assert.Equal(t, BadParam, r, "field group names are unique")
	values := make([]FieldValue, len(profFields))
	require.Equal(t, OK, l.LatestValues(h, FEGPU, 0, ids, values))
	assert.Equal(t, int32(NotWatched), values[0].Status, "not watched yet")

	require.Equal(t, OK, l.Watch(h, g, fg, 10*time.Second, 20*time.Second, 2))
	require.Equal(t, OK, l.UpdateAll(h, true))
	require.Equal(t, OK, l.LatestValues(h, FEGPU, 0, ids, values))
	for i, want := range []string{"GPU-00000000-aaaa-bbbb-cccc-dddddddddddd", "NVIDIA H100 80GB HBM3", "00000000:18:00.0"} {
		s, b := String(&values[i])
		assert.Equal(t, NotBlank, b, FieldName(ids[i]))
		assert.Equal(t, want, s, FieldName(ids[i]))
	}
	require.Equal(t, OK, l.LatestValues(h, FENone, 0, []FieldID{FIDriverVersion}, values))
	v, _ := String(&values[0])
	assert.Equal(t, "550.54.15", v)

	pg, r := l.FieldGroupCreate(h, profFields, "xpuscope-prof")
	require.Equal(t, OK, r)
	require.Equal(t, OK, l.Watch(h, g, pg, time.Second, 2*time.Second, 0))
	assert.Equal(t, BadParam, l.Watch(h, g, pg, time.Second, 0, 0), "the fake checks the keep age, a double")
	require.Equal(t, OK, l.LatestValues(h, FEGPU, 0, profFields, values))
	want := []struct {
		v float64
		b Blank
	}{
		{0.875, NotBlank}, {0.75, NotBlank}, {0.5, NotBlank}, {0.625, NotBlank}, {0.25, NotBlank},
		{0.0625, NotBlank}, {0.375, NotBlank}, {0, BlankValue},
		{1.5e9, NotBlank}, {2.5e9, NotBlank}, {40e9, NotBlank}, {0, BlankNotSupported},
	}
	for i, w := range want {
		got, b := number(t, &values[i])
		assert.Equal(t, w.b, b, FieldName(profFields[i]))
		assert.Equal(t, w.v, got, FieldName(profFields[i]))
		assert.Equal(t, profFields[i], values[i].FieldID)
	}

	// GPU 1 cannot watch FP64 with the tensor pipe.
	g1, _ := l.GroupCreate(h, "xpuscope-1")
	require.Equal(t, OK, l.GroupAddEntity(h, g1, FEGPU, 1))
	require.Equal(t, OK, l.GroupAddEntity(h, g1, FEGPUCI, 0))
	assert.Equal(t, ProfilingMultiPass, l.Watch(h, g1, pg, time.Second, 2*time.Second, 0))
	noFP64 := []FieldID{FIProfGrEngineActive, FIProfDRAMActive, FIProfPipeTensorActive}
	pg1, _ := l.FieldGroupCreate(h, noFP64, "xpuscope-prof-1")
	require.Equal(t, OK, l.Watch(h, g1, pg1, time.Second, 2*time.Second, 0))
	require.Equal(t, OK, l.LatestValues(h, FEGPU, 1, noFP64, values))
	_, b := Number(&values[1])
	assert.Equal(t, BlankNaN, b, "GPU 1's DRAM activity is NaN")
	require.Equal(t, OK, l.LatestValues(h, FEGPUCI, 0, noFP64, values))
	f, _ := Number(&values[2])
	assert.Equal(t, 0.3125*0.5, f, "compute instance 0")

	var st [8]int64
	state(&st)
	assert.Equal(t, int64(2), st[3], "entity groups")
	assert.Equal(t, int64(3), st[4], "field groups")
	require.Equal(t, OK, l.Unwatch(h, g, pg))
	require.Equal(t, OK, l.GroupDestroy(h, g))
	require.Equal(t, OK, l.FieldGroupDestroy(h, pg))
	state(&st)
	assert.Equal(t, int64(1), st[3])
	assert.Equal(t, int64(2), st[4])

	require.Equal(t, OK, l.StopEmbedded(h))
	require.Equal(t, OK, l.Shutdown())
	state(&st)
	assert.Equal(t, [3]int64{0, 0, 0}, [3]int64(st[:3]), "initialized, embedded, connected")
}

func TestConnect(t *testing.T) {
	path := dcgmtest.Build(t)
	var connected func(out *byte, n uint32, isUnix *uint32) int32
	testutil.FakeHook(t, path, "xpuscope_fake_dcgm_connected", &connected)
	l := open(t, path)
	require.Equal(t, OK, l.Init())
	defer l.Shutdown()
	_, r := l.Connect("no-hostengine:5555", false, time.Second)
	assert.Equal(t, ConnectionNotValid, r)
	assert.Equal(t, "DCGM_ST_CONNECTION_NOT_VALID", r.String())
	h, r := l.Connect("/run/nv-hostengine.sock", true, time.Second)
	require.Equal(t, OK, r, "the fake checks dcgmConnectV2Params_version2")
	var buf [256]byte
	var isUnix uint32
	require.Equal(t, int32(1), connected(&buf[0], uint32(len(buf)), &isUnix))
	assert.Equal(t, "/run/nv-hostengine.sock", dynlib.BufString(buf[:]))
	assert.Equal(t, uint32(1), isUnix)
	require.Equal(t, OK, l.Disconnect(h))
}

func TestFailuresAndBusy(t *testing.T) {
	path := dcgmtest.Build(t, "-DPROF_BUSY")
	var fail func(int32)
	var busy func(int32)
	testutil.FakeHook(t, path, "xpuscope_fake_dcgm_fail", &fail)
	testutil.FakeHook(t, path, "xpuscope_fake_dcgm_busy", &busy)
	l := open(t, path)
	require.Equal(t, OK, l.Init())
	defer l.Shutdown()
	h, _ := l.StartEmbedded()
	defer l.StopEmbedded(h)
	g, _ := l.GroupCreate(h, "g")
	require.Equal(t, OK, l.GroupAddEntity(h, g, FEGPU, 0))
	fg, _ := l.FieldGroupCreate(h, []FieldID{FIProfSMActive}, "p")
	r := l.Watch(h, g, fg, time.Second, 2*time.Second, 0)
	assert.Equal(t, InUse, r, "another profiler holds the counters")
	err := l.Err("dcgmWatchFields", r)
	require.Error(t, err)
	assert.Equal(t, "dcgmWatchFields: DCGM_ST_IN_USE (-34): fake: the requested operation could not be completed because the affected resource is in use", err.Error())
	busy(0)
	require.Equal(t, OK, l.Watch(h, g, fg, time.Second, 2*time.Second, 0))
	values := make([]FieldValue, 1)
	require.Equal(t, OK, l.LatestValues(h, FEGPU, 0, []FieldID{FIProfSMActive}, values))
	v, b := Number(&values[0])
	assert.Equal(t, [2]any{0.75, NotBlank}, [2]any{v, b})
	busy(1)
	require.Equal(t, OK, l.LatestValues(h, FEGPU, 0, []FieldID{FIProfSMActive}, values))
	_, b = Number(&values[0])
	assert.Equal(t, BlankValue, b, "DCGM stores blanks while another profiler holds the counters")
	fail(int32(ConnectionNotValid))
	assert.Equal(t, ConnectionNotValid, l.LatestValues(h, FEGPU, 0, []FieldID{FIProfSMActive}, values))
	assert.Equal(t, BadParam, l.LatestValues(h, FEGPU, 0, nil, values), "no field: not called")
}

func TestMissingOptionalFunction(t *testing.T) {
	l := open(t, dcgmtest.Build(t, "-DOMIT_HIERARCHY"))
	assert.Equal(t, []string{SymGpuInstanceHier}, l.Missing())
	require.Equal(t, OK, l.Init())
	defer l.Shutdown()
	h, _ := l.StartEmbedded()
	defer l.StopEmbedded(h)
	var hier MigHierarchy
	assert.Equal(t, NoSymbol, l.Hierarchy(h, &hier), "a missing function is never called")
	assert.Equal(t, "SYMBOL_MISSING", NoSymbol.String())
}

func TestInitFailure(t *testing.T) {
	l := open(t, dcgmtest.Build(t, "-DINIT_STATUS=-7"))
	r := l.Init()
	assert.Equal(t, InitError, r)
	assert.Equal(t, "dcgmInit: DCGM_ST_INIT_ERROR (-7): fake: DCGM initialization error", l.Err("dcgmInit", r).Error())
	assert.NoError(t, l.Err("dcgmInit", OK))
}

func TestOpenErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libdcgm.so.4")
	_, err := Open(missing)
	require.Error(t, err)
	assert.Contains(t, err.Error(), missing)
	_, err = Open("libc.so.6")
	require.Error(t, err)
	assert.Equal(t, "libc.so.6 is not a usable DCGM library: it lacks dcgmInit", err.Error())
}

func TestReturnString(t *testing.T) {
	assert.Equal(t, "DCGM_ST_OK", OK.String())
	assert.Equal(t, "DCGM_ST_PROFILING_MULTI_PASS", ProfilingMultiPass.String())
	assert.Equal(t, "DCGM_ST_GPUS_DETACHED", Return(-67).String())
	assert.Equal(t, "DCGM_ST_-99", Return(-99).String())
	assert.Equal(t, "DCGM_FI_PROF_SM_ACTIVE", FieldName(FIProfSMActive))
	assert.Equal(t, "DCGM_FI_PROF_NVLINK_RX_BYTES", FieldName(FIProfNVLinkRxBytes))
	assert.Equal(t, "DCGM_FI_1013", FieldName(1013))
}

// value builds a field value as the library would write it.
func value(typ byte, status Return, set func(*FieldValue)) FieldValue {
	v := FieldValue{FieldType: uint16(typ), Status: int32(status)}
	if set != nil {
		set(&v)
	}
	return v
}

func dbl(f float64) func(*FieldValue) {
	return func(v *FieldValue) { *(*float64)(unsafe.Pointer(&v.Value[0])) = f }
}

func i64(i int64) func(*FieldValue) {
	return func(v *FieldValue) { *(*int64)(unsafe.Pointer(&v.Value[0])) = i }
}

func str(s string) func(*FieldValue) {
	return func(v *FieldValue) { copy(v.Value[:], s) }
}

func TestNumber(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    FieldValue
		want float64
		b    Blank
	}{
		{"double", value(FTDouble, OK, dbl(0.75)), 0.75, NotBlank},
		{"zero", value(FTDouble, OK, dbl(0)), 0, NotBlank},
		{"just below the blank", value(FTDouble, OK, dbl(FP64Blank-1)), FP64Blank - 1, NotBlank},
		{"DCGM_FP64_BLANK", value(FTDouble, OK, dbl(FP64Blank)), 0, BlankValue},
		{"DCGM_FP64_NOT_FOUND", value(FTDouble, OK, dbl(FP64Blank+1)), 0, BlankNotFound},
		{"DCGM_FP64_NOT_SUPPORTED", value(FTDouble, OK, dbl(FP64Blank+2)), 0, BlankNotSupported},
		{"DCGM_FP64_NOT_PERMISSIONED", value(FTDouble, OK, dbl(FP64Blank+3)), 0, BlankNotPermissioned},
		{"above the named blanks", value(FTDouble, OK, dbl(FP64Blank+9)), 0, BlankValue},
		{"far above", value(FTDouble, OK, dbl(1e300)), 0, BlankValue},
		{"NaN", value(FTDouble, OK, dbl(math.NaN())), 0, BlankNaN},
		{"+Inf", value(FTDouble, OK, dbl(math.Inf(1))), 0, BlankNaN},
		{"-Inf", value(FTDouble, OK, dbl(math.Inf(-1))), 0, BlankNaN},
		{"int64", value(FTInt64, OK, i64(1_500_000_000)), 1.5e9, NotBlank},
		{"negative int64", value(FTInt64, OK, i64(-5)), -5, NotBlank},
		{"DCGM_INT64_BLANK", value(FTInt64, OK, i64(Int64Blank)), 0, BlankValue},
		{"DCGM_INT64_NOT_SUPPORTED", value(FTInt64, OK, i64(Int64Blank+2)), 0, BlankNotSupported},
		{"DCGM_INT64_NOT_PERMISSIONED", value(FTInt64, OK, i64(Int64Blank+3)), 0, BlankNotPermissioned},
		{"max int64", value(FTInt64, OK, i64(math.MaxInt64)), 0, BlankValue},
		{"status", value(FTDouble, NoData, dbl(0.5)), 0, BlankStatus},
		{"a string where a number was asked for", value(FTString, OK, str("x")), 0, BlankType},
	} {
		got, b := Number(&tc.v)
		assert.Equal(t, tc.b, b, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}
}

func TestString(t *testing.T) {
	for _, tc := range []struct {
		v    FieldValue
		want string
		b    Blank
	}{
		{value(FTString, OK, str("GPU-1")), "GPU-1", NotBlank},
		{value(FTString, OK, str("<<<NULL>>>")), "", BlankValue},
		{value(FTString, OK, str("<<<NOT_FOUND>>>")), "", BlankNotFound},
		{value(FTString, OK, str("<<<NOT_SUPPORTED>>>")), "", BlankNotSupported},
		{value(FTString, OK, str("<<<NOT_PERM>>>")), "", BlankNotPermissioned},
		{value(FTString, OK, str("<<<a")), "<<<a", NotBlank},
		{value(FTString, NoPermission, str("GPU-1")), "", BlankStatus},
		{value(FTDouble, OK, dbl(1)), "", BlankType},
	} {
		got, b := String(&tc.v)
		assert.Equal(t, tc.b, b, "%q", tc.v.Str())
		assert.Equal(t, tc.want, got)
	}
	var long FieldValue
	long.FieldType = FTString
	for i := range long.Value {
		long.Value[i] = 'x'
	}
	s, _ := String(&long)
	assert.Len(t, s, maxStrLength, "a string without a NUL is cut at DCGM_MAX_STR_LENGTH")
	assert.Equal(t, "blank not_found not_supported not_permissioned nan status type unknown",
		BlankValue.String()+" "+BlankNotFound.String()+" "+BlankNotSupported.String()+" "+BlankNotPermissioned.String()+" "+
			BlankNaN.String()+" "+BlankStatus.String()+" "+BlankType.String()+" "+Blank(99).String())
}

func TestNumberDoesNotAllocate(t *testing.T) {
	v := value(FTDouble, OK, dbl(0.5))
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = Number(&v) }))
}

// FuzzDecode lays arbitrary bytes over a dcgmFieldValue_v1, as a library
// might write them: decoding never panics, a measurement is never a blank
// sentinel, NaN or infinite, and a blank carries no value.
func FuzzDecode(f *testing.F) {
	for _, v := range []FieldValue{
		value(FTDouble, OK, dbl(0.5)), value(FTDouble, OK, dbl(FP64Blank+2)), value(FTInt64, OK, i64(Int64Blank)),
		value(FTString, OK, str("<<<NULL>>>")), value(FTString, OK, str("GPU-x")), value(FTDouble, NoData, nil),
	} {
		f.Add(unsafe.Slice((*byte)(unsafe.Pointer(&v)), 40))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v := FieldValueFromBytes(b)
		n, blank := Number(&v)
		if blank == NotBlank {
			if math.IsNaN(n) || math.IsInf(n, 0) || (v.FieldType == FTDouble && n >= FP64Blank) || (v.FieldType == FTInt64 && v.Int64() >= Int64Blank) {
				t.Fatalf("measurement %v from %x", n, b)
			}
		} else if n != 0 {
			t.Fatalf("blank %v with value %v", blank, n)
		}
		s, sb := String(&v)
		if len(s) > maxStrLength || (sb != NotBlank && s != "") {
			t.Fatalf("string %q (%v)", s, sb)
		}
	})
}
