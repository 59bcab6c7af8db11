package gpu

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

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
	first, missing := len(s.devices), len(s.missing)
	s.lib = lib
	if err := s.startNVML(path); err != nil {
		lib.Shutdown()
		s.lib, s.driver, s.syms = nil, "", symbols{}
		s.devices, s.missing = s.devices[:first], s.missing[:missing]
		return nil, err
	}
	return &nvmlBackend{s: s, devices: slices.Clip(s.devices[first:])}, nil
}

// startNVML resolves the symbols of the initialised library and finds its
// GPUs.
func (s *Source) startNVML(path string) error {
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
	return s.discover()
}

// nvmlBackend is the NVIDIA backend: the Source's NVML code paths
// (nvml.go, nvml_read.go, xid.go) over the GPUs NVML found.
type nvmlBackend struct {
	s       *Source
	devices []*device
}

func (b *nvmlBackend) poll(sn *snapshot) {
	for _, d := range b.devices {
		b.s.readDevice(sn, d)
	}
}

func (b *nvmlBackend) close() error {
	var errs []error
	if s := b.s; s.eventSet != nil {
		if ret := s.eventSet.Free(); ret != nvml.SUCCESS {
			errs = append(errs, fmt.Errorf("gpu: nvmlEventSetFree: %s", returnName(ret)))
		}
	}
	if ret := b.s.lib.Shutdown(); ret != nvml.SUCCESS {
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
