package occupancy

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Random event sequences. The generator keeps each call in time order
// (syncs arrive at their return, having begun up to 3 ms earlier), draws
// from a few processes, devices, streams and events, and lets the
// properties below run over many seeds.

var genStreams = []uint64{0, 1, 2, s1, s2, s3, PerThreadStream(7)}

type genCfg struct {
	pids, devices, events int
	// launchBias adds launches to the mix: 100 doubles their share.
	launchBias int
	// streams draws from the first streams of genStreams; 0: all.
	streams int
}

func randomOps(seed uint64, n int, cfg genCfg) []op {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	ops := make([]op, 0, n)
	var t int64
	var id uint64
	for range n {
		t += r.Int64N(2 * ms)
		o := op{
			t:      t,
			pid:    uint32(1 + r.IntN(cfg.pids)),
			dev:    int32(r.IntN(cfg.devices)),
			stream: genStreams[r.IntN(cmp.Or(cfg.streams, len(genStreams)))],
			event:  uint64(0xe0 + r.IntN(cfg.events)),
		}
		switch x := r.IntN(100 + cfg.launchBias); {
		case x < 40 || x >= 100:
			o.kind = opLaunch
			id++
			o.id = id
			o.grid = [3]uint32{uint32(1 + r.IntN(400)), uint32(1 + r.IntN(2)), 1}
			o.block = [3]uint32{uint32(32 * (1 + r.IntN(32))), 1, 1}
		case x < 48:
			o.kind = opStreamSync
		case x < 52:
			o.kind = opMemcpySync
		case x < 55:
			o.kind = opDeviceSync
		case x < 67:
			o.kind = opRecord
		case x < 77:
			o.kind = opComplete
		case x < 85:
			o.kind = opWait
		case x < 86:
			o.kind = opExit
		default:
			o.kind = opReport
		}
		switch o.kind {
		case opStreamSync, opMemcpySync, opDeviceSync:
			o.end = t
			o.t = max(t-r.Int64N(3*ms), 0)
		}
		ops = append(ops, o)
	}
	return append(ops, op{kind: opReport, t: t + ms})
}

var smallLimits = Limits{Processes: 2, StreamsPerProcess: 3, PendingPerStream: 8, PendingTotal: 64, Events: 4}

var bigLimits = Limits{Processes: 64, StreamsPerProcess: 64, PendingPerStream: 1 << 14, PendingTotal: 1 << 20, Events: 1 << 10}

// Every output keeps the invariants the checker enforces: Launch ≤ Start
// ≤ End ≤ Bound (no negative durations, no end before launch); a stream's
// kernels do not overlap; each interval's busy thread-seconds stay within
// capacity × interval and each series' total within capacity × wall
// time; ratios are in 0..1; and state stays within its limits, small or
// default.
func TestPropertyInvariants(t *testing.T) {
	iters := 300
	if testing.Short() || raceEnabled {
		iters = 40
	}
	for _, lim := range []Limits{{}, smallLimits} {
		for seed := range uint64(iters) {
			ops := randomOps(seed, 1500, genCfg{pids: 3, devices: 2, events: 6})
			m, c := run(t, lim, goldenCap, ops)
			require.NotEmpty(t, c.kernels, "seed %d: no kernel completed", seed)
			if lim == smallLimits {
				continue
			}
			for r := range NumDropReasons {
				require.Zero(t, m.Dropped(r), "seed %d: default limits dropped %v", seed, r)
			}
		}
	}
}

// Small limits drop, and count it.
func TestPropertyDropsAreCounted(t *testing.T) {
	var total [NumDropReasons]uint64
	for seed := range uint64(50) {
		for _, cfg := range []genCfg{
			{pids: 4, devices: 2, events: 12},                  // many processes and streams
			{pids: 1, devices: 1, events: 12, launchBias: 400}, // long queues
			{pids: 1, devices: 1, events: 12, streams: 2},      // many events pending
		} {
			m, _ := run(t, smallLimits, goldenCap, randomOps(seed, 2000, cfg))
			for r := range NumDropReasons {
				total[r] += m.Dropped(r)
			}
		}
	}
	for r := range NumDropReasons {
		assert.NotZero(t, total[r], "no %v drop in 50 random sequences with small limits", r)
	}
}

// Adding a completion edge (an event recorded on a stream and later seen
// complete) never makes an estimate looser: every kernel completed
// without it is completed with it, with a bound no later, so its new
// [Start, End] lies within the old [Launch, Bound].
func TestPropertyCompletionTightens(t *testing.T) {
	iters := 500
	if testing.Short() || raceEnabled {
		iters = 60
	}
	tightened := 0
	for seed := range uint64(iters) {
		base := randomOps(seed, 400, genCfg{pids: 2, devices: 2, events: 4})
		r := rand.New(rand.NewPCG(seed, 1))
		// Record a fresh event after a random launch, on its stream, and
		// see it complete later.
		var launches []int
		for i, o := range base {
			if o.kind == opLaunch {
				launches = append(launches, i)
			}
		}
		if len(launches) == 0 {
			continue
		}
		li := launches[r.IntN(len(launches))]
		i := li + 1 + r.IntN(3)
		j := i + r.IntN(len(base)-i)
		l := base[li]
		rec := op{kind: opRecord, t: base[i-1].at(), pid: l.pid, dev: l.dev, stream: l.stream, event: 0xfe}
		comp := op{kind: opComplete, t: base[max(j-1, i-1)].at(), pid: l.pid, event: 0xfe}
		with := slices.Concat(base[:i], []op{rec}, base[i:j], []op{comp}, base[j:])

		m1, without := run(t, bigLimits, goldenCap, base)
		m2, tighter := run(t, bigLimits, goldenCap, with)
		for r := range NumDropReasons {
			require.Zero(t, m1.Dropped(r)+m2.Dropped(r), "seed %d: dropped %v: the comparison needs all state", seed, r)
		}
		after := map[uint64]Kernel{}
		for _, k := range tighter.kernels {
			after[k.ID] = k
		}
		for _, k := range without.kernels { // hundreds of thousands in all: the checks are guarded
			a, ok := after[k.ID]
			if !ok {
				require.True(t, ok, "seed %d: kernel %d completed without the event, not with it", seed, k.ID)
			}
			if a.Bound > k.Bound || a.Start < k.Launch || a.End > k.Bound {
				require.LessOrEqual(t, a.Bound, k.Bound, "seed %d: the event loosened kernel %d: %+v, was %+v", seed, k.ID, a, k)
				require.GreaterOrEqual(t, a.Start, k.Launch, "seed %d: the event loosened kernel %d: %+v, was %+v", seed, k.ID, a, k)
				require.LessOrEqual(t, a.End, k.Bound, "seed %d: the event loosened kernel %d: %+v, was %+v", seed, k.ID, a, k)
			}
			if a.Bound < k.Bound {
				tightened++
			}
		}
	}
	t.Logf("%d kernel bounds tightened over %d seeds", tightened, iters)
	require.NotZero(t, tightened, "no added event ever tightened an estimate: the property is vacuous")
}

// A process that launches forever and never synchronises stays within its
// bounds.
func TestNeverSyncingProcessIsBounded(t *testing.T) {
	m := New()
	lim := Limits{}.withDefaults()
	for i := range int64(200_000) {
		m.Launch(i*1000, 1, 0, s1, [3]uint32{8, 1, 1}, [3]uint32{128, 1, 1}, uint64(i))
		m.EventRecord(i*1000+1, 1, 0, s1, uint64(i)) // a fresh event each time
	}
	s := m.Size()
	require.LessOrEqual(t, s.MaxPending, lim.PendingPerStream, "size %+v exceeds %+v", s, lim)
	require.LessOrEqual(t, s.Events, lim.Events, "size %+v exceeds %+v", s, lim)
	require.LessOrEqual(t, s.PendingSlots, lim.PendingTotal, "size %+v exceeds %+v", s, lim)
	require.Equal(t, 200_000-uint64(lim.PendingPerStream), m.Dropped(DropPendingCap), "launches dropped")
}
