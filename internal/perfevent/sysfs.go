package perfevent

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// DevicesDir is where sysfs lists the PMUs, under the sysfs root.
const DevicesDir = "bus/event_source/devices"

// Bounds of what is read from sysfs: a file the kernel writes is one
// short line; a PMU has some dozens of events.
const (
	maxFileLen   = 4096
	maxEvents    = 4096
	maxFormats   = 64
	maxPMUs      = 4096
	maxCPUs      = 1 << 14
	maxCPURanges = 1 << 12
)

// PMU is what sysfs says of one PMU.
type PMU struct {
	// Name is the directory's name: uncore_imc_0, amd_umc_3, intel_pt.
	Name string
	// Type is the perf_event_attr.type to open the PMU's events with.
	Type uint32
	// CPUs are the CPUs of its cpumask, ascending: an uncore PMU counts on
	// one CPU of each socket (or die) it covers. Nil when the PMU has no
	// cpumask file.
	CPUs []int
	// Formats are its format/ fields by name.
	Formats map[string]Format
	// Events are its events/ by name.
	Events map[string]Event
	// Caps are its caps/ files (intel_pt's), by name, trimmed.
	Caps map[string]string
	// Skipped are the entries that did not parse, with why.
	Skipped []Skipped
}

// Event is one named event of a PMU's events/ directory.
type Event struct {
	Name  string
	Terms []Term
	// Scale is the .scale file's factor; 0 when there is none.
	Scale float64
	// Unit is the .unit file's unit; "" when there is none.
	Unit string
}

// Skipped is a sysfs entry that did not parse.
type Skipped struct {
	Path   string // relative to the sysfs root
	Reason string
}

// BytesPerCount is how many bytes one count of e is, from its scale and
// unit (BytesPerCount); an error when its unit is not one of bytes.
func (e Event) BytesPerCount() (float64, error) {
	b, err := BytesPerCount(e.Scale, e.Unit)
	if err != nil {
		return 0, fmt.Errorf("event %s: %w", e.Name, err)
	}
	return b, nil
}

// Encode places terms through p's formats (Encode).
func (p *PMU) Encode(terms []Term) (Configs, error) {
	c, err := Encode(p.Formats, terms)
	if err != nil {
		return Configs{}, fmt.Errorf("%s: %w", p.Name, err)
	}
	return c, nil
}

// ListPMUs lists the PMUs sysfs has, by name, sorted.
func ListPMUs(fsys fs.FS) ([]string, error) {
	entries, err := fs.ReadDir(fsys, DevicesDir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", DevicesDir, err)
	}
	if len(entries) > maxPMUs {
		entries = entries[:maxPMUs]
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if n := e.Name(); validPMUName(n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

func validPMUName(s string) bool {
	if s == "" || len(s) > maxPMUNameLen || s == "." || s == ".." {
		return false
	}
	return !strings.ContainsAny(s, "/\x00")
}

// ReadPMU reads PMU name: its type (without which it cannot be opened: an
// error), its cpumask, formats, events and caps. Entries that do not
// parse are skipped into PMU.Skipped.
func ReadPMU(fsys fs.FS, name string) (*PMU, error) {
	if !validPMUName(name) {
		return nil, fmt.Errorf("PMU name %q is not a directory name", name)
	}
	dir := path.Join(DevicesDir, name)
	p := &PMU{Name: name, Formats: map[string]Format{}, Events: map[string]Event{}}
	typ, err := ReadFile(fsys, path.Join(dir, "type"))
	if err != nil {
		return nil, fmt.Errorf("PMU %s: %w", name, err)
	}
	t, err := strconv.ParseUint(strings.TrimSpace(typ), 10, 32)
	if err != nil {
		return nil, fmt.Errorf("PMU %s: type %.20q is not a number", name, typ)
	}
	p.Type = uint32(t)
	if mask, err := ReadFile(fsys, path.Join(dir, "cpumask")); err == nil {
		cpus, err := ParseCPUList(mask)
		if err != nil {
			p.skip(path.Join(dir, "cpumask"), err)
		} else {
			p.CPUs = cpus
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		p.skip(path.Join(dir, "cpumask"), err)
	}
	p.readFormats(fsys, dir)
	p.readEvents(fsys, dir)
	p.readCaps(fsys, dir)
	return p, nil
}

func (p *PMU) skip(file string, err error) {
	p.Skipped = append(p.Skipped, Skipped{Path: file, Reason: err.Error()})
}

func (p *PMU) readFormats(fsys fs.FS, dir string) {
	fdir := path.Join(dir, "format")
	entries, err := fs.ReadDir(fsys, fdir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			p.skip(fdir, err)
		}
		return
	}
	for i, e := range entries {
		file := path.Join(fdir, e.Name())
		if i == maxFormats {
			p.skip(fdir, fmt.Errorf("more than %d formats", maxFormats))
			return
		}
		if !validTermName(e.Name()) {
			p.skip(file, errors.New("not a field name"))
			continue
		}
		s, err := ReadFile(fsys, file)
		if err != nil {
			p.skip(file, err)
			continue
		}
		f, err := ParseFormat(s)
		if err != nil {
			p.skip(file, err)
			continue
		}
		p.Formats[e.Name()] = f
	}
}

// eventSuffixes are the files beside an event that describe it.
var eventSuffixes = []string{".scale", ".unit", ".per-pkg", ".snapshot"}

func (p *PMU) readEvents(fsys fs.FS, dir string) {
	edir := path.Join(dir, "events")
	entries, err := fs.ReadDir(fsys, edir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			p.skip(edir, err)
		}
		return
	}
	if len(entries) > maxEvents {
		p.skip(edir, fmt.Errorf("more than %d files; the rest are not read", maxEvents))
		entries = entries[:maxEvents]
	}
	// The events first, then what describes them.
	for _, e := range entries {
		n := e.Name()
		if hasEventSuffix(n) {
			continue
		}
		file := path.Join(edir, n)
		s, err := ReadFile(fsys, file)
		if err != nil {
			p.skip(file, err)
			continue
		}
		terms, err := ParseTerms(s)
		if err != nil {
			p.skip(file, err)
			continue
		}
		p.Events[n] = Event{Name: n, Terms: terms}
	}
	for _, e := range entries {
		n := e.Name()
		file := path.Join(edir, n)
		var suffix string
		for _, sfx := range eventSuffixes {
			if strings.HasSuffix(n, sfx) {
				suffix = sfx
			}
		}
		if suffix == "" || suffix == ".per-pkg" || suffix == ".snapshot" {
			continue
		}
		ev, ok := p.Events[strings.TrimSuffix(n, suffix)]
		if !ok {
			p.skip(file, errors.New("describes no event"))
			continue
		}
		s, err := ReadFile(fsys, file)
		if err != nil {
			p.skip(file, err)
			continue
		}
		switch suffix {
		case ".scale":
			if ev.Scale, err = ParseScale(s); err != nil {
				p.skip(file, err)
				// An event whose scale is unreadable cannot be taken
				// at its face value either.
				delete(p.Events, ev.Name)
				continue
			}
		case ".unit":
			if ev.Unit, err = ParseUnit(s); err != nil {
				p.skip(file, err)
				delete(p.Events, ev.Name)
				continue
			}
		}
		p.Events[ev.Name] = ev
	}
}

func hasEventSuffix(n string) bool {
	for _, s := range eventSuffixes {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	return false
}

func (p *PMU) readCaps(fsys fs.FS, dir string) {
	cdir := path.Join(dir, "caps")
	entries, err := fs.ReadDir(fsys, cdir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			p.skip(cdir, err)
		}
		return
	}
	p.Caps = map[string]string{}
	for i, e := range entries {
		if i == maxFormats {
			p.skip(cdir, fmt.Errorf("more than %d caps", maxFormats))
			return
		}
		file := path.Join(cdir, e.Name())
		s, err := ReadFile(fsys, file)
		if err != nil {
			p.skip(file, err)
			continue
		}
		p.Caps[e.Name()] = strings.TrimSpace(s)
	}
}

// ReadCPUMask reads only PMU name's cpumask: what changes when a CPU goes
// offline or comes back.
func ReadCPUMask(fsys fs.FS, name string) ([]int, error) {
	if !validPMUName(name) {
		return nil, fmt.Errorf("PMU name %q is not a directory name", name)
	}
	s, err := ReadFile(fsys, path.Join(DevicesDir, name, "cpumask"))
	if err != nil {
		return nil, err
	}
	return ParseCPUList(s)
}

// ReadFile reads a small sysfs file, at most 4 KiB: a longer one is an
// error, not a large allocation.
func ReadFile(fsys fs.FS, name string) (string, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var buf [maxFileLen + 1]byte
	n, err := io.ReadFull(f, buf[:])
	switch {
	case n > maxFileLen:
		return "", fmt.Errorf("%s is longer than %d bytes", name, maxFileLen)
	case err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF):
		return "", fmt.Errorf("read %s: %w", name, err)
	}
	return string(buf[:n]), nil
}

// ParseCPUList parses a CPU list as the kernel writes cpumask and online
// files: "0", "0,28", "0-3,8-11". The CPUs come back ascending, each
// once.
func ParseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty CPU list")
	}
	var cpus []int
	ranges := 0
	for r := range strings.SplitSeq(s, ",") {
		if ranges++; ranges > maxCPURanges {
			return nil, fmt.Errorf("CPU list has more than %d ranges", maxCPURanges)
		}
		a, b, isRange := strings.Cut(r, "-")
		lo, err := strconv.ParseUint(a, 10, 32)
		if err != nil || lo >= maxCPUs {
			return nil, fmt.Errorf("CPU %.20q is not a CPU number below %d", a, maxCPUs)
		}
		hi := lo
		if isRange {
			if hi, err = strconv.ParseUint(b, 10, 32); err != nil || hi >= maxCPUs || hi < lo {
				return nil, fmt.Errorf("CPU range %.40q is not lo-hi below %d", r, maxCPUs)
			}
		}
		if len(cpus)+int(hi-lo+1) > maxCPUs {
			return nil, fmt.Errorf("CPU list names more than %d CPUs", maxCPUs)
		}
		for c := lo; c <= hi; c++ {
			cpus = append(cpus, int(c))
		}
	}
	slices.Sort(cpus)
	return slices.Compact(cpus), nil
}

// Socket returns the package (socket) of cpu, from its topology in sysfs.
func Socket(fsys fs.FS, cpu int) (int, error) {
	s, err := ReadFile(fsys, fmt.Sprintf("devices/system/cpu/cpu%d/topology/physical_package_id", cpu))
	if err != nil {
		return 0, fmt.Errorf("socket of CPU %d: %w", cpu, err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("socket of CPU %d: physical_package_id %.20q is not a number", cpu, s)
	}
	return int(n), nil
}
