package bpfsource

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope"
)

func TestClassify(t *testing.T) {
	// What cilium/ebpf returns for a load refused for privilege, with its
	// guess at another cause.
	eperm := fmt.Errorf("program runtime_launch_kernel: load program: %w (MEMLOCK may be too low, consider rlimit.RemoveMemlock)", unix.EPERM)
	for _, tc := range []struct {
		name        string
		err         error
		unavailable bool
		want        string
	}{
		{"privilege", eperm, true, "cudatrace: load BPF object: operation not permitted: needs CAP_BPF and CAP_PERFMON, or root"},
		{"privilege, no errno", fmt.Errorf("open: %w", os.ErrPermission), true, "cudatrace: load BPF object: permission denied: needs CAP_BPF and CAP_PERFMON, or root"},
		{"kernel feature", fmt.Errorf("uprobe_multi link: %w", ebpf.ErrNotSupported), true, "cudatrace: load BPF object: uprobe_multi link: not supported"},
		{"verifier", &ebpf.VerifierError{Cause: unix.EPERM}, false, ""},
		{"other", errors.New("the object has no program x"), false, "cudatrace: load BPF object: the object has no program x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Classify("cudatrace: load BPF object", tc.err)
			assert.Equal(t, tc.unavailable, errors.Is(err, xpuscope.ErrUnavailable), "%v", err)
			assert.ErrorIs(t, err, tc.err, "the library's error is kept for errors.Is")
			if tc.want != "" {
				assert.EqualError(t, err, tc.want)
			}
			assert.NotContains(t, err.Error(), "MEMLOCK")
		})
	}
	assert.NoError(t, Classify("x", nil))
}

func TestDenied(t *testing.T) {
	assert.True(t, Denied(fmt.Errorf("load: %w", os.ErrPermission)))
	assert.True(t, Denied(fmt.Errorf("load: %w", ebpf.ErrNotSupported)))
	assert.False(t, Denied(errors.New("other")))
	// The verifier's rejection carries EACCES, but it is a bug, not a
	// missing privilege.
	assert.False(t, Denied(fmt.Errorf("load: %w", &ebpf.VerifierError{Cause: os.ErrPermission})))
}
