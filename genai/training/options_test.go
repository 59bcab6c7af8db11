package training

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope"
)

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		opt  Option
		want string
	}{
		{WithInterval(time.Millisecond), "training: WithInterval: the interval must be at least 100ms, got 1ms"},
		{WithProcRoot(""), "training: WithProcRoot: the procfs root is empty"},
		{WithMaxJobs(0), "training: WithMaxJobs: the cap must be at least 1, got 0"},
		{WithMaxFiles(0), "training: WithMaxFiles: the cap must be at least 1, got 0"},
		{WithMaxTags(-1), "training: WithMaxTags: the cap must be 0 or more, got -1"},
		{WithReadLimit(1 << 31), "training: WithReadLimit: the limit must be 65536 to 1073741824 bytes, got 2147483648"},
	} {
		_, err := New(tc.opt)
		assert.EqualError(t, err, tc.want)
		assert.False(t, errors.Is(err, xpuscope.ErrUnavailable), "a bad option is a fault")
	}
	c, err := newConfig([]Option{nil, WithMaxTags(0)})
	require.NoError(t, err, "a nil option is ignored; 0 tags exports none")
	assert.Equal(t, 0, c.maxTags)
	assert.Equal(t, DefaultInterval, c.interval)

	_, err = New(WithProcRoot(t.TempDir() + "/none"))
	assert.ErrorIs(t, err, xpuscope.ErrUnavailable, "a procfs that cannot be read")
}

// Close is idempotent, and lets go of everything.
func TestCloseTwice(t *testing.T) {
	h := newHarness(t, nil)
	require.NoError(t, h.src.Close())
	require.NoError(t, h.src.Close())
}
