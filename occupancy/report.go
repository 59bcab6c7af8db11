package occupancy

// Report closes the interval from the previous Report (or the first
// event) to now and appends one Usage per process and device to dst,
// returning it; pass a reused slice (dst[:0]) to report without
// allocating. Exited processes appear once more, with Exited set, and are
// then forgotten. A Report at or before the previous one closes nothing
// and appends nothing.
//
// Busy time is counted when an edge completes a kernel. The part of a
// kernel that lies in this interval counts in the ratios; the part before
// it (an edge seen only now) counts in ThreadSeconds as
// LateThreadSeconds. Each is clamped to capacity × wall time: the
// interval's part to capacity × (now − previous report), the late part to
// the capacity left unused by the earlier reports of the series.
func (m *Model) Report(now int64, dst []Usage) []Usage {
	if !m.started {
		m.started, m.lastReport = true, now
		return dst
	}
	prev := m.lastReport
	if now <= prev {
		return dst
	}
	interval := now - prev
	for i := 0; i < len(m.procs); i++ {
		p := m.procs[i]
		for _, a := range p.accs {
			dst = append(dst, a.report(p, prev, now, interval))
		}
		if p.exited {
			m.removeProcess(i)
			i--
		} else {
			p.pruneAccs()
		}
	}
	m.lastReport = now
	return dst
}

func (a *acc) report(p *proc, prev, now, interval int64) Usage {
	u := Usage{
		PID: p.pid, Device: a.device, Capacity: a.cap, CapacitySource: a.source,
		Interval: interval, Kernels: a.kernels, Exited: p.exited,
	}
	for _, st := range p.streams {
		if st.acc == a {
			u.Pending += st.kernels
		}
	}
	// The interval's part: what ran since max(prev, t0).
	wall := float64(max(now-max(prev, a.t0), 0))
	// The late part: the capacity earlier reports left unused.
	past := float64(max(prev-a.t0, 0))
	curT, lateT, cT := clamp2(a.curT, a.lateT, float64(a.capT)*wall, float64(a.capT)*past-a.usedT)
	curS, lateS, cS := clamp2(a.curS, a.lateS, float64(a.capS)*wall, float64(a.capS)*past-a.usedS)
	a.usedT += curT + lateT
	a.usedS += curS + lateS
	u.Clamped = cT || cS
	u.ThreadSeconds = (curT + lateT) / 1e9
	u.LateThreadSeconds = lateT / 1e9
	u.ThreadRatio = min(curT/(float64(a.capT)*float64(interval)), 1)
	u.SMActiveRatio = min(curS/(float64(a.capS)*float64(interval)), 1)
	a.curT, a.lateT, a.curS, a.lateS = 0, 0, 0, 0
	a.kernels = [NumCompletions]uint64{}
	return u
}

// clamp2 clamps cur to curCap and late to lateCap (each at least 0).
func clamp2(cur, late, curCap, lateCap float64) (float64, float64, bool) {
	curCap, lateCap = max(curCap, 0), max(lateCap, 0)
	clamped := cur > curCap || late > lateCap
	return min(cur, curCap), min(late, lateCap), clamped
}
