package podjoin

import (
	"container/list"
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/procfs"
	"github.com/xpuscope/xpuscope/semconv"
)

// ScopeName is the instrumentation scope of the Resolver's meter.
const ScopeName = "github.com/xpuscope/xpuscope/podjoin"

// ProcessInfo is what the Resolver knows of a process.
type ProcessInfo struct {
	// Cgroup is what the process's cgroup says: container runtime and
	// id, pod UID and QoS class.
	Cgroup
	// PodName, Namespace and ContainerName come from the kubelet's log
	// directories (WithLogRoot); "" where they do not name the pod or
	// container.
	PodName       string
	Namespace     string
	ContainerName string
	// ServiceName is OTEL_SERVICE_NAME, else the service.name of
	// OTEL_RESOURCE_ATTRIBUTES; "" if neither is set.
	ServiceName string
	// ResourceAttrs are the other attributes of OTEL_RESOURCE_ATTRIBUTES
	// (ParseResourceAttributes' bounds apply). The slice is shared: do
	// not modify it.
	ResourceAttrs []attribute.KeyValue
	// SpanContext is the remote parent TRACEPARENT and TRACESTATE carry;
	// valid only if TRACEPARENT parsed. Spans of the process's activity
	// can be its children.
	SpanContext trace.SpanContext
}

// Attributes returns the process's attributes: k8s.namespace.name,
// k8s.pod.name, k8s.pod.uid, k8s.container.name, container.id and
// service.name where known, then the resource attributes whose keys are
// not among those, known or not (what the kernel and the kubelet say wins
// over what the workload claims, and the workload cannot name a pod).
func (p ProcessInfo) Attributes() []attribute.KeyValue {
	kvs := p.appendOwn(make([]attribute.KeyValue, 0, 6+len(p.ResourceAttrs)))
	for _, kv := range p.ResourceAttrs {
		if !ownKeys[kv.Key] {
			kvs = append(kvs, kv)
		}
	}
	return kvs
}

// ownKeys are the attributes the Resolver sets itself: the workload's
// resource attributes never set them, even where the Resolver knows no
// value (a pod name the process claims is not one we found).
var ownKeys = map[attribute.Key]bool{
	semconv.K8sNamespaceName: true, semconv.K8sPodName: true, semconv.K8sPodUID: true,
	semconv.K8sContainerName: true, semconv.ContainerID: true, semconv.ServiceName: true,
}

// appendOwn appends the attributes the kernel, the kubelet and
// OTEL_SERVICE_NAME give: those of Attributes without the resource
// attributes.
func (p ProcessInfo) appendOwn(kvs []attribute.KeyValue) []attribute.KeyValue {
	kvs = appendNonEmpty(kvs, semconv.K8sNamespaceName, p.Namespace)
	kvs = appendNonEmpty(kvs, semconv.K8sPodName, p.PodName)
	kvs = appendNonEmpty(kvs, semconv.K8sPodUID, p.PodUID)
	kvs = appendNonEmpty(kvs, semconv.K8sContainerName, p.ContainerName)
	kvs = appendNonEmpty(kvs, semconv.ContainerID, p.ContainerID)
	return appendNonEmpty(kvs, semconv.ServiceName, p.ServiceName)
}

// Status is the state of the Resolver's sources.
type Status struct {
	// KubeletUp reports whether the last PodResources List succeeded.
	KubeletUp bool
	// KubeletErr is why the last kubelet call failed; nil when none did
	// or the client is off.
	KubeletErr error
	// LastRefresh is when device allocations were last read; zero if
	// never.
	LastRefresh time.Time
	// Pods, Devices and Shared describe the allocations served: pods
	// listed, GPU devices allocated, and of those the devices held by
	// more than one pod, which have no owner.
	Pods, Devices, Shared int
	// Allocatable counts the GPU devices the kubelet can allocate; -1
	// where it does not serve GetAllocatableResources.
	Allocatable int
	// NamedPods counts the pods the log directories name; LogErr is why
	// they could not be read at the last scan.
	NamedPods int
	LogErr    error
	// Truncated reports that the kubelet's answer or a log directory went
	// over a cap: some pods or devices are unknown.
	Truncated bool
}

// kubeletState is one immutable view of the kubelet's allocations.
type kubeletState struct {
	up          bool
	err         error
	fetched     time.Time // of dev; zero if never
	dev         devices
	allocatable int
}

// logState is one immutable scan of the log directories.
type logState struct {
	idx podLogs
	err error
}

// result indexes the resolve counts.
type result int

const (
	resultHit result = iota
	resultMiss
	resultPartial
	resultNotFound
	numResults
)

var resultNames = [numResults]string{
	semconv.PodjoinResultHit, semconv.PodjoinResultMiss, semconv.PodjoinResultPartial, semconv.PodjoinResultNotFound,
}

// Resolver places processes and GPU devices in their containers and pods.
// Create it with New; it is safe for concurrent use.
type Resolver struct {
	cfg  config
	proc *procfs.Handle

	mu    sync.Mutex // guards cache
	cache processCache

	envMu  sync.Mutex // guards envBuf, which is all zero outside a read
	envBuf []byte

	kube atomic.Pointer[kubeletState]
	logs atomic.Pointer[logState]

	client   *kubeletClient // nil when off; owned by New, then run
	failures int            // consecutive failed kubelet attempts; owned as client

	resolves [numResults]atomic.Int64
	kubeErrs [numCalls]atomic.Int64
	inst     instruments
	reg      metric.Registration

	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// New opens the procfs root, registers the self-metrics, reads the
// kubelet's allocations and the log directories once, and starts the
// goroutine that refreshes them. It returns an error wrapping
// xpuscope.ErrUnavailable when the procfs root cannot be opened. A kubelet
// socket or log directory that is missing is not an error: Status says
// so, and the Resolver retries. A bad option is a fault.
func New(opts ...Option) (*Resolver, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	proc, err := procfs.FS{Root: cfg.procRoot}.Open()
	if err != nil {
		return nil, xpuscope.Unavailablef("podjoin: procfs root: %v", err)
	}
	r := &Resolver{
		cfg:    cfg,
		proc:   proc,
		cache:  newProcessCache(cfg.cacheSize),
		envBuf: make([]byte, environBuf),
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.kube.Store(&kubeletState{allocatable: -1})
	r.logs.Store(&logState{})
	if cfg.kubeletSocket != "" {
		r.client = &kubeletClient{path: cfg.kubeletSocket}
	}
	if err := r.register(); err != nil {
		r.cancel()
		proc.Close()
		return nil, err
	}
	r.refreshLogs()
	var next time.Duration
	if r.client != nil {
		next = r.refreshKubelet()
	}
	r.wg.Add(1)
	go r.run(next)
	return r, nil
}

// Close stops the refresh goroutine, closes the kubelet connection and
// the procfs root, and drops the cache. It is idempotent. After Close,
// Process returns the zero ProcessInfo.
func (r *Resolver) Close() error {
	r.closeOnce.Do(func() {
		r.cancel()
		r.wg.Wait()
		if r.client != nil {
			r.client.close()
		}
		r.closeErr = r.reg.Unregister()
		r.proc.Close()
		r.mu.Lock()
		r.cache.clear()
		r.mu.Unlock()
	})
	return r.closeErr
}

func (r *Resolver) run(nextKubelet time.Duration) {
	defer r.wg.Done()
	tick := time.NewTicker(r.cfg.refresh)
	defer tick.Stop()
	var kt *time.Timer
	var kc <-chan time.Time // nil, never ready, when the client is off
	if r.client != nil {
		kt = time.NewTimer(nextKubelet)
		defer kt.Stop()
		kc = kt.C
	}
	for {
		select {
		case <-r.ctx.Done():
			return
		case now := <-tick.C:
			r.refreshLocal(now)
		case <-kc:
			kt.Reset(r.refreshKubelet())
		}
	}
}

// refreshLocal rescans the log directories, drops the cache entries of
// exited processes and lets stale allocations expire.
func (r *Resolver) refreshLocal(now time.Time) {
	r.refreshLogs()
	r.sweep(now)
	if s := r.kube.Load(); s.dev.owners != nil && !r.served(s, now) {
		r.kube.Store(&kubeletState{err: s.err, fetched: s.fetched, allocatable: -1})
	}
}

func (r *Resolver) refreshLogs() {
	if r.cfg.logRoot == "" {
		return
	}
	idx, err := scanPodLogs(r.cfg.logRoot, maxLogEntries)
	if err != nil {
		// Names do not go stale (a UID or container id is never reused):
		// keep those of the last good scan.
		r.logs.Store(&logState{idx: r.logs.Load().idx, err: err})
		return
	}
	r.logs.Store(&logState{idx: idx})
}

// refreshKubelet reads the allocations and returns the wait before the
// next attempt: the refresh interval, or a backoff after a failure. While
// the kubelet does not answer, the last allocations are served until the
// TTL has passed since they were read: allocations change only through the
// kubelet, so they cannot have changed while it was down, except that a
// pod may have ended.
func (r *Resolver) refreshKubelet() time.Duration {
	pods, allocatable, listErr, allocErr := r.client.fetch(r.ctx)
	if r.ctx.Err() != nil {
		return r.cfg.refresh // closing: a failure now is ours, not the kubelet's
	}
	now := time.Now()
	if listErr != nil {
		r.kubeErrs[callList].Add(1)
		old := r.kube.Load()
		st := &kubeletState{err: listErr, fetched: old.fetched, allocatable: old.allocatable}
		if now.Sub(old.fetched) <= r.cfg.ttl {
			st.dev = old.dev
		}
		r.kube.Store(st)
		r.failures++
		return backoff(r.cfg.refresh, r.failures)
	}
	if allocErr != nil {
		r.kubeErrs[callAllocatable].Add(1)
	}
	r.failures = 0
	r.kube.Store(&kubeletState{up: true, err: allocErr, fetched: now, dev: indexDevices(pods), allocatable: allocatable})
	return r.cfg.refresh
}

// served reports whether s's allocations may be served at now: read, and
// either the kubelet is up or they are younger than the TTL.
func (r *Resolver) served(s *kubeletState, now time.Time) bool {
	return s.dev.owners != nil && (s.up || now.Sub(s.fetched) <= r.cfg.ttl)
}

// Device returns the pod holding GPU device id: an NVIDIA GPU or MIG UUID,
// an AMD PCI address or an Intel card name, with or without a sharing
// replica suffix (NormalizeDeviceID). It reports false when no pod holds
// the device, when more than one does (time-slicing replicas in several
// pods: a device's value must not be copied onto each), when the kubelet
// has not been read, or when its last allocations are older than the TTL.
func (r *Resolver) Device(id string) (Owner, bool) {
	s := r.kube.Load()
	if !r.served(s, time.Now()) {
		return Owner{}, false
	}
	o, ok := s.dev.owners[NormalizeDeviceID(id)]
	if !ok {
		return Owner{}, false
	}
	o.PodUID = r.logs.Load().idx.uids[podName{o.Namespace, o.Pod}]
	return o, true
}

// Status reports the state of the kubelet client and the log directories.
func (r *Resolver) Status() Status {
	k, l := r.kube.Load(), r.logs.Load()
	st := Status{
		KubeletUp:   k.up,
		KubeletErr:  k.err,
		LastRefresh: k.fetched,
		Pods:        k.dev.pods,
		Devices:     k.dev.allocated,
		Shared:      k.dev.shared,
		Allocatable: k.allocatable,
		NamedPods:   len(l.idx.pods),
		LogErr:      l.err,
		Truncated:   k.dev.truncated || l.idx.truncated,
	}
	if !r.served(k, time.Now()) {
		st.Pods, st.Devices, st.Shared = 0, 0, 0
	}
	return st
}

// Process returns what is known of process pid. An entry is cached per
// pid and process start time, so that a pid the kernel reuses is read
// afresh, never given the old process's pod; each lookup reads the start
// time from /proc/<pid>/stat for this. Entries are read again after the
// TTL, and dropped when the process exits (at the next refresh, or at once
// with Forget). A process that does not exist, or whose cgroup cannot be
// read, gives the zero ProcessInfo and is not cached.
func (r *Resolver) Process(pid int) ProcessInfo {
	if pid <= 0 {
		r.resolves[resultNotFound].Add(1)
		return ProcessInfo{}
	}
	start, err := r.proc.StartTime(pid)
	if err != nil {
		r.Forget(pid)
		r.resolves[resultNotFound].Add(1)
		return ProcessInfo{}
	}
	now := time.Now()
	r.mu.Lock()
	if e := r.cache.get(pid); e != nil && e.start == start && now.Before(e.expires) {
		info := e.info
		r.mu.Unlock()
		r.resolves[resultHit].Add(1)
		return r.name(info)
	}
	r.mu.Unlock()
	info, res := r.read(pid)
	if res != resultNotFound {
		// A pid reused while it was read gives an entry of mixed
		// processes: drop it.
		if again, err := r.proc.StartTime(pid); err != nil || again != start {
			res = resultNotFound
		}
	}
	r.resolves[res].Add(1)
	if res == resultNotFound {
		r.Forget(pid)
		return ProcessInfo{}
	}
	r.mu.Lock()
	r.cache.put(pid, start, now.Add(r.cfg.ttl), info)
	r.mu.Unlock()
	return r.name(info)
}

// ProcessAttributes is what the Sources of this module take from Process
// (gpu.WithResolver, cudatrace.WithResolver, genai.WithResolver): the
// process's Attributes (k8s.namespace.name, k8s.pod.name, k8s.pod.uid,
// k8s.container.name, container.id and service.name where known, then the
// workload's own OTEL_RESOURCE_ATTRIBUTES, at most ParseResourceAttributes'
// bound, never overriding ours), and the remote parent its TRACEPARENT
// names (invalid without one).
func (r *Resolver) ProcessAttributes(pid int) ([]attribute.KeyValue, trace.SpanContext) {
	p := r.Process(pid)
	return p.Attributes(), p.SpanContext
}

// DeviceAttributes returns the attributes of the pod holding GPU device
// id (Owner.Attributes), and false where Device does: no pod, or several,
// hold it.
func (r *Resolver) DeviceAttributes(id string) ([]attribute.KeyValue, bool) {
	o, ok := r.Device(id)
	if !ok {
		return nil, false
	}
	return o.Attributes(), true
}

// Forget drops the cache entry of pid, for a Source that sees the process
// exit.
func (r *Resolver) Forget(pid int) {
	r.mu.Lock()
	r.cache.remove(pid)
	r.mu.Unlock()
}

// read reads a process's cgroup and environment.
func (r *Resolver) read(pid int) (ProcessInfo, result) {
	cg, err := readCgroup(r.proc.Proc(pid))
	if err != nil {
		return ProcessInfo{}, resultNotFound
	}
	info := ProcessInfo{Cgroup: cg}
	r.envMu.Lock()
	env, err := readEnviron(r.proc.Proc(pid), r.envBuf)
	r.envMu.Unlock()
	if err != nil {
		return info, resultPartial
	}
	info.SpanContext = ParseTraceparent(env.Traceparent, env.Tracestate)
	attrs, err := ParseResourceAttributes(env.ResourceAttributes)
	if err != nil {
		attrs = nil // the specification's answer to a bad value: discard it whole
	}
	if i := indexKey(attrs, string(semconv.ServiceName)); i >= 0 {
		info.ServiceName = attrs[i].Value.AsString()
		attrs = slices.Delete(attrs, i, i+1)
	}
	if env.ServiceName != "" {
		info.ServiceName = strings.ToValidUTF8(env.ServiceName, string(utf8.RuneError))
	}
	if len(attrs) > 0 {
		info.ResourceAttrs = slices.Clip(attrs)
	}
	return info, resultMiss
}

// name adds the names the log directories give a pod UID and container
// id.
func (r *Resolver) name(info ProcessInfo) ProcessInfo {
	idx := &r.logs.Load().idx
	if info.PodUID != "" {
		if p, ok := idx.pods[info.PodUID]; ok {
			info.Namespace, info.PodName = p.namespace, p.name
		}
	}
	if info.ContainerID != "" {
		if c, ok := idx.containers[info.ContainerID]; ok {
			info.ContainerName = c.container
			if info.PodName == "" {
				info.Namespace, info.PodName = c.pod.namespace, c.pod.name
			}
		}
	}
	return info
}

// sweep drops expired entries and those of processes that exited or whose
// pid was reused. The start times are read outside the lock.
func (r *Resolver) sweep(now time.Time) {
	type key struct {
		pid   int
		start uint64
	}
	r.mu.Lock()
	r.cache.expire(now)
	keys := make([]key, 0, r.cache.len())
	for e := range r.cache.all() {
		keys = append(keys, key{e.pid, e.start})
	}
	r.mu.Unlock()
	for _, k := range keys {
		if st, err := r.proc.StartTime(k.pid); err != nil || st != k.start {
			r.mu.Lock()
			if e := r.cache.get(k.pid); e != nil && e.start == k.start {
				r.cache.remove(k.pid)
			}
			r.mu.Unlock()
		}
	}
}

// cacheEntry is one process's cached info.
type cacheEntry struct {
	pid     int
	start   uint64
	expires time.Time
	info    ProcessInfo
}

// processCache is a least-recently-used map of pid to entry, bounded.
type processCache struct {
	max int
	ll  *list.List // of *cacheEntry, most recent first
	m   map[int]*list.Element
}

func newProcessCache(max int) processCache {
	return processCache{max: max, ll: list.New(), m: map[int]*list.Element{}}
}

func (c *processCache) len() int { return len(c.m) }

// get returns pid's entry, marking it recently used, or nil.
func (c *processCache) get(pid int) *cacheEntry {
	el, ok := c.m[pid]
	if !ok {
		return nil
	}
	c.ll.MoveToFront(el)
	return el.Value.(*cacheEntry)
}

func (c *processCache) put(pid int, start uint64, expires time.Time, info ProcessInfo) {
	if el, ok := c.m[pid]; ok {
		*el.Value.(*cacheEntry) = cacheEntry{pid, start, expires, info}
		c.ll.MoveToFront(el)
		return
	}
	if len(c.m) >= c.max {
		oldest := c.ll.Back()
		delete(c.m, oldest.Value.(*cacheEntry).pid)
		c.ll.Remove(oldest)
	}
	c.m[pid] = c.ll.PushFront(&cacheEntry{pid, start, expires, info})
}

func (c *processCache) remove(pid int) {
	if el, ok := c.m[pid]; ok {
		delete(c.m, pid)
		c.ll.Remove(el)
	}
}

// expire drops the entries whose TTL has passed.
func (c *processCache) expire(now time.Time) {
	for el := c.ll.Front(); el != nil; {
		next := el.Next()
		if e := el.Value.(*cacheEntry); !now.Before(e.expires) {
			delete(c.m, e.pid)
			c.ll.Remove(el)
		}
		el = next
	}
}

func (c *processCache) all() func(func(*cacheEntry) bool) {
	return func(yield func(*cacheEntry) bool) {
		for el := c.ll.Front(); el != nil; el = el.Next() {
			if !yield(el.Value.(*cacheEntry)) {
				return
			}
		}
	}
}

func (c *processCache) clear() {
	c.ll.Init()
	clear(c.m)
}
