package tfevents

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers, from TensorFlow's protocol buffers.
const (
	// Event (event.proto).
	eventWallTime     = 1 // double
	eventStep         = 2 // int64
	eventFileVersion  = 3 // oneof what: string
	eventSummary      = 5 // oneof what: Summary
	eventMetaGraphDef = 9 // oneof what: the last member
	// Summary (summary.proto).
	summaryValue = 1 // repeated Value
	// Summary.Value.
	valueTag         = 1 // string
	valueSimpleValue = 2 // oneof value: float
	valueOldHisto    = 3 // oneof value: bytes
	valueImage       = 4 // oneof value: Image
	valueHisto       = 5 // oneof value: HistogramProto
	valueAudio       = 6 // oneof value: Audio
	valueTensor      = 8 // oneof value: TensorProto
	// TensorProto (tensor.proto).
	tensorDType   = 1  // DataType
	tensorShape   = 2  // TensorShapeProto
	tensorContent = 4  // bytes
	tensorFloat   = 5  // repeated float, packed
	tensorDouble  = 6  // repeated double, packed
	tensorHalf    = 13 // repeated int32, packed: DT_HALF's and DT_BFLOAT16's bits
	// TensorShapeProto (tensor_shape.proto).
	shapeDim         = 2 // repeated Dim
	shapeUnknownRank = 3 // bool
	// TensorShapeProto.Dim.
	dimSize = 1 // int64
)

// DataType is a tensor's element type, TensorFlow's DataType enum
// (types.proto).
type DataType int32

// The DataType values of the scalars read.
const (
	DTFloat    DataType = 1
	DTDouble   DataType = 2
	DTBFloat16 DataType = 14
	DTHalf     DataType = 19
)

func (d DataType) String() string {
	switch d {
	case DTFloat:
		return "DT_FLOAT"
	case DTDouble:
		return "DT_DOUBLE"
	case DTBFloat16:
		return "DT_BFLOAT16"
	case DTHalf:
		return "DT_HALF"
	}
	return fmt.Sprintf("DataType(%d)", int32(d))
}

// Event is what DecodeEvent reads of an Event besides its scalars.
type Event struct {
	// WallTime is when the event was written, seconds since the Unix
	// epoch.
	WallTime float64
	// Step is the event's global step.
	Step int64
	// Summary says the event carries a summary (scalars or not).
	Summary bool
	// FileVersion says the event is the one a writer starts a file with
	// ("brain.Event:2").
	FileVersion bool
}

// Scalar is one scalar value of an Event's summary.
type Scalar struct {
	// Tag is the value's tag ("train/loss"). Its bytes are the record's:
	// valid only during the callback.
	Tag []byte
	// Value is the scalar, widened to float64.
	Value float64
	// DType is the type it was written as: DTFloat for simple_value.
	DType DataType
	// Tensor says it came in a tensor (TF2, new-style PyTorch), not in
	// simple_value.
	Tensor bool
}

// ErrMalformed is what DecodeEvent returns for bytes that are not a
// well-formed Event.
var ErrMalformed = errors.New("tfevents: malformed event")

// DecodeEvent reads the Event serialized in b and calls scalar with each
// scalar value of its summary, in order: a value whose simple_value is
// set, or whose tensor holds one element of DT_FLOAT, DT_DOUBLE, DT_HALF
// or DT_BFLOAT16 (rank 0, as tf.summary.scalar and new-style PyTorch
// write it, or any shape of one element), from tensor_content or from
// float_val, double_val or half_val. Other values (histograms, images,
// audio, text, tensors of several elements) are passed over. scalar may
// be nil. DecodeEvent allocates nothing.
//
// Fields are read as protocol buffers are: unknown ones are skipped, the
// last of a singular field wins, and of the members of a oneof the last
// one set. A malformed event (a truncated field, a field of the wrong
// wire type) is an error wrapping ErrMalformed; the event's own fields
// are checked before any scalar is handed out, the scalars that come
// before a malformation inside its summary are handed out.
func DecodeEvent(b []byte, scalar func(ev Event, s Scalar)) (Event, error) {
	var ev Event
	what := protowire.Number(0) // the last member of oneof what seen
	whatAt := 0                 // where it was
	for i := 0; i < len(b); {
		num, typ, n := protowire.ConsumeTag(b[i:])
		if n < 0 {
			return ev, errTruncated
		}
		at := i
		i += n
		switch {
		case num == eventWallTime && typ == protowire.Fixed64Type:
			v, n := protowire.ConsumeFixed64(b[i:])
			if n < 0 {
				return ev, errTruncated
			}
			ev.WallTime = math.Float64frombits(v)
			i += n
			continue
		case num == eventStep && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b[i:])
			if n < 0 {
				return ev, errTruncated
			}
			ev.Step = int64(v)
			i += n
			continue
		case num == eventWallTime || num == eventStep:
			return ev, errWireType
		case num >= eventFileVersion && num <= eventMetaGraphDef:
			if typ != protowire.BytesType {
				return ev, errWireType
			}
			if num != what || num != eventSummary {
				whatAt = at // a summary after another member starts afresh
			}
			what = num
		}
		n = protowire.ConsumeFieldValue(num, typ, b[i:])
		if n < 0 {
			return ev, errTruncated
		}
		i += n
	}
	ev.FileVersion = what == eventFileVersion
	if what != eventSummary {
		return ev, nil
	}
	ev.Summary = true
	for i := whatAt; i < len(b); {
		num, typ, n := protowire.ConsumeTag(b[i:])
		i += n // checked above
		if num != eventSummary {
			i += protowire.ConsumeFieldValue(num, typ, b[i:])
			continue
		}
		sum, n := protowire.ConsumeBytes(b[i:])
		i += n
		if err := decodeSummary(&ev, sum, scalar); err != nil {
			return ev, err
		}
	}
	return ev, nil
}

// The ways an event is malformed: static, so that DecodeEvent allocates
// nothing even when it fails.
var (
	errTruncated = fmt.Errorf("%w: a field cut short, or a bad tag", ErrMalformed)
	errWireType  = fmt.Errorf("%w: a field of the wrong wire type", ErrMalformed)
	errPacked    = fmt.Errorf("%w: a packed array of a length its type does not divide", ErrMalformed)
)

// decodeSummary hands out the scalars of a Summary.
func decodeSummary(ev *Event, b []byte, scalar func(Event, Scalar)) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errTruncated
		}
		b = b[n:]
		if num == summaryValue && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return errTruncated
			}
			b = b[n:]
			s, ok, err := decodeValue(v)
			if err != nil {
				return err
			}
			if ok && scalar != nil {
				scalar(*ev, s)
			}
			continue
		}
		if num == summaryValue {
			return errWireType
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return errTruncated
		}
		b = b[n:]
	}
	return nil
}

// decodeValue reads a Summary.Value, and reports whether it is a scalar.
func decodeValue(b []byte) (Scalar, bool, error) {
	var s Scalar
	var tensor []byte
	kind := protowire.Number(0) // the last member of oneof value
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return s, false, errTruncated
		}
		b = b[n:]
		switch {
		case num == valueTag && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return s, false, errTruncated
			}
			s.Tag, b = v, b[n:]
			continue
		case num == valueSimpleValue && typ == protowire.Fixed32Type:
			v, n := protowire.ConsumeFixed32(b)
			if n < 0 {
				return s, false, errTruncated
			}
			s.Value, kind, b = float64(math.Float32frombits(v)), num, b[n:]
			continue
		case num == valueTensor && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return s, false, errTruncated
			}
			tensor, kind, b = v, num, b[n:]
			continue
		case num == valueTag || num == valueSimpleValue || num == valueTensor:
			return s, false, errWireType
		case num == valueOldHisto || num == valueImage || num == valueHisto || num == valueAudio:
			kind = num
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return s, false, errTruncated
		}
		b = b[n:]
	}
	switch kind {
	case valueSimpleValue:
		s.DType = DTFloat
		return s, true, nil
	case valueTensor:
		v, dt, ok, err := decodeTensor(tensor)
		s.Value, s.DType, s.Tensor = v, dt, true
		return s, ok, err
	}
	return s, false, nil
}

// decodeTensor reads a TensorProto, and reports whether it holds one
// element of a floating-point type read.
func decodeTensor(b []byte) (float64, DataType, bool, error) {
	var (
		dtype           DataType
		content         []byte
		hasContent      bool
		elements        = uint64(1) // of the shape; rank 0 is one
		shapeKnown      = true
		floats, doubles int
		halves          int
		fval            float32
		dval            float64
		hval            uint16
	)
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, 0, false, errTruncated
		}
		b = b[n:]
		switch {
		case num == tensorDType && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return 0, 0, false, errTruncated
			}
			dtype, b = DataType(int32(v)), b[n:]
			continue
		case num == tensorShape && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return 0, 0, false, errTruncated
			}
			b = b[n:]
			e, known, err := shapeElements(v)
			if err != nil {
				return 0, 0, false, err
			}
			elements, shapeKnown = e, known // a second shape merges into the first: rare enough to take the last
			continue
		case num == tensorContent && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return 0, 0, false, errTruncated
			}
			content, hasContent, b = v, true, b[n:]
			continue
		case num == tensorFloat && typ == protowire.Fixed32Type:
			v, n := protowire.ConsumeFixed32(b)
			if n < 0 {
				return 0, 0, false, errTruncated
			}
			fval, b = math.Float32frombits(v), b[n:]
			floats++
			continue
		case num == tensorFloat && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 || len(v)%4 != 0 {
				return 0, 0, false, errPacked
			}
			if len(v) >= 4 {
				fval = math.Float32frombits(binary.LittleEndian.Uint32(v[len(v)-4:]))
			}
			floats += len(v) / 4
			b = b[n:]
			continue
		case num == tensorDouble && typ == protowire.Fixed64Type:
			v, n := protowire.ConsumeFixed64(b)
			if n < 0 {
				return 0, 0, false, errTruncated
			}
			dval, b = math.Float64frombits(v), b[n:]
			doubles++
			continue
		case num == tensorDouble && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 || len(v)%8 != 0 {
				return 0, 0, false, errPacked
			}
			if len(v) >= 8 {
				dval = math.Float64frombits(binary.LittleEndian.Uint64(v[len(v)-8:]))
			}
			doubles += len(v) / 8
			b = b[n:]
			continue
		case num == tensorHalf && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return 0, 0, false, errTruncated
			}
			hval, b = uint16(v), b[n:]
			halves++
			continue
		case num == tensorHalf && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return 0, 0, false, errTruncated
			}
			b = b[n:]
			for len(v) > 0 {
				x, m := protowire.ConsumeVarint(v)
				if m < 0 {
					return 0, 0, false, errTruncated
				}
				hval, v = uint16(x), v[m:]
				halves++
			}
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return 0, 0, false, errTruncated
		}
		b = b[n:]
	}
	if !shapeKnown || elements != 1 {
		return 0, dtype, false, nil
	}
	switch dtype {
	case DTFloat:
		switch {
		case hasContent && len(content) == 4:
			return float64(math.Float32frombits(binary.LittleEndian.Uint32(content))), dtype, true, nil
		case !hasContent && floats == 1:
			return float64(fval), dtype, true, nil
		}
	case DTDouble:
		switch {
		case hasContent && len(content) == 8:
			return math.Float64frombits(binary.LittleEndian.Uint64(content)), dtype, true, nil
		case !hasContent && doubles == 1:
			return dval, dtype, true, nil
		}
	case DTHalf, DTBFloat16:
		h, ok := hval, !hasContent && halves == 1
		if hasContent && len(content) == 2 {
			h, ok = binary.LittleEndian.Uint16(content), true
		}
		if !ok {
			break
		}
		if dtype == DTHalf {
			return HalfToFloat(h), dtype, true, nil
		}
		return BFloat16ToFloat(h), dtype, true, nil
	}
	return 0, dtype, false, nil
}

// shapeElements returns the number of elements of a TensorShapeProto
// (capped at 2: only whether it is one matters), and whether the shape is
// known.
func shapeElements(b []byte) (uint64, bool, error) {
	elements, known := uint64(1), true
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, false, errTruncated
		}
		b = b[n:]
		switch {
		case num == shapeDim && typ == protowire.BytesType:
			d, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return 0, false, errTruncated
			}
			b = b[n:]
			size := int64(0) // proto3's default: a dim of size 0
			for len(d) > 0 {
				dn, dt, m := protowire.ConsumeTag(d)
				if m < 0 {
					return 0, false, errTruncated
				}
				d = d[m:]
				if dn == dimSize && dt == protowire.VarintType {
					v, m := protowire.ConsumeVarint(d)
					if m < 0 {
						return 0, false, errTruncated
					}
					size, d = int64(v), d[m:]
					continue
				}
				m = protowire.ConsumeFieldValue(dn, dt, d)
				if m < 0 {
					return 0, false, errTruncated
				}
				d = d[m:]
			}
			switch {
			case size < 0:
				known = false
			case size != 1:
				elements = min(elements*uint64(min(size, 2)), 2)
			}
			continue
		case num == shapeUnknownRank && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return 0, false, errTruncated
			}
			b = b[n:]
			if v != 0 {
				known = false
			}
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return 0, false, errTruncated
		}
		b = b[n:]
	}
	return elements, known, nil
}

// HalfToFloat widens an IEEE 754 half-precision number's bits.
func HalfToFloat(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	frac := float64(h & 0x3ff)
	switch exp {
	case 0: // zero or subnormal
		return sign * math.Ldexp(frac, -24)
	case 0x1f:
		if frac != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	}
	return sign * math.Ldexp(1024+frac, exp-25)
}

// BFloat16ToFloat widens a bfloat16's bits: the upper half of a float32.
func BFloat16ToFloat(h uint16) float64 {
	return float64(math.Float32frombits(uint32(h) << 16))
}
