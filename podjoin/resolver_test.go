package podjoin

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

// newTestResolver starts a Resolver on a fixture tree, without a kubelet,
// with a manual metric reader.
func newTestResolver(t testing.TB, proc, logs string, opts ...Option) (*Resolver, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	opts = append([]Option{
		WithProcRoot(proc), WithLogRoot(logs), WithKubeletSocket(""), WithMeterProvider(mp),
	}, opts...)
	r, err := New(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, r.Close()) })
	return r, reader
}

func TestFixtures(t *testing.T) {
	paths, err := filepath.Glob("testdata/*.txtar")
	require.NoError(t, err, "fixtures")
	require.GreaterOrEqual(t, len(paths), 4, "fixtures: %v", paths)
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			fx := unpack(t, path)
			require.NotEmpty(t, fx.want, "fixture has no want lines")
			r, _ := newTestResolver(t, fx.proc, fx.logs)
			for _, w := range fx.want {
				// Twice: read, then from the cache.
				for i := range 2 {
					assert.Equal(t, w.want, render(r.Process(w.pid)), "pid %d (lookup %d)", w.pid, i+1)
				}
			}
		})
	}
}

func TestResolveCounts(t *testing.T) {
	fx := unpack(t, "testdata/non_container.txtar")
	r, reader := newTestResolver(t, fx.proc, fx.logs)
	for _, pid := range []int{300, 300, 307, 308, 0, -1} {
		r.Process(pid)
	}
	ps := testutil.Collect(t, reader)
	for res, want := range map[string]float64{
		semconv.PodjoinResultMiss:     1,
		semconv.PodjoinResultHit:      1,
		semconv.PodjoinResultPartial:  1,
		semconv.PodjoinResultNotFound: 3,
	} {
		p := ps.One(t, semconv.XpuscopePodjoinResolves.Name, semconv.XpuscopePodjoinResult.String(res))
		assert.Equal(t, want, p.Value, "resolves{%s}", res)
	}
	assert.Empty(t, ps.Find(semconv.XpuscopePodjoinKubeletUp.Name), "kubelet client off")
	// A partial result is cached like a full one: the environment is
	// not read again until the TTL.
	r.Process(307)
	p := testutil.Collect(t, reader).One(t, semconv.XpuscopePodjoinResolves.Name, semconv.XpuscopePodjoinResult.String(semconv.PodjoinResultHit))
	assert.Equal(t, 2.0, p.Value, "hits")
}

const (
	podA = "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pode6ad2b47_524d_5472_b6fd_cd5deeb0e561.slice/cri-containerd-ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb.scope\n"
	podB = "0::/kubepods/burstable/podf4e2b41a-8589-5dac-abeb-5439ed42d10a/3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d\n"
)

// A pid the kernel gives to a new process must not keep the old one's pod.
func TestReusedPidIsReadAgain(t *testing.T) {
	proc := t.TempDir()
	writeProc(t, proc, 42, 100, podA, nil)
	r, _ := newTestResolver(t, proc, "", WithTTL(time.Hour))
	require.Equal(t, "e6ad2b47-524d-5472-b6fd-cd5deeb0e561", r.Process(42).PodUID, "first process: pod")
	writeProc(t, proc, 42, 200, podB, nil) // exited; the pid is reused
	require.Equal(t, "f4e2b41a-8589-5dac-abeb-5439ed42d10a", r.Process(42).PodUID, "reused pid kept the old pod")
	// Same start time, new cgroup: the cache answers (a process does not
	// change pods), until the TTL.
	writeProc(t, proc, 42, 200, podA, nil)
	require.Equal(t, "f4e2b41a-8589-5dac-abeb-5439ed42d10a", r.Process(42).PodUID, "cached entry not served")
}

func TestTTL(t *testing.T) {
	const ttl = 200 * time.Millisecond
	proc := t.TempDir()
	writeProc(t, proc, 42, 100, podA, nil)
	r, _ := newTestResolver(t, proc, "", WithTTL(ttl), WithRefresh(time.Hour))
	read := time.Now()
	r.Process(42)
	writeProc(t, proc, 42, 100, podB, nil)
	got := r.Process(42).PodUID
	if time.Since(read) < ttl {
		require.Equal(t, "e6ad2b47-524d-5472-b6fd-cd5deeb0e561", got, "before the TTL")
	}
	time.Sleep(ttl + 50*time.Millisecond)
	require.Equal(t, "f4e2b41a-8589-5dac-abeb-5439ed42d10a", r.Process(42).PodUID, "after the TTL the entry was not read again")
}

func TestCacheIsBounded(t *testing.T) {
	proc := t.TempDir()
	for pid := 1; pid <= 10; pid++ {
		writeProc(t, proc, pid, 100, podA, nil)
	}
	r, _ := newTestResolver(t, proc, "", WithCacheSize(4))
	for pid := 1; pid <= 10; pid++ {
		r.Process(pid)
		r.Process(1) // keep 1 recently used
	}
	r.mu.Lock()
	n, has1, has10, has5 := r.cache.len(), r.cache.get(1) != nil, r.cache.get(10) != nil, r.cache.get(5) != nil
	r.mu.Unlock()
	require.Equal(t, 4, n, "cache entries")
	require.True(t, has1, "1, recently used, evicted")
	require.True(t, has10, "10, the last read, evicted")
	require.False(t, has5, "5 kept in a cache of %d entries, want 4 with the most recent", n)
	r.Forget(10)
	r.mu.Lock()
	n = r.cache.len()
	r.mu.Unlock()
	require.Equal(t, 3, n, "entries Forget left")
}

// The refresh drops the entries of processes that exited, and those of
// reused pids, without a lookup.
func TestRefreshDropsExited(t *testing.T) {
	proc := t.TempDir()
	writeProc(t, proc, 42, 100, podA, nil)
	writeProc(t, proc, 43, 100, podA, nil)
	writeProc(t, proc, 44, 100, podA, nil)
	r, _ := newTestResolver(t, proc, "", WithRefresh(10*time.Millisecond), WithTTL(time.Hour))
	for _, pid := range []int{42, 43, 44} {
		r.Process(pid)
	}
	require.NoError(t, os.RemoveAll(filepath.Join(proc, "42")))
	writeProc(t, proc, 43, 999, podB, nil)
	waitFor(t, "exited and reused pids dropped", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.cache.len() == 1 && r.cache.get(44) != nil
	})
}

func TestNewUnavailableWithoutProcfs(t *testing.T) {
	_, err := New(WithProcRoot(filepath.Join(t.TempDir(), "missing")), WithKubeletSocket(""))
	require.ErrorIs(t, err, xpuscope.ErrUnavailable)
	require.ErrorContains(t, err, "missing", "want unavailable naming the path")
}

func TestBadOptionsAreFaults(t *testing.T) {
	for _, o := range []Option{
		WithProcRoot(""), WithKubeletSocket("relative.sock"), WithRefresh(0), WithCacheSize(0), WithTTL(-time.Second),
	} {
		_, err := New(o)
		assert.Error(t, err, "want a fault")
		assert.NotErrorIs(t, err, xpuscope.ErrUnavailable, "want a fault")
	}
}

func TestCloseIsIdempotentAndStops(t *testing.T) {
	proc := t.TempDir()
	writeProc(t, proc, 42, 100, podA, nil)
	before := runtime.NumGoroutine()
	r, err := New(WithProcRoot(proc), WithKubeletSocket(""), WithRefresh(time.Millisecond))
	require.NoError(t, err)
	require.NotEmpty(t, r.Process(42).ContainerID, "no container")
	require.NoError(t, r.Close())
	require.NoError(t, r.Close())
	got := r.Process(42)
	require.Empty(t, got.ContainerID, "after Close: %+v", got)
	waitFor(t, "goroutines gone", func() bool { return runtime.NumGoroutine() <= before })
}

func TestAttributes(t *testing.T) {
	p := ProcessInfo{
		Cgroup:        Cgroup{ContainerID: "c1", PodUID: "u1"},
		PodName:       "p",
		Namespace:     "ns",
		ContainerName: "ctr",
		ServiceName:   "svc",
		ResourceAttrs: []attribute.KeyValue{
			attribute.String("k8s.pod.name", "claimed"), attribute.String("team", "ml"),
		},
	}
	got := attribute.NewSet(p.Attributes()...)
	want := attribute.NewSet(
		semconv.K8sNamespaceName.String("ns"), semconv.K8sPodName.String("p"), semconv.K8sPodUID.String("u1"),
		semconv.K8sContainerName.String("ctr"), semconv.ContainerID.String("c1"), semconv.ServiceName.String("svc"),
		attribute.String("team", "ml"),
	)
	require.True(t, got.Equals(&want), "got %v\nwant %v", p.Attributes(), want.ToSlice())
	require.Len(t, p.Attributes(), want.Len())
	require.Empty(t, (ProcessInfo{}).Attributes(), "zero ProcessInfo")
}

// ProcessAttributes is what the Sources take: the process's attributes,
// the workload's resource attributes after them (its claim to
// k8s.pod.name loses to the cgroup's pod), and its parent span.
func TestProcessAttributes(t *testing.T) {
	proc := t.TempDir()
	writeProc(t, proc, 42, 100, podA, environBlock([]byte("TRACEPARENT=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\n"+
		"OTEL_RESOURCE_ATTRIBUTES=team=ml,k8s.pod.name=claimed\nOTEL_SERVICE_NAME=trainer\n")))
	r, _ := newTestResolver(t, proc, "")
	kvs, sc := r.ProcessAttributes(42)
	got := attribute.NewSet(kvs...)
	want := attribute.NewSet(
		semconv.K8sPodUID.String("e6ad2b47-524d-5472-b6fd-cd5deeb0e561"),
		semconv.ContainerID.String("ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"),
		semconv.ServiceName.String("trainer"),
		attribute.String("team", "ml"),
	)
	assert.True(t, got.Equals(&want), "attributes %v, want %v", kvs, want.ToSlice())
	assert.Len(t, kvs, want.Len(), "attributes")
	assert.True(t, sc.IsValid(), "span context %+v", sc)
	assert.True(t, sc.IsRemote(), "span context %+v", sc)
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", sc.TraceID().String(), "span context")
	assert.Equal(t, "00f067aa0ba902b7", sc.SpanID().String(), "span context")
	assert.True(t, sc.IsSampled(), "span context %+v", sc)
	kvs, sc = r.ProcessAttributes(43)
	assert.Empty(t, kvs, "no such process")
	assert.False(t, sc.IsValid(), "no such process: %+v", sc)
}

// waitFor polls cond for up to 10 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		require.False(t, time.Now().After(deadline), "timed out waiting: %s", what)
		time.Sleep(5 * time.Millisecond)
	}
}
