package occupancy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/semconv"
)

func TestNamesComeFromSemconv(t *testing.T) {
	for c, want := range map[Completion]string{
		CompletionEvent: semconv.KernelCompletionEvent,
		CompletionSync:  semconv.KernelCompletionSyncFallback,
		CompletionExit:  semconv.KernelCompletionExit,
	} {
		assert.Equal(t, want, c.String(), "%d", c)
	}
	for r, want := range map[DropReason]string{
		DropPendingCap: semconv.DropReasonPendingCap,
		DropStreamCap:  semconv.DropReasonStreamCap,
		DropProcessCap: semconv.DropReasonProcessCap,
		DropEventCap:   semconv.DropReasonEventCap,
	} {
		assert.Equal(t, want, r.String(), "%d", r)
	}
	for s, want := range map[CapacitySource]string{
		CapacityDefault:    semconv.CapacitySourceDefault,
		CapacityConfigured: semconv.CapacitySourceConfigured,
		CapacityNVML:       semconv.CapacitySourceNVML,
		CapacityKFD:        semconv.CapacitySourceKFD,
	} {
		assert.Equal(t, want, s.String(), "%d", s)
	}
}

// Stream handles: 0 and cudaStreamLegacy are one stream per device;
// per-thread default streams are one per thread; a created stream is
// found whatever device the syncing thread has current.
func TestStreamKeys(t *testing.T) {
	var got []uint64
	m := New(WithKernelHandler(func(k *Kernel) { got = append(got, k.ID) }))
	g, b := [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}
	m.Launch(0, 1, 0, 0, g, b, 1)
	m.Launch(1, 1, 1, 0, g, b, 2) // the legacy stream of device 1
	m.Launch(2, 1, 0, PerThreadStream(10), g, b, 3)
	m.Launch(3, 1, 0, PerThreadStream(11), g, b, 4)
	m.Launch(4, 1, 0, s1, g, b, 5)
	m.StreamSync(5, 6, 1, 0, 1) // cudaStreamLegacy: stream 0 of device 0
	m.StreamSync(7, 8, 1, 0, PerThreadStream(11))
	m.StreamSync(9, 10, 1, 3, s1) // current device 3: still s1
	require.Equal(t, []uint64{1, 4, 5}, got, "completed")
	s := m.Size()
	require.Equal(t, 5, s.Streams, "size %+v: streams", s)
	require.Equal(t, 2, s.Pending, "size %+v: pending", s)
}

func TestDefaultsAndIgnoredInput(t *testing.T) {
	n := 0
	m := New(WithKernelHandler(func(*Kernel) { n++ }), WithCapacity(func(uint32, int32) (Capacity, CapacitySource) {
		return Capacity{}, CapacityNVML // invalid: the default replaces it
	}))
	require.Empty(t, m.Report(0, nil), "report of an empty model")
	m.Launch(10, 1, 0, 0, [3]uint32{0, 1, 1}, [3]uint32{32, 1, 1}, 1) // empty grid: fails without running
	m.StreamSync(20, 30, 2, 0, 0)                                     // unknown process
	m.EventComplete(30, 1, 0xe)                                       // unknown event
	m.Launch(40, 1, 0, 0, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 2)
	m.DeviceSync(50, 60, 1, 0)
	us := m.Report(100, nil)
	require.Equal(t, 1, n, "kernels")
	require.Len(t, us, 1, "usage")
	require.Equal(t, DefaultCapacity, us[0].Capacity, "usage %+v", us)
	require.Equal(t, CapacityDefault, us[0].CapacitySource, "usage %+v", us)
	require.Equal(t, int64(100), us[0].Interval, "usage %+v", us)
	require.Equal(t, 32*20/1e9, us[0].ThreadSeconds, "thread-seconds, want 32 threads × 20 ns")
	// Sizes saturate.
	require.Equal(t, int64(1<<63-1), size3([3]uint32{1 << 31, 1 << 31, 1 << 31}), "sizes do not saturate")
	require.Equal(t, int64(1<<63-1), mulSat(1<<62, 4), "sizes do not saturate")
	var k Kernel
	k.Start, k.End = 5, 2005
	require.Equal(t, int64(2), k.Duration().Microseconds(), "%v", k.Duration())
	require.Zero(t, m.Dropped(NumDropReasons), "an unknown reason counts")
}
