package main

import (
	"strings"
	"testing"
)

// FuzzSideband: a sideband file never panics its reader, which walks
// only whole records and says where one is cut.
func FuzzSideband(f *testing.F) {
	f.Add([]byte{3, 0, 0, 0, 0, 0, 8, 0})
	f.Add([]byte{11, 0, 0, 0, 0, 0, 0, 1, 0})
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := sideband(b)
		if err == nil && len(b) > 0 && s == "none" {
			t.Fatalf("%d bytes read as no record", len(b))
		}
		if strings.Count(s, ",") > len(b)/8 {
			t.Fatalf("more records than 8-byte headers: %s", s)
		}
	})
}
