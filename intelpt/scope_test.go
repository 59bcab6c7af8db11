package intelpt

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

// TestScope: the Source's self-metrics, in the SDK's own data, are of the
// scope ScopeName at xpuscope.Version, each with the unit, kind and
// description the registry gives it. The capture is the fake event's: no
// Intel PT here.
func TestScope(t *testing.T) {
	o := &fakeOpener{prepare: func(f *fakeEvent) {
		f.steps = []step{{aux: chunk(1, 64), truncated: true}}
		f.hupAtEnd = true
	}}
	s, reader, _ := newSource(t, o)
	_, err := s.Capture(t.Context(), Request{Target: Process(1), Duration: time.Second})
	require.NoError(t, err)
	names := testutil.CheckScope(t, reader, ScopeName)
	assert.ElementsMatch(t, []string{
		semconv.XpuscopeIntelPTCaptures.Name, semconv.XpuscopeIntelPTActive.Name,
		semconv.XpuscopeIntelPTBytes.Name, semconv.XpuscopeIntelPTLost.Name,
	}, names)
}
