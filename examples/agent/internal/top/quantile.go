package top

import (
	"math"
	"slices"
)

// histAcc sums the bucket deltas of the series of one row over an
// interval: bounds are the buckets' upper bounds, counts the observations
// in each (not cumulative), counts[len(bounds)] those above the last
// bound.
type histAcc struct {
	bounds []float64
	counts []float64
	// mixed counts the series left out because their bounds differed
	// from the first's (a model server that changed its buckets).
	mixed int
}

// add adds one series' bucket deltas.
func (h *histAcc) add(bounds, delta []float64) {
	if h.counts == nil {
		h.bounds = append([]float64(nil), bounds...)
		h.counts = append([]float64(nil), delta...)
		return
	}
	if !slices.Equal(h.bounds, bounds) {
		h.mixed++
		return
	}
	for i, d := range delta {
		h.counts[i] += d
	}
}

// total is the number of observations.
func (h *histAcc) total() float64 {
	var n float64
	for _, c := range h.counts {
		n += c
	}
	return n
}

// quantile is the q-quantile (0..1) of the observations, interpolated
// linearly within its bucket as Prometheus's histogram_quantile does: the
// first bucket from 0 (or from its bound, if negative), an observation
// above the last bound reported as the last bound. NaN with none.
func (h *histAcc) quantile(q float64) float64 {
	return quantile(q, h.bounds, h.counts)
}

func quantile(q float64, bounds, counts []float64) float64 {
	var total float64
	for _, c := range counts {
		total += c
	}
	if !(total > 0) || len(counts) != len(bounds)+1 || math.IsNaN(q) {
		return math.NaN()
	}
	q = min(max(q, 0), 1)
	rank := q * total
	var cum float64
	for i, c := range counts {
		if c <= 0 || cum+c < rank {
			cum += c
			continue
		}
		if i == len(bounds) { // above the last bound
			if len(bounds) == 0 {
				return math.NaN()
			}
			return bounds[len(bounds)-1]
		}
		lo := 0.0
		if i > 0 {
			lo = bounds[i-1]
		} else if bounds[0] <= 0 {
			return bounds[0]
		}
		return lo + (bounds[i]-lo)*(rank-cum)/c
	}
	if len(bounds) == 0 {
		return math.NaN()
	}
	return bounds[len(bounds)-1]
}
