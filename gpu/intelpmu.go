package gpu

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/amdsysfs"
	"github.com/xpuscope/xpuscope/internal/intelsysfs"
	"github.com/xpuscope/xpuscope/internal/perfevent"
)

// The engines' busyness of an Intel GPU the kernel's files read, from its
// driver's perf PMU (package internal/perfevent: the PMU as sysfs
// describes it, its event strings placed through its own format/ files,
// never a hard-coded bit):
//
//   - i915 (i915_pmu.c): the PMU "i915" of an integrated GPU, or
//     "i915_<PCI address>" of a discrete one, whose events/<engine>-busy
//     ("config=0x…", unit ns) count the ns each engine (rcs0, bcs0, vcs0,
//     vcs1, vecs0, ccs0, …) was busy: Δns / Δ the poll's wall time;
//   - xe (xe_pmu.c): "xe_<PCI address>", whose engine-active-ticks and
//     engine-total-ticks ("event=0x02", "event=0x03") count one engine
//     each, chosen by the format fields gt, engine_class and
//     engine_instance (engine_class is the uapi class of xe_drm.h,
//     DRM_XE_ENGINE_CLASS_*; the GTs and the classes each has come from
//     sysfs, tile<T>/gt<G>/engines/<class>, the instances are opened
//     from 0 until the PMU refuses one): Δactive / Δtotal.
//
// Both count for every task on one CPU: each event is opened with pid −1
// on the first CPU of the PMU's cpumask, which needs CAP_PERFMON (or
// CAP_SYS_ADMIN), or kernel.perf_event_paranoid ≤ 0; without it the PMU
// is unavailable (the error intel_gpu_top users meet), the engines come
// from fdinfo, and Status says why. A class's figure is the mean over its
// engines; the first read gives none.

// xeUAPIClass maps xe's sysfs class names to the engine_class values of
// its uapi (include/uapi/drm/xe_drm.h: DRM_XE_ENGINE_CLASS_RENDER 0,
// _COPY 1, _VIDEO_DECODE 2, _VIDEO_ENHANCE 3, _COMPUTE 4).
var xeUAPIClass = map[string]uint64{"rcs": 0, "bcs": 1, "vcs": 2, "vecs": 3, "ccs": 4}

// maxXeInstances bounds the instances of one class opened.
const maxXeInstances = 64

// pmuEngine is one engine's counters.
type pmuEngine struct {
	class       engineClass
	busy, total perfevent.Counter // total: xe only
	prevBusy    uint64
	prevTotal   uint64
	prevT       time.Duration
	ready       bool
	name        string
}

// intelPMU reads an Intel GPU's engine busyness from its driver's PMU.
type intelPMU struct {
	name    string
	xe      bool
	engines []*pmuEngine
	v       perfevent.Value // scratch
	start   time.Time       // the origin of the engines' read times
}

// openIntelPMU finds the card's PMU in sysfs and opens a counter for each
// of its engines. An error says why the PMU cannot be read.
func openIntelPMU(s *Source, c intelsysfs.Card) (*intelPMU, error) {
	var p *perfevent.PMU
	names := intelsysfs.PMUName(c)
	for _, n := range names {
		if pp, err := perfevent.ReadPMU(s.cfg.sysfs, n); err == nil {
			p = pp
			break
		}
	}
	if p == nil {
		return nil, fmt.Errorf("no PMU %s in %s/%s", strings.Join(names, " or "), s.cfg.sysfsRoot, perfevent.DevicesDir)
	}
	cpu := 0
	if len(p.CPUs) > 0 {
		cpu = p.CPUs[0]
	}
	ip := &intelPMU{name: p.Name, xe: c.Driver == intelsysfs.DriverXe, start: s.cfg.now()}
	var err error
	if ip.xe {
		err = ip.openXe(s, c, p, cpu)
	} else {
		err = ip.openI915(s, p, cpu)
	}
	if err == nil && len(ip.engines) == 0 {
		err = errors.New("it has no engine event")
	}
	if err != nil {
		_ = ip.close()
		return nil, fmt.Errorf("the PMU %s: %w", p.Name, err)
	}
	return ip, nil
}

func (ip *intelPMU) open(s *Source, p *perfevent.PMU, terms []perfevent.Term, cpu int) (perfevent.Counter, error) {
	cfg, err := p.Encode(terms)
	if err != nil {
		return nil, err
	}
	return s.cfg.perfOpener.Open(perfevent.Attr{Type: p.Type, Configs: cfg, PID: -1, CPU: cpu})
}

// i915EngineClass maps an i915 engine's name (its class's letters before
// the instance number: rcs0, vecs1) to its class.
func i915EngineClass(engine string) (engineClass, bool) {
	return fdinfoClass([]byte(strings.TrimRight(engine, "0123456789")))
}

func (ip *intelPMU) openI915(s *Source, p *perfevent.PMU, cpu int) error {
	for _, ev := range sortedEvents(p) {
		engine, ok := strings.CutSuffix(ev.Name, "-busy")
		if !ok {
			continue
		}
		cl, ok := i915EngineClass(engine)
		if !ok {
			continue
		}
		c, err := ip.open(s, p, ev.Terms, cpu)
		if err != nil {
			return err
		}
		ip.engines = append(ip.engines, &pmuEngine{class: cl, busy: c, name: engine})
	}
	return nil
}

func (ip *intelPMU) openXe(s *Source, c intelsysfs.Card, p *perfevent.PMU, cpu int) error {
	active, okA := p.Events["engine-active-ticks"]
	total, okT := p.Events["engine-total-ticks"]
	if !okA || !okT {
		return errors.New("it has no engine-active-ticks and engine-total-ticks (xe before Linux 6.15, or GuC engine activity unsupported)")
	}
	for _, ec := range intelsysfs.XeEngineClasses(s.cfg.sysfs, c) {
		uapi, ok := xeUAPIClass[ec.Class]
		cl, ok2 := fdinfoClass([]byte(ec.Class))
		if !ok || !ok2 {
			continue
		}
		for inst := range uint64(maxXeInstances) {
			sel := []perfevent.Term{{Name: "gt", Value: uint64(ec.GT)}, {Name: "engine_class", Value: uapi}, {Name: "engine_instance", Value: inst}}
			a, err := ip.open(s, p, append(append([]perfevent.Term{}, active.Terms...), sel...), cpu)
			if err != nil {
				var oe *perfevent.OpenError
				if inst > 0 && errors.As(err, &oe) && oe.Errno == unix.ENOENT { // no such engine (xe_pmu.c, event_param_valid)
					break
				}
				return err
			}
			t, err := ip.open(s, p, append(append([]perfevent.Term{}, total.Terms...), sel...), cpu)
			if err != nil {
				_ = a.Close()
				return err
			}
			ip.engines = append(ip.engines, &pmuEngine{class: cl, busy: a, total: t, name: fmt.Sprintf("gt%d/%s%d", ec.GT, ec.Class, inst)})
		}
	}
	return nil
}

// sortedEvents returns p's events in name order.
func sortedEvents(p *perfevent.PMU) []perfevent.Event {
	out := make([]perfevent.Event, 0, len(p.Events))
	for _, e := range p.Events {
		out = append(out, e)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Name < out[j-1].Name; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// read reads every engine and sets the device's engine figures in sm: the
// mean of each class's engines, and the busiest class as general.
func (ip *intelPMU) read(s *Source, d *intelSysfsDevice, sm *sample) {
	now := s.cfg.now().Sub(ip.start)
	var sum [numEngineClasses]float64
	var n [numEngineClasses]int
	for _, e := range ip.engines {
		if err := e.busy.Read(&ip.v); err != nil {
			s.errors.addNamed(d.UUID, intelReadNames[irEngines], amdsysfs.ErrorName(err))
			e.ready = false
			continue
		}
		busy := ip.v.Count
		var tot uint64
		if e.total != nil {
			if err := e.total.Read(&ip.v); err != nil {
				s.errors.addNamed(d.UUID, intelReadNames[irEngines], amdsysfs.ErrorName(err))
				e.ready = false
				continue
			}
			tot = ip.v.Count
		}
		prevBusy, prevTotal, prevT, ready := e.prevBusy, e.prevTotal, e.prevT, e.ready
		e.prevBusy, e.prevTotal, e.prevT, e.ready = busy, tot, now, true
		if !ready || busy < prevBusy {
			continue
		}
		var v float64
		switch {
		case e.total != nil && tot > prevTotal:
			v = float64(busy-prevBusy) / float64(tot-prevTotal)
		case e.total == nil && now > prevT:
			v = float64(busy-prevBusy) / float64(now-prevT)
		default:
			continue
		}
		sum[e.class] += min(v, 1)
		n[e.class]++
	}
	general, has := 0.0, false
	for cl := range numEngineClasses {
		if n[cl] == 0 {
			continue
		}
		v := sum[cl] / float64(n[cl])
		sm.setEngine(cl, -1, v)
		general, has = max(general, v), true
	}
	if has {
		sm.util, sm.have = general, sm.have|fUtil
	}
}

func (ip *intelPMU) close() error {
	var errs []error
	for _, e := range ip.engines {
		errs = append(errs, e.busy.Close())
		if e.total != nil {
			errs = append(errs, e.total.Close())
		}
	}
	return errors.Join(errs...)
}

// describe says what the PMU counts.
func (ip *intelPMU) describe() string {
	return fmt.Sprintf("the %s PMU %s (%d engines)", map[bool]string{false: "i915", true: "xe"}[ip.xe], ip.name, len(ip.engines))
}
