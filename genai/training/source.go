package training

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/xpuscope/xpuscope"
	"github.com/xpuscope/xpuscope/internal/envscan"
	"github.com/xpuscope/xpuscope/internal/procfs"
	"github.com/xpuscope/xpuscope/internal/proctable"
	"github.com/xpuscope/xpuscope/semconv"
)

// ScopeName is the instrumentation scope of the Source's meter.
const ScopeName = "github.com/xpuscope/xpuscope/genai/training"

// Source finds the training jobs on the node and reads the figures they
// write. Create it with New.
type Source struct {
	cfg    config
	procs  procfs.FS
	handle *procfs.Handle
	boot   time.Time

	// The state below is the run goroutine's (and New's, before it
	// starts).
	table   proctable.Table
	info    map[infoKey]*procInfo
	jobs    map[proctable.Key]*job
	buf     []byte // every file is read through it, one after the other
	scratch []byte // a CSV field unquoted
	envBuf  []byte
	listErr string
	errors  map[errKey]int64
	records map[string]int64
	over    overflowCounts

	inst instruments
	reg  metric.Registration
	snap atomic.Pointer[snapshot]

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// overflowCounts are the Source's counts of what went past a cap, since
// it started; those of jobs gone are kept in the retired fields.
type overflowCounts struct {
	jobs, processes           int64
	filesRetired, tagsRetired int64
}

// infoKey identifies a process.
type infoKey proctable.Key

func keyOf(p *proctable.Process) infoKey { return infoKey{p.PID, p.Start} }

// procInfo is what recognition found of a training process.
type procInfo struct {
	framework string
	launcher  string
}

// jobKind is the kind of every training process in the process table:
// one kind, so that a launcher's ranks and their data loaders' workers
// join it.
type jobKind struct{}

// New checks the options, reads the host's processes once and what the
// jobs found wrote, registers the instruments and starts looking and
// reading every interval.
//
// A procfs that cannot be read is unavailable (an error wrapping
// xpuscope.ErrUnavailable that says what); a bad option, or instruments
// that cannot be made, a fault. A node with no training job is no error:
// the Source reports none, and keeps looking.
func New(opts ...Option) (*Source, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	fs := procfs.FS{Root: cfg.procRoot}
	if _, err := fs.PIDs(); err != nil {
		return nil, xpuscope.Unavailablef("training: cannot list the processes: %w", err)
	}
	boot, err := fs.BootTime()
	if err != nil {
		return nil, xpuscope.Unavailablef("training: %w", err)
	}
	h, err := fs.Open()
	if err != nil {
		return nil, xpuscope.Unavailablef("training: %w", err)
	}
	s := &Source{
		cfg:     cfg,
		procs:   fs,
		handle:  h,
		boot:    boot,
		info:    map[infoKey]*procInfo{},
		jobs:    map[proctable.Key]*job{},
		buf:     make([]byte, readBuf),
		scratch: make([]byte, 0, 256),
		envBuf:  make([]byte, envscan.BufSize),
		errors:  map[errKey]int64{},
		records: map[string]int64{},
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	self, _ := fs.Self()
	s.table = proctable.Table{FS: fs, Handle: h, Self: self, Identify: s.identify}
	meter := cfg.meterProvider.Meter(ScopeName, metric.WithInstrumentationVersion(xpuscope.Version))
	if err := s.inst.create(meter); err != nil {
		_ = h.Close()
		return nil, fmt.Errorf("training: %w", err)
	}
	s.cycle(time.Now())
	s.reg, err = meter.RegisterCallback(s.observe, s.inst.all()...)
	if err != nil {
		s.closeJobs()
		_ = h.Close()
		return nil, fmt.Errorf("training: register callback: %w", err)
	}
	go s.run()
	return s, nil
}

func (s *Source) run() {
	defer close(s.done)
	t := time.NewTicker(s.cfg.interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			s.cycle(now)
		}
	}
}

// identify recognises a training process: one that maps a framework's
// library, or a launcher's command line; TensorBoard, which maps
// TensorFlow and holds the event files it reads, and the model servers
// are not.
func (s *Source) identify(p procfs.Proc, e *proctable.Process) (any, string) {
	if excluded(e.Exe, e.Comm, e.Args) {
		return nil, ""
	}
	launcher := launcherOf(e.Exe, e.Args)
	fw := ""
	if ms, err := p.Maps(); err == nil {
		for _, m := range ms.Files() {
			if f := frameworkOf(m.Path); f != "" && (fw == "" || slices.Index(frameworks, f) < slices.Index(frameworks, fw)) {
				fw = f
			}
		}
	}
	if launcher == "" && fw == "" {
		return nil, ""
	}
	s.info[keyOf(e)] = &procInfo{framework: fw, launcher: launcher}
	if launcher != "" {
		return jobKind{}, semconv.TrainingRoleLauncher
	}
	return jobKind{}, semconv.TrainingRoleWorker
}

// cycle looks at the processes, brings the jobs up to date, reads what
// they wrote, and publishes it.
func (s *Source) cycle(now time.Time) {
	if err := s.table.Scan(now); err != nil {
		s.listErr = err.Error()
		s.publish(now)
		return
	}
	s.listErr = ""
	for k := range s.info {
		if p := s.table.Get(k.PID); p == nil || p.Start != k.Start {
			delete(s.info, k)
		}
	}
	groups := s.table.Groups()
	live := make(map[proctable.Key]bool, len(groups))
	for _, g := range groups {
		live[g.Key] = true
	}
	for k, j := range s.jobs {
		if !live[k] {
			s.forget(j)
			delete(s.jobs, k)
		}
	}
	for _, g := range groups {
		j := s.jobs[g.Key]
		if j == nil {
			if len(s.jobs) >= s.cfg.maxJobs {
				s.over.jobs++
				continue
			}
			j = s.newJob(g, now)
			s.jobs[g.Key] = j
		}
		s.setMembers(j, g.Members)
		s.over.processes += int64(j.overProc)
	}
	nowUnix := float64(now.UnixNano()) / 1e9
	for _, j := range s.jobs {
		s.look(j, now)
		s.checkDirs(j, now)
		for _, lf := range j.files {
			before := lf.records
			s.read(lf, now)
			s.records[lf.format] += lf.records - before
			lf.run.used = true
		}
		for _, r := range j.runs {
			r.s.endRead(nowUnix, r.key.format != semconv.TrainingLogCSV)
		}
	}
	s.publish(now)
}

// forget drops a job that is gone: its files, and its processes' pods.
func (s *Source) forget(j *job) {
	j.close()
	s.over.filesRetired += int64(j.overFiles)
	s.over.tagsRetired += j.tags.overflow
	if r := s.cfg.resolver; r != nil {
		for _, pid := range j.asked {
			r.Forget(pid)
		}
	}
}

func (s *Source) closeJobs() {
	for k, j := range s.jobs {
		s.forget(j)
		delete(s.jobs, k)
	}
}

// Close stops looking and reading, unregisters the instruments and lets
// go of the files. Calls after the first return nil.
func (s *Source) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.done
		var errs []error
		if s.reg != nil {
			errs = append(errs, s.reg.Unregister())
		}
		s.closeJobs()
		errs = append(errs, s.handle.Close())
		err = errors.Join(errs...)
	})
	return err
}
