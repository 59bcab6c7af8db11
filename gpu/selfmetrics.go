package gpu

import (
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope/semconv"
)

type readErrorKey struct {
	device, read, errType string
}

type readErrorCount struct {
	n    int64
	opts opts
}

// readErrors counts failed reads by device, read and error: an NVML
// return, an AMD SMI or ROCm SMI status or an errno name. Its size is bounded by
// devices × reads × error names.
type readErrors struct {
	mu     sync.Mutex
	counts map[readErrorKey]*readErrorCount
}

// add counts a failed NVML read.
func (e *readErrors) add(device string, r readID, ret nvml.Return) {
	e.addNamed(device, reads[r].name, returnName(ret))
}

// addNamed counts a failed read of any backend; device is its hw.id.
func (e *readErrors) addNamed(device, read, errType string) {
	k := readErrorKey{device, read, errType}
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.counts[k]
	if c == nil {
		if e.counts == nil {
			e.counts = map[readErrorKey]*readErrorCount{}
		}
		kvs := []attribute.KeyValue{
			semconv.XpuscopeRead.String(read),
			semconv.ErrorType.String(errType),
		}
		if device != "" { // "" for errors of no one device (the XID event set)
			kvs = append(kvs, semconv.HWID.String(device))
		}
		c = &readErrorCount{opts: newOpts(kvs...)}
		e.counts[k] = c
	}
	c.n++
}

func (e *readErrors) observe(o metric.Observer, inst metric.Int64Observable) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range e.counts {
		o.ObserveInt64(inst, c.n, c.opts...)
	}
}
