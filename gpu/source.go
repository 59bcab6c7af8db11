package gpu

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/procfs"
)

// ScopeName is the instrumentation scope of the Source's meter.
const ScopeName = "github.com/xpuscope/xpuscope/gpu"

// closeTimeout bounds how long Close waits for a poll stuck in the driver.
const closeTimeout = 5 * time.Second

// Source reports GPU device and per-process metrics. Create it with New.
type Source struct {
	cfg      config
	backends []backend // the backends that found GPUs, in New's order
	states   []backendState
	procs    procfs.FS

	devices []*device // physical GPUs of every backend, fixed at New
	missing []opts    // one per (symbol, metric) a library lacks
	errors  readErrors
	scrape  scrapeStats // the runtime backends' misses, blanks and unwatchable fields
	drm     *drmClients // the DRM clients' fdinfo, for the Intel backends; nil until one asks
	// intelRead lists the PCI addresses of the Intel GPUs Level Zero
	// reads: the Intel sysfs backend leaves them to it.
	intelRead map[string]bool
	inst      instruments
	reg       metric.Registration

	pollMu      sync.Mutex // serialises poll
	cycle       uint64
	mu          sync.RWMutex // guards front
	front, back *snapshot

	stop      chan struct{}  // closed by Close: polling and the backends' watches end
	wg        sync.WaitGroup // the poll loop and the backends' watches
	closeOnce sync.Once
}

// backend is one way of reading GPUs: a vendor library or the files a
// driver publishes. Opening one finds its GPUs and appends them to
// Source.devices.
type backend interface {
	// start starts what the backend watches between polls, if anything,
	// in goroutines that join wg and return once stop is closed. The
	// Source calls it once, before the first poll, and waits on wg
	// before close.
	start(stop <-chan struct{}, wg *sync.WaitGroup)
	// poll reads each of the backend's GPUs into sn. The Source calls it
	// from one goroutine at a time.
	poll(sn *snapshot)
	// close releases what opening and start took. Polling, and what
	// start started, have stopped.
	close() error
}

// openers open each backend. An error wrapping xpuscope.ErrUnavailable
// says the backend found no GPU, and why.
var openers = map[Backend]func(*Source) (backend, error){
	BackendNVML:       openNVML,
	BackendDCGM:       openDCGM,
	BackendAMDSMI:     openAMDSMI,
	BackendROCmSMI:    openROCmSMI,
	BackendAMDSysfs:   openAMDSysfs,
	BackendRDC:        openRDC,
	BackendLevelZero:  openLevelZero,
	BackendIntelSysfs: openIntelSysfs,
	BackendTPU:        openTPU,
}

// New finds the GPUs, registers the instruments, reads every device once
// and starts polling.
//
// It tries the backends in order (WithBackends): NVML for NVIDIA GPUs,
// then AMD SMI for AMD GPUs, then, only when AMD SMI found none, ROCm SMI,
// then, only when neither found any, the amdgpu driver's sysfs files; for
// Intel GPUs Level Zero, then the i915 and xe drivers' files for the GPUs
// it does not read. Every backend that finds GPUs is used: a
// node with GPUs of both vendors reports both, and their devices are
// disjoint. A backend that finds none (library missing, driver not loaded,
// access denied, no GPU) is skipped. When none finds a GPU, New returns
// an error wrapping xpuscope.ErrUnavailable that says, for each backend,
// why. Any other error is a fault, and New returns it.
func New(opts ...Option) (*Source, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	s := &Source{
		cfg:   cfg,
		procs: procfs.FS{Root: cfg.procRoot},
		front: &snapshot{},
		back:  &snapshot{},
		stop:  make(chan struct{}),
	}
	if err := s.open(); err != nil {
		return nil, err
	}
	if err := s.start(); err != nil {
		_ = s.closeBackends()
		return nil, err
	}
	return s, nil
}

// open opens the selected backends.
func (s *Source) open() error {
	var unavailable []error
	var amd Backend // the AMD backend that found the AMD GPUs
	for _, kind := range s.cfg.backends {
		if amd != "" && (kind == BackendROCmSMI || kind == BackendAMDSysfs) {
			// fallbacks of the AMD library that found the AMD GPUs
			s.states = append(s.states, backendState{kind: kind, why: fmt.Sprintf("not tried: %s found the AMD GPUs", amd)})
			continue
		}
		before := len(s.devices)
		b, err := openers[kind](s)
		if err != nil {
			if !errors.Is(err, xpuscope.ErrUnavailable) {
				_ = s.closeBackends()
				return err
			}
			unavailable = append(unavailable, err)
			s.states = append(s.states, backendState{kind: kind, why: err.Error()})
			continue
		}
		s.backends = append(s.backends, b)
		s.states = append(s.states, backendState{kind: kind, b: b, devices: len(s.devices) - before})
		if amd == "" && (kind == BackendAMDSMI || kind == BackendROCmSMI) {
			amd = kind
		}
	}
	switch {
	case len(s.backends) > 0:
		return nil
	case len(unavailable) == 1:
		return unavailable[0]
	}
	// "gpu: <NVML's reason>; <ROCm SMI's reason>; …", each said once (both
	// AMD backends give up alike on a node without an amdgpu card).
	var why []string
	for _, err := range unavailable {
		if w := strings.TrimPrefix(err.Error(), "gpu: "); !slices.Contains(why, w) {
			why = append(why, w)
		}
	}
	return xpuscope.Unavailablef("gpu: %s", strings.Join(why, "; "))
}

func (s *Source) start() error {
	meter := s.cfg.meterProvider.Meter(ScopeName, metric.WithInstrumentationVersion(xpuscope.Version))
	if err := s.inst.create(meter); err != nil {
		return fmt.Errorf("gpu: %w", err)
	}
	var err error
	s.reg, err = meter.RegisterCallback(s.observe, s.inst.all()...)
	if err != nil {
		return fmt.Errorf("gpu: register callback: %w", err)
	}
	for _, b := range s.backends {
		b.start(s.stop, &s.wg)
	}
	s.poll()
	s.wg.Add(1)
	go s.run()
	return nil
}

// closeBackends closes every open backend, in reverse order.
func (s *Source) closeBackends() error {
	var errs []error
	for i := len(s.backends) - 1; i >= 0; i-- {
		errs = append(errs, s.backends[i].close())
	}
	return errors.Join(errs...)
}

func (s *Source) run() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.poll()
		}
	}
}

// poll reads every device into the back snapshot and publishes it.
func (s *Source) poll() {
	s.pollMu.Lock()
	defer s.pollMu.Unlock()
	s.cycle++
	back := s.back
	back.reset()
	for _, b := range s.backends {
		b.poll(back)
	}
	s.mu.Lock()
	s.front, s.back = back, s.front
	s.mu.Unlock()
}

// DriverVersion is the NVIDIA driver version NVML reports; "" when the
// Source reads no NVIDIA GPU. Every device's series carry their driver's
// version as hw.driver_version.
func (s *Source) DriverVersion() string {
	for _, b := range s.backends {
		if nb, ok := b.(*nvmlBackend); ok {
			return nb.driver
		}
	}
	return ""
}

// Devices lists the devices of the last read: each NVIDIA GPU, in NVML
// index order, followed by its MIG instances (Parent set); then each AMD
// GPU, in index order; then each Intel GPU, Level Zero's, then those of
// the kernel's files; then each TPU. A device that a runtime backend
// (DCGM, RDC) reads beside the backend that found it is listed once.
func (s *Source) Devices() []Device {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Device, 0, len(s.front.samples))
	for i := range s.front.samples {
		d := s.front.samples[i].d
		if d.source != "" && s.listed(d.UUID) {
			continue
		}
		out = append(out, d.Device)
	}
	return out
}

// listed reports whether a backend other than a runtime backend read the
// device with hw.id id in the front snapshot.
func (s *Source) listed(id string) bool {
	for i := range s.front.samples {
		if d := s.front.samples[i].d; d.source == "" && d.UUID == id {
			return true
		}
	}
	return false
}

// Close stops polling, unregisters the instruments, and shuts down and
// unloads the vendor libraries. If a read is stuck in a driver, Close
// gives up after a few seconds, leaves the libraries loaded and says so.
// Calls after the first return nil.
func (s *Source) Close() error {
	var err error
	s.closeOnce.Do(func() {
		err = s.close()
	})
	return err
}

func (s *Source) close() error {
	close(s.stop)
	var errs []error
	if s.reg != nil {
		errs = append(errs, s.reg.Unregister())
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(closeTimeout):
		return fmt.Errorf("gpu: close: a read is stuck in a GPU driver after %v; the vendor libraries are left loaded", closeTimeout)
	}
	errs = append(errs, s.closeBackends())
	return errors.Join(errs...)
}
