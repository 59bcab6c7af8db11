package gpu

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/procfs"
	"github.com/xpuscope/xpuscope/semconv"
)

// ScopeName is the instrumentation scope of the Source's meter.
const ScopeName = "github.com/xpuscope/xpuscope/gpu"

// closeTimeout bounds how long Close waits for a poll stuck in the driver.
const closeTimeout = 5 * time.Second

// Source reports GPU device and per-process metrics. Create it with New.
type Source struct {
	cfg    config
	lib    nvml.Interface
	driver string
	syms   symbols
	procs  procfs.FS

	devices []*device // physical GPUs, fixed at New
	missing []opts    // one per (symbol, metric) the library lacks
	errors  readErrors
	inst    instruments
	reg     metric.Registration

	pollMu      sync.Mutex // serialises poll
	cycle       uint64
	mu          sync.RWMutex // guards front
	front, back *snapshot

	stop      chan struct{}
	wg        sync.WaitGroup
	eventSet  nvml.EventSet
	closeOnce sync.Once
}

// New loads NVML, finds the GPUs, registers the instruments, reads every
// device once and starts polling. It returns an error wrapping
// xpuscope.ErrUnavailable when the NVML library is missing, the driver is
// not loaded, access is denied or there is no GPU; any other error is a
// fault.
func New(opts ...Option) (*Source, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	s := &Source{
		cfg:   cfg,
		lib:   cfg.nvml,
		procs: procfs.FS{Root: cfg.procRoot},
		front: &snapshot{},
		back:  &snapshot{},
		stop:  make(chan struct{}),
	}
	path := cfg.nvmlPath
	if s.lib == nil {
		if err := probeLibrary(path); err != nil {
			return nil, err
		}
		s.lib = nvml.New(nvml.WithLibraryPath(path))
	} else {
		path = "injected NVML"
	}
	if ret := s.lib.Init(); ret != nvml.SUCCESS {
		return nil, initError(path, ret)
	}
	if err := s.start(path); err != nil {
		s.lib.Shutdown()
		return nil, err
	}
	return s, nil
}

func (s *Source) start(path string) error {
	var err error
	s.syms, err = resolveSymbols(s.lib.Extensions().LookupSymbol)
	if err != nil {
		return xpuscope.Unavailablef("gpu: NVML library %s: %v", path, err)
	}
	for _, m := range s.syms.missing {
		s.missing = append(s.missing, newOpts(
			semconv.XpuscopeSymbol.String(m.symbol),
			semconv.XpuscopeMetricName.String(m.metric)))
	}
	driver, ret := s.lib.SystemGetDriverVersion()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("gpu: nvmlSystemGetDriverVersion: %s", returnName(ret))
	}
	s.driver = driver
	if err := s.discover(); err != nil {
		return err
	}
	meter := s.cfg.meterProvider.Meter(ScopeName)
	if err := s.inst.create(meter); err != nil {
		return fmt.Errorf("gpu: %w", err)
	}
	s.reg, err = meter.RegisterCallback(s.observe, s.inst.all()...)
	if err != nil {
		return fmt.Errorf("gpu: register callback: %w", err)
	}
	s.eventSet = s.startXID()
	s.poll()
	s.wg.Add(1)
	go s.run()
	return nil
}

// discover enumerates the GPUs. A GPU whose identity cannot be read is
// left out and counted; no usable GPU at all is unavailable.
func (s *Source) discover() error {
	n, ret := s.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("gpu: nvmlDeviceGetCount: %s", returnName(ret))
	}
	if n == 0 {
		return xpuscope.Unavailablef("gpu: NVML found no NVIDIA GPU (driver %s)", s.driver)
	}
	var failed []string
	for i := range n {
		info, h, err := s.identify(i)
		if err != nil {
			failed = append(failed, err.Error())
			continue
		}
		s.devices = append(s.devices, newDevice(h, info, s.driver))
	}
	if len(s.devices) == 0 {
		return xpuscope.Unavailablef("gpu: none of %d NVIDIA GPUs could be identified: %s",
			n, strings.Join(failed, "; "))
	}
	return nil
}

func (s *Source) identify(i int) (Device, nvml.Device, error) {
	h, ret := s.lib.DeviceGetHandleByIndex(i)
	if ret != nvml.SUCCESS {
		return Device{}, nil, fmt.Errorf("GPU %d: nvmlDeviceGetHandleByIndex: %s", i, returnName(ret))
	}
	uuid, ret := h.GetUUID()
	if ret != nvml.SUCCESS {
		return Device{}, nil, fmt.Errorf("GPU %d: nvmlDeviceGetUUID: %s", i, returnName(ret))
	}
	name, ret := h.GetName()
	if ret != nvml.SUCCESS {
		return Device{}, nil, fmt.Errorf("GPU %d: nvmlDeviceGetName: %s", i, returnName(ret))
	}
	pci, ret := h.GetPciInfo()
	if ret != nvml.SUCCESS {
		return Device{}, nil, fmt.Errorf("GPU %d: nvmlDeviceGetPciInfo: %s", i, returnName(ret))
	}
	d := Device{Index: i, UUID: uuid, Name: name, PCIAddress: pciAddress(cString(pci.BusId[:]))}
	if s.syms.available[readCapacity] {
		major, minor, r1 := h.GetCudaComputeCapability()
		cores, r2 := h.GetNumGpuCores()
		if r1 == nvml.SUCCESS && r2 == nvml.SUCCESS {
			d.SMs, d.ThreadsPerSM = capacity(major, minor, cores)
		}
	}
	return d, h, nil
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

// DriverVersion is the NVIDIA driver version NVML reports.
func (s *Source) DriverVersion() string { return s.driver }

// Devices lists the devices of the last read: each GPU, in NVML index
// order, followed by its MIG instances (Parent set).
func (s *Source) Devices() []Device {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Device, len(s.front.samples))
	for i := range s.front.samples {
		out[i] = s.front.samples[i].d.Device
	}
	return out
}

// Close stops polling, unregisters the instruments and shuts NVML down.
// If a read is stuck in the driver, Close gives up after a few seconds,
// leaves NVML loaded and says so. Calls after the first return nil.
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
		return fmt.Errorf("gpu: close: a read is stuck in the NVIDIA driver after %v; NVML left loaded", closeTimeout)
	}
	if s.eventSet != nil {
		if ret := s.eventSet.Free(); ret != nvml.SUCCESS {
			errs = append(errs, fmt.Errorf("gpu: nvmlEventSetFree: %s", returnName(ret)))
		}
	}
	if ret := s.lib.Shutdown(); ret != nvml.SUCCESS {
		errs = append(errs, fmt.Errorf("gpu: nvmlShutdown: %s", returnName(ret)))
	}
	return errors.Join(errs...)
}
