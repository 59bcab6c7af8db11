package occupancy

import (
	"math"
	"math/bits"
	"time"

	"github.com/xpuscope/xpuscope/semconv"
)

// Capacity is what a device can hold at once: its streaming
// multiprocessors (SMs; CUs on AMD) and the resident threads each can hold.
type Capacity struct {
	SMs          int32
	ThreadsPerSM int32
}

// Threads is the device's resident-thread capacity, SMs × threads per SM.
func (c Capacity) Threads() int64 { return int64(c.SMs) * int64(c.ThreadsPerSM) }

func (c Capacity) valid() bool { return c.SMs > 0 && c.ThreadsPerSM > 0 }

// DefaultCapacity is assumed for a device whose capacity is not known: an
// NVIDIA H100 SXM5 (132 SMs × 2048 threads). Ratios computed with it are
// relative to that reference, not to the real device.
var DefaultCapacity = Capacity{SMs: 132, ThreadsPerSM: 2048}

// CapacitySource says where a device's capacity came from.
type CapacitySource uint8

// Capacity sources.
const (
	CapacityDefault    CapacitySource = iota // DefaultCapacity: not known
	CapacityConfigured                       // configured by the user
	CapacityNVML                             // read from NVML
	CapacityKFD                              // read from the AMD KFD topology
)

// String is the gpu.capacity.source value.
func (s CapacitySource) String() string {
	switch s {
	case CapacityConfigured:
		return semconv.CapacitySourceConfigured
	case CapacityNVML:
		return semconv.CapacitySourceNVML
	case CapacityKFD:
		return semconv.CapacitySourceKFD
	}
	return semconv.CapacitySourceDefault
}

// Completion says which observed edge ended a kernel's estimate.
type Completion uint8

// Completion sources, tightest first.
const (
	// CompletionEvent: an event recorded after the kernel on its stream
	// was seen complete.
	CompletionEvent Completion = iota
	// CompletionSync: the return of the stream, device or synchronous-copy
	// wait that covered the kernel (sync_fallback).
	CompletionSync
	// CompletionExit: the process exited with the kernel pending.
	CompletionExit
	// NumCompletions is the number of completion sources.
	NumCompletions
)

// String is the gpu.kernel.completion value.
func (c Completion) String() string {
	switch c {
	case CompletionEvent:
		return semconv.KernelCompletionEvent
	case CompletionSync:
		return semconv.KernelCompletionSyncFallback
	case CompletionExit:
		return semconv.KernelCompletionExit
	}
	return "Completion(?)"
}

// DropReason says which bound made the model drop state.
type DropReason uint8

// Drop reasons.
const (
	// DropPendingCap: a stream's pending queue (or the total budget) was
	// full; its oldest pending launch was dropped unestimated.
	DropPendingCap DropReason = iota
	// DropStreamCap: the process had too many streams (or devices); the
	// least recently used stream's pending launches were dropped, or a
	// launch on a new stream was refused.
	DropStreamCap
	// DropProcessCap: too many processes; the least recently used one's
	// pending launches were dropped.
	DropProcessCap
	// DropEventCap: too many events pending; the least recently recorded
	// one was forgotten, so its completion can no longer be used.
	DropEventCap
	// NumDropReasons is the number of drop reasons.
	NumDropReasons
)

// String is the xpuscope.drop.reason value.
func (r DropReason) String() string {
	switch r {
	case DropPendingCap:
		return semconv.DropReasonPendingCap
	case DropStreamCap:
		return semconv.DropReasonStreamCap
	case DropProcessCap:
		return semconv.DropReasonProcessCap
	case DropEventCap:
		return semconv.DropReasonEventCap
	}
	return "DropReason(?)"
}

// Kernel is one kernel's estimate, handed to the kernel handler when an
// edge completes it. Times are nanoseconds on the caller's clock.
type Kernel struct {
	PID    uint32
	Device int32
	Stream uint64 // the stream handle as passed to Launch (cudaStreamLegacy folded into 0)
	ID     uint64 // the caller's kernel identifier, as passed to Launch
	// Threads is grid × block threads; Blocks is grid blocks (saturated
	// at MaxInt64).
	Threads, Blocks int64
	// Launch is the launch call. Start and End are the estimate:
	// Launch ≤ Start ≤ End ≤ Bound.
	Launch, Start, End int64
	// Bound is the edge that completed it: the latest the kernel can have
	// ended.
	Bound      int64
	Completion Completion
}

// Duration is the estimated run time, End − Start.
func (k *Kernel) Duration() time.Duration { return time.Duration(k.End - k.Start) }

// Usage is one process's estimated use of one device over a reporting
// interval. Every figure is modelled.
type Usage struct {
	PID            uint32
	Device         int32
	Capacity       Capacity
	CapacitySource CapacitySource
	// Interval is the reporting interval in ns: from the previous Report
	// (or the first event) to this one.
	Interval int64
	// ThreadSeconds is the busy thread-seconds credited by this report:
	// Σ min(threads, capacity) × duration over the kernel time that lies
	// in the interval, plus LateThreadSeconds, each clamped to capacity ×
	// wall time. Summed over reports it is process.gpu.thread.time.
	ThreadSeconds float64
	// LateThreadSeconds is the part of ThreadSeconds that ran before the
	// interval: kernels whose completion edge came only now.
	LateThreadSeconds float64
	// ThreadRatio is the interval's busy thread-seconds over capacity ×
	// interval, in 0..1.
	ThreadRatio float64
	// SMActiveRatio is the interval's SM-seconds (min(blocks, SMs) ×
	// duration) over SMs × interval, in 0..1.
	SMActiveRatio float64
	// Kernels counts the kernels completed in the interval, by completion.
	Kernels [NumCompletions]uint64
	// Pending is the number of launches still waiting for an edge.
	Pending int
	// Clamped is set when the capacity clamp cut the estimate.
	Clamped bool
	// Exited is set on the last report of a process that exited.
	Exited bool
}

// Limits bound the model's state. A zero field takes its default.
type Limits struct {
	Processes         int // tracked processes; default 256
	StreamsPerProcess int // streams (and devices) per process; default 32
	PendingPerStream  int // launches and waits pending per stream; default 1024
	PendingTotal      int // pending-queue slots over all streams; default 1<<18
	Events            int // recorded events with pending work; default 4096
}

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.Processes, 256)
	def(&l.StreamsPerProcess, 32)
	def(&l.PendingPerStream, 1024)
	def(&l.PendingTotal, 1<<18)
	def(&l.Events, 4096)
	return l
}

// Size is the model's current state, to check it against Limits.
type Size struct {
	Processes int
	Streams   int // over all processes
	// MaxStreams is the most streams of one process.
	MaxStreams int
	Pending    int // pending items (launches and waits) over all streams
	// MaxPending is the most pending items of one stream.
	MaxPending int
	// PendingSlots is the allocated queue capacity, bounded by
	// Limits.PendingTotal.
	PendingSlots int
	Events       int
}

// Option configures a Model.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	limits   Limits
	capacity func(pid uint32, device int32) (Capacity, CapacitySource)
	onKernel func(*Kernel)
}

// WithLimits sets the bounds of the model's state.
func WithLimits(l Limits) Option { return optionFunc(func(c *config) { c.limits = l }) }

// WithCapacity sets the function that gives a device's capacity, asked
// once when a process first uses the device (its cuda.device ordinal is
// the process's own: CUDA_VISIBLE_DEVICES renumbers devices). A capacity
// with no SMs or threads takes DefaultCapacity. Default: DefaultCapacity
// for every device.
func WithCapacity(f func(pid uint32, device int32) (Capacity, CapacitySource)) Option {
	return optionFunc(func(c *config) { c.capacity = f })
}

// WithKernelHandler sets the function called with each kernel an edge
// completes, synchronously, from the call that observed the edge. The
// Kernel is reused: copy it to keep it. The handler must not call the
// Model.
func WithKernelHandler(f func(*Kernel)) Option {
	return optionFunc(func(c *config) { c.onKernel = f })
}

// PerThreadStream is the stream handle to pass for the per-thread default
// stream (cudaStreamPerThread, the _ptsz entry points with stream 0) of
// thread tid: each thread's is a stream of its own.
func PerThreadStream(tid uint32) uint64 { return perThread | uint64(tid) }

const perThread = 1 << 63

// Model estimates GPU occupancy from API events. Create it with New.
type Model struct {
	lim      Limits
	capFn    func(uint32, int32) (Capacity, CapacitySource)
	onKernel func(*Kernel)

	procs    []*proc
	procIdx  map[uint32]int32
	lastProc *proc
	procGen  uint64

	events events

	tick       uint64
	slots      int // allocated ring slots over all streams
	started    bool
	lastReport int64

	dropped [NumDropReasons]uint64
	resets  uint64 // streams and processes dropped
	k       Kernel
}

// New returns an empty Model.
func New(opts ...Option) *Model {
	var c config
	for _, o := range opts {
		o.apply(&c)
	}
	c.limits = c.limits.withDefaults()
	m := &Model{
		lim:      c.limits,
		capFn:    c.capacity,
		onKernel: c.onKernel,
		procIdx:  make(map[uint32]int32, c.limits.Processes),
	}
	m.events.init(c.limits.Events)
	return m
}

// Dropped returns how many items the model dropped for reason r, since it
// was created.
func (m *Model) Dropped(r DropReason) uint64 {
	if r >= NumDropReasons {
		return 0
	}
	return m.dropped[r]
}

// Size returns the model's current state.
func (m *Model) Size() Size {
	s := Size{Processes: len(m.procs), PendingSlots: m.slots, Events: m.events.n}
	for _, p := range m.procs {
		s.Streams += len(p.streams)
		s.MaxStreams = max(s.MaxStreams, len(p.streams))
		for _, st := range p.streams {
			s.Pending += st.n
			s.MaxPending = max(s.MaxPending, st.n)
		}
	}
	return s
}

// proc is one process.
type proc struct {
	pid     uint32
	gen     uint64
	used    uint64
	streams []*stream
	last    *stream
	accs    []*acc
	exited  bool
}

// acc accumulates one process's use of one device between reports.
type acc struct {
	device     int32
	cap        Capacity
	source     CapacitySource
	capT, capS int64
	t0         int64 // first launch: nothing of this series ran before
	streams    int   // live streams on the device
	// Thread-ns and SM-ns: cur lies in the current interval, late before
	// it; used is what previous reports credited.
	curT, lateT, usedT float64
	curS, lateS, usedS float64
	kernels            [NumCompletions]uint64
}

func (m *Model) start(ts int64) {
	if !m.started {
		m.started = true
		m.lastReport = ts
	}
}

// lookup returns the live process pid, or nil.
func (m *Model) lookup(pid uint32) *proc {
	if p := m.lastProc; p != nil && p.pid == pid {
		p.used = m.tick
		return p
	}
	i, ok := m.procIdx[pid]
	if !ok {
		return nil
	}
	p := m.procs[i]
	m.lastProc = p
	p.used = m.tick
	return p
}

// process returns pid's process, creating it (or reviving an exited one).
func (m *Model) process(pid uint32) *proc {
	p := m.lookup(pid)
	if p == nil {
		if len(m.procs) >= m.lim.Processes {
			m.evictProcess()
		}
		m.procGen++
		p = &proc{pid: pid, gen: m.procGen}
		m.procIdx[pid] = int32(len(m.procs))
		m.procs = append(m.procs, p)
		m.lastProc = p
	} else if p.exited {
		// The pid came back (reused) before its exit was reported: a new
		// process in the same series.
		m.procGen++
		p.gen = m.procGen
		p.exited = false
	}
	p.used = m.tick
	return p
}

func (m *Model) evictProcess() {
	victim := -1
	for i, p := range m.procs {
		if victim < 0 || p.used < m.procs[victim].used {
			victim = i
		}
	}
	p := m.procs[victim]
	m.resets++
	for _, st := range p.streams {
		m.dropped[DropProcessCap] += uint64(st.kernels)
		m.release(st)
	}
	p.streams = nil
	m.removeProcess(victim)
}

func (m *Model) removeProcess(i int) {
	p := m.procs[i]
	last := len(m.procs) - 1
	m.procs[i] = m.procs[last]
	m.procIdx[m.procs[i].pid] = int32(i)
	m.procs[last] = nil
	m.procs = m.procs[:last]
	delete(m.procIdx, p.pid)
	if m.lastProc == p {
		m.lastProc = nil
	}
}

// streamKey folds a handle into the key a stream is found by: created
// streams are unique in the process; the default streams (0, and
// cudaStreamLegacy 1, folded into 0; cudaStreamPerThread 2; PerThreadStream
// handles) exist once per device.
func streamKey(device int32, handle uint64) (int32, uint64) {
	if handle == 1 {
		handle = 0
	}
	if handle <= 2 || handle&perThread != 0 {
		return device, handle
	}
	return -1, handle
}

func (p *proc) find(device int32, handle uint64) *stream {
	kd, kh := streamKey(device, handle)
	if st := p.last; st != nil && st.handle == kh && st.keyDev == kd {
		return st
	}
	for _, st := range p.streams {
		if st.handle == kh && st.keyDev == kd {
			p.last = st
			return st
		}
	}
	return nil
}

// stream returns the stream, creating it; nil when a bound refuses it.
func (m *Model) stream(p *proc, device int32, handle uint64, ts int64) *stream {
	if st := p.find(device, handle); st != nil {
		st.used = m.tick
		return st
	}
	a := p.acc(device)
	if a == nil {
		if len(p.accs) >= m.lim.StreamsPerProcess {
			p.pruneAccs()
		}
		if len(p.accs) >= m.lim.StreamsPerProcess {
			m.dropped[DropStreamCap]++
			return nil
		}
		a = m.newAcc(p.pid, device, ts)
		p.accs = append(p.accs, a)
	}
	if len(p.streams) >= m.lim.StreamsPerProcess {
		m.evictStream(p)
	}
	size := min(16, ceilPow2(m.lim.PendingPerStream))
	if m.slots+size > m.lim.PendingTotal {
		m.dropped[DropPendingCap]++
		return nil
	}
	kd, kh := streamKey(device, handle)
	st := &stream{handle: kh, keyDev: kd, device: device, acc: a, used: m.tick, ring: make([]item, size), clock: math.MinInt64, lastT: math.MinInt64}
	m.slots += size
	a.streams++
	a.t0 = min(a.t0, ts)
	p.streams = append(p.streams, st)
	p.last = st
	return st
}

func (m *Model) evictStream(p *proc) {
	victim := 0
	for i, st := range p.streams {
		if st.used < p.streams[victim].used {
			victim = i
		}
	}
	st := p.streams[victim]
	m.dropped[DropStreamCap] += uint64(st.kernels)
	m.release(st)
	last := len(p.streams) - 1
	p.streams[victim] = p.streams[last]
	p.streams[last] = nil
	p.streams = p.streams[:last]
	if p.last == st {
		p.last = nil
	}
}

// release frees a stream that leaves the model.
func (m *Model) release(st *stream) {
	m.resets++
	st.dead = true
	m.slots -= len(st.ring)
	st.ring = nil
	st.n, st.kernels = 0, 0
	st.acc.streams--
}

func (p *proc) acc(device int32) *acc {
	for _, a := range p.accs {
		if a.device == device {
			return a
		}
	}
	return nil
}

// pruneAccs drops devices with no stream left and nothing to report.
func (p *proc) pruneAccs() {
	keep := p.accs[:0]
	for _, a := range p.accs {
		if a.streams > 0 || a.curT > 0 || a.lateT > 0 || a.kernels != [NumCompletions]uint64{} {
			keep = append(keep, a)
		}
	}
	clear(p.accs[len(keep):])
	p.accs = keep
}

func (m *Model) newAcc(pid uint32, device int32, ts int64) *acc {
	c, src := DefaultCapacity, CapacityDefault
	if m.capFn != nil {
		c, src = m.capFn(pid, device)
		if !c.valid() {
			c, src = DefaultCapacity, CapacityDefault
		}
	}
	return &acc{device: device, cap: c, source: src, capT: c.Threads(), capS: int64(c.SMs), t0: ts}
}

func ceilPow2(n int) int {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(n-1))
}

// size saturates x·y·z at MaxInt64.
func size3(d [3]uint32) int64 {
	hi, lo := bits.Mul64(uint64(d[0])*uint64(d[1]), uint64(d[2]))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}

func mulSat(a, b int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}
