package podjoin

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

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
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
	return r, reader
}

func TestFixtures(t *testing.T) {
	paths, err := filepath.Glob("testdata/*.txtar")
	if err != nil || len(paths) < 4 {
		t.Fatalf("fixtures: %v %v", paths, err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			fx := unpack(t, path)
			if len(fx.want) == 0 {
				t.Fatal("fixture has no want lines")
			}
			r, _ := newTestResolver(t, fx.proc, fx.logs)
			for _, w := range fx.want {
				// Twice: read, then from the cache.
				for i := range 2 {
					if got := render(r.Process(w.pid)); got != w.want {
						t.Errorf("pid %d (lookup %d):\n got %s\nwant %s", w.pid, i+1, got, w.want)
					}
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
		if p.Value != want {
			t.Errorf("resolves{%s} = %v, want %v", res, p.Value, want)
		}
	}
	if got := ps.Find(semconv.XpuscopePodjoinKubeletUp.Name); len(got) != 0 {
		t.Errorf("kubelet client off, yet %v", got)
	}
	// A partial result is cached like a full one: the environment is
	// not read again until the TTL.
	r.Process(307)
	if p := testutil.Collect(t, reader).One(t, semconv.XpuscopePodjoinResolves.Name, semconv.XpuscopePodjoinResult.String(semconv.PodjoinResultHit)); p.Value != 2 {
		t.Errorf("hits = %v, want 2", p.Value)
	}
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
	if got := r.Process(42).PodUID; got != "e6ad2b47-524d-5472-b6fd-cd5deeb0e561" {
		t.Fatalf("first process: pod %q", got)
	}
	writeProc(t, proc, 42, 200, podB, nil) // exited; the pid is reused
	if got := r.Process(42).PodUID; got != "f4e2b41a-8589-5dac-abeb-5439ed42d10a" {
		t.Fatalf("reused pid kept the old pod: %q", got)
	}
	// Same start time, new cgroup: the cache answers (a process does not
	// change pods), until the TTL.
	writeProc(t, proc, 42, 200, podA, nil)
	if got := r.Process(42).PodUID; got != "f4e2b41a-8589-5dac-abeb-5439ed42d10a" {
		t.Fatalf("cached entry not served: %q", got)
	}
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
	if time.Since(read) < ttl && got != "e6ad2b47-524d-5472-b6fd-cd5deeb0e561" {
		t.Fatalf("before the TTL: %q", got)
	}
	time.Sleep(ttl + 50*time.Millisecond)
	if got := r.Process(42).PodUID; got != "f4e2b41a-8589-5dac-abeb-5439ed42d10a" {
		t.Fatalf("after the TTL the entry was not read again: %q", got)
	}
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
	if n != 4 || !has1 || !has10 || has5 {
		t.Fatalf("cache of %d entries (1: %v, 10: %v, 5: %v), want 4 with the most recent", n, has1, has10, has5)
	}
	r.Forget(10)
	r.mu.Lock()
	n = r.cache.len()
	r.mu.Unlock()
	if n != 3 {
		t.Fatalf("Forget left %d entries", n)
	}
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
	if err := os.RemoveAll(filepath.Join(proc, "42")); err != nil {
		t.Fatal(err)
	}
	writeProc(t, proc, 43, 999, podB, nil)
	waitFor(t, "exited and reused pids dropped", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.cache.len() == 1 && r.cache.get(44) != nil
	})
}

func TestNewUnavailableWithoutProcfs(t *testing.T) {
	_, err := New(WithProcRoot(filepath.Join(t.TempDir(), "missing")), WithKubeletSocket(""))
	if !errors.Is(err, xpuscope.ErrUnavailable) || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("err = %v, want unavailable naming the path", err)
	}
}

func TestBadOptionsAreFaults(t *testing.T) {
	for _, o := range []Option{
		WithProcRoot(""), WithKubeletSocket("relative.sock"), WithRefresh(0), WithCacheSize(0), WithTTL(-time.Second),
	} {
		_, err := New(o)
		if err == nil || errors.Is(err, xpuscope.ErrUnavailable) {
			t.Errorf("err = %v, want a fault", err)
		}
	}
}

func TestCloseIsIdempotentAndStops(t *testing.T) {
	proc := t.TempDir()
	writeProc(t, proc, 42, 100, podA, nil)
	before := runtime.NumGoroutine()
	r, err := New(WithProcRoot(proc), WithKubeletSocket(""), WithRefresh(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if r.Process(42).ContainerID == "" {
		t.Fatal("no container")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if got := r.Process(42); got.ContainerID != "" {
		t.Fatalf("after Close: %+v", got)
	}
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
	if !got.Equals(&want) || len(p.Attributes()) != want.Len() {
		t.Fatalf("got %v\nwant %v", p.Attributes(), want.ToSlice())
	}
	if kvs := (ProcessInfo{}).Attributes(); len(kvs) != 0 {
		t.Fatalf("zero ProcessInfo: %v", kvs)
	}
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
	if !got.Equals(&want) || len(kvs) != want.Len() {
		t.Errorf("attributes %v, want %v", kvs, want.ToSlice())
	}
	if !sc.IsValid() || !sc.IsRemote() || sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" ||
		sc.SpanID().String() != "00f067aa0ba902b7" || !sc.IsSampled() {
		t.Errorf("span context %+v", sc)
	}
	if kvs, sc := r.ProcessAttributes(43); len(kvs) != 0 || sc.IsValid() {
		t.Errorf("no such process: %v %+v", kvs, sc)
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
