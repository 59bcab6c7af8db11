package intelpt

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/perfevent"
)

// event is one open Intel PT event with its rings. openKernel's is the
// kernel's; the tests give one of their own.
type event interface {
	Enable() error
	Disable() error
	// Wait waits up to d for the kernel to write, and says whether the
	// traced task is gone (POLLHUP).
	Wait(d time.Duration) (hup bool, err error)
	// Records hands out the records written since the last call.
	Records(fn func(typ uint32, misc uint16, rec []byte) error) error
	// AUX returns the AUX bytes [off, off+n).
	AUX(off, n uint64) (a, b []byte)
	AUXHead() uint64
	ConsumeAUX(upto uint64)
	TimeConv() perfevent.TimeConv
	// Close unmaps the rings and closes the event: nothing stays enabled.
	Close() error
}

// opener opens a disabled event and maps its ring of dataPages and its
// AUX area of auxPages (read-only when snapshot). On an error nothing is
// left open or mapped.
type opener func(a perfevent.TraceAttr, dataPages, auxPages int, snapshot bool) (event, error)

type kernelEvent struct {
	fd   int
	ring *perfevent.Ring
}

func openKernel(a perfevent.TraceAttr, dataPages, auxPages int, snapshot bool) (event, error) {
	fd, err := perfevent.OpenTrace(a)
	if err != nil {
		return nil, err
	}
	r, err := perfevent.MapRing(fd, dataPages, auxPages, snapshot)
	if err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return &kernelEvent{fd: fd, ring: r}, nil
}

func (e *kernelEvent) Enable() error  { return perfevent.Enable(e.fd) }
func (e *kernelEvent) Disable() error { return perfevent.Disable(e.fd) }

func (e *kernelEvent) Wait(d time.Duration) (bool, error) {
	fds := []unix.PollFd{{Fd: int32(e.fd), Events: unix.POLLIN}}
	ms := max(int(d/time.Millisecond), 1)
	for {
		_, err := unix.Poll(fds, ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("poll the event: %w", err)
		}
		return fds[0].Revents&(unix.POLLHUP|unix.POLLERR) != 0, nil
	}
}

func (e *kernelEvent) Records(fn func(uint32, uint16, []byte) error) error {
	return e.ring.Records(fn)
}
func (e *kernelEvent) AUX(off, n uint64) ([]byte, []byte) { return e.ring.AUX(off, n) }
func (e *kernelEvent) AUXHead() uint64                    { return e.ring.AUXHead() }
func (e *kernelEvent) ConsumeAUX(upto uint64)             { e.ring.ConsumeAUX(upto) }
func (e *kernelEvent) TimeConv() perfevent.TimeConv       { return e.ring.TimeConv() }

func (e *kernelEvent) Close() error {
	if e.fd < 0 {
		return nil
	}
	err := errors.Join(perfevent.Disable(e.fd), e.ring.Close(), unix.Close(e.fd))
	e.fd = -1
	return err
}
