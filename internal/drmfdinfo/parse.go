// Package drmfdinfo reads the DRM clients' usage from procfs: the
// drm-* keys a DRM driver writes to /proc/<pid>/fdinfo/<fd> for a
// descriptor of one of its card or render nodes, and the scan of every
// process's descriptors that finds them.
//
// The format is the kernel's Documentation/gpu/drm-usage-stats.rst: one
// "key:<whitespace>value" per line, every key prefixed "drm-"; numbers
// may end in a unit. The keys read here:
//
//   - drm-driver, drm-pdev (the PCI address), drm-client-id (one per
//     struct drm_file: descriptors with the same pdev and client id are
//     one client, duplicated or shared);
//   - drm-engine-<engine>: <uint> ns, the time the engine spent on the
//     client's work, and drm-engine-capacity-<engine> (identical engines
//     of the group; 1 when absent);
//   - drm-cycles-<engine> and drm-total-cycles-<engine>: busy cycles and a
//     GPU timestamp in the same unit;
//   - drm-total-<region>, drm-resident-<region> (and its deprecated alias
//     drm-memory-<region>), each <uint> [KiB|MiB]: bytes by memory region.
//
// Which driver writes which (from the kernel's sources):
//
//   - i915 (i915_drm_client.c): drm-engine-{render,copy,video,
//     video-enhance,compute} ns, drm-engine-capacity-<class> where a
//     class has more than one engine, and drm_print_memory_stats over its
//     memory regions (system0, local0, stolen-system0, stolen-local0):
//     drm-total-, drm-shared-, drm-active-, drm-resident-, drm-purgeable-.
//   - xe (xe_drm_client.c): drm-cycles-{rcs,bcs,vcs,vecs,ccs},
//     drm-total-cycles-<class>, drm-engine-capacity-<class> above one, and
//     the memory stats over its regions (system, gtt, stolen, vram0, …).
//   - amdgpu (amdgpu_fdinfo.c): drm-engine-{gfx,compute,dma,dec,enc,enc_1,
//     dec_1,jpeg,vpe} ns, drm-engine-capacity-<ip> in newer kernels,
//     drm-memory-{vram,gtt,cpu} KiB (older kernels; "drm-memory-gtt: " has
//     a space before its tab) or the memory stats over vram, gtt and cpu,
//     and amd-* keys, which are not drm- keys and are skipped.
//   - NVIDIA's open kernel modules: nvidia-drm's file operations have no
//     show_fdinfo (kernel-open/nvidia-drm/nvidia-drm-drv.c, nv_drm_fops),
//     so a descriptor of an NVIDIA node has no drm- keys at all.
//
// The parser is a pure function over one file's bytes and allocates
// nothing: names are kept in fixed arrays, counts are bounded.
package drmfdinfo

import (
	"bytes"
)

// Bounds of one client: the kernel writes a handful of engines and
// regions; more are ignored.
const (
	MaxEngines = 16
	MaxRegions = 8
	// MaxName bounds an engine's or a region's name, and drm-driver's and
	// drm-pdev's values; a longer one is cut.
	MaxName = 24
)

// Name is a short name kept without allocating: Len bytes of B.
type Name struct {
	B   [MaxName]byte
	Len uint8
}

// String returns the name (it allocates: for reports, not the poll).
func (n Name) String() string { return string(n.B[:n.Len]) }

// Bytes returns the name's bytes, valid while n is.
func (n *Name) Bytes() []byte { return n.B[:n.Len] }

// Is reports whether the name is s.
func (n *Name) Is(s string) bool { return string(n.B[:n.Len]) == s }

func (n *Name) set(b []byte) {
	n.Len = uint8(copy(n.B[:], b))
}

// Engine is one engine's figures in one client.
type Engine struct {
	Name Name
	// Busy is drm-engine-<name> in ns (Cycles false), or drm-cycles-<name>
	// (Cycles true).
	Busy uint64
	// Total is drm-total-cycles-<name>, the GPU timestamp Busy's cycles
	// are measured against.
	Total    uint64
	Capacity uint32 // drm-engine-capacity-<name>; 1 when absent
	HasBusy  bool
	Cycles   bool // Busy is in cycles: drm-cycles-
	HasTotal bool
}

// Region is one memory region's figures in one client, in bytes.
type Region struct {
	Name                  Name
	Total, Resident       uint64
	HasTotal, HasResident bool
}

// Client is what one descriptor's fdinfo says.
type Client struct {
	Driver   Name // drm-driver
	PDev     Name // drm-pdev
	ID       uint64
	HasID    bool // drm-client-id
	Engines  [MaxEngines]Engine
	NEngines int
	Regions  [MaxRegions]Region
	NRegions int
}

// IsDRM reports whether the fdinfo was a DRM client's: it has drm-driver,
// the one mandatory key.
func (c *Client) IsDRM() bool { return c.Driver.Len > 0 }

// Engine returns the client's engine named name, if it has it.
func (c *Client) Engine(name string) (*Engine, bool) {
	for i := range c.NEngines {
		if c.Engines[i].Name.Is(name) {
			return &c.Engines[i], true
		}
	}
	return nil, false
}

// Region returns the client's region named name, if it has it.
func (c *Client) Region(name string) (*Region, bool) {
	for i := range c.NRegions {
		if c.Regions[i].Name.Is(name) {
			return &c.Regions[i], true
		}
	}
	return nil, false
}

func (c *Client) engine(name []byte) *Engine {
	if len(name) == 0 {
		return nil
	}
	if len(name) > MaxName {
		name = name[:MaxName]
	}
	for i := range c.NEngines {
		if bytes.Equal(c.Engines[i].Name.Bytes(), name) {
			return &c.Engines[i]
		}
	}
	if c.NEngines == MaxEngines {
		return nil
	}
	e := &c.Engines[c.NEngines]
	*e = Engine{Capacity: 1}
	e.Name.set(name)
	c.NEngines++
	return e
}

func (c *Client) region(name []byte) *Region {
	if len(name) == 0 {
		return nil
	}
	if len(name) > MaxName {
		name = name[:MaxName]
	}
	for i := range c.NRegions {
		if bytes.Equal(c.Regions[i].Name.Bytes(), name) {
			return &c.Regions[i]
		}
	}
	if c.NRegions == MaxRegions {
		return nil
	}
	r := &c.Regions[c.NRegions]
	*r = Region{}
	r.Name.set(name)
	c.NRegions++
	return r
}

// Parse reads one fdinfo file into c, which it clears first. Lines that
// are not drm- keys (pos, flags, mnt_id, ino, amd-*), keys it does not
// know and values that do not parse are skipped. It allocates nothing.
func Parse(b []byte, c *Client) {
	*c = Client{}
	for len(b) > 0 {
		var line []byte
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			line, b = b, nil
		}
		k, v, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		k = bytes.TrimSpace(k) // amdgpu writes "drm-memory-gtt: \t…"
		v = bytes.TrimSpace(v)
		key, ok := bytes.CutPrefix(k, []byte("drm-"))
		if !ok {
			continue
		}
		c.line(key, v)
	}
}

func (c *Client) line(key, v []byte) {
	switch string(key) {
	case "driver":
		c.Driver.set(firstField(v))
		return
	case "pdev":
		c.PDev.set(firstField(v))
		return
	case "client-id":
		if n, ok := parseUint(firstField(v)); ok {
			c.ID, c.HasID = n, true
		}
		return
	}
	switch {
	case hasPrefix(key, "engine-capacity-"):
		if n, ok := parseUint(firstField(v)); ok && n > 0 && n <= 1<<16 {
			if e := c.engine(key[len("engine-capacity-"):]); e != nil {
				e.Capacity = uint32(n)
			}
		}
	case hasPrefix(key, "engine-"):
		n, unit, ok := number(v)
		if !ok || (len(unit) > 0 && string(unit) != "ns") {
			return
		}
		if e := c.engine(key[len("engine-"):]); e != nil && !e.Cycles {
			e.Busy, e.HasBusy = n, true
		}
	case hasPrefix(key, "total-cycles-"):
		if n, ok := parseUint(firstField(v)); ok {
			if e := c.engine(key[len("total-cycles-"):]); e != nil {
				e.Total, e.HasTotal = n, true
			}
		}
	case hasPrefix(key, "cycles-"):
		if n, ok := parseUint(firstField(v)); ok {
			if e := c.engine(key[len("cycles-"):]); e != nil {
				e.Busy, e.HasBusy, e.Cycles = n, true, true
			}
		}
	case hasPrefix(key, "total-"):
		if n, ok := bytesValue(v); ok {
			if r := c.region(key[len("total-"):]); r != nil {
				r.Total, r.HasTotal = n, true
			}
		}
	case hasPrefix(key, "resident-"), hasPrefix(key, "memory-"):
		name := key[bytes.IndexByte(key, '-')+1:]
		if n, ok := bytesValue(v); ok {
			if r := c.region(name); r != nil {
				r.Resident, r.HasResident = n, true
			}
		}
	}
}

func hasPrefix(b []byte, p string) bool { return len(b) > len(p) && string(b[:len(p)]) == p }

// firstField is v up to its first whitespace.
func firstField(v []byte) []byte {
	if i := bytes.IndexAny(v, " \t"); i >= 0 {
		return v[:i]
	}
	return v
}

// number splits "123 ns" into 123 and "ns".
func number(v []byte) (uint64, []byte, bool) {
	f := firstField(v)
	n, ok := parseUint(f)
	return n, bytes.TrimSpace(v[len(f):]), ok
}

// bytesValue parses a memory value, "<uint> [KiB|MiB]" (the kernel's
// drm_fdinfo_print_size picks the largest unit that divides the size),
// in bytes. A unit the specification does not name, or a value that
// overflows, is no value.
func bytesValue(v []byte) (uint64, bool) {
	n, unit, ok := number(v)
	if !ok {
		return 0, false
	}
	var shift uint
	switch string(unit) {
	case "":
	case "KiB":
		shift = 10
	case "MiB":
		shift = 20
	default:
		return 0, false
	}
	if n > (^uint64(0))>>shift {
		return 0, false
	}
	return n << shift, true
}

// parseUint parses decimal digits, at most 20 and no overflow.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (^uint64(0)-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}
