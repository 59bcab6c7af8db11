package main

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"

	"github.com/xpuscope/xpuscope/semconv"
)

// An inactive feature's reason is its error's first line, cut to
// semconv.MaxFeatureReason bytes on a character's boundary.
func TestFeatureReason(t *testing.T) {
	long := strings.Repeat("é", semconv.MaxFeatureReason) // 2 bytes each
	for _, tc := range []struct{ name, detail, want string }{
		{"short", "gpu: no backend", "gpu: no backend"},
		{"first line", "cudatrace: attach failed\nmore detail", "cudatrace: attach failed"},
		{"empty", "", ""},
		{"cut on a character", long, long[:semconv.MaxFeatureReason]},
		{"cut inside a character", "x" + long, "x" + long[:semconv.MaxFeatureReason-2]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := featureReason(tc.detail)
			assert.Equal(t, tc.want, got)
			assert.LessOrEqual(t, len(got), semconv.MaxFeatureReason)
			assert.True(t, utf8.ValidString(got))
		})
	}
}
