package genai

import (
	"math"
	"strings"
	"time"
)

// contentTimer records when a streamed response's content-carrying
// events arrived, for the timing fields of a Call.
type contentTimer struct {
	n           int
	first, last time.Time
}

// mark counts one event that carries output, arrived at at.
func (t *contentTimer) mark(at time.Time) {
	if t.n == 0 {
		t.first = at
	}
	t.last = at
	t.n++
}

// finish sets c's timing fields: Duration from Start to End (or to the
// last chunk when End is unset), TimeToFirstChunk from Start to the first
// marked event, TimePerChunk the mean gap between marked events after the
// first, OutputChunks their number. Unmarked fields keep their "absent"
// values (-1).
func (t *contentTimer) finish(x *Exchange, c *Call) {
	end := x.End
	if end.IsZero() && len(x.Chunks) > 0 {
		end = x.Chunks[len(x.Chunks)-1].At
	}
	if !x.Start.IsZero() && !end.IsZero() && !end.Before(x.Start) {
		c.Duration = end.Sub(x.Start)
	}
	c.OutputChunks = t.n
	if t.n > 0 && !x.Start.IsZero() {
		c.TimeToFirstChunk = max(0, t.first.Sub(x.Start))
	}
	if t.n > 1 {
		c.TimePerChunk = max(0, t.last.Sub(t.first)/time.Duration(t.n-1))
	}
}

// pathModelMethod reads a Google-style request path that ends in
// …/models/{model}:{method} (Gemini API, Vertex AI publisher models,
// behind any prefix; the colon may arrive escaped) and returns the model
// and the method. model is "" when the segment before the last is not
// models or tunedModels (a Vertex AI endpoints/{id} path names no model).
func pathModelMethod(path string) (model, method string) {
	path, _, _ = strings.Cut(path, "?")
	i := strings.LastIndexByte(path, '/')
	if i < 0 {
		return "", ""
	}
	m, meth, ok := modelMethod(path[i+1:])
	if !ok {
		return "", ""
	}
	prev := path[:i]
	prev = prev[strings.LastIndexByte(prev, '/')+1:]
	if prev != "models" && prev != "tunedModels" {
		m = ""
	}
	return clampString(m), meth
}

// addCounts adds two token counts that are not negative, saturating
// instead of overflowing (the counts come from the traffic).
func addCounts(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
