package gputracebpf

import (
	"encoding/binary"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/bpfsource"
	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/internal/testutil/cudaprog"
)

// laneRun is what a lane reader read of one process's launches.
type laneRun struct {
	mu     sync.Mutex
	events []Event
}

func (r *laneRun) decode(pid uint32) func([]byte) error {
	return func(b []byte) error {
		var e Event
		if err := Decode(b, &e); err != nil {
			return err
		}
		if e.PID == pid && e.Kind == KindLaunch {
			e.Name = nil
			r.mu.Lock()
			r.events = append(r.events, e)
			r.mu.Unlock()
		}
		return nil
	}
}

func (r *laneRun) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// waitLen waits (10 s at most) for n records, and returns how many came.
func (r *laneRun) waitLen(n int) int {
	for deadline := time.Now().Add(10 * time.Second); r.len() < n && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	return r.len()
}

// unrecorded is the calls of api by pid that BPF counted as no record.
func unrecorded(t *testing.T, o *Objects, pid uint32, api API) uint64 {
	t.Helper()
	var n uint64
	err := o.UnrecordedCalls().Lookup(CallKey{Pid: pid, Api: uint32(api)}, &n)
	if err != nil {
		require.ErrorIs(t, err, ebpf.ErrKeyNotExist)
	}
	return n
}

// stagesCopied says whether a full stage of some lane has been copied
// into its lane (lanes.bpf.h's flush_end, at byte 24, is not 0): the
// launches went through the stages, not around them.
func stagesCopied(t *testing.T, o *Objects) bool {
	t.Helper()
	value := make([]byte, o.LaneStages().ValueSize())
	for i := range o.LaneStages().MaxEntries() {
		require.NoError(t, o.LaneStages().Lookup(i, &value))
		if binary.LittleEndian.Uint64(value[24:]) != 0 {
			return true
		}
	}
	return false
}

// TestLanesKernel: the real launch program on the real libcudart, read
// through the lanes by the lane reader, with the program's threads on
// every CPU.
//
//   - per CPU: every launch of two threads arrives once, none counted
//     dropped, in timestamp order across the lanes and each thread's in
//     the order it made them, through the lanes' stages;
//   - one lane for both CPUs (as CPUs past bpfsource.MaxLanes share
//     lanes): the same, the probes of two CPUs racing for one head;
//   - full lanes (a page each, no wakeup, the reader started only once
//     the program has exited): every launch is a record read or a call
//     BPF counted unrecorded for the process, and the drop counter has
//     counted it, which is what xpuscope.cuda.events.dropped reports.
func TestLanesKernel(t *testing.T) {
	testutil.Native(t, "the kernel's BPF and uprobes")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "uprobes need root")
	}
	cudart, err := link.OpenExecutable(cudaprog.RealCudart(t))
	require.NoError(t, err)
	exe := cudaprog.Build(t, "runtime")
	api := API(gputraceApiAPI_cudaLaunchKernel)

	// run loads the object with o, runs loop n on threads threads with
	// the launch program attached for that process alone, and reads the
	// lanes from before the run, or from after it if late.
	run := func(t *testing.T, o LoadOptions, n, threads int, late bool) (*Objects, *laneRun, *cudaprog.Proc, []string) {
		objs, err := Load(o)
		require.NoError(t, err)
		t.Cleanup(func() { objs.Close() })
		p := cudaprog.Start(t, exe, "loop", strconv.Itoa(n), strconv.Itoa(threads))
		l, err := cudart.Uprobe("cudaLaunchKernel", objs.Program(gputraceProgRuntimeLaunchKernel),
			&link.UprobeOptions{PID: p.Pid})
		require.NoError(t, err)
		rec := &laneRun{}
		cfg := bpfsource.RingConfig{Poll: 10 * time.Millisecond, Decode: rec.decode(uint32(p.Pid))}
		start := func() {
			ring, err := objs.NewRing(cfg)
			require.NoError(t, err)
			t.Cleanup(func() { ring.Close() })
		}
		if !late {
			start()
		}
		p.Go()
		lines := p.Wait()
		require.NoError(t, l.Close())
		if late {
			start()
		}
		return objs, rec, p, lines
	}

	// checkOrder checks that the records are in timestamp order, each
	// thread's in the order it made them, and that threads threads made
	// n each.
	checkOrder := func(t *testing.T, rec *laneRun, threads, n int) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		last := map[uint32]uint64{}
		perThread := map[uint32]int{}
		for i, e := range rec.events {
			if i > 0 {
				require.GreaterOrEqual(t, e.TS, rec.events[i-1].TS, "record %d: timestamp order across the lanes", i)
			}
			require.Greater(t, e.TS, last[e.TID], "record %d: thread %d's records in the order it made them", i, e.TID)
			last[e.TID] = e.TS
			perThread[e.TID]++
		}
		require.Len(t, perThread, threads, "threads that launched: %v", perThread)
		for tid, k := range perThread {
			assert.Equal(t, n, k, "thread %d's launches", tid)
		}
	}

	cpus, err := ebpf.PossibleCPU()
	require.NoError(t, err)
	lanes := 1 // bpfsource's count: a power of two, one a CPU, at most MaxLanes
	for lanes < min(cpus, bpfsource.MaxLanes) {
		lanes *= 2
	}
	// Lanes of 2 MiB (26,000 records): two threads' launches fit in one,
	// whether the reader keeps up or not.
	const n = 10_000
	big := uint32(lanes) << 21
	t.Run("PerCPU", func(t *testing.T) {
		objs, rec, p, _ := run(t, LoadOptions{RingBytes: big}, n, 2, false)
		got := rec.waitLen(2 * n)
		assert.Equal(t, 2*n, got, "records read (%d counted unrecorded)", unrecorded(t, objs, uint32(p.Pid), api))
		assert.Zero(t, unrecorded(t, objs, uint32(p.Pid), api), "launches counted unrecorded")
		checkOrder(t, rec, 2, n)
		assert.True(t, stagesCopied(t, objs), "no full stage copied into a lane")
	})
	t.Run("OneLaneForTwoCPUs", func(t *testing.T) {
		oneLane := func(spec *ebpf.CollectionSpec) {
			require.NoError(t, spec.Variables["lane_mask"].Set(uint32(0)))
		}
		objs, rec, p, _ := run(t, LoadOptions{RingBytes: big, Edit: oneLane}, n, 2, false)
		got := rec.waitLen(2 * n)
		assert.Equal(t, 2*n, got, "records read (%d counted unrecorded)", unrecorded(t, objs, uint32(p.Pid), api))
		assert.Zero(t, unrecorded(t, objs, uint32(p.Pid), api), "launches counted unrecorded")
		checkOrder(t, rec, 2, n)
	})
	t.Run("FullLanes", func(t *testing.T) {
		const calls = 5000
		objs, rec, p, _ := run(t, LoadOptions{RingBytes: uint32(4096 * lanes), WakeupBytes: 1 << 30}, calls, 1, true)
		// Once the records that fitted are read, none come.
		var got int
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
			got = rec.len()
			if uint64(got)+unrecorded(t, objs, uint32(p.Pid), api) == calls {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		lost := unrecorded(t, objs, uint32(p.Pid), api)
		require.Equal(t, uint64(calls), uint64(got)+lost, "records read + counted unrecorded")
		require.Positive(t, lost, "a page of lanes holds fewer than %d records", calls)
		require.Positive(t, got)
		c, err := objs.Counters()
		require.NoError(t, err)
		require.GreaterOrEqual(t, c[CounterDrops], lost, "the drop counter (xpuscope.cuda.events.dropped)")
	})
}
