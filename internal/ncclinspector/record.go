package ncclinspector

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Record is one line of the Inspector's JSON dump: an operation the
// Inspector timed (a collective's coll_perf, or a send's or receive's
// p2p_perf), with its communicator (header) and the writing process
// (metadata).
type Record struct {
	// CommHash is NCCL's hash of the communicator (header.id, "0x…").
	CommHash uint64
	// Rank is the writing rank, of NRanks (header.rank, header.n_ranks).
	Rank, NRanks int
	// PID is the writing process's id, in its PID namespace
	// (metadata.pid).
	PID int
	// P2P is set for a point-to-point operation (p2p_perf).
	P2P bool
	// Op is the operation as NCCL names it (ncclFuncToString):
	// AllReduce, AllGather, Send, Recv, ...
	Op string
	// Seq is the operation's sequence number on the communicator.
	Seq uint64
	// Bytes is the message size.
	Bytes uint64
	// ExecTime is how long it ran (whole microseconds).
	ExecTime time.Duration
	// TimingSource says how it was timed (kernel_gpu, kernel_cpu,
	// collective_cpu); empty where the record does not say (format
	// v4.0 before it did).
	TimingSource string
	// AlgoBW and BusBW are its algorithm and bus bandwidths in GB/s
	// (10⁹ bytes a second); NaN where the Inspector wrote "nan".
	AlgoBW, BusBW float64
	// Peer is a point-to-point operation's peer rank; -1 for a
	// collective.
	Peer int
}

// Bounds on a record: anything past them is not a record of the
// Inspector's.
const (
	MaxLine   = 64 << 10 // a record's line, verbose ones (a kernel event per channel) included
	maxRanks  = 1 << 24
	maxOpName = 64
	maxExecUS = math.MaxInt64 / int64(time.Microsecond)
)

// The JSON of a record, as inspector_json.cc writes it.
type jsonRecord struct {
	Header *struct {
		ID     string `json:"id"`
		Rank   *int   `json:"rank"`
		NRanks *int   `json:"n_ranks"`
	} `json:"header"`
	Metadata *struct {
		PID *int `json:"pid"`
	} `json:"metadata"`
	Coll *jsonPerf `json:"coll_perf"`
	P2P  *jsonPerf `json:"p2p_perf"`
}

// jsonPerf is coll_perf or p2p_perf: the same fields, prefixed coll_ or
// p2p_.
type jsonPerf struct {
	Coll       string    `json:"coll"`
	P2P        string    `json:"p2p"`
	CollSN     *uint64   `json:"coll_sn"`
	P2PSN      *uint64   `json:"p2p_sn"`
	Peer       *int      `json:"p2p_peer"`
	CollSize   *uint64   `json:"coll_msg_size_bytes"`
	P2PSize    *uint64   `json:"p2p_msg_size_bytes"`
	CollTime   *uint64   `json:"coll_exec_time_us"`
	P2PTime    *uint64   `json:"p2p_exec_time_us"`
	CollTiming string    `json:"coll_timing_source"`
	P2PTiming  string    `json:"p2p_timing_source"`
	CollAlgo   jsonFloat `json:"coll_algobw_gbs"`
	P2PAlgo    jsonFloat `json:"p2p_algobw_gbs"`
	CollBus    jsonFloat `json:"coll_busbw_gbs"`
	P2PBus     jsonFloat `json:"p2p_busbw_gbs"`
}

// jsonFloat is a double as the Inspector's JSON writer prints it: a
// number (%lf), or the string "nan" for a NaN.
type jsonFloat struct {
	v   float64
	set bool
}

func (f *jsonFloat) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if !strings.EqualFold(strings.TrimPrefix(s, "-"), "nan") {
			return fmt.Errorf("the bandwidth %q is not a number", s)
		}
		*f = jsonFloat{math.NaN(), true}
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("the bandwidth %s is not a number", b)
	}
	*f = jsonFloat{v, true}
	return nil
}

// ErrNotRecord is what Parse returns for a line that is not a record of
// the Inspector's; the error it returns wraps it.
var ErrNotRecord = errors.New("not an NCCL Inspector record")

// Parse reads one line of the Inspector's JSON dump into r. A line that
// is not one record, whole, with its communicator, rank, process and
// operation, is an error wrapping ErrNotRecord, and r is left as it was.
func Parse(line []byte, r *Record) error {
	line = bytes.TrimSpace(line)
	if len(line) > MaxLine {
		return fmt.Errorf("%w: a line of %d bytes", ErrNotRecord, len(line))
	}
	var j jsonRecord
	if err := json.Unmarshal(line, &j); err != nil {
		return fmt.Errorf("%w: %v", ErrNotRecord, err)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrNotRecord}, args...)...)
	}
	if j.Header == nil || j.Header.Rank == nil || j.Header.NRanks == nil {
		return bad("no header with a rank and n_ranks")
	}
	h, ok := strings.CutPrefix(j.Header.ID, "0x")
	if !ok || h == "" {
		return bad("header.id %q is not 0x and hexadecimal digits", j.Header.ID)
	}
	hash, err := strconv.ParseUint(h, 16, 64)
	if err != nil {
		return bad("header.id %q: %v", j.Header.ID, err)
	}
	rank, nranks := *j.Header.Rank, *j.Header.NRanks
	if nranks < 1 || nranks > maxRanks || rank < 0 || rank >= nranks {
		return bad("rank %d of %d", rank, nranks)
	}
	if j.Metadata == nil || j.Metadata.PID == nil || *j.Metadata.PID < 1 {
		return bad("no metadata.pid")
	}
	out := Record{CommHash: hash, Rank: rank, NRanks: nranks, PID: *j.Metadata.PID, Peer: -1}
	var (
		sn, size, us  *uint64
		algo, busbw   jsonFloat
		op, timingSrc string
	)
	switch {
	case j.Coll != nil && j.P2P == nil:
		c := j.Coll
		op, sn, size, us, timingSrc, algo, busbw = c.Coll, c.CollSN, c.CollSize, c.CollTime, c.CollTiming, c.CollAlgo, c.CollBus
	case j.P2P != nil && j.Coll == nil:
		c := j.P2P
		op, sn, size, us, timingSrc, algo, busbw = c.P2P, c.P2PSN, c.P2PSize, c.P2PTime, c.P2PTiming, c.P2PAlgo, c.P2PBus
		out.P2P = true
		if c.Peer == nil || *c.Peer < 0 || *c.Peer >= nranks {
			return bad("p2p_peer of a communicator of %d", nranks)
		}
		out.Peer = *c.Peer
	default:
		return bad("not one of coll_perf and p2p_perf")
	}
	if op == "" || len(op) > maxOpName {
		return bad("the operation %q", op)
	}
	if sn == nil || size == nil || us == nil || !algo.set || !busbw.set {
		return bad("%s: a sequence number, size, time or bandwidth missing", op)
	}
	if *us > uint64(maxExecUS) {
		return bad("%s: %d µs", op, *us)
	}
	if algo.v < 0 || busbw.v < 0 || math.IsInf(algo.v, 0) || math.IsInf(busbw.v, 0) {
		return bad("%s: a bandwidth of %v, %v GB/s", op, algo.v, busbw.v)
	}
	out.Op, out.Seq, out.Bytes = op, *sn, *size
	out.ExecTime = time.Duration(*us) * time.Microsecond
	out.TimingSource = timingSrc
	out.AlgoBW, out.BusBW = algo.v, busbw.v
	*r = out
	return nil
}
