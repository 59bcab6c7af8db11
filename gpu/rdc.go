package gpu

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/rdc"
	"github.com/xpuscope/xpuscope/semconv"
)

// The RDC backend: AMD GPUs through ROCm's Data Center tool (package
// internal/rdc, purego), in its embedded mode. It reads what AMD SMI and
// ROCm SMI read too (utilization, VRAM, power, ECC totals), XGMI bytes,
// and RDC's profiling fields (occupancy, waves, tensor activity, memory
// bandwidth, SM activity), each GPU under the identity the AMD backend
// gave the GPU of the same index, with gpu.measurement.source=rdc.
//
// Fields are watched at the poll interval, one GPU per group. A GPU's
// counters hold only so many profiling fields: they are added in order,
// and one the GPU refuses (the watch fails) is dropped for that GPU and
// listed in xpuscope.gpu.field.unavailable, as is one whose values come
// back RDC_ST_NOT_SUPPORTED. Like ROCm SMI, RDC is loaded only when sysfs
// shows an amdgpu card.

// rdcField is a field the backend reads and what it becomes.
type rdcField struct {
	id rdc.FieldID
	// set puts the value, in the field's unit, into sm; it reports false
	// for a value no GPU can have.
	set func(b *rdcBackend, g *rdcGPU, sm *sample, v float64) bool
}

// percent fields are 0 … 100.
func ratioOf(av accelValue) func(*rdcBackend, *rdcGPU, *sample, float64) bool {
	return func(_ *rdcBackend, _ *rdcGPU, sm *sample, v float64) bool {
		if v < 0 || v > 100 {
			return false
		}
		sm.setAccel(av, v*percent)
		return true
	}
}

func scaled(av accelValue, by float64) func(*rdcBackend, *rdcGPU, *sample, float64) bool {
	return func(_ *rdcBackend, _ *rdcGPU, sm *sample, v float64) bool {
		if v < 0 {
			return false
		}
		sm.setAccel(av, v*by)
		return true
	}
}

// rdcMemScale turns RDC_FI_PROF_EVAL_MEM_*_BW, rocprofiler's
// FETCH_SIZE / WRITE_SIZE in KiB over the sample's milliseconds, into
// bytes a second.
const rdcMemScale = 1024 * 1000

// rdcFields are the fields read, in the order they are added to a GPU's
// watch: the device figures, then the profiling ones.
var rdcFields = []rdcField{
	{rdc.FIGPUUtil, func(_ *rdcBackend, _ *rdcGPU, sm *sample, v float64) bool {
		if v < 0 || v > 100 {
			return false
		}
		sm.util, sm.have = v*percent, sm.have|fUtil
		return true
	}},
	{rdc.FIGPUMemoryUsage, func(_ *rdcBackend, g *rdcGPU, sm *sample, v float64) bool {
		if v < 0 {
			return false
		}
		g.used, g.hasUsed = v, true
		return true
	}},
	{rdc.FIGPUMemoryTotal, func(_ *rdcBackend, g *rdcGPU, sm *sample, v float64) bool {
		if v <= 0 {
			return false
		}
		g.total, g.hasTotal = v, true
		return true
	}},
	{rdc.FIPowerUsage, func(_ *rdcBackend, _ *rdcGPU, sm *sample, v float64) bool {
		if v < 0 {
			return false
		}
		sm.power, sm.have = v*micro, sm.have|fPower
		return true
	}},
	{rdc.FIECCCorrectTotal, func(_ *rdcBackend, _ *rdcGPU, sm *sample, v float64) bool {
		if v < 0 {
			return false
		}
		sm.eccCorrected, sm.have = int64(v), sm.have|fECCCorrected
		return true
	}},
	{rdc.FIECCUncorrectTotal, func(_ *rdcBackend, _ *rdcGPU, sm *sample, v float64) bool {
		if v < 0 {
			return false
		}
		sm.eccUncorrected, sm.have = int64(v), sm.have|fECCUncorrected
		return true
	}},
	{rdc.FIXGMITotalReadKB, scaled(avXGMIRead, 1024)},
	{rdc.FIXGMITotalWriteKB, scaled(avXGMIWrite, 1024)},
	{rdc.FIProfOccupancy, ratioOf(avOccupancy)},
	{rdc.FIProfActiveWaves, scaled(avWaves, 1)},
	{rdc.FIProfTensorActive, ratioOf(avTensor)},
	{rdc.FIProfEvalMemReadBW, scaled(avMemRead, rdcMemScale)},
	{rdc.FIProfEvalMemWriteBW, scaled(avMemWrite, rdcMemScale)},
	{rdc.FIProfSMActive, ratioOf(avSM)},
}

func rdcFieldOf(id rdc.FieldID) *rdcField {
	for i := range rdcFields {
		if rdcFields[i].id == id {
			return &rdcFields[i]
		}
	}
	return nil
}

type rdcBackend struct {
	s     *Source
	lib   *rdc.Lib
	h     rdc.Handle
	gpus  []*rdcGPU
	names int
	v     rdc.FieldValue // scratch
}

// rdcGPU is a GPU and what RDC watches of it.
type rdcGPU struct {
	idx     uint32
	d       *device
	group   rdc.Group
	grouped bool           // group is valid
	fg      rdc.FieldGroup // valid when watched is set
	watched bool
	fields  []rdc.FieldID // watched
	gone    []rdc.FieldID // fields it cannot be watched for
	dropped []string      // each of gone, and why
	// VRAM of this poll: hw.gpu.memory.* need both.
	used, total       float64
	hasUsed, hasTotal bool
}

// openRDCLib loads the configured library, or the first of RDC's names
// that loads from the loader path or /opt/rocm/lib.
func openRDCLib(path string) (*rdc.Lib, error) {
	if path != "" {
		return rdc.Open(path)
	}
	var first error
	for _, name := range rdc.DefaultLibraries {
		lib, err := rdc.Open(name)
		if err == nil {
			return lib, nil
		}
		if first == nil {
			first = err
		}
	}
	for _, name := range rdc.DefaultLibraries {
		p := filepath.Join(rdc.DefaultDir, name)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if lib, err := rdc.Open(p); err == nil {
			return lib, nil
		}
	}
	return nil, fmt.Errorf("%w (nor %s, nor in %s)", first, strings.Join(rdc.DefaultLibraries[1:], ", "), rdc.DefaultDir)
}

// openRDC loads RDC, starts its embedded agent, finds the GPUs and
// watches their fields.
func openRDC(s *Source) (backend, error) {
	if _, err := amdCards(s); err != nil {
		return nil, err
	}
	lib, err := openRDCLib(s.cfg.rdcPath)
	if err != nil {
		return nil, xpuscope.Unavailablef("gpu: %v", err)
	}
	if st := lib.Init(); st != rdc.OK {
		err := lib.Err("rdc_init", st)
		_ = lib.Close()
		return nil, xpuscope.Unavailablef("gpu: RDC %s: %v", lib.Path(), err)
	}
	b := &rdcBackend{s: s, lib: lib}
	h, st := lib.StartEmbedded()
	if st != rdc.OK {
		err := lib.Err("rdc_start_embedded", st)
		_ = b.shutdown()
		return nil, xpuscope.Unavailablef("gpu: RDC %s: %v", lib.Path(), err)
	}
	b.h = h
	if err := b.discover(); err != nil {
		_ = b.close()
		return nil, err
	}
	for _, g := range b.gpus {
		b.watch(g)
	}
	if !slices.ContainsFunc(b.gpus, func(g *rdcGPU) bool { return len(g.fields) > 0 }) {
		why := b.gpus[0].dropped
		_ = b.close()
		return nil, xpuscope.Unavailablef("gpu: RDC %s watches no field of its %d GPU(s): %s", lib.Path(), len(b.gpus), strings.Join(why, "; "))
	}
	_ = lib.UpdateAll(b.h, true)
	return b, nil
}

// discover finds RDC's GPUs, each joined to the AMD GPU of the same index
// another backend found (RDC numbers GPUs as AMD SMI does).
func (b *rdcBackend) discover() error {
	idx, st := b.lib.GPUs(b.h)
	if st != rdc.OK {
		return xpuscope.Unavailablef("gpu: RDC %s: %v", b.lib.Path(), b.lib.Err("rdc_device_get_all", st))
	}
	if len(idx) == 0 {
		return xpuscope.Unavailablef("gpu: RDC %s found no AMD GPU", b.lib.Path())
	}
	for _, i := range idx {
		name, st := b.lib.Name(b.h, i)
		if st != rdc.OK || name == "" {
			name = "AMD GPU"
		}
		info := Device{Index: int(i), UUID: fmt.Sprintf("rdc:%d", i), Name: name}
		driver, podID := "", ""
		if d := b.s.amdPrimary(int(i)); d != nil {
			info, podID, driver = d.Device, d.podID, d.driver
		}
		info.SMs, info.ThreadsPerSM = 0, 0
		b.gpus = append(b.gpus, &rdcGPU{idx: i, d: newAccelDevice(info, semconv.VendorAMD, semconv.HWTypeGPU, driver, podID, semconv.MeasurementSourceRDC)})
	}
	return nil
}

// amdPrimary is the AMD GPU of index i another backend found, or nil.
func (s *Source) amdPrimary(i int) *device {
	for _, d := range s.devices {
		if d.source == "" && d.Vendor == semconv.VendorAMD && d.Index == i {
			return d
		}
	}
	return nil
}

func (b *rdcBackend) name() string {
	b.names++
	return fmt.Sprintf("xpuscope-%d-%d", os.Getpid(), b.names)
}

// watch makes g's group and watches what g can count: every field at
// once, else one by one, in order, each refused dropped.
func (b *rdcBackend) watch(g *rdcGPU) {
	lib := b.lib
	if !g.grouped {
		grp, st := lib.GroupCreate(b.h, b.name())
		if st != rdc.OK {
			g.dropped = []string{"rdc_group_gpu_create: " + st.String()}
			return
		}
		g.group, g.grouped = grp, true
		if st := lib.GroupAdd(b.h, grp, g.idx); st != rdc.OK {
			g.dropped = []string{"rdc_group_gpu_add: " + st.String()}
			return
		}
	}
	want := make([]rdc.FieldID, 0, len(rdcFields))
	for _, f := range rdcFields {
		if !slices.Contains(g.gone, f.id) {
			want = append(want, f.id)
		}
	}
	if b.tryWatch(g, want, true) == rdc.OK {
		return
	}
	var accepted []rdc.FieldID
	for _, f := range want {
		try := append(accepted[:len(accepted):len(accepted)], f)
		st := b.tryWatch(g, try, false)
		if st == rdc.OK {
			accepted = try
			continue
		}
		reason := st.String()
		if st == rdc.InsuffResources {
			reason = semconv.GPUReasonCapacity
		}
		b.drop(g, f, reason)
	}
	if len(accepted) > 0 {
		b.tryWatch(g, accepted, true)
	}
}

// drop counts field f as one g cannot be watched for.
func (b *rdcBackend) drop(g *rdcGPU, f rdc.FieldID, reason string) {
	b.s.scrape.unavailable.add(g.d.UUID, BackendRDC, rdc.FieldName(f), reason, 1)
	g.gone = append(g.gone, f)
	g.dropped = append(g.dropped, rdc.FieldName(f)+": "+reason)
}

// tryWatch watches fields on g: kept if keep is set (in place of what g
// watched), else unwatched again (a trial).
func (b *rdcBackend) tryWatch(g *rdcGPU, fields []rdc.FieldID, keep bool) rdc.Status {
	lib := b.lib
	if keep && g.watched {
		_ = lib.Unwatch(b.h, g.group, g.fg)
		_ = lib.FieldGroupDestroy(b.h, g.fg)
		g.watched, g.fields = false, nil
	}
	fg, st := lib.FieldGroupCreate(b.h, fields, b.name())
	if st != rdc.OK {
		return st
	}
	every := b.s.cfg.interval
	st = lib.Watch(b.h, g.group, fg, every, min(max(3*every, time.Second), time.Hour), 3)
	if st != rdc.OK || !keep {
		if st == rdc.OK {
			_ = lib.Unwatch(b.h, g.group, fg)
		}
		_ = lib.FieldGroupDestroy(b.h, fg)
		return st
	}
	g.fg, g.fields, g.watched = fg, fields, true
	return rdc.OK
}

func (b *rdcBackend) start(<-chan struct{}, *sync.WaitGroup) {}

// poll reads every GPU's watched fields.
func (b *rdcBackend) poll(sn *snapshot) {
	oldest := uint64(time.Now().Add(-3*b.s.cfg.interval - 5*time.Second).UnixMicro())
	for _, g := range b.gpus {
		if len(g.fields) == 0 {
			continue
		}
		sm := b.s.sample(sn, g.d)
		g.hasUsed, g.hasTotal = false, false
		failed, unsupported := 0, false
		var last rdc.Status
		for _, id := range g.fields {
			st := b.lib.Latest(b.h, g.idx, id, &b.v)
			if st != rdc.OK {
				failed++
				last = st
				b.s.scrape.blanks.add(g.d.UUID, BackendRDC, rdc.FieldName(id), st.String(), 1)
				continue
			}
			x, blank := rdc.Number(&b.v)
			reason := ""
			switch {
			case blank == rdc.BlankStatus && rdc.Status(b.v.Status) == rdc.NotSupported:
				// the GPU cannot count it: dropped for this GPU
				b.drop(g, id, rdc.NotSupported.String())
				unsupported = true
				continue
			case blank == rdc.BlankStatus:
				reason = rdc.Status(b.v.Status).String()
			case blank != rdc.NotBlank:
				reason = blank.String()
			case b.v.TS < oldest:
				reason = semconv.GPUReasonStale
			case !rdcFieldOf(id).set(b, g, sm, x):
				reason = semconv.GPUReasonInvalid
			}
			if reason != "" {
				b.s.scrape.blanks.add(g.d.UUID, BackendRDC, rdc.FieldName(id), reason, 1)
			}
		}
		if g.hasUsed && g.hasTotal {
			setMemory(sm, uint64(g.used), uint64(g.total))
		}
		if failed == len(g.fields) {
			b.s.scrape.misses.add(g.d.UUID, BackendRDC, "", last.String(), 1)
		}
		if unsupported {
			b.watch(g) // without what the GPU cannot count
		}
	}
}

// describe says what RDC watches of each GPU and what it cannot.
func (b *rdcBackend) describe() (int, string) {
	var out strings.Builder
	out.WriteString("embedded agent")
	for _, g := range b.gpus {
		fmt.Fprintf(&out, "; GPU %d %s: %d of %d fields", g.idx, g.d.UUID, len(g.fields), len(rdcFields))
		if len(g.dropped) > 0 {
			fmt.Fprintf(&out, " (not watched: %s)", strings.Join(g.dropped, ", "))
		}
	}
	return len(b.gpus), out.String()
}

// close ends the watches, the agent and RDC.
func (b *rdcBackend) close() error {
	for _, g := range b.gpus {
		if g.watched {
			_ = b.lib.Unwatch(b.h, g.group, g.fg)
			_ = b.lib.FieldGroupDestroy(b.h, g.fg)
		}
		if g.grouped {
			_ = b.lib.GroupDestroy(b.h, g.group)
		}
	}
	var errs []error
	if st := b.lib.StopEmbedded(b.h); st != rdc.OK {
		errs = append(errs, fmt.Errorf("gpu: %w", b.lib.Err("rdc_stop_embedded", st)))
	}
	errs = append(errs, b.shutdown())
	return errors.Join(errs...)
}

func (b *rdcBackend) shutdown() error {
	var errs []error
	if st := b.lib.Shutdown(); st != rdc.OK {
		errs = append(errs, fmt.Errorf("gpu: %w", b.lib.Err("rdc_shutdown", st)))
	}
	if err := b.lib.Close(); err != nil {
		errs = append(errs, fmt.Errorf("gpu: %w", err))
	}
	return errors.Join(errs...)
}
