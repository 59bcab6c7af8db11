package top

import (
	"slices"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// column is one column of a view's table.
type column[R any] struct {
	title string
	// width is the column's cells; a flex column's least, and it takes a
	// share of the room the others leave.
	width int
	flex  bool
	right bool
	// prio orders the columns' claims on a narrow screen: those of the
	// highest are left out first; 0 is always shown.
	prio int
	cell func(r *R) string
}

// sortKey is one order of a view's rows, named by the column it sorts.
type sortKey[R any] struct {
	title string
	cmp   func(a, b *R) int
}

// viewSpec is what a view shows of a Frame.
type viewSpec[R any] struct {
	cols  []column[R]
	sorts []sortKey[R]
	// match is the text the filter looks in (pod, namespace, names).
	match func(r *R) string
	rows  func(f *Frame) []R
	// empty is what the view says with no rows.
	empty string
}

// table is a view's rows of the current Frame, filtered and sorted.
type table[R any] struct {
	spec *viewSpec[R]
	rows []R
	sort int
	// all is the rows before the filter.
	all int
}

func (t *table[R]) load(f *Frame, filter string) {
	t.rows = t.rows[:0]
	if f == nil {
		t.all = 0
		return
	}
	all := t.spec.rows(f)
	t.all = len(all)
	filter = strings.ToLower(filter)
	for i := range all {
		if filter == "" || strings.Contains(strings.ToLower(t.spec.match(&all[i])), filter) {
			t.rows = append(t.rows, all[i])
		}
	}
	if len(t.spec.sorts) > 0 {
		c := t.spec.sorts[t.sort%len(t.spec.sorts)].cmp
		slices.SortStableFunc(t.rows, func(a, b R) int { return c(&a, &b) })
	}
}

func (t *table[R]) len() int { return len(t.rows) }

func (t *table[R]) nextSort() {
	if len(t.spec.sorts) > 0 {
		t.sort = (t.sort + 1) % len(t.spec.sorts)
	}
}

func (t *table[R]) sortTitle() string {
	if len(t.spec.sorts) == 0 {
		return ""
	}
	return t.spec.sorts[t.sort%len(t.spec.sorts)].title
}

// layout is each column's width at a screen width; 0 leaves it out.
func (t *table[R]) layout(width int) []int {
	cols := t.spec.cols
	ws := make([]int, len(cols))
	prios := make([]int, 0, len(cols))
	for _, c := range cols {
		prios = append(prios, c.prio)
	}
	slices.Sort(prios)
	prios = slices.Compact(prios)
	used := -1 // no separator before the first column
	for _, p := range prios {
		need := 0
		for _, c := range cols {
			if c.prio == p {
				need += colWidth(c.width, c.title) + 1
			}
		}
		if p > 0 && used+need > width {
			break
		}
		for i, c := range cols {
			if c.prio == p {
				ws[i] = colWidth(c.width, c.title)
			}
		}
		used += need
	}
	var flex []int
	for i, c := range cols {
		if ws[i] > 0 && c.flex {
			flex = append(flex, i)
		}
	}
	if room := width - used; room > 0 && len(flex) > 0 {
		for k, i := range flex {
			share := room / len(flex)
			if k < room%len(flex) {
				share++
			}
			ws[i] += share
		}
	}
	return ws
}

// colWidth is a column's width: room for its title and the sort mark.
func colWidth(w int, title string) int { return max(w, ansi.StringWidth(title)+1) }

// header renders the column titles, the sorted one marked.
func (t *table[R]) header(ws []int) string {
	sorted := t.sortTitle()
	cells := make([]string, 0, len(ws))
	for i, c := range t.spec.cols {
		if ws[i] == 0 {
			continue
		}
		title := c.title
		if title == sorted && title != "" {
			title += "▼"
		}
		cells = append(cells, pad(title, ws[i], c.right))
	}
	return strings.Join(cells, " ")
}

// row renders row i.
func (t *table[R]) row(i int, ws []int) string {
	r := &t.rows[i]
	cells := make([]string, 0, len(ws))
	for k, c := range t.spec.cols {
		if ws[k] == 0 {
			continue
		}
		cells = append(cells, pad(c.cell(r), ws[k], c.right))
	}
	return strings.Join(cells, " ")
}

// pad fits s to w cells: cut with an ellipsis, or padded.
func pad(s string, w int, right bool) string {
	n := ansi.StringWidth(s)
	if n > w {
		s = ansi.Truncate(s, w, "…")
		n = ansi.StringWidth(s)
	}
	if n < w {
		if right {
			return strings.Repeat(" ", w-n) + s
		}
		return s + strings.Repeat(" ", w-n)
	}
	return s
}
