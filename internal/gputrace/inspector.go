package gputrace

import (
	"errors"
	"io"
	"math"
	"os"
	"slices"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope/internal/gputracebpf"
	"github.com/xpuscope/xpuscope/internal/linetail"
	"github.com/xpuscope/xpuscope/internal/meterx"
	"github.com/xpuscope/xpuscope/internal/ncclinspector"
	"github.com/xpuscope/xpuscope/semconv"
)

// The NCCL Inspector (issue 18, item 8). Where a traced process that
// makes NCCL communicators loads NVIDIA's Inspector (its environment
// says so: the allowed variables of ncclinspector, nothing else read),
// the reader's housekeeping reads, once a second and a bounded piece at a
// time, what the Inspector writes of the process, in whichever of its two
// modes the process runs it, and joins it to the series of its ranks:
//
//   - its JSON dump, a line per operation timed, appended: each record
//     names the communicator by NCCL's commHash, which is
//     gpu.nccl.comm.id, and gives the rank and size; each counts in
//     gpu.nccl.operation.timed, .time, .bytes and gpu.nccl.bus.bytes;
//   - its Prometheus textfiles (NCCL_INSPECTOR_PROM_DUMP=1), one a GPU,
//     rewritten whole once an interval: the files the process holds open,
//     read whole each time they changed; their samples, already the
//     Inspector's summaries of an interval, are gauges
//     (gpu.nccl.inspector.*), by the algorithm and protocol NCCL chose
//     where the Inspector says them. NCCL 2.29's samples name the
//     communicator and the rank; NCCL 2.30's only the communicator's size,
//     so they are joined only where one communicator of the process, and
//     one rank in it, has that size.
//
// A process runs one mode or the other, and the two fill different
// instruments: nothing counts twice. Nothing requires the Inspector: a
// process without it costs one read of its environment.
const (
	// inspectorRetry is how long a process whose dump is not there yet
	// waits to be looked at again: the Inspector writes it at its first
	// dump, at an interval or when a communicator ends.
	inspectorRetry = 5 * time.Second
	// inspectorReadMax bounds what is read of one process's dumps at a
	// housekeeping, inspectorTotalMax of all of them.
	inspectorReadMax  = 256 << 10
	inspectorTotalMax = 1 << 20
	// inspectorBacklog: a dump first found larger than this (a job
	// running for long before the agent came) is read from its end.
	inspectorBacklog = 4 << 20
	// maxInspectorSeries bounds a process's (identity, operation) series
	// of the Inspector's; past it they fold into one, _OTHER.
	maxInspectorSeries = 1024
	// maxNamed bounds the communicators a process is known to have made
	// by NCCL's name (reset when full).
	maxNamed      = 4096
	maxNamedRanks = 64 // ranks of one communicator in one process
)

// inspected is the Inspector's state for one process, the reader's alone
// (housekeeping runs on its goroutine).
type inspected struct {
	off   bool // nothing to read: no Inspector, or no environment to read
	prom  bool // its Prometheus mode: textfiles, not a JSON dump
	dir   string
	nspid int
	next  time.Time // when to look for the dump (the textfiles) again
	dumps []inspectedDump
	files []promFile
}

type inspectedDump struct {
	f    *os.File
	tail *linetail.Tail
}

// promFile is a textfile of the Inspector's that the process holds open.
type promFile struct {
	f    *os.File
	id   fileID
	snap *ncclinspector.Snapshot
}

// fileID names a file: its device and inode.
type fileID struct{ dev, ino uint64 }

func (st *inspected) close() {
	for _, d := range st.dumps {
		d.f.Close()
	}
	st.dumps = nil
	for _, f := range st.files {
		f.f.Close()
	}
	st.files = nil
}

// inspRecord is a record read, for the aggregator.
type inspRecord struct {
	pid uint32
	rec ncclinspector.Record
}

type inspKey struct {
	identity commIdentity
	op       string
}

type inspSeries struct {
	timed                     int64
	time, busBytes, algoBytes float64
	attrs                     meterx.Attrs
}

// promUpdate is a textfile's new content, for the aggregator: its
// samples, or, gone, that the file is no more.
type promUpdate struct {
	pid     uint32
	file    fileID
	gone    bool
	samples []ncclinspector.PromSample
}

// promPoint is a sample of a textfile joined to a rank's series.
type promPoint struct {
	identity          commIdentity
	time, busBW, algo float64 // NaN: not written
	attrs             meterx.Attrs
}

// promKey is what names a promPoint's series beside its process.
type promKey struct {
	identity                   commIdentity
	op, algo, proto, sizeRange string
}

const (
	// promRescan is how often a process's descriptors are looked
	// through for textfiles it opened since (a communicator on another
	// GPU), while it holds some.
	promRescan = 30 * time.Second
	// maxPromFile bounds a textfile read.
	maxPromFile = 256 << 10
)

// readInspectors reads the Inspector's dumps of the processes that make
// NCCL communicators, at housekeeping, outside the Source's lock.
func (s *Source) readInspectors(now time.Time) {
	s.mu.Lock()
	pids := s.agg.ncclPIDs(s.inspPIDs[:0])
	s.mu.Unlock()
	s.inspPIDs = pids
	live := make(map[uint32]bool, len(pids))
	for _, pid := range pids {
		live[pid] = true
	}
	for pid, st := range s.insp {
		if !live[pid] {
			st.close()
			delete(s.insp, pid)
		}
	}
	recs := s.inspRecs[:0]
	readErrs, recErrs := int64(0), int64(0)
	budget := int64(inspectorTotalMax)
	for _, pid := range pids {
		st := s.insp[pid]
		if st == nil {
			st = s.locateInspector(pid)
			s.insp[pid] = st
		}
		if st.off || budget <= 0 {
			continue
		}
		if st.prom {
			budget -= s.readPromFiles(pid, st, now, &readErrs)
			continue
		}
		if len(st.dumps) == 0 {
			if now.Before(st.next) {
				continue
			}
			st.next = now.Add(inspectorRetry)
			files, err := ncclinspector.OpenDumps(s.cfg.procfs.Proc(int(pid)), st.dir, st.nspid)
			if err != nil {
				if !errors.Is(err, ncclinspector.ErrNoDump) {
					readErrs++
				}
				continue
			}
			for _, f := range files {
				off := int64(0)
				if fi, err := f.Stat(); err == nil && fi.Size() > inspectorBacklog {
					off = fi.Size()
				}
				st.dumps = append(st.dumps, inspectedDump{f, linetail.New(f, off, make([]byte, ncclinspector.MaxLine+1))})
			}
		}
		for _, d := range st.dumps {
			fi, err := d.f.Stat()
			if err != nil {
				readErrs++
				continue
			}
			before := d.tail.Offset()
			_, skipped, err := d.tail.Read(fi.Size(), int(min(inspectorReadMax, budget)), func(line []byte) {
				var r ncclinspector.Record
				if ncclinspector.Parse(line, &r) != nil {
					recErrs++
					return
				}
				recs = append(recs, inspRecord{pid, r})
			})
			recErrs += int64(skipped)
			if err != nil {
				readErrs++
			}
			if d.tail.Offset() > before {
				budget -= d.tail.Offset() - before
			}
		}
	}
	s.inspRecs = recs
	ups := s.promUpdates
	s.promUpdates = s.promUpdates[:0]
	unjoined := int64(0)
	for i := range ups {
		recErrs += int64(ups[i].bad)
	}
	s.mu.Lock()
	for i := range recs {
		s.agg.inspector(recs[i].pid, &recs[i].rec)
	}
	for i := range ups {
		unjoined += int64(s.agg.inspectorProm(&ups[i].promUpdate))
	}
	s.inspReadErrors += readErrs
	s.inspRecordErrors += recErrs
	s.inspUnjoined += unjoined
	s.mu.Unlock()
	clear(ups)
}

// promRead is a promUpdate and the lines of its textfile that were not
// samples.
type promRead struct {
	promUpdate
	bad int
}

// readPromFiles reads the textfiles of pid that changed, queueing what
// they say in s.promUpdates, and returns the bytes it read. A process's
// files are looked for among its descriptors while it holds none (every
// inspectorRetry) and every promRescan while it does.
func (s *Source) readPromFiles(pid uint32, st *inspected, now time.Time, readErrs *int64) int64 {
	if !now.Before(st.next) {
		st.next = now.Add(inspectorRetry)
		if len(st.files) > 0 {
			st.next = now.Add(promRescan)
		}
		files, err := ncclinspector.OpenPromFiles(s.cfg.procfs.Proc(int(pid)).Dir())
		if err != nil && !errors.Is(err, ncclinspector.ErrNoDump) {
			*readErrs++
		}
		for _, f := range files {
			var id fileID
			if fi, err := f.Stat(); err == nil {
				if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
					id = fileID{sys.Dev, sys.Ino}
				}
			}
			if slices.ContainsFunc(st.files, func(h promFile) bool { return h.id == id }) || len(st.files) >= ncclinspector.MaxPromFiles {
				f.Close()
				continue
			}
			st.files = append(st.files, promFile{f, id, ncclinspector.NewSnapshot(f)})
		}
	}
	read := int64(0)
	kept := st.files[:0]
	for _, h := range st.files {
		data, ok, err := h.snap.Read(maxPromFile)
		if errors.Is(err, ncclinspector.ErrGone) {
			h.f.Close()
			s.promUpdates = append(s.promUpdates, promRead{promUpdate: promUpdate{pid: pid, file: h.id, gone: true}})
			st.next = now // another may have its name now
			continue
		}
		kept = append(kept, h)
		if err != nil {
			*readErrs++
			continue
		}
		if !ok {
			continue
		}
		read += int64(len(data))
		samples, bad := ncclinspector.ParsePromFile(data, nil)
		s.promUpdates = append(s.promUpdates, promRead{promUpdate{pid: pid, file: h.id, samples: samples}, bad})
	}
	clear(st.files[len(kept):])
	st.files = kept
	return read
}

// locateInspector reads what pid's environment says of its Inspector.
func (s *Source) locateInspector(pid uint32) *inspected {
	p := s.cfg.procfs.Proc(int(pid))
	var env ncclinspector.Env
	err := p.Environ(func(r io.Reader) (err error) {
		env, err = ncclinspector.ReadEnv(r)
		return err
	})
	if err != nil {
		return &inspected{off: true}
	}
	out, dir := ncclinspector.Locate(env)
	switch out {
	case ncclinspector.None:
		return &inspected{off: true}
	case ncclinspector.Prometheus:
		return &inspected{prom: true}
	}
	nspid, err := p.NSPid()
	if err != nil {
		return &inspected{off: true}
	}
	return &inspected{dir: dir, nspid: nspid}
}

// closeInspectors closes the dumps, once the reader has stopped.
func (s *Source) closeInspectors() {
	for pid, st := range s.insp {
		st.close()
		delete(s.insp, pid)
	}
}

// ncclPIDs appends the processes with NCCL state to pids.
func (a *aggregator) ncclPIDs(pids []uint32) []uint32 {
	for pid, p := range a.procs {
		if p.nccl != nil && p != a.other {
			pids = append(pids, pid)
		}
	}
	return pids
}

// inspector joins a record of the Inspector's to pid's series: a
// communicator pid made (NCCL's name of it, seen at its making), and the
// rank pid has in it where known. Another's record (a dump of another
// node's process of the same pid, in a shared directory) is not pid's.
func (a *aggregator) inspector(pid uint32, r *ncclinspector.Record) {
	p := a.procs[pid]
	if p == nil || p == a.other || p.nccl == nil {
		return
	}
	n := p.nccl
	ranks := n.named[r.CommHash]
	if !slices.Contains(ranks, int32(r.Rank)) && !slices.Contains(ranks, -1) {
		return
	}
	k := inspKey{commIdentity{id: commName{hash: r.CommHash}.id(), rank: int32(r.Rank), size: int32(r.NRanks)}, inspectorOp(r.Op)}
	sr := n.insp[k]
	if sr == nil {
		if len(n.insp) >= maxInspectorSeries {
			k = inspKey{commIdentity{id: semconv.Other, rank: -1, size: -1}, semconv.Other}
		}
		if sr = n.insp[k]; sr == nil {
			sr = &inspSeries{attrs: p.with(append(k.identity.attrs(), semconv.GPUNCCLCollective.String(k.op))...)}
			if n.insp == nil {
				n.insp = map[inspKey]*inspSeries{}
			}
			n.insp[k] = sr
		}
	}
	t := r.ExecTime.Seconds()
	sr.timed++
	sr.time += t
	if !math.IsNaN(r.BusBW) {
		sr.busBytes += r.BusBW * 1e9 * t
	}
	if !math.IsNaN(r.AlgoBW) {
		sr.algoBytes += r.AlgoBW * 1e9 * t
	}
}

// inspectorOp is gpu.nccl.collective of an operation the Inspector
// names op: the name of NCCL's API, or semconv.Other for one it does not
// name so (SendRecv, AllGatherV, ...).
func inspectorOp(op string) string {
	for c := gputracebpf.AllReduce; c <= gputracebpf.Recv; c++ {
		if c.String() == op {
			return op
		}
	}
	return semconv.Other
}

// inspectorProm puts what a textfile of the Inspector's says in the place
// of what it said before, joined to the series of the ranks of u.pid, and
// returns the samples it could not join: a communicator the process did
// not make or a rank it does not have (NCCL 2.29's, as for the JSON
// records), a size that none or several of its communicators have, or
// a rank in several (NCCL 2.30's), or past maxInspectorSeries points of
// the process.
func (a *aggregator) inspectorProm(u *promUpdate) (unjoined int) {
	p := a.procs[u.pid]
	if p == nil || p == a.other || p.nccl == nil {
		return 0
	}
	n := p.nccl
	old := n.prom[u.file]
	delete(n.prom, u.file)
	if u.gone {
		return 0
	}
	total := 0
	for _, pts := range n.prom {
		total += len(pts)
	}
	pts := old[:0]
	seen := map[promKey]bool{}
	for i := range u.samples {
		sm := &u.samples[i]
		id, ok := n.promIdentity(sm)
		if !ok || total+len(pts) >= maxInspectorSeries {
			unjoined++
			continue
		}
		k := promKey{id, inspectorOp(sm.Op), sm.Algorithm, sm.Protocol, sm.SizeRange}
		if seen[k] {
			continue // a second sample of one series (an operation NCCL's API does not name, as another): the first is kept
		}
		seen[k] = true
		kvs := append(id.attrs(), semconv.GPUNCCLCollective.String(k.op))
		if k.algo != "" {
			kvs = append(kvs, semconv.GPUNCCLAlgorithm.String(k.algo))
		}
		if k.proto != "" {
			kvs = append(kvs, semconv.GPUNCCLProtocol.String(k.proto))
		}
		if k.sizeRange != "" {
			kvs = append(kvs, semconv.GPUNCCLMessageSizeRange.String(k.sizeRange))
		}
		pts = append(pts, promPoint{identity: id, time: sm.ExecTime, busBW: sm.BusBW, algo: sm.AlgoBW, attrs: p.with(kvs...)})
	}
	if len(pts) < len(old) {
		clear(old[len(pts):]) // no attributes kept alive past their use
	}
	if len(pts) > 0 {
		if n.prom == nil {
			n.prom = map[fileID][]promPoint{}
		}
		n.prom[u.file] = pts
	}
	return unjoined
}

// promIdentity is the series a textfile's sample is joined to. NCCL
// 2.29's names the communicator and the rank: one the process made and a
// rank it has in it, as for a JSON record. NCCL 2.30's names only the
// communicator's size: the one live communicator of the process that has
// it, where the process has one rank in it (the textfile is one of the
// process's: its own GPU's).
func (n *procNCCL) promIdentity(sm *ncclinspector.PromSample) (commIdentity, bool) {
	if sm.Format == ncclinspector.PromComm {
		ranks := n.named[sm.CommHash]
		if !slices.Contains(ranks, int32(sm.Rank)) && !slices.Contains(ranks, -1) {
			return commIdentity{}, false
		}
		return commIdentity{id: commName{hash: sm.CommHash}.id(), rank: int32(sm.Rank), size: int32(sm.NRanks)}, true
	}
	var found commIdentity
	k := 0
	for _, c := range n.comms {
		if c.identity.size != int32(sm.NRanks) || (k > 0 && c.identity == found) {
			continue
		}
		if k++; k > 1 {
			return commIdentity{}, false
		}
		found = c.identity
	}
	return found, k == 1
}

// name records that the process made the communicator NCCL names
// hash, where it has the rank rank (-1: not known).
func (n *procNCCL) name(hash uint64, rank int32) {
	if n.named == nil || len(n.named) >= maxNamed {
		n.named = map[uint64][]int32{}
	}
	if ranks := n.named[hash]; !slices.Contains(ranks, rank) && len(ranks) < maxNamedRanks {
		n.named[hash] = append(ranks, rank)
	}
}

// fillInspector copies p's Inspector series into sn.
func (sn *snapshot) fillInspector(in *instruments, n *procNCCL) {
	for _, sr := range n.insp {
		sn.int(in.ncclTimed, sr.timed, sr.attrs.Observe...)
		sn.float(in.ncclTime, sr.time, sr.attrs.Observe...)
		sn.float(in.ncclBusBytes, sr.busBytes, sr.attrs.Observe...)
		sn.float(in.ncclOpBytes, sr.algoBytes, sr.attrs.Observe...)
	}
	for _, pts := range n.prom {
		for i := range pts {
			pt := &pts[i]
			sn.float(in.inspTime, pt.time, pt.attrs.Observe...)
			if !math.IsNaN(pt.busBW) {
				sn.float(in.inspBusBW, pt.busBW, pt.attrs.Observe...)
			}
			if !math.IsNaN(pt.algo) {
				sn.float(in.inspAlgoBW, pt.algo, pt.attrs.Observe...)
			}
		}
	}
}

var (
	inspReadAttrs     = []metric.ObserveOption{metric.WithAttributes(semconv.ErrorType.String(semconv.InspectorErrorRead))}
	inspRecordAttrs   = []metric.ObserveOption{metric.WithAttributes(semconv.ErrorType.String(semconv.InspectorErrorRecord))}
	inspUnjoinedAttrs = []metric.ObserveOption{metric.WithAttributes(semconv.ErrorType.String(semconv.InspectorErrorUnjoined))}
)
