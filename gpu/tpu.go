package gpu

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/tpu"
	"github.com/xpuscope/xpuscope/internal/tpu/runtimepb"
	"github.com/xpuscope/xpuscope/podjoin"
	"github.com/xpuscope/xpuscope/semconv"
)

// The TPU backend: Google TPUs (Cloud TPU VMs, GKE TPU nodes). The chips
// come from sysfs (PCI vendor 0x1ae0, package internal/tpu), each series
// with hw.type=tpu and gpu.measurement.source=libtpu. Their figures come
// from the TPU runtime's metrics service, libtpu's
// tpu.monitoring.runtime.RuntimeMetricService over gRPC with local
// credentials, which exists only while a workload runs: a port nothing
// listens on is the normal state of an idle node, counted
// (xpuscope.gpu.scrape.misses{reason=no_listener}) and never logged.
//
// The ports are those the processes holding the TPUs (their /proc/<pid>/fd
// links to /dev/accel* or /dev/vfio/*) publish in TPU_RUNTIME_METRICS_PORTS,
// read through podjoin's environment allowlist, or 8431; WithTPUMetricsPorts
// sets them instead. The runtime numbers devices as sysfs orders them
// (package internal/tpu). A device's series carry the pod of the process
// holding it, when one pod does.

// Defaults of the TPU backend.
const (
	// DefaultTPUMetricsPort is where libtpu serves its metrics unless the
	// workload's TPU_RUNTIME_METRICS_PORTS says otherwise.
	DefaultTPUMetricsPort = tpu.DefaultPort
	// DefaultTPUMetricsHost is where the service is reached: the node.
	DefaultTPUMetricsHost = "127.0.0.1"
	// DefaultTPUTimeout bounds one scrape of a service.
	DefaultTPUTimeout = 2 * time.Second
)

// tpuOwnersEvery is how often the processes holding the TPUs (and the
// ports they publish) are looked for: every process's descriptors are
// read.
const tpuOwnersEvery = 30 * time.Second

type tpuBackend struct {
	s         *Source
	devs      []*tpuDevice // by ordinal
	endpoints map[int]*tpu.Endpoint
	ports     []int // read at the last poll
	state     map[int]string
	scanned   time.Time
	portsSeen []int // published by the holders at the last scan
	noHolder  bool  // the last scan found a holder without the variable, or none
}

// tpuDevice is a TPU device and who holds it.
type tpuDevice struct {
	t     tpu.Device
	d     *device
	owner []attribute.KeyValue // the pod of the processes holding it, when one pod does
	pids  []int
}

func openTPU(s *Source) (backend, error) {
	found, err := tpu.Discover(s.cfg.sysfs)
	if err != nil {
		return nil, xpuscope.Unavailablef("gpu: no TPU: sysfs at %s: %v", s.cfg.sysfsRoot, err)
	}
	if len(found) == 0 {
		return nil, xpuscope.Unavailablef("gpu: no TPU: %s in %s/%s", tpu.ErrNoTPU, s.cfg.sysfsRoot, tpu.PCIDevicesDir)
	}
	b := &tpuBackend{s: s, endpoints: map[int]*tpu.Endpoint{}, state: map[int]string{}}
	for _, t := range found {
		info := Device{Index: t.Ordinal, UUID: t.PCIAddress, Name: t.Name(), PCIAddress: t.PCIAddress}
		d := newAccelDevice(info, semconv.VendorGoogle, semconv.HWTypeTPU, "", t.PCIAddress, semconv.MeasurementSourceLibTPU)
		b.devs = append(b.devs, &tpuDevice{t: t, d: d})
		s.devices = append(s.devices, d)
	}
	return b, nil
}

func (b *tpuBackend) start(<-chan struct{}, *sync.WaitGroup) {}

// scan finds the processes holding the TPUs, the ports they publish and
// the pod of each device.
func (b *tpuBackend) scan() {
	files := make([]string, 0, len(b.devs))
	for _, d := range b.devs {
		files = append(files, d.t.File)
	}
	owners, err := tpu.Owners(b.s.cfg.procRoot, files)
	if err != nil {
		owners = nil
	}
	ports := map[int]bool{}
	pids := map[int]bool{}
	b.noHolder = len(owners) == 0
	for _, d := range b.devs {
		d.pids = owners[d.t.File]
		var owner []attribute.KeyValue
		several := false
		for i, pid := range d.pids {
			if !pids[pid] {
				pids[pid] = true
				env, err := podjoin.ReadEnviron(b.s.cfg.procRoot, pid)
				ps := tpu.ParsePorts(env.TPURuntimeMetricsPorts)
				if err != nil || len(ps) == 0 {
					b.noHolder = true
				}
				for _, p := range ps {
					ports[p] = true
				}
			}
			if r := b.s.cfg.resolver; r != nil && !several {
				kvs := podOnly(processAttributes(r, pid))
				if i == 0 {
					owner = kvs
				} else if !slices.EqualFunc(owner, kvs, sameKeyValue) {
					owner, several = nil, true // held by several pods
				}
			}
		}
		d.owner = owner
	}
	b.portsSeen = b.portsSeen[:0]
	for p := range ports {
		b.portsSeen = append(b.portsSeen, p)
	}
	slices.Sort(b.portsSeen)
}

// processAttributes asks r for the attributes of pid's container and pod.
func processAttributes(r Resolver, pid int) []attribute.KeyValue {
	kvs, _ := r.ProcessAttributes(pid)
	return kvs
}

// podOnly keeps the pod attributes of a process's, those a device's
// series may carry.
func podOnly(kvs []attribute.KeyValue) []attribute.KeyValue {
	var out []attribute.KeyValue
	for _, kv := range kvs {
		switch kv.Key {
		case semconv.K8sNamespaceName, semconv.K8sPodName, semconv.K8sPodUID, semconv.K8sContainerName:
			out = append(out, kv)
		}
	}
	return out
}

// readPorts are the ports to read this poll.
func (b *tpuBackend) readPorts(now time.Time) []int {
	if b.s.cfg.tpuPorts != nil {
		return b.s.cfg.tpuPorts
	}
	if b.scanned.IsZero() || now.Sub(b.scanned) >= tpuOwnersEvery {
		b.scan()
		b.scanned = now
	}
	ports := slices.Clone(b.portsSeen)
	if b.noHolder && !slices.Contains(ports, DefaultTPUMetricsPort) {
		ports = append(ports, DefaultTPUMetricsPort)
	}
	return ports
}

// poll reads every TPU's figures from the runtime services.
func (b *tpuBackend) poll(sn *snapshot) {
	now := time.Now()
	b.ports = b.readPorts(now)
	for port, ep := range b.endpoints { // of a workload gone
		if !slices.Contains(b.ports, port) {
			_ = ep.Close()
			delete(b.endpoints, port)
			delete(b.state, port)
		}
	}
	first := len(sn.samples)
	for _, d := range b.devs {
		if !slices.EqualFunc(d.owner, d.d.series.owner, sameKeyValue) {
			d.d.series = d.d.newSeries(d.owner)
		}
		sn.add(d.d)
	}
	samples := sn.samples[first : first+len(b.devs)]
	for _, port := range b.ports {
		b.state[port] = b.scrape(port, samples)
	}
}

// scrape reads one service into the devices' samples and says how it
// went.
func (b *tpuBackend) scrape(port int, samples []sample) string {
	ep := b.endpoints[port]
	if ep == nil {
		var err error
		if ep, err = tpu.NewEndpoint(b.s.cfg.tpuHost, port); err != nil {
			b.s.scrape.misses.add("", BackendTPU, "", "Internal", 1)
			return err.Error()
		}
		b.endpoints[port] = ep
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.s.cfg.tpuTimeout)
	defer cancel()
	read := 0
	err := ep.Scrape(ctx, tpu.Metrics, func(name string, r *runtimepb.MetricResponse) {
		read++
		for _, m := range r.GetMetric().GetMetrics() {
			b.point(name, m, samples)
		}
	}, func(name string, err error) {
		b.s.scrape.blanks.add("", BackendTPU, name, tpu.Reason(err), 1)
	})
	if err != nil {
		reason := tpu.Reason(err)
		b.s.scrape.misses.add("", BackendTPU, "", reason, 1)
		if reason == semconv.GPUReasonNoListener {
			return "no listener (no workload runs)"
		}
		return reason
	}
	return fmt.Sprintf("%d of %d metrics read", read, len(tpu.Metrics))
}

// point puts one data point of metric name into its device's sample.
func (b *tpuBackend) point(name string, m *runtimepb.Metric, samples []sample) {
	ord, ok := tpu.Ordinal(m)
	if !ok || ord >= len(samples) {
		b.s.scrape.blanks.add("", BackendTPU, name, semconv.GPUReasonNoDevice, 1)
		return
	}
	sm := &samples[ord]
	reason := ""
	if name == tpu.MetricHLOExecTiming {
		reason = hloTiming(sm, m.GetDistribution())
	} else if v, ok := tpu.Number(m); !ok {
		reason = semconv.GPUReasonType
	} else {
		switch {
		case v < 0:
			reason = semconv.GPUReasonInvalid
		case name == tpu.MetricMemoryUsage:
			sm.setAccel(avTPUMemUsage, v)
		case name == tpu.MetricMemoryTotal:
			sm.setAccel(avTPUMemLimit, v)
		case name == tpu.MetricDutyCycle && v <= 100:
			sm.setAccel(avTPUDuty, v*percent)
		case name == tpu.MetricDutyCycle:
			reason = semconv.GPUReasonInvalid
		case name == tpu.MetricHLOQueueSize:
			sm.setAccel(avTPUQueue, v)
		}
	}
	if reason != "" {
		b.s.scrape.blanks.add(sm.d.UUID, BackendTPU, name, reason, 1)
	}
}

// hloQuantiles are the percentiles of the HLO execution time reported.
var hloQuantiles = [...]struct {
	q  float64
	av accelValue
}{{0.5, avHLOP50}, {0.9, avHLOP90}, {0.95, avHLOP95}, {0.999, avHLOP999}}

// hloTiming reports the mean and percentiles of the HLO execution-time
// distribution, µs → s; nothing while it has no sample.
func hloTiming(sm *sample, d *runtimepb.Distribution) string {
	if d == nil {
		return semconv.GPUReasonType
	}
	if d.GetCount() <= 0 {
		return "" // no execution yet: nothing to report, nothing wrong
	}
	if mean := d.GetMean(); mean >= 0 && mean <= 1e18 {
		sm.setAccel(avHLOMean, mean*micro)
	}
	for _, h := range hloQuantiles {
		p, ok := tpu.Percentile(d, h.q)
		if !ok {
			return semconv.GPUReasonInvalid
		}
		sm.setAccel(h.av, p*micro)
	}
	return ""
}

// describe says which TPUs there are, which ports were read and how.
func (b *tpuBackend) describe() (int, string) {
	var out strings.Builder
	counts := map[string]int{}
	var names []string
	for _, d := range b.devs {
		if counts[d.t.Name()] == 0 {
			names = append(names, d.t.Name())
		}
		counts[d.t.Name()]++
	}
	for i, n := range names {
		if i > 0 {
			out.WriteString(", ")
		}
		fmt.Fprintf(&out, "%d %s", counts[n], n)
	}
	held := 0
	for _, d := range b.devs {
		if len(d.pids) > 0 {
			held++
		}
	}
	if b.s.cfg.tpuPorts == nil {
		fmt.Fprintf(&out, "; %d held by a process", held)
	}
	if len(b.ports) == 0 {
		out.WriteString("; no runtime metrics port to read")
	}
	for _, p := range b.ports {
		fmt.Fprintf(&out, "; runtime metrics at %s:%d: %s", b.s.cfg.tpuHost, p, b.state[p])
	}
	return len(b.devs), out.String()
}

func (b *tpuBackend) close() error {
	var errs []error
	for _, ep := range b.endpoints {
		errs = append(errs, ep.Close())
	}
	return errors.Join(errs...)
}
