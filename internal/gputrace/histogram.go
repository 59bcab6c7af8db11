package gputrace

import (
	"math"
	"time"

	"github.com/xpuscope/xpuscope/internal/meterx"
	"github.com/xpuscope/xpuscope/semconv"
)

// The histograms are recorded per event (four per launch). Through the
// OpenTelemetry SDK a Record costs ~200 ns (SDK v1.47: it looks the
// attribute set up, locks and finds the bucket each time), four times the
// rest of a launch's handling. With a Producer the Source keeps them
// itself instead, in the registry's bucket bounds, for a few ns a record,
// and the Producer reports them at collection (producer.go); without one
// they go through the MeterProvider's histograms, at the SDK's cost.

// number is what a histogram records.
type number interface{ int64 | float64 }

// hist is one histogram series the Source keeps itself: what the SDK's
// explicit-bucket aggregation keeps (counts per bucket, count, sum, min
// and max), cumulative from start.
type hist[N number] struct {
	counts        []uint64 // per bucket: len(bounds)+1, the last unbounded
	count         uint64
	sum, min, max N
	start         time.Time
}

func newHist[N number](b *buckets, start time.Time) hist[N] {
	return hist[N]{counts: make([]uint64, len(b.bounds)+1), start: start}
}

// record adds v; b are the buckets the hist was made with.
func (h *hist[N]) record(v N, b *buckets) {
	i := b.index(float64(v))
	h.counts[i]++
	if h.count == 0 {
		h.min, h.max = v, v
	} else {
		h.min, h.max = min(h.min, v), max(h.max, v)
	}
	h.count++
	h.sum += v
}

// buckets finds the bucket of a value among a histogram's bounds: the
// first bound not below it (len(bounds) if none), as OpenTelemetry's
// explicit buckets count. A search would branch on each comparison, and
// a stream of launches comes in no order a branch predictor could learn;
// buckets instead starts from the bounds below the value's binade (a
// table by its exponent) and steps over the few in it, without a branch.
// Non-negative floats order as their bits do (below 1<<63), so that
// bound < v is the sign of bound - v. The registry's bounds are
// non-negative, and a value at or below 0 goes where 0 goes.
type buckets struct {
	bounds []float64
	bits   []int64 // the bounds' bits, then math.MaxInt64
	// first are, by exponent, the bounds below the binade; steps is the
	// most bounds within one binade.
	first [1 << 11]uint8
	steps int
}

func newBuckets(bounds []float64) *buckets {
	b := &buckets{bounds: bounds}
	perBinade := map[int64]int{}
	for _, v := range bounds {
		bits := int64(math.Float64bits(max(v, 0)))
		b.bits = append(b.bits, bits)
		perBinade[bits>>52]++
		b.steps = max(b.steps, perBinade[bits>>52])
	}
	b.bits = append(b.bits, math.MaxInt64)
	for e := range b.first {
		n := 0
		for _, bits := range b.bits[:len(bounds)] {
			if bits < int64(e)<<52 {
				n++
			}
		}
		b.first[e] = uint8(n)
	}
	return b
}

// index returns v's bucket.
func (b *buckets) index(v float64) int {
	var x int64
	if v > 0 {
		x = int64(math.Float64bits(v))
	}
	i := int(b.first[x>>52&(1<<11-1)])
	for range b.steps {
		i -= int((b.bits[i] - x) >> 63) // -1 where the bound is below v
	}
	return i
}

// The buckets of the histograms.
var (
	gridBuckets           = newBuckets(semconv.CUDAKernelGridSize.Buckets)
	blockBuckets          = newBuckets(semconv.CUDAKernelBlockSize.Buckets)
	sharedMemoryBuckets   = newBuckets(semconv.CUDAKernelSharedMemory.Buckets)
	syncDurationBuckets   = newBuckets(semconv.CUDASyncDuration.Buckets)
	kernelDurationBuckets = newBuckets(semconv.GPUKernelDuration.Buckets)
)

// histSeries is one series of a histogram: its attributes, and its values
// when the Source keeps them itself.
type histSeries[N number] struct {
	attrs meterx.Attrs
	own   hist[N]
}

func newHistSeries[N number](attrs meterx.Attrs, b *buckets, start time.Time) *histSeries[N] {
	return &histSeries[N]{attrs: attrs, own: newHist[N](b, start)}
}

// launchHists are the launch histograms of a group's launches on one
// device.
type launchHists struct {
	attrs             meterx.Attrs
	grid, block, smem hist[int64]
}

func newLaunchHists(attrs meterx.Attrs, start time.Time) *launchHists {
	return &launchHists{attrs: attrs,
		grid:  newHist[int64](gridBuckets, start),
		block: newHist[int64](blockBuckets, start),
		smem:  newHist[int64](sharedMemoryBuckets, start),
	}
}
