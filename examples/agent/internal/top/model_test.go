package top

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clock is a settable clock for the Model.
type clock struct{ ns atomic.Int64 }

func newClock(t time.Time) *clock {
	c := &clock{}
	c.set(t)
	return c
}
func (c *clock) set(t time.Time)       { c.ns.Store(t.UnixNano()) }
func (c *clock) now() time.Time        { return time.Unix(0, c.ns.Load()) }
func (c *clock) add(d time.Duration)   { c.ns.Add(int64(d)) }
func (c *clock) sinceEpoch() time.Time { return c.now() }

// harness runs a Model under teatest.
type harness struct {
	tm    *teatest.TestModel
	m     *Model
	clock *clock
	src   *replay
}

// startModel runs the Model at w×h, fed src (the recording by default),
// its clock at the last scrape's time. With the recording, it returns
// once the Model has the second Frame: the third refresh has begun, and
// waits (the replay has no third scrape).
func startModel(t *testing.T, w, h int, o Options, src *replay) *harness {
	t.Helper()
	r := loadRecording(t)
	if src == nil {
		src = &replay{scrapes: r.scrapes(t)}
	}
	src.called = make(chan int, 64)
	c := newClock(r.at[1])
	o.Refresher = NewRefresher(src, time.Hour)
	o.Interval = 5 * time.Millisecond
	o.Now = c.now
	m := New(o)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(w, h))
	t.Cleanup(func() { _ = tm.Quit() })
	h0 := &harness{tm: tm, m: m, clock: c, src: src}
	h0.waitCalls(t, len(src.scrapes)+1)
	return h0
}

// waitCalls waits for the Source's n-th Scrape to begin: the Model has
// handled the Frame of each before it.
func (h *harness) waitCalls(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case got := <-h.src.called:
			if got >= n {
				return
			}
		case <-timeout:
			t.Fatalf("the Model did not begin refresh %d within 30s", n)
		}
	}
}

// keys types keys: names of special keys (enter, esc) or text.
func (h *harness) keys(keys ...string) {
	for _, k := range keys {
		switch k {
		case "enter":
			h.tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
		case "esc":
			h.tm.Send(tea.KeyPressMsg{Code: tea.KeyEscape})
		case "tab":
			h.tm.Send(tea.KeyPressMsg{Code: tea.KeyTab})
		case "ctrl+c":
			h.tm.Send(tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl})
		default:
			h.tm.Type(k)
		}
	}
}

// final quits with q and returns the Model as it ended.
func (h *harness) final(t *testing.T) *Model {
	t.Helper()
	h.keys("q")
	return h.tm.FinalModel(t, teatest.WithFinalTimeout(30*time.Second)).(*Model)
}

// screen is the Model's screen, without styles.
func screen(m *Model) string { return ansi.Strip(m.Render()) }

// Golden frames of every view of the recording, at 80×24 and 160×50; the
// processes' view opened on the late program; the help. Run with -update
// to rewrite them (and read the diff).
func TestGoldenFrames(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {160, 50}} {
		for _, tc := range []struct {
			name string
			view View
			keys []string
		}{
			{"GPUs", ViewGPUs, nil},
			{"Processes", ViewProcesses, nil},
			{"LLM", ViewLLM, nil},
			{"Servers", ViewServers, nil},
			{"Training", ViewTraining, nil},
			{"ProcessLate", ViewProcesses, []string{"/", "late", "enter", "enter"}},
			{"Help", ViewGPUs, []string{"?"}},
		} {
			t.Run(fmt.Sprintf("%dx%d/%s", size[0], size[1], tc.name), func(t *testing.T) {
				h := startModel(t, size[0], size[1], Options{View: tc.view}, nil)
				h.keys(tc.keys...)
				m := h.final(t)
				s := screen(m)
				lines := strings.Split(s, "\n")
				require.Len(t, lines, size[1], "the screen's height")
				for i, l := range lines {
					require.LessOrEqual(t, ansi.StringWidth(l), size[0], "line %d is wider than the screen: %q", i, l)
				}
				golden.RequireEqual(t, s)
			})
		}
	}
}

// What the golden frames say, checked apart from them: the late program's
// row, its kernel and the model appear at 80×24.
func TestFramesShowTheWorkload(t *testing.T) {
	r := loadRecording(t)
	h := startModel(t, 80, 24, Options{View: ViewProcesses}, nil)
	h.keys("/", "late", "enter")
	m := h.final(t)
	s := screen(m)
	assert.Regexp(t, fmt.Sprintf(`(?m)^ +%d +late +- +- +0%% +\d+ `, r.latePID), s)
	assert.Contains(t, s, fmt.Sprintf(`filter "late": 1 of %d`, len(refreshAll(t, r.scrapes(t)...)[1].Processes)))

	h = startModel(t, 80, 24, Options{View: ViewProcesses}, nil)
	h.keys("/", "late", "enter", "enter")
	s = screen(h.final(t))
	assert.Contains(t, s, fmt.Sprintf("PID %d  late", r.latePID))
	assert.Regexp(t, `(?m)^saxpy\(int, float, float\*, float\*\) +\d+ +\d+`, s)

	h = startModel(t, 80, 24, Options{View: ViewLLM}, nil)
	assert.Regexp(t, `(?m)^openai_compatible +gpt-4o-mini +3\.00 +\d+ms +`, screen(h.final(t)))
}

// Resized from 160×50 to 80×24, the screen is what 80×24 shows from the
// start: nothing of the wider layout is left.
func TestResize(t *testing.T) {
	for _, v := range []View{ViewGPUs, ViewProcesses, ViewLLM, ViewServers} {
		h := startModel(t, 160, 50, Options{View: v}, nil)
		h.tm.Send(tea.WindowSizeMsg{Width: 80, Height: 24})
		m := h.final(t)
		want, err := os.ReadFile(filepath.Join("testdata", "TestGoldenFrames", "80x24", v.String()+".golden"))
		require.NoError(t, err)
		assert.Equal(t, string(want), screen(m), "%s resized to 80×24", v)
	}
	// Smaller than anything sensible: still one screen, no line wider.
	h := startModel(t, 80, 24, Options{View: ViewProcesses}, nil)
	h.tm.Send(tea.WindowSizeMsg{Width: 30, Height: 8})
	s := screen(h.final(t))
	lines := strings.Split(s, "\n")
	assert.Len(t, lines, 8)
	for _, l := range lines {
		assert.LessOrEqual(t, ansi.StringWidth(l), 30, "%q", l)
	}
}

// The filter keeps the rows whose process name, pod or namespace holds
// it, and esc clears it.
func TestFilter(t *testing.T) {
	all := len(refreshAll(t, loadRecording(t).scrapes(t)...)[1].Processes)
	require.Greater(t, all, 1)
	h := startModel(t, 160, 50, Options{View: ViewProcesses}, nil)
	h.keys("/", "late", "enter")
	m := h.final(t)
	rows := m.tables[ViewProcesses].(*table[ProcessRow]).rows
	require.NotEmpty(t, rows)
	for _, r := range rows {
		assert.Equal(t, "late", r.Exe)
	}
	assert.Less(t, len(rows), all)
	assert.Contains(t, screen(m), fmt.Sprintf(`filter "late": %d of %d`, len(rows), all))

	h = startModel(t, 160, 50, Options{View: ViewProcesses}, nil)
	h.keys("/", "late", "esc")
	m = h.final(t)
	assert.Equal(t, all, m.tables[ViewProcesses].len())
	assert.NotContains(t, screen(m), `filter "`)

	// Filtering by a pod's name: the GPUs of no pod have none.
	h = startModel(t, 160, 50, Options{View: ViewGPUs}, nil)
	h.keys("/", "no-such-pod", "enter")
	assert.Contains(t, screen(h.final(t)), `no row matches the filter "no-such-pod"`)
}

// s cycles the sort: processes by GPU memory, then by launches a second,
// each largest first, the column marked.
func TestSort(t *testing.T) {
	r := loadRecording(t)
	h := startModel(t, 160, 50, Options{View: ViewProcesses}, nil)
	m := h.final(t)
	rows := m.tables[ViewProcesses].(*table[ProcessRow]).rows
	assert.Equal(t, "agent.test", rows[0].Exe, "the one process with GPU memory first")
	assert.Contains(t, screen(m), "GPU MEM▼")

	h = startModel(t, 160, 50, Options{View: ViewProcesses}, nil)
	h.keys("s")
	m = h.final(t)
	rows = m.tables[ViewProcesses].(*table[ProcessRow]).rows
	assert.Equal(t, r.latePID, rows[0].PID, "the late program launches most")
	for i := 1; i < len(rows); i++ {
		a, b := rows[i-1].Launches, rows[i].Launches
		assert.True(t, math.IsNaN(b) || a >= b, "row %d: %v after %v", i, b, a)
	}
	assert.Contains(t, screen(m), "LAUNCH/s▼")

	// Around every key once, back to the first.
	h = startModel(t, 160, 50, Options{View: ViewProcesses}, nil)
	h.keys(strings.Repeat("s", len(processSpec.sorts)))
	assert.Contains(t, screen(h.final(t)), "GPU MEM▼")
}

// q and ctrl+c end the program.
func TestQuit(t *testing.T) {
	for _, k := range []string{"q", "ctrl+c"} {
		h := startModel(t, 80, 24, Options{}, nil)
		h.keys(k)
		h.tm.WaitFinished(t, teatest.WithFinalTimeout(30*time.Second))
	}
}

// Keys switch views, and the cursor moves and stays on the screen.
func TestNavigation(t *testing.T) {
	h := startModel(t, 80, 24, Options{}, nil)
	h.keys("tab", "G")
	m := h.final(t)
	assert.Equal(t, ViewProcesses, m.CurrentView())
	n := m.tables[ViewProcesses].len()
	assert.Equal(t, n-1, m.cursor[ViewProcesses])
	s := screen(m)
	// The last row (the sort's last: no GPU memory, largest pid) shows.
	last := m.tables[ViewProcesses].(*table[ProcessRow]).rows[n-1]
	assert.Contains(t, s, fmt.Sprintf(" %d ", last.PID))

	h = startModel(t, 80, 24, Options{}, nil)
	h.keys("5", "3")
	assert.Equal(t, ViewLLM, h.final(t).CurrentView())
}

// Under NO_COLOR, Bubble Tea writes no colour, and the screen still marks
// the current view and row (in reverse video and brackets); in a colour
// terminal it does write colours.
func TestNoColor(t *testing.T) {
	sgr := regexp.MustCompile(`\x1b\[[0-9;:]*m`)
	colour := func(out []byte) bool {
		for _, seq := range sgr.FindAll(out, -1) {
			params := strings.Split(strings.Trim(string(seq[2:len(seq)-1]), ";"), ";")
			for _, p := range params {
				if p == "38" || p == "48" || (len(p) == 2 && (p[0] == '3' || p[0] == '4') && p[1] >= '0' && p[1] <= '7') ||
					(len(p) == 2 && (p[0] == '9') && p[1] >= '0' && p[1] <= '7') {
					return true
				}
			}
		}
		return false
	}
	run := func(env []string) []byte {
		r := loadRecording(t)
		src := &replay{scrapes: r.scrapes(t), called: make(chan int, 64)}
		c := newClock(r.at[1])
		m := New(Options{Refresher: NewRefresher(src, time.Hour), Interval: 5 * time.Millisecond, Now: c.now, View: ViewProcesses})
		tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(100, 30), teatest.WithProgramOptions(tea.WithEnvironment(env)))
		h := &harness{tm: tm, m: m, clock: c, src: src}
		h.waitCalls(t, 3)
		h.keys("q")
		out, err := io.ReadAll(tm.FinalOutput(t, teatest.WithFinalTimeout(30*time.Second)))
		require.NoError(t, err)
		return out
	}
	// TTY_FORCE: teatest's output is no terminal, where Bubble Tea would
	// write no style at all.
	plain := run([]string{"TERM=xterm-256color", "TTY_FORCE=1", "NO_COLOR=1"})
	require.Contains(t, string(plain), "Processes")
	assert.False(t, colour(plain), "colour written under NO_COLOR: %q", plain)
	assert.Contains(t, string(plain), "\x1b[7m", "the selected row in reverse video")
	assert.True(t, colour(run([]string{"TERM=xterm-256color", "TTY_FORCE=1", "COLORTERM=truecolor"})), "no colour in a colour terminal")
}

// While the agent does not answer, the screen keeps its last Frame,
// answers keys, and says how stale its data is; when it answers again,
// the stale mark goes.
func TestStaleWhileTheAgentHangs(t *testing.T) {
	r := loadRecording(t)
	// One scrape, then none: the second refresh waits.
	src := &replay{scrapes: r.scrapes(t)[:1]}
	h := startModel(t, 120, 30, Options{}, src)
	h.clock.add(45 * time.Second)
	h.keys("2", "s") // answered while the refresh hangs
	m := h.final(t)
	assert.Equal(t, ViewProcesses, m.CurrentView())
	assert.Equal(t, 1, m.Frames())
	s := screen(m)
	// The Frame is of the first scrape, 2 s before the clock began.
	assert.Contains(t, s, "STALE 47s: the agent has not answered for 45s")
	assert.Contains(t, s, "LAUNCH/s▼")
	assert.Contains(t, s, " late ", "the last Frame stays on screen")
}

// Before the first Frame, the screen says what it is reading; a failed
// refresh is shown, and the next good one replaces it.
func TestErrorsAndRecovery(t *testing.T) {
	r := loadRecording(t)
	m := New(Options{Refresher: NewRefresher(&replay{}, time.Hour), Interval: time.Second, Now: func() time.Time { return r.at[1] }})
	m.width, m.height = 100, 10
	assert.Contains(t, screen(m), "reading recorded …")

	m.Update(frameMsg{err: fmt.Errorf("%w: %w", ErrScrape, io.ErrUnexpectedEOF)})
	assert.Contains(t, screen(m), "no data: scrape: unexpected EOF")

	_, f := frames(t, r.scrapes(t))
	m.Update(frameMsg{f: f})
	assert.Contains(t, screen(m), "updated 0s ago")
	m.Update(frameMsg{err: fmt.Errorf("%w: %w", ErrScrape, context.DeadlineExceeded)})
	s := screen(m)
	assert.Contains(t, s, "STALE 0s: timed out: context deadline exceeded")
	assert.Contains(t, s, "Fake H100", "the last Frame stays")
	m.Update(frameMsg{f: f})
	assert.NotContains(t, screen(m), "STALE")
}
