package occupancy

// evKey names an event: handles are unique within a process.
type evKey struct {
	pid    uint32
	handle uint64
}

// evRec is an event's latest record: the kernel of st it follows.
type evRec struct {
	st      *stream
	seq     uint64
	procGen uint64
}

type evSlot struct {
	key        evKey
	rec        evRec
	prev, next int32
}

// events is a fixed-capacity LRU of the recorded events that still have
// pending work before them: an index-linked list over preallocated slots,
// so that recording and evicting never allocate.
type events struct {
	idx        map[evKey]int32
	slots      []evSlot
	head, tail int32 // most and least recently recorded; -1 when empty
	free       int32 // free list through next
	n          int
}

func (e *events) init(capacity int) {
	e.idx = make(map[evKey]int32, capacity)
	e.slots = make([]evSlot, capacity)
	for i := range e.slots {
		e.slots[i].next = int32(i + 1)
	}
	e.slots[capacity-1].next = -1
	e.head, e.tail, e.free = -1, -1, 0
}

func (e *events) get(k evKey) (evRec, bool) {
	i, ok := e.idx[k]
	if !ok {
		return evRec{}, false
	}
	return e.slots[i].rec, true
}

func (e *events) unlink(i int32) {
	s := &e.slots[i]
	if s.prev >= 0 {
		e.slots[s.prev].next = s.next
	} else {
		e.head = s.next
	}
	if s.next >= 0 {
		e.slots[s.next].prev = s.prev
	} else {
		e.tail = s.prev
	}
}

func (e *events) pushFront(i int32) {
	s := &e.slots[i]
	s.prev, s.next = -1, e.head
	if e.head >= 0 {
		e.slots[e.head].prev = i
	}
	e.head = i
	if e.tail < 0 {
		e.tail = i
	}
}

// put records k; when full it evicts the least recently recorded event
// and says whether that one could still have completed kernels.
func (e *events) put(k evKey, r evRec) (evicted bool) {
	if i, ok := e.idx[k]; ok {
		e.slots[i].rec = r
		e.unlink(i)
		e.pushFront(i)
		return false
	}
	if e.free < 0 {
		old := e.slots[e.tail]
		evicted = !old.rec.st.dead && old.rec.st.completedSeq < old.rec.seq
		e.remove(old.key)
	}
	i := e.free
	e.free = e.slots[i].next
	e.slots[i].key, e.slots[i].rec = k, r
	e.pushFront(i)
	e.idx[k] = i
	e.n++
	return evicted
}

func (e *events) remove(k evKey) {
	i, ok := e.idx[k]
	if !ok {
		return
	}
	delete(e.idx, k)
	e.unlink(i)
	e.slots[i] = evSlot{next: e.free}
	e.free = i
	e.n--
}
