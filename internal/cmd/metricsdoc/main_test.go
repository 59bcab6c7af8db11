package main

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDocIsFresh fails when docs/metrics.md no longer matches the semconv
// registry. Fix: go generate ./semconv
func TestDocIsFresh(t *testing.T) {
	got, err := os.ReadFile("../../../docs/metrics.md")
	require.NoError(t, err)
	require.Equal(t, string(render()), string(got), "docs/metrics.md is stale: run go generate ./semconv")
}
