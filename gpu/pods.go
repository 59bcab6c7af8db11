package gpu

import (
	"slices"

	"go.opentelemetry.io/otel/attribute"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/semconv"
)

// Resolver places GPU processes and devices in their containers and pods,
// for WithResolver. *podjoin.Resolver is one.
type Resolver interface {
	// ProcessAttributes gives the attributes of a process's container and
	// pod (the span context is not used here); the Source asks once per
	// process and device, when the process first appears on the device.
	// Forget says the Source dropped the process's series: it left the
	// device.
	xpuscope.ProcessResolver
	// DeviceAttributes returns the attributes of the pod holding device
	// id (an NVIDIA GPU or MIG UUID, an AMD PCI address), and false when
	// no pod, or more than one, holds it. The Source asks once per device
	// and poll.
	DeviceAttributes(id string) ([]attribute.KeyValue, bool)
}

// sample adds a sample of d to sn, with d's attribute sets brought up to
// date with the pod holding it: they are rebuilt only when that changed.
func (s *Source) sample(sn *snapshot, d *device) *sample {
	if r := s.cfg.resolver; r != nil {
		owner, ok := r.DeviceAttributes(d.podID)
		if !ok {
			owner = nil
		}
		if !slices.EqualFunc(owner, d.series.owner, sameKeyValue) {
			d.series = d.newSeries(owner)
			d.xid.relabel(append(slices.Clip(owner), d.attrs...))
		}
	}
	return sn.add(d)
}

func sameKeyValue(a, b attribute.KeyValue) bool {
	return a.Key == b.Key && a.Value.Type() == b.Value.Type() && a.Value.Emit() == b.Value.Emit()
}

// process returns the series identity of pid on d, creating it (reading
// the executable name and asking the resolver) the first time pid is seen
// there.
func (s *Source) process(d *device, pid uint32) *process {
	p, ok := d.procs[pid]
	if !ok {
		var kv []attribute.KeyValue
		if r := s.cfg.resolver; r != nil {
			// First, so that the device's and the process's own
			// attributes win over any the resolver repeats.
			kv, _ = r.ProcessAttributes(int(pid))
		}
		kv = append(append(slices.Clip(kv), d.attrs...),
			semconv.ProcessPID.Int(int(pid)),
			semconv.ProcessExecutableName.String(s.procs.Proc(int(pid)).ExecutableName()))
		p = &process{opts: newOpts(kv...)}
		if d.utilSource != "" {
			p.engine = make([]opts, numEngineClasses)
			for c := range numEngineClasses {
				p.engine[c] = newOpts(append(slices.Clip(kv), semconv.GPUEngineClass.String(engineClassNames[c]),
					semconv.GPUMeasurementSource.String(semconv.MeasurementSourceFdinfo))...)
			}
		}
		d.procs[pid] = p
	}
	p.seen = s.cycle
	return p
}

// forget drops the processes and MIG instances of d not seen in this
// cycle, and tells the resolver of the processes.
func (s *Source) forget(d *device) {
	for pid, p := range d.procs {
		if p.seen != s.cycle {
			delete(d.procs, pid)
			if s.cfg.resolver != nil {
				s.cfg.resolver.Forget(int(pid))
			}
		}
	}
	for id, in := range d.instances {
		if in.seen != s.cycle {
			delete(d.instances, id)
		}
	}
}
