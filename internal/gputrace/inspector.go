package gputrace

import (
	"errors"
	"io"
	"math"
	"os"
	"slices"
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
// time, the lines the Inspector appends to the process's JSON dump, and
// joins each operation it timed to the series of its rank: the record
// names the communicator by NCCL's commHash, which is gpu.nccl.comm.id,
// and gives the rank and size. Nothing requires the Inspector: a process
// without it costs one read of its environment.
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
	off   bool // nothing to read: no Inspector, its Prometheus mode, or no environment to read
	dir   string
	nspid int
	next  time.Time // when to look for the dump again
	dumps []inspectedDump
}

type inspectedDump struct {
	f    *os.File
	tail *linetail.Tail
}

func (st *inspected) close() {
	for _, d := range st.dumps {
		d.f.Close()
	}
	st.dumps = nil
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
	timed          int64
	time, busBytes float64
	attrs          meterx.Attrs
}

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
	s.mu.Lock()
	for i := range recs {
		s.agg.inspector(recs[i].pid, &recs[i].rec)
	}
	s.inspReadErrors += readErrs
	s.inspRecordErrors += recErrs
	s.mu.Unlock()
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
	if out != ncclinspector.JSON {
		return &inspected{off: true}
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
	op := semconv.Other
	for c := gputracebpf.AllReduce; c <= gputracebpf.Recv; c++ {
		if c.String() == r.Op {
			op = r.Op
		}
	}
	k := inspKey{commIdentity{id: commName{hash: r.CommHash}.id(), rank: int32(r.Rank), size: int32(r.NRanks)}, op}
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
	}
}

var (
	inspReadAttrs   = []metric.ObserveOption{metric.WithAttributes(semconv.ErrorType.String(semconv.InspectorErrorRead))}
	inspRecordAttrs = []metric.ObserveOption{metric.WithAttributes(semconv.ErrorType.String(semconv.InspectorErrorRecord))}
)
