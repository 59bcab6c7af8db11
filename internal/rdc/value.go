package rdc

import (
	"math"
	"unsafe"
)

// Blank says why a field value holds no measurement.
type Blank uint8

// Reasons a value is blank.
const (
	NotBlank Blank = iota
	// BlankStatus: the value's status is not RDC_ST_OK.
	BlankStatus
	// BlankNaN: a DOUBLE that is NaN or infinite.
	BlankNaN
	// BlankSentinel: an INTEGER at the maximum of uint64 or int64: what
	// amd-smi's GPU metrics hold for a value the GPU does not report,
	// which RDC passes through.
	BlankSentinel
	// BlankType: a STRING or BLOB, or a type rdc.h does not name.
	BlankType
)

var blankNames = [...]string{NotBlank: "", BlankStatus: "status", BlankNaN: "nan", BlankSentinel: "invalid", BlankType: "type"}

// String is the reason as a label: status, nan, invalid, type.
func (b Blank) String() string {
	if int(b) < len(blankNames) {
		return blankNames[b]
	}
	return "unknown"
}

// Number decodes an INTEGER or DOUBLE field value as a float64, or says
// why it holds no measurement. It does not allocate.
func Number(v *FieldValue) (float64, Blank) {
	if v.Status != int32(OK) {
		return 0, BlankStatus
	}
	switch v.Type {
	case TypeInteger:
		i := v.Int64()
		if i == -1 || i == math.MaxInt64 { // UINT64_MAX, INT64_MAX
			return 0, BlankSentinel
		}
		return float64(i), NotBlank
	case TypeDouble:
		f := v.Float64()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, BlankNaN
		}
		return f, NotBlank
	}
	return 0, BlankType
}

// FieldValueFromBytes lays b over a FieldValue, as the library writes
// it: the fuzz target's way of making arbitrary values.
func FieldValueFromBytes(b []byte) FieldValue {
	var v FieldValue
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&v)), unsafe.Sizeof(v)), b)
	return v
}
