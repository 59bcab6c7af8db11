package rdc

// The library tests load a fake librdc_bootstrap.so built from C by the
// tests (testdata/fakerdc.c, through rdctest.Build): Debian ships no RDC,
// and its fields need an AMD GPU.

import (
	"math"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/rdc/rdctest"
	"github.com/xpuscope/xpuscope/internal/testutil"
)

func TestStructLayoutMatchesTheFake(t *testing.T) {
	lib := rdctest.Build(t)
	var layout func(out *[10]uint64)
	testutil.FakeHook(t, lib, "xpuscope_fake_rdc_layout", &layout)
	var got [10]uint64
	layout(&got)
	var v FieldValue
	var a DeviceAttributes
	assert.Equal(t, [10]uint64{
		uint64(unsafe.Sizeof(v)),
		uint64(unsafe.Offsetof(v.FieldID)),
		uint64(unsafe.Offsetof(v.Status)),
		uint64(unsafe.Offsetof(v.TS)),
		uint64(unsafe.Offsetof(v.Type)),
		uint64(unsafe.Offsetof(v.Value)),
		uint64(unsafe.Sizeof(a)),
		uint64(unsafe.Offsetof(a.DeviceID)),
		uint64(unsafe.Offsetof(a.NumOfComputeUnits)),
		uint64(unsafe.Offsetof(a.TargetGraphicsVersion)),
	}, got, "rdc_field_value and rdc_device_attributes_t as C lays them out")
	assert.Equal(t, uint64(280), got[0], "rdc_field_value: the 256-byte union at 24")
}

func open(t *testing.T, path string) *Lib {
	t.Helper()
	l, err := Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	return l
}

func TestFakeLibraryValues(t *testing.T) {
	path := rdctest.Build(t)
	var state func(out *[6]int64)
	var fail func(uint32)
	testutil.FakeHook(t, path, "xpuscope_fake_rdc_state", &state)
	testutil.FakeHook(t, path, "xpuscope_fake_rdc_fail", &fail)
	l := open(t, path)
	assert.Empty(t, l.Missing())
	_, st := l.StartEmbedded()
	assert.Equal(t, FailLoadModule, st, "the fake refuses the agent before rdc_init")
	require.Equal(t, OK, l.Init())
	h, st := l.StartEmbedded()
	require.Equal(t, OK, st)

	gpus, st := l.GPUs(h)
	require.Equal(t, OK, st)
	assert.Equal(t, []uint32{0, 1}, gpus)
	name, st := l.Name(h, 1)
	assert.Equal(t, OK, st)
	assert.Equal(t, "AMD Radeon PRO W7900 (fake)", name)

	g, st := l.GroupCreate(h, "xpuscope")
	require.Equal(t, OK, st)
	require.Equal(t, OK, l.GroupAdd(h, g, 0))
	assert.Equal(t, BadParameter, l.GroupAdd(h, g, 9))
	fields := []FieldID{FIGPUUtil, FIGPUMemoryUsage, FIPowerUsage, FIXGMITotalReadKB, FIProfOccupancy, FIProfEvalMemReadBW, FIProfSMActive}
	fg, st := l.FieldGroupCreate(h, fields, "xpuscope-f")
	require.Equal(t, OK, st)
	var v FieldValue
	assert.Equal(t, NotFound, l.Latest(h, 0, FIGPUUtil, &v), "nothing cached before the watch")
	require.Equal(t, OK, l.Watch(h, g, fg, time.Second, 3*time.Second, 3))
	assert.Equal(t, BadParameter, l.Watch(h, g, fg, time.Second, 0, 3), "the fake checks the keep age, a double")
	require.Equal(t, OK, l.UpdateAll(h, true))

	for _, tc := range []struct {
		f    FieldID
		want float64
		b    Blank
	}{
		{FIGPUUtil, 87, NotBlank},
		{FIGPUMemoryUsage, 60 << 30, NotBlank},
		{FIPowerUsage, 512000000, NotBlank},
		{FIXGMITotalReadKB, 1000000, NotBlank},
		{FIProfOccupancy, 45.5, NotBlank},
		{FIProfEvalMemReadBW, 1500, NotBlank},
		{FIProfSMActive, 0, BlankStatus},
	} {
		require.Equal(t, OK, l.Latest(h, 0, tc.f, &v), FieldName(tc.f))
		got, b := Number(&v)
		assert.Equal(t, tc.b, b, FieldName(tc.f))
		assert.Equal(t, tc.want, got, FieldName(tc.f))
		assert.Equal(t, tc.f, v.FieldID)
		assert.InDelta(t, float64(time.Now().UnixMicro()), float64(v.TS), 60e6, "µs since 1970")
	}
	assert.Equal(t, int32(NotSupported), v.Status)

	// GPU 1 holds three profiling fields.
	g1, _ := l.GroupCreate(h, "xpuscope-1")
	require.Equal(t, OK, l.GroupAdd(h, g1, 1))
	prof := []FieldID{FIProfOccupancy, FIProfActiveWaves, FIProfTensorActive, FIProfEvalMemReadBW}
	fg4, _ := l.FieldGroupCreate(h, prof, "xpuscope-4")
	st = l.Watch(h, g1, fg4, time.Second, 3*time.Second, 3)
	assert.Equal(t, InsuffResources, st)
	assert.Equal(t, "watch: RDC_ST_INSUFF_RESOURCES (11): fake: not enough resources to complete operation", l.Err("watch", st).Error())
	fg3, _ := l.FieldGroupCreate(h, prof[:3], "xpuscope-3")
	require.Equal(t, OK, l.Watch(h, g1, fg3, time.Second, 3*time.Second, 3))
	fgp, _ := l.FieldGroupCreate(h, []FieldID{FIPowerUsage}, "xpuscope-p")
	require.Equal(t, OK, l.Watch(h, g1, fgp, time.Second, 3*time.Second, 3), "not a profiling field: no counter")
	require.Equal(t, OK, l.Latest(h, 1, FIPowerUsage, &v))
	_, b := Number(&v)
	assert.Equal(t, BlankSentinel, b, "GPU 1's power is amd-smi's UINT64_MAX")

	fail(uint32(NoData))
	assert.Equal(t, NoData, l.Latest(h, 0, FIGPUUtil, &v))
	fail(0)

	var s [6]int64
	state(&s)
	assert.Equal(t, [4]int64{1, 1, 2, 4}, [4]int64(s[:4]), "initialized, embedded, GPU groups, field groups")
	require.Equal(t, OK, l.Unwatch(h, g, fg))
	require.Equal(t, OK, l.FieldGroupDestroy(h, fg))
	require.Equal(t, OK, l.GroupDestroy(h, g))
	state(&s)
	assert.Equal(t, [2]int64{1, 3}, [2]int64(s[2:4]))
	require.Equal(t, OK, l.StopEmbedded(h))
	require.Equal(t, OK, l.Shutdown())
	state(&s)
	assert.Equal(t, [2]int64{0, 0}, [2]int64(s[:2]))
}

func TestMissingOptionalFunction(t *testing.T) {
	l := open(t, rdctest.Build(t, "-DOMIT_STATUS_STRING"))
	assert.Equal(t, []string{SymStatusString}, l.Missing())
	assert.Empty(t, l.StatusText(NotSupported), "a missing function is never called")
	assert.Equal(t, "x: RDC_ST_NOT_SUPPORTED (1)", l.Err("x", NotSupported).Error())
}

func TestStartFailure(t *testing.T) {
	l := open(t, rdctest.Build(t, "-DSTART_STATUS=3"))
	require.Equal(t, OK, l.Init())
	defer l.Shutdown()
	_, st := l.StartEmbedded()
	assert.Equal(t, FailLoadModule, st)
	assert.Equal(t, "rdc_start_embedded: RDC_ST_FAIL_LOAD_MODULE (3): fake: fail to load module", l.Err("rdc_start_embedded", st).Error())
}

func TestOpenErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "librdc_bootstrap.so.1")
	_, err := Open(missing)
	require.Error(t, err)
	assert.Contains(t, err.Error(), missing)
	_, err = Open("libc.so.6")
	require.Error(t, err)
	assert.Equal(t, "libc.so.6 is not a usable RDC library: it lacks rdc_init", err.Error())
}

func TestNames(t *testing.T) {
	assert.Equal(t, "RDC_ST_OK", OK.String())
	assert.Equal(t, "RDC_ST_DISABLED_MODULE", Status(16).String())
	assert.Equal(t, "RDC_ST_UNKNOWN_ERROR", UnknownError.String())
	assert.Equal(t, "SYMBOL_MISSING", NoSymbol.String())
	assert.Equal(t, "RDC_ST_17", Status(17).String())
	assert.Equal(t, "RDC_FI_PROF_SM_ACTIVE", FieldName(FIProfSMActive))
	assert.Equal(t, "RDC_FI_XGMI_TOTAL_WRITE_KB", FieldName(717))
	assert.Equal(t, "RDC_FI_999", FieldName(999))
}

func value(typ FieldType, st Status, bits uint64) FieldValue {
	v := FieldValue{Type: typ, Status: int32(st)}
	*(*uint64)(unsafe.Pointer(&v.Value[0])) = bits
	return v
}

func TestNumber(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    FieldValue
		want float64
		b    Blank
	}{
		{"integer", value(TypeInteger, OK, 87), 87, NotBlank},
		{"negative integer", value(TypeInteger, OK, uint64(math.MaxUint64-4)), -5, NotBlank},
		{"UINT64_MAX", value(TypeInteger, OK, math.MaxUint64), 0, BlankSentinel},
		{"INT64_MAX", value(TypeInteger, OK, math.MaxInt64), 0, BlankSentinel},
		{"double", value(TypeDouble, OK, math.Float64bits(45.5)), 45.5, NotBlank},
		{"NaN", value(TypeDouble, OK, math.Float64bits(math.NaN())), 0, BlankNaN},
		{"Inf", value(TypeDouble, OK, math.Float64bits(math.Inf(1))), 0, BlankNaN},
		{"status", value(TypeDouble, NotSupported, math.Float64bits(1)), 0, BlankStatus},
		{"string", value(TypeString, OK, 0x41), 0, BlankType},
		{"blob", value(TypeBlob, OK, 0), 0, BlankType},
		{"unknown type", value(7, OK, 0), 0, BlankType},
	} {
		got, b := Number(&tc.v)
		assert.Equal(t, tc.b, b, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}
	assert.Equal(t, "status nan invalid type unknown", BlankStatus.String()+" "+BlankNaN.String()+" "+BlankSentinel.String()+" "+BlankType.String()+" "+Blank(9).String())
	v := value(TypeDouble, OK, math.Float64bits(1))
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = Number(&v) }))
}

// FuzzDecode lays arbitrary bytes over an rdc_field_value: decoding never
// panics, a measurement is never NaN, infinite or a sentinel, and a blank
// carries no value.
func FuzzDecode(f *testing.F) {
	for _, v := range []FieldValue{
		value(TypeInteger, OK, 87), value(TypeDouble, OK, math.Float64bits(45.5)), value(TypeInteger, OK, math.MaxUint64),
		value(TypeDouble, NoData, 0), value(TypeString, OK, 0),
	} {
		f.Add(unsafe.Slice((*byte)(unsafe.Pointer(&v)), 32))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v := FieldValueFromBytes(b)
		n, blank := Number(&v)
		if blank != NotBlank {
			if n != 0 {
				t.Fatalf("blank %v with value %v", blank, n)
			}
			return
		}
		if math.IsNaN(n) || math.IsInf(n, 0) || v.Status != 0 || (v.Type == TypeInteger && (v.Int64() == -1 || v.Int64() == math.MaxInt64)) {
			t.Fatalf("measurement %v from %x", n, b)
		}
	})
}
