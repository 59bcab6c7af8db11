package gpu

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/amdsysfs"
	"github.com/xpuscope/xpuscope/internal/drmfdinfo"
	"github.com/xpuscope/xpuscope/internal/intelsysfs"
	"github.com/xpuscope/xpuscope/semconv"
)

// What the Intel backends, Level Zero and Intel sysfs, share: the engine
// classes and their series, the device and its retired reads, energy
// turned into power, and the DRM clients' fdinfo, per process and summed
// per device.

// engineClass is a value of gpu.engine.class.
type engineClass uint8

const (
	ecRender engineClass = iota
	ecCompute
	ecCopy
	ecVideo
	ecVideoEnhance
	ecMedia
	ec3D
	ecAll
	numEngineClasses
)

var engineClassNames = [numEngineClasses]string{
	ecRender:       semconv.EngineRender,
	ecCompute:      semconv.EngineCompute,
	ecCopy:         semconv.EngineCopy,
	ecVideo:        semconv.EngineVideo,
	ecVideoEnhance: semconv.EngineVideoEnhance,
	ecMedia:        semconv.EngineMedia,
	ec3D:           semconv.Engine3D,
	ecAll:          semconv.EngineAll,
}

// fdinfoClass maps the engine names the i915 and xe drivers write in
// fdinfo to their class: i915_drm_client.c's uabi_class_names (render,
// copy, video, video-enhance, compute) and xe_hw_engine_class_to_str
// (rcs, bcs, vcs, vecs, ccs). Another driver's names (amdgpu's gfx, …)
// are not Intel's and map to nothing.
func fdinfoClass(name []byte) (engineClass, bool) {
	switch string(name) {
	case "render", "rcs":
		return ecRender, true
	case "copy", "bcs":
		return ecCopy, true
	case "video", "vcs":
		return ecVideo, true
	case "video-enhance", "vecs":
		return ecVideoEnhance, true
	case "compute", "ccs":
		return ecCompute, true
	}
	return 0, false
}

// engineSample is one engine class's utilization on a device or a tile.
type engineSample struct {
	class engineClass
	tile  int8 // -1: the whole device
	v     float64
}

// setEngine adds a class's figure to sm, replacing one of the same class
// and tile.
func (sm *sample) setEngine(c engineClass, tile int, v float64) {
	for i := range sm.engines {
		if e := &sm.engines[i]; e.class == c && int(e.tile) == tile {
			e.v = v
			return
		}
	}
	sm.engines = append(sm.engines, engineSample{class: c, tile: int8(tile), v: v})
}

// maxTiles bounds the tiles of one GPU whose figures get series (Ponte
// Vecchio has two).
const maxTiles = 8

// intelSeries builds the engine series of an Intel device over all: for
// the whole device (index 0) and each tile (index tile+1), each class,
// with gpu.measurement.source.
func intelSeries(all []attribute.KeyValue, tiles int, source string) [][numEngineClasses]opts {
	out := make([][numEngineClasses]opts, tiles+1)
	for t := range out {
		for c := range numEngineClasses {
			kvs := append(slices.Clip(all), semconv.GPUEngineClass.String(engineClassNames[c]), semconv.GPUMeasurementSource.String(source))
			if t > 0 {
				kvs = append(kvs, semconv.GPUTile.Int(t-1))
			}
			out[t][c] = newOpts(kvs...)
		}
	}
	return out
}

// intelRead names one kind of read of an Intel backend: what can be
// retired for a device, and the xpuscope.read of a failure.
type intelRead uint8

const (
	irEngines intelRead = iota
	irMemory
	irBandwidth
	irPower
	irPowerLimit
	irTempGPU
	irTempMemory
	irClock
	irClockMemory
	irProcesses
	numIntelReads
)

var intelReadNames = [numIntelReads]string{
	irEngines:     "engines",
	irMemory:      "memory",
	irBandwidth:   "memory_bandwidth",
	irPower:       "energy",
	irPowerLimit:  "power_limit",
	irTempGPU:     "temperature",
	irTempMemory:  "temperature",
	irClock:       "clocks",
	irClockMemory: "clocks",
	irProcesses:   "processes",
}

// intelDevice is an Intel GPU and what its backend keeps about it.
type intelDevice struct {
	*device
	unsupported uint32 // bit r: read r is retired for the device
	card        string // its DRM card (card1), "" when not known
	tiles       int
	// path is the backend's word for how the device's engines are read
	// (for Status); why says why the other ways are not used.
	path, why string
	power     energyPower
}

func (d *intelDevice) can(r intelRead) bool { return d.unsupported&(1<<r) == 0 }
func (d *intelDevice) retire(r intelRead)   { d.unsupported |= 1 << r }

// newIntelDevice is an Intel GPU with tiles tiles whose utilization comes
// from source (gpu.measurement.source on its utilization series).
func newIntelDevice(info Device, driver, card, source string, tiles int) *intelDevice {
	podID := info.PCIAddress
	if card != "" {
		// Intel's GPU device plugin names a device <card>-<n>, n below
		// its shared-dev-num: the pod holding the first share.
		podID = card + "-0"
	}
	d := newVendorDevice(info, semconv.VendorIntel, driver, podID, false)
	d.utilSource, d.tiles, d.memSensor = source, min(tiles, maxTiles), true
	d.series = d.newSeries(nil)
	return &intelDevice{device: d, card: card, tiles: d.tiles}
}

// energyPower turns a cumulative energy counter into power: W = ΔJ / Δs.
// The first read, and a read after the counter went backwards (a driver
// reload), give no power.
type energyPower struct {
	j    float64
	t    time.Duration
	have bool
}

// add takes a read of j joules at t and returns the power since the last.
func (e *energyPower) add(j float64, t time.Duration) (float64, bool) {
	prev, prevT, had := e.j, e.t, e.have
	e.j, e.t, e.have = j, t, true
	if !had || j < prev || t <= prevT {
		return 0, false
	}
	return (j - prev) / (t - prevT).Seconds(), true
}

// kernelRelease is the running kernel's release, the version of the
// in-tree i915 and xe drivers.
func kernelRelease(procRoot string) string {
	r := &amdsysfs.Reader{FS: os.DirFS(procRoot)}
	b, err := r.Read("sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return amdsysfs.ParseString(b)
}

// intelName names an Intel GPU no library names: its PCI ids.
func intelName(pciID string) string {
	if pciID == "" {
		return "Intel GPU"
	}
	return "Intel GPU " + pciID
}

// drmClients is the DRM clients of the node, read once per poll from
// every process's fdinfo and shared by the Intel backends.
type drmClients struct {
	scanner drmfdinfo.Scanner
	tracker drmfdinfo.Tracker
	cycle   uint64 // the Source's cycle of the last scan
	usage   []drmfdinfo.Usage
	stats   drmfdinfo.Stats
	err     error
	start   time.Time
}

// intelClients returns the node's DRM clients of this poll, scanning once
// per cycle.
func (s *Source) intelClients() *drmClients {
	c := s.drm
	if c == nil {
		c = &drmClients{scanner: drmfdinfo.Scanner{Root: s.cfg.procRoot}, start: s.cfg.now()}
		s.drm = c
	}
	if c.cycle == s.cycle {
		return c
	}
	c.cycle = s.cycle
	c.tracker.Begin()
	c.stats, c.err = c.scanner.Scan(func(pid, fd int, cl *drmfdinfo.Client) {
		c.tracker.Add(pid, fd, cl, int64(s.cfg.now().Sub(c.start)))
	})
	c.usage = c.tracker.End()
	if c.err != nil {
		s.errors.addNamed("", intelReadNames[irProcesses], amdsysfs.ErrorName(c.err))
	}
	return c
}

// deviceEngines sums the clients' engine shares of the device at pci into
// sm, by class, capped at 1, with the busiest class as the device's
// general utilization: what the device did for the clients the agent
// sees (a lower bound). It reports whether any client gave a figure.
func (c *drmClients) deviceEngines(pci string, sm *sample) bool {
	var sum [numEngineClasses]float64
	var has uint16
	clients := 0
	for i := range c.usage {
		u := &c.usage[i]
		if !u.Key.PDev.Is(pci) {
			continue
		}
		clients++
		for j := range u.NEngines {
			e := &u.Engines[j]
			cl, ok := fdinfoClass(e.Name.Bytes())
			if !ok || !e.Has {
				continue
			}
			sum[cl] += e.Ratio
			has |= 1 << cl
		}
	}
	if has == 0 {
		if clients == 0 && c.err == nil && c.stats.Denied == 0 {
			// Every process was seen and none holds the GPU: idle. (A
			// client seen for the first time has no figure yet.)
			sm.util, sm.have = 0, sm.have|fUtil
			return true
		}
		return false
	}
	general := 0.0
	for cl := range numEngineClasses {
		if has&(1<<cl) == 0 {
			continue
		}
		v := min(sum[cl], 1)
		sm.setEngine(cl, -1, v)
		general = max(general, v)
	}
	sm.util, sm.have = general, sm.have|fUtil
	return true
}

// processes adds the processes with clients on the device at pci to sm:
// their memory (unless withMemory is false: another reader gives it) and
// their engine shares, each client counted under one process.
func (c *drmClients) processes(pci string, sm *sample, withMemory bool) {
	for i := range c.usage {
		u := &c.usage[i]
		if !u.Key.PDev.Is(pci) {
			continue
		}
		p := procFor(sm, uint32(u.PID))
		if withMemory && u.HasMemory {
			p.memory, p.hasMem = clampInt64(uint64(p.memory)+u.Memory), true
		}
		for j := range u.NEngines {
			e := &u.Engines[j]
			cl, ok := fdinfoClass(e.Name.Bytes())
			if !ok || !e.Has {
				continue
			}
			p.eng[cl] = min(p.eng[cl]+e.Ratio, 1)
			p.engHave |= 1 << cl
		}
	}
}

// procFor returns sm's process pid, adding it.
func procFor(sm *sample, pid uint32) *procSample {
	for i := range sm.procs {
		if sm.procs[i].pid == pid {
			return &sm.procs[i]
		}
	}
	sm.procs = append(sm.procs, procSample{pid: pid})
	return &sm.procs[len(sm.procs)-1]
}

// describeIntel says, device by device, how an Intel backend reads its
// GPUs.
func describeIntel(devs []*intelDevice) string {
	var parts []string
	for _, d := range devs {
		p := fmt.Sprintf("%s %s: engines from %s", d.PCIAddress, d.Name, d.path)
		if d.why != "" {
			p += " (" + d.why + ")"
		}
		parts = append(parts, p)
	}
	return fmt.Sprintf("%d device(s): %s", len(devs), strings.Join(parts, "; "))
}

// intelCards lists the node's i915 and xe cards; none is unavailable.
// Both Intel backends start here, so that a node without an Intel GPU
// never loads Level Zero.
func intelCards(s *Source) ([]intelsysfs.Card, error) {
	cards, err := intelsysfs.Cards(s.cfg.sysfs)
	if err != nil {
		return nil, xpuscope.Unavailablef("gpu: no Intel GPU: sysfs at %s: %v", s.cfg.sysfsRoot, err)
	}
	if len(cards) == 0 {
		return nil, xpuscope.Unavailablef("gpu: no Intel GPU: no card of the i915 or xe driver in %s/%s", s.cfg.sysfsRoot, intelsysfs.DRMDir)
	}
	return cards, nil
}
