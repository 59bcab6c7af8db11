package ktime

import (
	"testing"
	"time"
)

func TestWallClock(t *testing.T) {
	now := uint64(5 * time.Second)
	before := time.Now()
	wall := WallClock(func() uint64 { return now })
	after := time.Now()
	at := wall(now + uint64(1500*time.Millisecond))
	if at.Before(before.Add(1500*time.Millisecond)) || at.After(after.Add(1500*time.Millisecond)) {
		t.Fatalf("1.5 s after the anchor maps to %v, want between %v and %v", at, before.Add(1500*time.Millisecond), after.Add(1500*time.Millisecond))
	}
	if d := wall(now).Sub(wall(now - uint64(time.Second))); d != time.Second {
		t.Fatalf("a second of monotonic time is %v of wall time", d)
	}
}

func TestNowAdvances(t *testing.T) {
	a := Now()
	time.Sleep(2 * time.Millisecond)
	if b := Now(); b-a < uint64(2*time.Millisecond) {
		t.Fatalf("CLOCK_MONOTONIC moved %v over a 2 ms sleep", time.Duration(b-a))
	}
}
