package amdsysfs

import (
	"bytes"
	"errors"
	"io/fs"
	"slices"
	"strconv"
)

// KFD directories, relative to the sysfs root.
const (
	KFDNodesDir = "class/kfd/kfd/topology/nodes"
	KFDProcDir  = "class/kfd/kfd/proc"
)

// Node is a GPU node of the KFD topology.
type Node struct {
	ID int // the node's directory number
	// GPUID names the node's files in class/kfd/kfd/proc/<pid>: vram_<id>,
	// stats_<id>/cu_occupancy.
	GPUID uint32
	// PCIAddress is the node's PCI function, from the domain and
	// location_id properties: how a node is matched to its DRM card.
	PCIAddress string
	// CUs is the node's compute units, simd_count / simd_per_cu; 0 when
	// the properties do not say.
	CUs int
	// ThreadsPerCU is the most work-items one compute unit holds
	// resident: simd_per_cu × max_waves_per_simd × wave_front_size; 0
	// when the properties do not say.
	ThreadsPerCU int
}

// Topology lists the GPU nodes of the KFD topology (CPU nodes have
// gpu_id 0), by node number. A node whose gpu_id or properties cannot be
// read or lack a location is left out. The error is that of listing the
// nodes directory itself (no KFD).
func Topology(fsys fs.FS) ([]Node, error) {
	ents, err := fs.ReadDir(fsys, KFDNodesDir)
	if err != nil {
		return nil, err
	}
	r := &Reader{FS: fsys}
	var nodes []Node
	for _, e := range ents {
		id, err := strconv.Atoi(e.Name())
		if err != nil || id < 0 {
			continue
		}
		dir := KFDNodesDir + "/" + e.Name()
		gpuID, err := r.Uint(dir + "/gpu_id")
		if err != nil || gpuID == 0 || gpuID > 0xffffffff {
			continue
		}
		b, err := r.Read(dir + "/properties")
		if err != nil {
			continue
		}
		p := ParseProperties(b)
		addr, ok := p.PCIAddress()
		if !ok {
			continue
		}
		nodes = append(nodes, Node{ID: id, GPUID: uint32(gpuID), PCIAddress: addr, CUs: p.CUs(),
			ThreadsPerCU: p.ThreadsPerCU()})
	}
	slices.SortFunc(nodes, func(a, b Node) int { return a.ID - b.ID })
	return nodes, nil
}

// Properties is what amdsysfs uses of a KFD node's properties file.
type Properties struct {
	Domain, LocationID             uint64
	SIMDCount, SIMDPerCU           uint64
	MaxWavesPerSIMD, WaveFrontSize uint64
	has                            uint8
}

const (
	hasDomain = 1 << iota
	hasLocation
)

// ParseProperties parses "name value" lines, values unsigned decimal.
// Lines that do not parse and unknown names are ignored.
func ParseProperties(b []byte) Properties {
	var p Properties
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		k, v, ok := bytes.Cut(bytes.TrimSpace(line), []byte{' '})
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
		if err != nil {
			continue
		}
		switch string(k) {
		case "domain":
			p.Domain, p.has = n, p.has|hasDomain
		case "location_id":
			p.LocationID, p.has = n, p.has|hasLocation
		case "simd_count":
			p.SIMDCount = n
		case "simd_per_cu":
			p.SIMDPerCU = n
		case "max_waves_per_simd":
			p.MaxWavesPerSIMD = n
		case "wave_front_size":
			p.WaveFrontSize = n
		}
	}
	return p
}

// PCIAddress is the node's PCI function. Kernels before 4.19 have no
// domain property; the domain is then 0.
func (p Properties) PCIAddress() (string, bool) {
	if p.has&hasLocation == 0 || p.LocationID > 0xffff || p.Domain > 0xffffffff {
		return "", false
	}
	return PCIAddress(p.Domain, p.LocationID), true
}

// maxCUs bounds a plausible compute-unit count.
const maxCUs = 1 << 16

// maxThreadsPerCU bounds a plausible per-CU thread count (CDNA 3 holds
// 2,048; RDNA 2,560).
const maxThreadsPerCU = 1 << 14

// ThreadsPerCU is the most work-items one compute unit holds resident,
// or 0 when unknown.
func (p Properties) ThreadsPerCU() int {
	s, w, f := p.SIMDPerCU, p.MaxWavesPerSIMD, p.WaveFrontSize
	if s == 0 || w == 0 || f == 0 || s > maxThreadsPerCU || w > maxThreadsPerCU || f > maxThreadsPerCU ||
		s*w*f > maxThreadsPerCU {
		return 0
	}
	return int(s * w * f)
}

// CUs is the node's active compute units, or 0 when unknown.
func (p Properties) CUs() int {
	if p.SIMDPerCU == 0 || p.SIMDCount/p.SIMDPerCU > maxCUs {
		return 0
	}
	return int(p.SIMDCount / p.SIMDPerCU)
}

// Usage is one process's use of one GPU, as KFD counts it.
type Usage struct {
	PID   uint32
	GPUID uint32
	// VRAM is vram_<gpu_id>: bytes of device memory the process holds.
	VRAM    uint64
	HasVRAM bool
	// CUs is stats_<gpu_id>/cu_occupancy: the process's waves on the GPU,
	// in compute units' worth (the kernel divides the wave count by the
	// waves one CU holds, rounding up). Older kernels lack it.
	CUs    uint64
	HasCUs bool
	// Err is a failed read of either file; what was read stays.
	Err error
}

// Processes appends to out the usage of each process in
// class/kfd/kfd/proc of each GPU in gpuIDs that the process has a vram_
// file for. A process that exits while it is read is left out. The error
// is that of listing the proc directory itself.
func (r *Reader) Processes(gpuIDs []uint32, out []Usage) ([]Usage, error) {
	ents, err := fs.ReadDir(r.FS, KFDProcDir)
	if err != nil {
		return out, err
	}
	for _, e := range ents {
		pid, err := strconv.ParseUint(e.Name(), 10, 32)
		if err != nil || pid == 0 {
			continue
		}
		dir := KFDProcDir + "/" + e.Name() + "/"
		for _, id := range gpuIDs {
			gid := strconv.FormatUint(uint64(id), 10)
			u := Usage{PID: uint32(pid), GPUID: id}
			u.VRAM, err = r.Uint(dir + "vram_" + gid)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				continue // not a process of this GPU, or gone
			case err != nil:
				u.Err = err
			default:
				u.HasVRAM = true
			}
			u.CUs, err = r.Uint(dir + "stats_" + gid + "/cu_occupancy")
			switch {
			case errors.Is(err, fs.ErrNotExist):
			case err != nil:
				u.Err = errors.Join(u.Err, err)
			default:
				u.HasCUs = true
			}
			out = append(out, u)
		}
	}
	return out, nil
}
