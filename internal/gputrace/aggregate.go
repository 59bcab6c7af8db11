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

// proc is what the aggregator knows of one traced process.
type proc struct {
	pid uint32
	exe string
	// kernels maps a launch's function to what is known of it: [0] host
	// stubs, [1] driver handles. Bounded by maxFuncs; past the
	// kernel-name cap functions name kernelOther.
	kernels [2]map[uint64]*kernelRef
	// uncached stands for a function past maxFuncs.
	uncached kernelRef
	// calls indexes the process's series of a.calls by API.
	calls [gputracebpf.NumAPIs]*calls
	// The launch histograms' attributes of the device last launched on.
	hist    *histAttrs
	histDev int32
	names   []string
	// Names learned from the process's own calls.
	registered    map[uint64]string // host stub → kernel (__cudaRegisterFunction)
	driverNames   map[uint64]string // CUfunction → kernel (cuModuleGetFunction)
	kernelHandles map[uint64]uint64 // cudaKernel_t → host stub (cudaGetKernel)
	allocs        map[uint64]alloc
	outstanding   int64
	// gone is when the process was first seen to have exited; its series
	// stay for a grace period so that their last values are exported.
	gone time.Time
	// attrs are the series' process.pid, process.executable.name and the
	// resolver's container and pod attributes; pod are the latter alone,
	// for spans, and parent the span context the resolver gave.
	attrs  meterx.Attrs
	pod    []attribute.KeyValue
	parent trace.SpanContext
	spans  tokenBucket
}

// kernelRef is what a proc knows of one launched function: its name's
// index in names, and the launch series it last counted into (a function
// is mostly launched on one device through one API).
type kernelRef struct {
	name   int32
	series *count
	key    launchKey
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

// histAttrs are the attributes of a (process, device)'s launch histograms.
type histAttrs = meterx.Attrs

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

	procs map[uint32]*proc

	launches  map[launchKey]*count
	graphs    map[apiKey]*count
	memcpy    map[memcpyKey]*count
	allocated map[devKey]*count
	freed     map[devKey]*count
	errors    map[errKey]*count
	calls     map[callKey]*calls
	hist      map[devKey]*histAttrs
	syncHist  map[apiKey]*histAttrs

	unresolved, overflow, procOverflow int64

	occ occupancyState
}

func newAggregator(cfg *config, n names, inst *instruments, sp *spanner) *aggregator {
	a := &aggregator{
		cfg: cfg, names: n, inst: inst, spans: sp,
		procs:     map[uint32]*proc{},
		launches:  map[launchKey]*count{},
		graphs:    map[apiKey]*count{},
		memcpy:    map[memcpyKey]*count{},
		allocated: map[devKey]*count{},
		freed:     map[devKey]*count{},
		errors:    map[errKey]*count{},
		calls:     map[callKey]*calls{},
		hist:      map[devKey]*histAttrs{},
		syncHist:  map[apiKey]*histAttrs{},
	}
	a.initOccupancy(cfg.capacity, cfg.capacitySource)
	return a
}

// proc returns the state of pid, creating it; nil past the process cap.
func (a *aggregator) proc(pid uint32) *proc {
	if p := a.procs[pid]; p != nil {
		return p
	}
	if len(a.procs) >= a.cfg.maxProcesses {
		a.procOverflow++
		return nil
	}
	exe := a.names.ExecutableName(pid)
	var pod []attribute.KeyValue
	var parent trace.SpanContext
	if r := a.cfg.resolver; r != nil {
		pod, parent = r.ProcessAttributes(int(pid))
	}
	p := &proc{
		pid: pid, exe: exe, pod: pod, parent: parent,
		kernels:       [2]map[uint64]*kernelRef{{}, {}},
		names:         []string{semconv.Unknown, semconv.Other},
		registered:    map[uint64]string{},
		driverNames:   map[uint64]string{},
		kernelHandles: map[uint64]uint64{},
		allocs:        map[uint64]alloc{},
		// The resolver's attributes first: the Source's own win over any
		// they repeat.
		attrs: meterx.NewAttrs(append(slices.Clip(pod),
			semconv.ProcessPID.Int(int(pid)), semconv.ProcessExecutableName.String(exe))...),
		spans: tokenBucket{rate: a.cfg.spanRate, burst: a.cfg.spanBurst()},
	}
	a.procs[pid] = p
	return p
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
	p := a.proc(e.PID)
	if p == nil {
		return
	}
	if e.IsCall() {
		a.call(p, e.API).recorded++
	}
	a.model(e)
	switch e.Kind {
	case gputracebpf.KindLaunch:
		a.launch(ctx, p, e)
	case gputracebpf.KindGraphLaunch:
		k := apiKey{e.PID, e.Device, e.API}
		c := a.graphs[k]
		if c == nil {
			c = &count{attrs: p.with(semconv.CUDADevice.Int(int(e.Device)), semconv.CUDAAPIName.String(e.API.String()))}
			a.graphs[k] = c
		}
		c.n++
		a.spans.graph(ctx, p, e)
	case gputracebpf.KindMemcpy:
		kind := uint8(gputracebpf.MemcpyDefault)
		if k := e.CopyKind(); k < uint64(len(memcpyKinds)) {
			kind = uint8(k)
		}
		k := memcpyKey{e.PID, e.Device, kind, e.API}
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
		k := apiKey{e.PID, e.Device, e.API}
		h := a.syncHist[k]
		if h == nil {
			at := p.with(semconv.CUDADevice.Int(int(e.Device)), semconv.CUDAAPIName.String(e.API.String()))
			h = &at
			a.syncHist[k] = h
		}
		a.inst.syncDuration.Record(ctx, float64(e.Duration())/1e9, h.Record...)
		if e.Ret != 0 {
			a.apiError(p, e)
		}
		a.spans.sync(ctx, p, e)
	case gputracebpf.KindFuncName:
		if len(p.registered) >= maxLearned || len(p.driverNames) >= maxLearned {
			return
		}
		fn, driver := e.NamedFunc()
		if driver {
			p.driverNames[fn] = string(e.Name)
		} else {
			p.registered[fn] = string(e.Name)
		}
		delete(p.kernels[driverIndex(driver)], fn)
	case gputracebpf.KindKernelHandle:
		if e.Ret == 0 && len(p.kernelHandles) < maxLearned {
			kernel, hostFunc := e.KernelHandle()
			p.kernelHandles[kernel] = hostFunc
			delete(p.kernels[1], kernel)
		}
	}
}

func (a *aggregator) launch(ctx context.Context, p *proc, e *gputracebpf.Event) {
	ref := a.kernel(p, e.Func(), e.API.Handle())
	switch ref.name {
	case kernelUnknown:
		a.unresolved++
	case kernelOther:
		a.overflow++
	}
	k := launchKey{e.PID, ref.name, e.Device, e.API}
	c := ref.series
	if c == nil || ref.key != k {
		if c = a.launches[k]; c == nil {
			c = &count{attrs: p.with(semconv.CUDAKernelName.String(p.names[ref.name]),
				semconv.CUDADevice.Int(int(e.Device)), semconv.CUDAAPIName.String(e.API.String()))}
			a.launches[k] = c
		}
		ref.series, ref.key = c, k
	}
	c.n++
	h := a.launchHist(p, e.Device)
	g, b := e.Grid(), e.Block()
	a.inst.gridSize.Record(ctx, int64(g[0])*int64(g[1])*int64(g[2]), h.Record...)
	a.inst.blockSize.Record(ctx, int64(b[0])*int64(b[1])*int64(b[2]), h.Record...)
	a.inst.sharedMemory.Record(ctx, int64(e.SharedMem()), h.Record...)
	a.spans.launch(ctx, p, e, p.names[ref.name])
}

// launchHist returns the attributes of p's launch histograms on device.
func (a *aggregator) launchHist(p *proc, device int32) *histAttrs {
	if p.hist != nil && p.histDev == device {
		return p.hist
	}
	dk := devKey{p.pid, device}
	h := a.hist[dk]
	if h == nil {
		at := p.with(semconv.CUDADevice.Int(int(device)))
		h = &at
		a.hist[dk] = h
	}
	p.hist, p.histDev = h, device
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
	k := errKey{e.PID, e.API, e.Ret}
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
	if old, ok := p.allocs[ptr]; ok {
		// The address was freed without our seeing it: replace it.
		p.outstanding -= int64(old.size)
	} else if len(p.allocs) >= maxAllocations {
		return
	}
	p.allocs[ptr] = alloc{size: size, at: e.TS, device: e.Device, api: e.API}
	p.outstanding += int64(size)
}

func (a *aggregator) free(ctx context.Context, p *proc, e *gputracebpf.Event) {
	a.spans.free(ctx, p, e)
	old, ok := p.allocs[e.Pointer()]
	if !ok {
		return // allocated before tracing began, or already counted
	}
	delete(p.allocs, e.Pointer())
	p.outstanding -= int64(old.size)
	a.devCounter(a.freed, p, old.device).n += int64(old.size)
}

// oldest returns the ktime of pid's oldest outstanding allocation.
func (p *proc) oldest() (uint64, bool) {
	var at uint64
	for _, al := range p.allocs {
		if at == 0 || al.at < at {
			at = al.at
		}
	}
	return at, at != 0
}

// exitGrace is how long the series of an exited process are kept, so that
// exporters see their final values.
const exitGrace = time.Minute

// forget drops the state of processes that exited more than exitGrace
// before now (ktime nowK).
func (a *aggregator) forget(alive func(pid uint32) bool, now time.Time, nowK uint64) {
	for pid, p := range a.procs {
		if alive(pid) {
			continue
		}
		if p.gone.IsZero() {
			p.gone = now
			a.occ.model.ProcessExit(int64(nowK), pid)
			if r := a.cfg.resolver; r != nil {
				r.Forget(int(pid))
			}
		}
		if now.Sub(p.gone) < exitGrace {
			continue
		}
		delete(a.procs, pid)
		a.forgetOccupancy(pid)
		forgetPID(a.launches, pid)
		forgetPID(a.graphs, pid)
		forgetPID(a.memcpy, pid)
		forgetPID(a.allocated, pid)
		forgetPID(a.freed, pid)
		forgetPID(a.errors, pid)
		forgetPID(a.calls, pid)
		forgetPID(a.hist, pid)
		forgetPID(a.syncHist, pid)
	}
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

// forgetPID deletes pid's series from m.
func forgetPID[K owned, V any](m map[K]V, pid uint32) {
	maps.DeleteFunc(m, func(k K, _ V) bool { return k.owner() == pid })
}

func hex(v uint64) string { return "0x" + strconv.FormatUint(v, 16) }
