package gputrace

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/xpuscope/xpuscope/internal/gputracebpf"
	"github.com/xpuscope/xpuscope/internal/meterx"
	"github.com/xpuscope/xpuscope/semconv"
)

// Kernel name indexes in a proc's names.
const (
	kernelUnknown = 0
	kernelOther   = 1
)

// maxNameLen bounds a kernel name label; template-heavy C++ names can run
// to kilobytes.
const maxNameLen = 512

// alloc is an outstanding device allocation.
type alloc struct {
	size   uint64
	at     uint64 // ktime of the allocation
	device int32
	api    gputracebpf.API
}

// otherPID is the pid of the fold, the proc that gathers the processes
// past the cap: no traced process has pid 0.
const otherPID = 0

// proc is what the aggregator knows of one traced process, or of the
// processes folded past the cap (the aggregator's other).
type proc struct {
	pid uint32
	exe string
	// group is the histograms' share of the process: its executable and
	// container.
	group *group
	// kernels maps a launch's function to what is known of it: [0] host
	// stubs, [1] driver handles. Bounded by maxFuncs; past the
	// kernel-name cap functions name kernelOther.
	kernels [2]map[uint64]*kernelRef
	// uncached stands for a function past maxFuncs.
	uncached kernelRef
	// calls indexes the process's series of a.calls by API.
	calls [gputracebpf.NumAPIs]*calls
	// The launch histograms of the device last launched on.
	hist    *launchHists
	histDev int32
	names   []string
	// Names learned from the process's own calls.
	registered    map[uint64]string // host stub → kernel (__cudaRegisterFunction)
	driverNames   map[uint64]string // CUfunction → kernel (cuModuleGetFunction)
	kernelHandles map[uint64]uint64 // cudaKernel_t → host stub (cudaGetKernel)
	// allocs are by pid too: the fold's are its processes'.
	allocs      map[allocKey]alloc
	outstanding int64
	// exited is the ktime at which the process was first seen to have
	// exited (0 while it runs); its series stay until they are retired
	// (retire).
	exited uint64
	// attrs are the series' process.pid, process.executable.name and the
	// resolver's container and pod attributes (the fold's: the executable
	// name semconv.Other alone); pod are the latter alone, for spans, and
	// parent the span context the resolver gave.
	attrs  meterx.Attrs
	pod    []attribute.KeyValue
	parent trace.SpanContext
	spans  tokenBucket
	// graphs are the process's CUDA graphs (graphs.go); nil until it
	// captures one.
	graphs *procGraphs
	// nccl is what its NCCL calls told (nccl.go); nil until it makes one.
	nccl *procNCCL
}

// allocKey is an outstanding allocation: its process and address.
type allocKey struct {
	pid uint32
	ptr uint64
}

// group is what the histograms know of a process: its executable and
// container, shared by every process that has the same. Histograms carry
// no pid, so that processes coming and going add no series.
type group struct {
	id    uint32
	key   groupKey
	attrs []attribute.KeyValue // the resolver's, then process.executable.name
	procs int                  // the procs in it; at 0 the group goes
}

type groupKey struct {
	exe string
	pod attribute.Distinct
}

// with returns the group's attributes plus kvs.
func (g *group) with(kvs ...attribute.KeyValue) meterx.Attrs {
	return meterx.NewAttrs(append(slices.Clip(g.attrs), kvs...)...)
}

// kernelRef is what a proc knows of one launched function: its name's
// index in names, and the launch series it last counted into, the latest
// first (a function is launched through one API, on one device or, from
// a thread each, on a few).
type kernelRef struct {
	name   int32
	series [2]*count
	keys   [2]launchKey
}

// count returns the series of k among those ref last counted into, or
// nil, and puts it first.
func (ref *kernelRef) count(k launchKey) *count {
	switch {
	case ref.series[0] != nil && ref.keys[0] == k:
	case ref.series[1] != nil && ref.keys[1] == k:
		ref.series[0], ref.series[1] = ref.series[1], ref.series[0]
		ref.keys[0], ref.keys[1] = ref.keys[1], ref.keys[0]
	default:
		return nil
	}
	return ref.series[0]
}

// remember puts c, the series of k, first among those ref counted into.
func (ref *kernelRef) remember(k launchKey, c *count) {
	ref.series[1], ref.keys[1] = ref.series[0], ref.keys[0]
	ref.series[0], ref.keys[0] = c, k
}

func driverIndex(driver bool) int {
	if driver {
		return 1
	}
	return 0
}

// Bounds of per-process state.
const (
	maxFuncs       = 1 << 14 // distinct launch functions remembered
	maxLearned     = 1 << 16 // registered names, driver names, kernel handles
	maxAllocations = 1 << 16 // outstanding allocations tracked
)

type launchKey struct {
	pid    uint32
	kernel int32
	device int32
	api    gputracebpf.API
}

type devKey struct {
	pid    uint32
	device int32
}

type apiKey struct {
	pid    uint32
	device int32
	api    gputracebpf.API
}

// groupDev and groupAPI are histogram series: a group's on a device (and
// of an API).
type groupDev struct {
	group  uint32
	device int32
}

type groupAPI struct {
	group  uint32
	device int32
	api    gputracebpf.API
}

type memcpyKey struct {
	pid    uint32
	device int32
	kind   uint8
	api    gputracebpf.API
}

// callKey is a series of API calls.
type callKey struct {
	pid uint32
	api gputracebpf.API
}

// calls counts one API's calls by one process: the records read, plus the
// calls that made none (dropped, or failed lookups), which the BPF side
// counts.
type calls struct {
	recorded, unrecorded int64
	attrs                meterx.Attrs
}

type errKey struct {
	pid  uint32
	api  gputracebpf.API
	code int32
}

// count is one counter series.
type count struct {
	n     int64
	attrs meterx.Attrs
}

// names resolves what the events do not carry.
type names interface {
	// Symbolize names the function at addr in process pid, demangled.
	Symbolize(pid uint32, addr uint64) (string, bool)
	// ExecutableName is the base name of the process's executable.
	ExecutableName(pid uint32) string
}

// aggregator turns decoded events into series. It is not safe for
// concurrent use: the Source serialises it.
type aggregator struct {
	cfg   *config
	names names
	inst  *instruments
	spans *spanner

	// procs are the processes with series of their own, at most
	// cfg.maxProcesses; folded the pids of the processes past it, whose
	// events other gathers (until they exit); retired the pids of
	// processes whose series went, with the ktime of their exit, so that
	// a record read late still counts (in other), for retiredMemory.
	procs   map[uint32]*proc
	other   *proc
	folded  map[uint32]bool
	retired map[uint32]uint64
	// last is the state proc last returned for lastPID (records come in
	// runs of one process), nil once it may be stale.
	last    *proc
	lastPID uint32
	// foldedUnrecorded are the folded processes' unrecorded calls, as the
	// BPF side last counted them: other's are the sum.
	foldedUnrecorded map[gputracebpf.CallKey]int64
	groups           map[groupKey]*group
	nextGroup        uint32

	launches  map[launchKey]*count
	graphs    map[apiKey]*count
	memcpy    map[memcpyKey]*count
	allocated map[devKey]*count
	freed     map[devKey]*count
	errors    map[errKey]*count
	calls     map[callKey]*calls
	hist      map[groupDev]*launchHists
	syncHist  map[groupAPI]*histSeries[float64]

	// own: the histograms are kept here (a Producer reports them), not
	// recorded into the MeterProvider's.
	own bool

	unresolved, overflow, procOverflow int64
	// unknownReplays counts graph launches of executable graphs whose
	// kernels are not known (graphs.go).
	unknownReplays int64

	occ occupancyState
}

func newAggregator(cfg *config, n names, inst *instruments, sp *spanner) *aggregator {
	a := &aggregator{
		cfg: cfg, names: n, inst: inst, spans: sp,
		procs:            map[uint32]*proc{},
		folded:           map[uint32]bool{},
		retired:          map[uint32]uint64{},
		foldedUnrecorded: map[gputracebpf.CallKey]int64{},
		groups:           map[groupKey]*group{},
		own:              cfg.producer != nil,
		launches:         map[launchKey]*count{},
		graphs:           map[apiKey]*count{},
		memcpy:           map[memcpyKey]*count{},
		allocated:        map[devKey]*count{},
		freed:            map[devKey]*count{},
		errors:           map[errKey]*count{},
		calls:            map[callKey]*calls{},
		hist:             map[groupDev]*launchHists{},
		syncHist:         map[groupAPI]*histSeries[float64]{},
	}
	a.other = a.newProc(otherPID, semconv.Other, nil, trace.SpanContext{})
	a.other.attrs = meterx.NewAttrs(semconv.ProcessExecutableName.String(semconv.Other))
	a.initOccupancy(cfg.capacity, cfg.capacitySource)
	return a
}

// retiredMemory is how long the pid of a retired process is remembered,
// so that a record of it read late counts in other rather than in a new
// series of the pid (whose counters would restart).
const retiredMemory = time.Minute

// proc returns the state of the process pid that made a record at ktime
// ts, creating it: other for a process folded past the cap, or for a
// record of a process whose series were retired before it was read.
func (a *aggregator) proc(pid uint32, ts uint64) *proc {
	if a.last != nil && a.lastPID == pid {
		return a.last
	}
	if p := a.procs[pid]; p != nil {
		a.last, a.lastPID = p, pid
		return p
	}
	if a.folded[pid] {
		a.last, a.lastPID = a.other, pid
		return a.other
	}
	if exited, ok := a.retired[pid]; ok && ts < exited {
		return a.other
	}
	if len(a.procs) >= a.cfg.maxProcesses {
		a.folded[pid] = true
		a.procOverflow++
		a.last, a.lastPID = a.other, pid
		return a.other
	}
	exe := a.names.ExecutableName(pid)
	var pod []attribute.KeyValue
	var parent trace.SpanContext
	if r := a.cfg.resolver; r != nil {
		pod, parent = r.ProcessAttributes(int(pid))
	}
	p := a.newProc(pid, exe, pod, parent)
	a.procs[pid] = p
	a.last, a.lastPID = p, pid
	return p
}

// newProc returns the state of a process, in its group.
func (a *aggregator) newProc(pid uint32, exe string, pod []attribute.KeyValue, parent trace.SpanContext) *proc {
	p := &proc{
		pid: pid, exe: exe, pod: pod, parent: parent,
		group:         a.group(exe, pod),
		kernels:       [2]map[uint64]*kernelRef{{}, {}},
		names:         []string{semconv.Unknown, semconv.Other},
		registered:    map[uint64]string{},
		driverNames:   map[uint64]string{},
		kernelHandles: map[uint64]uint64{},
		allocs:        map[allocKey]alloc{},
		// The resolver's attributes first: the Source's own win over any
		// they repeat.
		attrs: meterx.NewAttrs(append(slices.Clip(pod),
			semconv.ProcessPID.Int(int(pid)), semconv.ProcessExecutableName.String(exe))...),
		spans: newTokenBucket(a.cfg.spanRate, a.cfg.spanBurst()),
	}
	p.group.procs++
	return p
}

// group returns the group of the processes of exe in the container pod
// names, creating it.
func (a *aggregator) group(exe string, pod []attribute.KeyValue) *group {
	set := attribute.NewSet(pod...)
	k := groupKey{exe, set.Equivalent()}
	if g := a.groups[k]; g != nil {
		return g
	}
	a.nextGroup++
	// The resolver's attributes first, as on the process's series; a
	// process.pid it claims is not the group's.
	attrs := slices.DeleteFunc(set.ToSlice(), func(kv attribute.KeyValue) bool { return kv.Key == semconv.ProcessPID })
	g := &group{id: a.nextGroup, key: k, attrs: append(attrs, semconv.ProcessExecutableName.String(exe))}
	a.groups[k] = g
	return g
}

// owner returns the state that the occupancy model's figures of pid go
// to: its own, other's for a folded process, or nil.
func (a *aggregator) owner(pid uint32) *proc {
	if a.last != nil && a.lastPID == pid {
		return a.last
	}
	if p := a.procs[pid]; p != nil {
		return p
	}
	if a.folded[pid] {
		return a.other
	}
	return nil
}

// with returns the process's attributes plus kvs.
func (p *proc) with(kvs ...attribute.KeyValue) meterx.Attrs {
	return meterx.NewAttrs(append(p.attrs.Set.ToSlice(), kvs...)...)
}

// kernel returns what is known of the function a launch calls.
func (a *aggregator) kernel(p *proc, fn uint64, driver bool) *kernelRef {
	m := p.kernels[driverIndex(driver)]
	if r := m[fn]; r != nil {
		return r
	}
	name := a.resolve(p, fn, driver)
	var i int32
	switch {
	case name == "":
		i = kernelUnknown
	case len(p.names)-2 >= a.cfg.maxKernelNames:
		i = kernelOther
	default:
		for j, n := range p.names {
			if n == name {
				i = int32(j)
				break
			}
		}
		if i == 0 {
			i = int32(len(p.names))
			p.names = append(p.names, name)
		}
	}
	if len(m) >= maxFuncs {
		p.uncached = kernelRef{name: i}
		return &p.uncached
	}
	// Unknown is cached too (the address's file has no symbol for it); a
	// name record for the function removes the entry.
	r := &kernelRef{name: i}
	m[fn] = r
	return r
}

// resolve finds a function's kernel name, demangled, or "".
func (a *aggregator) resolve(p *proc, fn uint64, driver bool) string {
	if driver {
		if n, ok := p.driverNames[fn]; ok {
			return clip(demangle(n))
		}
		host, ok := p.kernelHandles[fn]
		if !ok {
			return ""
		}
		fn = host
	}
	if n, ok := p.registered[fn]; ok {
		return clip(demangle(n))
	}
	if n, ok := a.names.Symbolize(p.pid, fn); ok {
		return clip(n)
	}
	return ""
}

func clip(s string) string {
	if len(s) > maxNameLen {
		return s[:maxNameLen]
	}
	return s
}

var memcpyKinds = [...]string{"host_to_host", "host_to_device", "device_to_host", "device_to_device", "default"}

// handle aggregates one event.
func (a *aggregator) handle(ctx context.Context, e *gputracebpf.Event) {
	p := a.proc(e.PID, e.TS)
	if e.IsCall() {
		a.call(p, e.API).recorded++
	}
	if e.Kind == gputracebpf.KindLaunch && a.captured(p, e) {
		return // a graph's kernel, not a run
	}
	a.model(e)
	switch e.Kind {
	case gputracebpf.KindLaunch:
		a.launch(ctx, p, e)
	case gputracebpf.KindGraphLaunch:
		k := apiKey{p.pid, e.Device, e.API}
		c := a.graphs[k]
		if c == nil {
			c = &count{attrs: p.with(semconv.CUDADevice.Int(int(e.Device)), semconv.CUDAAPIName.String(e.API.String()))}
			a.graphs[k] = c
		}
		c.n++
		a.spans.graph(ctx, p, e, a.replay(ctx, p, e))
	case gputracebpf.KindCaptureBegin, gputracebpf.KindGraphDestroy, gputracebpf.KindGraphExecDestroy,
		gputracebpf.KindGraphKernelNode, gputracebpf.KindGraphChildNode, gputracebpf.KindGraphNodeParams,
		gputracebpf.KindGraphExecNodeParams, gputracebpf.KindEventRecord, gputracebpf.KindStreamWait:
		a.graphCall(p, e)
	case gputracebpf.KindCaptureEnd, gputracebpf.KindGraphInstantiate, gputracebpf.KindGraphCreate, gputracebpf.KindGraphClone,
		gputracebpf.KindGraphNode, gputracebpf.KindGraphExecUpdate:
		if e.Ret != 0 {
			a.apiError(p, e)
		}
		a.graphCall(p, e)
	case gputracebpf.KindMemcpy:
		kind := uint8(gputracebpf.MemcpyDefault)
		if k := e.CopyKind(); k < uint64(len(memcpyKinds)) {
			kind = uint8(k)
		}
		k := memcpyKey{p.pid, e.Device, kind, e.API}
		c := a.memcpy[k]
		if c == nil {
			c = &count{attrs: p.with(semconv.CUDADevice.Int(int(e.Device)),
				semconv.CUDAMemcpyKind.String(memcpyKinds[kind]), semconv.CUDAAPIName.String(e.API.String()))}
			a.memcpy[k] = c
		}
		c.n += int64(e.Bytes())
		a.spans.memcpy(ctx, p, e, memcpyKinds[kind])
	case gputracebpf.KindMemset:
		a.spans.memset(ctx, p, e)
	case gputracebpf.KindCopyDone:
		if e.Ret != 0 {
			a.apiError(p, e)
		}
	case gputracebpf.KindMalloc:
		a.malloc(ctx, p, e)
	case gputracebpf.KindFree:
		a.free(ctx, p, e)
	case gputracebpf.KindSync:
		k := groupAPI{p.group.id, e.Device, e.API}
		h := a.syncHist[k]
		if h == nil {
			h = newHistSeries[float64](p.group.with(semconv.CUDADevice.Int(int(e.Device)),
				semconv.CUDAAPIName.String(e.API.String())), syncDurationBuckets, a.spans.wall(e.TS))
			a.syncHist[k] = h
		}
		if d := float64(e.Duration()) / 1e9; a.own {
			h.own.record(d, syncDurationBuckets)
		} else {
			a.inst.syncDuration.Record(ctx, d, h.attrs.Record...)
		}
		if e.Ret != 0 {
			a.apiError(p, e)
		}
		a.spans.sync(ctx, p, e)
	case gputracebpf.KindFuncName:
		// The fold's launches are all named semconv.Other.
		if p == a.other || len(p.registered) >= maxLearned || len(p.driverNames) >= maxLearned {
			return
		}
		fn, driver := e.NamedFunc()
		if driver {
			p.driverNames[fn] = string(e.Name)
		} else {
			p.registered[fn] = string(e.Name)
		}
		delete(p.kernels[driverIndex(driver)], fn)
	case gputracebpf.KindNCCLColl, gputracebpf.KindNCCLGroup, gputracebpf.KindNCCLCommID,
		gputracebpf.KindNCCLComm, gputracebpf.KindNCCLCommQuery, gputracebpf.KindNCCLCommEnd:
		a.nccl(ctx, p, e)
	case gputracebpf.KindKernelHandle:
		if p != a.other && e.Ret == 0 && len(p.kernelHandles) < maxLearned {
			kernel, hostFunc := e.KernelHandle()
			p.kernelHandles[kernel] = hostFunc
			delete(p.kernels[1], kernel)
		}
	}
}

func (a *aggregator) launch(ctx context.Context, p *proc, e *gputracebpf.Event) {
	a.spans.launch(ctx, p, e, a.countLaunch(ctx, p, e, e.API.Handle()))
}

// countLaunch counts a KindLaunch record into its series and histograms,
// returning the kernel's name; handle says whether its function is a
// module function handle rather than a host stub.
func (a *aggregator) countLaunch(ctx context.Context, p *proc, e *gputracebpf.Event, handle bool) string {
	ref := &p.uncached
	if p == a.other {
		// The fold's launches count under semconv.Other: its processes'
		// functions are addresses in as many address spaces.
		ref.name = kernelOther
	} else {
		ref = a.kernel(p, e.Func(), handle)
		switch ref.name {
		case kernelUnknown:
			a.unresolved++
		case kernelOther:
			a.overflow++
		}
	}
	k := launchKey{p.pid, ref.name, e.Device, e.API}
	c := ref.count(k)
	if c == nil {
		if c = a.launches[k]; c == nil {
			c = &count{attrs: p.with(semconv.CUDAKernelName.String(p.names[ref.name]),
				semconv.CUDADevice.Int(int(e.Device)), semconv.CUDAAPIName.String(e.API.String()))}
			a.launches[k] = c
		}
		ref.remember(k, c)
	}
	c.n++
	h := a.launchHist(p, e)
	g, b := e.Grid(), e.Block()
	grid, block, smem := int64(g[0])*int64(g[1])*int64(g[2]), int64(b[0])*int64(b[1])*int64(b[2]), int64(e.SharedMem())
	if a.own {
		h.grid.record(grid, gridBuckets)
		h.block.record(block, blockBuckets)
		h.smem.record(smem, sharedMemoryBuckets)
	} else {
		a.inst.gridSize.Record(ctx, grid, h.attrs.Record...)
		a.inst.blockSize.Record(ctx, block, h.attrs.Record...)
		a.inst.sharedMemory.Record(ctx, smem, h.attrs.Record...)
	}
	return p.names[ref.name]
}

// launchHist returns the launch histograms of p's group on the device e
// launches on.
func (a *aggregator) launchHist(p *proc, e *gputracebpf.Event) *launchHists {
	if p.hist != nil && p.histDev == e.Device {
		return p.hist
	}
	k := groupDev{p.group.id, e.Device}
	h := a.hist[k]
	if h == nil {
		h = newLaunchHists(p.group.with(semconv.CUDADevice.Int(int(e.Device))), a.spans.wall(e.TS))
		a.hist[k] = h
	}
	p.hist, p.histDev = h, e.Device
	return h
}

// call returns the series of p's calls of api.
func (a *aggregator) call(p *proc, api gputracebpf.API) *calls {
	inRange := int(api) < len(p.calls)
	if inRange && p.calls[api] != nil {
		return p.calls[api]
	}
	k := callKey{p.pid, api}
	c := a.calls[k]
	if c == nil {
		c = &calls{attrs: p.with(semconv.CUDAAPIName.String(api.String()))}
		a.calls[k] = c
	}
	if inRange {
		p.calls[api] = c
	}
	return c
}

// unrecorded sets the calls of api that process pid made and the BPF side
// counted as making no record (n so far), at ktime now. A folded
// process's add to other's.
func (a *aggregator) unrecorded(k gputracebpf.CallKey, n int64, now uint64) {
	p := a.proc(k.Pid, now)
	c := a.call(p, gputracebpf.API(k.Api))
	if p != a.other {
		c.unrecorded = n
		return
	}
	c.unrecorded += n - a.foldedUnrecorded[k]
	a.foldedUnrecorded[k] = n
}

func (a *aggregator) devCounter(m map[devKey]*count, p *proc, device int32) *count {
	k := devKey{p.pid, device}
	c := m[k]
	if c == nil {
		c = &count{attrs: p.with(semconv.CUDADevice.Int(int(device)))}
		m[k] = c
	}
	return c
}

func (a *aggregator) apiError(p *proc, e *gputracebpf.Event) {
	k := errKey{p.pid, e.API, e.Ret}
	c := a.errors[k]
	if c == nil {
		c = &count{attrs: p.with(semconv.CUDAAPIName.String(e.API.String()), semconv.CUDAErrorCode.Int(int(e.Ret)))}
		a.errors[k] = c
	}
	c.n++
}

func (a *aggregator) malloc(ctx context.Context, p *proc, e *gputracebpf.Event) {
	a.spans.malloc(ctx, p, e)
	if e.Ret != 0 {
		a.apiError(p, e)
		return
	}
	ptr, size := e.Pointer(), e.Bytes()
	a.devCounter(a.allocated, p, e.Device).n += int64(size)
	if ptr == 0 {
		return
	}
	k := allocKey{e.PID, ptr}
	if old, ok := p.allocs[k]; ok {
		// The address was freed without our seeing it: replace it.
		p.outstanding -= int64(old.size)
	} else if len(p.allocs) >= maxAllocations {
		return
	}
	p.allocs[k] = alloc{size: size, at: e.TS, device: e.Device, api: e.API}
	p.outstanding += int64(size)
}

func (a *aggregator) free(ctx context.Context, p *proc, e *gputracebpf.Event) {
	a.spans.free(ctx, p, e)
	k := allocKey{e.PID, e.Pointer()}
	old, ok := p.allocs[k]
	if !ok {
		return // allocated before tracing began, or already counted
	}
	delete(p.allocs, k)
	p.outstanding -= int64(old.size)
	a.devCounter(a.freed, p, old.device).n += int64(old.size)
}

// oldest returns the ktime of the oldest outstanding allocation.
func (p *proc) oldest() (uint64, bool) {
	var at uint64
	for _, al := range p.allocs {
		if at == 0 || al.at < at {
			at = al.at
		}
	}
	return at, at != 0
}

// When the series of an exited process go (forget): once the reader has
// read what it wrote before it exited (drainTime after the exit is seen:
// the reader polls at least once a second), and a collection has
// reported them since (collected), so that every counter's last value
// reaches the reader that collected; and once the grace given has passed
// since (WithExitGrace), for readers that collect less often than the
// first. With no collection at all they go after maxExitKeep. Counters of
// the process end there: nothing is moved into other series, which would
// count it twice in a scraper's increase().
const (
	drainTime   = 2 * time.Second
	maxExitKeep = time.Minute
)

// forget notices the processes that exited (alive says which run), and
// retires the series of those whose last values were collected, at ktime
// now; collected is the ktime of the last snapshot a collection reported.
func (a *aggregator) forget(alive func(pid uint32) bool, now, collected uint64) {
	retiring := map[uint32]bool{}
	for pid, p := range a.procs {
		if p.nccl != nil {
			p.nccl.forgetComms(collected)
		}
		if alive(pid) {
			continue
		}
		if p.exited == 0 {
			p.exited = now
			a.occ.model.ProcessExit(int64(now), pid)
			if r := a.cfg.resolver; r != nil {
				r.Forget(int(pid))
			}
		}
		drained := p.exited + uint64(drainTime)
		if now < drained+uint64(a.cfg.exitGrace) || (collected < drained && now < p.exited+uint64(maxExitKeep)) {
			continue
		}
		retiring[pid] = true
	}
	if len(retiring) > 0 {
		a.retire(retiring)
	}
	unfolding := map[uint32]bool{}
	for pid := range a.folded {
		if !alive(pid) {
			unfolding[pid] = true
		}
	}
	if len(unfolding) > 0 {
		a.unfold(unfolding, now)
	}
	for pid, exited := range a.retired {
		if now-exited > uint64(retiredMemory) {
			delete(a.retired, pid)
		}
	}
}

// retire drops the series of the exited processes pids, one pass over
// each map for them all.
func (a *aggregator) retire(pids map[uint32]bool) {
	a.last = nil
	for pid := range pids {
		p := a.procs[pid]
		delete(a.procs, pid)
		a.retired[pid] = p.exited
		g := p.group
		if g.procs--; g.procs == 0 {
			// Its histograms end: a process of the group that comes
			// later starts them again, with a new start time.
			delete(a.groups, g.key)
			forgetGroup(a.hist, g.id)
			forgetGroup(a.syncHist, g.id)
			forgetGroup(a.occ.duration, g.id)
		}
	}
	a.forgetOccupancy(pids)
	forgetPIDs(a.launches, pids)
	forgetPIDs(a.graphs, pids)
	forgetPIDs(a.memcpy, pids)
	forgetPIDs(a.allocated, pids)
	forgetPIDs(a.freed, pids)
	forgetPIDs(a.errors, pids)
	forgetPIDs(a.calls, pids)
}

// unfold forgets the folded processes pids, which exited at ktime now:
// what other holds of them alone (their outstanding allocations, their
// last unrecorded counts) goes, their counts stay.
func (a *aggregator) unfold(pids map[uint32]bool, now uint64) {
	a.last = nil
	for pid := range pids {
		a.occ.model.ProcessExit(int64(now), pid)
		delete(a.folded, pid)
		a.retired[pid] = now
	}
	o := a.other
	for k, al := range o.allocs {
		if pids[k.pid] {
			delete(o.allocs, k)
			o.outstanding -= int64(al.size)
		}
	}
	maps.DeleteFunc(a.foldedUnrecorded, func(k gputracebpf.CallKey, _ int64) bool { return pids[k.Pid] })
}

// owned is a series key that names its process.
type owned interface {
	comparable
	owner() uint32
}

func (k launchKey) owner() uint32 { return k.pid }
func (k devKey) owner() uint32    { return k.pid }
func (k apiKey) owner() uint32    { return k.pid }
func (k memcpyKey) owner() uint32 { return k.pid }
func (k errKey) owner() uint32    { return k.pid }
func (k callKey) owner() uint32   { return k.pid }

// forgetPIDs deletes the series of pids from m.
func forgetPIDs[K owned, V any](m map[K]V, pids map[uint32]bool) {
	maps.DeleteFunc(m, func(k K, _ V) bool { return pids[k.owner()] })
}

// grouped is a series key that names its group.
type grouped interface {
	comparable
	groupID() uint32
}

func (k groupDev) groupID() uint32 { return k.group }
func (k groupAPI) groupID() uint32 { return k.group }

// forgetGroup deletes the series of group id from m.
func forgetGroup[K grouped, V any](m map[K]V, id uint32) {
	maps.DeleteFunc(m, func(k K, _ V) bool { return k.groupID() == id })
}

func hex(v uint64) string { return "0x" + strconv.FormatUint(v, 16) }
