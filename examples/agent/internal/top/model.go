package top

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

// Options configure a Model.
type Options struct {
	// Refresher reads the metrics.
	Refresher *Refresher
	// Interval is the time between refreshes.
	Interval time.Duration
	// Reasons are the features' reasons, by name, where top started them
	// itself (-standalone): the agent's endpoint carries their states only.
	Reasons map[string]string
	// View is the view shown first.
	View View
	// Context ends the refreshes in flight when it is done.
	Context context.Context
	// Now is the clock; time.Now if nil.
	Now func() time.Time

	// training replaces the Training view's columns (tests).
	training *trainingSpec
}

// Model is top's Bubble Tea model.
type Model struct {
	o      Options
	keys   keyMap
	help   help.Model
	filter textinput.Model
	st     styles

	width, height int
	view          View
	tables        [numViews]tableView
	cursor        [numViews]int
	offset        [numViews]int

	frame    *Frame
	frames   int // frames received
	err      error
	fetching bool
	fetchAt  time.Time

	filtering bool
	// filters are each view's filter: the text input edits the current
	// view's.
	filters  [numViews]string
	showHelp bool
	// detail is the process opened with enter: its pid and executable;
	// open is false when none is.
	detail       ProcessRow
	open         bool
	detailOffset int
}

// New makes a Model.
func New(o Options) *Model {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Context == nil {
		o.Context = context.Background()
	}
	spec := defaultTraining
	if o.training != nil {
		spec = *o.training
	}
	ti := textinput.New()
	ti.Prompt = "/"
	ti.Placeholder = "pod, namespace or process name"
	ti.CharLimit = 128
	m := &Model{o: o, keys: newKeyMap(), help: help.New(), filter: ti, st: newStyles(), view: o.View,
		tables: newTables(spec), width: 80, height: 24}
	return m
}

// Frame is the Frame shown; nil before the first.
func (m *Model) Frame() *Frame { return m.frame }

// Err is the last refresh's error; nil when it succeeded.
func (m *Model) Err() error { return m.err }

// Frames is the number of Frames received.
func (m *Model) Frames() int { return m.frames }

// CurrentView is the view shown.
func (m *Model) CurrentView() View { return m.view }

// frameMsg carries a refresh's result.
type frameMsg struct {
	f   *Frame
	err error
}

// tickMsg asks for a refresh.
type tickMsg struct{}

func (m *Model) tick() tea.Cmd {
	return tea.Tick(m.o.Interval, func(time.Time) tea.Msg { return tickMsg{} })
}

func (m *Model) fetch() tea.Cmd {
	m.fetching, m.fetchAt = true, m.o.Now()
	r, ctx := m.o.Refresher, m.o.Context
	return func() tea.Msg {
		f, err := r.Refresh(ctx)
		return frameMsg{f, err}
	}
}

// Init implements tea.Model: the first refresh.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(m.fetch(), m.tick())
}

// Update implements tea.Model.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = max(msg.Width, 20), max(msg.Height, 6)
		m.help.SetWidth(m.width)
		m.clamp()
	case frameMsg:
		m.fetching = false
		if msg.err != nil {
			m.err = msg.err
			return m, nil
		}
		m.err, m.frame = nil, msg.f
		m.frames++
		m.reload()
		if m.open {
			m.refreshDetail()
		}
	case tickMsg:
		cmds := []tea.Cmd{m.tick()}
		if !m.fetching {
			cmds = append(cmds, m.fetch())
		}
		return m, tea.Batch(cmds...)
	case tea.KeyPressMsg:
		return m.key(msg)
	}
	return m, nil
}

func (m *Model) key(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	if m.filtering {
		switch msg.String() {
		case "enter":
			m.filtering = false
			m.filter.Blur()
		case "esc":
			m.filtering = false
			m.filter.Blur()
			m.filter.SetValue("")
			m.filters[m.view] = ""
			m.reload()
		case "ctrl+c":
			return m, tea.Quit
		default:
			var cmd tea.Cmd
			m.filter, cmd = m.filter.Update(msg)
			m.filters[m.view] = m.filter.Value()
			m.reload()
			return m, cmd
		}
		return m, nil
	}
	k := m.keys
	switch {
	case key.Matches(msg, k.Quit):
		return m, tea.Quit
	case key.Matches(msg, k.Help):
		m.showHelp = !m.showHelp
	case m.showHelp && key.Matches(msg, k.Back):
		m.showHelp = false
	case key.Matches(msg, k.Filter):
		m.showHelp = false
		m.filtering = true
		m.filter.SetValue(m.filters[m.view])
		m.filter.CursorEnd()
		return m, m.filter.Focus()
	case key.Matches(msg, k.Sort):
		m.tables[m.view].nextSort()
		m.reload()
	case key.Matches(msg, k.Next):
		m.switchTo((m.view + 1) % numViews)
	case key.Matches(msg, k.Prev):
		m.switchTo((m.view + numViews - 1) % numViews)
	case key.Matches(msg, k.Views):
		m.switchTo(View(msg.Code - '1'))
	case m.open && key.Matches(msg, k.Back):
		m.open = false
	case key.Matches(msg, k.Open) && m.view == ViewProcesses && !m.open:
		t := m.tables[ViewProcesses].(*table[ProcessRow])
		if c := m.cursor[ViewProcesses]; c < t.len() {
			m.detail, m.open, m.detailOffset = t.rows[c], true, 0
			m.detail.Kernels = m.detail.TopKernels()
		}
	case key.Matches(msg, k.Up):
		m.move(-1)
	case key.Matches(msg, k.Down):
		m.move(1)
	case key.Matches(msg, k.PageUp):
		m.move(-m.pageRows())
	case key.Matches(msg, k.PageDown):
		m.move(m.pageRows())
	case key.Matches(msg, k.Home):
		m.move(-math.MaxInt32)
	case key.Matches(msg, k.End):
		m.move(math.MaxInt32)
	}
	return m, nil
}

func (m *Model) switchTo(v View) {
	if v >= 0 && v < numViews {
		m.view, m.open, m.showHelp = v, false, false
	}
}

// move moves the cursor (or, in a process's detail, its kernels) by n
// rows.
func (m *Model) move(n int) {
	if m.open {
		m.detailOffset = min(max(m.detailOffset+n, 0), max(len(m.detail.Kernels)-1, 0))
		return
	}
	m.cursor[m.view] = m.cursor[m.view] + n
	m.clamp()
}

// reload loads every view's table from the Frame with the filter.
func (m *Model) reload() {
	for v, t := range m.tables {
		t.load(m.frame, m.filters[v])
	}
	m.clamp()
}

// refreshDetail takes the open process's row from the new Frame.
func (m *Model) refreshDetail() {
	for _, p := range m.frame.Processes {
		if p.PID == m.detail.PID && p.Exe == m.detail.Exe {
			m.detail = p
			m.detail.Kernels = p.TopKernels()
			return
		}
	}
	m.detail.Kernels, m.detail.Launches = nil, nan // gone: it exited
}

// pageRows is how many rows a table shows.
func (m *Model) pageRows() int { return max(m.height-4, 1) }

// clamp keeps each cursor on a row and in the window.
func (m *Model) clamp() {
	page := m.pageRows()
	for v, t := range m.tables {
		n := t.len()
		c := min(max(m.cursor[v], 0), max(n-1, 0))
		o := m.offset[v]
		if c < o {
			o = c
		}
		if c >= o+page {
			o = c - page + 1
		}
		o = min(max(o, 0), max(n-page, 0))
		m.cursor[v], m.offset[v] = c, o
	}
}

// View implements tea.Model.
func (m *Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	v.WindowTitle = "xpuscope top"
	return v
}

// Render is the screen as text, styled.
func (m *Model) Render() string {
	w, h := m.width, m.height
	lines := make([]string, 0, h)
	lines = append(lines, m.tabs(w))
	body := h - 3
	switch {
	case m.showHelp:
		lines = append(lines, m.helpLines(w, body)...)
	case m.open:
		lines = append(lines, m.detailLines(w, body)...)
	default:
		lines = append(lines, m.tableLines(w, body)...)
	}
	for len(lines) < h-2 {
		lines = append(lines, "")
	}
	lines = lines[:h-2]
	lines = append(lines, m.statusLine(w), m.bottomLine(w))
	return strings.Join(lines, "\n")
}

// tabs is the top line: the views, the current one marked.
func (m *Model) tabs(w int) string {
	var parts []string
	for v := range numViews {
		n := ""
		if m.frame != nil {
			n = fmt.Sprintf(" %d", m.tables[v].unfiltered())
		}
		label := fmt.Sprintf("%d %s%s", v+1, viewNames[v], n)
		if v == m.view {
			parts = append(parts, m.st.tabOn.Render("["+label+"]"))
		} else {
			parts = append(parts, m.st.tab.Render(" "+label+" "))
		}
	}
	line := strings.Join(parts, " ")
	const title = "xpuscope top"
	if lipgloss.Width(line)+len(title)+1 <= w {
		line += strings.Repeat(" ", w-lipgloss.Width(line)-len(title)) + m.st.title.Render(title)
	}
	return fit(line, w)
}

// tableLines is the current view's header and visible rows.
func (m *Model) tableLines(w, h int) []string {
	t := m.tables[m.view]
	ws := t.layout(w)
	out := []string{m.st.header.Render(pad(t.header(ws), w, false))}
	if m.frame == nil {
		return append(out, m.st.dim.Render(m.waitingText()))
	}
	if t.len() == 0 {
		if t.unfiltered() > 0 {
			return append(out, m.st.dim.Render(fmt.Sprintf("no row matches the filter %q", m.filters[m.view])))
		}
		return append(out, m.st.dim.Render(t.emptyText()))
	}
	o := m.offset[m.view]
	for i := o; i < t.len() && len(out) < h; i++ {
		line := pad(t.row(i, ws), w, false)
		if i == m.cursor[m.view] {
			line = m.st.selected.Render(line)
		}
		out = append(out, line)
	}
	return out
}

func (m *Model) waitingText() string {
	if m.err != nil {
		return "no data: " + m.err.Error()
	}
	return "reading " + m.o.Refresher.String() + " …"
}

// statusLine says where the data comes from, how fresh it is, and the
// features' states.
func (m *Model) statusLine(w int) string {
	var b strings.Builder
	b.WriteString(m.o.Refresher.String())
	if f := m.frame; f != nil {
		fmt.Fprintf(&b, " · %s series", count(float64(f.Series)))
		if f.Bytes > 0 {
			fmt.Fprintf(&b, ", %s", bytesIEC(float64(f.Bytes)))
		}
	}
	stale, why := m.stale()
	line := b.String()
	if stale {
		line += " · " + m.st.alarm.Render(why)
	} else if m.frame != nil {
		line += " · " + why
	}
	if fs := m.featureSummary(); fs != "" {
		line += " · " + fs
	}
	return fit(line, w)
}

// stale reports whether the Frame shown is out of date, and says how old
// it is.
func (m *Model) stale() (bool, string) {
	now := m.o.Now()
	if m.frame == nil {
		if m.err != nil {
			return true, "no data"
		}
		return false, ""
	}
	ago := max(now.Sub(m.frame.At), 0)
	label := "updated " + age(ago.Seconds()) + " ago"
	switch {
	case m.err != nil:
		return true, "STALE " + age(ago.Seconds()) + ": " + shortErr(m.err)
	case ago > 2*m.o.Interval+time.Second:
		if m.fetching {
			return true, "STALE " + age(ago.Seconds()) + ": the agent has not answered for " + age(now.Sub(m.fetchAt).Seconds())
		}
		return true, "STALE " + age(ago.Seconds())
	}
	return false, label
}

// shortErr is the last part of an error chain, which says what failed.
func shortErr(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, ErrScrape.Error()+": ")
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out: " + s
	}
	return s
}

// featureSummary counts the features by state, naming those not active.
func (m *Model) featureSummary() string {
	if m.frame == nil || len(m.frame.Features) == 0 {
		return ""
	}
	active := 0
	var others []string
	for _, f := range m.frame.Features {
		if f.State == "active" {
			active++
		} else {
			others = append(others, f.Name+" "+f.State)
		}
	}
	s := fmt.Sprintf("features %d/%d active", active, len(m.frame.Features))
	if len(others) > 0 {
		s += ": " + strings.Join(others, ", ")
	}
	return s
}

// bottomLine is the filter being typed, else the alarms, else the keys.
func (m *Model) bottomLine(w int) string {
	if m.filtering {
		return fit(m.filter.View(), w)
	}
	var parts []string
	if m.frame != nil {
		for _, a := range m.frame.Alarms {
			parts = append(parts, m.st.alarm.Render(fmt.Sprintf("%s %s/s", a.What, count(a.Rate))))
		}
	}
	if f := m.filters[m.view]; f != "" {
		parts = append(parts, fmt.Sprintf("filter %q: %d of %d", f, m.tables[m.view].len(), m.tables[m.view].unfiltered()))
	}
	if m.open {
		parts = append(parts, "esc back")
	}
	parts = append(parts, m.help.ShortHelpView(m.keys.ShortHelp()))
	return fit(strings.Join(parts, "  "), w)
}

// fit cuts a line to w cells.
func fit(s string, w int) string {
	if lipgloss.Width(s) > w {
		return truncate(s, w)
	}
	return s
}

// keyMap is top's keys.
type keyMap struct {
	Views, Next, Prev, Up, Down, PageUp, PageDown, Home, End key.Binding
	Open, Back, Filter, Sort, Help, Quit                     key.Binding
}

func newKeyMap() keyMap {
	return keyMap{
		Views:    key.NewBinding(key.WithKeys("1", "2", "3", "4", "5"), key.WithHelp("1-5", "view")),
		Next:     key.NewBinding(key.WithKeys("tab", "right", "l"), key.WithHelp("tab/→", "next view")),
		Prev:     key.NewBinding(key.WithKeys("shift+tab", "left", "h"), key.WithHelp("shift+tab/←", "previous view")),
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "b"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "space", "f"), key.WithHelp("pgdn", "page down")),
		Home:     key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("home/g", "first row")),
		End:      key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("end/G", "last row")),
		Open:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "open a process")),
		Back:     key.NewBinding(key.WithKeys("esc", "backspace"), key.WithHelp("esc", "back")),
		Filter:   key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Sort:     key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "sort")),
		Help:     key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:     key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
	}
}

// ShortHelp implements help.KeyMap.
func (k keyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Help, k.Views, k.Filter, k.Sort, k.Open, k.Quit}
}

// FullHelp implements help.KeyMap.
func (k keyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Views, k.Next, k.Prev, k.Open, k.Back},
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Home, k.End},
		{k.Filter, k.Sort, k.Help, k.Quit},
	}
}

// styles are the screen's. Colours go where the terminal has them
// (Bubble Tea writes none under NO_COLOR); what matters is also in the
// text or in bold and reverse video.
type styles struct {
	tab, tabOn, title, header, selected, dim, alarm, bold lipgloss.Style
}

func newStyles() styles {
	return styles{
		tab:      lipgloss.NewStyle(),
		tabOn:    lipgloss.NewStyle().Bold(true).Reverse(true),
		title:    lipgloss.NewStyle().Faint(true),
		header:   lipgloss.NewStyle().Bold(true),
		selected: lipgloss.NewStyle().Reverse(true),
		dim:      lipgloss.NewStyle().Faint(true),
		alarm:    lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Red),
		bold:     lipgloss.NewStyle().Bold(true),
	}
}
