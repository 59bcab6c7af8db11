package serving

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// dialer connects to a server, in its network namespace where that is
// not the Source's own: a server bound to 127.0.0.1 in its pod is
// reached without host networking.
type dialer struct {
	// openNS opens the server's network namespace (the ns/net of one of
	// its processes); nil for the Source's own.
	openNS func() (*os.File, error)
}

// errNetNS marks a failure to enter the server's network namespace.
type errNetNS struct{ err error }

func (e errNetNS) Error() string { return e.err.Error() }
func (e errNetNS) Unwrap() error { return e.err }

// DialContext connects to address. In another namespace, the socket is
// made by a goroutine locked to its OS thread that has entered the
// namespace with setns(2), and the thread is thrown away with the
// goroutine (it stays locked: Go ends a thread whose goroutine exits
// locked), so that no other goroutine ever runs in that namespace. The
// socket stays in the namespace it was made in, and is used from any
// thread after.
func (d dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var nd net.Dialer
	if d.openNS == nil {
		return nd.DialContext(ctx, network, address)
	}
	type result struct {
		c   net.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread ends with this goroutine.
		f, err := d.openNS()
		if err != nil {
			done <- result{nil, errNetNS{fmt.Errorf("open the server's network namespace: %w", err)}}
			return
		}
		err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
		f.Close()
		if err != nil {
			done <- result{nil, errNetNS{fmt.Errorf("enter the server's network namespace %s: %w", f.Name(), err)}}
			return
		}
		c, err := nd.DialContext(ctx, network, address)
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		return r.c, r.err
	case <-ctx.Done():
		go func() { // the dial ends on ctx too; close what it made
			if r := <-done; r.c != nil {
				r.c.Close()
			}
		}()
		return nil, ctx.Err()
	}
}
