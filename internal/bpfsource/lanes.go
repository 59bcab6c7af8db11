package bpfsource

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/ktime"
)

// Lanes are the record transport of objects whose probes fire at call
// rates (lanes.bpf.h, which an object includes): one ring buffer of our
// own per CPU, up to MaxLanes, in one mmapable array map, which a probe
// writes without a helper call and without a lock or a cache line shared
// with other CPUs. The reader copies each published record out, zeroes it
// and advances the lane's tail, and hands the records out in timestamp
// order across the lanes (see laneSet.scan): a thread that moves between
// CPUs still has its records read in the order it made them. Where the
// object has stages (lane_stages), the hottest records wait in their
// lane's stage and go into the lane sixteen at a time, and the reader
// takes from a stage what has waited there (laneSet.take).
//
// The layout, lanes.bpf.h's: a lane is an array entry of laneHeader bytes
// (the head, BPF's, at 0, the tail, the reader's, at laneTailOffset), then
// its data, a power of two of LaneUnit units, then a slack as long as the
// longest record, into which a record reserved at the data's end runs on.
// A record starts with its timestamp (u64) and has its length in units at
// laneLengthOffset, written last.
const (
	// LaneUnit is the unit lanes count in, bytes.
	LaneUnit = 16
	// MaxLanes bounds the lanes: CPUs past it share them.
	MaxLanes = 16

	laneHeader       = 128
	laneTailOffset   = 64
	laneLengthOffset = 28
	laneMinUnits     = 2 // a record's head (struct lane_record)
	laneMinBytes     = 4096

	// laneMargin is how far behind the reader's clock the hand-out
	// horizon stays: the probes read bpf_ktime_get_ns, the reader
	// CLOCK_MONOTONIC through the vDSO, the same clock read two ways.
	laneMargin = uint64(time.Millisecond)

	// A lane's stage (lanes.bpf.h, where an object defines one): a
	// header line (the lock, u64, at 0; the records staged, u32, at
	// laneStageCountOffset; the oldest record copied into the lane since
	// the last take, u64, and the lane position past the last, u64, at
	// laneStageFlushOffset), then laneStageRecords records of one size.
	laneStagesMap        = "lane_stages"
	laneStageRecords     = 16
	laneStageCountOffset = 8
	laneStageFlushOffset = 16
	laneStageHeader      = 64
	// laneStageEvery is how often the reader takes what waits in a
	// stage at the most: each take moves the stage's lines to the
	// reader's CPU, and the probe's next record there misses.
	laneStageEvery = uint64(time.Millisecond)
)

// The lanes' variables of an object, lanes.bpf.h's.
const (
	laneMaskVar  = "lane_mask"
	laneUnitsVar = "lane_units"
)

// laneCount is the number of lanes for cpus CPUs: one each, rounded up to
// a power of two, at most MaxLanes.
func laneCount(cpus int) int {
	if cpus <= 1 {
		return 1
	}
	return min(MaxLanes, 1<<bits.Len(uint(cpus-1)))
}

// isLanes reports whether m is a lanes map.
func isLanes(m *ebpf.MapSpec) bool {
	return m.Type == ebpf.Array && m.Flags&unix.BPF_F_MMAPABLE != 0
}

// sizeLanes sizes the lanes map m of spec for cpus CPUs: ringBytes in all,
// split evenly between the lanes, each a power of two of at least a page,
// and each waking the reader past wakeupBytes unread (0: a quarter of a
// lane).
func sizeLanes(spec *ebpf.CollectionSpec, m *ebpf.MapSpec, ringBytes uint32, wakeupBytes uint64, cpus int) error {
	units, mask := spec.Variables[laneUnitsVar], spec.Variables[laneMaskVar]
	if units == nil || mask == nil {
		return fmt.Errorf("the object has no variables %s and %s", laneUnitsVar, laneMaskVar)
	}
	var objUnits uint64
	if err := units.Get(&objUnits); err != nil {
		return fmt.Errorf("read %s: %w", laneUnitsVar, err)
	}
	slack := int64(m.ValueSize) - laneHeader - int64(objUnits*LaneUnit)
	if slack < laneMinUnits*LaneUnit || slack%LaneUnit != 0 {
		return fmt.Errorf("the lanes map's value size %d does not hold the object's %d units and a slack", m.ValueSize, objUnits)
	}
	n := laneCount(cpus)
	lane := max(laneMinBytes, ringBytes/uint32(n))
	if wakeupBytes == 0 {
		wakeupBytes = uint64(lane / 4)
	}
	m.MaxEntries = uint32(n)
	m.ValueSize = laneHeader + lane + uint32(slack)
	if st := spec.Maps[laneStagesMap]; st != nil {
		st.MaxEntries = uint32(n)
	}
	for _, v := range []struct {
		name string
		val  any
	}{{laneUnitsVar, uint64(lane / LaneUnit)}, {laneMaskVar, uint32(n - 1)}, {WakeupVariable, wakeupBytes}} {
		if err := spec.Variables[v.name].Set(v.val); err != nil {
			return fmt.Errorf("set %s: %w", v.name, err)
		}
	}
	return nil
}

// laneLayout is how a sized lanes map lays out its memory.
type laneLayout struct {
	lanes    int
	stride   int    // bytes from one lane to the next
	units    uint64 // data units per lane, a power of two
	maxUnits uint32 // the longest record the slack holds
}

// layoutOf reads the layout of a lanes map of that value size and
// entries back from them: the data is the largest power of two that
// leaves room for the header and the slack (which is shorter than the
// data: a page at the least, sizeLanes makes sure).
func layoutOf(valueSize, entries uint32) (laneLayout, error) {
	if valueSize < laneHeader+2*laneMinUnits*LaneUnit || entries == 0 {
		return laneLayout{}, fmt.Errorf("lanes map of %d entries of %d bytes: too small", entries, valueSize)
	}
	data := uint32(1) << (bits.Len32(valueSize-laneHeader-laneMinUnits*LaneUnit) - 1)
	slack := valueSize - laneHeader - data
	return laneLayout{
		lanes:    int(entries),
		stride:   int(valueSize+7) &^ 7,
		units:    uint64(data / LaneUnit),
		maxUnits: slack / LaneUnit,
	}, nil
}

// stageLayout is how a lane_stages map lays out its memory: one stage per
// lane, stride bytes apart, of laneStageRecords records of record bytes.
type stageLayout struct {
	stride, record int
}

// stageLayoutOf reads the layout of a lane_stages map of that value size
// and entries, for lanes lanes.
func stageLayoutOf(valueSize, entries uint32, lanes int) (stageLayout, error) {
	record := (int(valueSize) - laneStageHeader) / laneStageRecords
	if int(entries) != lanes || record < laneMinUnits*LaneUnit || record%LaneUnit != 0 ||
		laneStageHeader+laneStageRecords*record != int(valueSize) {
		return stageLayout{}, fmt.Errorf("lane stages map of %d entries of %d bytes: not one stage of %d records a lane for %d lanes",
			entries, valueSize, laneStageRecords, lanes)
	}
	return stageLayout{stride: int(valueSize+7) &^ 7, record: record}, nil
}

// laneSet reads lanes laid out as layout in mem: the mapped lanes map, or
// a test's memory, and their stages in stages (nil: none). It is not safe
// for concurrent use.
type laneSet struct {
	mem    []byte
	layout laneLayout
	stages []byte
	stage  stageLayout
	lanes  []laneState
	now    func() uint64 // CLOCK_MONOTONIC ns
	// limit bounds the bytes queued: past it, only the lane holding the
	// horizon back is read (the others fill, and their probes count
	// what finds no room).
	limit, queued int
	// horizon: every record not handed out yet has a later timestamp.
	horizon uint64
	// holding is the lane whose bound is the horizon.
	holding int
}

// errLaneCorrupt says a lane held a record whose length made no sense:
// nothing is read from that lane again (its probes find it full, and
// count what finds no room).
var errLaneCorrupt = errors.New("bpfsource: a lane record's length makes no sense: the lane is no longer read")

// laneState is the reader's state of one lane.
type laneState struct {
	tail uint64 // the next position to read; the lane's tail is this
	// Copied records not handed out yet, and their index in timestamp
	// order from next on.
	queue []byte
	index []queuedRecord
	next  int
	// Every position from tail on was reserved after bound (ns): the
	// timestamp of every record not read yet is later, but for those a
	// stage held. Every record the lane's stage holds, or copied into
	// the lane after the reader last took from it, is later than
	// stageBound; those copied before, up to position flushEnd, are
	// later than flushTS (0: none unread). stageNext is when the reader
	// takes from the stage next.
	bound                 uint64
	stageBound, stageNext uint64
	flushTS, flushEnd     uint64
	dead                  bool
}

type queuedRecord struct {
	ts     uint64
	off, n int
}

// newLaneSet starts reading the lanes in mem, and their stages in stages
// (nil: none), where their tails are: a reader of lanes read before goes
// on after what its predecessor read.
func newLaneSet(mem []byte, layout laneLayout, stages []byte, stage stageLayout, now func() uint64) *laneSet {
	s := &laneSet{mem: mem, layout: layout, stages: stages, stage: stage, lanes: make([]laneState, layout.lanes), now: now,
		limit: layout.lanes * int(layout.units) * LaneUnit}
	for i := range s.lanes {
		s.lanes[i].tail = atomic.LoadUint64(s.word64(i*layout.stride + laneTailOffset))
	}
	return s
}

func (s *laneSet) word64(off int) *uint64 { return (*uint64)(unsafe.Pointer(&s.mem[off])) }
func (s *laneSet) word32(off int) *uint32 { return (*uint32)(unsafe.Pointer(&s.mem[off])) }

// scan reads every lane's published records into its queue, up to the
// first one still being written, and moves the horizon: the earliest
// time a record not read yet can carry. A record's timestamp is read
// after its reservation (lanes.bpf.h), so positions reserved after this
// scan reads a head carry times after the scan began; positions left
// unread keep the bound they had. It returns errLaneCorrupt when it gives
// up on a lane.
func (s *laneSet) scan() error {
	var err error
	now := s.now()
	now -= min(now, laneMargin)
	over := s.queued >= s.limit
	horizon := now
	next := s.holding
	for i := range s.lanes {
		l := &s.lanes[i]
		s.compact(l)
		if l.dead {
			continue
		}
		base := i * s.layout.stride
		readable := !over || i == s.holding
		if s.stages != nil && readable && now >= l.stageNext {
			// Before the head is read: a stage copied into the lane
			// before the take is in the lane by then.
			s.take(l, i, now)
		}
		head := atomic.LoadUint64(s.word64(base))
		if readable {
			if !s.read(l, base, head) {
				err = errLaneCorrupt
				continue
			}
		}
		if l.tail == head {
			l.bound = now
		}
		bound := l.bound
		if s.stages != nil {
			if l.flushTS != 0 && l.tail >= l.flushEnd {
				l.flushTS = 0 // read
			}
			bound = min(bound, l.stageBound)
			if l.flushTS != 0 {
				bound = min(bound, l.flushTS)
			}
		}
		if bound < horizon {
			horizon, next = bound, i
		}
	}
	s.horizon, s.holding = horizon, next
	return err
}

// read copies lane l's published records, from its tail to head, into
// its queue, zeroes them and moves the tail past them. It returns false,
// and gives the lane up, at a record whose length makes no sense.
func (s *laneSet) read(l *laneState, base int, head uint64) bool {
	data := base + laneHeader
	q := l.tail
	for q < head {
		off := data + int(q&(s.layout.units-1))*LaneUnit
		n := atomic.LoadUint32(s.word32(off + laneLengthOffset))
		if n == 0 {
			break // still being written
		}
		if n < laneMinUnits || n > s.layout.maxUnits || uint64(n) > head-q {
			l.dead = true
			return false
		}
		rec := s.mem[off : off+int(n)*LaneUnit]
		s.push(l, rec)
		clear(rec)
		q += uint64(n)
	}
	if q != l.tail {
		l.tail = q
		atomic.StoreUint64(s.word64(base+laneTailOffset), q)
	}
	return true
}

// take queues what waits in lane i's stage, unless a probe holds it, and
// empties it. The probes read their clocks after they take a stage, so
// what they stage after this take is later than now.
func (s *laneSet) take(l *laneState, i int, now uint64) {
	base := i * s.stage.stride
	lock := (*uint64)(unsafe.Pointer(&s.stages[base]))
	if !atomic.CompareAndSwapUint64(lock, 0, 1) {
		return
	}
	count := (*uint32)(unsafe.Pointer(&s.stages[base+laneStageCountOffset]))
	flushTS := (*uint64)(unsafe.Pointer(&s.stages[base+laneStageFlushOffset]))
	if ts := atomic.LoadUint64(flushTS); ts != 0 {
		// Copied into the lane since the last take: not read, perhaps.
		if l.flushTS == 0 || ts < l.flushTS {
			l.flushTS = ts
		}
		l.flushEnd = max(l.flushEnd, atomic.LoadUint64((*uint64)(unsafe.Pointer(&s.stages[base+laneStageFlushOffset+8]))))
		atomic.StoreUint64(flushTS, 0)
	}
	n := min(int(atomic.LoadUint32(count)), laneStageRecords)
	for k := range n {
		off := base + laneStageHeader + k*s.stage.record
		s.push(l, s.stages[off:off+s.stage.record])
		// A staged record's length is 0 until it is copied into the
		// lane: the queued copy has it.
		queued := l.queue[len(l.queue)-s.stage.record:]
		binary.LittleEndian.PutUint32(queued[laneLengthOffset:], uint32(s.stage.record/LaneUnit))
	}
	atomic.StoreUint32(count, 0)
	atomic.StoreUint64(lock, 0)
	l.stageBound, l.stageNext = now, now+laneStageEvery
}

// push queues a copy of rec, in timestamp order: a lane's records come in
// that order but where a probe was preempted between its reservation and
// its clock read.
func (s *laneSet) push(l *laneState, rec []byte) {
	r := queuedRecord{ts: binary.LittleEndian.Uint64(rec), off: len(l.queue), n: len(rec)}
	l.queue = append(l.queue, rec...)
	s.queued += len(rec)
	i := len(l.index)
	l.index = append(l.index, r)
	for ; i > l.next && l.index[i-1].ts > r.ts; i-- {
		l.index[i] = l.index[i-1]
	}
	l.index[i] = r
}

// compact drops what l handed out from its queue.
func (s *laneSet) compact(l *laneState) {
	if l.next == 0 {
		return
	}
	if l.next == len(l.index) {
		l.queue, l.index, l.next = l.queue[:0], l.index[:0], 0
		return
	}
	// Keep the rest, moved to the front.
	start := len(l.queue)
	for _, r := range l.index[l.next:] {
		start = min(start, r.off)
	}
	kept := copy(l.queue, l.queue[start:])
	l.queue = l.queue[:kept]
	n := copy(l.index, l.index[l.next:])
	l.index, l.next = l.index[:n], 0
	for j := range l.index {
		l.index[j].off -= start
	}
}

// next returns the earliest queued record before the horizon, or false.
// The bytes are valid until the next scan.
func (s *laneSet) next() ([]byte, bool) {
	best := -1
	var ts uint64
	for i := range s.lanes {
		l := &s.lanes[i]
		if l.next < len(l.index) && l.index[l.next].ts < s.horizon && (best < 0 || l.index[l.next].ts < ts) {
			best, ts = i, l.index[l.next].ts
		}
	}
	if best < 0 {
		return nil, false
	}
	l := &s.lanes[best]
	r := l.index[l.next]
	l.next++
	s.queued -= r.n
	return l.queue[r.off : r.off+r.n], true
}

// monotonic returns a CLOCK_MONOTONIC reader through the vDSO (Go's
// monotonic clock is CLOCK_MONOTONIC), anchored once with a system call.
func monotonic() func() uint64 {
	base, k := time.Now(), ktime.Now()
	return func() uint64 { return k + uint64(time.Since(base)) }
}

// laneReader reads lanes for a Ring: the mapped lanes map, and the ring
// buffer of wakeups it waits on between polls.
type laneReader struct {
	wake *ringbuf.Reader

	mu          sync.Mutex // guards what follows; Close takes it to unmap
	set         *laneSet
	mem         []byte
	unmapStages func() error
	wakeRec     ringbuf.Record
	err         error // a scan's, returned by the next ReadInto
	closed      bool
}

// NewLaneRing starts reading the lanes map lanes (lanes.bpf.h), and their
// stages (nil where the object has none), waiting for records between
// polls on its wakeup ring buffer wakeups.
func NewLaneRing(lanes, stages, wakeups *ebpf.Map, cfg RingConfig) (*Ring, error) {
	r, err := newLaneReader(lanes, stages, wakeups)
	if err != nil {
		return nil, err
	}
	return startRing(r, cfg), nil
}

// mapShared maps the first bytes of the mmapable map m, rounded up to
// pages.
func mapShared(m *ebpf.Map, bytes int) ([]byte, error) {
	size := (bytes + unix.Getpagesize() - 1) &^ (unix.Getpagesize() - 1)
	return unix.Mmap(m.FD(), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

func newLaneReader(lanes, stages, wakeups *ebpf.Map) (*laneReader, error) {
	layout, err := layoutOf(lanes.ValueSize(), lanes.MaxEntries())
	if err != nil {
		return nil, err
	}
	var (
		stage     stageLayout
		stageMem  []byte
		unmapping = func() error { return nil }
	)
	if stages != nil {
		if stage, err = stageLayoutOf(stages.ValueSize(), stages.MaxEntries(), layout.lanes); err != nil {
			return nil, err
		}
		if stageMem, err = mapShared(stages, layout.lanes*stage.stride); err != nil {
			return nil, fmt.Errorf("map the lane stages: %w", err)
		}
		unmapping = func() error { return unix.Munmap(stageMem) }
	}
	mem, err := mapShared(lanes, layout.lanes*layout.stride)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("map the lanes: %w", err), unmapping())
	}
	wake, err := ringbuf.NewReader(wakeups)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("lane wakeup reader: %w", err), unix.Munmap(mem), unmapping())
	}
	return &laneReader{wake: wake, set: newLaneSet(mem, layout, stageMem, stage, monotonic()), mem: mem, unmapStages: unmapping}, nil
}

// ReadInto hands out the next record, in timestamp order, into rec (its
// RawSample is valid until the next call); when none is ready, it waits
// for a wakeup or the deadline (os.ErrDeadlineExceeded).
func (r *laneReader) ReadInto(rec *ringbuf.Record) error {
	for {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return ringbuf.ErrClosed
		}
		if err := r.err; err != nil {
			r.err = nil
			r.mu.Unlock()
			return err
		}
		b, ok := r.set.next()
		if !ok {
			r.err = r.set.scan()
			b, ok = r.set.next()
		}
		r.mu.Unlock()
		if ok {
			rec.RawSample, rec.Remaining = b, 0
			return nil
		}
		if r.err != nil {
			continue // returned at once, by the next turn
		}
		if err := r.wake.ReadInto(&r.wakeRec); err != nil {
			return err
		}
	}
}

// SetDeadline sets when ReadInto stops waiting.
func (r *laneReader) SetDeadline(t time.Time) { r.wake.SetDeadline(t) }

// Close stops a waiting ReadInto and unmaps the lanes.
func (r *laneReader) Close() error {
	err := r.wake.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	return errors.Join(err, unix.Munmap(r.mem), r.unmapStages())
}
