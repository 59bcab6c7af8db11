package top

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// A Frame is what one refresh found: the rows of every view, with rates
// over the time since the refresh before (Interval; 0 on the first, and
// then every rate and percentile is NaN, shown as "-"). A Frame is never
// changed once made: the view reads it while the next is built.
type Frame struct {
	// At is when the scrape was taken; Interval the time since the
	// previous one.
	At       time.Time
	Interval time.Duration
	// Series and Bytes are the scrape's size; Took the time to fetch and
	// build it.
	Series int
	Bytes  int
	Took   time.Duration

	GPUs      []GPURow
	Processes []ProcessRow
	LLM       []LLMRow
	Servers   []ServerRow
	Training  []TrainingRow
	// Executables are the launch-shape histograms (which carry no pid), by
	// executable and container: a process's are Executables[p.ExeKey].
	Executables map[string]ExeStats

	Features []Feature
	Alarms   []Alarm
}

// GPURow is one GPU or MIG instance.
type GPURow struct {
	ID, Name, Vendor, Index string
	Parent, Profile         string // MIG: the parent's hw.id and the profile
	Namespace, Pod          string
	Util                    float64 // 0..1
	MemUsed, MemTotal       float64 // bytes
	Power, PowerLimit       float64 // W
	Temp                    float64 // °C, the hottest sensor
	SMClock, MemClock       float64 // Hz
	Fan                     float64 // 0..1
	RxRate, TxRate          float64 // PCIe bytes/s
	Throttle                []string
	// UtilHistory is the utilization of the last refreshes, oldest first.
	UtilHistory []float64
}

// ProcessRow is one process that uses a GPU or a GPU runtime.
type ProcessRow struct {
	PID                       int64
	Exe                       string
	Namespace, Pod, Container string
	Service                   string
	// ExeKey finds the process's launch shapes in Frame.Executables.
	ExeKey string
	// GPUs are the indexes (or ids) of the devices it holds memory on.
	GPUs   []string
	GPUMem float64 // bytes, every device
	// SMUtil is NVML's per-process utilization (measured); ModelSM and
	// ModelThreads the occupancy model's estimates (modelled, not
	// measured).
	SMUtil, ModelSM, ModelThreads float64
	Launches, GraphLaunches       float64 // per second
	// Memcpy is bytes/s by direction: H2D, D2H, D2D, other.
	Memcpy      [4]float64
	Outstanding float64 // bytes allocated through the runtime, not freed
	OldestAge   float64 // seconds
	Errors      float64 // API errors per second
	ErrorsTotal float64
	// Kernels are in no order: TopKernels sorts them.
	Kernels []KernelRow
	// Leak is set while the process is a leak suspect: its oldest
	// allocation has stayed for LeakRefreshes refreshes or more, and its
	// outstanding memory never went down meanwhile.
	Leak *Leak
}

// TopKernels are the process's kernels, most launched a second first,
// then most launched, then by name: a copy.
func (p *ProcessRow) TopKernels() []KernelRow {
	ks := slices.Clone(p.Kernels)
	slices.SortFunc(ks, func(x, y KernelRow) int {
		return cmp.Or(cmpDesc(x.Rate, y.Rate), cmpDesc(x.Total, y.Total), cmp.Compare(x.Name, y.Name))
	})
	return ks
}

// Memcpy directions.
const (
	H2D = iota
	D2H
	D2D
	OtherCopy
)

// KernelRow is one kernel of a process.
type KernelRow struct {
	Name  string
	Rate  float64 // launches per second
	Total float64
}

// Leak describes a leak suspect.
type Leak struct {
	// Since is how long the suspicion has held; From and To the
	// outstanding bytes then and now; OldestAge the age of the oldest
	// allocation now.
	Since     time.Duration
	From, To  float64
	OldestAge float64
}

// ExeStats are the launch shapes of an executable's processes in one
// container, over the last interval: blocks per grid and threads per
// block, median and 95th percentile; NaN where nothing was launched.
type ExeStats struct {
	GridP50, GridP95, BlockP50, BlockP95 float64
	SharedP95                            float64 // bytes
	SyncP95                              float64 // seconds
}

// LLMRow is the LLM calls of the node's clients to one provider, model
// and server.
type LLMRow struct {
	Provider, Model, Server string
	Calls                   float64 // per second
	TTFTP50, TTFTP95        float64 // seconds
	DurationP95             float64 // seconds
	TokensIn, TokensOut     float64 // per second
	ErrorRatio              float64 // 0..1 of the calls
	CostPerMin              float64 // USD; NaN where no rate is configured
	Waiting                 float64 // calls waiting for a first chunk
}

// ServerRow is one model served by a model server on the node.
type ServerRow struct {
	Kind, Model, Port    string
	Namespace, Pod       string
	Waiting, Running     float64
	KVCache              float64 // 0..1
	KVCapacity           float64 // tokens
	TokensIn, TokensOut  float64 // per second
	Requests, Errors     float64 // per second
	Preemptions          float64 // per second
	TTFTP50, TTFTP95     float64 // seconds
	QueueP95, RequestP95 float64 // seconds
	// PIDs are the server's processes, GPUMem their GPU memory.
	PIDs   []int64
	GPUMem float64
}

// TrainingRow is one training job: its columns' values, in the order of
// trainingColumns.
type TrainingRow struct {
	Key    []string // the values of trainingKey
	Values []float64
}

// Feature is the state of one of the agent's features, and why it is not
// active: from the agent's xpuscope.feature.reason, or, in -standalone,
// from starting it.
type Feature struct {
	Name, State, Reason string
}

// Alarm is a self-metric that moved: something was dropped, overflowed or
// failed over the last interval.
type Alarm struct {
	What  string
	Rate  float64 // per second over the interval
	Total float64
}

// nan is the value of a figure that is not known.
var nan = math.NaN()
