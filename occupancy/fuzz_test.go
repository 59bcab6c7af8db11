package occupancy

import (
	"math/rand/v2"
	"testing"
)

// decodeOps turns fuzz bytes into a sequence of API events, 6 bytes each:
// kind, process, device and stream, event, a time step (the top values
// step back: records from different CPUs arrive slightly out of order),
// and sizes or a sync's length. Grids may be empty.
func decodeOps(data []byte) []op {
	t := int64(1e9)
	var ops []op
	var id uint64
	for ; len(data) >= 6; data = data[6:] {
		b := data[:6]
		o := op{
			kind:   opKind(b[0] % byte(numOps)),
			pid:    uint32(1 + b[1]%3),
			dev:    int32(b[2] & 1),
			stream: genStreams[int(b[2]>>1)%len(genStreams)],
			event:  uint64(0xe0 + b[3]%6),
		}
		if dt := int64(b[4]); dt >= 240 {
			t -= (dt - 239) * 10_000
		} else {
			t += dt * 10_000
		}
		o.t = t
		switch o.kind {
		case opLaunch:
			id++
			o.id = id
			o.grid = [3]uint32{uint32(b[5] % 64), uint32(1 + b[3]>>5), 1}
			o.block = [3]uint32{32 * uint32(1+b[5]>>4), 1, 1}
		case opStreamSync, opMemcpySync, opDeviceSync:
			o.end = t
			o.t = t - int64(b[5])*20_000
		}
		ops = append(ops, o)
	}
	return ops
}

// FuzzModel feeds arbitrary event sequences, with small and default
// limits, and checks the invariants of every output (see checker).
func FuzzModel(f *testing.F) {
	for seed := range uint64(8) {
		r := rand.New(rand.NewPCG(seed, 2))
		b := make([]byte, 6*(20+r.IntN(200)))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ops := decodeOps(data)
		for _, lim := range []Limits{smallLimits, {}} {
			run(t, lim, goldenCap, ops)
		}
	})
}
