package gpu

import (
	"fmt"
	"sync"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/intelsysfs"
	"github.com/xpuscope/xpuscope/internal/levelzero"
	"github.com/xpuscope/xpuscope/semconv"
)

// The Level Zero backend: Intel GPUs through Level Zero Sysman (package
// internal/levelzero, purego), where Intel's compute runtime is installed.
// It reads each engine group's activity (utilization = Δ activeTime /
// Δ timestamp, per group, per tile where the group is a sub-device's),
// the device memory modules' state and bandwidth counters, the card power
// domain's energy counter (W = ΔµJ / Δµs), the temperature sensors, the
// frequency domains and the processes. The first read of a counter gives
// no rate. A query that fails for a GPU retires that group of reads for
// the GPU, counted, as Intel's own collectors do; one the GPU does not
// support retires it uncounted. Level Zero is loaded only when sysfs shows
// an i915 or xe card.

// maxLZProcesses bounds the processes read of one GPU.
const maxLZProcesses = 1024

type levelZeroBackend struct {
	s       *Source
	lib     *levelzero.Lib
	how     string // how Sysman was initialised
	devices []*lzDevice
}

// lzGroup is one engine group of a device.
type lzGroup struct {
	h     levelzero.Handle
	typ   levelzero.EngineGroup
	tile  int // -1: the whole device
	prev  levelzero.EngineStats
	ready bool // prev holds a read
}

// lzDomain is one sensor or domain and what kind it is.
type lzDomain struct {
	h    levelzero.Handle
	typ  uint32
	tile int
}

// lzDevice is an Intel GPU read through Level Zero.
type lzDevice struct {
	*intelDevice
	h      levelzero.Handle
	groups []lzGroup
	mems   []levelzero.Handle // the device-memory modules
	power  levelzero.Handle   // the card's power domain; 0: none
	temps  []lzDomain
	freqs  []lzDomain

	energyPrev  levelzero.EnergyCounter
	energyReady bool
	bwPrev      levelzero.MemBandwidth // summed over the modules
	bwReady     bool
}

// openLevelZero loads the loader, initialises Sysman and finds the GPUs.
func openLevelZero(s *Source) (backend, error) {
	list, err := intelCards(s)
	if err != nil {
		return nil, err
	}
	cards := map[string]intelsysfs.Card{}
	for _, c := range list {
		cards[c.PCIAddress] = c
	}
	lib, err := levelzero.Open(s.cfg.levelZeroPath)
	if err != nil {
		return nil, xpuscope.Unavailablef("gpu: %v", err)
	}
	how, r := lib.Init()
	if r != levelzero.Success {
		hint := ""
		if r == levelzero.ErrorUninitialized {
			hint = ": no Level Zero driver for the GPUs (Intel's compute runtime, libze_intel_gpu.so.1, is not installed, or found no GPU)"
		}
		return nil, xpuscope.Unavailablef("gpu: Level Zero %s: %s: %s (0x%x)%s", lib.Path(), how, r, uint32(r), hint)
	}
	handles, r := lib.Devices()
	if r != levelzero.Success {
		return nil, xpuscope.Unavailablef("gpu: Level Zero %s: listing the devices: %s", lib.Path(), r)
	}
	b := &levelZeroBackend{s: s, lib: lib, how: how}
	for _, h := range handles {
		d, err := b.openDevice(h, len(b.devices))
		if err != nil {
			continue // not a GPU, or no identity: left out
		}
		if c, ok := cards[d.PCIAddress]; ok {
			d.card = c.Name
			d.podID = c.Name + "-0"
		}
		b.devices = append(b.devices, d)
	}
	if len(b.devices) == 0 {
		return nil, xpuscope.Unavailablef("gpu: Level Zero %s found no GPU (%d device(s) listed)", lib.Path(), len(handles))
	}
	if s.intelRead == nil {
		s.intelRead = map[string]bool{}
	}
	for _, d := range b.devices {
		s.intelRead[d.PCIAddress] = true
		s.devices = append(s.devices, d.device)
	}
	return b, nil
}

// coreTypeGPU is ZE_DEVICE_TYPE_GPU.
const coreTypeGPU = 1

// openDevice reads one device's identity and lists what it has.
func (b *levelZeroBackend) openDevice(h levelzero.Handle, index int) (*lzDevice, error) {
	lib := b.lib
	var props levelzero.DeviceProperties
	if r := lib.DeviceProperties(h, &props); r != levelzero.Success {
		return nil, levelzero.Err("zesDeviceGetProperties", r)
	}
	if props.Core.Type != coreTypeGPU {
		return nil, fmt.Errorf("device type %d is not a GPU", props.Core.Type)
	}
	var pci levelzero.PCIProperties
	if r := lib.PCIProperties(h, &pci); r != levelzero.Success {
		return nil, levelzero.Err("zesDevicePciGetProperties", r)
	}
	addr := pci.Address.String()
	name := levelzero.String(props.Core.Name[:])
	if name == "" {
		name = levelzero.String(props.ModelName[:])
	}
	if name == "" {
		name = intelName(fmt.Sprintf("%04X:%04X", props.Core.VendorID, props.Core.DeviceID))
	}
	info := Device{Index: index, UUID: addr, Name: name, PCIAddress: addr}
	d := &lzDevice{h: h}
	d.intelDevice = newIntelDevice(info, levelzero.String(props.DriverVersion[:]), "", semconv.MeasurementSourceLevelZero, int(props.NumSubdevices))
	d.path = "Level Zero (" + b.how + ")"

	if gs, r := lib.Enum(h, levelzero.Engines); r == levelzero.Success {
		for _, g := range gs {
			var p levelzero.EngineProperties
			if lib.EngineProperties(g, &p) != levelzero.Success {
				continue
			}
			tile := -1
			if p.OnSubdevice != 0 {
				tile = int(p.SubdeviceID)
			}
			d.groups = append(d.groups, lzGroup{h: g, typ: p.Type, tile: tile})
		}
	}
	if len(d.groups) == 0 {
		d.retire(irEngines)
	}
	if ms, r := lib.Enum(h, levelzero.MemoryModules); r == levelzero.Success {
		for _, m := range ms {
			var p levelzero.MemProperties
			if lib.MemoryProperties(m, &p) == levelzero.Success && p.Location == levelzero.MemLocDevice {
				d.mems = append(d.mems, m)
			}
		}
	}
	if len(d.mems) == 0 {
		d.retire(irMemory)
		d.retire(irBandwidth)
	}
	d.power = b.cardPower(h)
	if d.power == 0 {
		d.retire(irPower)
	}
	if ts, r := lib.Enum(h, levelzero.TemperatureSensors); r == levelzero.Success {
		for _, t := range ts {
			var p levelzero.TempProperties
			if lib.TemperatureProperties(t, &p) == levelzero.Success {
				d.temps = append(d.temps, lzDomain{h: t, typ: p.Type, tile: tileOf(p.OnSubdevice, p.SubdeviceID)})
			}
		}
	}
	if fs, r := lib.Enum(h, levelzero.FrequencyDomains); r == levelzero.Success {
		for _, f := range fs {
			var p levelzero.FreqProperties
			if lib.FrequencyProperties(f, &p) == levelzero.Success {
				d.freqs = append(d.freqs, lzDomain{h: f, typ: p.Type, tile: tileOf(p.OnSubdevice, p.SubdeviceID)})
			}
		}
	}
	return d, nil
}

func tileOf(onSubdevice uint8, id uint32) int {
	if onSubdevice == 0 {
		return -1
	}
	return int(id)
}

// cardPower returns the power domain of the whole card:
// zesDeviceGetCardPowerDomain, else the one domain that is not a
// sub-device's; 0 when there is none.
func (b *levelZeroBackend) cardPower(h levelzero.Handle) levelzero.Handle {
	if p, r := b.lib.CardPowerDomain(h); r == levelzero.Success && p != 0 {
		return p
	}
	ps, r := b.lib.Enum(h, levelzero.PowerDomains)
	if r != levelzero.Success {
		return 0
	}
	for _, p := range ps {
		var props levelzero.PowerProperties
		if b.lib.PowerProperties(p, &props) == levelzero.Success && props.OnSubdevice == 0 {
			return p
		}
	}
	return 0
}

// start starts nothing: the backend reads only when polled.
func (b *levelZeroBackend) start(<-chan struct{}, *sync.WaitGroup) {}

func (b *levelZeroBackend) close() error { return b.lib.Close() }

func (b *levelZeroBackend) describe() (int, string) {
	devs := make([]*intelDevice, len(b.devices))
	for i, d := range b.devices {
		devs[i] = d.intelDevice
	}
	return len(b.devices), describeIntel(devs)
}

func (b *levelZeroBackend) poll(sn *snapshot) {
	s := b.s
	clients := s.intelClients()
	for _, d := range b.devices {
		sm := s.sample(sn, d.device)
		b.readEngines(d, sm)
		b.readMemory(d, sm)
		b.readPower(d, sm)
		b.readTemperature(d, sm)
		b.readFrequency(d, sm)
		b.readProcesses(d, sm)
		clients.processes(d.PCIAddress, sm, false)
		s.finishProcesses(d.device, sm)
		s.forget(d.device)
	}
}

// ok records the outcome of a call of read r: success is true; an
// unsupported feature retires the read uncounted; any other failure
// retires it for the GPU and is counted.
func (b *levelZeroBackend) ok(d *lzDevice, r intelRead, res levelzero.Result) bool {
	if res == levelzero.Success {
		return true
	}
	d.retire(r)
	if !res.Unsupported() {
		b.s.errors.addNamed(d.UUID, intelReadNames[r], res.String())
	}
	return false
}

// groupTarget is where an engine group's figure goes: an engine class,
// or a task of hw.gpu.utilization (general, encoder, decoder).
type groupTarget struct {
	class  engineClass
	task   field // fUtil, fEncoder, fDecoder; 0 for a class
	single bool  // a _SINGLE group, averaged with its class's others
}

// lzTargets maps Level Zero's engine groups (zes_api.h, zes_engine_group_t)
// to what they report.
var lzTargets = map[levelzero.EngineGroup]groupTarget{
	levelzero.EngineAll:                {class: ecAll, task: fUtil},
	levelzero.EngineComputeAll:         {class: ecCompute},
	levelzero.EngineMediaAll:           {class: ecMedia},
	levelzero.EngineCopyAll:            {class: ecCopy},
	levelzero.EngineComputeSingle:      {class: ecCompute, single: true},
	levelzero.EngineRenderSingle:       {class: ecRender, single: true},
	levelzero.EngineMediaDecodeSingle:  {class: ecVideo, task: fDecoder, single: true},
	levelzero.EngineMediaEncodeSingle:  {class: ecVideo, task: fEncoder, single: true},
	levelzero.EngineCopySingle:         {class: ecCopy, single: true},
	levelzero.EngineMediaEnhanceSingle: {class: ecVideoEnhance, single: true},
	levelzero.Engine3DSingle:           {class: ec3D, single: true},
	levelzero.Engine3DRenderComputeAll: {class: ec3D},
	levelzero.EngineRenderAll:          {class: ecRender},
	levelzero.Engine3DAll:              {class: ec3D},
}

// engineAcc accumulates the groups of one (tile, class or task) slot.
type engineAcc struct {
	all    float64 // an _ALL group's figure
	hasAll bool
	sum    float64 // the _SINGLE groups'
	n      int
	tile   int
	class  engineClass
	task   field
}

func (b *levelZeroBackend) readEngines(d *lzDevice, sm *sample) {
	if !d.can(irEngines) {
		return
	}
	var accs [64]engineAcc
	n := 0
	slot := func(tile int, class engineClass, task field) *engineAcc {
		for i := range n {
			if a := &accs[i]; a.tile == tile && a.class == class && a.task == task {
				return a
			}
		}
		if n == len(accs) {
			return nil
		}
		accs[n] = engineAcc{tile: tile, class: class, task: task}
		n++
		return &accs[n-1]
	}
	for i := range d.groups {
		g := &d.groups[i]
		st, r := b.lib.EngineActivity(g.h)
		if !b.ok(d, irEngines, r) {
			return
		}
		prev, ready := g.prev, g.ready
		g.prev, g.ready = st, true
		if !ready || st.Timestamp <= prev.Timestamp || st.ActiveTime < prev.ActiveTime {
			continue // the first read, or a counter that went back: no figure
		}
		v := min(float64(st.ActiveTime-prev.ActiveTime)/float64(st.Timestamp-prev.Timestamp), 1)
		t, ok := lzTargets[g.typ]
		if !ok || g.tile >= maxTiles {
			continue
		}
		task := t.task
		if g.tile >= 0 {
			task = 0 // hw.gpu.utilization is the device's: a tile's go to its engine series
		}
		a := slot(g.tile, t.class, task)
		if a == nil {
			continue
		}
		if t.single {
			a.sum += v
			a.n++
		} else {
			a.all, a.hasAll = v, true
		}
	}
	for i := range n {
		a := &accs[i]
		v := a.all
		if !a.hasAll {
			v = a.sum / float64(a.n)
		}
		switch {
		case a.task == fUtil:
			sm.util, sm.have = v, sm.have|fUtil
		case a.task == fEncoder:
			sm.encoder, sm.have = v, sm.have|fEncoder
		case a.task == fDecoder:
			sm.decoder, sm.have = v, sm.have|fDecoder
		case a.tile < 0 && a.class == ecAll:
			// the device's ALL group is hw.gpu.utilization's
		default:
			sm.setEngine(a.class, a.tile, v)
		}
	}
}

func (b *levelZeroBackend) readMemory(d *lzDevice, sm *sample) {
	if d.can(irMemory) {
		var used, total uint64
		okAll := true
		for _, m := range d.mems {
			st, r := b.lib.MemoryState(m)
			if !b.ok(d, irMemory, r) {
				okAll = false
				break
			}
			total += st.Size
			used += st.Size - min(st.Free, st.Size)
		}
		if okAll {
			setMemory(sm, used, total)
		}
	}
	if d.can(irBandwidth) {
		var sum levelzero.MemBandwidth
		for _, m := range d.mems {
			bw, r := b.lib.MemoryBandwidth(m)
			if !b.ok(d, irBandwidth, r) {
				return
			}
			sum.ReadCounter += bw.ReadCounter
			sum.WriteCounter += bw.WriteCounter
			sum.Timestamp = max(sum.Timestamp, bw.Timestamp)
		}
		prev, ready := d.bwPrev, d.bwReady
		d.bwPrev, d.bwReady = sum, true
		if ready && sum.Timestamp > prev.Timestamp && sum.ReadCounter >= prev.ReadCounter && sum.WriteCounter >= prev.WriteCounter {
			dt := float64(sum.Timestamp-prev.Timestamp) * micro // µs → s
			sm.setAccel(avMemRead, float64(sum.ReadCounter-prev.ReadCounter)/dt)
			sm.setAccel(avMemWrite, float64(sum.WriteCounter-prev.WriteCounter)/dt)
		}
	}
}

func (b *levelZeroBackend) readPower(d *lzDevice, sm *sample) {
	if !d.can(irPower) {
		return
	}
	e, r := b.lib.EnergyCounter(d.power)
	if !b.ok(d, irPower, r) {
		return
	}
	sm.energy, sm.have = float64(e.Energy)*micro, sm.have|fEnergy
	prev, ready := d.energyPrev, d.energyReady
	d.energyPrev, d.energyReady = e, true
	if ready && e.Timestamp > prev.Timestamp && e.Energy >= prev.Energy {
		// µJ / µs = W
		sm.power, sm.have = float64(e.Energy-prev.Energy)/float64(e.Timestamp-prev.Timestamp), sm.have|fPower
	}
}

func (b *levelZeroBackend) readTemperature(d *lzDevice, sm *sample) {
	if !d.can(irTempGPU) || len(d.temps) == 0 {
		return
	}
	// The device's own sensors; where it has none of a kind, the hottest
	// tile's.
	var gpu, mem, gpuTile, memTile, global float64
	var hasGPU, hasMem, hasGPUTile, hasMemTile, hasGlobal bool
	for _, t := range d.temps {
		v, r := b.lib.Temperature(t.h)
		if !b.ok(d, irTempGPU, r) {
			return
		}
		switch {
		case t.typ == levelzero.TempGPU && t.tile < 0:
			gpu, hasGPU = v, true
		case t.typ == levelzero.TempMemory && t.tile < 0:
			mem, hasMem = v, true
		case t.typ == levelzero.TempGlobal && t.tile < 0:
			global, hasGlobal = v, true
		case t.typ == levelzero.TempGPU:
			gpuTile, hasGPUTile = max(gpuTile, v), true
		case t.typ == levelzero.TempMemory:
			memTile, hasMemTile = max(memTile, v), true
		}
	}
	switch {
	case hasGPU:
		setTemperature(sm, fTemperature, gpu)
	case hasGPUTile:
		setTemperature(sm, fTemperature, gpuTile)
	case hasGlobal:
		setTemperature(sm, fTemperature, global)
	}
	switch {
	case hasMem:
		setTemperature(sm, fTempMemory, mem)
	case hasMemTile:
		setTemperature(sm, fTempMemory, memTile)
	}
}

func (b *levelZeroBackend) readFrequency(d *lzDevice, sm *sample) {
	if !d.can(irClock) || len(d.freqs) == 0 {
		return
	}
	var gpu, mem [2]float64 // [0] the device's, [1] the fastest tile's
	var has [2][2]bool
	for _, f := range d.freqs {
		st, r := b.lib.FrequencyState(f.h)
		if !b.ok(d, irClock, r) {
			return
		}
		if st.Actual < 0 {
			continue // unknown
		}
		k := 0
		if f.tile >= 0 {
			k = 1
		}
		switch f.typ {
		case levelzero.FreqGPU:
			gpu[k], has[0][k] = max(gpu[k], st.Actual), true
		case levelzero.FreqMemory:
			mem[k], has[1][k] = max(mem[k], st.Actual), true
		}
	}
	for k := range 2 {
		if has[0][k] {
			sm.clockSM, sm.have = gpu[k]*mega, sm.have|fClockSM
			break
		}
	}
	for k := range 2 {
		if has[1][k] {
			sm.clockMemory, sm.have = mem[k]*mega, sm.have|fClockMemory
			break
		}
	}
}

func (b *levelZeroBackend) readProcesses(d *lzDevice, sm *sample) {
	if !d.can(irProcesses) {
		return
	}
	procs, r := b.lib.Processes(d.h, maxLZProcesses)
	if !b.ok(d, irProcesses, r) {
		return
	}
	for i := range procs {
		p := procFor(sm, procs[i].ProcessID)
		p.memory, p.hasMem = clampInt64(procs[i].MemSize), true
	}
}
