package bpfsource

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testLaneBytes is each test lane's data: 64 units.
const testLaneBytes = 4096 / 4

// fakeLanes is lanes memory and a writer that does what lanes.bpf.h does:
// reserve at the head (when the tail leaves room), write the record,
// publish its length last. The clock is the test's.
type fakeLanes struct {
	mem    []byte
	layout laneLayout
	clock  uint64
	// With stages (newFakeStagedLanes), what lanes.bpf.h's stages hold:
	// records of testStageUnits units.
	stages []byte
	stage  stageLayout
	// What the stages did: full stages copied into the lane, and kept
	// for want of room there.
	flushes, keptFull int
}

// testStageUnits is the staged records' size, a launch record's.
const testStageUnits = 5

// newFakeStagedLanes is newFakeLanes with a stage for each lane, and, as
// gputrace.bpf.c's, lanes of at least a page and a slack that holds a
// stage's copy.
func newFakeStagedLanes(t testing.TB, lanes int) *fakeLanes {
	f := newFakeLanesOf(t, lanes, laneMinBytes, laneStageRecords*testStageUnits)
	var err error
	f.stage, err = stageLayoutOf(laneStageHeader+laneStageRecords*testStageUnits*LaneUnit, uint32(lanes), lanes)
	require.NoError(t, err)
	words := make([]uint64, lanes*f.stage.stride/8)
	f.stages = unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	return f
}

func (f *fakeLanes) stageLock(lane int) *uint64 {
	return (*uint64)(unsafe.Pointer(&f.stages[lane*f.stage.stride]))
}

func (f *fakeLanes) stageCount(lane int) *uint32 {
	return (*uint32)(unsafe.Pointer(&f.stages[lane*f.stage.stride+laneStageCountOffset]))
}

// stageSlot takes lane's stage and returns its next record's bytes,
// zeroed, as lane_stage_reserve does; false when the stage is taken or
// full.
func (f *fakeLanes) stageSlot(lane int) ([]byte, bool) {
	if !atomic.CompareAndSwapUint64(f.stageLock(lane), 0, 1) {
		return nil, false
	}
	n := int(atomic.LoadUint32(f.stageCount(lane)))
	if n >= laneStageRecords {
		atomic.StoreUint64(f.stageLock(lane), 0)
		return nil, false
	}
	off := lane*f.stage.stride + laneStageHeader + n*f.stage.record
	rec := f.stages[off : off+f.stage.record]
	// Not zeroed (lanes.bpf.h): the record's writer writes every byte,
	// the length too, 0.
	clear(rec)
	return rec, true
}

// stageCommit counts the record stageSlot gave as staged and lets the
// stage go, unless it is full: then it copies the stage into the lane
// as lane_stage_flush does, the records' lengths still 0, and returns
// them for stagePublish, which lets the stage go; a lane without room
// leaves the stage full, and goes too.
func (f *fakeLanes) stageCommit(lane int) []pending {
	n := atomic.LoadUint32(f.stageCount(lane)) + 1
	if n < laneStageRecords {
		atomic.StoreUint32(f.stageCount(lane), n)
		atomic.StoreUint64(f.stageLock(lane), 0)
		return nil
	}
	block, ok := f.reserve(lane, laneStageRecords*testStageUnits)
	if !ok {
		f.keptFull++
		atomic.StoreUint32(f.stageCount(lane), n)
		atomic.StoreUint64(f.stageLock(lane), 0)
		return nil
	}
	f.flushes++
	head := lane*f.stage.stride + laneStageFlushOffset
	if *f.word64At(f.stages, head) == 0 {
		*f.word64At(f.stages, head) = binary.LittleEndian.Uint64(f.stages[lane*f.stage.stride+laneStageHeader:])
	}
	*f.word64At(f.stages, head+8) = block.pos + laneStageRecords*testStageUnits
	recs := make([]pending, laneStageRecords)
	for k := range recs {
		pos := block.pos + uint64(k*testStageUnits)
		off := lane*f.layout.stride + laneHeader + int(pos&(f.layout.units-1))*LaneUnit
		recs[k] = pending{lane: lane, pos: pos, rec: f.mem[off : off+testStageUnits*LaneUnit]}
		from := lane*f.stage.stride + laneStageHeader + k*f.stage.record
		copy(recs[k].rec, f.stages[from:from+f.stage.record])
	}
	return recs
}

// stagePublish publishes the records a flush copied, in order, empties
// the stage and lets it go.
func (f *fakeLanes) stagePublish(lane int, recs []pending) {
	for _, p := range recs {
		p.publish()
	}
	atomic.StoreUint32(f.stageCount(lane), 0)
	atomic.StoreUint64(f.stageLock(lane), 0)
}

func newFakeLanes(t testing.TB, lanes int) *fakeLanes {
	// A record of up to 20 units runs on into the slack.
	return newFakeLanesOf(t, lanes, testLaneBytes, 20)
}

// newFakeLanesOf is newFakeLanes with lanes of data bytes and a slack of
// slack units. The memory is 8-aligned, as a mapping is.
func newFakeLanesOf(t testing.TB, lanes, data, slack int) *fakeLanes {
	t.Helper()
	valueSize := uint32(laneHeader + data + slack*LaneUnit)
	layout := testLayout(t, valueSize, lanes)
	words := make([]uint64, lanes*layout.stride/8)
	return &fakeLanes{mem: unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8), layout: layout}
}

func testLayout(t testing.TB, valueSize uint32, lanes int) laneLayout {
	t.Helper()
	layout, err := layoutOf(valueSize, uint32(lanes))
	require.NoError(t, err)
	return layout
}

func (f *fakeLanes) set() *laneSet {
	return newLaneSet(f.mem, f.layout, f.stages, f.stage, func() uint64 { return f.clock })
}

func (f *fakeLanes) word64(off int) *uint64 { return f.word64At(f.mem, off) }

func (f *fakeLanes) word64At(mem []byte, off int) *uint64 {
	return (*uint64)(unsafe.Pointer(&mem[off]))
}

// pending is a reserved record: its lane, its position, its bytes.
type pending struct {
	lane int
	pos  uint64
	rec  []byte
}

// reserve reserves units on lane, or returns false when the lane has no
// room.
func (f *fakeLanes) reserve(lane int, units uint32) (pending, bool) {
	base := lane * f.layout.stride
	head := atomic.LoadUint64(f.word64(base))
	if head+uint64(units)-atomic.LoadUint64(f.word64(base+laneTailOffset)) > f.layout.units {
		return pending{}, false
	}
	atomic.StoreUint64(f.word64(base), head+uint64(units))
	off := base + laneHeader + int(head&(f.layout.units-1))*LaneUnit
	return pending{lane: lane, pos: head, rec: f.mem[off : off+int(units)*LaneUnit]}, true
}

// reserveRoom is how many units lane has room for.
func (f *fakeLanes) reserveRoom(lane int) uint64 {
	base := lane * f.layout.stride
	return f.layout.units - (atomic.LoadUint64(f.word64(base)) - atomic.LoadUint64(f.word64(base+laneTailOffset)))
}

// stamp writes the record's timestamp, and a payload byte after it.
func (p pending) stamp(ts uint64, payload byte) {
	binary.LittleEndian.PutUint64(p.rec, ts)
	p.rec[8] = payload
}

// publish writes the record's length, last.
func (p pending) publish() {
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&p.rec[laneLengthOffset])), uint32(len(p.rec)/LaneUnit))
}

// write reserves, stamps and publishes a record at the clock's time.
func (f *fakeLanes) write(t testing.TB, lane int, units uint32, payload byte) {
	t.Helper()
	p, ok := f.reserve(lane, units)
	require.True(t, ok, "lane %d full", lane)
	f.clock++
	p.stamp(f.clock, payload)
	p.publish()
}

// drain hands out everything s has ready: each record's timestamp and
// payload byte, checking its length.
func drain(t testing.TB, s *laneSet) (ts []uint64, payload []byte) {
	t.Helper()
	for {
		b, ok := s.next()
		if !ok {
			return ts, payload
		}
		require.Equal(t, int(binary.LittleEndian.Uint32(b[laneLengthOffset:]))*LaneUnit, len(b), "record length")
		ts = append(ts, binary.LittleEndian.Uint64(b))
		payload = append(payload, b[8])
	}
}

func TestLaneCount(t *testing.T) {
	for cpus, want := range map[int]int{0: 1, 1: 1, 2: 2, 3: 4, 4: 4, 5: 8, 16: 16, 17: 16, 256: 16} {
		assert.Equal(t, want, laneCount(cpus), "lanes for %d CPUs", cpus)
	}
}

func TestLayoutOf(t *testing.T) {
	l := testLayout(t, laneHeader+1<<20+20*LaneUnit, 4)
	assert.Equal(t, laneLayout{lanes: 4, stride: laneHeader + 1<<20 + 20*LaneUnit, units: 1 << 20 / LaneUnit, maxUnits: 20}, l)
	l = testLayout(t, laneHeader+4096+5*LaneUnit+4, 1)
	assert.Equal(t, laneLayout{lanes: 1, stride: laneHeader + 4096 + 5*LaneUnit + 8, units: 4096 / LaneUnit, maxUnits: 5}, l,
		"the stride rounds to 8 bytes")
	_, err := layoutOf(laneHeader+LaneUnit, 1)
	assert.Error(t, err, "no room for a record")
	_, err = layoutOf(laneHeader+8192, 0)
	assert.Error(t, err, "no lanes")
}

// Records of several lanes come out in timestamp order, each once, whole;
// what is handed out is zeroed in the lanes and the tails move past it.
func TestLanesMergeInTimestampOrder(t *testing.T) {
	f := newFakeLanes(t, 2)
	s := f.set()
	// Interleaved over the two lanes, a name-sized record among them.
	var want []byte
	for i := range 12 {
		units := uint32(5)
		if i == 7 {
			units = 20
		}
		f.write(t, i%2, units, byte(i))
		want = append(want, byte(i))
	}
	f.clock += uint64(laneMargin) + 1 // past the margin: every record is ready
	require.NoError(t, s.scan())
	ts, payload := drain(t, s)
	assert.Equal(t, want, payload, "payloads in timestamp order")
	assert.True(t, slices.IsSorted(ts), "timestamps %v", ts)
	for lane := range 2 {
		base := lane * f.layout.stride
		assert.Equal(t, atomic.LoadUint64(f.word64(base)), atomic.LoadUint64(f.word64(base+laneTailOffset)), "lane %d: tail at the head", lane)
		data := f.mem[base+laneHeader : base+f.layout.stride]
		assert.Equal(t, make([]byte, len(data)), data, "lane %d: zeroed once read", lane)
	}
	assert.Zero(t, s.queued, "bytes queued")
}

// stageRecord stages a record of payload on lane's stage at the clock's
// next time, as a probe does from start to end; a full stage goes into
// the lane.
func (f *fakeLanes) stageRecord(t testing.TB, lane int, payload byte) {
	t.Helper()
	slot, ok := f.stageSlot(lane)
	require.True(t, ok, "lane %d's stage taken or full", lane)
	f.clock++
	binary.LittleEndian.PutUint64(slot, f.clock)
	slot[8] = payload
	if recs := f.stageCommit(lane); recs != nil {
		f.stagePublish(lane, recs)
	}
}

// Staged records come out with the others in timestamp order: taken from
// the stage by the reader, or copied into the lane sixteen at a time, or,
// where the lane has no room for them, left in the full stage for the
// reader. A stage a probe holds holds back every later record.
func TestLaneStages(t *testing.T) {
	f := newFakeStagedLanes(t, 2)
	s := f.set()
	ready := func() {
		f.clock += laneMargin + laneStageEvery + 1
		require.NoError(t, s.scan())
	}

	f.stageRecord(t, 0, 1)
	f.stageRecord(t, 0, 2)
	f.write(t, 1, 5, 3)
	f.stageRecord(t, 0, 4)
	ready()
	_, got := drain(t, s)
	assert.Equal(t, []byte{1, 2, 3, 4}, got, "taken from the stage")
	assert.Zero(t, *f.stageCount(0), "the stage is empty once taken")
	assert.Zero(t, binary.LittleEndian.Uint32(f.stages[laneStageHeader+laneLengthOffset:]),
		"a staged record's length stays 0 in the stage, which a full stage's copy publishes last")

	// A probe holds lane 0's stage, stamped: lane 1's later record waits.
	slot, ok := f.stageSlot(0)
	require.True(t, ok)
	f.clock++
	binary.LittleEndian.PutUint64(slot, f.clock)
	slot[8] = 5
	f.write(t, 1, 5, 6)
	ready()
	_, got = drain(t, s)
	assert.Empty(t, got, "held back by the stage a probe holds")
	require.Nil(t, f.stageCommit(0))
	ready()
	_, got = drain(t, s)
	assert.Equal(t, []byte{5, 6}, got)

	// Sixteen staged records go into the lane at once.
	var want []byte
	for i := range laneStageRecords {
		f.stageRecord(t, 0, byte(10+i))
		want = append(want, byte(10+i))
	}
	assert.Zero(t, *f.stageCount(0), "a full stage goes into the lane")
	ready()
	_, got = drain(t, s)
	assert.Equal(t, want, got, "copied into the lane")

	// A lane without room for a full stage leaves it full, for the reader.
	for f.reserveRoom(1) >= 20 {
		f.write(t, 1, 20, 0)
	}
	want = nil
	for i := range laneStageRecords {
		f.stageRecord(t, 1, byte(40+i))
		want = append(want, byte(40+i))
	}
	assert.Equal(t, uint32(laneStageRecords), *f.stageCount(1), "the stage stays full")
	_, ok = f.stageSlot(1)
	assert.False(t, ok, "a full stage takes no record")
	ready()
	_, got = drain(t, s)
	got = slices.DeleteFunc(got, func(b byte) bool { return b == 0 })
	assert.Equal(t, want, got, "taken from the full stage")
	assert.Zero(t, *f.stageCount(1))
}

// A record still being written on one lane holds back the later records
// of every lane, and goes out in its turn once published.
func TestLanesWaitForARecordBeingWritten(t *testing.T) {
	f := newFakeLanes(t, 2)
	s := f.set()
	f.write(t, 0, 5, 0)
	f.clock = 10 * uint64(laneMargin)
	require.NoError(t, s.scan())
	_, payload := drain(t, s)
	require.Equal(t, []byte{0}, payload, "a record before the scan's horizon")

	f.write(t, 0, 5, 1)
	slow, ok := f.reserve(1, 5) // reserved, its probe preempted before its clock read
	require.True(t, ok)
	f.write(t, 0, 5, 3)
	f.clock += 2 * uint64(laneMargin)
	require.NoError(t, s.scan())
	_, payload = drain(t, s)
	assert.Empty(t, payload, "held back: the slow record may carry an earlier time")

	f.clock++
	slow.stamp(f.clock, 2)
	slow.publish()
	f.clock += 2 * uint64(laneMargin)
	require.NoError(t, s.scan())
	ts, payload := drain(t, s)
	assert.Equal(t, []byte{1, 3, 2}, payload, "in timestamp order once published")
	assert.True(t, slices.IsSorted(ts), "timestamps %v", ts)
}

// A new reader of lanes read before starts at their tails.
func TestLanesNewReaderStartsAtTheTails(t *testing.T) {
	f := newFakeLanes(t, 2)
	s := f.set()
	for i := range 20 {
		f.write(t, i%2, 5, byte(i))
	}
	f.clock += uint64(laneMargin) + 1
	require.NoError(t, s.scan())
	_, payload := drain(t, s)
	require.Len(t, payload, 20)
	f.write(t, 1, 5, 20)
	f.clock += uint64(laneMargin) + 1
	s = f.set()
	require.NoError(t, s.scan())
	_, payload = drain(t, s)
	assert.Equal(t, []byte{20}, payload)
}

// A lane's records where a probe was preempted between its reservation
// and its clock read come out in timestamp order too.
func TestLanesReorderWithinALane(t *testing.T) {
	f := newFakeLanes(t, 1)
	s := f.set()
	first, ok := f.reserve(0, 5)
	require.True(t, ok)
	f.write(t, 0, 5, 2)
	f.write(t, 0, 5, 3)
	f.clock++
	first.stamp(f.clock, 4)
	first.publish()
	f.clock += uint64(laneMargin) + 1
	require.NoError(t, s.scan())
	ts, payload := drain(t, s)
	assert.Equal(t, []byte{2, 3, 4}, payload)
	assert.True(t, slices.IsSorted(ts), "timestamps %v", ts)
}

// Records newer than the margin wait for a later scan.
func TestLanesMargin(t *testing.T) {
	f := newFakeLanes(t, 1)
	s := f.set()
	f.clock = uint64(laneMargin)
	f.write(t, 0, 5, 1)
	require.NoError(t, s.scan())
	_, payload := drain(t, s)
	assert.Empty(t, payload, "within the margin of the scan's clock")
	f.clock += uint64(laneMargin) + 1
	require.NoError(t, s.scan())
	_, payload = drain(t, s)
	assert.Equal(t, []byte{1}, payload)
}

// Records that wrap around a lane's end run on into its slack, and the
// lane's positions past the end are skipped, many times over.
func TestLanesWrap(t *testing.T) {
	f := newFakeLanes(t, 1)
	s := f.set()
	r := rand.New(rand.NewPCG(1, 2))
	var want, got []byte
	for i := range 500 {
		units := uint32(2 + r.IntN(19))
		p, ok := f.reserve(0, units)
		if !ok {
			f.clock += uint64(laneMargin) + 1
			require.NoError(t, s.scan())
			_, payload := drain(t, s)
			got = append(got, payload...)
			p, ok = f.reserve(0, units)
			require.True(t, ok, "record %d: lane still full after a scan", i)
		}
		f.clock++
		p.stamp(f.clock, byte(i))
		p.publish()
		want = append(want, byte(i))
	}
	f.clock += uint64(laneMargin) + 1
	require.NoError(t, s.scan())
	_, payload := drain(t, s)
	assert.Equal(t, want, append(got, payload...))
}

// A record whose length makes no sense ends the reading of its lane, once
// reported; the other lanes go on.
func TestLanesCorruptLength(t *testing.T) {
	f := newFakeLanes(t, 2)
	s := f.set()
	p, ok := f.reserve(0, 5)
	require.True(t, ok)
	f.clock++
	p.stamp(f.clock, 1)
	binary.LittleEndian.PutUint32(p.rec[laneLengthOffset:], 21) // past the slack
	f.write(t, 1, 5, 2)
	f.clock += uint64(laneMargin) + 1
	require.ErrorIs(t, s.scan(), errLaneCorrupt)
	_, payload := drain(t, s)
	assert.Equal(t, []byte{2}, payload)
	f.write(t, 1, 5, 3)
	f.clock += uint64(laneMargin) + 1
	require.NoError(t, s.scan(), "reported once")
	_, payload = drain(t, s)
	assert.Equal(t, []byte{3}, payload, "the other lane goes on, its horizon no longer held by the dead one")
}

// Past the queue limit, only the lane holding the horizon back is read:
// the queues stay bounded, and nothing stalls.
func TestLanesLimit(t *testing.T) {
	f := newFakeLanes(t, 2)
	s := f.set()
	s.limit = 10 * LaneUnit
	f.clock = 10 * uint64(laneMargin)
	require.NoError(t, s.scan())
	slow, ok := f.reserve(0, 5)
	require.True(t, ok)
	for i := range 4 {
		f.write(t, 1, 5, byte(10+i))
	}
	f.clock += 2 * uint64(laneMargin)
	require.NoError(t, s.scan())
	_, payload := drain(t, s)
	assert.Empty(t, payload, "held back by the record being written")
	assert.Equal(t, 20*LaneUnit, s.queued, "lane 1 read before the limit was reached")
	f.write(t, 1, 5, 14)
	f.clock += 2 * uint64(laneMargin)
	require.NoError(t, s.scan())
	assert.Equal(t, 20*LaneUnit, s.queued, "past the limit, lane 1 is not read")
	f.clock++
	slow.stamp(f.clock, 1)
	slow.publish()
	f.clock += 2 * uint64(laneMargin)
	require.NoError(t, s.scan()) // lane 0, holding the horizon, is read
	require.NoError(t, s.scan()) // then lane 1, holding it now
	_, payload = drain(t, s)
	assert.Equal(t, []byte{10, 11, 12, 13, 14, 1}, payload)
	assert.Zero(t, s.queued)
}

// FuzzLaneScan: whatever the lanes and their stages hold (the heads, the
// stages' counts and locks included), scanning terminates and never reads
// past them, and what it hands out is whole records in timestamp order,
// each within the slack's bound.
func FuzzLaneScan(f *testing.F) {
	seed := newFakeStagedLanes(f, 2)
	for i := range 6 {
		seed.write(f, i%2, uint32(5+15*(i%3/2)), byte(i))
		seed.stageRecord(f, i%2, byte(i))
	}
	f.Add(slices.Clone(seed.mem), slices.Clone(seed.stages), uint64(laneMargin)*2)
	f.Add(make([]byte, len(seed.mem)), make([]byte, len(seed.stages)), uint64(0))
	f.Fuzz(func(t *testing.T, mem, stages []byte, clock uint64) {
		lanes := newFakeStagedLanes(t, 2)
		copy(lanes.mem, mem)
		copy(lanes.stages, stages)
		lanes.clock = clock
		s := lanes.set()
		var last uint64
		for range 3 {
			_ = s.scan()
			for {
				b, ok := s.next()
				if !ok {
					break
				}
				n := binary.LittleEndian.Uint32(b[laneLengthOffset:])
				require.Equal(t, int(n)*LaneUnit, len(b), "a whole record")
				require.LessOrEqual(t, n, lanes.layout.maxUnits, "a record within the slack's bound")
				ts := binary.LittleEndian.Uint64(b)
				require.GreaterOrEqual(t, ts, last, "timestamp order")
				last = ts
			}
			lanes.clock += uint64(laneMargin)
		}
		require.GreaterOrEqual(t, s.queued, 0)
	})
}

// BenchmarkLaneRead: the reader's work per 80-byte record (copy out,
// zero, order, hand out), with the test's writer's, two lanes written in
// turn, a scan per 16 records.
func BenchmarkLaneRead(b *testing.B) {
	f := newFakeLanes(b, 2)
	s := f.set()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p, ok := f.reserve(i%2, 5)
		if !ok {
			require.True(b, ok, "lane %d full", i%2)
		}
		f.clock++
		p.stamp(f.clock, byte(i))
		p.publish()
		if i%16 == 15 {
			f.clock += uint64(laneMargin) + 1
			if err := s.scan(); err != nil {
				require.NoError(b, err)
			}
			for {
				if _, ok := s.next(); !ok {
					break
				}
			}
		}
	}
}

// modelWriter is a probe in TestLanesModel: a thread whose records go to
// the lane of whichever CPU it is on, and which can be preempted between
// any two of a probe's steps (reserve, clock read, publish).
type modelWriter struct {
	id   byte
	made int // records reserved so far (their sequence numbers)
	p    pending
	step int // 0: idle, 1: reserved, 2: stamped; with stages, 3: holds a stage slot, 4: stamped it, 5: flushed it
	// With stages: the stage's lane, its slot, and a flush's records.
	lane    int
	slot    []byte
	flushed []pending
}

// stamp writes w's next record's timestamp, id and sequence into rec.
func (w *modelWriter) stamp(rec []byte, ts uint64) {
	binary.LittleEndian.PutUint64(rec, ts)
	rec[8], rec[9], rec[10] = w.id, byte(w.made), byte(w.made>>8)
	w.made++
}

// TestLanesModel runs writers and a reader over two small lanes in random
// interleavings: more writers (CPUs, threads) than lanes, probes preempted
// between their reservation, their clock read and their publication,
// lanes that fill (the probe counts a drop), a queue limit the reader
// reaches, and readers restarted; with stages, half the records staged,
// the probes preempted holding a stage and in the middle of its copy
// into the lane, stages the reader takes from and stages that find the
// lane full. Every record reserved is handed out exactly once, or was
// queued by a reader that was replaced before handing it out (what a
// restart leaves behind); the records come out in timestamp order across
// lanes, and each writer's in the order it made them.
func TestLanesModel(t *testing.T) {
	for _, staged := range []bool{false, true} {
		t.Run(map[bool]string{false: "lanes", true: "stages"}[staged], func(t *testing.T) { testLanesModel(t, staged) })
	}
}

func testLanesModel(t *testing.T, staged bool) {
	var flushes, keptFull, takenHeld int
	defer func() {
		if staged && !t.Failed() {
			// The interleavings reach each of a stage's ways.
			assert.Positive(t, flushes, "full stages copied into their lane")
			assert.Positive(t, keptFull, "full stages kept for want of room")
			assert.Positive(t, takenHeld, "scans while a probe held a stage")
		}
	}()
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 7))
		f := newFakeLanes(t, 2)
		if staged {
			f = newFakeStagedLanes(t, 2)
		}
		s := f.set()
		if seed%3 == 0 {
			s.limit = 30 * LaneUnit
		}
		// With stages, every other seed's reader scans an eighth as
		// often: stages fill, and lanes.
		scanOdds := 1
		if staged && seed%2 == 1 {
			scanOdds = 8
		}
		writers := make([]*modelWriter, 2+r.IntN(4))
		for i := range writers {
			writers[i] = &modelWriter{id: byte(i)}
		}
		var (
			reserved, dropped, restartLost int
			lastTS                         uint64
			handed                         = map[[2]int]bool{} // writer, sequence
			lastSeq                        = map[int]int{}
		)
		// A record carries its writer at byte 8 and its sequence at 9.
		take := func() {
			for {
				b, ok := s.next()
				if !ok {
					return
				}
				ts := binary.LittleEndian.Uint64(b)
				w, seq := int(b[8]), int(b[9])|int(b[10])<<8
				require.GreaterOrEqual(t, ts, lastTS, "seed %d: timestamp order across lanes", seed)
				lastTS = ts
				require.False(t, handed[[2]int{w, seq}], "seed %d: writer %d record %d handed out twice", seed, w, seq)
				handed[[2]int{w, seq}] = true
				if prev, ok := lastSeq[w]; ok {
					require.Greater(t, seq, prev, "seed %d: writer %d's records out of order", seed, w)
				}
				lastSeq[w] = seq
			}
		}
		for range 3000 {
			f.clock += uint64(r.IntN(int(laneMargin / 2)))
			switch k := r.IntN(10); {
			case k < 7:
				w := writers[r.IntN(len(writers))]
				switch w.step {
				case 0:
					if lane := r.IntN(2); staged && r.IntN(2) == 0 {
						if slot, ok := f.stageSlot(lane); ok {
							w.lane, w.slot, w.step = lane, slot, 3
							reserved++
							break
						}
					}
					units := uint32(2 + r.IntN(19))
					p, ok := f.reserve(r.IntN(2), units)
					if !ok {
						dropped++ // the probe counts it
						break
					}
					w.p, w.step = p, 1
					reserved++
				case 1:
					w.stamp(w.p.rec, f.clock)
					w.step = 2
				case 2:
					w.p.publish()
					w.step = 0
				case 3:
					w.stamp(w.slot, f.clock)
					w.step = 4
				case 4:
					w.flushed = f.stageCommit(w.lane)
					w.step = 5
					if w.flushed == nil {
						w.step = 0
					}
				case 5:
					f.stagePublish(w.lane, w.flushed)
					w.step = 0
				}
			case k < 9:
				if r.IntN(scanOdds) != 0 {
					break // a reader that falls behind
				}
				if staged && (atomic.LoadUint64(f.stageLock(0)) != 0 || atomic.LoadUint64(f.stageLock(1)) != 0) {
					takenHeld++
				}
				require.NoError(t, s.scan())
				take()
			default:
				if r.IntN(20) == 0 {
					// A new reader: what the old one queued and had not
					// handed out leaves with it.
					restartLost += len(s.lanes[0].index) - s.lanes[0].next + len(s.lanes[1].index) - s.lanes[1].next
					s = f.set()
				}
			}
		}
		// The writers finish, time passes, the reader drains.
		for _, w := range writers {
			switch w.step {
			case 1:
				w.stamp(w.p.rec, f.clock)
				fallthrough
			case 2:
				w.p.publish()
			case 3:
				w.stamp(w.slot, f.clock)
				fallthrough
			case 4:
				if w.flushed = f.stageCommit(w.lane); w.flushed == nil {
					break
				}
				fallthrough
			case 5:
				f.stagePublish(w.lane, w.flushed)
			}
		}
		for range 4 {
			f.clock += 2 * uint64(laneMargin)
			require.NoError(t, s.scan())
			take()
		}
		require.Equal(t, reserved, len(handed)+restartLost, "seed %d: every record reserved is handed out (%d dropped, %d left by restarts)",
			seed, dropped, restartLost)
		require.Zero(t, s.queued, "seed %d", seed)
		flushes, keptFull = flushes+f.flushes, keptFull+f.keptFull
	}
}
