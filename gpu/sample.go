package gpu

import (
	"math"
	"slices"
)

// field marks which values of a sample were read successfully.
type field uint32

const (
	fUtil field = 1 << iota
	fMemCtrl
	fEncoder
	fDecoder
	fMemory
	fReserved
	fTemperature
	fPower
	fPowerLimit
	fEnergy
	fClockSM
	fClockMemory
	fPCIeTx
	fPCIeRx
	fFan
	fECCCorrected
	fECCUncorrected
	fThrottle
	fTempJunction
	fTempMemory
	fPowerAverage
	fMemLimit // the memory limit alone (total), usage unknown
)

// sample is one device's values from one poll cycle.
type sample struct {
	d *device
	// s are d's attribute sets as they were when the sample was read.
	s    *series
	have field

	util, memCtrl, encoder, decoder float64
	used, total, free, reserved     int64
	temperature, power, powerLimit  float64
	energy, clockSM, clockMemory    float64
	fan                             float64
	tempJunction, tempMemory        float64 // AMD's other sensors
	powerAverage                    float64
	pcieTx, pcieRx                  int64
	eccCorrected, eccUncorrected    int64
	throttle                        uint64

	// acc are the runtime backends' values, by accelValue; accHave has
	// bit av set for each one read.
	acc     [numAccel]float64
	accHave uint64

	// engines are an Intel device's gpu.engine.utilization figures.
	engines []engineSample

	procs       []procSample
	otherMemory int64 // memory of the processes folded past the cap
	folded      int   // how many were folded this cycle
	overflow    int64 // folded observations since the Source started
}

// procSample is one process's values on a device from one poll cycle.
type procSample struct {
	pid     uint32
	p       *process
	memory  int64
	hasMem  bool
	util    float64
	utilTS  uint64
	hasUtil bool
	// eng are the process's shares of an Intel device's engine classes,
	// engHave a bit per class read.
	eng     [numEngineClasses]float64
	engHave uint16
}

// snapshot is one poll cycle. Two of them alternate: the poller fills the
// back one while observers read the front one, and buffers are reused.
type snapshot struct {
	samples []sample
}

// reset empties sn for the next cycle, keeping its buffers.
func (sn *snapshot) reset() { sn.samples = sn.samples[:0] }

// add returns a cleared sample for d, keeping the slot's process buffer.
// The pointer is valid until the next add.
func (sn *snapshot) add(d *device) *sample {
	if len(sn.samples) < cap(sn.samples) {
		sn.samples = sn.samples[:len(sn.samples)+1]
	} else {
		sn.samples = append(sn.samples, sample{})
	}
	sm := &sn.samples[len(sn.samples)-1]
	*sm = sample{d: d, s: d.series, procs: sm.procs[:0], engines: sm.engines[:0]}
	return sm
}

// Units the backends scale their readings by.
const (
	percent = 0.01
	milli   = 0.001
	mega    = 1e6
)

// clampInt64 is v, or math.MaxInt64 where v is larger.
func clampInt64(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

// finishProcesses folds the processes of sm past the cap and gives the
// rest their series.
func (s *Source) finishProcesses(d *device, sm *sample) {
	if len(sm.procs) > s.cfg.maxProcesses {
		slices.SortFunc(sm.procs, func(a, b procSample) int {
			switch {
			case a.memory > b.memory:
				return -1
			case a.memory < b.memory:
				return 1
			}
			return int(a.pid) - int(b.pid)
		})
		for _, p := range sm.procs[s.cfg.maxProcesses:] {
			sm.otherMemory += p.memory
		}
		sm.folded = len(sm.procs) - s.cfg.maxProcesses
		d.overflow += int64(sm.folded)
		sm.procs = sm.procs[:s.cfg.maxProcesses]
	}
	sm.overflow = d.overflow
	for i := range sm.procs {
		sm.procs[i].p = s.process(d, sm.procs[i].pid)
	}
}
