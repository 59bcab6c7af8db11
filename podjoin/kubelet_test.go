package podjoin

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

// fakeKubelet serves the PodResources v1 API as a kubelet does.
type fakeKubelet struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	mu    sync.Mutex
	pods  []*podresourcesv1.PodResources
	alloc []*podresourcesv1.ContainerDevices // nil: Unimplemented, as before Kubernetes 1.23
}

func (f *fakeKubelet) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &podresourcesv1.ListPodResourcesResponse{PodResources: f.pods}, nil
}

func (f *fakeKubelet) GetAllocatableResources(ctx context.Context, req *podresourcesv1.AllocatableResourcesRequest) (*podresourcesv1.AllocatableResourcesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.alloc == nil {
		return f.UnimplementedPodResourcesListerServer.GetAllocatableResources(ctx, req)
	}
	return &podresourcesv1.AllocatableResourcesResponse{Devices: f.alloc}, nil
}

// socketPath returns a socket path short enough for sun_path (108 bytes),
// which t.TempDir's long names can exceed.
func socketPath(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pr")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "kubelet.sock")
}

// serve starts a gRPC server for f on path; stop stops it and removes the
// socket, as a kubelet going away does.
func serve(t *testing.T, path string, f *fakeKubelet) (stop func()) {
	t.Helper()
	lis, err := net.Listen("unix", path)
	require.NoError(t, err)
	s := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(s, f)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Serve(lis)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			s.Stop()
			<-done
		})
	}
	t.Cleanup(stop)
	return stop
}

const (
	gpuTrain  = "GPU-8e2a4c1f-3b7d-4e11-9f0a-2c5d6e7f8a9b"
	gpuShared = "GPU-11111111-2222-3333-4444-555555555555"
	gpuDup    = "GPU-66666666-7777-8888-9999-000000000000"
	gpuInit   = "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
	migBare   = "MIG-1f2e3d4c-5b6a-7988-a7b6-c5d4e3f2a1b0"
	migSuffix = "MIG-0a0b0c0d-1e1f-2a2b-3c3d-4e4f5a5b5c5d"
	amdGPU    = "0000:c1:00.0"
	amdShared = "0000:c2:00.0"
	intelCard = "card1"
)

// nodePods is a node with NVIDIA GPUs, MIG devices (with and without the
// ::N suffix), AMD and Intel GPUs, and devices shared by two pods.
func nodePods() []*podresourcesv1.PodResources {
	return []*podresourcesv1.PodResources{
		pod("ml", "train-0", []string{"trainer", "nvidia.com/gpu", gpuTrain}),
		pod("ml", "infer-0", []string{"server", "nvidia.com/mig-1g.10gb", migBare, migSuffix + "::2"}),
		pod("rocm", "bench", []string{"hip", "amd.com/gpu", amdGPU}),
		pod("media", "transcode", []string{"ffmpeg", "gpu.intel.com/i915", intelCard + "-0"}),
		// Time-slicing: replicas of one GPU in two pods.
		pod("ts", "a", []string{"x", "nvidia.com/gpu", gpuShared + "::0"}),
		pod("ts", "b", []string{"y", "nvidia.com/gpu", gpuShared + "::1"}),
		// The same ID in two pods.
		pod("dup", "a", []string{"x", "nvidia.com/gpu", gpuDup}),
		pod("dup", "b", []string{"x", "nvidia.com/gpu", gpuDup}),
		// AMD time-slicing across pods.
		pod("rocm", "s1", []string{"c", "amd.com/gpu", amdShared + "-slice-0"}),
		pod("rocm", "s2", []string{"c", "amd.com/gpu", amdShared + "-slice-1"}),
		// An init container's GPU reused by the app container.
		pod("ml", "prep", []string{"init", "nvidia.com/gpu", gpuInit}, []string{"app", "nvidia.com/gpu", gpuInit}),
		pod("net", "router", []string{"c", "example.com/nic", "nic0"}),
	}
}

func TestKubeletJoin(t *testing.T) {
	sock := socketPath(t)
	alloc := []*podresourcesv1.ContainerDevices{
		{ResourceName: "nvidia.com/gpu", DeviceIds: []string{gpuTrain, gpuShared + "::0", gpuShared + "::1", gpuShared + "::2", gpuDup, gpuInit, "GPU-free"}},
		{ResourceName: "amd.com/gpu", DeviceIds: []string{amdGPU}},
		{ResourceName: "example.com/nic", DeviceIds: []string{"nic0"}},
	}
	serve(t, sock, &fakeKubelet{pods: nodePods(), alloc: alloc})
	logs := t.TempDir()
	for _, d := range []string{"pods/ml_train-0_e6ad2b47-524d-5472-b6fd-cd5deeb0e561", "containers"} {
		require.NoError(t, os.MkdirAll(filepath.Join(logs, d), 0o755))
	}
	r, reader := newTestResolver(t, t.TempDir(), logs, WithKubeletSocket(sock))

	for _, tc := range []struct {
		id   string
		want Owner
		ok   bool
	}{
		{gpuTrain, Owner{"ml", "train-0", "e6ad2b47-524d-5472-b6fd-cd5deeb0e561", "trainer"}, true},
		{migBare, Owner{Namespace: "ml", Pod: "infer-0", Container: "server"}, true},
		{migSuffix, Owner{Namespace: "ml", Pod: "infer-0", Container: "server"}, true},
		{migSuffix + "::2", Owner{Namespace: "ml", Pod: "infer-0", Container: "server"}, true},
		{amdGPU, Owner{Namespace: "rocm", Pod: "bench", Container: "hip"}, true},
		{intelCard, Owner{Namespace: "media", Pod: "transcode", Container: "ffmpeg"}, true},
		{intelCard + "-0", Owner{Namespace: "media", Pod: "transcode", Container: "ffmpeg"}, true},
		{gpuInit, Owner{Namespace: "ml", Pod: "prep"}, true},
		// Shared: never attributed, whichever spelling is asked.
		{gpuShared, Owner{}, false},
		{gpuShared + "::0", Owner{}, false},
		{gpuShared + "::1", Owner{}, false},
		{gpuDup, Owner{}, false},
		{amdShared, Owner{}, false},
		{amdShared + "-slice-1", Owner{}, false},
		{"nic0", Owner{}, false},
		{"GPU-free", Owner{}, false},
		{"GPU-unknown", Owner{}, false},
	} {
		got, ok := r.Device(tc.id)
		assert.Equal(t, tc.want, got, "Device(%q)", tc.id)
		assert.Equal(t, tc.ok, ok, "Device(%q) = %+v", tc.id, got)
		kvs, ok := r.DeviceAttributes(tc.id)
		want := tc.want.Attributes()
		assert.Equal(t, tc.ok, ok, "DeviceAttributes(%q) = %v", tc.id, kvs)
		if !tc.ok {
			assert.Nil(t, kvs, "DeviceAttributes(%q)", tc.id)
		}
		assert.Equal(t, fmt.Sprint(want), fmt.Sprint(kvs), "DeviceAttributes(%q)", tc.id)
	}
	st := r.Status()
	assert.True(t, st.KubeletUp, "status %+v", st)
	assert.NoError(t, st.KubeletErr, "status %+v", st)
	assert.False(t, st.LastRefresh.IsZero(), "status %+v", st)
	assert.Equal(t, 12, st.Pods, "status %+v", st)
	assert.Equal(t, 9, st.Devices, "status %+v", st)
	assert.Equal(t, 3, st.Shared, "status %+v", st)
	assert.Equal(t, 6, st.Allocatable, "status %+v", st)
	assert.Equal(t, 1, st.NamedPods, "status %+v", st)
	assert.False(t, st.Truncated, "status %+v", st)
	attrs := map[string]string{}
	for _, kv := range (Owner{"ml", "train-0", "u", "trainer"}).Attributes() {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	assert.Equal(t, map[string]string{
		string(semconv.K8sPodName): "train-0", string(semconv.K8sNamespaceName): "ml",
		string(semconv.K8sPodUID): "u", string(semconv.K8sContainerName): "trainer",
	}, attrs, "owner attributes")
	kvs := (Owner{Namespace: "ml", Pod: "prep"}).Attributes()
	assert.Len(t, kvs, 2, "owner without container")
	ps := testutil.Collect(t, reader)
	assert.Equal(t, 1.0, ps.One(t, semconv.XpuscopePodjoinKubeletUp.Name).Value, "kubelet.up")
	assert.Equal(t, 3.0, ps.One(t, semconv.XpuscopePodjoinDevicesShared.Name).Value, "devices.shared")
	for _, call := range []string{semconv.PodjoinCallList, semconv.PodjoinCallAllocatable} {
		p := ps.One(t, semconv.XpuscopePodjoinKubeletErrors.Name, semconv.XpuscopePodjoinKubeletCall.String(call))
		assert.Equal(t, 0.0, p.Value, "kubelet.errors{%s}", call)
	}
}

// An older kubelet without GetAllocatableResources is no error.
func TestKubeletWithoutAllocatable(t *testing.T) {
	sock := socketPath(t)
	serve(t, sock, &fakeKubelet{pods: nodePods()})
	r, reader := newTestResolver(t, t.TempDir(), "", WithKubeletSocket(sock), WithRefresh(10*time.Millisecond))
	_, ok := r.Device(gpuTrain)
	require.True(t, ok, "no owner")
	time.Sleep(50 * time.Millisecond) // several refreshes
	st := r.Status()
	require.True(t, st.KubeletUp, "status %+v", st)
	require.NoError(t, st.KubeletErr, "status %+v", st)
	require.Equal(t, -1, st.Allocatable, "status %+v", st)
	p := testutil.Collect(t, reader).One(t, semconv.XpuscopePodjoinKubeletErrors.Name,
		semconv.XpuscopePodjoinKubeletCall.String(semconv.PodjoinCallAllocatable))
	require.Equal(t, 0.0, p.Value, "Unimplemented counted as errors")
}

// The kubelet goes away and comes back: while it is away the last
// allocations are served within the TTL; it recovers on its own.
func TestKubeletRestart(t *testing.T) {
	sock := socketPath(t)
	stop := serve(t, sock, &fakeKubelet{pods: nodePods()})
	r, reader := newTestResolver(t, t.TempDir(), "", WithKubeletSocket(sock),
		WithRefresh(20*time.Millisecond), WithTTL(time.Minute))
	o, ok := r.Device(gpuTrain)
	require.True(t, ok, "before: %+v", o)
	require.Equal(t, "train-0", o.Pod, "before")
	stop()
	waitFor(t, "kubelet down", func() bool { return !r.Status().KubeletUp })
	st := r.Status()
	require.ErrorContains(t, st.KubeletErr, sock, "down: %+v", st)
	require.Equal(t, 9, st.Devices, "down: %+v", st)
	o, ok = r.Device(gpuTrain)
	require.True(t, ok, "allocations younger than the TTL not served: %+v", o)
	require.Equal(t, "train-0", o.Pod, "allocations younger than the TTL not served")
	ps := testutil.Collect(t, reader)
	assert.Equal(t, 0.0, ps.One(t, semconv.XpuscopePodjoinKubeletUp.Name).Value, "kubelet.up while down")
	p := ps.One(t, semconv.XpuscopePodjoinKubeletErrors.Name, semconv.XpuscopePodjoinKubeletCall.String(semconv.PodjoinCallList))
	assert.GreaterOrEqual(t, p.Value, 1.0, "kubelet.errors{list}")

	// Back, with the training pod gone and its GPU given to another.
	moved := []*podresourcesv1.PodResources{pod("ml", "train-1", []string{"trainer", "nvidia.com/gpu", gpuTrain})}
	serve(t, sock, &fakeKubelet{pods: moved})
	waitFor(t, "kubelet back", func() bool { return r.Status().KubeletUp })
	o, ok = r.Device(gpuTrain)
	require.True(t, ok, "after: %+v", o)
	require.Equal(t, "train-1", o.Pod, "after")
	_, ok = r.Device(amdGPU)
	require.False(t, ok, "allocation of the old answer still served")
	assert.Equal(t, 1.0, testutil.Collect(t, reader).One(t, semconv.XpuscopePodjoinKubeletUp.Name).Value, "kubelet.up after recovery")
}

// Past the TTL without an answer, the last allocations are dropped.
func TestKubeletDownPastTTL(t *testing.T) {
	sock := socketPath(t)
	stop := serve(t, sock, &fakeKubelet{pods: nodePods()})
	r, _ := newTestResolver(t, t.TempDir(), "", WithKubeletSocket(sock),
		WithRefresh(10*time.Millisecond), WithTTL(150*time.Millisecond))
	_, ok := r.Device(gpuTrain)
	require.True(t, ok, "no owner")
	stop()
	waitFor(t, "allocations expired", func() bool {
		_, ok := r.Device(gpuTrain)
		return !ok
	})
	st := r.Status()
	require.False(t, st.KubeletUp, "status %+v", st)
	require.Zero(t, st.Devices, "status %+v", st)
	require.Zero(t, st.Pods, "status %+v", st)
	// The refresh frees them too, not only Device that hides them.
	waitFor(t, "allocations freed", func() bool { return r.kube.Load().dev.owners == nil })
}

// No kubelet at New: the Resolver starts, says why, and picks the kubelet
// up when it appears.
func TestKubeletMissingAtStart(t *testing.T) {
	sock := socketPath(t)
	r, _ := newTestResolver(t, t.TempDir(), "", WithKubeletSocket(sock), WithRefresh(20*time.Millisecond))
	st := r.Status()
	require.False(t, st.KubeletUp, "status %+v", st)
	require.ErrorContains(t, st.KubeletErr, sock, "status %+v", st)
	_, ok := r.Device(gpuTrain)
	require.False(t, ok, "owner without a kubelet")
	serve(t, sock, &fakeKubelet{pods: nodePods()})
	waitFor(t, "kubelet found", func() bool {
		_, ok := r.Device(gpuTrain)
		return ok
	})
}

// Failed attempts dial afresh each time: none may leave a goroutine or a
// connection behind once the Resolver is closed.
func TestKubeletAttemptsDoNotLeak(t *testing.T) {
	sock := socketPath(t)
	before := runtime.NumGoroutine()
	r, err := New(WithProcRoot(t.TempDir()), WithLogRoot(""), WithKubeletSocket(sock), WithRefresh(4*time.Millisecond))
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond) // attempts every 1 to 16 ms
	stop := serve(t, sock, &fakeKubelet{pods: nodePods()})
	waitFor(t, "kubelet up", func() bool { return r.Status().KubeletUp })
	stop()
	waitFor(t, "kubelet down", func() bool { return !r.Status().KubeletUp })
	require.NoError(t, r.Close())
	waitFor(t, "goroutines gone", func() bool { return runtime.NumGoroutine() <= before })
}

// Lookups from many goroutines while the refresh runs.
func TestConcurrentUse(t *testing.T) {
	sock := socketPath(t)
	serve(t, sock, &fakeKubelet{pods: nodePods()})
	fx := unpack(t, "testdata/cgroup_v2_systemd.txtar")
	r, reader := newTestResolver(t, fx.proc, fx.logs, WithKubeletSocket(sock),
		WithRefresh(time.Millisecond), WithCacheSize(3), WithTTL(5*time.Millisecond))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 300 {
				w := fx.want[(g+i)%len(fx.want)]
				// Guarded: assert's t.Helper takes t's lock, which
				// would serialise the goroutines on every lookup.
				if got := render(r.Process(w.pid)); got != w.want {
					assert.Equal(t, w.want, got, "pid %d", w.pid)
					return
				}
				if o, ok := r.Device(gpuTrain); !ok || o.Pod != "train-0" {
					if assert.True(t, ok, "Device: %+v", o) {
						assert.Equal(t, "train-0", o.Pod, "Device")
					}
					return
				}
				if i%50 == 0 {
					r.Forget(w.pid)
					r.Status()
					testutil.Collect(t, reader)
				}
			}
		})
	}
	wg.Wait()
}
