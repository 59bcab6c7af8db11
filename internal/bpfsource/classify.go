package bpfsource

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/cilium/ebpf"

	"github.com/xpuscope/xpuscope"
)

// Privilege is what loading BPF programs and attaching them needs.
const Privilege = "CAP_BPF and CAP_PERFMON, or root"

// Denied reports whether err means missing privilege or kernel support. A
// program the verifier rejects is not that, whatever errno it carries: it
// is a bug.
func Denied(err error) bool {
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		return false
	}
	return errors.Is(err, os.ErrPermission) || errors.Is(err, ebpf.ErrNotSupported)
}

// Classify turns err, returned by what (say "cudatrace: load BPF object"),
// into one of the Source contract's two outcomes. Missing privilege is
// xpuscope.ErrUnavailable saying once what is missing, without the
// library's guesses at other causes; missing kernel support is
// xpuscope.ErrUnavailable naming the feature, as the library does; any
// other error, a rejection by the verifier among them, is a fault. nil
// stays nil.
func Classify(what string, err error) error {
	switch {
	case err == nil:
		return nil
	case !Denied(err):
		return fmt.Errorf("%s: %w", what, err)
	case errors.Is(err, os.ErrPermission):
		return xpuscope.Unavailablef("%w", &deniedError{what: what, cause: err})
	}
	return xpuscope.Unavailablef("%s: %w", what, err)
}

// deniedError is a refusal for privilege: it reads as what was refused
// and what is needed, and wraps the library's error.
type deniedError struct {
	what  string
	cause error
}

func (e *deniedError) Error() string {
	refusal := "permission denied"
	var errno syscall.Errno
	if errors.As(e.cause, &errno) {
		refusal = errno.Error()
	}
	return e.what + ": " + refusal + ": needs " + Privilege
}

func (e *deniedError) Unwrap() error { return e.cause }
