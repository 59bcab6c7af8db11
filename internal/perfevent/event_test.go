package perfevent

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseTerms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Term
		err  string
	}{
		{in: "event=0x04,umask=0x03\n", want: []Term{{"event", 4}, {"umask", 3}}},
		{in: "event=0xff,umask=0x20", want: []Term{{"event", 0xff}, {"umask", 0x20}}},
		{in: "event=0x00", want: []Term{{"event", 0}}},
		{in: "edge,inv=0,thresh=12", want: []Term{{"edge", 1}, {"inv", 0}, {"thresh", 12}}},
		{in: "config=0x1234", want: []Term{{"config", 0x1234}}},
		{in: "", err: "empty"},
		{in: "event=", err: "invalid syntax"},
		{in: "event=0xzz", err: "invalid syntax"},
		{in: "=4", err: "bad name"},
		{in: "ev ent=4", err: "bad name"},
		{in: "event=4,event=5", err: "twice"},
		{in: "event=0x1ffffffffffffffff", err: "out of range"},
		{in: strings.Repeat("a=1,", 17) + "b=1", err: "twice"},
		{in: strings.Repeat("x", 600), err: "longer than"},
	} {
		got, err := ParseTerms(tc.in)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, "%q", tc.in)
			continue
		}
		require.NoError(t, err, "%q", tc.in)
		assert.Equal(t, tc.want, got, "%q", tc.in)
	}
	var many []string
	for i := range 17 {
		many = append(many, string(rune('a'+i))+"=1")
	}
	_, err := ParseTerms(strings.Join(many, ","))
	assert.ErrorContains(t, err, "more than 16 terms")
}

// TestEncode: event strings through real formats give the configs perf
// would open them with.
func TestEncode(t *testing.T) {
	skx := map[string]Format{
		"event": {Config, 0xff}, "umask": {Config, 0xff00}, "edge": {Config, 1 << 18},
		"inv": {Config, 1 << 23}, "thresh": {Config, 0xff << 24},
	}
	umc := map[string]Format{"event": {Config, 0xff}, "rdwrmask": {Config, 0x300}}
	for _, tc := range []struct {
		formats map[string]Format
		event   string
		want    Configs
		err     string
	}{
		{formats: skx, event: "event=0x04,umask=0x03", want: Configs{0x0304}},
		{formats: skx, event: "event=0x04,umask=0x0c", want: Configs{0x0c04}},
		{formats: skx, event: "event=0x04,umask=0x03,edge,thresh=1", want: Configs{0x0304 | 1<<18 | 1<<24}},
		{formats: umc, event: "event=0x0a,rdwrmask=0x1", want: Configs{0x10a}},
		{formats: umc, event: "event=0x0a,rdwrmask=0x2", want: Configs{0x20a}},
		{formats: skx, event: "event=0x04,config1=0x55", want: Configs{0x04, 0x55}},
		{formats: umc, event: "event=0x0a,rdwrmask=0x4", err: "wider than the field"},
		{formats: umc, event: "event=0x0a,umask=0x1", err: "no format field"},
		{formats: skx, event: "event=0x04,config=0x1", err: "set by an earlier term"},
	} {
		terms, err := ParseTerms(tc.event)
		require.NoError(t, err)
		got, err := Encode(tc.formats, terms)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.event)
			continue
		}
		require.NoError(t, err, tc.event)
		assert.Equal(t, tc.want, got, "%s: %#x", tc.event, got[0])
	}
}

func TestScaleAndUnit(t *testing.T) {
	s, err := ParseScale("6.103515625e-5\n")
	require.NoError(t, err)
	u, err := ParseUnit("MiB\n")
	require.NoError(t, err)
	b, err := BytesPerCount(s, u)
	require.NoError(t, err)
	assert.Equal(t, 64.0, b, "a CAS moves a 64-byte line")

	b, err = BytesPerCount(0, "B")
	require.NoError(t, err)
	assert.Equal(t, 1.0, b, "no scale: one byte a count")
	_, err = BytesPerCount(1, "cycles")
	assert.ErrorContains(t, err, "not a unit of bytes")
	_, err = BytesPerCount(1, "")
	assert.ErrorContains(t, err, "not a unit of bytes", "a count with no unit is not bytes")

	for _, bad := range []string{"fast", "0", "-1", "NaN", "Inf", "1e400"} {
		_, err := ParseScale(bad)
		assert.Error(t, err, bad)
	}
	for _, bad := range []string{"Mi B", "M\x00B", strings.Repeat("B", 40)} {
		_, err := ParseUnit(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func TestParseCPUList(t *testing.T) {
	for in, want := range map[string][]int{
		"0\n": {0}, "0,28": {0, 28}, "0-3,8-9": {0, 1, 2, 3, 8, 9}, "5,1,1": {1, 5},
	} {
		got, err := ParseCPUList(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "a", "3-1", "0-99999", "1,,2", "-", "0-"} {
		_, err := ParseCPUList(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func TestValueScaled(t *testing.T) {
	v, ok := Value{Count: 1000, Enabled: 100, Running: 100}.Scaled()
	assert.True(t, ok)
	assert.Equal(t, 1000.0, v, "counted all the time: the count itself")
	v, ok = Value{Count: 1000, Enabled: 100, Running: 25}.Scaled()
	assert.True(t, ok)
	assert.Equal(t, 4000.0, v, "on a counter a quarter of the time: count × enabled / running")
	_, ok = Value{Count: 0, Enabled: 100, Running: 0}.Scaled()
	assert.False(t, ok, "never ran: no estimate")
}
