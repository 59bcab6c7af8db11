package pmu

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/perfevent"
	"github.com/xpuscope/xpuscope/semconv"
)

// plannedEvent is one event to count on each CPU of its PMU's cpumask.
type plannedEvent struct {
	pmu        *perfevent.PMU
	controller string // hw.cpu.memory.controller
	name       string // the event's name in sysfs or its source
	dir        string // hw.direction
	configs    perfevent.Configs
	bytes      float64 // bytes one count is
	source     string  // semconv.PMUEventSysfs or PMUEventTable
}

// plan is what discovery decided to count.
type plan struct {
	cpu    perfevent.CPUID
	cpuErr error
	family *family
	kind   kind
	// pmus are the chosen kind's PMUs, read; broken are those that could
	// not be (no type), with why.
	pmus   []*perfevent.PMU
	broken []string
	events []plannedEvent
	// missing are the chosen PMUs' events that could not be encoded, each
	// a counter per CPU that will not count: coverage falls short.
	missing []missingEvent
	skipped []perfevent.Skipped
	// passed says why each kind present was not chosen.
	passed []string
}

type missingEvent struct {
	pmu  *perfevent.PMU
	dir  string
	why  string
	name string
}

// pmuKind says which kind of memory-controller PMU name is, if any.
func pmuKind(name string) (kind, bool) {
	for _, p := range []struct {
		prefix string
		k      kind
	}{{"uncore_imc_free_running_", kindIMCFree}, {"uncore_imc_", kindIMC}, {"amd_umc_", kindUMC}} {
		if rest, ok := strings.CutPrefix(name, p.prefix); ok {
			if _, err := strconv.ParseUint(rest, 10, 16); err == nil {
				return p.k, true
			}
			return 0, false
		}
	}
	if name == "amd_df" {
		return kindDF, true
	}
	return 0, false
}

// pmuIndex is a PMU's number, for sorting uncore_imc_2 before _10.
func pmuIndex(name string) int {
	i := strings.LastIndexByte(name, '_')
	n, err := strconv.Atoi(name[i+1:])
	if err != nil {
		return -1
	}
	return n
}

// discover reads the PMUs and the CPU, and plans what to count. An error
// wrapping xpuscope.ErrUnavailable says why there is nothing to.
func discover(sys, proc fs.FS, sysRoot string) (*plan, error) {
	names, err := perfevent.ListPMUs(sys)
	if err != nil {
		return nil, xpuscope.Unavailablef("pmu: %s: %w: the kernel has no perf events, or sysfs is not mounted there", path.Join(sysRoot, perfevent.DevicesDir), err)
	}
	p := &plan{}
	p.cpu, p.cpuErr = perfevent.ReadCPUInfo(proc)
	if p.cpuErr == nil {
		p.family = lookup(p.cpu)
	}
	var byKind [numKinds][]string
	for _, n := range names {
		if k, ok := pmuKind(n); ok {
			byKind[k] = append(byKind[k], n)
		}
	}
	for k := range numKinds {
		if len(byKind[k]) == 0 {
			continue
		}
		slices.SortFunc(byKind[k], func(a, b string) int { return pmuIndex(a) - pmuIndex(b) })
		if p.plan(sys, k, byKind[k]) {
			return p, nil
		}
	}
	return nil, p.unavailable(sysRoot, names)
}

// plan plans kind k's PMUs, and reports whether any event of them can be
// counted. Where none can, p.passed says why.
func (p *plan) plan(sys fs.FS, k kind, names []string) bool {
	var (
		pmus    []*perfevent.PMU
		broken  []string
		events  []plannedEvent
		missing []missingEvent
		skipped []perfevent.Skipped
		whys    []string
	)
	var table []tableEvent
	if p.family != nil {
		table = p.family.events[k]
	}
	for _, n := range names {
		pm, err := perfevent.ReadPMU(sys, n)
		if err != nil {
			broken = append(broken, err.Error())
			continue
		}
		pmus = append(pmus, pm)
		skipped = append(skipped, pm.Skipped...)
		evs, miss := resolve(pm, k, table)
		events = append(events, evs...)
		missing = append(missing, miss...)
		for _, m := range miss {
			whys = append(whys, m.why)
		}
	}
	if len(events) == 0 {
		why := "no event to count"
		switch {
		case len(pmus) == 0:
			why = strings.Join(broken, "; ")
		case len(whys) > 0:
			why = dedupe(whys)
		case len(sysfsEvents[k]) == 0 && len(table) == 0:
			why = fmt.Sprintf("sysfs describes no event for them and %s", p.familyWhy())
		}
		p.passed = append(p.passed, fmt.Sprintf("%s (%s): %s", k, names[0]+ellipsis(names), why))
		return false
	}
	p.kind, p.pmus, p.broken, p.events, p.missing, p.skipped = k, pmus, broken, events, missing, skipped
	return true
}

func ellipsis(names []string) string {
	if len(names) > 1 {
		return "…" + names[len(names)-1]
	}
	return ""
}

func (p *plan) familyWhy() string {
	if p.cpuErr != nil {
		return fmt.Sprintf("the CPU is unknown (%v)", p.cpuErr)
	}
	if p.family == nil {
		return fmt.Sprintf("%v is in no row of the table", p.cpu)
	}
	return fmt.Sprintf("the table's row %s has none for them", p.family.name)
}

// resolve finds pm's bandwidth events: sysfs's where it describes them,
// the table's for the directions it does not.
func resolve(pm *perfevent.PMU, k kind, table []tableEvent) (evs []plannedEvent, missing []missingEvent) {
	done := map[string]bool{} // directions sysfs gave
	var sysWhy []string
	for _, se := range sysfsEvents[k] {
		ev, ok := pm.Events[se.name]
		if !ok {
			continue
		}
		cfg, err := pm.Encode(ev.Terms)
		if err != nil {
			sysWhy = append(sysWhy, fmt.Sprintf("%s/%s: %v", pm.Name, se.name, err))
			continue
		}
		b, err := ev.BytesPerCount()
		if err != nil {
			sysWhy = append(sysWhy, fmt.Sprintf("%s/%s: %v", pm.Name, se.name, err))
			continue
		}
		evs = append(evs, plannedEvent{pmu: pm, controller: pm.Name, name: se.name, dir: se.dir, configs: cfg, bytes: b, source: semconv.PMUEventSysfs})
		done[se.dir] = true
	}
	for _, te := range table {
		if te.channel == "" && done[te.dir] {
			continue // sysfs wins
		}
		ctrl := pm.Name
		if te.channel != "" {
			ctrl = pm.Name + "/" + te.channel
		}
		cfg, err := pm.Encode(te.terms)
		if err != nil {
			missing = append(missing, missingEvent{pmu: pm, dir: te.dir, name: te.name, why: err.Error()})
			continue
		}
		evs = append(evs, plannedEvent{pmu: pm, controller: ctrl, name: te.name, dir: te.dir, configs: cfg, bytes: te.bytes, source: semconv.PMUEventTable})
		done[te.dir] = true
	}
	// A direction sysfs named but could not give, and the table did not
	// fill, is a counter missing.
	for _, se := range sysfsEvents[k] {
		if !done[se.dir] && !slices.ContainsFunc(missing, func(m missingEvent) bool { return m.dir == se.dir }) {
			why := fmt.Sprintf("%s: no %s event in sysfs", pm.Name, se.name)
			for _, w := range sysWhy {
				if strings.Contains(w, "/"+se.name+":") {
					why = w
				}
			}
			missing = append(missing, missingEvent{pmu: pm, dir: se.dir, name: se.name, why: why})
		}
	}
	return evs, missing
}

// unavailable says why nothing can be counted.
func (p *plan) unavailable(sysRoot string, names []string) error {
	dir := path.Join(sysRoot, perfevent.DevicesDir)
	if len(p.passed) > 0 {
		return xpuscope.Unavailablef("pmu: no memory-bandwidth event can be counted: %s", strings.Join(p.passed, "; "))
	}
	var why string
	switch {
	case p.cpuErr == nil && p.cpu.Hypervisor:
		why = fmt.Sprintf("this is a virtual machine (%v, cpuinfo's hypervisor flag): hypervisors do not pass the uncore PMUs through", p.cpu)
	case p.cpuErr != nil:
		why = fmt.Sprintf("the uncore driver is not loaded or does not know this CPU (%v)", p.cpuErr)
	default:
		why = fmt.Sprintf("the uncore driver is not loaded or does not know this CPU (%v)", p.cpu)
	}
	return xpuscope.Unavailablef("pmu: no memory-controller PMU in %s (looked for uncore_imc_free_running_*, uncore_imc_*, amd_umc_*, amd_df; found %s): %s",
		dir, strings.Join(names, ", "), why)
}

func dedupe(ss []string) string {
	var out []string
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) > 4 {
		out = append(out[:4], fmt.Sprintf("and %d more", len(out)-4))
	}
	return strings.Join(out, "; ")
}

// errNoCounter is wrapped when no counter could be opened.
var errNoCounter = errors.New("no counter could be opened")
