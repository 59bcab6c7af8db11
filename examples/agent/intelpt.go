package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/intelpt"
)

// errIntelPTOff is the unavailable error of the Intel PT trigger left
// off, the default.
var errIntelPTOff = xpuscope.Unavailablef("intelpt: off (the default): -intelpt-trigger names the socket that turns it on")

// startIntelPT starts Intel PT captures on demand, only when
// -intelpt-trigger names a unix socket: the agent listens there (mode
// 0600: root, or the agent's user, only) and runs one capture for each
// request, within the Source's caps. Nothing is traced until a request
// comes.
func startIntelPT(s settings, p providers) (xpuscope.Source, string, error) {
	if s.intelptTrigger == "" {
		return nil, "", errIntelPTOff
	}
	src, err := intelpt.New(intelpt.WithMeterProvider(p.meter), intelpt.WithProcRoot(s.procRoot))
	if err != nil {
		return nil, "", err
	}
	t, err := listenTrigger(s.intelptTrigger, src.Capture)
	if err != nil {
		_ = src.Close()
		return nil, "", fmt.Errorf("intelpt: trigger socket %s: %w", s.intelptTrigger, err)
	}
	t.src = src
	return t, fmt.Sprintf("trigger %s; %s", s.intelptTrigger, src.Status().Describe()), nil
}

// triggerRequest is one line a client writes to the trigger socket.
type triggerRequest struct {
	PID      int    `json:"pid,omitempty"`
	CPU      *int   `json:"cpu,omitempty"`
	Duration string `json:"duration"`
	AUXBytes int    `json:"aux_bytes,omitempty"`
	MaxBytes int64  `json:"max_bytes,omitempty"`
	Kernel   bool   `json:"kernel,omitempty"`
	Snapshot bool   `json:"snapshot,omitempty"`
}

// triggerReply is the line the agent answers with.
type triggerReply struct {
	Dir           string `json:"dir,omitempty"`
	Stop          string `json:"stop,omitempty"`
	TraceBytes    int64  `json:"trace_bytes,omitempty"`
	SidebandBytes int64  `json:"sideband_bytes,omitempty"`
	Truncated     uint64 `json:"truncated,omitempty"`
	Lost          uint64 `json:"lost,omitempty"`
	Error         string `json:"error,omitempty"`
	Refused       bool   `json:"refused,omitempty"`
}

// trigger serves the socket: one request a connection.
type trigger struct {
	ln      net.Listener
	capture func(context.Context, intelpt.Request) (intelpt.Result, error)
	src     *intelpt.Source
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	once    sync.Once
}

func listenTrigger(path string, capture func(context.Context, intelpt.Request) (intelpt.Result, error)) (*trigger, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("%q is not an absolute path", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		_ = os.Remove(path) // a socket left by an agent that was killed
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &trigger{ln: ln, capture: capture, ctx: ctx, cancel: cancel}
	t.wg.Add(1)
	go t.serve()
	return t, nil
}

func (t *trigger) serve() {
	defer t.wg.Done()
	for {
		conn, err := t.ln.Accept()
		if err != nil {
			return // closed
		}
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			defer conn.Close()
			t.handle(conn)
		}()
	}
}

// handle reads one request line (at most 4 KiB, within 5 s), runs the
// capture, and writes the reply line.
func (t *trigger) handle(conn net.Conn) {
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(io.LimitReader(conn, 4096)).ReadBytes('\n')
	reply := triggerReply{}
	var req triggerRequest
	switch {
	case err != nil && len(line) == 0:
		reply.Error = fmt.Sprintf("read the request: %v", err)
	case json.Unmarshal(line, &req) != nil:
		reply.Error = "the request is not one line of JSON: {\"pid\": N} or {\"cpu\": N}, with \"duration\""
	default:
		reply = t.run(req)
	}
	_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	b, _ := json.Marshal(reply)
	_, _ = conn.Write(append(b, '\n'))
}

func (t *trigger) run(req triggerRequest) triggerReply {
	d, err := time.ParseDuration(req.Duration)
	if err != nil {
		return triggerReply{Error: fmt.Sprintf("duration %q: %v", req.Duration, err)}
	}
	r := intelpt.Request{Duration: d, AUXBytes: req.AUXBytes, MaxBytes: req.MaxBytes, Kernel: req.Kernel, Snapshot: req.Snapshot}
	switch {
	case req.PID > 0 && req.CPU == nil:
		r.Target = intelpt.Process(req.PID)
	case req.PID == 0 && req.CPU != nil:
		r.Target = intelpt.CPU(*req.CPU)
	default:
		return triggerReply{Error: "give one target: \"pid\" or \"cpu\""}
	}
	res, err := t.capture(t.ctx, r)
	if err != nil {
		return triggerReply{Error: err.Error(), Refused: errors.Is(err, intelpt.ErrRefused), Dir: res.Dir}
	}
	return triggerReply{Dir: res.Dir, Stop: res.Stop, TraceBytes: res.TraceBytes, SidebandBytes: res.SidebandBytes, Truncated: res.Truncated, Lost: res.Lost}
}

// Close stops listening, cancels the running captures, waits for them,
// and closes the Source.
func (t *trigger) Close() error {
	var err error
	t.once.Do(func() {
		err = t.ln.Close()
		t.cancel()
		t.wg.Wait()
		if t.src != nil {
			err = errors.Join(err, t.src.Close())
		}
	})
	return err
}
