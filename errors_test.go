package xpuscope

import (
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUnavailablef(t *testing.T) {
	err := Unavailablef("gpu: open %s: %w", "/dev/nvidia0", fs.ErrPermission)
	assert.ErrorIs(t, err, ErrUnavailable, "does not wrap ErrUnavailable")
	assert.ErrorIs(t, err, fs.ErrPermission, "loses the cause it wraps")
	assert.EqualError(t, err, "gpu: open /dev/nvidia0: permission denied", "Error()")
}
