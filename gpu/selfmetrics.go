package gpu

import (
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope/semconv"
)

type readErrorKey struct {
	device string
	read   readID
	ret    nvml.Return
}

type readErrorCount struct {
	n    int64
	opts opts
}

// readErrors counts failed reads by device, read and NVML return. Its
// size is bounded by devices × reads × return codes.
type readErrors struct {
	mu     sync.Mutex
	counts map[readErrorKey]*readErrorCount
}

func (e *readErrors) add(device string, r readID, ret nvml.Return) {
	k := readErrorKey{device, r, ret}
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.counts[k]
	if c == nil {
		if e.counts == nil {
			e.counts = map[readErrorKey]*readErrorCount{}
		}
		kvs := []attribute.KeyValue{
			semconv.XpuscopeRead.String(reads[r].name),
			semconv.ErrorType.String(returnName(ret)),
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
