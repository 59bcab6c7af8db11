package tpu

import (
	"math"
	"strconv"

	"github.com/xpuscope/xpuscope/internal/tpu/runtimepb"
)

// The runtime metrics read, by the names libtpu serves them under.
const (
	MetricMemoryUsage   = "tpu.runtime.hbm.memory.usage.bytes"
	MetricMemoryTotal   = "tpu.runtime.hbm.memory.total.bytes"
	MetricDutyCycle     = "tpu.runtime.tensorcore.dutycycle.percent"
	MetricHLOQueueSize  = "hlo.queue.size.gauge"
	MetricHLOExecTiming = "hlo.execution.timing.distribution.microseconds"
)

// Metrics are the runtime metrics read, in the order they are asked for.
var Metrics = []string{MetricMemoryUsage, MetricMemoryTotal, MetricDutyCycle, MetricHLOQueueSize, MetricHLOExecTiming}

// DefaultPort is the port libtpu serves its metrics on unless the
// workload's TPU_RUNTIME_METRICS_PORTS says otherwise.
const DefaultPort = 8431

// maxOrdinal bounds a device ordinal read from a response.
const maxOrdinal = 1 << 16

// deviceOrdinalKey is the attribute that names the device in the metrics
// of newer libtpu releases, inside a key-value list beside the core type.
const deviceOrdinalKey = "device_ordinal"

// Ordinal returns the device a data point is of. libtpu names it two
// ways: older releases as the int_attr of the point's own attribute (the
// memory and duty-cycle metrics), newer ones as a device_ordinal
// attribute, an int_attr or a string of digits, in the point's key-value
// list (the HLO metrics). It reports false for a point that names no
// device, or one out of range.
func Ordinal(m *runtimepb.Metric) (int, bool) {
	a := m.GetAttribute()
	if a == nil {
		return 0, false
	}
	if kvs := a.GetValue().GetKvlistAttr(); kvs != nil {
		for _, kv := range kvs.GetAttributes() {
			if kv.GetKey() == deviceOrdinalKey {
				return ordinalOf(kv.GetValue())
			}
		}
		return 0, false
	}
	return ordinalOf(a.GetValue())
}

func ordinalOf(v *runtimepb.AttrValue) (int, bool) {
	switch x := v.GetAttr().(type) {
	case *runtimepb.AttrValue_IntAttr:
		if x.IntAttr >= 0 && x.IntAttr < maxOrdinal {
			return int(x.IntAttr), true
		}
	case *runtimepb.AttrValue_StringAttr:
		if len(x.StringAttr) > 0 && len(x.StringAttr) <= 5 {
			if n, err := strconv.Atoi(x.StringAttr); err == nil && n >= 0 && n < maxOrdinal && x.StringAttr[0] != '+' {
				return n, true
			}
		}
	}
	return 0, false
}

// Number returns a gauge's or a counter's value, as a float64; false for
// another measure, a string or bool gauge, or a value that is NaN or
// infinite.
func Number(m *runtimepb.Metric) (float64, bool) {
	var v float64
	switch x := m.GetMeasure().(type) {
	case *runtimepb.Metric_Gauge:
		switch g := x.Gauge.GetValue().(type) {
		case *runtimepb.Gauge_AsDouble:
			v = g.AsDouble
		case *runtimepb.Gauge_AsInt:
			v = float64(g.AsInt)
		default:
			return 0, false
		}
	case *runtimepb.Metric_Counter:
		switch c := x.Counter.GetValue().(type) {
		case *runtimepb.Counter_AsDouble:
			v = c.AsDouble
		case *runtimepb.Counter_AsInt:
			v = float64(c.AsInt)
		default:
			return 0, false
		}
	default:
		return 0, false
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// maxBuckets bounds the buckets of a distribution the percentiles walk.
const maxBuckets = 1 << 16

// Percentile returns the upper bound of the bucket of d that holds its
// quantile q (0 < q ≤ 1): the least value at or below which a q share of
// the samples lie, to the bucket's resolution. A quantile in the overflow
// bucket, which has no upper bound, is the distribution's max where it
// is above the bucket's lower bound, else that lower bound. It reports false for a
// distribution with no sample, or bucket options it cannot read.
func Percentile(d *runtimepb.Distribution, q float64) (float64, bool) {
	counts := d.GetBucketCounts()
	if !(q > 0 && q <= 1) || len(counts) == 0 || len(counts) > maxBuckets {
		return 0, false
	}
	var total int64
	for _, c := range counts {
		if c < 0 || total > math.MaxInt64-c {
			return 0, false
		}
		total += c
	}
	if total == 0 {
		return 0, false
	}
	rank := int64(math.Ceil(q * float64(total)))
	rank = min(max(rank, 1), total)
	i, cum := 0, int64(0)
	for ; i < len(counts); i++ {
		cum += counts[i]
		if cum >= rank {
			break
		}
	}
	upper, lowerOfOverflow, ok := bounds(d.GetBucketOptions(), len(counts))
	if !ok {
		return 0, false
	}
	if i < len(upper) {
		return upper[i], true
	}
	if m := d.GetMax(); m > lowerOfOverflow && !math.IsInf(m, 0) {
		return m, true
	}
	return lowerOfOverflow, true
}

// bounds returns the upper bounds of the finite buckets (the underflow
// bucket's first) of options for a distribution of n buckets, and the
// overflow bucket's lower bound.
func bounds(o *runtimepb.Distribution_BucketOptions, n int) (upper []float64, overflow float64, ok bool) {
	switch {
	case o.GetExponentialBuckets() != nil:
		e := o.GetExponentialBuckets()
		g, scale, finite := e.GetGrowthFactor(), e.GetScale(), int(e.GetNumFiniteBuckets())
		if !(g > 1) || !(scale > 0) || math.IsInf(g, 0) || math.IsInf(scale, 0) || finite < 0 || finite+2 != n {
			return nil, 0, false
		}
		upper = make([]float64, finite+1)
		for i := range upper {
			upper[i] = scale * math.Pow(g, float64(i))
		}
	case o.GetLinearBuckets() != nil:
		l := o.GetLinearBuckets()
		w, off, finite := l.GetWidth(), l.GetOffset(), int(l.GetNumFiniteBuckets())
		if !(w > 0) || math.IsInf(w, 0) || math.IsNaN(off) || math.IsInf(off, 0) || finite < 0 || finite+2 != n {
			return nil, 0, false
		}
		upper = make([]float64, finite+1)
		for i := range upper {
			upper[i] = off + w*float64(i)
		}
	case o.GetExplicitBuckets() != nil:
		b := o.GetExplicitBuckets().GetBounds()
		if len(b) == 0 || len(b)+1 != n {
			return nil, 0, false
		}
		for i, x := range b {
			if math.IsNaN(x) || math.IsInf(x, 0) || (i > 0 && x <= b[i-1]) {
				return nil, 0, false
			}
		}
		upper = b
	default:
		return nil, 0, false
	}
	for _, u := range upper {
		if math.IsInf(u, 0) || math.IsNaN(u) {
			return nil, 0, false
		}
	}
	return upper, upper[len(upper)-1], true
}
