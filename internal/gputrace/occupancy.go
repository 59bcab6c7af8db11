package gputrace

import (
	"context"

	"go.opentelemetry.io/otel/attribute"

	"github.com/xpuscope/xpuscope/internal/gputracebpf"
	"github.com/xpuscope/xpuscope/internal/meterx"
	"github.com/xpuscope/xpuscope/occupancy"
	"github.com/xpuscope/xpuscope/semconv"
)

// The occupancy model is fed from the events here: launches, the syncs
// that bound them, event record and completion, and stream waits. Its
// outputs are modelled, not measured, and carry
// gpu.measurement.source=ebpf_model.
//
// A synchronisation that returns an error still ends the kernels it
// covered: CUDA errors at a sync are sticky, the stream's work is over or
// abandoned. A synchronous copy between host and device is an edge for
// its stream (the legacy default stream, or the thread's own for _ptds),
// from the record its return probe makes.

// occKey is a kernel-duration series: a group's on a device, by
// completion.
type occKey struct {
	group      uint32
	device     int32
	completion occupancy.Completion
}

type devicePID struct {
	pid    uint32
	device int32
}

// occSeries is a (process, device)'s modelled series.
type occSeries struct {
	attrs, capacity meterx.Attrs
	threadSeconds   float64
	threadRatio     float64
	smActive        float64
	threads         int64
	reported        bool   // ratios are set
	reportedAt      uint64 // the report that set them: other's add up its processes'
}

// occupancyState is the aggregator's part for the model.
type occupancyState struct {
	model    *occupancy.Model
	duration map[occKey]*histSeries[float64]
	// The series of the last kernel recorded: kernels complete in runs.
	lastDuration *histSeries[float64]
	lastKey      occKey
	series       map[devicePID]*occSeries
	usage        []occupancy.Usage
	dropped      [occupancy.NumDropReasons]meterx.Attrs
	ctx          context.Context
}

func (a *aggregator) initOccupancy(capacity occupancy.Capacity, src occupancy.CapacitySource) {
	o := &a.occ
	o.duration = map[occKey]*histSeries[float64]{}
	o.series = map[devicePID]*occSeries{}
	o.ctx = context.Background()
	o.model = occupancy.New(
		occupancy.WithKernelHandler(a.kernelDone),
		occupancy.WithCapacity(func(uint32, int32) (occupancy.Capacity, occupancy.CapacitySource) { return capacity, src }),
	)
	for r := range occupancy.NumDropReasons {
		o.dropped[r] = meterx.NewAttrs(semconv.XpuscopeDropReason.String(r.String()))
	}
}

func (p *proc) modelled(device int32, kvs ...attribute.KeyValue) meterx.Attrs {
	return p.with(append([]attribute.KeyValue{
		semconv.CUDADevice.Int(int(device)),
		semconv.GPUMeasurementSource.String(semconv.MeasurementSourceEBPFModel),
	}, kvs...)...)
}

// kernelDone records a completed kernel's estimated duration.
func (a *aggregator) kernelDone(k *occupancy.Kernel) {
	p := a.owner(k.PID)
	if p == nil {
		return
	}
	key := occKey{p.group.id, k.Device, k.Completion}
	h := a.occ.lastDuration
	if h == nil || a.occ.lastKey != key {
		if h = a.occ.duration[key]; h == nil {
			h = newHistSeries[float64](p.group.with(semconv.CUDADevice.Int(int(k.Device)),
				semconv.GPUMeasurementSource.String(semconv.MeasurementSourceEBPFModel),
				semconv.GPUKernelCompletion.String(k.Completion.String())),
				kernelDurationBuckets, a.spans.wall(uint64(max(0, k.End))))
			a.occ.duration[key] = h
		}
		a.occ.lastDuration, a.occ.lastKey = h, key
	}
	if d := float64(k.Duration()) / 1e9; a.own {
		h.own.record(d, kernelDurationBuckets)
	} else {
		a.inst.kernelDuration.Record(a.occ.ctx, d, h.attrs.Record...)
	}
}

// stream is the stream a call names; the legacy default stream of a
// per-thread-default-stream (_ptsz) call is the thread's own.
func stream(e *gputracebpf.Event, s uint64) uint64 {
	if s == 0 && e.API.PerThread() {
		return occupancy.PerThreadStream(e.TID)
	}
	return s
}

// model feeds one event to the occupancy model.
func (a *aggregator) model(e *gputracebpf.Event) {
	m, ts := a.occ.model, int64(e.TS)
	switch e.Kind {
	case gputracebpf.KindLaunch:
		m.Launch(ts, e.PID, e.Device, stream(e, e.Stream()), e.Grid(), e.Block(), e.Func())
	case gputracebpf.KindSync:
		begin := ts - int64(min(e.TS, e.Duration()))
		switch e.API.SyncScope() {
		case gputracebpf.SyncStream:
			m.StreamSync(begin, ts, e.PID, e.Device, stream(e, e.Waited()))
		case gputracebpf.SyncDevice:
			m.DeviceSync(begin, ts, e.PID, e.Device)
		case gputracebpf.SyncEvent:
			m.EventComplete(ts, e.PID, e.Waited())
		}
	case gputracebpf.KindCopyDone:
		// A copy between host and device returns when it, and the work
		// before it on its stream, is done. Device-to-device and
		// direction-less (default) copies need not wait.
		if k := e.CopyKind(); k == gputracebpf.MemcpyHostToDevice || k == gputracebpf.MemcpyDeviceToHost {
			m.MemcpySync(ts-int64(min(e.TS, e.Duration())), ts, e.PID, e.Device, stream(e, e.Stream()))
		}
	case gputracebpf.KindEventQuery:
		if e.Ret == 0 {
			m.EventComplete(ts, e.PID, e.EventHandle())
		}
	case gputracebpf.KindEventRecord:
		m.EventRecord(ts, e.PID, e.Device, stream(e, e.Stream()), e.EventHandle())
	case gputracebpf.KindStreamWait:
		m.StreamWaitEvent(ts, e.PID, e.Device, stream(e, e.Stream()), e.EventHandle())
	}
}

// report takes the model's report for the interval ending at ktime now.
func (a *aggregator) report(now uint64) {
	o := &a.occ
	o.usage = o.model.Report(int64(now), o.usage[:0])
	for _, u := range o.usage {
		p := a.owner(u.PID)
		if p == nil {
			continue
		}
		k := devicePID{p.pid, u.Device}
		s := o.series[k]
		if s == nil {
			s = &occSeries{
				attrs:    p.modelled(u.Device),
				capacity: p.with(semconv.CUDADevice.Int(int(u.Device)), semconv.GPUCapacitySource.String(u.CapacitySource.String())),
			}
			o.series[k] = s
		}
		s.threadSeconds += u.ThreadSeconds
		if s.reportedAt != now {
			s.threadRatio, s.smActive = 0, 0
		}
		s.threadRatio += u.ThreadRatio
		s.smActive += u.SMActiveRatio
		s.reported, s.reportedAt = true, now
		s.threads = int64(u.Capacity.SMs) * int64(u.Capacity.ThreadsPerSM)
	}
}

func (k occKey) groupID() uint32  { return k.group }
func (k devicePID) owner() uint32 { return k.pid }

// forgetOccupancy drops the modelled series of pids.
func (a *aggregator) forgetOccupancy(pids map[uint32]bool) {
	a.occ.lastDuration = nil
	forgetPIDs(a.occ.series, pids)
}
