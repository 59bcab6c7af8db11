package occupancy

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// scanCovered is lastCovered's definition: the newest pending kernel
// with seq ≤ cutSeq launched at or before cutTime, found by a scan from
// the newest item.
func scanCovered(st *stream, cutSeq uint64, cutTime int64) int {
	for i := st.n - 1; i >= 0; i-- {
		if it := st.at(i); !it.wait && it.seq <= cutSeq && it.t <= cutTime {
			return i
		}
	}
	return -1
}

// TestLastCoveredAgreesWithScan: over queues that wrap the ring, repeat
// launch times, lost their oldest kernels to the bound and hold waits or
// none, the covered prefix is the one the scan finds, for cuts before,
// inside and after the queue in time and in seq, as a sync (cutSeq
// unbounded) and an event (cutTime unbounded) make them.
func TestLastCoveredAgreesWithScan(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 300 {
		m := &Model{lim: Limits{PendingPerStream: 64, PendingTotal: 1 << 10}}
		st := &stream{ring: make([]item, 16), lastT: math.MinInt64}
		waits := round%2 == 1
		var now int64
		for range r.IntN(200) {
			now += r.Int64N(3)              // equal times are common
			if r.IntN(8) == 0 && st.n > 0 { // the oldest completes
				if h := st.at(0); !h.wait {
					st.completedSeq = h.seq
					st.kernels--
				}
				st.pop(1)
				continue
			}
			if waits && r.IntN(5) == 0 {
				m.push(st, item{t: now, seq: uint64(r.IntN(50)), wait: true})
				continue
			}
			st.seq++
			m.push(st, item{t: now, seq: st.seq})
		}
		require.Equal(t, st.seq-st.completedSeq, uint64(st.kernels), "round %d: kernel seqs are contiguous", round)
		for range 50 {
			cutTime := r.Int64N(now+4) - 2
			cutSeq := st.completedSeq + uint64(r.IntN(st.n+3)) - min(st.completedSeq, 1)
			require.Equal(t, scanCovered(st, math.MaxUint64, cutTime), st.lastCovered(math.MaxUint64, cutTime),
				"round %d: sync at %d over %d items (%d kernels)", round, cutTime, st.n, st.kernels)
			require.Equal(t, scanCovered(st, cutSeq, math.MaxInt64), st.lastCovered(cutSeq, math.MaxInt64),
				"round %d: event after seq %d (completed %d) over %d items", round, cutSeq, st.completedSeq, st.n)
		}
	}
}
