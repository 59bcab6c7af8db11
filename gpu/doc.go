// Package gpu reports GPU device and per-process metrics as OpenTelemetry
// metrics, for NVIDIA, AMD and Intel GPUs, under the same names.
//
// # Backends
//
// New tries its backends in order (WithBackends selects among them),
// and uses every one that finds GPUs: a node with GPUs of both vendors
// reports both; the vendors' devices are disjoint. The three AMD backends
// are fallbacks of one another: the first that finds the AMD GPUs reads
// them.
//
//   - NVML (NVIDIA): the library the driver installs, libnvidia-ml.so.1,
//     through github.com/NVIDIA/go-nvml.
//   - AMD SMI (AMD, ROCm 6 and later): libamd_smi.so, else the first of
//     libamd_smi.so.26, .25, .24, .23 that loads (WithAMDSMILibraryPath),
//     bound with purego (package internal/amdsmi), without cgo. Some of
//     its structs changed layout between releases under one soname; the
//     backend is used only for library versions whose layout the binding
//     knows (23.2, 24.6 of ROCm 6.2, and 26 and later of ROCm 7), and
//     otherwise, like when the library is missing or amdsmi_init fails,
//     New goes on to ROCm SMI.
//   - ROCm SMI (AMD): librocm_smi64.so.1 (WithROCmSMILibraryPath), bound
//     with purego (package internal/rocmsmi), tried only when AMD SMI found
//     no GPU.
//   - amdgpu sysfs (AMD): the files the amdgpu driver publishes in sysfs
//     (WithSysfsRoot), tried only when neither library found a GPU: not
//     installed, or unable to start.
//   - DCGM (NVIDIA), a runtime backend: NVIDIA's Data Center GPU Manager,
//     libdcgm.so.4, .3 or .2 (WithDCGMLibraryPath), bound with purego
//     (package internal/dcgm). It reads the profiling fields NVML does not
//     give (SM activity and occupancy, tensor, FP64/32/16 pipe and DRAM
//     activity, PCIe and NVLink throughput) of the GPUs NVML found, under
//     their hw.id, with gpu.measurement.source=dcgm, through nv-hostengine
//     (WithDCGMHostEngine, or found on its default socket or port) or a
//     host engine embedded in the process. Another profiler holding the
//     counters, blank values and failed reads are counted in the
//     xpuscope.gpu.scrape.misses, samples.blank and field.unavailable
//     self-metrics; Status says what each backend reads.
//   - RDC (AMD), a runtime backend: ROCm's Data Center tool,
//     librdc_bootstrap.so (WithRDCLibraryPath), bound with purego (package
//     internal/rdc), in its embedded mode. It reads utilization, VRAM,
//     power and ECC totals (series of their own beside AMD SMI's or ROCm
//     SMI's), XGMI bytes, and RDC's profiling fields (occupancy, waves,
//     tensor activity, memory bandwidth, SM activity), each GPU under the
//     identity the AMD backend gave the GPU of the same index, with
//     gpu.measurement.source=rdc. A field the GPU's counters cannot hold
//     beside those added before it is dropped for that GPU and counted.
//   - Level Zero (Intel): Level Zero Sysman through the Level Zero loader,
//     libze_loader.so.1 (WithLevelZeroLibraryPath), bound with purego
//     (package internal/levelzero), where Intel's compute runtime is
//     installed; loaded only when sysfs shows an i915 or xe card. It
//     initialises Sysman with zesInit where the loader has it (Level
//     Zero 1.5 and later), else sets ZES_ENABLE_SYSMAN=1 and calls
//     zeInit; never both. It reads each engine group's activity (per
//     tile where the group is a sub-device's), device memory and its
//     bandwidth, the card's energy and power, temperatures, GPU and
//     memory frequency, and the processes.
//   - Intel sysfs (Intel): what the i915 and xe kernel drivers publish,
//     for the Intel GPUs Level Zero does not read: hwmon energy, power
//     limit and temperatures by label, the GTs' actual frequency, xe's
//     VRAM size; engine busyness from the DRM clients' fdinfo summed per
//     device.
//   - TPU (Google), a runtime backend without a library: the chips from
//     sysfs (PCI vendor 0x1ae0: v4, v5e, v5p, v6e, 7x, and v2/v3), each
//     device the runtime numbers a series with hw.type=tpu,
//     hw.vendor=Google and gpu.measurement.source=libtpu; their HBM use,
//     TensorCore duty cycle and HLO queue and execution time from the TPU
//     runtime's metrics service (libtpu's RuntimeMetricService, gRPC with
//     local credentials) on the ports the workloads publish in
//     TPU_RUNTIME_METRICS_PORTS, else 8431 (WithTPUMetricsPorts). The
//     service exists only while a workload runs: a port nobody listens on
//     is counted, not an error.
//
// Both Intel backends read each process's DRM fdinfo (the card and render
// nodes it holds open, in any mount namespace) for its memory and its
// share of each engine class: gpu.engine.utilization and
// process.gpu.engine.utilization carry gpu.engine.class and
// gpu.measurement.source (level_zero, pmu or fdinfo).
//
// The NVIDIA backend reports, per GPU, utilization (general, encoder,
// decoder), memory (usage, limit, free, reserved, utilization),
// memory-controller utilization, temperature, power and power limit,
// energy, SM and memory clocks, PCIe bytes, fan speed, ECC errors, XID
// errors and clock-throttle reasons; per process, GPU memory and SM
// utilization. With MIG enabled, every MIG instance gets its own series
// (memory and processes) carrying hw.parent, the GPU- and compute-instance
// ids and the profile; metrics NVML does not report for an instance are
// omitted, never copied from the parent.
//
// The AMD backends report the same metrics with hw.vendor=AMD: AMD SMI
// and ROCm SMI utilization and memory-controller utilization (AMD SMI:
// the gfx and umc activity of amdsmi_get_gpu_activity), VRAM used and total,
// temperatures of the edge, junction and memory sensors (one series each,
// hw.sensor_location), power (hw.power is the socket power, or the
// firmware's average where there is none; gpu.power.average is the
// average) and power cap, energy (the counter times its resolution), fan
// speed, SCLK and MCLK, ECC counts summed over the GPU's blocks, and, with
// WithAMDPCIeThroughput (ROCm SMI only), an estimate of PCIe bytes. AMD
// SMI gives temperatures in °C and socket power in W (ROCm SMI in
// millidegrees and µW), the power cap in µW, clocks in MHz; the Source
// reports them all in °C, W and Hz. The sysfs backend
// reads gpu_busy_percent, mem_busy_percent, mem_info_vram_used and _total,
// and the card's hwmon temperatures, power and fan; it has no energy,
// clocks, PCIe or ECC. A GPU's hw.id is its unique id (ROCm SMI's, or,
// for AMD SMI and sysfs, the card's unique_id file, which AMD SMI's
// asic_serial shows too), or its PCI address where it has none. Per
// process, every AMD backend reads KFD, the ROCm
// compute driver's sysfs directory: each process's VRAM on each GPU, and
// its CU occupancy divided by the GPU's compute units as
// process.gpu.utilization (an instantaneous share of the GPU, not a time
// share). KFD GPUs are matched to cards by the PCI address of the KFD
// topology. (ROCm SMI's rsmi_compute_process_info_by_pid_get reads the
// same files but sums a process's GPUs, so the Source reads the files.)
//
// docs/metrics.md lists every name, with where each value comes from.
//
// ROCm SMI writes its own diagnostics to the process's stderr (rsmi_init
// on a node without /sys/class/drm prints "Failed to open drm root
// directory /sys/class/drm.: No such file or directory" and "Exception
// caught: rsmi_init."). The Source does not redirect file descriptor 2,
// which belongs to the whole process; it loads ROCm SMI only when sysfs
// shows an amdgpu card, so a node without an AMD GPU prints nothing.
//
// # Behaviour
//
// New reads every device once, then a goroutine of the Source reads them
// every interval (WithInterval). Observable callbacks report the last
// complete read and never call into the driver. A read that fails on one
// device is counted in xpuscope.gpu.read.errors and the rest go on; a read
// a device reports as unsupported (for sysfs, a file that does not
// exist) is dropped for that device. Optional NVML, AMD SMI and ROCm SMI symbols
// are looked up before anything calls them, so an older library loses
// only the metrics it cannot serve, listed by xpuscope.gpu.symbol.missing.
// Per-process series are capped per device (WithMaxProcesses); the rest
// fold into one series.
//
// XID errors come from an NVML event set that a second goroutine waits
// on, so only XIDs that happen while the Source runs are counted.
//
// # Pods
//
// With WithResolver (a *podjoin.Resolver, or any Resolver), a per-process
// series gets the attributes of the process's container and pod, asked
// for once, when the process first appears on the device, and the
// resolver's Forget when it leaves. A device's series (XID counts
// included) get those of the pod holding it, asked for at every poll by
// the id the kubelet allocates: the UUID of an NVIDIA GPU or MIG instance,
// the PCI address of an AMD GPU. The resolver answers only for a device
// exactly one pod holds, so that a GPU shared by several pods never shows
// its values as each pod's. The attribute sets are rebuilt only when the
// pod changes; counters since the driver loaded (energy, ECC and XID
// errors, PCIe bytes) then go on under the new pod's series. Observable
// callbacks still only read.
//
// # Errors
//
// New wraps xpuscope.ErrUnavailable when no backend finds a GPU, saying
// for each why: the library is missing, the driver is not loaded, the
// device files are not accessible, the library lacks a required symbol,
// or there is no GPU. A backend that finds no GPU is no error when
// another finds some. Anything else, a bad option included, is a fault,
// even when another backend found GPUs.
//
// The package uses cgo (go-nvml needs it; the AMD SMI and ROCm SMI
// bindings do not).
// Only one NVML library can be loaded per process.
package gpu
