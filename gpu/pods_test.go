package gpu

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/xpuscope/xpuscope/internal/amdsysfs/amdsysfstest"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

// fakeResolver places processes and devices in pods as the test says,
// and counts what the Source asks.
type fakeResolver struct {
	mu      sync.Mutex
	procs   map[int][]attribute.KeyValue
	devices map[string][]attribute.KeyValue // absent: no pod, or several
	asked   map[int]int                     // ProcessAttributes calls by pid
	askedID map[string]int                  // DeviceAttributes calls by id
	forgot  []int
}

func newFakeResolver() *fakeResolver {
	return &fakeResolver{procs: map[int][]attribute.KeyValue{}, devices: map[string][]attribute.KeyValue{},
		asked: map[int]int{}, askedID: map[string]int{}}
}

func (f *fakeResolver) ProcessAttributes(pid int) ([]attribute.KeyValue, trace.SpanContext) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked[pid]++
	return f.procs[pid], trace.SpanContext{}
}

func (f *fakeResolver) DeviceAttributes(id string) ([]attribute.KeyValue, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.askedID[id]++
	kvs, ok := f.devices[id]
	return kvs, ok
}

func (f *fakeResolver) Forget(pid int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forgot = append(f.forgot, pid)
}

func (f *fakeResolver) set(do func(f *fakeResolver)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	do(f)
}

func pod(ns, name, container string) []attribute.KeyValue {
	return []attribute.KeyValue{
		semconv.K8sNamespaceName.String(ns), semconv.K8sPodName.String(name),
		semconv.K8sPodUID.String(name + "-uid"), semconv.K8sContainerName.String(container),
	}
}

// A process's series carry its container and pod, asked for once, when
// it first appears; its own and the device's attributes win over the
// resolver's; a process that leaves is forgotten.
func TestPodLabelsOnProcessSeries(t *testing.T) {
	g := h100(0)
	g.compute = []nvml.ProcessInfo{{Pid: 100, UsedGpuMemory: 1 << 30}, {Pid: 200, UsedGpuMemory: 2 << 30}}
	r := newFakeResolver()
	r.procs[100] = append(pod("ml", "train-0", "trainer"),
		semconv.ContainerID.String("c0ffee"), semconv.ServiceName.String("trainer"),
		semconv.HWID.String("claimed"), semconv.ProcessPID.Int(1))
	s, reader := start(t, &fakeSystem{gpus: []*fakeGPU{g}}, WithProcRoot(procRoot(t, map[uint32]string{100: "/usr/bin/python3"})),
		WithResolver(r))
	s.poll()
	pts := testutil.Collect(t, reader)

	mem := semconv.ProcessGPUMemoryUsage.Name
	p := pts.One(t, mem, semconv.ProcessPID.Int(100))
	for k, v := range map[attribute.Key]string{
		semconv.K8sNamespaceName: "ml", semconv.K8sPodName: "train-0", semconv.K8sPodUID: "train-0-uid",
		semconv.K8sContainerName: "trainer", semconv.ContainerID: "c0ffee", semconv.ServiceName: "trainer",
		semconv.HWID: g.uuid, semconv.ProcessExecutableName: "python3",
	} {
		assert.Equal(t, v, p.Get(k), k)
	}
	assert.Equal(t, p.Attrs, pts.One(t, semconv.ProcessGPUUtilization.Name, semconv.ProcessPID.Int(100)).Attrs)
	outside := pts.One(t, mem, semconv.ProcessPID.Int(200))
	assert.False(t, outside.Has(semconv.K8sPodName), "a process the resolver cannot place has no pod")
	r.set(func(r *fakeResolver) {
		assert.Equal(t, map[int]int{100: 1, 200: 1}, r.asked, "asked once per process, not per poll")
		assert.Empty(t, r.forgot)
	})

	g.set(func(g *fakeGPU) { g.compute = g.compute[1:] }) // 100 exits
	s.poll()
	assert.Empty(t, testutil.Collect(t, reader).Find(mem, semconv.ProcessPID.Int(100)))
	r.set(func(r *fakeResolver) { assert.Equal(t, []int{100}, r.forgot) })
}

// A device's series carry the pod holding it only while exactly one pod
// does (the resolver says which); the sets are rebuilt only when the pod
// changes, and XID counts follow.
func TestPodLabelsOnDeviceSeries(t *testing.T) {
	owned, shared := h100(0), h100(1)
	r := newFakeResolver()
	// With a claim the device's own attribute overrides.
	r.devices[owned.uuid] = append(pod("ml", "train-0", "trainer"), semconv.HWName.String("claimed"))
	fs := &fakeSystem{gpus: []*fakeGPU{owned, shared}}
	s, reader := start(t, fs, WithProcRoot(t.TempDir()), WithResolver(r))
	pts := testutil.Collect(t, reader)

	for _, m := range []string{semconv.HWPower.Name, semconv.HWGPUMemoryUsage.Name, semconv.HWTemperature.Name} {
		p := pts.One(t, m, hwID(owned))
		assert.Equal(t, "train-0", p.Get(semconv.K8sPodName), m)
		assert.Equal(t, "ml", p.Get(semconv.K8sNamespaceName), m)
		assert.Equal(t, "train-0-uid", p.Get(semconv.K8sPodUID), m)
		assert.Equal(t, "trainer", p.Get(semconv.K8sContainerName), m)
		assert.False(t, p.Has(semconv.ContainerID), "a device has no container id")
		assert.Equal(t, owned.name, p.Get(semconv.HWName), m)
	}
	assert.Len(t, pts.Find(semconv.GPUClockThrottle.Name, hwID(owned), semconv.K8sPodName.String("train-0")), len(semconv.ThrottleReasons))
	for _, p := range pts {
		if p.Get(semconv.HWID) == shared.uuid {
			assert.False(t, p.Has(semconv.K8sPodName), "%s: a device no one pod holds has no pod", p.Name)
		}
	}

	// Unchanged: nothing rebuilt. observe stays free of allocations.
	before := s.devices[0].series
	s.poll()
	assert.Same(t, before, s.devices[0].series)
	assert.Zero(t, testing.AllocsPerRun(10, func() { _ = s.observe(context.Background(), discard{}) }))

	fs.events <- nvml.EventData{Device: fs.handles[0], EventType: nvml.EventTypeXidCriticalError, EventData: 79}
	xid := func(kv ...attribute.KeyValue) testutil.Points {
		return testutil.Collect(t, reader).Find(semconv.HWErrors.Name, append(kv, hwID(owned), semconv.GPUXIDCode.String("79"))...)
	}
	require.Eventually(t, func() bool { return len(xid(semconv.K8sPodName.String("train-0"))) == 1 }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, owned.name, xid()[0].Get(semconv.HWName))

	// The GPU goes to another pod, then to none.
	r.set(func(r *fakeResolver) { r.devices[owned.uuid] = pod("ml", "train-1", "trainer") })
	s.poll()
	pts = testutil.Collect(t, reader)
	assert.Equal(t, "train-1", pts.One(t, semconv.HWPower.Name, hwID(owned)).Get(semconv.K8sPodName))
	assert.Empty(t, pts.Find(semconv.HWPower.Name, semconv.K8sPodName.String("train-0")), "the old pod's series are gone")
	moved := xid(semconv.K8sPodName.String("train-1"))
	require.Len(t, moved, 1)
	assert.Equal(t, 1.0, moved[0].Value)
	assert.Empty(t, xid(semconv.K8sPodName.String("train-0")))

	r.set(func(r *fakeResolver) { delete(r.devices, owned.uuid) })
	s.poll()
	pts = testutil.Collect(t, reader)
	assert.False(t, pts.One(t, semconv.HWPower.Name, hwID(owned)).Has(semconv.K8sPodName))
	assert.False(t, xid()[0].Has(semconv.K8sPodName))
	r.set(func(r *fakeResolver) {
		assert.Equal(t, 4, r.askedID[owned.uuid], "asked once per poll")
		assert.Empty(t, r.asked, "no process, no process lookup")
	})
}

// MIG instances are allocated, and asked for, by their own UUID; the
// parent GPU is no pod's.
func TestPodLabelsOnMIGInstances(t *testing.T) {
	parent := h100(0)
	parent.migEnabled = true
	parent.fail = map[string]nvml.Return{"utilization": nvml.ERROR_NOT_SUPPORTED, "process_utilization": nvml.ERROR_NOT_SUPPORTED}
	in := &fakeGPU{uuid: "MIG-11111111-2222-3333-4444-555555555555", name: "NVIDIA H100 80GB HBM3 MIG 1g.10gb",
		memory: nvml.Memory_v2{Total: 10 << 30, Used: 1 << 30}}
	parent.instances = []*fakeGPU{in}
	r := newFakeResolver()
	r.devices[in.uuid] = pod("ml", "infer-0", "server")
	_, reader := start(t, &fakeSystem{gpus: []*fakeGPU{parent}}, WithProcRoot(t.TempDir()), WithResolver(r))
	pts := testutil.Collect(t, reader)
	assert.Equal(t, "infer-0", pts.One(t, semconv.HWGPUMemoryUsage.Name, hwID(in)).Get(semconv.K8sPodName))
	assert.False(t, pts.One(t, semconv.HWGPUMemoryUsage.Name, hwID(parent)).Has(semconv.K8sPodName))
	r.set(func(r *fakeResolver) { assert.Equal(t, map[string]int{parent.uuid: 1, in.uuid: 1}, r.askedID) })
}

// An AMD GPU is allocated by its PCI address, and asked for by it.
func TestPodLabelsOnAMDGPU(t *testing.T) {
	r := newFakeResolver()
	r.devices["0000:03:00.0"] = pod("rocm", "bench", "hip")
	_, reader := newSource(t, WithBackends(BackendAMDSysfs), withSysfsFS(amdsysfstest.Load(t, "one-gpu")),
		WithProcRoot(amdProcRoot(t, nil, "6.8.0-49-generic")), WithResolver(r))
	p := testutil.Collect(t, reader).One(t, semconv.HWGPUMemoryUsage.Name, semconv.HWID.String("0xa1b2c3d4e5f60718"))
	assert.Equal(t, "bench", p.Get(semconv.K8sPodName))
	assert.Equal(t, "rocm", p.Get(semconv.K8sNamespaceName))
}
