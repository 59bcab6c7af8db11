package gpu

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/dl"
	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/semconv"
)

// openNVML loads NVML (or takes the injected one), initialises it and
// finds the NVIDIA GPUs.
func openNVML(s *Source) (backend, error) {
	lib, path := s.cfg.nvml, s.cfg.nvmlPath
	if lib == nil {
		if err := probeLibrary(path); err != nil {
			return nil, err
		}
		lib = nvml.New(nvml.WithLibraryPath(path))
	} else {
		path = "injected NVML"
	}
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, initError(path, ret)
	}
	b := &nvmlBackend{s: s, lib: lib}
	if err := b.open(path); err != nil {
		lib.Shutdown()
		return nil, err
	}
	for _, m := range b.syms.missing {
		s.missing = append(s.missing, newOpts(
			semconv.XpuscopeSymbol.String(m.symbol),
			semconv.XpuscopeMetricName.String(m.metric)))
	}
	s.devices = append(s.devices, b.devices...)
	return b, nil
}

// nvmlBackend is the NVIDIA backend: NVML (nvml.go), its reads
// (nvml_read.go) and, from start to close, its XID events (xid.go), over
// the GPUs NVML found.
type nvmlBackend struct {
	s        *Source
	lib      nvml.Interface
	driver   string  // the driver version NVML reports
	syms     symbols // what lib offers
	devices  []*device
	eventSet nvml.EventSet // the XID events' set; nil when none is watched
}

// open resolves the symbols of the initialised library at path, reads
// the driver version and finds the GPUs.
func (b *nvmlBackend) open(path string) error {
	var err error
	b.syms, err = resolveSymbols(b.lib.Extensions().LookupSymbol)
	if err != nil {
		return xpuscope.Unavailablef("gpu: NVML library %s: %v", path, err)
	}
	driver, ret := b.lib.SystemGetDriverVersion()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("gpu: nvmlSystemGetDriverVersion: %s", returnName(ret))
	}
	b.driver = driver
	return b.discover()
}

// discover enumerates the GPUs. A GPU whose identity cannot be read is
// left out and counted; no usable GPU at all is unavailable.
func (b *nvmlBackend) discover() error {
	n, ret := b.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("gpu: nvmlDeviceGetCount: %s", returnName(ret))
	}
	if n == 0 {
		return xpuscope.Unavailablef("gpu: NVML found no NVIDIA GPU (driver %s)", b.driver)
	}
	var failed []string
	for i := range n {
		info, h, err := b.identify(i)
		if err != nil {
			failed = append(failed, err.Error())
			continue
		}
		b.devices = append(b.devices, newDevice(h, info, b.driver))
	}
	if len(b.devices) == 0 {
		return xpuscope.Unavailablef("gpu: none of %d NVIDIA GPUs could be identified: %s",
			n, strings.Join(failed, "; "))
	}
	return nil
}

// identify reads the identity of GPU i and, where the library has the
// calls, its capacity.
func (b *nvmlBackend) identify(i int) (Device, nvml.Device, error) {
	h, ret := b.lib.DeviceGetHandleByIndex(i)
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
	if b.syms.available[readCapacity] {
		major, minor, r1 := h.GetCudaComputeCapability()
		cores, r2 := h.GetNumGpuCores()
		if r1 == nvml.SUCCESS && r2 == nvml.SUCCESS {
			d.SMs, d.ThreadsPerSM = capacity(major, minor, cores)
		}
	}
	return d, h, nil
}

// poll reads each of the backend's GPUs into sn.
func (b *nvmlBackend) poll(sn *snapshot) {
	for _, d := range b.devices {
		b.readDevice(sn, d)
	}
}

// close frees the XID event set and shuts NVML down.
func (b *nvmlBackend) close() error {
	var errs []error
	if b.eventSet != nil {
		if ret := b.eventSet.Free(); ret != nvml.SUCCESS {
			errs = append(errs, fmt.Errorf("gpu: nvmlEventSetFree: %s", returnName(ret)))
		}
	}
	if ret := b.lib.Shutdown(); ret != nvml.SUCCESS {
		errs = append(errs, fmt.Errorf("gpu: nvmlShutdown: %s", returnName(ret)))
	}
	return errors.Join(errs...)
}

// readID names one kind of NVML read. Reads are what can be missing from
// the library (a symbol), unsupported by a device, or fail in a cycle.
type readID uint8

const (
	readUtilization readID = iota
	readEncoder
	readDecoder
	readMemory
	readTemperature
	readPower
	readPowerLimit
	readEnergy
	readClocks
	readPCIe
	readFan
	readECC
	readThrottle
	readComputeProcesses
	readGraphicsProcesses
	readProcessUtilization
	readMIG
	readXID
	readCapacity
	numReads
)

// readSpec says which NVML symbols a read calls and which metrics are lost
// when the library lacks them. A read is available when every symbol in
// all is present and, if anyOf is set, at least one of anyOf is (the
// first present one is used; go-nvml picks versioned symbols the same way).
type readSpec struct {
	name    string
	all     []string
	anyOf   []string
	metrics []semconv.Metric
}

var reads = [numReads]readSpec{
	readUtilization:        {"utilization", []string{"nvmlDeviceGetUtilizationRates"}, nil, []semconv.Metric{semconv.HWGPUUtilization, semconv.GPUMemoryControllerUtilization}},
	readEncoder:            {"encoder_utilization", []string{"nvmlDeviceGetEncoderUtilization"}, nil, []semconv.Metric{semconv.HWGPUUtilization}},
	readDecoder:            {"decoder_utilization", []string{"nvmlDeviceGetDecoderUtilization"}, nil, []semconv.Metric{semconv.HWGPUUtilization}},
	readMemory:             {"memory", nil, []string{"nvmlDeviceGetMemoryInfo_v2", "nvmlDeviceGetMemoryInfo"}, []semconv.Metric{semconv.HWGPUMemoryUsage, semconv.HWGPUMemoryLimit, semconv.HWGPUMemoryUtilization, semconv.GPUMemoryFree, semconv.GPUMemoryReserved}},
	readTemperature:        {"temperature", []string{"nvmlDeviceGetTemperature"}, nil, []semconv.Metric{semconv.HWTemperature}},
	readPower:              {"power", []string{"nvmlDeviceGetPowerUsage"}, nil, []semconv.Metric{semconv.HWPower}},
	readPowerLimit:         {"power_limit", []string{"nvmlDeviceGetEnforcedPowerLimit"}, nil, []semconv.Metric{semconv.GPUPowerLimit}},
	readEnergy:             {"energy", []string{"nvmlDeviceGetTotalEnergyConsumption"}, nil, []semconv.Metric{semconv.HWEnergy}},
	readClocks:             {"clocks", []string{"nvmlDeviceGetClockInfo"}, nil, []semconv.Metric{semconv.GPUClockFrequency}},
	readPCIe:               {"pcie", []string{"nvmlDeviceGetFieldValues"}, nil, []semconv.Metric{semconv.HWGPUIO}},
	readFan:                {"fan", []string{"nvmlDeviceGetFanSpeed"}, nil, []semconv.Metric{semconv.GPUFanSpeed}},
	readECC:                {"ecc", []string{"nvmlDeviceGetTotalEccErrors"}, nil, []semconv.Metric{semconv.HWErrors}},
	readThrottle:           {"throttle", nil, []string{"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"}, []semconv.Metric{semconv.GPUClockThrottle}},
	readComputeProcesses:   {"compute_processes", nil, []string{"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2", "nvmlDeviceGetComputeRunningProcesses"}, []semconv.Metric{semconv.ProcessGPUMemoryUsage}},
	readGraphicsProcesses:  {"graphics_processes", nil, []string{"nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2", "nvmlDeviceGetGraphicsRunningProcesses"}, []semconv.Metric{semconv.ProcessGPUMemoryUsage}},
	readProcessUtilization: {"process_utilization", []string{"nvmlDeviceGetProcessUtilization"}, nil, []semconv.Metric{semconv.ProcessGPUUtilization}},
	readMIG:                {"mig", []string{"nvmlDeviceGetMigMode", "nvmlDeviceGetMaxMigDeviceCount", "nvmlDeviceGetMigDeviceHandleByIndex", "nvmlDeviceGetGpuInstanceId", "nvmlDeviceGetComputeInstanceId"}, nil, []semconv.Metric{semconv.HWGPUMemoryUsage, semconv.HWGPUMemoryLimit, semconv.ProcessGPUMemoryUsage}},
	readXID:                {"xid", []string{"nvmlEventSetCreate", "nvmlDeviceRegisterEvents", "nvmlEventSetFree"}, []string{"nvmlEventSetWait_v2", "nvmlEventSetWait"}, []semconv.Metric{semconv.HWErrors}},
	readCapacity:           {"capacity", []string{"nvmlDeviceGetCudaComputeCapability", "nvmlDeviceGetNumGpuCores"}, nil, []semconv.Metric{semconv.GPUCapacityThreads}},
}

// requiredSymbols are what the Source cannot work without: identity and
// enumeration. Each group is satisfied by any one of its symbols.
var requiredSymbols = [][]string{
	{"nvmlSystemGetDriverVersion"},
	{"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"},
	{"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"},
	{"nvmlDeviceGetUUID"},
	{"nvmlDeviceGetName"},
	{"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo"},
}

// missingSymbol is an optional symbol the loaded library lacks.
type missingSymbol struct {
	symbol string
	metric string
}

// symbols is what the loaded library offers.
type symbols struct {
	available [numReads]bool
	// memoryV2 is set when nvmlDeviceGetMemoryInfo_v2 (with the reserved
	// figure) is present; readMemory falls back to v1 otherwise.
	memoryV2 bool
	// eventReasons is set when nvmlDeviceGetCurrentClocksEventReasons is
	// present; readThrottle falls back to the older throttle-reason call.
	eventReasons bool
	missing      []missingSymbol
}

// resolveSymbols looks every optional symbol up before anything calls it:
// go-nvml binds symbols lazily, and calling one the library lacks kills the
// process. It returns an error naming the first required symbol missing.
func resolveSymbols(lookup func(string) error) (symbols, error) {
	has := func(s string) bool { return lookup(s) == nil }
	var syms symbols
	for _, group := range requiredSymbols {
		found := false
		for _, s := range group {
			if has(s) {
				found = true
				break
			}
		}
		if !found {
			return syms, fmt.Errorf("library lacks required symbol %s", group[0])
		}
	}
	lost := func(sym string, ms ...semconv.Metric) {
		for _, m := range ms {
			syms.missing = append(syms.missing, missingSymbol{symbol: sym, metric: m.Name})
		}
	}
	for id := range numReads {
		spec := reads[id]
		ok := true
		for _, s := range spec.all {
			if !has(s) {
				lost(s, spec.metrics...)
				ok = false
				break
			}
		}
		if ok && len(spec.anyOf) > 0 {
			first := -1
			for i, s := range spec.anyOf {
				if has(s) {
					first = i
					break
				}
			}
			switch {
			case first < 0:
				lost(spec.anyOf[0], spec.metrics...)
				ok = false
			case id == readMemory:
				syms.memoryV2 = first == 0
				if !syms.memoryV2 {
					lost(spec.anyOf[0], semconv.GPUMemoryReserved)
				}
			case id == readThrottle:
				syms.eventReasons = first == 0
			}
		}
		syms.available[id] = ok
	}
	return syms, nil
}

// probeLibrary opens the NVML library on its own before go-nvml does, so
// that a missing library is reported with the loader's own words and a
// library without nvmlInit is refused instead of called.
func probeLibrary(path string) error {
	lib := dl.New(path, dl.RTLD_LAZY|dl.RTLD_LOCAL)
	if err := lib.Open(); err != nil {
		return xpuscope.Unavailablef("gpu: NVML library %s cannot be loaded: %v", path, err)
	}
	defer lib.Close()
	if lib.Lookup("nvmlInit_v2") != nil && lib.Lookup("nvmlInit") != nil {
		return xpuscope.Unavailablef("gpu: %s is not an NVML library: it has neither nvmlInit_v2 nor nvmlInit", path)
	}
	return nil
}

// initError classifies a failed nvmlInit: the conditions of a GPU-less or
// misconfigured node are unavailable, anything else is a fault.
func initError(path string, ret nvml.Return) error {
	switch ret {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return xpuscope.Unavailablef("gpu: NVML library %s not found", path)
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return xpuscope.Unavailablef("gpu: nvmlInit (%s): NVIDIA driver not loaded (%s)", path, returnName(ret))
	case nvml.ERROR_NO_PERMISSION:
		return xpuscope.Unavailablef("gpu: nvmlInit (%s): no permission to open the NVIDIA device files /dev/nvidia* (%s)", path, returnName(ret))
	case nvml.ERROR_LIB_RM_VERSION_MISMATCH:
		return xpuscope.Unavailablef("gpu: nvmlInit (%s): library and kernel driver versions differ; reboot or reload the driver (%s)", path, returnName(ret))
	}
	return fmt.Errorf("gpu: nvmlInit (%s): %s", path, returnName(ret))
}

var returnNames = map[nvml.Return]string{
	nvml.SUCCESS:                       "SUCCESS",
	nvml.ERROR_UNINITIALIZED:           "ERROR_UNINITIALIZED",
	nvml.ERROR_INVALID_ARGUMENT:        "ERROR_INVALID_ARGUMENT",
	nvml.ERROR_NOT_SUPPORTED:           "ERROR_NOT_SUPPORTED",
	nvml.ERROR_NO_PERMISSION:           "ERROR_NO_PERMISSION",
	nvml.ERROR_NOT_FOUND:               "ERROR_NOT_FOUND",
	nvml.ERROR_INSUFFICIENT_SIZE:       "ERROR_INSUFFICIENT_SIZE",
	nvml.ERROR_DRIVER_NOT_LOADED:       "ERROR_DRIVER_NOT_LOADED",
	nvml.ERROR_TIMEOUT:                 "ERROR_TIMEOUT",
	nvml.ERROR_LIBRARY_NOT_FOUND:       "ERROR_LIBRARY_NOT_FOUND",
	nvml.ERROR_FUNCTION_NOT_FOUND:      "ERROR_FUNCTION_NOT_FOUND",
	nvml.ERROR_GPU_IS_LOST:             "ERROR_GPU_IS_LOST",
	nvml.ERROR_RESET_REQUIRED:          "ERROR_RESET_REQUIRED",
	nvml.ERROR_LIB_RM_VERSION_MISMATCH: "ERROR_LIB_RM_VERSION_MISMATCH",
	nvml.ERROR_MEMORY:                  "ERROR_MEMORY",
	nvml.ERROR_NO_DATA:                 "ERROR_NO_DATA",
	nvml.ERROR_UNKNOWN:                 "ERROR_UNKNOWN",
}

// returnName is a stable, low-cardinality name for an NVML return code.
// (nvml.Return's own String changes wording once the real library is
// loaded.)
func returnName(r nvml.Return) string {
	if n, ok := returnNames[r]; ok {
		return n
	}
	return "NVML_RETURN_" + strconv.Itoa(int(r))
}
