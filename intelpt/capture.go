package intelpt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/xpuscope/xpuscope/internal/perfevent"
	"github.com/xpuscope/xpuscope/semconv"
)

// ErrRefused is wrapped by the error of a capture that was not started
// because the request broke a cap, every capture slot was taken, or the
// Source was closed. Nothing was opened.
var ErrRefused = errors.New("refused")

// Target is what a capture traces: one process, or one CPU.
type Target struct {
	pid, cpu int
}

// Process traces the task pid (its threads created after the capture
// starts are not traced: perf_event_open follows one task).
func Process(pid int) Target { return Target{pid: pid, cpu: -1} }

// CPU traces everything that runs on cpu.
func CPU(cpu int) Target { return Target{pid: -1, cpu: cpu} }

func (t Target) String() string {
	if t.pid > 0 {
		return fmt.Sprintf("pid %d", t.pid)
	}
	return fmt.Sprintf("CPU %d", t.cpu)
}

// Request is one capture asked for.
type Request struct {
	// Target is the process or CPU to trace; required.
	Target Target
	// Duration is how long to trace; required, at most the Source's
	// WithMaxDuration.
	Duration time.Duration
	// AUXBytes is the AUX area's size, a power of two pages, at most the
	// Source's WithMaxAUXBytes; 0 takes that cap.
	AUXBytes int
	// MaxBytes caps what this capture writes, at most the Source's
	// WithMaxBytes; 0 takes that cap.
	MaxBytes int64
	// Kernel traces the kernel too; the default is user space only.
	Kernel bool
	// Snapshot keeps only the last AUXBytes of trace, written when the
	// capture ends (the AUX area mapped read-only, overwritten by the
	// kernel), instead of the whole trace as it comes.
	Snapshot bool
}

// Result is what a capture wrote.
type Result struct {
	// Dir holds the capture's files: trace.pt, sideband.pevent and
	// capture.json (docs/intelpt.md gives the format).
	Dir string
	// Stop says what ended it (a semconv.IntelPTStop* value).
	Stop string
	// TraceBytes and SidebandBytes are what was written of each.
	TraceBytes, SidebandBytes int64
	// Truncated counts AUX records flagged truncated: trace was lost
	// while the AUX area was full. Lost counts the sideband records the
	// ring had no room for.
	Truncated, Lost uint64
	Started, Ended  time.Time
}

// Capture traces req.Target for req.Duration into a new directory under
// the capture directory, and returns what it wrote. It stops at the first
// cap reached (duration, bytes), when ctx is done, or when the traced
// process exits.
//
// It fails closed: a request that breaks a cap, or past the concurrent
// captures allowed, is refused with an error wrapping ErrRefused; a
// capture that cannot start (no privilege, the PMU refusing the
// configuration, no room for the AUX area) is an error with the reason;
// a capture that breaks off (a write failing) is an error too, its
// capture.json saying it is incomplete. The event is disabled, unmapped
// and closed on every path.
func (s *Source) Capture(ctx context.Context, req Request) (Result, error) {
	req, err := s.check(req)
	if err != nil {
		s.stats.refused.Add(1)
		return Result{}, err
	}
	select {
	case s.slots <- struct{}{}:
	default:
		s.stats.refused.Add(1)
		return Result{}, fmt.Errorf("intelpt: capture of %v: %w: %d captures are running, the cap (WithMaxConcurrent)", req.Target, ErrRefused, s.cfg.maxConcurrent)
	}
	defer func() { <-s.slots }()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.stats.refused.Add(1)
		return Result{}, fmt.Errorf("intelpt: capture of %v: %w: the Source is closed", req.Target, ErrRefused)
	}
	id := s.nextID
	s.nextID++
	ctx, cancel := context.WithCancel(ctx)
	s.cancels[id] = cancel
	s.wg.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.cancels, id)
		s.mu.Unlock()
		cancel()
		s.wg.Done()
	}()

	res, err := s.run(ctx, req)
	if err != nil {
		s.stats.failed.Add(1)
		return res, err
	}
	s.stats.done[stopIndex(res.Stop)].Add(1)
	return res, nil
}

// check holds req to the caps, filling its zero sizes with them.
func (s *Source) check(req Request) (Request, error) {
	refuse := func(format string, args ...any) (Request, error) {
		return req, fmt.Errorf("intelpt: capture of %v: %w: "+format, append([]any{req.Target, ErrRefused}, args...)...)
	}
	if t := req.Target; !(t.pid > 0 && t.cpu == -1 || t.pid == -1 && t.cpu >= 0) {
		return refuse("no target: Process(pid) with a pid above 0, or CPU(cpu) with a CPU of 0 or more")
	}
	if req.Duration <= 0 || req.Duration > s.cfg.maxDuration {
		return refuse("duration %v is not above 0 and at most the cap, %v (WithMaxDuration)", req.Duration, s.cfg.maxDuration)
	}
	if req.AUXBytes == 0 {
		req.AUXBytes = s.cfg.maxAUXBytes
	}
	if req.AUXBytes > s.cfg.maxAUXBytes || !pow2Pages(req.AUXBytes) {
		return refuse("AUX area of %d bytes is not a power of two pages (%d bytes a page) of at most the cap, %d (WithMaxAUXBytes)", req.AUXBytes, perfevent.PageSize, s.cfg.maxAUXBytes)
	}
	if req.MaxBytes == 0 {
		req.MaxBytes = s.cfg.maxBytes
	}
	if req.MaxBytes < 0 || req.MaxBytes > s.cfg.maxBytes {
		return refuse("%d bytes is above the cap, %d (WithMaxBytes)", req.MaxBytes, s.cfg.maxBytes)
	}
	return req, nil
}

// sidebandPages is the data ring of a capture: the kernel's records
// (AUX, mmap, comm, switches) wait there to be read.
const sidebandPages = 16

// poll is how long the loop waits for the kernel at most between looks
// at the clock and the context.
const poll = 100 * time.Millisecond

func (s *Source) run(ctx context.Context, req Request) (Result, error) {
	res := Result{Started: time.Now()}
	dir, err := s.makeDir(req, res.Started)
	if err != nil {
		return res, err
	}
	res.Dir = dir
	w, err := newWriter(dir, req.MaxBytes)
	if err != nil {
		_ = os.RemoveAll(dir)
		return res, fmt.Errorf("intelpt: capture of %v: %w", req.Target, err)
	}
	attr := perfevent.TraceAttr{
		Type: s.pmu.Type, Configs: s.config, PID: req.Target.pid, CPU: req.Target.cpu,
		Kernel: req.Kernel, AuxWatermark: uint32(req.AUXBytes / 4),
	}
	ev, err := s.cfg.open(attr, sidebandPages, req.AUXBytes/perfevent.PageSize, req.Snapshot)
	if err != nil {
		w.abort()
		return Result{}, fmt.Errorf("intelpt: capture of %v: open intel_pt (%s): %w", req.Target, perfevent.FormatTerms(s.terms), err)
	}
	c := &capture{s: s, req: req, ev: ev, w: w}
	defer ev.Close()
	if err := ev.Enable(); err != nil {
		_ = ev.Close()
		w.abort()
		return Result{}, fmt.Errorf("intelpt: capture of %v: enable: %w", req.Target, err)
	}
	runErr := c.loop(ctx)
	// Disabled first: the kernel writes the last AUX record then.
	if err := ev.Disable(); err != nil && runErr == nil {
		runErr = fmt.Errorf("disable: %w", err)
	}
	if runErr == nil {
		runErr = c.drain()
	}
	if runErr == nil && req.Snapshot {
		runErr = c.snapshot()
	}
	res.Ended = time.Now()
	res.Stop, res.Truncated, res.Lost = c.stop, c.truncated, c.lost
	res.TraceBytes, res.SidebandBytes = w.trace.n, w.sideband.n
	s.stats.bytes.Add(w.trace.n + w.sideband.n)
	s.stats.truncated.Add(int64(c.truncated))
	s.stats.lost.Add(int64(c.lost))
	m := s.manifest(req, res, ev.TimeConv(), runErr)
	if err := w.finish(m); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		return res, fmt.Errorf("intelpt: capture of %v broke off (its files say it is incomplete): %w", req.Target, runErr)
	}
	return res, nil
}

// makeDir makes the capture's own directory.
func (s *Source) makeDir(req Request, at time.Time) (string, error) {
	if err := os.MkdirAll(s.cfg.captureDir, 0o700); err != nil {
		return "", fmt.Errorf("intelpt: capture of %v: capture directory: %w", req.Target, err)
	}
	what := fmt.Sprintf("pid%d", req.Target.pid)
	if req.Target.pid <= 0 {
		what = fmt.Sprintf("cpu%d", req.Target.cpu)
	}
	base := filepath.Join(s.cfg.captureDir, at.UTC().Format("20060102T150405.000000000Z")+"-"+what)
	for i := 0; ; i++ {
		dir := base
		if i > 0 {
			dir = fmt.Sprintf("%s-%d", base, i)
		}
		err := os.Mkdir(dir, 0o700)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, os.ErrExist) || i == 100 {
			return "", fmt.Errorf("intelpt: capture of %v: %w", req.Target, err)
		}
	}
}

// capture is one running capture.
type capture struct {
	s               *Source
	req             Request
	ev              event
	w               *writer
	stop            string
	truncated, lost uint64
}

// loop copies what the kernel writes until the first stop.
func (c *capture) loop(ctx context.Context) error {
	deadline := time.Now().Add(c.req.Duration)
	for {
		if ctx.Err() != nil {
			c.stop = semconv.IntelPTStopCancelled
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			c.stop = semconv.IntelPTStopDuration
			return nil
		}
		hup, err := c.ev.Wait(min(left, poll))
		if err != nil {
			return err
		}
		if err := c.drain(); err != nil {
			return err
		}
		if c.w.full {
			c.stop = semconv.IntelPTStopBytes
			return nil
		}
		if hup {
			c.stop = semconv.IntelPTStopExit
			return nil
		}
	}
}

// drain copies the records written since the last call to the sideband,
// and the AUX bytes each AUX record points at to the trace (not in
// snapshot mode, whose trace is copied at the end), freeing them for the
// kernel.
func (c *capture) drain() error {
	return c.ev.Records(func(typ uint32, _ uint16, rec []byte) error {
		switch typ {
		case perfevent.RecordAux:
			a, err := perfevent.ParseAuxRecord(rec)
			if err != nil {
				return err
			}
			if a.Flags&perfevent.AuxFlagTruncated != 0 {
				c.truncated++
			}
			if !c.req.Snapshot && a.Size > 0 {
				x, y := c.ev.AUX(a.Offset, a.Size)
				if err := c.w.trace.write(x); err != nil {
					return err
				}
				if err := c.w.trace.write(y); err != nil {
					return err
				}
				c.ev.ConsumeAUX(a.Offset + a.Size)
			}
		case perfevent.RecordLost:
			n, err := perfevent.ParseLostRecord(rec)
			if err != nil {
				return err
			}
			c.lost += n
		}
		return c.w.sideband.write(rec)
	})
}

// snapshot copies the AUX area's last bytes, the most recent trace.
func (c *capture) snapshot() error {
	head := c.ev.AUXHead()
	n := min(head, uint64(c.req.AUXBytes))
	x, y := c.ev.AUX(head-n, n)
	if err := c.w.trace.write(x); err != nil {
		return err
	}
	return c.w.trace.write(y)
}

func stopIndex(stop string) int {
	for i, s := range stops {
		if s == stop {
			return i
		}
	}
	return 0
}

var stops = [...]string{semconv.IntelPTStopDuration, semconv.IntelPTStopBytes, semconv.IntelPTStopCancelled, semconv.IntelPTStopExit}
