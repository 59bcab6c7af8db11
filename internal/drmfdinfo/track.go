package drmfdinfo

import "bytes"

// Usage is one client's figures from one scan: what its engines did since
// the previous scan, and its memory.
type Usage struct {
	Key  Key
	PID  int  // the process the client is counted under
	Self bool // the client has no drm-client-id: one descriptor is one client
	// Driver is the client's drm-driver.
	Driver Name
	// Engines are the client's engines; Ratio is valid where Has is set
	// (not on the first scan that sees the engine).
	Engines  [MaxEngines]EngineUsage
	NEngines int
	// Memory is the bytes resident in the device's own memory regions
	// (local*, vram*), or, for a client with none (an integrated GPU),
	// in all its regions; HasMemory when any region said.
	Memory    uint64
	HasMemory bool
}

// EngineUsage is one engine's share of the period.
type EngineUsage struct {
	Name Name
	// Ratio is the engine's busy time (or cycles) since the previous scan
	// over the period (or total cycles), divided by its capacity, in
	// 0..1.
	Ratio float64
	Has   bool
}

// clientState is what the tracker keeps of a client between scans.
type clientState struct {
	seen    uint64
	pid     int
	t       int64 // when its fdinfo was last read, ns
	engines [MaxEngines]engineState
	n       int
}

type engineState struct {
	name        Name
	busy, total uint64
	read        bool // read in an earlier scan
}

// Tracker turns the counters of the clients that scans find into
// ratios: it pairs each client with its previous read by Key, counts a
// client once however many descriptors of however many processes hold it
// (under the first process the scan meets it in: /proc lists processes
// in pid order), and holds a counter that goes backwards at its previous,
// larger value, as drm-usage-stats.rst asks. Clients not seen in a scan
// are forgotten. It is not safe for concurrent use.
type Tracker struct {
	clients map[Key]*clientState
	self    map[selfKey]*clientState
	cycle   uint64
	out     []Usage
}

// selfKey names a client without drm-client-id: its descriptor.
type selfKey struct{ pid, fd int }

// Begin starts a scan.
func (t *Tracker) Begin() {
	if t.clients == nil {
		t.clients = map[Key]*clientState{}
		t.self = map[selfKey]*clientState{}
	}
	t.cycle++
	t.out = t.out[:0]
}

// Add takes one descriptor of the scan, read at now (ns).
func (t *Tracker) Add(pid, fd int, c *Client, now int64) {
	key, hasID := KeyOf(c)
	var st *clientState
	if hasID {
		st = t.clients[key]
		if st == nil {
			st = &clientState{}
			t.clients[key] = st
		}
	} else {
		sk := selfKey{pid, fd}
		st = t.self[sk]
		if st == nil {
			st = &clientState{}
			t.self[sk] = st
		}
	}
	if st.seen == t.cycle {
		return // a duplicated or shared descriptor of a client counted already
	}
	first := st.seen == 0
	st.seen = t.cycle
	st.pid = pid

	if len(t.out) < cap(t.out) {
		t.out = t.out[:len(t.out)+1]
	} else {
		t.out = append(t.out, Usage{})
	}
	u := &t.out[len(t.out)-1]
	*u = Usage{Key: key, PID: pid, Self: !hasID, Driver: c.Driver}

	dt := now - st.t
	for i := range c.NEngines {
		e := &c.Engines[i]
		if !e.HasBusy {
			continue
		}
		eu := &u.Engines[u.NEngines]
		u.NEngines++
		eu.Name = e.Name
		prev := st.engine(&e.Name)
		if prev == nil {
			continue // more engines than kept
		}
		busy := e.Busy
		if busy < prev.busy && !first {
			busy = prev.busy // held at the larger previous value
		}
		if !first && prev.read {
			switch {
			case e.Cycles && e.HasTotal && e.Total > prev.total:
				eu.Ratio, eu.Has = ratio(busy-prev.busy, e.Total-prev.total, e.Capacity), true
			case !e.Cycles && dt > 0:
				eu.Ratio, eu.Has = ratio(busy-prev.busy, uint64(dt), e.Capacity), true
			}
		}
		prev.busy = busy
		if e.HasTotal && (e.Total >= prev.total || first) {
			prev.total = e.Total
		} else if e.HasTotal {
			prev.total = e.Total // a timestamp that went back: a new baseline
			eu.Has = false
		}
		prev.read = true
	}
	st.t = now

	var local, all uint64
	hasLocal := false
	for i := range c.NRegions {
		r := &c.Regions[i]
		if !r.HasResident {
			continue
		}
		u.HasMemory = true
		all = sat(all, r.Resident)
		if n := r.Name.Bytes(); bytes.HasPrefix(n, []byte("local")) || bytes.HasPrefix(n, []byte("vram")) {
			local, hasLocal = sat(local, r.Resident), true
		}
	}
	if hasLocal {
		u.Memory = local
	} else {
		u.Memory = all
	}
}

// End finishes the scan: clients not seen are forgotten. It returns the
// clients of the scan, valid until the next Begin.
func (t *Tracker) End() []Usage {
	for k, st := range t.clients {
		if st.seen != t.cycle {
			delete(t.clients, k)
		}
	}
	for k, st := range t.self {
		if st.seen != t.cycle {
			delete(t.self, k)
		}
	}
	return t.out
}

// Len is how many clients the tracker keeps.
func (t *Tracker) Len() int { return len(t.clients) + len(t.self) }

// engine returns the kept state of the engine named n, adding it.
func (st *clientState) engine(n *Name) *engineState {
	for i := range st.n {
		if st.engines[i].name == *n {
			return &st.engines[i]
		}
	}
	if st.n == MaxEngines {
		return nil
	}
	e := &st.engines[st.n]
	*e = engineState{name: *n}
	st.n++
	return e
}

func ratio(busy, period uint64, capacity uint32) float64 {
	if period == 0 {
		return 0
	}
	if capacity == 0 {
		capacity = 1
	}
	r := float64(busy) / float64(period) / float64(capacity)
	switch {
	case r < 0:
		return 0
	case r > 1:
		return 1
	}
	return r
}

func sat(a, b uint64) uint64 {
	if a+b < a {
		return ^uint64(0)
	}
	return a + b
}
