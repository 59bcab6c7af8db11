package bpfsource

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"
)

// WakeupVariable is the variable of every object that sets how many unread
// bytes make the BPF side wake the reader.
const WakeupVariable = "wakeup_bytes"

// LoadOptions say what of an object to load, and how.
type LoadOptions struct {
	// Ring is the name of the object's ring buffer map, or of its lanes
	// (lanes.bpf.h's `lanes`); RingBytes its size, a power of two
	// multiple of the page size (see CheckRingBytes): for lanes, of all
	// of them, split evenly (each at least a page). 0 keeps a ring
	// buffer's own size, and gives lanes a page each.
	Ring      string
	RingBytes uint32
	// WakeupBytes sets WakeupVariable: for lanes, per lane, and 0 is a
	// quarter of a lane; for a ring buffer, 0 keeps the object's own.
	WakeupBytes uint64
	// Programs are the programs to load. The object's other programs
	// (benchmark programs, say) are left out: neither verified nor
	// loaded.
	Programs []string
	// UprobeMulti are the uprobe programs among Programs to load for
	// uprobe_multi links (Linux 6.6+): one link per program and file,
	// which attaches and detaches far faster than one perf event per
	// symbol. The others are loaded for perf-event uprobes.
	UprobeMulti []string
	// Edit, if set, changes the object before it is loaded (tests: an
	// object the verifier rejects).
	Edit func(*ebpf.CollectionSpec)
	// Replace are maps, by name, that the programs use in place of the
	// object's own: a map another object (or another process) made, to
	// share it.
	Replace map[string]*ebpf.Map
}

// Programs are the programs of a loaded object, by name.
type Programs struct{ coll *ebpf.Collection }

// Program returns the loaded program of that name; nil if it was not
// loaded.
func (p Programs) Program(name string) *ebpf.Program { return p.coll.Programs[name] }

// Close frees the programs, and the maps that back the variables.
func (p Programs) Close() error {
	p.coll.Close()
	return nil
}

// Load loads the maps and variables of spec and the programs o names, and
// assigns the maps and variables into each of into (bpf2go's structs of
// them: see ebpf.Collection.Assign); the caller closes those. spec is not
// changed. A program o names that spec lacks is an error (a bug of the
// caller's table); so is anything the kernel refuses, as cilium/ebpf says
// it: pass it to Classify.
func Load(spec *ebpf.CollectionSpec, o LoadOptions, into ...any) (Programs, error) {
	coll, err := load(spec, o)
	if err != nil {
		return Programs{}, err
	}
	for _, to := range into {
		if err := coll.Assign(to); err != nil {
			coll.Close()
			for _, c := range into {
				if c, ok := c.(io.Closer); ok {
					c.Close()
				}
			}
			return Programs{}, err
		}
	}
	return Programs{coll}, nil
}

func load(spec *ebpf.CollectionSpec, o LoadOptions) (*ebpf.Collection, error) {
	spec = spec.Copy()
	for _, name := range o.Programs {
		if spec.Programs[name] == nil {
			return nil, fmt.Errorf("the object has no program %s", name)
		}
	}
	for _, name := range o.UprobeMulti {
		if p := spec.Programs[name]; p == nil || !isUprobe(p) || !slices.Contains(o.Programs, name) {
			return nil, fmt.Errorf("%s is no uprobe program to load", name)
		}
		spec.Programs[name].AttachType = ebpf.AttachTraceUprobeMulti
	}
	for name := range spec.Programs {
		if !slices.Contains(o.Programs, name) {
			delete(spec.Programs, name)
		}
	}
	if m := spec.Maps[o.Ring]; m != nil && isLanes(m) {
		cpus, err := ebpf.PossibleCPU()
		if err != nil {
			return nil, fmt.Errorf("count the CPUs for the lanes: %w", err)
		}
		if err := sizeLanes(spec, m, o.RingBytes, o.WakeupBytes, cpus); err != nil {
			return nil, fmt.Errorf("size the lanes: %w", err)
		}
	} else if err := sizeRing(spec, o); err != nil {
		return nil, err
	}
	if o.Edit != nil {
		o.Edit(spec)
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("remove the memlock limit: %w", err)
	}
	return ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{MapReplacements: o.Replace})
}

// sizeRing sizes the ring buffer map o names, and sets its wakeup.
func sizeRing(spec *ebpf.CollectionSpec, o LoadOptions) error {
	if o.RingBytes != 0 {
		m := spec.Maps[o.Ring]
		if m == nil || m.Type != ebpf.RingBuf {
			return fmt.Errorf("the object has no ring buffer map %q", o.Ring)
		}
		m.MaxEntries = o.RingBytes
	}
	if o.WakeupBytes != 0 {
		v := spec.Variables[WakeupVariable]
		if v == nil {
			return fmt.Errorf("the object has no variable %s", WakeupVariable)
		}
		if err := v.Set(o.WakeupBytes); err != nil {
			return fmt.Errorf("set %s: %w", WakeupVariable, err)
		}
	}
	return nil
}

func isUprobe(p *ebpf.ProgramSpec) bool {
	return p.Type == ebpf.Kprobe && (strings.HasPrefix(p.SectionName, "uprobe") || strings.HasPrefix(p.SectionName, "uretprobe"))
}

// CheckRingBytes says whether n can size a ring buffer: a power of two
// multiple of the page size (4096 bytes at the least).
func CheckRingBytes(n uint32) error {
	if n < 4096 || n&(n-1) != 0 {
		return fmt.Errorf("ring buffer size must be a power of two of at least 4096 bytes, got %d", n)
	}
	return nil
}

// SumPerCPU reads the first len(out) entries of the per-CPU array m into
// out, each summed over the CPUs.
func SumPerCPU(m *ebpf.Map, out []uint64) error {
	var perCPU []uint64
	for i := range out {
		if err := m.Lookup(uint32(i), &perCPU); err != nil {
			return fmt.Errorf("read %s entry %d: %w", m, i, err)
		}
		out[i] = 0
		for _, v := range perCPU {
			out[i] += v
		}
	}
	return nil
}
