package gpu

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/dcgm"
	"github.com/xpuscope/xpuscope/internal/dynlib"
	"github.com/xpuscope/xpuscope/semconv"
)

// The DCGM backend: the profiling fields of NVIDIA GPUs (package
// internal/dcgm, purego) that NVML does not give: SM activity and
// occupancy, tensor, FP64/32/16 pipe and DRAM activity, PCIe and NVLink
// throughput. It reads the GPUs NVML found, under their hw.id, each
// series with gpu.measurement.source=dcgm; MIG compute instances too,
// where DCGM reports them.
//
// Its fields are watched at the poll interval and read with
// dcgmEntityGetLatestValues. A GPU counts only so many profiling fields in
// one pass: they are added one by one, and one the GPU cannot count beside
// those before it (DCGM_ST_PROFILING_MULTI_PASS) is dropped for that GPU
// and listed in xpuscope.gpu.field.unavailable. When another profiler
// (Nsight Compute or Systems, CUPTI, a second host engine) holds the
// counters, the watch fails with DCGM_ST_IN_USE: the backend says so in
// Status, counts a scrape miss with reason profiling_busy each poll, and
// tries again at the next. It never calls dcgmProfPause or dcgmProfResume:
// handing the counters over is the user's call (docs/gpu.md).

// dcgmProbe is where the backend looks for nv-hostengine.
type dcgmProbe struct {
	socket  string        // its domain socket
	tcp     string        // host:port
	timeout time.Duration // for each probe and the connection
}

var defaultDCGMProbe = dcgmProbe{
	socket:  dcgm.DefaultHostEngineSocket,
	tcp:     net.JoinHostPort("127.0.0.1", strconv.Itoa(dcgm.DefaultHostEnginePort)),
	timeout: 500 * time.Millisecond,
}

// withDCGMProbe makes the backend look for nv-hostengine at p: a test
// seam.
func withDCGMProbe(socket, tcp string) Option {
	return optionFunc(func(c *config) { c.dcgmProbe.socket, c.dcgmProbe.tcp = socket, tcp })
}

// dcgmLibraryDirs are where DCGM is looked for besides the loader path:
// the distributions' library directories, as a container sees them when
// it mounts the host's, and the NVIDIA GPU operator's driver root.
var dcgmLibraryDirs = []string{
	"/usr/lib/x86_64-linux-gnu", "/usr/lib64",
	"/run/nvidia/driver/usr/lib/x86_64-linux-gnu", "/run/nvidia/driver/usr/lib64",
}

// dcgmProfFields are the profiling fields read, in the order they are
// added to a GPU's watch, and the value each gives.
var dcgmProfFields = []struct {
	id dcgm.FieldID
	av accelValue
}{
	{dcgm.FIProfSMActive, avSM},
	{dcgm.FIProfSMOccupancy, avOccupancy},
	{dcgm.FIProfPipeTensorActive, avTensor},
	{dcgm.FIProfDRAMActive, avDRAM},
	{dcgm.FIProfGrEngineActive, avGraphics},
	{dcgm.FIProfPipeFP64Active, avFP64},
	{dcgm.FIProfPipeFP32Active, avFP32},
	{dcgm.FIProfPipeFP16Active, avFP16},
	{dcgm.FIProfPCIeTxBytes, avPCIeTx},
	{dcgm.FIProfPCIeRxBytes, avPCIeRx},
	{dcgm.FIProfNVLinkTxBytes, avNVLinkTx},
	{dcgm.FIProfNVLinkRxBytes, avNVLinkRx},
}

// dcgmAccel maps a profiling field to its value.
func dcgmAccel(id dcgm.FieldID) accelValue {
	for _, f := range dcgmProfFields {
		if f.id == id {
			return f.av
		}
	}
	return numAccel
}

// dcgmRatio reports whether a field is a ratio (the rest are bytes a
// second).
func dcgmRatio(id dcgm.FieldID) bool { return id < dcgm.FIProfPCIeTxBytes }

// dcgmCIField reports whether a compute instance has the field: PCIe and
// NVLink are counted per GPU.
func dcgmCIField(id dcgm.FieldID) bool { return dcgmRatio(id) }

type dcgmBackend struct {
	s      *Source
	lib    *dcgm.Lib
	h      dcgm.Handle
	engine string // "" embedded; else nv-hostengine's address
	unix   bool   // engine is a domain socket
	lost   bool   // the host engine's connection failed: reconnect at the next poll
	driver string
	gpus   []*dcgmGPU
	values []dcgm.FieldValue // scratch, one per profiling field
	names  int               // for unique field group names
	noMIG  dcgm.Return       // why the MIG hierarchy could not be read
}

// dcgmGPU is a GPU and what DCGM watches of it.
type dcgmGPU struct {
	id       uint32
	uuid     string
	d        *device
	group    dcgm.Group
	fg       dcgm.FieldGroup // the watched fields; 0 when none is
	fields   []dcgm.FieldID  // watched on the GPU
	ciFields []dcgm.FieldID  // watched on its compute instances
	dropped  []string        // fields it cannot watch, and why
	busy     bool            // another profiler holds the counters: try again
	cis      []*dcgmCI
}

// dcgmCI is a MIG compute instance of a GPU.
type dcgmCI struct {
	id     uint32 // DCGM's entity id
	gi, ci int    // NVML's GPU-instance and compute-instance ids
	d      *device
}

// openDCGMLib loads the configured library, or the first of DCGM's sonames
// that loads from the loader path or the directories DCGM is found in.
func openDCGMLib(path string) (*dcgm.Lib, error) {
	if path != "" {
		return dcgm.Open(path)
	}
	var first error
	for _, name := range dcgm.DefaultLibraries {
		lib, err := dcgm.Open(name)
		if err == nil {
			return lib, nil
		}
		if first == nil {
			first = err
		}
	}
	for _, dir := range dcgmLibraryDirs {
		for _, name := range dcgm.DefaultLibraries {
			p := filepath.Join(dir, name)
			if _, err := os.Stat(p); err != nil {
				continue
			}
			if lib, err := dcgm.Open(p); err == nil {
				return lib, nil
			}
		}
	}
	return nil, fmt.Errorf("%w (nor %s, nor in %s)", first, strings.Join(dcgm.DefaultLibraries[1:], ", "), strings.Join(dcgmLibraryDirs, ", "))
}

// openDCGM loads DCGM, starts or connects to a host engine, finds the GPUs
// and watches their profiling fields.
func openDCGM(s *Source) (backend, error) {
	lib, err := openDCGMLib(s.cfg.dcgmPath)
	if err != nil {
		return nil, xpuscope.Unavailablef("gpu: %v", err)
	}
	if r := lib.Init(); r != dcgm.OK {
		err := lib.Err("dcgmInit", r)
		_ = lib.Close()
		return nil, xpuscope.Unavailablef("gpu: DCGM %s: %v", lib.Path(), err)
	}
	b := &dcgmBackend{s: s, lib: lib, values: make([]dcgm.FieldValue, len(dcgmProfFields))}
	if err := b.connect(); err != nil {
		b.shutdown()
		return nil, err
	}
	if err := b.discover(); err != nil {
		_ = b.close()
		return nil, err
	}
	for _, g := range b.gpus {
		b.watch(g)
	}
	if !slices.ContainsFunc(b.gpus, func(g *dcgmGPU) bool { return len(g.fields) > 0 || g.busy }) {
		why := b.gpus[0].dropped
		_ = b.close()
		return nil, xpuscope.Unavailablef("gpu: DCGM %s watches no profiling field of its %d GPU(s): %s", lib.Path(), len(b.gpus), strings.Join(why, "; "))
	}
	// The first update: values for New's poll.
	_ = lib.UpdateAll(b.h, true)
	return b, nil
}

// connect connects to the configured host engine, else to one found on
// its default socket or port, else starts an embedded one.
func (b *dcgmBackend) connect() error {
	cfg := b.s.cfg
	switch {
	case cfg.dcgmEngine != nil && *cfg.dcgmEngine == "":
		return b.startEmbedded()
	case cfg.dcgmEngine != nil:
		addr, unix := strings.CutPrefix(*cfg.dcgmEngine, "unix://")
		if h, r := b.lib.Connect(addr, unix, cfg.dcgmProbe.timeout); r != dcgm.OK {
			return xpuscope.Unavailablef("gpu: DCGM %s: nv-hostengine at %s: %v", b.lib.Path(), *cfg.dcgmEngine, b.lib.Err("dcgmConnect_v2", r))
		} else {
			b.h, b.engine, b.unix = h, addr, unix
		}
		return nil
	}
	p := cfg.dcgmProbe
	for _, try := range []struct {
		network, addr string
	}{{"unix", p.socket}, {"tcp", p.tcp}} {
		if try.addr == "" {
			continue
		}
		c, err := net.DialTimeout(try.network, try.addr, p.timeout)
		if err != nil {
			continue
		}
		_ = c.Close()
		if h, r := b.lib.Connect(try.addr, try.network == "unix", p.timeout); r == dcgm.OK {
			b.h, b.engine, b.unix = h, try.addr, try.network == "unix"
			return nil
		}
	}
	return b.startEmbedded()
}

func (b *dcgmBackend) startEmbedded() error {
	h, r := b.lib.StartEmbedded()
	if r != dcgm.OK {
		return xpuscope.Unavailablef("gpu: DCGM %s: %v", b.lib.Path(), b.lib.Err("dcgmStartEmbedded", r))
	}
	b.h = h
	return nil
}

// discover finds the GPUs DCGM supports, their identity (joined to the
// device another backend found with the same UUID) and their MIG compute
// instances.
func (b *dcgmBackend) discover() error {
	lib := b.lib
	ids, r := lib.SupportedGPUs(b.h)
	if r != dcgm.OK {
		return xpuscope.Unavailablef("gpu: DCGM %s: %v", lib.Path(), lib.Err("dcgmGetAllSupportedDevices", r))
	}
	if len(ids) == 0 {
		return xpuscope.Unavailablef("gpu: DCGM %s supports no GPU on this node", lib.Path())
	}
	idFields := []dcgm.FieldID{dcgm.FIDevUUID, dcgm.FIDevName, dcgm.FIDevPCIBusID}
	g, fg, err := b.watchOnce(ids, idFields)
	if err != nil {
		return err
	}
	defer b.unwatch(g, fg)
	if r := lib.LatestValues(b.h, dcgm.FENone, 0, []dcgm.FieldID{dcgm.FIDriverVersion}, b.values); r == dcgm.OK {
		b.driver, _ = dcgm.String(&b.values[0])
	}
	var failed []string
	for i, id := range ids {
		if r := lib.LatestValues(b.h, dcgm.FEGPU, id, idFields, b.values); r != dcgm.OK {
			failed = append(failed, fmt.Sprintf("GPU %d: %v", id, lib.Err("dcgmEntityGetLatestValues", r)))
			continue
		}
		uuid, blank := dcgm.String(&b.values[0])
		if blank != dcgm.NotBlank || uuid == "" {
			failed = append(failed, fmt.Sprintf("GPU %d: DCGM_FI_DEV_UUID: %v", id, blank))
			continue
		}
		name, _ := dcgm.String(&b.values[1])
		bus, _ := dcgm.String(&b.values[2])
		b.gpus = append(b.gpus, &dcgmGPU{id: id, uuid: uuid, d: b.device(i, uuid, name, bus)})
	}
	if len(b.gpus) == 0 {
		return xpuscope.Unavailablef("gpu: none of the %d GPUs DCGM %s supports could be identified: %s", len(ids), lib.Path(), strings.Join(failed, "; "))
	}
	b.discoverMIG()
	return nil
}

// device is the DCGM series' device of GPU uuid: the identity of the
// device another backend (NVML) found with that UUID, else DCGM's own.
func (b *dcgmBackend) device(index int, uuid, name, bus string) *device {
	info := Device{Index: index, UUID: uuid, Name: name, PCIAddress: pciAddress(bus)}
	if d := b.s.primary(uuid); d != nil {
		info = d.Device
	}
	info.SMs, info.ThreadsPerSM = 0, 0
	return newAccelDevice(info, semconv.VendorNVIDIA, semconv.HWTypeGPU, b.driverVersion(), uuid, semconv.MeasurementSourceDCGM)
}

// driverVersion is NVML's driver version, else DCGM's.
func (b *dcgmBackend) driverVersion() string {
	if nb := b.s.nvml(); nb != nil {
		return nb.driver
	}
	return b.driver
}

// discoverMIG finds the GPUs' compute instances in DCGM's hierarchy, where
// the library has it.
func (b *dcgmBackend) discoverMIG() {
	var hier dcgm.MigHierarchy
	if r := b.lib.Hierarchy(b.h, &hier); r != dcgm.OK {
		b.noMIG = r
		return
	}
	for _, e := range hier.EntityList[:min(hier.Count, dcgm.MaxHierarchyInfo)] {
		if e.Entity.EntityGroup != dcgm.FEGPUCI {
			continue
		}
		uuid := dynlib.BufString(e.Info.GPUUUID[:])
		for _, g := range b.gpus {
			if g.uuid == uuid {
				g.cis = append(g.cis, &dcgmCI{id: e.Entity.EntityID, gi: int(e.Info.NVMLInstanceID), ci: int(e.Info.NVMLComputeInstanceID)})
			}
		}
	}
}

// fieldGroupName is a new name for a field group: unique in the host
// engine, which may serve other clients.
func (b *dcgmBackend) fieldGroupName() string {
	b.names++
	return fmt.Sprintf("xpuscope-%d-%d", os.Getpid(), b.names)
}

// watchOnce watches fields on gpus and waits for their first values, for
// the identity.
func (b *dcgmBackend) watchOnce(gpus []uint32, fields []dcgm.FieldID) (dcgm.Group, dcgm.FieldGroup, error) {
	lib := b.lib
	g, r := lib.GroupCreate(b.h, b.fieldGroupName())
	if r != dcgm.OK {
		return 0, 0, xpuscope.Unavailablef("gpu: DCGM %s: %v", lib.Path(), lib.Err("dcgmGroupCreate", r))
	}
	for _, id := range gpus {
		_ = lib.GroupAddEntity(b.h, g, dcgm.FEGPU, id)
	}
	fg, r := lib.FieldGroupCreate(b.h, fields, b.fieldGroupName())
	if r != dcgm.OK {
		_ = lib.GroupDestroy(b.h, g)
		return 0, 0, xpuscope.Unavailablef("gpu: DCGM %s: %v", lib.Path(), lib.Err("dcgmFieldGroupCreate", r))
	}
	if r := lib.Watch(b.h, g, fg, time.Second, time.Minute, 1); r != dcgm.OK {
		b.unwatch(g, fg)
		return 0, 0, xpuscope.Unavailablef("gpu: DCGM %s: %v", lib.Path(), lib.Err("dcgmWatchFields", r))
	}
	if r := lib.UpdateAll(b.h, true); r != dcgm.OK {
		b.unwatch(g, fg)
		return 0, 0, xpuscope.Unavailablef("gpu: DCGM %s: %v", lib.Path(), lib.Err("dcgmUpdateAllFields", r))
	}
	return g, fg, nil
}

func (b *dcgmBackend) unwatch(g dcgm.Group, fg dcgm.FieldGroup) {
	_ = b.lib.Unwatch(b.h, g, fg)
	_ = b.lib.FieldGroupDestroy(b.h, fg)
	_ = b.lib.GroupDestroy(b.h, g)
}

// keep returns how often the fields are sampled and how long samples are
// kept: every poll interval, for three intervals (at least a second, at
// most an hour).
func (b *dcgmBackend) keep() (every, age time.Duration) {
	every = b.s.cfg.interval
	age = min(max(3*every, time.Second), time.Hour)
	return every, age
}

// watch makes g's group and watches what g can count. It tries every
// field at once; when the GPU refuses, it adds them one by one, dropping
// each the GPU cannot count beside those before it.
func (b *dcgmBackend) watch(g *dcgmGPU) {
	lib := b.lib
	if g.group == 0 {
		grp, r := lib.GroupCreate(b.h, b.fieldGroupName())
		if r != dcgm.OK {
			g.dropped = []string{"dcgmGroupCreate: " + r.String()}
			return
		}
		g.group = grp
		_ = lib.GroupAddEntity(b.h, grp, dcgm.FEGPU, g.id)
		for _, ci := range g.cis {
			_ = lib.GroupAddEntity(b.h, grp, dcgm.FEGPUCI, ci.id)
		}
	}
	g.busy, g.dropped = false, nil
	all := make([]dcgm.FieldID, 0, len(dcgmProfFields))
	for _, f := range dcgmProfFields {
		all = append(all, f.id)
	}
	fg, r := b.tryWatch(g, all, true)
	switch r {
	case dcgm.OK:
		b.watched(g, fg, all)
		return
	case dcgm.InUse:
		g.busy = true
		return
	case dcgm.ProfilingMultiPass, dcgm.NotSupported, dcgm.BadParam:
		// some fields: find which, below
	default:
		// the GPU's profiling as a whole (not supported, not root, old
		// driver): no field will do
		for _, f := range all {
			b.s.scrape.unavailable.add(g.d.UUID, BackendDCGM, dcgm.FieldName(f), r.String(), 1)
		}
		g.dropped = []string{"profiling: " + r.String()}
		return
	}
	var accepted []dcgm.FieldID
	for _, f := range all {
		try := append(accepted[:len(accepted):len(accepted)], f)
		_, r := b.tryWatch(g, try, false)
		switch r {
		case dcgm.OK:
			accepted = try
			continue
		case dcgm.InUse:
			g.busy = true
			return
		}
		reason := r.String()
		if r == dcgm.ProfilingMultiPass {
			reason = semconv.GPUReasonCapacity
		}
		b.s.scrape.unavailable.add(g.d.UUID, BackendDCGM, dcgm.FieldName(f), reason, 1)
		g.dropped = append(g.dropped, dcgm.FieldName(f)+": "+reason)
	}
	if len(accepted) == 0 {
		return
	}
	if fg, r := b.tryWatch(g, accepted, true); r == dcgm.OK {
		b.watched(g, fg, accepted)
	} else if r == dcgm.InUse {
		g.busy = true
	}
}

// tryWatch watches fields on g's group: kept if keep is set, else
// unwatched again (a trial).
func (b *dcgmBackend) tryWatch(g *dcgmGPU, fields []dcgm.FieldID, keep bool) (dcgm.FieldGroup, dcgm.Return) {
	lib := b.lib
	fg, r := lib.FieldGroupCreate(b.h, fields, b.fieldGroupName())
	if r != dcgm.OK {
		return 0, r
	}
	every, age := b.keep()
	r = lib.Watch(b.h, g.group, fg, every, age, 3)
	if r != dcgm.OK || !keep {
		if r == dcgm.OK {
			_ = lib.Unwatch(b.h, g.group, fg)
		}
		_ = lib.FieldGroupDestroy(b.h, fg)
		return 0, r
	}
	return fg, dcgm.OK
}

func (b *dcgmBackend) watched(g *dcgmGPU, fg dcgm.FieldGroup, fields []dcgm.FieldID) {
	g.fg, g.fields, g.ciFields = fg, fields, nil
	for _, f := range fields {
		if dcgmCIField(f) {
			g.ciFields = append(g.ciFields, f)
		}
	}
}

func (b *dcgmBackend) start(<-chan struct{}, *sync.WaitGroup) {}

// poll reads every GPU's and compute instance's watched fields.
func (b *dcgmBackend) poll(sn *snapshot) {
	if b.lost && !b.reconnect() {
		b.s.scrape.misses.add("", BackendDCGM, "", dcgm.ConnectionNotValid.String(), 1)
		return
	}
	now := time.Now()
	for _, g := range b.gpus {
		if g.busy {
			b.watch(g)
			if g.busy {
				b.s.scrape.misses.add(g.d.UUID, BackendDCGM, "", semconv.GPUReasonProfilingBusy, 1)
				continue
			}
			_ = b.lib.UpdateAll(b.h, true)
		}
		if len(g.fields) == 0 {
			continue
		}
		if !b.read(sn, g.d, dcgm.FEGPU, g.id, g.fields, now) {
			continue
		}
		for _, ci := range g.cis {
			if ci.d == nil && !b.resolve(g, ci) {
				continue
			}
			if len(g.ciFields) > 0 {
				b.read(sn, ci.d, dcgm.FEGPUCI, ci.id, g.ciFields, now)
			}
		}
	}
}

// read reads fields of one entity into a sample of d. It reports false
// when the call failed.
func (b *dcgmBackend) read(sn *snapshot, d *device, eg dcgm.EntityGroup, id uint32, fields []dcgm.FieldID, now time.Time) bool {
	values := b.values[:len(fields)]
	if r := b.lib.LatestValues(b.h, eg, id, fields, values); r != dcgm.OK {
		b.s.scrape.misses.add(d.UUID, BackendDCGM, "", r.String(), 1)
		if r == dcgm.ConnectionNotValid && b.engine != "" {
			b.lost = true
		}
		return false
	}
	sm := b.s.sample(sn, d)
	oldest := now.Add(-3*b.s.cfg.interval - 5*time.Second).UnixMicro()
	for i := range values {
		v := &values[i]
		f := fields[i]
		x, blank := dcgm.Number(v)
		reason := ""
		switch {
		case blank == dcgm.BlankStatus:
			reason = dcgm.Return(v.Status).String()
		case blank != dcgm.NotBlank:
			reason = dcgmBlankReasons[blank]
		case v.TS < oldest:
			reason = semconv.GPUReasonStale
		case x < 0 || dcgmRatio(f) && x > 1+ratioSlack:
			reason = semconv.GPUReasonInvalid
		}
		if reason != "" {
			b.s.scrape.blanks.add(d.UUID, BackendDCGM, dcgm.FieldName(f), reason, 1)
			continue
		}
		if dcgmRatio(f) {
			x = min(x, 1)
		}
		sm.setAccel(dcgmAccel(f), x)
	}
	return true
}

// ratioSlack is how far above 1 a ratio DCGM computes from counters may
// round; it is reported as 1.
const ratioSlack = 1e-3

var dcgmBlankReasons = [...]string{
	dcgm.BlankValue:           semconv.GPUReasonBlank,
	dcgm.BlankNotFound:        semconv.GPUReasonNotFound,
	dcgm.BlankNotSupported:    semconv.GPUReasonNotSupported,
	dcgm.BlankNotPermissioned: semconv.GPUReasonNotPermissioned,
	dcgm.BlankNaN:             semconv.GPUReasonNaN,
	dcgm.BlankType:            semconv.GPUReasonType,
}

// resolve gives a compute instance its device: the MIG instance NVML
// reads with the same parent and ids, under its MIG- UUID. Without an
// NVML backend, the instance is named after its parent and ids.
func (b *dcgmBackend) resolve(g *dcgmGPU, ci *dcgmCI) bool {
	info := Device{
		Index: g.d.Index, UUID: fmt.Sprintf("%s/gi%d/ci%d", g.uuid, ci.gi, ci.ci), Name: g.d.Name,
		PCIAddress: g.d.PCIAddress, Parent: g.uuid, GPUInstanceID: ci.gi, ComputeInstanceID: ci.ci,
	}
	if nb := b.s.nvml(); nb != nil {
		parent := b.s.primary(g.uuid)
		if parent == nil {
			return false
		}
		var in *device
		for _, d := range parent.instances {
			if d.GPUInstanceID == ci.gi && d.ComputeInstanceID == ci.ci {
				in = d
			}
		}
		if in == nil {
			return false // NVML has not seen it (yet)
		}
		info = in.Device
	}
	ci.d = newAccelDevice(info, semconv.VendorNVIDIA, semconv.HWTypeGPU, b.driverVersion(), info.UUID, semconv.MeasurementSourceDCGM)
	return true
}

// reconnect connects to the host engine again after its connection failed
// and watches the fields anew: the watches ended with the connection.
func (b *dcgmBackend) reconnect() bool {
	_ = b.lib.Disconnect(b.h)
	h, r := b.lib.Connect(b.engine, b.unix, b.s.cfg.dcgmProbe.timeout)
	if r != dcgm.OK {
		return false
	}
	b.h, b.lost = h, false
	for _, g := range b.gpus {
		g.group, g.fg, g.fields, g.ciFields = 0, 0, nil, nil
		b.watch(g)
	}
	_ = b.lib.UpdateAll(b.h, true)
	return true
}

// describe says where DCGM runs, what it watches and what it cannot.
func (b *dcgmBackend) describe() (int, string) {
	var out strings.Builder
	if b.engine == "" {
		out.WriteString("embedded host engine")
	} else if b.unix {
		fmt.Fprintf(&out, "nv-hostengine at unix://%s", b.engine)
	} else {
		fmt.Fprintf(&out, "nv-hostengine at %s", b.engine)
	}
	if b.lost {
		out.WriteString(" (connection lost: reconnecting)")
	}
	if b.noMIG != dcgm.OK {
		fmt.Fprintf(&out, "; %s: %s: MIG instances not read", dcgm.SymGpuInstanceHier, b.noMIG)
	}
	n := 0
	for _, g := range b.gpus {
		n++
		fmt.Fprintf(&out, "; GPU %d %s: ", g.id, g.uuid)
		switch {
		case g.busy:
			out.WriteString("profiling busy: another profiler (Nsight, CUPTI, another host engine) holds the counters (DCGM_ST_IN_USE); tried again every poll")
		default:
			fmt.Fprintf(&out, "%d of %d profiling fields", len(g.fields), len(dcgmProfFields))
		}
		for _, ci := range g.cis {
			if ci.d != nil {
				n++
			}
		}
		if len(g.cis) > 0 {
			fmt.Fprintf(&out, ", %d MIG compute instance(s)", len(g.cis))
		}
		if len(g.dropped) > 0 {
			fmt.Fprintf(&out, " (not watched: %s)", strings.Join(g.dropped, ", "))
		}
	}
	return n, out.String()
}

// close ends the watches, the host engine or the connection, and DCGM.
func (b *dcgmBackend) close() error {
	var errs []error
	if !b.lost {
		for _, g := range b.gpus {
			if g.fg != 0 {
				_ = b.lib.Unwatch(b.h, g.group, g.fg)
				_ = b.lib.FieldGroupDestroy(b.h, g.fg)
			}
			if g.group != 0 {
				_ = b.lib.GroupDestroy(b.h, g.group)
			}
		}
	}
	if b.engine == "" {
		if r := b.lib.StopEmbedded(b.h); r != dcgm.OK {
			errs = append(errs, fmt.Errorf("gpu: %w", b.lib.Err("dcgmStopEmbedded", r)))
		}
	} else if r := b.lib.Disconnect(b.h); r != dcgm.OK && !b.lost {
		errs = append(errs, fmt.Errorf("gpu: %w", b.lib.Err("dcgmDisconnect", r)))
	}
	errs = append(errs, b.shutdown())
	return errors.Join(errs...)
}

// shutdown shuts DCGM down and unloads it.
func (b *dcgmBackend) shutdown() error {
	var errs []error
	if r := b.lib.Shutdown(); r != dcgm.OK {
		errs = append(errs, fmt.Errorf("gpu: %w", b.lib.Err("dcgmShutdown", r)))
	}
	if err := b.lib.Close(); err != nil {
		errs = append(errs, fmt.Errorf("gpu: %w", err))
	}
	return errors.Join(errs...)
}

// primary is the device with hw.id uuid that a backend other than a
// runtime backend found, or nil.
func (s *Source) primary(uuid string) *device {
	for _, d := range s.devices {
		if d.source == "" && d.UUID == uuid {
			return d
		}
	}
	return nil
}

// nvml is the NVML backend, or nil.
func (s *Source) nvml() *nvmlBackend {
	for _, b := range s.backends {
		if nb, ok := b.(*nvmlBackend); ok {
			return nb
		}
	}
	return nil
}
