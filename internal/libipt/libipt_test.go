package libipt

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// open loads Debian's libipt2, or skips (fails in CI, where make test
// installs it).
func open(t *testing.T) *Lib {
	t.Helper()
	l, err := Open(DefaultLibrary)
	if err != nil {
		testutil.SkipOrFail(t, "libipt (Debian package libipt2) is not installed; run make test: %v", err)
	}
	return l
}

// TestRoundTrip: libipt's own encoder writes the synthetic stream, its
// decoder reads back the same packets, with their fields.
func TestRoundTrip(t *testing.T) {
	l := open(t)
	want := Synthetic()
	trace, err := l.Encode(want, 4096)
	require.NoError(t, err)
	require.NotEmpty(t, trace)

	var got []Packet
	var offs []int
	first, err := l.Decode(trace, CPU{Family: 6, Model: 0x6a, Stepping: 6}, func(off int, p *Packet) {
		got = append(got, *p)
		offs = append(offs, off)
	})
	require.NoError(t, err)
	assert.Equal(t, 0, first)
	require.Len(t, got, len(want))
	for i := range want {
		assert.Equal(t, want[i].Type, got[i].Type, "packet %d", i)
	}
	assert.Equal(t, uint64(0x1234567890), got[1].TSC())
	ipc, ip := got[3].IP()
	assert.Equal(t, IPCSext48, ipc)
	assert.Equal(t, uint64(0x401000), ip)
	bits, tnt := got[4].TNT()
	assert.Equal(t, uint8(2), bits)
	assert.Equal(t, uint64(0b10), tnt)
	assert.Equal(t, 0, offs[0])
	assert.Equal(t, 16, offs[1], "a PSB is 16 bytes")

	// Garbage before the first PSB is skipped: the walk starts there.
	pre := append(make([]byte, 5), trace...)
	first, err = l.Decode(pre, CPU{}, func(int, *Packet) {})
	require.NoError(t, err)
	assert.Equal(t, 5, first)

	_, err = l.Decode([]byte{0x02, 0x82, 0x02}, CPU{}, func(int, *Packet) {})
	assert.Error(t, err, "no PSB to sync to")
}
