package node

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf/link"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/bpfsource"
	"github.com/xpuscope/xpuscope/internal/ktime"
	"github.com/xpuscope/xpuscope/internal/nodebpf"
	"github.com/xpuscope/xpuscope/internal/procfs"
)

// ScopeName is the instrumentation scope of the Source's meter and tracer.
const ScopeName = "github.com/xpuscope/xpuscope/genai/node"

// housekeeping is how often the kernel's counts are read, loads and
// reloads looked for, and exited processes forgotten.
const housekeeping = time.Second

// Source counts what the kernel sees of the node's AI workloads: TCP
// retransmits and resets, and the reads, page faults and page cache of
// their model files. Create it with New.
type Source struct {
	cfg    config
	objs   *nodebpf.Objects
	kernel bpfsource.Kernel
	procs  procfs.FS
	self   int
	tracer trace.Tracer
	inst   instruments
	// Clocks: kernel (CLOCK_MONOTONIC) ns to wall time, and back.
	wall  func(uint64) time.Time
	wall0 time.Time
	mono0 uint64

	mu     sync.Mutex // guards everything below
	tcp    tcpState
	files  fileState
	owners ownerCache
	// cgroupPIDs is a process of each cgroup whose sockets had an event
	// with no owner (cgroupProcess).
	cgroupPIDs map[uint64]uint32
	// unheld is, for each process a scan found with more mappings of
	// watched files than the kernel side holds, the most it could not
	// hold: a later scan counts only those past it.
	unheld map[uint32]int
	over   [numReasons]int64
	// dropped are the kernel side's counters, as last read.
	kcounters [nodebpf.NumCounters]uint64
	nextScan  time.Time
	rec       nodebpf.TCPRecord
	open      nodebpf.OpenRecord

	// collections counts the metric collections: the series of an exited
	// process go once one has reported their last values.
	collections atomic.Int64
	snap        atomic.Pointer[snapshot]
}

// New checks the options, loads the parts' programs and attaches them,
// finds the model files the node's processes have open or mapped, and
// starts reading. Missing privilege (CAP_BPF and CAP_PERFMON, or root) or
// kernel support (BTF tracepoints, task storage) is xpuscope.ErrUnavailable;
// a part whose optional tracepoints the kernel lacks runs without them
// (Status says which). A bad option is an error.
func New(opts ...Option) (*Source, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	s := &Source{cfg: cfg, procs: procfs.FS{Root: cfg.procRoot}}
	if _, err := s.procs.PIDs(); err != nil {
		return nil, xpuscope.Unavailablef("node: cannot list the processes: %w", err)
	}
	s.self, _ = s.procs.Self()
	var parts nodebpf.Parts
	if cfg.tcp {
		parts |= nodebpf.PartTCP
	}
	if cfg.pageCache {
		parts |= nodebpf.PartPageCache | nodebpf.PartFaults
	}
	if cfg.fileSyscalls {
		parts |= nodebpf.PartSyscalls
	}
	if parts == 0 {
		return nil, errors.New("node: WithTCP, WithPageCache and WithFileSyscalls: every part is off")
	}
	s.objs, err = nodebpf.Load(nodebpf.LoadOptions{Parts: parts, RingBytes: cfg.ringBytes, WakeupBytes: uint64(cfg.ringBytes / 4),
		MinSize: minSizes(), BurstGap: cfg.burstGap})
	if err != nil {
		return nil, bpfsource.Classify("node: load BPF object", err)
	}
	s.kernel.Objects = s.objs
	if err := s.start(); err != nil {
		return nil, errors.Join(err, s.kernel.Close())
	}
	return s, nil
}

func (s *Source) start() error {
	s.wall0, s.mono0 = time.Now(), ktime.Now()
	s.wall = ktime.WallClock(func() uint64 { return s.mono0 })
	s.tracer = s.cfg.tracerProvider.Tracer(ScopeName, trace.WithInstrumentationVersion(xpuscope.Version))
	m := s.cfg.meterProvider.Meter(ScopeName, metric.WithInstrumentationVersion(xpuscope.Version))
	if err := s.inst.create(m); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	s.tcp.init(s.cfg)
	s.files.init()
	s.owners.init(s.cfg.maxProcesses)
	s.cgroupPIDs = map[uint64]uint32{}
	s.unheld = map[uint32]int{}
	// The model files already open, before the programs that see new
	// ones: a file found twice is watched once.
	if s.cfg.pageCache || s.cfg.fileSyscalls {
		s.mu.Lock()
		s.scan(time.Now())
		s.mu.Unlock()
	}
	for _, p := range s.objs.Attach {
		l, err := link.AttachTracing(link.TracingOptions{Program: s.objs.Program(p.Name)})
		if err != nil {
			what := "node: attach tp_btf/" + p.Tracepoint
			if bpfsource.Denied(err) {
				return bpfsource.Classify(what, err)
			}
			return xpuscope.Unavailablef("%s: %w (needs BTF tracepoints)", what, err)
		}
		s.kernel.Probes = append(s.kernel.Probes, l)
	}
	s.housekeep(time.Now())
	var err error
	s.kernel.Ring, err = bpfsource.NewRing(s.objs.Ring(), bpfsource.RingConfig{
		Poll: s.cfg.pollInterval, Decode: s.decode, Flush: s.flush, Housekeep: s.housekeep, Housekeeping: housekeeping})
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	if s.kernel.Callback, err = m.RegisterCallback(s.observe, s.inst.observables()...); err != nil {
		return fmt.Errorf("node: register callback: %w", err)
	}
	return nil
}

// mono is the kernel's CLOCK_MONOTONIC at wall time t.
func (s *Source) mono(t time.Time) uint64 {
	return uint64(int64(s.mono0) + int64(t.Sub(s.wall0)))
}

// decode handles one ring buffer record.
func (s *Source) decode(raw []byte) error {
	k, err := nodebpf.RecordKind(raw)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch k {
	case nodebpf.KindTCP:
		if err := nodebpf.DecodeTCP(raw, &s.rec); err != nil {
			return err
		}
		s.tcpEvent(&s.rec)
	case nodebpf.KindOpen:
		if err := nodebpf.DecodeOpen(raw, &s.open); err != nil {
			return err
		}
		s.opened(&s.open)
	}
	return nil
}

// flush publishes what a batch of records changed.
func (s *Source) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.publish()
}

// housekeep reads the kernel's counts of the watched files, ends the
// loads that paused, finds reloads, scans for model files when a scan is
// due, forgets exited processes, and publishes.
func (s *Source) housekeep(now time.Time) {
	counters, cerr := s.objs.Counters()
	s.mu.Lock()
	defer s.mu.Unlock()
	if cerr == nil {
		s.kcounters = counters
	}
	if s.cfg.pageCache || s.cfg.fileSyscalls {
		if !now.Before(s.nextScan) {
			s.scan(now)
		}
		s.readFiles(ktime.Now())
	}
	s.forgetExited()
	s.publish()
}

// Close detaches the programs, stops the reader and frees the kernel
// objects. Calls after the first return nil.
func (s *Source) Close() error { return s.kernel.Close() }

// CallRetransmits returns how many times the TCP socket of inode ino
// (socket:[ino] in /proc/<pid>/fd) retransmitted between from and to, the
// start and the end of a call made on it, from the times the kernel keeps
// by socket (the last 16: a call with more is told of its last 16); and
// learns that the socket's server is named server (when not empty), for
// the series of its connection and the others to the same address and
// port. It reads what the kernel keeps, and does not block on I/O. It is
// 0 while TCP is off. It is the seam a Source of calls over TCP (the
// genai capture) joins through: give it to genai.WithRetransmits.
func (s *Source) CallRetransmits(pid int, ino uint64, server string, from, to time.Time) int {
	if !s.cfg.tcp || ino == 0 {
		return 0
	}
	_, times, err := s.objs.Retransmits(ino)
	if err != nil {
		return 0
	}
	lo, hi := s.mono(from), s.mono(to)
	n := 0
	for _, t := range times {
		if t >= lo && t <= hi {
			n++
		}
	}
	if server != "" {
		s.mu.Lock()
		s.tcp.learn(ino, server)
		s.mu.Unlock()
	}
	return n
}

// Status says what the Source watches.
type Status struct {
	// TCP, PageCache and FileSyscalls say which parts run.
	TCP, PageCache, FileSyscalls bool
	// Missing are the tracepoints of the parts that run which this kernel
	// lacks: their counts are not reported (the fault tracepoints came in
	// Linux 6.10, the readahead ones in 6.12).
	Missing []string
	// Files are the model files watched.
	Files []File
	// ServerPorts are the ports whose connections are counted by server
	// endpoint.
	ServerPorts []uint16
}

// File is a model file watched.
type File struct {
	Name   string
	Format string
	// Dev and Inode identify it, as stat(2) gives them.
	Dev, Inode uint64
	Size       int64
	// PIDs are the processes seen reading or faulting it, or found
	// holding it, that are alive.
	PIDs []int
}

// Status returns what the Source watches: a copy the caller may keep.
func (s *Source) Status() Status {
	st := Status{TCP: s.cfg.tcp, PageCache: s.cfg.pageCache, FileSyscalls: s.cfg.fileSyscalls,
		Missing: append([]string(nil), s.objs.Missing...), ServerPorts: append([]uint16(nil), s.cfg.serverPorts...)}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.files.ordered() {
		sf := File{Name: f.name, Format: f.format, Dev: nodebpf.UserDev(f.key.Dev), Inode: f.key.Ino, Size: f.size}
		for pid, p := range f.procs {
			if !p.gone {
				sf.PIDs = append(sf.PIDs, int(pid))
			}
		}
		slices.Sort(sf.PIDs)
		st.Files = append(st.Files, sf)
	}
	return st
}

// Describe says in a line what the Source watches, for the agent's
// -check.
func (st Status) Describe() string {
	var parts []string
	if st.TCP {
		parts = append(parts, fmt.Sprintf("TCP retransmits and resets (server ports %v)", st.ServerPorts))
	}
	if st.PageCache {
		parts = append(parts, "model files' page cache, faults and readahead")
	}
	if st.FileSyscalls {
		parts = append(parts, "model files' opens and reads")
	}
	out := joinWords(parts) + fmt.Sprintf("; %d model file(s) watched", len(st.Files))
	for i, f := range st.Files {
		if i == 4 {
			out += fmt.Sprintf(" …(%d more)", len(st.Files)-i)
			break
		}
		out += fmt.Sprintf(" %s (%s, %d MiB)", f.Name, f.Format, f.Size>>20)
	}
	if len(st.Missing) > 0 {
		out += fmt.Sprintf("; this kernel lacks %v: not counted", st.Missing)
	}
	return out
}

// owner is a process the Source has series of.
type owner struct {
	attrs []attribute.KeyValue // the resolver's
	exe   string
	over  bool // past the cap of processes: no attributes
}

// ownerCache places processes in their pods once each, bounded.
type ownerCache struct {
	max    int
	m      map[uint32]*owner
	folded owner
}

func (c *ownerCache) init(max int) {
	c.max, c.m = max, map[uint32]*owner{}
	c.folded = owner{over: true}
}

// get returns pid's owner, asking the resolver the first time.
func (s *Source) owner(pid uint32) *owner {
	c := &s.owners
	if pid == 0 {
		return &c.folded
	}
	if o := c.m[pid]; o != nil {
		return o
	}
	if len(c.m) >= c.max {
		s.over[reasonProcesses]++
		c.m[pid] = &c.folded
		return &c.folded
	}
	o := &owner{exe: s.procs.Proc(int(pid)).ExecutableName()}
	if r := s.cfg.resolver; r != nil {
		o.attrs, _ = r.ProcessAttributes(int(pid))
	}
	c.m[pid] = o
	return o
}

// forgetOwner drops pid, telling the resolver.
func (s *Source) forgetOwner(pid uint32) {
	o := s.owners.m[pid]
	if o == nil {
		return
	}
	delete(s.owners.m, pid)
	if r := s.cfg.resolver; r != nil && !o.over {
		r.Forget(int(pid))
	}
}

func joinWords(ws []string) string {
	switch len(ws) {
	case 0:
		return "nothing"
	case 1:
		return ws[0]
	}
	out := ws[0]
	for _, w := range ws[1 : len(ws)-1] {
		out += ", " + w
	}
	return out + " and " + ws[len(ws)-1]
}

// alive says whether pid runs.
func (s *Source) alive(pid uint32) bool { return s.procs.Proc(int(pid)).Alive() }
