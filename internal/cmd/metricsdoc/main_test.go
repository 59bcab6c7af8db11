package main

import (
	"bytes"
	"os"
	"testing"
)

// TestDocIsFresh fails when docs/metrics.md no longer matches the semconv
// registry. Fix: go generate ./semconv
func TestDocIsFresh(t *testing.T) {
	got, err := os.ReadFile("../../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, render()) {
		t.Fatal("docs/metrics.md is stale: run go generate ./semconv")
	}
}
