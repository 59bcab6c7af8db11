package podjoin

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xpuscope/xpuscope/internal/testutil"
	"github.com/xpuscope/xpuscope/semconv"
)

// TestScope: the Resolver's self-metrics, in the SDK's own data, are of
// the scope ScopeName at xpuscope.Version, each with the unit and kind the
// registry gives it.
func TestScope(t *testing.T) {
	fx := unpack(t, "testdata/non_container.txtar")
	r, reader := newTestResolver(t, fx.proc, fx.logs)
	r.Process(300)
	names := testutil.CheckScope(t, reader, ScopeName)
	assert.Contains(t, names, semconv.XpuscopePodjoinResolves.Name)
}
