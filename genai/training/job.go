package training

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/envscan"
	"github.com/xpuscope/xpuscope/internal/procfs"
	"github.com/xpuscope/xpuscope/internal/proctable"
	"github.com/xpuscope/xpuscope/semconv"
)

// Finding what a job writes: through its own open files, its working
// directory, its flags and its environment, never a configured path.
//
//   - At each look (at 0 s, 2 s, 10 s, 30 s and 1 min after the job is
//     found, then every minute) the descriptors of its processes: a held
//     events.out.tfevents.* (PyTorch's SummaryWriter, tf.summary and Keras
//     hold theirs open) or metrics.csv is read through its fd link, in
//     whatever mount namespace, and its directory is watched.
//   - At its first look, where Lightning's CSVLogger writes by default
//     (<dir>/lightning_logs/version_N/metrics.csv, for the job's working
//     directory and its --default_root_dir or --trainer.default_root_dir)
//     and its MLflow file store (MLFLOW_TRACKING_URI, read through the
//     environment allowlist of internal/envscan, else <cwd>/mlruns) are
//     watched; the store's runs made or updated since the job started are
//     looked for at each look.
//   - Every interval each watched directory's modification time is read
//     (one fstat): a directory that changed is listed again, for a new
//     events file of one of the job's processes (its name carries the
//     writer's pid: a writer that closes a file and opens another), a new
//     version directory, a new metrics.csv, a new MLflow metric file.
//
// Every path is the job's, resolved in its root (its mount namespace)
// with openat2, never out of it, and no link in a watched directory is
// followed.

// lookAges are the ages of a job at which its files are looked for; then
// every lookEvery.
var lookAges = []time.Duration{0, 2 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute}

const lookEvery = time.Minute

// Bounds of a look.
const (
	maxProcesses   = 64   // processes of a job listed, and whose descriptors are looked at
	maxDirEntries  = 4096 // entries of a directory looked through
	maxExperiments = 1024 // experiments of an MLflow store looked through
	maxMetricDepth = 4    // directories of a metric key (train/loss is one)
	maxEvicted     = 4096 // files remembered as let go, not to be taken again
)

// member is a process of a job.
type member struct {
	pid       int
	start     uint64
	role      string
	exe       string
	framework string
	nspid     int
}

// job is a training job found: its processes, what it writes, and the
// series read of it.
type job struct {
	key       proctable.Key
	framework string
	launcher  string
	exe       string
	members   []member
	overProc  int
	started   time.Time // the root's start, on the wall clock
	found     time.Time
	looks     int
	nextLook  time.Time
	cwd       string
	mlflow    string // the MLflow store read, as the job names it
	mlflowWhy string // why none is read
	dirs      map[string]*watchedDir
	files     map[fileID]*logFile
	evicted   map[fileID]bool
	runs      map[runKey]*run
	tags      tagBudget
	overFiles int
	pod       []attribute.KeyValue
	baseSet   attribute.Set
	asked     []int
	problems  []string // of the last look
	procSets  map[int]attribute.Set
}

// dirKind is what a watched directory holds.
type dirKind uint8

const (
	dirTensorBoard   dirKind = iota // events files
	dirLightningLogs                // version_N directories
	dirCSV                          // a metrics.csv
	dirMLflowMetrics                // an MLflow run's metric files, and directories of keys with a slash
)

// watchedDir is a directory a job writes to.
type watchedDir struct {
	path  string // as the job names it
	kind  dirKind
	f     *os.File
	mtime int64 // of the last listing, ns
	run   string
	depth int
}

func (s *Source) newJob(g proctable.Group, now time.Time) *job {
	j := &job{
		key:      g.Key,
		found:    now,
		started:  procfs.StartedAt(s.boot, g.Root.Start),
		dirs:     map[string]*watchedDir{},
		files:    map[fileID]*logFile{},
		evicted:  map[fileID]bool{},
		runs:     map[runKey]*run{},
		tags:     tagBudget{max: s.cfg.maxTags, tags: map[string]struct{}{}},
		nextLook: now,
	}
	if info := s.info[keyOf(g.Root)]; info != nil {
		j.launcher = info.launcher
	}
	j.exe = g.Root.Exe
	if r := s.cfg.resolver; r != nil {
		j.pod, _ = r.ProcessAttributes(g.Root.PID)
		j.asked = append(j.asked, g.Root.PID)
	}
	return j
}

// setMembers brings the job's processes up to date, at most
// maxProcesses; its framework is the first its processes map.
func (s *Source) setMembers(j *job, ps []*proctable.Process) {
	old := j.members
	j.members, j.overProc = j.members[:0:0], 0
	fw := ""
	for _, p := range ps {
		if len(j.members) >= maxProcesses {
			j.overProc++
			continue
		}
		m := member{pid: p.PID, start: p.Start, role: p.Role, exe: p.Exe}
		if info := s.info[keyOf(p)]; info != nil {
			m.framework = info.framework
		}
		if i := slices.IndexFunc(old, func(o member) bool { return o.pid == p.PID && o.start == p.Start }); i >= 0 {
			m.nspid = old[i].nspid
		} else if nspid, err := s.procs.Proc(p.PID).NSPid(); err == nil {
			m.nspid = nspid
		} else {
			m.nspid = p.PID
		}
		if fw == "" || (m.framework != "" && slices.Index(frameworks, m.framework) < slices.Index(frameworks, fw)) {
			if m.framework != "" {
				fw = m.framework
			}
		}
		j.members = append(j.members, m)
	}
	j.framework = fw
}

// look looks for the job's files, when its age or the last look calls
// for it.
func (s *Source) look(j *job, now time.Time) {
	if now.Before(j.nextLook) {
		return
	}
	j.looks++
	if j.looks < len(lookAges) {
		j.nextLook = j.found.Add(lookAges[j.looks])
	} else {
		j.nextLook = now.Add(lookEvery)
	}
	j.problems = j.problems[:0]
	root := s.procs.Proc(j.key.PID)
	if j.looks == 1 {
		s.firstLook(j, root)
	}
	for _, m := range j.members {
		p := s.procs.Proc(m.pid)
		err := p.FDs(func(fd int, target string) bool {
			format := formatOfName(filepath.Base(target))
			if format == "" || !filepath.IsAbs(target) {
				return true
			}
			s.fromFD(j, p, fd, strings.TrimSuffix(target, " (deleted)"), format, now)
			return true
		})
		if err != nil {
			j.problems = append(j.problems, fmt.Sprintf("the descriptors of pid %d: %v", m.pid, err))
		}
	}
	if j.mlflow != "" {
		s.lookMLflow(j, root, now)
	}
}

// formatOfName says which format a file's name is of, or "".
func formatOfName(base string) string {
	switch {
	case strings.HasPrefix(base, "events.out.tfevents."):
		return semconv.TrainingLogTensorBoard
	case base == "metrics.csv":
		return semconv.TrainingLogCSV
	}
	return ""
}

// firstLook reads the job's working directory, flags and environment:
// where Lightning's CSVLogger and MLflow's file store write by default.
func (s *Source) firstLook(j *job, root procfs.Proc) {
	cwd, err := root.Cwd()
	if err != nil {
		j.problems = append(j.problems, fmt.Sprintf("the working directory of pid %d: %v", j.key.PID, err))
	}
	j.cwd = strings.TrimSuffix(cwd, " (deleted)")
	bases := []string{j.cwd}
	for _, m := range j.members {
		if m.pid != j.key.PID {
			continue
		}
		if e := s.table.Get(m.pid); e != nil {
			bases = append(bases, flagValues(e.Args, "--default_root_dir")...)
			bases = append(bases, flagValues(e.Args, "--trainer.default_root_dir")...)
		}
	}
	for _, b := range bases {
		if b = j.abs(b); b != "" {
			s.watch(j, root, filepath.Join(b, "lightning_logs"), dirLightningLogs, "", 0, false)
		}
	}
	// MLflow: the tracking URI of the job's first process that has one.
	uri, set := "", false
	for _, m := range j.members {
		v, err := envscan.Read(s.procs.Proc(m.pid), s.envBuf)
		if err != nil {
			continue
		}
		if v.MLflowTrackingURI != "" {
			uri, set = v.MLflowTrackingURI, true
			break
		}
	}
	path, why := mlflowStore(uri, set)
	switch {
	case why != "":
		j.mlflowWhy = why
	case path == "" && j.cwd != "":
		// Unset: MLflow's default, ./mlruns, where it exists.
		if d, err := root.Open(filepath.Join(j.cwd, "mlruns"), unix.O_RDONLY|unix.O_DIRECTORY); err == nil {
			d.Close()
			j.mlflow = filepath.Join(j.cwd, "mlruns")
		}
	case path != "":
		j.mlflow = j.abs(path)
	}
}

// abs makes a path the job names absolute, from its working directory.
func (j *job) abs(path string) string {
	if path == "" || filepath.IsAbs(path) {
		return filepath.Clean(path)
	}
	if j.cwd == "" {
		return ""
	}
	return filepath.Join(j.cwd, path)
}

// mlflowStore reads MLFLOW_TRACKING_URI: the path of a file store (a
// path, or a file: URI), "" where it is unset; or why it is not read (a
// tracking server or a database: only its scheme is said, never the
// rest, which may hold credentials).
func mlflowStore(uri string, set bool) (path, why string) {
	if !set || uri == "" {
		return "", ""
	}
	switch uri { // MLflow's names of Databricks' tracking servers, bare
	case "databricks", "databricks-uc", "uc":
		return "", fmt.Sprintf("MLFLOW_TRACKING_URI names a tracking server (%s), not a file store: not read", uri)
	}
	if !strings.Contains(uri, ":") || strings.HasPrefix(uri, "/") || strings.HasPrefix(uri, ".") {
		return uri, ""
	}
	u, err := url.Parse(uri)
	if err != nil {
		return "", "MLFLOW_TRACKING_URI does not parse as a URI: not read"
	}
	if u.Scheme != "file" {
		scheme := u.Scheme
		if len(scheme) > 16 {
			scheme = scheme[:16]
		}
		return "", fmt.Sprintf("MLFLOW_TRACKING_URI names a tracking server or database (%s:), not a file store: not read", scheme)
	}
	if u.Path != "" {
		return u.Path, ""
	}
	return u.Opaque, "" // file:relative/path
}

// watch starts watching a directory of the job, if it is not watched, and
// lists it.
func (s *Source) watch(j *job, root procfs.Proc, path string, kind dirKind, run string, depth int, report bool) *watchedDir {
	if d := j.dirs[path]; d != nil {
		return d
	}
	if len(j.dirs) >= 2*s.cfg.maxFiles+8 {
		j.overFiles++
		return nil
	}
	f, err := root.Open(path, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		if report || !errors.Is(err, unix.ENOENT) {
			j.problems = append(j.problems, err.Error())
		}
		return nil
	}
	d := &watchedDir{path: path, kind: kind, f: f, run: run, depth: depth, mtime: -1}
	j.dirs[path] = d
	return d
}

// watchIn starts watching a directory in another.
func (s *Source) watchIn(j *job, parent *watchedDir, name string, kind dirKind, run string, depth int) *watchedDir {
	path := filepath.Join(parent.path, name)
	if d := j.dirs[path]; d != nil {
		return d
	}
	if len(j.dirs) >= 2*s.cfg.maxFiles+8 {
		j.overFiles++
		return nil
	}
	f, err := procfs.OpenDirIn(parent.f, name)
	if err != nil {
		return nil
	}
	d := &watchedDir{path: path, kind: kind, f: f, run: run, depth: depth, mtime: -1}
	j.dirs[path] = d
	return d
}

// fromFD takes a log file a process of the job holds open.
func (s *Source) fromFD(j *job, p procfs.Proc, fd int, path, format string, now time.Time) {
	f, err := p.OpenFD(fd)
	if err != nil {
		return // closed meanwhile, or not a regular file
	}
	id, _, err := idOf(f)
	if err != nil || j.files[id] != nil || j.evicted[id] {
		f.Close()
		return
	}
	kind := dirTensorBoard
	if format == semconv.TrainingLogCSV {
		kind = dirCSV
	}
	d := s.watch(j, p, filepath.Dir(path), kind, "", 0, false)
	if !s.makeRoom(j, now) {
		f.Close()
		return
	}
	j.files[id] = s.newLogFile(j, f, id, path, format, d, filepath.Base(path), now)
}

// makeRoom reports whether the job may take one file more: under its
// cap, or by letting go of the file that has not grown for longest, if
// none grew for two intervals. It counts a file it cannot take.
func (s *Source) makeRoom(j *job, now time.Time) bool {
	if len(j.files) < s.cfg.maxFiles {
		return true
	}
	var oldest *logFile
	for _, lf := range j.files {
		if oldest == nil || lf.lastGrowth.Before(oldest.lastGrowth) {
			oldest = lf
		}
	}
	if oldest == nil || now.Sub(oldest.lastGrowth) < 2*s.cfg.interval {
		j.overFiles++
		return false
	}
	oldest.close()
	delete(j.files, oldest.id)
	if len(j.evicted) < maxEvicted {
		j.evicted[oldest.id] = true
	}
	return true
}

// checkDirs lists again the job's watched directories whose modification
// time changed, and lets go of those removed.
func (s *Source) checkDirs(j *job, now time.Time) {
	for path, d := range j.dirs {
		var st unix.Stat_t
		if err := unix.Fstat(int(d.f.Fd()), &st); err != nil || st.Nlink == 0 {
			d.f.Close()
			delete(j.dirs, path)
			continue
		}
		mtime := st.Mtim.Nano()
		if mtime == d.mtime {
			continue
		}
		d.mtime = mtime
		s.list(j, d, now)
	}
}

// list looks through a watched directory for what the job writes there.
func (s *Source) list(j *job, d *watchedDir, now time.Time) {
	if _, err := d.f.Seek(0, io.SeekStart); err != nil {
		return
	}
	names, _ := d.f.Readdirnames(maxDirEntries)
	since := j.started.Add(-time.Second).UnixNano()
	for _, name := range names {
		var st unix.Stat_t
		if unix.Fstatat(int(d.f.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		isDir, isFile := st.Mode&unix.S_IFMT == unix.S_IFDIR, st.Mode&unix.S_IFMT == unix.S_IFREG
		recent := st.Mtim.Nano() >= since
		switch d.kind {
		case dirTensorBoard:
			if isFile && recent && strings.HasPrefix(name, "events.out.tfevents.") && j.namesMember(name) {
				s.fromDir(j, d, name, semconv.TrainingLogTensorBoard, fileID{uint64(st.Dev), st.Ino}, now)
			}
		case dirLightningLogs:
			if isDir && recent && strings.HasPrefix(name, "version_") {
				if v := s.watchIn(j, d, name, dirCSV, "", 0); v != nil && v.mtime < 0 {
					v.mtime = 0 // listed now, and again when it changes
					s.list(j, v, now)
				}
			}
		case dirCSV:
			if isFile && recent && name == "metrics.csv" {
				s.fromDir(j, d, name, semconv.TrainingLogCSV, fileID{uint64(st.Dev), st.Ino}, now)
			}
		case dirMLflowMetrics:
			switch {
			case isFile:
				s.fromDir(j, d, name, semconv.TrainingLogMLflow, fileID{uint64(st.Dev), st.Ino}, now)
			case isDir && d.depth < maxMetricDepth:
				if v := s.watchIn(j, d, name, dirMLflowMetrics, d.run, d.depth+1); v != nil && v.mtime < 0 {
					v.mtime = 0
					s.list(j, v, now)
				}
			}
		}
	}
}

// namesMember reports whether an events file's name carries the pid of
// one of the job's processes, as the writer's getpid() gave it
// (events.out.tfevents.<time>.<host>.<pid>.<n>[.v2]).
func (j *job) namesMember(name string) bool {
	fields := strings.Split(strings.TrimPrefix(name, "events.out.tfevents."), ".")
	for _, f := range fields[min(1, len(fields)):] {
		pid, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		for _, m := range j.members {
			if m.nspid == pid || m.pid == pid {
				return true
			}
		}
	}
	return false
}

// fromDir takes a log file found in a watched directory.
func (s *Source) fromDir(j *job, d *watchedDir, name, format string, id fileID, now time.Time) {
	if j.files[id] != nil || j.evicted[id] {
		return
	}
	if !s.makeRoom(j, now) {
		return
	}
	f, err := procfs.OpenIn(d.f, name)
	if err != nil {
		s.countError(format, semconv.TrainingErrorOpen, 1)
		return
	}
	got, _, err := idOf(f)
	if err != nil || j.files[got] != nil {
		f.Close()
		return
	}
	j.files[got] = s.newLogFile(j, f, got, filepath.Join(d.path, name), format, d, name, now)
}

// lookMLflow looks through the job's MLflow store for the runs made or
// updated since the job started (a run's directory changes when it is
// made and when its status is written), and watches their metrics.
func (s *Source) lookMLflow(j *job, root procfs.Proc, now time.Time) {
	store, err := root.Open(j.mlflow, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		j.problems = append(j.problems, fmt.Sprintf("the MLflow store: %v", err))
		return
	}
	defer store.Close()
	exps, _ := store.Readdirnames(maxExperiments)
	since := j.started.Add(-time.Second).UnixNano()
	for _, e := range exps {
		if strings.HasPrefix(e, ".") || e == "models" {
			continue
		}
		exp, err := procfs.OpenDirIn(store, e)
		if err != nil {
			continue
		}
		runs, _ := exp.Readdirnames(maxDirEntries)
		for _, r := range runs {
			var st unix.Stat_t
			if unix.Fstatat(int(exp.Fd()), r, &st, unix.AT_SYMLINK_NOFOLLOW) != nil ||
				st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Mtim.Nano() < since {
				continue
			}
			runDir := filepath.Join(j.mlflow, e, r)
			if j.dirs[filepath.Join(runDir, "metrics")] != nil {
				continue
			}
			rd, err := procfs.OpenDirIn(exp, r)
			if err != nil {
				continue
			}
			fake := &watchedDir{path: runDir, f: rd}
			if d := s.watchIn(j, fake, "metrics", dirMLflowMetrics, runDir, 0); d != nil {
				d.mtime = 0
				s.list(j, d, now)
			}
			rd.Close()
		}
		exp.Close()
	}
}

// close lets go of the job's files and directories.
func (j *job) close() {
	for _, lf := range j.files {
		lf.close()
	}
	for _, d := range j.dirs {
		d.f.Close()
	}
}

// runOf returns the run of a directory, made on first use.
func (j *job) runOf(k runKey) *run {
	r := j.runs[k]
	if r == nil {
		name := filepath.Base(k.dir)
		r = &run{key: k, name: name}
		j.runs[k] = r
	}
	return r
}
