package top

import (
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// wrap breaks a line into lines of at most w cells, at spaces where it
// can, the later ones indented.
func wrap(s string, w int) []string {
	lines := strings.Split(ansi.Wrap(s, w, ""), "\n")
	if len(lines) == 1 {
		return lines
	}
	rest := strings.Split(ansi.Wrap(strings.Join(lines[1:], " "), max(w-2, 1), ""), "\n")
	for i := range rest {
		rest[i] = "  " + rest[i]
	}
	return append(lines[:1], rest...)
}

// truncate cuts a styled line to w cells.
func truncate(s string, w int) string { return ansi.Truncate(s, w, "…") }

// processLines describes one process: who it is, its figures, its launch
// shapes and whether it is a leak suspect. exe are the launch shapes of
// its executable (they carry no pid).
func processLines(p ProcessRow, exe ExeStats, hasExe bool) []string {
	var out []string
	who := fmt.Sprintf("PID %s  %s", pidText(p.PID), p.Exe)
	if pod := podName(p.Namespace, p.Pod); pod != "" {
		who += "  pod " + pod
		if p.Container != "" {
			who += " container " + p.Container
		}
	}
	if p.Service != "" {
		who += "  service " + p.Service
	}
	out = append(out, who)
	gpus := "-"
	if len(p.GPUs) > 0 {
		gpus = strings.Join(p.GPUs, ",")
	}
	out = append(out,
		fmt.Sprintf("GPU memory %s on GPU %s · SM %s (NVML, measured) · ~SM %s, ~threads %s (modelled from API calls)",
			bytesIEC(p.GPUMem), gpus, pct(p.SMUtil), pct(p.ModelSM), pct(p.ModelThreads)),
		fmt.Sprintf("launches %s/s · graph launches %s/s · API errors %s/s (%s in all)",
			rate(p.Launches), rate(p.GraphLaunches), rate(p.Errors), count(p.ErrorsTotal)),
		fmt.Sprintf("memcpy H2D %s/s · D2H %s/s · D2D %s/s · other %s/s",
			bytesRate(p.Memcpy[H2D]), bytesRate(p.Memcpy[D2H]), bytesRate(p.Memcpy[D2D]), bytesRate(p.Memcpy[OtherCopy])),
		fmt.Sprintf("allocated, not freed %s · oldest allocation %s old", bytesIEC(p.Outstanding), age(p.OldestAge)),
	)
	if hasExe {
		out = append(out, fmt.Sprintf("launch shape (every %s process of its container, last interval): grid p50 %s p95 %s blocks · block p50 %s p95 %s threads · shared memory p95 %s · sync wait p95 %s",
			p.Exe, count(exe.GridP50), count(exe.GridP95), count(exe.BlockP50), count(exe.BlockP95), bytesIEC(exe.SharedP95), seconds(exe.SyncP95)))
	}
	if l := p.Leak; l != nil {
		out = append(out, fmt.Sprintf("LEAK SUSPECT: its oldest allocation is %s old, and what it holds went %s → %s over the last %s without going down",
			age(l.OldestAge), bytesIEC(l.From), bytesIEC(l.To), age(l.Since.Seconds())))
	} else {
		out = append(out, "no leak suspected")
	}
	return out
}

// detailLines is an opened process: its description, then its kernels.
func (m *Model) detailLines(w, h int) []string {
	p := m.detail
	var exe ExeStats
	hasExe := false
	if m.frame != nil {
		exe, hasExe = m.frame.Executables[p.ExeKey]
	}
	var out []string
	for i, l := range processLines(p, exe, hasExe) {
		for _, l := range wrap(l, w) {
			if i == 0 || strings.HasPrefix(l, "LEAK") {
				l = m.st.bold.Render(l)
			}
			out = append(out, l)
		}
	}
	out = append(out, "")
	ws := kernelWidths(w)
	out = append(out, m.st.header.Render(pad(kernelRow("KERNEL", "LAUNCH/s", "TOTAL", ws), w, false)))
	if len(p.Kernels) == 0 {
		return append(out, m.st.dim.Render("no kernel launched since the agent started"))
	}
	for _, k := range p.Kernels[min(m.detailOffset, len(p.Kernels)):] {
		if len(out) >= h {
			break
		}
		out = append(out, kernelRow(k.Name, rate(k.Rate), count(k.Total), ws))
	}
	return out
}

func kernelWidths(w int) [3]int { return [3]int{max(w-20, 10), 9, 9} }

func kernelRow(name, rate, total string, ws [3]int) string {
	return pad(name, ws[0], false) + " " + pad(rate, ws[1], true) + " " + pad(total, ws[2], true)
}

// helpLines is the help screen: the keys, what the columns mean, and the
// features with their reasons.
func (m *Model) helpLines(w, h int) []string {
	out := strings.Split(m.help.FullHelpView(m.keys.FullHelp()), "\n")
	out = append(out, "")
	for _, l := range legend {
		out = append(out, wrap(l, w)...)
	}
	out = append(out, "", m.st.bold.Render("Features"))
	for _, l := range featureLines(m.frame, m.o.Reasons) {
		out = append(out, wrap(l, w)...)
	}
	for i := range out {
		out[i] = fit(out[i], w)
	}
	if len(out) > h {
		out = out[:h]
	}
	return out
}

// legend says what the less obvious columns mean.
var legend = []string{
	"views       1 GPUs · 2 Processes (enter: a process's kernels, launch shapes, leak) · 3 LLM calls · 4 model Servers · 5 Training",
	"~SM% ~THR%  modelled by the occupancy model from the CUDA/HIP calls the agent sees, not measured",
	"SM%         NVML's per-process utilization samples (measured)",
	"!           leak suspect: the oldest allocation stays and outstanding memory never goes down",
	"rates       per second over the time between two refreshes; percentiles from the histograms' bucket deltas",
	"-           not known (yet): rates need two refreshes",
}

// featureLines lists the features with their states and, where known,
// why.
func featureLines(f *Frame, reasons map[string]string) []string {
	if f == nil || len(f.Features) == 0 {
		return []string{"no feature states in the scrape"}
	}
	var out []string
	for _, ft := range f.Features {
		line := fmt.Sprintf("%-10s %-12s", ft.Name, ft.State)
		if r := reasons[ft.Name]; r != "" {
			line += " " + r
		} else if ft.Reason != "" {
			line += " " + ft.Reason
		} else if ft.State != "active" {
			line += " (run agent -check on the node for why)"
		}
		out = append(out, strings.TrimRight(line, " "))
	}
	return out
}

// onceDetails is how many processes Once describes in full.
const onceDetails = 10

// Once renders a Frame as plain text: every row of the views asked for,
// at a width, then the features and alarms: what -once prints.
func Once(f *Frame, views []View, width int, reasons map[string]string) string {
	tables := newTables(defaultTraining)
	var b strings.Builder
	for i, v := range views {
		if i > 0 {
			b.WriteString("\n")
		}
		t := tables[v]
		t.load(f, "")
		fmt.Fprintf(&b, "== %s (%d)\n", v, t.len())
		ws := t.layout(width)
		b.WriteString(strings.TrimRight(t.header(ws), " ") + "\n")
		if t.len() == 0 {
			b.WriteString(t.emptyText() + "\n")
		}
		for r := range t.len() {
			b.WriteString(strings.TrimRight(t.row(r, ws), " ") + "\n")
		}
		if v == ViewProcesses {
			// The processes that launched kernels over the interval, or are
			// leak suspects: the busiest onceDetails of them.
			var busy []ProcessRow
			for _, p := range tables[ViewProcesses].(*table[ProcessRow]).rows {
				if p.Leak != nil || p.Launches > 0 {
					busy = append(busy, p)
				}
			}
			slices.SortStableFunc(busy, func(a, b ProcessRow) int { return cmpDesc(a.Launches, b.Launches) })
			if len(busy) > onceDetails {
				fmt.Fprintf(&b, "\n(the %d busiest of %d processes that launched kernels)\n", onceDetails, len(busy))
				busy = busy[:onceDetails]
			}
			for _, p := range busy {
				exe, ok := f.Executables[p.ExeKey]
				b.WriteString("\n")
				for _, l := range processLines(p, exe, ok) {
					b.WriteString(l + "\n")
				}
				ws := kernelWidths(width)
				b.WriteString(strings.TrimRight(kernelRow("KERNEL", "LAUNCH/s", "TOTAL", ws), " ") + "\n")
				for _, k := range p.TopKernels() {
					b.WriteString(strings.TrimRight(kernelRow(k.Name, rate(k.Rate), count(k.Total), ws), " ") + "\n")
				}
			}
		}
	}
	b.WriteString("\n== Features\n")
	for _, l := range featureLines(f, reasons) {
		b.WriteString(l + "\n")
	}
	b.WriteString("\n== Alarms\n")
	if len(f.Alarms) == 0 {
		b.WriteString("none\n")
	}
	for _, a := range f.Alarms {
		fmt.Fprintf(&b, "%s %s/s (%s in all)\n", a.What, count(a.Rate), count(a.Total))
	}
	interval := "-"
	if f.Interval > 0 {
		interval = f.Interval.Round(1e6).String()
	}
	fmt.Fprintf(&b, "\n%s series, rates over %s\n", count(float64(f.Series)), interval)
	return b.String()
}
