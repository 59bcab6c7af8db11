package training

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/xpuscope/xpuscope/internal/procfs/procfstest"
	"github.com/xpuscope/xpuscope/internal/testutil"
)

// harness is a Source reading a procfs of the given processes only (links
// to the host's), its metrics collected by a manual reader.
type harness struct {
	src    *Source
	reader *sdkmetric.ManualReader
	root   string
}

func newHarness(t *testing.T, pids []int, opts ...Option) *harness {
	t.Helper()
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	h := &harness{reader: r, root: procfstest.Host(t, pids...)}
	src, err := New(append([]Option{
		WithProcRoot(h.root), WithMeterProvider(mp), WithInterval(100 * time.Millisecond),
	}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, src.Close()) })
	h.src = src
	return h
}

// add shows the Source more processes of the host.
func (h *harness) add(t *testing.T, pids ...int) {
	for _, pid := range pids {
		require.NoError(t, os.Symlink(filepath.Join("/proc", strconv.Itoa(pid)), filepath.Join(h.root, strconv.Itoa(pid))))
	}
}

// job waits for the job of root process pid to match cond, and returns it.
func (h *harness) job(t *testing.T, pid int, what string, cond func(Job) bool) Job {
	t.Helper()
	var last Job
	ok := assert.Eventually(t, func() bool {
		for _, j := range h.src.Status().Jobs {
			if j.PID == pid {
				last = j
				return cond(j)
			}
		}
		return false
	}, 30*time.Second, 10*time.Millisecond, "job of pid %d: %s", pid, what)
	if !ok {
		t.Fatalf("the job of pid %d, last seen: %+v", pid, last)
	}
	return last
}

// value waits until metric name with kvs has one point of value want.
func (h *harness) value(t *testing.T, name string, want float64, kvs ...attribute.KeyValue) testutil.Point {
	t.Helper()
	var got testutil.Points
	ok := assert.Eventually(t, func() bool {
		got = testutil.Collect(t, h.reader).Find(name, kvs...)
		return len(got) == 1 && got[0].Value == want
	}, 30*time.Second, 10*time.Millisecond, "%s%v = %v", name, kvs, want)
	if !ok {
		t.Fatalf("%s%v: %+v", name, kvs, got)
	}
	return got[0]
}
