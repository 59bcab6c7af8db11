package gpu

import (
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPCIAddress(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"00000000:3B:00.0", "0000:3b:00.0"},
		{"00000001:C1:1F.7", "0001:c1:1f.7"},
		{"0000:3b:00.0", "0000:3b:00.0"},
		{" 00000000:01:00.0 ", "0000:01:00.0"},
		{"00000000:3B:20.0", "00000000:3b:20.0"}, // device 0x20 is out of range: kept as given
		{"garbage", "garbage"},
		{"", ""},
	} {
		assert.Equal(t, tc.want, pciAddress(tc.in), "pciAddress(%q)", tc.in)
	}
}

func TestMIGProfile(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"NVIDIA A100-SXM4-40GB MIG 1g.5gb", "1g.5gb"},
		{"NVIDIA H100 80GB HBM3 MIG 1c.3g.40gb", "1c.3g.40gb"},
		{"NVIDIA H100 80GB HBM3 MIG 1g.10gb+me", "1g.10gb+me"},
		{"NVIDIA H100 80GB HBM3", ""},
		{"NVIDIA X MIG ", ""},
		{"NVIDIA X MIG 1g.5gb; rm -rf", ""},
		{"MIG 1g.5gb", ""}, // no space before MIG: not NVML's form
	} {
		assert.Equal(t, tc.want, migProfile(tc.in), "migProfile(%q)", tc.in)
	}
}

func TestCString(t *testing.T) {
	b := busID("00000000:3B:00.0")
	assert.Equal(t, "00000000:3B:00.0", cString(b[:]), "cString")
	full := make([]int8, 4)
	for i := range full {
		full[i] = 'a'
	}
	assert.Equal(t, "aaaa", cString(full), "cString without NUL")
}

func TestFieldUint64(t *testing.T) {
	fv := nvml.FieldValue{ValueType: uint32(nvml.VALUE_TYPE_UNSIGNED_INT), Value: [8]byte{0x01, 0x02, 0, 0, 0xff, 0xff, 0xff, 0xff}}
	v, ok := fieldUint64(&fv)
	assert.True(t, ok, "uint32 field = %#x, %v", v, ok)
	assert.Equal(t, uint64(0x0201), v, "uint32 field = %#x, %v", v, ok)
	fv = nvml.FieldValue{ValueType: uint32(nvml.VALUE_TYPE_UNSIGNED_LONG_LONG), Value: [8]byte{0, 0, 0, 0, 0, 0, 0, 1}}
	v, ok = fieldUint64(&fv)
	assert.True(t, ok, "uint64 field = %#x, %v", v, ok)
	assert.Equal(t, uint64(1<<56), v, "uint64 field = %#x, %v", v, ok)
	fv = nvml.FieldValue{ValueType: uint32(nvml.VALUE_TYPE_DOUBLE)}
	_, ok = fieldUint64(&fv)
	assert.False(t, ok, "a double is not read as a counter")
}

func FuzzPCIAddress(f *testing.F) {
	for _, s := range []string{"00000000:3B:00.0", "0000:3b:00.0", "ffffffff:ff:1f.7", ":::", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := pciAddress(s)
		require.LessOrEqual(t, len(got), maxBusID, "pciAddress(%q) = %q is longer than %d", s, got, maxBusID)
		require.False(t, strings.ContainsAny(got, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"), "pciAddress(%q) = %q is not lower case", s, got)
	})
}

func FuzzMIGProfile(f *testing.F) {
	for _, s := range []string{"NVIDIA A100-SXM4-40GB MIG 1g.5gb", "NVIDIA H100 MIG 1c.3g.40gb", " MIG ", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p := migProfile(s)
		require.LessOrEqual(t, len(p), 32, "migProfile(%q) = %q", s, p)
		if p != "" {
			require.True(t, strings.HasSuffix(s, p) || strings.HasSuffix(strings.TrimSpace(s), p), "migProfile(%q) = %q", s, p)
		}
	})
}

func FuzzCString(f *testing.F) {
	f.Add([]byte("NVIDIA H100\x00junk"))
	f.Fuzz(func(t *testing.T, b []byte) {
		a := make([]int8, len(b))
		for i := range b {
			a[i] = int8(b[i])
		}
		s := cString(a)
		require.LessOrEqual(t, len(s), len(b), "cString(%q) = %q", b, s)
		require.NotContains(t, s, "\x00", "cString(%q) = %q", b, s)
	})
}

func TestCapacity(t *testing.T) {
	for _, tc := range []struct {
		major, minor, cores, sms, threads int
	}{
		{9, 0, 132 * 128, 132, 2048}, // H100 SXM5
		{8, 0, 108 * 64, 108, 2048},  // A100
		{8, 9, 58 * 128, 58, 1536},   // L40S
		{7, 5, 40 * 64, 40, 1024},    // T4
		{9, 0, 1000, 0, 0},           // does not divide
		{5, 2, 2048, 0, 0},           // not in the table
		{9, 0, 0, 0, 0},
	} {
		sms, threads := capacity(tc.major, tc.minor, tc.cores)
		assert.Equal(t, tc.sms, sms, "capacity(%d.%d, %d) = %d, %d; want %d, %d", tc.major, tc.minor, tc.cores, sms, threads, tc.sms, tc.threads)
		assert.Equal(t, tc.threads, threads, "capacity(%d.%d, %d) = %d, %d; want %d, %d", tc.major, tc.minor, tc.cores, sms, threads, tc.sms, tc.threads)
	}
}
