package top

import (
	"errors"
	"fmt"
	"io"
	"math"
	"unsafe"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/encoding/protowire"
)

// A scrape reaches the builder through one of two decoders, which hand it
// over the same way, family by family and series by series, to a consumer:
//
//   - decodeDelimited reads the Prometheus protobuf exposition
//     (io.prometheus.client.MetricFamily, length-delimited), which top asks
//     the agent for, straight from the body with protowire: no message is
//     built, and a label is a view of the body's bytes. A family the
//     consumer does not read is skipped whole.
//   - decodeFamilies reads the dto families expfmt's decoders make (of the
//     text format and OpenMetrics, which any endpoint may answer with) or a
//     prometheus.Gatherer gathers (-standalone).
//
// The first exists for speed: expfmt decodes a 20 MB scrape of 100,000
// series in 4–10 times the time (BenchmarkRefresh, "expfmt-text",
// "expfmt-proto"), allocating every label; its own doc says its decoder is
// "not intended for high-performance applications". FuzzDecoders holds the
// two to the same answers on any input.

// label is one label of a series. Its strings may be views of a buffer
// that is reused once the call that handed them over returns: a consumer
// that keeps one copies it (builder.intern).
type label struct{ name, value string }

// series is one metric of a family, valid for the call it is handed over
// in.
type series struct {
	labels []label
	// value is a counter's, a gauge's or an untyped metric's.
	value float64
	// A histogram: its count and sum, and its buckets' upper bounds
	// (ascending, +Inf left out: count is its bucket) and cumulative
	// counts.
	count, sum float64
	bounds     []float64
	cum        []float64
}

// get returns the value of label name, or "".
func (s *series) get(name string) string {
	for i := range s.labels {
		if s.labels[i].name == name {
			return s.labels[i].value
		}
	}
	return ""
}

// consumer receives a scrape.
type consumer interface {
	// family starts a family of n series; they follow only if it returns
	// true.
	family(name string, typ dto.MetricType, n int) bool
	// series hands over one series of the family.
	series(s *series)
}

// errMalformed is wrapped by the errors of a body that is not the
// protobuf exposition.
var errMalformed = errors.New("malformed protobuf exposition")

// decodeDelimited decodes the length-delimited protobuf exposition in b.
// Strings handed to c are views of b.
func decodeDelimited(b []byte, c consumer) error {
	var s series
	for off := 0; len(b) > 0; {
		n, l := protowire.ConsumeVarint(b)
		if l < 0 || n > uint64(len(b)-l) {
			return fmt.Errorf("%w: family at byte %d: bad length", errMalformed, off)
		}
		msg := b[l : l+int(n)]
		if err := decodeFamily(msg, c, &s); err != nil {
			return fmt.Errorf("family at byte %d: %w", off, err)
		}
		b = b[l+int(n):]
		off += l + int(n)
	}
	return nil
}

// Field numbers of io.prometheus.client's messages.
const (
	famName, famType, famMetric = 1, 3, 4

	metLabel, metGauge, metCounter, metUntyped, metHistogram = 1, 2, 3, 5, 7

	pairName, pairValue = 1, 2
	valueValue          = 1 // Gauge, Counter, Untyped

	histCount, histSum, histBucket, histCountFloat = 1, 2, 3, 4
	bucketCount, bucketBound, bucketCountFloat     = 1, 2, 4
)

// field is one field of a message.
type field struct {
	num   protowire.Number
	typ   protowire.Type
	bytes []byte // BytesType
	u64   uint64 // VarintType, Fixed64Type
	next  []byte // the rest of the message
	err   error  // a malformed field
}

// next reads the first field of b.
func next(b []byte) field {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return field{err: fmt.Errorf("%w: %v", errMalformed, protowire.ParseError(n))}
	}
	b = b[n:]
	f := field{num: num, typ: typ}
	switch typ {
	case protowire.BytesType:
		f.bytes, n = protowire.ConsumeBytes(b)
	case protowire.VarintType:
		f.u64, n = protowire.ConsumeVarint(b)
	case protowire.Fixed64Type:
		f.u64, n = protowire.ConsumeFixed64(b)
	default:
		n = protowire.ConsumeFieldValue(num, typ, b)
	}
	if n < 0 {
		return field{err: fmt.Errorf("%w: field %d: %v", errMalformed, num, protowire.ParseError(n))}
	}
	f.next = b[n:]
	return f
}

// str is a view of b as a string: valid while b is.
func str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

func decodeFamily(b []byte, c consumer, s *series) error {
	var name string
	typ := dto.MetricType_UNTYPED
	n := 0
	for m := b; len(m) > 0; {
		f := next(m)
		if f.err != nil {
			return f.err
		}
		switch {
		case f.num == famName && f.typ == protowire.BytesType:
			name = str(f.bytes)
		case f.num == famType && f.typ == protowire.VarintType:
			typ = dto.MetricType(int32(f.u64))
		case f.num == famMetric && f.typ == protowire.BytesType:
			n++
		}
		m = f.next
	}
	if !c.family(name, typ, n) {
		return nil
	}
	for m := b; len(m) > 0; {
		f := next(m)
		if f.err != nil {
			return f.err
		}
		if f.num == famMetric && f.typ == protowire.BytesType {
			if err := decodeMetric(f.bytes, typ, s); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			c.series(s)
		}
		m = f.next
	}
	return nil
}

func decodeMetric(b []byte, typ dto.MetricType, s *series) error {
	s.labels, s.bounds, s.cum = s.labels[:0], s.bounds[:0], s.cum[:0]
	s.value, s.count, s.sum = 0, 0, 0
	want := valueField(typ)
	var count uint64
	var countFloat float64
	for len(b) > 0 {
		f := next(b)
		if f.err != nil {
			return f.err
		}
		if f.typ == protowire.BytesType {
			switch {
			case f.num == metLabel:
				l, err := decodePair(f.bytes)
				if err != nil {
					return err
				}
				s.labels = append(s.labels, l)
			case want == 0:
			case f.num == want && want == metHistogram:
				if err := decodeHistogram(f.bytes, s, &count, &countFloat); err != nil {
					return err
				}
			case f.num == want:
				if err := decodeValue(f.bytes, &s.value); err != nil {
					return err
				}
			}
		}
		b = f.next
	}
	if want == metHistogram {
		s.count = counts(count, countFloat)
		normaliseBuckets(s)
	}
	return nil
}

// decodePair reads a LabelPair: at once where it is as encoders write it
// (the name, then the value, each once), else field by field.
func decodePair(p []byte) (label, error) {
	const nameTag, valueTag = pairName<<3 | 2, pairValue<<3 | 2
	if len(p) > 2 && p[0] == nameTag {
		n, k := protowire.ConsumeVarint(p[1:])
		if k > 0 && n <= uint64(len(p)-1-k) {
			name := p[1+k : 1+k+int(n)]
			rest := p[1+k+int(n):]
			if len(rest) > 1 && rest[0] == valueTag {
				m, j := protowire.ConsumeVarint(rest[1:])
				if j > 0 && m == uint64(len(rest)-1-j) {
					return label{str(name), str(rest[1+j:])}, nil
				}
			}
		}
	}
	var l label
	for len(p) > 0 {
		g := next(p)
		if g.err != nil {
			return label{}, g.err
		}
		if g.typ == protowire.BytesType {
			switch g.num {
			case pairName:
				l.name = str(g.bytes)
			case pairValue:
				l.value = str(g.bytes)
			}
		}
		p = g.next
	}
	return l, nil
}

// valueField is the field of a Metric that holds the value of a family of
// type typ; 0 for a type top reads no value of (a summary).
func valueField(typ dto.MetricType) protowire.Number {
	switch typ {
	case dto.MetricType_COUNTER:
		return metCounter
	case dto.MetricType_GAUGE:
		return metGauge
	case dto.MetricType_UNTYPED:
		return metUntyped
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		return metHistogram
	}
	return 0
}

// decodeValue reads a Gauge, Counter or Untyped message's value into v,
// where it has one: a message given twice merges, as protobuf's do.
func decodeValue(b []byte, v *float64) error {
	for len(b) > 0 {
		f := next(b)
		if f.err != nil {
			return f.err
		}
		if f.num == valueValue && f.typ == protowire.Fixed64Type {
			*v = math.Float64frombits(f.u64)
		}
		b = f.next
	}
	return nil
}

// decodeHistogram reads a Histogram message into s: a message given twice
// merges, as protobuf's do (its buckets concatenated, its counts and sum
// the last given).
func decodeHistogram(b []byte, s *series, count *uint64, countFloat *float64) error {
	for len(b) > 0 {
		f := next(b)
		if f.err != nil {
			return f.err
		}
		switch {
		case f.num == histCount && f.typ == protowire.VarintType:
			*count = f.u64
		case f.num == histCountFloat && f.typ == protowire.Fixed64Type:
			*countFloat = math.Float64frombits(f.u64)
		case f.num == histSum && f.typ == protowire.Fixed64Type:
			s.sum = math.Float64frombits(f.u64)
		case f.num == histBucket && f.typ == protowire.BytesType:
			var n uint64
			var nf, bound float64
			for p := f.bytes; len(p) > 0; {
				g := next(p)
				if g.err != nil {
					return g.err
				}
				switch {
				case g.num == bucketCount && g.typ == protowire.VarintType:
					n = g.u64
				case g.num == bucketCountFloat && g.typ == protowire.Fixed64Type:
					nf = math.Float64frombits(g.u64)
				case g.num == bucketBound && g.typ == protowire.Fixed64Type:
					bound = math.Float64frombits(g.u64)
				}
				p = g.next
			}
			s.bounds = append(s.bounds, bound)
			s.cum = append(s.cum, counts(n, nf))
		}
		b = f.next
	}
	return nil
}

// counts is a count given as an integer or, in a float histogram, a
// float.
func counts(n uint64, f float64) float64 {
	if f != 0 {
		return f
	}
	return float64(n)
}

// normaliseBuckets leaves out the +Inf bucket, which the text format
// writes and the protobuf one leaves implicit: the count is its.
func normaliseBuckets(s *series) {
	if k := len(s.bounds); k > 0 && math.IsInf(s.bounds[k-1], 1) {
		s.bounds, s.cum = s.bounds[:k-1], s.cum[:k-1]
	}
}

// decodeFamilies hands dto families to c.
func decodeFamilies(fams []*dto.MetricFamily, c consumer) {
	var s series
	for _, f := range fams {
		if f == nil || !c.family(f.GetName(), f.GetType(), len(f.GetMetric())) {
			continue
		}
		for _, m := range f.GetMetric() {
			if m == nil {
				continue
			}
			s.labels, s.bounds, s.cum = s.labels[:0], s.bounds[:0], s.cum[:0]
			s.value, s.count, s.sum = 0, 0, 0
			for _, l := range m.GetLabel() {
				s.labels = append(s.labels, label{l.GetName(), l.GetValue()})
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				s.value = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				s.value = m.GetGauge().GetValue()
			case dto.MetricType_UNTYPED:
				s.value = m.GetUntyped().GetValue()
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				h := m.GetHistogram()
				s.count, s.sum = counts(h.GetSampleCount(), h.GetSampleCountFloat()), h.GetSampleSum()
				for _, b := range h.GetBucket() {
					s.bounds = append(s.bounds, b.GetUpperBound())
					s.cum = append(s.cum, counts(b.GetCumulativeCount(), b.GetCumulativeCountFloat()))
				}
				normaliseBuckets(&s)
			}
			c.series(&s)
		}
	}
}

// decodeExpfmt decodes r in format with expfmt and hands its families to
// c.
func decodeExpfmt(r io.Reader, format expfmt.Format, c consumer) error {
	dec := expfmt.NewDecoder(r, format)
	var fams []*dto.MetricFamily
	for {
		f := new(dto.MetricFamily)
		err := dec.Decode(f)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		fams = append(fams, f)
	}
	decodeFamilies(fams, c)
	return nil
}
