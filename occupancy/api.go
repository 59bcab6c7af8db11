package occupancy

import "math"

// The event methods take times in nanoseconds on one monotonic clock
// (CLOCK_MONOTONIC, as BPF records it), and expect each process's calls
// in time order. Small disorder (records from different CPUs) is
// tolerated: a launch earlier than the previous item of its stream is
// moved to it, and no estimate ends before its start.
//
// stream is the handle the call passed: 0 and cudaStreamLegacy (1) are
// the device's legacy default stream; pass PerThreadStream(tid) for the
// per-thread default stream. device is the calling thread's current
// device (cudaSetDevice).

// Launch records a kernel launch: grid and block dimensions, and id, the
// caller's identifier of the kernel (a host function address, a
// CUfunction), handed back in Kernel.ID. A launch with an empty grid or
// block is ignored: it fails without running.
func (m *Model) Launch(ts int64, pid uint32, device int32, stream uint64, grid, block [3]uint32, id uint64) {
	blocks := size3(grid)
	threads := mulSat(blocks, size3(block))
	if threads == 0 {
		return
	}
	m.tick++
	m.start(ts)
	p := m.process(pid)
	st := m.stream(p, device, stream, ts)
	if st == nil {
		return
	}
	t := max(ts, st.lastT)
	st.lastT = t
	st.seq++
	m.push(st, item{t: t, seq: st.seq, id: id, threads: threads, blocks: blocks})
}

// StreamSync records a cudaStreamSynchronize (cuStreamSynchronize) of
// stream that began at begin and returned at end: every kernel launched on
// the stream by begin had ended by end (completion=sync_fallback).
func (m *Model) StreamSync(begin, end int64, pid uint32, device int32, stream uint64) {
	m.tick++
	p := m.lookup(pid)
	if p == nil {
		return
	}
	if st := p.find(device, stream); st != nil {
		st.used = m.tick
		end = max(end, begin)
		m.complete(p, st, math.MaxUint64, begin, end, end, CompletionSync, 0)
	}
}

// MemcpySync records a copy that returned only when the copy, and so all
// work before it on stream, was done: a synchronous cudaMemcpy between
// host and device (on the legacy default stream, 0), or an async copy to
// pageable host memory. Device-to-device copies do not wait and must not
// be fed here. It completes like StreamSync. The legacy default stream's
// implicit barrier with other blocking streams is not modelled: those
// streams wait for their own edges.
func (m *Model) MemcpySync(begin, end int64, pid uint32, device int32, stream uint64) {
	m.StreamSync(begin, end, pid, device, stream)
}

// DeviceSync records a cudaDeviceSynchronize (or cuCtxSynchronize) on
// device that began at begin and returned at end: every kernel the
// process launched on the device by begin had ended by end.
func (m *Model) DeviceSync(begin, end int64, pid uint32, device int32) {
	m.tick++
	p := m.lookup(pid)
	if p == nil {
		return
	}
	end = max(end, begin)
	for _, st := range p.streams {
		if st.device == device {
			m.complete(p, st, math.MaxUint64, begin, end, end, CompletionSync, 0)
		}
	}
}

// EventRecord records a cudaEventRecord of event on stream: the event
// completes when the work launched on the stream before it has.
func (m *Model) EventRecord(ts int64, pid uint32, device int32, stream uint64, event uint64) {
	m.tick++
	p := m.lookup(pid)
	if p == nil {
		return
	}
	k := evKey{pid, event}
	st := p.find(device, stream)
	var last *item
	if st != nil {
		last = st.lastKernel()
	}
	if last == nil {
		// Nothing pending before it: it is complete already, and a
		// re-record forgets the previous position.
		m.events.remove(k)
		return
	}
	st.used = m.tick
	last.fence = true
	if m.events.put(k, evRec{st: st, seq: last.seq, procGen: p.gen}) {
		m.dropped[DropEventCap]++
	}
}

// EventComplete records that event was seen complete at ts: a
// cudaEventSynchronize returned, or a cudaEventQuery succeeded. The
// kernels before its latest record end by ts (completion=event).
func (m *Model) EventComplete(ts int64, pid uint32, event uint64) {
	m.tick++
	p := m.lookup(pid)
	if p == nil {
		return
	}
	k := evKey{pid, event}
	r, ok := m.events.get(k)
	if !ok {
		return
	}
	m.events.remove(k)
	if r.procGen != p.gen || r.st.dead {
		return
	}
	m.complete(p, r.st, r.seq, math.MaxInt64, ts, ts, CompletionEvent, 0)
}

// StreamWaitEvent records a cudaStreamWaitEvent: work launched on stream
// after ts starts only once event (as last recorded) completes. The time
// the stream spends blocked is not busy.
func (m *Model) StreamWaitEvent(ts int64, pid uint32, device int32, stream uint64, event uint64) {
	m.tick++
	p := m.lookup(pid)
	if p == nil || p.exited {
		return
	}
	r, ok := m.events.get(evKey{pid, event})
	if !ok || r.procGen != p.gen || r.st.dead || r.st.completedSeq >= r.seq {
		return // unknown or complete: nothing to wait for
	}
	st := m.stream(p, device, stream, ts)
	if st == nil || st == r.st {
		return // a stream's own event is behind it already
	}
	t := max(ts, st.lastT)
	st.lastT = t
	m.push(st, item{t: t, seq: r.seq, dep: r.st, wait: true})
}

// ProcessExit records that pid exited at ts. Its pending kernels end at
// ts (completion=exit): the driver tears its contexts down. Its last
// usage is reported by the next Report, then it is forgotten. Pass the
// exit time when known (sched_process_exit); a time found by polling
// loosens the pending kernels' estimates by up to the polling period.
func (m *Model) ProcessExit(ts int64, pid uint32) {
	m.tick++
	p := m.lookup(pid)
	if p == nil || p.exited {
		return
	}
	for _, st := range p.streams {
		m.complete(p, st, math.MaxUint64, math.MaxInt64, ts, ts, CompletionExit, 0)
	}
	for i, st := range p.streams {
		m.release(st)
		p.streams[i] = nil
	}
	p.streams = p.streams[:0]
	p.last = nil
	p.exited = true
}
