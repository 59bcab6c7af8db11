package serving

import (
	"math"
	"slices"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/attribute"

	"github.com/xpuscope/xpuscope/semconv"
)

// The mapping layer: one server's metric families, as expfmt parsed them,
// in; the semconv vocabulary's series out. It is pure: a profile (the
// rules of a server kind), the families and the server's caps give the
// points, with no I/O and nothing kept but what the caller passes in (the
// models and label values a server was admitted, across its scrapes).
//
// The server's caps are in the values it is passed (values.lim).

// reader says how a sample gives a rule's value.
type reader uint8

const (
	// readValue reads a gauge's, counter's or untyped sample's value.
	readValue reader = iota
	// readHistogram reads a classic histogram: its bucket bounds kept,
	// its cumulative counts turned into each bucket's.
	readHistogram
	// readHistogramSum reads a histogram's sum, as a counter.
	readHistogramSum
	// readBlocksTimesSize reads vLLM's cache_config_info: the product of
	// its num_gpu_blocks and block_size labels.
	readBlocksTimesSize
)

// rule maps the metric families of one figure to one semconv metric.
type rule struct {
	// names are the family names the server exports the figure under,
	// its current one first: the first present is read and the others
	// are ignored, so that a release exporting a metric under both its
	// new and its deprecated name counts it once.
	names  []string
	metric *semconv.Metric
	read   reader
	// div is the server's unit over the metric's (1e3 for milliseconds,
	// 1e6 for microseconds, into seconds); 0 is 1. A histogram's bounds
	// and sum are divided too: the same edges in another unit.
	div float64
	// fixed are attributes of every point of the rule.
	fixed []attribute.KeyValue
	// outcome, when set, turns a sample's labels into the attributes of
	// its outcome (error.type, the finish reason) through v, and reports
	// false for a sample to leave out.
	outcome func(labels []*dto.LabelPair, v *values) ([]attribute.KeyValue, bool)
	// max makes the points folded together (the series of a server's
	// engines, or of models past the cap) keep the largest value, where
	// a sum means nothing (a ratio).
	max bool
}

// profile is how the metrics of a kind of server are read.
type profile struct {
	// model are the labels that name the model a sample is of, the first
	// present winning.
	model []string
	// own tells a family of the kind's by its name: an endpoint is
	// confirmed when it serves one.
	own   func(name string) bool
	rules []rule
}

// hist is a histogram as its server keeps it: the bucket bounds (without
// +Inf), the count of each bucket (one more than the bounds: the last
// counts past the last bound), the count and the sum.
type hist struct {
	bounds []float64
	counts []uint64
	count  uint64
	sum    float64
}

// point is one mapped series: a metric, the model, the attributes beyond
// the server's own (extra, and key, their text, which tells series apart)
// and the value.
type point struct {
	metric *semconv.Metric
	model  string
	key    string
	extra  []attribute.KeyValue
	value  float64
	hist   hist
}

// pointKey identifies a point in a mapping.
type pointKey struct {
	metric *semconv.Metric
	model  string
	key    string
}

// limits are the caps of one server's series.
type limits struct {
	models int // distinct models, past which a model's series fold into semconv.Other
	series int // points of one scrape, past which they are dropped
	values int // distinct label values on the outcome attributes, past which they read semconv.Other
}

// maxValueLen clips a label value that becomes an attribute (error.type,
// a finish reason): the servers' words are short.
const maxValueLen = 64

// values admits a server's models and outcome label values, at most
// limits.models and limits.values of them; it is kept across the
// server's scrapes, so that a model keeps its series.
type values struct {
	lim    limits
	models map[string]bool
	words  map[string]bool
}

// admitModel returns m, or semconv.Other once the server has its cap of
// models and m is not one of them.
func (v *values) admitModel(m string) (string, bool) {
	if m == "" || v.models[m] {
		return m, true
	}
	if len(v.models) >= v.lim.models {
		return semconv.Other, false
	}
	if v.models == nil {
		v.models = map[string]bool{}
	}
	v.models[m] = true
	return m, true
}

// word returns w clipped, or semconv.Other once the server has its cap
// of words and w is not one of them.
func (v *values) word(w string) string {
	if len(w) > maxValueLen {
		w = w[:maxValueLen]
	}
	if v.words[w] {
		return w
	}
	if len(v.words) >= v.lim.values {
		return semconv.Other
	}
	if v.words == nil {
		v.words = map[string]bool{}
	}
	v.words[w] = true
	return w
}

// overflow counts what one mapping left out or folded, by
// semconv.ServingReason*.
type overflow struct {
	models, series, invalid int
}

// mapping is the result of mapping one scrape, reused from scrape to
// scrape of a server.
type mapping struct {
	points   []point
	index    map[pointKey]int
	over     overflow
	own      int    // families of the server's kind
	fallback string // the model of the samples without a model label
}

// reset empties m for another scrape, keeping its buffers.
func (m *mapping) reset() {
	for i := range m.points {
		p := &m.points[i]
		p.extra, p.hist.bounds, p.hist.counts = p.extra[:0], p.hist.bounds[:0], p.hist.counts[:0]
	}
	m.points = m.points[:0]
	clear(m.index)
	m.over = overflow{}
	m.own = 0
	m.fallback = ""
}

// mapFamilies maps one scrape of a server of profile p into m. model is
// the server's model where its metrics carry none (TGI's, from /info);
// "" lets a server whose samples name exactly one model give it to those
// that name none (vLLM's cache_config_info).
func mapFamilies(p *profile, fams map[string]*dto.MetricFamily, model string, v *values, m *mapping) {
	m.reset()
	if m.index == nil {
		m.index = map[pointKey]int{}
	}
	for name := range fams {
		if p.own(name) {
			m.own++
		}
	}
	m.fallback = model
	if m.fallback == "" {
		m.fallback = soleModel(p, fams)
	}
	for i := range p.rules {
		r := &p.rules[i]
		for _, name := range r.names {
			f := fams[name]
			if f == nil {
				continue
			}
			for _, s := range f.GetMetric() {
				if s != nil {
					mapSample(p, r, s, v, m)
				}
			}
			break // the first name present is the figure
		}
	}
}

// soleModel returns the one model the samples of p's rules name, or ""
// when they name none or several.
func soleModel(p *profile, fams map[string]*dto.MetricFamily) string {
	sole := ""
	for i := range p.rules {
		for _, name := range p.rules[i].names {
			for _, s := range fams[name].GetMetric() {
				mdl := labelOf(s.GetLabel(), p.model)
				switch {
				case mdl == "":
				case sole == "":
					sole = mdl
				case sole != mdl:
					return ""
				}
			}
		}
	}
	return sole
}

// labelOf returns the value of the first of names the labels hold.
func labelOf(labels []*dto.LabelPair, names []string) string {
	for _, n := range names {
		for _, l := range labels {
			if l.GetName() == n {
				return l.GetValue()
			}
		}
	}
	return ""
}

// mapSample adds the point of one sample of rule r.
func mapSample(p *profile, r *rule, s *dto.Metric, v *values, m *mapping) {
	var extra []attribute.KeyValue
	if r.outcome != nil {
		var ok bool
		if extra, ok = r.outcome(s.GetLabel(), v); !ok {
			return
		}
	}
	model := labelOf(s.GetLabel(), p.model)
	if model == "" {
		model = m.fallback
	}
	model, admitted := v.admitModel(model)
	key := pointKey{metric: r.metric, model: model, key: attrKey(r.fixed, extra)}
	div := r.div
	if div == 0 {
		div = 1
	}
	i, found := m.index[key]
	if !found {
		if len(m.points) >= v.lim.series {
			m.over.series++
			return
		}
		i = len(m.points)
		m.points = slices.Grow(m.points, 1)[:i+1]
		pt := &m.points[i]
		pt.metric, pt.model, pt.key, pt.value = r.metric, model, key.key, 0
		pt.extra = append(append(pt.extra[:0], r.fixed...), extra...)
		pt.hist.count, pt.hist.sum = 0, 0
		if !readInto(r, s, div, pt, false) {
			m.points = m.points[:i]
			m.over.invalid++
			return
		}
		m.index[key] = i
	} else if !readInto(r, s, div, &m.points[i], true) {
		m.over.invalid++
		return
	}
	if !admitted {
		m.over.models++
	}
}

// attrKey is the text of a point's attributes beyond the server's, which
// tells its series apart: "" for none.
func attrKey(fixed, extra []attribute.KeyValue) string {
	if len(fixed) == 0 && len(extra) == 0 {
		return ""
	}
	var b strings.Builder
	for _, kvs := range [2][]attribute.KeyValue{fixed, extra} {
		for _, kv := range kvs {
			b.WriteString(string(kv.Key))
			b.WriteByte('=')
			b.WriteString(kv.Value.Emit())
			b.WriteByte(0)
		}
	}
	return b.String()
}

// readInto reads sample s of rule r into pt, or folds it into pt's value
// when fold is set (a sum, or the largest value for a rule that says
// max). It reports false for a sample it cannot read: no value, a value
// not finite, a counter below zero, a histogram whose counts decrease or
// whose bounds differ from those it is folded with.
func readInto(r *rule, s *dto.Metric, div float64, pt *point, fold bool) bool {
	switch r.read {
	case readValue, readHistogramSum, readBlocksTimesSize:
		x, ok := scalar(r.read, s)
		if !ok || math.IsNaN(x) || math.IsInf(x, 0) || (r.metric.Kind == semconv.Counter && x < 0) {
			return false
		}
		x /= div
		switch {
		case !fold:
			pt.value = x
		case r.max:
			pt.value = max(pt.value, x)
		default:
			pt.value += x
		}
		return true
	case readHistogram:
		return readHist(s.GetHistogram(), div, &pt.hist, fold)
	}
	return false
}

// scalar returns a sample's value as reader rd reads it.
func scalar(rd reader, s *dto.Metric) (float64, bool) {
	switch rd {
	case readHistogramSum:
		h := s.GetHistogram()
		if h == nil || h.SampleSum == nil {
			return 0, false
		}
		return h.GetSampleSum(), true
	case readBlocksTimesSize:
		blocks, err1 := strconv.ParseUint(labelOf(s.GetLabel(), []string{"num_gpu_blocks"}), 10, 40)
		size, err2 := strconv.ParseUint(labelOf(s.GetLabel(), []string{"block_size"}), 10, 20)
		if err1 != nil || err2 != nil {
			return 0, false
		}
		return float64(blocks * size), true
	}
	switch {
	case s.Gauge != nil:
		return s.Gauge.GetValue(), true
	case s.Counter != nil:
		return s.Counter.GetValue(), true
	case s.Untyped != nil:
		return s.Untyped.GetValue(), true
	}
	return 0, false
}

// maxBuckets bounds the buckets of a histogram the mapping keeps: TGI's
// have 100, most servers' a few dozen.
const maxBuckets = 256

// readHist reads a classic histogram into h, or adds it to h when fold is
// set, which needs the same bounds. Bounds are divided by div. The +Inf
// bucket, where the exposition has one, is the overflow bucket. The
// histogram is checked whole before h changes.
func readHist(ph *dto.Histogram, div float64, h *hist, fold bool) bool {
	if ph == nil || len(ph.GetBucket()) > maxBuckets+1 {
		return false
	}
	count, ok := wholeCount(ph.SampleCount, ph.SampleCountFloat)
	sum := ph.GetSampleSum() / div
	if !ok || math.IsNaN(sum) || math.IsInf(sum, 0) {
		return false
	}
	bs := ph.GetBucket()
	// The buckets in bound order (the exposition may list them in any),
	// sorted in place: the family is this scrape's own.
	slices.SortFunc(bs, func(a, b *dto.Bucket) int {
		switch ua, ub := a.GetUpperBound(), b.GetUpperBound(); {
		case ua < ub:
			return -1
		case ua > ub:
			return 1
		}
		return 0
	})
	n := len(bs)
	if n > 0 && math.IsInf(bs[n-1].GetUpperBound(), 1) {
		n--
	}
	if n > maxBuckets || (fold && len(h.bounds) != n) {
		return false
	}
	var prev uint64
	for i := range n {
		ub := bs[i].GetUpperBound() / div
		if math.IsNaN(ub) || math.IsInf(ub, 0) || (i > 0 && !(ub > bs[i-1].GetUpperBound()/div)) || (fold && h.bounds[i] != ub) {
			return false
		}
		c, ok := wholeCount(bs[i].CumulativeCount, bs[i].CumulativeCountFloat)
		if !ok || c < prev || c > count {
			return false
		}
		prev = c
	}
	if !fold {
		h.bounds, h.counts = h.bounds[:0], h.counts[:0]
		for i := range n {
			h.bounds = append(h.bounds, bs[i].GetUpperBound()/div)
		}
		for range n + 1 {
			h.counts = append(h.counts, 0)
		}
		h.count, h.sum = 0, 0
	}
	prev = 0
	for i := range n {
		c, _ := wholeCount(bs[i].CumulativeCount, bs[i].CumulativeCountFloat)
		h.counts[i] += c - prev
		prev = c
	}
	h.counts[n] += count - prev
	h.count += count
	h.sum += sum
	return true
}

// wholeCount returns a count given as an integer, or as a float that is
// a whole number.
func wholeCount(u *uint64, f *float64) (uint64, bool) {
	if f != nil && *f != 0 {
		x := *f
		if x < 0 || x != math.Trunc(x) || x >= 1<<53 {
			return 0, false
		}
		return uint64(x), true
	}
	if u == nil {
		return 0, false
	}
	return *u, true
}
