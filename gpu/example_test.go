package gpu_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/gpu"
	"github.com/xpuscope/xpuscope/semconv"
)

// The usual start: soft-skip when the node has no NVIDIA GPU or driver.
func ExampleNew() {
	mp := sdkmetric.NewMeterProvider() // with your exporter's reader
	src, err := gpu.New(gpu.WithMeterProvider(mp))
	if errors.Is(err, xpuscope.ErrUnavailable) {
		log.Printf("gpu metrics off: %v", err)
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
	for _, d := range src.Devices() {
		log.Printf("GPU %d: %s %s at %s", d.Index, d.Name, d.UUID, d.PCIAddress)
	}
}

// WithNVML reads through any nvml.Interface, here go-nvml's mock: one GPU
// drawing 312.5 W, in a library that offers only the power read (every
// other optional symbol is "missing", so nothing else is called).
func ExampleWithNVML() {
	device := &mock.Device{
		GetUUIDFunc:       func() (string, nvml.Return) { return "GPU-example", nvml.SUCCESS },
		GetNameFunc:       func() (string, nvml.Return) { return "NVIDIA L4", nvml.SUCCESS },
		GetPciInfoFunc:    func() (nvml.PciInfo, nvml.Return) { return nvml.PciInfo{}, nvml.SUCCESS },
		GetPowerUsageFunc: func() (uint32, nvml.Return) { return 312_500, nvml.SUCCESS }, // mW
	}
	offered := map[string]bool{
		"nvmlSystemGetDriverVersion": true, "nvmlDeviceGetCount_v2": true,
		"nvmlDeviceGetHandleByIndex_v2": true, "nvmlDeviceGetUUID": true,
		"nvmlDeviceGetName": true, "nvmlDeviceGetPciInfo_v3": true,
		"nvmlDeviceGetPowerUsage": true,
	}
	lib := &mock.Interface{
		InitFunc:     func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc: func() nvml.Return { return nvml.SUCCESS },
		ExtensionsFunc: func() nvml.ExtendedInterface {
			return &mock.ExtendedInterface{LookupSymbolFunc: func(s string) error {
				if !offered[s] {
					return errors.New("undefined symbol")
				}
				return nil
			}}
		},
		SystemGetDriverVersionFunc: func() (string, nvml.Return) { return "550.54.15", nvml.SUCCESS },
		DeviceGetCountFunc:         func() (int, nvml.Return) { return 1, nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(int) (nvml.Device, nvml.Return) { return device, nvml.SUCCESS },
	}

	reader := sdkmetric.NewManualReader()
	src, err := gpu.New(gpu.WithNVML(lib), gpu.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		log.Fatal(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name == semconv.HWPower.Name {
			fmt.Printf("%s = %v %s\n", m.Name, m.Data.(metricdata.Gauge[float64]).DataPoints[0].Value, m.Unit)
		}
	}
	// Output: hw.power = 312.5 W
}

// Status says, backend by backend, what the Source reads, or why not: here
// whether DCGM watches its profiling fields, or another profiler holds
// the GPUs' counters.
func ExampleSource_Status() {
	src, err := gpu.New(gpu.WithBackends(gpu.BackendNVML, gpu.BackendDCGM))
	if err != nil {
		log.Printf("gpu metrics off: %v", err)
		return
	}
	defer src.Close()
	for _, b := range src.Status().Backends {
		if b.Active {
			log.Printf("%s: %d device(s): %s", b.Backend, b.Devices, b.Detail)
		} else {
			log.Printf("%s: off: %s", b.Backend, b.Detail)
		}
	}
}
