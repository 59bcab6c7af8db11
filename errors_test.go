package xpuscope

import (
	"errors"
	"io/fs"
	"testing"
)

func TestUnavailablef(t *testing.T) {
	err := Unavailablef("gpu: open %s: %w", "/dev/nvidia0", fs.ErrPermission)
	if !errors.Is(err, ErrUnavailable) {
		t.Error("does not wrap ErrUnavailable")
	}
	if !errors.Is(err, fs.ErrPermission) {
		t.Error("loses the cause it wraps")
	}
	if got, want := err.Error(), "gpu: open /dev/nvidia0: permission denied"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
