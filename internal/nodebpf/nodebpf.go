// Package nodebpf holds the eBPF programs of package genai/node (node.bpf.c,
// compiled by bpf2go into the committed node_x86_bpfel.o): BTF tracepoints
// on TCP retransmits and resets, on the page cache, page faults and
// readahead of watched model files, and on the open and read syscalls.
// It loads the programs a Source asks for, decodes the records they
// submit without allocating, and reads the counts they keep in maps.
package nodebpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/bpfsource"
)

// Kind says what a ring buffer record is.
type Kind uint8

// Record kinds (enum record_kind).
const (
	KindTCP  = Kind(nodeRecordKindRECORD_TCP)
	KindOpen = Kind(nodeRecordKindRECORD_OPEN)
)

// Event is what a TCP record says happened.
type Event uint8

// TCP events (enum tcp_event).
const (
	Retransmit    = Event(nodeTcpEventTCP_RETRANSMIT)
	ResetSent     = Event(nodeTcpEventTCP_RESET_SENT)
	ResetReceived = Event(nodeTcpEventTCP_RESET_RECEIVED)
)

// Role is which end of its connection a socket is.
type Role uint8

// Roles (enum role).
const (
	RoleUnknown = Role(nodeRoleROLE_UNKNOWN) // it began before the programs were attached
	RoleClient  = Role(nodeRoleROLE_CLIENT)  // it connected
	RoleServer  = Role(nodeRoleROLE_SERVER)  // a listener accepted it
)

// Format is a model file's format, by the extension of the path opened.
type Format uint8

// Formats (enum format).
const (
	FormatNone        = Format(nodeFormatFORMAT_NONE)
	FormatSafetensors = Format(nodeFormatFORMAT_SAFETENSORS)
	FormatGGUF        = Format(nodeFormatFORMAT_GGUF)
	FormatPyTorch     = Format(nodeFormatFORMAT_PYTORCH)
	FormatBin         = Format(nodeFormatFORMAT_BIN)
	FormatCheckpoint  = Format(nodeFormatFORMAT_CHECKPOINT)
	FormatONNX        = Format(nodeFormatFORMAT_ONNX)
	FormatTensorRT    = Format(nodeFormatFORMAT_TENSORRT)
	NumFormats        = int(nodeFormatFORMAT_MAX)
)

// Counters of the BPF side (enum counter).
const (
	CounterDrops     = int(nodeCounterCOUNTER_DROPS)      // records the ring buffer had no room for
	CounterFilesFull = int(nodeCounterCOUNTER_FILES_FULL) // model files opened with the watch table full
	CounterProcsFull = int(nodeCounterCOUNTER_PROCS_FULL) // (file, process) pairs with their table full
	CounterLongPath  = int(nodeCounterCOUNTER_LONG_PATH)  // opens of a path too long to look at
	// CounterMappingsFull: mappings of watched files not kept because
	// the table of processes was full: their faults go uncounted. One
	// past a process's MaxMappings is not counted here: a scan of the
	// process's maps finds it (WatchMappings' dropped).
	CounterMappingsFull = int(nodeCounterCOUNTER_MAPPINGS_FULL)
	NumCounters         = int(nodeCounterCOUNTER_MAX)
)

// Sizes of the records, as node.bpf.c lays them out.
const (
	TCPRecordSize  = 80
	OpenRecordSize = 104
	NameBytes      = 64
	// RetransmitTimes is how many retransmit times a socket keeps.
	RetransmitTimes = 16
	// MaxFiles is how many files can be watched at once; MaxFileProcs
	// how many (file, process) pairs are counted.
	MaxFiles     = 1024
	MaxFileProcs = 8192
	// MaxMappings is how many mappings of watched files a process's
	// faults are matched against (page_fault_user); MaxMappingProcs how
	// many processes.
	MaxMappings     = 16
	MaxMappingProcs = 4096
)

// ErrMalformed is returned by the decoders for a record they cannot read.
var ErrMalformed = errors.New("nodebpf: malformed record")

// RecordKind returns the kind of the record b, and whether b is long
// enough to be one of that kind.
func RecordKind(b []byte) (Kind, error) {
	if len(b) == 0 {
		return 0, fmt.Errorf("%w: empty", ErrMalformed)
	}
	k := Kind(b[0])
	switch {
	case k == KindTCP && len(b) >= TCPRecordSize, k == KindOpen && len(b) >= OpenRecordSize:
		return k, nil
	case k == KindTCP || k == KindOpen:
		return k, fmt.Errorf("%w: %d bytes of a record of kind %d", ErrMalformed, len(b), k)
	}
	return k, fmt.Errorf("%w: kind %d", ErrMalformed, k)
}

// TCPRecord is a retransmit or a reset, of a socket.
type TCPRecord struct {
	Event Event
	Role  Role
	State uint8 // the socket's TCP state (TCP_ESTABLISHED is 1)
	// PID is the socket's owner as the kernel side saw it connect or
	// listen; 0 when it did not.
	PID uint32
	TS  uint64 // CLOCK_MONOTONIC ns
	// Ino is the inode number of the socket (socket:[Ino] in
	// /proc/<pid>/fd); 0 for one its process had closed.
	Ino uint64
	// Cgroup is the socket's cgroup v2 id; 0 if none.
	Cgroup uint64
	// Err is a retransmit's error (0: the segment left), on kernels whose
	// tracepoint says (6.14+); else 0.
	Err           int32
	Local, Remote netip.AddrPort
}

const (
	afInet  = 2
	afInet6 = 10
)

// DecodeTCP reads the TCP record b into r.
func DecodeTCP(b []byte, r *TCPRecord) error {
	if len(b) < TCPRecordSize || Kind(b[0]) != KindTCP {
		return fmt.Errorf("%w: not a TCP record (%d bytes)", ErrMalformed, len(b))
	}
	le := binary.LittleEndian
	r.Event, r.Role, r.State = Event(b[1]), Role(b[2]), b[3]
	r.PID = le.Uint32(b[4:])
	r.TS = le.Uint64(b[8:])
	r.Ino = le.Uint64(b[16:])
	r.Cgroup = le.Uint64(b[24:])
	r.Err = int32(le.Uint32(b[32:]))
	family := le.Uint16(b[36:])
	sport, dport := le.Uint16(b[38:]), le.Uint16(b[40:])
	switch {
	case r.Event < Retransmit || r.Event > ResetReceived:
		return fmt.Errorf("%w: TCP event %d", ErrMalformed, r.Event)
	case r.Role > RoleServer:
		return fmt.Errorf("%w: role %d", ErrMalformed, r.Role)
	}
	switch family {
	case afInet:
		r.Local = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[48:52])), sport)
		r.Remote = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[64:68])), dport)
	case afInet6:
		r.Local = netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[48:64])).Unmap(), sport)
		r.Remote = netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[64:80])).Unmap(), dport)
	case 0: // a reset sent for a segment no socket took: no socket to say
		r.Local, r.Remote = netip.AddrPort{}, netip.AddrPort{}
	default:
		return fmt.Errorf("%w: address family %d", ErrMalformed, family)
	}
	return nil
}

// FileKey names a file as the kernel does: its superblock's dev_t in the
// kernel's encoding (major << 20 | minor) and its inode number.
type FileKey struct{ Dev, Ino uint64 }

// KernelDev converts a device number as stat(2) gives it (glibc's
// encoding) into the kernel's.
func KernelDev(dev uint64) uint64 {
	major := (dev>>8)&0xfff | (dev>>32)&^0xfff
	minor := dev&0xff | (dev>>12)&^0xff
	return major<<20 | minor&0xfffff
}

// UserDev converts the kernel's dev_t into stat(2)'s encoding.
func UserDev(dev uint64) uint64 {
	major, minor := dev>>20, dev&0xfffff
	return (major&0xfff)<<8 | (major&^0xfff)<<32 | minor&0xff | (minor&^0xff)<<12
}

// OpenRecord is an open of a model file by a process.
type OpenRecord struct {
	Format Format
	PID    uint32
	TS     uint64 // CLOCK_MONOTONIC ns of the open's entry
	File   FileKey
	Size   uint64
	// Name is the last component of the path opened (its last NameBytes
	// bytes). It points into the decoded buffer: copy it to keep it.
	Name []byte
}

// DecodeOpen reads the open record b into r.
func DecodeOpen(b []byte, r *OpenRecord) error {
	if len(b) < OpenRecordSize || Kind(b[0]) != KindOpen {
		return fmt.Errorf("%w: not an open record (%d bytes)", ErrMalformed, len(b))
	}
	le := binary.LittleEndian
	r.Format = Format(b[1])
	n := int(b[2])
	r.PID = le.Uint32(b[4:])
	r.TS = le.Uint64(b[8:])
	r.File = FileKey{Dev: le.Uint64(b[16:]), Ino: le.Uint64(b[24:])}
	r.Size = le.Uint64(b[32:])
	switch {
	case r.Format == FormatNone || int(r.Format) >= NumFormats:
		return fmt.Errorf("%w: format %d", ErrMalformed, r.Format)
	case n == 0 || n > NameBytes:
		return fmt.Errorf("%w: a name of %d bytes", ErrMalformed, n)
	}
	r.Name = b[40 : 40+n]
	return nil
}

// FileStats are a watched file's counts (struct file_stats).
type FileStats = nodeFileStats

// ProcStats are a process's counts of a watched file (struct proc_stats).
type ProcStats = nodeProcStats

// Parts of the object a Source loads.
type Parts uint8

const (
	// PartTCP: retransmits and resets, and the socket states that name
	// their sockets' owners.
	PartTCP Parts = 1 << iota
	// PartPageCache: pages of watched files added to and removed from
	// the page cache.
	PartPageCache
	// PartFaults: page faults and readahead on watched files.
	PartFaults
	// PartSyscalls: the opens of model files, and the reads of watched
	// files, through sys_enter and sys_exit.
	PartSyscalls
)

// Program is one program of the object and the BTF tracepoint it attaches
// to.
type Program struct {
	Name       string
	Tracepoint string
	Part       Parts
	// Optional: a kernel without the tracepoint runs the part without it
	// (the readahead tracepoints came in Linux 6.12, the fault ones in
	// 6.10).
	Optional bool
}

// userFaultPrograms are loaded only where the kernel has page_fault_user,
// which needs the mappings of watched files: the programs that drop a
// process's at exec and exit (sys_enter and sys_exit keep them).
var userFaultPrograms = []string{nodeProgPageFaultUser, nodeProgMappingsExec, nodeProgMappingsExit}

// Programs lists every program, in the order a Source attaches them: for
// each part, what opens a gate before what it gates (the socket states
// before the events, sys_exit before sys_enter).
var Programs = []Program{
	{nodeProgSockState, "inet_sock_set_state", PartTCP, false},
	{nodeProgTcpRetransmit, "tcp_retransmit_skb", PartTCP, false}, // or tcp_retransmit_err: see Load
	{nodeProgTcpRetransmitSynack, "tcp_retransmit_synack", PartTCP, false},
	{nodeProgTcpSendReset, "tcp_send_reset", PartTCP, false},
	{nodeProgTcpReceiveReset, "tcp_receive_reset", PartTCP, false},
	{nodeProgCacheAdd, "mm_filemap_add_to_page_cache", PartPageCache, false},
	{nodeProgCacheDelete, "mm_filemap_delete_from_page_cache", PartPageCache, false},
	{nodeProgMappingsExec, "sched_process_exec", PartFaults, false}, // with page_fault_user only
	{nodeProgMappingsExit, "sched_process_exit", PartFaults, false},
	{nodeProgPageFaultUser, "page_fault_user", PartFaults, true}, // x86: see Load
	{nodeProgFilemapFault, "mm_filemap_fault", PartFaults, true},
	{nodeProgFilemapMapPages, "mm_filemap_map_pages", PartFaults, true},
	{nodeProgSyncRa, "page_cache_sync_ra", PartFaults, true},
	{nodeProgAsyncRa, "page_cache_async_ra", PartFaults, true},
	{nodeProgSysExit, "sys_exit", PartSyscalls, false},
	{nodeProgSysEnter, "sys_enter", PartSyscalls, false},
}

// LoadOptions say what to load.
type LoadOptions struct {
	Parts Parts
	// RingBytes sizes the ring buffer (a power of two multiple of the
	// page size); 0 keeps the object's 256 KiB. WakeupBytes wakes the
	// reader once this much is unread; 0 keeps the object's 64 KiB.
	RingBytes   uint32
	WakeupBytes uint64
	// MinSize is the smallest model file of each format, for the opens
	// the kernel side watches.
	MinSize [NumFormats]uint64
	// BurstGap is the pause in a process's reads and faults of a file
	// that ends a burst of them (ProcStats.Burst); 0 keeps 2 s.
	BurstGap time.Duration
}

// Objects are the loaded programs and maps.
type Objects struct {
	nodeMaps
	nodeVariables
	bpfsource.Programs // by name
	// Attach is what to attach, in order: the programs loaded, by the
	// tracepoint each goes on.
	Attach []Program
	// Missing are the optional tracepoints of the parts asked for that
	// this kernel lacks: their programs were not loaded.
	Missing []string
	// UserFaults says that faults are counted by page_fault_user,
	// matched against the mappings of watched files (WatchMappings).
	UserFaults bool
}

// kernelTracepoints reads which BTF tracepoints the running kernel has.
var kernelTracepoints = sync.OnceValues(func() (*btf.Spec, error) { return btf.LoadKernelSpec() })

// tracepointArgs returns how many arguments the kernel's BTF tracepoint
// name takes, and false when the kernel has no such tracepoint.
func tracepointArgs(name string) (int, bool, error) {
	spec, err := kernelTracepoints()
	if err != nil {
		return 0, false, err
	}
	var td *btf.Typedef
	if err := spec.TypeByName("btf_trace_"+name, &td); err != nil {
		if errors.Is(err, btf.ErrNotFound) {
			return 0, false, nil
		}
		return 0, false, err
	}
	if p, ok := td.Type.(*btf.Pointer); ok {
		if fp, ok := p.Target.(*btf.FuncProto); ok {
			return len(fp.Params) - 1, true, nil // the first is the tracepoint's data
		}
	}
	return 0, false, fmt.Errorf("btf_trace_%s is no function pointer", name)
}

// Load loads the maps and the programs of o.Parts. A tracepoint an
// optional program needs that the kernel lacks leaves that program out
// (Objects.Missing); one a required program needs is an error wrapping
// ebpf.ErrNotSupported. Errors are cilium/ebpf's otherwise:
// bpfsource.Classify sorts them.
func Load(o LoadOptions) (*Objects, error) {
	spec, err := loadNode()
	if err != nil {
		return nil, fmt.Errorf("nodebpf: parse embedded object: %w", err)
	}
	if err := spec.Variables[nodeVarMinSize].Set(o.MinSize); err != nil {
		return nil, fmt.Errorf("nodebpf: set min_size: %w", err)
	}
	if o.BurstGap > 0 {
		if err := spec.Variables[nodeVarBurstGapNs].Set(uint64(o.BurstGap)); err != nil {
			return nil, fmt.Errorf("nodebpf: set burst_gap_ns: %w", err)
		}
	}
	objs := &Objects{}
	var names []string
	// Where the kernel has exceptions:page_fault_user (x86), it counts
	// every user page fault once, as getrusage does, and replaces
	// mm_filemap_fault and mm_filemap_map_pages: those miss a fault that
	// maps a huge folio by its PMD, and see a retried fault twice (a
	// process that took 66 faults over 128 MiB of a mapped file was
	// counted 17 by them, or 80 with huge pages refused). Its faults are
	// matched by address against the mappings of watched files, which
	// sys_enter and sys_exit keep from mmap and munmap: they are loaded
	// for it, without the opens and reads unless PartSyscalls is asked.
	_, userFaults, err := tracepointArgs("page_fault_user")
	if err != nil {
		return nil, fmt.Errorf("nodebpf: read the kernel's BTF: %w: %w", err, ebpf.ErrNotSupported)
	}
	userFaults = userFaults && o.Parts&PartFaults != 0
	objs.UserFaults = userFaults
	if err := spec.Variables[nodeVarTrackIo].Set(boolU32(o.Parts&PartSyscalls != 0)); err != nil {
		return nil, fmt.Errorf("nodebpf: set track_io: %w", err)
	}
	if err := spec.Variables[nodeVarTrackMappings].Set(boolU32(userFaults)); err != nil {
		return nil, fmt.Errorf("nodebpf: set track_mappings: %w", err)
	}
	parts := o.Parts
	if userFaults {
		parts |= PartSyscalls
	}
	for _, p := range Programs {
		if parts&p.Part == 0 {
			continue
		}
		if userFaults && (p.Name == nodeProgFilemapFault || p.Name == nodeProgFilemapMapPages) {
			continue
		}
		if !userFaults && slices.Contains(userFaultPrograms, p.Name) {
			continue
		}
		n, ok, err := tracepointArgs(p.Tracepoint)
		switch {
		case err != nil:
			return nil, fmt.Errorf("nodebpf: read the kernel's BTF: %w: %w", err, ebpf.ErrNotSupported)
		case !ok && p.Optional:
			objs.Missing = append(objs.Missing, p.Tracepoint)
			continue
		case !ok:
			return nil, fmt.Errorf("nodebpf: the kernel has no BTF tracepoint %s: %w", p.Tracepoint, ebpf.ErrNotSupported)
		}
		if p.Name == nodeProgTcpRetransmit && n >= 3 {
			p.Name = nodeProgTcpRetransmitErr // err, from Linux 6.14
		}
		names = append(names, p.Name)
		objs.Attach = append(objs.Attach, p)
	}
	lo := bpfsource.LoadOptions{Ring: nodeMapRecords, RingBytes: o.RingBytes, WakeupBytes: o.WakeupBytes, Programs: names}
	objs.Programs, err = bpfsource.Load(spec, lo, &objs.nodeMaps, &objs.nodeVariables)
	if err != nil {
		return nil, err
	}
	return objs, nil
}

func boolU32(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// Close frees the programs and maps.
func (o *Objects) Close() error {
	return errors.Join(o.Programs.Close(), o.nodeMaps.Close())
}

// Ring is the ring buffer map.
func (o *Objects) Ring() *ebpf.Map { return o.Records }

// Counters sums the BPF counters over CPUs.
func (o *Objects) Counters() ([NumCounters]uint64, error) {
	var out [NumCounters]uint64
	err := bpfsource.SumPerCPU(o.nodeMaps.Counters, out[:])
	return out, err
}

// Watch adds f to the watched files, with zero counts; a file watched
// already keeps its counts. It returns false when the table is full.
func (o *Objects) Watch(f FileKey) (bool, error) {
	err := o.nodeMaps.Files.Update(nodeFileKey{Dev: f.Dev, Ino: f.Ino}, nodeFileStats{}, ebpf.UpdateNoExist)
	switch {
	case err == nil:
	case errors.Is(err, ebpf.ErrKeyExist):
		return true, nil
	case errors.Is(err, unix.E2BIG):
		return false, nil
	default:
		return false, fmt.Errorf("nodebpf: watch %+v: %w", f, err)
	}
	if err := o.nodeVariables.FilesWatched.Set(uint32(1)); err != nil {
		return true, fmt.Errorf("nodebpf: set files_watched: %w", err)
	}
	return true, nil
}

// Mapping is a process's mapping of a watched file: the addresses
// [Start, End).
type Mapping struct {
	Start, End uint64
	File       FileKey
}

// procMappings is struct proc_mappings: its lock, then its slots.
type procMappings struct {
	Lock uint32
	_    uint32
	M    [MaxMappings]nodeMapping
}

// WatchMappings adds to process pid's mappings of watched files, against
// which its faults are matched (where UserFaults), those of ms it lacks:
// mappings a scan found that the kernel side did not see made. It
// returns how many it could not keep (MaxMappings a process). A mapping
// unmapped between the scan that found it and this call is kept, wrongly,
// until the process maps or unmaps over it again, execs or exits.
func (o *Objects) WatchMappings(pid uint32, ms []Mapping) (dropped int, err error) {
	if !o.UserFaults || len(ms) == 0 {
		return 0, nil
	}
	var v procMappings
	err = o.nodeMaps.Mappings.LookupWithFlags(pid, &v, ebpf.LookupLock)
	exists := err == nil
	if err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return 0, fmt.Errorf("nodebpf: read the mappings of %d: %w", pid, err)
	}
	changed := false
next:
	for _, m := range ms {
		free := -1
		for i, have := range v.M {
			if have.End == 0 {
				if free < 0 {
					free = i
				}
				continue
			}
			if have.Start < m.End && m.Start < have.End {
				continue next // known, or a part of it
			}
		}
		if free < 0 {
			dropped++
			continue
		}
		v.M[free] = nodeMapping{Start: m.Start, End: m.End, File: nodeFileKey{Dev: m.File.Dev, Ino: m.File.Ino}}
		changed = true
	}
	if !changed {
		return dropped, nil
	}
	flags := ebpf.UpdateLock
	if !exists {
		flags = ebpf.UpdateNoExist // BPF_F_LOCK needs the entry
	}
	if err := o.nodeMaps.Mappings.Update(pid, &v, flags); err != nil {
		return dropped, fmt.Errorf("nodebpf: keep the mappings of %d: %w", pid, err)
	}
	return dropped, nil
}

// Mappings returns process pid's mappings of watched files as the kernel
// side keeps them.
func (o *Objects) Mappings(pid uint32) ([]Mapping, error) {
	var v procMappings
	if err := o.nodeMaps.Mappings.LookupWithFlags(pid, &v, ebpf.LookupLock); err != nil {
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("nodebpf: read the mappings of %d: %w", pid, err)
	}
	var out []Mapping
	for _, m := range v.M {
		if m.End != 0 {
			out = append(out, Mapping{Start: m.Start, End: m.End, File: FileKey{Dev: m.File.Dev, Ino: m.File.Ino}})
		}
	}
	return out, nil
}

// Unwatch stops counting f, and forgets its processes' counts.
func (o *Objects) Unwatch(f FileKey) error {
	err := o.nodeMaps.Files.Delete(nodeFileKey{Dev: f.Dev, Ino: f.Ino})
	if err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("nodebpf: unwatch %+v: %w", f, err)
	}
	return o.ForgetProcs(func(k FileKey, _ uint32) bool { return k != f })
}

// EachFile calls f with every watched file's counts. The stats are only
// valid during the call.
func (o *Objects) EachFile(f func(FileKey, *FileStats)) error {
	var (
		k nodeFileKey
		v nodeFileStats
	)
	it := o.nodeMaps.Files.Iterate()
	for it.Next(&k, &v) {
		f(FileKey{Dev: k.Dev, Ino: k.Ino}, &v)
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("nodebpf: read the watched files: %w", err)
	}
	return nil
}

// EachProc calls f with every (file, process) pair's counts.
func (o *Objects) EachProc(f func(FileKey, uint32, *ProcStats)) error {
	var (
		k nodeFileProcKey
		v nodeProcStats
	)
	it := o.nodeMaps.FileProcs.Iterate()
	for it.Next(&k, &v) {
		f(FileKey{Dev: k.File.Dev, Ino: k.File.Ino}, k.Pid, &v)
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("nodebpf: read the files' processes: %w", err)
	}
	return nil
}

// ForgetProcs deletes the (file, process) pairs keep says no to.
func (o *Objects) ForgetProcs(keep func(FileKey, uint32) bool) error {
	var drop []nodeFileProcKey
	if err := o.EachProc(func(k FileKey, pid uint32, _ *ProcStats) {
		if !keep(k, pid) {
			drop = append(drop, nodeFileProcKey{File: nodeFileKey{Dev: k.Dev, Ino: k.Ino}, Pid: pid})
		}
	}); err != nil {
		return err
	}
	for _, k := range drop {
		if err := o.nodeMaps.FileProcs.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("nodebpf: forget %+v: %w", k, err)
		}
	}
	return nil
}

// Retransmits returns how many segments the socket of inode ino
// retransmitted since it was first seen to, and the times (CLOCK_MONOTONIC
// ns) of the last RetransmitTimes of them, oldest first; nothing for a
// socket that retransmitted none.
func (o *Objects) Retransmits(ino uint64) (count uint64, times []uint64, err error) {
	var v nodeRetransmitTimes
	if err := o.nodeMaps.SockRetransmits.Lookup(ino, &v); err != nil {
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return 0, nil, nil
		}
		return 0, nil, fmt.Errorf("nodebpf: read the retransmits of socket %d: %w", ino, err)
	}
	n := min(v.Count, RetransmitTimes)
	times = make([]uint64, 0, n)
	for i := v.Count - n; i < v.Count; i++ {
		times = append(times, v.Ts[i%RetransmitTimes])
	}
	return v.Count, times, nil
}

// Loaded says whether the program of that name was loaded.
func (o *Objects) Loaded(name string) bool {
	return slices.ContainsFunc(o.Attach, func(p Program) bool { return p.Name == name })
}
