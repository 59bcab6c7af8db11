package top

// states keeps, for each counter and histogram series, its values of the
// last scrape built (the good one) and of the scrape being built, in two
// slots: one map lookup a series, and a scrape that fails to decode
// leaves the good slot as it was. A histogram's slot points into a slab
// of the scrape's bounds and cumulative counts.
type states struct {
	index map[uint64]int32
	all   []seriesState
	free  []int32
	// gen numbers the scrapes begun, good the last built (0: none).
	gen, good uint32
	// slabs: slabs[goodSlab] holds the good scrape's histograms, the
	// other the one being built's.
	slabs    [2][]float64
	goodSlab int
	seen     int // series of the scrape being built
}

type seriesState struct {
	gen [2]uint32
	v   [2]float64 // a counter's value; a histogram's count
	off [2]int32   // a histogram's bounds, then its cumulative counts, in the slab of its gen
	n   [2]int32   // its number of bounds; -1 for a counter
}

func newStates() states { return states{index: map[uint64]int32{}} }

// begin starts a scrape.
func (s *states) begin() {
	s.gen++
	s.seen = 0
	s.slabs[1-s.goodSlab] = s.slabs[1-s.goodSlab][:0]
}

// commit makes the scrape built the good one, and forgets series that
// were in neither it nor, where one failed since, the scrape before, once
// they are more than those it had.
func (s *states) commit() {
	s.good = s.gen
	s.goodSlab = 1 - s.goodSlab
	if len(s.index) <= 2*s.seen+1024 {
		return
	}
	for h, i := range s.index {
		st := &s.all[i]
		if st.gen[0] != s.good && st.gen[1] != s.good {
			delete(s.index, h)
			s.free = append(s.free, i)
		}
	}
}

// get returns series h's state, and the slots of its last good value
// (-1 for none) and of the value of this scrape.
func (s *states) get(h uint64) (st *seriesState, good, cur int) {
	s.seen++
	i, ok := s.index[h]
	if !ok {
		if n := len(s.free); n > 0 {
			i = s.free[n-1]
			s.free = s.free[:n-1]
			s.all[i] = seriesState{}
		} else {
			i = int32(len(s.all))
			s.all = append(s.all, seriesState{})
		}
		s.index[h] = i
	}
	st = &s.all[i]
	good, cur = -1, 0
	switch {
	case s.good != 0 && st.gen[0] == s.good:
		good, cur = 0, 1
	case s.good != 0 && st.gen[1] == s.good:
		good, cur = 1, 0
	case st.gen[1] == s.gen: // seen twice in this scrape
		cur = 1
	}
	st.gen[cur] = s.gen
	return st, good, cur
}

// slab is the slab the scrape being built writes to, and the good one.
func (s *states) slab() (cur *[]float64, good []float64) {
	return &s.slabs[1-s.goodSlab], s.slabs[s.goodSlab]
}
