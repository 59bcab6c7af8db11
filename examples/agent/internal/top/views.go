package top

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/xpuscope/xpuscope/semconv"
)

// View is one of top's screens.
type View int

// The views, in the order of their keys (1 to 5).
const (
	ViewGPUs View = iota
	ViewProcesses
	ViewLLM
	ViewServers
	ViewTraining
	numViews
)

var viewNames = [numViews]string{"GPUs", "Processes", "LLM", "Servers", "Training"}

func (v View) String() string {
	if v < 0 || v >= numViews {
		return "View(" + strconv.Itoa(int(v)) + ")"
	}
	return viewNames[v]
}

// ParseView reads a view's name, in any case.
func ParseView(s string) (View, error) {
	for i, n := range viewNames {
		if strings.EqualFold(s, n) {
			return View(i), nil
		}
	}
	return 0, fmt.Errorf("no view %q: want one of %s", s, strings.Join(viewNames[:], ", "))
}

// tableView is a view's table, whatever its rows.
type tableView interface {
	load(f *Frame, filter string)
	len() int
	nextSort()
	sortTitle() string
	layout(width int) []int
	header(ws []int) string
	row(i int, ws []int) string
	emptyText() string
	unfiltered() int
}

func (t *table[R]) emptyText() string { return t.spec.empty }
func (t *table[R]) unfiltered() int   { return t.all }

// newTables makes each view's table; training's columns are spec's.
func newTables(spec trainingSpec) [numViews]tableView {
	return [numViews]tableView{
		&table[GPURow]{spec: &gpuSpec},
		&table[ProcessRow]{spec: &processSpec},
		&table[LLMRow]{spec: &llmSpec},
		&table[ServerRow]{spec: &serverSpec},
		&table[TrainingRow]{spec: trainingView(spec)},
	}
}

// desc orders by a figure, largest first and unknown (NaN) last, then by
// a tie-breaker.
func desc[R any](f func(*R) float64, then func(a, b *R) int) func(a, b *R) int {
	return func(a, b *R) int { return cmp.Or(cmpDesc(f(a), f(b)), then(a, b)) }
}

var gpuByIndex = func(a, b *GPURow) int {
	return cmp.Or(cmp.Compare(indexKey(a.Index), indexKey(b.Index)), cmp.Compare(a.Parent, b.Parent), cmp.Compare(a.ID, b.ID))
}

var gpuSpec = viewSpec[GPURow]{
	cols: []column[GPURow]{
		{title: "GPU", width: 3, right: true, cell: func(r *GPURow) string { return r.Index }},
		{title: "NAME", width: 10, flex: true, cell: func(r *GPURow) string {
			if r.Parent != "" {
				return "└ MIG " + r.Profile
			}
			return strings.TrimPrefix(r.Name, "NVIDIA ")
		}},
		{title: "UTIL", width: 14, cell: func(r *GPURow) string { return bar(r.Util, 9) + pad(pct(r.Util), 5, true) }},
		{title: "MEM", width: 11, right: true, cell: func(r *GPURow) string { return of(r.MemUsed, r.MemTotal, bytesIEC) }},
		{title: "POWER", width: 9, right: true, prio: 1, cell: func(r *GPURow) string {
			return of(r.Power, r.PowerLimit, func(v float64) string { return count(v) + "W" })
		}},
		{title: "TEMP", width: 4, right: true, prio: 1, cell: func(r *GPURow) string {
			if math.IsNaN(r.Temp) {
				return dash
			}
			return strconv.FormatFloat(r.Temp, 'f', 0, 64) + "C"
		}},
		{title: "HISTORY", width: 12, prio: 2, cell: func(r *GPURow) string { return sparkline(r.UtilHistory, 12) }},
		{title: "CLOCK SM/MEM", width: 12, right: true, prio: 3, cell: func(r *GPURow) string {
			return of(r.SMClock/1e6, r.MemClock/1e6, func(v float64) string {
				if math.IsNaN(v) {
					return dash
				}
				return strconv.FormatFloat(v, 'f', 0, 64)
			}) + "M"
		}},
		{title: "FAN", width: 4, right: true, prio: 4, cell: func(r *GPURow) string { return pct(r.Fan) }},
		{title: "PCIe RX/TX", width: 13, right: true, prio: 4, cell: func(r *GPURow) string {
			if math.IsNaN(r.RxRate) && math.IsNaN(r.TxRate) {
				return dash
			}
			return of(r.RxRate, r.TxRate, bytesIEC) + "/s"
		}},
		{title: "THROTTLE", width: 10, flex: true, prio: 2, cell: func(r *GPURow) string { return strings.Join(r.Throttle, ",") }},
		{title: "POD", width: 8, flex: true, prio: 2, cell: func(r *GPURow) string { return podName(r.Namespace, r.Pod) }},
	},
	sorts: []sortKey[GPURow]{
		{"GPU", gpuByIndex},
		{"UTIL", desc(func(r *GPURow) float64 { return r.Util }, gpuByIndex)},
		{"MEM", desc(func(r *GPURow) float64 { return r.MemUsed }, gpuByIndex)},
		{"POWER", desc(func(r *GPURow) float64 { return r.Power }, gpuByIndex)},
		{"TEMP", desc(func(r *GPURow) float64 { return r.Temp }, gpuByIndex)},
	},
	match: func(r *GPURow) string { return r.Name + "\n" + r.ID + "\n" + r.Namespace + "\n" + r.Pod },
	rows:  func(f *Frame) []GPURow { return f.GPUs },
	empty: "no GPUs: the agent's gpu feature found none (see the status line)",
}

var procByPID = func(a, b *ProcessRow) int { return cmp.Or(cmp.Compare(a.PID, b.PID), cmp.Compare(a.Exe, b.Exe)) }

// pidText is a process's pid, "-" for the series that fold processes
// past the agent's cap.
func pidText(pid int64) string {
	if pid == 0 {
		return dash
	}
	return strconv.FormatInt(pid, 10)
}

func rate(v float64) string { return count(v) }

func bytesRate(v float64) string { return bytesIEC(v) }

var processSpec = viewSpec[ProcessRow]{
	cols: []column[ProcessRow]{
		{title: "PID", width: 7, right: true, cell: func(r *ProcessRow) string { return pidText(r.PID) }},
		{title: "!", width: 1, cell: func(r *ProcessRow) string {
			if r.Leak != nil {
				return "!"
			}
			return ""
		}},
		{title: "NAME", width: 10, flex: true, cell: func(r *ProcessRow) string { return r.Exe }},
		{title: "POD", width: 10, flex: true, prio: 2, cell: func(r *ProcessRow) string { return podName(r.Namespace, r.Pod) }},
		{title: "GPU MEM", width: 7, right: true, cell: func(r *ProcessRow) string { return bytesIEC(r.GPUMem) }},
		{title: "SM%", width: 4, right: true, cell: func(r *ProcessRow) string { return pct(r.SMUtil) }},
		{title: "~SM%", width: 4, right: true, cell: func(r *ProcessRow) string { return pct(r.ModelSM) }},
		{title: "LAUNCH/s", width: 8, right: true, cell: func(r *ProcessRow) string { return rate(r.Launches) }},
		{title: "H2D B/s", width: 7, right: true, prio: 1, cell: func(r *ProcessRow) string { return bytesRate(r.Memcpy[H2D]) }},
		{title: "D2H B/s", width: 7, right: true, prio: 1, cell: func(r *ProcessRow) string { return bytesRate(r.Memcpy[D2H]) }},
		{title: "OUTST", width: 6, right: true, prio: 2, cell: func(r *ProcessRow) string { return bytesIEC(r.Outstanding) }},
		{title: "OLDEST", width: 6, right: true, prio: 2, cell: func(r *ProcessRow) string { return age(r.OldestAge) }},
		{title: "ERR/s", width: 6, right: true, prio: 2, cell: func(r *ProcessRow) string { return rate(r.Errors) }},
		{title: "D2D B/s", width: 7, right: true, prio: 3, cell: func(r *ProcessRow) string { return bytesRate(r.Memcpy[D2D]) }},
		{title: "~THR%", width: 5, right: true, prio: 3, cell: func(r *ProcessRow) string { return pct(r.ModelThreads) }},
		{title: "GRAPH/s", width: 7, right: true, prio: 4, cell: func(r *ProcessRow) string { return rate(r.GraphLaunches) }},
		{title: "GPUS", width: 5, prio: 4, cell: func(r *ProcessRow) string { return strings.Join(r.GPUs, ",") }},
	},
	sorts: []sortKey[ProcessRow]{
		{"GPU MEM", desc(func(r *ProcessRow) float64 { return r.GPUMem }, procByPID)},
		{"LAUNCH/s", desc(func(r *ProcessRow) float64 { return r.Launches }, procByPID)},
		{"~SM%", desc(func(r *ProcessRow) float64 { return r.ModelSM }, procByPID)},
		{"OUTST", desc(func(r *ProcessRow) float64 { return r.Outstanding }, procByPID)},
		{"PID", procByPID},
	},
	match: func(r *ProcessRow) string {
		return r.Exe + "\n" + r.Namespace + "\n" + r.Pod + "\n" + r.Container + "\n" + r.Service + "\n" + strconv.FormatInt(r.PID, 10)
	},
	rows:  func(f *Frame) []ProcessRow { return f.Processes },
	empty: "no GPU processes: none holds GPU memory, and none called a traced CUDA or HIP function",
}

var llmByName = func(a, b *LLMRow) int {
	return cmp.Or(cmp.Compare(a.Provider, b.Provider), cmp.Compare(a.Model, b.Model), cmp.Compare(a.Server, b.Server))
}

var llmSpec = viewSpec[LLMRow]{
	cols: []column[LLMRow]{
		{title: "PROVIDER", width: 10, flex: true, cell: func(r *LLMRow) string { return r.Provider }},
		{title: "MODEL", width: 12, flex: true, cell: func(r *LLMRow) string { return r.Model }},
		{title: "CALLS/s", width: 7, right: true, cell: func(r *LLMRow) string { return rate(r.Calls) }},
		{title: "TTFT p50", width: 8, right: true, cell: func(r *LLMRow) string { return seconds(r.TTFTP50) }},
		{title: "TTFT p95", width: 8, right: true, cell: func(r *LLMRow) string { return seconds(r.TTFTP95) }},
		{title: "DUR p95", width: 8, right: true, prio: 1, cell: func(r *LLMRow) string { return seconds(r.DurationP95) }},
		{title: "IN tok/s", width: 8, right: true, prio: 1, cell: func(r *LLMRow) string { return rate(r.TokensIn) }},
		{title: "OUT tok/s", width: 9, right: true, prio: 1, cell: func(r *LLMRow) string { return rate(r.TokensOut) }},
		{title: "ERR%", width: 5, right: true, prio: 2, cell: func(r *LLMRow) string { return pct(r.ErrorRatio) }},
		{title: "$/min", width: 7, right: true, prio: 2, cell: func(r *LLMRow) string {
			if math.IsNaN(r.CostPerMin) {
				return dash
			}
			return "$" + strconv.FormatFloat(r.CostPerMin, 'f', 4, 64)
		}},
		{title: "WAIT", width: 5, right: true, prio: 2, cell: func(r *LLMRow) string { return count(r.Waiting) }},
		{title: "SERVER", width: 12, flex: true, prio: 3, cell: func(r *LLMRow) string { return r.Server }},
	},
	sorts: []sortKey[LLMRow]{
		{"CALLS/s", desc(func(r *LLMRow) float64 { return r.Calls }, llmByName)},
		{"TTFT p95", desc(func(r *LLMRow) float64 { return r.TTFTP95 }, llmByName)},
		{"OUT tok/s", desc(func(r *LLMRow) float64 { return r.TokensOut }, llmByName)},
		{"$/min", desc(func(r *LLMRow) float64 { return r.CostPerMin }, llmByName)},
		{"MODEL", llmByName},
	},
	match: func(r *LLMRow) string { return r.Provider + "\n" + r.Model + "\n" + r.Server },
	rows:  func(f *Frame) []LLMRow { return f.LLM },
	empty: "no LLM calls captured yet",
}

var serverByName = func(a, b *ServerRow) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Port, b.Port), cmp.Compare(a.Model, b.Model), cmp.Compare(a.Pod, b.Pod))
}

var serverSpec = viewSpec[ServerRow]{
	cols: []column[ServerRow]{
		{title: "SERVER", width: 8, cell: func(r *ServerRow) string { return r.Kind }},
		{title: "MODEL", width: 12, flex: true, cell: func(r *ServerRow) string { return r.Model }},
		{title: "WAIT", width: 5, right: true, cell: func(r *ServerRow) string { return count(r.Waiting) }},
		{title: "RUN", width: 5, right: true, cell: func(r *ServerRow) string { return count(r.Running) }},
		{title: "KV CACHE", width: 10, cell: func(r *ServerRow) string { return bar(r.KVCache, 5) + pad(pct(r.KVCache), 5, true) }},
		{title: "IN tok/s", width: 8, right: true, prio: 1, cell: func(r *ServerRow) string { return rate(r.TokensIn) }},
		{title: "OUT tok/s", width: 9, right: true, prio: 1, cell: func(r *ServerRow) string { return rate(r.TokensOut) }},
		{title: "REQ/s", width: 6, right: true, prio: 1, cell: func(r *ServerRow) string { return rate(r.Requests) }},
		{title: "TTFT p95", width: 8, right: true, prio: 2, cell: func(r *ServerRow) string { return seconds(r.TTFTP95) }},
		{title: "QUEUE p95", width: 9, right: true, prio: 2, cell: func(r *ServerRow) string { return seconds(r.QueueP95) }},
		{title: "E2E p95", width: 8, right: true, prio: 2, cell: func(r *ServerRow) string { return seconds(r.RequestP95) }},
		{title: "GPU MEM", width: 7, right: true, prio: 2, cell: func(r *ServerRow) string { return bytesIEC(r.GPUMem) }},
		{title: "ERR/s", width: 6, right: true, prio: 3, cell: func(r *ServerRow) string { return rate(r.Errors) }},
		{title: "PREEMPT/s", width: 9, right: true, prio: 3, cell: func(r *ServerRow) string { return rate(r.Preemptions) }},
		{title: "KV TOKENS", width: 9, right: true, prio: 4, cell: func(r *ServerRow) string { return count(r.KVCapacity) }},
		{title: "PORT", width: 5, right: true, prio: 3, cell: func(r *ServerRow) string { return r.Port }},
		{title: "POD", width: 10, flex: true, prio: 3, cell: func(r *ServerRow) string { return podName(r.Namespace, r.Pod) }},
	},
	sorts: []sortKey[ServerRow]{
		{"WAIT", desc(func(r *ServerRow) float64 { return r.Waiting }, serverByName)},
		{"RUN", desc(func(r *ServerRow) float64 { return r.Running }, serverByName)},
		{"KV CACHE", desc(func(r *ServerRow) float64 { return r.KVCache }, serverByName)},
		{"REQ/s", desc(func(r *ServerRow) float64 { return r.Requests }, serverByName)},
		{"SERVER", serverByName},
	},
	match: func(r *ServerRow) string { return r.Kind + "\n" + r.Model + "\n" + r.Namespace + "\n" + r.Pod },
	rows:  func(f *Frame) []ServerRow { return f.Servers },
	empty: "no model server found on the node",
}

// trainingView lays out spec's columns: the job's key, then one column a
// metric.
func trainingView(spec trainingSpec) *viewSpec[TrainingRow] {
	v := &viewSpec[TrainingRow]{
		match: func(r *TrainingRow) string { return strings.Join(r.Key, "\n") },
		rows:  func(f *Frame) []TrainingRow { return f.Training },
		empty: "no training jobs",
	}
	byKey := func(a, b *TrainingRow) int {
		return cmp.Compare(strings.Join(a.Key, "\x00"), strings.Join(b.Key, "\x00"))
	}
	for i, t := range spec.KeyTitles() {
		v.cols = append(v.cols, column[TrainingRow]{title: strings.ToUpper(t), width: 10, flex: true, cell: func(r *TrainingRow) string {
			if i < len(r.Key) {
				return r.Key[i]
			}
			return ""
		}})
	}
	for i, c := range spec.cols {
		title := strings.ToUpper(c.Title)
		if len(title) > 12 {
			title = title[:12]
		}
		v.cols = append(v.cols, column[TrainingRow]{title: title, width: max(8, len(title)), right: true, prio: min(i/4, 3),
			cell: func(r *TrainingRow) string { return trainingValue(r.Values[i], c) }})
		v.sorts = append(v.sorts, sortKey[TrainingRow]{title, desc(func(r *TrainingRow) float64 { return r.Values[i] }, byKey)})
	}
	v.sorts = append(v.sorts, sortKey[TrainingRow]{"POD", byKey})
	return v
}

// trainingValue formats a training figure by its unit.
func trainingValue(v float64, c TrainingColumn) string {
	switch c.Metric.Unit {
	case "s":
		return seconds(v)
	case "By":
		return bytesIEC(v)
	}
	if math.IsNaN(v) {
		return dash
	}
	if c.Metric.Unit == semconv.TrainingStep.Unit && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	if a := math.Abs(v); a != 0 && (a < 0.01 || a >= 1e5) {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return strconv.FormatFloat(v, 'f', 4, 64)
}
