package ringpoll

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPacer(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		name     string
		interval time.Duration
		records  []int
		want     []time.Duration
	}{
		{"records keep the interval", 50 * ms, []int{3, 1, 7}, []time.Duration{50 * ms, 50 * ms, 50 * ms}},
		{"idle doubles up to a second", 50 * ms, []int{0, 0, 0, 0, 0, 0, 0},
			[]time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second, time.Second}},
		{"a record brings the interval back", 50 * ms, []int{0, 0, 0, 1, 0},
			[]time.Duration{100 * ms, 200 * ms, 400 * ms, 50 * ms, 100 * ms}},
		{"an interval over the idle bound is kept", 3 * time.Second, []int{0, 0, 2},
			[]time.Duration{3 * time.Second, 3 * time.Second, 3 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(tc.interval)
			require.Equal(t, tc.interval, p.Wait(), "a new Pacer waits the interval")
			for i, n := range tc.records {
				got := p.Next(n)
				require.Equal(t, tc.want[i], got, "Next(%d) after %v", n, tc.records[:i])
				require.Equal(t, got, p.Wait(), "Wait after Next(%d) after %v", n, tc.records[:i])
			}
		})
	}
}
