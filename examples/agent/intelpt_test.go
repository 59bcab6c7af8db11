package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/intelpt"
)

// Intel PT is off unless -intelpt-trigger names a socket; with one, on
// this machine (no intel_pt PMU), it is unavailable and leaves no socket.
func TestIntelPTOff(t *testing.T) {
	_, _, err := startIntelPT(settings{}, providers{})
	require.ErrorIs(t, err, xpuscope.ErrUnavailable)
	assert.Contains(t, err.Error(), "off (the default)")

	path := filepath.Join(t.TempDir(), "intelpt.sock")
	src, _, err := startIntelPT(settings{intelptTrigger: path, procRoot: "/proc"}, providers{})
	if err == nil {
		_ = src.Close() // a machine with Intel PT
		return
	}
	require.ErrorIs(t, err, xpuscope.ErrUnavailable)
	assert.Contains(t, err.Error(), "intel_pt")
	_, serr := os.Stat(path)
	assert.ErrorIs(t, serr, os.ErrNotExist)
}

// ask writes one request line to the trigger socket and reads the reply.
func ask(t *testing.T, path, line string) triggerReply {
	t.Helper()
	conn, err := net.Dial("unix", path)
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintln(conn, line)
	require.NoError(t, err)
	b, err := bufio.NewReader(conn).ReadBytes('\n')
	require.NoError(t, err)
	var r triggerReply
	require.NoError(t, json.Unmarshal(b, &r))
	return r
}

// TestTrigger: the socket's protocol, one JSON line each way. The capture
// behind it is a stand-in: this machine has no Intel PT, and intelpt's
// own tests cover captures.
func TestTrigger(t *testing.T) {
	var (
		mu  sync.Mutex
		got []intelpt.Request
	)
	capture := func(ctx context.Context, r intelpt.Request) (intelpt.Result, error) {
		mu.Lock()
		got = append(got, r)
		mu.Unlock()
		if r.Duration > time.Minute {
			return intelpt.Result{}, fmt.Errorf("intelpt: capture of %v: %w: over the cap", r.Target, intelpt.ErrRefused)
		}
		return intelpt.Result{Dir: "/captures/x", Stop: "duration", TraceBytes: 10}, nil
	}
	path := filepath.Join(t.TempDir(), "run", "intelpt.sock")
	tr, err := listenTrigger(path, capture)
	require.NoError(t, err)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "root (or the agent's user) only")

	r := ask(t, path, `{"pid": 4242, "duration": "2s", "snapshot": true}`)
	assert.Empty(t, r.Error)
	assert.Equal(t, "/captures/x", r.Dir)
	assert.Equal(t, int64(10), r.TraceBytes)
	r = ask(t, path, `{"cpu": 0, "duration": "500ms", "kernel": true}`)
	assert.Empty(t, r.Error)
	mu.Lock()
	require.Len(t, got, 2)
	assert.Equal(t, intelpt.Process(4242), got[0].Target)
	assert.Equal(t, 2*time.Second, got[0].Duration)
	assert.True(t, got[0].Snapshot)
	assert.Equal(t, intelpt.CPU(0), got[1].Target)
	assert.True(t, got[1].Kernel)
	mu.Unlock()

	r = ask(t, path, `{"pid": 1, "duration": "2h"}`)
	assert.True(t, r.Refused)
	assert.Contains(t, r.Error, "refused")
	for line, want := range map[string]string{
		`{"duration": "2s"}`:                     "one target",
		`{"pid": 1, "cpu": 2, "duration": "2s"}`: "one target",
		`{"pid": 1, "duration": "soon"}`:         "duration",
		`capture pid 1`:                          "not one line of JSON",
	} {
		r := ask(t, path, line)
		assert.Contains(t, r.Error, want, line)
		assert.False(t, r.Refused)
	}
	mu.Lock()
	assert.Len(t, got, 3, "the bad requests reached no capture")
	mu.Unlock()

	require.NoError(t, tr.Close())
	_, err = net.Dial("unix", path)
	assert.Error(t, err, "closed")
	assert.NoError(t, tr.Close())
}
