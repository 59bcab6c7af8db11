package ncclinspector

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/xpuscope/xpuscope/semconv"
)

// The Inspector's Prometheus mode (NCCL_INSPECTOR_PROM_DUMP=1): per GPU,
// a textfile for node_exporter's textfile collector,
// <dump dir>/nccl_inspector_metrics_<GPU UUID>.prom, which the Inspector
// keeps open and, once an interval (NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS,
// at least 30 s), truncates and writes again, whole, in place; it removes
// the file when it ends. Two label sets exist, one a version:
//
//   - NCCL 2.29 (inspector_prom.cc of 2.29.3 to 2.29.7): a sample per
//     communicator, of the last collective the rank completed in the
//     interval: labels comm_id (its commHash, 0x%lx), hostname, rank,
//     slurm_job, slurm_job_id, nranks, n_nodes, gpu_device_id,
//     collective, coll_sn, timestamp, message_size ("2.00GB"); metrics
//     nccl_algorithm_bandwidth_gbs, nccl_bus_bandwidth_gbs,
//     nccl_collective_exec_time_microseconds. Its README names the
//     size n_ranks; both are read.
//   - NCCL 2.30 (from 2.30.3): the interval's operations of every
//     communicator on the GPU, in buckets of (comm_name, nranks,
//     n_nodes, collective, message_size range, algo_proto), or
//     p2p_operation in place of collective and algo_proto: labels
//     version, slurm_job_id, node, gpu, and those; metrics
//     nccl_bus_bandwidth_gbs (the geometric mean of the bucket's),
//     nccl_collective_exec_time_microseconds (their mean),
//     nccl_p2p_bus_bandwidth_gbs and nccl_p2p_exec_time_microseconds.
//     It names neither the communicator's hash nor the rank, and writes
//     no algorithm bandwidth nor a count.

// PromFormat is which of the Inspector's label sets a sample has.
type PromFormat int

// The Inspector's Prometheus label sets.
const (
	// PromComm is NCCL 2.29's: a communicator (its commHash) and a rank.
	PromComm PromFormat = iota + 1
	// PromBuckets is NCCL 2.30's: a communicator's size, an operation,
	// a range of message sizes and an algorithm, no communicator hash
	// nor rank.
	PromBuckets
)

func (f PromFormat) String() string {
	switch f {
	case PromComm:
		return "comm"
	case PromBuckets:
		return "buckets"
	}
	return "PromFormat(?)"
}

// PromSample is what one label set of the textfile says: the values of
// the Inspector's metrics that carry it.
type PromSample struct {
	Format PromFormat
	// CommHash is NCCL's hash of the communicator (comm_id); PromComm
	// only.
	CommHash uint64
	// Rank is the writing rank (PromComm), -1 in PromBuckets, which does
	// not say it.
	Rank int
	// NRanks is the communicator's size (nranks).
	NRanks int
	// Op is the operation as NCCL names it (ncclFuncToString):
	// AllReduce, ..., Send, Recv. P2P is set for a point-to-point one
	// (PromBuckets' p2p_operation).
	Op  string
	P2P bool
	// Seq is the collective's sequence number (coll_sn, PromComm); 0
	// where not written.
	Seq uint64
	// SizeRange is the message size as PromBuckets buckets it: lower-upper
	// and a unit of 1024^k bytes (B, KB, MB, GB, TB), the lower bound
	// being the size in that unit cut to an integer ("4-5GB", "512-513B";
	// "0B" for none). PromComm's size ("2.00GB", the size in that unit to
	// two decimals) is put in the same range ("2-3GB").
	SizeRange string
	// Algorithm and Protocol are the algorithm and protocol NCCL chose
	// (PromBuckets' algo_proto), as NCCL names them (ncclAlgoStr,
	// ncclProtoStr); "" where the textfile does not say (PromComm, a
	// point-to-point operation, "unknown"), semconv.Other for a name
	// NCCL does not have.
	Algorithm, Protocol string
	// ExecTime is the execution time in seconds: the operation's
	// (PromComm), the mean of the bucket's (PromBuckets).
	ExecTime float64
	// BusBW and AlgoBW are NCCL's bus and algorithm bandwidths in bytes a
	// second; NaN where the textfile does not write them (PromBuckets has
	// no algorithm bandwidth). PromBuckets' bus bandwidth is the
	// geometric mean of its bucket's.
	BusBW, AlgoBW float64
}

// Bounds on a textfile: what it takes is within them.
const (
	// MaxPromFile bounds a textfile read (the Inspector's README puts one
	// GPU's at 12 to 24 KB).
	MaxPromFile = 1 << 20
	// MaxPromLine bounds a line (the Inspector's own buffers are 2048
	// bytes for a sample's lines, 1024 for its labels).
	MaxPromLine = 4096
	// MaxPromSamples bounds the samples of one textfile.
	MaxPromSamples = 4096
)

// The Inspector's metric names.
const (
	promAlgoBW   = "nccl_algorithm_bandwidth_gbs"
	promBusBW    = "nccl_bus_bandwidth_gbs"
	promExecTime = "nccl_collective_exec_time_microseconds"
	promP2PBusBW = "nccl_p2p_bus_bandwidth_gbs"
	promP2PTime  = "nccl_p2p_exec_time_microseconds"
)

// NCCL's names of its algorithms and protocols (src/init.cc: ncclAlgoStr,
// ncclProtoStr).
var (
	ncclAlgorithms = []string{"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"}
	ncclProtocols  = []string{"LL", "LL128", "Simple"}
)

// promGroup gathers the metrics of one label set.
type promGroup struct {
	labels                  []*dto.LabelPair
	time, busBW, algoBW     float64
	hasTime, p2p, collTimes bool
}

// ParsePromFile reads an Inspector textfile, data, appending a sample per
// label set to out. Each line is parsed apart from the others (by expfmt's
// text parser), so that a line the parser refuses (the Inspector does not
// escape a quote in a comm_name) loses that line alone; metrics other than
// the Inspector's are skipped. bad counts the lines that do not parse and
// the label sets that are not a sample of the Inspector's (a label
// missing or out of range, no execution time): nothing of them is taken.
// At most MaxPromSamples samples are taken, of at most MaxPromFile bytes;
// the rest counts in bad.
func ParsePromFile(data []byte, out []PromSample) (_ []PromSample, bad int) {
	if len(data) > MaxPromFile {
		data, bad = data[:MaxPromFile], 1
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	groups := map[string]*promGroup{}
	var order []string
	var key []byte
	line := make([]byte, 0, MaxPromLine+1)
	for len(data) > 0 {
		l := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		l = bytes.TrimSpace(l)
		if len(l) == 0 || l[0] == '#' {
			continue
		}
		if len(l) > MaxPromLine {
			bad++
			continue
		}
		line = append(append(line[:0], l...), '\n')
		fams, err := p.TextToMetricFamilies(bytes.NewReader(line))
		if err != nil || len(fams) != 1 {
			bad++
			continue
		}
		for name, fam := range fams {
			if len(fam.Metric) != 1 || fam.Metric[0].Untyped == nil {
				bad++
				continue
			}
			m := fam.Metric[0]
			var set func(g *promGroup, v float64)
			switch name {
			case promAlgoBW:
				set = func(g *promGroup, v float64) { g.algoBW = v }
			case promBusBW, promP2PBusBW:
				set = func(g *promGroup, v float64) { g.busBW = v }
			case promExecTime, promP2PTime:
				set = func(g *promGroup, v float64) { g.time, g.hasTime = v, true }
			default:
				continue // not the Inspector's
			}
			key = labelKey(key[:0], m.Label)
			g := groups[string(key)]
			if g == nil {
				if len(groups) >= MaxPromSamples {
					bad++
					continue
				}
				g = &promGroup{labels: m.Label, time: math.NaN(), busBW: math.NaN(), algoBW: math.NaN()}
				groups[string(key)] = g
				order = append(order, string(key))
			}
			if name == promP2PBusBW || name == promP2PTime {
				g.p2p = true
			} else {
				g.collTimes = true
			}
			set(g, m.Untyped.GetValue())
		}
	}
	for _, k := range order {
		var s PromSample
		if err := promSample(groups[k], &s); err != nil {
			bad++
			continue
		}
		out = append(out, s)
	}
	return out, bad
}

// labelKey appends a key naming a label set, whatever the order of its
// labels, to b.
func labelKey(b []byte, labels []*dto.LabelPair) []byte {
	sorted := slices.SortedFunc(slices.Values(labels), func(a, b *dto.LabelPair) int {
		return strings.Compare(a.GetName(), b.GetName())
	})
	for _, l := range sorted {
		b = append(b, l.GetName()...)
		b = append(b, 0)
		b = append(b, l.GetValue()...)
		b = append(b, 0)
	}
	return b
}

// promSample makes the sample of g.
func promSample(g *promGroup, s *PromSample) error {
	label := func(name string) (string, bool) {
		for _, l := range g.labels {
			if l.GetName() == name {
				return l.GetValue(), true
			}
		}
		return "", false
	}
	if !g.hasTime || math.IsNaN(g.time) || math.IsInf(g.time, 0) || g.time < 0 {
		return fmt.Errorf("no execution time")
	}
	if g.p2p && g.collTimes {
		return fmt.Errorf("both a collective's and a point-to-point operation's metrics")
	}
	for _, bw := range []float64{g.busBW, g.algoBW} {
		if bw < 0 || math.IsInf(bw, 0) {
			return fmt.Errorf("a bandwidth of %v", bw)
		}
	}
	nr, ok := label("nranks")
	if !ok {
		nr, ok = label("n_ranks")
	}
	nranks, err := strconv.Atoi(nr)
	if !ok || err != nil || nranks < 1 || nranks > maxRanks {
		return fmt.Errorf("nranks %q", nr)
	}
	out := PromSample{NRanks: nranks, Rank: -1, ExecTime: g.time / 1e6, BusBW: g.busBW * 1e9, AlgoBW: g.algoBW * 1e9}
	size, hasSize := label("message_size")
	if id, ok := label("comm_id"); ok {
		out.Format = PromComm
		h, ok := strings.CutPrefix(id, "0x")
		if !ok || h == "" {
			return fmt.Errorf("comm_id %q", id)
		}
		if out.CommHash, err = strconv.ParseUint(h, 16, 64); err != nil {
			return fmt.Errorf("comm_id %q", id)
		}
		r, _ := label("rank")
		if out.Rank, err = strconv.Atoi(r); err != nil || out.Rank < 0 || out.Rank >= nranks {
			return fmt.Errorf("rank %q of %d", r, nranks)
		}
		if sn, ok := label("coll_sn"); ok {
			if out.Seq, err = strconv.ParseUint(sn, 10, 64); err != nil {
				return fmt.Errorf("coll_sn %q", sn)
			}
		}
		if hasSize {
			if out.SizeRange, ok = sizeRange(size); !ok {
				return fmt.Errorf("message_size %q", size)
			}
		}
	} else {
		out.Format = PromBuckets
		if !g.p2p {
			ap, _ := label("algo_proto")
			out.Algorithm, out.Protocol = algoProto(ap)
		}
		if hasSize {
			if !validRange(size) {
				return fmt.Errorf("message_size %q", size)
			}
			out.SizeRange = size
		}
	}
	out.Op, _ = label("collective")
	if g.p2p {
		out.Op, _ = label("p2p_operation")
		out.P2P = true
	}
	if out.Op == "" || len(out.Op) > maxOpName {
		return fmt.Errorf("the operation %q", out.Op)
	}
	*s = out
	return nil
}

// promUnits are the units of the Inspector's sizes, each 1024 of the one
// before.
var promUnits = []string{"B", "KB", "MB", "GB", "TB"}

// sizeRange puts NCCL 2.29's message size (%zuB below 1024 bytes, else
// %.2f and the largest unit below the size) in NCCL 2.30's range of it. A
// size just below 1024 of a unit that %.2f rounds up to 1024.00 is 1 of
// the next unit, where 2.30 would put it too.
func sizeRange(s string) (string, bool) {
	last := len(promUnits) - 1
	for i := last; i >= 0; i-- {
		num, ok := strings.CutSuffix(s, promUnits[i])
		if !ok || (i == 0 && strings.HasSuffix(num, "K")) { // "KB" read as "B"
			continue
		}
		v, err := strconv.ParseFloat(num, 64)
		if err != nil || !decimal(num) || (i == 0 && (strings.Contains(num, ".") || v >= 1024)) ||
			(i > 0 && i < last && v > 1024) || v >= 1<<20 {
			return "", false
		}
		if i == 0 && v == 0 {
			return "0B", true
		}
		lower := max(math.Floor(v), 1)
		if lower >= 1024 && i < last {
			lower, i = 1, i+1
		}
		return fmt.Sprintf("%.0f-%.0f%s", lower, lower+1, promUnits[i]), true
	}
	return "", false
}

// decimal says whether s is digits, and a point and digits or not, as
// %zu and %.2f print.
func decimal(s string) bool {
	whole, frac, point := strings.Cut(s, ".")
	digits := func(d string) bool {
		return d != "" && strings.Trim(d, "0123456789") == ""
	}
	return digits(whole) && (!point || digits(frac))
}

// validRange says whether s is a range as NCCL 2.30 writes it: "0B", or
// lower-(lower+1) and a unit, lower from 1 (up to 1023 but in TB).
func validRange(s string) bool {
	if s == "0B" {
		return true
	}
	for i := len(promUnits) - 1; i >= 0; i-- {
		r, ok := strings.CutSuffix(s, promUnits[i])
		if !ok || (i == 0 && strings.HasSuffix(r, "K")) {
			continue
		}
		lo, hi, ok := strings.Cut(r, "-")
		l, err1 := strconv.ParseUint(lo, 10, 32)
		h, err2 := strconv.ParseUint(hi, 10, 32)
		return ok && err1 == nil && err2 == nil && l >= 1 && h == l+1 && (l < 1024 || i == len(promUnits)-1) &&
			lo == strconv.FormatUint(l, 10) && hi == strconv.FormatUint(h, 10)
	}
	return false
}

// algoProto reads NCCL 2.30's algo_proto, <algorithm>_<protocol> as NCCL
// names them ("unknown" for one the Inspector was not told), case aside.
func algoProto(s string) (algo, proto string) {
	a, p, ok := strings.Cut(s, "_")
	if !ok {
		if strings.EqualFold(s, "unknown") || s == "" {
			return "", ""
		}
		return semconv.Other, semconv.Other
	}
	return ncclName(a, ncclAlgorithms), ncclName(p, ncclProtocols)
}

// ncclName is NCCL's name among names that s is, case aside; "" for
// "unknown", semconv.Other for one NCCL does not have.
func ncclName(s string, names []string) string {
	if strings.EqualFold(s, "unknown") {
		return ""
	}
	for _, n := range names {
		if strings.EqualFold(s, n) {
			return n
		}
	}
	return semconv.Other
}
