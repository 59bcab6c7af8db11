package tfevents

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
)

// Events built field by field with protowire, for what the Python
// fixture does not write: fields out of order, members of a oneof set one
// after the other, malformed encodings.

func tagged(b []byte, num protowire.Number, typ protowire.Type) []byte {
	return protowire.AppendTag(b, num, typ)
}

func withBytes(b []byte, num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(tagged(b, num, protowire.BytesType), v)
}

func simpleValue(tag string, v float32) []byte {
	b := withBytes(nil, valueTag, []byte(tag))
	return protowire.AppendFixed32(tagged(b, valueSimpleValue, protowire.Fixed32Type), math.Float32bits(v))
}

func summaryOf(values ...[]byte) []byte {
	var b []byte
	for _, v := range values {
		b = withBytes(b, summaryValue, v)
	}
	return b
}

type decoded struct {
	tag   string
	step  int64
	value float64
}

func decodeAll(t *testing.T, b []byte) ([]decoded, Event, error) {
	t.Helper()
	var out []decoded
	ev, err := DecodeEvent(b, func(ev Event, s Scalar) { out = append(out, decoded{string(s.Tag), ev.Step, s.Value}) })
	return out, ev, err
}

func TestDecodeEventOrderAndOneofs(t *testing.T) {
	sum := summaryOf(simpleValue("loss", 1.5))
	// The summary before the step and time: the scalars still get them.
	b := withBytes(nil, eventSummary, sum)
	b = protowire.AppendVarint(tagged(b, eventStep, protowire.VarintType), 42)
	b = protowire.AppendFixed64(tagged(b, eventWallTime, protowire.Fixed64Type), math.Float64bits(1e9))
	got, ev, err := decodeAll(t, b)
	require.NoError(t, err)
	assert.Equal(t, []decoded{{"loss", 42, 1.5}}, got)
	assert.Equal(t, 1e9, ev.WallTime)
	assert.True(t, ev.Summary)

	// Two summaries merge; a file_version after them wins the oneof.
	two := withBytes(withBytes(nil, eventSummary, sum), eventSummary, summaryOf(simpleValue("lr", 0.5)))
	got, _, err = decodeAll(t, two)
	require.NoError(t, err)
	assert.Equal(t, []decoded{{"loss", 0, 1.5}, {"lr", 0, 0.5}}, got)
	got, ev, err = decodeAll(t, withBytes(two, eventFileVersion, []byte("brain.Event:2")))
	require.NoError(t, err)
	assert.Empty(t, got, "the oneof's last member is file_version")
	assert.True(t, ev.FileVersion)
	assert.False(t, ev.Summary)
	// A summary after another member: only it.
	got, _, err = decodeAll(t, withBytes(withBytes(withBytes(nil, eventSummary, sum), 4, []byte("graph")), eventSummary, summaryOf(simpleValue("after", 2))))
	require.NoError(t, err)
	assert.Equal(t, []decoded{{"after", 0, 2}}, got)

	// A value's oneof: the last member wins; the last tag too.
	v := simpleValue("first", 3)
	v = withBytes(v, valueHisto, nil)
	got, _, err = decodeAll(t, withBytes(nil, eventSummary, summaryOf(v)))
	require.NoError(t, err)
	assert.Empty(t, got, "a histogram set after the simple value")
	v = withBytes(simpleValue("first", 3), valueTag, []byte("second"))
	got, _, err = decodeAll(t, withBytes(nil, eventSummary, summaryOf(v)))
	require.NoError(t, err)
	assert.Equal(t, []decoded{{"second", 0, 3}}, got)

	// Unknown fields anywhere are skipped.
	unk := protowire.AppendVarint(tagged(nil, 99, protowire.VarintType), 7)
	b = append(append([]byte(nil), unk...), withBytes(nil, eventSummary, append(append([]byte(nil), unk...), summaryOf(append(simpleValue("x", 1), unk...))...))...)
	got, _, err = decodeAll(t, b)
	require.NoError(t, err)
	assert.Equal(t, []decoded{{"x", 0, 1}}, got)
}

func TestDecodeTensorShapes(t *testing.T) {
	tensor := func(shape []byte, vals []float32) []byte {
		b := protowire.AppendVarint(tagged(nil, tensorDType, protowire.VarintType), uint64(DTFloat))
		if shape != nil {
			b = withBytes(b, tensorShape, shape)
		}
		var packed []byte
		for _, v := range vals {
			packed = protowire.AppendFixed32(packed, math.Float32bits(v))
		}
		return withBytes(b, tensorFloat, packed)
	}
	dim := func(size int64) []byte {
		return withBytes(nil, shapeDim, protowire.AppendVarint(tagged(nil, dimSize, protowire.VarintType), uint64(size)))
	}
	for _, tc := range []struct {
		name   string
		tensor []byte
		ok     bool
	}{
		{"rank 0", tensor(nil, []float32{2}), true},
		{"rank 0, empty shape", tensor([]byte{}, []float32{2}), true},
		{"[1]", tensor(dim(1), []float32{2}), true},
		{"[1,1]", tensor(append(dim(1), dim(1)...), []float32{2}), true},
		{"[2]", tensor(dim(2), []float32{2, 3}), false},
		{"[0]", tensor(dim(0), nil), false},
		{"[-1]", tensor(dim(-1), []float32{2}), false},
		{"unknown rank", tensor(protowire.AppendVarint(tagged(nil, shapeUnknownRank, protowire.VarintType), 1), []float32{2}), false},
		{"rank 0, two values", tensor(nil, []float32{2, 3}), false},
		{"rank 0, no value", tensor(nil, nil), false},
	} {
		v := withBytes(withBytes(nil, valueTag, []byte("t")), valueTensor, tc.tensor)
		got, _, err := decodeAll(t, withBytes(nil, eventSummary, summaryOf(v)))
		require.NoError(t, err, tc.name)
		if tc.ok {
			assert.Equal(t, []decoded{{"t", 0, 2}}, got, tc.name)
		} else {
			assert.Empty(t, got, tc.name)
		}
	}
	// Another dtype: not read.
	i32 := withBytes(protowire.AppendVarint(tagged(nil, tensorDType, protowire.VarintType), 3), tensorContent, []byte{1, 0, 0, 0})
	got, _, err := decodeAll(t, withBytes(nil, eventSummary, summaryOf(withBytes(nil, valueTensor, i32))))
	require.NoError(t, err)
	assert.Empty(t, got, "DT_INT32")
}

func TestDecodeEventMalformed(t *testing.T) {
	good := withBytes(protowire.AppendVarint(tagged(nil, eventStep, protowire.VarintType), 1), eventSummary, summaryOf(simpleValue("loss", 1)))
	for name, b := range map[string][]byte{
		"truncated":                  good[:len(good)-2],
		"a bad tag":                  {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		"step as fixed64":            protowire.AppendFixed64(tagged(nil, eventStep, protowire.Fixed64Type), 1),
		"wall_time as varint":        protowire.AppendVarint(tagged(nil, eventWallTime, protowire.VarintType), 1),
		"summary as varint":          protowire.AppendVarint(tagged(nil, eventSummary, protowire.VarintType), 1),
		"value as varint":            withBytes(nil, eventSummary, protowire.AppendVarint(tagged(nil, summaryValue, protowire.VarintType), 1)),
		"simple_value as varint":     withBytes(nil, eventSummary, summaryOf(protowire.AppendVarint(tagged(nil, valueSimpleValue, protowire.VarintType), 1))),
		"tensor truncated":           withBytes(nil, eventSummary, summaryOf(withBytes(nil, valueTensor, []byte{0x0a, 0x05}))),
		"float_val not a multiple 4": withBytes(nil, eventSummary, summaryOf(withBytes(nil, valueTensor, withBytes(nil, tensorFloat, []byte{1, 2, 3})))),
	} {
		_, _, err := decodeAll(t, b)
		assert.ErrorIs(t, err, ErrMalformed, name)
	}
	_, _, err := decodeAll(t, good)
	assert.NoError(t, err)
}

// The half and bfloat16 bit patterns of IEEE 754 and of bfloat16.
func TestHalfAndBFloat16(t *testing.T) {
	for bits, want := range map[uint16]float64{
		0x3c00: 1, 0xc000: -2, 0x7bff: 65504, 0x0001: math.Ldexp(1, -24), 0x0400: math.Ldexp(1, -14),
		0x3555: 0.333251953125, 0x0000: 0, 0x7c00: math.Inf(1), 0xfc00: math.Inf(-1),
	} {
		assert.Equal(t, want, HalfToFloat(bits), "half %#04x", bits)
	}
	assert.True(t, math.IsNaN(HalfToFloat(0x7e00)))
	assert.True(t, math.Signbit(HalfToFloat(0x8000)), "negative zero")
	for bits, want := range map[uint16]float64{0x3f80: 1, 0x4049: 3.140625, 0xc000: -2, 0x7f80: math.Inf(1)} {
		assert.Equal(t, want, BFloat16ToFloat(bits), "bfloat16 %#04x", bits)
	}
}

func TestDecodeEventAllocatesNothing(t *testing.T) {
	b := withBytes(protowire.AppendVarint(tagged(nil, eventStep, protowire.VarintType), 7), eventSummary,
		summaryOf(simpleValue("loss", 1), simpleValue("lr", 2)))
	sum := 0.0
	allocs := testing.AllocsPerRun(100, func() {
		_, _ = DecodeEvent(b, func(_ Event, s Scalar) { sum += s.Value })
	})
	assert.Zero(t, allocs)
	assert.Equal(t, 3.0*101, sum, "every value was seen, in each of the 101 runs")
}

// FuzzDecodeEvent: any bytes decode without a panic or an allocation,
// and each scalar's tag lies in the record.
func FuzzDecodeEvent(f *testing.F) {
	f.Add(withBytes(protowire.AppendVarint(tagged(nil, eventStep, protowire.VarintType), 7), eventSummary,
		summaryOf(simpleValue("loss", 1))))
	f.Add(withBytes(nil, eventSummary, summaryOf(withBytes(withBytes(nil, valueTag, []byte("t")), valueTensor,
		withBytes(protowire.AppendVarint(tagged(nil, tensorDType, protowire.VarintType), uint64(DTHalf)), tensorHalf, []byte{0x80, 0x78})))))
	f.Add([]byte{0x2a, 0x03, 0x0a, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		allocs := testing.AllocsPerRun(1, func() {
			_, _ = DecodeEvent(b, func(_ Event, s Scalar) {
				if len(s.Tag) > 0 && !bytes.Contains(b, s.Tag) {
					t.Fatal("a tag that is not the record's")
				}
			})
		})
		if allocs != 0 {
			t.Fatalf("%v allocations", allocs)
		}
	})
}
