package semconv

import "go.opentelemetry.io/otel/attribute"

// Names the Intel backends of package gpu (Level Zero Sysman, and the
// i915 and xe drivers' sysfs, hwmon, PMU and DRM fdinfo) add to the GPU
// set. Everything else an Intel GPU reports uses the GPU names of
// metrics.go, with hw.vendor=Intel.
//
// OpenTelemetry's hw.gpu.utilization knows three tasks (general, encoder,
// decoder); an Intel GPU has more engines than that (render, compute,
// copy, video, video enhancement) and reports each. The issue that
// brought Intel in asked for hw.gpu.engine.utilization, but the registry
// keeps extensions out of OpenTelemetry's hw.* namespace
// (TestMetricsAreWellFormed), so that a later OpenTelemetry name there
// never clashes with one of ours: the engines are gpu.engine.utilization,
// an extension, beside the gpu.* extensions the other backends add.

// Attributes of the Intel engine metrics (extensions).
const (
	// GPUEngineClass is the class of engines a figure covers.
	GPUEngineClass = attribute.Key("gpu.engine.class")
	// GPUTile is the tile (Level Zero sub-device) a figure covers.
	GPUTile = attribute.Key("gpu.tile")
)

// VendorIntel is hw.vendor of an Intel GPU.
const VendorIntel = "Intel"

// Values of GPUMeasurementSource set by the Intel backends on their
// utilization figures.
const (
	// MeasurementSourceLevelZero: Level Zero Sysman's engine activity
	// (zesEngineGetActivity).
	MeasurementSourceLevelZero = "level_zero"
	// MeasurementSourcePMU: the i915 or xe driver's perf PMU (engine busy
	// nanoseconds, or active and total ticks).
	MeasurementSourcePMU = "pmu"
	// MeasurementSourceFdinfo: the DRM clients' /proc/<pid>/fdinfo
	// (drm-engine-*, drm-cycles-*), per process, or summed over the
	// clients for a device without a PMU the agent may open.
	MeasurementSourceFdinfo = "fdinfo"
)

// Values of GPUEngineClass.
const (
	EngineRender       = "render"        // the render (3D) engine: i915 rcs, xe rcs, Level Zero RENDER_*
	EngineCompute      = "compute"       // compute engines: i915 and xe ccs, Level Zero COMPUTE_*
	EngineCopy         = "copy"          // blitter / copy engines: bcs, Level Zero COPY_*
	EngineVideo        = "video"         // video engines, decode and encode: vcs
	EngineVideoEnhance = "video_enhance" // video enhancement: vecs, Level Zero MEDIA_ENHANCEMENT_SINGLE
	EngineMedia        = "media"         // all media engines together: Level Zero MEDIA_ALL
	Engine3D           = "3d"            // Level Zero 3D_* groups
	EngineAll          = "all"           // every engine of a tile: Level Zero ALL on a sub-device
)

const intelNote = "Intel: "

// Intel engine metrics (extensions).
var (
	GPUEngineUtilization = Metric{
		Name: "gpu.engine.utilization", Kind: Gauge, Unit: "1", Origin: Extension,
		Description: "Fraction of the sample period during which the engines of the class were busy.",
		Attributes:  with(deviceAttrs, GPUEngineClass, GPUTile),
		Note: intelNote + "the classes hw.gpu.utilization's tasks do not name. Level Zero (gpu.measurement.source=" + MeasurementSourceLevelZero + "): Δ activeTime / Δ timestamp of each engine group (zesEngineGetActivity), a class's _ALL group where there is one, else the mean of its _SINGLE groups; gpu.tile on the groups of a sub-device. " +
			"The i915 PMU (" + MeasurementSourcePMU + "): Δ <engine>-busy ns / Δ time, the mean over a class's engines; the xe PMU: Δ engine-active-ticks / Δ engine-total-ticks. " +
			"fdinfo (" + MeasurementSourceFdinfo + "), where the PMU cannot be opened: the clients' drm-engine-<class> ns (i915) or drm-cycles / drm-total-cycles (xe), summed over the clients the agent sees and divided by drm-engine-capacity, capped at 1: a lower bound. The first read of a counter gives no figure.",
	}
	ProcessGPUEngineUtilization = Metric{
		Name: "process.gpu.engine.utilization", Kind: Gauge, Unit: "1", Origin: Extension,
		Description: "Fraction of the sample period during which the process's work ran on the engines of the class.",
		Attributes:  with(gpuProcAttrs, GPUEngineClass, GPUMeasurementSource),
		Note:        intelNote + "DRM fdinfo (gpu.measurement.source=" + MeasurementSourceFdinfo + ") of every descriptor the process holds on the GPU's card or render node, its clients told apart by drm-pdev and drm-client-id: i915's drm-engine-<class> ns over the period and drm-engine-capacity-<class>, xe's drm-cycles-<class> over drm-total-cycles-<class> and the capacity. A counter that goes backwards is held at its larger previous value, as the kernel's drm-usage-stats document says. The first read of a client gives no figure.",
	}
)

var intelMetrics = []Metric{GPUEngineUtilization, ProcessGPUEngineUtilization}

var intelAttributes = []Attribute{
	{GPUEngineClass, "string", "Class of GPU engines: " + EngineRender + ", " + EngineCompute + ", " + EngineCopy + ", " + EngineVideo + " (decode and encode), " + EngineVideoEnhance + ", " + EngineMedia + ", " + Engine3D + ", or " + EngineAll + " (every engine of a tile).", Extension,
		[]string{EngineRender, EngineCompute, EngineCopy, EngineVideo, EngineVideoEnhance, EngineMedia, Engine3D, EngineAll}},
	{GPUTile, "int", "Tile of a multi-tile GPU (Level Zero sub-device id) the figure covers; absent on whole-device figures.", Extension, nil},
}
