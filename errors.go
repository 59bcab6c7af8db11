package xpuscope

import (
	"errors"
	"fmt"
)

// ErrUnavailable is wrapped by every error that means "this Source cannot
// run here": a vendor library, a device, a kernel feature or a privilege is
// missing. The wrapping error names what was tried and what was missing.
// Callers treat it as a soft skip. Any other error from New is a fault.
var ErrUnavailable = errors.New("unavailable")

// Unavailablef returns an error that wraps ErrUnavailable, with the message
// fmt.Errorf(format, args...) gives (and whatever %w wraps in it). The
// message says what was tried and what is missing.
func Unavailablef(format string, args ...any) error {
	return &unavailableError{cause: fmt.Errorf(format, args...)}
}

type unavailableError struct{ cause error }

func (e *unavailableError) Error() string   { return e.cause.Error() }
func (e *unavailableError) Unwrap() []error { return []error{ErrUnavailable, e.cause} }
