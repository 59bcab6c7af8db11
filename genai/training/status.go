package training

import (
	"cmp"
	"maps"
	"slices"
	"time"
)

// Status is what the Source found and read, as of its last interval.
type Status struct {
	// Jobs are the training jobs found, the oldest first.
	Jobs []Job
	// ListError is why the processes could not be listed at the last
	// interval ("" when they were).
	ListError string
}

// Job is a training job found: a process that maps a framework's library
// or runs a launcher, with the processes joined to it.
type Job struct {
	// PID is the process the job is known by: the farthest of its
	// processes' ancestors that is a training process too (the
	// launcher, or the script that started the ranks).
	PID int
	// Framework is a semconv.TrainingFramework* value; "" while no process
	// of the job maps one (a launcher before its ranks start).
	Framework string
	// Launcher is a semconv.TrainingLauncher* value, or "".
	Launcher   string
	Executable string
	// Processes are the job's processes (at most 64).
	Processes []Process
	// Files are the log files read.
	Files []File
	// MLflowStore is the MLflow file store looked through, as the job
	// names it; "" for none.
	MLflowStore string
	// Problems say what could not be read, and why: descriptors that
	// could not be read, an MLflow tracking URI that is not a file store,
	// that no log file was found yet.
	Problems []string
}

// Process is a process of a training job.
type Process struct {
	PID        int
	Role       string // a semconv.TrainingRole* value
	Executable string
}

// File is a log file of a job the Source reads.
type File struct {
	// Path is the file's path as the job names it, in its mount
	// namespace.
	Path string
	// Format is a semconv.TrainingLog* value.
	Format string
	// Run is the series' training.run.
	Run string
	// Records is the records (events, lines) read of it.
	Records int64
	// Offset is how far it was read; Size, its size at the last read.
	Offset, Size int64
	// Pending says the end of its last record is awaited (a torn tail).
	Pending bool
	// LastGrowth is when it last grew.
	LastGrowth time.Time
	// Problem is why its last read failed ("" when it did not).
	Problem string
}

// status is the job's Status entry.
func (j *job) status() Job {
	st := Job{PID: j.key.PID, Framework: j.framework, Launcher: j.launcher, Executable: j.exe, MLflowStore: j.mlflow}
	for _, m := range j.members {
		st.Processes = append(st.Processes, Process{PID: m.pid, Role: roleName(m.role), Executable: m.exe})
	}
	files := slices.Collect(maps.Values(j.files))
	slices.SortFunc(files, func(a, b *logFile) int { return cmp.Compare(a.path, b.path) })
	for _, lf := range files {
		st.Files = append(st.Files, File{Path: lf.path, Format: lf.format, Run: lf.run.name, Records: lf.records,
			Offset: lf.offset(), Size: lf.size, Pending: lf.pending, LastGrowth: lf.lastGrowth, Problem: lf.problem})
	}
	if j.mlflowWhy != "" {
		st.Problems = append(st.Problems, j.mlflowWhy)
	}
	st.Problems = append(st.Problems, j.problems...)
	if len(j.files) == 0 {
		st.Problems = append(st.Problems, "no log file found yet: no TensorBoard events file or metrics.csv among its processes' descriptors, no CSVLogger's metrics.csv under lightning_logs, no MLflow run since it started")
	}
	return st
}

// Status returns what the Source found and read as of its last interval:
// a copy the caller may keep.
func (s *Source) Status() Status {
	sn := s.snap.Load()
	if sn == nil {
		return Status{}
	}
	st := sn.status
	st.Jobs = slices.Clone(st.Jobs)
	for i := range st.Jobs {
		j := &st.Jobs[i]
		j.Processes = slices.Clone(j.Processes)
		j.Files = slices.Clone(j.Files)
		j.Problems = slices.Clone(j.Problems)
	}
	return st
}
