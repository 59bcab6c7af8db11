package ktime

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestWallClock(t *testing.T) {
	now := uint64(5 * time.Second)
	before := time.Now()
	wall := WallClock(func() uint64 { return now })
	after := time.Now()
	at := wall(now + uint64(1500*time.Millisecond))
	require.WithinRange(t, at, before.Add(1500*time.Millisecond), after.Add(1500*time.Millisecond), "1.5 s after the anchor")
	require.Equal(t, time.Second, wall(now).Sub(wall(now-uint64(time.Second))), "a second of monotonic time, in wall time")
}

func TestNowAdvances(t *testing.T) {
	a := Now()
	time.Sleep(2 * time.Millisecond)
	b := Now()
	require.GreaterOrEqual(t, b-a, uint64(2*time.Millisecond), "CLOCK_MONOTONIC moved %v over a 2 ms sleep", time.Duration(b-a))
}
