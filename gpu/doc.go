// Package gpu reports GPU device and per-process metrics as OpenTelemetry
// metrics.
//
// The NVIDIA backend reads NVML (the library the driver installs,
// libnvidia-ml.so.1) through github.com/NVIDIA/go-nvml. Per GPU it
// reports utilization (general, encoder, decoder), memory (usage, limit,
// free, reserved, utilization), memory-controller utilization,
// temperature, power and power limit, energy, SM and memory clocks, PCIe
// bytes, fan speed, ECC errors, XID errors and clock-throttle reasons; per
// process, GPU memory and SM utilization. With MIG enabled, every MIG
// instance gets its own series (memory and processes) carrying hw.parent,
// the GPU- and compute-instance ids and the profile; metrics NVML does not
// report for an instance are omitted, never copied from the parent.
// docs/metrics.md lists every name.
//
// # Behaviour
//
// New reads every device once, then a goroutine of the Source reads them
// every interval (WithInterval). Observable callbacks report the last
// complete read and never call into the driver. A read that fails on one
// device is counted in xpuscope.gpu.read.errors and the rest go on; a read
// a device reports as unsupported is dropped for that device. Optional
// NVML symbols are looked up before anything calls them, so an older
// driver loses only the metrics it cannot serve, listed by
// xpuscope.gpu.symbol.missing. Per-process series are capped per device
// (WithMaxProcesses); the rest fold into one series.
//
// XID errors come from an NVML event set that a second goroutine waits
// on, so only XIDs that happen while the Source runs are counted.
//
// # Errors
//
// New wraps xpuscope.ErrUnavailable when the library is missing, the
// driver is not loaded, the device files are not accessible, the library
// lacks a required symbol, or there is no GPU. Anything else, a bad option
// included, is a fault.
//
// The package uses cgo. Only one NVML library can be loaded per process.
package gpu
