package gpu

import (
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope/semconv"
)

const (
	// xidWait bounds one nvmlEventSetWait, and so how long Close waits
	// for the watcher.
	xidWait = 200 * time.Millisecond
	// maxXIDCodes caps the distinct XID codes kept per device; later
	// codes count under semconv.Other.
	maxXIDCodes = 64
)

// xidCounts counts the XID errors of one GPU by code.
type xidCounts struct {
	mu sync.Mutex
	// attrs are those of the pod holding the device, if one does, then
	// the device's.
	attrs []attribute.KeyValue
	codes map[string]*xidCount
}

type xidCount struct {
	n    int64
	opts opts
}

func (x *xidCounts) add(code uint64) {
	key := strconv.FormatUint(code, 10)
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.codes == nil {
		x.codes = map[string]*xidCount{}
	}
	c := x.codes[key]
	if c == nil && len(x.codes) >= maxXIDCodes {
		key = semconv.Other
		c = x.codes[key]
	}
	if c == nil {
		c = &xidCount{opts: x.opts(key)}
		x.codes[key] = c
	}
	c.n++
}

// opts are the attributes of code's series. x.mu is held.
func (x *xidCounts) opts(code string) opts {
	return newOpts(append(slices.Clip(x.attrs), semconv.ErrorType.String(semconv.ErrorXID), semconv.GPUXIDCode.String(code))...)
}

// relabel gives the counts the attributes attrs: the pod holding the
// device changed. The counts go on under the new pod's series.
func (x *xidCounts) relabel(attrs []attribute.KeyValue) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.attrs = attrs
	for code, c := range x.codes {
		c.opts = x.opts(code)
	}
}

func (x *xidCounts) observe(o metric.Observer, inst metric.Int64Observable) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, c := range x.codes {
		o.ObserveInt64(inst, c.n, c.opts...)
	}
}

// start registers every GPU for XID events on one event set, kept in
// b.eventSet to free on close, and starts the goroutine that waits on it
// until stop is closed. It keeps no set when no device could be
// registered.
func (b *nvmlBackend) start(stop <-chan struct{}, wg *sync.WaitGroup) {
	if !b.syms.available[readXID] {
		return
	}
	set, ret := b.lib.EventSetCreate()
	if ret != nvml.SUCCESS {
		b.s.errors.add("", readXID, ret)
		return
	}
	registered := 0
	for _, d := range b.devices {
		ret := d.h.RegisterEvents(nvml.EventTypeXidCriticalError, set)
		if b.ok(d, readXID, ret) {
			registered++
		}
	}
	if registered == 0 {
		set.Free()
		return
	}
	b.eventSet = set
	wg.Add(1)
	go b.watchXID(set, stop, wg)
}

// watchXID counts the XID errors that set reports, by device, until stop
// is closed; then it leaves wg.
func (b *nvmlBackend) watchXID(set nvml.EventSet, stop <-chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	byUUID := make(map[string]*device, len(b.devices))
	for _, d := range b.devices {
		byUUID[d.UUID] = d
	}
	for {
		select {
		case <-stop:
			return
		default:
		}
		data, ret := set.Wait(uint32(xidWait / time.Millisecond))
		switch ret {
		case nvml.SUCCESS:
			if data.EventType&nvml.EventTypeXidCriticalError == 0 || data.Device == nil {
				continue
			}
			uuid, ret := data.Device.GetUUID()
			if d := byUUID[uuid]; ret == nvml.SUCCESS && d != nil {
				d.xid.add(data.EventData)
			} else {
				b.s.errors.add(uuid, readXID, nvml.ERROR_NOT_FOUND)
			}
		case nvml.ERROR_TIMEOUT:
		default:
			// A broken event set must not spin: count, then back off.
			b.s.errors.add("", readXID, ret)
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
			}
		}
	}
}
