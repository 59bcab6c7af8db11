package dcgm

import (
	"encoding/binary"
	"math"
	"strings"
	"unsafe"
)

// Blank says why a field value holds no measurement.
type Blank uint8

// Reasons a value is blank.
const (
	NotBlank             Blank = iota
	BlankValue                 // DCGM_*_BLANK: no value (profiling paused, not yet sampled)
	BlankNotFound              // DCGM_*_NOT_FOUND
	BlankNotSupported          // DCGM_*_NOT_SUPPORTED
	BlankNotPermissioned       // DCGM_*_NOT_PERMISSIONED
	BlankNaN                   // a double that is NaN or infinite
	BlankStatus                // the value's status is not DCGM_ST_OK (Value.Status says which)
	BlankType                  // the field type is not the one expected
)

var blankNames = [...]string{
	NotBlank:             "",
	BlankValue:           "blank",
	BlankNotFound:        "not_found",
	BlankNotSupported:    "not_supported",
	BlankNotPermissioned: "not_permissioned",
	BlankNaN:             "nan",
	BlankStatus:          "status",
	BlankType:            "type",
}

// String is the reason as a label: blank, not_found, not_supported,
// not_permissioned, nan, status, type.
func (b Blank) String() string {
	if int(b) < len(blankNames) {
		return blankNames[b]
	}
	return "unknown"
}

// blankOf maps a sentinel's offset from its base to its reason; offsets
// past the named ones (DCGM reserves the base plus 0 … 15) are blank too.
func blankOf(offset uint64) Blank {
	switch offset {
	case blankOffset:
		return BlankValue
	case notFoundOffset:
		return BlankNotFound
	case notSupportedOffset:
		return BlankNotSupported
	case notPermissionedOffset:
		return BlankNotPermissioned
	}
	return BlankValue
}

// Int64 reads the value as DCGM_FT_INT64 (or a timestamp).
func (v *FieldValue) Int64() int64 { return int64(binary.LittleEndian.Uint64(v.Value[:8])) }

// Float64 reads the value as DCGM_FT_DOUBLE.
func (v *FieldValue) Float64() float64 {
	return math.Float64frombits(binary.LittleEndian.Uint64(v.Value[:8]))
}

// Str reads the value as DCGM_FT_STRING: up to the first NUL, at most
// DCGM_MAX_STR_LENGTH bytes.
func (v *FieldValue) Str() string {
	b := v.Value[:maxStrLength]
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// Number decodes a numeric field value, DCGM_FT_DOUBLE or DCGM_FT_INT64,
// as a float64. A value whose status is not DCGM_ST_OK, a blank sentinel
// (DCGM_FP64_IS_BLANK / DCGM_INT64_IS_BLANK: at or above the base), a NaN
// or infinity, or another field type, is no measurement: Number returns
// why. It does not allocate.
func Number(v *FieldValue) (float64, Blank) {
	if v.Status != int32(OK) {
		return 0, BlankStatus
	}
	switch v.FieldType {
	case FTDouble:
		f := v.Float64()
		switch {
		case math.IsNaN(f) || math.IsInf(f, 0):
			return 0, BlankNaN
		case f >= FP64Blank:
			return 0, blankOf(uint64(f - FP64Blank))
		}
		return f, NotBlank
	case FTInt64:
		i := v.Int64()
		if i >= Int64Blank {
			return 0, blankOf(uint64(i - Int64Blank))
		}
		return float64(i), NotBlank
	}
	return 0, BlankType
}

// String decodes a DCGM_FT_STRING field value. A blank string
// (DCGM_STR_IS_BLANK: "<<<" at the start and ">>>" in it) says why in its
// text: <<<NULL>>>, <<<NOT_FOUND>>>, <<<NOT_SUPPORTED>>>, <<<NOT_PERM>>>.
func String(v *FieldValue) (string, Blank) {
	if v.Status != int32(OK) {
		return "", BlankStatus
	}
	if v.FieldType != FTString {
		return "", BlankType
	}
	s := v.Str()
	if strings.HasPrefix(s, StrBlankPrefix) && strings.Contains(s, StrBlankSuffix) {
		switch s {
		case "<<<NOT_FOUND>>>": // DCGM_STR_NOT_FOUND
			return "", BlankNotFound
		case "<<<NOT_SUPPORTED>>>": // DCGM_STR_NOT_SUPPORTED
			return "", BlankNotSupported
		case "<<<NOT_PERM>>>": // DCGM_STR_NOT_PERMISSIONED
			return "", BlankNotPermissioned
		}
		return "", BlankValue
	}
	return s, NotBlank
}

// FieldValueFromBytes lays b over a FieldValue, as the library writes it:
// the fuzz targets' way of making arbitrary values. b shorter than the
// struct leaves the rest zero.
func FieldValueFromBytes(b []byte) FieldValue {
	var v FieldValue
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&v)), unsafe.Sizeof(v)), b)
	return v
}
