package top

import (
	"cmp"
	"hash/maphash"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/xpuscope/xpuscope/semconv"
)

// historyLen is how many refreshes of a GPU's utilization a Frame keeps
// for its sparkline.
const historyLen = 30

// LeakRefreshes is how many refreshes in a row a process's oldest
// allocation must stay, its outstanding memory never going down, before
// the process is a leak suspect.
const LeakRefreshes = 3

// builder turns scrapes into Frames. It keeps what the next refresh needs
// of this one: each counter's and histogram's last value, by series, for
// rates and bucket deltas; the GPUs' utilization history; the processes'
// leak tracking; the strings the Frames hold. Everything it keeps is of
// the last scrape: a series, GPU or process gone from a scrape is
// forgotten at its end, so memory follows the scrape's size, never the
// node's history.
//
// A builder is used by one goroutine at a time.
type builder struct {
	seed maphash.Seed
	// gen counts the scrapes built; at is the last one's time.
	gen uint32
	at  time.Time
	dt  float64 // seconds since the previous scrape; 0 on the first
	// interval is dt as a Duration, exactly.
	interval time.Duration
	// building is the time of the scrape being built.
	building time.Time

	// st holds each counter's and histogram's values of the last scrape
	// built and of the one being built.
	st states

	strs, oldStrs map[string]string

	history map[string]*ring      // GPU utilization, by hw.id
	leaks   map[string]*leakTrack // by pid

	training trainingSpec

	// The scrape being built.
	fam       famHandler
	famID     int
	trainCols []int // the training columns of the family, if it is one
	nseries   int
	gpus      map[string]*gpuAcc
	procs     map[string]*procAcc
	exes      map[string]*exeAcc
	llm       map[llmKey]*llmAcc
	servers   map[serverKey]*serverAcc
	servPIDs  map[serverProcKey][]int64
	jobs      map[string]*jobAcc
	features  []Feature
	alarms    []alarmAcc
	scratch   []float64
}

func newBuilder() *builder {
	b := &builder{
		seed:     maphash.MakeSeed(),
		st:       newStates(),
		strs:     map[string]string{},
		oldStrs:  map[string]string{},
		history:  map[string]*ring{},
		leaks:    map[string]*leakTrack{},
		training: defaultTraining,
	}
	b.alarms = make([]alarmAcc, len(alarms))
	return b
}

// intern returns s, copied once: the strings a decoder hands over are
// views of a buffer that the next scrape reuses.
func (b *builder) intern(s string) string {
	if v, ok := b.strs[s]; ok {
		return v
	}
	v, ok := b.oldStrs[s]
	if !ok {
		v = strings.Clone(s)
	}
	b.strs[v] = v
	return v
}

// build makes the Frame of one scrape, taken at at, decoded by decode
// (which hands the scrape to the builder).
func (b *builder) build(at time.Time, decode func(consumer) error) (*Frame, error) {
	b.begin(at)
	if err := decode(b); err != nil {
		b.abort()
		return nil, err
	}
	return b.finish(), nil
}

func (b *builder) begin(at time.Time) {
	b.gen++
	b.dt, b.interval = 0, 0
	if !b.at.IsZero() && at.After(b.at) {
		b.interval = at.Sub(b.at)
		b.dt = b.interval.Seconds()
	}
	b.building = at
	b.st.begin()
	b.nseries = 0
	b.gpus = map[string]*gpuAcc{}
	b.procs = map[string]*procAcc{}
	b.exes = map[string]*exeAcc{}
	b.llm = map[llmKey]*llmAcc{}
	b.servers = map[serverKey]*serverAcc{}
	b.servPIDs = map[serverProcKey][]int64{}
	b.jobs = map[string]*jobAcc{}
	b.features = nil
	clear(b.alarms)
}

// abort forgets a scrape that failed to decode: the next one's rates are
// over the time since the last good one, from its values.
func (b *builder) abort() {}

// family implements consumer.
func (b *builder) family(name string, typ dto.MetricType, n int) bool {
	b.nseries += n
	h, ok := handlers[name]
	cols, training := b.training.byName[name]
	switch {
	case training && ok:
		b.trainCols = cols
		b.fam = famHandler{id: h.id, kind: h.kind, fn: func(b *builder, s *series) {
			h.fn(b, s)
			b.trainingSeries(s)
		}}
	case training:
		b.trainCols = cols
		b.fam = famHandler{id: len(handlers), kind: b.training.cols[cols[0]].Metric.Kind, fn: (*builder).trainingSeries}
	case ok:
		b.fam = h
	default:
		return false
	}
	b.famID = b.fam.id
	return kindMatches(b.fam.kind, typ)
}

// kindMatches reports whether a family of Prometheus type typ is the kind
// top expects (anything else, a renamed or re-typed metric, is skipped).
func kindMatches(k semconv.Kind, typ dto.MetricType) bool {
	switch k {
	case semconv.Counter:
		return typ == dto.MetricType_COUNTER || typ == dto.MetricType_UNTYPED
	case semconv.Histogram:
		return typ == dto.MetricType_HISTOGRAM
	}
	return typ == dto.MetricType_GAUGE || typ == dto.MetricType_UNTYPED
}

// series implements consumer.
func (b *builder) series(s *series) {
	b.fam.fn(b, s)
}

// hash identifies a series of the current family by its labels.
func (b *builder) hash(s *series) uint64 {
	var h maphash.Hash
	h.SetSeed(b.seed)
	var id [8]byte
	for i := range id {
		id[i] = byte(uint64(b.famID) >> (8 * i))
	}
	h.Write(id[:])
	for _, l := range s.labels {
		h.WriteString(l.name)
		h.WriteByte(0)
		h.WriteString(l.value)
		h.WriteByte(0)
	}
	return h.Sum64()
}

// rate is a counter series' increase per second since the previous
// scrape: NaN on the first scrape. A series new since then counts from 0;
// one that went down was reset, and counts from 0 too.
func (b *builder) rate(s *series) float64 {
	st, good, cur := b.st.get(b.hash(s))
	st.v[cur], st.n[cur] = s.value, -1
	if b.dt == 0 {
		return nan
	}
	last := 0.0
	if good >= 0 && st.n[good] < 0 && st.v[good] <= s.value {
		last = st.v[good]
	}
	return (s.value - last) / b.dt
}

// delta is a histogram series' bucket deltas since the previous scrape,
// per bucket (not cumulative), the last the +Inf bucket; ok is false on
// the first scrape. A series new since then counts from 0, as does one
// reset or whose bounds changed. The slice is valid until the next call.
func (b *builder) delta(s *series) (bounds, counts []float64, ok bool) {
	st, good, cur := b.st.get(b.hash(s))
	slab, old := b.st.slab()
	off := len(*slab)
	*slab = append(*slab, s.bounds...)
	*slab = append(*slab, s.cum...)
	st.v[cur], st.off[cur], st.n[cur] = s.count, int32(off), int32(len(s.bounds))
	if b.dt == 0 || len(s.cum) != len(s.bounds) {
		return nil, nil, false
	}
	var last []float64 // the previous cumulative counts; nil for none
	lastCount := 0.0
	if good >= 0 && int(st.n[good]) == len(s.bounds) && st.v[good] <= s.count {
		o, n := int(st.off[good]), int(st.n[good])
		if o+2*n <= len(old) && slices.Equal(old[o:o+n], s.bounds) {
			last, lastCount = old[o+n:o+2*n], st.v[good]
		}
	}
	k := len(s.bounds)
	b.scratch = slices.Grow(b.scratch[:0], k+1)[:k+1]
	prevCum, prevLast := 0.0, 0.0
	for i := range k {
		l := 0.0
		if last != nil {
			l = last[i]
		}
		b.scratch[i] = max((s.cum[i]-prevCum)-(l-prevLast), 0)
		prevCum, prevLast = s.cum[i], l
	}
	b.scratch[k] = max((s.count-prevCum)-(lastCount-prevLast), 0)
	return s.bounds, b.scratch, true
}

// sumRate is the increase per second of a histogram series' sum (the
// tokens of gen_ai.client.token.usage), kept apart from its buckets.
func (b *builder) sumRate(s *series) float64 {
	saved := s.value
	s.value = s.sum
	id := b.famID
	b.famID = ^id // another series identity than the buckets'
	r := b.rate(s)
	b.famID, s.value = id, saved
	return r
}

// finish assembles the Frame.
func (b *builder) finish() *Frame {
	b.at = b.building
	f := &Frame{At: b.at, Series: b.nseries, Features: b.features}
	f.Interval = b.interval // exact: dt, in float seconds, may be a nanosecond off
	f.GPUs = b.finishGPUs()
	f.Processes = b.finishProcesses()
	f.Executables = make(map[string]ExeStats, len(b.exes))
	for k, e := range b.exes {
		f.Executables[k] = ExeStats{
			GridP50: e.grid.quantile(0.5), GridP95: e.grid.quantile(0.95),
			BlockP50: e.block.quantile(0.5), BlockP95: e.block.quantile(0.95),
			SharedP95: e.shared.quantile(0.95), SyncP95: e.sync.quantile(0.95),
		}
	}
	f.LLM = b.finishLLM()
	f.Servers = b.finishServers(f.Processes)
	f.Training = b.finishTraining()
	f.Alarms = b.finishAlarms()
	slices.SortFunc(f.Features, func(x, y Feature) int { return cmp.Compare(featureOrder(x.Name), featureOrder(y.Name)) })

	b.st.commit()
	b.oldStrs, b.strs = b.strs, b.oldStrs
	clear(b.strs)
	return f
}

// featureOrder is the agent's start order, then the rest by name.
func featureOrder(name string) string {
	for i, n := range []string{"podjoin", "gpu", "cudatrace", "hiptrace", "serving", "genai"} {
		if n == name {
			return strconv.Itoa(i)
		}
	}
	return "9" + name
}

// ring is a fixed-size history.
type ring struct {
	v   [historyLen]float64
	n   int // values held
	gen uint32
}

func (r *ring) push(v float64) {
	if r.n == historyLen {
		copy(r.v[:], r.v[1:])
		r.n--
	}
	r.v[r.n] = v
	r.n++
}

// values returns the history, oldest first, as a new slice.
func (r *ring) values() []float64 { return append([]float64(nil), r.v[:r.n]...) }

// ---- GPUs ----

type gpuAcc struct {
	row      GPURow
	rx, tx   float64
	throttle []string
}

func (b *builder) gpu(s *series) *gpuAcc {
	id := s.get(lHWID)
	g, ok := b.gpus[id]
	if !ok {
		id = b.intern(id)
		g = &gpuAcc{row: GPURow{ID: id, Util: nan, MemUsed: nan, MemTotal: nan, Power: nan, PowerLimit: nan,
			Temp: nan, SMClock: nan, MemClock: nan, Fan: nan, RxRate: nan, TxRate: nan}}
		b.gpus[id] = g
	}
	r := &g.row
	if r.Name == "" {
		r.Name = b.intern(s.get(lHWName))
		r.Vendor = b.intern(s.get(lHWVendor))
		r.Index = b.intern(s.get(lGPUIndex))
		r.Parent = b.intern(s.get(lHWParent))
		r.Profile = b.intern(s.get(lMIGProfile))
	}
	if r.Pod == "" {
		r.Pod = b.intern(s.get(lPod))
		r.Namespace = b.intern(s.get(lNamespace))
	}
	return g
}

func (b *builder) finishGPUs() []GPURow {
	out := make([]GPURow, 0, len(b.gpus))
	for id, g := range b.gpus {
		g.row.Throttle = g.throttle
		slices.Sort(g.row.Throttle)
		h := b.history[id]
		if h == nil {
			h = &ring{}
			b.history[id] = h
		}
		h.gen = b.gen
		if !math.IsNaN(g.row.Util) {
			h.push(g.row.Util)
		}
		g.row.UtilHistory = h.values()
		out = append(out, g.row)
	}
	for id, h := range b.history {
		if h.gen != b.gen {
			delete(b.history, id)
		}
	}
	slices.SortFunc(out, func(x, y GPURow) int {
		return cmp.Or(cmp.Compare(indexKey(x.Index), indexKey(y.Index)), cmp.Compare(x.Parent, y.Parent), cmp.Compare(x.ID, y.ID))
	})
	return out
}

// indexKey sorts device indexes as numbers.
func indexKey(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return math.MaxInt
	}
	return n
}

// ---- Processes ----

type procAcc struct {
	row ProcessRow
	// kernelIndex finds a kernel in row.Kernels, which keep the order
	// the scrape has them in.
	kernelIndex map[string]int
	gpus        []string
}

func (b *builder) proc(s *series) *procAcc {
	pid := s.get(lPID)
	p, ok := b.procs[pid]
	if !ok {
		pid = b.intern(pid)
		n, _ := strconv.ParseInt(pid, 10, 64)
		p = &procAcc{row: ProcessRow{PID: n, GPUMem: nan, SMUtil: nan, ModelSM: nan, ModelThreads: nan,
			Launches: nan, GraphLaunches: nan, Memcpy: [4]float64{nan, nan, nan, nan}, Outstanding: nan,
			OldestAge: nan, Errors: nan, ErrorsTotal: nan}}
		b.procs[pid] = p
	}
	r := &p.row
	if r.Exe == "" {
		r.Exe = b.intern(s.get(lExe))
	}
	if r.Pod == "" {
		r.Pod = b.intern(s.get(lPod))
		r.Namespace = b.intern(s.get(lNamespace))
		r.Container = b.intern(s.get(lContainer))
	}
	if r.Service == "" {
		r.Service = b.intern(s.get(lService))
	}
	if r.ExeKey == "" {
		if cid := s.get(lContainerID); cid != "" || r.Exe != "" {
			r.ExeKey = exeKey(r.Exe, cid)
		}
	}
	return p
}

// exeKey names an executable in a container.
func exeKey(exe, containerID string) string { return exe + "\x00" + containerID }

type exeAcc struct{ grid, block, shared, sync histAcc }

func (b *builder) exe(s *series) *exeAcc {
	k := exeKey(s.get(lExe), s.get(lContainerID))
	e, ok := b.exes[k]
	if !ok {
		e = &exeAcc{}
		b.exes[k] = e
	}
	return e
}

// addNaN adds v to an accumulator that starts as NaN (nothing known).
func addNaN(acc *float64, v float64) {
	if math.IsNaN(v) {
		return
	}
	if math.IsNaN(*acc) {
		*acc = 0
	}
	*acc += v
}

// maxNaN keeps the largest value, NaN meaning none.
func maxNaN(acc *float64, v float64) {
	if math.IsNaN(v) {
		return
	}
	if math.IsNaN(*acc) || v > *acc {
		*acc = v
	}
}

// leakTrack follows one process's outstanding memory and oldest
// allocation across refreshes.
type leakTrack struct {
	gen            uint32
	runs           int // refreshes in a row the oldest allocation stayed
	since          time.Time
	from, last     float64
	lastAge, start float64
}

func (b *builder) trackLeak(pid string, r *ProcessRow) {
	if math.IsNaN(r.OldestAge) || math.IsNaN(r.Outstanding) || r.Outstanding <= 0 {
		delete(b.leaks, pid)
		return
	}
	t, ok := b.leaks[pid]
	if !ok {
		t = &leakTrack{since: b.at, from: r.Outstanding, last: r.Outstanding, lastAge: r.OldestAge}
		b.leaks[pid] = t
	} else {
		// The same oldest allocation is still there when its age grew by
		// about the time since the last refresh (a second's slack for the
		// agent's own snapshot timing); outstanding memory must not have
		// gone down.
		stayed := b.dt > 0 && r.OldestAge >= t.lastAge+b.dt-1
		if stayed && r.Outstanding >= t.last {
			t.runs++
		} else {
			*t = leakTrack{since: b.at, from: r.Outstanding}
		}
		t.last, t.lastAge = r.Outstanding, r.OldestAge
	}
	t.gen = b.gen
	if t.runs >= LeakRefreshes {
		r.Leak = &Leak{Since: b.at.Sub(t.since), From: t.from, To: r.Outstanding, OldestAge: r.OldestAge}
	}
}

func (b *builder) finishProcesses() []ProcessRow {
	out := make([]ProcessRow, 0, len(b.procs))
	for pid, p := range b.procs {
		r := p.row
		r.GPUs = p.gpus
		b.trackLeak(pid, &r)
		out = append(out, r)
	}
	for pid, t := range b.leaks {
		if t.gen != b.gen {
			delete(b.leaks, pid)
		}
	}
	slices.SortFunc(out, func(x, y ProcessRow) int { return cmp.Or(cmp.Compare(x.PID, y.PID), cmp.Compare(x.Exe, y.Exe)) })
	return out
}

// cmpDesc orders larger first, NaN last.
func cmpDesc(x, y float64) int {
	switch {
	case math.IsNaN(x) && math.IsNaN(y):
		return 0
	case math.IsNaN(x):
		return 1
	case math.IsNaN(y):
		return -1
	}
	return cmp.Compare(y, x)
}

// ---- LLM calls ----

type llmKey struct{ provider, model, server string }

type llmAcc struct {
	row              LLMRow
	calls, errs      float64
	ttft, duration   histAcc
	tokIn, tokOut    float64
	cost             float64
	costSeen, waited bool
}

func (b *builder) llmRow(s *series) *llmAcc {
	model := s.get(lRequestModel)
	if model == "" {
		model = s.get(lResponseModel)
	}
	server := s.get(lServerAddress)
	if port := s.get(lServerPort); port != "" {
		server = server + ":" + port // an allocation per series: LLM series are few
	}
	k := llmKey{s.get(lProvider), model, server}
	a, ok := b.llm[k]
	if !ok {
		k = llmKey{b.intern(k.provider), b.intern(k.model), b.intern(k.server)}
		a = &llmAcc{row: LLMRow{Provider: k.provider, Model: k.model, Server: k.server}}
		b.llm[k] = a
	}
	return a
}

func (b *builder) finishLLM() []LLMRow {
	out := make([]LLMRow, 0, len(b.llm))
	for _, a := range b.llm {
		r := a.row
		r.Calls, r.ErrorRatio, r.TokensIn, r.TokensOut, r.CostPerMin = nan, nan, nan, nan, nan
		if b.dt > 0 {
			r.Calls = a.calls / b.dt
			if a.calls > 0 {
				r.ErrorRatio = a.errs / a.calls
			}
			r.TokensIn, r.TokensOut = a.tokIn, a.tokOut
			if a.costSeen {
				r.CostPerMin = a.cost * 60
			}
		}
		r.TTFTP50, r.TTFTP95 = a.ttft.quantile(0.5), a.ttft.quantile(0.95)
		r.DurationP95 = a.duration.quantile(0.95)
		if !a.waited {
			r.Waiting = nan
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(x, y LLMRow) int {
		return cmp.Or(cmp.Compare(x.Provider, y.Provider), cmp.Compare(x.Model, y.Model), cmp.Compare(x.Server, y.Server))
	})
	return out
}

// ---- model servers ----

type serverKey struct{ kind, model, port, namespace, pod string }

type serverProcKey struct{ kind, port string }

type serverAcc struct {
	row                       ServerRow
	ttft, queue, request      histAcc
	waiting, running, kv, cap bool
}

func (b *builder) serverRow(s *series) *serverAcc {
	k := serverKey{s.get(lProvider), s.get(lRequestModel), s.get(lServerPort), s.get(lNamespace), s.get(lPod)}
	if k.model == "" {
		k.model = s.get(lResponseModel)
	}
	a, ok := b.servers[k]
	if !ok {
		k = serverKey{b.intern(k.kind), b.intern(k.model), b.intern(k.port), b.intern(k.namespace), b.intern(k.pod)}
		a = &serverAcc{row: ServerRow{Kind: k.kind, Model: k.model, Port: k.port, Namespace: k.namespace, Pod: k.pod,
			Waiting: nan, Running: nan, KVCache: nan, KVCapacity: nan, TokensIn: nan, TokensOut: nan,
			Requests: nan, Errors: nan, Preemptions: nan}}
		b.servers[k] = a
	}
	return a
}

func (b *builder) finishServers(procs []ProcessRow) []ServerRow {
	mem := make(map[int64]float64, len(procs))
	for _, p := range procs {
		if p.PID != 0 && !math.IsNaN(p.GPUMem) {
			mem[p.PID] = p.GPUMem
		}
	}
	out := make([]ServerRow, 0, len(b.servers))
	for k, a := range b.servers {
		r := a.row
		r.TTFTP50, r.TTFTP95 = a.ttft.quantile(0.5), a.ttft.quantile(0.95)
		r.QueueP95, r.RequestP95 = a.queue.quantile(0.95), a.request.quantile(0.95)
		r.GPUMem = nan
		if pids := b.servPIDs[serverProcKey{k.kind, k.port}]; len(pids) > 0 {
			r.PIDs = slices.Sorted(slices.Values(pids))
			for _, pid := range r.PIDs {
				if m, ok := mem[pid]; ok {
					addNaN(&r.GPUMem, m)
				}
			}
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(x, y ServerRow) int {
		return cmp.Or(cmp.Compare(x.Kind, y.Kind), cmp.Compare(x.Port, y.Port), cmp.Compare(x.Model, y.Model), cmp.Compare(x.Pod, y.Pod))
	})
	return out
}

// ---- alarms ----

type alarmAcc struct {
	rate, total float64
	seen        bool
}

func (b *builder) finishAlarms() []Alarm {
	var out []Alarm
	for i, a := range b.alarms {
		if a.seen && a.rate > 0 {
			out = append(out, Alarm{What: alarms[i].title, Rate: a.rate, Total: a.total})
		}
	}
	return out
}
